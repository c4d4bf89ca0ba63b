"""One watcher for every Slurm run a command waits on: the run directories are read every couple of
seconds (files, no Slurm), Slurm is asked on a backed-off schedule, for all the runs in one call.

- Slurm: one `squeue -j 1,2,3` per poll for every run not yet over (one `sacct` for the jobs squeue no
  longer lists). The interval starts at BACKOFF.first_s and doubles while nothing changes, up to
  BACKOFF.longest_s; a change (a job's Slurm state, a rank's end, ranks making progress again after a
  stall) brings it back to the first, and a change seen in the files asks Slurm at once.
- Nodes: `sinfo` for the nodes of runs whose ranks made no progress for STALE_S (their heartbeats are
  stale), at most once per Slurm poll, and when settling a failure (which nodes no longer answer).
- What Slurm says of a run's job and nodes is written to its slurm.json here only: while the job runs,
  and when this wait is the first to see it end, which also writes the run's final files.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from jobs.inspect.postmortem import Postmortem, examine, rank_spans
from jobs.inspect.progress import RankProgress, read_progress
from jobs.inspect.report import read_statuses
from jobs.launchers.base import RunState, WaitResult
from jobs.launchers.live import Live, Snapshot
from jobs.launchers.run_end import end_run
from jobs.rundir.layout import RunDir
from jobs.rundir.records.config import load_run_config
from jobs.rundir.records.rank import RankStatus
from jobs.rundir.records.slurm import JobFacts
from slurm import submission
from slurm.evidence import NodeState, nodes_of
from slurm.nodes import node_states
from slurm.queue import JobRecord
from slurm.runner import SlurmFailed
from slurm.states import JobState, job_state

FILES_EVERY_S = 2.0
"""How often the run directories are read (no Slurm call)."""
STALE_S = 15.0
"""Ranks without progress for this long: ask Slurm about their nodes."""
SETTLE_S = 4.0
SETTLE_EVERY_S = 1.0


@dataclass(frozen=True, slots=True)
class Backoff:
    """The interval between two Slurm polls: short after a change, doubling while nothing changes."""

    first_s: float = 2.0
    longest_s: float = 30.0
    factor: float = 2.0

    def __post_init__(self) -> None:
        if not 0 < self.first_s <= self.longest_s or self.factor < 1:
            raise ValueError(
                f"Backoff({self.first_s}, {self.longest_s}, {self.factor}): allowed 0 < first_s <= longest_s, "
                "factor >= 1"
            )

    def after(self, previous_s: float | None, changed: bool) -> float:
        """The next interval, given the last one (None: none yet) and whether the last poll saw a change."""
        if previous_s is None or changed:
            return self.first_s
        return min(self.longest_s, previous_s * self.factor)


BACKOFF = Backoff()


def awaiting_next_attempt(state: JobState, postmortem: Postmortem, may_requeue: bool) -> bool:
    """The ranks' ends on file are an attempt's, not the job's: the job is queued again (the files stay
    until the next attempt files them away), or a rank was stopped by a signal in a job Slurm may requeue
    while Slurm still shows it running. Wait for Slurm to say which (REQUEUED, CANCELLED, ...)."""
    if state is JobState.PENDING:
        return True
    stopped = any(end.kind == "stopped" for end in postmortem.ends.values())
    return may_requeue and stopped and state is JobState.RUNNING


def _may_requeue(run: RunDir) -> bool:
    try:
        return load_run_config(run).slurm.requeue
    except (OSError, ValueError):
        return False


class Watched:
    """One run as the watcher follows it."""

    def __init__(self, run: RunDir, now: float) -> None:
        meta = run.read_meta()
        self.run = run
        self.job_id = meta.job_id
        self.world = meta.world_size
        self.may_requeue = _may_requeue(run)
        self.facts = JobFacts.read(run)
        self.saw_end_on_file = self.facts.final
        """An earlier wait saw the end and wrote what it found: nothing is written again."""
        self.state = RunState(self.job_id, JobState.UNKNOWN)
        self.since = now
        self.kinds: tuple[str, ...] = ()
        self.positions: tuple[int, ...] = ()
        self.progress_at = now
        self.stalled = False
        self.postmortem = Postmortem(ends={})
        self.progress: list[RankProgress] = []
        self.statuses: dict[int, RankStatus] = {}
        self.result: WaitResult | None = None

    def read_files(self, now: float) -> bool:
        """Read the run directory; True when a rank's end changed or its ranks moved again after a stall."""
        self.statuses = read_statuses(self.run)
        self.postmortem = examine(self.run, self.statuses, self.world)
        hosts = {rank: s.host for rank, s in self.statuses.items()}
        self.progress = read_progress(self.run, self.world, hosts)
        kinds = tuple(end.kind for _, end in sorted(self.postmortem.ends.items()))
        positions = tuple(p.position for p in self.progress)
        changed = kinds != self.kinds
        resumed = False
        if positions != self.positions:
            resumed = self.stalled
            self.positions, self.progress_at, self.stalled = positions, now, False
        self.kinds = kinds
        return changed or resumed

    def seen_by_slurm(self, record: JobRecord, now: float) -> bool:
        """Slurm's latest word on the job; True when its state changed."""
        seen = state_of(record)
        changed = seen.words != self.state.words
        if changed:
            self.since = now
            if self.state.state is not JobState.RUNNING and seen.state is JobState.RUNNING:
                self.progress_at = now  # its ranks have had no time to make progress yet
        self.state = seen
        if record.nodes:  # the attempt running now (a requeued job may run on other nodes)
            self.facts.nodes = record.nodes
        if self.state.state is not JobState.UNKNOWN:  # accounting may have forgotten an old job: keep what was seen
            self.facts.state = record.state
        return changed

    def stale(self, now: float) -> bool:
        """Running, with nodes known, and no rank has moved for STALE_S."""
        running = self.state.state is JobState.RUNNING and not self.postmortem.ended()
        self.stalled = running and bool(self.facts.nodes) and now - self.progress_at >= STALE_S
        return self.stalled

    def ended(self) -> bool:
        return self.postmortem.ended() and not awaiting_next_attempt(
            self.state.state, self.postmortem, self.may_requeue
        )

    def snapshot(self) -> Snapshot:
        return Snapshot(self.job_id, self.state.said, self.since, self.progress)


def state_of(record: JobRecord) -> RunState:
    return RunState(record.job_id, job_state(record.state), record.state, record.nodes)


class Watcher:
    """Waits for many Slurm runs at once (see the module's docstring for the policy)."""

    def __init__(
        self,
        runs: Sequence[RunDir],
        live: Live | None = None,
        backoff: Backoff = BACKOFF,
        say: Callable[[str], None] | None = None,
    ) -> None:
        now = time.monotonic()
        self.watched = [Watched(run, now) for run in runs]
        self.live = live
        self.backoff = backoff
        self.say = say or (live.say if live is not None else _say_on_stderr)
        self.interval: float | None = None
        self.slurm_due = now

    @property
    def active(self) -> list[Watched]:
        return [w for w in self.watched if w.result is None]

    def wait(self, timeout_s: float | None = None) -> list[WaitResult]:
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while self.active:
            started = time.monotonic()
            self.step(started, deadline)
            if self.active:
                time.sleep(max(FILES_EVERY_S, 2 * (time.monotonic() - started)))  # 4096 ranks' files take time
        return [w.result for w in self.watched if w.result is not None]

    def step(self, now: float, deadline: float | None) -> None:
        """One look at the files, and at Slurm when due (or when the files changed)."""
        active = self.active
        files_changed = any([w.read_files(now) for w in active])
        if files_changed or now >= self.slurm_due:
            self.poll_slurm(active, now, files_changed)
        for w in active:
            if w.state.state.is_final or w.ended() or (deadline is not None and now >= deadline):
                self.settle(w)
            elif self.live is not None and len(self.watched) == 1:
                self.live.update(w.snapshot())

    def poll_slurm(self, active: list[Watched], now: float, files_changed: bool) -> None:
        records = submission.query_jobs([w.job_id for w in active])
        slurm_changed = any([w.seen_by_slurm(records[w.job_id], now) for w in active])
        self.interval = self.backoff.after(self.interval, files_changed or slurm_changed)
        self.slurm_due = now + self.interval
        stale = [w for w in active if w.stale(now)]
        if stale:
            self.check_nodes(stale)
        for w in active:
            if not w.saw_end_on_file:
                w.facts.save(w.run)  # while it runs: what Slurm says of it, for status and report

    def check_nodes(self, runs: list[Watched]) -> None:
        """One sinfo for the nodes of every run given; a node newly unhealthy is said at once."""
        nodes = sorted({node for w in runs for node in nodes_of(w.facts.nodes)})
        states = node_health(nodes)
        for w in runs:
            hosts = {rank: s.host for rank, s in w.statuses.items()}
            for node in nodes_of(w.facts.nodes):
                _note_unhealthy(w.facts, states.get(node), hosts, self.say)

    def settle(self, w: Watched) -> None:
        """The run is over (or the wait is): Slurm's last word, which nodes no longer answer when the only
        witnesses of a failure lost a peer, then the run's facts and final files, by the first to see it."""
        ranks_ended = w.ended()
        if ranks_ended and not w.state.state.is_final:
            _settle_state(w)
        if w.state.state is not JobState.UNKNOWN:
            w.facts.state = w.state.words
        ends = w.postmortem.ends.values()
        causes = any(e.kind in ("own", "dead", "hung", "lost") for e in ends)
        noticed = any(e.kind == "peer" for e in ends)
        # Slurm may mark a silent node down and end the job NODE_FAIL before its survivors' collectives time
        # out: then no rank noticed, and the node's state is the one cause there is to name
        node_failed = "NODE_FAIL" in w.state.words
        if (node_failed or (noticed and not causes)) and w.facts.nodes:
            w.facts.unanswering = submission.unanswering_nodes(nodes_of(w.facts.nodes))
            states = node_health(nodes_of(w.facts.nodes))
            hosts = {rank: e.host for rank, e in w.postmortem.ends.items()}
            for node in nodes_of(w.facts.nodes):
                _note_unhealthy(w.facts, states.get(node), hosts, self.say)
        w.result = WaitResult(state=w.state, ranks_ended=ranks_ended)
        over = w.state.state.is_final or ranks_ended
        if over and w.state.state is not JobState.NEVER_STARTS and not w.saw_end_on_file:
            w.facts.save(w.run)
            end_run(w.run, job_over=w.state.state.is_final)


def _settle_state(w: Watched) -> None:
    """Every rank has ended: give Slurm a moment to say so too (COMPLETING -> COMPLETED), no more."""
    deadline = time.monotonic() + SETTLE_S
    while not w.state.state.is_final and time.monotonic() < deadline:
        time.sleep(SETTLE_EVERY_S)
        w.state = state_of(submission.query_jobs([w.job_id])[w.job_id])


def node_health(nodes: list[str]) -> dict[str, NodeState]:
    """Each node's state as Slurm has it now (one sinfo), {} when sinfo refuses: a wait goes on without it."""
    try:
        return node_states(nodes)
    except SlurmFailed:
        return {}


def _note_unhealthy(facts: JobFacts, node: NodeState | None, hosts: dict[int, str], say: Callable[[str], None]) -> None:
    if node is None or not node.unhealthy or node.node in facts.unhealthy:
        return
    facts.unhealthy[node.node] = f"Slurm marks it {node.describe()}"
    ranks = [rank for rank, host in hosts.items() if host == node.node]
    on_it = f": rank(s) {rank_spans(ranks)} ran there" if ranks else ""
    say(f"collbench: Slurm marks node {node.node} {node.describe()}{on_it}")


def _say_on_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
