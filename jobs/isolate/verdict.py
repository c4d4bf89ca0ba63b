"""Which nodes and links are bad, from the busbw of every group measured: plain data, no torch, no Slurm.

The healthy level is isolate.expected_busbw when given, else the median over nodes of each node's median
busbw: one bad node drags down every measurement it is in, but only its own median, so in a small
cluster it cannot move the level it is judged against (the median of all measurements could: with 4
nodes, half of the 6 pairs hold the bad node). A measurement is slow below (1 - tolerance) x the level.
A node most of whose measurements are slow is a bad node; a slow pair whose two nodes are not bad is a
bad link. The spread is the median absolute deviation of all measurements, for the report.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from statistics import median

from jobs.isolate.plan import Group
from slurm.hostlist import collect_hostlist

DEFAULT_TOLERANCE = 0.15
"""Slow means more than 15% under the healthy level: above run-to-run noise of a healthy IB pair (a few
percent), below what one degraded link or a port trained to half rate costs (50%)."""


@dataclass(frozen=True, slots=True)
class Measured:
    round: int
    nodes: Group
    busbw: float


@dataclass(frozen=True, slots=True)
class NodeFigures:
    node: int
    measurements: int
    slow: int
    median_busbw: float
    ratio: float
    """median busbw / the healthy level."""


@dataclass(frozen=True, slots=True)
class BadLink:
    nodes: Group
    busbw: float
    ratio: float


@dataclass(slots=True)
class Verdict:
    level: float
    spread: float
    tolerance: float
    nodes: list[NodeFigures]
    bad_nodes: list[NodeFigures] = field(default_factory=list)
    bad_links: list[BadLink] = field(default_factory=list)
    matrix: dict[Group, float] = field(default_factory=dict)
    """busbw of every pair measured, (low, high) node index -> GB/s (the last figure if measured twice)."""

    @property
    def found(self) -> bool:
        return bool(self.bad_nodes or self.bad_links)


def judge(measured: Iterable[Measured], tolerance: float = DEFAULT_TOLERANCE, expected_busbw: float = 0.0) -> Verdict:
    records = list(measured)
    if not records:
        raise ValueError("no measurement to judge")
    by_node: dict[int, list[Measured]] = defaultdict(list)
    for record in records:
        for node in record.nodes:
            by_node[node].append(record)
    level = expected_busbw or median(median(r.busbw for r in mine) for mine in by_node.values())
    threshold = level * (1 - tolerance)
    nodes = [
        NodeFigures(
            node=node,
            measurements=len(mine),
            slow=sum(1 for r in mine if r.busbw < threshold),
            median_busbw=median(r.busbw for r in mine),
            ratio=median(r.busbw for r in mine) / level if level else 0.0,
        )
        for node, mine in sorted(by_node.items())
    ]
    bad = [figures for figures in nodes if figures.slow * 2 > figures.measurements]
    bad_ids = {figures.node for figures in bad}
    matrix: dict[Group, float] = {r.nodes: r.busbw for r in records if len(r.nodes) == 2}
    links = [
        BadLink(pair, busbw, busbw / level if level else 0.0)
        for pair, busbw in sorted(matrix.items())
        if busbw < threshold and not bad_ids & set(pair)
    ]
    spread = median(abs(r.busbw - median(x.busbw for x in records)) for r in records)
    return Verdict(level, spread, tolerance, nodes, bad, links, matrix)


def exclude_override(hosts: Sequence[str], verdict: Verdict) -> str:
    """The override that leaves the bad nodes out of the next job, ready to paste."""
    names = [hosts[figures.node] for figures in verdict.bad_nodes]
    return f"slurm.exclude={collect_hostlist(names)}" if names else ""


def drain_command(hosts: Sequence[str], verdict: Verdict, run_id: str) -> str:
    """The line an admin would run to drain the bad nodes: printed for them, never run by collbench."""
    if not verdict.bad_nodes:
        return ""
    names = collect_hostlist(hosts[figures.node] for figures in verdict.bad_nodes)
    worst = min(verdict.bad_nodes, key=lambda figures: figures.ratio)
    reason = f"collbench isolate {run_id}: busbw {worst.ratio:.2f} of healthy {verdict.level:.1f} GB/s"
    return f'scontrol update NodeName={names} State=DRAIN Reason="{reason}"'
