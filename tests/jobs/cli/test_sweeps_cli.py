"""`collbench scale` from the command line: dry runs, bad node specs, and status/report on a sweep directory.

A real sweep is one Slurm job per node count (tests/jobs/cli/test_scale_slurm.py runs them). Here the
sweep directory is laid out as `collbench scale` writes it (docs: jobs/rundir/sweep.py) around two real
local runs of 2 ranks standing for 1 and 2 nodes, plus a node count Slurm refused, so `scale status`,
`scale report` (which only reads) and `scale wait` (which records scale.txt and scale.json once every run
has ended) are checked against the runs' own summary.json without a cluster.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import CommandResult, collbench

SMALL = ["bench.ops=[all_reduce]", "bench.max_bytes=64K", "bench.warmup_iters=1", "bench.iters=3"]
REFUSED = "sbatch: error: Batch job submission failed: Requested node configuration is not available"


def scale(*words: str, cwd: Path) -> CommandResult:
    return collbench("scale", *words, cwd=cwd, timeout=120)


def scripts(stdout: str) -> dict[int, tuple[int, str]]:
    """node count -> (ranks announced, the sbatch script printed for it)."""
    parts = re.split(r"^# ---- nodes=(\d+): one job of (\d+) ranks\n", stdout, flags=re.M)
    assert parts[0] == "", f"output starts with something else: {parts[0][:200]!r}"
    return {int(n): (int(ranks), text) for n, ranks, text in zip(parts[1::3], parts[2::3], parts[3::3], strict=True)}


# ---- dry runs


def test_a_dry_run_prints_one_sbatch_script_per_node_count(tmp_path: Path) -> None:
    result = scale("--config", "testcluster", "nodes=1..3", "--dry-run", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    by_nodes = scripts(result.stdout)
    assert sorted(by_nodes) == [1, 2, 3]
    for n, (ranks, script) in by_nodes.items():
        assert ranks == 2 * n, "testcluster runs 2 tasks per node"
        assert script.startswith("#!/bin/bash\n")
        assert re.findall(r"^#SBATCH --nodes=(\d+)$", script, re.M) == [str(n)]
        assert "#SBATCH --ntasks-per-node=2" in script and "#SBATCH --partition=debug" in script
        assert re.search(r"^srun .* -m submitit\.core\._submit ", script, re.M)
    assert not (tmp_path / "runs").exists(), "a dry run leaves no sweep directory behind"


@pytest.mark.parametrize(
    ("spec", "counts"),
    [("[4,1,2,2]", [1, 2, 4]), ("1..16:x2", [1, 2, 4, 8, 16]), ("2..8:+3", [2, 5, 8]), ("3", [3])],
)
def test_node_specs_and_overrides_reach_every_script(tmp_path: Path, spec: str, counts: list[int]) -> None:
    result = scale(
        "--config", "testcluster", f"nodes={spec}", "slurm.partition=wide", "slurm.tasks_per_node=1", "--dry-run",
        cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    by_nodes = scripts(result.stdout)
    assert sorted(by_nodes) == counts
    for n, (ranks, script) in by_nodes.items():
        assert ranks == n
        assert re.findall(r"^#SBATCH --nodes=(\d+)$", script, re.M) == [str(n)]
        assert "#SBATCH --partition=wide" in script and "#SBATCH --ntasks-per-node=1" in script


@pytest.mark.parametrize(
    ("words", "message"),
    [
        (["nodes=0..4"], "nodes: '0..4' is not a usable range"),
        (["nodes=4..2"], "nodes: '4..2' is not a usable range"),
        (["nodes=1..8:x1"], "nodes: '1..8:x1' is not a usable range"),
        (["nodes=[1,two]"], "nodes: '[1,two]' is not a list of node counts"),
        (["nodes=[0,2]"], "nodes: '[0,2]' is not a list of node counts"),
        (["nodes="], "nodes: '' is not a list of node counts"),
        (["nodes=-2"], "nodes: '-2' is not a list of node counts"),
        (["bench.iters=3"], "nodes: a scale sweep needs the node counts"),
        (["nodes=1..2", "bench.bogus=1"], "unknown key 'bench.bogus'"),
        (["nodes=1..2", "--config", "local"], "needs launcher=slurm"),
    ],
)
@pytest.mark.parametrize("dry_run", [True, False], ids=["dry-run", "submit"])
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, words: list[str], message: str, dry_run: bool) -> None:
    # without --dry-run this would submit: bad input must be refused before Slurm is even looked for
    result = scale("--config", "testcluster", *words, *(["--dry-run"] if dry_run else []), cwd=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stdout == ""
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert result.stderr.startswith("collbench: error: ") and message in result.stderr, result.stderr
    assert not (tmp_path / "runs").exists(), "nothing is left behind"


@pytest.mark.parametrize(
    ("words", "message"),
    [
        (["report"], "usage: collbench scale report SWEEP"),
        (["status", "a", "b"], "usage: collbench scale status SWEEP"),
        (["report", "sweep-none"], "no sweep 'sweep-none'"),
        (["wait", "sweep-none"], "no sweep 'sweep-none'"),
    ],
)
def test_bad_sweep_commands_are_one_line_and_exit_2(tmp_path: Path, words: list[str], message: str) -> None:
    result = scale(*words, cwd=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    assert len(result.stderr.splitlines()) == 1 and message in result.stderr, result.stderr


# ---- status and report on a sweep directory


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """sweep-.../ with a local run for 1 node and one for 2, and 4 nodes refused by sbatch."""
    path = tmp_path_factory.mktemp("sweeps") / "sweep-20260102-030405-a1b2c3"
    path.mkdir()
    entries: list[dict[str, Any]] = []
    for nodes in (1, 2):
        result = collbench("run", "ranks=2", f"output_dir={path}", *SMALL, cwd=path.parent)
        assert result.returncode == 0, result.stderr
        run = result.run_dir()
        job = json.loads((run / "run.json").read_text())["job_id"]
        entries.append({"nodes": nodes, "run_dir": str(run), "job_id": str(job), "error": None})
    entries.append({"nodes": 4, "run_dir": None, "job_id": None, "error": REFUSED})
    meta = {"sweep_id": path.name, "created": 0.0, "config": "testcluster", "overrides": SMALL,
            "node_counts": [1, 2, 4], "entries": entries}  # fmt: skip
    (path / "sweep.json").write_text(json.dumps(meta, indent=1))
    return path


def _busbw(run_dir: str) -> dict[int, float]:
    rows = json.loads((Path(run_dir) / "summary.json").read_text())["rows"]
    return {r["requested_size"]: r["busbw"] for r in rows if r["op"] == "all_reduce" and r["in_place"]}


def test_status_lists_every_node_count(sweep: Path) -> None:
    result = scale("status", str(sweep), cwd=sweep.parent)
    assert result.returncode == 0, result.stderr
    entries = json.loads((sweep / "sweep.json").read_text())["entries"]
    assert result.stdout.splitlines() == [
        f"sweep {sweep.name}",
        f"     1 node(s)  job {entries[0]['job_id']:<8} {'COMPLETED':<12} {entries[0]['run_dir']}",
        f"     2 node(s)  job {entries[1]['job_id']:<8} {'COMPLETED':<12} {entries[1]['run_dir']}",
        f"     4 node(s)  not submitted: {REFUSED}",
    ]


def test_report_holds_each_runs_busbw_and_says_what_was_not_submitted(sweep: Path) -> None:
    result = scale("report", sweep.name, "--output-dir", str(sweep.parent), cwd=sweep.parent)  # by id
    assert result.returncode == 1, "a node count was not submitted: the sweep is incomplete"
    lines = result.stdout.splitlines()
    assert lines[-2:] == [f"# 4 node(s): NOT SUBMITTED: {REFUSED}", f"# Sweep directory: {sweep}"]
    assert not (sweep / "scale.txt").exists() and not (sweep / "scale.json").exists(), "report only reads"

    waited = scale("wait", str(sweep), "--timeout", "60", cwd=sweep.parent)  # every run has ended: wait records
    assert waited.returncode == 1 and waited.stdout == result.stdout, waited.stderr
    assert (sweep / "scale.txt").read_text() == "\n".join(lines[:-1]) + "\n"

    entries = json.loads((sweep / "sweep.json").read_text())["entries"]
    one, two = _busbw(entries[0]["run_dir"]), _busbw(entries[1]["run_dir"])
    assert sorted(one) == sorted(two) and len(one) >= 10

    assert lines[0].startswith("# collbench scale all_reduce: busbw (GB/s) by message size and node count")
    assert lines[1].split() == ["#", "size", "(B)", "1", "node", "2", "nodes", "eff", "2"]
    table = [line.split() for line in lines[2:] if not line.startswith("#")]
    assert [int(cells[0]) for cells in table] == sorted(one)
    for size, base, cand, eff in table:
        decimals = len(base.split(".")[1])
        assert float(base) == pytest.approx(one[int(size)], abs=0.51 * 10**-decimals), size
        assert float(cand) == pytest.approx(two[int(size)], abs=0.51 * 10**-decimals), size
        assert float(eff) == pytest.approx(two[int(size)] / one[int(size)], abs=0.0051), size

    report = json.loads((sweep / "scale.json").read_text())
    assert report["complete"] is False
    assert [(n["nodes"], n["outcome"], n["state"]) for n in report["nodes"]] == [
        (1, "completed", "COMPLETED"),
        (2, "completed", "COMPLETED"),
        (4, "not submitted", ""),
    ]
    (op,) = report["ops"]
    assert op["op"] == "all_reduce" and op["base_nodes"] == 1
    for row in op["rows"]:
        assert row["busbw"] == {"1": one[row["size"]], "2": two[row["size"]]}
        assert row["efficiency"]["2"] == pytest.approx(two[row["size"]] / one[row["size"]])


def test_report_of_a_complete_sweep_passes(sweep: Path, tmp_path: Path) -> None:
    complete = tmp_path / sweep.name
    shutil.copytree(sweep, complete)
    meta = json.loads((complete / "sweep.json").read_text())
    meta["entries"] = meta["entries"][:2]
    (complete / "sweep.json").write_text(json.dumps(meta))
    for recorded in ("scale.json", "scale.txt"):  # the copied sweep's own were recorded before the edit
        (complete / recorded).unlink(missing_ok=True)
    result = scale("report", str(complete), cwd=tmp_path)  # by path
    assert result.returncode == 0, result.stdout + result.stderr
    assert "# every node count completed" in result.stdout
    assert not (complete / "scale.json").exists()  # report only reads
    assert scale("wait", str(complete), cwd=tmp_path).returncode == 0
    recorded = (complete / "scale.json").stat().st_mtime_ns
    assert json.loads((complete / "scale.json").read_text())["complete"] is True
    assert scale("wait", str(complete), cwd=tmp_path).returncode == 0  # a second wait reads, records nothing
    assert (complete / "scale.json").stat().st_mtime_ns == recorded
