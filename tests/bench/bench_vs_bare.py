"""collbench's timed loop against a bare torch.distributed loop, interleaved in one session.

    .venv/bin/python tests/bench/bench_vs_bare.py [--ranks 2] [--rounds 9] [--iters 20]

Not part of the test run. Every rank builds the same buffers for both; for each op and size the
two loops alternate round by round (which goes first alternates too), each round's mean time is
averaged over ranks as nccl-tests does, and the median over rounds is compared. Prints one line
per (op, size): collbench time, bare time, their ratio, and the target it is held to (within 3%
from 1 MiB up, within 10% at 4 KiB and below).
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from collectives.dtypes import DTYPES
from collectives.layout import LAYOUTS
from collectives.ops import COLLECTIVES, CallArgs
from collectives.plan import Step
from collectives.settings import BenchSettings
from collectives.sweep import Buffers, Measurement, RankContext, _time

OPS = ("all_reduce", "all_gather", "reduce_scatter")
SIZES = (1024, 4096, 65536, 1 << 20, 4 << 20, 16 << 20)


def bare_loop(op: str, send: torch.Tensor, recv: torch.Tensor, warmup: int, iters: int) -> list[float]:
    """The loop anyone would write by hand: blocking calls, perf_counter around each."""
    if op == "all_reduce":
        call = lambda: dist.all_reduce(recv)  # noqa: E731
    elif op == "all_gather":
        call = lambda: dist.all_gather_single(recv, send)  # noqa: E731
    else:
        call = lambda: dist.reduce_scatter_single(recv, send)  # noqa: E731
    for _ in range(warmup):
        call()
    dist.barrier()
    times = []
    for _ in range(iters):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return times


def rank_main(rank: int, nranks: int, port: int, rounds: int, iters: int) -> None:
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=nranks)
    settings = BenchSettings(warmup_iters=2, iters=iters, check=False)
    ctx = RankContext(rank=rank, nranks=nranks, local_rank=rank, host=socket.gethostname(), device=torch.device("cpu"))
    element = DTYPES["float32"].size
    lines = []
    for op in OPS:
        for size in SIZES:
            counts = LAYOUTS[op].buffer_counts(size, element, nranks)
            buffers = Buffers.allocate(counts, torch.float32, ctx.device)
            in_place = LAYOUTS[op].placements[0]
            step = Step(op=op, size=size, counts=counts, root=-1)
            measurement = Measurement.prepare(step, COLLECTIVES[op], buffers, CallArgs("sum", rank, nranks), in_place)
            send, recv = measurement.send, measurement.recv
            ours: dict[str, list[float]] = {"mean": [], "median": []}
            bare: dict[str, list[float]] = {"mean": [], "median": []}
            for round_ in range(rounds):
                order = ("ours", "bare") if round_ % 2 == 0 else ("bare", "ours")
                for who in order:
                    if who == "ours":
                        _record(ours, _time(measurement, settings, ctx).seconds)
                    else:
                        _record(bare, bare_loop(op, send, recv, settings.warmup_iters, iters))
            mean_ratio = statistics.median(ours["mean"]) / statistics.median(bare["mean"])
            median_ratio = statistics.median(ours["median"]) / statistics.median(bare["median"])
            target = 0.03 if size >= 1 << 20 else 0.10 if size <= 4096 else None
            verdict = "-" if target is None else ("ok" if abs(median_ratio - 1) <= target else "OUTSIDE")
            lines.append(
                f"{op:>15} {size:>10} {statistics.median(ours['median']) * 1e6:>10.1f} "
                f"{statistics.median(bare['median']) * 1e6:>10.1f} {median_ratio:>8.3f} {mean_ratio:>8.3f} "
                f"{'' if target is None else f'+-{target:.0%}':>6} {verdict}"
            )
    if rank == 0:
        print(
            f"# collbench vs bare torch.distributed, gloo, {nranks} ranks, {rounds} interleaved rounds x {iters} iters"
        )
        print("# per round: each rank's median and mean iteration time, averaged over ranks; then the median")
        print("# over rounds. ratio = collbench / bare; the target applies to the ratio of medians.")
        print(
            f"{'op':>15} {'size (B)':>10} {'ours us':>10} {'bare us':>10} {'r.median':>8} {'r.mean':>8} "
            f"{'target':>6} verdict"
        )
        print("\n".join(lines))
    dist.destroy_process_group()


def _record(into: dict[str, list[float]], seconds: list[float]) -> None:
    """One round: this rank's median and mean, each averaged over ranks."""
    value = torch.tensor([statistics.median(seconds), statistics.fmean(seconds)], dtype=torch.float64)
    dist.all_reduce(value)
    value /= dist.get_world_size()
    into["median"].append(float(value[0]))
    into["mean"].append(float(value[1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--iters", type=int, default=20)
    args = parser.parse_args()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    mp.spawn(rank_main, args=(args.ranks, port, args.rounds, args.iters), nprocs=args.ranks, join=True)


if __name__ == "__main__":
    main()
