"""The timed loop: warmup, a barrier, then each iteration timed on its own."""

from __future__ import annotations

import time
from collections.abc import Callable

import torch
import torch.distributed as dist


def completion_fence(device: torch.device) -> Callable[[], None]:
    """What makes an issued op complete before the clock stops on this device."""
    if device.type == "cuda":
        return lambda: torch.cuda.synchronize(device)
    # Blocking CPU collectives (gloo, async_op=False) have completed when the call returns.
    return lambda: None


def time_iterations(call: Callable[[], None], warmup: int, iters: int, device: torch.device) -> list[float]:
    """Seconds taken by each of `iters` blocking calls, after `warmup` untimed ones and a barrier."""
    fence = completion_fence(device)
    for _ in range(warmup):
        call()
    fence()
    dist.barrier()
    times: list[float] = []
    clock = time.perf_counter
    for _ in range(iters):
        start = clock()
        call()
        fence()
        times.append(clock() - start)
    return times
