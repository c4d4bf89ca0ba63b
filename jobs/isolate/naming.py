"""The fabric's grains in words, the same in isolate's and check's verdicts: a rail and its NIC, a switch
link and the nodes behind it. Plain data: no torch, no Slurm."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from jobs.isolate.verdict import (
    EVERY_RAIL,
    Inconclusive,
    RailFault,
    SwitchFault,
    Unconfirmed,
    Undecided,
    Verdict,
    rail_name,
)
from slurm.hostlist import readable_hostlist


def switches_name(switches: Sequence[str]) -> str:
    """'s1-s2' (the link between leaves s1 and s2), 's1 uplink', or '' (a cut seen with no topology): the one
    name a slow switch link has in the verdict, the history and the exports."""
    if len(switches) == 1:
        return f"{switches[0]} uplink"
    return "-".join(switches)


def link_name(fault: SwitchFault, hosts: Sequence[str]) -> str:
    """'s1-s2', 's1 uplink', or, with no topology, the two sets of nodes."""
    return switches_name(fault.switches) or " | ".join(nodes_of(side, hosts) for side in fault.sides)


def nodes_of(nodes: Sequence[int], hosts: Sequence[str]) -> str:
    return readable_hostlist(hosts[node] for node in nodes)


def switch_fault_line(fault: SwitchFault, hosts: Sequence[str], level: float, nics: Sequence[str] = ()) -> str:
    """One line: the link, its rail, its figures, and the nodes on each side (none of them drained)."""
    if fault.switches:
        where, advice = "behind it", "healthy within their own leaf: drain no node, look at the link"
    else:
        where = "the matrix shows a cut between sets of nodes"
        advice = "fast within each set: drain no node, look at the switch or route between them"
    return (
        f"{link_name(fault, hosts)} on {rail_name(fault.rail, nics)}: {fault.slow} of {fault.measurements} pair(s) "
        f"across slow, busbw {fault.busbw:.3g} GB/s, {fault.ratio:.2f} of the level {level:.3g}; {where}: "
        + " | ".join(nodes_of(side, hosts) for side in fault.sides)
        + f" ({advice})"
    )


def rail_fault_reason(fault: RailFault, level: float, source: str, nics: Sequence[str] = ()) -> str:
    """Why a node is drained for one rail: the rail, its NIC, its figures, and its healthy rails."""
    healthy = ", ".join(str(rail) for rail in fault.healthy_rails) or "none measured"
    return (
        f"{rail_name(fault.rail, nics)} busbw {fault.median_busbw:.3g} GB/s, {fault.ratio:.2f} of the {source} "
        f"{level:.3g} GB/s, {fault.slow} of {fault.measurements} group(s) slow; its other rails healthy ({healthy})"
    )


def unconfirmed_line(link: Unconfirmed, hosts: Sequence[str], nics: Sequence[str] = ()) -> str:
    """'unconfirmed: link a-b measured once at X GB/s (Y of the level); re-run isolate to confirm' (with its rail
    when rail-aligned): a slow figure the confirming rounds had no room to measure again, named as nothing."""
    a, b = (hosts[node] for node in link.nodes)
    on = f" on {rail_name(link.rail, nics)}" if link.rail != EVERY_RAIL else ""
    once = "measured once" if link.measurements == 1 else f"slow once in {link.measurements} measurements"
    return (
        f"unconfirmed: link {a}-{b}{on} {once} at {link.busbw:.3g} GB/s ({link.ratio:.2f} of the level); "
        "re-run isolate to confirm"
    )


WHY_WORDS: dict[Undecided, str] = {
    "spread": "the healthy figures spread by {noise:.0%} of the level, too wide for a fault of the tolerance's "
    "size ({tolerance:.0%}) to stand out",
    "few_partners": "its slow figures come from fewer than two partners",
    "suspect_partners": "every partner it was slow with is a suspect itself",
    "once": "slow once, never measured again",
    "same_partner": "measured again only with a partner it was slow with before, which cannot tell which of the two "
    "is slow",
    "maybe_cut": "with no switch topology known, a slow link between sets of nodes explains its few partners' slow "
    "pairs as well (topology.switches would tell)",
}
"""Why a unit is inconclusive (Inconclusive.why), in words."""

SETTLE_PARTNERS = 3
"""The partners held healthy that the command to settle a unit measures it against."""


def inconclusive_unit(unit: Inconclusive, hosts: Sequence[str], nics: Sequence[str] = ()) -> str:
    """'n3', 'n1 rail 1 (eth1)', 'switch link s1-s2 on rail 0', 'link n2-n5 on rail 1': the unit as its grain
    names it."""
    on = f" on {rail_name(unit.rail, nics)}" if unit.rail != EVERY_RAIL else ""
    if unit.grain == "node":
        return nodes_of(unit.nodes, hosts)
    if unit.grain == "rail":
        return f"{nodes_of(unit.nodes, hosts)} {rail_name(unit.rail, nics)}"
    if unit.grain == "link":
        return "link " + "-".join(hosts[node] for node in unit.nodes) + on
    where = switches_name(unit.switches) or f"(a cut) behind {nodes_of(unit.nodes, hosts)}"
    return f"switch link {where}{on}"


def why_words(unit: Inconclusive, noise: float, tolerance: float) -> str:
    return WHY_WORDS[unit.why].format(noise=noise, tolerance=tolerance)


def settle_nodes(unit: Inconclusive, hosts: Sequence[str], suspects: Iterable[int]) -> list[str]:
    """The unit's nodes and up to SETTLE_PARTNERS nodes the run holds healthy (neither bad nor suspect), the
    first in the job's order: what a run that settles it measures."""
    held = set(unit.nodes) | set(suspects)
    partners = [node for node in range(len(hosts)) if node not in held][:SETTLE_PARTNERS]
    return [hosts[node] for node in sorted({*unit.nodes, *partners})]


def isolate_settle(nodes: Sequence[str], rounds: int, round_budget_s: float) -> str:
    """The command that measures `nodes` again, with `rounds` rounds of `round_budget_s` each (the callers
    propose twice what the verdict had)."""
    return (
        f"collbench isolate nodes={len(nodes)} slurm.nodelist={readable_hostlist(nodes)} "
        f"isolate.rounds={rounds} isolate.round_budget_s={round_budget_s:g}"
    )


def inconclusive_line(unit: Inconclusive, hosts: Sequence[str], noise: float, tolerance: float, settle: str,
                      nics: Sequence[str] = ()) -> str:  # fmt: skip
    """'INCONCLUSIVE n3: busbw ..., 0.78 of the level, 3 of 6 measurement(s) slow (margin 1.2); <why>; to settle:
    <settle>': said the same in isolate's and check's verdicts; named neither bad nor healthy, drained by neither."""
    counted = "pair(s) across" if unit.grain == "switch_link" else "measurement(s)"
    return (
        f"INCONCLUSIVE {inconclusive_unit(unit, hosts, nics)}: busbw {unit.busbw:.3g} GB/s, {unit.ratio:.2f} of the "
        f"level, {unit.slow} of {unit.measurements} {counted} slow (margin {unit.margin:.2g}); "
        f"{why_words(unit, noise, tolerance)}; to settle: {settle}"
    )


def suspect_nodes(verdict: Verdict) -> set[int]:
    """Every node the verdict holds bad or suspect (its rail included): never a partner to settle another."""
    return (
        {f.node for f in verdict.bad_nodes}
        | {f.node for f in verdict.bad_rails}
        | {node for unit in verdict.inconclusive if unit.grain in ("node", "rail") for node in unit.nodes}
    )
