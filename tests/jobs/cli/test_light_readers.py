"""`status` and `report` of a finished local run start light: they load neither submitit (which starts
ranks), nor prometheus_client (the exports at a run's end), nor SQLAlchemy (the history), so a login node's
most frequent commands pay only for reading the run. Each is blocked: an import of it raises."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import REPO, collbench
from tests.jobs.rundir import synthetic

HEAVY = ("submitit", "prometheus_client", "sqlalchemy")


@pytest.mark.parametrize("command", [["status"], ["report"], ["report", "--format", "json"]], ids=" ".join)
def test_reading_a_finished_run_loads_nothing_it_does_not_use(command: list[str], tmp_path: Path) -> None:
    run = synthetic.sweep_run(tmp_path / "runs")
    blocker = tmp_path / "blocker"
    for name in HEAVY:
        (blocker / name).mkdir(parents=True)
        (blocker / name / "__init__.py").write_text(f"raise ImportError('{name} is blocked here (test)')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join((str(blocker), str(REPO)))}
    result = collbench(*command, str(run.path), cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stderr
    assert "blocked here" not in result.stdout + result.stderr and "Traceback" not in result.stderr
