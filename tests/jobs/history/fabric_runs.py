"""Finished rail-aligned collbench isolate runs made without running anything (as tests/jobs/rundir/synthetic.py
makes the node-grain one): six nodes n1..n6 on two rails (mlx5_0, mlx5_1), two ranks a node (rank 2n + r on
rail r), the pairs plan measured on every rail at once, then its confirm rounds as the job plans them, and, when
`leaves`, topology.switches s1 = n[1-3], s2 = n[4-6]. `slow(pair, rail)` names the (pair, rail) groups measured
50 times slower."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from collectives.results import RankResult
from jobs.config.model import load_config, to_yaml
from jobs.isolate.rounds import GroupKey, Rounds, group_label
from jobs.rundir.layout import RunDir
from jobs.rundir.records.isolate import (
    ISOLATE_PLAN,
    ISOLATE_ROUND,
    PLAN_VERSION,
    GroupFigure,
    IsolatePlan,
    IsolateRound,
)
from tests.jobs.rundir.synthetic import _rank_files, result

HOSTS = [f"n{node}" for node in range(1, 7)]
RAILS = (0, 1)
NICS = ["mlx5_0", "mlx5_1"]
LEAF = {0: "s1", 1: "s1", 2: "s1", 3: "s2", 4: "s2", 5: "s2"}
Slow = Callable[[tuple[int, ...], int], bool]


def across(pair: tuple[int, ...]) -> bool:
    """The pair has a node under each leaf."""
    return LEAF[pair[0]] != LEAF[pair[-1]]


def rail_isolate_run(
    output_dir: Path, slow: Slow, leaves: bool = True, check: bool = False, old_plan: bool = False
) -> RunDir:
    """`check`: a collbench check run instead (mode check, two rounds of pairs, one confirming round, as
    check_config sets them); `old_plan`: its plan.json of format 3, before the file said its confirming
    rounds, when a check measured nothing again (its config still held isolate.confirm_rounds' default)."""
    task = "check" if check else "isolate"
    overrides = [f"task={task}", "nodes=6", f"rails.hcas=[{','.join(NICS)}]", "rails.aligned=on"]
    overrides += ["isolate.mode=check", "isolate.rounds=2"] if check else []
    overrides += ["isolate.confirm_rounds=1"] if check and not old_plan else []
    if leaves:
        overrides += ["topology.switches.s1=n[1-3]", "topology.switches.s2=n[4-6]", "topology.source=config",
                      "topology.resolved_from=config topology.switches"]  # fmt: skip
    else:
        overrides += ["topology.source=none", "topology.resolved_from=none"]
    cfg = load_config("testcluster", overrides)
    run = RunDir.create(output_dir, "slurm")
    run.config_file.write_text(to_yaml(cfg))
    run.update_meta(run_id=run.run_id, launcher="slurm", world_size=12, nodes=6, task=task, job_id="4000001")
    ranks_of = [[2 * node, 2 * node + 1] for node in range(len(HOSTS))]
    run.isolate_dir.mkdir()
    leaf_list = [LEAF[node] for node in range(len(HOSTS))] if leaves else []
    planned = Rounds(replace(cfg.isolate, confirm_rounds=0) if old_plan else cfg.isolate, HOSTS, list(RAILS), leaf_list)
    plan = IsolatePlan(
        mode=planned.mode, hosts=HOSTS, ranks=ranks_of, started=time.time(), rails=list(RAILS),
        confirm_rounds=None if old_plan else planned.confirm_rounds, version=3 if old_plan else PLAN_VERSION,
    )  # fmt: skip
    ISOLATE_PLAN.write(run.isolate_plan, plan)
    lines: dict[int, list[RankResult]] = {rank: [] for rank in range(12)}
    with run.isolate_rounds.open("wb") as rounds:
        while (groups := planned.start()) is not None:
            number = planned.round_no
            figures = []
            found: dict[GroupKey, float] = {}
            for group in groups:
                for rail in RAILS:
                    members = [ranks_of[node][rail] for node in group]
                    factor = 50.0 if slow(group, rail) else 1.0
                    for rank in members:
                        for size in cfg.isolate.sizes:
                            lines[rank].append(result(
                                rank, HOSTS[rank // 2], size, len(members), (20.0 + size / 100) * factor, round=number,
                                nodes=list(group), members=members, group=group_label(number, HOSTS, group, rail),
                                rail=rail,
                            ))  # fmt: skip
                    busbw = lines[members[0]][-1].busbw
                    figures.append(GroupFigure(nodes=[HOSTS[n] for n in group], busbw=busbw, rail=rail))
                    found[planned.key(group, rail)] = busbw
            rounds.write(ISOLATE_ROUND.encode(IsolateRound(round=number, groups=figures, seconds=1.0)) + b"\n")
            assert planned.finish(found)
    for rank, measured in lines.items():
        _rank_files(run, rank, HOSTS[rank // 2], rank // 2, measured)
    return run
