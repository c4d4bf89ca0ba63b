"""A run's outcome at the command line: waited for, assessed, printed in the format asked for, held against
the history; shared by run, wait, report and isolate wait/report."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from jobs.cli.exit_codes import EXIT_FAILED, EXIT_OK
from jobs.cli.outcome_args import thresholds
from jobs.config.model import ConfigError
from jobs.inspect.report import RunOutcome, assess
from jobs.launchers.base import Launcher
from jobs.launchers.live import PLAIN_EVERY_S
from jobs.launchers.registry import launcher_of
from jobs.rundir.layout import RunDir
from jobs.rundir.records.slurm import JobFacts
from slurm.states import JobState

if TYPE_CHECKING:
    from jobs.history.held import HeldRun
    from jobs.inspect.isolate_verdict import IsolateOutcome

Render = Callable[[RunOutcome, RunDir, str], int]


def held_to_history(args: argparse.Namespace) -> Render:
    """The outcome printed, then (with --against-history) held against the history."""

    def render(outcome: RunOutcome, run: RunDir, fmt: str) -> int:
        return max(print_outcome(outcome, run, fmt), held_against_history(outcome, run, args))

    return render


def held_against_history(outcome: RunOutcome, run: RunDir, args: argparse.Namespace) -> int:
    """With --against-history: the run held against its history and said; 1 on a regression."""
    held = hold_if_asked(outcome, run, args)
    return held.judgement.exit_code if held is not None else EXIT_OK


def hold_if_asked(outcome: RunOutcome, run: RunDir, args: argparse.Namespace) -> HeldRun | None:
    """With --against-history: the run held against its history (reads it; writes nothing into the run) and
    said as the terminal says it; None without it."""
    if not getattr(args, "against_history", False):
        return None
    from jobs.cli.against_history import hold_and_say
    from jobs.inspect.compare import Tolerance

    return hold_and_say(run, outcome, Tolerance.parse(args.tolerance, []), args.history_url, args.format)


def wait_and_render(
    run: RunDir,
    timeout_s: float | None,
    args: argparse.Namespace,
    render: Render,
    launcher: Launcher[Any] | None = None,
) -> int:
    """Wait for the run (a live progress line meanwhile; in the text format its header and rows on stdout as
    rank 0 records them), then `render` its outcome; the exit status also says whether the job never starts,
    is still running, or ended other than COMPLETED. `launcher`: the one that started the run here, if any."""
    from jobs.launchers.live import Live

    launcher = launcher or launcher_of(run)
    rows_of = run if args.format == "table" else None  # the header and rows as measured: the text format only
    live = Live(every_s=getattr(args, "progress_every", PLAIN_EVERY_S), rows_of=rows_of)
    try:
        waited = launcher.wait([run], timeout_s, live)[0]
    finally:
        live.close()
    state = waited.state
    if state.state is JobState.NEVER_STARTS:
        print(f"collbench: job {state.job_id} {state.meaning()}", file=sys.stderr)
        print(f"collbench: scancel {state.job_id}, or change the request", file=sys.stderr)
        return EXIT_FAILED
    if waited.still_running:
        print(f"collbench: job {state.job_id} is still {state.said} after {timeout_s:g} s", file=sys.stderr)
        return EXIT_FAILED
    code = render(assess_run(run, args), run, args.format)
    if state.state.is_final:
        print(f"collbench: job {state.job_id} ended {state.said}", file=sys.stderr)
        return code if state.state is JobState.COMPLETED else EXIT_FAILED
    print(
        f"collbench: job {state.job_id}: every rank has recorded its end (the launcher still shows {state.said})",
        file=sys.stderr,
    )
    return code


def assess_run(run: RunDir, args: argparse.Namespace, facts: JobFacts | None = None) -> RunOutcome:
    """The run's outcome, with the per-rank view worked out in the same pass over the results wherever it
    is printed: in JSON; under the tables by `report`; its per-host verdict by `wait` and `report`."""
    with_analysis = args.format in ("json", "table")
    return assess(run, thresholds(args), with_analysis=with_analysis, facts=facts)


def print_outcome(outcome: RunOutcome, run: RunDir, fmt: str = "table", iso: IsolateOutcome | None = None) -> int:
    """The run as `fmt` says; an isolate run's verdict after its tables (`iso` when it is assessed already).
    The exit status is the same in every format: an isolate run's includes its verdict's, printed or not."""
    from jobs.inspect.formats import render_csv, render_json

    if fmt == "json":
        print(render_json(run, outcome), end="")
    elif fmt == "nccl-tests-json":
        from jobs.inspect.exports import nccl_tests_json

        try:
            documents = nccl_tests_json.documents(run, outcome)
        except nccl_tests_json.NotExportable as error:
            raise ConfigError(str(error)) from None
        for document in documents.values():
            print(nccl_tests_json.render(document))
    elif fmt == "csv":
        print(render_csv(outcome), end="")
    else:
        from jobs.inspect.report import render_tables

        print("\n".join(render_tables(outcome)))
        print(f"# Run directory: {run.path}")
    for problem in outcome.problems:
        print(f"collbench: FAILED: {problem}", file=sys.stderr)
    if fmt == "table" and outcome.analysis:
        for line in outcome.analysis.verdict():
            print(f"collbench: {line}", file=sys.stderr)
    if outcome.config.spec.exit_rule != "rounds":
        return outcome.exit_code
    if fmt == "table":
        return max(outcome.exit_code, print_isolate_verdict(outcome, run, iso))
    return max(outcome.exit_code, (iso or assess_isolate_run(outcome, run)).exit_code)  # the same status as the table


def print_isolate_verdict(outcome: RunOutcome, run: RunDir, iso: IsolateOutcome | None = None) -> int:
    """Under `collbench wait/report` of an isolate run: the verdict after the tables."""
    iso = iso or assess_isolate_run(outcome, run)
    print_isolate(iso, outcome, run)
    return iso.exit_code


def assess_isolate_run(outcome: RunOutcome, run: RunDir) -> IsolateOutcome:
    from jobs.inspect.isolate_verdict import assess_isolate  # the verdict's modules only for an isolate run

    return assess_isolate(run, outcome)  # isolate.json is written once, by the wait that sees the run end


def print_isolate(iso: IsolateOutcome, outcome: RunOutcome, run: RunDir) -> None:
    from jobs.inspect.isolate_text import lines

    cfg = outcome.config
    print("\n".join(lines(iso, cfg.isolate.op, cfg.isolate.sizes)))
    print(f"# Run directory: {run.path} (isolate.json, isolate-matrix.csv)", flush=True)
