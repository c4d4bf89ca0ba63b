"""The `collbench` command: run, submit, status, wait, cancel, report."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from collectives.results import ResultFormatError
from jobs.cli import nccl_flags
from jobs.cli.exit_codes import EXIT_OK, EXIT_UNAVAILABLE, EXIT_USAGE, worst_exit
from jobs.cli.html_output import add_html_option, history_place, html_target, write_run_html
from jobs.cli.options import Parser, add_output_dir_override, command_parser, unknown_option_error, with_output_dir
from jobs.cli.outcome import (
    add_output_args,
    add_wait_args,
    assess_isolate_run,
    check_tolerance,
    held_to_history,
    hold_if_asked,
    print_outcome,
    thresholds,
    wait_and_render,
)
from jobs.config.model import ConfigError, load_config, to_yaml
from jobs.inspect.report import assess, read_statuses
from jobs.launchers.outside import outside_launcher, refusal
from jobs.launchers.registry import detached_launcher, launcher_for, launcher_of
from jobs.rundir.layout import RunDir, find_run
from jobs.rundir.records.codec import RecordError
from slurm.submission import SlurmUnavailable, SubmissionFailed


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    args, extra = parser.parse_known_args(argv)
    # overrides may sit on either side of options: `run ranks=4 --format json bench.iters=5`
    loose = "overrides" if hasattr(args, "overrides") else "words" if hasattr(args, "words") else None
    if extra and loose and all("=" in token and not token.startswith("-") for token in extra):
        setattr(args, loose, getattr(args, loose) + extra)
    elif extra:
        command, name = command_parser(parser, argv)
        command.print_usage(sys.stderr)
        print(unknown_option_error(command, name, extra), file=sys.stderr)
        return EXIT_USAGE
    try:
        _refuse_under_outside_launcher(args)
        if loose:
            nccl_flags.apply(args, loose)  # the flags become overrides, ahead of the typed ones
        if getattr(args, "output_dir_override", None) and hasattr(args, "overrides"):
            args.overrides = with_output_dir(args.overrides, args.output_dir_override)
        return int(args.handler(args))
    except (ConfigError, FileNotFoundError, RecordError, ResultFormatError, SubmissionFailed) as error:
        print(f"collbench: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except SlurmUnavailable as error:
        print(f"collbench: error: {error}", file=sys.stderr)
        return EXIT_UNAVAILABLE
    except KeyboardInterrupt:
        print("collbench: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `collbench logs ... | head`: the reader left; so do we, quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK


def _parser() -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = Parser(  # its subcommands are Parsers too (type(self))
        prog="collbench",
        description="Collective-communication benchmarks (nccl-tests style) over torch.distributed, "
        "locally or as Slurm jobs. Exit status: 0 passed, 1 failed or #wrong > 0, 2 bad input, "
        "3 Slurm unavailable, 4 (check only) the check could not run or settle, 5 (isolate, check) nothing confirmed "
        "bad but a node, rail or link inconclusive (drain nothing for it).",
    )
    parser.add_argument("--version", action="version", version=f"collbench {_version()}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    from jobs.cli.against_history import add_against_history

    run = commands.add_parser("run", help="run the sweep and print its tables (a Slurm config: submit and wait)")
    _add_config_args(run, "print the resolved config; launch nothing")
    add_output_args(run)
    add_against_history(run)
    run.set_defaults(handler=_cmd_run)

    submit = commands.add_parser("submit", help="submit the sweep as a Slurm job and return at once")
    _add_config_args(submit, "print the exact sbatch script; submit nothing")
    submit.set_defaults(handler=_cmd_submit)

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

    from jobs.cli.check_command import add_command as add_check_command
    from jobs.cli.compare_command import add_command as add_compare_command
    from jobs.cli.config import add_command as add_config_command
    from jobs.cli.export import add_command as add_export_command
    from jobs.cli.history import add_command as add_history_command
    from jobs.cli.importer import add_command as add_import_command
    from jobs.cli.isolate_command import add_command
    from jobs.cli.rank_command import add_command as add_rank_command
    from jobs.cli.recheck_command import add_command as add_recheck_command
    from jobs.cli.scale_command import add_command as add_scale_command

    add_scale_command(commands)
    add_compare_command(commands)
    add_command(commands)
    add_check_command(commands)
    add_recheck_command(commands)
    add_history_command(commands)
    add_config_command(commands)  # after run and submit: it ends their --help with a pointer to it
    add_export_command(commands)
    add_import_command(commands)
    add_rank_command(commands)

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
    return parser


STARTING = ("run", "submit", "scale", "isolate", "check", "recheck")
"""The commands that start ranks or jobs: refused when this process is one rank of another launcher."""
READING_ACTIONS = ("status", "wait", "report")
"""scale's and isolate's first words that read a run or sweep rather than start one."""


def _refuse_under_outside_launcher(args: argparse.Namespace) -> None:
    """Refuse, before anything starts, a starting command that torchrun, srun or mpirun started once per
    rank: it would start a world per process (docs/launchers.md). `check --node` is each node's own check,
    started once per node by srun as a health check's program: it is left to run."""
    words = getattr(args, "words", None) or []
    if args.command not in STARTING or getattr(args, "node", False) or (words and words[0] in READING_ACTIONS):
        return
    found = outside_launcher(os.environ)
    if found is not None:
        raise ConfigError(refusal(args.command, found))


def _version() -> str:
    from importlib import metadata

    try:
        return metadata.version("collbench")
    except metadata.PackageNotFoundError:
        return "(not installed)"


def _add_config_args(command: argparse.ArgumentParser, dry_run_help: str) -> None:
    command.add_argument(
        "--config", metavar="NAME_OR_PATH", default=None, help="a name from cluster_configs/ or a YAML path"
    )
    add_output_dir_override(command)
    command.add_argument("--dry-run", action="store_true", help=dry_run_help)
    command.add_argument("overrides", nargs="*", metavar="KEY=VALUE", help="e.g. ranks=4 bench.max_bytes=64M")
    nccl_flags.add_flags(command)


def _cmd_run(args: argparse.Namespace) -> int:
    cfg = load_config(args.config, args.overrides)
    check_tolerance(args)  # bad input is said before the run starts
    launcher = launcher_for(cfg)
    if args.dry_run:
        launcher.request(cfg)  # refused here whatever the real start would refuse short of asking Slurm or the history
        print(to_yaml(cfg), end="")
        return EXIT_OK
    started = launcher.launch(cfg)
    for line in started.lines:
        print(f"collbench: {line}", file=sys.stderr, flush=True)
    return wait_and_render(started.run, None, args, held_to_history(args), launcher)


def _cmd_submit(args: argparse.Namespace) -> int:
    cfg = load_config(args.config, args.overrides)
    launcher = detached_launcher(cfg)
    if args.dry_run:
        print(launcher.request(cfg).text, end="")
        return EXIT_OK
    for line in launcher.launch(cfg).lines:
        print(line, flush=True)
    return EXIT_OK


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
    launcher = launcher_of(run)
    facts = launcher.facts(run, launcher.describe([run])[0])  # what the launcher says now, in memory only
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


if __name__ == "__main__":
    sys.exit(main())
