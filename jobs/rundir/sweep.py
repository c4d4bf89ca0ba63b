"""A node-count sweep's directory (`collbench scale`): its paths, and sweep.json made and kept up to date.

    <output_dir>/sweep-<YYYYmmdd-HHMMSS>-<6 hex>/
      sweep.json       the node counts and, for each, its run directory, Slurm job id, or why it failed
      <run dirs>       one ordinary run per node count (every other command works on each)
      scale.txt        the scaling report, as printed by `collbench scale report`
      scale.json       the same figures for programs: each node count's outcome, busbw and efficiency

The readers (the scaling report, finding a sweep by id) are jobs/inspect/scale.py's.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, replace
from pathlib import Path

from jobs.rundir.records.sweep import SWEEP, SweepEntry, SweepMeta

SWEEP_FILE = "sweep.json"


@dataclass(frozen=True, slots=True)
class Sweep:
    path: Path

    @property
    def sweep_id(self) -> str:
        return self.path.name

    @property
    def meta_file(self) -> Path:
        return self.path / SWEEP_FILE

    @property
    def report_file(self) -> Path:
        return self.path / "scale.txt"

    @property
    def report_json(self) -> Path:
        return self.path / "scale.json"

    def read(self) -> SweepMeta:
        """sweep.json; OSError when it cannot be opened, RecordError when it cannot be read."""
        return SWEEP.read(self.meta_file)

    def entries(self) -> list[SweepEntry]:
        return self.read().entries

    def update_entry(
        self, nodes: int, *, run_dir: str | None = None, job_id: str | None = None, error: str | None = None
    ) -> None:
        """Record what became of a node count: its run directory and job id, or the error that kept it from
        being submitted. What is not given is kept."""
        meta = self.read()
        meta.entries = [
            replace(
                entry,
                run_dir=entry.run_dir if run_dir is None else run_dir,
                job_id=entry.job_id if job_id is None else job_id,
                error=entry.error if error is None else error,
            )
            if entry.nodes == nodes
            else entry
            for entry in meta.entries
        ]
        SWEEP.write(self.meta_file, meta)

    @staticmethod
    def new_path(output_dir: str | Path) -> Path:
        """A new sweep's directory under `output_dir`, named to be unique: not created."""
        parent = Path(output_dir).expanduser().resolve()
        return parent / f"sweep-{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(3)}"

    @classmethod
    def create_at(cls, path: Path, counts: list[int], config_ref: str | None, overrides: list[str]) -> Sweep:
        """Make the sweep's directory at `path` (from new_path; it must not exist yet) and its sweep.json, every
        node count not submitted yet."""
        path.parent.mkdir(parents=True, exist_ok=True)
        path.mkdir()
        sweep = cls(path)
        entries = [SweepEntry(nodes=n) for n in counts]
        meta = SweepMeta(
            sweep_id=path.name,
            created=time.time(),
            config=config_ref,
            overrides=list(overrides),
            node_counts=list(counts),
            entries=entries,
        )
        SWEEP.write(sweep.meta_file, meta)
        return sweep

    @classmethod
    def create(cls, output_dir: str | Path, counts: list[int], config_ref: str | None, overrides: list[str]) -> Sweep:
        """A new sweep under `output_dir`: create_at(new_path(output_dir), ...)."""
        return cls.create_at(cls.new_path(output_dir), counts, config_ref, overrides)
