"""Removing runs from the history: those started before a date, or all but the newest N, among the runs a
filter picks; each with every row that hangs off it, in one transaction. A sweep none of whose runs is
left goes with them. A dry run counts what would go and removes nothing."""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import Connection, Table, delete, exists, func, select

from jobs.history import schema
from jobs.history.database import History
from jobs.history.queries import Filters, in_chunks


@dataclass(slots=True)
class Pruned:
    runs: list[str] = field(default_factory=list)
    """The run ids removed (or that would be), oldest first."""
    rows: dict[str, int] = field(default_factory=dict)
    """Table -> rows removed with them (sweeps included)."""
    dry_run: bool = False

    def line(self) -> str:
        verb = "would remove" if self.dry_run else "removed"
        rows = ", ".join(f"{n} {table}" for table, n in self.rows.items() if n)
        return f"{verb} {len(self.runs)} run(s)" + (f" with their rows ({rows})" if rows else "")


def prune(
    history: History, filters: Filters, before: float | None = None, keep_last: int | None = None, dry_run: bool = False
) -> Pruned:
    """Among the runs `filters` picks: those started before `before`, and all but the newest `keep_last`
    (both given: a run goes when either says so)."""
    if before is None and keep_last is None:
        raise ValueError("prune needs before or keep_last")
    done = Pruned(dry_run=dry_run)
    with history.engine.begin() as connection:
        doomed = _doomed(connection, filters, before, keep_last)
        done.runs = [run_id for _, run_id in doomed]
        keys = [key for key, _ in doomed]
        for table in schema.CHILDREN:
            done.rows[table.name] = _count_or_delete(connection, table, keys, dry_run)
        if not dry_run:
            for chunk in in_chunks(keys):
                connection.execute(delete(schema.runs).where(schema.runs.c.id.in_(chunk)))
            done.rows["sweeps"] = _empty_sweeps(connection)
    return done


def _doomed(
    connection: Connection, filters: Filters, before: float | None, keep_last: int | None
) -> list[tuple[int, str]]:
    runs = schema.runs.c
    picked = connection.execute(filters.where(select(runs.id, runs.run_id, runs.started)).order_by(runs.started.desc()))
    found = [(row.id, row.run_id, row.started) for row in picked]
    doomed = [
        (key, run_id)
        for i, (key, run_id, started) in enumerate(found)
        if (before is not None and started < before) or (keep_last is not None and i >= keep_last)
    ]
    return doomed[::-1]


def _count_or_delete(connection: Connection, table: Table, keys: list[int], dry_run: bool) -> int:
    total = 0
    for chunk in in_chunks(keys):
        if dry_run:
            count = select(func.count()).select_from(table).where(table.c.run.in_(chunk))
            total += int(connection.execute(count).scalar_one())
        else:
            total += int(connection.execute(delete(table).where(table.c.run.in_(chunk))).rowcount)
    return total


def _empty_sweeps(connection: Connection) -> int:
    sweeps, runs = schema.sweeps.c, schema.runs.c
    orphan = ~exists(select(runs.id).where(runs.sweep_id == sweeps.sweep_id))
    return int(connection.execute(delete(schema.sweeps).where(orphan)).rowcount)
