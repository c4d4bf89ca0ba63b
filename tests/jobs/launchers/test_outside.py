"""A starting command that is itself one rank of torchrun, srun -n N, mpirun or a PMI launcher refuses in
one line before anything starts, as does `python -m jobs.runtime.rank_job`: they hung, or did nothing."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from jobs.launchers.outside import outside_launcher
from tests.conftest import collbench

TORCHRUN = Path(sys.executable).with_name("torchrun")
CLEAN = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "OMPI_", "PMI", "TORCHELASTIC_"))}
BOUND_S = 60.0
"""What the tests wait at most: a hang is a failure, never a stuck test."""


@pytest.mark.parametrize(
    ("env", "name", "world"),
    [
        ({"TORCHELASTIC_RUN_ID": "none", "WORLD_SIZE": "1", "LOCAL_RANK": "0"}, "torchrun", 1),
        ({"LOCAL_RANK": "1", "WORLD_SIZE": "4"}, "torchrun", 4),
        ({"SLURM_STEP_ID": "0", "SLURM_STEP_NUM_TASKS": "16", "SLURM_NTASKS": "16"}, "srun", 16),
        ({"OMPI_COMM_WORLD_SIZE": "2", "OMPI_COMM_WORLD_RANK": "1"}, "Open MPI's mpirun", 2),
        ({"PMIX_RANK": "3"}, "a PMIx launcher", None),
        ({"PMI_RANK": "0", "PMI_SIZE": "8"}, "a PMI launcher", 8),
    ],
)
def test_a_rank_of_another_launcher_is_told_by_its_variables(env: dict[str, str], name: str, world: int | None) -> None:
    found = outside_launcher(env)
    assert found is not None and found.name == name and found.world_size == world


@pytest.mark.parametrize(
    "env",
    [
        {},
        {"SLURM_JOB_ID": "7", "SLURM_NTASKS": "8", "SLURM_STEP_ID": "4294967294"},  # a batch script: its own step
        {"SLURM_JOB_ID": "7", "SLURM_STEP_ID": "0", "SLURM_STEP_NUM_TASKS": "1"},  # srun -n1 collbench ...
        {"OMPI_COMM_WORLD_SIZE": "1"},
        {"PMI_RANK": "0", "PMI_SIZE": "1"},
        {"WORLD_SIZE": "2"},  # a variable a user set, no launcher's rank
    ],
)
def test_a_process_no_launcher_started_once_per_rank_may_start_ranks(env: dict[str, str]) -> None:
    assert outside_launcher(env) is None


@pytest.mark.integration
@pytest.mark.skipif(not TORCHRUN.exists(), reason="torchrun ships with torch")
def test_collbench_run_under_real_torchrun_refuses_in_seconds_and_starts_nothing(tmp_path: Path) -> None:
    """The issue's command: two ranks of torchrun each started a 2-rank run, stuck in init_process_group."""
    env = {**CLEAN, "PYTHONPATH": os.pathsep.join(sys.path)}
    argv = [str(TORCHRUN), "--nproc-per-node", "2", "-m", "jobs.cli", "run", "bench.ops=[all_reduce]",
            "bench.max_bytes=64K", f"output_dir={tmp_path / 'runs'}"]  # fmt: skip
    started = time.monotonic()
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=tmp_path, env=env, timeout=BOUND_S, check=False)
    took = time.monotonic() - started
    assert proc.returncode != 0, proc.stdout + proc.stderr
    refusals = [line for line in proc.stderr.splitlines() if line.startswith("collbench: error: collbench run: ")]
    assert refusals, proc.stderr  # the first to refuse, at least: torchrun then ends the other
    assert "one of 2 processes started by torchrun (TORCHELASTIC_RUN_ID=" in refusals[0]
    assert "collbench run ranks=2" in refusals[0] and "collbench rank KEY=VALUE ..." in refusals[0]
    assert not (tmp_path / "runs").exists(), "nothing was started"
    assert took < 30, f"{took:.1f} s"


@pytest.mark.integration
@pytest.mark.skipif(not TORCHRUN.exists(), reason="torchrun ships with torch")
def test_rank_job_is_not_a_program_by_hand_nor_under_torchrun(tmp_path: Path) -> None:
    env = {**CLEAN, "PYTHONPATH": os.pathsep.join(sys.path)}
    for argv in (
        [sys.executable, "-m", "jobs.runtime.rank_job"],
        [str(TORCHRUN), "--nproc-per-node", "2", "-m", "jobs.runtime.rank_job"],
    ):
        proc = subprocess.run(argv, capture_output=True, text=True, cwd=tmp_path, env=env, timeout=BOUND_S, check=False)
        assert proc.returncode != 0, proc.stderr
        said = [line for line in proc.stderr.splitlines() if line.startswith("collbench: error: jobs.runtime.rank_job")]
        assert said and "is not a program" in said[0] and "collbench run ranks=N" in said[0], proc.stderr


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "--dry-run"],
        ["submit", "--config", "testcluster", "--dry-run"],
        ["scale", "--config", "testcluster", "nodes=[1,2]", "--dry-run"],
        ["isolate", "--config", "testcluster", "nodes=3", "--dry-run"],
        ["check", "--dry-run"],
    ],
    ids=lambda argv: argv[0],
)
def test_every_starting_command_refuses_as_one_task_of_an_srun_step(argv: list[str], tmp_path: Path) -> None:
    env = {**CLEAN, "SLURM_JOB_ID": "9", "SLURM_STEP_ID": "0", "SLURM_STEP_NUM_TASKS": "8", "SLURM_PROCID": "3"}
    result = collbench(*argv, cwd=tmp_path, env=env, timeout=BOUND_S)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.splitlines() == [
        f"collbench: error: collbench {argv[0]}: this is one of 8 processes started by srun (SLURM_STEP_ID=0, "
        f"SLURM_STEP_NUM_TASKS=8); collbench {argv[0]} starts its own ranks and would start them once per process "
        "here. Type it once, without srun (one node: collbench run ranks=8); the command for a launcher to start "
        "per rank is `collbench rank KEY=VALUE ...`"
    ]
    assert list(tmp_path.iterdir()) == []
