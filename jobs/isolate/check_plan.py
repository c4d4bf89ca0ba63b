"""collbench check's plan and bounds: plain data and pure functions, no torch, no Slurm.

The plan: round 1 measures the whole allocation as one group (one figure: does it run at all, and at what
level); then up to two rounds of pairs, every node in a group at once. With the leaves known: pairs within
each leaf, then pairs across leaves. Else one random cycle through the nodes: the first pair round takes its
edges 0-1, 2-3, ..., the second 1-2, 3-4, ..., so no pair is measured twice and each node meets two
partners. With an odd count the last group is a triple, so no node rests, and no two nodes share a group in
both rounds; 3 and 5 nodes get every pair instead. The cost is 1 + pair_rounds rounds at any larger node
count (3 rounds, 1 + n groups at 4,096). The verdict is jobs.isolate.check_judge's.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import combinations

from jobs.config.check_settings import MAX_PAIR_ROUNDS
from jobs.isolate.plan import Round, pairs_plan

WHOLE_ROUND = 1
"""The round that measures every node of the check as one group."""
START_SHARE = 0.4
"""Of the budget, what starting the step takes (srun, the interpreter, torch, the rendezvous) and what
cancelling a late step and reading the verdict take; the rest goes to the rounds."""
MEASURE_SHARE = 0.3
"""Of the budget, what the timed loops of every round may take together (the rest of the rounds' share
goes to creating each round's communicators)."""
MEASURE_MS = (20.0, 1000.0)
"""Each measurement's timed loop: at least this, at most that (a second is hundreds of 256 MiB all_reduces
on a healthy fabric)."""
COLLECTIVE_S = (3.0, 60.0)
"""One collective's time-out: the budget over four, within these bounds, so a hung peer ends the step well
before the budget does."""


CONNECT_WARMUP = 3
"""Warm-up calls of a measurement on NCCL: since NCCL 2.22 the first call on a communicator makes its
connections (NCCL_RUNTIME_CONNECT), hundreds of milliseconds that belong to the set-up, not to the figure;
the calls after it settle the estimate the time budget is cut from."""
PER_CALL_SPREAD = 0.25
"""Relative spread (standard deviation over mean) of one call's time assumed for the floor below: small and
host-bound calls, or a fabric shared with other jobs."""


@dataclass(frozen=True, slots=True)
class CheckTiming:
    warmup_iters: int
    min_iters: int


def timed_calls(tolerance: float, spread: float = PER_CALL_SPREAD) -> int:
    """Timed calls whose mean lies within half the tolerance of the true time at two standard errors:
    n >= (2 x 2 x spread / tolerance)^2 (45 at 15%), so a healthy group is not judged slow by noise."""
    return math.ceil((4 * spread / tolerance) ** 2)


def check_timing(backend: str, tolerance: float) -> CheckTiming:
    """What every measurement of check and check --node runs before and in its timed loop. On NCCL the
    warm-up takes the connections in and the floor is timed_calls; gloo connects when the group is made and
    on the CPU is a stand-in for the test cluster, judged by nothing finer than the floors: two calls."""
    if backend == "nccl":
        return CheckTiming(warmup_iters=CONNECT_WARMUP, min_iters=timed_calls(tolerance))
    return CheckTiming(warmup_iters=1, min_iters=2)


def check_plan(n: int, pair_rounds: int, seed: int, leaves: Sequence[str | None] = ()) -> list[Round]:
    """The whole allocation, then `pair_rounds` rounds of pairs (every pair, one node resting a round, at 3
    and 5 nodes; nothing more at 2, where the whole allocation is the pair). With each node's leaf switch known
    (`leaves`, two leaves or more) and two pair rounds: pairs within each leaf, then pairs across leaves, so
    a node slow within its own leaf is told from a slow link between leaves."""
    if n < 2:
        raise ValueError(f"nodes: {n}; check needs at least 2 nodes (check --node checks one)")
    whole: Round = (tuple(range(n)),)
    if n == 2:
        return [whole]
    if n in (3, 5):  # two rounds of a pair and a triple would group two of five nodes together twice
        return [whole, *pairs_plan(n)]
    draw = random.Random(seed)
    if pair_rounds == MAX_PAIR_ROUNDS and len(set(leaves) - {None}) >= 2:
        within, across = _leaf_orders(n, leaves, draw)
        first = _matching(within)
        return [whole, first, _apart(first, _matching(across))]
    order = list(range(n))
    draw.shuffle(order)
    rounds = [_matching(order[k:] + order[:k]) for k in range(pair_rounds)]
    return [whole, *rounds[:1], *(_apart(rounds[0], later) for later in rounds[1:])]


def _leaf_orders(n: int, leaves: Sequence[str | None], draw: random.Random) -> tuple[list[int], list[int]]:
    """Two orders of the nodes whose consecutive pairs are within a leaf (the first) and across leaves (the
    second, leaves taken in turn); a node of no known leaf counts as a leaf of its own."""
    by_leaf: dict[str, list[int]] = {}
    for node in range(n):
        leaf = leaves[node] if node < len(leaves) else None
        by_leaf.setdefault(leaf if leaf is not None else f"node {node}", []).append(node)
    groups = list(by_leaf.values())
    for nodes in groups:
        draw.shuffle(nodes)
    pairable = [nodes[: len(nodes) - len(nodes) % 2] for nodes in groups]
    left = [node for nodes in groups for node in nodes[len(nodes) - len(nodes) % 2 :]]
    within = [node for nodes in pairable for node in nodes] + left
    turns = sorted(groups, key=len, reverse=True)
    across = [nodes[i] for i in range(len(turns[0])) for nodes in turns if i < len(nodes)]
    return within, across


def _matching(order: list[int]) -> Round:
    """Consecutive nodes in pairs; an odd count ends in a triple."""
    cut = len(order) - 3 if len(order) % 2 else len(order)
    groups = [tuple(sorted(order[i : i + 2])) for i in range(0, cut, 2)]
    if cut < len(order):
        groups.append(tuple(sorted(order[cut:])))
    return tuple(groups)


def _apart(first: Round, second: Round) -> Round:
    """`second` with no two nodes grouped together in `first` too: each node's two groups then hold other
    partners, so a partner slow with a bad node is healthy in its other group. Only a triple (an odd count)
    can repeat two nodes; one of them trades places with a node of another group."""
    together = {frozenset(p) for group in first for p in combinations(group, 2)}

    def clean(group: Sequence[int]) -> bool:
        return not any(frozenset(p) in together for p in combinations(group, 2))

    groups = [list(group) for group in second]
    for i, group in enumerate(groups):
        for position in range(len(group)):
            if clean(group):
                break
            for other in (g for j, g in enumerate(groups) if j != i):
                swap = next((k for k in range(len(other)) if _swapped_clean(group, other, position, k, clean)), None)
                if swap is not None:
                    group[position], other[swap] = other[swap], group[position]
                    break
    return tuple(tuple(sorted(group)) for group in groups)


def _swapped_clean(group: list[int], other: list[int], i: int, k: int, clean: Callable[[Sequence[int]], bool]) -> bool:
    mine, theirs = list(group), list(other)
    mine[i], theirs[k] = theirs[k], mine[i]
    return clean(mine) and clean(theirs)


@dataclass(frozen=True, slots=True)
class PlanCost:
    nodes: int
    rounds: int
    measurements: int
    """Groups measured, all planned rounds together."""
    confirm_rounds: int = 0
    """The confirming rounds that may follow, each a share of the budget; only suspects are measured in them,
    and a check with none runs none."""


def plan_cost(n: int, pair_rounds: int, leaves: Sequence[str | None] = (), confirm_rounds: int = 0) -> PlanCost:
    plan = check_plan(n, pair_rounds, seed=0, leaves=leaves)
    again = confirm_rounds if n > 2 else 0  # at 2 nodes the one round is the only pair
    return PlanCost(n, len(plan), sum(len(groups) for groups in plan), again)


def check_rounds(n: int, pair_rounds: int, confirm_rounds: int) -> int:
    """The rounds the budget is cut over: the plan's, then as many confirming rounds as may follow."""
    cost = plan_cost(n, pair_rounds, confirm_rounds=confirm_rounds)
    return cost.rounds + cost.confirm_rounds


@dataclass(frozen=True, slots=True)
class Bounds:
    """What the budget allows each part of the check."""

    measure_ms: float
    """bench.time_budget_ms of every measurement."""
    collective_s: float
    """timeouts.collective_s: the longest wait for the rendezvous or any one collective."""
    deadline_s: float
    """When the step is cancelled, counted from the start of the check."""


def bounds(budget_s: float, rounds: int, sizes: int) -> Bounds:
    low, high = MEASURE_MS
    measure_ms = min(high, max(low, budget_s * MEASURE_SHARE * 1000 / (rounds * max(1, sizes))))
    collective_s = min(COLLECTIVE_S[1], max(COLLECTIVE_S[0], budget_s / 4))
    return Bounds(measure_ms, collective_s, deadline_s=budget_s * (1 - START_SHARE / 8))


def seed_for(job_id: str, seed: int) -> int:
    """The seed of the pairs: check.seed, mixed with the allocation so two allocations differ."""
    digits = "".join(ch for ch in job_id if ch.isdigit())
    return seed * 1_000_003 + (int(digits[-9:]) if digits else 0)
