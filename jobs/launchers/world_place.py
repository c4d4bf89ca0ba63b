"""Where a rank started by another launcher sits, from its environment: `collbench rank`'s place. No torch.

Read in this order, the innermost launcher first (the first whose variables are there wins; docs/launchers.md):
- torchrun (torch.distributed.elastic): TORCHELASTIC_RUN_ID or RANK; RANK, WORLD_SIZE, LOCAL_RANK,
  LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR, MASTER_PORT. Started by torchrun inside an srun step, the
  process carries the step's SLURM_PROCID too, which numbers torchrun's agents, not the ranks: torchrun's
  variables say the rank. RANK and WORLD_SIZE set by hand or by another operator, without torchrun, are
  read alike (the launcher is then `env`).
- Open MPI (mpirun): OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE, OMPI_COMM_WORLD_LOCAL_RANK,
  OMPI_COMM_WORLD_LOCAL_SIZE; mpirun inside an allocation starts its daemons with srun, so Slurm's
  variables are there too and name the daemons. MASTER_ADDR and MASTER_PORT (or rendezvous.master_addr and
  rendezvous.master_port) must be given: mpirun says nothing of a rendezvous.
- a Slurm job step (srun): SLURM_PROCID with SLURM_STEP_ID, then slurm.rendezvous.placement_from_env
  (SLURM_LOCALID, SLURM_STEP_NUM_TASKS or SLURM_NTASKS, the step's nodelist, MASTER_ADDR the first node
  unless rendezvous.master_addr says, the port derived from the job and step ids unless
  rendezvous.master_port says).
- PMIx or PMI (prterun, MPICH's Hydra, Intel MPI): PMIX_RANK or PMI_RANK, the size from PMI_SIZE or
  WORLD_SIZE, the local rank from LOCAL_RANK or Hydra's MPI_LOCALRANKID (and MPI_LOCALNRANKS); MASTER_ADDR
  and MASTER_PORT as for Open MPI.

The node's name is NODE_NAME where set (Kubernetes' downward API, spec.nodeName: verdicts then name nodes,
not pods), else the hostname.
"""

from __future__ import annotations

import socket
from collections.abc import Mapping
from dataclasses import dataclass

from jobs.config.model import ConfigError
from slurm.rendezvous import SlurmEnvError, master_port_for_job, placement_from_env

NODE_NAME = "NODE_NAME"
"""The Kubernetes node a pod runs on, when its spec gives it (env valueFrom fieldRef spec.nodeName)."""

NO_LAUNCHER = (
    "collbench rank: this process is no rank of a launcher (none of torchrun's RANK/WORLD_SIZE, Slurm's "
    "SLURM_PROCID with SLURM_STEP_ID, Open MPI's OMPI_COMM_WORLD_RANK, PMIX_RANK or PMI_RANK is set); start it "
    "once per rank with torchrun, srun, mpirun or a Kubernetes TrainJob, or type `collbench run ranks=N` here"
)


@dataclass(frozen=True, slots=True)
class WorldPlace:
    """This rank's place in a world another launcher started."""

    launcher: str
    """torchrun, env, mpi, slurm or pmix: what run.json's `external` records."""
    rank: int
    world_size: int
    local_rank: int
    local_world_size: int
    node_rank: int
    nnodes: int
    host: str
    """NODE_NAME where set, else the hostname."""
    master_addr: str
    master_port: int
    run_id: str
    """The launcher's id of the world, where it gives one (TORCHELASTIC_RUN_ID, SLURM_JOB_ID.SLURM_STEP_ID)."""
    agent_store: bool
    """torchrun's agent serves the rendezvous store (TORCHELASTIC_USE_AGENT_STORE=True): every rank is its
    client; otherwise rank 0 serves it."""
    restart: int
    """torchrun's restart count (TORCHELASTIC_RESTART_COUNT): a world started again agrees on a new run."""

    def torch_env(self) -> dict[str, str]:
        """The variables torch.distributed and collbench's rank body read (jobs.runtime.placement)."""
        return {
            "RANK": str(self.rank),
            "WORLD_SIZE": str(self.world_size),
            "LOCAL_RANK": str(self.local_rank),
            "LOCAL_WORLD_SIZE": str(self.local_world_size),
            "GROUP_RANK": str(self.node_rank),
            "NODE_RANK": str(self.node_rank),
            "NNODES": str(self.nnodes),
            "MASTER_ADDR": self.master_addr,
            "MASTER_PORT": str(self.master_port),
            NODE_NAME: self.host,
        }


def place_from_environment(env: Mapping[str, str], master_addr: str = "", master_port: int = 0) -> WorldPlace:
    """This rank's place, or ConfigError in one line where the environment cannot place it.
    `master_addr`/`master_port`: the config's rendezvous, for the launchers that give none."""
    host = env.get(NODE_NAME, "").strip() or socket.gethostname()
    if "TORCHELASTIC_RUN_ID" in env or "RANK" in env:
        return _torchrun(env, host)
    if "OMPI_COMM_WORLD_RANK" in env:
        return _mpi(env, host, master_addr, master_port)
    if env.get("SLURM_PROCID") and env.get("SLURM_STEP_ID"):
        return _slurm(env, host, master_addr, master_port)
    if "PMIX_RANK" in env or "PMI_RANK" in env:
        return _pmix(env, host, master_addr, master_port)
    raise ConfigError(NO_LAUNCHER)


def _torchrun(env: Mapping[str, str], host: str) -> WorldPlace:
    launcher = "torchrun" if "TORCHELASTIC_RUN_ID" in env else "env"
    rank = _number(env, "RANK", launcher)
    world = _number(env, "WORLD_SIZE", launcher, needed_with="RANK")
    local_world = _number(env, "LOCAL_WORLD_SIZE", launcher, default=world)
    addr, port = _rendezvous(env, launcher, "", 0)
    return _checked(
        WorldPlace(
            launcher=launcher,
            rank=rank,
            world_size=world,
            local_rank=_number(env, "LOCAL_RANK", launcher, default=0),
            local_world_size=local_world,
            node_rank=_number(env, "GROUP_RANK", launcher, default=rank // max(local_world, 1)),
            nnodes=-(-world // max(local_world, 1)),
            host=host,
            master_addr=addr,
            master_port=port,
            run_id=env.get("TORCHELASTIC_RUN_ID", ""),
            agent_store=env.get("TORCHELASTIC_USE_AGENT_STORE") == "True",
            restart=_number(env, "TORCHELASTIC_RESTART_COUNT", launcher, default=0),
        )
    )


def _mpi(env: Mapping[str, str], host: str, master_addr: str, master_port: int) -> WorldPlace:
    rank = _number(env, "OMPI_COMM_WORLD_RANK", "mpi")
    world = _number(env, "OMPI_COMM_WORLD_SIZE", "mpi", needed_with="OMPI_COMM_WORLD_RANK")
    local_world = _number(env, "OMPI_COMM_WORLD_LOCAL_SIZE", "mpi", default=world)
    local_rank = _number(env, "OMPI_COMM_WORLD_LOCAL_RANK", "mpi", default=0)
    return _mpi_like("mpi", env, host, (rank, world, local_rank, local_world), master_addr, master_port)


def _pmix(env: Mapping[str, str], host: str, master_addr: str, master_port: int) -> WorldPlace:
    name = "PMIX_RANK" if "PMIX_RANK" in env else "PMI_RANK"
    rank = _number(env, name, "pmix")
    size_name = "PMI_SIZE" if "PMI_SIZE" in env else "WORLD_SIZE"
    world = _number(env, size_name, "pmix", needed_with=name)
    local_name = "LOCAL_RANK" if "LOCAL_RANK" in env else "MPI_LOCALRANKID"
    local_rank = _number(env, local_name, "pmix", default=0)
    local_world = _number(env, "LOCAL_WORLD_SIZE" if "LOCAL_WORLD_SIZE" in env else "MPI_LOCALNRANKS", "pmix", 1)
    return _mpi_like("pmix", env, host, (rank, world, local_rank, local_world), master_addr, master_port)


def _mpi_like(
    launcher: str,
    env: Mapping[str, str],
    host: str,
    counts: tuple[int, int, int, int],
    master_addr: str,
    master_port: int,
) -> WorldPlace:
    """Open MPI's and PMIx's worlds: ranks laid out node by node (mpirun's default --map-by slot)."""
    rank, world, local_rank, local_world = counts
    addr, port = _rendezvous(env, launcher, master_addr, master_port)
    return _checked(
        WorldPlace(
            launcher=launcher,
            rank=rank,
            world_size=world,
            local_rank=local_rank,
            local_world_size=local_world,
            node_rank=rank // max(local_world, 1),
            nnodes=-(-world // max(local_world, 1)),
            host=host,
            master_addr=addr,
            master_port=port,
            run_id=env.get("OMPI_MCA_ess_base_jobid", env.get("PMIX_NAMESPACE", "")),
            agent_store=False,
            restart=0,
        )
    )


def _slurm(env: Mapping[str, str], host: str, master_addr: str, master_port: int) -> WorldPlace:
    step = f"{env.get('SLURM_JOB_ID', env.get('SLURM_JOBID', ''))}.{env['SLURM_STEP_ID']}"
    try:  # the step's own port: two steps of one job at once do not meet on one port
        slurm = placement_from_env(env, master_addr, master_port or master_port_for_job(step))
    except (SlurmEnvError, ValueError) as error:
        raise ConfigError(f"collbench rank: cannot place this Slurm task: {error}") from None
    return _checked(
        WorldPlace(
            launcher="slurm",
            rank=slurm.rank,
            world_size=slurm.world_size,
            local_rank=slurm.local_rank,
            local_world_size=slurm.local_world_size,
            node_rank=slurm.node_rank,
            nnodes=slurm.nnodes,
            host=host,
            master_addr=slurm.master_addr,
            master_port=slurm.master_port,
            run_id=step,
            agent_store=False,
            restart=0,
        )
    )


def _rendezvous(env: Mapping[str, str], launcher: str, master_addr: str, master_port: int) -> tuple[str, int]:
    """MASTER_ADDR and MASTER_PORT, else the config's rendezvous; refused where neither says."""
    addr = env.get("MASTER_ADDR", "").strip() or master_addr
    port = _number(env, "MASTER_PORT", launcher, default=master_port)
    missing = [name for name, value in (("MASTER_ADDR", addr), ("MASTER_PORT", port)) if not value]
    if missing:
        raise ConfigError(
            f"collbench rank: {launcher} gives no rendezvous: set {' and '.join(missing)} in every rank's "
            "environment (the address of rank 0's node and a free port), or rendezvous.master_addr= and "
            "rendezvous.master_port="
        )
    return addr, port


def _number(env: Mapping[str, str], name: str, launcher: str, default: int | None = None, needed_with: str = "") -> int:
    value = env.get(name, "").strip()
    if not value and default is not None:
        return default
    if not value:
        given = f"{needed_with} is set but {name} is not" if needed_with else f"{name} is not set"
        raise ConfigError(f"collbench rank: {launcher} world cannot be placed: {given}")
    if not value.isdigit():
        raise ConfigError(f"collbench rank: {name}={value!r} is not a count; allowed: 0, 1, 2, ...")
    return int(value)


def _checked(place: WorldPlace) -> WorldPlace:
    if place.world_size < 1 or not 0 <= place.rank < place.world_size:
        raise ConfigError(
            f"collbench rank: {place.launcher} says rank {place.rank} of {place.world_size}; allowed: "
            f"a world size >= 1 and a rank from 0 to world size - 1"
        )
    if not 0 < place.master_port < 65536:
        raise ConfigError(f"collbench rank: MASTER_PORT={place.master_port} is not a port; allowed: 1-65535")
    return place
