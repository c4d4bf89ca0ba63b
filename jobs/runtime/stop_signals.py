"""A rank that is told to stop (scancel, a preemption, the time limit, Ctrl-C) records it, whatever
else handles the signal.

submitit installs its own handlers in every task: SIGTERM is only logged ("Bypassing signal SIGTERM"),
SIGUSR2 checkpoints and requeues on rank 0. Python runs signal handlers in the main thread, and only
between bytecodes: a rank blocked inside a collective would not record anything before Slurm's
SIGKILL. So the C-level handler's wakeup byte (signal.set_wakeup_fd) is read by a thread of our own,
which writes the rank's 'stopped' status and dumps every thread's stack at once; the Python-level
handler then chains to submitit's, so its requeue behaviour is kept, and for SIGTERM/SIGINT ends the
rank with RankStopped, once: a rank already on its way out (hold(), or submitit's SystemExit after a
requeue) is not interrupted again while it records how it ended.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable
from types import FrameType
from typing import Any

from loguru import logger

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
"""The rank is being ended: record 'stopped' and leave."""
NOTICE_SIGNALS = (signal.SIGUSR2,)
"""Slurm's warning before the time limit or a preemption (submitit's --signal=USR2@90): record it;
submitit checkpoints, and requeues when the job allows it."""


class RankStopped(BaseException):
    """Raised in the rank's main thread once a stop signal has been recorded: ends the sweep."""

    def __init__(self, signal_name: str) -> None:
        super().__init__(f"stopped by {signal_name}")
        self.signal_name = signal_name


Recorder = Callable[[str, float], None]
"""Called with the signal's name and the moment it arrived, from the watcher thread."""


class SignalWatch:
    def __init__(self, on_stop: Recorder, on_notice: Recorder) -> None:
        self.on_stop = on_stop
        self.on_notice = on_notice
        self.previous: dict[int, Any] = {}
        self.holding = False
        self.read_fd, self.write_fd = os.pipe()
        os.set_blocking(self.write_fd, False)
        self.old_wakeup = signal.set_wakeup_fd(self.write_fd, warn_on_full_buffer=False)
        for signum in (*STOP_SIGNALS, *NOTICE_SIGNALS):
            self.previous[signum] = signal.signal(signum, self._in_main_thread)
        self.thread = threading.Thread(target=self._watch, name="collbench-signals", daemon=True)
        self.thread.start()

    def _watch(self) -> None:
        while True:
            try:
                data = os.read(self.read_fd, 64)
            except OSError:
                return
            if not data:
                return
            for signum in data:
                self._record(signum)

    def _record(self, signum: int) -> None:
        try:
            name = signal.Signals(signum).name
        except ValueError:
            return
        at = time.time()
        if signum in STOP_SIGNALS:
            self.on_stop(name, at)
        elif signum in NOTICE_SIGNALS:
            self.on_notice(name, at)

    def hold(self) -> None:
        """The rank is ending on its own: signals from now on are recorded, never raised in the main thread."""
        self.holding = True

    def _in_main_thread(self, signum: int, frame: FrameType | None) -> None:
        previous = self.previous.get(signum)
        if callable(previous):
            try:
                previous(signum, frame)  # submitit's: log, or checkpoint and requeue (rank 0, SIGUSR2)
            except BaseException:
                self.holding = True  # submitit's SystemExit after its requeue: let it through undisturbed
                raise
        if signum in STOP_SIGNALS and not self.holding:
            self.holding = True
            raise RankStopped(signal.Signals(signum).name)

    def close(self) -> None:
        for signum, previous in self.previous.items():
            signal.signal(signum, previous if previous is not None else signal.SIG_DFL)
        signal.set_wakeup_fd(self.old_wakeup)
        for fd in (self.write_fd, self.read_fd):  # the writer first: the watcher reads EOF and ends
            try:
                os.close(fd)
            except OSError:
                logger.debug(f"signal pipe fd {fd} already closed")
