"""The projection behind a sweep's deadline, without processes: a step's time from the last measurement,
scaled by the size, times the calls one measurement makes; and when no projection (no collective) is due."""

from __future__ import annotations

import pytest
import torch

from collectives.results import RankResult
from collectives.settings import BenchSettings
from collectives.sweep import Deadline, RankContext
from collectives.timing import projected_seconds

CPU = RankContext(rank=0, nranks=2, local_rank=0, host="h", device=torch.device("cpu"))
"""No process group: a call that reached the all_reduce would raise."""


def test_the_projection_scales_the_last_call_by_the_sizes_and_the_calls() -> None:
    assert projected_seconds(0.01, 1 << 20, 256 << 20, 4) == pytest.approx(0.01 * 256 * 4)
    assert projected_seconds(0.5, 1024, 1024, 1) == pytest.approx(0.5)
    assert projected_seconds(0.5, 0, 8, 1) == pytest.approx(4.0), "nothing measured divides by one byte, not zero"


@pytest.mark.parametrize(
    ("settings", "calls"),
    [
        (BenchSettings(warmup_iters=5, iters=20), 5 + 20 + 1),
        (BenchSettings(warmup_iters=1, time_budget_ms=1000, min_iters=2), 1 + 2 + 1),
        (BenchSettings(warmup_iters=0, iters=3, check=False), 1 + 3),
    ],
)
def test_a_measurement_costs_its_warm_up_fewest_iterations_and_check(settings: BenchSettings, calls: int) -> None:
    assert Deadline.of(1.0, settings).calls == calls, "warm_up runs at least one call; a time budget at least min_iters"


def result(size: int, time_us: float) -> RankResult:
    return RankResult(op="all_reduce", size=size, count=size // 4, dtype="float32", redop="sum", root=-1,
                      in_place=True, rank=0, local_rank=0, host="h", nranks=2, iters=1, time_us=time_us,
                      algbw=0.0, busbw=0.0, wrong=0)  # fmt: skip


def test_no_collective_is_due_before_the_first_step_nor_at_a_size_already_reached_nor_without_a_deadline() -> None:
    late = Deadline.of(1.0, BenchSettings())  # long past
    assert late.too_late(1 << 30, 1, CPU) == "", "the first step always runs"
    late.measured(result(1 << 20, 1e6))
    late.measured(result(1024, 1e6))
    assert (late.largest, late.last_bytes, late.last_call_s) == (1 << 20, 1024, 1.0)
    assert late.too_late(1 << 20, 2, CPU) == "", "no larger than a size measured: another root or op"
    never = Deadline.of(0.0, BenchSettings())
    never.measured(result(1024, 1e6))
    assert never.too_late(1 << 30, 1, CPU) == ""
