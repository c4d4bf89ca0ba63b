"""`collbench scale` and sweep comparisons on the project's real three-node Slurm cluster."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from collectives.results import SummaryRow, headline_rows
from tests.browser import open_report
from tests.conftest import CommandResult, SlurmCluster, collbench
from tests.jobs.cli.test_report_in_browser import assert_shown_whole, screenshot_path
from tests.jobs.rows import slow_down

pytestmark = [pytest.mark.slurm, pytest.mark.integration]

SMALL = ["bench.ops=[all_reduce,all_gather]", "bench.max_bytes=4K"]


def scale(cluster: SlurmCluster, workdir: Path, *words: str, timeout: float = 300) -> CommandResult:
    return collbench(
        "scale", *words, "--output-dir", str(workdir / "runs"), cwd=workdir, env=cluster.env(), timeout=timeout
    )


def start_sweep(cluster: SlurmCluster, workdir: Path, nodes: str) -> tuple[Path, dict[int, str]]:
    result = scale(
        cluster, workdir, "--config", "testcluster", f"nodes={nodes}", f"output_dir={workdir / 'runs'}", *SMALL
    )
    assert result.returncode == 0, result.stderr
    sweep = re.search(r"^sweep directory (.+)$", result.stdout, re.M)
    assert sweep, result.stdout
    jobs = {int(n): job for n, job in re.findall(r"^nodes=(\d+): job (\d+) ", result.stdout, re.M)}
    return Path(sweep.group(1)), jobs


def summary_rows(run_dir: str) -> list[SummaryRow]:
    return [SummaryRow(**row) for row in json.loads((Path(run_dir) / "summary.json").read_text())["rows"]]


def scaling(sweep: Path) -> dict[str, Any]:
    return dict(json.loads((sweep / "scale.json").read_text()))


@pytest.fixture(scope="module")
def finished_sweep(slurm_cluster: SlurmCluster, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, CommandResult]:
    workdir = tmp_path_factory.mktemp("scale")
    sweep, jobs = start_sweep(slurm_cluster, workdir, "1..3")
    assert sorted(jobs) == [1, 2, 3]
    return sweep, scale(slurm_cluster, workdir, "wait", sweep.name, "--timeout", "240")


def test_a_sweep_over_one_two_and_three_nodes_completes(
    slurm_cluster: SlurmCluster, finished_sweep: tuple[Path, CommandResult]
) -> None:
    sweep, waited = finished_sweep
    assert waited.returncode == 0, waited.stdout + waited.stderr
    assert "# every node count completed" in waited.stdout
    report = scaling(sweep)
    assert [(n["nodes"], n["outcome"], n["state"]) for n in report["nodes"]] == [
        (1, "completed", "COMPLETED"),
        (2, "completed", "COMPLETED"),
        (3, "completed", "COMPLETED"),
    ]
    for node in report["nodes"]:
        run = Path(node["run_dir"])
        assert run.parent == sweep, "every run of the sweep lives in the sweep directory"
        hosts = {json.loads(p.read_text())["host"] for p in (run / "status").glob("rank-*.json")}
        assert len(hosts) == node["nodes"], f"{node['nodes']} node(s) ran on {sorted(hosts)}"
        member = collbench("report", str(run), cwd=sweep, env=slurm_cluster.env())
        assert member.returncode == 0, "each run of a sweep is an ordinary run"


def test_the_sweep_page_draws_a_curve_per_node_count_in_a_browser(
    slurm_cluster: SlurmCluster, finished_sweep: tuple[Path, CommandResult], browser: Any
) -> None:
    sweep, _ = finished_sweep
    page = sweep / "sweep.html"
    made = scale(slurm_cluster, sweep.parent.parent, "report", sweep.name, "--html", str(page))
    assert made.returncode == 0, made.stdout + made.stderr
    with open_report(browser, page, screenshot_path("sweep")) as opened:
        assert_shown_whole(opened)
        assert "every node count COMPLETED" in opened.text("#verdict")
        assert opened.count("table.runs tbody tr") == 3
        assert opened.count("#curves svg") >= 1


def test_the_report_holds_each_runs_busbw_and_the_efficiency_against_one_node(
    finished_sweep: tuple[Path, CommandResult],
) -> None:
    sweep, waited = finished_sweep
    report = scaling(sweep)
    headline = {n["nodes"]: headline_rows(summary_rows(n["run_dir"])) for n in report["nodes"]}
    assert [op["op"] for op in report["ops"]] == ["all_reduce", "all_gather"]
    for op in report["ops"]:
        assert op["base_nodes"] == 1
        expected_sizes = sorted({size for cells in headline.values() for name, size in cells if name == op["op"]})
        assert [row["size"] for row in op["rows"]] == expected_sizes
        for row in op["rows"]:
            for nodes, cells in headline.items():
                cell = cells.get((op["op"], row["size"]))
                assert row["busbw"].get(str(nodes)) == (cell.busbw if cell else None)
            for nodes, eff in row["efficiency"].items():
                assert eff == pytest.approx(row["busbw"][nodes] / row["busbw"]["1"], rel=1e-12)
            assert set(row["efficiency"]) == {n for n in row["busbw"] if n != "1"}

    table = waited.stdout
    assert table.count("#   size (B)     1 node    2 nodes    3 nodes    eff 2    eff 3") == 2
    assert (sweep / "scale.txt").read_text() in table
    all_reduce = table.split("# collbench scale all_reduce")[1].split("\n#\n")[0].splitlines()[2:]
    for line, row in zip(all_reduce, report["ops"][0]["rows"], strict=True):
        cells = line.split()
        assert int(cells[0]) == row["size"]
        decimals = len(cells[1].split(".")[1])
        assert cells[1:4] == [f"{row['busbw'][n]:.{decimals}f}" for n in ("1", "2", "3")]
        assert cells[4:] == [f"{row['efficiency'][n]:.2f}" for n in ("2", "3")]


def test_a_node_count_beyond_the_partition_is_bad_input_and_nothing_is_submitted(
    slurm_cluster: SlurmCluster, tmp_path: Path
) -> None:
    result = scale(
        slurm_cluster, tmp_path, "--config", "testcluster", "nodes=[2,4]", f"output_dir={tmp_path / 'runs'}", *SMALL
    )  # the test cluster has three nodes
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.strip() == (
        "collbench: error: nodes: 4 is more than partition 'debug' can ever hold (3 node(s) usable: n[1-3]); "
        "allowed: 1-3"
    )
    assert not (tmp_path / "runs").exists() or list((tmp_path / "runs").iterdir()) == []
    queued = subprocess.run(["squeue", "-h", "-o", "%Z"], capture_output=True, text=True, env=slurm_cluster.env())
    assert str(tmp_path) not in queued.stdout.split(), "not even the node count that fits was submitted"


def test_compare_matches_two_sweeps_node_count_by_node_count(
    slurm_cluster: SlurmCluster, finished_sweep: tuple[Path, CommandResult], tmp_path: Path
) -> None:
    sweep, _ = finished_sweep
    entries = {n["nodes"]: n for n in scaling(sweep)["nodes"]}
    slower = tmp_path / "slower-3"
    shutil.copytree(entries[3]["run_dir"], slower)
    slow_down(slower, "all_reduce", 1024, 10.0)  # beyond any noise a loaded machine measures (53-75% seen)
    candidate = tmp_path / "candidate"
    candidate.mkdir()
    (candidate / "sweep.json").write_text(
        json.dumps(
            {"entries": [
                {"nodes": 2, "run_dir": entries[2]["run_dir"], "job_id": entries[2]["job_id"], "error": None},
                {"nodes": 3, "run_dir": str(slower), "job_id": entries[3]["job_id"], "error": None},
            ]}
        )
    )  # fmt: skip
    result = collbench(
        "compare", str(sweep), str(candidate), "--json", "verdict.json", cwd=tmp_path, env=slurm_cluster.env()
    )
    assert result.returncode == 1, result.stdout + result.stderr
    verdict = json.loads((tmp_path / "verdict.json").read_text())
    assert {row["label"] for row in verdict["rows"]} == {"2n", "3n"}
    assert "1 node(s) only in the baseline, not compared" in verdict["notes"]
    assert [r.split(" busbw")[0] for r in verdict["regressions"]] == ["3n: all_reduce 1024 B in-place:"]
    assert all(row["ratio"] == 1.0 for row in verdict["rows"] if (row["label"], row["size"]) != ("3n", 1024))


def test_report_draws_busbw_against_node_count(
    slurm_cluster: SlurmCluster, finished_sweep: tuple[Path, CommandResult], tmp_path: Path
) -> None:
    sweep, _ = finished_sweep
    plot = tmp_path / "scaling.png"
    result = scale(slurm_cluster, tmp_path, "report", str(sweep), "--plot", str(plot))
    assert result.returncode == 0, result.stderr
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"collbench: plot written to {plot}" in result.stderr


def test_a_sweep_sbatch_refuses_at_every_node_count_leaves_nothing_behind(
    slurm_cluster: SlurmCluster, tmp_path: Path
) -> None:
    result = scale(
        slurm_cluster, tmp_path, "--config", "testcluster", "nodes=[1,2]", f"output_dir={tmp_path / 'runs'}",
        "slurm.sbatch_extra={mincpus: '64'}",
    )  # fmt: skip
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.splitlines()[-1].startswith(
        "collbench: error: no node count was submitted, sweep directory removed: sbatch refused the job: "
    )
    assert list((tmp_path / "runs").iterdir()) == []
