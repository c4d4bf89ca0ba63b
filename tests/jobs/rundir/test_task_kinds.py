"""The kind of run in run.json (format 4: sweep, isolate, check, check-node), and a format 3 file read as the
kind it ran: a check run of format 3 said isolate, its config isolate.mode check."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jobs.config.tasks import TASK_NAMES
from jobs.rundir.layout import RunDir
from jobs.rundir.records.run import RUN, RUN_VERSION, TASK_KINDS_VERSION
from tests.jobs.rundir.synthetic import isolate_run, paced_isolate_run


def _as_format_3(run: RunDir) -> None:
    """run.json as a collbench before task kinds wrote it: a check run's task said isolate."""
    plain = json.loads(run.meta_file.read_text())
    plain.update(version=TASK_KINDS_VERSION - 1, task="isolate" if plain["task"] == "check" else plain["task"])
    run.meta_file.write_text(json.dumps(plain))


def test_a_check_run_of_format_3_reads_as_check_by_its_config(tmp_path: Path) -> None:
    run = paced_isolate_run(tmp_path, 4, lambda group: 1.0, ["isolate.mode=check"])
    assert run.read_meta().task == "check"
    _as_format_3(run)
    assert json.loads(run.meta_file.read_text())["task"] == "isolate"
    assert run.read_meta().task == "check"
    assert RUN.read(run.meta_file).task == "isolate", "the file alone cannot tell: the run directory reads it"


def test_an_isolate_run_of_format_3_stays_isolate(tmp_path: Path) -> None:
    run = isolate_run(tmp_path)
    _as_format_3(run)
    assert run.read_meta().task == "isolate"


def test_updating_a_format_3_check_run_writes_check_in_format_4(tmp_path: Path) -> None:
    run = paced_isolate_run(tmp_path, 4, lambda group: 1.0, ["isolate.mode=check"])
    _as_format_3(run)
    run.update_meta(job_id="99")
    written = json.loads(run.meta_file.read_text())
    assert (written["version"], written["task"], written["job_id"]) == (RUN_VERSION, "check", "99")


def test_a_format_3_isolate_run_without_its_config_reads_as_isolate(tmp_path: Path) -> None:
    run = paced_isolate_run(tmp_path, 4, lambda group: 1.0, ["isolate.mode=check"])
    _as_format_3(run)
    run.config_file.unlink()
    assert run.read_meta().task == "isolate"


@pytest.mark.parametrize("task", TASK_NAMES)
def test_every_kind_is_written_and_read_back(tmp_path: Path, task: str) -> None:
    run = RunDir.create(tmp_path, "local")
    run.update_meta(run_id=run.run_id, launcher="local", world_size=1, nodes=1, task=task)
    assert run.read_meta().task == task


def test_a_task_no_kind_names_is_refused_in_one_line(tmp_path: Path) -> None:
    run = RunDir.create(tmp_path, "local")
    data = {"version": RUN_VERSION, "run_id": "r", "launcher": "local", "world_size": 1, "nodes": 1, "task": "bisect"}
    run.meta_file.write_text(json.dumps(data))
    with pytest.raises(ValueError, match=r"damaged run.json \(format 4\).*task"):
        run.read_meta()
