"""Finished collbench isolate runs (pairs, node grain, two ranks a node) made without running anything, as
tests/jobs/rundir/synthetic.py makes them, where each node may be slowed by a factor of its own: a pair runs at
the pace of its slower node (`factors[host]`, 1.0 by default) times the run's `noise`, so a node at 0.93 is
slowed a little on every pair it is in, and stays above isolate's fixed tolerance (0.85 of the level)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path

from collectives.results import RankResult
from jobs.config.model import load_config, to_yaml
from jobs.isolate.rounds import Rounds, group_label
from jobs.rundir.layout import RunDir
from jobs.rundir.records.isolate import ISOLATE_PLAN, ISOLATE_ROUND, GroupFigure, IsolatePlan, IsolateRound
from tests.jobs.rundir.synthetic import _rank_files, result

NODES = 6


def slowed_isolate_run(
    output_dir: Path, factors: Mapping[str, float] | None = None, noise: float = 1.0, nodes: int = NODES
) -> RunDir:
    """An isolate run of `nodes` nodes n1..nN where each pair's busbw is the healthy one x the smaller factor of
    its two nodes x `noise`."""
    factors = factors or {}
    cfg = load_config("testcluster", ["task=isolate", f"nodes={nodes}", "isolate.mode=pairs", "isolate.tolerance=0.15"])
    run = RunDir.create(output_dir, "slurm")
    run.config_file.write_text(to_yaml(cfg))
    run.update_meta(
        run_id=run.run_id, launcher="slurm", world_size=2 * nodes, nodes=nodes, task="isolate", job_id="4000002"
    )
    hosts = [f"n{node + 1}" for node in range(nodes)]
    ranks_of = [[2 * node, 2 * node + 1] for node in range(nodes)]
    run.isolate_dir.mkdir()
    ISOLATE_PLAN.write(run.isolate_plan, IsolatePlan(mode="pairs", hosts=hosts, ranks=ranks_of, started=time.time()))
    lines: dict[int, list[RankResult]] = {rank: [] for rank in range(2 * nodes)}
    planned = Rounds(cfg.isolate, hosts)
    with run.isolate_rounds.open("wb") as rounds:
        while (groups := planned.start()) is not None:
            figures = []
            for group in groups:
                members = sorted(rank for node in group for rank in ranks_of[node])
                pace = min(factors.get(hosts[node], 1.0) for node in group) * noise
                for rank in members:
                    for size in cfg.isolate.sizes:
                        lines[rank].append(result(
                            rank, hosts[rank // 2], size, len(members), (20.0 + size / 100) / pace,
                            round=planned.round_no, nodes=list(group), members=members,
                            group=group_label(planned.round_no, hosts, group),
                        ))  # fmt: skip
                figures.append(GroupFigure(nodes=[hosts[n] for n in group], busbw=lines[members[0]][-1].busbw))
            record = IsolateRound(round=planned.round_no, groups=figures, seconds=1.0)
            rounds.write(ISOLATE_ROUND.encode(record) + b"\n")
            assert planned.finish({planned.key(g): f.busbw for g, f in zip(groups, figures, strict=True)})
    for rank, measured in lines.items():
        _rank_files(run, rank, hosts[rank // 2], rank // 2, measured)
    return run
