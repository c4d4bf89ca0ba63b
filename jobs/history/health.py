"""Why a run is left out of every baseline (`runs.excluded`): one short reason per cause, from what the history
gathers of it. A run with an injected fault never measures the cluster's healthy state, and neither does a run
that failed or whose verdict named a problem: a slow host, wrong elements, a fabric finding or a failed
requirement, or an isolate verdict's bad node, rail, link or slow switch link. '' for a healthy run."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

Row = Mapping[str, Any]

SEPARATOR = "; "
"""Between the reasons of one run, in `runs.excluded`."""


def why_excluded(
    faults: Mapping[str, float], passed: bool, problems: Sequence[str], children: Mapping[str, Sequence[Row]]
) -> str:
    """The reasons the run is left out of every baseline, joined by "; "; '' when it is healthy. `faults`:
    the faults it injected (jobs.config.fingerprint.injected_faults); `problems`: its verdict's lines;
    `children`: its rows as jobs.history.gather builds them (hosts, results, fabric, isolate_*)."""
    return SEPARATOR.join(reasons(faults, passed, problems, children))


def reasons(
    faults: Mapping[str, float], passed: bool, problems: Sequence[str], children: Mapping[str, Sequence[Row]]
) -> list[str]:
    """One short reason per cause, in this order: faults, failure, slow host, wrong elements, fabric, isolate."""
    found = [_faults(faults)] if faults else []
    if not passed:
        found.append(f"failed: {problems[0]}" if problems else "failed")
    hosts = children.get("hosts", [])
    slow = [str(h["host"]) for h in hosts if h.get("slow")]
    if slow:
        found.append(f"slow host {', '.join(slow)}" if len(slow) == 1 else f"slow hosts {', '.join(slow)}")
    found += _wrong(hosts, children.get("results", []))
    found += _fabric(children.get("fabric", []))
    found += _isolate(children)
    return found


def _faults(faults: Mapping[str, float]) -> str:
    return "injected fault " + ", ".join(f"faults.{key}={value:g}" for key, value in faults.items())


def _wrong(hosts: Sequence[Row], results: Sequence[Row]) -> list[str]:
    """Each host's wrong elements and its ranks that had them; a run whose ranks are not known (nccl-tests'
    output counts over every rank) its total alone."""
    named = [
        f"{h['wrong']} wrong element(s) on {h['host']} (rank(s) {h['wrong_ranks']})"
        for h in hosts
        if h.get("wrong", 0) > 0
    ]
    if named:
        return named
    total = sum(int(r["wrong"]) for r in results if r["wrong"] > 0)
    return [f"{total} wrong element(s) (no rank named)"] if total else []


FABRIC_WORDS = {"finding": "fabric finding", "failure": "fabric requirement not met"}


def _fabric(rows: Sequence[Row]) -> list[str]:
    """'fabric finding on n1, n2', 'fabric requirement not met': a finding or failed requirement per kind,
    with the hosts its lines name."""
    found = []
    for kind, words in FABRIC_WORDS.items():
        of_kind = [r for r in rows if r["kind"] == kind]
        if of_kind:
            hosts = sorted({str(r["host"]) for r in of_kind if r["host"]})
            found.append(f"{words} on {', '.join(hosts)}" if hosts else words)
    return found


def _isolate(children: Mapping[str, Sequence[Row]]) -> list[str]:
    """The isolate (or check) verdict's findings: bad nodes, bad (node, rail)s, bad links, slow switch links."""
    nodes = children.get("isolate_nodes", [])
    named = {
        "isolate bad node": [str(n["host"]) for n in nodes if n["bad"] and n["rail"] is None],
        "isolate bad rail": [f"{n['host']} rail {n['rail']}" for n in nodes if n["bad"] and n["rail"] is not None],
        "isolate bad link": [
            f"{link['host_a']}-{link['host_b']}{_on_rail(link)}" for link in children.get("isolate_links", [])
        ],
        "isolate slow switch link": [
            f"{s['switches'] or 'a cut ' + s['side_a'] + ' | ' + s['side_b']}{_on_rail(s)}"
            for s in children.get("isolate_switches", [])
        ],
    }
    return [f"{what} {', '.join(found)}" for what, found in named.items() if found]


def _on_rail(row: Row) -> str:
    return "" if row.get("rail") is None else f" on rail {row['rail']}"
