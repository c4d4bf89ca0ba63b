"""Which rank am I: from submitit's local executor, from Slurm, or from torchrun-style variables."""

import os
from pathlib import Path

import pytest

from jobs.config.model import load_config
from jobs.rundir.layout import RunDir
from jobs.runtime.placement import LocalRendezvous, detect_placement
from jobs.runtime.rank_job import rank_environment

LOCAL_ENV = {
    "SUBMITIT_EXECUTOR": "local",
    "SUBMITIT_LOCAL_NTASKS": "4",
    "SUBMITIT_LOCAL_GLOBALID": "3",
    "SUBMITIT_LOCAL_LOCALID": "3",
    "SUBMITIT_LOCAL_JOB_ID": "777",
}
SLURM_ENV = {
    "SUBMITIT_EXECUTOR": "slurm",
    "SLURM_JOB_ID": "55",
    "SLURM_STEP_NODELIST": "n[1-2]",
    "SLURM_NODEID": "1",
    "SLURM_PROCID": "3",
    "SLURM_LOCALID": "1",
    "SLURM_NTASKS": "4",
    "SLURM_STEP_TASKS_PER_NODE": "2(x2)",
    "MASTER_ADDR": "stale-host",
    "MASTER_PORT": "1",
}


def test_local_ranks_come_from_submitit_and_the_launchers_rendezvous(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in LOCAL_ENV.items():
        monkeypatch.setenv(name, value)  # submitit's JobEnvironment reads the process environment
    p = detect_placement(os.environ, LocalRendezvous("127.0.0.1", 23456))
    assert (p.rank, p.world_size, p.local_rank, p.node_rank) == (3, 4, 3, 0)
    assert p.init_method == "tcp://127.0.0.1:23456"


def test_slurm_ranks_ignore_a_stale_rendezvous() -> None:
    p = detect_placement(SLURM_ENV, None, master_addr="{host}-ib", expected_world_size=4)
    assert (p.rank, p.world_size, p.local_rank, p.local_world_size, p.node_rank) == (3, 4, 1, 2, 1)
    assert p.master_addr == "n1-ib"
    assert p.torch_env()["MASTER_ADDR"] == "n1-ib"
    assert p.torch_env()["MASTER_PORT"] != "1"


def test_torchrun_style_variables_work_outside_submitit() -> None:
    env = {"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "1", "MASTER_ADDR": "h0", "MASTER_PORT": "29500"}
    p = detect_placement(env, None)
    assert (p.rank, p.world_size, p.master_addr, p.master_port) == (1, 2, "h0", 29500)


def test_no_launcher_at_all_is_a_clear_error() -> None:
    with pytest.raises(RuntimeError, match="RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT unset"):
        detect_placement({}, None)


def test_rank_environment_sets_the_env_section_and_nccl_debug_file(tmp_path: Path) -> None:
    cfg = load_config("ib-h100")
    run = RunDir(tmp_path)
    p = detect_placement(
        {**SLURM_ENV, "SLURM_NTASKS": "32", "SLURM_STEP_TASKS_PER_NODE": "8(x4)", "SLURM_STEP_NODELIST": "h[1-4]"},
        None,
        expected_world_size=32,
    )
    env = rank_environment(cfg, run, p)
    assert env["NCCL_IB_HCA"].startswith("=mlx5_0")
    assert env["NCCL_DEBUG_FILE"] == str(tmp_path / "logs" / "nccl-rank-00003.log")
    assert (env["NCCL_DEBUG"], env["NCCL_DEBUG_SUBSYS"]) == ("INFO", "INIT,NET"), "fabric.nccl_info sets them"
    assert (env["RANK"], env["WORLD_SIZE"], env["LOCAL_RANK"]) == ("3", "32", "1")


def test_nccl_debug_file_is_left_alone_when_debugging_is_off(tmp_path: Path) -> None:
    cfg = load_config("testcluster")
    p = detect_placement(SLURM_ENV, None)
    assert "NCCL_DEBUG_FILE" not in rank_environment(cfg, RunDir(tmp_path), p)
