"""The commands that read one run: `status` (the job's state and every rank's progress), `wait` (until it
ends, then its tables and outcome), `cancel`, `report` (its tables from its directory) and `logs` (every
rank's log merged in time order). Only cancel acts; none writes into the run."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from jobs.cli.exit_codes import EXIT_OK, worst_exit
from jobs.cli.html_output import add_html_option, history_place, html_target, write_run_html
from jobs.cli.outcome import assess_isolate_run, held_to_history, hold_if_asked, print_outcome, wait_and_render
from jobs.cli.outcome_args import add_output_args, add_wait_args, check_tolerance, thresholds
from jobs.config.model import ConfigError
from jobs.inspect.report import assess, read_statuses
from jobs.launchers.registry import launcher_of
from jobs.rundir.layout import RunDir, find_run


def add_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from jobs.cli.against_history import add_against_history

    logs = commands.add_parser("logs", help="every rank's log merged in time order, filtered")
    logs.add_argument("run", metavar="JOB_OR_RUN", help="Slurm job id, run id, or run directory")
    logs.add_argument("--output-dir", default="runs", help="where to look up job and run ids (default: runs)")
    logs.add_argument("--rank", metavar="SPEC", help="only these ranks: 3, 0-7 or 0-7,12")
    logs.add_argument("--host", help="only ranks on this host")
    logs.add_argument("--level", choices=("DEBUG", "INFO", "WARNING", "ERROR"), help="this level and above")
    logs.add_argument("--grep", metavar="REGEX", help="only lines matching this regular expression")
    logs.add_argument("--tail", type=int, metavar="N", help="only the last N lines (with --follow: then the new ones)")
    logs.add_argument("--follow", action="store_true", help="keep printing new lines until the run ends")
    logs.set_defaults(handler=_cmd_logs)

    for name, handler, text in (
        ("status", _cmd_status, "show a run's job state and every rank's progress"),
        ("wait", _cmd_wait, "wait for a run to end, render its tables, exit with its outcome"),
        ("cancel", _cmd_cancel, "cancel a run's Slurm job"),
        ("report", _cmd_report, "print a run's tables from its directory"),
    ):
        command = commands.add_parser(name, help=text)
        command.add_argument("run", metavar="JOB_OR_RUN", help="Slurm job id, run id, or run directory")
        command.add_argument("--output-dir", default="runs", help="where to look up job and run ids (default: runs)")
        if name == "wait":
            add_wait_args(command)
        if name in ("wait", "report"):
            add_output_args(command)
        if name == "report":
            command.add_argument("--plot", metavar="FILE.png", help="also draw busbw against size (needs matplotlib)")
            add_html_option(command, "the run (an isolate or check run with its verdict and pair matrix)")
        if name in ("wait", "report"):
            add_against_history(command)
        command.set_defaults(handler=handler)


def _find(args: argparse.Namespace) -> RunDir:
    """The run named on the command line; when Slurm ran it more than once, say which attempt this is."""
    from jobs.rundir.attempts import notes

    run = find_run(args.run, args.output_dir)
    for line in notes(run):
        print(f"collbench: {line}", file=sys.stderr)
    return run


def _cmd_status(args: argparse.Namespace) -> int:
    from jobs.inspect.postmortem import examine
    from jobs.inspect.progress import behind, describe_age, read_progress

    run = _find(args)
    meta = run.read_meta()
    world = meta.world_size
    launcher = launcher_of(run)
    state = launcher.describe([run])[0]  # status asks and reads: it writes nothing into the run
    job = f"job {state.job_id}  {state.said} ({state.state.value})"
    print(f"run {run.run_id}  launcher {meta.launcher}  ranks {world}  {job}")
    facts = launcher.facts(run, state)
    for node, why in sorted(facts.unhealthy.items() if facts else ()):
        print(f"node {node}: {why}")
    statuses = read_statuses(run)
    postmortem = examine(run, statuses, world, facts)
    for cause in postmortem.causes:
        print(f"cause: {cause}")
    progress = read_progress(run, world, {r: s.host for r, s in statuses.items()})
    late = behind(progress)
    if late and len(late) < len(progress):
        names = ", ".join(f"{p.rank} ({p.host}, {p.where}, {describe_age(p.at)})" for p in late[:20])
        more = f" and {len(late) - 20} more" if len(late) > 20 else ""
        print(f"behind the rest: {len(late)} rank(s): {names}{more}")
    print(f"{'rank':>6}  {'host':<12} {'state':<14} {'heartbeat':<12} last reached")
    for p in progress:
        end = postmortem.ends.get(p.rank)
        state_word = end.state if end else "-"
        host = p.host if p.host != "?" or end is None else end.host
        how = f"  [{end.how}]" if end and end.kind not in ("ok", "running", "absent") else ""
        print(f"{p.rank:>6}  {host:<12} {state_word:<14} {describe_age(p.at):<12} {p.where}{how}")
    return EXIT_OK


def _cmd_logs(args: argparse.Namespace) -> int:
    import re

    from jobs.inspect.logs import LEVELS, LogFilter, check_ranks_within, follow, parse_rank_spec, print_logs

    run = _find(args)
    try:
        ranks = parse_rank_spec(args.rank) if args.rank else None
        if ranks is not None:
            check_ranks_within(ranks, run.read_meta().world_size)
        pattern = re.compile(args.grep) if args.grep else None
    except (ValueError, re.error) as error:
        raise ConfigError(f"{error}") from None
    if args.tail is not None and args.tail < 0:
        raise ConfigError(f"--tail: {args.tail} must be >= 0")
    keep = LogFilter(ranks=ranks, host=args.host, min_level=LEVELS[args.level] if args.level else 0, pattern=pattern)
    if args.follow:
        launcher = launcher_of(run)
        follow(run, keep, lambda: launcher.has_ended(run), tail=args.tail)
    else:
        print_logs(run, keep, args.tail)
    return EXIT_OK


def _cmd_wait(args: argparse.Namespace) -> int:
    check_tolerance(args)  # bad input is said before the wait, not after it
    return wait_and_render(_find(args), args.timeout, args, held_to_history(args))


def _cmd_cancel(args: argparse.Namespace) -> int:
    run = _find(args)
    print(f"cancelled {launcher_of(run).cancel(run)}")
    return EXIT_OK


def _cmd_report(args: argparse.Namespace) -> int:
    check_tolerance(args)
    html = html_target(args.html)  # refused before the run is read
    run = _find(args)
    facts = launcher_of(run).facts_now(run)  # what the launcher says now, in memory only
    with_analysis = html is not None or args.format in ("json", "table")  # the page shows the per-host view
    outcome = assess(run, thresholds(args), with_analysis=with_analysis, facts=facts)  # reads the run, writes nothing
    if args.plot:
        from jobs.inspect.plot import plot_busbw

        plot_busbw(outcome.rows, Path(args.plot), f"collbench {run.run_id}")
    iso = assess_isolate_run(outcome, run) if outcome.config.spec.in_rounds and html is not None else None
    code = print_outcome(outcome, run, args.format, iso)
    if args.format == "table" and outcome.analysis:
        print("\n".join(outcome.analysis.lines()), flush=True)
    held = hold_if_asked(outcome, run, args)
    code = worst_exit(code, held.judgement.exit_code if held is not None else EXIT_OK)  # 1 wins over 5
    if html is not None:
        place = history_place(held) if held is not None else None
        write_run_html(html, run, outcome, code, isolate=iso, history=place, history_asked=args.against_history)
    if args.plot:
        print(f"collbench: plot written to {args.plot}", file=sys.stderr)
    return code
