"""How each collective sizes its buffers and turns a time into bandwidth, as nccl-tests does.

Plain data, no torch: the CLI renders tables from results with it. The torch calls that
run each collective live in ``collectives.ops``, keyed by the same names.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

OpName = Literal[
    "all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "all_to_all", "gather", "scatter", "sendrecv"
]


@dataclass(frozen=True, slots=True)
class BufferCounts:
    """Element counts of one rank's buffers for one message size (nccl-tests' getCollByteCount)."""

    send: int
    recv: int
    param: int
    """The count passed to the collective; nccl-tests' 'count' column."""
    send_inplace_offset: int
    """Per-rank offset of the send buffer inside the receive buffer when run in place."""
    recv_inplace_offset: int
    """Per-rank offset of the receive buffer inside the send buffer when run in place."""

    def size_bytes(self, element_size: int) -> int:
        """nccl-tests' 'size' column: the larger of the two buffers."""
        return max(self.send, self.recv) * element_size


def _whole_buffer(count: int, element_size: int, nranks: int) -> BufferCounts:
    return BufferCounts(send=count, recv=count, param=count, send_inplace_offset=0, recv_inplace_offset=0)


def _per_rank_base(count: int, element_size: int, nranks: int) -> int:
    # nccl-tests: (count/nranks) & -(16/eltSize), i.e. whole 16-byte multiples per rank.
    per_rank = count // nranks
    return per_rank - per_rank % max(1, 16 // element_size)


def _gathered(count: int, element_size: int, nranks: int) -> BufferCounts:
    base = _per_rank_base(count, element_size, nranks)
    return BufferCounts(send=base, recv=base * nranks, param=base, send_inplace_offset=base, recv_inplace_offset=0)


def _scattered(count: int, element_size: int, nranks: int) -> BufferCounts:
    base = _per_rank_base(count, element_size, nranks)
    return BufferCounts(send=base * nranks, recv=base, param=base, send_inplace_offset=0, recv_inplace_offset=base)


def _exchanged(count: int, element_size: int, nranks: int) -> BufferCounts:
    base = _per_rank_base(count, element_size, nranks)
    return BufferCounts(
        send=base * nranks, recv=base * nranks, param=base, send_inplace_offset=0, recv_inplace_offset=0
    )


@dataclass(frozen=True, slots=True)
class OpLayout:
    name: str
    counts: Callable[[int, int, int], BufferCounts]
    """(count of the whole message, element size, ranks) -> this rank's buffers."""
    param_is_per_rank: bool
    """algbw counts param x ranks elements (all_gather, reduce_scatter) or param elements."""
    bus_factor: Callable[[int], float]
    """busbw = algbw x bus_factor(ranks)."""
    reduces: bool
    """Takes a reduce op."""
    rooted: bool = False
    """Has a root rank (broadcast, reduce, gather, scatter)."""
    placements: tuple[bool, ...] = (False, True)
    """in_place values torch.distributed can run: its all_reduce, broadcast and reduce work in place
    only; all_to_all and sendrecv are measured out of place only, as nccl-tests checks them."""
    gloo_min_ranks: int = 1
    """Fewest ranks the op needs on gloo (gloo's sendrecv cannot send to itself)."""

    def buffer_counts(self, size_bytes: int, element_size: int, nranks: int) -> BufferCounts:
        return self.counts(size_bytes // element_size, element_size, nranks)

    def bandwidths(self, param: int, element_size: int, nranks: int, seconds: float) -> tuple[float, float]:
        """(algbw, busbw) in GB/s (1e9 bytes), from nccl-tests' GetBw functions."""
        moved = param * element_size * (nranks if self.param_is_per_rank else 1)
        algbw = moved / 1.0e9 / seconds if seconds > 0 else 0.0
        return algbw, algbw * self.bus_factor(nranks)


def _ring_allreduce(n: int) -> float:
    return 2.0 * (n - 1) / n


def _ring(n: int) -> float:
    return (n - 1) / n


def _one(n: int) -> float:
    return 1.0


_IN_PLACE_ONLY = (True,)
_OUT_OF_PLACE_ONLY = (False,)

LAYOUTS: dict[str, OpLayout] = {
    layout.name: layout
    for layout in (
        OpLayout(
            name="all_reduce",
            counts=_whole_buffer,
            param_is_per_rank=False,
            bus_factor=_ring_allreduce,
            reduces=True,
            placements=_IN_PLACE_ONLY,
        ),
        OpLayout(name="all_gather", counts=_gathered, param_is_per_rank=True, bus_factor=_ring, reduces=False),
        OpLayout(name="reduce_scatter", counts=_scattered, param_is_per_rank=True, bus_factor=_ring, reduces=True),
        OpLayout(
            name="broadcast",
            counts=_whole_buffer,
            param_is_per_rank=False,
            bus_factor=_one,
            reduces=False,
            rooted=True,
            placements=_IN_PLACE_ONLY,
        ),
        OpLayout(
            name="reduce",
            counts=_whole_buffer,
            param_is_per_rank=False,
            bus_factor=_one,
            reduces=True,
            rooted=True,
            placements=_IN_PLACE_ONLY,
        ),
        OpLayout(
            name="all_to_all",
            counts=_exchanged,
            param_is_per_rank=True,
            bus_factor=_ring,
            reduces=False,
            placements=_OUT_OF_PLACE_ONLY,
        ),
        OpLayout(name="gather", counts=_gathered, param_is_per_rank=True, bus_factor=_ring, reduces=False, rooted=True),
        OpLayout(
            name="scatter", counts=_scattered, param_is_per_rank=True, bus_factor=_ring, reduces=False, rooted=True
        ),
        OpLayout(
            name="sendrecv",
            counts=_whole_buffer,
            param_is_per_rank=False,
            bus_factor=_one,
            reduces=False,
            placements=_OUT_OF_PLACE_ONLY,
            gloo_min_ranks=2,
        ),
    )
}
"""Each op as nccl-tests' src/<op>.cu sizes it (getCollByteCount) and rates it (getBw)."""
