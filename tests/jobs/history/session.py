"""What the tests' own history (tests/conftest.py `_history_of_the_tests`: history.url's default under the
session's XDG_DATA_HOME) holds of one run: for the Slurm tests, which record into it as a user's runs do."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from jobs.history import schema
from jobs.history.database import open_history
from jobs.history.queries import recorded_run

Row = dict[str, Any]


def recorded(run_id: str) -> tuple[Row, dict[str, list[Row]]] | None:
    """The run's `runs` row and its rows by table, or None when the history does not hold it."""
    with open_history("") as history:
        run = recorded_run(history, run_id)
        if run is None or run.run_id != run_id:
            return None
        with history.engine.connect() as connection:
            children = {
                table.name: [
                    dict(r) for r in connection.execute(select(table).where(table.c.run == run.key)).mappings()
                ]
                for table in schema.CHILDREN
            }
        return run.columns, children


def _rows(result: Any) -> list[Row]:
    return [dict(r) for r in result.mappings()]
