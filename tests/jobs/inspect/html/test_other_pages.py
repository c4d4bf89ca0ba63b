"""The pages of a sweep, a comparison and a history trend, and the heatmap and log list at the scales the
issue names: a 1,024-node matrix as one raster image, 16,384 ranks' logs under their hosts."""

from __future__ import annotations

import time
from pathlib import Path

from jobs.config.model import load_config
from jobs.inspect.compare import Tolerance, compare_rows
from jobs.inspect.html.compare_page import render_compare_page
from jobs.inspect.html.heatmap import PairMatrix, heatmap_svg
from jobs.inspect.html.log_links import FIRST_SHOWN, log_links
from jobs.inspect.html.plain import TrendLine, TrendPoint
from jobs.inspect.html.sweep_page import render_sweep_page
from jobs.inspect.html.trend_page import render_trend_page
from jobs.inspect.report import RunOutcome, assess
from jobs.inspect.scale import RunAssessment, scale_report
from jobs.rundir.layout import RunDir
from jobs.rundir.records.rank import RankState, RankStatus
from tests.jobs.inspect.html.pages import Parsed, rows_of
from tests.jobs.rundir.synthetic import SIZES, scale_sweep, sweep_run


def test_a_sweep_page_has_a_curve_per_node_count_and_links_each_run(tmp_path: Path) -> None:
    sweep = scale_sweep(tmp_path, counts=(1, 2))

    def judged(run: RunDir) -> RunAssessment:
        outcome = assess(run)
        return RunAssessment(outcome.rows, outcome.problems, "local", True)

    page = Parsed(render_sweep_page(scale_report(sweep, judged), sweep.read(), sweep.path, 0, tmp_path))
    assert "COMPLETED" in page.by_id("verdict").text and "nodes=[1,2]" in page.by_id("command").text
    [table] = page.with_class("scaling")
    assert len(rows_of(table)) == int(table.attrs["data-rows"]) == len(SIZES)
    assert "1 node(s)" in page.by_id("curves").text and "2 node(s)" in page.by_id("curves").text
    links = [e.attrs["href"] for e in page.tags("a") if e.attrs.get("href", "").endswith("/")]
    assert [(tmp_path / href).is_dir() for href in links] == [True, True]


def test_a_compare_page_marks_each_regression_row(tmp_path: Path) -> None:
    base, cand = sweep_run(tmp_path), sweep_run(tmp_path, slower=2.0)
    result = compare_rows(assess(base).rows, assess(cand).rows, Tolerance())
    page = Parsed(
        render_compare_page(result, (base.run_id, cand.run_id), "5%", result.exit_code, "collbench compare A B")
    )
    verdict = page.by_id("verdict")
    assert verdict.attrs["data-exit"] == "1" and "REGRESSION in 2 of 2 row(s)" in verdict.text
    [table] = page.with_class("compare")
    assert [row.attrs.get("class") for row in rows_of(table)] == ["bad", "bad"]
    assert f"candidate {cand.run_id}" in page.by_id("curves").text


def test_a_trend_page_draws_each_set_with_its_band_and_flags_a_run_below_it() -> None:
    now = time.time()
    points = [TrendPoint(f"r{i}", now - 3600 * (9 - i), 10.0 + 0.1 * (i % 2), "passed") for i in range(9)]
    points.append(TrendPoint("r9", now, 2.0, "passed"))
    line = TrendLine("cluster c1, config abc, 2 node(s), 16 rank(s)", points, 10.05, 0.05, 9)
    page = Parsed(render_trend_page([line], "all_reduce 1073741824 B", "busbw", "collbench history trend", 3))
    assert (
        "10 run(s) in 1 comparable set(s)" in page.by_id("verdict").text
        and "r9 below the band" in page.by_id("verdict").text
    )
    [table] = page.with_class("trend")
    assert len(rows_of(table)) == 10 and rows_of(table)[-1].attrs.get("class") == "bad"
    assert [row.text.count("below the band") for row in rows_of(table)] == [0] * 9 + [1]
    assert page.tags("svg")


def test_a_time_trend_flags_the_slower_run_above_its_band_and_not_a_faster_one() -> None:
    """time_us: lower is better, so the bad side of the band is above it."""
    now = time.time()
    points = [TrendPoint(f"r{i}", now - 3600 * (9 - i), 100.0 + (i % 2), "passed") for i in range(8)]
    points += [TrendPoint("fast", now - 60, 20.0, "passed"), TrendPoint("slow", now, 400.0, "passed")]
    line = TrendLine("cluster c1", points, 100.5, 0.5, 8, higher_is_better=False)
    page = Parsed(render_trend_page([line], "all_reduce 1024 B", "time_us", "collbench history trend", 3))
    assert "slow above the band (time_us 400 > median + 3 MAD)" in page.by_id("verdict").text
    assert "fast" not in page.by_id("verdict").text
    [table] = page.with_class("trend")
    assert [row.attrs.get("class") for row in rows_of(table)][-2:] == [None, "bad"]


def test_a_1024_node_matrix_is_one_small_image_that_still_shows_the_named_node() -> None:
    n = 1024
    cells: dict[tuple[int, ...], float] = {
        (a, b): 1.0 + 0.01 * ((a * 7 + b) % 5) for a in range(n) for b in range(a + 1, n)
    }
    cells.update({(min(a, 513), max(a, 513)): 0.4 for a in range(n) if a != 513})
    started = time.perf_counter()
    svg = heatmap_svg(PairMatrix([f"n{i}" for i in range(n)], cells, 1.0, {}, {513: "n513"}), "pairs")
    took = time.perf_counter() - started
    assert svg is not None and took < 10
    assert len(svg) < 1_000_000 and svg.count("<image") <= 2 and svg.count("<rect") < 10
    assert "n513" in svg and "n512<" not in svg  # beyond 64 hosts only the named are labelled


def _outcome(ranks: int, failed: set[int]) -> RunOutcome:
    cfg = load_config(None, [f"ranks={ranks}"])
    statuses = {
        rank: RankStatus(rank=rank, host=f"n{rank // 8:04d}", pid=rank, device="cuda:0",
                         state=RankState.FAILED if rank in failed else RankState.OK, started=0.0, updated=0.0)
        for rank in range(ranks)
    }  # fmt: skip
    return RunOutcome(config=cfg, statuses=statuses, rows=[])


def test_16384_ranks_are_listed_under_their_hosts_with_the_named_first(tmp_path: Path) -> None:
    run = RunDir(tmp_path / "run")
    outcome = _outcome(16384, set())
    logs = log_links(run, outcome, tmp_path, named_hosts=["n0100"])
    assert logs.ranks == 16384 and len(logs.by_host) == 2048
    assert [link.rank for link in logs.first] == list(range(800, 808))
    assert logs.by_host[1].links[0].href == "run/logs/rank-00008.log"
    many = log_links(run, outcome, tmp_path, named_hosts=[f"n{h:04d}" for h in range(100)])
    assert len(many.first) == FIRST_SHOWN and many.more_first == 800 - FIRST_SHOWN
