"""`collbench run` end to end: real rank processes over gloo, launched through submitit."""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

import pytest

from tests.conftest import CommandResult, collbench, read_jsonl

pytestmark = pytest.mark.integration

FAST = ["bench.min_bytes=64", "bench.max_bytes=64K", "bench.step_factor=4", "bench.warmup_iters=1", "bench.iters=3"]
LOG_LINE = re.compile(r"^\d{4}-\d\d-\d\dT[\d:.]+[+-]\d{4} \| \w+ +\| rank=(\d+) local=(\d+) host=(\S+) \| ")


SEED_OPS = ("all_reduce", "all_gather", "reduce_scatter")


@pytest.fixture(scope="module")
def two_ops(tmp_path_factory: pytest.TempPathFactory) -> tuple[CommandResult, Path]:
    """One run of all_gather and all_reduce that the tests which only read it share, and its working directory
    (a local run costs about 5 s of CPU here: two ranks importing torch)."""
    workdir = tmp_path_factory.mktemp("two-ops")
    result = collbench("run", "bench.ops=[all_gather,all_reduce]", "output_dir=runs", *FAST, cwd=workdir)
    assert result.returncode == 0, result.stderr
    return result, workdir


@pytest.mark.parametrize("ranks", [2, 3])
def test_every_op_is_correct_on_every_rank(ranks: int, workdir: Path) -> None:
    """The seed ops in one run each world size (every op at 2, 3 and 4 ranks, alone: tests/collectives)."""
    ops = ",".join(SEED_OPS)
    result = collbench("run", f"ranks={ranks}", f"bench.ops=[{ops}]", "output_dir=runs", *FAST, cwd=workdir)
    assert result.returncode == 0, result.stderr
    run = result.run_dir()
    for op in SEED_OPS:
        assert f"# collbench {op}: {ranks} ranks" in result.stdout
    assert "# Out of bounds values : 0 OK" in result.stdout

    summary = json.loads((run / "summary.json").read_text())
    assert summary["passed"] is True
    for op in SEED_OPS:
        assert len({row["size"] for row in summary["rows"] if row["op"] == op}) >= 3
    for row in summary["rows"]:
        assert row["wrong"] == 0
        assert row["ranks_reporting"] == ranks
        assert row["busbw"] > 0

    for rank in range(ranks):
        records = read_jsonl(run / "results" / f"rank-{rank:05d}.jsonl")
        assert records and all(r["rank"] == rank and r["wrong"] == 0 for r in records)
        assert {r["op"] for r in records} == set(SEED_OPS)
        log_lines = (run / "logs" / f"rank-{rank:05d}.log").read_text().splitlines()
        assert log_lines
        for line in log_lines:
            match = LOG_LINE.match(line)
            if match:  # traceback continuation lines carry no prefix
                assert int(match.group(1)) == rank
    assert len(list((run / "logs").glob("rank-*.log"))) == ranks
    assert (run / "table.txt").read_text() in result.stdout
    for stderr in (run / "submitit").glob("*_log.err"):
        assert "deprecat" not in stderr.read_text().lower(), f"a deprecation warning reached {stderr}"


def test_in_place_and_out_of_place_are_both_reported(two_ops: tuple[CommandResult, Path]) -> None:
    result, _ = two_ops
    rows = json.loads((result.run_dir() / "summary.json").read_text())["rows"]
    placements = {(r["op"], r["in_place"]) for r in rows}
    assert placements == {("all_gather", False), ("all_gather", True), ("all_reduce", True)}
    assert "Note: torch.distributed's all_reduce works in place only" in result.stdout


def test_a_corrupted_rank_is_counted_and_fails_the_run(workdir: Path) -> None:
    result = collbench(
        "run", "bench.ops=[reduce_scatter]", "faults.corrupt_rank=1", "output_dir=runs", *FAST, cwd=workdir
    )
    assert result.returncode == 1
    assert "# Out of bounds values : 0 OK" not in result.stdout
    assert re.search(r"# Out of bounds values : [1-9]\d* FAILED", result.stdout)
    assert "#wrong 1 on rank(s) 1" in result.stderr
    rows = json.loads((result.run_dir() / "summary.json").read_text())["rows"]
    assert all(r["wrong"] == 1 and r["wrong_ranks"] == [1] for r in rows)


def test_a_rank_that_raises_ends_the_run_and_is_named(workdir: Path) -> None:
    started = time.monotonic()
    result = collbench(
        "run", "ranks=3", "faults.fail_rank=2", "timeouts.collective_s=20", "output_dir=runs", *FAST, cwd=workdir
    )
    assert result.returncode == 1
    assert time.monotonic() - started < 60
    assert "FAILED: rank 2 on " in result.stderr
    assert "failed first: InjectedFault: injected failure on rank 2" in result.stderr


def test_runs_never_share_a_directory(two_ops: tuple[CommandResult, Path]) -> None:
    first, workdir = two_ops
    second = collbench("run", "bench.ops=[all_reduce]", "output_dir=runs", *FAST, cwd=workdir)
    assert second.returncode == 0
    assert first.run_dir() != second.run_dir() and first.run_dir().parent == second.run_dir().parent


def test_report_rerenders_the_table_from_the_run_directory_alone(workdir: Path) -> None:
    result = collbench("run", "bench.ops=[all_gather]", "output_dir=runs", *FAST, cwd=workdir)
    run = result.run_dir()
    (run / "table.txt").unlink()
    report = collbench("report", str(run), cwd=workdir)
    assert report.returncode == 0
    opening = report.stdout.splitlines()[0] + "\n"  # the versions line: it opens the streamed rows and the table
    assert report.stdout.startswith(result.stdout[result.stdout.rindex(opening) :])
    assert "# Per-rank and per-host view" in report.stdout


def test_json_document_holds_config_every_rank_environment_and_rows(workdir: Path) -> None:
    result = collbench(
        "run",
        "bench.ops=[all_reduce]",
        "env.NCCL_SOCKET_IFNAME=lo",
        "env.NCCL_IB_SECRET_TOKEN=hunter2",
        "output_dir=runs",
        "--format",
        "json",
        *FAST,
        cwd=workdir,
        env={**os.environ, "CUDA_VISIBLE_DEVICES": "GPU-given,3"},  # submitit's LocalExecutor would set ''
    )
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert (doc["format"], doc["version"], doc["passed"]) == ("collbench-run", 2, True)
    assert doc["config"]["bench"]["ops"] == ["all_reduce"]
    assert [r["status"]["rank"] for r in doc["ranks"]] == [0, 1]
    for rank in doc["ranks"]:
        variables = rank["environment"]["variables"]
        assert variables["NCCL_SOCKET_IFNAME"] == "lo"
        assert variables["NCCL_IB_SECRET_TOKEN"] == "<redacted>"
        assert variables["CUDA_VISIBLE_DEVICES"] == "GPU-given,3", "the inherited GPUs reach the ranks unchanged"
        assert rank["environment"]["torch"].startswith("2.")
    assert {row["op"] for row in doc["rows"]} == {"all_reduce"}
    assert doc["analysis"]["wrong"] == [] and isinstance(doc["analysis"]["slow_ranks"], list)
    run = Path(doc["run_dir"])
    written = [path for path in run.rglob("*") if path.is_file()]
    assert any(path.suffix == ".pkl" for path in written) and any(path.name == "config.yaml" for path in written)
    for path in written:
        assert b"hunter2" not in path.read_bytes(), f"a secret reached {path}"


def test_csv_has_one_line_per_row(workdir: Path) -> None:
    result = collbench("run", "bench.ops=[all_gather]", "output_dir=runs", "--format", "csv", *FAST, cwd=workdir)
    lines = result.stdout.splitlines()
    assert lines[0].startswith("op,size,count,dtype,redop,root,in_place,nranks,time_us,algbw,busbw,wrong")
    assert len(lines) == 1 + 2 * 6  # 64 B to 64 KiB by 4: six sizes, out-of-place and in-place
    assert all(line.startswith("all_gather,") for line in lines[1:])


def test_min_busbw_fails_the_run_over_the_sizes_named(two_ops: tuple[CommandResult, Path], workdir: Path) -> None:
    run = two_ops[0].run_dir()
    failing = collbench("report", str(run), "--min-busbw", "1000", "--busbw-sizes", "1K:", cwd=workdir)
    assert failing.returncode == 1
    assert "all_reduce size 1024 in-place: busbw" in failing.stderr and "below --min-busbw 1000" in failing.stderr
    assert "size 64 " not in failing.stderr  # outside the range named
    passing = collbench("report", str(run), "--min-busbw", "0", cwd=workdir)
    assert passing.returncode == 0
    bad_range = collbench("report", str(run), "--min-busbw", "1", "--busbw-sizes", "1M-2M", cwd=workdir)
    assert bad_range.returncode == 2 and "is not a size range" in bad_range.stderr


def test_time_budget_gives_every_rank_the_same_bounded_count(workdir: Path) -> None:
    result = collbench(
        "run",
        "bench.ops=[all_reduce]",
        "bench.sizes=[1K,256K]",
        "bench.time_budget_ms=30",
        "bench.min_iters=3",
        "bench.max_iters=40",
        "output_dir=runs",
        cwd=workdir,
    )
    assert result.returncode == 0, result.stderr
    run = result.run_dir()
    per_rank = [read_jsonl(run / "results" / f"rank-{rank:05d}.jsonl") for rank in range(2)]
    for mine, theirs in zip(*per_rank, strict=True):
        assert mine["iters"] == theirs["iters"]
        assert 3 <= mine["iters"] <= 40
        assert len(mine["times_us"]) == mine["iters"]
        assert mine["min_us"] <= mine["median_us"] <= mine["p99_us"] <= mine["max_us"]


def test_a_sweep_too_large_for_this_host_is_refused_before_launch(workdir: Path) -> None:
    result = collbench("run", "bench.sizes=[200G]", "output_dir=runs", cwd=workdir)
    assert result.returncode == 2
    assert "needs" in result.stderr and "GB available; lower bench.sizes" in result.stderr, "the key it set"
    assert not (workdir / "runs").exists()
