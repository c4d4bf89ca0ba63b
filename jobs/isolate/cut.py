"""A cut in the matrix with no topology known: sets of nodes fast within, slow across. Plain data, no torch,
no Slurm."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from statistics import median

from jobs.isolate.verdict import Measured

MIN_CROSS_NODES = 2
"""Each side of a slow switch link holds at least this many nodes measured: one node alone behind a leaf
cannot be told from its uplink (its pairs are slow either way), and stays a node verdict."""


def matrix_cut(pairs: Sequence[Measured], tolerance: float, expected_busbw: float = 0.0) -> list[tuple[int, ...]]:
    """Two or more sets of two or more nodes, every pair within a set fast, every pair measured across two
    sets slow against the sets' own level: what a slow switch link looks like in a matrix with no topology.
    Empty when there is none, or when too few pairs were measured to tell a cut from noise (a node with
    fewer than three partners: random pairs break into fragments by chance)."""
    partners: dict[int, int] = defaultdict(int)
    for record in pairs:
        for node in record.nodes:
            partners[node] += 1
    if not partners or min(partners.values()) < 3:
        return []
    reference = expected_busbw or median(_unit_best(pairs).values())
    sets = [nodes for nodes in _components(pairs, reference * (1 - tolerance)) if len(nodes) >= MIN_CROSS_NODES]
    if len(sets) < 2:
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
