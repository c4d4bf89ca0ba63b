"""The job every rank runs, whoever launched it: rendezvous, sweep, results, status, teardown."""

from __future__ import annotations

import datetime
import os
import socket
import time
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
)
from jobs.rundir.writing import write_json_atomic
from jobs.runtime.environment import capture_environment
from jobs.runtime.heartbeat import Heartbeat, StackDumps
from jobs.runtime.placement import LocalRendezvous, Placement, detect_placement
from jobs.runtime.port_snapshots import record_ports
from jobs.runtime.rank_logging import setup_rank_logging
from jobs.runtime.setup_probe import first_collective_s, probe_rendezvous
from jobs.runtime.status_writer import StatusWriter
from jobs.runtime.stop_signals import SignalWatch

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
    host would otherwise each start one intra-op thread per core). With rails enabled, COLLBENCH_RAIL names
    the rank's rail, and with NCCL and rails.hcas NCCL_IB_HCA is that rail's HCA alone ('=mlx5_3'), in place
    of env's node-wide list."""
    env = {name: value for name, value in cfg.env.items() if value != FROM_ENVIRONMENT}  # secrets: inherited
    env.update(_rail_environment(cfg, placement))
    if cfg.device == "cpu" and "OMP_NUM_THREADS" not in env and "OMP_NUM_THREADS" not in inherited:
        env["OMP_NUM_THREADS"] = "1"
    if cfg.fabric.nccl_info and cfg.backend == "nccl":  # what jobs.fabric reads; config validation keeps it so
        env.setdefault("NCCL_DEBUG", "INFO")
        env.setdefault("NCCL_DEBUG_SUBSYS", ",".join(NCCL_INFO_SUBSYSTEMS))
    if env.get("NCCL_DEBUG") and "NCCL_DEBUG_FILE" not in env:
        env["NCCL_DEBUG_FILE"] = str(run.nccl_debug_log(placement.rank))
    env.update(placement.torch_env())
    return env


def _rail_environment(cfg: Config, placement: Placement) -> dict[str, str]:
    """COLLBENCH_RAIL and, on NCCL with rails.hcas, the rail's own NCCL_IB_HCA; nothing with rails off."""
    if not cfg.rails.enabled(placement.local_world_size):
        return {}
    rail = cfg.rails.rail_of(placement.local_rank)
    env = {"COLLBENCH_RAIL": str(rail)}
    hca = cfg.rails.nccl_ib_hca(rail)
    if cfg.backend == "nccl" and hca:
        env["NCCL_IB_HCA"] = hca
    return env


def _run_rank(cfg: Config, run: RunDir, placement: Placement, status: StatusWriter, heartbeat: Heartbeat) -> int:
    import torch

    from collectives.torch_floor import require_torch_floor

    require_torch_floor(torch.__version__)  # one line naming both versions, before anything needs the newer torch

    import torch.distributed as dist

    from collectives.device_memory import available_bytes
    from collectives.memory import check_fits
    from collectives.sweep import RankContext
    from jobs.runtime.devices import rank_device
    from jobs.runtime.heartbeat import flight_recorder_environment
    from jobs.runtime.rank_tasks import RankWork, rank_entry

    device = rank_device(cfg.device, placement, os.environ)  # cuda:0 where Slurm bound one GPU to the task
    status.set_device(str(device))
    if device.type == "cpu":
        _apply_thread_count(torch)
    else:  # NCCL's watchdog tears a hung rank down with no Python error: its Flight Recorder says where it was
        os.environ.update(flight_recorder_environment(run, os.environ))
    write_json_atomic(run.rank_env(placement.rank), capture_environment(device.type, device.index or 0))
    have, source = available_bytes(device, placement.local_world_size)
    check_fits(cfg.measured_bench(), placement.world_size, have, source, cfg.largest_size_key(), cfg.backend)
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
    setup = SetupSpan(started=setup_started, done=setup_done, seconds=round(setup_done - setup_started, 6))
    status.add_setup(setup)
    logger.bind(event="setup", seconds=setup_done - setup_started).info(
        f"process group set up in {setup_done - setup_started:.3f} s"
        + (" (NCCL communicator created eagerly)" if device.type == "cuda" else "")
    )
    try:
        _record_first_collective(status, setup, device)  # before the faults: a hung rank hangs in the sweep
        _inject_faults(cfg, placement.rank)
        attempt = int(os.environ.get("SLURM_RESTART_COUNT") or 0)
        # isolate's rounds follow from each other's figures: an attempt runs them all again
        carried = 0 if cfg.spec.in_rounds else _agreed_carry_over(run, attempt, placement, device)
        ctx = RankContext(
            rank=placement.rank,
            nranks=placement.world_size,
            local_rank=placement.local_rank,
            host=placement.host,
            device=device,
        )
        with run.rank_results(placement.rank).open("a", encoding="utf-8") as results:
            writer = _ResultWriter(results, attempt)
            work = RankWork(cfg, run, placement, ctx, device, writer.write, heartbeat, carried)
            rank_entry(cfg.spec)(work)  # what this kind of run measures (jobs.config.tasks.TASKS)
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


def _record_first_collective(status: StatusWriter, setup: SetupSpan, device: Any) -> None:
    """The first collective's time beside the set-up's: since NCCL 2.22 it makes the connections."""
    seconds = first_collective_s(device)
    status.add_setup(replace(setup, connect_s=round(seconds, 6)))
    logger.bind(event="connect", seconds=seconds).info(
        f"first collective in {seconds * 1e3:.1f} ms"
        + (" (NCCL's connections made on first use)" if device.type == "cuda" else "")
    )


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


NOT_A_PROGRAM = (
    "jobs.runtime.rank_job is not a program: collbench's own launchers call its run_rank() in each rank they "
    "start (jobs/launchers/entry.py); to run ranks on one node type `collbench run ranks=N`; the command for "
    "torchrun, srun or mpirun to start per rank is `collbench rank KEY=VALUE ...`"
)
"""What `python -m jobs.runtime.rank_job` answers, by hand or under torchrun: it used to exit 0 doing nothing."""


if __name__ == "__main__":
    import sys

    print(f"collbench: error: {NOT_A_PROGRAM}", file=sys.stderr)
    sys.exit(2)
