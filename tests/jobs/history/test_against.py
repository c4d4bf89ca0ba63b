"""The judgement of a run against its history, as a pure function over rows: a drop beyond the larger of
the tolerance (the latency tolerance for a latency-bound size) and 3 robust sigma of the history is a regression;
too little history is said, never guessed."""

from __future__ import annotations

from types import SimpleNamespace

from jobs.history.against import MIN_BASELINE_RUNS, best_figures, judge, latency_bound, lines

KEY = ("all_reduce", 1 << 20)


def _past(*values: float) -> dict[tuple[str, int], list[tuple[str, float]]]:
    return {KEY: [(f"run{i}", value) for i, value in enumerate(values)]}


def test_a_drop_beyond_the_tolerance_is_a_regression_and_names_its_figures_and_runs() -> None:
    judged = judge({KEY: 80.0}, _past(100.0, 101.0, 99.0, 100.0), lambda size: 0.05)
    (row,) = judged.rows
    assert row.verdict == "REGRESSION" and judged.exit_code == 1
    assert (row.median, row.mad, row.runs, row.rank, row.percentile) == (100.0, 0.5, 4, 5, 0.0)
    assert row.against == ("run0", "run1", "run2", "run3") == tuple(judged.against)
    said = row.regression()
    assert "busbw 80 GB/s is 20.0% below the median 100 GB/s of the last 4 healthy runs (MAD 0.5" in said


def test_a_noisy_history_needs_a_drop_beyond_3_sigma() -> None:
    noisy = _past(60.0, 100.0, 140.0, 100.0, 80.0, 120.0)  # median 100, MAD 20: 3 sigma is 3 x 1.4826 x 20 = 89
    assert judge({KEY: 80.0}, noisy, lambda size: 0.05).rows[0].verdict == "ok"
    assert judge({KEY: 39.0}, noisy, lambda size: 0.05).rows[0].verdict == "ok", "61 below: 3 MAD, but only 2 sigma"
    assert judge({KEY: 10.0}, noisy, lambda size: 0.05).rows[0].verdict == "REGRESSION"
    assert judge({KEY: 190.0}, noisy, lambda size: 0.05).rows[0].verdict == "faster"


def test_a_latency_bound_size_gets_the_latency_tolerance() -> None:
    """8 B and 1 MiB both 12% below a steady past: the 8 B call takes the time of a 1 KiB one (latency), so a
    20% latency tolerance lets it pass; 1 MiB is bound by bandwidth and stays a regression."""
    small, large = ("all_reduce", 8), ("all_reduce", 1 << 20)
    figures = {small: 0.008 * 0.88, ("all_reduce", 1024): 1.0, large: 100.0 * 0.88}
    assert latency_bound(figures) == {small, ("all_reduce", 1024)}
    past = {key: [(f"run{i}", value / 0.88 if key != ("all_reduce", 1024) else value) for i in range(5)]
            for key, value in figures.items()}  # fmt: skip
    verdicts = {row.size: row.verdict for row in judge(figures, past, lambda size: 0.05, latency=0.2).rows}
    assert verdicts == {8: "ok", 1024: "ok", 1 << 20: "REGRESSION"}
    without = {row.size: row.verdict for row in judge(figures, past, lambda size: 0.05).rows}
    assert without[8] == "REGRESSION", "no latency tolerance: the 5% one"


def test_too_little_history_is_said_and_does_not_fail() -> None:
    judged = judge({KEY: 1.0, ("all_reduce", 8): 1.0}, _past(*[100.0] * (MIN_BASELINE_RUNS - 1)), lambda size: 0.05)
    assert judged.exit_code == 0 and [r.verdict for r in judged.rows] == ["too little history"] * 2
    assert judged.against == [] and judged.rows[0].median is None
    assert "too little history to judge any row: at most 2 healthy run(s)" in judged.thin_line()
    assert len(lines(judged)) == 3


def test_only_the_last_k_runs_count_and_the_tolerance_is_per_size() -> None:
    old_then_new = _past(*[10.0] * 5, *[100.0] * 20)
    row = judge({KEY: 97.0}, old_then_new, lambda size: 0.05).rows[0]
    assert row.median == 100.0 and row.runs == 20 and row.verdict == "ok" and row.against[0] == "run5"
    assert judge({KEY: 97.0}, old_then_new, lambda size: 0.01).rows[0].verdict == "REGRESSION"


def test_the_run_figure_is_its_best_over_placements_leaving_isolate_groups_out() -> None:
    rows = [
        SimpleNamespace(op="all_reduce", requested_size=8, busbw=1.0, group=""),
        SimpleNamespace(op="all_reduce", requested_size=8, busbw=2.0, group=""),
        SimpleNamespace(op="all_reduce", requested_size=8, busbw=9.0, group="n[1-2]"),
    ]
    assert best_figures(rows) == {("all_reduce", 8): 2.0}


def test_a_regression_of_tiny_figures_reads_as_two_different_numbers() -> None:
    """busbw 0.000123 GB/s against a median of 0.000134: 8.2% below, and never '0.000 vs 0.000'."""
    judged = judge({KEY: 0.000123}, _past(0.000134, 0.000135, 0.000133, 0.000134), lambda size: 0.05)
    (row,) = judged.rows
    assert row.verdict == "REGRESSION"
    cells = lines(judged)[1].split()
    assert (cells[2], cells[3], cells[-2]) == ("0.000123", "0.000134", "8.2%")
    assert "busbw 0.000123 GB/s is 8.2% below the median 0.000134 GB/s" in row.regression()


def test_a_regression_of_figures_alike_to_three_decimals_shows_where_they_differ() -> None:
    """With no tolerance and a steady past any drop is a regression: the table and the line show it."""
    judged = judge({KEY: 100.0001}, _past(100.0004, 100.0004, 100.0004), lambda size: 0.0)
    (row,) = judged.rows
    assert row.verdict == "REGRESSION"
    cells = lines(judged)[1].split()
    assert (cells[2], cells[3]) == ("100.0001", "100.0004"), "not 100.000 and 100.000"
    assert cells[-2] == "0.0003%", "the drop is not 0.0%"
    assert "busbw 100.0001 GB/s is 0.0003% below the median 100.0004 GB/s" in row.regression()
