"""The run directory: the one place a run's config, logs, results and tables live.

Its layout is a contract that `collbench report`, `status`, `wait` and later tools read:

    <output_dir>/<run_id>/
      run.json                 what ran: run id, launcher, job id, world size, nodes, task, created
      config.yaml              the fully resolved config
      logs/rank-00000.log      one loguru log per rank (every line tagged rank/local/host)
      logs/nccl-rank-00000.log NCCL's own debug output per rank, when NCCL_DEBUG is set
      fabric/ports-<host>-start.json, -end.json  the node's RDMA ports and interfaces (sysfs), by local rank 0
      results/rank-00000.jsonl one JSON line per (op, size, placement) measured by that rank
      status/rank-00000.json   that rank's state: running, ok or failed (with the error)
      heartbeat/rank-00000.json  that rank's latest progress: phase (init, start, end, done), step index of
                               total, op, size, root, placement, and when
      env/rank-00000.json      that rank's environment at start: host, versions, GPU, NCCL_*/GLOO_*/
                               TORCH_*/SLURM_* variables (secret-looking names redacted)
      submitit/                submitit's pickles and each task's stdout/stderr
      table.txt                the rendered nccl-tests tables (written when the run ends)
      summary.json             every aggregated row and the verdict (written when the run ends)
    and for collbench isolate (task=isolate), whose results lines carry their round and group:
      isolate/plan.json        mode, the nodes in the job's order and each node's ranks (rank 0, at the start)
      isolate/rounds.jsonl     one line per round finished: its groups, their busbw, how long it took
      isolate.json             the verdict: level, every node's figures, bad nodes and links, the matrix
      isolate-matrix.csv       the node x node busbw matrix (written with isolate.json by wait/report)
"""

from __future__ import annotations

import json
import os
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

LAYOUT_VERSION = 1


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

    def nccl_debug_log(self, rank: int) -> Path:
        """Where NCCL_DEBUG_FILE points for this rank when NCCL debugging is on."""
        return self.logs_dir / f"nccl-rank-{rank:05d}.log"

    @classmethod
    def create(cls, output_dir: str | Path, launcher: str) -> RunDir:
        """A new, empty run directory whose name no other run shares."""
        parent = Path(output_dir).expanduser().resolve()
        parent.mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%Y%m%d-%H%M%S")
        while True:
            path = parent / f"{stamp}-{launcher}-{secrets.token_hex(3)}"
            try:
                path.mkdir()
                break
            except FileExistsError:
                continue
        run = cls(path)
        for folder in (run.logs_dir, run.results_dir, run.status_dir, run.env_dir, run.heartbeat_dir, run.submitit_dir):
            folder.mkdir()
        return run

    def read_meta(self) -> dict[str, Any]:
        return read_json(self.meta_file)

    def update_meta(self, **fields: Any) -> None:
        meta = read_json(self.meta_file) if self.meta_file.exists() else {"layout_version": LAYOUT_VERSION}
        meta.update(fields)
        write_json_atomic(self.meta_file, meta)


def rank_of(path: Path) -> int:
    """The rank a per-rank file belongs to: logs/rank-00012.log -> 12."""
    return int(path.stem.split("-")[1])


def read_json(path: Path) -> dict[str, Any]:
    with path.open(encoding="utf-8") as handle:
        data = json.load(handle)
    if not isinstance(data, dict):
        raise ValueError(f"{path} does not hold a JSON object")
    return data


def write_json_atomic(path: Path, data: dict[str, Any]) -> None:
    """Write JSON so that a reader never sees half a file."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, path)


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
                if str(read_json(meta).get("job_id")) == ref:
                    return RunDir(meta.parent.resolve())
            except (OSError, ValueError):
                continue
    raise FileNotFoundError(f"no run {ref!r}: not a run directory, nor a run id or job id under {str(parent)!r}")
