"""The GPUs a request asks Slurm for, wherever the config asks for them: slurm.gpus_per_node, or sbatch's
own options in slurm.sbatch_extra (gres, gpus, gpus-per-node, gpus-per-task) and srun's in slurm.srun_args.
A run on GPUs needs one per rank: a request with none, or with fewer per node than ranks per node, would
start ranks that fail on their device (or share one) after waiting in the queue."""

from __future__ import annotations

import re
from dataclasses import dataclass

from slurm.settings import SlurmSettings

PER_NODE = ("gpus-per-node",)
PER_TASK = ("gpus-per-task",)
TOTAL = ("gpus", "G")
GRES = ("gres",)


@dataclass(frozen=True, slots=True)
class GpuRequest:
    per_node: int | None = None
    """GPUs on each node, where the request says (--gpus-per-node, --gres=gpu:N)."""
    per_task: int | None = None
    """GPUs of each task (--gpus-per-task): each rank has its own."""
    total: int | None = None
    """GPUs of the whole job (--gpus)."""
    said_by: str = ""
    """The key that asked for them, for the refusal's words."""

    @property
    def any(self) -> bool:
        return any(count for count in (self.per_node, self.per_task, self.total))


def gpu_request(settings: SlurmSettings) -> GpuRequest:
    """What the request asks for; the last spelling of each kind wins, as on sbatch's command line."""
    found = GpuRequest()
    if settings.gpus_per_node > 0:
        found = GpuRequest(per_node=settings.gpus_per_node, said_by="slurm.gpus_per_node")
    for key, value in settings.sbatch_extra.items():
        found = _with_option(found, key, str(value), f"slurm.sbatch_extra.{key}")
    for i, arg in enumerate(settings.srun_args):
        match = re.match(r"^--?([A-Za-z-_]+)=(.*)$", arg.strip())
        if match:
            found = _with_option(found, match.group(1), match.group(2), f"slurm.srun_args[{i}]")
    return found


def _with_option(found: GpuRequest, key: str, value: str, said_by: str) -> GpuRequest:
    name = key.replace("_", "-")
    if name in PER_NODE:
        return GpuRequest(per_node=_count(value), per_task=found.per_task, total=found.total, said_by=said_by)
    if name in PER_TASK:
        return GpuRequest(per_node=found.per_node, per_task=_count(value), total=found.total, said_by=said_by)
    if name in TOTAL:
        return GpuRequest(per_node=found.per_node, per_task=found.per_task, total=_count(value), said_by=said_by)
    if name in GRES:
        gpus = _gres_gpus(value)
        if gpus is not None:
            return GpuRequest(per_node=gpus, per_task=found.per_task, total=found.total, said_by=said_by)
    return found


def _count(value: str) -> int:
    """'8', 'h100:8' -> 8; a count Slurm would refuse reads as 0."""
    last = value.rsplit(":", 1)[-1].strip()
    return int(last) if last.isdigit() else 0


def _gres_gpus(value: str) -> int | None:
    """The GPUs of a gres list ('gpu:8', 'gpu:h100:8,nic:1', 'gpu' = 1); None when it names no GPU."""
    for item in value.split(","):
        parts = item.strip().split(":")
        if parts[0] == "gpu":
            return int(parts[-1]) if len(parts) > 1 and parts[-1].isdigit() else 1
    return None


def gpu_problems(settings: SlurmSettings, nodes: int, submitted: bool) -> list[str]:
    """With device=cuda: no GPU asked for (`submitted`: the job is sbatch's to request; a step of an allocation
    inherits the allocation's GPUs), or fewer GPUs per node than ranks per node."""
    request = gpu_request(settings)
    tasks = settings.resolved_tasks_per_node()
    if not request.any:
        if not submitted:
            return []
        return [
            "slurm.gpus_per_node: 0 asks Slurm for no GPU, but device=cuda needs one per rank; allowed: "
            "slurm.gpus_per_node=N (N >= slurm.tasks_per_node), or gpus-per-task / gres in slurm.sbatch_extra"
        ]
    if request.per_task:
        return []
    if request.per_node is not None and request.per_node < tasks:
        return [
            f"slurm.tasks_per_node: {tasks} ranks per node, but {request.said_by} asks for {request.per_node} "
            f"GPU(s) per node; device=cuda needs one per rank: allowed: slurm.tasks_per_node <= {request.per_node}"
        ]
    if request.per_node is None and request.total is not None and request.total < tasks * nodes:
        return [
            f"{request.said_by}: {request.total} GPU(s) for {tasks * nodes} ranks ({nodes} nodes x {tasks}); "
            f"device=cuda needs one per rank: allowed: at least {tasks * nodes}"
        ]
    return []
