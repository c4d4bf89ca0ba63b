"""Which GPU a rank uses, from what its process sees: the number of visible devices and CUDA_VISIBLE_DEVICES.

Slurm may give each task every GPU of the node (--gpus-per-node: the task picks its own by local rank) or
bind one GPU per task (--gpus-per-task, --gpu-bind: the task sees one device, always cuda:0). A process that
sees several GPUs but fewer than the ranks on its node would have to share one with another rank, which a
benchmark must not: that is refused, naming the host, the local rank and what it sees.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from loguru import logger

if TYPE_CHECKING:
    import torch

    from jobs.runtime.placement import Placement


class DeviceUnavailable(RuntimeError):
    """This rank cannot have a GPU of its own."""


@dataclass(frozen=True, slots=True)
class RankDevice:
    index: int
    """The ordinal within this process's visible devices: what torch.device('cuda', index) takes."""
    visible_as: str
    """The CUDA_VISIBLE_DEVICES entry it is (a number, a GPU-... or MIG-... UUID), '' where it is unset."""


def visible_entries(cuda_visible_devices: str | None) -> list[str]:
    """CUDA_VISIBLE_DEVICES as its entries; empty where it is unset or empty."""
    if not cuda_visible_devices:
        return []
    return [entry.strip() for entry in cuda_visible_devices.split(",") if entry.strip()]


def device_for(
    local_rank: int, local_world_size: int, visible_count: int, cuda_visible_devices: str | None, host: str = ""
) -> RankDevice:
    """The device of local rank `local_rank` of `local_world_size` on a host where this process sees
    `visible_count` GPUs: cuda:0 where it sees one (Slurm bound one to this task), else cuda:local_rank."""
    entries = visible_entries(cuda_visible_devices)
    if visible_count < 1:
        raise DeviceUnavailable(
            f"{_where(host, local_rank, local_world_size)} sees no GPU ({_visible(cuda_visible_devices)}); "
            "device=cuda needs one per rank: ask Slurm for GPUs (slurm.gpus_per_node) or run with device=cpu"
        )
    if visible_count == 1 and (local_world_size == 1 or len(entries) == 1):
        return RankDevice(0, entries[0] if entries else "")
    if visible_count < local_world_size:
        raise DeviceUnavailable(
            f"{_where(host, local_rank, local_world_size)} sees {visible_count} GPUs "
            f"({_visible(cuda_visible_devices)}), fewer than the {local_world_size} ranks on this node, which "
            "would share them: ask for one GPU per rank (slurm.gpus_per_node or gpus-per-task) or run fewer ranks"
        )
    return RankDevice(local_rank, entries[local_rank] if local_rank < len(entries) else "")


def _where(host: str, local_rank: int, local_world_size: int) -> str:
    return f"{host or 'this host'}: local rank {local_rank} of {local_world_size}"


def _visible(cuda_visible_devices: str | None) -> str:
    if cuda_visible_devices is None:
        return "CUDA_VISIBLE_DEVICES unset"
    return f"CUDA_VISIBLE_DEVICES={cuda_visible_devices!r}"


def rank_device(device: str, placement: Placement, environ: Mapping[str, str]) -> torch.device:
    """The torch device this rank runs on: the CPU, or its own GPU by device_for, made current."""
    import torch

    if device == "cpu":
        return torch.device("cpu")
    mine = device_for(
        placement.local_rank,
        placement.local_world_size,
        torch.cuda.device_count(),
        environ.get("CUDA_VISIBLE_DEVICES"),
        placement.host,
    )
    chosen = torch.device("cuda", mine.index)
    torch.cuda.set_device(chosen)
    if mine.visible_as:
        logger.info(f"{chosen} is CUDA_VISIBLE_DEVICES entry {mine.visible_as}")
    return chosen
