"""A rank's status file (status/rank-NNNNN.json), written as the rank runs, fails or is stopped."""

from __future__ import annotations

import os
import socket
import threading
import time
import traceback
from dataclasses import replace
from typing import Any

from loguru import logger

from jobs.rundir.layout import RunDir
from jobs.rundir.records.rank import STATUS, RankState, RankStatus, SetupFailure, SetupSpan, SignalNotice
from jobs.runtime.heartbeat import StackDumps
from jobs.runtime.placement import Placement
from jobs.runtime.stop_signals import RankStopped

STOP_RECORD_WAIT_S = 2.0
"""How long the main thread waits for the signal watcher to record a stop before recording it itself."""


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
            device=device,  # "cuda" until set_device names the rank's own GPU
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

    def set_device(self, device: str) -> None:
        """The device the rank runs on once it is chosen (jobs.runtime.devices): 'cuda:0' where Slurm bound
        one GPU to the task, whatever its local rank."""
        with self.lock:
            self.record = replace(self.record, device=device)
            if not self.ended:
                self.write(RankState.RUNNING)

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
