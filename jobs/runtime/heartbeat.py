"""What a rank leaves behind while it runs: a heartbeat per measurement, and its Python stacks when
it stops making progress, dies of a signal, or fails. `collbench status` and `logs` read them."""

from __future__ import annotations

import faulthandler
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TextIO

from loguru import logger

from collectives.sweep import Progress
from jobs.rundir.layout import RunDir
from jobs.rundir.records.rank import HEARTBEAT, Beat, HeartbeatPhase

FLIGHT_RECORDER_ENTRIES = "2000"
"""NCCL collectives each rank's Flight Recorder keeps (TORCH_NCCL_TRACE_BUFFER_SIZE): the last few rounds of
a sweep, enough to hold the collective a hang stopped at."""


def flight_recorder_environment(run: RunDir, inherited: Mapping[str, str]) -> dict[str, str]:
    """What makes a rank torn down by NCCL's watchdog leave its Flight Recorder dump in the run (logs/
    nccl-trace-rank-N, read by jobs.inspect.flight_recorder): a trace buffer, a dump on time-out (every rank
    dumps, signalled through the store), and where. A variable already set (the config's env, the job's)
    stays as it is."""
    wanted = {
        "TORCH_NCCL_TRACE_BUFFER_SIZE": FLIGHT_RECORDER_ENTRIES,
        "TORCH_NCCL_DUMP_ON_TIMEOUT": "1",
        "TORCH_NCCL_DEBUG_INFO_TEMP_FILE": str(run.nccl_trace_prefix),
        "TORCH_FR_DUMP_TEMP_FILE": str(run.nccl_trace_prefix),  # the same prefix's newer name (torch >= 2.8)
    }
    return {name: value for name, value in wanted.items() if name not in inherited}


class StackDumps:
    """faulthandler on the rank's own log: fatal signals and a no-progress watchdog (stop signals are
    jobs.runtime.stop_signals', which dumps through dump_now)."""

    def __init__(self, log_file: Path, watchdog_s: float) -> None:
        self.handle: TextIO = log_file.open("a", encoding="utf-8")
        self.watchdog_s = watchdog_s
        self.closed = False
        faulthandler.enable(file=self.handle, all_threads=True)
        self.rearm()

    def rearm(self) -> None:
        """Dump every thread's stack if this rank shows no progress for watchdog_s from now."""
        faulthandler.cancel_dump_traceback_later()
        if self.watchdog_s > 0 and not self.closed:
            faulthandler.dump_traceback_later(self.watchdog_s, repeat=False, file=self.handle)

    def dump_now(self, reason: str) -> None:
        if self.closed:
            return
        self.handle.write(f"# collbench: Python stacks of every thread ({reason}):\n")
        self.handle.flush()
        faulthandler.dump_traceback(file=self.handle, all_threads=True)
        self.handle.flush()

    def close(self) -> None:
        self.closed = True
        faulthandler.cancel_dump_traceback_later()
        faulthandler.disable()
        self.handle.close()


class Heartbeat:
    """Called at the start and end of every measurement (collectives.sweep's on_progress)."""

    def __init__(self, run: RunDir, rank: int, host: str, dumps: StackDumps, slow_s: float = 0.0) -> None:
        self.path = run.rank_heartbeat(rank)
        self.rank = rank
        self.host = host
        self.dumps = dumps
        self.slow_s = slow_s
        self.total = 0

    def beat(
        self, phase: HeartbeatPhase, index: int = 0, op: str = "", size: int = 0, root: int = -1, in_place: bool = False
    ) -> None:
        record = Beat(
            rank=self.rank, host=self.host, phase=phase, at=time.time(), total=self.total,
            index=index, op=op, size=size, root=root, in_place=in_place,
        )  # fmt: skip
        HEARTBEAT.write(self.path, record)
        self.dumps.rearm()

    def __call__(self, progress: Progress) -> None:
        self.total = progress.total
        if progress.phase == "start" and self.slow_s > 0:
            time.sleep(self.slow_s)  # faults.slow_rank: this rank reaches every step late
        self.beat(
            HeartbeatPhase(progress.phase),
            index=progress.index,
            op=progress.op,
            size=progress.size,
            root=progress.root,
            in_place=progress.in_place,
        )
        logger.debug(
            f"heartbeat {progress.phase} step={progress.index + 1}/{progress.total} op={progress.op} "
            f"size={progress.size} root={progress.root} in_place={int(progress.in_place)}"
        )
