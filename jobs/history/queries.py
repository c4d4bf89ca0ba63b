"""What `collbench history` asks: runs by filters, one figure's trend with its baseline (a node's record:
jobs.history.node_record).
Every view is a list of typed records (frozen dataclasses); `to_plain()` gives each as the row the CLI
renders as a table, JSON or CSV (its keys, in order, are the output's columns)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from sqlalchemy import Select, and_, exists, func, select

from jobs.history import schema
from jobs.history.against import BASELINE_RUNS, MIN_BASELINE_RUNS, Key, Past, median_mad
from jobs.history.database import History

Row = dict[str, Any]
"""A record as plain data, for JSON and CSV."""
FIGURES = ("busbw", "algbw", "time_us")


@dataclass(frozen=True, slots=True)
class ListedRun:
    """One run of `history list`: its fields, in order, are the listing's columns."""

    run_id: str
    started: float
    cluster: str
    config: str
    """The config fingerprint (jobs.config.fingerprint.config_fingerprint)."""
    nodes: int
    world_size: int
    hostlist: str
    task: str
    job_id: str
    attempt: int
    outcome: str
    sweep_id: str | None

    def to_plain(self) -> Row:
        return asdict(self)


RUN_COLUMNS = tuple(f.name for f in fields(ListedRun))


CHUNK = 500
"""Keys per IN (...): far below any database's limit on parameters."""


def in_chunks(keys: list[int]) -> list[list[int]]:
    """`keys` in slices of CHUNK, one IN (...) each."""
    return [keys[i : i + CHUNK] for i in range(0, len(keys), CHUNK)]


@dataclass(frozen=True, slots=True)
class Filters:
    since: float | None = None
    config: str | None = None
    """A config fingerprint, or its first digits."""
    cluster: str | None = None
    nodes: int | None = None
    op: str | None = None
    outcome: str | None = None
    backend: str | None = None
    device: str | None = None
    world_size: int | None = None

    def where(self, query: Select[Any]) -> Select[Any]:
        runs = schema.runs.c
        if self.since is not None:
            query = query.where(runs.started >= self.since)
        if self.config:
            query = query.where(runs.config.startswith(self.config, autoescape=True))
        for column, value in (
            (runs.cluster, self.cluster),
            (runs.nodes, self.nodes),
            (runs.outcome, self.outcome),
            (runs.backend, self.backend),
            (runs.device, self.device),
            (runs.world_size, self.world_size),
        ):
            if value is not None:
                query = query.where(column == value)
        if self.op:
            rows = schema.results.alias("op_rows")
            query = query.where(exists(select(rows.c.run).where(and_(rows.c.run == runs.id, rows.c.op == self.op))))
        return query


def list_runs(history: History, filters: Filters, limit: int = 50) -> list[ListedRun]:
    runs = schema.runs.c
    query = filters.where(select(*(runs[name] for name in RUN_COLUMNS))).order_by(runs.started.desc()).limit(limit)
    with history.engine.connect() as connection:
        return [ListedRun(**row._mapping) for row in connection.execute(query)]


@dataclass(frozen=True, slots=True)
class TrendPoint:
    """One run's point of a trend: its best `figure` (busbw, algbw or time_us) at (op, requested size)."""

    run_id: str
    started: float
    nodes: int
    config: str
    outcome: str
    figure: str
    """Which figure `value` is."""
    value: float

    def to_plain(self) -> Row:
        """The trend's row: the run's columns, then the figure under its own name."""
        return {"run_id": self.run_id, "started": self.started, "nodes": self.nodes, "config": self.config,
                "outcome": self.outcome, self.figure: self.value}  # fmt: skip


def trend(
    history: History, op: str, size: int, filters: Filters, figure: str = "busbw", limit: int = 200
) -> list[TrendPoint]:
    """One point per run: the best `figure` over its rows of (op, requested size) (placements, roots),
    oldest first."""
    runs, results = schema.runs.c, schema.results.c
    best = func.min(results[figure]) if figure == "time_us" else func.max(results[figure])
    query = (
        select(runs.run_id, runs.started, runs.nodes, runs.config, runs.outcome, best.label(figure))
        .join(schema.results, results.run == runs.id)
        .where(results.op == op, results.requested_size == size, results.group == "")
        .group_by(runs.id, runs.run_id, runs.started, runs.nodes, runs.config, runs.outcome)
        .order_by(runs.started.desc())
        .limit(limit)
    )
    with history.engine.connect() as connection:
        points = [
            TrendPoint(row.run_id, row.started, row.nodes, row.config, row.outcome, figure, row._mapping[figure])
            for row in connection.execute(filters.where(query))
        ]
    return points[::-1]


@dataclass(frozen=True, slots=True)
class Baseline:
    median: float
    mad: float
    runs: list[str]
    """The healthy runs it was taken over, oldest first."""


def baseline(points: Sequence[TrendPoint], k: int = BASELINE_RUNS) -> Baseline | None:
    """The median and median absolute deviation of the last k healthy points (of their figure); None with
    too little history."""
    healthy = [p for p in points if p.outcome == "passed"][-k:]
    if len(healthy) < MIN_BASELINE_RUNS:
        return None
    centre, mad = median_mad([float(p.value) for p in healthy])
    return Baseline(centre, mad, [p.run_id for p in healthy])


@dataclass(frozen=True, slots=True)
class PairShape:
    """What a pair of nodes runs as: only 2-node runs of the same backend, device and ranks per node say
    what such a pair should reach (gloo on the CPU says nothing of NCCL on the GPUs, one rank a node
    nothing of eight)."""

    backend: str
    device: str
    ranks_per_node: int


def pair_level(
    history: History, cluster: str, op: str, sizes: Sequence[int], shape: PairShape | None = None
) -> tuple[int, Baseline] | None:
    """A healthy pair of nodes on `cluster` (of `shape`, if given): the baseline of the last healthy 2-node
    runs of `op`, at the size of `sizes` where it is highest (collbench check's figure is its best over its
    sizes); None with too little history at every size."""
    like = Filters(cluster=cluster, nodes=2)
    if shape is not None:
        like = replace(like, backend=shape.backend, device=shape.device, world_size=2 * shape.ranks_per_node)
    found = []
    for size in sizes:
        level = baseline(trend(history, op, size, like))
        if level is not None:
            found.append((size, level))
    return max(found, key=lambda pair: pair[1].median, default=None)


@dataclass(frozen=True, slots=True)
class Comparable:
    """What makes runs comparable: the same cluster, config fingerprint and node count."""

    cluster: str
    config: str
    nodes: int
    before: float
    """Only runs started before this (the run held against them)."""
    run_id: str = ""
    """The run itself, never part of its own baseline."""


def past_figures(history: History, like: Comparable, k: int = BASELINE_RUNS) -> dict[Key, Past]:
    """The best busbw per (op, requested size) of the last `k` healthy runs comparable to `like`, oldest first."""
    runs, results = schema.runs.c, schema.results.c
    last = (
        select(runs.id)
        .where(runs.cluster == like.cluster, runs.config == like.config, runs.nodes == like.nodes)
        .where(runs.started < like.before, runs.run_id != like.run_id, runs.outcome == "passed")
        .order_by(runs.started.desc())
        .limit(k)
        .subquery()
    )
    query = (
        select(runs.run_id, runs.started, results.op, results.requested_size, func.max(results.busbw).label("busbw"))
        .join(schema.results, results.run == runs.id)
        .where(runs.id.in_(select(last.c.id)), results.group == "")
        .group_by(runs.id, runs.run_id, runs.started, results.op, results.requested_size)
        .order_by(runs.started, runs.run_id)
    )
    found: dict[Key, list[tuple[str, float]]] = {}
    with history.engine.connect() as connection:
        for row in connection.execute(query):
            found.setdefault((row.op, int(row.requested_size)), []).append((row.run_id, float(row.busbw)))
    return dict(found)


@dataclass(frozen=True, slots=True)
class RecordedRun:
    """A recorded run's `runs` row: what `history show` places it by, and every column as stored."""

    key: int
    """The database's own key of the run (runs.id), which its rows hang off."""
    run_id: str
    cluster: str
    config: str
    nodes: int
    started: float
    columns: Row
    """Every column of its `runs` row, by name (id included)."""


def recorded_run(history: History, run_id: str) -> RecordedRun | None:
    """A run's `runs` row, by its run id or the first digits of one that no other shares; None if none."""
    runs = schema.runs.c
    with history.engine.connect() as connection:
        found = connection.execute(select(schema.runs).where(runs.run_id == run_id)).mappings().first()
        if found is None:
            like = select(schema.runs).where(runs.run_id.startswith(run_id, autoescape=True)).limit(2)
            matches = connection.execute(like).mappings().all()
            found = matches[0] if len(matches) == 1 else None
    if found is None:
        return None
    return RecordedRun(
        found["id"], found["run_id"], found["cluster"], found["config"], found["nodes"], found["started"], dict(found)
    )


@dataclass(frozen=True, slots=True)
class RecordedResult:
    """A recorded result row, as much of it as a run's best figures need (against.best_figures)."""

    op: str
    requested_size: int
    busbw: float
    group: str


def recorded_rows(history: History, run: RecordedRun) -> list[RecordedResult]:
    """A recorded run's result rows (as they came, every placement and root)."""
    results = schema.results.c
    query = (
        select(results.op, results.requested_size, results.busbw, results.group)
        .where(results.run == run.key)
        .order_by(results.op, results.requested_size)
    )
    with history.engine.connect() as connection:
        return [RecordedResult(row.op, row.requested_size, row.busbw, row.group) for row in connection.execute(query)]
