"""collbench isolate inside the job: the same rounds on every rank, each round's groups measured at once.

On gloo each group of a round is created by its own members (use_local_synchronization: no store barrier
over the whole world per group, whose cost grows with the world times the groups: at 4096 nodes of 8 ranks,
a round of pairs would be 67 million store operations). A group whose ranks were grouped before is
created by every rank in the same order instead, because torch names a group its members create from its
ranks alone and a second group of the same ranks would meet the first one's keys in the store. On NCCL
with the communicator bound to the device, torch splits the world's communicator for each new group, which
every rank must join (pairs at 64 nodes would be 2,016 world-wide splits): there the round's groups, disjoint,
come from one split of the world (torch.distributed.split_group, one ncclCommSplit with a colour per group),
which every rank joins once a round. gloo cannot split (torch refuses a parent without a device). Each rank
runs the sweep in its own group, then all ranks share the round's results, so that every rank computes
the same figures and bisect plans the same next round everywhere. A rank whose node
rests this round only joins the sharing. Each result goes to the rank's results file as it is measured,
labelled with its round and group: a node that dies leaves every earlier round on disk.
"""

from __future__ import annotations

import datetime
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

import torch
import torch.distributed as dist
from loguru import logger

from collectives.results import RankResult, summarize
from collectives.settings import BenchSettings
from collectives.sweep import OnProgress, RankContext, run_sweep
from jobs.config.model import Config
from jobs.isolate.plan import Group
from jobs.isolate.rounds import GroupKey, Rounds, group_figures
from jobs.isolate.verdict import EVERY_RAIL
from jobs.rundir.layout import RunDir
from jobs.rundir.records.isolate import ISOLATE_PLAN, ISOLATE_ROUND, GroupFigure, IsolatePlan, IsolateRound
from jobs.runtime.placement import Placement
from slurm.hostlist import readable_hostlist

Emit = Callable[[RankResult], None]


def run_isolate(
    cfg: Config, run: RunDir, placement: Placement, device: torch.device, emit: Emit, on_progress: OnProgress
) -> int:
    """Run every round; the number of results this rank measured."""
    aligned = cfg.rails.enabled(placement.local_world_size)
    hosts, ranks_of = _nodes(placement, cfg.rails.rail_of(placement.local_rank) if aligned else EVERY_RAIL)
    rails = sorted({rail for node in ranks_of for rail in node})
    leaves = cfg.topology.leaves_of(hosts)
    rounds = Rounds(cfg.isolate, hosts, rails, [leaves.get(node) for node in range(len(hosts))])
    settings = cfg.measured_bench()
    timeout = datetime.timedelta(seconds=cfg.timeouts.collective_s)
    if placement.rank == 0:
        _write_plan(run, rounds, ranks_of)
    measured = 0
    grouped: set[tuple[int, ...]] = set()
    while (groups := rounds.start()) is not None:
        started = time.time()
        if rounds.length > 1 and placement.rank == 0:
            logger.info(f"isolate: round {rounds.round_no} measures {rounds.length}x as long: the spread is wide")
        expanded = [(group, rail, _ranks(ranks_of, group, rail)) for group in groups for rail in rails]
        member = _join_round(expanded, placement.rank, timeout, grouped, _rail_interfaces(cfg))
        mine: list[RankResult] = []
        if member is not None:
            group, rail, ranks, process_group = member
            ctx = RankContext(
                rank=ranks.index(placement.rank),
                nranks=len(ranks),
                local_rank=placement.local_rank,
                host=placement.host,
                device=device,
                group=process_group,
            )
            labelled = _Labelled(placement.rank, rounds, group, rail, ranks, emit)
            deadline = cfg.isolate.round_deadline(started)
            run_sweep(lengthened(settings, rounds.length), ctx, labelled, on_progress=on_progress, deadline=deadline)
            dist.destroy_process_group(process_group)
            mine = labelled.results
        _await_round(cfg.isolate.round_deadline(started), timeout)
        figures = _share(mine)
        measured += len(mine)
        if not rounds.finish(figures):
            raise RuntimeError(f"round {rounds.round_no}: no figure for {rounds.unfinished}")
        if placement.rank == 0:
            _log_round(run, rounds, groups, figures, time.time() - started)
    logger.info(f"isolate: {rounds.round_no} round(s) in mode {rounds.mode}, rails {rails}")
    return measured


def lengthened(settings: BenchSettings, times: int) -> BenchSettings:
    """`settings` measuring `times` as long: the iterations, or the time budget and its most iterations."""
    if times <= 1:
        return settings
    if settings.time_budget_ms > 0:
        return replace(settings, time_budget_ms=settings.time_budget_ms * times, max_iters=settings.max_iters * times)
    return replace(settings, iters=settings.iters * times)


class _Labelled:
    """Emits each result of a group's sweep under the global rank, with its round, nodes and ranks (and
    the group in words, for the tables), and keeps it."""

    def __init__(self, rank: int, rounds: Rounds, group: Group, rail: int, members: list[int], emit: Emit) -> None:
        self.rank, self.members, self.emit = rank, members, emit
        self.round, self.nodes, self.rail, self.label = rounds.round_no, list(group), rail, rounds.label(group, rail)
        self.results: list[RankResult] = []

    def __call__(self, result: RankResult) -> None:
        result.rank, result.group, result.members = self.rank, self.label, self.members
        result.round, result.nodes, result.rail = self.round, self.nodes, self.rail
        self.emit(result)
        self.results.append(result)


def _nodes(placement: Placement, rail: int) -> tuple[list[str], list[dict[int, list[int]]]]:
    """Every node's host, by node rank, and its global ranks by rail (EVERY_RAIL: not rail-aligned): from
    every rank, not from assumptions about how Slurm lays tasks out."""
    places: list[Any] = [None] * placement.world_size
    dist.all_gather_object(places, (placement.rank, placement.node_rank, placement.host, rail))
    hosts = [""] * placement.nnodes
    ranks_of: list[dict[int, list[int]]] = [{} for _ in range(placement.nnodes)]
    for rank, node, host, on_rail in places:
        hosts[node] = host
        ranks_of[node].setdefault(on_rail, []).append(rank)
    return hosts, [{on_rail: sorted(ranks) for on_rail, ranks in sorted(node.items())} for node in ranks_of]


def _ranks(ranks_of: list[dict[int, list[int]]], group: Group, rail: int) -> list[int]:
    return sorted(rank for node in group for rank in ranks_of[node].get(rail, []))


def _join_round(
    groups: list[tuple[Group, int, list[int]]],
    rank: int,
    timeout: datetime.timedelta,
    grouped: set[tuple[int, ...]],
    interface_of: Callable[[int], str] = lambda rail: "",
) -> tuple[Group, int, list[int], dist.ProcessGroup] | None:
    """Create the round's groups, (nodes, rail, ranks) each, as round_plan says: one split of the world where
    NCCL splits the world's communicator, else new groups. This rank's group, or None if it rests. `grouped`
    (the same on every rank: the plan is) gains this round's groups. A rail's group binds to
    `interface_of(rail)` when it names one (gloo: rails.interfaces), while the world's group stays where
    GLOO_SOCKET_IFNAME put it."""
    plan = round_plan([ranks for _, _, ranks in groups], rank, grouped, _splits_the_world())
    grouped.update(tuple(ranks) for _, _, ranks in groups)
    if plan.split:
        process_group = dist.split_group(split_ranks=[list(ranks) for ranks in plan.split], timeout=timeout)
        mine = [(group, rail, ranks) for group, rail, ranks in groups if rank in ranks]
        if not mine:
            return None
        if process_group is None:
            raise RuntimeError(f"split_group gave rank {rank} no group, though it is a member of {mine[0][2]}")
        return (*mine[0], process_group)
    planned = {tuple(ranks): (group, rail, ranks) for group, rail, ranks in groups}
    member = None
    for key, members_alone in plan.created:
        group, rail, ranks = planned[key]
        with _gloo_interface(interface_of(rail)):
            process_group = dist.new_group(ranks, timeout=timeout, use_local_synchronization=members_alone)
        if rank in ranks:
            assert isinstance(process_group, dist.ProcessGroup)
            member = (group, rail, ranks, process_group)
    return member


@dataclass(frozen=True, slots=True)
class RoundPlan:
    """How one rank makes a round's groups: one split of the world, or new groups one by one."""

    split: tuple[tuple[int, ...], ...] = ()
    """Every group of the round, for one split of the world that every rank joins (NCCL, device-bound)."""
    created: tuple[tuple[tuple[int, ...], bool], ...] = ()
    """The groups this rank creates, in order, each with whether its members alone create it (gloo)."""

    @property
    def world_splits(self) -> int:
        """World-wide communicator splits this round costs: one, or none where groups are created apart."""
        return 1 if self.split else 0


def round_plan(groups: list[list[int]], rank: int, grouped: set[tuple[int, ...]], splits_the_world: bool) -> RoundPlan:
    """The round's groups (disjoint lists of global ranks) as this rank makes them. Splitting the world: one
    split of every group. Else a group of ranks new to the run by its members alone, one whose ranks were
    grouped in an earlier round by every rank in the same order (torch names a members-only group by its
    ranks: a second one would meet the first one's keys in the store)."""
    if splits_the_world:
        return RoundPlan(split=tuple(tuple(ranks) for ranks in groups))
    created = []
    for ranks in groups:
        members_alone = tuple(ranks) not in grouped
        if members_alone and rank not in ranks:
            continue
        created.append((tuple(ranks), members_alone))
    return RoundPlan(created=tuple(created))


def _splits_the_world() -> bool:
    """NCCL with the world's communicator bound to the device: every new group would split it."""
    return dist.group.WORLD is not None and dist.group.WORLD.bound_device_id is not None


def _rail_interfaces(cfg: Config) -> Callable[[int], str]:
    """rail -> the interface its gloo groups bind to ('' : where GLOO_SOCKET_IFNAME says); NCCL is pinned to
    the rail's HCA by the rank's NCCL_IB_HCA instead (jobs.runtime.rank_job)."""
    if cfg.backend != "gloo":
        return lambda rail: ""
    return lambda rail: cfg.rails.interface(rail) if rail != EVERY_RAIL else ""


@contextmanager
def _gloo_interface(interface: str) -> Iterator[None]:
    """GLOO_SOCKET_IFNAME set to `interface` while a gloo group is created (gloo reads it then, and binds the
    group's connections to it); nothing when `interface` is empty."""
    if not interface:
        yield
        return
    before = os.environ.get("GLOO_SOCKET_IFNAME")
    os.environ["GLOO_SOCKET_IFNAME"] = interface
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("GLOO_SOCKET_IFNAME", None)
        else:
            os.environ["GLOO_SOCKET_IFNAME"] = before


def _await_round(deadline: float, timeout: datetime.timedelta) -> None:
    """On gloo, wait for every rank to end the round until its deadline and one collective time-out more: a
    group that finished early waits on the slowest one here, not in the sharing below, whose wait is one
    collective's time-out only (a group can overrun its deadline: the projection of its last size is a guess).
    A rank that never comes is named by the barrier."""
    if not deadline or dist.get_backend() != "gloo":
        return
    left = max(0.0, deadline - time.time())
    dist.monitored_barrier(timeout=timeout + datetime.timedelta(seconds=left), wait_all_ranks=True)


def _share(mine: list[RankResult]) -> dict[GroupKey, float]:
    """Every rank's results of this round, from every rank: the same figures everywhere."""
    gathered: list[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(gathered, [result.to_json() for result in mine])
    records = [RankResult.from_json(line) for lines in gathered for line in lines]
    return group_figures(summarize(records))


def _write_plan(run: RunDir, rounds: Rounds, ranks_of: list[dict[int, list[int]]]) -> None:
    run.isolate_dir.mkdir(exist_ok=True)
    ranks = [sorted(rank for on_rail in node.values() for rank in on_rail) for node in ranks_of]
    plan = IsolatePlan(
        mode=rounds.mode,
        hosts=rounds.hosts,
        ranks=ranks,
        started=time.time(),
        rails=rounds.rails,
        confirm_rounds=rounds.confirm_rounds,
    )
    ISOLATE_PLAN.write(run.isolate_plan, plan)


def _log_round(
    run: RunDir, rounds: Rounds, groups: tuple[Group, ...], figures: dict[GroupKey, float], took: float
) -> None:
    measured = [
        GroupFigure(nodes=[rounds.hosts[n] for n in g], busbw=figures[rounds.key(g, rail)], rail=rail)
        for g in groups
        for rail in rounds.rails
    ]
    record = IsolateRound(round=rounds.round_no, groups=measured, seconds=round(took, 3))
    with run.isolate_rounds.open("ab") as handle:
        handle.write(ISOLATE_ROUND.encode(record) + b"\n")
    logger.info(
        f"isolate round {rounds.round_no}: "
        + ", ".join(f"{_label(group)} {group.busbw:.3f} GB/s" for group in measured)
    )


def _label(group: GroupFigure) -> str:
    return readable_hostlist(group.nodes) + (f" rail {group.rail}" if group.rail != EVERY_RAIL else "")
