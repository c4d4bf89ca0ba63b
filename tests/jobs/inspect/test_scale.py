"""Node-count sweeps without a cluster: the nodes=... forms, the report's arithmetic, and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jobs.config.schema import ConfigError
from jobs.inspect.scale import (
    MAX_NODE_COUNTS,
    RunAssessment,
    band_means,
    parse_node_counts,
    scale_report,
    split_nodes,
)
from jobs.rundir.layout import RunDir
from jobs.rundir.sweep import Sweep
from tests.conftest import collbench
from tests.jobs.rows import summary_row


@pytest.mark.parametrize(
    ("text", "counts"),
    [
        ("[1,2,4,8]", [1, 2, 4, 8]),
        ("8,1,4,4", [1, 4, 8]),
        ("1..16:x2", [1, 2, 4, 8, 16]),
        ("1..20:x2", [1, 2, 4, 8, 16]),
        ("2..8:+2", [2, 4, 6, 8]),
        ("1..4", [1, 2, 3, 4]),
        ("3", [3]),
    ],
)
def test_node_count_forms(text: str, counts: list[int]) -> None:
    assert parse_node_counts(text) == counts


@pytest.mark.parametrize("text", ["0", "[1,0]", "a,b", "", "1..0", "1..8:x1", "0..4", "2..8:+0", "1.5", "-2"])
def test_bad_node_counts_are_refused_naming_the_value(text: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_node_counts(text)
    assert repr(text) in str(caught.value)
    assert "1..16:x2" in str(caught.value)


def test_a_range_of_more_node_counts_than_jobs_anyone_means_is_refused_at_once() -> None:
    assert len(parse_node_counts(f"1..{MAX_NODE_COUNTS}")) == MAX_NODE_COUNTS
    assert parse_node_counts("1..100000000:x2")[-1] == 1 << 26  # doubling stays short
    with pytest.raises(ConfigError, match=r"'1\.\.100000000' gives 100000000 node counts.*at most 256"):
        parse_node_counts("1..100000000")


def test_nodes_given_twice_is_refused_not_the_last_taken() -> None:
    with pytest.raises(ConfigError, match="given twice"):
        split_nodes(["nodes=1..3", "bench.iters=5", "nodes=2"])
    assert split_nodes(["nodes=1..3", "bench.iters=5"]) == ([1, 2, 3], ["bench.iters=5"])


def make_sweep(tmp_path: Path, entries: list[dict[str, object]]) -> Sweep:
    sweep = Sweep.create(tmp_path, [int(str(e["nodes"])) for e in entries], None, [])
    for entry in entries:
        sweep.update_entry(int(str(entry["nodes"])), **{k: str(v) for k, v in entry.items() if k != "nodes"})
    return sweep


def test_report_has_a_column_per_node_count_and_efficiency_against_the_smallest(tmp_path: Path) -> None:
    busbw = {1: {1024: 2.0, 1 << 20: 10.0}, 2: {1024: 1.0, 1 << 20: 9.0}, 4: {1 << 20: 7.5}}
    runs = {n: tmp_path / f"run-{n}" for n in busbw}
    sweep = make_sweep(tmp_path, [{"nodes": n, "run_dir": str(p), "job_id": str(10 + n)} for n, p in runs.items()])

    def assess(run: RunDir) -> RunAssessment:
        nodes = next(n for n, p in runs.items() if p == run.path)
        rows = []
        for size, value in busbw[nodes].items():
            rows.append(summary_row("all_reduce", size, value, 2 * nodes, in_place=True))
            rows.append(summary_row("all_reduce", size, value * 3, 2 * nodes, root=1))  # a non-zero root: not shown
        return RunAssessment(rows, [], "COMPLETED", True)

    report = scale_report(sweep, assess)
    assert report.complete
    lines = report.lines()
    header = next(line for line in lines if line.startswith("#   size"))
    assert header.split()[3:] == ["1", "node", "2", "nodes", "4", "nodes", "eff", "2", "eff", "4"]
    rows = {int(line.split()[0]): line.split()[1:] for line in lines if line[:1] != "#"}
    assert rows[1024] == ["2.00", "1.00", "-", "0.50", "-"]
    assert rows[1 << 20] == ["10.00", "9.00", "7.50", "0.90", "0.75"]
    assert lines[-1] == "# every node count completed"

    plain = json.loads(json.dumps(report.to_plain()))
    [op] = plain["ops"]
    assert (op["op"], op["base_nodes"]) == ("all_reduce", 1)
    assert op["rows"][1] == {
        "size": 1 << 20,
        "busbw": {"1": 10.0, "2": 9.0, "4": 7.5},
        "efficiency": {"2": 0.9, "4": 0.75},
    }


def test_out_of_place_is_the_headline_where_both_were_measured(tmp_path: Path) -> None:
    sweep = make_sweep(tmp_path, [{"nodes": 1, "run_dir": str(tmp_path / "r"), "job_id": "1"}])
    rows = [summary_row("all_gather", 4096, 5.0, 2, in_place=True), summary_row("all_gather", 4096, 4.0, 2)]
    report = scale_report(sweep, lambda run: RunAssessment(rows, [], "COMPLETED", True))
    assert report.per_nodes[1][("all_gather", 4096)].in_place is False
    assert report.ops[0].busbw == {4096: {1: 4.0}}


def test_gloo_sized_bandwidths_keep_three_significant_digits(tmp_path: Path) -> None:
    sweep = make_sweep(tmp_path, [{"nodes": 1, "run_dir": str(tmp_path / "r"), "job_id": "1"}])
    rows = [summary_row("all_reduce", 64, 0.0000876543, 2), summary_row("all_reduce", 4096, 0.00133, 2)]
    lines = scale_report(sweep, lambda run: RunAssessment(rows, [], "COMPLETED", True)).lines()
    assert "0.0000877" in "\n".join(lines)
    assert "0.0013300" in "\n".join(lines)


def test_every_failed_node_count_is_named_with_why(tmp_path: Path) -> None:
    entries: list[dict[str, object]] = [
        {"nodes": 1, "run_dir": str(tmp_path / "ok"), "job_id": "1"},
        {"nodes": 2, "run_dir": str(tmp_path / "bad"), "job_id": "2"},
        {"nodes": 8, "run_dir": str(tmp_path / "never"), "job_id": "3"},
        {"nodes": 16, "error": "sbatch: error: Batch job submission failed: Invalid partition name specified"},
        {"nodes": 32, "run_dir": str(tmp_path / "queued"), "job_id": "4"},
    ]
    seen = {
        "ok": RunAssessment([summary_row("all_reduce", 64, 1.0, 2)], [], "COMPLETED", True),
        "bad": RunAssessment([], ["rank 3 on n2 failed first: RuntimeError: boom"], "FAILED", True),
        "never": RunAssessment([], ["no rank started"], "PENDING (PartitionNodeLimit)", True),
        "queued": RunAssessment([], [], "PENDING (Resources)", False),
    }
    report = scale_report(make_sweep(tmp_path, entries), lambda run: seen[run.path.name])
    assert not report.complete
    failures = [line for line in report.lines() if "node(s):" in line]
    assert failures == [
        "# 2 node(s): FAILED: job 2 ended FAILED: rank 3 on n2 failed first: RuntimeError: boom",
        "# 8 node(s): FAILED: job 3 Slurm will never start it as submitted: PENDING (PartitionNodeLimit) "
        "(scancel it, or change the request)",
        "# 16 node(s): NOT SUBMITTED: sbatch: error: Batch job submission failed: Invalid partition name specified",
        "# 32 node(s): NOT FINISHED: job 4 still PENDING (Resources)",
    ]
    outcomes = {o["nodes"]: o["outcome"] for o in report.to_plain()["nodes"]}
    assert outcomes == {1: "completed", 2: "failed", 8: "failed", 16: "not submitted", 32: "not finished"}


def test_scale_refuses_bad_input_before_creating_anything(tmp_path: Path) -> None:
    for args in (
        ["--config", "testcluster", "nodes=1..4:x1"],
        ["--config", "testcluster"],
        ["--config", "testcluster", "nodes=[1,2]", "bench.iters=0"],
        ["nodes=[1,2]"],  # the local launcher runs on one node
    ):
        result = collbench("scale", *args, f"output_dir={tmp_path / 'runs'}", cwd=tmp_path)
        assert result.returncode == 2, (args, result.stderr)
        assert len(result.stderr.strip().splitlines()) == 1
        assert result.stderr.startswith("collbench: error: ")
        assert not (tmp_path / "runs").exists()


def test_dry_run_prints_one_script_per_node_count_and_submits_nothing(tmp_path: Path) -> None:
    result = collbench(
        "scale", "--config", "testcluster", "nodes=1..3", "--dry-run", f"output_dir={tmp_path / 'runs'}", cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    for nodes in (1, 2, 3):
        assert f"# ---- nodes={nodes}: one job of {2 * nodes} ranks" in result.stdout
        assert f"#SBATCH --nodes={nodes}\n" in result.stdout
    assert result.stdout.count("#!/bin/bash") == 3
    assert not (tmp_path / "runs").exists()


def test_plot_lines_are_mean_busbw_per_size_band(tmp_path: Path) -> None:
    runs = {1: tmp_path / "a", 2: tmp_path / "b"}
    sweep = make_sweep(tmp_path, [{"nodes": n, "run_dir": str(p), "job_id": str(n)} for n, p in runs.items()])
    rows = {
        "a": [summary_row("all_reduce", 1024, 1.0, 2), summary_row("all_reduce", 4096, 3.0, 2)],
        "b": [summary_row("all_reduce", 1024, 0.5, 4), summary_row("all_reduce", 1 << 30, 40.0, 4)],
    }
    report = scale_report(sweep, lambda run: RunAssessment(rows[run.path.name], [], "COMPLETED", True))
    assert band_means(report.per_nodes) == {
        "all_reduce": {"<= 64 KiB": {1: 2.0, 2: 0.5}, "> 16 MiB": {2: 40.0}},
    }
