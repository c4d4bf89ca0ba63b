"""The local launcher: the same RankJob as on Slurm, run by submitit's LocalExecutor on this machine."""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

import submitit

from jobs.config.model import Config, ConfigError
from jobs.inspect.report import read_statuses
from jobs.launchers.entry import RankEntry
from jobs.rundir.layout import RunDir

POLL_S = 0.2
CANCEL_WAIT_S = 15.0


def check_host_memory(cfg: Config) -> None:
    """Refuse, before anything starts, a local sweep whose largest size cannot fit in this host's memory."""
    from collectives.memory import host_available_bytes
    from collectives.plan import peak_bytes_per_rank

    if cfg.device != "cpu":
        return  # device memory is checked by each rank on its own GPU
    need, step = peak_bytes_per_rank(cfg.bench, cfg.world_size)
    have = host_available_bytes()
    if step is not None and need * cfg.world_size > have:
        raise ConfigError(
            f"bench.max_bytes: {step.op} at {step.size} B needs {need * cfg.world_size / 1e9:.2f} GB for "
            f"{cfg.world_size} ranks but this host has {have / 1e9:.2f} GB available; lower bench.max_bytes"
        )


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def start_local(cfg: Config, config_plain: dict[str, Any], run: RunDir) -> submitit.Job[Any]:
    """Start every rank of a local run; returns at once."""
    executor = submitit.LocalExecutor(folder=run.submitit_dir)
    executor.update_parameters(
        nodes=1,
        tasks_per_node=cfg.world_size,
        gpus_per_node=cfg.world_size if cfg.device == "cuda" else 0,
        timeout_min=cfg.timeouts.job_min,
    )
    master_addr, master_port = "127.0.0.1", cfg.rendezvous.master_port or free_port()
    # submitit's controller inherits our stdout/stderr; on cancel it dies of KeyboardInterrupt with a
    # traceback that belongs in the run directory, not on the user's terminal.
    with _stdio_redirected_to(run.submitit_dir / "controller.log"):
        job = executor.submit(
            RankEntry(config=config_plain, run_dir=str(run.path), local_rendezvous=(master_addr, master_port))
        )
    run.update_meta(job_id=str(job.job_id), master_addr=master_addr, master_port=master_port)
    return job


@contextlib.contextmanager
def _stdio_redirected_to(path: Path) -> Iterator[None]:
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    with path.open("ab") as sink:
        os.dup2(sink.fileno(), 1)
        os.dup2(sink.fileno(), 2)
    try:
        yield
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in saved:
            os.close(fd)


def watch_local(job: submitit.Job[Any], run: RunDir, echo: TextIO = sys.stderr) -> None:
    """Wait for a local run, echoing rank 0's log; the first failed rank ends the others at once,
    as srun --kill-on-bad-exit does, so nobody waits for a peer that is gone."""
    follower = LogFollower(run.rank_log(0))
    try:
        while not job.done():
            follower.pump(echo)
            if any(s["state"] == "failed" for s in read_statuses(run).values()):
                _cancel_and_wait(job)
                break
            time.sleep(POLL_S)
    except KeyboardInterrupt:
        _cancel_and_wait(job)
        raise
    finally:
        follower.pump(echo)


def _cancel_and_wait(job: submitit.Job[Any]) -> None:
    job.cancel(check=False)
    deadline = time.monotonic() + CANCEL_WAIT_S
    while not job.done() and time.monotonic() < deadline:
        time.sleep(POLL_S)


class LogFollower:
    """Copies the complete INFO-and-up lines a log file gains to a stream."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0
        self.partial = ""

    def pump(self, out: TextIO) -> None:
        if not self.path.exists():
            return
        with self.path.open(encoding="utf-8", errors="replace") as handle:
            handle.seek(self.offset)
            chunk = handle.read()
            self.offset = handle.tell()
        *lines, self.partial = (self.partial + chunk).split("\n")
        for line in lines:
            if "| DEBUG " not in line:
                out.write(line + "\n")
        out.flush()
