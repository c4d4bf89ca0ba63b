"""How each rank ended and which rank (or node) caused a failure: cause before symptom.

Evidence, all read from the run directory:
  - each rank's status file: ok, failed (with its error), stopped (with the signal), or still 'running';
  - srun's and slurmstepd's own lines in the batch script's stderr (slurm.evidence): a task that was
    killed, crashed or exited, and whether that came before srun began tearing the step down;
  - the Slurm facts `wait` and `status` record in slurm.json: the job's state, nodes Slurm marks down
    or not responding, nodes whose slurmd does not answer;
  - heartbeats: which ranks were behind the others when the others gave up;
  - under NCCL, torch's Flight Recorder dumps (jobs.inspect.flight_recorder): NCCL's watchdog tears a rank
    down on a collective's time-out with no Python exception, so no rank records that it gave up; the dumps
    say which members of a group never entered the collective the others waited in.

Ranks are then judged, most to least likely the cause: a rank that raised an error of its own; a rank
that died without recording anything (srun saw it killed, or the job is over and it never wrote an
end); a node that stopped answering, with the ranks on it; a rank that hung (it never failed, and was
behind the ranks that gave up on it). Ranks whose error is a lost peer (connection reset or closed, a
timeout, an NCCL remote error) only noticed, and are named as such, after the cause.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from jobs.inspect.flight_recorder import Lagging, lagging_groups, read_traces
from jobs.inspect.progress import RankProgress, read_progress
from jobs.rundir.layout import RunDir
from jobs.rundir.records.rank import RankState, RankStatus, SetupFailure, SetupProbe
from jobs.rundir.records.run import LauncherName
from jobs.rundir.records.slurm import JobFacts
from slurm.evidence import StepEvidence, read_step_messages, signal_of
from slurm.states import ended_as, state_word

__all__ = ["JobFacts", "Postmortem", "RankEnd", "examine", "judge", "rank_spans"]

Kind = Literal["ok", "own", "setup", "peer", "dead", "killed", "lost", "hung", "stopped", "running", "absent"]
CAUSES: tuple[Kind, ...] = ("own", "setup", "dead", "lost", "hung")
"""Kinds of end that explain a failure by themselves: ranks stopped or that lost a peer after one are its victims."""

LOST_PEER = re.compile(
    r"Connection reset by peer|Connection closed by peer|Broken pipe|Connection refused|Timed out waiting|"
    r"timed out|Timeout|Socket Timeout|remote process exited|ncclRemoteError|remote error|network error|"
    r"DistNetworkError|recvValue failed|Connection lost|communicator was aborted|watchdog",
    re.IGNORECASE,
)
PEER_ADDRESS = re.compile(r"\[(?P<addr>[0-9a-fA-F:.]+)\]:\d+")


def short_error(error: str) -> str:
    """An error without the build paths and boilerplate torch and gloo wrap around it."""
    text = re.sub(r"\[/[^\]]*?/(gloo/[^\]]+)\]", r"[\1]", error)
    return text.split(". This is typically")[0].strip()


def is_lost_peer(error: str) -> bool:
    """An error that says a peer went away or stopped answering, not that this rank went wrong."""
    return bool(LOST_PEER.search(error))


@dataclass(frozen=True, slots=True)
class RankEnd:
    rank: int
    host: str
    kind: Kind
    state: str
    """What `status` shows: ok, failed, stopped, dead, lost, hung, running, never started."""
    how: str
    """One line: the error, the signal, srun's words."""
    at: float = 0.0
    """When it ended (failed_at, stopped_at), 0 when unknown."""


@dataclass(slots=True)
class Postmortem:
    ends: dict[int, RankEnd]
    causes: list[str] = field(default_factory=list)
    """Most likely cause first: what the headline names."""
    consequences: list[str] = field(default_factory=list)
    """Ranks that noticed, were ended by srun or the launcher after the cause, never started, ..."""

    @property
    def problems(self) -> list[str]:
        return self.causes + self.consequences

    def ended(self) -> bool:
        """Every rank has recorded its end, or is known dead, lost or hung: the verdict will not change."""
        return bool(self.ends) and all(e.kind not in ("running", "absent") for e in self.ends.values())


def batch_stderr(run: RunDir, job_id: str) -> Iterable[str]:
    """The batch script's stderr, where srun and slurmstepd write (submitit's <job>_0_log.err)."""
    step = run.read_meta().launcher is LauncherName.SLURM_STEP
    path = run.step_stderr if step else run.submitit_dir / f"{job_id}_0_log.err"
    try:
        with path.open(encoding="utf-8", errors="replace") as handle:
            yield from handle
    except OSError:
        return


def examine(run: RunDir, statuses: dict[int, RankStatus], world_size: int, facts: JobFacts | None = None) -> Postmortem:
    """Each rank's end and the failure's cause, from the run directory alone. The heartbeats are read
    only when they can change the verdict: when a rank lost a peer and a hung rank is to be found."""
    meta = run.read_meta()
    slurm = meta.launcher in (LauncherName.SLURM, LauncherName.SLURM_STEP)
    steps = read_step_messages(batch_stderr(run, meta.job_id)) if slurm and meta.job_id else None
    if facts is None:  # the launcher's facts in memory (jobs.launchers: status, report), else slurm.json
        facts = JobFacts.read(run) if slurm else JobFacts()
    progress: dict[int, RankProgress] = {}
    if any(status.state is RankState.FAILED and is_lost_peer(status.error) for status in statuses.values()):
        hosts = {rank: s.host for rank, s in statuses.items()}
        progress = {p.rank: p for p in read_progress(run, world_size, hosts)}
    lagging = lagging_groups(read_traces(run), world_size)
    return judge(
        world_size, statuses, progress, steps, facts, local=meta.launcher is LauncherName.LOCAL, lagging=lagging
    )


def judge(
    world_size: int,
    statuses: dict[int, RankStatus],
    progress: dict[int, RankProgress],
    steps: StepEvidence | None,
    facts: JobFacts,
    local: bool = False,
    lagging: list[Lagging] | None = None,
) -> Postmortem:
    lost_nodes = {**dict.fromkeys(facts.unanswering, "its slurmd does not answer from here"), **facts.unhealthy}
    ends = {rank: _rank_end(rank, statuses.get(rank), steps, facts, lost_nodes, local) for rank in range(world_size)}
    ends = _mark_hung(_from_flight_recorder(ends, lagging or []), progress)
    report = Postmortem(ends=ends)
    report.causes = _causes(ends, steps, lost_nodes, statuses, facts)
    report.consequences = _consequences(ends, statuses, steps, facts, bool(report.causes))
    return report


def _rank_end(
    rank: int,
    status: RankStatus | None,
    steps: StepEvidence | None,
    facts: JobFacts,
    lost_nodes: dict[str, str],
    local: bool,
) -> RankEnd:
    task_end = steps.task_ends.get(rank) if steps else None
    if status is None:
        host = task_end.host if task_end else "?"
        if task_end and task_end.before_teardown:
            return RankEnd(rank, host, "dead", "dead", f"{task_end.how} before it wrote anything (srun)")
        return RankEnd(rank, host, "absent", "never started", "no status file")
    host, error = status.host, status.error
    if status.state is RankState.OK:
        return RankEnd(rank, host, "ok", "ok", "finished")
    if host in lost_nodes:
        return RankEnd(rank, host, "lost", "lost", f"its node {host} is {lost_nodes[host]}", status.ended_at)
    if status.state is RankState.FAILED:
        kind: Kind = "setup" if status.setup_failure else "peer" if is_lost_peer(error) else "own"
        return RankEnd(rank, host, kind, "failed", short_error(error), status.failed_at)
    if status.state is RankState.STOPPED:
        return RankEnd(rank, host, "stopped", "stopped", error or "stopped", status.stopped_at)
    if task_end is not None:
        how = f"{task_end.how} ({signal_of(task_end.how)}) per srun, with nothing recorded"
        if task_end.before_teardown:
            return RankEnd(rank, host, "dead", "dead", how)
        return RankEnd(rank, host, "killed", "dead", f"ended by srun after the step failed: {task_end.how}")
    if local and not _pid_alive(status):
        return RankEnd(rank, host, "dead", "dead", f"its process {status.pid} is gone, with nothing recorded")
    if facts.final:
        return RankEnd(rank, host, "dead", "dead", f"recorded no end; the job ended {facts.state}")
    return RankEnd(rank, host, "running", "running", "running")


UNRECORDED: tuple[Kind, ...] = ("running", "stopped", "killed", "dead")
"""Ends that record no error of the rank's own: what NCCL's watchdog leaves of a rank it tore down."""


def _from_flight_recorder(ends: dict[int, RankEnd], lagging: list[Lagging]) -> dict[int, RankEnd]:
    """The members that never entered a group's collective are hung, those that waited in it noticed them
    (they were torn down by NCCL's watchdog, recording nothing); a rank with an error of its own keeps it."""
    marked = dict(ends)
    for group in lagging:
        collective = f"collective {group.collective}" + (f" ({group.what})" if group.what else "")
        where = f"{collective} of group {group.group}" + (f" ({group.desc})" if group.desc else "")
        for rank, seq in group.behind.items():
            end = marked[rank]
            if end.kind in UNRECORDED or end.kind == "peer":
                how = (
                    f"never entered {where}, where rank(s) {rank_spans(group.ahead)} waited for it "
                    f"(NCCL flight recorder: its last was {seq}); then {end.how}"
                )
                marked[rank] = RankEnd(rank, end.host, "hung", "hung", how, end.at)
        for rank in group.ahead:
            end = marked[rank]
            if end.kind in UNRECORDED:
                how = f"timed out in {where} (NCCL's watchdog tore it down; flight recorder): {end.how}"
                marked[rank] = RankEnd(rank, end.host, "peer", end.state, how, end.at)
    return marked


def _pid_alive(status: RankStatus) -> bool:
    try:
        os.kill(status.pid, 0)
    except ProcessLookupError:
        return False
    except (OSError, ValueError, OverflowError):
        return True  # not ours to probe: assume alive
    return True


def _mark_hung(ends: dict[int, RankEnd], progress: dict[int, RankProgress]) -> dict[int, RankEnd]:
    """Ranks that never failed themselves and were behind the ranks that gave up waiting for them, when
    nothing else explains the failure (after a death or an error, the ranks left behind are its victims)."""
    noticers = [e.rank for e in ends.values() if e.kind == "peer"]
    if not noticers or any(e.kind in ("own", "setup", "dead", "lost") for e in ends.values()):
        return ends
    front = max(progress[r].position for r in noticers if r in progress) if progress else -2
    marked = dict(ends)
    for rank, end in ends.items():
        place = progress.get(rank)
        if end.kind in ("running", "stopped", "killed", "dead") and place is not None and place.position < front:
            if end.kind == "dead" and "srun" in end.how:
                continue  # died on its own: that is the cause, not a hang
            marked[rank] = RankEnd(
                rank, end.host, "hung", "hung",
                f"never failed itself and was behind the ranks that gave up on it: {place.where} "
                f"(last heartbeat {_clock(place.at)}); then {end.how}",
                end.at,
            )  # fmt: skip
    return marked


def _clock(at: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(at)) if at > 0 else "never"


def rank_spans(ranks: Iterable[int]) -> str:
    """[0, 1, 2, 5, 7, 8] -> '0-2,5,7-8'."""
    spans: list[list[int]] = []
    for rank in sorted(ranks):
        if spans and rank == spans[-1][1] + 1:
            spans[-1][1] = rank
        else:
            spans.append([rank, rank])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)


def _causes(
    ends: dict[int, RankEnd],
    steps: StepEvidence | None,
    lost_nodes: dict[str, str],
    statuses: dict[int, RankStatus],
    facts: JobFacts,
) -> list[str]:
    causes = []
    own = sorted((e for e in ends.values() if e.kind == "own"), key=lambda e: e.at)
    for i, end in enumerate(own):
        causes.append(f"rank {end.rank} on {end.host} failed {'first' if i == 0 else 'after it'}: {end.how}")
    causes += setup_causes(ends, statuses, reached=False)
    order = steps.task_ends if steps else {}
    dead = sorted(
        (e for e in ends.values() if e.kind == "dead"),
        key=lambda e: order[e.rank].order if e.rank in order else 1 << 30,
    )
    for end in dead:
        causes.append(f"rank {end.rank} on {end.host} died: {end.how} (killed, out of memory or crashed)")
    for node, why in sorted(lost_nodes.items()):
        on_it = [e.rank for e in ends.values() if e.host == node]
        if on_it:
            causes.append(f"node {node} stopped answering ({why}): rank(s) {rank_spans(on_it)} ran there")
    for end in sorted((e for e in ends.values() if e.kind == "hung"), key=lambda e: e.rank):
        causes.append(f"rank {end.rank} on {end.host} hung: {end.how}")
    causes += setup_causes(ends, statuses, reached=True)
    if not causes:
        causes += _stop_cause(ends, steps, facts)
    if ended_as(facts.state) == "NODE_FAIL":
        causes.append(
            f"the job ended NODE_FAIL on {facts.nodes or 'its nodes'} and was not run again: a rerun on other nodes "
            "would measure another cluster (slurm.requeue=true lets Slurm requeue it, each attempt kept apart)"
        )
    return causes


def _stop_cause(ends: dict[int, RankEnd], steps: StepEvidence | None, facts: JobFacts) -> list[str]:
    """A stop is the cause only when Slurm says why (a cancel, a preemption, a time limit, a requeue), or
    when nothing at all explains it; srun ending the step after a task's bad exit is a consequence."""
    stopped = [e for e in ends.values() if e.kind == "stopped"]
    why = slurm_stop_reason(steps, facts)
    if not stopped or (steps and steps.srun_ended_step and not why):
        return []
    first = min(stopped, key=lambda e: e.at or float("inf"))
    slurm = f"; Slurm: {facts.state}" if facts.state else ""
    said = why or ("Slurm records no cancel, preemption or time limit" if facts.final else "Slurm has not said why yet")
    return [
        f"stopped: rank(s) {rank_spans(e.rank for e in stopped)} recorded a stop ({first.how}, first at "
        f"{_clock(first.at)}{slurm}): {said}"
    ]


SLURM_STOPS = {"CANCELLED": "cancelled", "TIMEOUT": "out of time", "PREEMPTED": "preempted", "REQUEUED": "requeued",
               "DEADLINE": "past its deadline"}  # fmt: skip


def slurm_stop_reason(steps: StepEvidence | None, facts: JobFacts) -> str:
    """Why Slurm stopped the job, in its own words (slurmstepd's cancel of the job, the job's state), or ''."""
    if steps and steps.cancelled:
        return steps.cancelled
    return SLURM_STOPS.get(state_word(facts.state), "")


def _consequences(
    ends: dict[int, RankEnd],
    statuses: dict[int, RankStatus],
    steps: StepEvidence | None,
    facts: JobFacts,
    have_cause: bool,
) -> list[str]:
    lines = []
    noticers = sorted((e for e in ends.values() if e.kind == "peer"), key=lambda e: e.at)
    if noticers:
        first = noticers[0]
        verb = "noticed a lost peer"
        if not have_cause:
            verb += " first, and no rank shows a cause of its own"
        lines.append(
            f"rank(s) {rank_spans(e.rank for e in noticers)} {verb} (first rank {first.rank} on {first.host}: "
            f"{_with_peer_host(first.how, statuses)})"
        )
    lines += _stopped_after(ends, steps, facts)
    killed = [e.rank for e in ends.values() if e.kind == "killed"]
    if killed:
        lines.append(f"rank(s) {rank_spans(killed)} were ended by srun after the step failed")
    absent = [e.rank for e in ends.values() if e.kind == "absent"]
    if absent and len(absent) == len(ends):
        lines.append(f"no rank started (none of the {len(ends)} wrote a status file)")
    elif absent:
        lines.append(f"rank(s) {rank_spans(absent)} never started (no status file)")
    running = [e for e in ends.values() if e.kind == "running"]
    if running:
        lines.append(
            f"rank(s) {rank_spans(e.rank for e in running)} did not finish: still running, or hung without a trace"
            + (f" (job {facts.state})" if facts.state else "")
        )
    return lines


def _stopped_after(ends: dict[int, RankEnd], steps: StepEvidence | None, facts: JobFacts) -> list[str]:
    """Ranks stopped by a signal after the cause: by srun's clean-up of the step, or by what Slurm says."""
    stopped = [e for e in ends.values() if e.kind == "stopped"]
    if not stopped:
        return []
    spans, why = rank_spans(e.rank for e in stopped), slurm_stop_reason(steps, facts)
    signal = stopped[0].how.removeprefix("stopped by ")
    if steps and steps.srun_ended_step and not why:
        exits = steps.bad_exits()
        after = (
            f"task(s) {rank_spans(end.task for end in exits)} exited ({exits[0].how})" if exits else "a task's bad exit"
        )
        return [
            f"rank(s) {spans} were stopped ({signal}) by srun ending the step after {after}: srun's clean-up "
            f"(--kill-on-bad-exit, {steps.srun_ended_step}), not a cancel"
        ]
    if any(e.kind in CAUSES for e in ends.values()):
        return [f"rank(s) {spans} were stopped after it" + (f" ({why})" if why else "")]
    return []


def _with_peer_host(error: str, statuses: dict[int, RankStatus]) -> str:
    """Add the host behind an address an error names: '... [10.78.0.12]:60629 ...' (n2)."""
    match = PEER_ADDRESS.search(error)
    short = short_error(error)
    if not match:
        return short
    addr = match.group("addr").removeprefix("::ffff:")
    for status in statuses.values():
        if addr in status.addresses:
            return f"{short} (the peer at {addr} is {status.host})"
    return short


SETUP_ADVICE: dict[SetupProbe, tuple[str, str]] = {
    SetupProbe.UNRESOLVED: (
        "cannot resolve the rendezvous name {where}",
        "look at rendezvous.master_addr and the name service (DNS, /etc/hosts) on {host}",
    ),
    SetupProbe.UNREACHABLE: (
        "cannot reach the rendezvous address {where}",
        "look at rendezvous.master_addr (an address of the job's first node?), the routes and a firewall "
        "between {host} and it, GLOO_SOCKET_IFNAME/NCCL_SOCKET_IFNAME",
    ),
    SetupProbe.REFUSED: (
        "was refused at the rendezvous address {where}",
        "nothing listens there: look at rendezvous.master_addr and rendezvous.master_port (rank 0 runs the "
        "rendezvous on the job's first node), a firewall",
    ),
    SetupProbe.SILENT: (
        "got no answer from the rendezvous address {where}",
        "look at a firewall dropping the port, rendezvous.master_addr, GLOO_SOCKET_IFNAME/NCCL_SOCKET_IFNAME",
    ),
    SetupProbe.ANSWERS: (
        "timed out in set-up waiting for the other ranks (the rendezvous {where} answers)",
        "look at the ranks that never joined, GLOO_SOCKET_IFNAME/NCCL_SOCKET_IFNAME (the interface ranks "
        "announce to each other), a firewall between the nodes",
    ),
}
"""A set-up failure's probe -> what the rank met, and the settings to look at."""


def setup_causes(ends: dict[int, RankEnd], statuses: dict[int, RankStatus], reached: bool) -> list[str]:
    """Ranks whose process group set-up failed, one line per host and what they met there, first failure
    first. `reached`: those whose rendezvous answered (they waited for ranks that never came), else the
    others (a bad name, no route, a refused port, silence: their own cause)."""
    groups: dict[tuple[str, SetupFailure], list[RankEnd]] = {}
    for end in sorted((e for e in ends.values() if e.kind == "setup"), key=lambda e: (e.at, e.rank)):
        failure = statuses[end.rank].setup_failure
        if failure is not None and (failure.probe is SetupProbe.ANSWERS) == reached:
            groups.setdefault((end.host, failure), []).append(end)
    return [_setup_line(host, failure, group) for (host, failure), group in groups.items()]


def _setup_line(host: str, failure: SetupFailure, group: list[RankEnd]) -> str:
    met, advice = SETUP_ADVICE[failure.probe]
    where = f"{failure.address}:{failure.port}"
    ranks = rank_spans(e.rank for e in group)
    who = f"rank {ranks}" if len(group) == 1 else f"rank(s) {ranks}"
    error = group[0].how.splitlines()[0] if group[0].how else "no error recorded"
    return f"{who} on {host} failed in set-up: {met.format(where=where)} ({failure.detail}; {error}): " + advice.format(
        host=host
    )
