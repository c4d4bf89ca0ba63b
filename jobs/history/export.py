"""The history's runs and their rows, for `collbench history export`: JSON (each run with every table that
hangs off it) or CSV (one line per result row, the run's columns beside it). Each run is an ExportedRun;
its columns and its tables' rows are the tables' own, by column name, as the schema has them."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select

from jobs.history import schema
from jobs.history.database import History
from jobs.history.queries import Filters, in_chunks

Row = dict[str, Any]
RUN_KEY = "id"
"""The database's own key of a run: left out of what is exported (the run id names it)."""


@dataclass(frozen=True, slots=True)
class ExportedRun:
    """One run as exported: its `runs` columns (less the database's key) and, per table that hangs off it
    (schema.CHILDREN, in that order), its rows (less their key to the run)."""

    columns: Row
    children: dict[str, list[Row]]

    @property
    def run_id(self) -> str:
        return str(self.columns["run_id"])

    @property
    def results(self) -> list[Row]:
        return self.children["results"]

    def to_plain(self) -> Row:
        """The run in the export's JSON: its columns, then each table's rows under the table's name."""
        return {**self.columns, **self.children}


def export_runs(history: History, filters: Filters) -> list[ExportedRun]:
    """Every run `filters` picks, oldest first, each with its rows under the name of their table."""
    runs = schema.runs.c
    with history.engine.connect() as connection:
        found = [
            dict(r) for r in connection.execute(filters.where(select(schema.runs)).order_by(runs.started)).mappings()
        ]
        keys = [run[RUN_KEY] for run in found]
        children: dict[str, dict[int, list[Row]]] = {}
        for table in schema.CHILDREN:
            by_run: dict[int, list[Row]] = {}
            for chunk in in_chunks(keys):
                for row in connection.execute(select(table).where(table.c.run.in_(chunk))).mappings():
                    plain = dict(row)
                    by_run.setdefault(plain.pop("run"), []).append(plain)
            children[table.name] = by_run
    return [
        ExportedRun(
            columns={k: v for k, v in run.items() if k != RUN_KEY},
            children={name: rows.get(run[RUN_KEY], []) for name, rows in children.items()},
        )
        for run in found
    ]


def to_json(runs: list[ExportedRun]) -> str:
    plain = [run.to_plain() for run in runs]
    return json.dumps({"format": "collbench-history", "view": "export", "runs": plain}, indent=1) + "\n"


RUN_COLUMNS = [c.name for c in schema.runs.columns if c.name != RUN_KEY]
ROW_COLUMNS = [c.name for c in schema.results.columns if c.name != "run"]


def to_csv(runs: list[ExportedRun]) -> str:
    """One line per result row with its run's columns first; a run without rows is one line of its own."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=RUN_COLUMNS + [f"row_{c}" if c in RUN_COLUMNS else c for c in ROW_COLUMNS])
    writer.writeheader()
    for run in runs:
        base = {c: run.columns[c] for c in RUN_COLUMNS}
        for row in run.results or [{}]:
            writer.writerow({**base, **{(f"row_{c}" if c in RUN_COLUMNS else c): v for c, v in row.items()}})
    return out.getvalue()
