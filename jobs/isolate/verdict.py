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
from typing import Literal

from jobs.config.isolate_settings import DEFAULT_TOLERANCE
from jobs.isolate.bisect import Bisect
from jobs.isolate.plan import Group
from slurm.hostlist import readable_hostlist

EVERY_RAIL = -1
"""The rail of a node-grain measurement (every rank of its nodes), or of a fault seen on every rail."""


@dataclass(frozen=True, slots=True)
class Measured:
    round: int
    nodes: Group
    busbw: float
    rail: int = EVERY_RAIL
    """The rail whose ranks the group held (one a node); EVERY_RAIL: every rank of its nodes."""


@dataclass(frozen=True, slots=True)
class NodeFigures:
    node: int
    measurements: int
    slow: int
    median_busbw: float
    ratio: float
    """median busbw / the healthy level."""
    rail: int = EVERY_RAIL
    """The rail these figures are of; EVERY_RAIL: the node over all its rails."""


@dataclass(frozen=True, slots=True)
class BadLink:
    nodes: Group
    busbw: float
    ratio: float
    rail: int = EVERY_RAIL


@dataclass(frozen=True, slots=True)
class Unconfirmed:
    """A pair slow on one rail in one figure only, never confirmed by a second, while isolate's confirmation was
    on: the confirming rounds had no room left to measure it again. It would have named a bad link (or, when it
    was all a node's rail had, a bad rail or node); one figure is one sample, so it names none and drains none."""

    nodes: Group
    busbw: float
    """Its slow figure (GB/s)."""
    ratio: float
    rail: int = EVERY_RAIL
    measurements: int = 1
    """How often the pair was measured on this rail (more than once only when a random plan drew it twice)."""


Grain = Literal["node", "rail", "switch_link", "link"]
"""Where a fault sits: a whole node, one (node, rail), a link between switches (or a leaf's uplink), a pair's link."""

Undecided = Literal["spread", "few_partners", "suspect_partners", "once", "same_partner", "maybe_cut"]
"""Why a unit is inconclusive: `spread`, the healthy figures spread too widely for a fault of this size to stand out
by the margin the verdict asks; `few_partners`, its slow figures come from fewer than two partners; `suspect_partners`,
every partner it was slow with is a suspect itself; `once`, slow in one figure that was never measured again;
`same_partner`, a node or rail slow after the plan only with partners it met in the plan; `maybe_cut`, with no
topology known, a node with few partners whose slow pairs a cut between sets of nodes could explain as well."""


@dataclass(frozen=True, slots=True)
class Inconclusive:
    """A unit the evidence cannot settle either way: slow enough to suspect, not clearly enough to name. It is
    named neither bad nor healthy, drains nothing, excludes nothing, and gives the run its own exit status."""

    grain: Grain
    nodes: tuple[int, ...]
    """The node (grain node or rail), the pair (link), or the nodes on the suspect side (switch_link)."""
    rail: int
    """The rail it is on; EVERY_RAIL for a node, or a switch link suspected on every rail."""
    switches: tuple[str, ...]
    """switch_link only: the leaves, as SwitchFault.switches (empty with no topology)."""
    measurements: int
    """The figures that bear on it."""
    slow: int
    """How many of them are under the threshold."""
    busbw: float
    """The fault's fitted figure: the median busbw of its figures (GB/s)."""
    ratio: float
    """busbw / the healthy level."""
    why: Undecided
    margin: float
    """How much better (in log-likelihood, nats) the explanation with this fault is than the best without it;
    the verdict names a fault at NAMING_MARGIN or more."""


@dataclass(frozen=True, slots=True)
class RailFault:
    """One rail of one node slow, while the node's other rails are healthy."""

    node: int
    rail: int
    measurements: int
    slow: int
    median_busbw: float
    ratio: float
    healthy_rails: list[int]
    """The node's other rails that were measured and are healthy."""


@dataclass(frozen=True, slots=True)
class SwitchFault:
    """A slow link between switches: every pair across it slow, every node healthy within its own leaf."""

    switches: tuple[str, ...]
    """(a, b): the link between leaves a and b (their uplinks and what joins them); (a,): a's uplink, slow
    with every other leaf; empty when no topology is known and the matrix alone shows the cut."""
    sides: tuple[tuple[int, ...], ...]
    """The nodes on each side of the link (for (a,): a's nodes, then every other node measured across)."""
    rail: int
    """The rail whose link it is; EVERY_RAIL when it is slow on every rail measured (or node grain)."""
    measurements: int
    """Pairs measured across it between healthy nodes."""
    slow: int
    busbw: float
    """The median busbw of the slow pairs across it (GB/s)."""
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
    notes: list[str] = field(default_factory=list)
    """What the search could not settle (bisect: faults across halves, suspects with no healthy partner)."""
    units: list[NodeFigures] = field(default_factory=list)
    """Every (node, rail) measured, judged on its rail's measurements (empty: node grain only)."""
    bad_rails: list[RailFault] = field(default_factory=list)
    switch_faults: list[SwitchFault] = field(default_factory=list)
    rail_matrix: dict[tuple[int, int, int], float] = field(default_factory=dict)
    """busbw of every pair measured on one rail: (low, high, rail) -> GB/s."""
    unconfirmed: list[Unconfirmed] = field(default_factory=list)
    """With confirmation on: the pairs slow in one figure only, named neither bad link, rail nor node (not found)."""
    inconclusive: list[Inconclusive] = field(default_factory=list)
    """The units the evidence cannot settle (jobs.isolate.inference): neither found nor healthy, never drained."""
    noise: float = 0.0
    """The healthy figures' relative spread the verdict judged with (one standard deviation / the level)."""

    @property
    def found(self) -> bool:
        return bool(self.bad_nodes or self.bad_links or self.bad_rails or self.switch_faults)

    @property
    def settled(self) -> bool:
        """Nothing the evidence could not tell: no inconclusive unit."""
        return not self.inconclusive


def judge(measured: Iterable[Measured], tolerance: float = DEFAULT_TOLERANCE, expected_busbw: float = 0.0) -> Verdict:
    records = list(measured)
    if not records:
        raise ValueError("no measurement to judge")
    by_node = _by_node(records)
    level = expected_busbw or median(median(r.busbw for r in mine) for mine in by_node.values())
    nodes = _node_figures(by_node, level, tolerance)
    bad = [figures for figures in nodes if figures.slow * 2 > figures.measurements]
    bad_ids = {figures.node for figures in bad}
    matrix = _matrix(records)
    links = [
        BadLink(pair, busbw, busbw / level if level else 0.0)
        for pair, busbw in sorted(matrix.items())
        if busbw < level * (1 - tolerance) and not bad_ids & set(pair)
    ]
    return Verdict(level, spread(records), tolerance, nodes, bad, links, matrix)


def bisect_verdict(search: Bisect, measured: Sequence[Measured], hosts: Sequence[str]) -> Verdict:
    """What the bisection concluded, with every node's figures over the groups it was in: the search's own
    findings decide (in bisect a healthy node shares its short half with the bad one, so most of its
    measurements can be slow)."""
    records = list(measured)
    if not records:
        raise ValueError("no measurement to judge")
    level = search.level()
    by_node = _by_node(records)
    nodes = _node_figures(by_node, level, search.tolerance)
    matrix = _matrix(records)
    links = [BadLink(pair, matrix[pair], matrix[pair] / level if level else 0.0) for pair in sorted(search.bad_links)]
    notes = [
        f"{_names(hosts, a)} and {_names(hosts, b)}: healthy each as a half, short together (a switch or routing); "
        "measured pair by pair across them"
        for a, b in search.cross_faults
    ]
    if search.unresolved:
        notes.append(f"{_names(hosts, search.unresolved)}: suspects with no healthy node left to pair with")
    bad = [figures for figures in nodes if figures.node in search.bad_nodes]
    return Verdict(level, spread(records), search.tolerance, nodes, bad, links, matrix, notes)


def _names(hosts: Sequence[str], nodes: Iterable[int]) -> str:
    return readable_hostlist(hosts[node] for node in sorted(nodes))


def _by_node(records: Sequence[Measured]) -> dict[int, list[Measured]]:
    by_node: dict[int, list[Measured]] = defaultdict(list)
    for record in records:
        for node in record.nodes:
            by_node[node].append(record)
    return by_node


def _matrix(records: Sequence[Measured]) -> dict[Group, float]:
    return {r.nodes: r.busbw for r in records if len(r.nodes) == 2}


def spread(records: Sequence[Measured]) -> float:
    middle = median(r.busbw for r in records)
    return median(abs(r.busbw - middle) for r in records)


def _node_figures(by_node: dict[int, list[Measured]], level: float, tolerance: float) -> list[NodeFigures]:
    threshold = level * (1 - tolerance)
    return [
        NodeFigures(
            node=node,
            measurements=len(mine),
            slow=sum(1 for r in mine if r.busbw < threshold),
            median_busbw=median(r.busbw for r in mine),
            ratio=median(r.busbw for r in mine) / level if level else 0.0,
        )
        for node, mine in sorted(by_node.items())
    ]


def rail_name(rail: int, nics: Sequence[str] = ()) -> str:
    """'rail 3 (mlx5_3)', 'rail 3', or 'every rail'."""
    if rail == EVERY_RAIL:
        return "every rail"
    nic = nics[rail] if 0 <= rail < len(nics) and nics[rail] else ""
    return f"rail {rail} ({nic})" if nic else f"rail {rail}"


def exclude_override(hosts: Sequence[str], verdict: Verdict, stopped: Sequence[str] = ()) -> str:
    """The override that leaves the bad nodes, the nodes with a bad rail (an 8-GPU job needs every NIC) and
    those that stopped answering out of the next job; a slow switch link excludes no node."""
    names = [hosts[f.node] for f in verdict.bad_nodes] + [hosts[f.node] for f in verdict.bad_rails] + list(stopped)
    return f"slurm.exclude={readable_hostlist(sorted(set(names)))}" if names else ""
