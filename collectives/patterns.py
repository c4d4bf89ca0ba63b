"""Input values that depend on rank and element index, and the outputs they must produce.

Element g of rank r's input is a(g) + r*b(g), with a(g) in [-8, 8] and b(g) in [1, 3] drawn
from a hash of g. Two ranks never hold the same value at the same index (b(g) != 0), and
neighbouring chunks hold unrelated values, so a missing, misplaced or duplicated chunk shows
up as wrong elements. Every rank recomputes the expected output on its own from the same
formula, in float64 (or int64), without any communication.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from collectives.dtypes import DTYPES

_MASK32 = 0xFFFFFFFF


def _hash(index: torch.Tensor, salt: int) -> torch.Tensor:
    """A cheap integer hash of each element index (xorshift-multiply, 32-bit)."""
    h = (index * 0x9E3779B1 + salt) & _MASK32
    h = h ^ (h >> 15)
    h = (h * 0x2C1B3C6D) & _MASK32
    h = h ^ (h >> 12)
    return h


def input_values(rank: int, start: int, count: int, reduce_op: str, device: torch.device) -> torch.Tensor:
    """Rank `rank`'s input for global element indices [start, start+count), as int64."""
    index = torch.arange(start, start + count, dtype=torch.int64, device=device)
    if reduce_op == "prod":
        # +1/-1 only, so that the product of any number of ranks stays exact.
        return 1 - 2 * ((_hash(index, 0x165667B1) + rank * (_hash(index, 0x27D4EB2F) | 1)) & 1)
    a = _hash(index, 0x85EBCA77) % 17 - 8
    b = _hash(index, 0xC2B2AE3D) % 3 + 1
    return a + rank * b


def fill_input(buffer: torch.Tensor, rank: int, start: int, reduce_op: str) -> None:
    """Write rank `rank`'s input for indices [start, start+len(buffer)) into `buffer`."""
    buffer.copy_(input_values(rank, start, buffer.numel(), reduce_op, buffer.device).to(buffer.dtype))


@dataclass(frozen=True, slots=True)
class Expected:
    values: torch.Tensor
    """Exact expected output, float64 for float types and int64 for integers."""
    tolerance: torch.Tensor | float
    """Allowed absolute error per element (0 for integers)."""


def _as_dtype_values(values: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """What the values become once stored in `dtype` (rounding, or integer wrap-around)."""
    wide = torch.float64 if dtype.is_floating_point else torch.int64
    return values.to(dtype).to(wide)


def copied(sources: list[tuple[int, int]], count: int, dtype: torch.dtype, device: torch.device) -> Expected:
    """Concat of `count` input elements of each (rank, start index) in `sources`: what a collective
    that only moves data (gather, broadcast, all_to_all, ...) must deliver."""
    parts = [_as_dtype_values(input_values(rank, start, count, "sum", device), dtype) for rank, start in sources]
    return Expected(values=torch.cat(parts) if parts else torch.empty(0, device=device), tolerance=0.0)


def reduced(nranks: int, start: int, count: int, reduce_op: str, dtype: torch.dtype, device: torch.device) -> Expected:
    """Reduce(T_0..T_{n-1}) over indices [start, start+count)."""
    is_float = dtype.is_floating_point
    wide = torch.float64 if is_float else torch.int64
    acc: torch.Tensor | None = None
    magnitude = torch.zeros(count, dtype=torch.float64, device=device)
    for k in range(nranks):
        x = _as_dtype_values(input_values(k, start, count, reduce_op, device), dtype).to(wide)
        magnitude += x.abs().to(torch.float64)
        acc = x if acc is None else _combine(acc, x, reduce_op)
    assert acc is not None
    if reduce_op == "avg":
        acc = acc / nranks if is_float else torch.div(acc, nranks, rounding_mode="trunc")
        magnitude /= nranks
    if not is_float:
        return Expected(values=_as_dtype_values(acc, dtype), tolerance=0.0)
    eps = torch.finfo(dtype).eps
    return Expected(values=acc, tolerance=magnitude * (nranks * eps) + acc.abs() * eps)


def _combine(acc: torch.Tensor, x: torch.Tensor, reduce_op: str) -> torch.Tensor:
    if reduce_op in ("sum", "avg"):
        return acc + x
    if reduce_op == "prod":
        return acc * x
    if reduce_op == "min":
        return torch.minimum(acc, x)
    if reduce_op == "max":
        return torch.maximum(acc, x)
    raise ValueError(f"reduce op {reduce_op!r} is not one of sum, prod, min, max, avg")


def _wrong_mask(actual: torch.Tensor, expected: Expected) -> torch.Tensor:
    if actual.dtype.is_floating_point:
        # written as "not within" so that NaN counts as wrong
        return ~((actual.to(torch.float64) - expected.values).abs() <= expected.tolerance)
    return actual.to(torch.int64) != expected.values


def count_wrong(actual: torch.Tensor, expected: Expected) -> int:
    """Number of elements of `actual` outside the tolerance of `expected` (NaN counts as wrong)."""
    return int(_wrong_mask(actual, expected).sum().item())


def first_wrong(actual: torch.Tensor, expected: Expected) -> int:
    """Index of the first element outside tolerance, or -1."""
    where = torch.nonzero(_wrong_mask(actual, expected))
    return int(where[0].item()) if where.numel() else -1


def corrupt_one_element(buffer: torch.Tensor) -> None:
    """Flip a high bit of the middle element: a deliberate error for testing the check itself."""
    if buffer.numel() == 0:
        return
    index = buffer.numel() // 2
    element_size = buffer.element_size()
    raw = buffer.view(torch.uint8)
    raw[index * element_size + element_size - 1] ^= 0x40


def dtype_of(name: str) -> torch.dtype:
    """The torch dtype for one of our dtype names."""
    if name not in DTYPES:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}")
    dtype = getattr(torch, name)
    assert isinstance(dtype, torch.dtype)
    return dtype
