"""`collbench history` as a user runs it: one line and exit 2 for a history that cannot be used (before
any run starts), real concurrent writers, and a local run recorded when it ends."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from alembic.migration import MigrationContext
from sqlalchemy import column, func, select, table, update

from jobs.history import schema
from jobs.history.database import open_history
from tests.conftest import REPO, collbench
from tests.jobs.rundir import synthetic


def _one_line_exit_2(*args: str, cwd: Path) -> str:
    done = collbench(*args, cwd=cwd)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("collbench: error: "), done.stderr
    return lines[0]


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("not a url", "is not a database URL"),
        ("mysql://me@db/history", "unknown scheme 'mysql'"),
        ("postgresql://me:hunter2@db/history", "PGPASSWORD or ~/.pgpass"),
        ("postgresql://me@/history?host=/nonexistent-socket-dir", '/nonexistent-socket-dir/.s.PGSQL.5432" failed'),
    ],
)
def test_a_history_that_cannot_be_used_is_one_line_and_exit_2(url: str, said: str, tmp_path: Path) -> None:
    line = _one_line_exit_2("history", "list", "--db", url, cwd=tmp_path)
    assert said in line and "hunter2" not in line


def test_a_run_with_a_bad_history_starts_nothing(tmp_path: Path) -> None:
    line = _one_line_exit_2("run", "ranks=1", "history.url=postgresql://me:hunter2@db/h", cwd=tmp_path)
    assert "hunter2" not in line and not (tmp_path / "runs").exists()


def test_a_wrong_password_and_a_newer_schema_are_refused(
    history_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    history = open_history(history_url)
    with history.engine.begin() as connection:
        MigrationContext.configure(connection).stamp(_script(), "heads")  # at head: nothing to do
        connection.execute(schema.metadata.tables["runs"].delete())
    history.close()
    if history_url.startswith("postgresql"):
        monkeypatch.setenv("PGPASSWORD", "wrong")
        assert "password authentication failed" in _one_line_exit_2(
            "history", "list", "--db", history_url, cwd=tmp_path
        )
        monkeypatch.undo()
        monkeypatch.setenv("PGPASSWORD", _password())
    with open_history(history_url).engine.begin() as connection:
        connection.execute(update(table("alembic_version", column("version_num"))).values(version_num="9999"))
    line = _one_line_exit_2("history", "list", "--db", history_url, cwd=tmp_path)
    assert "revision 9999, newer than this collbench knows" in line


def _script():  # type: ignore[no-untyped-def]
    from alembic.script import ScriptDirectory

    from jobs.history.database import MIGRATIONS

    return ScriptDirectory(str(MIGRATIONS))


def _password() -> str:
    from tests.postgres import PASSWORD

    return PASSWORD


def test_two_runs_ending_at_once_both_land(history_url: str, tmp_path: Path) -> None:
    """Real concurrent writers on a history that does not exist yet: both migrate and record at once."""
    runs = [synthetic.sweep_run(tmp_path / f"out{i}") for i in range(4)]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    writers = [
        subprocess.Popen(
            [sys.executable, "-m", "jobs.cli", "history", "ingest", "--db", history_url, str(run.path)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for run in runs + runs[:2]  # and two writers race on the same run: it lands once
    ]
    for writer in writers:
        _, err = writer.communicate(timeout=120)
        assert writer.returncode == 0, err
    history = open_history(history_url)
    with history.engine.connect() as connection:
        ids = connection.execute(select(schema.runs.c.run_id)).scalars().all()
        rows = connection.execute(select(func.count()).select_from(schema.results)).scalar_one()
    assert sorted(ids) == sorted(run.run_id for run in runs)
    assert rows == 4 * len(synthetic.SIZES)


@pytest.mark.integration
def test_a_local_run_is_recorded_when_it_ends(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    done = collbench("run", "ranks=2", "bench.ops=[all_reduce]", "bench.max_bytes=64K", f"history.url={url}",
                     cwd=tmp_path, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    listed = collbench("history", "list", "--db", url, "--format", "csv", cwd=tmp_path)
    assert done.run_dir().name in listed.stdout and ",passed," in listed.stdout
    again = collbench("history", "ingest", "--db", url, str(tmp_path / "runs"), cwd=tmp_path)
    assert "recorded 0 run(s), 1 already recorded" in again.stdout
