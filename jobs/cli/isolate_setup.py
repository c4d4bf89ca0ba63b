"""collbench isolate's config and plan before it is submitted: the level of a healthy pair from the
results history (with_level), and the plan as the dry run prints it (plan_lines)."""

from __future__ import annotations

import sys
from dataclasses import replace
from typing import TextIO

from jobs.config.model import Config, derive
from jobs.isolate.plan import halves, pairs_measured, pairs_plan, random_plan
from slurm.hostlist import collect_hostlist, expand_hostlist
from slurm.steps import cluster_name

PLAN_ROUNDS_SHOWN = 64


def with_level(cfg: Config) -> tuple[Config, list[tuple[str, TextIO]]]:
    """isolate.expected_busbw 0 (pairs, random): the level of a healthy pair from the results history, and
    where it came from, in the run's config for its verdict; too little history: the run's own median,
    and the verdict says why. Also what to say of it (line, stream)."""
    settings = cfg.isolate
    if settings.expected_busbw or not settings.from_history or settings.resolved_mode(cfg.nodes) == "bisect":
        return cfg, []
    from jobs.history.against import MIN_BASELINE_RUNS
    from jobs.history.hook import expected_pair_busbw  # SQLAlchemy only where it is asked

    cluster = cfg.history.cluster or cluster_name()
    found = expected_pair_busbw(cfg, cluster, sizes=settings.sizes, for_what="isolate")
    if found is None:
        source = f"too little history on {cluster} for a level (fewer than {MIN_BASELINE_RUNS} healthy 2-node runs)"
        level, said = 0.0, (f"collbench: isolate: {source}; the level is the run's own median", sys.stderr)
    else:
        level, source = found
        said = (f"# healthy level of a pair: {level:.3g} GB/s, {source}", sys.stdout)
    return derive(cfg, isolate=replace(settings, expected_busbw=level, expected_from=source)), [said]


def plan_lines(cfg: Config) -> list[str]:
    """The plan as the dry run prints it; node names where slurm.nodelist fixes them."""
    n = cfg.nodes
    listed = expand_hostlist(cfg.slurm.nodelist) if cfg.slurm.nodelist else []
    names = listed if len(listed) == n else [f"node{i}" for i in range(n)]
    mode = cfg.isolate.resolved_mode(n)
    head = f"# isolate plan: mode {mode}, {n} nodes, {cfg.isolate.op} at {len(cfg.isolate.sizes)} size(s)"
    if mode == "bisect":
        a, b = halves(tuple(range(n)))
        return [
            f"{head}; adaptive: round 1 measures {_names(names, range(n))}, round 2 {_names(names, a)} and "
            f"{_names(names, b)} at once, then every short half again, down to single suspects measured against "
            "healthy nodes (each round follows from the figures of the last)"
        ]
    plan = pairs_plan(n) if mode == "pairs" else random_plan(n, cfg.isolate.rounds, cfg.isolate.seed)
    rails = cfg.rails.count(cfg.ranks_per_node) if cfg.rails.enabled(cfg.ranks_per_node) else 1
    on_rails = f" on each of {rails} rails at once ({len(pairs_measured(plan)) * rails} groups)" if rails > 1 else ""
    again = cfg.isolate.confirm_rounds
    then = f"; then up to {again} round(s) measuring every slow pair again before it is named" if again else ""
    out = [f"{head}; {len(plan)} round(s), {len(pairs_measured(plan))} pair measurement(s){on_rails}{then}"]
    for number, groups in enumerate(plan[:PLAN_ROUNDS_SHOWN], start=1):
        out.append(f"# round {number}: " + " ".join("+".join(names[node] for node in group) for group in groups))
    if len(plan) > PLAN_ROUNDS_SHOWN:
        out.append(f"# ... and {len(plan) - PLAN_ROUNDS_SHOWN} more round(s)")
    return out


def _names(names: list[str], nodes: object) -> str:
    return collect_hostlist(names[node] for node in nodes)  # type: ignore[attr-defined]
