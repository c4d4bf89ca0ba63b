"""What a run itself says is wrong with a node, beyond the pairs' figures, each with its reason code
(jobs.isolate.reasons): ranks that failed to set up, a fabric requirement not met on a host (the hosts its
record names: jobs.inspect.fabric.FabricFailure), wrong elements on a host's ranks. check cordons the nodes they
name; isolate and check --node name them too."""

from __future__ import annotations

from collections import defaultdict

from jobs.inspect.postmortem import rank_spans
from jobs.inspect.report import RunOutcome
from jobs.isolate.reasons import Finding, drains

FIGURE_CHARS = 120


def run_findings(outcome: RunOutcome) -> list[Finding]:
    """A failed set-up, a fabric requirement not met, wrong elements: per host, in that order."""
    return _setup(outcome) + _fabric(outcome) + _wrong(outcome)


def _setup(outcome: RunOutcome) -> list[Finding]:
    if outcome.postmortem is None:
        return []
    by_host: dict[str, list[int]] = defaultdict(list)
    how: dict[str, str] = {}
    for end in sorted(outcome.postmortem.ends.values(), key=lambda e: e.rank):
        if end.kind == "setup":
            by_host[end.host].append(end.rank)
            how.setdefault(end.host, end.how)
    return [
        Finding(host, "setup_failed", _short(f"rank(s) {rank_spans(ranks)} failed to set up: {how[host]}"))
        for host, ranks in by_host.items()
        if host
    ]


def _fabric(outcome: RunOutcome) -> list[Finding]:
    """Each host a failed requirement's record names, with the first such failure; one that could not be
    checked (code not_run) blames no host."""
    if outcome.fabric is None:
        return []
    hosts = {status.host for status in outcome.statuses.values() if status.host}
    found: dict[str, str] = {}
    for failure in outcome.fabric.failures:
        if drains(failure.code):
            for host in (host for host in failure.hosts if host in hosts):
                found.setdefault(host, _short(f"fabric requirement not met: {failure.sentence()}"))
    return [Finding(host, "fabric_failed", figure) for host, figure in found.items()]


def _wrong(outcome: RunOutcome) -> list[Finding]:
    wrong: dict[str, int] = defaultdict(int)
    ranks: dict[str, set[int]] = defaultdict(set)
    for row in outcome.rows:
        if row.wrong <= 0:
            continue
        for rank in row.wrong_ranks:
            status = outcome.statuses.get(rank)
            if status is not None and status.host:
                ranks[status.host].add(rank)
                wrong[status.host] += 1
    return [
        Finding(host, "wrong_result", f"wrong elements on rank(s) {rank_spans(ranks[host])} in {count} row(s)")
        for host, count in wrong.items()
    ]


def _short(text: str) -> str:
    return text if len(text) <= FIGURE_CHARS else text[: FIGURE_CHARS - 3] + "..."
