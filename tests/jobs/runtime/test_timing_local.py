"""The timing settings end to end on a local gloo run: the set-up time, the rank's thread count, and
the loop timer with its per-iteration pass, as the results, the status and the table show them."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.conftest import collbench, read_jsonl

pytestmark = pytest.mark.integration

FAST = ["bench.min_bytes=1K", "bench.max_bytes=16K", "bench.step_factor=4", "bench.warmup_iters=1", "bench.iters=5"]


def without_thread_settings() -> dict[str, str]:
    return {name: value for name, value in os.environ.items() if name != "OMP_NUM_THREADS"}


def test_defaults_on_the_cpu_time_each_call_record_the_set_up_and_use_one_thread_a_rank(workdir: Path) -> None:
    result = collbench(
        "run", "bench.ops=[all_reduce]", "output_dir=runs", *FAST, cwd=workdir, env=without_thread_settings()
    )
    assert result.returncode == 0, result.stderr
    run = result.run_dir()
    for rank in range(2):
        status = json.loads((run / "status" / f"rank-{rank:05d}.json").read_text())
        setup = status["setup"]
        assert setup["started"] <= setup["done"] and setup["seconds"] >= 0
        assert setup["connect_s"] > 0  # the first collective after the set-up, timed on gloo too
        env = json.loads((run / "env" / f"rank-{rank:05d}.json").read_text())
        assert env["variables"]["OMP_NUM_THREADS"] == "1" and env["torch_threads"] == 1
        records = read_jsonl(run / "results" / f"rank-{rank:05d}.jsonl")
        assert {r["timer"] for r in records} == {"host"}
        assert all(len(r["times_us"]) == 5 and r["enqueue_us"] == r["time_us"] for r in records)
    assert "# set-up (gloo process group): slowest rank " in result.stdout
    summary = json.loads((run / "summary.json").read_text())
    assert summary["setup"]["ranks"] == 2 and summary["setup"]["slowest_host"]
    assert summary["setup"]["connect_ranks"] == 2 and "; first collective slowest rank " in result.stdout
    assert "graph: 0" in result.stdout


def test_the_loop_timer_with_its_per_iteration_pass_and_the_nccl_tests_options(workdir: Path) -> None:
    result = collbench(
        "run", "bench.ops=[all_reduce]", "output_dir=runs", *FAST, "bench.timer=loop", "bench.per_iteration=true",
        "bench.average=max", "bench.report_cputime=true", "env.OMP_NUM_THREADS=2", cwd=workdir,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    run = result.run_dir()
    for rank in range(2):
        records = read_jsonl(run / "results" / f"rank-{rank:05d}.jsonl")
        assert {r["timer"] for r in records} == {"host_loop"}
        assert all(len(r["times_us"]) == 5 and 0 < r["enqueue_us"] <= r["time_us"] for r in records)
        env = json.loads((run / "env" / f"rank-{rank:05d}.json").read_text())
        assert env["variables"]["OMP_NUM_THREADS"] == "2" and env["torch_threads"] == 2, "the config's own setting"
    rows = json.loads((run / "summary.json").read_text())["rows"]
    assert {row["average"] for row in rows} == {"max"}
    assert "# Note: time is the slowest rank's (-a 3)" in result.stdout
    assert "# Note: the time columns are the host's enqueue time per call (-C)" in result.stdout
    assert "# Note: time is one host clock around all iterations / iters (bench.timer=loop)." in result.stdout


def test_an_omp_setting_in_the_environment_is_left_alone(workdir: Path) -> None:
    env = {**without_thread_settings(), "OMP_NUM_THREADS": "2"}
    result = collbench("run", "bench.ops=[all_reduce]", "output_dir=runs", *FAST, cwd=workdir, env=env)
    assert result.returncode == 0, result.stderr
    captured = json.loads((result.run_dir() / "env" / "rank-00000.json").read_text())
    assert captured["variables"]["OMP_NUM_THREADS"] == "2" and captured["torch_threads"] == 2
