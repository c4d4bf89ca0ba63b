"""The memory guard: refuse a sweep whose largest size cannot fit, before allocating anything.

Torch-free (the local launcher checks the host before starting ranks); a rank's device memory comes from
collectives.device_memory.
"""

from __future__ import annotations

from collectives.plan import peak_bytes_per_rank
from collectives.settings import BenchSettings


class NotEnoughMemory(MemoryError):
    """The sweep's largest size needs more memory per rank than this rank has."""


def host_available_bytes() -> int:
    """MemAvailable from /proc/meminfo: what can be allocated without swapping."""
    with open("/proc/meminfo", encoding="ascii") as meminfo:
        for line in meminfo:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    raise OSError("/proc/meminfo has no MemAvailable line")


def check_fits(settings: BenchSettings, nranks: int, have: int, source: str, size_key: str = "bench.max_bytes") -> None:
    """`have` bytes available to this rank (`source` says where the figure comes from); `size_key` is the
    setting that sets the sweep's largest size, named in the refusal."""
    need, step = peak_bytes_per_rank(settings, nranks)
    if step is not None and need > have:
        raise NotEnoughMemory(
            f"{step.op} at {step.size} B needs {need / 1e9:.2f} GB per rank "
            f"(buffers{' and check' if settings.check else ''}) but only {have / 1e9:.2f} GB is available "
            f"({source}); lower {size_key}"
        )
