"""Message sizes: parsing '64M'-style values and building the sweep, as nccl-tests does."""

from __future__ import annotations

import re

_UNITS = {"": 1, "B": 1, "K": 1024, "M": 1024**2, "G": 1024**3}
_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMG]?)(?:I?B)?\s*$", re.IGNORECASE)


def parse_size(value: int | str) -> int:
    """Bytes from an int or a string with an optional K/M/G suffix (powers of 1024)."""
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a size; allowed: a byte count such as 8, 4096, 64K, 4M, 1G")
    if isinstance(value, int):
        return value
    match = _SIZE_RE.match(str(value))
    if not match:
        raise ValueError(f"{value!r} is not a size; allowed: a byte count such as 8, 4096, 64K, 4M, 1G")
    number, unit = match.groups()
    return int(float(number) * _UNITS[unit.upper()])


def format_size(nbytes: int) -> str:
    """The shortest exact K/M/G spelling of a byte count (4194304 -> '4M')."""
    for unit in ("G", "M", "K"):
        scale = _UNITS[unit]
        if nbytes >= scale and nbytes % scale == 0:
            return f"{nbytes // scale}{unit}"
    return str(nbytes)


def size_sweep(min_bytes: int, max_bytes: int, step_factor: float) -> list[int]:
    """min, min*f, min*f^2, ... up to and including max (nccl-tests' -b/-e/-f loop)."""
    if step_factor <= 1:
        raise ValueError(f"step factor {step_factor!r} must be > 1")
    sizes: list[int] = []
    size = min_bytes
    while size <= max_bytes:
        sizes.append(size)
        size = max(int(size * step_factor), size + 1)
    return sizes
