"""The Slurm launcher: the same RankJob, submitted through submitit; waiting reads the run directory."""

from __future__ import annotations

import shlex
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jobs.config.model import Config
from jobs.inspect.postmortem import JobFacts, Postmortem, examine, rank_spans
from jobs.inspect.progress import read_progress
from jobs.inspect.report import read_statuses
from jobs.launchers.entry import RankEntry
from jobs.launchers.live import Live, Snapshot
from jobs.rundir.layout import RunDir
from jobs.rundir.records import load_run_config
from slurm import submission
from slurm.evidence import nodes_of
from slurm.states import StateInfo, state_info

POLL_S = 1.0
NODE_CHECK_S = 5.0
SETTLE_S = 4.0


def slurm_request(cfg: Config, run_path: Path, python: str = sys.executable) -> submission.SlurmRequest:
    """The job's request; its batch script first files away any earlier attempt (jobs.rundir.attempts)."""
    begin_attempt = f"{shlex.quote(python)} -m jobs.rundir.attempts {shlex.quote(str(run_path))}"
    return submission.build_request(
        cfg.slurm, cfg.nodes, cfg.timeouts.job_min, RunDir(run_path).submitit_dir, python, [begin_attempt]
    )


def dry_run_script(cfg: Config) -> str:
    """The sbatch script `submit` would hand to Slurm; the run id is only chosen at submission."""
    placeholder = Path(cfg.output_dir).expanduser().absolute() / "RUN_ID"
    return slurm_request(cfg, placeholder).script()


def submit_run(cfg: Config, config_plain: dict[str, Any], run: RunDir) -> str:
    """Submit the run's ranks as one Slurm job; returns its job id."""
    job_id = submission.submit(slurm_request(cfg, run.path), RankEntry(config=config_plain, run_dir=str(run.path)))
    run.update_meta(job_id=job_id)
    return job_id


@dataclass(frozen=True, slots=True)
class JobState:
    job_id: str
    slurm_state: str
    info: StateInfo


def current_state(run: RunDir) -> JobState:
    job_id = str(run.read_meta()["job_id"])
    slurm_state = submission.job_state(job_id)
    return JobState(job_id=job_id, slurm_state=slurm_state, info=state_info(slurm_state))


def wait_for_job(run: RunDir, timeout_s: float | None = None) -> JobState:
    """Poll Slurm until the job reaches a final state (or the timeout passes)."""
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    while True:
        state = current_state(run)
        if state.info.final or (deadline is not None and time.monotonic() >= deadline):
            return state
        time.sleep(POLL_S)


@dataclass(frozen=True, slots=True)
class WaitResult:
    state: JobState
    ranks_ended: bool
    """Every rank had recorded its end (ok, failed, stopped) or is known dead."""


def watch_job(run: RunDir, timeout_s: float | None = None, live: Live | None = None) -> WaitResult:
    """Wait for the job to end, or for every rank to have recorded its end, whichever comes first,
    saying on `live` how it goes and at once when Slurm marks one of its nodes down."""
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    world = int(run.read_meta().get("world_size", 0))
    may_requeue = _may_requeue(run)
    watcher = NodeWatch(run, live)
    seen_state, since = "", time.monotonic()
    while True:
        started = time.monotonic()
        state = current_state(run)
        if state.slurm_state != seen_state:
            seen_state, since = state.slurm_state, started
        statuses = read_statuses(run)
        watcher.check(state, statuses)
        postmortem = examine(run, statuses, world)
        ended = postmortem.ended() and not awaiting_next_attempt(state.info, postmortem, may_requeue)
        if state.info.final or ended or (deadline is not None and started >= deadline):
            if ended and not state.info.final:
                state = _settled_state(run, state)
            watcher.settle(state, postmortem)
            return WaitResult(state=state, ranks_ended=ended)
        if live is not None:
            hosts = {rank: str(s.get("host", "?")) for rank, s in statuses.items()}
            live.update(Snapshot(state.job_id, state.slurm_state, since, read_progress(run, world, hosts)))
        time.sleep(max(POLL_S, 2 * (time.monotonic() - started)))  # a poll of 4096 ranks' files takes time


def awaiting_next_attempt(info: StateInfo, postmortem: Postmortem, may_requeue: bool) -> bool:
    """The ranks' ends on file are an attempt's, not the job's: the job is queued again (the files stay
    until the next attempt files them away), or a rank was stopped by a signal in a job Slurm may requeue
    while Slurm still shows it running. Wait for Slurm to say which (REQUEUED, CANCELLED, ...)."""
    if info.phase == "pending":
        return True
    stopped = any(end.kind == "stopped" for end in postmortem.ends.values())
    return may_requeue and stopped and info.phase == "running"


def _may_requeue(run: RunDir) -> bool:
    try:
        return load_run_config(run).slurm.requeue
    except (OSError, ValueError, KeyError):
        return False


def _settled_state(run: RunDir, state: JobState, grace_s: float = SETTLE_S) -> JobState:
    """Every rank has ended: give Slurm a moment to say so too (COMPLETING -> COMPLETED), no more."""
    deadline = time.monotonic() + grace_s
    while not state.info.final and time.monotonic() < deadline:
        time.sleep(POLL_S / 2)
        state = current_state(run)
    return state


def refresh_facts(run: RunDir) -> None:
    """Ask Slurm once more about the job and its nodes (for `report`); silent when Slurm cannot say."""
    try:
        NodeWatch(run, None).check(current_state(run), read_statuses(run))
    except (submission.SlurmUnavailable, KeyError):
        return


class NodeWatch:
    """The job's nodes as Slurm sees them, every NODE_CHECK_S; what it finds goes into slurm.json."""

    def __init__(self, run: RunDir, live: Live | None) -> None:
        self.run = run
        self.live = live
        self.facts = JobFacts.read(run)
        self.checked = 0.0

    def check(self, state: JobState, statuses: dict[int, dict[str, Any]]) -> None:
        if not self.facts.nodes and state.info.phase != "pending":
            self.facts.nodes = submission.job_nodes(state.job_id)
        if state.info.phase != "unknown":  # accounting may have forgotten an old job: keep what was seen
            self.facts.state = state.slurm_state
        # the nodes' state now says something of the job only while it runs
        if self.facts.nodes and not state.info.final and time.monotonic() - self.checked >= NODE_CHECK_S:
            self.checked = time.monotonic()
            self._nodes_now(statuses)
        self.facts.save(self.run)

    def _nodes_now(self, statuses: dict[int, dict[str, Any]]) -> None:
        for node in submission.node_states(nodes_of(self.facts.nodes)):
            if not node.unhealthy or node.node in self.facts.unhealthy:
                continue
            self.facts.unhealthy[node.node] = f"Slurm marks it {node.describe()}"
            ranks = [rank for rank, s in statuses.items() if s.get("host") == node.node]
            on_it = f": rank(s) {rank_spans(ranks)} ran there" if ranks else ""
            message = f"collbench: Slurm marks node {node.node} {node.describe()}{on_it}"
            if self.live is not None:
                self.live.say(message)

    def settle(self, state: JobState, postmortem: Postmortem) -> None:
        """A failure whose only witnesses lost a peer: ask which of the job's nodes no longer answer."""
        self.facts.state = state.slurm_state
        causes = any(e.kind in ("own", "dead", "hung", "lost") for e in postmortem.ends.values())
        noticed = any(e.kind == "peer" for e in postmortem.ends.values())
        if noticed and not causes and self.facts.nodes:
            self.facts.unanswering = submission.unanswering_nodes(nodes_of(self.facts.nodes))
            self._nodes_now({r: {"host": e.host} for r, e in postmortem.ends.items()})
        self.facts.save(self.run)
