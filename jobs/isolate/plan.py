"""Which nodes `collbench isolate` measures together, round by round. Plain data and pure functions: no
torch, no Slurm. Nodes are indices 0..n-1 into the job's node list; a group is the nodes measured together
(all their ranks, as one torch.distributed subgroup); a round is disjoint groups measured at the same time.

- pairs: a round-robin tournament by the circle method: every pair exactly once, n/2 pairs at a time,
  n-1 rounds for even n and n rounds (one node resting each round) for odd n.
- random: `rounds` random perfect matchings from a seed, for node counts where n-1 rounds is too many.
- bisect: adaptive, see jobs.isolate.bisect.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence

Group = tuple[int, ...]
Round = tuple[Group, ...]


def pairs_plan(n: int) -> list[Round]:
    """Seat m-1 stays and the others turn: in round r it meets r, and r+k meets r-k (mod m-1), where
    m = n, or n+1 with the extra seat a rest for whoever meets it."""
    _check_count(n)
    m = n + n % 2
    turning = m - 1
    rounds = []
    for r in range(turning):
        pairs = [(turning, r)] + [((r + k) % turning, (r - k) % turning) for k in range(1, m // 2)]
        rounds.append(tuple(_pair(a, b) for a, b in pairs if a < n and b < n))
    return rounds


def random_plan(n: int, rounds: int, seed: int) -> list[Round]:
    """`rounds` perfect matchings drawn from `seed` (one node rests per round when n is odd)."""
    _check_count(n)
    if rounds < 1:
        raise ValueError(f"isolate.rounds: {rounds} must be >= 1")
    draw = random.Random(seed)
    plan = []
    for _ in range(rounds):
        order = list(range(n))
        draw.shuffle(order)
        plan.append(tuple(_pair(order[i], order[i + 1]) for i in range(0, n - 1, 2)))
    return plan


def check_round(measured: Round, n: int) -> None:
    """A round can run: every group of two or more known nodes, no node in two groups."""
    seen: set[int] = set()
    for group in measured:
        if len(group) < 2:
            raise ValueError(f"group {group} has fewer than 2 nodes: it would not cross the network")
        for node in group:
            if not 0 <= node < n:
                raise ValueError(f"node {node} is not one of the {n} nodes")
            if node in seen:
                raise ValueError(f"node {node} is in two groups of one round: {measured}")
            seen.add(node)


def pairs_measured(plan: Iterable[Round]) -> list[Group]:
    return [group for measured in plan for group in measured if len(group) == 2]


def _pair(a: int, b: int) -> Group:
    return (a, b) if a < b else (b, a)


def _check_count(n: int) -> None:
    if n < 2:
        raise ValueError(f"nodes: {n}; isolate needs at least 2 nodes to measure a link")


def halves(group: Sequence[int]) -> tuple[Group, Group]:
    middle = len(group) // 2
    return tuple(group[:middle]), tuple(group[middle:])
