"""The two ways a run is held against its history: a run directory (`wait`, `report` and `compare
--against-history`: the run's rows as just assessed, its place worked out from its records, read only)
and a recorded run (`collbench history show`: its rows and place from the database alone). Both judge
with against.judge over the same query, past_figures."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from jobs.config.fingerprint import config_fingerprint
from jobs.history.against import BASELINE_RUNS, Judgement, best_figures, judge
from jobs.history.database import HistoryError, open_history, resolve_history_url
from jobs.history.gather import cluster_of, rank0_env, started_of
from jobs.history.queries import Comparable, past_figures, recorded_rows, recorded_run
from jobs.inspect.report import RunOutcome
from jobs.rundir.layout import RunDir


@dataclass(slots=True)
class HeldRun:
    """A run's judgement, with what it was judged among, in words for the header."""

    run_id: str
    like: Comparable
    where: str
    """The history's URL, without a password."""
    judgement: Judgement

    def header(self) -> str:
        return (
            f"# {self.run_id} against the history ({self.where}): cluster {self.like.cluster}, config "
            f"{self.like.config}, {self.like.nodes} node(s); baseline: the median of the last {BASELINE_RUNS} "
            f"healthy runs before it; a regression: below the median by more than {self.judgement.tolerance}"
        )

    def to_plain(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "history": self.where,
            "cluster": self.like.cluster,
            "config": self.like.config,
            "nodes": self.like.nodes,
            **self.judgement.to_plain(),
        }


def comparable(run: RunDir, outcome: RunOutcome) -> Comparable:
    """What `run` compares with, from its records and the outcome just assessed (nothing written)."""
    meta = run.read_meta()
    return Comparable(
        cluster=cluster_of(outcome.config, rank0_env(run)),
        config=config_fingerprint(outcome.config),
        nodes=meta.nodes,
        before=started_of(run, outcome.statuses),
        run_id=meta.run_id or run.run_id,
    )


def hold_run(
    run: RunDir, outcome: RunOutcome, tolerance: Callable[[int], float], words: str, history_url: str | None = None
) -> HeldRun:
    """The run directory's outcome, as just assessed, against the history `history_url` (default: the
    run's history.url); HistoryError when the history cannot be opened."""
    like = comparable(run, outcome)
    with open_history(resolve_history_url(history_url, outcome.config)) as history:
        judgement = judge(best_figures(outcome.rows), past_figures(history, like), tolerance)
    judgement.tolerance = words
    return HeldRun(like.run_id, like, history.where, judgement)


def hold_recorded(history_url: str, run_id: str, tolerance: Callable[[int], float], words: str) -> HeldRun:
    """A recorded run, from the database alone, against the runs recorded before it."""
    with open_history(history_url) as history:
        found = recorded_run(history, run_id)
        if found is None:
            raise HistoryError(
                f"history show: no run {run_id!r} in {history.where}; `collbench history list` lists them"
            )
        like = Comparable(found.cluster, found.config, found.nodes, found.started, found.run_id)
        judgement = judge(best_figures(recorded_rows(history, found)), past_figures(history, like), tolerance)
    judgement.tolerance = words
    return HeldRun(like.run_id, like, history.where, judgement)
