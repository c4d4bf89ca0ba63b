"""The `collbench isolate` command: submit the rounds as one Slurm job, wait for it, report its verdict."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from jobs.cli.exit_codes import worst_exit
from jobs.cli.html_output import add_html_option, html_target, write_run_html
from jobs.cli.isolate_setup import plan_lines, with_level
from jobs.cli.options import RUNS_DIR, add_output_dir, with_output_dir
from jobs.cli.outcome import assess_isolate_run, print_isolate, wait_and_render
from jobs.cli.outcome_args import add_wait_args
from jobs.cli.topology import with_topology
from jobs.config.model import ConfigError, load_config
from jobs.config.tasks import TASKS
from jobs.inspect.report import RunOutcome, assess
from jobs.launchers.registry import detached_launcher, launcher_of
from jobs.rundir.layout import RunDir, find_run

if TYPE_CHECKING:
    from jobs.inspect.isolate_verdict import IsolateOutcome

ACTIONS = ("wait", "report")


def add_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    isolate = commands.add_parser(
        "isolate",
        help="find the node or link that slows the cluster: rounds of node groups in one Slurm job "
        "(isolate nodes=N ...); or: isolate wait|report JOB_OR_RUN",
        description="Exit status: 0 nothing found, 1 a bad node or link found (or the job failed), "
        "2 bad input, 3 Slurm unavailable, 5 nothing confirmed but a node, rail or link inconclusive.",
    )
    isolate.add_argument("words", nargs="*", metavar="KEY=VALUE | wait|report JOB_OR_RUN")
    isolate.add_argument("--config", metavar="NAME_OR_PATH", default=None, help="a Slurm config (name or path)")
    isolate.add_argument("--dry-run", action="store_true", help="print the sbatch script and the plan; submit nothing")
    add_output_dir(isolate, "wait/report", "run")
    add_wait_args(isolate, "wait")
    isolate.add_argument("--format", choices=("table", "json"), default="table", help="wait/report: what to print")
    isolate.add_argument("--plot", metavar="FILE.png", help="wait/report: the busbw matrix as a heatmap (matplotlib)")
    add_html_option(isolate, "wait/report: the run with its verdict, pair matrix and logs")
    isolate.add_argument(
        "--drain",
        action="store_true",
        help="wait: print the scontrol lines the verdict makes, weighed against the nodes' states (nothing runs)",
    )
    isolate.add_argument(
        "--apply",
        action="store_true",
        help="wait: run them (drain.apply=true, or set it when submitting): drain each node named, resume each node "
        "collbench drained that the run passed; never a node someone else drained; once per run (drains.json)",
    )
    isolate.set_defaults(handler=cmd_isolate, min_busbw=None, busbw_sizes=(0, None))


def cmd_isolate(args: argparse.Namespace) -> int:
    if args.words and args.words[0] in ACTIONS:
        if len(args.words) != 2:
            raise ConfigError(f"usage: collbench isolate {args.words[0]} JOB_OR_RUN")
        if args.words[0] == "report" and (args.apply or args.drain):
            raise ConfigError("isolate report only reads the run; --drain and --apply go with isolate wait JOB_OR_RUN")
        args.html_file = html_target(args.html)  # refused before the run is read or waited for
        run = find_run(args.words[1], args.output_dir or RUNS_DIR)
        if not TASKS[run.read_meta().task].in_rounds:
            raise ConfigError(f"run {run.run_id} is not an isolate run; use collbench {args.words[0]} {args.words[1]}")
        return _wait(run, args) if args.words[0] == "wait" else _report(run, args)
    if args.html:
        raise ConfigError("isolate: --html goes with isolate wait|report JOB_OR_RUN, once there is a verdict to show")
    return _submit(args)


def _submit(args: argparse.Namespace) -> int:
    loose = [word for word in args.words if "=" not in word]
    if loose:
        raise ConfigError(f"isolate: {loose[0]!r} is not KEY=VALUE nor one of {', '.join(ACTIONS)}")
    cfg = load_config(args.config, with_output_dir([*args.words, "task=isolate"], args.output_dir))
    launcher = detached_launcher(cfg)
    if args.dry_run:
        print(launcher.request(cfg).text, end="")
        print("\n".join(plan_lines(cfg)))
        return 0
    cfg, said = with_level(cfg)
    cfg, topology = with_topology(cfg)
    request = launcher.prepare(cfg)  # refused before a word of the level: the run that starts is the one checked
    for line, stream in [*said, (topology, sys.stdout)]:
        print(line, file=stream, flush=True)
    started = launcher.start(request)
    for line in started.lines:
        print(line, flush=True)
    print(f"collbench: then: collbench isolate wait {started.job_id}", file=sys.stderr)
    return 0


def _wait(run: RunDir, args: argparse.Namespace) -> int:
    def render(outcome: RunOutcome, run: RunDir, fmt: str) -> int:
        iso = assess_isolate_run(outcome, run)  # once: the verdict printed is the verdict acted on
        code = _render(outcome, run, args, iso)
        _act(outcome, run, args, iso)
        return code

    return wait_and_render(run, args.timeout, args, render)


def _act(outcome: RunOutcome, run: RunDir, args: argparse.Namespace, iso: IsolateOutcome) -> None:
    """Once the run has ended: the drain and resume steps its verdict makes, printed or run (once per run)."""
    from jobs.cli.drains import act_on_verdict

    cfg = outcome.config
    if args.apply:
        cfg = replace(cfg, drain=replace(cfg.drain, apply=True))
    if not (cfg.drain.apply or args.drain) or not outcome.ended:
        return
    if cfg.drain.apply and run.drains_file.exists():
        print(
            f"collbench: the drains of {run.run_id} were applied before ({run.drains_file}); not again", file=sys.stderr
        )
        return
    passed = iso.passed() if not outcome.problems else []  # an inconclusive node is neither drained nor resumed
    act_on_verdict(cfg, run, "isolate", iso.findings(), passed, args.drain)


def _report(run: RunDir, args: argparse.Namespace) -> int:
    facts = launcher_of(run).facts_now(run)  # what the launcher says now, in memory only
    outcome = assess(run, facts=facts, with_analysis=args.html_file is not None)  # reads the run, writes nothing
    return _render(outcome, run, args, assess_isolate_run(outcome, run))


def _render(outcome: RunOutcome, run: RunDir, args: argparse.Namespace, iso: IsolateOutcome) -> int:
    from jobs.inspect.isolate_verdict import plot_matrix, to_plain

    if args.format == "json":
        print(json.dumps(to_plain(iso), indent=1))
    else:
        print_isolate(iso, outcome, run)
    for problem in outcome.problems:
        print(f"collbench: FAILED: {problem}", file=sys.stderr)
    if args.plot:
        plot_matrix(iso, Path(args.plot))
        print(f"collbench: plot written to {args.plot}", file=sys.stderr)
    code = worst_exit(iso.exit_code, outcome.exit_code)  # 1 wins over 5
    if args.html_file is not None:
        write_run_html(args.html_file, run, outcome, code, isolate=iso)
    return code
