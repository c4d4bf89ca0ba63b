"""The local launcher: the same RankEntry as on Slurm, run by submitit's LocalExecutor on this machine.
The run ends with this process (`collbench run` waits for it); its job id is the controller's pid."""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import signal
import socket
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from jobs.config.model import Config, ConfigError, derive
from jobs.inspect.report import read_statuses
from jobs.launchers.base import Request, Started
from jobs.launchers.children import POLL_S, ChildLauncher
from jobs.launchers.entry import RankEntry
from jobs.launchers.live import Live
from jobs.launchers.runs import start_new_run
from jobs.rundir.layout import RunDir

if TYPE_CHECKING:
    import submitit

CANCEL_WAIT_S = 15.0
LOG_LEVEL = re.compile(r"^\S+ \| (\w+) +\| rank=")
"""A record's first line in a rank's log (jobs/runtime/rank_logging.py's LOG_FORMAT): its level."""
QUIET_LEVELS = frozenset({"TRACE", "DEBUG", "INFO", "SUCCESS"})
"""Levels that stay in the rank's log: the terminal shows the header and rows instead (jobs/launchers/live.py)."""
VISIBLE = "CUDA_VISIBLE_DEVICES"


def check_host_memory(cfg: Config) -> None:
    """Refuse, before anything starts, a local CPU run whose largest size cannot fit in this host's memory:
    every rank holds the bench its task measures at once (collectives.footprint counts a step)."""
    from collectives.memory import host_available_bytes, step_needs, what_fits
    from collectives.plan import peak_bytes_per_rank

    if cfg.device != "cpu":
        return  # device memory is checked by each rank on its own GPU
    bench, key, ranks = cfg.measured_bench(), cfg.largest_size_key(), cfg.world_size
    need, step = peak_bytes_per_rank(bench, ranks, cfg.backend)
    have = host_available_bytes()
    if step is not None and need * ranks > have:
        raise ConfigError(
            f"{key}: {step_needs(bench, step, need)}, {need * ranks / 1e9:.2f} GB for {ranks} ranks; "
            f"{what_fits(bench, ranks, have // ranks, key, cfg.backend)} "
            f"with this host's {have / 1e9:.2f} GB available; lower {key}"
        )


def with_given_devices(cfg: Config, inherited: Mapping[str, str]) -> Config:
    """The config whose env hands the ranks the GPUs this process was given: submitit's LocalExecutor sets
    CUDA_VISIBLE_DEVICES to 0..N-1 (submitit/local/local.py, start_controller), which inside an allocation,
    on a shared node or under MIG names GPUs that are not this process's. The config's own env entry, else
    the inherited one, is kept: with device=cuda its first `ranks` entries, refused when it has fewer.
    Unset in both, submitit's 0..N-1 are the first N GPUs of the machine: the config is left as it is."""
    given = cfg.env.get(VISIBLE, inherited.get(VISIBLE))
    if given is None:
        return cfg
    entries = [entry.strip() for entry in given.split(",") if entry.strip()]
    if cfg.device == "cuda":
        if len(entries) < cfg.world_size:
            where = f"env.{VISIBLE}" if VISIBLE in cfg.env else VISIBLE
            raise ConfigError(
                f"{where}: {given!r} gives this run {len(entries)} GPU(s), fewer than its {cfg.world_size} ranks "
                f"with device=cuda; allowed: ranks <= {len(entries)}, or a list with a GPU per rank"
            )
        entries = entries[: cfg.world_size]
    if cfg.env.get(VISIBLE) == ",".join(entries):
        return cfg
    return derive(cfg, env={**cfg.env, VISIBLE: ",".join(entries)})


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def start_local(cfg: Config, config_plain: dict[str, Any], run: RunDir) -> submitit.Job[Any]:
    """Start every rank of a local run; returns at once."""
    import submitit  # where ranks start only: status, report and wait of a local run never load it

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
    with stdio_redirected_to(run.submitit_dir / "controller.log"), sigint_not_ignored():
        job = executor.submit(
            RankEntry(config=config_plain, run_dir=str(run.path), local_rendezvous=(master_addr, master_port))
        )
    run.update_meta(job_id=str(job.job_id), master_addr=master_addr, master_port=master_port)
    return job


@contextlib.contextmanager
def sigint_not_ignored() -> Iterator[None]:
    """A child started here answers SIGINT, even where this process was started with SIGINT ignored (a
    shell's background job, a prolog): the local run is cancelled by SIGINT to submitit's controller, and
    an ignored disposition, unlike a handler, survives exec, so the cancel would do nothing and the ranks
    would outlive it."""
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        yield
        return
    signal.signal(signal.SIGINT, signal.default_int_handler)  # a handler: the child starts at SIG_DFL
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)


@contextlib.contextmanager
def stdio_redirected_to(path: Path) -> Iterator[None]:
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


def watch_local(
    job: submitit.Job[Any],
    run: RunDir,
    echo: TextIO | None = None,
    deadline: float | None = None,
    live: Live | None = None,
) -> None:
    """Wait for a local run (until `deadline`, time.monotonic(), when given), echoing rank 0's warnings and
    errors to `echo` (stderr by default; its INFO lines stay in its log) and `live`'s rows; the first failed
    rank ends the others at once, as srun --kill-on-bad-exit does, so nobody waits for a peer that is gone."""
    echo = echo or sys.stderr
    follower = LogFollower(run.rank_log(0))
    try:
        while not job.done() and (deadline is None or time.monotonic() < deadline):
            follower.pump(echo)
            if live is not None:
                live.pump()
            if any(s.state == "failed" for s in read_statuses(run).values()):
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
    """Copies the complete WARNING-and-up lines a log file gains to a stream (a traceback's lines with the
    record they follow); DEBUG and INFO stay in the file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0
        self.partial = ""
        self.echoing = False
        """The last record's level is echoed: so are the lines that continue it (a traceback)."""

    def pump(self, out: TextIO) -> None:
        if not self.path.exists():
            return
        with self.path.open(encoding="utf-8", errors="replace") as handle:
            handle.seek(self.offset)
            chunk = handle.read()
            self.offset = handle.tell()
        *lines, self.partial = (self.partial + chunk).split("\n")
        for line in lines:
            level = LOG_LEVEL.match(line)
            if level is not None:
                self.echoing = level.group(1) not in QUIET_LEVELS
            if self.echoing:
                out.write(line + "\n")
        out.flush()


class LocalLauncher(ChildLauncher[str]):
    name = "local"
    nodes_word = "localhost"

    def __init__(self) -> None:
        self.jobs: dict[RunDir, submitit.Job[Any]] = {}
        """The runs this process started: waited for through submitit, rank 0's log echoed."""

    def check_here(self, cfg: Config) -> None:
        check_host_memory(cfg)

    def build_request(self, cfg: Config, run_path: Path) -> Request[str]:
        cfg = with_given_devices(cfg, os.environ)
        folder = RunDir(run_path).submitit_dir
        command = f"{shlex.quote(sys.executable)} -u -m submitit.core._submit {shlex.quote(str(folder))}"
        visible = f" (env {VISIBLE}={cfg.env[VISIBLE]})" if VISIBLE in cfg.env else ""
        text = (
            f"# {cfg.world_size} local rank(s){visible}, each started by submitit's LocalExecutor as:\n"
            f"SUBMITIT_LOCAL_JOB_NUM_NODES=1 SUBMITIT_LOCAL_NTASKS={cfg.world_size} {command}\n"
        )
        return Request(cfg=cfg, run_path=run_path, text=text, payload=command)

    def start(self, request: Request[str]) -> Started:
        cfg = request.cfg

        def launch(public: dict[str, Any], run: RunDir) -> str:
            job = start_local(cfg, public, run)
            self.jobs[run] = job
            return str(job.job_id)

        run, job_id = start_new_run(cfg, request.run_path, launch)
        return Started(run, job_id, (f"{cfg.world_size} local ranks, run directory {run.path}",))

    def alive(self, run: RunDir) -> bool:
        """Its controller runs: for a run started here, submitit's word (an ended child lingers as a zombie
        until reaped, and a zombie still answers kill 0)."""
        job = self.jobs.get(run)
        return not job.done() if job is not None else _controller_alive(run)

    def started_here(self, run: RunDir) -> bool:
        return run in self.jobs

    def watch(self, run: RunDir, deadline: float | None, live: Live | None = None) -> None:
        job = self.jobs.get(run)
        if job is None:
            super().watch(run, deadline, live)
        else:
            watch_local(job, run, deadline=deadline, live=live)

    def cancel(self, run: RunDir) -> str:
        pid = _controller_pid(run)
        if pid is None or not _controller_alive(run):
            raise ConfigError(f"run {run.run_id} is not running; nothing to cancel")
        os.kill(pid, signal.SIGINT)  # submitit's controller ends its ranks on an interrupt
        return f"local run {run.run_id} (controller pid {pid})"

    def log_locations(self, run: RunDir) -> list[Path]:
        return [*sorted(run.logs_dir.glob("rank-*.log")), run.submitit_dir / "controller.log"]


def _controller_pid(run: RunDir) -> int | None:
    try:
        return int(run.read_meta().job_id)
    except (ValueError, OSError):
        return None


def _controller_alive(run: RunDir) -> bool:
    pid = _controller_pid(run)
    if pid is None:
        return False
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return True
