"""--against-history on run, wait, report and compare: a run held against its cluster's own past in the
results history (jobs.history.held), said on stdout (the table, with the runs its baseline left out) and
stderr (a run itself left out of every baseline, a history too thin to judge, then regressions and what it was
judged against; the runs left out where no table was printed): what cannot be judged is said first."""

from __future__ import annotations

import argparse
import sys
import time
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
            "--tolerance",
            default="5%",
            help="--against-history: a drop always allowed, with 3 sigma of the history (default 5%%)",
        )
    command.add_argument("--db", dest="history_url", metavar="URL", default=None,
                         help="--against-history: the history's URL (default: the run's history.url)")  # fmt: skip


def hold_and_say(run: RunDir, outcome: RunOutcome, tolerance: Tolerance, history_url: str | None, fmt: str) -> HeldRun:
    """The run held against its history, said: the table (table format) on stdout, each regression, the runs
    judged against and a history too thin to judge on stderr."""
    from jobs.history.held import hold_run

    held = hold_run(run, outcome, tolerance.for_size, held_words(tolerance), history_url, tolerance.latency)
    if fmt == "table":
        print("\n".join(held_lines(held)), flush=True)
    say_held(held, table_shown=fmt == "table")
    return held


def held_words(tolerance: Tolerance) -> str:
    """What a drop must exceed to be a regression against the history, for its header."""
    from jobs.history.against import MADS
    from jobs.inspect.compare_noise import SIGMA_PER_MAD

    return f"max({tolerance.describe()}, {MADS:g} sigma of the history ({SIGMA_PER_MAD:g} MAD each))"


def held_lines(held: HeldRun) -> list[str]:
    """The run's table: first whether it is itself left out of every baseline and the rows too little history
    judges, then its header and rows, then the comparable runs before it that the baseline left out."""
    from jobs.history.against import lines

    thin = held.judgement.thin_line()
    own = [f"# {line}" for line in [*excluded_lines(held), *([thin] if thin else [])]]
    return [*own, held.header(), *lines(held.judgement), *(f"# {line}" for line in left_out_lines(held))]


def excluded_lines(held: HeldRun) -> list[str]:
    return [f"this run is left out of every baseline: {held.excluded}"] if held.excluded else []


def left_out_lines(held: HeldRun) -> list[str]:
    """The comparable runs before it that its baseline skipped, a line each, the newest first, then how many
    more; nothing when it skipped none."""
    skipped = held.left_out
    if skipped is None or not skipped.total:
        return []
    out = [f"left out of the baseline: {skipped.total} comparable run(s) before it that are not healthy"]
    for run in skipped.runs:
        started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(run.started))
        out.append(f"  {run.run_id} ({started}): {run.why}")
    if skipped.total > len(skipped.runs):
        out.append(f"  and {skipped.total - len(skipped.runs)} more")
    return out


def say_held(held: HeldRun, prefix: str = "", table_shown: bool = True) -> None:
    """The judgement on stderr: the run's own exclusion and a history too thin first, then each regression and
    what it was judged against; the runs left out too when no table (`table_shown`) named them on stdout."""
    judgement = held.judgement
    for line in excluded_lines(held):
        print(f"collbench: history: {prefix}{line}", file=sys.stderr)
    if judgement.thin_line():
        print(f"collbench: history: {prefix}{judgement.thin_line()}", file=sys.stderr)
    for row in judgement.regressions:
        print(f"collbench: REGRESSION against the history: {prefix}{row.regression()}", file=sys.stderr)
    if judgement.against:
        shown = ", ".join(judgement.against)
        print(f"collbench: history: {prefix}judged against {len(judgement.against)} run(s): {shown}", file=sys.stderr)
    if not table_shown:
        for line in left_out_lines(held):
            print(f"collbench: history: {prefix}{line}", file=sys.stderr)
