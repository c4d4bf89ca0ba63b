"""A stop signal is recorded once, with the stacks, whichever thread sees it first; a rank already on its way
out is not interrupted again while it records how it ended. Real signals, sent to this process."""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jobs.rundir.layout import RunDir
from jobs.rundir.records.rank import RankState
from jobs.runtime import status_writer
from jobs.runtime.heartbeat import StackDumps
from jobs.runtime.placement import Placement
from jobs.runtime.status_writer import StatusWriter
from jobs.runtime.stop_signals import RankStopped, SignalWatch

HEADING = "# collbench: Python stacks of every thread (stopped by SIGTERM):"


class Rank:
    def __init__(self, tmp_path: Path) -> None:
        self.run = RunDir(tmp_path)
        for folder in ("status", "logs"):
            (tmp_path / folder).mkdir()
        self.log = self.run.rank_log(0)
        self.dumps = StackDumps(self.log, watchdog_s=0)
        placement = Placement(
            rank=0, world_size=1, local_rank=0, local_world_size=1, node_rank=0, nnodes=1,
            host="localhost", master_addr="localhost", master_port=1, job_id="",
        )  # fmt: skip
        self.status = StatusWriter(self.run, placement, "cpu", self.dumps)
        self.status.write(RankState.RUNNING)

    def recorded(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.run.rank_status(0).read_text())
        return data

    def headings(self) -> int:
        return self.log.read_text().count(HEADING)


@pytest.fixture
def rank(tmp_path: Path) -> Iterator[Rank]:
    made = Rank(tmp_path)
    yield made
    made.dumps.close()


def blocked_until_signalled(watch: SignalWatch, status: StatusWriter, signum: int) -> BaseException:
    """The main thread sleeps as it would in a collective; the signal arrives; the rank ends as rank_job's does."""
    try:
        os.kill(os.getpid(), signum)
        time.sleep(10)
    except BaseException as error:
        watch.hold()
        status.fail(error)
        return error
    raise AssertionError("the signal did not end the sleep")


def test_a_stop_is_recorded_once_with_the_stacks(rank: Rank) -> None:
    watch = SignalWatch(on_stop=rank.status.stop, on_notice=rank.status.notice)
    try:
        error = blocked_until_signalled(watch, rank.status, signal.SIGTERM)
    finally:
        watch.close()
    assert isinstance(error, RankStopped)
    assert (rank.recorded()["state"], rank.recorded()["signal"]) == ("stopped", "SIGTERM")
    assert rank.headings() == 1


def test_when_the_main_thread_is_first_it_records_the_stop_and_the_stacks(
    rank: Rank, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(status_writer, "STOP_RECORD_WAIT_S", 0.05)
    rank.status.fail(RankStopped("SIGTERM"))  # the watcher never got to it
    assert (rank.recorded()["state"], rank.recorded()["signal"]) == ("stopped", "SIGTERM")
    assert rank.headings() == 1
    rank.status.stop("SIGTERM", time.time())  # the watcher, late: nothing recorded over it
    assert rank.headings() == 1


def test_a_stop_during_a_failure_is_neither_raised_nor_recorded_over_it(rank: Rank) -> None:
    watch = SignalWatch(on_stop=rank.status.stop, on_notice=rank.status.notice)
    try:
        watch.hold()  # rank_job holds as soon as the rank fails on its own
        rank.status.fail(RuntimeError("a peer went away"))
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.5)  # a RankStopped raised here would fail the test
    finally:
        watch.close()
    assert (rank.recorded()["state"], rank.recorded()["error"]) == ("failed", "RuntimeError: a peer went away")
    assert rank.headings() == 0


def test_submitits_exit_after_a_requeue_is_not_replaced_by_the_stop_that_follows(rank: Rank) -> None:
    def submitit_requeues(signum: int, frame: object) -> None:
        raise SystemExit(-1)  # what submitit does on rank 0 once it has requeued the job

    previous = signal.signal(signal.SIGUSR2, submitit_requeues)
    watch = SignalWatch(on_stop=rank.status.stop, on_notice=rank.status.notice)
    try:
        with pytest.raises(SystemExit):
            try:
                os.kill(os.getpid(), signal.SIGUSR2)
                time.sleep(10)
            except SystemExit:
                os.kill(os.getpid(), signal.SIGTERM)  # Slurm ends the requeued job's steps
                time.sleep(0.2)  # the SIGTERM handler runs here: it must not raise RankStopped
                raise
    finally:
        watch.close()
        signal.signal(signal.SIGUSR2, previous)
    signals = [entry["signal"] for entry in rank.recorded().get("signals", [])]
    assert signals == ["SIGUSR2"]
