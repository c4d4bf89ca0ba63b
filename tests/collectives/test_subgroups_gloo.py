"""The sweep over subgroups, as collbench isolate will run it: 4 gloo ranks split into disjoint groups
measured at the same time, every op right in each group with group-local ranks and roots, and a rank in no
group left out. Real process groups, spawned."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from collectives.layout import LAYOUTS
from collectives.results import RankResult
from collectives.settings import BenchSettings
from collectives.sweep import RankContext, run_sweep
from jobs.launchers.local import free_port

pytestmark = pytest.mark.integration

ROUNDS = ([[0, 1], [2, 3]], [[0, 2], [1, 3]], [[1, 2, 3]])
"""Two pairs, the pairs crossed, and three ranks with rank 0 resting."""


def _rank(rank: int, port: int, out: str) -> None:
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=4)
    settings = BenchSettings(ops=list(LAYOUTS), sizes=[1024], warmup_iters=0, iters=1, root="all")
    lines = []
    for number, groups in enumerate(ROUNDS):
        mine, _ = dist.new_subgroups_by_enumeration(groups)
        if mine is None:
            lines.append(json.dumps({"round": number, "rested": True}))
            continue
        members = next(g for g in groups if rank in g)
        ctx = RankContext(
            rank=members.index(rank), nranks=len(members), local_rank=0, host=f"r{rank}", device=torch.device("cpu"),
            group=mine,
        )  # fmt: skip

        def emit(result: RankResult, number: int = number, members: list[int] = members) -> None:
            lines.append(json.dumps({"round": number, "members": members, "row": json.loads(result.to_json())}))

        run_sweep(settings, ctx, emit)
    dist.destroy_process_group()
    Path(out, f"rank{rank}.jsonl").write_text("\n".join(lines) + "\n")


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, object]]:
    out = tmp_path_factory.mktemp("subgroups")
    mp.start_processes(_rank, args=(free_port(), str(out)), nprocs=4, start_method="spawn")
    return [json.loads(line) for rank in range(4) for line in (out / f"rank{rank}.jsonl").read_text().splitlines()]


def test_every_op_is_right_in_every_group_of_every_round(measured: list[dict[str, object]]) -> None:
    rows = [m for m in measured if "row" in m]
    assert rows and all(m["row"]["wrong"] == 0 for m in rows), [m for m in rows if m["row"]["wrong"]]  # type: ignore[index]
    for number, groups in enumerate(ROUNDS):
        for group in groups:
            mine = [m["row"] for m in rows if m["round"] == number and m["members"] == group]
            assert {r["op"] for r in mine} == set(LAYOUTS)  # type: ignore[index]
            assert {r["nranks"] for r in mine} == {len(group)}, "busbw factors follow the group's size"  # type: ignore[index]
            scatter_roots = {r["root"] for r in mine if r["op"] == "scatter"}  # type: ignore[index]
            assert scatter_roots == set(range(len(group))), "roots are the group's own ranks"


def test_a_rank_in_no_group_rests_that_round(measured: list[dict[str, object]]) -> None:
    assert [m["round"] for m in measured if m.get("rested")] == [2]
