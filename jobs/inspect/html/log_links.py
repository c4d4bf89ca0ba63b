"""Links to each rank's log, by path relative to the HTML file's folder, so the page works where it lies
(inside the run directory, or beside it). The ranks that failed or were named come first; every rank is
then listed under its host, in a closed <details>: at 16,384 ranks that is one line per host, not a list of
16,384."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from jobs.inspect.report import RunOutcome
from jobs.rundir.layout import RunDir

FIRST_SHOWN = 200
"""At most this many ranks listed first (failed, named); the rest are under their host."""


@dataclass(frozen=True, slots=True)
class LogLink:
    rank: int
    host: str
    href: str
    why: str = ""


@dataclass(frozen=True, slots=True)
class HostLogs:
    host: str
    links: list[LogLink]


@dataclass(frozen=True, slots=True)
class Logs:
    first: list[LogLink]
    """The ranks that failed or were named, with why."""
    more_first: int
    """How many more of those than FIRST_SHOWN (listed under their hosts only)."""
    by_host: list[HostLogs]
    ranks: int
    folder: str
    """The logs folder, relative to the page, as text (the links are URL-quoted, this is not)."""


def log_links(run: RunDir, outcome: RunOutcome, links_from: Path, named_hosts: Iterable[str] = ()) -> Logs:
    """`links_from`: the folder the HTML file is written to; `named_hosts`: hosts a verdict named, whose
    ranks are listed first."""
    folder = Path(os.path.relpath(run.logs_dir.resolve(), links_from.resolve())).as_posix()
    hosts = _hosts(outcome)
    why = _why_first(outcome, hosts, set(named_hosts))
    links = {
        rank: LogLink(rank, host, quote(f"{folder}/{run.rank_log(rank).name}"), why.get(rank, ""))
        for rank, host in sorted(hosts.items())
    }
    by_host: dict[str, list[LogLink]] = {}
    for link in links.values():
        by_host.setdefault(link.host, []).append(link)
    first = [links[rank] for rank in sorted(why) if rank in links]
    return Logs(
        first=first[:FIRST_SHOWN],
        more_first=max(0, len(first) - FIRST_SHOWN),
        by_host=[HostLogs(host, ranks) for host, ranks in by_host.items()],
        ranks=len(links),
        folder=folder + "/",
    )


def _hosts(outcome: RunOutcome) -> dict[int, str]:
    """Every rank of the run and its host, as its status (or how it ended) says; '?' when neither does."""
    ends = outcome.postmortem.ends if outcome.postmortem else {}
    hosts = {rank: "?" for rank in range(outcome.config.world_size)}
    hosts.update({rank: end.host for rank, end in ends.items()})
    hosts.update({rank: status.host for rank, status in outcome.statuses.items()})
    return hosts


def _why_first(outcome: RunOutcome, hosts: Mapping[int, str], named: set[str]) -> dict[int, str]:
    why: dict[int, str] = {}
    ends = outcome.postmortem.ends if outcome.postmortem else {}
    for rank, end in ends.items():
        if end.kind not in ("ok", "running"):
            why[rank] = f"{end.state}: {end.how}" if end.how else end.state
    if outcome.analysis is not None:
        for flag in outcome.analysis.slow_ranks:
            why.setdefault(flag.rank, f"slow at its own work: {flag.what}")
    for row in outcome.rows:
        for rank in row.wrong_ranks:
            why.setdefault(rank, "wrong elements")
    for rank, host in hosts.items():
        if host in named:
            why.setdefault(rank, f"on {host}, named by the verdict")
    return why
