"""collbench check's config and plan as its step will run them: the user's config, then the allocation's
nodes, isolate in mode check, the expected level and the bounds the budget sets (check_config); the plan
as the dry run prints it (plan_lines)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import replace

from collectives.sizes import format_size
from jobs.cli.topology import with_topology
from jobs.config.model import Config, ConfigError, derive, load_config
from jobs.isolate.check_plan import (
    START_SHARE,
    bounds,
    check_plan,
    check_rounds,
    check_timing,
    plan_cost,
    seed_for,
)
from slurm.steps import NotInAllocation, cluster_name, current_allocation, step_hosts

JOB_MIN_FLOOR = 1.0
STEP = ("launcher=slurm-step", "ranks=null")
"""Whatever the config's launcher: a step of the allocation, its world nodes x slurm.tasks_per_node (the
local configs set ranks)."""


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
    isolate = settings.isolate_settings(
        base.isolate,
        round_budget_s=round_budget_s(settings.budget_s, rounds),
        seed=seed_for(allocation.job_id, settings.seed),
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


def leaves_line(cfg: Config) -> str:
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
        out.append(f"# leaves ({cfg.topology.resolved_from}): {leaves_line(cfg)}; round 2 pairs within, round 3 across")
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
