"""collbench check's verdict from its run directory: the rounds replayed from the results (an isolate run
in mode check), the nodes whose ranks stopped, and the vetted, cordoned and unchecked hostlists as text
(jobs.ending.check_files writes them as the files a batch script reads)."""

from __future__ import annotations

from dataclasses import dataclass

from jobs.inspect.isolate_verdict import IsolateOutcome, assess_isolate
from jobs.inspect.postmortem import RankEnd
from jobs.inspect.report import RunOutcome
from jobs.isolate.check_judge import CheckVerdict, check_verdict
from jobs.isolate.confirm import planned_rounds
from jobs.rundir.layout import RunDir
from slurm.hostlist import readable_hostlist

SILENT_KINDS = ("stopped", "killed", "running")
"""How a hung rank ends once srun tears its step down (or the check cancels it)."""


@dataclass(frozen=True, slots=True)
class CheckOutcome:
    run_id: str
    verdict: CheckVerdict
    rounds: int
    problems: list[str]
    level_from: str = ""
    """Where the expected level came from (check.expected_busbw, the results history), as the run's
    config recorded it; empty when the pairs were judged against their own median."""


def assess_check(run: RunDir, outcome: RunOutcome, iso: IsolateOutcome | None = None) -> CheckOutcome:
    """The check's verdict over the isolate rounds it ran (`iso` when they are assessed already)."""
    iso = iso or assess_isolate(run, outcome)
    cfg = outcome.config
    stopped: dict[str, str] = {}
    for node in iso.stopped:
        stopped.setdefault(node.host, node.how)
    if not stopped and outcome.postmortem is not None:
        stopped = silent_nodes(list(outcome.postmortem.ends.values()))
    leaves = [iso.grains.leaves.get(node) for node in range(len(iso.hosts))]
    verdict = check_verdict(
        iso.hosts, iso.rounds.measured, stopped, cfg.isolate.tolerance, cfg.isolate.expected_busbw, leaves,
        iso.grains.nics, iso.named, cfg.check.budget_s, planned_rounds(iso.rounds.planner),
    )  # fmt: skip
    finished = iso.rounds.round_no - (1 if iso.rounds.unfinished else 0)
    level_from = cfg.isolate.expected_from if cfg.isolate.expected_busbw else ""
    return CheckOutcome(run.run_id, verdict, finished, list(outcome.problems), level_from)


def silent_nodes(ends: list[RankEnd]) -> dict[str, str]:
    """Nodes whose ranks neither failed nor measured while the ranks of most other nodes gave up waiting on
    a peer: hung, as far as the check can tell. The postmortem places a hang by the heartbeats, which a
    hang before the first measurement (the rendezvous of a round) leaves all alike; srun then ends the
    silent ranks itself, so they look stopped. Nothing when a rank failed on its own or died."""
    if any(end.kind in ("own", "dead", "lost", "hung") for end in ends):
        return {}
    hosts = {end.host for end in ends}
    noticed = {end.host for end in ends if end.kind == "peer"}
    silent = {end.host: end for end in ends if end.kind in SILENT_KINDS and end.host not in noticed}
    if not noticed or not silent or len(silent) * 2 >= len(hosts):
        return {}
    return {
        host: f"rank {end.rank} hung: it neither failed nor answered while the other nodes' ranks gave up "
        f"waiting for a peer (then {end.how})"
        for host, end in sorted(silent.items())
    }


def hostlist(hosts: list[str]) -> str:
    return readable_hostlist(hosts) if hosts else ""


def verdict_lines(check: CheckOutcome, seconds: float, budget_s: float) -> list[str]:
    verdict = check.verdict
    head = (
        f"# collbench check {check.run_id}: {len(verdict.hosts)} node(s), {check.rounds} round(s) finished, "
        f"{verdict.pairs} pair measurement(s), {seconds:.1f} s of a {budget_s:g} s budget"
    )
    lines = [head]
    if verdict.whole_busbw is not None:
        lines.append(f"# whole allocation {hostlist(verdict.hosts)}: busbw {verdict.whole_busbw:.3f} GB/s")
    if verdict.level:
        origin = f" ({check.level_from})" if check.level_from else ""
        lines.append(f"# pairs judged against a healthy level of {verdict.level:.3f} GB/s{origin}")
    lines.append(f"VETTED {hostlist(verdict.vetted) or '(none)'}")
    lines += [f"CORDONED {node.host}: {node.reason}" for node in verdict.cordoned]
    lines += verdict.links
    lines += verdict.inconclusive_lines
    if verdict.inconclusive:
        lines.append(
            f"# {hostlist(verdict.inconclusive)}: inconclusive, neither vetted nor cordoned: drained by neither "
            "--drain nor --apply (check/inconclusive)"
        )
    if verdict.unchecked:
        lines.append(f"UNCHECKED {hostlist(verdict.unchecked)}: the check ended before they were measured")
    lines += [f"# note: {note}" for note in verdict.notes]
    return lines
