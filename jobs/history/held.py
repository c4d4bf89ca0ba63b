"""The two ways a run is held against its history: a run directory (`wait`, `report` and `compare
--against-history`: the run's rows as just assessed, its place worked out from its records, read only)
and a recorded run (`collbench history show`: its rows and place from the database alone). Both judge
with against.judge over the same query, past_figures, and say which comparable runs before it the baseline
left out (queries.left_out) and whether the run itself is left out of every baseline."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from jobs.config.fingerprint import config_fingerprint
from jobs.history.against import BASELINE_RUNS, Judgement, best_figures, judge
from jobs.history.database import History, HistoryError, open_history, resolve_history_url
from jobs.history.gather import NotEnded, cluster_of, gather, rank0_env, started_of
from jobs.history.queries import (
    Comparable,
    LeftOutRuns,
    SeriesKey,
    left_out,
    past_figures,
    recorded_rows,
    recorded_run,
)
from jobs.inspect.compare import LATENCY_TOLERANCE, parse_fraction
from jobs.inspect.report import RunOutcome
from jobs.rundir.layout import RunDir
from jobs.rundir.records.codec import RecordError

LATENCY = parse_fraction(LATENCY_TOLERANCE, "--latency-tolerance")
"""The latency tolerance of a run held against its history unless its command says another."""


@dataclass(slots=True)
class HeldRun:
    """A run's judgement, with what it was judged among, in words for the header."""

    run_id: str
    like: Comparable
    where: str
    """The history's URL, without a password."""
    judgement: Judgement
    excluded: str = ""
    """Why the run itself is left out of every baseline ('' for a healthy run)."""
    left_out: LeftOutRuns | None = None
    """The comparable runs before it that its baseline skipped as not healthy."""

    def header(self) -> str:
        return (
            f"# {self.run_id} against the history ({self.where}): {self.like.key.words()}; baseline: the median "
            f"of the last {BASELINE_RUNS} healthy runs before it; a regression: below the median by more than "
            f"{self.judgement.tolerance}"
        )

    def to_plain(self) -> dict[str, Any]:
        skipped = self.left_out or LeftOutRuns([], 0)
        return {
            "run_id": self.run_id,
            "history": self.where,
            **self.like.key.to_plain(),
            "excluded": self.excluded,
            "left_out": [run.to_plain() for run in skipped.runs],
            "left_out_total": skipped.total,
            **self.judgement.to_plain(),
        }


def comparable(run: RunDir, outcome: RunOutcome) -> Comparable:
    """What `run` compares with, from its records and the outcome just assessed (nothing written)."""
    meta = run.read_meta()
    key = SeriesKey(
        cluster=cluster_of(outcome.config, rank0_env(run)),
        config=config_fingerprint(outcome.config),
        nodes=meta.nodes,
        world_size=meta.world_size,
    )
    return Comparable(
        key=key,
        before=started_of(run, outcome.statuses),
        run_id=meta.run_id or run.run_id,
    )


def _excluded(history: History, run: RunDir, run_id: str, outcome: RunOutcome) -> str:
    """Why the run is left out of every baseline: as the history recorded it, else as recording it would."""
    found = recorded_run(history, run_id)
    if found is not None and found.run_id == run_id:
        return found.excluded
    try:
        return str(gather(run, outcome_of=lambda: outcome).run.get("excluded", ""))
    except (NotEnded, RecordError, OSError, ValueError):
        return ""


def hold_run(
    run: RunDir,
    outcome: RunOutcome,
    tolerance: Callable[[int], float],
    words: str,
    history_url: str | None = None,
    latency: float = LATENCY,
) -> HeldRun:
    """The run directory's outcome, as just assessed, against the history `history_url` (default: the
    run's history.url); HistoryError when the history cannot be opened. `latency`: the least tolerance of a
    latency-bound size."""
    like = comparable(run, outcome)
    with open_history(resolve_history_url(history_url, outcome.config), must_exist=True) as history:
        judgement = judge(best_figures(outcome.rows), past_figures(history, like), tolerance, latency=latency)
        skipped = left_out(history, like)
        excluded = _excluded(history, run, like.run_id, outcome)
    judgement.tolerance = words
    return HeldRun(like.run_id, like, history.where, judgement, excluded, skipped)


def hold_recorded(
    history_url: str, run_id: str, tolerance: Callable[[int], float], words: str, latency: float = LATENCY
) -> HeldRun:
    """A recorded run, from the database alone, against the runs recorded before it."""
    with open_history(history_url, must_exist=True) as history:
        found = recorded_run(history, run_id)
        if found is None:
            raise HistoryError(
                f"history show: no run {run_id!r} in {history.where}; `collbench history list` lists them"
            )
        like = found.comparable()
        figures = best_figures(recorded_rows(history, found))
        judgement = judge(figures, past_figures(history, like), tolerance, latency=latency)
        skipped = left_out(history, like)
    judgement.tolerance = words
    return HeldRun(like.run_id, like, history.where, judgement, found.excluded, skipped)
