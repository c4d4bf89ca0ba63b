"""The torch.distributed call behind each collective, and what its output must be.

One entry per op in COLLECTIVES, keyed like collectives.layout.LAYOUTS. torch 2.13 renamed
all_gather_into_tensor / reduce_scatter_tensor to all_gather_single / reduce_scatter_single
and deprecated the old names: the new ones are used where they exist.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.distributed as dist

from collectives import patterns
from collectives.dtypes import REDUCE_OPS
from collectives.layout import BufferCounts

_all_gather_flat = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
_reduce_scatter_flat = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor


@dataclass(frozen=True, slots=True)
class CallArgs:
    """What one call of a collective needs besides its buffers."""

    reduce_op: str
    rank: int
    nranks: int


def torch_reduce_op(name: str) -> dist.ReduceOp.RedOpType:
    return getattr(dist.ReduceOp, REDUCE_OPS[name])  # type: ignore[no-any-return]


def _call_all_reduce(recv: torch.Tensor, send: torch.Tensor, args: CallArgs) -> None:
    # all_reduce is in place: the caller guarantees send and recv are the same buffer.
    dist.all_reduce(recv, op=torch_reduce_op(args.reduce_op))


def _call_all_gather(recv: torch.Tensor, send: torch.Tensor, args: CallArgs) -> None:
    _all_gather_flat(recv, send)


def _call_reduce_scatter(recv: torch.Tensor, send: torch.Tensor, args: CallArgs) -> None:
    _reduce_scatter_flat(recv, send, op=torch_reduce_op(args.reduce_op))


def _expect_all_reduce(
    counts: BufferCounts, args: CallArgs, dtype: torch.dtype, device: torch.device
) -> patterns.Expected:
    return patterns.reduced(args.nranks, 0, counts.recv, args.reduce_op, dtype, device)


def _expect_all_gather(
    counts: BufferCounts, args: CallArgs, dtype: torch.dtype, device: torch.device
) -> patterns.Expected:
    return patterns.gathered(args.nranks, counts.send, dtype, device)


def _expect_reduce_scatter(
    counts: BufferCounts, args: CallArgs, dtype: torch.dtype, device: torch.device
) -> patterns.Expected:
    return patterns.reduced(args.nranks, args.rank * counts.recv, counts.recv, args.reduce_op, dtype, device)


@dataclass(frozen=True, slots=True)
class Collective:
    name: str
    call: Callable[[torch.Tensor, torch.Tensor, CallArgs], None]
    """(recv, send, args): one blocking call of the collective."""
    expected: Callable[[BufferCounts, CallArgs, torch.dtype, torch.device], patterns.Expected]
    """What this rank's receive buffer must hold after one call on pattern inputs."""
    out_of_place: bool
    """torch.distributed can run it with separate send and receive buffers."""
    input_reduce_op: bool = True
    """Inputs follow the reduce op's pattern (prod needs +-1 values); False for gathers."""


COLLECTIVES: dict[str, Collective] = {
    c.name: c
    for c in (
        Collective(name="all_reduce", call=_call_all_reduce, expected=_expect_all_reduce, out_of_place=False),
        Collective(
            name="all_gather",
            call=_call_all_gather,
            expected=_expect_all_gather,
            out_of_place=True,
            input_reduce_op=False,
        ),
        Collective(
            name="reduce_scatter", call=_call_reduce_scatter, expected=_expect_reduce_scatter, out_of_place=True
        ),
    )
}
