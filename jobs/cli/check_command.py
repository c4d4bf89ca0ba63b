"""The `collbench check` command: a preflight inside the allocation a job already holds. The whole
allocation at once, then random pairs, as one srun step (launcher slurm-step), within a wall-time budget;
the verdict as vetted and cordoned hostlists, printed and written where a batch script reads them."""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from collectives.sizes import format_size
from jobs.cli.exit_codes import EXIT_CANNOT_RUN, EXIT_INCONCLUSIVE
from jobs.cli.html_output import add_html_option, html_target, write_run_html
from jobs.cli.options import add_output_dir_override, with_output_dir
from jobs.cli.topology import with_topology
from jobs.config.model import Config, ConfigError, derive, load_config
from jobs.inspect.report import assess
from jobs.isolate.check_plan import (
    START_SHARE,
    bounds,
    check_plan,
    check_rounds,
    check_timing,
    plan_cost,
    seed_for,
)
from jobs.launchers.base import Launcher
from jobs.launchers.registry import launcher_for
from jobs.rundir.layout import RunDir
from slurm.steps import NotInAllocation, StepRefused, cluster_name, current_allocation, step_hosts

if TYPE_CHECKING:
    from jobs.inspect.check_verdict import CheckOutcome

CANCEL_WAIT_S = 15.0
JOB_MIN_FLOOR = 1.0
STEP = ("launcher=slurm-step", "ranks=null")
"""Whatever the config's launcher: a step of the allocation, its world nodes x slurm.tasks_per_node (the
local configs set ranks)."""


def add_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    check = commands.add_parser(
        "check",
        help="preflight inside the allocation you hold (salloc, a batch script): the whole allocation, then "
        "random pairs, within check.budget_s; prints and writes the vetted and cordoned nodes",
        description="Exit status: 0 every node vetted, 1 a node cordoned, 2 bad input (or not inside an "
        f"allocation), 3 Slurm unavailable, {EXIT_CANNOT_RUN} the check could not run or settle (do not drain), "
        f"{EXIT_INCONCLUSIVE} nothing cordoned but a node, rail or link inconclusive (drain nothing for it).",
    )
    check.add_argument("words", nargs="*", metavar="KEY=VALUE")
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
    loose = [word for word in args.words if "=" not in word]
    if loose:
        raise ConfigError(f"check: {loose[0]!r} is not KEY=VALUE")
    if args.keep_run and not args.node:
        raise ConfigError("check: --keep-run goes with --node; a check of an allocation always keeps its run directory")
    words = with_output_dir(args.words, args.output_dir_override) + (["drain.apply=true"] if args.apply else [])
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
        print(f"# leaves ({cfg.topology.resolved_from}): {_leaves(cfg)}; pairs within each, then across", flush=True)
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


def check_config(name: str | None, words: list[str]) -> tuple[Config, str]:
    """The config the step runs: the user's, then the allocation's nodes, isolate in mode check, the
    expected level (and where it comes from: '' for the pairs' median), and the bounds the budget sets
    (each round's share, each measurement's length, each collective's time-out)."""
    try:
        allocation = current_allocation(os.environ)
    except NotInAllocation as error:
        raise ConfigError(str(error)) from None
    # as many nodes as the allocation holds until its subset is known: fault ranks are checked against those
    base = load_config(name, [f"nodes={len(allocation.hosts)}", *words, *STEP])
    try:
        hosts = step_hosts(allocation, base.slurm)
    except ValueError as error:
        raise ConfigError(str(error)) from None
    nodes = base.nodes if any(word.startswith("nodes=") for word in words) else len(hosts)
    if nodes < 2:
        raise ConfigError(
            f"check: allocation {allocation.job_id} offers {nodes} node(s) to check; a check needs 2 or more "
            "(collbench check --node checks one node on its own)"
        )
    settings = base.check
    rounds = check_rounds(nodes, settings.pair_rounds, settings.confirm_rounds)
    expected, source = expected_level(base)
    isolate = replace(
        base.isolate,
        mode="check",
        sizes=list(settings.sizes),
        round_budget_s=round_budget_s(settings.budget_s, rounds),
        probe_size=settings.probe_size,
        rounds=settings.pair_rounds,
        confirm_rounds=settings.confirm_rounds,
        seed=seed_for(allocation.job_id, settings.seed),
        tolerance=settings.tolerance,
        expected_busbw=expected,
        expected_from=source,  # the run's config says where its level came from
    )
    limits = bounds(settings.budget_s, rounds, len(isolate.measured_sizes()))  # the probe is a size too
    timing = check_timing(base.backend, settings.tolerance)  # on NCCL the warm-up makes the connections
    bench = replace(
        base.bench,
        time_budget_ms=float(round(limits.measure_ms)),
        warmup_iters=timing.warmup_iters,
        min_iters=timing.min_iters,
        max_iters=max(base.bench.max_iters, timing.min_iters),  # check.tolerance sets the floor, not the config
    )
    timeouts = replace(
        base.timeouts, collective_s=limits.collective_s, job_min=max(JOB_MIN_FLOOR, settings.budget_s / 60)
    )
    cfg = derive(base, task="check", nodes=nodes, isolate=isolate, bench=bench, timeouts=timeouts)
    cfg, _ = with_topology(cfg)
    return cfg, source


def round_budget_s(budget_s: float, rounds: int) -> float:
    """Each round's share of the check's budget (isolate.round_budget_s): what starting the step leaves
    (jobs.isolate.check_plan.START_SHARE), over the rounds. A group whose next size would run past it stops
    growing, so a very slow member still ends its round, with the figure of its smaller sizes."""
    return budget_s * (1 - START_SHARE) / max(1, rounds)


def expected_level(cfg: Config) -> tuple[float, str]:
    """check.expected_busbw, else the results history's healthy pair (check.from_history), else 0: the
    pairs' own median."""
    if cfg.check.expected_busbw:
        return cfg.check.expected_busbw, "check.expected_busbw"
    if not cfg.check.from_history:
        return 0.0, ""
    from jobs.history.hook import expected_pair_busbw  # SQLAlchemy only where it is asked

    cluster = cfg.history.cluster or cluster_name()
    return expected_pair_busbw(cfg, cluster) or (0.0, "")


def _leaves(cfg: Config) -> str:
    return ", ".join(f"{leaf} = {hosts}" for leaf, hosts in sorted(cfg.topology.switches.items()))


def plan_lines(cfg: Config, hosts: Sequence[str] = ()) -> list[str]:
    """The plan as the dry run prints it: with the step's `hosts` (in the job's node order) and a topology,
    pairs within each leaf, then across."""
    placed = cfg.topology.leaves_of(hosts)
    leaves = [placed.get(node) for node in range(cfg.nodes)] if placed else []
    cost = plan_cost(cfg.nodes, cfg.isolate.rounds, leaves, cfg.isolate.confirm_rounds)
    rails = cfg.rails.count(cfg.ranks_per_node) if cfg.rails.enabled(cfg.ranks_per_node) else 1
    on_rails = f" on each of {rails} rails at once ({cost.measurements * rails} groups)" if rails > 1 else ""
    plan = check_plan(cfg.nodes, cfg.isolate.rounds, cfg.isolate.seed, leaves)
    sizes = cfg.isolate.measured_sizes()
    limits = bounds(cfg.check.budget_s, cost.rounds + cost.confirm_rounds, len(sizes))
    again = f", then up to {cost.confirm_rounds} round(s) measuring the suspects again" if cost.confirm_rounds else ""
    out = [
        f"# check plan: {cfg.nodes} nodes, {cost.rounds} round(s), {cost.measurements} measurement(s){on_rails}"
        f"{again}; each "
        f"{limits.measure_ms:.0f} ms, a collective times out after {limits.collective_s:g} s, the step is "
        f"cancelled at {limits.deadline_s:.0f} s of the {cfg.check.budget_s:g} s budget",
        f"# each group measures {', '.join(map(format_size, sizes))} in turn, and stops before a size that "
        "would not finish within its round's share of the budget",
    ]
    if leaves:
        out.append(f"# leaves ({cfg.topology.resolved_from}): {_leaves(cfg)}; round 2 pairs within, round 3 across")
    names = list(hosts) if len(hosts) == cfg.nodes else [f"node{n}" for n in range(cfg.nodes)]
    share = cfg.isolate.round_budget_s
    for number, groups in enumerate(plan, start=1):
        within = f" (within {share:.3g} s)" if share > 0 else ""
        out.append(f"# round {number}{within}: " + " ".join("+".join(names[n] for n in group) for group in groups[:32]))
    for number in range(len(plan) + 1, len(plan) + 1 + cost.confirm_rounds):
        within = f" (within {share:.3g} s)" if share > 0 else ""
        out.append(
            f"# round {number}{within}, only if a unit is suspect: each suspect again, with a partner held healthy"
        )
    return out


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
