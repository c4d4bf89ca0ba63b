"""The same results recorded twice are one history row (runs.digest), on SQLite and PostgreSQL alike: one
nccl-tests file imported into two run directories, a run directory copied under a new run id; ingest says so,
naming both run ids, and record_run answers False."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

from sqlalchemy import func, select

from jobs.history import schema
from jobs.history.database import History, open_history
from jobs.history.gather import gather
from jobs.history.ingest import ingest, record_run
from jobs.imports.read import read_outputs
from jobs.launchers.imported import import_run
from jobs.rundir.layout import RunDir
from tests.jobs.rundir import synthetic

SOURCE = Path(__file__).parents[1] / "imports" / "logs" / "v3-all_gather.json"


def _runs(history: History) -> int:
    with history.engine.connect() as connection:
        return int(connection.execute(select(func.count()).select_from(schema.runs)).scalar_one())


def test_one_file_imported_into_two_run_directories_is_one_row(history_url: str, tmp_path: Path) -> None:
    job = read_outputs([SOURCE])
    first = import_run(job, str(tmp_path / "a"), [str(SOURCE)]).run
    second = import_run(job, str(tmp_path / "b"), [str(SOURCE)]).run
    assert first.run_id != second.run_id
    history = open_history(history_url)
    done = ingest(history, [tmp_path / "a", tmp_path / "b"])
    assert done.recorded == [first.run_id] and done.already == [] and done.skipped == []
    assert done.same == [
        f"{second.path}: run {second.run_id} holds the same results as run {first.run_id}, already recorded: "
        "not recorded again"
    ]
    same = "1 the same results as a run already recorded"
    assert done.line() == f"recorded 1 run(s), 0 already recorded, {same}, 0 skipped"
    assert _runs(history) == 1
    assert not record_run(history, second), "record_run answers False for the same results"
    again = ingest(history, [tmp_path])
    assert again.recorded == [] and again.already == [first.run_id] and len(again.same) == 1 and _runs(history) == 1


def test_a_run_directory_copied_under_a_new_run_id_is_recorded_once(history_url: str, tmp_path: Path) -> None:
    run = synthetic.sweep_run(tmp_path / "runs")
    copy = RunDir(tmp_path / "copies" / f"{run.run_id}-copy")
    shutil.copytree(run.path, copy.path)
    copy.update_meta(run_id=copy.run_id)
    history = open_history(history_url)
    assert record_run(history, run) and not record_run(history, copy)
    assert _runs(history) == 1


def test_the_digest_holds_across_re_reads_and_changes_with_any_figure(history_url: str, tmp_path: Path) -> None:
    run = synthetic.sweep_run(tmp_path / "runs")
    digest = gather(run).run["digest"]
    assert len(digest) == 64 and gather(run).run["digest"] == digest
    other = RunDir(tmp_path / "other" / f"{run.run_id}-slower")
    shutil.copytree(run.path, other.path)
    other.update_meta(run_id=other.run_id)
    lines = [synthetic.result(0, "vm", size, 2, 20.0 + size / 100) for size in synthetic.SIZES]
    lines[-1] = dataclasses.replace(lines[-1], time_us=lines[-1].time_us * 2, busbw=lines[-1].busbw / 2)
    other.rank_results(0).write_text("".join(line.to_json() + "\n" for line in lines))
    assert gather(other).run["digest"] != digest
    history = open_history(history_url)
    assert record_run(history, run) and record_run(history, other), "other results: another row"
    assert _runs(history) == 2
