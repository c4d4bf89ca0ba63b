"""Migration 0004 (runs.excluded and digest; hosts.wrong, wrong_ranks and cause) on SQLite and PostgreSQL alike:
a history at 0003 holding a failed run, a run with wrong elements, a run with a slow host and a healthy run,
upgraded: the backfill leaves out of the baselines exactly the first three; down to 0003 drops the columns and
keeps the rows; up again."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import MetaData, func, select

from jobs.history import schema
from jobs.history.database import make_engine, open_history, parse_url
from jobs.history.gather import gather
from jobs.history.ingest import record_run
from jobs.rundir.layout import RunDir
from jobs.rundir.records.rank import STATUS, RankState
from tests.jobs.history.test_fabric_grains import HEAD, alembic_to, columns_of, insert_as_of_old
from tests.jobs.history.test_node_record import four_ranks
from tests.jobs.rundir import synthetic

NEW_RUN_COLUMNS = {"excluded", "digest"}
NEW_HOST_COLUMNS = {"wrong", "wrong_ranks", "cause"}
BEFORE = " (recorded before 0004)"


def _runs_of_0003(tmp_path: Path) -> dict[str, RunDir]:
    failed = synthetic.sweep_run(tmp_path / "failed")
    status = STATUS.read(failed.rank_status(1))
    STATUS.write(failed.rank_status(1), dataclasses.replace(status, state=RankState.FAILED, error="ValueError: x"))
    wrong = synthetic.sweep_run(tmp_path / "wrong")
    lines = [
        dataclasses.replace(synthetic.result(1, "vm", size, 2, 30.0), wrong=2, first_wrong_index=0)
        for size in synthetic.SIZES
    ]
    wrong.rank_results(1).write_text("".join(line.to_json() + "\n" for line in lines))
    slow = four_ranks(tmp_path / "slow", own_s={3: 0.3}, late={})
    return {"failed": failed, "wrong": wrong, "slow": slow, "healthy": synthetic.sweep_run(tmp_path / "healthy")}


def _excluded(history_url: str) -> dict[str, str]:
    engine = make_engine(parse_url(history_url))
    try:
        with engine.connect() as connection:
            rows = connection.execute(select(schema.runs.c.run_id, schema.runs.c.excluded)).all()
    finally:
        engine.dispose()
    return {run_id: excluded for run_id, excluded in rows}


def test_migration_0004_backfills_why_runs_are_left_out_and_downgrades_cleanly(
    history_url: str, tmp_path: Path
) -> None:
    runs = _runs_of_0003(tmp_path)
    alembic_to(history_url, "0003")
    assert not NEW_RUN_COLUMNS & set(columns_of(history_url, "runs"))
    assert not NEW_HOST_COLUMNS & set(columns_of(history_url, "hosts"))
    for run in runs.values():
        insert_as_of_old(history_url, gather(run))

    history = open_history(history_url)  # upgrades to head, in place
    with history.engine.connect() as connection:
        assert MigrationContext.configure(connection).get_current_revision() == HEAD
        assert compare_metadata(MigrationContext.configure(connection), schema.metadata) == []
        hosts = connection.execute(select(schema.hosts.c.wrong, schema.hosts.c.wrong_ranks, schema.hosts.c.cause))
        assert set(hosts.all()) == {(0, "", "")}, "what 0003 did not keep is not made up"
    history.close()
    expected = {
        runs["failed"].run_id: f"the run failed{BEFORE}",
        runs["wrong"].run_id: f"the run failed{BEFORE}",  # wrong elements fail a run: its first reason
        runs["slow"].run_id: f"its verdict named a slow host{BEFORE}",
        runs["healthy"].run_id: "",
    }
    assert _excluded(history_url) == expected

    alembic_to(history_url, "0003", down=True)
    assert not NEW_RUN_COLUMNS & set(columns_of(history_url, "runs"))
    assert not NEW_HOST_COLUMNS & set(columns_of(history_url, "hosts"))
    engine = make_engine(parse_url(history_url))
    with engine.connect() as connection:
        tables = MetaData()
        tables.reflect(connection)
        assert "ix_runs_digest" not in {index.name for index in tables.tables["runs"].indexes}
        assert connection.execute(select(func.count()).select_from(tables.tables["runs"])).scalar_one() == 4
        assert connection.execute(select(func.count()).select_from(tables.tables["hosts"])).scalar_one() == 5
    engine.dispose()

    history = open_history(history_url)  # and up again
    newer = synthetic.sweep_run(tmp_path / "newer")
    assert record_run(history, newer)
    history.close()
    assert _excluded(history_url) == {**expected, newer.run_id: ""}
