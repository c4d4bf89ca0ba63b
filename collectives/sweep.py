"""One rank's sweep: every op, every size, out of place and in place, timed then checked."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from statistics import fmean

import torch
from loguru import logger

from collectives import patterns
from collectives.dtypes import DTYPES
from collectives.layout import LAYOUTS, BufferCounts
from collectives.ops import COLLECTIVES, CallArgs, Collective
from collectives.results import RankResult
from collectives.settings import BenchSettings
from collectives.sizes import size_sweep
from collectives.timing import time_iterations


@dataclass(frozen=True, slots=True)
class RankContext:
    """Who this rank is, as the sweep needs it."""

    rank: int
    nranks: int
    local_rank: int
    host: str
    device: torch.device


@dataclass(slots=True)
class Buffers:
    """One size's buffers, allocated once: send, and a receive buffer that in-place runs share."""

    send: torch.Tensor
    recv: torch.Tensor
    counts: BufferCounts

    @classmethod
    def allocate(cls, counts: BufferCounts, dtype: torch.dtype, device: torch.device) -> Buffers:
        send = torch.zeros(counts.send, dtype=dtype, device=device)
        recv = torch.zeros(max(counts.send, counts.recv), dtype=dtype, device=device)
        return cls(send=send, recv=recv, counts=counts)

    def views(self, rank: int, in_place: bool) -> tuple[torch.Tensor, torch.Tensor]:
        """(send, recv) views as nccl-tests lays them out: in place, both live inside `recv`."""
        c = self.counts
        if not in_place:
            return self.send[: c.send], self.recv[: c.recv]
        send_at, recv_at = rank * c.send_inplace_offset, rank * c.recv_inplace_offset
        return self.recv[send_at : send_at + c.send], self.recv[recv_at : recv_at + c.recv]


Emit = Callable[[RankResult], None]


def run_sweep(settings: BenchSettings, ctx: RankContext, emit: Emit, corrupt_output: bool = False) -> None:
    """Measure every (op, size, placement) in `settings` and emit one RankResult for each."""
    dtype = patterns.dtype_of(settings.dtype)
    element_size = DTYPES[settings.dtype].size
    for op in settings.ops:
        collective, layout = COLLECTIVES[op], LAYOUTS[op]
        redop = settings.reduce_op if layout.reduces else "none"
        args = CallArgs(reduce_op=settings.reduce_op, rank=ctx.rank, nranks=ctx.nranks)
        for size in size_sweep(settings.min_bytes, settings.max_bytes, settings.step_factor):
            counts = layout.buffer_counts(size, element_size, ctx.nranks)
            if counts.param == 0:
                logger.bind(event="size_skipped", op=op, size=size).info(
                    f"{op} {size} B: skipped, under 16 bytes per rank once rounded as nccl-tests does"
                )
                continue
            buffers = Buffers.allocate(counts, dtype, ctx.device)
            for in_place in (False, True):
                if not in_place and not collective.out_of_place:
                    continue
                logger.bind(event="step_start", op=op, size=counts.size_bytes(element_size), in_place=in_place).debug(
                    f"{op} size={counts.size_bytes(element_size)} in_place={in_place}: start"
                )
                times = _measure(collective, buffers, args, settings, ctx, in_place)
                wrong = _check(collective, buffers, args, settings, ctx, in_place, corrupt_output)
                result = _result(op, redop, counts, element_size, settings, ctx, in_place, times, wrong)
                logger.bind(event="step_end", op=op, size=result.size, in_place=in_place).debug(
                    f"{op} size={result.size} in_place={in_place}: {result.time_us:.2f} us, #wrong {wrong}"
                )
                emit(result)
            del buffers


def _measure(
    collective: Collective, buffers: Buffers, args: CallArgs, settings: BenchSettings, ctx: RankContext, in_place: bool
) -> list[float]:
    send, recv = buffers.views(ctx.rank, in_place)
    reduce_op = settings.reduce_op if collective.input_reduce_op else "sum"
    patterns.fill_input(send, ctx.rank, 0, reduce_op)
    return time_iterations(lambda: collective.call(recv, send, args), settings.warmup_iters, settings.iters, ctx.device)


def _check(
    collective: Collective,
    buffers: Buffers,
    args: CallArgs,
    settings: BenchSettings,
    ctx: RankContext,
    in_place: bool,
    corrupt_output: bool,
) -> int:
    if not settings.check:
        return -1
    send, recv = buffers.views(ctx.rank, in_place)
    buffers.recv.zero_()
    reduce_op = settings.reduce_op if collective.input_reduce_op else "sum"
    patterns.fill_input(send, ctx.rank, 0, reduce_op)
    collective.call(recv, send, args)
    if ctx.device.type == "cuda":
        torch.cuda.synchronize(ctx.device)
    if corrupt_output:
        patterns.corrupt_one_element(recv)
    expected = collective.expected(buffers.counts, args, recv.dtype, ctx.device)
    return patterns.count_wrong(recv, expected)


def _result(
    op: str,
    redop: str,
    counts: BufferCounts,
    element_size: int,
    settings: BenchSettings,
    ctx: RankContext,
    in_place: bool,
    times: list[float],
    wrong: int,
) -> RankResult:
    mean_s = fmean(times)
    algbw, busbw = LAYOUTS[op].bandwidths(counts.param, element_size, ctx.nranks, mean_s)
    return RankResult(
        op=op,
        size=counts.size_bytes(element_size),
        count=counts.param,
        dtype=settings.dtype,
        redop=redop,
        root=-1,
        in_place=in_place,
        rank=ctx.rank,
        local_rank=ctx.local_rank,
        host=ctx.host,
        nranks=ctx.nranks,
        iters=len(times),
        time_us=mean_s * 1e6,
        algbw=algbw,
        busbw=busbw,
        wrong=wrong,
        times_us=[round(t * 1e6, 3) for t in times],
    )
