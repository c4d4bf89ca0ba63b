"""The fabric's grains in words, the same in isolate's and check's verdicts: a rail and its NIC, a switch
link and the nodes behind it. Plain data: no torch, no Slurm."""

from __future__ import annotations

from collections.abc import Sequence

from jobs.isolate.verdict import EVERY_RAIL, RailFault, SwitchFault, Unconfirmed, rail_name
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
