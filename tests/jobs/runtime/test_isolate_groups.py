"""The groups of collbench isolate's rounds (jobs/runtime/isolate_rounds.py _join_round) on real gloo ranks: a group new
to the run is created by its members alone, one whose ranks were grouped before by every rank, and every
group works: its all_reduce sums its own members only."""

from __future__ import annotations

import datetime
import os
from typing import Any

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from jobs.launchers.local import free_port
from jobs.runtime.isolate_rounds import _join_round

ROUNDS: list[tuple[tuple[int, ...], ...]] = [
    ((0, 1), (2, 3)),
    ((0, 2), (1, 3)),
    ((0, 1), (2, 3)),  # the first round's groups again: created by every rank
    ((0, 1, 2, 3),),
    ((1, 2),),  # 0 and 3 rest
]


def _rank(rank: int, port: int, out: Any) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    timeout = datetime.timedelta(seconds=60)
    dist.init_process_group("gloo", rank=rank, world_size=4, timeout=timeout)
    grouped: set[tuple[int, ...]] = set()
    sums = []
    for groups in ROUNDS:
        member = _join_round(groups, [[0], [1], [2], [3]], rank, timeout, grouped)
        if member is None:
            sums.append(None)
            continue
        _, ranks, group = member
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
            mine = next((group for group in groups if rank in group), None)
            expected = None if mine is None else (mine, sum(10**member for member in mine))
            assert got == expected, (rank, groups)
