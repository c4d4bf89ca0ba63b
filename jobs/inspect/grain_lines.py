"""An isolate verdict's finer grains in words and records: the topology it was judged with, each (node, rail)
against the level, the slow rails (the NIC to replace) and the slow switch links (the nodes behind them,
none drained)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from jobs.isolate.naming import rail_fault_reason, switch_fault_line
from jobs.isolate.verdict import EVERY_RAIL, Verdict, rail_name
from jobs.rundir.records.isolate import IsolateVerdict, NodeVerdict, RailVerdict, SwitchVerdict
from slurm.hostlist import readable_hostlist

RAIL_TABLE_MAX_NODES = 64
"""Up to this many nodes the text verdict prints each node's rails against the level; beyond, the slow ones."""


@dataclass(frozen=True, slots=True)
class Grains:
    """What the finer grains were judged with."""

    rails: list[int] = field(default_factory=lambda: [EVERY_RAIL])
    nics: list[str] = field(default_factory=list)
    leaves: dict[int, str] = field(default_factory=dict)
    """Node index -> its leaf switch; empty when the topology is not known."""
    topology: str = ""
    """Where the leaves came from."""

    @property
    def on_rails(self) -> bool:
        return self.rails != [EVERY_RAIL]


def topology_lines(grains: Grains, hosts: Sequence[str]) -> list[str]:
    out = []
    if grains.on_rails:
        named = ", ".join(rail_name(rail, grains.nics) for rail in grains.rails)
        out.append(f"# rail-aligned: each group measured once per rail, all rails at once: {named}")
    if grains.leaves:
        by_leaf: dict[str, list[str]] = {}
        for node, leaf in sorted(grains.leaves.items()):
            by_leaf.setdefault(leaf, []).append(hosts[node])
        leaves = ", ".join(f"{leaf} = {readable_hostlist(members)}" for leaf, members in sorted(by_leaf.items()))
        out.append(f"# leaves ({grains.topology or 'topology'}): {leaves}")
    else:
        out.append("# no switch topology known: a slow link between switches shows only as a cut in the matrix")
    return out


def rail_table(verdict: Verdict, grains: Grains, hosts: Sequence[str]) -> list[str]:
    """Each node's rails as a fraction of the level (the slow ones only beyond RAIL_TABLE_MAX_NODES)."""
    if not grains.on_rails or not verdict.units:
        return []
    ratio = {(u.node, u.rail): u.ratio for u in verdict.units}
    nodes = sorted({u.node for u in verdict.units})
    threshold = 1 - verdict.tolerance
    if len(nodes) > RAIL_TABLE_MAX_NODES:
        nodes = [node for node in nodes if any(ratio.get((node, r), 1.0) < threshold for r in grains.rails)]
    width = max(8, *(len(hosts[node]) + 1 for node in nodes)) if nodes else 8
    out = ["# each rail's median busbw / the level, node x rail"]
    out.append(f"#   {'node':<{width}}" + "".join(f"{'rail ' + str(rail):>8}" for rail in grains.rails))
    for node in nodes:
        cells = "".join(
            f"{'' if (node, rail) not in ratio else f'{ratio[(node, rail)]:.2f}':>8}" for rail in grains.rails
        )
        out.append(f"#   {hosts[node]:<{width}}{cells}")
    return [*out, "#"]


def grain_findings(verdict: Verdict, grains: Grains, hosts: Sequence[str]) -> list[str]:
    out = [
        f"BAD RAIL {hosts[f.node]}: {rail_fault_reason(f, verdict.level, 'level', grains.nics)}"
        for f in verdict.bad_rails
    ]
    for link in verdict.bad_links:
        if link.rail != EVERY_RAIL:
            a, b = (hosts[n] for n in link.nodes)
            out.append(f"# the slow link {a}-{b} is on {rail_name(link.rail, grains.nics)} only")
    for fault in verdict.switch_faults:
        word = "SLOW SWITCH LINK" if fault.switches else "CUT"
        out.append(f"{word} {switch_fault_line(fault, hosts, verdict.level, grains.nics)}")
    if verdict.bad_rails:
        out.append("# a bad rail: look at that NIC, its cable and transceiver, and its leaf switch port")
    return out


def fill_record(record: IsolateVerdict, verdict: Verdict, grains: Grains, hosts: Sequence[str]) -> None:
    record.rails = list(grains.rails)
    record.nics = list(grains.nics)
    record.leaves = {hosts[node]: leaf for node, leaf in sorted(grains.leaves.items())}
    record.topology = grains.topology
    record.units = [
        NodeVerdict(hosts[u.node], u.node, u.measurements, u.slow, u.median_busbw, u.ratio, u.rail)
        for u in verdict.units
    ]
    record.bad_rails = [
        RailVerdict(
            hosts[f.node],
            f.node,
            f.rail,
            _nic(grains.nics, f.rail),
            f.measurements,
            f.slow,
            f.median_busbw,
            f.ratio,
            list(f.healthy_rails),
        )
        for f in verdict.bad_rails
    ]
    record.switch_faults = [
        SwitchVerdict(
            switches=list(f.switches),
            rail=f.rail,
            sides=[expand(side, hosts) for side in f.sides],
            measurements=f.measurements,
            slow=f.slow,
            busbw=f.busbw,
            ratio=f.ratio,
            line=switch_fault_line(f, hosts, verdict.level, grains.nics),
        )
        for f in verdict.switch_faults
    ]


def expand(nodes: Sequence[int], hosts: Sequence[str]) -> list[str]:
    return [hosts[node] for node in nodes]


def _nic(nics: Sequence[str], rail: int) -> str:
    return nics[rail] if 0 <= rail < len(nics) else ""
