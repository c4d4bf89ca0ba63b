"""The results history's baseline of each row `collbench export prometheus` exports, so that an alert rule
can hold a run's busbw against its cluster's own past without a fixed floor; and, for an isolate run, each
node's level against its own past healthy runs (node_drift's judgement, of this run's level).

The runs are those a run is held against everywhere else (queries.Comparable, queries.healthy, as
--against-history takes them): the last BASELINE_RUNS healthy runs before it on the same cluster, with the
same config fingerprint, node count and world size, itself left out. Of those runs each exported row is
matched by what its labels stand for, the same op, type, reduce op, root, requested size and placement, so
an in-place row is never held against an out-of-place best. The history is only read: a history that is
not there, cannot be opened or does not answer leaves the baseline series out, said once in a line."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from sqlalchemy import select
from sqlalchemy.exc import SQLAlchemyError

from jobs.history import schema
from jobs.history.against import BASELINE_RUNS, median_mad
from jobs.history.database import (
    History,
    HistoryError,
    NoSuchHistory,
    first_line,
    open_history,
    resolve_history_url,
)
from jobs.history.held import comparable
from jobs.history.node_drift import NodeLevel, NodeSeries, drift_of, node_series
from jobs.history.queries import Comparable, healthy
from jobs.inspect.exports.prometheus import BaselineKey, HistoryFigures, NodePast, RowBaseline
from jobs.inspect.report import RunOutcome
from jobs.rundir.layout import RunDir


def row_baselines(history: History, like: Comparable, k: int = BASELINE_RUNS) -> dict[BaselineKey, RowBaseline]:
    """Each row's busbw median and MAD over the last `k` healthy runs comparable to `like` that have it."""
    runs, results = schema.runs.c, schema.results.c
    last = select(runs.id).where(like.before_it(), healthy()).order_by(runs.started.desc()).limit(k).subquery()
    query = select(
        results.op, results.dtype, results.redop, results.root, results.requested_size, results.in_place, results.busbw
    ).where(results.run.in_(select(last.c.id)), results.group == "")  # fmt: skip
    values: dict[BaselineKey, list[float]] = {}
    with history.engine.connect() as connection:
        for row in connection.execute(query):
            key = (row.op, row.dtype, row.redop, int(row.root), int(row.requested_size), bool(row.in_place))
            values.setdefault(key, []).append(float(row.busbw))
    return {key: RowBaseline(*median_mad(found), len(found)) for key, found in values.items()}


def node_pasts(history: History, like: Comparable, levels: Mapping[str, float]) -> dict[str, NodePast]:
    """Each node's level in the run held (`levels`: host -> its median pair busbw, from the run's own verdict,
    recorded or not) against its own healthy runs before it in the history, as node_drift judges a node's
    latest run: only within the comparable set of the run held (the node's runs of another set say nothing)."""
    found: dict[str, NodePast] = {}
    for host, level in levels.items():
        series = node_series(history, host)
        before = [] if series is None or series.key != like.key else series.levels
        before = [past for past in before if past.started < like.before and past.run_id != like.run_id]
        held = NodeLevel(like.run_id, like.before, "", level, 0.0, named=False)
        drift = drift_of(NodeSeries(host, like.key, [*before, held], 0))
        median = drift.median if drift.runs else None
        found[host] = NodePast(level, median, drift.mads_below if drift.enough else None, drift.runs)
    return found


def _stderr(line: str) -> None:
    print(f"collbench: {line}", file=sys.stderr, flush=True)


@dataclass(slots=True)
class HistoryBaselines:
    """What `collbench export prometheus` hands the exporter (prometheus.Baselines): each run's row
    baselines from the history at `url`, or, when None, the run's own history.url (empty: the default SQLite
    file). Never creates a history (must_exist). A history named (`url`, history.url) that is not there or
    does not answer is one line through `say`, each reason once; the default file not being there is no
    news (nothing was ever recorded here), and leaves the series out without a word."""

    url: str | None = None
    say: Callable[[str], None] = _stderr
    said: set[str] = field(default_factory=set)

    def __call__(self, run: RunDir, outcome: RunOutcome, levels: Mapping[str, float]) -> HistoryFigures | None:
        try:
            with open_history(resolve_history_url(self.url, outcome.config), must_exist=True) as history:
                like = comparable(run, outcome)
                return HistoryFigures(row_baselines(history, like), node_pasts(history, like, levels))
        except NoSuchHistory as error:
            if self.url is None and not outcome.config.history.url:
                return None
            why = str(error)
        except HistoryError as error:
            why = str(error)
        except SQLAlchemyError as error:
            why = f"history: {first_line(error)}"
        if why not in self.said:
            self.said.add(why)
            self.say(f"export prometheus: exported without the history's baseline series: {why}")
        return None
