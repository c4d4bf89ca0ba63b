"""The fabric section end to end on a local gloo run reading a fake sysfs tree: each node's snapshots land in
the run directory, the report names what is wrong, and fabric.max_port_errors fails the run (exit 1)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.conftest import collbench
from tests.jobs.fabric.sysfs import node

pytestmark = pytest.mark.integration

FAST = ["bench.ops=[all_reduce]", "bench.max_bytes=1K", "bench.iters=2", "bench.warmup_iters=1", "output_dir=runs"]


def test_snapshots_are_kept_and_a_port_error_during_the_job_fails_the_report(workdir: Path) -> None:
    sysfs = node(workdir / "sys")
    result = collbench("run", *FAST, f"fabric.sysfs_root={sysfs}", "fabric.max_port_errors=0", cwd=workdir)
    assert result.returncode == 0, result.stderr
    run = result.run_dir()
    host_line = re.search(r"^#   (\S+) +mlx5_\[0-7\] \(8 ports ACTIVE 400 Gb/sec\)$", result.stdout, re.M)
    assert host_line, result.stdout
    host = host_line.group(1)
    assert "#   NCCL was not used (backend gloo): no transport to report" in result.stdout
    assert "fabric problems" not in result.stdout
    end = run / "fabric" / f"ports-{host}-end.json"
    assert (run / "fabric" / f"ports-{host}-start.json").is_file() and end.is_file()

    snap = json.loads(end.read_text())  # what the counters would have read had the link erred during the job
    snap["rdma"]["mlx5_3"]["1"]["counters"]["symbol_error"] = 7
    end.write_text(json.dumps(snap))
    again = collbench("report", str(run), cwd=workdir)
    assert again.returncode == 1
    assert f"#   {host} mlx5_3 port 1: error counters grew during the job: symbol_error +7" in again.stdout
    assert f"fabric.max_port_errors=0: {host} mlx5_3 port 1 counted 7 error(s) during the job" in again.stderr
    as_json = collbench("report", str(run), "--format", "json", cwd=workdir)
    assert json.loads(as_json.stdout)["fabric"]["failures"] == [
        f"fabric.max_port_errors=0: {host} mlx5_3 port 1 counted 7 error(s) during the job"
    ]


def test_a_port_that_is_down_is_named_but_fails_nothing_unless_asked(workdir: Path) -> None:
    sysfs = node(workdir / "sys", state="DOWN", phys="Polling")
    result = collbench("run", *FAST, f"fabric.sysfs_root={sysfs}", cwd=workdir)
    assert result.returncode == 0, result.stderr
    assert re.search(r"^#   \S+ mlx5_3 port 1: DOWN / Polling at the start of the job$", result.stdout, re.M)
    assert re.search(r"mlx5_\[0-7\] \(7/8 ports ACTIVE 400 Gb/sec\)", result.stdout)
