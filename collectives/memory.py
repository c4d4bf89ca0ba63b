"""The memory guard: refuse a sweep whose largest size cannot fit, before allocating anything.

Torch-free (the local launcher checks the host before starting ranks); a rank's device memory comes from
collectives.device_memory. What a step needs is collectives.footprint's count, measured against the real
peak on the CPU (tests/collectives/test_memory_peak.py, tests/bench/bench_memory.py).
"""

from __future__ import annotations

from dataclasses import replace

from collectives.plan import Step, peak_bytes_per_rank
from collectives.settings import BenchSettings
from collectives.sizes import format_size


class NotEnoughMemory(MemoryError):
    """The sweep's largest size needs more memory per rank than this rank has."""


def host_available_bytes() -> int:
    """MemAvailable from /proc/meminfo: what can be allocated without swapping."""
    with open("/proc/meminfo", encoding="ascii") as meminfo:
        for line in meminfo:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    raise OSError("/proc/meminfo has no MemAvailable line")


def largest_fitting_size(settings: BenchSettings, nranks: int, have: int, backend: str = "gloo") -> int | None:
    """The largest of the sweep's sizes whose every step fits in `have` bytes per rank (None: not even the
    smallest): what the largest size can be lowered to."""
    fitting = None
    for size in sorted(set(settings.size_list())):
        need, step = peak_bytes_per_rank(replace(settings, sizes=[size]), nranks, backend)
        if step is not None and need > have:
            break
        fitting = size
    return fitting


def what_fits(settings: BenchSettings, nranks: int, have: int, size_key: str, backend: str = "gloo") -> str:
    """Words naming the largest size and dtype that fit, and the setting that says so."""
    fit = largest_fitting_size(settings, nranks, have, backend)
    if fit is None:
        return f"not even its smallest size of {settings.dtype} fits"
    return f"the largest that fits is {_spelled(fit)} of {settings.dtype} ({size_key} up to {_spelled(fit)})"


def _spelled(size: int) -> str:
    """'4G', '3000 B': as a size is written in a config."""
    words = format_size(size)
    return words if words[-1].isalpha() else f"{words} B"


def step_needs(settings: BenchSettings, step: Step, need: int) -> str:
    """'all_reduce at 8G of bfloat16 needs 8.80 GB per rank (buffers and the check)'."""
    what = "buffers and the check" if settings.check else "buffers and the input fill"
    return f"{step.op} at {_spelled(step.size)} of {settings.dtype} needs {need / 1e9:.2f} GB per rank ({what})"


def check_fits(
    settings: BenchSettings,
    nranks: int,
    have: int,
    source: str,
    size_key: str = "bench.max_bytes",
    backend: str = "gloo",
) -> None:
    """`have` bytes available to this rank (`source` says where the figure comes from); `size_key` is the
    setting that sets the sweep's largest size, named in the refusal with the largest size that fits."""
    need, step = peak_bytes_per_rank(settings, nranks, backend)
    if step is not None and need > have:
        raise NotEnoughMemory(
            f"{step_needs(settings, step, need)}; {what_fits(settings, nranks, have, size_key, backend)} "
            f"in the {have / 1e9:.2f} GB available ({source}); lower {size_key}"
        )
