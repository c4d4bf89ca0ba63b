"""`srun ... collbench rank` inside an allocation on the project's Slurm cluster, the nccl-tests habit: one run
directory for the step's ranks, launcher external with `external: slurm` in run.json, the hosts the step's
nodes, and a table from rank 0 with no `collbench wait`."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from jobs.rundir.layout import RunDir
from tests.conftest import REPO, SlurmCluster
from tests.jobs.cli.test_check_slurm import held

pytestmark = [pytest.mark.slurm, pytest.mark.integration]

NODES = "n[1-2]"


def test_srun_starts_one_rank_a_task_and_they_make_one_run(slurm_cluster: SlurmCluster, workdir: Path) -> None:
    output = workdir / "runs"
    with held(slurm_cluster.env(), "debug", NODES, 2) as env:
        started = time.monotonic()
        step = subprocess.run(
            ["srun", f"--jobid={env['SLURM_JOB_ID']}", "-N2", "--ntasks-per-node=1", f"--chdir={workdir}",
             sys.executable, "-m", "jobs.cli", "rank", "--config", "testcluster", "bench.ops=[all_reduce]",
             "history.record=false", f"output_dir={output}", "-b", "8", "-e", "64K"],
            capture_output=True, text=True, env={**env, "PYTHONPATH": str(REPO)}, cwd=workdir, timeout=240,
            check=False,
        )  # fmt: skip
        took = time.monotonic() - started
    assert step.returncode == 0, step.stdout + step.stderr
    runs = [path for path in output.iterdir() if path.is_dir()]
    assert len(runs) == 1, f"one step, one run directory: {runs}"
    run = RunDir(runs[0])
    meta = json.loads(run.meta_file.read_text())
    assert (meta["launcher"], meta["external"], meta["world_size"]) == ("external", "slurm", 2), meta
    assert run.table_file.is_file() and "all_reduce" in run.table_file.read_text()
    hosts = sorted(json.loads(path.read_text())["host"] for path in run.path.glob("status/rank-*.json"))
    assert hosts == ["n1", "n2"], hosts
    print(f"\nsrun collbench rank on {NODES}: {took:.1f} s from srun to table")
