"""The memory guard: refuse a sweep whose largest size cannot fit, before allocating anything."""

from __future__ import annotations

from typing import TYPE_CHECKING

from collectives.plan import peak_bytes_per_rank
from collectives.settings import BenchSettings

if TYPE_CHECKING:
    import torch


class NotEnoughMemory(MemoryError):
    """The sweep's largest size needs more memory per rank than this rank has."""


def host_available_bytes() -> int:
    """MemAvailable from /proc/meminfo: what can be allocated without swapping."""
    with open("/proc/meminfo", encoding="ascii") as meminfo:
        for line in meminfo:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    raise OSError("/proc/meminfo has no MemAvailable line")


def available_bytes(device: torch.device, ranks_sharing: int) -> tuple[int, str]:
    """Bytes this rank may use, and where the figure comes from."""
    if device.type == "cuda":
        import torch

        free, _total = torch.cuda.mem_get_info(device)
        return free, f"free memory on {device}"
    return host_available_bytes() // max(1, ranks_sharing), f"host MemAvailable / {ranks_sharing} ranks on this node"


def check_fits(settings: BenchSettings, nranks: int, device: torch.device, ranks_sharing: int) -> None:
    need, step = peak_bytes_per_rank(settings, nranks)
    have, source = available_bytes(device, ranks_sharing)
    if step is not None and need > have:
        raise NotEnoughMemory(
            f"{step.op} at {step.size} B needs {need / 1e9:.2f} GB per rank "
            f"(buffers{' and check' if settings.check else ''}) but only {have / 1e9:.2f} GB is available "
            f"({source}); lower bench.max_bytes"
        )
