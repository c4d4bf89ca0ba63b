"""The timed loop: warmup, a barrier, then each iteration timed on its own.

CPU: a monotonic host clock, the blocking call having completed when it returns. CUDA: a pair
of events around each call on the current stream. CUDA graphs (nccl-tests' -G): the iterations
are captured once and the graph is replayed; each replay's time / iterations is one sample.
"""

from __future__ import annotations

import math
import resource
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.distributed as dist


@dataclass(frozen=True, slots=True)
class Timing:
    seconds: list[float]
    """One sample per timed iteration (per replay under CUDA graphs)."""
    page_faults_per_iter: float
    timer: str
    calls: int
    """Collective calls timed: the samples, times the iterations each graph replay holds."""


def _minor_faults() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def warm_up(call: Callable[[], object], warmup: int, device: torch.device) -> float:
    """Run the untimed iterations; returns their mean time in seconds (at least one call)."""
    start = time.perf_counter()
    for _ in range(max(1, warmup)):
        call()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return (time.perf_counter() - start) / max(1, warmup)


def agreed_iterations(estimate_s: float, budget_s: float, floor: int, cap: int, device: torch.device) -> int:
    """Iterations that fill the time budget for the slowest rank; every rank gets the same count."""
    slowest = torch.tensor([estimate_s], dtype=torch.float64, device=device)
    dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
    wanted = math.ceil(budget_s / max(float(slowest.item()), 1e-9))
    return max(floor, min(cap, wanted))


def time_iterations(call: Callable[[], object], iters: int, device: torch.device, graph_launches: int = 0) -> Timing:
    """Time `iters` calls after a barrier; warmup is the caller's (warm_up)."""
    if device.type == "cuda" and graph_launches > 0:
        return _time_cuda_graph(call, iters, graph_launches, device)
    if device.type == "cuda":
        return _time_cuda_events(call, iters, device)
    return _time_host(call, iters)


def _time_host(call: Callable[[], object], iters: int) -> Timing:
    dist.barrier()
    clock = time.perf_counter
    seconds: list[float] = []
    faults = _minor_faults()
    for _ in range(iters):
        start = clock()
        call()
        seconds.append(clock() - start)
    return Timing(seconds, (_minor_faults() - faults) / iters, timer="host", calls=iters)


def _event_pair() -> tuple[torch.cuda.Event, torch.cuda.Event]:
    return (
        torch.cuda.Event(enable_timing=True),  # type: ignore[no-untyped-call]
        torch.cuda.Event(enable_timing=True),  # type: ignore[no-untyped-call]
    )


def _time_cuda_events(call: Callable[[], object], iters: int, device: torch.device) -> Timing:
    events = [_event_pair() for _ in range(iters)]
    torch.cuda.synchronize(device)
    dist.barrier()
    faults = _minor_faults()
    for start, end in events:
        start.record()
        call()
        end.record()
    torch.cuda.synchronize(device)
    seconds = [start.elapsed_time(end) / 1e3 for start, end in events]
    return Timing(seconds, (_minor_faults() - faults) / iters, timer="cuda_events", calls=iters)


def _time_cuda_graph(call: Callable[[], object], iters: int, launches: int, device: torch.device) -> Timing:
    graph = torch.cuda.CUDAGraph()
    torch.cuda.synchronize(device)
    with torch.cuda.graph(graph):
        for _ in range(iters):
            call()
    torch.cuda.synchronize(device)
    events = [_event_pair() for _ in range(launches)]
    dist.barrier()
    faults = _minor_faults()
    for start, end in events:
        start.record()
        graph.replay()
        end.record()
    torch.cuda.synchronize(device)
    seconds = [start.elapsed_time(end) / 1e3 / iters for start, end in events]
    calls = iters * launches
    return Timing(seconds, (_minor_faults() - faults) / calls, timer="cuda_graph", calls=calls)
