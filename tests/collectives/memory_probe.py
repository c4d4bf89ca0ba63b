"""How much memory one rank's sweep really takes at its peak, measured as the kernel counts it.

tracemalloc does not see torch's allocations, so each measurement is a child process of its own: it sets
up gloo, runs collectives.sweep.run_sweep over one op at one size and prints its maximum resident set
(getrusage's ru_maxrss). The same run at 8 B is the baseline (the interpreter, torch, the process group):
the difference is what the step itself took at its peak, which is what the memory guard estimates.

    python -m tests.collectives.memory_probe --op all_reduce --size 64M [--dtype float32] [--no-check]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from collectives.layout import LAYOUTS
from collectives.sizes import parse_size

ROOT = Path(__file__).resolve().parents[2]
BASELINE_BYTES = 8


@dataclass(frozen=True, slots=True)
class Probe:
    """One sweep of one op at one size, on `ranks` gloo ranks of this host."""

    op: str
    size: int
    dtype: str = "float32"
    check: bool = True
    reduce_op: str = "sum"

    @property
    def ranks(self) -> int:
        return max(1, LAYOUTS[self.op].gloo_min_ranks)

    def argv(self, size: int) -> list[str]:
        words = ["--op", self.op, "--size", str(size), "--dtype", self.dtype, "--reduce-op", self.reduce_op]
        return words + ([] if self.check else ["--no-check"])


def peak_bytes(probe: Probe, timeout_s: float = 300.0) -> int:
    """The step's measured peak: the most any rank's max RSS rose above the same run at 8 B (both runs at
    once: each is its own processes, with its own max RSS)."""
    with ThreadPoolExecutor(2) as pool:
        large, baseline = pool.map(lambda size: _max_rss(probe, size, timeout_s), (probe.size, BASELINE_BYTES))
    return large - baseline


def _max_rss(probe: Probe, size: int, timeout_s: float) -> int:
    """The largest max RSS (bytes) of the run's ranks, each a child started here."""
    port = _free_port()
    with ThreadPoolExecutor(probe.ranks) as pool:
        answers = list(pool.map(lambda rank: _run_rank(probe, size, rank, port, timeout_s), range(probe.ranks)))
    return max(answers)


def _run_rank(probe: Probe, size: int, rank: int, port: int, timeout_s: float) -> int:
    env = {
        **os.environ,
        "RANK": str(rank),
        "WORLD_SIZE": str(probe.ranks),
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(port),
        "OMP_NUM_THREADS": "1",
        "PYTHONPATH": str(ROOT),
    }
    done = subprocess.run(
        [sys.executable, "-m", "tests.collectives.memory_probe", *probe.argv(size)],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"memory probe {probe} at {size} B, rank {rank}: exit {done.returncode}\n{done.stderr}")
    return int(done.stdout.split()[-1])


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--op", required=True)
    parser.add_argument("--size", required=True, type=parse_size)
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--reduce-op", default="sum")
    parser.add_argument("--no-check", dest="check", action="store_false")
    args = parser.parse_args()

    import torch
    import torch.distributed as dist

    from collectives.settings import BenchSettings
    from collectives.sweep import RankContext, run_sweep

    rank, nranks = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=nranks)
    settings = BenchSettings(
        ops=[args.op],
        sizes=[args.size],
        dtype=args.dtype,
        reduce_op=args.reduce_op,
        check=args.check,
        warmup_iters=1,
        iters=1,
    )
    ctx = RankContext(rank=rank, nranks=nranks, local_rank=rank, host="probe", device=torch.device("cpu"))
    wrong: list[int] = []
    run_sweep(settings, ctx, lambda result: wrong.append(result.wrong))
    dist.destroy_process_group()
    if any(count > 0 for count in wrong):
        raise SystemExit(f"{args.op} at {args.size} B: {wrong} wrong elements")
    print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)


if __name__ == "__main__":
    _main()
