"""How much memory one rank's sweep really takes at its peak, measured as the kernel counts it.

tracemalloc does not see torch's allocations, so each measurement is a child process of its own: it sets
up gloo, runs collectives.sweep.run_sweep over one op at 8 B (every code path run, every library page it
touches mapped), resets its peak resident set (/proc/self/clear_refs) and reads its resident set, then runs
the op at the size and prints how far the peak (VmHWM) rose above that: what the step itself took at its
peak, which is what the memory guard estimates. One process measures both: a baseline taken in another
process (an 8 B run beside it) could move with whatever that process mapped, and read a peak 70 MiB low
once in CI (304 MiB here in every one of 40 runs).

    python -m tests.collectives.memory_probe --op all_reduce --size 64M [--dtype float32] [--no-check]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from collectives.layout import LAYOUTS
from collectives.settings import BenchSettings
from collectives.sizes import parse_size
from jobs.launchers.local import free_port

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
    """The step's measured peak: the most any rank's max RSS rose above its own after the same op at 8 B."""
    port = free_port()
    with ThreadPoolExecutor(probe.ranks) as pool:
        answers = list(pool.map(lambda rank: _run_rank(probe, probe.size, rank, port, timeout_s), range(probe.ranks)))
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

    from collectives.sweep import RankContext, run_sweep

    rank, nranks = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=nranks)
    ctx = RankContext(rank=rank, nranks=nranks, local_rank=rank, host="probe", device=torch.device("cpu"))
    wrong: list[int] = []
    run_sweep(_settings(args, BASELINE_BYTES), ctx, lambda result: wrong.append(result.wrong))
    Path("/proc/self/clear_refs").write_text("5")  # the peak (VmHWM) starts again from the resident set now
    before = _status_bytes("VmRSS")
    run_sweep(_settings(args, args.size), ctx, lambda result: wrong.append(result.wrong))
    dist.destroy_process_group()
    if any(count > 0 for count in wrong):
        raise SystemExit(f"{args.op} at {args.size} B: {wrong} wrong elements")
    print(_status_bytes("VmHWM") - before)


def _settings(args: argparse.Namespace, size: int) -> BenchSettings:
    return BenchSettings(
        ops=[args.op], sizes=[size], dtype=args.dtype, reduce_op=args.reduce_op, check=args.check,
        warmup_iters=1, iters=1,
    )  # fmt: skip


def _status_bytes(field: str) -> int:
    """A size /proc/self/status gives: VmRSS (resident now), VmHWM (the peak since clear_refs)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


if __name__ == "__main__":
    _main()
