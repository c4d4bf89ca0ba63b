"""`collbench compare`: tolerances, matching, and verdicts on real local runs and edited copies of them (the
runs' noise: test_compare_noise.py)."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from collectives.results import SummaryRow
from jobs.config.schema import ConfigError
from jobs.inspect.compare import Tolerance, compare_rows
from tests.conftest import collbench, read_jsonl
from tests.jobs.rows import slow_down, summary_row

FAST = ["bench.min_bytes=256", "bench.max_bytes=16K", "bench.step_factor=4", "bench.warmup_iters=1", "bench.iters=3"]


def timed(op: str, size: int, busbw: float, nranks: int) -> SummaryRow:
    """A row whose time grows with its size as a link's does (10 us of latency, then 1 GB/s): only the
    smallest sizes are latency-bound."""
    return replace(summary_row(op, size, busbw, nranks), time_us=10.0 + size / 1e3)


def test_tolerance_per_band_and_default() -> None:
    tolerance = Tolerance.parse("5%", ["1M:10%", "64K:0.2"])
    assert tolerance.for_size(64 << 10) == 0.2
    assert tolerance.for_size((64 << 10) + 1) == 0.1
    assert tolerance.for_size(1 << 20) == 0.1
    assert tolerance.for_size(1 << 30) == 0.05
    assert tolerance.describe() == "5% (sizes <= 64K: 20%, sizes <= 1M: 10%, latency-bound sizes: 20%)"
    assert tolerance.for_row(1 << 30, bound_by_latency=True) == 0.2 and tolerance.for_row(1 << 30, False) == 0.05
    assert Tolerance.parse("5%", [], "0").describe() == "5%", "--latency-tolerance 0 turns the latency band off"


@pytest.mark.parametrize(
    ("default", "bands", "quoted"),
    [("five", [], "'five'"), ("100%", [], "'100%'"), ("5%", ["64K"], "'64K'"), ("5%", ["64Q:5%"], "64Q")],
)
def test_bad_tolerances_name_the_value(default: str, bands: list[str], quoted: str) -> None:
    with pytest.raises(ConfigError) as caught:
        Tolerance.parse(default, bands)
    assert quoted in str(caught.value)
    with pytest.raises(ConfigError, match="--latency-tolerance: 'lots' is not a tolerance"):
        Tolerance.parse("5%", [], "lots")


def test_a_drop_beyond_the_tolerance_is_the_only_regression() -> None:
    base = [timed("all_reduce", size, 10.0, 8) for size in (1024, 1 << 20, 1 << 26)]
    cand = [timed("all_reduce", 1024, 8.5, 8), timed("all_reduce", 1 << 20, 9.6, 8)]
    cand.append(timed("all_reduce", 1 << 26, 12.0, 8))
    result = compare_rows(base, cand, Tolerance.parse("5%", ["64K:20%"]))
    assert [row.verdict for row in result.rows] == ["ok", "ok", "faster"]  # -15% within 20%, -4% within 5%

    cand[1] = timed("all_reduce", 1 << 20, 9.4, 8)
    result = compare_rows(base, cand, Tolerance.parse("5%", ["64K:20%"]))
    assert [row.verdict for row in result.rows] == ["ok", "REGRESSION", "faster"]
    assert result.regressions == [
        "all_reduce 1048576 B out-of-place: busbw 9.4 GB/s is 6.0% below the baseline's 10 (tolerance 5%)"
    ]
    assert result.exit_code == 1


def test_only_matching_rows_are_compared_and_every_mismatch_is_stated() -> None:
    base = [summary_row("all_reduce", 1024, 1.0, 4), summary_row("broadcast", 1024, 1.0, 4)]
    cand = [summary_row("all_reduce", 1024, 1.0, 4), summary_row("all_reduce", 4096, 1.0, 4)]
    cand.append(summary_row("all_gather", 1024, 1.0, 4))
    result = compare_rows(base, cand, Tolerance())
    assert len(result.rows) == 1
    assert result.notes == [
        "ops only in the baseline, not compared: broadcast",
        "ops only in the candidate, not compared: all_gather",
        "all_reduce: 1 size/placement/root row(s) present on one side only",
    ]
    assert result.exit_code == 0

    other_ranks = [summary_row("all_reduce", 1024, 1.0, 8)]
    result = compare_rows(base, other_ranks, Tolerance())
    assert not result.rows
    assert result.notes == ["rank counts differ ([4] vs [8]): busbw is not comparable, nothing compared"]
    assert result.exit_code == 1, "a comparison that compared nothing must not pass a CI gate"

    result = compare_rows(base, [], Tolerance(), "4n")
    assert result.notes == ["4n: no results in the candidate (did its job run?), nothing compared"]
    assert result.exit_code == 1


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One real local run of two ops; each test edits its own copies."""
    workdir = tmp_path_factory.mktemp("baseline")
    result = collbench("run", "bench.ops=[all_reduce,all_gather]", "output_dir=runs", *FAST, cwd=workdir)
    assert result.returncode == 0, result.stderr
    return result.run_dir()


def copy_run(run: Path, where: Path, name: str) -> Path:
    target = where / name
    shutil.copytree(run, target)
    for derived in ("summary.json", "table.txt"):
        (target / derived).unlink(missing_ok=True)
    return target


@pytest.mark.integration
def test_an_identical_run_passes(baseline: Path, tmp_path: Path) -> None:
    same = copy_run(baseline, tmp_path, "same")
    result = collbench("compare", str(baseline), str(same), "--json", "verdict.json", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    rows = [line.split() for line in result.stdout.splitlines() if not line.startswith("#")]
    summary = json.loads((baseline / "summary.json").read_text())["rows"]
    assert len(rows) == len(summary) > 0
    assert all(cells[-1] == "ok" and cells[-3] in ("5%", "20%") and cells[-4] == "1.000" for cells in rows)
    assert f"# {len(summary)} row(s) compared, 0 regression(s)" in result.stdout
    verdict = json.loads((tmp_path / "verdict.json").read_text())
    assert (verdict["compared"], verdict["regressions"]) == (len(summary), [])


@pytest.mark.integration
def test_an_injected_regression_is_flagged_with_exit_1(baseline: Path, tmp_path: Path) -> None:
    """On a quiet run (every call the same time: no noise to widen the band) a drop beyond the tolerance is a
    regression; a per-band tolerance is what lets it pass."""
    quiet = copy_run(baseline, tmp_path, "quiet")
    steady(quiet)
    slower = copy_run(quiet, tmp_path, "slower")
    slow_down(slower, "all_gather", 4096, 1.5)  # busbw falls to 2/3
    result = collbench("compare", str(quiet), str(slower), "--tolerance", "10%", cwd=tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    flagged = [line for line in result.stdout.splitlines() if line.endswith("REGRESSION")]
    assert [line.split()[:3] for line in flagged] == [
        ["all_gather", "4096", "out-of-place"],
        ["all_gather", "4096", "in-place"],
    ]
    assert all(line.split()[-4] == "0.667" and line.split()[-2] == "0.0%" for line in flagged)
    assert "2 regression(s)" in result.stdout
    assert "collbench: REGRESSION: all_gather 4096 B out-of-place: busbw" in result.stderr
    assert "is 33.3% below the baseline's" in result.stderr

    loose = collbench("compare", str(quiet), str(slower), "--band-tolerance", "4K:40%", cwd=tmp_path)
    assert loose.returncode == 0, "a per-band tolerance of 40% up to 4 KiB lets a 33% drop at 4 KiB pass"


def steady(run: Path) -> None:
    """Every rank's every call took its mean time: a run with no noise inside it."""
    for path in (run / "results").glob("rank-*.jsonl"):
        records = read_jsonl(path)
        for record in records:
            record["times_us"] = [record["time_us"]] * len(record["times_us"])
        path.write_text("".join(json.dumps(r) + "\n" for r in records))


@pytest.mark.integration
def test_different_rank_counts_are_stated_not_compared(baseline: Path, tmp_path: Path) -> None:
    other = collbench("run", "ranks=3", "bench.ops=[all_reduce]", "output_dir=runs", *FAST, cwd=tmp_path)
    assert other.returncode == 0, other.stderr
    result = collbench("compare", str(baseline), str(other.run_dir()), cwd=tmp_path)
    assert result.returncode == 1
    said = result.stdout.splitlines()
    assert said[1] == (
        "# note: not comparable: world size 2 vs 3: busbw of one is not a baseline for the other, nothing compared"
    ), "said first, before the table and its count"
    assert said[-1] == "# 0 row(s) compared, 0 regression(s), 0 incomplete"
    assert "collbench: FAILED: nothing comparable between the two" in result.stderr


@pytest.mark.integration
def test_runs_on_another_gpu_model_are_said_not_comparable_first(baseline: Path, tmp_path: Path) -> None:
    a, b = copy_run(baseline, tmp_path, "a100"), copy_run(baseline, tmp_path, "h100")
    for run, model in ((a, "NVIDIA A100-SXM4-80GB"), (b, "NVIDIA H100 80GB HBM3")):
        env = run / "env" / "rank-00000.json"
        env.write_text(json.dumps({**json.loads(env.read_text()), "gpu": {"index": 0, "name": model}}))
    result = collbench("compare", str(a), str(b), cwd=tmp_path)
    assert result.returncode == 1
    assert result.stdout.splitlines()[1] == (
        "# note: not comparable: GPU NVIDIA A100-SXM4-80GB vs NVIDIA H100 80GB HBM3: busbw of one is not a "
        "baseline for the other, nothing compared"
    )
    assert collbench("compare", str(a), str(baseline), cwd=tmp_path).returncode == 0, (
        "a GPU one side lacks is no difference"
    )


@pytest.mark.integration
def test_an_unknown_result_format_is_a_clear_error(baseline: Path, tmp_path: Path) -> None:
    future = copy_run(baseline, tmp_path, "future")
    path = future / "results" / "rank-00001.jsonl"
    records = read_jsonl(path)
    records[0]["version"] = 99
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    result = collbench("compare", str(baseline), str(future), cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"collbench: error: {path}:1: result format version 99 is not one this collbench reads (1)"
    ]
    assert "Traceback" not in result.stderr


def test_a_run_and_a_sweep_are_not_compared(tmp_path: Path) -> None:
    (tmp_path / "sweep").mkdir()
    (tmp_path / "sweep" / "sweep.json").write_text(json.dumps({"entries": []}))
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "run.json").write_text("{}")
    result = collbench("compare", str(tmp_path / "run"), str(tmp_path / "sweep"), cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip() == "collbench: error: compare: give two runs or two sweeps, not one of each"


@pytest.mark.integration
def test_a_results_line_cut_mid_write_is_named_and_its_row_is_incomplete_not_ok(baseline: Path, tmp_path: Path) -> None:
    damaged = copy_run(baseline, tmp_path, "damaged")
    results = damaged / "results" / "rank-00001.jsonl"
    lines = results.read_text().splitlines(keepends=True)
    cut = json.loads(lines[-1])
    results.write_text("".join(lines[:-1]) + lines[-1][: len(lines[-1]) // 2])  # a writer killed mid-line

    report = collbench("report", str(damaged), cwd=tmp_path)
    assert report.returncode == 1
    assert f"FAILED: rank 1: results line damaged, left out: {results}:{len(lines)}: cut off mid-line" in report.stderr
    placement = "in-place" if cut["in_place"] else "out-of-place"
    row = f"{cut['op']} size {cut['size']} {placement}: only 1/2 ranks reported (missing: rank(s) 1)"
    assert row in report.stderr, report.stderr
    assert f"# Note: INCOMPLETE rows, their figures are over the ranks that reported: {cut['size']} B" in report.stdout

    result = collbench("compare", str(baseline), str(damaged), "--json", "verdict.json", cwd=tmp_path)
    assert result.returncode == 1, result.stdout
    verdict = json.loads((tmp_path / "verdict.json").read_text())
    flagged = [(r["op"], r["size"], r["in_place"]) for r in verdict["rows"] if r["verdict"] == "INCOMPLETE"]
    assert flagged == [(cut["op"], cut["size"], cut["in_place"])]
    assert verdict["incomplete"] == [
        f"{cut['op']} {cut['size']} B {placement}: not every rank reported (candidate 1/2 ranks), so it cannot be "
        "called ok"
    ]
    assert all(r["verdict"] == "ok" for r in verdict["rows"] if r["verdict"] != "INCOMPLETE")


def test_a_regression_of_tiny_or_close_figures_reads_as_two_different_numbers() -> None:
    """Every table that sets figures side by side prints digits enough that a drop named a regression shows."""
    base = [timed("all_reduce", 1024, 0.000134, 8), timed("all_reduce", 1 << 20, 100.0004, 8)]
    cand = [timed("all_reduce", 1024, 0.000123, 8), timed("all_reduce", 1 << 20, 100.0001, 8)]
    result = compare_rows(base, cand, Tolerance(default=0.0))
    assert [row.verdict for row in result.rows] == ["REGRESSION", "REGRESSION"]
    tiny, close = (line.split() for line in result.lines())
    assert tiny[4] != tiny[5] and (tiny[4], tiny[5]) == ("0.000134", "0.000123")
    assert (close[4], close[5], close[6]) == ("100.000400", "100.000100", "0.999997"), "not 100.00 and 1.000"
    assert result.regressions[0] == (
        "all_reduce 1024 B out-of-place: busbw 0.000123 GB/s is 8.2% below the baseline's 0.000134 (tolerance 0%, "
        "latency-bound)"
    )
    assert "busbw 100.0001 GB/s is 0.0003% below the baseline's 100.0004" in result.regressions[1]
