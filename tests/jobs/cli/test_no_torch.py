"""Every command that runs no collective works where torch cannot be imported (a login node).

The run directories are made beforehand by real runs with torch available; then each command runs in a
fresh interpreter with a package `torch` first on PYTHONPATH whose import raises ImportError, so any
import of torch on the way (directly, or through collectives' torch code) ends in a traceback.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO, CommandResult, SlurmCluster, collbench

BLOCKED = "torch is not importable here (test)"
SMALL = ["bench.ops=[all_reduce]", "bench.max_bytes=64K", "bench.warmup_iters=1", "bench.iters=3"]


def _no_torch_env(blocker: Path, base: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ if base is None else base)
    package = blocker / "torch"
    package.mkdir(parents=True, exist_ok=True)
    (package / "__init__.py").write_text(f"raise ImportError({BLOCKED!r})\n", encoding="utf-8")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(blocker), str(REPO), env.get("PYTHONPATH", "")) if p)
    return env


@pytest.fixture(scope="module")
def no_torch(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return _no_torch_env(tmp_path_factory.mktemp("blocker"))


def no_torch_run(env: dict[str, str], *args: str, cwd: Path, timeout: float = 300) -> CommandResult:
    """`collbench ARGS` with torch unimportable; it must end without a traceback, whatever its exit status."""
    result = collbench(*args, cwd=cwd, env=env, timeout=timeout)
    for stream in (result.stdout, result.stderr):
        assert "Traceback" not in stream, f"collbench {' '.join(args)}:\n{result.stdout}\n{result.stderr}"
        assert BLOCKED not in stream and "ImportError" not in stream, f"collbench {' '.join(args)}: {result.stderr}"
    return result


def test_the_blocker_really_blocks_torch(no_torch: dict[str, str], tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", "import torch"], cwd=tmp_path, env=no_torch, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 1
    assert f"ImportError: {BLOCKED}" in proc.stderr


@pytest.mark.parametrize(
    "module",
    [
        "jobs.cli.main",
        "jobs.cli.scale_command",
        "jobs.cli.compare_command",
        "jobs.cli.isolate_command",
        "jobs.launchers.slurm",
        "jobs.launchers.local",
        "jobs.inspect.report",
        "jobs.inspect.logs",
        "jobs.inspect.formats",
        "jobs.rundir.attempts",
    ],
)
def test_importing_the_login_node_side_leaves_torch_unloaded(module: str, tmp_path: Path) -> None:
    # torch IS importable here: the module must simply not import it (a fresh interpreter, not this one)
    code = (
        f"import sys, importlib; importlib.import_module({module!r}); "
        "print(sorted(m for m in sys.modules if m == 'torch' or m.startswith('torch.')))"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]", f"importing {module} loaded {proc.stdout.strip()}"


def test_torch_is_importable_where_the_import_check_runs() -> None:
    """The check above only means something where torch could have been imported."""
    probe = subprocess.run([sys.executable, "-c", "import torch"], cwd=REPO, capture_output=True, check=False)
    assert probe.returncode == 0, probe.stderr


# ---- dry runs: the sbatch scripts of submit, isolate and scale


def test_submit_dry_run(no_torch: dict[str, str], tmp_path: Path) -> None:
    result = no_torch_run(no_torch, "submit", "--config", "testcluster", "--dry-run", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("#!/bin/bash")
    assert "#SBATCH --nodes=2" in result.stdout
    assert "#SBATCH --ntasks-per-node=2" in result.stdout
    assert re.search(r"^srun .* -m submitit\.core\._submit ", result.stdout, re.M), result.stdout
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir()), "a dry run leaves no run"


def test_isolate_dry_run(no_torch: dict[str, str], tmp_path: Path) -> None:
    result = no_torch_run(no_torch, "isolate", "--config", "testcluster", "nodes=3", "--dry-run", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("#!/bin/bash")
    assert "#SBATCH --nodes=3" in result.stdout


def test_scale_dry_run(no_torch: dict[str, str], tmp_path: Path) -> None:
    result = no_torch_run(no_torch, "scale", "--config", "testcluster", "nodes=1..3", "--dry-run", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert re.findall(r"^# ---- nodes=(\d+):", result.stdout, re.M) == ["1", "2", "3"]
    assert re.findall(r"^#SBATCH --nodes=(\d+)$", result.stdout, re.M) == ["1", "2", "3"]


# ---- reading local runs made with torch


@pytest.fixture(scope="module")
def local_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """(working directory, run A, run B): two real, passed local runs of 2 ranks."""
    workdir = tmp_path_factory.mktemp("local")
    runs = []
    for _ in range(2):
        result = collbench("run", "ranks=2", "output_dir=runs", *SMALL, cwd=workdir)
        assert result.returncode == 0, result.stderr
        runs.append(result.run_dir())
    return workdir, runs[0], runs[1]


def test_status_of_a_local_run(no_torch: dict[str, str], local_runs: tuple[Path, Path, Path]) -> None:
    workdir, run, _ = local_runs
    result = no_torch_run(no_torch, "status", str(run), cwd=workdir)
    assert result.returncode == 0, result.stderr
    assert f"run {run.name}  launcher local  ranks 2" in result.stdout
    assert re.findall(r"^\s+(\d+)\s+\S+\s+ok\s.*finished its sweep$", result.stdout, re.M) == ["0", "1"]


def test_report_of_a_local_run(no_torch: dict[str, str], local_runs: tuple[Path, Path, Path]) -> None:
    workdir, run, _ = local_runs
    result = no_torch_run(no_torch, "report", run.name, cwd=workdir)  # by run id, under ./runs
    assert result.returncode == 0, result.stderr
    assert (run / "table.txt").read_text() in result.stdout
    assert "# Out of bounds values : 0 OK" in result.stdout


def test_report_json_of_a_local_run(no_torch: dict[str, str], local_runs: tuple[Path, Path, Path]) -> None:
    workdir, run, _ = local_runs
    result = no_torch_run(no_torch, "report", str(run), "--format", "json", cwd=workdir)
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["run_id"] == run.name and document["passed"] is True
    assert [r["status"]["rank"] for r in document["ranks"]] == [0, 1]
    assert all(r["environment"]["torch"] for r in document["ranks"]), "the ranks' torch version, read from disk"
    assert document["rows"] == json.loads((run / "summary.json").read_text())["rows"]


def test_logs_of_a_local_run(no_torch: dict[str, str], local_runs: tuple[Path, Path, Path]) -> None:
    workdir, run, _ = local_runs
    result = no_torch_run(no_torch, "logs", str(run), "--rank", "1", cwd=workdir)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines and all(line.split()[0] == "1" for line in lines)
    assert any("rank 1 finished" in line for line in lines), result.stdout[-2000:]


def test_compare_two_local_runs(no_torch: dict[str, str], local_runs: tuple[Path, Path, Path]) -> None:
    workdir, base, cand = local_runs
    result = no_torch_run(no_torch, "compare", str(base), str(cand), cwd=workdir)
    rows = [line for line in result.stdout.splitlines() if line.lstrip().startswith("all_reduce")]
    assert len(rows) == len(json.loads((base / "summary.json").read_text())["rows"])
    regressed = any(line.endswith("REGRESSION") for line in rows)  # two runs on a busy 2-core machine may differ
    assert result.returncode == (1 if regressed else 0), result.stdout + result.stderr


def test_wait_on_a_finished_local_run(no_torch: dict[str, str], local_runs: tuple[Path, Path, Path]) -> None:
    workdir, run, _ = local_runs
    result = no_torch_run(no_torch, "wait", str(run), cwd=workdir, timeout=60)
    assert result.returncode == 0, result.stderr
    assert (run / "table.txt").read_text() in result.stdout


# ---- a Slurm job submitted with torch, looked at without it


def _submit(cluster: SlurmCluster, workdir: Path) -> tuple[str, Path]:
    result = collbench(
        "submit", "--config", "testcluster", "nodes=1", "output_dir=runs", *SMALL, cwd=workdir, env=cluster.env()
    )
    assert result.returncode == 0, result.stderr
    job = re.search(r"^job (\d+)$", result.stdout, re.M)
    run = re.search(r"^run directory (.+)$", result.stdout, re.M)
    assert job and run, result.stdout
    return job.group(1), Path(run.group(1))


@pytest.mark.slurm
@pytest.mark.integration
def test_status_and_wait_of_a_slurm_run(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    job, run = _submit(slurm_cluster, tmp_path)
    env = _no_torch_env(tmp_path / "blocker", slurm_cluster.env())

    early = no_torch_run(env, "status", job, cwd=tmp_path)  # by job id, under ./runs
    assert early.returncode == 0, early.stderr
    assert re.search(rf"^run {run.name}  launcher slurm  ranks 2  job {job}  [A-Z]+", early.stdout, re.M), early.stdout

    waited = no_torch_run(env, "wait", str(run), "--timeout", "240", cwd=tmp_path, timeout=300)
    assert waited.returncode == 0, waited.stdout + waited.stderr
    assert f"collbench: job {job} ended COMPLETED" in waited.stderr
    assert (run / "table.txt").read_text() in waited.stdout

    late = no_torch_run(env, "status", str(run), cwd=tmp_path)
    assert late.returncode == 0, late.stderr
    assert f"job {job}  COMPLETED" in late.stdout
    assert re.findall(r"^\s+(\d+)\s+n\d\s+ok\s", late.stdout, re.M) == ["0", "1"]


@pytest.mark.slurm
@pytest.mark.integration
def test_cancel_of_a_slurm_run(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    job, run = _submit(slurm_cluster, tmp_path)
    env = _no_torch_env(tmp_path / "blocker", slurm_cluster.env())

    cancelled = no_torch_run(env, "cancel", str(run), cwd=tmp_path)
    assert cancelled.returncode == 0, cancelled.stderr
    assert cancelled.stdout.strip() == f"cancelled job {job}"

    deadline = time.monotonic() + 60
    while True:
        status = no_torch_run(env, "status", str(run), cwd=tmp_path)
        assert status.returncode == 0, status.stderr
        if f"job {job}  CANCELLED" in status.stdout or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert f"job {job}  CANCELLED" in status.stdout, status.stdout

    waited = no_torch_run(env, "wait", str(run), "--timeout", "30", cwd=tmp_path)
    assert waited.returncode == 1, "a cancelled job did not complete"
    assert f"job {job} ended CANCELLED" in waited.stderr
