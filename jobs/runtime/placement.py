"""Where this rank sits: rank, local rank, world size and rendezvous, whoever launched it."""

from __future__ import annotations

import socket
from collections.abc import Mapping
from dataclasses import dataclass

from slurm.rendezvous import placement_from_env


@dataclass(frozen=True, slots=True)
class Placement:
    rank: int
    world_size: int
    local_rank: int
    local_world_size: int
    node_rank: int
    nnodes: int
    host: str
    master_addr: str
    master_port: int
    job_id: str

    @property
    def init_method(self) -> str:
        host = f"[{self.master_addr}]" if ":" in self.master_addr else self.master_addr
        return f"tcp://{host}:{self.master_port}"

    def torch_env(self) -> dict[str, str]:
        return {
            "MASTER_ADDR": self.master_addr,
            "MASTER_PORT": str(self.master_port),
            "RANK": str(self.rank),
            "WORLD_SIZE": str(self.world_size),
            "LOCAL_RANK": str(self.local_rank),
            "LOCAL_WORLD_SIZE": str(self.local_world_size),
            "NODE_RANK": str(self.node_rank),
            "GROUP_RANK": str(self.node_rank),
        }


@dataclass(frozen=True, slots=True)
class LocalRendezvous:
    """Chosen by the local launcher before it starts the ranks."""

    master_addr: str
    master_port: int


def detect_placement(
    env: Mapping[str, str],
    local: LocalRendezvous | None,
    master_addr: str = "",
    master_port: int = 0,
    expected_world_size: int | None = None,
) -> Placement:
    """The placement from submitit's local executor, from Slurm, or from torchrun-style variables; the host
    is NODE_NAME where set (Kubernetes' downward API: the node, not the pod), else the hostname."""
    host = env.get("NODE_NAME", "").strip() or socket.gethostname()
    executor = env.get("SUBMITIT_EXECUTOR", "")
    if executor == "slurm" or (not executor and env.get("SLURM_PROCID") and env.get("SLURM_STEP_ID")):
        slurm = placement_from_env(env, master_addr, master_port, expected_world_size)
        return Placement(
            rank=slurm.rank,
            world_size=slurm.world_size,
            local_rank=slurm.local_rank,
            local_world_size=slurm.local_world_size,
            node_rank=slurm.node_rank,
            nnodes=slurm.nnodes,
            host=host,
            master_addr=slurm.master_addr,
            master_port=slurm.master_port,
            job_id=slurm.job_id,
        )
    if executor == "local":
        if local is None:
            raise RuntimeError("a local run needs the rendezvous chosen by its launcher")
        return _from_submitit_local(local, host)
    return _from_torchrun_env(env, host)


def _from_submitit_local(local: LocalRendezvous, host: str) -> Placement:
    import submitit

    job_env = submitit.JobEnvironment()
    return Placement(
        rank=job_env.global_rank,
        world_size=job_env.num_tasks,
        local_rank=job_env.local_rank,
        local_world_size=job_env.num_tasks,
        node_rank=0,
        nnodes=1,
        host=host,
        master_addr=local.master_addr,
        master_port=local.master_port,
        job_id=str(job_env.job_id),
    )


def _from_torchrun_env(env: Mapping[str, str], host: str) -> Placement:
    missing = [k for k in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT") if not env.get(k)]
    if missing:
        raise RuntimeError(
            f"cannot tell this rank's place: not under submitit or Slurm, and {', '.join(missing)} unset"
        )
    world = int(env["WORLD_SIZE"])
    return Placement(
        rank=int(env["RANK"]),
        world_size=world,
        local_rank=int(env.get("LOCAL_RANK", "0")),
        local_world_size=int(env.get("LOCAL_WORLD_SIZE", str(world))),
        node_rank=int(env.get("GROUP_RANK", env.get("NODE_RANK", "0"))),
        nnodes=int(env.get("NNODES", "1")),
        host=host,
        master_addr=env["MASTER_ADDR"],
        master_port=int(env["MASTER_PORT"]),
        job_id=env.get("TORCHELASTIC_RUN_ID", "none"),
    )
