"""`collbench compare` against the runs' own noise (issue 40): a drop is a regression only beyond the tolerance,
the rows' own standard errors and the comparison's scatter; latency-bound rows get their looser band; a row
whose run timed no call on its own gets the default band, and says so; runs that measure different things
are said so."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace

from collectives.results import RankResult, RowKey, SummaryRow
from jobs.inspect.compare import Tolerance, compare_rows
from jobs.inspect.compare_noise import (
    NO_SPREAD,
    NOISE_Z,
    RowSpread,
    Step,
    _Ranks,
    latency_bound,
    row_noise,
    scatter_noise,
)
from jobs.inspect.compare_runs import RunKind, differences
from tests.jobs.rows import summary_row

SIZES = [1 << shift for shift in range(10, 28, 2)]
"""1 KiB to 64 MiB, nine sizes: eight steps in each series."""


def row(size: int, busbw: float, time_us: float | None = None, in_place: bool = False) -> SummaryRow:
    """A row whose time grows as a link's does: 10 us of latency, then 1 GB/s."""
    made = summary_row("all_reduce", size, busbw, 8, in_place=in_place)
    return replace(made, time_us=time_us or 10.0 + size / 1e3)


def both_placements(busbw: Callable[[int, int], float]) -> list[SummaryRow]:
    """Every size out of place and in place (16 steps between neighbours: enough to measure a scatter);
    `busbw(i, size)` for the i-th size."""
    return [row(size, busbw(i, size), in_place=placed) for placed in (False, True) for i, size in enumerate(SIZES)]


def spreads(rows: list[SummaryRow], error: float | None) -> dict[RowKey, RowSpread]:
    return {r.key: RowSpread(relative_error=error, typical_us=r.time_us) for r in rows}


def test_a_drop_the_rows_own_errors_explain_is_no_regression_and_one_beyond_them_is() -> None:
    base = [row(size, 10.0) for size in SIZES]
    cand = [row(size, 10.0 if size != 1 << 24 else 8.5) for size in SIZES]  # one row 15% below
    quiet = compare_rows(base, cand, Tolerance(), spreads=(spreads(base, 0.005), spreads(cand, 0.005)))
    assert [r.verdict for r in quiet.rows if r.size == 1 << 24] == ["REGRESSION"]
    assert quiet.rows[0].noise == row_noise(RowSpread(0.005, 1.0), RowSpread(0.005, 1.0))
    noisy = compare_rows(base, cand, Tolerance(), spreads=(spreads(base, 0.05), spreads(cand, 0.05)))
    (judged,) = [r for r in noisy.rows if r.size == 1 << 24]
    assert judged.verdict == "ok" and judged.noise == 1 - math.exp(-NOISE_Z * math.hypot(0.05, 0.05))
    assert noisy.exit_code == 0
    assert noisy.notes == [
        "the runs' noise is wider than the tolerance on 9 of 9 row(s), up to 19%: a drop within it is not called "
        "a regression (more iterations or a quieter machine narrow it)"
    ]


def test_a_rank_error_is_its_calls_standard_error_and_ranks_of_one_row_are_not_averaged_down() -> None:
    ranks = _Ranks()
    for rank, times in enumerate(([90.0, 110.0] * 8, [80.0, 120.0] * 8)):
        ranks.add(
            RankResult(op="all_reduce", size=8, count=2, dtype="float32", redop="sum", root=-1, in_place=True,
                       rank=rank, local_rank=rank, host="vm", nranks=2, iters=16, time_us=100.0, algbw=0.0,
                       busbw=0.0, wrong=0, times_us=times, median_us=100.0)
        )  # fmt: skip
    expected = [math.sqrt(spread**2 * 16 / 15) / 4 / 100 for spread in (10.0, 20.0)]
    assert ranks.spread() == RowSpread(relative_error=sum(expected) / 2, typical_us=100.0)


def test_latency_bound_rows_get_the_latency_band_and_others_keep_the_tolerance() -> None:
    base = [row(size, 10.0) for size in SIZES]
    bound = latency_bound(base, {})
    assert {r.size for r in base if r.key in bound} == {1 << 10, 1 << 12}, "10 + 1.0 and 10 + 4.1 us, under 2 x 11"
    cand = [row(size, 8.8) for size in SIZES]  # every row 12% below
    result = compare_rows(base, cand, Tolerance.parse("5%", []))
    assert [(r.size, r.verdict) for r in result.rows if r.verdict == "ok"] == [(1 << 10, "ok"), (1 << 12, "ok")]
    assert all(r.tolerance == 0.2 for r in result.rows if r.latency_bound)
    strict = compare_rows(base, cand, Tolerance.parse("5%", [], "0%"))
    assert all(r.verdict == "REGRESSION" for r in strict.rows), "--latency-tolerance 0: every row judged at 5%"


def test_the_comparisons_scatter_widens_the_band_where_neighbouring_sizes_disagree() -> None:
    base = both_placements(lambda i, size: 10.0)
    cand = both_placements(lambda i, size: 12.5 if i % 2 else 8.0)  # the runs drifted apart by +-25% size by size
    result = compare_rows(base, cand, Tolerance.parse("5%", [], "0"), spreads=(spreads(base, 0.0), spreads(cand, 0.0)))
    assert result.regressions == [], "each row's own calls were steady, but the comparison scatters by 45% a step"
    assert all(r.noise is not None and r.noise > 0.2 for r in result.rows)


def test_a_regression_over_a_range_of_sizes_is_one_step_not_scatter_and_is_called() -> None:
    base = both_placements(lambda i, size: 10.0)
    cand = both_placements(lambda i, size: 10.0 if size < 1 << 20 else 7.0)  # 30% below from 1 MiB up
    result = compare_rows(base, cand, Tolerance.parse("5%", [], "0"), spreads=(spreads(base, 0.0), spreads(cand, 0.0)))
    assert [r.size for r in result.rows if r.verdict == "REGRESSION"] == [s for s in SIZES if s >= 1 << 20] * 2


def test_a_short_comparison_measures_no_scatter_and_its_own_regression_stays_one() -> None:
    """Nine rows, one 40% below: its two steps would be a quarter of the eight, too few to tell scatter from it."""
    base = [row(size, 10.0) for size in SIZES]
    cand = [row(size, 6.0 if size == 1 << 20 else 10.0) for size in SIZES]
    result = compare_rows(base, cand, Tolerance.parse("5%", [], "0"), spreads=(spreads(base, 0.0), spreads(cand, 0.0)))
    assert [r.size for r in result.rows if r.verdict == "REGRESSION"] == [1 << 20]
    assert all(r.noise == 0.0 for r in result.rows)


def test_a_regime_with_too_few_steps_takes_the_scatter_of_every_step() -> None:
    jitter = [1.25 if i % 2 else 0.8 for i in range(len(SIZES))]
    steps = [
        Step(("all_reduce", placed, -1), size, size < 1 << 14, f)
        for placed in (False, True)
        for size, f in zip(SIZES, jitter, strict=True)
    ]
    noise = scatter_noise(steps)
    assert noise[True] == noise[False] > 0.2, "latency-bound: 1K, 4K: a step a placement, too few of their own"
    assert scatter_noise(steps[: len(SIZES)]) == {}, "eight steps in all: no scatter measured"


def test_a_row_without_per_iteration_times_gets_the_default_band_and_says_so() -> None:
    base = [row(size, 10.0) for size in SIZES]
    cand = [row(size, 10.0 if size != 1 << 24 else 9.6) for size in SIZES]  # 4% below: within 5%
    loop_timer = spreads(cand, None)
    result = compare_rows(base, cand, Tolerance.parse("1%", [], "0"), spreads=(spreads(base, 0.0), loop_timer))
    assert all(r.noise == NO_SPREAD for r in result.rows) and result.regressions == []
    assert result.notes[0] == (
        "9 row(s) with no per-iteration times on a side (a loop timer, or an import): their noise is taken as 5%; "
        "bench.per_iteration=true measures it"
    )


def test_runs_of_another_backend_device_gpu_or_size_differ_and_an_unrecorded_gpu_does_not() -> None:
    cpu = RunKind(backend="gloo", device="cpu", gpu="", world_size=2)
    h100 = RunKind(backend="nccl", device="cuda", gpu="NVIDIA H100 80GB HBM3", world_size=8)
    assert differences(cpu, h100) == ["backend gloo vs nccl", "device cpu vs cuda", "world size 2 vs 8"]
    assert differences(h100, replace(h100, gpu="NVIDIA A100-SXM4-80GB")) == [
        "GPU NVIDIA H100 80GB HBM3 vs NVIDIA A100-SXM4-80GB"
    ]
    assert differences(h100, replace(h100, gpu="")) == [], "an import that did not say its GPU still compares"
