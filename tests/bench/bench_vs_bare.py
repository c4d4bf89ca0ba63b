"""collbench's timed loop against a bare torch.distributed loop timed the same way, interleaved in one session.

    .venv/bin/python tests/bench/bench_vs_bare.py [--ranks 2] [--rounds 21] [--iters 20] [--sizes 1K,4K,...]
    python tests/bench/bench_vs_bare.py --device cuda --ranks 1 ...      (NCCL; what gpu_check.sh runs)

Not part of the test run. Every rank builds the same buffers for both. For each op, size and timer
(collbench's default on this device, and the other one) the two alternate round by round (which goes
first alternates too); each round's time per call is averaged over ranks as nccl-tests does, and the
ratio collbench / bare of that round is kept. Prints per (op, size, timer) the medians of both, the median
of the per-round ratios and their interquartile range, then the median ratio per op and size band against
the target it is held to (within 3% from 1 MiB up, within 10% at 4 KiB and below).
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import time
from collections.abc import Callable

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from collectives.dtypes import DTYPES
from collectives.layout import LAYOUTS
from collectives.ops import COLLECTIVES, CallArgs
from collectives.plan import Step
from collectives.settings import BenchSettings, TimerName, parse_size_list
from collectives.sweep import Buffers, Measurement, RankContext, _time
from collectives.timing import resolve_timer
from jobs.launchers.local import free_port

OPS = ("all_reduce", "all_gather", "reduce_scatter")
SIZES = "1K,4K,64K,1M,4M,16M"
TIMERS: tuple[TimerName, ...] = ("auto", "loop", "per_call")
BANDS = {"<= 4 KiB": (0, 4096, 0.10), "64 KiB": (4097, (1 << 20) - 1, None), ">= 1 MiB": (1 << 20, 1 << 62, 0.03)}


def bare_call(op: str, send: torch.Tensor, recv: torch.Tensor) -> Callable[[], object]:
    """The call anyone would write by hand."""
    if op == "all_reduce":
        return lambda: dist.all_reduce(recv)
    if op == "all_gather":
        gather = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
        return lambda: gather(recv, send)
    scatter = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor
    return lambda: scatter(recv, send)


def bare_time(call: Callable[[], object], timer: str, warmup: int, iters: int, device: torch.device) -> float:
    """Seconds per call, timed as collbench's timer of that name times it, written the plain way."""
    cuda = device.type == "cuda"
    sync = (lambda: torch.cuda.synchronize(device)) if cuda else (lambda: None)
    for _ in range(warmup):
        call()
    sync()
    dist.barrier()
    sync()
    if timer == "loop":
        start = time.perf_counter()
        for _ in range(iters):
            call()
        sync()
        return (time.perf_counter() - start) / iters
    if cuda:
        pairs = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(iters)]
        for begin, end in pairs:
            begin.record()
            call()
            end.record()
        sync()
        return statistics.fmean(begin.elapsed_time(end) / 1e3 for begin, end in pairs)
    seconds = []
    for _ in range(iters):
        start = time.perf_counter()
        call()
        seconds.append(time.perf_counter() - start)
    return statistics.fmean(seconds)


def over_ranks(seconds: float, device: torch.device) -> float:
    value = torch.tensor([seconds], dtype=torch.float64, device=device)
    dist.all_reduce(value)
    return float(value.item()) / dist.get_world_size()


def rank_main(rank: int, nranks: int, port: int, rounds: int, iters: int, device_type: str, sizes: list[int]) -> None:
    torch.set_num_threads(1)
    device = torch.device("cuda", rank) if device_type == "cuda" else torch.device("cpu")
    backend = "nccl" if device.type == "cuda" else "gloo"
    if device.type == "cuda":
        torch.cuda.set_device(device)
    dist.init_process_group(
        backend, init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=nranks,
        device_id=device if device.type == "cuda" else None,
    )  # fmt: skip
    ctx = RankContext(rank=rank, nranks=nranks, local_rank=rank, host=socket.gethostname(), device=device)
    element = DTYPES["float32"].size
    rows: list[tuple[str, int, str, float, float, list[float]]] = []
    for op in OPS:
        for size in sizes:
            counts = LAYOUTS[op].buffer_counts(size, element, nranks)
            buffers = Buffers.allocate(counts, torch.float32, device)
            step = Step(op=op, size=size, counts=counts, root=-1)
            args = CallArgs("sum", rank, nranks)
            measurement = Measurement.prepare(step, COLLECTIVES[op], buffers, args, LAYOUTS[op].placements[0])
            plain = bare_call(op, measurement.send, measurement.recv)
            for timer in _distinct(TIMERS, device):
                settings = BenchSettings(warmup_iters=2, iters=iters, check=False, timer=timer)
                resolved = resolve_timer(timer, device)
                ours, bare, ratios = [], [], []
                for round_ in range(rounds):
                    order = ("ours", "bare") if round_ % 2 == 0 else ("bare", "ours")
                    times = {}
                    for who in order:
                        if who == "ours":
                            times[who] = over_ranks(_time(measurement, settings, ctx).time_s, device)
                        else:
                            bare_s = bare_time(plain, resolved, settings.warmup_iters, iters, device)
                            times[who] = over_ranks(bare_s, device)
                    ours.append(times["ours"])
                    bare.append(times["bare"])
                    ratios.append(times["ours"] / times["bare"])
                rows.append((op, size, f"{timer}={resolved}", statistics.median(ours), statistics.median(bare), ratios))
    if rank == 0:
        _print(rows, f"{backend}, {nranks} rank(s), {rounds} interleaved rounds x {iters}")
    dist.destroy_process_group()


def _distinct(timers: tuple[TimerName, ...], device: torch.device) -> list[TimerName]:
    """auto, then each timer auto is not on this device."""
    seen: list[TimerName] = []
    for timer in timers:
        if resolve_timer(timer, device) not in {resolve_timer(t, device) for t in seen}:
            seen.append(timer)
    return seen


def _print(rows: list[tuple[str, int, str, float, float, list[float]]], what: str) -> None:
    print(f"# collbench vs a bare loop timed the same way: {what}")
    print("# per round: time per call averaged over ranks; ratio = collbench / bare; median and IQR over rounds")
    print(f"{'op':>15} {'size (B)':>10} {'timer':>15} {'ours us':>10} {'bare us':>10} {'ratio':>7} {'IQR':>13}")
    for op, size, timer, ours, bare, ratios in rows:
        q1, _, q3 = statistics.quantiles(ratios, n=4)
        print(
            f"{op:>15} {size:>10} {timer:>15} {ours * 1e6:>10.1f} {bare * 1e6:>10.1f} "
            f"{statistics.median(ratios):>7.3f} {q1:>6.3f}-{q3:<6.3f}"
        )
    print("# per op and size band: the median of the per-round ratios, against the target")
    for op in OPS:
        for timer in sorted({row[2] for row in rows}):
            for band, (low, high, target) in BANDS.items():
                ratios = [r for o, s, t, _, _, rs in rows if o == op and t == timer and low <= s <= high for r in rs]
                if not ratios:
                    continue
                ratio = statistics.median(ratios)
                verdict = "-" if target is None else ("ok" if abs(ratio - 1) <= target else "OUTSIDE")
                goal = "" if target is None else f"+-{target:.0%}"
                print(f"{op:>15} {timer:>15} {band:>9} ratio {ratio:.3f} {goal:>5} {verdict}")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--sizes", default=SIZES, help="comma-separated sizes, K/M/G allowed")
    args = parser.parse_args()
    sizes = parse_size_list(args.sizes.split(","))
    port = free_port()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    spawned = (args.ranks, port, args.rounds, args.iters, args.device, sizes)
    mp.spawn(rank_main, args=spawned, nprocs=args.ranks, join=True)


if __name__ == "__main__":
    main()
