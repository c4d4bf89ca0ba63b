"""The verdict at the fabric's three grains: node, (node, rail) and switch link. Plain data, no torch, no Slurm.

A measurement is a group of nodes on one rail (rail -1: every rank of those nodes, the node grain). In order:
1. The leaves. With the topology known, a node's leaf switch is Slurm's (or the config's); without it, the
   matrix alone may show a cut (jobs.isolate.cut): sets of nodes fast within, slow across, each set taken for a
   leaf.
2. The healthy level: isolate.expected_busbw, else the median over (node, rail) of each one's median busbw,
   the higher of that over the pairs within a leaf (no uplink can slow those) and over every measurement.
3. The faults: the explanation that fits every figure at once with the fewest faults, under the noise the run
   measured (jobs.isolate.inference); each of its faults named only when it beats the best explanation without
   it by a clear margin, else inconclusive. A fault slows every figure on its path: a slowed node is one fault,
   not eight rails; a slow uplink one fault, not every node behind it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from statistics import median, median_high

from jobs.config.isolate_settings import DEFAULT_TOLERANCE
from jobs.isolate.cut import matrix_cut
from jobs.isolate.inference import Inference, Judged, infer
from jobs.isolate.plan import Group
from jobs.isolate.verdict import (
    EVERY_RAIL,
    BadLink,
    Inconclusive,
    Measured,
    NodeFigures,
    RailFault,
    SwitchFault,
    Unconfirmed,
    Verdict,
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
    planned_rounds: int | None = None,
) -> Verdict:
    """The verdict at every grain. `leaves`: node index -> its leaf switch (all rails share the node's leaf
    name: a rail-optimized fabric has one leaf per rail for the same set of nodes); None: not known.
    `confirming`: isolate's confirmation was on (jobs.isolate.confirm); with `planned_rounds` (the plan's last
    round) too, a fault none of whose slow figures came after the plan was never measured again, and is
    inconclusive. A link slow in one figure is never named: it is unconfirmed (verdict.unconfirmed)."""
    records = list(measured)
    if not records:
        raise ValueError("no measurement to judge")
    pairs = [r for r in records if len(r.nodes) == 2]
    leaf_of = _by_topology(leaves) if leaves else _by_matrix(pairs, tolerance, expected_busbw)
    planned = first_figures(records)
    within = [r for r in planned if len(r.nodes) == 2 and _same_side(r, leaf_of)]
    level = expected_busbw or healthy_level(within, planned)
    inference = infer(records, level, tolerance, leaf_of, bool(leaves), planned_rounds if confirming else None)
    verdict = _verdict(records, inference, level, tolerance, named_switches=bool(leaves))
    verdict.spread = spread(records)
    verdict.noise = inference.sigma
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
        f"tolerance of {tolerance:.0%}: healthy groups fall under the threshold by chance, so a fault of about the "
        f"tolerance's size cannot be told from noise and is said inconclusive, not named; raise the tolerance to "
        f"{min(0.95, sigma * NOISE_SIGMAS):.2f} or more, or measure longer (bench.time_budget_ms)"
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


GROSS = 0.5
"""A figure under this share of the rough level is a fault's, not noise's: the level is taken without it."""


def healthy_level(within: Sequence[Measured], records: Sequence[Measured]) -> float:
    """The higher of the level over the pairs within a leaf and over every measurement: a fault only lowers
    figures, and each estimate can be pulled down by one. Within the leaves no uplink can slow a pair, but a
    small allocation has few such pairs, and one slow node in all of them made the level its own (a 4-node
    check with one node alone in its leaf judged the slow node healthy against it)."""
    overall = _level(records)
    return max(_level(within), overall) if within else overall


def _level(records: Sequence[Measured]) -> float:
    """The median over (node, rail) of each one's median busbw, over its figures that are not grossly slow.
    Which are: under GROSS of a first, rough level, the median over the units of each one's upper median (a
    fault only lowers a figure; with two figures a unit, check's pairs, the plain median of a bad node's
    partner was the mean of a healthy and a slow figure, and in a 3-node check the level fell to half the
    healthy pair's). The rough level alone is biased up by the noise: the upper of a unit's two figures
    lies about half a standard deviation over the mean, so at 20% noise every healthy figure read 10% under
    the level and healthy nodes were drained (bench_grains, check). The second pass is unbiased."""
    by_unit: dict[tuple[int, int], list[float]] = defaultdict(list)
    for record in records:
        for node in record.nodes:
            by_unit[(node, record.rail)].append(record.busbw)
    rough = median(median_high(figures) for figures in by_unit.values())
    kept = [[f for f in figures if f >= GROSS * rough] for figures in by_unit.values()]
    return median(median(figures) for figures in kept if figures) if any(kept) else rough


# ---- the inference's faults as the verdict's records


def _verdict(
    records: Sequence[Measured], inference: Inference, level: float, tolerance: float, named_switches: bool
) -> Verdict:
    switches = inference.named("switch_link")
    across = {int(i) for judged in switches for i in judged.candidate.covers}
    kept = [r for index, r in enumerate(records) if index not in across] or records
    nodes = _merged(kept, level, tolerance)
    units = _units(kept, level, tolerance)
    bad_nodes = {j.candidate.nodes[0] for j in inference.named("node")}
    bad_units = {(j.candidate.nodes[0], j.candidate.rail) for j in inference.named("rail")}
    verdict = Verdict(level, 0.0, tolerance, nodes, [f for f in nodes if f.node in bad_nodes])
    verdict.units = units
    verdict.bad_rails = [
        RailFault(
            *(u.node, u.rail, u.measurements, u.slow, u.median_busbw, u.ratio),
            healthy_rails=[v.rail for v in units if v.node == u.node and (v.node, v.rail) not in bad_units],
        )
        for u in units
        if (u.node, u.rail) in bad_units
    ]
    verdict.switch_faults = sorted(
        (_switch_fault(j, records, level, tolerance, named_switches) for j in switches),
        key=lambda f: (f.switches, f.rail),
    )
    verdict.bad_links = [_link(j, records, level) for j in inference.named("link")]
    once = [j for j in inference.undecided if j.candidate.grain == "link" and j.why == "once"]
    verdict.unconfirmed = sorted((_unconfirmed(j, records, level) for j in once), key=lambda u: (u.rail, u.nodes))
    verdict.inconclusive = [_inconclusive(j, records, level, tolerance) for j in inference.undecided if j not in once]
    return verdict


def _units(records: Sequence[Measured], level: float, tolerance: float) -> list[NodeFigures]:
    """Every (node, rail) measured on a rail of its own, judged on that rail's figures (empty: node grain)."""
    by_rail: dict[int, list[Measured]] = defaultdict(list)
    for record in records:
        if record.rail != EVERY_RAIL:
            by_rail[record.rail].append(record)
    return [replace_rail(f, rail) for rail, mine in sorted(by_rail.items()) for f in _merged(mine, level, tolerance)]


def _figures(judged: Judged, records: Sequence[Measured]) -> list[float]:
    return [records[int(i)].busbw for i in judged.candidate.covers]


def _switch_fault(
    judged: Judged, records: Sequence[Measured], level: float, tolerance: float, named: bool
) -> SwitchFault:
    figures = _figures(judged, records)
    slow = [busbw for busbw in figures if busbw < level * (1 - tolerance)]
    inside = judged.candidate.nodes
    everyone = {n for i in judged.candidate.covers for n in records[int(i)].nodes}
    typical = median(slow) if slow else 0.0
    return SwitchFault(
        switches=judged.candidate.switches if named else (),
        sides=(inside, tuple(sorted(everyone - set(inside)))),
        rail=judged.candidate.rail,
        measurements=len(figures),
        slow=len(slow),
        busbw=typical,
        ratio=typical / level if level else 0.0,
    )


def _link(judged: Judged, records: Sequence[Measured], level: float) -> BadLink:
    busbw = median(_figures(judged, records))
    return BadLink(judged.candidate.nodes, busbw, busbw / level if level else 0.0, judged.candidate.rail)


def _unconfirmed(judged: Judged, records: Sequence[Measured], level: float) -> Unconfirmed:
    figures = _figures(judged, records)
    busbw = min(figures)
    ratio = busbw / level if level else 0.0
    return Unconfirmed(judged.candidate.nodes, busbw, ratio, judged.candidate.rail, len(figures))


def _inconclusive(judged: Judged, records: Sequence[Measured], level: float, tolerance: float) -> Inconclusive:
    figures = _figures(judged, records)
    assert judged.why is not None
    return Inconclusive(
        grain=judged.candidate.grain,
        nodes=judged.candidate.nodes,
        rail=judged.candidate.rail,
        switches=judged.candidate.switches,
        measurements=len(figures),
        slow=sum(busbw < level * (1 - tolerance) for busbw in figures),
        busbw=judged.factor * level,
        ratio=judged.factor,
        why=judged.why,
        margin=judged.margin,
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
