"""The run directory: the one place a run's config, logs, results and tables live.

`RunDir` names every path in it. The layout is a contract that every command reading a run relies on;
docs/run-directory.md lists each file, who writes it and when, and its record's format version.
"""

from __future__ import annotations

import json
import os
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
from omegaconf import OmegaConf

from jobs.rundir.records.codec import RecordError
from jobs.rundir.records.run import RUN, RUN_VERSION, RunMeta, read_run

NCCL_TRACE_PREFIX = "nccl-trace-rank-"
"""A Flight Recorder dump's file name in logs/ before its rank."""


@dataclass(frozen=True, slots=True)
class RunDir:
    path: Path

    @property
    def run_id(self) -> str:
        return self.path.name

    @property
    def meta_file(self) -> Path:
        return self.path / "run.json"

    @property
    def config_file(self) -> Path:
        return self.path / "config.yaml"

    @property
    def logs_dir(self) -> Path:
        return self.path / "logs"

    @property
    def results_dir(self) -> Path:
        return self.path / "results"

    @property
    def status_dir(self) -> Path:
        return self.path / "status"

    @property
    def env_dir(self) -> Path:
        return self.path / "env"

    def rank_env(self, rank: int) -> Path:
        return self.env_dir / f"rank-{rank:05d}.json"

    @property
    def heartbeat_dir(self) -> Path:
        return self.path / "heartbeat"

    def rank_heartbeat(self, rank: int) -> Path:
        return self.heartbeat_dir / f"rank-{rank:05d}.json"

    @property
    def submitit_dir(self) -> Path:
        return self.path / "submitit"

    @property
    def step_stderr(self) -> Path:
        """srun's stderr for a run started as a job step (launcher slurm-step): its step id, its tasks' ends."""
        return self.submitit_dir / "srun.err"

    @property
    def slurm_file(self) -> Path:
        """What Slurm last said of the job (state, nodes down or silent), kept by wait and status."""
        return self.path / "slurm.json"

    @property
    def table_file(self) -> Path:
        return self.path / "table.txt"

    @property
    def summary_file(self) -> Path:
        return self.path / "summary.json"

    def rank_log(self, rank: int) -> Path:
        return self.logs_dir / f"rank-{rank:05d}.log"

    def rank_results(self, rank: int) -> Path:
        return self.results_dir / f"rank-{rank:05d}.jsonl"

    def rank_status(self, rank: int) -> Path:
        return self.status_dir / f"rank-{rank:05d}.json"

    @property
    def fabric_dir(self) -> Path:
        return self.path / "fabric"

    def port_snapshot(self, host: str, when: str) -> Path:
        """The kernel's view of a node's RDMA ports and interfaces, at the start or the end of the job."""
        return self.fabric_dir / f"ports-{host}-{when}.json"

    @property
    def isolate_dir(self) -> Path:
        return self.path / "isolate"

    @property
    def isolate_plan(self) -> Path:
        return self.isolate_dir / "plan.json"

    @property
    def isolate_rounds(self) -> Path:
        return self.isolate_dir / "rounds.jsonl"

    @property
    def isolate_verdict(self) -> Path:
        return self.path / "isolate.json"

    @property
    def isolate_matrix(self) -> Path:
        return self.path / "isolate-matrix.csv"

    @property
    def drains_file(self) -> Path:
        """What check or isolate did to Slurm's nodes after its verdict (drain.apply): drains.json."""
        return self.path / "drains.json"

    @property
    def check_dir(self) -> Path:
        """collbench check's verdict as the files a batch script reads (vetted, cordoned, ...)."""
        return self.path / "check"

    @property
    def nccl_tests_dir(self) -> Path:
        """The run in nccl-tests' JSON (JSON_FILE_VERSION 3), one file per op, written with summary.json."""
        return self.path / "nccl-tests"

    def nccl_tests_file(self, op: str) -> Path:
        return self.nccl_tests_dir / f"{op}.json"

    def nccl_debug_log(self, rank: int) -> Path:
        """Where NCCL_DEBUG_FILE points for this rank when NCCL debugging is on."""
        return self.logs_dir / f"nccl-rank-{rank:05d}.log"

    @property
    def nccl_trace_prefix(self) -> Path:
        """Where torch's Flight Recorder dumps a GPU rank's NCCL trace (TORCH_NCCL_DEBUG_INFO_TEMP_FILE); torch
        appends the rank."""
        return self.logs_dir / NCCL_TRACE_PREFIX

    @classmethod
    def create(cls, output_dir: str | Path, launcher: str) -> RunDir:
        """A new, empty run directory whose name no other run shares."""
        while True:
            try:
                return cls.create_at(cls.new_path(output_dir, launcher))
            except FileExistsError:
                continue

    @staticmethod
    def new_path(output_dir: str | Path, launcher: str) -> Path:
        """A path for a new run directory under `output_dir`, not created: a request can name it before
        the run starts (`create_at` then makes it, or says another run took it)."""
        parent = Path(output_dir).expanduser().resolve()
        return parent / f"{time.strftime('%Y%m%d-%H%M%S')}-{launcher}-{secrets.token_hex(3)}"

    @classmethod
    def create_at(cls, path: Path) -> RunDir:
        """The run directory at `path` (from new_path), new and empty; FileExistsError if it exists."""
        path.parent.mkdir(parents=True, exist_ok=True)
        path.mkdir()
        run = cls(path)
        for folder in (run.logs_dir, run.results_dir, run.status_dir, run.env_dir, run.heartbeat_dir, run.submitit_dir):
            folder.mkdir()
        return run

    def read_meta(self) -> RunMeta:
        """run.json; RecordError (one line) when it is damaged or of a format this collbench does not read."""
        return read_run(self.meta_file, self._plan_mode)

    def _plan_mode(self) -> str:
        """config.yaml's isolate.mode ('' where it says none or cannot be read): what tells an old check run."""
        try:
            saved = OmegaConf.load(self.config_file)
            return str(OmegaConf.select(saved, "isolate.mode", default=""))
        except Exception:  # OSError, yaml.YAMLError and OmegaConf's own errors: the task as run.json says it
            return ""

    def update_meta(self, **fields: Any) -> None:
        """Set fields of run.json (creating it with the first call, which names every required field);
        a value is checked against the field's type (launcher: one of the Launcher words, ...)."""
        current = msgspec.to_builtins(self.read_meta()) if self.meta_file.exists() else {}
        try:
            meta = msgspec.convert({**current, **fields, "version": RUN_VERSION}, RunMeta)
        except msgspec.ValidationError as error:
            raise RecordError(f"{self.meta_file}: cannot set {sorted(fields)}: {error}") from None
        RUN.write(self.meta_file, meta)


def rank_of(path: Path) -> int:
    """The rank a per-rank file belongs to: logs/rank-00012.log -> 12."""
    return int(path.stem.split("-")[1])


def rank_files(folder: Path, suffix: str) -> list[Path]:
    """The rank-NNNNN<suffix> files of a folder, in rank order: one directory listing, no stat per file."""
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        return []
    return [folder / name for name in sorted(names) if name.startswith("rank-") and name.endswith(suffix)]


def read_json(path: Path) -> dict[str, Any]:
    with path.open(encoding="utf-8") as handle:
        data = json.load(handle)
    if not isinstance(data, dict):
        raise ValueError(f"{path} does not hold a JSON object")
    return data


def find_run(ref: str, output_dir: str | Path = "runs") -> RunDir:
    """A run by directory path, by run id under `output_dir`, or by Slurm job id recorded in run.json."""
    as_path = Path(ref).expanduser()
    if (as_path / "run.json").is_file():
        return RunDir(as_path.resolve())
    parent = Path(output_dir).expanduser()
    if (parent / ref / "run.json").is_file():
        return RunDir((parent / ref).resolve())
    if parent.is_dir():
        for meta in sorted(parent.glob("*/run.json"), reverse=True):
            try:
                if RUN.read(meta).job_id == ref:
                    return RunDir(meta.parent.resolve())
            except (OSError, RecordError):
                continue
    raise FileNotFoundError(f"no run {ref!r}: not a run directory, nor a run id or job id under {str(parent)!r}")
