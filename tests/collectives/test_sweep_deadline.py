"""A sweep with a deadline, over a real gloo group of 2 ranks: it measures its smallest size first and
stops growing before a size the group projects would not finish in time, on every rank at the same step
(nothing hangs), even when only one rank's deadline is near; without a deadline it measures every size.
The large size (1 GiB) is never allocated: the sweep stops before its buffers."""

from __future__ import annotations

import datetime
import json
import re
import time
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from loguru import logger

from collectives.results import RankResult
from collectives.settings import BenchSettings
from collectives.sweep import RankContext, run_sweep
from jobs.launchers.local import free_port

pytestmark = pytest.mark.integration

GIB = 1 << 30
LEFT_S = 5.0
"""The near deadline: a 1 KiB all_reduce takes tens of microseconds here, so 1 GiB (10^6 times the bytes)
projects to tens of seconds per call, times the 7 calls of a step (warm-up, iterations, check); it stops
the sweep unless a call at 2 KiB took under 1.4 us."""
SWEEPS: dict[str, tuple[list[int], tuple[float, float]]] = {
    "none": ([1024, 2048, 4096], (0.0, 0.0)),
    "near": ([1024, GIB], (LEFT_S, LEFT_S)),
    "one_rank_near": ([1024, 2048, GIB], (3600.0, LEFT_S)),
}
"""name -> (sizes, each rank's seconds left; 0: no deadline)."""


def _rank(rank: int, port: int, out: str) -> None:
    torch.set_num_threads(1)
    dist.init_process_group(
        "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2, timeout=datetime.timedelta(seconds=60)
    )
    ctx = RankContext(rank=rank, nranks=2, local_rank=rank, host=f"r{rank}", device=torch.device("cpu"))
    lines: list[str] = []
    logger.add(
        lambda message: lines.append(json.dumps({"skipped": message.record["message"]})),
        filter=lambda record: record["extra"].get("event") == "size_skipped",
        format="{message}",
    )
    for name, (sizes, left) in SWEEPS.items():
        settings = BenchSettings(ops=["all_reduce"], sizes=sizes, warmup_iters=1, iters=5)

        def emit(result: RankResult, name: str = name) -> None:
            lines.append(json.dumps({"sweep": name, "size": result.size, "wrong": result.wrong}))

        deadline = time.time() + left[rank] if left[rank] else 0.0
        run_sweep(settings, ctx, emit, deadline=deadline)
        lines.append(json.dumps({"sweep": name, "done": True}))
    dist.destroy_process_group()
    Path(out, f"rank{rank}.jsonl").write_text("\n".join(lines) + "\n")


@pytest.fixture(scope="module")
def lines(tmp_path_factory: pytest.TempPathFactory) -> list[list[dict[str, Any]]]:
    """Each rank's lines, in the order it wrote them."""
    out = tmp_path_factory.mktemp("deadline")
    mp.start_processes(_rank, args=(free_port(), str(out)), nprocs=2, start_method="spawn")
    return [[json.loads(line) for line in (out / f"rank{rank}.jsonl").read_text().splitlines()] for rank in range(2)]


def sizes(rank_lines: list[dict[str, Any]], sweep: str) -> list[int]:
    return [line["size"] for line in rank_lines if line.get("sweep") == sweep and "size" in line]


def test_without_a_deadline_every_size_is_measured(lines: list[list[dict[str, Any]]]) -> None:
    for rank_lines in lines:
        assert sizes(rank_lines, "none") == [1024, 2048, 4096], "all_reduce: one placement, in place"


def test_a_size_that_cannot_finish_in_time_is_not_started_on_any_rank(lines: list[list[dict[str, Any]]]) -> None:
    for rank_lines in lines:
        assert sizes(rank_lines, "near") == [1024]
        assert all(line["wrong"] == 0 for line in rank_lines if "wrong" in line)
        assert {"sweep": "near", "done": True} in rank_lines


def test_the_group_stops_together_when_one_rank_is_short_of_time(lines: list[list[dict[str, Any]]]) -> None:
    for rank_lines in lines:
        assert sizes(rank_lines, "one_rank_near") == [1024, 2048], "smaller sizes still grow"
        assert rank_lines[-1] == {"sweep": "one_rank_near", "done": True}


def test_the_stop_is_logged_with_the_projection_and_the_time_left(lines: list[list[dict[str, Any]]]) -> None:
    for rank_lines in lines:
        skipped = [line["skipped"] for line in rank_lines if "skipped" in line]
        assert len(skipped) == 2, skipped
        for line in skipped:
            assert line.startswith(f"all_reduce {GIB} B: skipped, would not finish by the round's deadline: projected ")
            found = re.search(r"projected ([0-9.]+) s, ([0-9.]+) s left$", line)
            assert found, line
            projected, left = float(found[1]), float(found[2])
            assert projected > left and left <= LEFT_S, "the group's least time left, from the rank short of it"
