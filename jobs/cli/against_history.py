"""--against-history on run, wait, report and compare: a run held against its cluster's own past in the
results history (jobs.history.held), said on stdout (the table) and stderr (regressions, what it was judged
against, a history too thin to judge)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from jobs.history.held import HeldRun
    from jobs.inspect.compare import Tolerance
    from jobs.inspect.report import RunOutcome
    from jobs.rundir.layout import RunDir


def add_against_history(command: argparse.ArgumentParser, tolerance: bool = True) -> None:
    """--against-history (and its --tolerance, --db) on wait, report and compare."""
    command.add_argument(
        "--against-history",
        action="store_true",
        help="also hold the run against the median of the last healthy runs of its config and node count in the "
        "results history; exit 1 on a regression",
    )
    if tolerance:
        command.add_argument(
            "--tolerance", default="5%", help="--against-history: a drop always allowed, with 3 MAD (default 5%%)"
        )
    command.add_argument("--db", dest="history_url", metavar="URL", default=None,
                         help="--against-history: the history's URL (default: the run's history.url)")  # fmt: skip


def against_history(run: RunDir, outcome: RunOutcome, tolerance: Tolerance, history_url: str | None, fmt: str) -> int:
    """Hold the run's rows against its history and say so: the table (table format) on stdout, each
    regression, the runs judged against and a history too thin to judge on stderr. 1 on a regression."""
    from jobs.history.against import MADS
    from jobs.history.held import hold_run

    held = hold_run(run, outcome, tolerance.for_size, f"max({tolerance.describe()}, {MADS:g} MAD)", history_url)
    if fmt == "table":
        print("\n".join(held_lines(held)), flush=True)
    say_held(held)
    return held.judgement.exit_code


def held_lines(held: HeldRun) -> list[str]:
    from jobs.history.against import lines

    return [held.header(), *lines(held.judgement)]


def say_held(held: HeldRun, prefix: str = "") -> None:
    judgement = held.judgement
    for row in judgement.regressions:
        print(f"collbench: REGRESSION against the history: {prefix}{row.regression()}", file=sys.stderr)
    if judgement.against:
        shown = ", ".join(judgement.against)
        print(f"collbench: history: {prefix}judged against {len(judgement.against)} run(s): {shown}", file=sys.stderr)
    if judgement.thin_line():
        print(f"collbench: history: {prefix}{judgement.thin_line()}", file=sys.stderr)
