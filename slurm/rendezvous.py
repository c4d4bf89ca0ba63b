"""Who a rank is and where to rendezvous, from the variables Slurm gives every task. No torch."""

from __future__ import annotations

import re
import zlib
from collections.abc import Mapping
from dataclasses import dataclass

from slurm.hostlist import expand_hostlist

PORT_BASE = 20000
PORT_SPAN = 12000
"""Derived ports fall in [20000, 32000): below Linux's default ephemeral range (32768-60999)."""


class SlurmEnvError(RuntimeError):
    """The task's Slurm environment is missing something or contradicts the config."""


@dataclass(frozen=True, slots=True)
class SlurmPlacement:
    job_id: str
    rank: int
    world_size: int
    local_rank: int
    local_world_size: int
    node_rank: int
    nnodes: int
    hosts: tuple[str, ...]
    """The step's nodes in order; rank 0 runs on hosts[0]."""
    master_addr: str
    master_port: int


def master_port_for_job(job_id: str) -> int:
    """A port every task of the job computes alike, with no communication."""
    numbers = re.findall(r"\d+", job_id)
    key = sum(int(n) * 7919**i for i, n in enumerate(numbers)) if numbers else zlib.crc32(job_id.encode())
    return PORT_BASE + key % PORT_SPAN


def master_addr_for(first_host: str, setting: str) -> str:
    """The rendezvous address: the first host, a template such as '{host}-ib', or a fixed address."""
    if not setting:
        return first_host
    if "{host}" in setting:
        return setting.replace("{host}", first_host)
    return setting


def tasks_per_node(spec: str) -> list[int]:
    """Slurm's compressed per-node task counts: '2(x3),1' -> [2, 2, 2, 1]."""
    counts: list[int] = []
    for part in spec.split(","):
        match = re.fullmatch(r"(\d+)(?:\(x(\d+)\))?", part.strip())
        if not match:
            raise SlurmEnvError(f"cannot read tasks per node {spec!r}; expected a form such as 2(x3),1")
        counts += [int(match.group(1))] * int(match.group(2) or 1)
    return counts


def _get(env: Mapping[str, str], *names: str) -> str:
    for name in names:
        if env.get(name):
            return env[name]
    raise SlurmEnvError(f"{' or '.join(names)} is not set: this task was not started by srun")


def placement_from_env(
    env: Mapping[str, str], master_addr: str = "", master_port: int = 0, expected_world_size: int | None = None
) -> SlurmPlacement:
    """This task's placement from SLURM_* variables; anything inherited from the submitting
    shell (MASTER_PORT, RANK, ...) is ignored and will be overwritten."""
    job_id = _get(env, "SLURM_JOB_ID", "SLURM_JOBID")
    hosts = tuple(expand_hostlist(_get(env, "SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST")))
    node_rank = int(_get(env, "SLURM_NODEID"))
    per_node = tasks_per_node(_get(env, "SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE"))
    placement = SlurmPlacement(
        job_id=job_id,
        rank=int(_get(env, "SLURM_PROCID")),
        world_size=int(_get(env, "SLURM_STEP_NUM_TASKS", "SLURM_NTASKS")),
        local_rank=int(_get(env, "SLURM_LOCALID")),
        local_world_size=per_node[node_rank] if node_rank < len(per_node) else per_node[-1],
        node_rank=node_rank,
        nnodes=len(hosts),
        hosts=hosts,
        master_addr=master_addr_for(hosts[0], master_addr),
        master_port=master_port or master_port_for_job(job_id),
    )
    if expected_world_size is not None and placement.world_size != expected_world_size:
        raise SlurmEnvError(
            f"Slurm started {placement.world_size} tasks on {placement.nnodes} nodes, but the config asks for "
            f"{expected_world_size} (nodes x tasks_per_node); rank {placement.rank} on {hosts[node_rank]} stops"
        )
    return placement
