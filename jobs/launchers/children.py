"""Launchers whose run is a child of this process (local: submitit's controller; slurm-step: srun): the run
ends with it, so this process waits for it with one loop, and whoever sees it end first ends the run."""

from __future__ import annotations

import time
from abc import abstractmethod
from collections.abc import Sequence

from jobs.inspect.report import read_statuses
from jobs.launchers.base import Launcher, PayloadT, RunState, WaitResult
from jobs.launchers.live import Live
from jobs.launchers.run_end import end_run
from jobs.rundir.layout import RunDir
from slurm.states import JobState

POLL_S = 0.2


class ChildLauncher(Launcher[PayloadT]):
    detached = False
    nodes_word = ""
    """What describe says of the nodes it runs on, when it cannot tell which ('localhost' for local)."""

    @abstractmethod
    def alive(self, run: RunDir) -> bool:
        """The run's child (or, for a run started by another process, its process or step) still runs."""

    @abstractmethod
    def started_here(self, run: RunDir) -> bool:
        """This process started the run: its end is this process's to write, whatever is there already."""

    def watch(self, run: RunDir, deadline: float | None, live: Live | None = None) -> None:
        """Until the run's child ends or the deadline (time.monotonic()) passes; `live` shows the rows meanwhile."""
        while self.alive(run) and not _past(deadline):
            if live is not None:
                live.pump()
            time.sleep(POLL_S)

    def describe(self, runs: Sequence[RunDir]) -> list[RunState]:
        return [self._state(run) for run in runs]

    def wait(self, runs: Sequence[RunDir], timeout_s: float | None, live: Live | None) -> list[WaitResult]:
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        results = []
        for run in runs:
            self.watch(run, deadline, live if len(runs) == 1 else None)
            state = self._state(run)
            if state.state.is_final and (self.started_here(run) or not run.summary_file.exists()):
                end_run(run, job_over=True)
            results.append(WaitResult(state=state, ranks_ended=state.state.is_final))
        return results

    def _state(self, run: RunDir) -> RunState:
        job_id = run.read_meta().job_id
        if self.alive(run):
            return RunState(job_id, JobState.RUNNING, nodes=self.nodes_word)
        return ended_state(run, job_id, self.nodes_word)


def _past(deadline: float | None) -> bool:
    return deadline is not None and time.monotonic() >= deadline


def ended_state(run: RunDir, job_id: str, nodes: str) -> RunState:
    """A run whose ranks are gone, from their statuses, as a JobState: COMPLETED when every rank says ok,
    CANCELLED when every one was stopped, FAILED otherwise (the local, step and imported launchers)."""
    states = [s.state for s in read_statuses(run).values()]
    world = run.read_meta().world_size
    if states and len(states) == world and all(state == "ok" for state in states):
        return RunState(job_id, JobState.COMPLETED, nodes=nodes)
    if states and all(state == "stopped" for state in states):
        return RunState(job_id, JobState.CANCELLED, nodes=nodes)
    return RunState(job_id, JobState.FAILED, nodes=nodes)
