"""The torch.distributed call behind each collective, and what its output must hold.

One entry per op in COLLECTIVES, keyed like collectives.layout.LAYOUTS. torch 2.13 renamed
all_gather_into_tensor / reduce_scatter_tensor to all_gather_single / reduce_scatter_single
and deprecated the old names: the new ones are used where they exist.

Rank r's input element g is patterns.input_values(r, g) (see collectives.patterns); each
entry says which indices a rank's send buffer holds and which ranks' values its receive
buffer must end with.
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
    root: int = 0


def torch_reduce_op(name: str) -> dist.ReduceOp.RedOpType:
    return getattr(dist.ReduceOp, REDUCE_OPS[name])  # type: ignore[no-any-return]


# ---- the calls: (recv, send, args); in-place-only ops get the same buffer twice


def _call_all_reduce(recv: torch.Tensor, send: torch.Tensor, args: CallArgs) -> None:
    dist.all_reduce(recv, op=torch_reduce_op(args.reduce_op))


def _call_all_gather(recv: torch.Tensor, send: torch.Tensor, args: CallArgs) -> None:
    _all_gather_flat(recv, send)


def _call_reduce_scatter(recv: torch.Tensor, send: torch.Tensor, args: CallArgs) -> None:
    _reduce_scatter_flat(recv, send, op=torch_reduce_op(args.reduce_op))


def _call_broadcast(recv: torch.Tensor, send: torch.Tensor, args: CallArgs) -> None:
    dist.broadcast(recv, src=args.root)


def _call_reduce(recv: torch.Tensor, send: torch.Tensor, args: CallArgs) -> None:
    dist.reduce(recv, dst=args.root, op=torch_reduce_op(args.reduce_op))


def _call_all_to_all(recv: torch.Tensor, send: torch.Tensor, args: CallArgs) -> None:
    dist.all_to_all_single(recv, send)


def _call_gather(recv: torch.Tensor, send: torch.Tensor, args: CallArgs) -> None:
    slots = list(recv.chunk(args.nranks)) if args.rank == args.root else None
    dist.gather(send, slots, dst=args.root)


def _call_scatter(recv: torch.Tensor, send: torch.Tensor, args: CallArgs) -> None:
    parts = list(send.chunk(args.nranks)) if args.rank == args.root else None
    dist.scatter(recv, parts, src=args.root)


def _call_sendrecv(recv: torch.Tensor, send: torch.Tensor, args: CallArgs) -> None:
    ring = [
        dist.P2POp(dist.isend, send, (args.rank + 1) % args.nranks),
        dist.P2POp(dist.irecv, recv, (args.rank - 1) % args.nranks),
    ]
    for work in dist.batch_isend_irecv(ring):
        work.wait()


# ---- expected outputs; None where the op leaves this rank's buffer undefined

Expect = Callable[[BufferCounts, CallArgs, torch.dtype, torch.device], "patterns.Expected | None"]


def _expect_reduced_whole(c: BufferCounts, a: CallArgs, dtype: torch.dtype, dev: torch.device) -> patterns.Expected:
    return patterns.reduced(a.nranks, 0, c.recv, a.reduce_op, dtype, dev)


def _expect_reduced_at_root(
    c: BufferCounts, a: CallArgs, dtype: torch.dtype, dev: torch.device
) -> patterns.Expected | None:
    return patterns.reduced(a.nranks, 0, c.recv, a.reduce_op, dtype, dev) if a.rank == a.root else None


def _expect_reduced_chunk(c: BufferCounts, a: CallArgs, dtype: torch.dtype, dev: torch.device) -> patterns.Expected:
    return patterns.reduced(a.nranks, a.rank * c.recv, c.recv, a.reduce_op, dtype, dev)


def _expect_gathered(c: BufferCounts, a: CallArgs, dtype: torch.dtype, dev: torch.device) -> patterns.Expected:
    return patterns.copied([(k, 0) for k in range(a.nranks)], c.param, dtype, dev)


def _expect_gathered_at_root(
    c: BufferCounts, a: CallArgs, dtype: torch.dtype, dev: torch.device
) -> patterns.Expected | None:
    return _expect_gathered(c, a, dtype, dev) if a.rank == a.root else None


def _expect_root_copy(c: BufferCounts, a: CallArgs, dtype: torch.dtype, dev: torch.device) -> patterns.Expected:
    return patterns.copied([(a.root, 0)], c.recv, dtype, dev)


def _expect_exchanged(c: BufferCounts, a: CallArgs, dtype: torch.dtype, dev: torch.device) -> patterns.Expected:
    # chunk j of rank r's output is chunk r of rank j's input
    return patterns.copied([(j, a.rank * c.param) for j in range(a.nranks)], c.param, dtype, dev)


def _expect_scattered(c: BufferCounts, a: CallArgs, dtype: torch.dtype, dev: torch.device) -> patterns.Expected:
    return patterns.copied([(a.root, a.rank * c.recv)], c.recv, dtype, dev)


def _expect_from_previous(c: BufferCounts, a: CallArgs, dtype: torch.dtype, dev: torch.device) -> patterns.Expected:
    return patterns.copied([((a.rank - 1) % a.nranks, 0)], c.recv, dtype, dev)


@dataclass(frozen=True, slots=True)
class Collective:
    name: str
    call: Callable[[torch.Tensor, torch.Tensor, CallArgs], None]
    """(recv, send, args): one blocking call of the collective."""
    expected: Expect
    """What this rank's receive buffer must hold after one call on pattern inputs."""
    input_follows_reduce_op: bool = False
    """Inputs follow the reduce op's pattern (prod needs +-1 values)."""


COLLECTIVES: dict[str, Collective] = {
    c.name: c
    for c in (
        Collective(
            name="all_reduce",
            call=_call_all_reduce,
            expected=_expect_reduced_whole,
            input_follows_reduce_op=True,
        ),
        Collective(name="all_gather", call=_call_all_gather, expected=_expect_gathered),
        Collective(
            name="reduce_scatter",
            call=_call_reduce_scatter,
            expected=_expect_reduced_chunk,
            input_follows_reduce_op=True,
        ),
        Collective(name="broadcast", call=_call_broadcast, expected=_expect_root_copy),
        Collective(
            name="reduce",
            call=_call_reduce,
            expected=_expect_reduced_at_root,
            input_follows_reduce_op=True,
        ),
        Collective(name="all_to_all", call=_call_all_to_all, expected=_expect_exchanged),
        Collective(name="gather", call=_call_gather, expected=_expect_gathered_at_root),
        Collective(name="scatter", call=_call_scatter, expected=_expect_scattered),
        Collective(name="sendrecv", call=_call_sendrecv, expected=_expect_from_previous),
    )
}
