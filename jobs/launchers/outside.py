"""Is this process one rank of a launcher collbench did not start (torchrun, mpirun, srun -n N)?

`collbench run` starts its own ranks; started once per rank by torchrun, it would start a world per rank,
each waiting on the launcher's store it inherits (TORCHELASTIC_USE_AGENT_STORE) or on peers that never
come. The commands that start ranks or jobs ask `outside_launcher` first and refuse with `refusal`.
The variables read, in this order (docs/launchers.md):
- torchrun (torch.distributed.elastic): TORCHELASTIC_RUN_ID, or LOCAL_RANK with WORLD_SIZE; always refused,
  a world of one too, which would wait on torchrun's store
- a Slurm job step of more than one task: SLURM_STEP_ID with SLURM_STEP_NUM_TASKS > 1 (a batch script or
  salloc's shell sets no step of several tasks: `collbench check` runs there as it should)
- Open MPI: OMPI_COMM_WORLD_SIZE > 1
- PMIx or PMI (MPICH, Intel MPI, srun --mpi): PMIX_RANK or PMI_RANK, unless PMI_SIZE says 1 and the rank is 0
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

RANK_COMMAND_LATER = "collbench rank KEY=VALUE ..."
"""The command a launcher is to start once per rank (jobs/cli/rank_command.py)."""


@dataclass(frozen=True, slots=True)
class OutsideLauncher:
    """The launcher this process is a rank of, as its variables say."""

    name: str
    """torchrun, srun, Open MPI's mpirun, PMIx, PMI."""
    evidence: str
    """The variable that says so, with its value: `TORCHELASTIC_RUN_ID=none`."""
    world_size: int | None
    """How many processes it started, where a variable says."""


def outside_launcher(env: Mapping[str, str]) -> OutsideLauncher | None:
    """The launcher whose rank this process is, or None where collbench may start its own ranks here."""
    for detect in (_torchrun, _slurm_step, _open_mpi, _pmi):
        found = detect(env)
        if found is not None:
            return found
    return None


def refusal(command: str, found: OutsideLauncher) -> str:
    """The one line `collbench COMMAND` answers under `found`: what it is, and what to type instead."""
    size = f"one of {found.world_size} processes" if found.world_size else "a process"
    ranks = found.world_size if found.world_size and found.world_size > 1 else "N"
    return (
        f"collbench {command}: this is {size} started by {found.name} ({found.evidence}); collbench {command} "
        f"starts its own ranks and would start them once per process here. Type it once, without {found.name} "
        f"(one node: collbench run ranks={ranks}); the command for a launcher to start per rank is "
        f"`{RANK_COMMAND_LATER}`"
    )


def _torchrun(env: Mapping[str, str]) -> OutsideLauncher | None:
    if "TORCHELASTIC_RUN_ID" in env:
        evidence = f"TORCHELASTIC_RUN_ID={env['TORCHELASTIC_RUN_ID']}"
    elif "LOCAL_RANK" in env and "WORLD_SIZE" in env:
        evidence = f"LOCAL_RANK={env['LOCAL_RANK']}, WORLD_SIZE={env['WORLD_SIZE']}"
    else:
        return None
    return OutsideLauncher("torchrun", evidence, _count(env, "WORLD_SIZE"))


def _slurm_step(env: Mapping[str, str]) -> OutsideLauncher | None:
    tasks = _count(env, "SLURM_STEP_NUM_TASKS")
    if "SLURM_STEP_ID" not in env or tasks is None or tasks < 2:
        return None
    return OutsideLauncher("srun", f"SLURM_STEP_ID={env['SLURM_STEP_ID']}, SLURM_STEP_NUM_TASKS={tasks}", tasks)


def _open_mpi(env: Mapping[str, str]) -> OutsideLauncher | None:
    size = _count(env, "OMPI_COMM_WORLD_SIZE")
    if size is None or size < 2:
        return None
    return OutsideLauncher("Open MPI's mpirun", f"OMPI_COMM_WORLD_SIZE={size}", size)


def _pmi(env: Mapping[str, str]) -> OutsideLauncher | None:
    name = "PMIx" if "PMIX_RANK" in env else "PMI" if "PMI_RANK" in env else ""
    if not name:
        return None
    rank_variable = f"{name.upper()}_RANK"
    size = _count(env, "PMI_SIZE")
    if size == 1 and env[rank_variable] == "0":
        return None
    return OutsideLauncher(f"a {name} launcher", f"{rank_variable}={env[rank_variable]}", size)


def _count(env: Mapping[str, str], name: str) -> int | None:
    """A count variable's value; None where it is unset or not a number."""
    value = env.get(name, "").strip()
    return int(value) if value.isdigit() else None
