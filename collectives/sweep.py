"""One rank's sweep: every planned step, in each placement, timed then checked."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.distributed as dist
from loguru import logger

from collectives import patterns
from collectives.dtypes import DTYPES
from collectives.footprint import allocates_send
from collectives.layout import LAYOUTS, BufferCounts
from collectives.ops import COLLECTIVES, Call, CallArgs, Collective
from collectives.plan import Step, plan_sweep
from collectives.results import RankResult, iteration_stats
from collectives.settings import BenchSettings
from collectives.timing import (
    Timing,
    agreed_iterations,
    agreed_projection,
    projected_seconds,
    time_iterations,
    warm_up,
)


@dataclass(frozen=True, slots=True)
class RankContext:
    """Who this rank is, as the sweep needs it."""

    rank: int
    nranks: int
    local_rank: int
    host: str
    device: torch.device
    group: dist.ProcessGroup | None = None
    """The group the sweep runs over: None for the world, or a subgroup; rank and nranks are then
    this rank's place in it and its size."""


@dataclass(slots=True)
class Buffers:
    """One size's buffers, allocated once: send (empty for an op measured in place only), and a receive
    buffer that in-place runs share. collectives.footprint.buffer_bytes counts them."""

    send: torch.Tensor
    recv: torch.Tensor
    counts: BufferCounts

    @classmethod
    def allocate(
        cls, counts: BufferCounts, dtype: torch.dtype, device: torch.device, with_send: bool = True
    ) -> Buffers:
        send = torch.zeros(counts.send if with_send else 0, dtype=dtype, device=device)
        recv = torch.zeros(max(counts.send, counts.recv), dtype=dtype, device=device)
        return cls(send=send, recv=recv, counts=counts)

    def views(self, rank: int, in_place: bool) -> tuple[torch.Tensor, torch.Tensor]:
        """(send, recv) views as nccl-tests lays them out: in place, both live inside `recv`."""
        c = self.counts
        if not in_place:
            return self.send[: c.send], self.recv[: c.recv]
        send_at, recv_at = rank * c.send_inplace_offset, rank * c.recv_inplace_offset
        return self.recv[send_at : send_at + c.send], self.recv[recv_at : recv_at + c.recv]


@dataclass(slots=True)
class SizeBuffers:
    """The one size's buffers a rank holds: a step of another shape frees them before its own are allocated,
    and on CUDA hands the cached blocks back to the driver, so that NCCL finds room for its own buffers."""

    dtype: torch.dtype
    device: torch.device
    key: tuple[int, int, bool] | None = None
    buffers: Buffers | None = None

    def for_step(self, step: Step) -> Buffers:
        key = (step.counts.send, step.counts.recv, allocates_send(step.op))
        if self.buffers is None or key != self.key:
            self.release()
            self.buffers = Buffers.allocate(step.counts, self.dtype, self.device, with_send=key[2])
            self.key = key
        return self.buffers

    def release(self) -> None:
        self.buffers, self.key = None, None
        if self.device.type == "cuda":
            torch.cuda.empty_cache()


@dataclass(frozen=True, slots=True)
class Measurement:
    """One step in one placement: its buffer views and its bound call, made once, before timing."""

    step: Step
    collective: Collective
    buffers: Buffers
    args: CallArgs
    in_place: bool
    send: torch.Tensor
    recv: torch.Tensor
    call: Call

    @classmethod
    def prepare(
        cls, step: Step, collective: Collective, buffers: Buffers, args: CallArgs, in_place: bool
    ) -> Measurement:
        send, recv = buffers.views(args.rank, in_place)
        return cls(step, collective, buffers, args, in_place, send, recv, collective.bind(recv, send, args))

    def fill_input(self) -> None:
        pattern = self.args.reduce_op if self.collective.input_follows_reduce_op else "sum"
        patterns.fill_input(self.send, self.args.rank, 0, pattern)


Emit = Callable[[RankResult], None]


@dataclass(frozen=True, slots=True)
class Progress:
    """Where a rank is in its sweep: step `index` of `total`, starting or done."""

    index: int
    total: int
    op: str
    size: int
    root: int
    in_place: bool
    phase: str
    """'start' or 'end'."""


OnProgress = Callable[[Progress], None]


def _ignore_progress(progress: Progress) -> None:
    return None


@dataclass(slots=True)
class Deadline:
    """When a sweep must be done by (`at`, a time.time() value; 0: never), and what it measured so far: before
    a size larger than any it measured, the time that step would take is projected from the last
    measurement, and the sweep stops if the group's longest projection is past the group's least time left."""

    at: float
    calls: int
    """Calls one measurement makes at least: the warm-up, the timed iterations (min_iters under a time
    budget, else iters) and the check pass."""
    largest: int = 0
    """The largest size measured so far, in bytes (0: nothing yet; the first step always runs)."""
    last_bytes: int = 0
    last_call_s: float = 0.0
    """The last measurement's size and time per call."""

    @classmethod
    def of(cls, at: float, settings: BenchSettings) -> Deadline:
        timed = settings.min_iters if settings.time_budget_ms > 0 else settings.iters
        return cls(at, max(1, settings.warmup_iters) + timed + (1 if settings.check else 0))

    def measured(self, result: RankResult) -> None:
        self.largest = max(self.largest, result.size)
        self.last_bytes, self.last_call_s = result.size, result.time_us / 1e6

    def too_late(self, size: int, measurements: int, ctx: RankContext) -> str:
        """Why a step of `measurements` measurements at `size` bytes is not to be started ('' when it is).
        Every rank of the group must call it at the same step: past the first step, a larger size costs
        one all_reduce over the group."""
        if self.at <= 0 or self.largest == 0 or size <= self.largest:
            return ""
        own = projected_seconds(self.last_call_s, self.last_bytes, size, self.calls * measurements)
        projected, left = agreed_projection(own, self.at - time.time(), ctx.device, ctx.group)
        if projected <= left:
            return ""
        return f"would not finish by the round's deadline: projected {projected:.1f} s, {max(0.0, left):.1f} s left"


def run_sweep(
    settings: BenchSettings,
    ctx: RankContext,
    emit: Emit,
    corrupt_output: bool = False,
    on_progress: OnProgress = _ignore_progress,
    skip_first: int = 0,
    deadline: float = 0.0,
) -> None:
    """Measure every planned (op, size, root) in each placement and emit one RankResult for each;
    `on_progress` hears of each measurement as it starts and ends (heartbeats). The first
    `skip_first` measurements are passed over (a resumed attempt has them already). With a `deadline`
    (a time.time() value; 0: none) the sweep stops before a size larger than any it measured that the
    group projects would not finish by then (Deadline): smaller sizes first, so a very slow member still
    leaves a figure."""
    dtype = patterns.dtype_of(settings.dtype)
    steps, skipped = plan_sweep(settings, ctx.nranks)
    for skip in skipped:
        logger.bind(event="size_skipped", op=skip.op, size=skip.size).info(
            f"{skip.op} {skip.size} B: skipped, {skip.reason}"
        )
    buffers = SizeBuffers(dtype, ctx.device)
    total = sum(len(LAYOUTS[step.op].placements) for step in steps)
    index = 0
    element_size = DTYPES[settings.dtype].size
    limit = Deadline.of(deadline, settings)
    for number, step in enumerate(steps):
        placements = LAYOUTS[step.op].placements
        if index + len(placements) <= skip_first:
            index += len(placements)
            continue
        size = step.counts.size_bytes(element_size)
        late = limit.too_late(size, len(placements), ctx)
        if late:
            _log_stopped(steps[number:], late)
            break
        args = CallArgs(
            reduce_op=settings.reduce_op, rank=ctx.rank, nranks=ctx.nranks, root=max(step.root, 0), group=ctx.group
        )
        # the buffers are passed on, never kept here: the next shape's allocation frees them
        for in_place in placements:
            if index < skip_first:
                index += 1
                continue
            on_progress(Progress(index, total, step.op, size, step.root, in_place, "start"))
            measurement = Measurement.prepare(step, COLLECTIVES[step.op], buffers.for_step(step), args, in_place)
            result = _measure_and_check(measurement, settings, ctx, corrupt_output)
            del measurement
            limit.measured(result)
            emit(result)
            on_progress(Progress(index, total, step.op, size, step.root, in_place, "end"))
            index += 1
    buffers.release()


def _log_stopped(rest: list[Step], why: str) -> None:
    """One line per (op, size) the sweep stopped before, as plan_sweep's skipped sizes are logged."""
    first = rest[0]
    for op, size in dict.fromkeys((step.op, step.size) for step in rest):
        reason = why if (op, size) == (first.op, first.size) else f"the sweep stopped before {first.op} {first.size} B"
        logger.bind(event="size_skipped", op=op, size=size).info(f"{op} {size} B: skipped, {reason}")


def _measure_and_check(m: Measurement, settings: BenchSettings, ctx: RankContext, corrupt_output: bool) -> RankResult:
    started_at = time.time()
    timing = _time(m, settings, ctx)
    wrong, first_wrong = _check(m, settings, ctx, corrupt_output)
    result = _result(m, settings, ctx, timing, wrong, first_wrong)
    result.started_at = started_at
    result.ended_at = time.time()
    return result


def _time(m: Measurement, settings: BenchSettings, ctx: RankContext) -> Timing:
    m.fill_input()
    estimate = warm_up(m.call, settings.warmup_iters, ctx.device)
    iters = settings.iters
    if settings.time_budget_ms > 0:
        iters = agreed_iterations(
            estimate, settings.time_budget_ms / 1e3, settings.min_iters, settings.max_iters, ctx.device, ctx.group
        )
    return time_iterations(
        m.call,
        iters,
        ctx.device,
        timer=settings.timer,
        graph_launches=settings.cuda_graph_launches,
        per_iteration=settings.per_iteration,
        group=ctx.group,
    )


def _check(m: Measurement, settings: BenchSettings, ctx: RankContext, corrupt_output: bool) -> tuple[int, int]:
    if not settings.check:
        return -1, -1
    m.buffers.recv.zero_()
    m.buffers.send.zero_()
    m.fill_input()
    m.call()
    if ctx.device.type == "cuda":
        torch.cuda.synchronize(ctx.device)
    expected = m.collective.expected(m.step.counts, m.args)
    if expected is None:  # this rank's output is undefined for this op (a non-root of reduce or gather)
        return 0, -1
    if corrupt_output:
        patterns.corrupt_one_element(m.recv)
    return patterns.check(m.recv, expected)


def _result(
    m: Measurement, settings: BenchSettings, ctx: RankContext, timing: Timing, wrong: int, first_wrong: int
) -> RankResult:
    element_size = DTYPES[settings.dtype].size
    layout = LAYOUTS[m.step.op]
    algbw, busbw = layout.bandwidths(m.step.counts.param, element_size, ctx.nranks, timing.time_s)
    times_us = [round(t * 1e6, 3) for t in timing.samples]
    stats = iteration_stats(times_us)
    return RankResult(
        op=m.step.op,
        size=m.step.counts.size_bytes(element_size),
        count=m.step.counts.param,
        dtype=settings.dtype,
        redop=settings.reduce_op if layout.reduces else "none",
        root=m.step.root,
        in_place=m.in_place,
        rank=ctx.rank,
        local_rank=ctx.local_rank,
        host=ctx.host,
        nranks=ctx.nranks,
        iters=timing.calls,
        time_us=timing.time_s * 1e6,
        enqueue_us=timing.enqueue_s * 1e6,
        algbw=algbw,
        busbw=busbw,
        wrong=wrong,
        times_us=times_us,
        page_faults_per_iter=timing.page_faults_per_iter,
        timer=timing.timer,
        first_wrong_index=first_wrong,
        requested_size=m.step.size,
        min_us=stats["min_us"],
        median_us=stats["median_us"],
        p99_us=stats["p99_us"],
        max_us=stats["max_us"],
        cv=stats["cv"],
    )
