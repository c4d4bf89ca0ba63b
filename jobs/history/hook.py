"""The launchers' calls into the history: checked before a run starts (a history that cannot be used is
bad input, exit 2, before anything is submitted; a dry run checks all of it short of connecting), and the
run recorded when it ends, saying where in one line (a history that cannot be reached then costs one line:
the run has ended and its results are on disk; `collbench history ingest` catches up). And collbench
check's one question: what a healthy pair of nodes reaches here."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence

from sqlalchemy.exc import SQLAlchemyError

from jobs.config.model import Config
from jobs.history.database import (
    HistoryError,
    NoSuchHistory,
    check_place,
    first_line,
    open_history,
    parse_url,
    resolve_history_url,
)
from jobs.history.gather import NotEnded
from jobs.history.ingest import record_run
from jobs.history.queries import PairShape, pair_level
from jobs.inspect.report import RunOutcome
from jobs.rundir.layout import RunDir
from jobs.rundir.records.codec import RecordError
from jobs.rundir.records.config import load_run_config


def check_history_place(cfg: Config) -> None:
    """What check_history checks short of connecting, for a dry run too: the URL (its scheme, no password)
    and, for an SQLite file, its directory (history.create_dir). Raises HistoryError; creates nothing."""
    if cfg.history.record:
        check_place(parse_url(resolve_history_url(None, cfg)), create_dir=cfg.history.create_dir)


def check_history(cfg: Config) -> None:
    """Raise HistoryError (one line) unless the run's history can be opened at its schema; a new SQLite file
    is made here (its directory too with history.create_dir), and said."""
    if cfg.history.record:
        with open_history(resolve_history_url(None, cfg), create_dir=cfg.history.create_dir):
            pass


def _stderr(line: str) -> None:
    print(f"collbench: {line}", file=sys.stderr, flush=True)


def record_ended_run(
    run: RunDir, say: Callable[[str], None] = _stderr, outcome_of: Callable[[], RunOutcome] | None = None
) -> bool:
    """Record the ended `run` in the history its config names, and `say` where in one line (recorded,
    already there, not recorded and why); never raises for the history's sake. True if recorded now.
    `outcome_of`: the run's outcome, read once by the caller for everything a run's end does."""
    try:
        cfg = load_run_config(run)
    except (RecordError, OSError, HistoryError) as error:
        say(f"history: {run.run_id} not recorded: {first_line(error)}")
        return False
    if not cfg.history.record:
        say("history: not recorded (history.record is false)")
        return False
    try:
        history = open_history(resolve_history_url(None, cfg), create_dir=cfg.history.create_dir, say=say)
    except HistoryError as error:
        say(f"history: {run.run_id} not recorded ({error}); `collbench history ingest {run.path}` records it later")
        return False
    with history:
        try:
            recorded = record_run(history, run, outcome_of=outcome_of)
        except (SQLAlchemyError, RecordError, OSError, NotEnded) as error:
            why, later = first_line(error), "`collbench history ingest` records it later"
            say(f"history {history.where}: {run.run_id} not recorded ({why}); {later}")
            return False
    if recorded:
        say(f"history: recorded {run.run_id} in {history.where}")
    else:
        say(f"history: {run.run_id} already in the history at {history.where}")
    return recorded


def expected_pair_busbw(
    cfg: Config,
    cluster: str,
    say: Callable[[str], None] = _stderr,
    sizes: Sequence[int] | None = None,
    for_what: str = "the check",
) -> tuple[float, str] | None:
    """The expected level of a healthy pair from the history, for collbench check (at check.sizes) or isolate
    (`sizes`: isolate.sizes): (GB/s, where it comes from), or None when the history holds too few healthy
    2-node runs at those sizes or cannot be read (one line said). Only runs of the pair's own shape count."""
    shape = PairShape(backend=cfg.backend, device=cfg.device, ranks_per_node=cfg.slurm.resolved_tasks_per_node())
    try:
        history = open_history(resolve_history_url(None, cfg), must_exist=True)
    except NoSuchHistory:
        return None  # nothing recorded yet: too little history, as the caller says
    except HistoryError as error:
        say(f"history: no expected level for {for_what} ({error}); the pairs are judged against their median")
        return None
    with history:
        try:
            found = pair_level(history, cluster, cfg.isolate.op, cfg.check.sizes if sizes is None else sizes, shape)
        except SQLAlchemyError as error:
            say(f"history {history.where}: no expected level for {for_what} ({first_line(error)})")
            return None
    if found is None:
        return None
    size, level = found
    return level.median, (
        f"the median of the last {len(level.runs)} healthy 2-node {cfg.isolate.op} runs at {size} B on "
        f"{cluster} in the history ({shape.ranks_per_node} rank(s) a node, {cfg.backend} on {cfg.device})"
    )
