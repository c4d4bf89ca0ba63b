"""The timed loop, as nccl-tests' BenchTime times it: warmup, a barrier, then the table's time.

Three timers give the table's time per call:
- loop (the default on CUDA): a host monotonic clock around all `iters` launches plus the stream
  synchronisation, divided by `iters`. The host runs ahead and the GPU is never idle between calls.
  The clock read before the synchronisation, divided the same way, is the enqueue time (nccl-tests' -C).
- per_call (the default on the CPU): each call timed on its own: the host clock around a blocking call
  (gloo), or a pair of CUDA events around it. The mean is the table's time.
- CUDA graphs (nccl-tests' -G): the `iters` calls are captured once and the graph is replayed N times
  under the loop clock: time = elapsed / (N x iters).

With `per_iteration` (nccl-tests' -I) a separate pass after the timed one records each call (each
replay under graphs) on its own: the per-iteration distribution. It never sets the table's time.
"""

from __future__ import annotations

import math
import resource
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Literal

import torch
import torch.distributed as dist

from collectives.settings import TimerName


@dataclass(frozen=True, slots=True)
class Timing:
    time_s: float
    """The table's time per call: what algbw and busbw follow from."""
    enqueue_s: float
    """Host time per call until every launch had returned, before the synchronisation (nccl-tests' -C);
    a blocking call has completed by then, so on the CPU it is the time itself."""
    page_faults_per_iter: float
    timer: str
    """host (per call, CPU), host_loop, cuda_loop, cuda_events (per call), or cuda_graph."""
    calls: int
    """Collective calls the table's time is over: the iterations, times the replays under CUDA graphs."""
    samples: list[float] = field(default_factory=list)
    """Per-iteration seconds (per replay / iterations under graphs); empty unless per-call timing ran."""


def _minor_faults() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _host_barrier(device: torch.device, group: dist.ProcessGroup | None) -> None:
    """Every rank's host at the same point with its stream drained, as nccl-tests' Barrier before the clock."""
    _synchronize(device)
    dist.barrier(group=group)
    _synchronize(device)


def resolve_timer(timer: TimerName, device: torch.device) -> Literal["loop", "per_call"]:
    if timer != "auto":
        return timer
    return "loop" if device.type == "cuda" else "per_call"


def warm_up(call: Callable[[], object], warmup: int, device: torch.device) -> float:
    """Run the untimed iterations (at least one call); returns the mean time in seconds of those after the
    first, or the first's alone where there is no other: on NCCL (2.22 on) the first call on a communicator
    makes its connections (NCCL_RUNTIME_CONNECT), which would inflate the estimate a time budget is cut from."""
    start = time.perf_counter()
    call()
    _synchronize(device)
    if warmup <= 1:
        return time.perf_counter() - start
    start = time.perf_counter()
    for _ in range(warmup - 1):
        call()
    _synchronize(device)
    return (time.perf_counter() - start) / (warmup - 1)


def agreed_iterations(
    estimate_s: float,
    budget_s: float,
    floor: int,
    cap: int,
    device: torch.device,
    group: dist.ProcessGroup | None = None,
) -> int:
    """Iterations that fill the time budget for the slowest rank; every rank of the group gets the same count."""
    slowest = torch.tensor([estimate_s], dtype=torch.float64, device=device)
    dist.all_reduce(slowest, op=dist.ReduceOp.MAX, group=group)
    wanted = math.ceil(budget_s / max(float(slowest.item()), 1e-9))
    return max(floor, min(cap, wanted))


def projected_seconds(call_s: float, measured_bytes: int, next_bytes: int, calls: int) -> float:
    """How long `calls` calls at `next_bytes` would take, from one call's time at `measured_bytes`, scaled by
    the ratio of the sizes (bandwidth-bound: a slow link's time grows with the bytes; at small sizes, where
    latency dominates, this over-estimates, which only stops a sweep early)."""
    return call_s * next_bytes / max(1, measured_bytes) * calls


def agreed_projection(
    projected_s: float, left_s: float, device: torch.device, group: dist.ProcessGroup | None = None
) -> tuple[float, float]:
    """(the longest projection, the least time left) over the group: every rank decides the same from them.
    One all_reduce (MAX) of (projected, -left): seconds rather than clock readings, so clocks that differ
    between nodes do not matter."""
    both = torch.tensor([projected_s, -left_s], dtype=torch.float64, device=device)
    dist.all_reduce(both, op=dist.ReduceOp.MAX, group=group)
    projected, least_left = both.tolist()
    return float(projected), -float(least_left)


def time_iterations(
    call: Callable[[], object],
    iters: int,
    device: torch.device,
    *,
    timer: TimerName = "auto",
    graph_launches: int = 0,
    per_iteration: bool = False,
    group: dist.ProcessGroup | None = None,
) -> Timing:
    """Time `iters` calls after a barrier over `group` (the world when None); warmup is the caller's (warm_up)."""
    if device.type == "cuda" and graph_launches > 0:
        graph = _capture(call, iters, device)
        timing = _time_loop(graph.replay, graph_launches, device, group, "cuda_graph", per_launch=iters)
        samples = _time_per_call(graph.replay, graph_launches, device, group, iters) if per_iteration else None
    elif resolve_timer(timer, device) == "loop":
        timing = _time_loop(call, iters, device, group, "cuda_loop" if device.type == "cuda" else "host_loop")
        samples = _time_per_call(call, iters, device, group) if per_iteration else None
    else:
        timing = _time_per_call(call, iters, device, group)
        samples = None
    return timing if samples is None else replace(timing, samples=samples.samples)


def _time_loop(
    launch: Callable[[], object],
    launches: int,
    device: torch.device,
    group: dist.ProcessGroup | None,
    timer: str,
    per_launch: int = 1,
) -> Timing:
    """One clock around every launch and the synchronisation: nccl-tests' deltaSec and cputimeSec."""
    _host_barrier(device, group)
    faults = _minor_faults()
    clock = time.perf_counter
    start = clock()
    for _ in range(launches):
        launch()
    enqueued = clock()
    _synchronize(device)
    elapsed = clock() - start
    calls = launches * per_launch
    return Timing(
        time_s=elapsed / calls,
        enqueue_s=(enqueued - start) / calls,
        page_faults_per_iter=(_minor_faults() - faults) / calls,
        timer=timer,
        calls=calls,
    )


def _time_per_call(
    launch: Callable[[], object],
    launches: int,
    device: torch.device,
    group: dist.ProcessGroup | None,
    per_launch: int = 1,
) -> Timing:
    if device.type == "cuda":
        return _time_cuda_events(launch, launches, device, group, per_launch)
    return _time_host(launch, launches, group)


def _time_host(call: Callable[[], object], iters: int, group: dist.ProcessGroup | None) -> Timing:
    dist.barrier(group=group)
    clock = time.perf_counter
    seconds: list[float] = []
    faults = _minor_faults()
    for _ in range(iters):
        start = clock()
        call()
        seconds.append(clock() - start)
    mean = math.fsum(seconds) / iters
    faults_per_call = (_minor_faults() - faults) / iters
    return Timing(mean, mean, faults_per_call, timer="host", calls=iters, samples=seconds)


def _event_pair() -> tuple[torch.cuda.Event, torch.cuda.Event]:
    return (
        torch.cuda.Event(enable_timing=True),  # type: ignore[no-untyped-call]
        torch.cuda.Event(enable_timing=True),  # type: ignore[no-untyped-call]
    )


def _time_cuda_events(
    launch: Callable[[], object],
    launches: int,
    device: torch.device,
    group: dist.ProcessGroup | None,
    per_launch: int,
) -> Timing:
    events = [_event_pair() for _ in range(launches)]
    _host_barrier(device, group)
    faults = _minor_faults()
    start_host = time.perf_counter()
    for start, end in events:
        start.record()
        launch()
        end.record()
    enqueued = time.perf_counter()
    torch.cuda.synchronize(device)
    seconds = [start.elapsed_time(end) / 1e3 / per_launch for start, end in events]
    calls = launches * per_launch
    return Timing(
        time_s=math.fsum(seconds) / launches,
        enqueue_s=(enqueued - start_host) / calls,
        page_faults_per_iter=(_minor_faults() - faults) / calls,
        timer="cuda_events",
        calls=calls,
        samples=seconds,
    )


def _capture(call: Callable[[], object], iters: int, device: torch.device) -> torch.cuda.CUDAGraph:
    """The `iters` calls captured in one graph, in thread-local mode as nccl-tests captures
    (src/common.cu, cudaStreamBeginCapture(..., cudaStreamCaptureModeThreadLocal)): NCCL may cudaMalloc
    while a call is captured (connections made at first use), which global mode forbids to every thread."""
    graph = torch.cuda.CUDAGraph()
    torch.cuda.synchronize(device)
    with torch.cuda.graph(graph, capture_error_mode="thread_local"):
        for _ in range(iters):
            call()
    torch.cuda.synchronize(device)
    return graph
