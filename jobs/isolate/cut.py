"""A cut in the matrix with no topology known: sets of nodes fast within, slow across. Plain data, no torch,
no Slurm."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from statistics import fmean, median

from jobs.isolate.verdict import Measured

MIN_CROSS_NODES = 2
"""Each side of a slow switch link holds at least this many nodes measured: one node alone behind a leaf
cannot be told from its uplink (its pairs are slow either way), and stays a node verdict."""


def matrix_cut(pairs: Sequence[Measured], tolerance: float, expected_busbw: float = 0.0) -> list[tuple[int, ...]]:
    """Two or more sets of two or more nodes that hold every node, the pairs within a set mostly fast and every
    pair measured across two sets slow against the sets' own level: what a slow switch link looks like in a
    matrix with no topology. Empty when there is none, or when too few pairs were measured to tell a cut from
    noise (a node with fewer than three partners: random pairs break into fragments by chance)."""
    partners: dict[int, int] = defaultdict(int)
    for record in pairs:
        for node in record.nodes:
            partners[node] += 1
    if not partners or min(partners.values()) < 3:
        return []
    reference = expected_busbw or median(_unit_best(pairs).values())
    threshold = reference * (1 - tolerance)
    sets = [nodes for nodes in _components(pairs, threshold) if len(nodes) >= MIN_CROSS_NODES]
    if len(sets) < 2 or sum(map(len, sets)) < len(partners) or not all(_mostly_fast(pairs, threshold, s) for s in sets):
        return []
    side = {node: number for number, nodes in enumerate(sets) for node in nodes}
    placed = [(r, side.get(r.nodes[0]), side.get(r.nodes[1])) for r in pairs]
    within = [r.busbw for r, a, b in placed if a is not None and a == b]
    crossing = [r.busbw for r, a, b in placed if a is not None and b is not None and a != b]
    own = median(within)
    pairs_of_sets = len(sets) * (len(sets) - 1) // 2
    # every pair across slow against the sets' own level, by twice the tolerance in the middle: a fragment
    # of noise is cut by a threshold its cross pairs only just miss
    if len(crossing) < 2 * pairs_of_sets or max(crossing) >= own * (1 - tolerance):
        return []
    if median(crossing) > own * (1 - 2 * tolerance):
        return []
    return [tuple(sorted(nodes)) for nodes in sets]


MOSTLY_FAST = 0.75
"""A leaf is fast within: this share of the pairs measured inside a set at least. Under wide noise the
threshold from each node's best figure lies far over the level, and the few figures over it chain nodes into
fragments that every pair across misses (16 nodes at 40% noise: four sets, level 149 against a healthy 100,
and healthy nodes named slow against it)."""


def _mostly_fast(pairs: Sequence[Measured], threshold: float, nodes: set[int]) -> bool:
    inside = [r.busbw >= threshold for r in pairs if set(r.nodes) <= nodes]
    return sum(inside) >= MOSTLY_FAST * len(inside)


def _unit_best(pairs: Sequence[Measured]) -> dict[int, float]:
    best: dict[int, float] = {}
    for record in pairs:
        for node in record.nodes:
            best[node] = max(best.get(node, 0.0), record.busbw)
    return best


def _components(pairs: Sequence[Measured], threshold: float) -> list[set[int]]:
    parent: dict[int, int] = {}

    def root(node: int) -> int:
        parent.setdefault(node, node)
        while parent[node] != node:
            parent[node] = parent[parent[node]]
            node = parent[node]
        return node

    for record in pairs:
        a, b = (root(node) for node in record.nodes)
        if record.busbw >= threshold and a != b:
            parent[a] = b
    found: dict[int, set[int]] = defaultdict(set)
    for node in list(parent):
        found[root(node)].add(node)
    return sorted(found.values(), key=min)


Side = tuple[int, ...]


def bipartitions(pairs: Sequence[Measured], threshold: float) -> list[tuple[Side, Side]]:
    """Two sides of one rail's pairs that a slow link between them would explain, for the inference to weigh
    (jobs.isolate.inference): where the figures are sparse (check's cycle of pairs), the sides the slow pairs
    alternate (a slow pair crosses, a fast pair stays), when that is consistent; where they are dense, each of
    the nodes slowest with most partners grown into a side: its slow partners, then the nodes slow with most
    of them. Each side holds two nodes or more that were measured fast with another node of their side (a leaf
    is fast within): two bad nodes never measured together are no leaf."""
    pairs = [r for r in pairs if len(r.nodes) == 2]
    slow = [r for r in pairs if r.busbw < threshold]
    if len(slow) < 2:
        return []
    found = [_alternating(pairs, threshold)]
    degree: dict[int, int] = defaultdict(int)
    for record in slow:
        for node in record.nodes:
            degree[node] += 1
    for seed in sorted(degree, key=lambda node: (-degree[node], node))[:3]:
        found.append(_grown(pairs, threshold, seed))
    settled = [_settled(pairs, *cut) for cut in found if cut is not None]
    cuts = {(min(cut), max(cut)) for cut in settled if cut is not None and _fast_within(pairs, threshold, *cut)}
    return sorted(cuts)


def _settled(pairs: Sequence[Measured], a: Side, b: Side) -> tuple[Side, Side] | None:
    """The sides with each node moved to the side it is faster with, on the mean of its figures (a leaf is fast
    within, slow across), until none moves: grown from a seed by counts under a threshold, a node of one leaf
    slow by chance with more than half of it lands on the other side, and a cut the inference can only take
    whole then needs that node's rail to explain the pairs it misplaced."""
    side = {node: 0 for node in a} | {node: 1 for node in b}
    mine: dict[int, list[tuple[int, float]]] = defaultdict(list)
    for record in pairs:
        x, y = record.nodes
        if x in side and y in side:
            mine[x].append((y, record.busbw))
            mine[y].append((x, record.busbw))
    for _ in range(len(side)):
        moved = False
        for node in sorted(side):
            with_side: list[list[float]] = [[], []]
            for other, busbw in mine[node]:
                with_side[side[other]].append(busbw)
            if not all(with_side):
                continue
            faster = 0 if fmean(with_side[0]) > fmean(with_side[1]) else 1
            if faster != side[node]:
                side[node], moved = faster, True
        if not moved:
            break
    return _two(side)


def _alternating(pairs: Sequence[Measured], threshold: float) -> tuple[Side, Side] | None:
    colours = alternating_sides(pairs, threshold)
    return _two(colours) if colours is not None else None


def alternating_sides(pairs: Sequence[Measured], threshold: float) -> dict[int, int] | None:
    """Each node's side when every slow pair crosses and every fast pair stays (0 or 1, by connected part of the
    matrix), or None when no such sides exist (the figures are not a cut)."""
    side: dict[int, int] = {}
    edges: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for record in pairs:
        a, b = record.nodes
        flip = int(record.busbw < threshold)
        edges[a].append((b, flip))
        edges[b].append((a, flip))
    for start in sorted(edges):
        if start in side:
            continue
        side[start], todo = 0, [start]
        while todo:
            node = todo.pop()
            for other, flip in edges[node]:
                want = side[node] ^ flip
                if other not in side:
                    side[other] = want
                    todo.append(other)
                elif side[other] != want:
                    return None
    return side


def alone(pairs: Sequence[Measured], threshold: float, node: int) -> bool:
    """No cut explains `node`'s slow pairs: the sides that would have every slow pair cross and every fast pair
    stay exist, and hold `node` alone on its side of its part of the matrix (a slow node in an otherwise fast
    matrix). Where the sides exist with other nodes beside it, or do not exist at all (noise), a cut the topology
    does not name cannot be ruled out from these pairs."""
    pairs = [r for r in pairs if len(r.nodes) == 2]
    colours = alternating_sides(pairs, threshold)
    if colours is None or node not in colours:
        return False
    linked = _linked(pairs, node)
    return all(colours[other] != colours[node] for other in linked if other != node)


def _linked(pairs: Sequence[Measured], node: int) -> set[int]:
    edges: dict[int, set[int]] = defaultdict(set)
    for record in pairs:
        a, b = record.nodes
        edges[a].add(b)
        edges[b].add(a)
    seen, todo = {node}, [node]
    while todo:
        for other in edges[todo.pop()] - seen:
            seen.add(other)
            todo.append(other)
    return seen


def _grown(pairs: Sequence[Measured], threshold: float, seed: int) -> tuple[Side, Side] | None:
    inside: set[int] = {seed}
    outside: set[int] = set()
    for _ in range(3):
        outside = _slow_with_most(pairs, threshold, inside)
        inside = _slow_with_most(pairs, threshold, outside)
    return _two({**dict.fromkeys(inside, 0), **dict.fromkeys(outside - inside, 1)})


def _slow_with_most(pairs: Sequence[Measured], threshold: float, group: set[int]) -> set[int]:
    """The nodes outside `group` slow with more than half of the group's nodes they were measured with."""
    seen: dict[int, list[bool]] = defaultdict(list)
    for record in pairs:
        a, b = record.nodes
        for node, other in ((a, b), (b, a)):
            if other in group and node not in group:
                seen[node].append(record.busbw < threshold)
    return {node for node, slow in seen.items() if sum(slow) * 2 > len(slow)}


def _two(side: dict[int, int]) -> tuple[Side, Side] | None:
    a = tuple(sorted(n for n, s in side.items() if s == 0))
    b = tuple(sorted(n for n, s in side.items() if s == 1))
    return (a, b) if len(a) >= MIN_CROSS_NODES and len(b) >= MIN_CROSS_NODES else None


def _fast_within(pairs: Sequence[Measured], threshold: float, a: Side, b: Side) -> bool:
    placed = {node: 0 for node in a} | {node: 1 for node in b}
    fast: dict[int, set[int]] = defaultdict(set)
    for record in pairs:
        x, y = record.nodes
        if x in placed and y in placed and placed[x] == placed[y] and record.busbw >= threshold:
            fast[placed[x]].update((x, y))
    return all(len(fast[s]) >= MIN_CROSS_NODES for s in (0, 1))
