"""The job every rank runs, whoever launched it: rendezvous, sweep, results, status, teardown."""

from __future__ import annotations

import datetime
import os
import socket
import threading
import time
import traceback
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TextIO

from loguru import logger

from collectives.results import placement_name
from jobs.config.model import NCCL_INFO_SUBSYSTEMS, Config, config_from_plain
from jobs.config.secrets import FROM_ENVIRONMENT
from jobs.ending.summary import record_summary
from jobs.inspect.report import assess, read_statuses
from jobs.rundir.layout import RunDir
from jobs.rundir.records.rank import (
    STATUS,
    HeartbeatPhase,
    RankState,
    RankStatus,
    SetupFailure,
    SetupSpan,
    SignalNotice,
)
from jobs.rundir.writing import write_json_atomic
from jobs.runtime.environment import capture_environment
from jobs.runtime.heartbeat import Heartbeat, StackDumps
from jobs.runtime.placement import LocalRendezvous, Placement, detect_placement
from jobs.runtime.port_snapshots import record_ports
from jobs.runtime.rank_logging import setup_rank_logging
from jobs.runtime.setup_probe import probe_rendezvous
from jobs.runtime.stop_signals import RankStopped, SignalWatch

STOP_RECORD_WAIT_S = 2.0
"""How long the main thread waits for the signal watcher to record a stop before recording it itself."""
SUMMARY_WAIT_S = 10.0
"""How long rank 0, done, waits for every other rank to record its end before it records the summary."""


class InjectedFault(RuntimeError):
    """Raised on purpose by faults.fail_rank."""


def run_rank(config: dict[str, Any], run_dir: str, local_rendezvous: tuple[str, int] | None) -> dict[str, Any]:
    """The task's entry point (jobs.launchers.entry.RankEntry names it)."""
    local = LocalRendezvous(*local_rendezvous) if local_rendezvous else None
    return RankJob(config=config, run_dir=run_dir, local_rendezvous=local)()


@dataclass(frozen=True, slots=True)
class RankJob:
    """One rank's whole life, on whatever host the launcher put it."""

    config: dict[str, Any]
    """The resolved config, as plain data."""
    run_dir: str
    local_rendezvous: LocalRendezvous | None = None

    def __call__(self) -> dict[str, Any]:
        cfg = config_from_plain(self.config)
        run = RunDir(Path(self.run_dir))
        try:
            placement = detect_placement(
                os.environ,
                self.local_rendezvous,
                cfg.rendezvous.master_addr,
                cfg.rendezvous.master_port,
                expected_world_size=cfg.world_size,
            )
        except Exception as error:
            _record_early_failure(run, error)
            raise
        os.environ.update(rank_environment(cfg, run, placement))
        setup_rank_logging(run.rank_log(placement.rank), placement.rank, placement.local_rank, placement.host)
        dumps = StackDumps(run.rank_log(placement.rank), cfg.timeouts.resolved_watchdog_s())
        slow_s = cfg.faults.slow_ms / 1e3 if cfg.faults.slow_rank == placement.rank else 0.0
        heartbeat = Heartbeat(run, placement.rank, placement.host, dumps, slow_s)
        status = StatusWriter(run, placement, cfg.device, dumps)
        status.write(RankState.RUNNING)
        signals = SignalWatch(on_stop=status.stop, on_notice=status.notice)
        heartbeat.beat(HeartbeatPhase.INIT)
        _snapshot_ports(cfg, run, placement, "start")
        try:
            rows = _run_rank(cfg, run, placement, status, heartbeat)
        except BaseException as error:
            signals.hold()
            status.fail(error)
            raise
        finally:
            _snapshot_ports(cfg, run, placement, "end")
            signals.close()
            dumps.close()
        heartbeat.beat(HeartbeatPhase.DONE)
        status.finish(rows)
        if placement.rank == 0:  # the verdict is on file even if nobody waits for the job
            _record_summary(run, placement.world_size)
        logger.info(f"rank {placement.rank} finished: {rows} results")
        return {"rank": placement.rank, "host": placement.host, "rows": rows}


def _snapshot_ports(cfg: Config, run: RunDir, placement: Placement, when: str) -> None:
    """Once per node (local rank 0): the kernel's view of its RDMA ports and interfaces, never fatal."""
    if placement.local_rank != 0:
        return
    try:
        record_ports(run, Path(cfg.fabric.sysfs_root), placement.host, when)
    except OSError as error:
        logger.warning(f"port snapshot ({when}) not taken: {error}")


def _record_early_failure(run: RunDir, error: Exception) -> None:
    """A rank that cannot even place itself still leaves a status naming its task and host."""
    rank = int(os.environ.get("SLURM_PROCID", os.environ.get("SUBMITIT_LOCAL_GLOBALID", "-1")))
    if rank < 0:
        return
    now = time.time()
    status = RankStatus(
        rank=rank,
        host=socket.gethostname(),
        pid=os.getpid(),
        device="?",
        state=RankState.FAILED,
        started=now,
        updated=now,
        failed_at=now,
        error=f"{type(error).__name__}: {error}",
    )
    STATUS.write(run.rank_status(rank), status)


def rank_environment(
    cfg: Config, run: RunDir, placement: Placement, inherited: Mapping[str, str] = os.environ
) -> dict[str, str]:
    """The config's env section, torchrun-style variables, NCCL_DEBUG_FILE inside the run, and on the CPU
    OMP_NUM_THREADS=1 unless the config or the environment sets it (as torchrun does: N ranks on one
    host would otherwise each start one intra-op thread per core)."""
    env = {name: value for name, value in cfg.env.items() if value != FROM_ENVIRONMENT}  # secrets: inherited
    if cfg.device == "cpu" and "OMP_NUM_THREADS" not in env and "OMP_NUM_THREADS" not in inherited:
        env["OMP_NUM_THREADS"] = "1"
    if cfg.fabric.nccl_info and cfg.backend == "nccl":  # what jobs.fabric reads; config validation keeps it so
        env.setdefault("NCCL_DEBUG", "INFO")
        env.setdefault("NCCL_DEBUG_SUBSYS", ",".join(NCCL_INFO_SUBSYSTEMS))
    if env.get("NCCL_DEBUG") and "NCCL_DEBUG_FILE" not in env:
        env["NCCL_DEBUG_FILE"] = str(run.nccl_debug_log(placement.rank))
    env.update(placement.torch_env())
    return env


class StatusWriter:
    """This rank's status file. The first end recorded (failed or stopped) stands: what comes after it
    (the error a stop provokes, a lost peer after a failure) is logged, never recorded over it.
    Written from the main thread and from the signal watcher, so under a lock."""

    def __init__(self, run: RunDir, placement: Placement, device: str, dumps: StackDumps) -> None:
        self.dumps = dumps
        self.lock = threading.RLock()
        self.ended: str = ""
        self.stop_recorded = threading.Event()
        self.path = run.rank_status(placement.rank)
        now = time.time()
        self.record = RankStatus(
            rank=placement.rank,
            local_rank=placement.local_rank,
            node_rank=placement.node_rank,
            host=placement.host,
            pid=os.getpid(),
            device=device if device == "cpu" else f"cuda:{placement.local_rank}",
            job_id=placement.job_id,
            master_addr=placement.master_addr,
            master_port=placement.master_port,
            addresses=host_addresses(placement.host),
            attempt=int(os.environ.get("SLURM_RESTART_COUNT") or 0),
            started=now,
            updated=now,
            state=RankState.RUNNING,
        )

    def write(self, state: RankState, **fields: Any) -> None:
        with self.lock:
            self.record = replace(self.record, state=state, updated=time.time(), **fields)
            STATUS.write(self.path, self.record)

    def add_setup(self, setup: SetupSpan) -> None:
        """The set-up time, once learnt: kept in every later write of the status."""
        with self.lock:
            self.record = replace(self.record, setup=setup)
            if not self.ended:
                self.write(RankState.RUNNING)

    def finish(self, rows: int) -> None:
        with self.lock:
            if not self.ended:
                self.write(RankState.OK, rows=rows)
                self.ended = "ok"

    def stop(self, signal_name: str, at: float) -> None:
        """A stop signal arrived (recorded by the signal watcher, even while a collective blocks)."""
        with self.lock:
            first = not self.ended
            if first:
                self.write(RankState.STOPPED, stopped_at=at, signal=signal_name, error=f"stopped by {signal_name}")
                self.ended = "stopped"
        if first:
            logger.warning(f"stopped by {signal_name}: cancelled, preempted or out of time")
            self.dumps.dump_now(f"stopped by {signal_name}")
        self.stop_recorded.set()  # after the dump: the main thread closes the log once it sees this

    def notice(self, signal_name: str, at: float) -> None:
        """Slurm's warning before a time limit or preemption: kept in the status, the rank goes on."""
        with self.lock:
            notices = [*self.record.signals, SignalNotice(signal=signal_name, at=at)]
            self.record = replace(self.record, signals=notices)
            if not self.ended:
                self.write(RankState.RUNNING)
        logger.warning(f"received {signal_name}: Slurm's notice of a time limit or preemption")

    def fail(self, error: BaseException, setup_failure: SetupFailure | None = None) -> None:
        """Record the first error this rank met, with the moment it met it (and, for an error of the process
        group's set-up, what the rank found at the rendezvous address). A stop signal's RankStopped is
        the watcher's to record (with the stacks as they were when it arrived): wait for it briefly."""
        failed_at = time.time()
        if isinstance(error, RankStopped):
            self.stop_recorded.wait(STOP_RECORD_WAIT_S)
        with self.lock:
            if self.ended:
                if isinstance(error, RankStopped):  # where the main thread was when it was stopped
                    logger.opt(exception=error).warning(f"{error} while still running")
                else:
                    logger.opt(exception=error).info(f"after it {self.ended}: {type(error).__name__}: {error}")
                return
            if isinstance(error, (KeyboardInterrupt, RankStopped, SystemExit)) or _is_submitit_stop(error):
                self._record_stop(error, failed_at)
                return
            logger.opt(exception=error).error(f"failed: {type(error).__name__}: {error}")
            self.dumps.dump_now(f"{type(error).__name__}")
            self.write(
                RankState.FAILED,
                failed_at=failed_at,
                error=f"{type(error).__name__}: {error}",
                traceback="".join(traceback.format_exception(error)),
                setup_failure=setup_failure,
            )
            self.ended = "failed"

    def _record_stop(self, error: BaseException, at: float) -> None:
        name = error.signal_name if isinstance(error, RankStopped) else "SIGINT"
        name = "SIGUSR2" if _is_submitit_stop(error) or isinstance(error, SystemExit) else name
        text = str(error) if isinstance(error, RankStopped) else f"{type(error).__name__}: {error}"
        self.write(RankState.STOPPED, stopped_at=at, signal=name, error=text)
        self.ended = "stopped"
        # the traceback shows where this rank was when it was stopped: where it hung, if it hung
        logger.opt(exception=error).warning(f"stopped by {name} while still running")
        self.dumps.dump_now(f"stopped by {name}")


def _is_submitit_stop(error: BaseException) -> bool:
    """submitit ends rank 0 with UncompletedJobError when it does not requeue after SIGUSR2 (and with
    SystemExit once it has requeued)."""
    return type(error).__name__ == "UncompletedJobError"


def host_addresses(host: str) -> list[str]:
    """The addresses this host's name resolves to: what a peer's error message names it by."""
    try:
        return sorted(set(socket.gethostbyname_ex(host)[2]))
    except OSError:
        return []


def _run_rank(cfg: Config, run: RunDir, placement: Placement, status: StatusWriter, heartbeat: Heartbeat) -> int:
    import torch
    import torch.distributed as dist

    from collectives.device_memory import available_bytes
    from collectives.memory import check_fits
    from collectives.sweep import RankContext, run_sweep

    device = torch.device("cpu") if cfg.device == "cpu" else torch.device("cuda", placement.local_rank)
    if device.type == "cuda":
        torch.cuda.set_device(device)
    else:
        _apply_thread_count(torch)
    write_json_atomic(run.rank_env(placement.rank), capture_environment(device.type, placement.local_rank))
    check_fits(cfg.bench, placement.world_size, *available_bytes(device, placement.local_world_size))
    logger.info(
        f"rank {placement.rank}/{placement.world_size} (local {placement.local_rank}, node {placement.node_rank}) "
        f"on {placement.host}: {cfg.backend} on {device}, rendezvous {placement.init_method}"
    )
    setup_started = time.time()
    try:
        dist.init_process_group(
            backend=cfg.backend,
            init_method=placement.init_method,
            rank=placement.rank,
            world_size=placement.world_size,
            timeout=datetime.timedelta(seconds=cfg.timeouts.collective_s),
            device_id=device if device.type == "cuda" else None,  # NCCL: the communicator is created here, eagerly
        )
    except Exception as error:
        status.fail(error, setup_failure=_probe(placement, status))
        raise
    setup_done = time.time()
    status.add_setup(SetupSpan(started=setup_started, done=setup_done, seconds=round(setup_done - setup_started, 6)))
    logger.bind(event="setup", seconds=setup_done - setup_started).info(
        f"process group set up in {setup_done - setup_started:.3f} s"
        + (" (NCCL communicator created eagerly)" if device.type == "cuda" else "")
    )
    try:
        _inject_faults(cfg, placement.rank)
        attempt = int(os.environ.get("SLURM_RESTART_COUNT") or 0)
        # isolate's rounds follow from each other's figures: an attempt runs them all again
        carried = 0 if cfg.task == "isolate" else _agreed_carry_over(run, attempt, placement, device)
        ctx = RankContext(
            rank=placement.rank,
            nranks=placement.world_size,
            local_rank=placement.local_rank,
            host=placement.host,
            device=device,
        )
        with run.rank_results(placement.rank).open("a", encoding="utf-8") as results:
            writer = _ResultWriter(results, attempt)
            if cfg.task == "isolate":
                from jobs.runtime.isolate_rounds import run_isolate

                run_isolate(cfg, run, placement, device, writer.write, heartbeat)
            else:
                run_sweep(
                    cfg.bench,
                    ctx,
                    writer.write,
                    corrupt_output=cfg.faults.corrupt_rank == placement.rank,
                    on_progress=heartbeat,
                    skip_first=carried,
                )
        dist.barrier()
        return writer.rows + carried
    except BaseException as error:
        # Before teardown: peers only see the broken connection after this rank has said it failed first.
        status.fail(error)
        raise
    finally:
        dist.destroy_process_group()


def _probe(placement: Placement, status: StatusWriter) -> SetupFailure:
    """What this rank finds at the rendezvous address, once its set-up has failed."""
    found = probe_rendezvous(
        placement.master_addr, placement.master_port, status.record.addresses, store_here=placement.rank == 0
    )
    logger.error(f"process group set-up failed; rendezvous {found.address}:{found.port}: {found.probe}, {found.detail}")
    return found


def _record_summary(run: RunDir, world_size: int) -> None:
    """table.txt and summary.json, once every rank has recorded its end (they do so right after the last
    barrier): waits SUMMARY_WAIT_S for them at most, then leaves it to the first `wait` that sees the end."""
    deadline = time.monotonic() + SUMMARY_WAIT_S
    while not _every_rank_ended(run, world_size):
        if time.monotonic() >= deadline:
            logger.info("table.txt and summary.json left to `collbench wait`: not every rank has ended yet")
            return
        time.sleep(0.2)
    try:
        if record_summary(run, assess(run)):
            logger.info("table.txt and summary.json written")
    except (OSError, ValueError) as error:  # the measurements are on disk: a reader records them later
        logger.warning(f"table.txt and summary.json not written: {error}")


def _every_rank_ended(run: RunDir, world_size: int) -> bool:
    statuses = read_statuses(run)
    return len(statuses) == world_size and all(s.state is not RankState.RUNNING for s in statuses.values())


def _apply_thread_count(torch: Any) -> None:
    """torch may have sized its intra-op pool before OMP_NUM_THREADS was set in this process."""
    wanted = os.environ.get("OMP_NUM_THREADS", "")
    if wanted.isdigit() and int(wanted) > 0:
        torch.set_num_threads(int(wanted))


def _agreed_carry_over(run: RunDir, attempt_number: int, placement: Placement, device: Any) -> int:
    """How many measurements this attempt takes over from the one before: the count jobs.rundir.attempts
    decided, if every rank is on the host it had then (all ranks agree, or none carries anything)."""
    import torch
    import torch.distributed as dist

    from jobs.rundir import attempts

    if attempt_number == 0:  # every rank of the job is in the same attempt
        return 0
    attempt = attempts.current_attempt(run, attempt_number)
    count = attempt.resume_from if attempt else 0
    same_host = attempt is not None and attempts.earlier_host(run, attempt, placement.rank) == placement.host
    vote = torch.tensor([count if same_host else 0, int(same_host)], dtype=torch.int64, device=device)
    dist.all_reduce(vote, op=dist.ReduceOp.MIN)
    agreed = int(vote[0]) if int(vote[1]) == 1 else 0
    if attempt is not None and agreed:
        attempts.carry_over(run, attempt, placement.rank, agreed)
        logger.info(f"attempt {attempt_number}: carrying over {agreed} measurement(s) from the attempt before")
    elif attempt is not None:
        logger.info(
            f"attempt {attempt_number}: starting the sweep over (nodes or hosts differ from the attempt before)"
        )
    return agreed


def _inject_faults(cfg: Config, rank: int) -> None:
    if cfg.faults.fail_rank == rank:
        raise InjectedFault(f"injected failure on rank {rank} (faults.fail_rank={rank})")
    if cfg.faults.hang_rank == rank:
        logger.warning(f"rank {rank} hangs on purpose (faults.hang_rank={rank})")
        while True:
            time.sleep(1.0)


class _ResultWriter:
    """Appends each result as it is measured, so a killed run keeps every finished size."""

    def __init__(self, handle: TextIO, attempt: int) -> None:
        self.handle = handle
        self.attempt = attempt
        self.rows = 0

    def write(self, result: Any) -> None:
        result.attempt = self.attempt
        self.handle.write(result.to_json() + "\n")
        self.handle.flush()
        self.rows += 1
        logger.info(
            (f"{result.group}: " if result.group else "")
            + f"{result.op} {result.size} B {placement_name(result.in_place)}: "
            f"{result.time_us:.2f} us, busbw {result.busbw:.3f} GB/s, #wrong {result.wrong}"
        )
