"""Reading a run never writes into it: every reading command on finished runs under a read-only bind
mount succeeds, and every file's sha256 is unchanged.

The runs: a real local run (and a copy of it, for compare), a node-count sweep and an isolate run made
through the run directory's records. Needs root (mount --bind); the mount is undone whatever happens.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import collbench
from tests.jobs.rundir.files import fingerprint
from tests.jobs.rundir.synthetic import isolate_run, scale_sweep

FAST = ["bench.ops=[all_reduce]", "bench.min_bytes=256", "bench.max_bytes=4K", "bench.warmup_iters=1", "bench.iters=3"]


@dataclass(frozen=True)
class ReadOnlyRuns:
    root: Path
    """The read-only mount."""
    run: Path
    same: Path
    """A copy of `run`."""
    sweep: Path
    isolate: Path


def _is_mount_point(path: Path) -> bool:
    """A bind mount of a folder on the same filesystem is one too (os.path.ismount cannot tell)."""
    with open("/proc/self/mountinfo", encoding="utf-8") as mounts:
        return any(line.split()[4] == str(path) for line in mounts)


def _mount_read_only(source: Path, target: Path) -> None:
    subprocess.run(["mount", "--bind", str(source), str(target)], check=True)
    try:
        subprocess.run(["mount", "-o", "remount,bind,ro", str(target)], check=True)
    except subprocess.CalledProcessError:
        subprocess.run(["umount", str(target)], check=False)
        raise


@pytest.fixture(scope="module")
def read_only_runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReadOnlyRuns]:
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("a read-only bind mount needs root and mount(8)")
    source = tmp_path_factory.mktemp("runs")
    made = collbench("run", "ranks=2", f"output_dir={source}", *FAST, cwd=source)
    assert made.returncode == 0, made.stderr
    run = made.run_dir()
    shutil.copytree(run, source / "same")
    sweep = scale_sweep(source / "sweeps").path
    isolate = isolate_run(source / "isolate")
    target = tmp_path_factory.mktemp("read-only")
    _mount_read_only(source, target)
    try:
        yield ReadOnlyRuns(
            root=target,
            run=target / run.relative_to(source),
            same=target / "same",
            sweep=target / sweep.relative_to(source),
            isolate=target / isolate.path.relative_to(source),
        )
    finally:
        subprocess.run(["umount", str(target)], check=False)
        if _is_mount_point(target):
            subprocess.run(["umount", "-l", str(target)], check=False)


def commands(runs: ReadOnlyRuns) -> dict[str, list[str]]:
    run, same = str(runs.run), str(runs.same)
    return {
        "report": ["report", run],
        "report --format json": ["report", run, "--format", "json"],
        "status": ["status", run],
        "logs": ["logs", run],
        "wait": ["wait", run],
        "compare A B": ["compare", run, same],
        "compare A A": ["compare", run, run],
        "report --against-history": ["report", run, "--against-history"],
        "compare A --against-history": ["compare", run, "--against-history"],
        "scale report": ["scale", "report", str(runs.sweep)],
        "isolate report": ["isolate", "report", str(runs.isolate)],
        "isolate report --format json": ["isolate", "report", str(runs.isolate), "--format", "json"],
    }


EXPECTED_EXIT = {"isolate report": 1, "isolate report --format json": 1}
"""The isolate run names a bad link: exit 1 is its verdict, not a failure to read."""


@pytest.mark.integration
@pytest.mark.parametrize("name", list(commands(ReadOnlyRuns(*(Path(),) * 5))))
def test_reading_a_run_on_a_read_only_mount_writes_nothing(
    read_only_runs: ReadOnlyRuns, tmp_path: Path, name: str
) -> None:
    assert _is_mount_point(read_only_runs.root)
    with pytest.raises(OSError, match="Read-only file system"):
        (read_only_runs.root / "probe").write_text("")
    before = fingerprint(read_only_runs.root)
    result = collbench(*commands(read_only_runs)[name], "--output-dir", str(read_only_runs.root), cwd=tmp_path)
    assert result.returncode == EXPECTED_EXIT.get(name, 0), f"{name}:\n{result.stdout}\n{result.stderr}"
    assert "Read-only file system" not in result.stderr
    assert fingerprint(read_only_runs.root) == before, f"{name} changed the run directory"
