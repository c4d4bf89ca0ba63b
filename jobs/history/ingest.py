"""Recording runs: each run once (its run id is unique; a later Slurm attempt replaces the earlier one's
record), in one transaction, so two writers that end at once both land and a retry adds nothing. The same
results under another run id (one nccl-tests file imported twice, a run directory copied: the same digest) are
not recorded again."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, delete, insert, select
from sqlalchemy.exc import IntegrityError, OperationalError

from jobs.history import schema
from jobs.history.database import History
from jobs.history.gather import NotEnded, RunRecord, gather
from jobs.inspect.report import RunOutcome
from jobs.rundir.attempts import read_attempts
from jobs.rundir.layout import RunDir
from jobs.rundir.records.codec import RecordError
from jobs.rundir.sweep import SWEEP_FILE, Sweep

RETRIES = 3
"""Transactions retried when a concurrent writer got there first (a unique key) or held the lock."""


@dataclass(slots=True)
class Ingested:
    recorded: list[str] = field(default_factory=list)
    already: list[str] = field(default_factory=list)
    same: list[str] = field(default_factory=list)
    """One line each: the directory, its run id and the run already recorded with the same results."""
    skipped: list[str] = field(default_factory=list)
    """One line each: the directory and why it was not recorded."""

    def line(self) -> str:
        same = f", {len(self.same)} the same results as a run already recorded" if self.same else ""
        return (
            f"recorded {len(self.recorded)} run(s), {len(self.already)} already recorded{same}, "
            f"{len(self.skipped)} skipped"
        )


@dataclass(frozen=True, slots=True)
class Written:
    """What writing one run's record did."""

    recorded: bool
    same_as: str = ""
    """The run id already recorded with the same results (digest), when that is why it was not written."""


def record_run(
    history: History, run: RunDir, sweep: Sweep | None = None, outcome_of: Callable[[], RunOutcome] | None = None
) -> bool:
    """Record `run` unless the history holds it already (this attempt or a later one, or its results under
    another run id): True if recorded. `outcome_of`: the run's outcome where the caller has it (else the run is
    read here)."""
    return _record(history, run, sweep, outcome_of).recorded


def _record(
    history: History, run: RunDir, sweep: Sweep | None = None, outcome_of: Callable[[], RunOutcome] | None = None
) -> Written:
    attempt = max(len(read_attempts(run)) - 1, 0)
    if sweep is None and (run.path.parent / SWEEP_FILE).is_file():  # collbench scale's runs live in their sweep
        sweep = Sweep(run.path.parent)
    recorded = _recorded_attempt(history, run.run_id)
    if recorded is not None and recorded >= attempt:
        return Written(recorded=False)
    record = gather(run, sweep.sweep_id if sweep else None, outcome_of)
    return write_record(history, record, _sweep_row(sweep) if sweep else None)


def write_record(history: History, record: RunRecord, sweep_row: dict[str, Any] | None = None) -> Written:
    """Write a gathered record in one transaction (retried against a concurrent writer). Not written when the
    history holds this run at this attempt or a later one, or its results under another run id: `same_as`
    names that run."""
    for tries_left in reversed(range(RETRIES)):
        try:
            with history.engine.begin() as connection:
                return _write(connection, record, sweep_row)
        except (IntegrityError, OperationalError):
            if not tries_left:
                raise
    return Written(recorded=False)


def _recorded_attempt(history: History, run_id: str) -> int | None:
    with history.engine.connect() as connection:
        found = connection.execute(select(schema.runs.c.attempt).where(schema.runs.c.run_id == run_id)).first()
    return None if found is None else int(found[0])


def _write(connection: Connection, record: RunRecord, sweep_row: dict[str, Any] | None) -> Written:
    runs = schema.runs
    existing = connection.execute(select(runs.c.id, runs.c.attempt).where(runs.c.run_id == record.run_id)).first()
    if existing is not None and existing.attempt >= record.run["attempt"]:
        return Written(recorded=False)
    same_as = _same_results(connection, record)
    if same_as:
        return Written(recorded=False, same_as=same_as)
    if existing is not None:
        for table in schema.CHILDREN:
            connection.execute(delete(table).where(table.c.run == existing.id))
        connection.execute(delete(runs).where(runs.c.id == existing.id))
    if sweep_row is not None:
        known = select(schema.sweeps.c.sweep_id).where(schema.sweeps.c.sweep_id == sweep_row["sweep_id"])
        if connection.execute(known).first() is None:
            connection.execute(insert(schema.sweeps), [sweep_row])
    key = connection.execute(insert(runs).returning(runs.c.id), [record.run]).scalar_one()
    for table in schema.CHILDREN:
        rows = record.children.get(table.name, [])
        if rows:
            connection.execute(insert(table), [{**row, "run": key} for row in rows])
    return Written(recorded=True)


def _same_results(connection: Connection, record: RunRecord) -> str:
    """The run id of another run recorded with this record's digest, or ''."""
    digest = record.run.get("digest", "")
    if not digest:
        return ""
    runs = schema.runs
    query = select(runs.c.run_id).where(runs.c.digest == digest, runs.c.run_id != record.run_id)
    found = connection.execute(query.order_by(runs.c.id).limit(1)).first()
    return "" if found is None else str(found.run_id)


def _sweep_row(sweep: Sweep) -> dict[str, Any]:
    meta = sweep.read()
    overrides = " ".join(meta.overrides)
    return {
        "sweep_id": sweep.sweep_id,
        "created": meta.created,
        "config": " ".join(part for part in (meta.config or "", overrides) if part),
        "node_counts": ",".join(map(str, meta.node_counts)),
    }


def ingest(history: History, paths: Iterable[Path]) -> Ingested:
    """Every run under `paths` (run directories, sweeps, whole output_dirs) not recorded yet."""
    done = Ingested()
    seen: set[Path] = set()
    for run, sweep in _runs_under(paths, done):
        if run.path in seen:  # a sweep's run, reached through the sweep and through a directory listing
            continue
        seen.add(run.path)
        try:
            written = _record(history, run, sweep)
        except NotEnded:
            done.skipped.append(f"{run.path}: not ended yet")
            continue
        except (RecordError, OSError, ValueError) as error:
            done.skipped.append(f"{run.path}: {error}")
            continue
        if written.same_as:
            done.same.append(
                f"{run.path}: run {run.run_id} holds the same results as run {written.same_as}, already recorded: "
                "not recorded again"
            )
        else:
            (done.recorded if written.recorded else done.already).append(run.run_id)
    return done


def _runs_under(paths: Iterable[Path], done: Ingested) -> Iterator[tuple[RunDir, Sweep | None]]:
    for path in paths:
        if (path / SWEEP_FILE).is_file():
            yield from _sweep_runs(Sweep(path.resolve()))
        elif RunDir(path).meta_file.is_file():
            yield RunDir(path.resolve()), None
        elif path.is_dir():
            yield from _runs_under(sorted(p for p in path.iterdir() if p.is_dir()), done)
        else:
            done.skipped.append(f"{path}: not a run directory, a sweep or a directory of them")


def _sweep_runs(sweep: Sweep) -> Iterator[tuple[RunDir, Sweep | None]]:
    for entry in sweep.entries():
        if entry.run_dir:
            yield RunDir(Path(entry.run_dir).resolve()), sweep
