"""The verdict at the fabric's three grains: node, (node, rail) and switch link. Plain data, no torch, no Slurm.

A measurement is a group of nodes on one rail (rail -1: every rank of those nodes, the node grain). In order:
1. Switch links. With the topology known, a node's leaf switch is Slurm's (or the config's); without it, the
   matrix alone may show a cut (jobs.isolate.cut): sets of nodes fast within, slow across, each set taken for a
   leaf. On each rail, the pairs across two leaves whose nodes are healthy within their own leaves, mostly
   slow, are a slow link between those leaves (a leaf slow with every other leaf: its uplink).
2. The healthy level: isolate.expected_busbw, else the median over (node, rail) of each one's median busbw,
   the higher of that over the pairs within a leaf (no uplink can slow those) and over every measurement.
3. Nodes and rails: each rail judged on its own (jobs.isolate.verdict.judge), the pairs across a slow switch
   link left out. A node bad on more than half of its rails is a bad node (a slowed node is one fault, not
   eight); otherwise each bad rail of it is named, its other rails healthy.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from statistics import median

from jobs.config.isolate_settings import DEFAULT_TOLERANCE
from jobs.isolate.cut import MIN_CROSS_NODES, matrix_cut
from jobs.isolate.plan import Group
from jobs.isolate.verdict import (
    EVERY_RAIL,
    BadLink,
    Measured,
    NodeFigures,
    RailFault,
    SwitchFault,
    Unconfirmed,
    Verdict,
    judge,
    spread,
)

LeafOf = Callable[[int, int], "str | None"]
"""(node, rail) -> the leaf switch (or matrix side) it hangs from, None when not known."""


def judge_fabric(
    measured: Iterable[Measured],
    tolerance: float = DEFAULT_TOLERANCE,
    expected_busbw: float = 0.0,
    leaves: Mapping[int, str] | None = None,
    confirming: bool = False,
) -> Verdict:
    """The verdict at every grain. `leaves`: node index -> its leaf switch (all rails share the node's leaf
    name: a rail-optimized fabric has one leaf per rail for the same set of nodes); None: not known.
    `confirming`: isolate's confirmation was on (jobs.isolate.confirm), so nothing is named on one slow figure:
    a pair slow once, never slow again, is unconfirmed (verdict.unconfirmed), not a bad link, rail or node."""
    records = list(measured)
    if not records:
        raise ValueError("no measurement to judge")
    pairs = [r for r in records if len(r.nodes) == 2]
    leaf_of = _by_topology(leaves) if leaves else _by_matrix(pairs, tolerance, expected_busbw)
    planned = first_figures(records)
    within = [r for r in planned if len(r.nodes) == 2 and _same_side(r, leaf_of)]
    level = expected_busbw or healthy_level(within, planned)
    faults, across = _switch_faults(pairs, leaf_of, level, tolerance, named=bool(leaves))
    kept = [r for r in records if id(r) not in across]
    verdict = _nodes_and_rails(kept or records, level, tolerance, confirming)
    verdict.switch_faults = faults
    verdict.spread = spread(records)
    verdict.notes += _noise_note(records, level, tolerance)
    verdict.matrix = _worst_pairs(records)
    verdict.rail_matrix = {(r.nodes[0], r.nodes[1], r.rail): r.busbw for r in pairs if r.rail != EVERY_RAIL}
    return verdict


NOISE_SIGMAS = 2.0
"""The tolerance should lie this many standard deviations of the healthy figures below the level: then about
one healthy figure in 40 falls under it by chance, which a node's other figures or a second measurement of the
pair outvote."""


def _noise_note(records: Sequence[Measured], level: float, tolerance: float) -> list[str]:
    """A note when the healthy figures spread too widely for the tolerance. Their spread is read from the
    figures above the level only (a fault only ever lowers a figure): for normal noise the median distance
    above the level is 0.6745 standard deviations."""
    above = [r.busbw - level for r in records if r.busbw > level]
    if len(above) < 8 or not level:
        return []
    sigma = median(above) / 0.6745 / level
    if sigma * NOISE_SIGMAS <= tolerance:
        return []
    return [
        f"the healthy figures spread by about {sigma:.0%} of the level (one standard deviation), too wide for a "
        f"tolerance of {tolerance:.0%}: healthy groups fall under the threshold by chance and may be named; raise "
        f"the tolerance to {min(0.95, sigma * NOISE_SIGMAS):.2f} or more, or measure longer (bench.time_budget_ms)"
    ]


def _by_topology(leaves: Mapping[int, str]) -> LeafOf:
    return lambda node, rail: leaves.get(node)


def _same_side(record: Measured, leaf_of: LeafOf) -> bool:
    a, b = (leaf_of(node, record.rail) for node in record.nodes)
    return a is not None and a == b


def first_figures(records: Sequence[Measured]) -> list[Measured]:
    """Each group's first figure on each rail: what the level is taken over. A group measured again (isolate's
    confirmation) ran with few others beside it, and on shared hosts its figure is higher than under the plan's
    load: taken into the level, it raised the level until a healthy planned pair fell under the threshold, after
    the last confirming round (seen on the test cluster, twice)."""
    seen: set[tuple[Group, int]] = set()
    first = []
    for record in records:
        if (record.nodes, record.rail) not in seen:
            seen.add((record.nodes, record.rail))
            first.append(record)
    return first


def healthy_level(within: Sequence[Measured], records: Sequence[Measured]) -> float:
    """The higher of the level over the pairs within a leaf and over every measurement: a fault only lowers
    figures, and each estimate can be pulled down by one. Within the leaves no uplink can slow a pair, but a
    small allocation has few such pairs, and one slow node in all of them made the level its own (a 4-node
    check with one node alone in its leaf judged the slow node healthy against it)."""
    overall = _level(records)
    return max(_level(within), overall) if within else overall


def _level(records: Sequence[Measured]) -> float:
    """The median over (node, rail) of each one's median busbw."""
    by_unit: dict[tuple[int, int], list[float]] = defaultdict(list)
    for record in records:
        for node in record.nodes:
            by_unit[(node, record.rail)].append(record.busbw)
    return median(median(figures) for figures in by_unit.values())


# ---- 1. switch links


def _switch_faults(
    pairs: Sequence[Measured], leaf_of: LeafOf, level: float, tolerance: float, named: bool
) -> tuple[list[SwitchFault], set[int]]:
    """The slow links between leaves, and the ids of the measurements across them (left out of the node
    verdict: they say nothing about either node). On each rail, first the leaves whose pairs to every other
    leaf are mostly slow (their uplinks: at scale a leaf pair is measured only a few times, the leaf's pairs
    together many), then the pairs of leaves slow between themselves."""
    threshold = level * (1 - tolerance)
    bad_within = _bad_within_leaf(pairs, leaf_of, threshold)
    crossing: dict[tuple[int, str, str], list[Measured]] = defaultdict(list)
    for record in pairs:
        a, b = (leaf_of(node, record.rail) for node in record.nodes)
        units = {(node, record.rail) for node in record.nodes}
        if a is not None and b is not None and a != b and not units & bad_within:
            low, high = sorted((a, b))
            crossing[(record.rail, low, high)].append(record)
    found: dict[tuple[int, tuple[str, ...]], list[Measured]] = {}
    for rail in sorted({key[0] for key in crossing}):
        mine = {(a, b): records for (r, a, b), records in crossing.items() if r == rail}
        found.update({(rail, switches): records for switches, records in _slow_links(mine, leaf_of, threshold).items()})
    across = {id(record) for records in found.values() for record in records}
    faults = [
        _fault(switches, rail, records, leaf_of, threshold, level, named)
        for (rail, switches), records in _on_every_rail(found, {key[0] for key in crossing}).items()
    ]
    return sorted(faults, key=lambda f: (f.switches, f.rail)), across


def _slow_links(
    crossing: Mapping[tuple[str, str], list[Measured]], leaf_of: LeafOf, threshold: float
) -> dict[tuple[str, ...], list[Measured]]:
    """One rail's slow links: (leaf,) its uplink, (a, b) the link between two leaves -> their pairs."""
    by_leaf: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for pair in crossing:
        for leaf in pair:
            by_leaf[leaf].append(pair)
    found: dict[tuple[str, ...], list[Measured]] = {}
    if len(by_leaf) >= 3:
        for leaf, pairs in sorted(by_leaf.items()):
            mine = [record for pair in pairs for record in crossing[pair]]
            if len(pairs) >= 2 and _mostly_slow(mine, threshold) and _two_sided(mine, leaf_of, threshold, leaf):
                found[(leaf,)] = mine
    explained = {leaf for (leaf,) in found}
    for pair, records in crossing.items():
        slow = _mostly_slow(records, threshold) and _two_sided(records, leaf_of, threshold, pair[0])
        if slow and not explained & set(pair):
            found[pair] = records
    return found


def _bad_within_leaf(pairs: Sequence[Measured], leaf_of: LeafOf, threshold: float) -> set[tuple[int, int]]:
    """(node, rail) slow with most of its partners within its own leaf."""
    seen: dict[tuple[int, int], list[bool]] = defaultdict(list)
    for record in pairs:
        if _same_side(record, leaf_of):
            for node in record.nodes:
                seen[(node, record.rail)].append(record.busbw < threshold)
    return {unit for unit, slow in seen.items() if sum(slow) * 2 > len(slow)}


def _mostly_slow(records: Sequence[Measured], threshold: float) -> bool:
    return sum(r.busbw < threshold for r in records) * 2 > len(records)


def _two_sided(records: Sequence[Measured], leaf_of: LeafOf, threshold: float, inside: str) -> bool:
    """The slow pairs hold two nodes or more on each side (`inside` the leaf and out): a slow link slows every
    node across it, one bad node (at scale seldom measured within its own leaf) only its own pairs."""
    by_side: dict[bool, set[int]] = defaultdict(set)
    for record in records:
        if record.busbw < threshold:
            for node in record.nodes:
                by_side[leaf_of(node, record.rail) == inside].add(node)
    return len(by_side) == 2 and all(len(nodes) >= MIN_CROSS_NODES for nodes in by_side.values())


def _on_every_rail(
    found: Mapping[tuple[int, tuple[str, ...]], list[Measured]], rails: set[int]
) -> dict[tuple[int, tuple[str, ...]], list[Measured]]:
    """A link slow on every rail measured (two or more) is one fault on EVERY_RAIL."""
    by_link: dict[tuple[str, ...], set[int]] = defaultdict(set)
    for rail, switches in found:
        by_link[switches].add(rail)
    merged: dict[tuple[int, tuple[str, ...]], list[Measured]] = {}
    for (rail, switches), records in found.items():
        key = (EVERY_RAIL if len(rails) >= 2 and by_link[switches] == rails else rail, switches)
        merged[key] = merged.get(key, []) + list(records)
    return merged


def _fault(
    switches: tuple[str, ...],
    rail: int,
    found: Sequence[Measured],
    leaf_of: LeafOf,
    threshold: float,
    level: float,
    named: bool,
) -> SwitchFault:
    slow = [r.busbw for r in found if r.busbw < threshold]
    nodes = {node for r in found for node in r.nodes}
    first = switches[0]
    inside = tuple(sorted(n for n in nodes if any(leaf_of(n, r.rail) == first for r in found if n in r.nodes)))
    outside = tuple(sorted(nodes - set(inside)))
    typical = median(slow) if slow else 0.0
    return SwitchFault(
        switches=switches if named else (),
        sides=(inside, outside),
        rail=rail,
        measurements=len(found),
        slow=len(slow),
        busbw=typical,
        ratio=typical / level if level else 0.0,
    )


# ---- without a topology: a cut in the matrix


def _by_matrix(pairs: Sequence[Measured], tolerance: float, expected_busbw: float) -> LeafOf:
    """Each rail's sets of nodes fast within and slow across, named 'set 1', 'set 2', ... (None for the
    nodes in no such set)."""
    sides: dict[tuple[int, int], str] = {}
    for rail in sorted({r.rail for r in pairs}):
        mine = [r for r in pairs if r.rail == rail]
        for number, nodes in enumerate(matrix_cut(mine, tolerance, expected_busbw), start=1):
            sides.update({(node, rail): f"set {number}" for node in nodes})
    return lambda node, rail: sides.get((node, rail))


# ---- 3. nodes and rails


def _nodes_and_rails(records: Sequence[Measured], level: float, tolerance: float, confirming: bool) -> Verdict:
    by_rail: dict[int, list[Measured]] = defaultdict(list)
    for record in records:
        by_rail[record.rail].append(record)
    per_rail = {rail: judge(mine, tolerance, level) for rail, mine in sorted(by_rail.items())}
    units = [replace_rail(figures, rail) for rail, v in per_rail.items() for figures in v.nodes]
    # a (node, rail) bad on one figure (its only one): with confirmation on, it names neither rail nor node
    once = {(f.node, rail) for rail, v in per_rail.items() for f in v.bad_nodes if confirming and f.slow < 2}
    bad_units = {(f.node, rail) for rail, v in per_rail.items() for f in v.bad_nodes} - once
    rails_of: dict[int, list[int]] = defaultdict(list)
    for unit in units:
        rails_of[unit.node].append(unit.rail)
    bad_nodes = {node for node, rails in rails_of.items() if _most(sum((node, r) in bad_units for r in rails), rails)}
    nodes = _merged(records, level, tolerance)
    rail_faults = [
        RailFault(
            *(u.node, u.rail, u.measurements, u.slow, u.median_busbw, u.ratio),
            healthy_rails=[r for r in rails_of[u.node] if (u.node, r) not in bad_units],
        )
        for u in units
        if (u.node, u.rail) in bad_units and u.node not in bad_nodes
    ]
    links = [
        BadLink(link.nodes, link.busbw, link.ratio, rail)
        for rail, v in per_rail.items()
        for link in v.bad_links
        if not bad_nodes & set(link.nodes)
    ]
    verdict = Verdict(level, 0.0, tolerance, nodes, [f for f in nodes if f.node in bad_nodes], links)
    verdict.units = units
    verdict.bad_rails = sorted(rail_faults, key=lambda f: (f.node, f.rail))
    if confirming:
        alone = _pairs_of(once, by_rail, bad_units | {(node, rail) for node in bad_nodes for rail in by_rail}, level)
        verdict.bad_links, verdict.unconfirmed = _settled(links + alone, records, level * (1 - tolerance))
    return verdict


def _pairs_of(
    once: set[tuple[int, int]], by_rail: Mapping[int, list[Measured]], bad: set[tuple[int, int]], level: float
) -> list[BadLink]:
    """The pair each (node, rail) in `once` was measured in, as a link, unless its other node is bad on that rail
    on figures of its own (which the pair's slowness is then)."""
    found: dict[tuple[Group, int], BadLink] = {}
    for node, rail in sorted(once):
        for record in by_rail[rail]:
            others = {(other, rail) for other in record.nodes if other != node}
            if node in record.nodes and len(record.nodes) == 2 and not others & bad:
                ratio = record.busbw / level if level else 0.0
                found[(record.nodes, rail)] = BadLink(record.nodes, record.busbw, ratio, rail)
    return list(found.values())


def _settled(
    links: Sequence[BadLink], records: Sequence[Measured], threshold: float
) -> tuple[list[BadLink], list[Unconfirmed]]:
    """The links slow in two figures or more (a pair measured again and slow again), and those slow in one."""
    figures: dict[tuple[Group, int], list[float]] = defaultdict(list)
    for record in records:
        figures[(record.nodes, record.rail)].append(record.busbw)
    confirmed, unconfirmed = [], []
    for link in links:
        mine = figures[(link.nodes, link.rail)]
        if sum(busbw < threshold for busbw in mine) >= 2:
            confirmed.append(link)
        else:
            unconfirmed.append(Unconfirmed(link.nodes, link.busbw, link.ratio, link.rail, len(mine)))
    return confirmed, sorted(unconfirmed, key=lambda u: (u.rail, u.nodes))


def _most(bad: int, rails: Sequence[int]) -> bool:
    return bad * 2 > len(rails)


def replace_rail(figures: NodeFigures, rail: int) -> NodeFigures:
    return NodeFigures(figures.node, figures.measurements, figures.slow, figures.median_busbw, figures.ratio, rail)


def _merged(records: Sequence[Measured], level: float, tolerance: float) -> list[NodeFigures]:
    """Each node's figures over every rail together."""
    threshold = level * (1 - tolerance)
    by_node: dict[int, list[float]] = defaultdict(list)
    for record in records:
        for node in record.nodes:
            by_node[node].append(record.busbw)
    return [
        NodeFigures(
            node=node,
            measurements=len(figures),
            slow=sum(1 for busbw in figures if busbw < threshold),
            median_busbw=median(figures),
            ratio=median(figures) / level if level else 0.0,
        )
        for node, figures in sorted(by_node.items())
    ]


def _worst_pairs(records: Sequence[Measured]) -> dict[tuple[int, ...], float]:
    """Each pair's figure: its slowest rail (the last figure when a rail was measured twice)."""
    latest: dict[tuple[tuple[int, ...], int], float] = {}
    for record in records:
        if len(record.nodes) == 2:
            latest[(record.nodes, record.rail)] = record.busbw
    worst: dict[tuple[int, ...], float] = {}
    for (pair, _rail), busbw in latest.items():
        worst[pair] = min(worst.get(pair, busbw), busbw)
    return worst
