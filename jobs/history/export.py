"""The history's runs and their rows as plain data, for `collbench history export`: JSON (each run with
every table that hangs off it) or CSV (one line per result row, the run's columns beside it)."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

from sqlalchemy import select

from jobs.history import schema
from jobs.history.database import History
from jobs.history.queries import Filters, in_chunks

Row = dict[str, Any]
RUN_KEY = "id"
"""The database's own key of a run: left out of what is exported (the run id names it)."""


def export_runs(history: History, filters: Filters) -> list[Row]:
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
        {
            **{k: v for k, v in run.items() if k != RUN_KEY},
            **{name: rows.get(run[RUN_KEY], []) for name, rows in children.items()},
        }
        for run in found
    ]


def to_json(runs: list[Row]) -> str:
    return json.dumps({"format": "collbench-history", "view": "export", "runs": runs}, indent=1) + "\n"


RUN_COLUMNS = [c.name for c in schema.runs.columns if c.name != RUN_KEY]
ROW_COLUMNS = [c.name for c in schema.results.columns if c.name != "run"]


def to_csv(runs: list[Row]) -> str:
    """One line per result row with its run's columns first; a run without rows is one line of its own."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=RUN_COLUMNS + [f"row_{c}" if c in RUN_COLUMNS else c for c in ROW_COLUMNS])
    writer.writeheader()
    for run in runs:
        base = {c: run[c] for c in RUN_COLUMNS}
        for row in run["results"] or [{}]:
            writer.writerow({**base, **{(f"row_{c}" if c in RUN_COLUMNS else c): v for c, v in row.items()}})
    return out.getvalue()
