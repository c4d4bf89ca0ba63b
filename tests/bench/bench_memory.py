"""The memory guard's estimate against the peak each op really reaches, one op at a time.

    .venv/bin/python tests/bench/bench_memory.py [--size 256M] [--dtype float32] [--ops all_reduce,...] [--no-check]
    python tests/bench/bench_memory.py --device cuda --config ib-h100 [--graph-launches 5]   (gpu_check.sh)

Not part of the test run. On the CPU (about 10 s per op at 256 MiB on a 2-core machine, and twice the size's
memory and more at once) each op runs in child processes of its own, at 8 B and then at the size, over gloo
at world size 1 (2 for sendrecv, which gloo cannot send to itself); the peak is how far the max RSS rose above
the resident set after the 8 B step (tests/collectives/memory_probe.py); the guard is
collectives.plan.peak_bytes_per_rank for gloo.

On a GPU the config's bench section (ib-h100: bfloat16 from 8 B to 8G) runs op by op over NCCL at world size
1 in this process, and each op's peak is torch's own count (torch.cuda.max_memory_allocated and
max_memory_reserved) beside the guard for NCCL at world size 1. NCCL's own buffers are outside torch's
counts: the guard leaves collectives.device_memory.NCCL_ROOM_BYTES for them.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import replace

from collectives.layout import LAYOUTS, OpName
from collectives.plan import peak_bytes_per_rank
from collectives.settings import BenchSettings
from collectives.sizes import format_size, parse_size
from collectives.sweep import RankContext
from tests.collectives.memory_probe import Probe, peak_bytes

MIB = 1 << 20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--size", type=parse_size, default=256 * MIB, help="cpu: the one size measured")
    parser.add_argument("--dtype", default="float32", help="cpu: the element type")
    parser.add_argument("--ops", default="", help="the ops, comma-separated (default: all; cuda: the config's)")
    parser.add_argument("--no-check", dest="check", action="store_false")
    parser.add_argument("--config", default="ib-h100", help="cuda: the config whose bench section runs")
    parser.add_argument("--graph-launches", type=int, default=0, help="cuda: capture in a CUDA graph, replay N")
    args = parser.parse_args()
    if args.device == "cuda":
        on_gpu(args)
    else:
        on_cpu(args)


def on_cpu(args: argparse.Namespace) -> None:
    print(f"# {format_size(args.size)} of {args.dtype} per op, check {'on' if args.check else 'off'}, gloo, CPU")
    print(f"{'op':>15} {'ranks':>5} {'guard MiB':>10} {'measured MiB':>13} {'measured/guard':>15}")
    for op in _ops(args.ops or ",".join(LAYOUTS)):
        probe = Probe(op, args.size, args.dtype, args.check)
        settings = BenchSettings(ops=[op], sizes=[args.size], dtype=args.dtype, check=args.check)
        guard, _ = peak_bytes_per_rank(settings, probe.ranks, "gloo")
        measured = peak_bytes(probe)
        print(
            f"{op:>15} {probe.ranks:>5} {guard / MIB:>10.1f} {measured / MIB:>13.1f} {measured / guard:>15.3f}",
            flush=True,
        )


def on_gpu(args: argparse.Namespace) -> None:
    import torch
    import torch.distributed as dist

    from jobs.config.model import load_config
    from jobs.launchers.local import free_port

    bench = load_config(args.config).bench
    bench = replace(bench, check=args.check, cuda_graph_launches=args.graph_launches)
    device = torch.device("cuda", 0)
    torch.cuda.set_device(device)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()))
    dist.init_process_group("nccl", rank=0, world_size=1, device_id=device)
    ctx = RankContext(rank=0, nranks=1, local_rank=0, host="gpu", device=device)
    graphs = f", CUDA graphs x{args.graph_launches}" if args.graph_launches else ""
    check = "on" if bench.check else "off"
    sweep = f"{bench.dtype} from {format_size(bench.min_bytes)} to {format_size(bench.max_bytes)}"
    print(f"# {args.config}'s bench: {sweep}, check {check}, NCCL at world size 1{graphs}")
    columns = ("op", "largest", "guard GiB", "allocated GiB", "reserved GiB", "#wrong", "verdict")
    print(" ".join(f"{name:>14}" for name in columns))
    failed = False
    for op in _ops(args.ops or ",".join(bench.ops)):
        settings = replace(bench, ops=[op])
        guard, step = peak_bytes_per_rank(settings, 1, "nccl")
        allocated, reserved, wrong, rows = _gpu_peak(settings, ctx)
        ok = reserved <= guard and wrong == 0 and rows > 0
        failed |= not ok
        figures = [op, format_size(step.size) if step else "-", f"{guard / 2**30:.2f}", f"{allocated / 2**30:.2f}"]
        figures += [f"{reserved / 2**30:.2f}", str(wrong), "PASS" if ok else "FAIL"]
        print(" ".join(f"{figure:>14}" for figure in figures), flush=True)
    free, total = torch.cuda.mem_get_info(device)
    print(f"# device memory in use now (torch's cache emptied between ops; NCCL's own included): "
          f"{(total - free) / 2**30:.2f} of {total / 2**30:.2f} GiB")  # fmt: skip
    dist.destroy_process_group()
    raise SystemExit(1 if failed else 0)


def _ops(words: str) -> list[OpName]:
    ops = words.split(",")
    unknown = [op for op in ops if op not in LAYOUTS]
    if unknown:
        raise SystemExit(f"--ops: {', '.join(unknown)} not one of {', '.join(LAYOUTS)}")
    return ops  # type: ignore[return-value]


def _gpu_peak(settings: BenchSettings, ctx: RankContext) -> tuple[int, int, int, int]:
    """(peak bytes allocated, peak bytes reserved, wrong elements, rows) of one op's sweep, by torch's count."""
    import torch

    from collectives.sweep import run_sweep

    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats(ctx.device)
    wrong: list[int] = []
    run_sweep(settings, ctx, lambda result: wrong.append(result.wrong))
    allocated, reserved = torch.cuda.max_memory_allocated(ctx.device), torch.cuda.max_memory_reserved(ctx.device)
    return allocated, reserved, sum(wrong), len(wrong)


if __name__ == "__main__":
    main()
