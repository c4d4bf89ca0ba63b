"""The launchers' two calls into the history: checked before a run starts (a history that cannot be used
is bad input, exit 2, before anything is submitted), and the run recorded when it ends (a history that
cannot be reached then costs one line: the run has ended and its results are on disk; `collbench history
ingest` catches up)."""

from __future__ import annotations

import sys
from collections.abc import Callable

from sqlalchemy.exc import SQLAlchemyError

from jobs.config.model import Config
from jobs.history.database import HistoryError, first_line, open_history
from jobs.history.gather import NotEnded
from jobs.history.ingest import record_run
from jobs.rundir.layout import RunDir
from jobs.rundir.records.codec import RecordError
from jobs.rundir.records.config import load_run_config


def check_history(cfg: Config) -> None:
    """Raise HistoryError (one line) unless the run's history can be opened at its schema."""
    if cfg.history.record:
        open_history(cfg.history.url).close()


def _stderr(line: str) -> None:
    print(f"collbench: {line}", file=sys.stderr, flush=True)


def record_ended_run(run: RunDir, say: Callable[[str], None] = _stderr) -> bool:
    """Record the ended `run` in the history its config names; never raises for the history's sake."""
    try:
        cfg = load_run_config(run)
    except (RecordError, OSError, HistoryError) as error:
        say(f"history: {run.run_id} not recorded: {first_line(error)}")
        return False
    if not cfg.history.record:
        return False
    try:
        history = open_history(cfg.history.url)
    except HistoryError as error:
        say(f"history: {run.run_id} not recorded ({error}); `collbench history ingest {run.path}` records it later")
        return False
    try:
        return record_run(history, run)
    except (SQLAlchemyError, RecordError, OSError, NotEnded) as error:
        why = first_line(error)
        say(f"history {history.where}: {run.run_id} not recorded ({why}); `collbench history ingest` records it later")
        return False
    finally:
        history.close()
