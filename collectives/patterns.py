"""Input values that depend on rank and element index, and the outputs they must produce.

Element g of rank r's input is a(g) + r*b(g), with a(g) in [-8, 8] and b(g) in [1, 3] drawn
from a hash of g. Two ranks never hold the same value at the same index (b(g) != 0), and
neighbouring chunks hold unrelated values, so a missing, misplaced or duplicated chunk shows
up as wrong elements. Every rank recomputes the expected output on its own from the same
formula, in float64 (or int64), without any communication.

Inputs are written and outputs checked WORK_CHUNK_ELEMENTS at a time (collectives.footprint): the int64
and float64 temporaries of a whole buffer would take several times the buffer itself.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol

import torch

from collectives.dtypes import DTYPES
from collectives.footprint import WORK_CHUNK_ELEMENTS

_MASK32 = 0xFFFFFFFF


def _hash(index: torch.Tensor, salt: int) -> torch.Tensor:
    """A cheap integer hash of each element index (xorshift-multiply, 32-bit), one new tensor and one
    temporary at a time."""
    h = index * 0x9E3779B1
    h.add_(salt).bitwise_and_(_MASK32)
    h.bitwise_xor_(h >> 15)
    h.mul_(0x2C1B3C6D).bitwise_and_(_MASK32)
    h.bitwise_xor_(h >> 12)
    return h


def input_values(rank: int, start: int, count: int, reduce_op: str, device: torch.device) -> torch.Tensor:
    """Rank `rank`'s input for global element indices [start, start+count), as int64."""
    index = torch.arange(start, start + count, dtype=torch.int64, device=device)
    if reduce_op == "prod":
        # +1/-1 only, so that the product of any number of ranks stays exact.
        first = _hash(index, 0x165667B1)
        parity = _hash(index, 0x27D4EB2F).bitwise_or_(1).mul_(rank).add_(first).bitwise_and_(1)
        return parity.mul_(-2).add_(1)
    a = _hash(index, 0x85EBCA77).remainder_(17).sub_(8)
    b = _hash(index, 0xC2B2AE3D).remainder_(3).add_(1)
    return a.add_(b.mul_(rank))


def chunks(count: int) -> Iterator[tuple[int, int]]:
    """[lo, hi) ranges of at most WORK_CHUNK_ELEMENTS covering [0, count)."""
    for lo in range(0, count, WORK_CHUNK_ELEMENTS):
        yield lo, min(count, lo + WORK_CHUNK_ELEMENTS)


def fill_input(buffer: torch.Tensor, rank: int, start: int, reduce_op: str) -> None:
    """Write rank `rank`'s input for indices [start, start+len(buffer)) into `buffer`, chunk by chunk."""
    for lo, hi in chunks(buffer.numel()):
        buffer[lo:hi].copy_(input_values(rank, start + lo, hi - lo, reduce_op, buffer.device))


@dataclass(frozen=True, slots=True)
class Expected:
    values: torch.Tensor
    """Exact expected output, float64 for float types and int64 for integers."""
    tolerance: torch.Tensor | float
    """Allowed absolute error per element (0 for integers)."""


def _wide(dtype: torch.dtype) -> torch.dtype:
    return torch.float64 if dtype.is_floating_point else torch.int64


def _as_dtype_values(values: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """What the values become once stored in `dtype` (rounding, or integer wrap-around)."""
    return values.to(dtype).to(_wide(dtype))


def copied(sources: list[tuple[int, int]], count: int, dtype: torch.dtype, device: torch.device) -> Expected:
    """Concat of `count` input elements of each (rank, start index) in `sources`: what a collective
    that only moves data (gather, broadcast, all_to_all, ...) must deliver."""
    parts = [_as_dtype_values(input_values(rank, start, count, "sum", device), dtype) for rank, start in sources]
    return Expected(values=torch.cat(parts) if parts else torch.empty(0, device=device), tolerance=0.0)


def reduced(nranks: int, start: int, count: int, reduce_op: str, dtype: torch.dtype, device: torch.device) -> Expected:
    """Reduce(T_0..T_{n-1}) over indices [start, start+count), as NCCL computes it.

    Integer avg is NCCL's FuncSumPostDiv (src/device/reduce_kernel.h; src/enqueue.cc maps ncclAvg on
    [u]int8/32/64 to ncclDevSumPostDiv): the sum wraps around in the dtype, then is divided by the rank
    count, truncated toward zero for signed types. gloo refuses avg on integers (collectives.dtypes), so
    NCCL's is the only integer avg there is. Float avg (gloo: sum then divide; NCCL: each input times
    1/n, then sum) is within the tolerance either way."""
    is_float = dtype.is_floating_point
    acc: torch.Tensor | None = None
    magnitude = torch.zeros(count, dtype=torch.float64, device=device) if is_float else None
    for k in range(nranks):
        x = _as_dtype_values(input_values(k, start, count, reduce_op, device), dtype)
        if magnitude is not None:
            magnitude.add_(x.abs())
        acc = x if acc is None else _combine(acc, x, reduce_op)
        del x  # before the next rank's input is computed
    assert acc is not None
    if not is_float:
        acc = _as_dtype_values(acc, dtype)
        if reduce_op == "avg":
            acc = _as_dtype_values(torch.div(acc, nranks, rounding_mode="trunc"), dtype)
        return Expected(values=acc, tolerance=0.0)
    assert magnitude is not None
    if reduce_op == "avg":
        acc.div_(nranks)
        magnitude.div_(nranks)
    eps = torch.finfo(dtype).eps
    return Expected(values=acc, tolerance=magnitude.mul_(nranks * eps).add_(acc.abs().mul_(eps)))


def _combine(acc: torch.Tensor, x: torch.Tensor, reduce_op: str) -> torch.Tensor:
    """acc combined with x, in place (acc is the reduction's own accumulator)."""
    if reduce_op in ("sum", "avg"):
        return acc.add_(x)
    if reduce_op == "prod":
        return acc.mul_(x)
    if reduce_op == "min":
        return torch.minimum(acc, x, out=acc)
    if reduce_op == "max":
        return torch.maximum(acc, x, out=acc)
    raise ValueError(f"reduce op {reduce_op!r} is not one of sum, prod, min, max, avg")


class Expectation(Protocol):
    """What a rank's output must hold, computed a piece at a time: `pieces` cuts [0, length) into ranges of at
    most WORK_CHUNK_ELEMENTS, and `values` gives the expected values of one of them."""

    @property
    def length(self) -> int: ...

    def pieces(self) -> Iterator[tuple[int, int]]: ...

    def values(self, lo: int, hi: int, dtype: torch.dtype, device: torch.device) -> Expected: ...


@dataclass(frozen=True, slots=True)
class Reduction:
    """Output element j is Reduce over every rank k of input(k, start + j)."""

    nranks: int
    start: int
    count: int
    reduce_op: str

    @property
    def length(self) -> int:
        return self.count

    def pieces(self) -> Iterator[tuple[int, int]]:
        return chunks(self.count)

    def values(self, lo: int, hi: int, dtype: torch.dtype, device: torch.device) -> Expected:
        return reduced(self.nranks, self.start + lo, hi - lo, self.reduce_op, dtype, device)


@dataclass(frozen=True, slots=True)
class Copies:
    """Output part p (`count` elements) is input(rank_p, start_p + j): a collective that only moves data."""

    sources: tuple[tuple[int, int], ...]
    """(rank, start index) of each part, in output order."""
    count: int

    @property
    def length(self) -> int:
        return self.count * len(self.sources)

    def pieces(self) -> Iterator[tuple[int, int]]:
        """Never across a part's end: each piece comes from one rank's input."""
        for part in range(len(self.sources)):
            for lo, hi in chunks(self.count):
                yield part * self.count + lo, part * self.count + hi

    def values(self, lo: int, hi: int, dtype: torch.dtype, device: torch.device) -> Expected:
        part, offset = divmod(lo, self.count)
        rank, start = self.sources[part]
        return copied([(rank, start + offset)], hi - lo, dtype, device)


def _wrong_mask(actual: torch.Tensor, expected: Expected) -> torch.Tensor:
    if not actual.dtype.is_floating_point:
        return actual.to(torch.int64) != expected.values
    if isinstance(expected.tolerance, float) and expected.tolerance == 0.0:
        return actual.to(torch.float64) != expected.values  # NaN != anything: wrong
    # a copy (copy=True: a float64 output would otherwise be changed in place), then "not within", so that
    # NaN counts as wrong
    return ~(actual.to(torch.float64, copy=True).sub_(expected.values).abs_() <= expected.tolerance)


def count_wrong(actual: torch.Tensor, expected: Expected) -> int:
    """Number of elements of `actual` outside the tolerance of `expected` (NaN counts as wrong)."""
    return int(_wrong_mask(actual, expected).sum().item())


def check(actual: torch.Tensor, expectation: Expectation) -> tuple[int, int]:
    """(wrong elements, index of the first, -1 if none) of `actual` against `expectation`, piece by piece."""
    if actual.numel() != expectation.length:
        raise ValueError(f"output of {actual.numel()} elements checked against {expectation.length} expected")
    wrong, first = 0, -1
    for lo, hi in expectation.pieces():
        piece = actual[lo:hi]
        expected = expectation.values(lo, hi, actual.dtype, actual.device)
        mask = _wrong_mask(piece, expected)
        del expected
        here = int(mask.sum().item())
        if here and first < 0:
            first = lo + int(mask.to(torch.uint8).argmax().item())
        wrong += here
    return wrong, first


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
