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
from collectives.torch_floor import require_torch_floor

require_torch_floor(torch.__version__)  # group_src/group_dst/group_peer below: a clear line, not a TypeError later

_all_gather_flat = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
_reduce_scatter_flat = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor


@dataclass(frozen=True, slots=True)
class CallArgs:
    """What one call of a collective needs besides its buffers."""

    reduce_op: str
    rank: int
    """This rank's place in `group` (in the world when group is None)."""
    nranks: int
    root: int = 0
    """The root's place in `group`."""
    group: dist.ProcessGroup | None = None
    """The process group the call runs over: None for the world, or a subgroup (collbench isolate
    measures disjoint groups of nodes at the same time)."""


def torch_reduce_op(name: str) -> dist.ReduceOp.RedOpType:
    return getattr(dist.ReduceOp, REDUCE_OPS[name])  # type: ignore[no-any-return]


# ---- the calls. Each binder resolves everything once (reduce op, chunk views, peers) and returns
# the bare blocking call, so that nothing but the collective runs inside the timed loop.

Call = Callable[[], object]


def _bind_all_reduce(recv: torch.Tensor, send: torch.Tensor, args: CallArgs) -> Call:
    op = torch_reduce_op(args.reduce_op)
    group = args.group
    return lambda: dist.all_reduce(recv, op=op, group=group)  # in place: send is recv


def _bind_all_gather(recv: torch.Tensor, send: torch.Tensor, args: CallArgs) -> Call:
    group = args.group
    return lambda: _all_gather_flat(recv, send, group=group)


def _bind_reduce_scatter(recv: torch.Tensor, send: torch.Tensor, args: CallArgs) -> Call:
    op = torch_reduce_op(args.reduce_op)
    group = args.group
    return lambda: _reduce_scatter_flat(recv, send, op=op, group=group)


def _bind_broadcast(recv: torch.Tensor, send: torch.Tensor, args: CallArgs) -> Call:
    root, group = args.root, args.group
    return lambda: dist.broadcast(recv, group=group, group_src=root)


def _bind_reduce(recv: torch.Tensor, send: torch.Tensor, args: CallArgs) -> Call:
    op, root, group = torch_reduce_op(args.reduce_op), args.root, args.group
    return lambda: dist.reduce(recv, op=op, group=group, group_dst=root)


def _bind_all_to_all(recv: torch.Tensor, send: torch.Tensor, args: CallArgs) -> Call:
    group = args.group
    return lambda: dist.all_to_all_single(recv, send, group=group)


def _bind_gather(recv: torch.Tensor, send: torch.Tensor, args: CallArgs) -> Call:
    slots = list(recv.chunk(args.nranks)) if args.rank == args.root else None
    root, group = args.root, args.group
    return lambda: dist.gather(send, slots, group=group, group_dst=root)


def _bind_scatter(recv: torch.Tensor, send: torch.Tensor, args: CallArgs) -> Call:
    parts = list(send.chunk(args.nranks)) if args.rank == args.root else None
    root, group = args.root, args.group
    return lambda: dist.scatter(recv, parts, group=group, group_src=root)


def _bind_sendrecv(recv: torch.Tensor, send: torch.Tensor, args: CallArgs) -> Call:
    ring = [
        dist.P2POp(dist.isend, send, group=args.group, group_peer=(args.rank + 1) % args.nranks),
        dist.P2POp(dist.irecv, recv, group=args.group, group_peer=(args.rank - 1) % args.nranks),
    ]

    def exchange() -> None:
        for work in dist.batch_isend_irecv(ring):
            work.wait()

    return exchange


# ---- expected outputs, computed a piece at a time by patterns.check; None where the op leaves this rank's
# buffer undefined

Expect = Callable[[BufferCounts, CallArgs], "patterns.Expectation | None"]


def _expect_reduced_whole(c: BufferCounts, a: CallArgs) -> patterns.Expectation:
    return patterns.Reduction(a.nranks, 0, c.recv, a.reduce_op)


def _expect_reduced_at_root(c: BufferCounts, a: CallArgs) -> patterns.Expectation | None:
    return _expect_reduced_whole(c, a) if a.rank == a.root else None


def _expect_reduced_chunk(c: BufferCounts, a: CallArgs) -> patterns.Expectation:
    return patterns.Reduction(a.nranks, a.rank * c.recv, c.recv, a.reduce_op)


def _expect_gathered(c: BufferCounts, a: CallArgs) -> patterns.Expectation:
    return patterns.Copies(tuple((k, 0) for k in range(a.nranks)), c.param)


def _expect_gathered_at_root(c: BufferCounts, a: CallArgs) -> patterns.Expectation | None:
    return _expect_gathered(c, a) if a.rank == a.root else None


def _expect_root_copy(c: BufferCounts, a: CallArgs) -> patterns.Expectation:
    return patterns.Copies(((a.root, 0),), c.recv)


def _expect_exchanged(c: BufferCounts, a: CallArgs) -> patterns.Expectation:
    # chunk j of rank r's output is chunk r of rank j's input
    return patterns.Copies(tuple((j, a.rank * c.param) for j in range(a.nranks)), c.param)


def _expect_scattered(c: BufferCounts, a: CallArgs) -> patterns.Expectation:
    return patterns.Copies(((a.root, a.rank * c.recv),), c.recv)


def _expect_from_previous(c: BufferCounts, a: CallArgs) -> patterns.Expectation:
    return patterns.Copies((((a.rank - 1) % a.nranks, 0),), c.recv)


@dataclass(frozen=True, slots=True)
class Collective:
    name: str
    bind: Callable[[torch.Tensor, torch.Tensor, CallArgs], Call]
    """(recv, send, args) -> one blocking call of the collective on those buffers."""
    expected: Expect
    """What this rank's receive buffer must hold after one call on pattern inputs."""
    input_follows_reduce_op: bool = False
    """Inputs follow the reduce op's pattern (prod needs +-1 values)."""


COLLECTIVES: dict[str, Collective] = {
    c.name: c
    for c in (
        Collective(
            name="all_reduce",
            bind=_bind_all_reduce,
            expected=_expect_reduced_whole,
            input_follows_reduce_op=True,
        ),
        Collective(name="all_gather", bind=_bind_all_gather, expected=_expect_gathered),
        Collective(
            name="reduce_scatter",
            bind=_bind_reduce_scatter,
            expected=_expect_reduced_chunk,
            input_follows_reduce_op=True,
        ),
        Collective(name="broadcast", bind=_bind_broadcast, expected=_expect_root_copy),
        Collective(
            name="reduce",
            bind=_bind_reduce,
            expected=_expect_reduced_at_root,
            input_follows_reduce_op=True,
        ),
        Collective(name="all_to_all", bind=_bind_all_to_all, expected=_expect_exchanged),
        Collective(name="gather", bind=_bind_gather, expected=_expect_gathered_at_root),
        Collective(name="scatter", bind=_bind_scatter, expected=_expect_scattered),
        Collective(name="sendrecv", bind=_bind_sendrecv, expected=_expect_from_previous),
    )
}
