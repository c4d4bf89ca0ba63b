"""Finished run directories made without running anything: written through the run directory's records,
as ranks and launchers write them, for the tests of readers (report, compare, scale, isolate)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path

from collectives.layout import LAYOUTS
from collectives.results import RankResult
from jobs.config.model import load_config, to_yaml
from jobs.isolate.rounds import Rounds, group_label
from jobs.rundir.layout import RunDir
from jobs.rundir.records.isolate import ISOLATE_PLAN, ISOLATE_ROUND, GroupFigure, IsolatePlan, IsolateRound
from jobs.rundir.records.rank import HEARTBEAT, STATUS, Beat, HeartbeatPhase, RankState, RankStatus
from jobs.rundir.sweep import Sweep
from jobs.rundir.writing import write_json_atomic

SIZES = (1024, 4096)


def result(rank: int, host: str, size: int, nranks: int, time_us: float, **fields: object) -> RankResult:
    algbw, busbw = LAYOUTS["all_reduce"].bandwidths(size // 4, 4, nranks, time_us / 1e6)
    return RankResult(
        op="all_reduce", size=size, count=size // 4, dtype="float32", redop="sum", root=-1, in_place=True,
        rank=rank, local_rank=rank % 2, host=host, nranks=nranks, iters=5, time_us=time_us, algbw=algbw,
        busbw=busbw, wrong=0, started_at=time.time(), requested_size=size, **fields,  # type: ignore[arg-type]
    )  # fmt: skip


def _rank_files(run: RunDir, rank: int, host: str, node: int, lines: Sequence[RankResult]) -> None:
    now = time.time()
    status = RankStatus(
        rank=rank, local_rank=rank % 2, node_rank=node, host=host, pid=4_000_000 + rank, device="cpu",
        state=RankState.OK, started=now, updated=now, rows=len(lines),
    )  # fmt: skip
    STATUS.write(run.rank_status(rank), status)
    HEARTBEAT.write(run.rank_heartbeat(rank), Beat(rank=rank, host=host, phase=HeartbeatPhase.DONE, at=now))
    run.rank_results(rank).write_text("".join(line.to_json() + "\n" for line in lines))
    write_json_atomic(run.rank_env(rank), {"hostname": host, "torch": "2.13.0", "variables": {}})
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now))
    run.rank_log(rank).write_text(f"{stamp}.000000+0000 | INFO    | rank={rank} local={rank % 2} host={host} | done\n")


def sweep_run(output_dir: Path, ranks: int = 2, slower: float = 1.0, launcher: str = "local") -> RunDir:
    """A finished local sweep of all_reduce at SIZES on `ranks` ranks (times x `slower`)."""
    cfg = load_config(None, [f"ranks={ranks}", "bench.ops=[all_reduce]", "bench.min_bytes=1K", "bench.max_bytes=4K"])
    run = RunDir.create(output_dir, launcher)
    run.config_file.write_text(to_yaml(cfg))
    run.update_meta(run_id=run.run_id, launcher=launcher, world_size=ranks, nodes=1, job_id="4000000")
    for rank in range(ranks):
        lines = [result(rank, "vm", size, ranks, (20.0 + size / 100) * slower) for size in SIZES]
        _rank_files(run, rank, "vm", 0, lines)
    return run


def scale_sweep(output_dir: Path, counts: Sequence[int] = (1, 2)) -> Sweep:
    """A finished sweep of node counts, each a local sweep_run of 2 ranks per node."""
    sweep = Sweep.create(output_dir, list(counts), None, [])
    for nodes in counts:
        run = sweep_run(output_dir, ranks=2 * nodes, slower=1.0 + 0.1 * nodes)
        sweep.update_entry(nodes, run_dir=str(run.path), job_id="4000000")
    return sweep


def isolate_run(output_dir: Path, nodes: int = 4, slow_link: tuple[int, int] = (1, 2)) -> RunDir:
    """A finished collbench isolate run (pairs, two ranks a node) whose link between two nodes is slow."""
    return paced_isolate_run(output_dir, nodes, lambda group: 50.0 if group == slow_link else 1.0)


def paced_isolate_run(
    output_dir: Path,
    nodes: int,
    slower: Callable[[tuple[int, ...]], float],
    overrides: Sequence[str] = (),
    job_id: str = "4000000",
) -> RunDir:
    """A finished collbench isolate run (pairs, two ranks a node, nodes n1..nN) made without running anything:
    each group's time is the healthy one x `slower(group)`, round by round as the job plans them (slow pairs
    measured again included)."""
    cfg = load_config("testcluster", ["task=isolate", f"nodes={nodes}", *overrides])
    run = RunDir.create(output_dir, "slurm")
    run.config_file.write_text(to_yaml(cfg))
    run.update_meta(
        run_id=run.run_id, launcher="slurm", world_size=2 * nodes, nodes=nodes, task=cfg.task, job_id=job_id
    )
    hosts = [f"n{node + 1}" for node in range(nodes)]
    ranks_of = [[2 * node, 2 * node + 1] for node in range(nodes)]
    run.isolate_dir.mkdir()
    ISOLATE_PLAN.write(run.isolate_plan, IsolatePlan(mode="pairs", hosts=hosts, ranks=ranks_of, started=time.time()))
    lines: dict[int, list[RankResult]] = {rank: [] for rank in range(2 * nodes)}
    planned = Rounds(cfg.isolate, hosts)
    with run.isolate_rounds.open("wb") as rounds:
        while (groups := planned.start()) is not None:
            number = planned.round_no
            figures = []
            for group in groups:
                members = sorted(rank for node in group for rank in ranks_of[node])
                for rank in members:
                    for size in cfg.isolate.sizes:
                        lines[rank].append(result(
                            rank, hosts[rank // 2], size, len(members), (20.0 + size / 100) * slower(group),
                            round=number, nodes=list(group), members=members, group=group_label(number, hosts, group),
                        ))  # fmt: skip
                figures.append(GroupFigure(nodes=[hosts[n] for n in group], busbw=lines[members[0]][-1].busbw))
            rounds.write(ISOLATE_ROUND.encode(IsolateRound(round=number, groups=figures, seconds=1.0)) + b"\n")
            assert planned.finish({planned.key(g): f.busbw for g, f in zip(groups, figures, strict=True)})
    for rank, measured in lines.items():
        _rank_files(run, rank, hosts[rank // 2], rank // 2, measured)
    return run
