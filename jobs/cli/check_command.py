"""The `collbench check` command: a preflight inside the allocation a job already holds. The whole
allocation at once, then random pairs, as one srun step (launcher slurm-step), within a wall-time budget;
the verdict as vetted and cordoned hostlists, printed and written where a batch script reads them."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jobs.cli.check_setup import check_config, leaves_line, plan_lines
from jobs.cli.exit_codes import EXIT_CANNOT_RUN, EXIT_INCONCLUSIVE
from jobs.cli.html_output import add_html_option, html_target, write_run_html
from jobs.cli.options import add_output_dir_override
from jobs.config.model import Config, ConfigError
from jobs.inspect.report import assess
from jobs.isolate.check_plan import bounds, check_rounds
from jobs.launchers.base import Launcher
from jobs.launchers.registry import launcher_for
from jobs.rundir.layout import RunDir
from slurm.steps import StepRefused, current_allocation, step_hosts

if TYPE_CHECKING:
    from jobs.inspect.check_verdict import CheckOutcome

CANCEL_WAIT_S = 15.0


def add_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    check = commands.add_parser(
        "check",
        help="preflight inside the allocation you hold (salloc, a batch script): the whole allocation, then "
        "random pairs, within check.budget_s; prints and writes the vetted and cordoned nodes",
        description="Exit status: 0 every node vetted, 1 a node cordoned, 2 bad input (or not inside an "
        f"allocation), 3 Slurm unavailable, {EXIT_CANNOT_RUN} the check could not run or settle (do not drain), "
        f"{EXIT_INCONCLUSIVE} nothing cordoned but a node, rail or link inconclusive (drain nothing for it).",
    )
    check.add_argument("overrides", nargs="*", metavar="KEY=VALUE")
    check.add_argument("--config", metavar="NAME_OR_PATH", default=None, help="a config (name or path)")
    check.add_argument(
        "--output", "--out", dest="out", metavar="DIR", type=Path, help="also write vetted, cordoned, ... into DIR"
    )
    add_output_dir_override(check)
    check.add_argument(
        "--drain",
        action="store_true",
        help="print the scontrol lines the verdict makes, weighed against the nodes' states: a drain per node named, "
        "a resume per node collbench drained that it passes, a comment per node left (nothing runs)",
    )
    check.add_argument(
        "--apply",
        action="store_true",
        help="run those lines (drain.apply=true): needs a Slurm operator; never touches a node someone else drained",
    )
    check.add_argument("--dry-run", action="store_true", help="print the srun command and the plan; run nothing")
    add_html_option(check, "the verdict with its pair matrix, the per-host view and the logs")
    check.add_argument(
        "--node",
        action="store_true",
        help="this node alone, for a prolog or HealthCheckProgram: its local ranks over the loopback, within "
        "check.local_budget_s, one line (OK/FAIL HOST: reason); no allocation needed",
    )
    check.add_argument(
        "--keep-run",
        action="store_true",
        help="with --node: keep its run directory under output_dir (check.node_keep_run=true); the line says where",
    )
    check.set_defaults(handler=cmd_check)


def cmd_check(args: argparse.Namespace) -> int:
    started = time.monotonic()
    loose = [word for word in args.overrides if "=" not in word]
    if loose:
        raise ConfigError(f"check: {loose[0]!r} is not KEY=VALUE")
    if args.keep_run and not args.node:
        raise ConfigError("check: --keep-run goes with --node; a check of an allocation always keeps its run directory")
    words = args.overrides + (["drain.apply=true"] if args.apply else [])  # --output-dir is in them (main)
    if args.html and args.node:
        raise ConfigError("check: --html goes with a check of an allocation; check --node says one line")
    args.html_file = html_target(args.html)  # refused before the step starts
    if args.node:
        from jobs.cli.check_node_command import check_node

        return check_node(args.config, words, args.dry_run, args.keep_run, args.drain)
    cfg, source = check_config(args.config, words)
    launcher = launcher_for(cfg)
    if args.dry_run:
        print(launcher.request(cfg).text, end="")
        print("\n".join(plan_lines(cfg, step_hosts(current_allocation(os.environ), cfg.slurm)[: cfg.nodes])))
        return 0
    request = launcher.prepare(cfg)
    if source:
        print(f"# expected level of a pair: {cfg.isolate.expected_busbw:.3g} GB/s, {source}", flush=True)
    if cfg.topology.switches:
        leaves = leaves_line(cfg)
        print(f"# leaves ({cfg.topology.resolved_from}): {leaves}; pairs within each, then across", flush=True)
    try:
        run = launcher.start(request).run
    except StepRefused as error:
        print(f"collbench: check could not run: {error}", file=sys.stderr)
        return EXIT_CANNOT_RUN
    rounds = check_rounds(cfg.nodes, cfg.isolate.rounds, cfg.isolate.confirm_rounds)
    deadline_s = bounds(cfg.check.budget_s, rounds, 1).deadline_s
    ran_out = _wait_within(launcher, run, deadline_s - (time.monotonic() - started))
    from jobs.inspect.check_verdict import assess_check  # the verdict's modules only where a check ran
    from jobs.inspect.isolate_verdict import assess_isolate

    outcome = assess(run, with_analysis=args.html_file is not None)
    iso = assess_isolate(run, outcome)
    check = assess_check(run, outcome, iso)
    code = _report(check, run, args, cfg, time.monotonic() - started, ran_out)
    if args.html_file is not None:
        write_run_html(args.html_file, run, outcome, code, isolate=iso, check=check)
    return code


def _wait_within(launcher: Launcher[Any], run: RunDir, seconds: float) -> bool:
    """Wait for the step until the budget's deadline; past it, cancel the step (never the allocation).
    True when the budget ran out."""
    [result] = launcher.wait([run], max(1.0, seconds), None)
    if not result.still_running:
        return False
    launcher.cancel(run)
    launcher.wait([run], CANCEL_WAIT_S, None)
    return True


def _report(check: CheckOutcome, run: RunDir, args: argparse.Namespace, cfg: Config, took: float, ran_out: bool) -> int:
    from jobs.cli.drains import act_on_verdict
    from jobs.ending.check_files import FILES, write_check_files
    from jobs.inspect.check_verdict import verdict_lines

    print("\n".join(verdict_lines(check, took, cfg.check.budget_s)), flush=True)
    act_on_verdict(cfg, run, "check", check.verdict.findings(), check.verdict.vetted, args.drain)
    # check/ is written where the run ended (jobs.ending); a step that outlived even its cancel has not ended
    folders = [run.check_dir] if run.check_dir.is_dir() else []
    if args.out:
        write_check_files(check, args.out)
        folders.append(args.out)
    if folders:
        print(f"# files: {', '.join(map(str, folders))} ({', '.join(FILES)})")
    code = check.verdict.exit_code
    if ran_out:
        print(f"collbench: the check ran past its budget of {cfg.check.budget_s:g} s; its step was cancelled",
              file=sys.stderr)  # fmt: skip
    if code == EXIT_CANNOT_RUN:
        why = "nothing was measured" if not check.verdict.measured else "nodes were left unchecked"
        print(f"collbench: check could not settle: {why}; drain nothing for it", file=sys.stderr)
    if code == EXIT_INCONCLUSIVE:
        settle = "its INCONCLUSIVE lines say what would settle it"
        print(f"collbench: check is inconclusive ({settle}); drain nothing for it", file=sys.stderr)
    for problem in check.problems:
        print(f"collbench: {problem}", file=sys.stderr)
    return code
