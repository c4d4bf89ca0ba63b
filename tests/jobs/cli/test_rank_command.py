"""`collbench rank` started once per rank by torchrun, for real: one run directory per world, launcher
external in run.json, the hosts the ranks' NODE_NAMEs; and the worlds it cannot place, refused in one line."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from jobs.config.model import ConfigError
from jobs.launchers.external import ExternalLauncher
from jobs.launchers.world_place import place_from_environment
from jobs.rundir.layout import RunDir
from tests.debian import need_tools

ROOT = Path(__file__).resolve().parents[3]
TORCHRUN = str(Path(sys.executable).with_name("torchrun"))
RANK = ["-m", "jobs.cli.main", "rank", "bench.ops=[all_reduce]", "bench.max_bytes=64K", "history.record=false"]
LAUNCHER_VARIABLES = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT", "NODE_NAME", "TORCHELASTIC")
WORLD_S = 240


def clean_env(**extra: str) -> dict[str, str]:
    """This process's environment with no launcher's variables in it (the suite may run under Slurm)."""
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("SLURM_", "OMPI_", "PMI", "PET_", *LAUNCHER_VARIABLES))
    }
    return {**env, "PYTHONPATH": str(ROOT), **extra}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def only_run(output: Path) -> Path:
    runs = [path for path in output.iterdir() if path.is_dir()]
    assert len(runs) == 1, f"one world, one run directory: {runs}"
    return runs[0]


def report(run: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "jobs.cli.main", "report", str(run), "--format", "json"],
        capture_output=True, text=True, env=clean_env(), cwd=ROOT, timeout=120, check=False,
    )  # fmt: skip


@pytest.mark.integration
def test_torchrun_standalone_makes_one_run_that_report_reads(tmp_path: Path) -> None:
    started = time.monotonic()
    done = subprocess.run(
        [TORCHRUN, "--standalone", "--nproc-per-node", "2", *RANK, "--output-dir", str(tmp_path)],
        capture_output=True, text=True, env=clean_env(), cwd=ROOT, timeout=WORLD_S, check=False,
    )  # fmt: skip
    seconds = time.monotonic() - started
    assert done.returncode == 0, done.stderr[-3000:]
    assert "# collbench all_reduce: 2 ranks" in done.stdout, "rank 0 prints the table"
    streamed = done.stdout.find("(rows as rank 0 measures them")
    assert 0 <= streamed < done.stdout.find("# Out of bounds values"), "each row as it is measured, then the table"
    assert 0 <= done.stdout.find("# collbench version ") < streamed, "the header with the versions above the rows"
    assert done.stdout.count("# collbench version ") == 2, "the streamed header, then the final table's"
    run = only_run(tmp_path)
    meta = json.loads((run / "run.json").read_text())
    assert (meta["launcher"], meta["external"], meta["world_size"]) == ("external", "torchrun", 2)
    assert (run / "table.txt").exists() and (run / "summary.json").exists(), "complete without collbench wait"
    shown = report(run)
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["passed"] is True
    print(f"torchrun --standalone, 2 ranks: {seconds:.1f} s from start to table")


@pytest.mark.integration
def test_mpirun_makes_one_run_placed_by_open_mpi(tmp_path: Path) -> None:
    """Debian's Open MPI (installed when missing) starts two ranks; the rendezvous is MASTER_ADDR/PORT, as
    docs/launchers.md says to pass them with -x."""
    need_tools(["mpirun"], ["openmpi-bin"], "the mpirun test")
    port = str(free_port())
    started = time.monotonic()
    done = subprocess.run(
        ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "2", "-x", "MASTER_ADDR=127.0.0.1",
         "-x", f"MASTER_PORT={port}", sys.executable, *RANK, "--output-dir", str(tmp_path)],
        capture_output=True, text=True, env=clean_env(), cwd=ROOT, timeout=WORLD_S, check=False,
    )  # fmt: skip
    seconds = time.monotonic() - started
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.count("# Out of bounds values : 0 OK") == 1, "rank 0 alone prints the table"
    run = only_run(tmp_path)
    meta = json.loads((run / "run.json").read_text())
    assert (meta["launcher"], meta["external"], meta["world_size"]) == ("external", "mpi", 2)
    shown = report(run)
    assert shown.returncode == 0 and json.loads(shown.stdout)["passed"] is True, shown.stderr
    print(f"mpirun -np 2: {seconds:.1f} s from start to table")


@pytest.mark.integration
def test_two_torchrun_nodes_by_pet_variables_make_one_run_named_by_node(tmp_path: Path) -> None:
    """Exactly what a Kubeflow TrainJob (or PyTorchJob) sets in each node's pod, NODE_NAME from spec.nodeName."""
    port = str(free_port())
    pet = {"PET_NNODES": "2", "PET_NPROC_PER_NODE": "1", "PET_MASTER_ADDR": "127.0.0.1", "PET_MASTER_PORT": port}
    started = time.monotonic()
    nodes = [pod(tmp_path, {**pet, "PET_NODE_RANK": str(rank), "NODE_NAME": name}) for rank, name in enumerate("ab")]
    try:
        outputs = [node.communicate(timeout=WORLD_S) for node in nodes]
    finally:
        for node in nodes:
            node.kill()
    seconds = time.monotonic() - started
    assert [node.returncode for node in nodes] == [0, 0], [err[-3000:] for _, err in outputs]
    assert "# collbench all_reduce: 2 ranks" in outputs[0][0]
    run = only_run(tmp_path)
    meta = json.loads((run / "run.json").read_text())
    assert (meta["launcher"], meta["external"], meta["world_size"], meta["nodes"]) == ("external", "torchrun", 2, 2)
    hosts = [json.loads((run / "status" / f"rank-{r:05d}.json").read_text())["host"] for r in range(2)]
    assert hosts == ["a", "b"]
    shown = report(run)
    assert shown.returncode == 0, shown.stderr
    assert {rank["status"]["host"] for rank in json.loads(shown.stdout)["ranks"]} == {"a", "b"}
    print(f"two torchrun nodes by PET_*: {seconds:.1f} s from start to table")


def pod(output: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    """One TrainJob node's pod: torchrun reads the PET_* variables as its own flags."""
    command = [TORCHRUN, *RANK, "--output-dir", str(output)]
    pipe = subprocess.PIPE
    return subprocess.Popen(command, env=clean_env(**env), cwd=ROOT, stdout=pipe, stderr=pipe, text=True)


def refused(env: dict[str, str], *words: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "jobs.cli.main", "rank", *words],
        capture_output=True, text=True, env=clean_env(**env), cwd=ROOT, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, lines
    return lines[0]


def test_a_process_no_launcher_started_is_refused_in_one_line() -> None:
    line = refused({})
    assert "no rank of a launcher" in line and "torchrun" in line


def test_rank_without_world_size_is_refused() -> None:
    assert "RANK is set but WORLD_SIZE is not" in refused({"RANK": "0", "MASTER_ADDR": "h", "MASTER_PORT": "1"})


def test_open_mpi_without_a_rendezvous_says_what_to_set() -> None:
    line = refused({"OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "4"})
    assert "MASTER_ADDR and MASTER_PORT" in line


def test_ranks_the_world_does_not_have_are_refused() -> None:
    env = {"RANK": "0", "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29999"}
    assert "ranks=3, but env started 2 ranks" in refused(env, "ranks=3")


def test_torchrun_inside_a_slurm_step_is_placed_by_torchrun() -> None:
    env = {
        "SLURM_PROCID": "1", "SLURM_STEP_ID": "0", "SLURM_JOB_ID": "7", "TORCHELASTIC_RUN_ID": "x",
        "RANK": "5", "WORLD_SIZE": "8", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "4", "GROUP_RANK": "1",
        "MASTER_ADDR": "n1", "MASTER_PORT": "29500", "TORCHELASTIC_USE_AGENT_STORE": "True", "NODE_NAME": "gpu-7",
    }  # fmt: skip
    place = place_from_environment(env)
    assert (place.launcher, place.rank, place.node_rank, place.nnodes, place.host) == ("torchrun", 5, 1, 2, "gpu-7")
    assert place.agent_store


def test_open_mpi_with_a_rendezvous_lays_ranks_out_node_by_node() -> None:
    env = {
        "OMPI_COMM_WORLD_RANK": "5", "OMPI_COMM_WORLD_SIZE": "8", "OMPI_COMM_WORLD_LOCAL_RANK": "1",
        "OMPI_COMM_WORLD_LOCAL_SIZE": "4", "SLURM_PROCID": "1", "SLURM_STEP_ID": "0",
    }  # fmt: skip
    place = place_from_environment(env, "n1", 29500)
    assert (place.launcher, place.rank, place.local_rank, place.node_rank, place.nnodes) == ("mpi", 5, 1, 1, 2)
    assert (place.master_addr, place.master_port, place.agent_store) == ("n1", 29500, False)


def test_an_external_run_cannot_be_cancelled_by_collbench(tmp_path: Path) -> None:
    run = RunDir.create(tmp_path, "external")
    run.update_meta(run_id=run.run_id, launcher="external", external="mpi", world_size=2, nodes=1)
    with pytest.raises(ConfigError, match="mpirun owns them"):
        ExternalLauncher().cancel(run)
    assert ExternalLauncher().describe([run])[0].state.name == "RUNNING", "no status yet: not known to have ended"
