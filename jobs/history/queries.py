"""What `collbench history` asks: runs by filters, one figure's trend with its baseline per comparable set, a
run's comparable past and what its baseline left out (a node's record: jobs.history.node_record).
Every view is a list of typed records (frozen dataclasses); `to_plain()` gives each as the row the CLI
renders as a table, JSON or CSV (its keys, in order, are the output's columns).

Two rules hold in every baseline: runs compare only with the same cluster, config fingerprint, node count
and world size (SeriesKey), and only healthy runs count: passed, and nothing recorded against them
(`runs.excluded` empty: no injected fault, no slow host, no wrong elements, no fabric finding...)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from sqlalchemy import ColumnElement, Select, and_, exists, func, not_, select

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
    excluded: str
    """Why the run is left out of every baseline ('' for a healthy run): jobs.history.health."""

    def to_plain(self) -> Row:
        return asdict(self)


RUN_COLUMNS = tuple(f.name for f in fields(ListedRun))


def healthy() -> ColumnElement[bool]:
    """What a baseline takes: a run that passed with nothing recorded against it (runs.excluded '')."""
    runs = schema.runs.c
    return and_(runs.outcome == "passed", runs.excluded == "")


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


@dataclass(frozen=True, slots=True, order=True)
class SeriesKey:
    """A comparable set: runs measure the same thing only on the same cluster, with the same config
    fingerprint, node count and world size (the fingerprint leaves nodes and ranks out: they are these
    columns)."""

    cluster: str
    config: str
    nodes: int
    world_size: int

    def words(self) -> str:
        return f"cluster {self.cluster}, config {self.config}, {self.nodes} node(s), {self.world_size} rank(s)"

    def to_plain(self) -> Row:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class TrendPoint:
    """One run's point of a trend: its best `figure` (busbw, algbw or time_us) at (op, requested size)."""

    run_id: str
    started: float
    cluster: str
    nodes: int
    world_size: int
    config: str
    outcome: str
    figure: str
    """Which figure `value` is."""
    value: float
    excluded: str = ""
    """Why the run is left out of every baseline ('' for a healthy run)."""

    @property
    def key(self) -> SeriesKey:
        return SeriesKey(self.cluster, self.config, self.nodes, self.world_size)

    @property
    def healthy(self) -> bool:
        """Passed, with nothing recorded against it: the runs a baseline takes."""
        return self.outcome == "passed" and not self.excluded

    def to_plain(self) -> Row:
        """The trend's row: the run's columns, the figure under its own name, then why it is left out."""
        return {"run_id": self.run_id, "started": self.started, "cluster": self.cluster, "config": self.config,
                "nodes": self.nodes, "world_size": self.world_size, "outcome": self.outcome,
                self.figure: self.value, "excluded": self.excluded}  # fmt: skip


def trend(
    history: History, op: str, size: int, filters: Filters, figure: str = "busbw", limit: int = 200
) -> list[TrendPoint]:
    """One point per run: the best `figure` over its rows of (op, requested size) (placements, roots),
    oldest first; of every comparable set the filters let through (series() splits them)."""
    runs, results = schema.runs.c, schema.results.c
    best = func.min(results[figure]) if figure == "time_us" else func.max(results[figure])
    columns = (runs.run_id, runs.started, runs.cluster, runs.nodes, runs.world_size, runs.config, runs.outcome)
    query = (
        select(*columns, runs.excluded, best.label("value"))
        .join(schema.results, results.run == runs.id)
        .where(results.op == op, results.requested_size == size, results.group == "")
        .group_by(runs.id, *columns, runs.excluded)
        .order_by(runs.started.desc())
        .limit(limit)
    )
    with history.engine.connect() as connection:
        points = [TrendPoint(figure=figure, **row._mapping) for row in connection.execute(filters.where(query))]
    return points[::-1]


@dataclass(frozen=True, slots=True)
class Baseline:
    median: float
    mad: float
    runs: list[str]
    """The healthy runs it was taken over, oldest first."""


def baseline(points: Sequence[TrendPoint], k: int = BASELINE_RUNS) -> Baseline | None:
    """The median and median absolute deviation of the last k healthy points (of their figure); None with
    too little history. The points must be of one comparable set (series() splits a trend into them)."""
    healthy = [p for p in points if p.healthy][-k:]
    if len(healthy) < MIN_BASELINE_RUNS:
        return None
    centre, mad = median_mad([float(p.value) for p in healthy])
    return Baseline(centre, mad, [p.run_id for p in healthy])


@dataclass(frozen=True, slots=True)
class Series:
    """One comparable set's points, oldest first, and its own baseline."""

    key: SeriesKey
    points: list[TrendPoint]
    baseline: Baseline | None


def series(points: Sequence[TrendPoint], k: int = BASELINE_RUNS) -> list[Series]:
    """A trend split into one series per comparable set (SeriesKey), each with the baseline of its own healthy
    runs; ordered by their key."""
    by_key: dict[SeriesKey, list[TrendPoint]] = {}
    for point in points:
        by_key.setdefault(point.key, []).append(point)
    return [Series(key, found, baseline(found, k)) for key, found in sorted(by_key.items())]


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
    runs of `op` (passed, nothing recorded against them), at the size of `sizes` where it is highest
    (collbench check's figure is its best over its sizes); None with too little history at every size."""
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
    """What makes runs comparable (the same cluster, config fingerprint, node count and world size: its key),
    and which of them came before the run held against them."""

    key: SeriesKey
    before: float
    """Only runs started before this (the run held against them)."""
    run_id: str = ""
    """The run itself, never part of its own baseline."""

    def before_it(self) -> ColumnElement[bool]:
        """The runs comparable to it that started before it, itself left out: healthy or not."""
        runs, key = schema.runs.c, self.key
        return and_(
            runs.cluster == key.cluster, runs.config == key.config, runs.nodes == key.nodes,
            runs.world_size == key.world_size, runs.started < self.before, runs.run_id != self.run_id,
        )  # fmt: skip


def _last_healthy(like: Comparable, k: int) -> Select[Any]:
    runs = schema.runs.c
    return select(runs.id, runs.started).where(like.before_it(), healthy()).order_by(runs.started.desc()).limit(k)


def past_figures(history: History, like: Comparable, k: int = BASELINE_RUNS) -> dict[Key, Past]:
    """The best busbw per (op, requested size) of the last `k` healthy runs comparable to `like`, oldest first."""
    runs, results = schema.runs.c, schema.results.c
    last = _last_healthy(like, k).subquery()
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


LEFT_OUT_SHOWN = 10
"""The runs a baseline left out, named one a line: at most this many, then how many more."""


@dataclass(frozen=True, slots=True)
class LeftOut:
    """A comparable run before the one held that its baseline did not take, and why."""

    run_id: str
    started: float
    outcome: str
    why: str
    """runs.excluded, or the outcome for a failed run recorded without a reason."""

    def to_plain(self) -> Row:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class LeftOutRuns:
    runs: list[LeftOut]
    """Newest first, at most LEFT_OUT_SHOWN of them."""
    total: int
    """How many there are in all."""


def left_out(history: History, like: Comparable, k: int = BASELINE_RUNS, shown: int = LEFT_OUT_SHOWN) -> LeftOutRuns:
    """The comparable runs before `like` that its baseline skipped as not healthy, newest first: those since
    the oldest of the last `k` healthy runs it took (all of them before it when it took fewer)."""
    runs = schema.runs.c
    skipped = and_(like.before_it(), not_(healthy()))
    with history.engine.connect() as connection:
        taken = connection.execute(_last_healthy(like, k)).all()
        if len(taken) == k:
            skipped = and_(skipped, runs.started >= min(row.started for row in taken))
        total = int(connection.execute(select(func.count()).select_from(schema.runs).where(skipped)).scalar_one())
        query = select(runs.run_id, runs.started, runs.outcome, runs.excluded).where(skipped)
        found = connection.execute(query.order_by(runs.started.desc()).limit(shown)).all()
    return LeftOutRuns(
        [LeftOut(r.run_id, r.started, r.outcome, r.excluded or f"outcome {r.outcome}") for r in found], total
    )


@dataclass(frozen=True, slots=True)
class RecordedRun:
    """A recorded run's `runs` row: what `history show` places it by, and every column as stored."""

    key: int
    """The database's own key of the run (runs.id), which its rows hang off."""
    run_id: str
    cluster: str
    config: str
    nodes: int
    world_size: int
    started: float
    excluded: str
    """Why it is left out of every baseline ('' for a healthy run)."""
    columns: Row
    """Every column of its `runs` row, by name (id included)."""

    def comparable(self) -> Comparable:
        """What the runs before it must share to be its baseline."""
        return Comparable(SeriesKey(self.cluster, self.config, self.nodes, self.world_size), self.started, self.run_id)


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
        key=found["id"], run_id=found["run_id"], cluster=found["cluster"], config=found["config"],
        nodes=found["nodes"], world_size=found["world_size"], started=found["started"], excluded=found["excluded"],
        columns=dict(found),
    )  # fmt: skip


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


KNOWN = {
    "op": (schema.results.c.op,),
    "cluster": (schema.runs.c.cluster,),
    "config": (schema.runs.c.config,),
    "host": (schema.hosts.c.host, schema.isolate_nodes.c.host),
    "switch": (
        schema.isolate_switches.c.switch_a,
        schema.isolate_switches.c.switch_b,
        schema.isolate_switches.c.switches,
    ),
}
"""What a view's names are checked against: every value the history holds of each."""


def known_names(history: History, what: str) -> list[str]:
    """Every `what` (a KNOWN key: op, cluster, config, host, switch) the history has seen, sorted."""
    found: set[str] = set()
    with history.engine.connect() as connection:
        for column in KNOWN[what]:
            found.update(connection.execute(select(column).distinct()).scalars())
    return sorted(found - {""})


def known_sizes(history: History, op: str) -> list[int]:
    """The requested sizes the history holds of `op`, smallest first."""
    results = schema.results.c
    query = select(results.requested_size).where(results.op == op).distinct().order_by(results.requested_size)
    with history.engine.connect() as connection:
        return [int(size) for size in connection.execute(query).scalars()]
