"""The groups of collbench isolate's rounds (jobs/runtime/isolate_rounds.py _join_round) on real gloo ranks: a group new
to the run is created by its members alone, one whose ranks were grouped before by every rank, a rail's group
bound to its own interface, and every group works: its all_reduce sums its own members only."""

from __future__ import annotations

import datetime
import os
from typing import Any

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from collectives.settings import BenchSettings
from jobs.isolate.plan import pairs_plan
from jobs.launchers.local import free_port
from jobs.runtime.isolate_rounds import _join_round, lengthened, round_plan

Planned = list[tuple[tuple[int, ...], int, list[int]]]


def node_grain(*groups: tuple[int, ...]) -> Planned:
    """Groups of nodes, one rank a node (node i is rank i)."""
    return [(group, -1, list(group)) for group in groups]


ROUNDS: list[Planned] = [
    node_grain((0, 1), (2, 3)),
    node_grain((0, 2), (1, 3)),
    node_grain((0, 1), (2, 3)),  # the first round's groups again: created by every rank
    node_grain((0, 1, 2, 3)),
    node_grain((1, 2)),  # 0 and 3 rest
    # rail-aligned, as two nodes of two ranks (node 0: ranks 0 and 1, node 1: ranks 2 and 3): each rail's ranks
    # a group of their own, rail 1's bound to the loopback interface by name
    [((0, 1), 0, [0, 2]), ((0, 1), 1, [1, 3])],
]
INTERFACES = {1: "lo"}


def _rank(rank: int, port: int, out: Any) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    os.environ.pop("GLOO_SOCKET_IFNAME", None)
    timeout = datetime.timedelta(seconds=60)
    dist.init_process_group("gloo", rank=rank, world_size=4, timeout=timeout)
    grouped: set[tuple[int, ...]] = set()
    sums = []
    for groups in ROUNDS:
        member = _join_round(groups, rank, timeout, grouped, lambda rail: INTERFACES.get(rail, ""))
        assert "GLOO_SOCKET_IFNAME" not in os.environ, "the rail's interface is set only while its group is made"
        if member is None:
            sums.append(None)
            continue
        _, _, ranks, group = member
        value = torch.tensor([float(10**rank)])
        dist.all_reduce(value, group=group)
        sums.append((tuple(ranks), int(value.item())))
        dist.destroy_process_group(group)
    out[rank] = sums
    dist.destroy_process_group()


def test_each_round_s_groups_sum_their_own_members_new_groups_and_repeated_ones_alike() -> None:
    with mp.Manager() as manager:
        out = manager.dict()
        mp.spawn(_rank, args=(free_port(), out), nprocs=4, join=True)
        results = dict(out)
    for rank in range(4):
        for groups, got in zip(ROUNDS, results[rank], strict=True):
            mine = next((tuple(ranks) for _, _, ranks in groups if rank in ranks), None)
            expected = None if mine is None else (mine, sum(10**member for member in mine))
            assert got == expected, (rank, groups)


def _ranks_of(round_: tuple[tuple[int, ...], ...], per_node: int) -> list[list[int]]:
    return [[node * per_node + local for node in group for local in range(per_node)] for group in round_]


def test_nccl_makes_each_round_s_groups_with_one_split_of_the_world() -> None:
    """Pairs at 64 nodes of 8 ranks: every new_group a world-wide ncclCommSplit was 2,016 splits; one a round is 63."""
    rounds = pairs_plan(64)
    grouped: set[tuple[int, ...]] = set()
    plans = [round_plan(_ranks_of(round_, 8), rank=5, grouped=grouped, splits_the_world=True) for round_ in rounds]
    assert sum(len(round_) for round_ in rounds) == 2016
    assert sum(plan.world_splits for plan in plans) == len(rounds) == 63
    assert all(len(plan.split) == len(round_) and not plan.created for plan, round_ in zip(plans, rounds, strict=True))


def test_gloo_creates_groups_apart_new_ones_by_their_members_alone() -> None:
    grouped: set[tuple[int, ...]] = set()
    first = round_plan([[0, 1], [2, 3]], rank=0, grouped=grouped, splits_the_world=False)
    assert (first.world_splits, first.created) == (0, (((0, 1), True),))
    grouped.update({(0, 1), (2, 3)})
    again = round_plan([[0, 1], [2, 3]], rank=0, grouped=grouped, splits_the_world=False)
    assert again.created == (((0, 1), False), ((2, 3), False))  # grouped before: every rank, in the same order


def test_a_longer_round_multiplies_the_iterations_or_the_time_budget() -> None:
    counted = BenchSettings(iters=20)
    assert lengthened(counted, 1) is counted
    assert lengthened(counted, 3).iters == 60
    timed = lengthened(BenchSettings(time_budget_ms=1000, max_iters=100), 4)
    assert (timed.time_budget_ms, timed.max_iters, timed.iters) == (4000, 400, 20)
