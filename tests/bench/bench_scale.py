"""How `collbench report`, `status` and `logs` scale: a synthetic run of 4096 ranks x 20 sizes.

    .venv/bin/python tests/bench/bench_scale.py [--ranks 4096] [--sizes 20] [--log-lines 100 400]
        [--before CHECKOUT]

Not part of the test run. Writes the run directory (results, logs, status, heartbeats, env files, as
ranks write them, through the run directory's records) under a temporary folder, then times each command
as a separate process and reads its peak memory (max RSS) from the kernel. It builds the run once per log
length, so that the memory of `logs` can be seen not to grow with ranks x log lines.

--before CHECKOUT times the same commands on the same run with the collbench of another checkout (e.g.
`git worktree add /tmp/before <commit>`) and prints both, before and after, side by side.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from collectives.layout import LAYOUTS
from collectives.results import RankResult
from jobs.config.model import load_config, to_yaml
from jobs.rundir.layout import RunDir
from jobs.rundir.records.rank import HEARTBEAT, STATUS, Beat, HeartbeatPhase, RankState, RankStatus
from jobs.rundir.writing import write_json_atomic

REPO = Path(__file__).resolve().parents[2]
SLOW_RANK = 4000


def build_run(root: Path, ranks: int, sizes: int, log_lines: int) -> RunDir:
    cfg = load_config(
        None, [f"ranks={ranks}", "bench.ops=[all_reduce]", "bench.min_bytes=8", f"bench.max_bytes={8 << (sizes - 1)}"]
    )
    run = RunDir.create(root, "local")
    run.config_file.write_text(to_yaml(cfg))
    run.update_meta(run_id=run.run_id, launcher="local", world_size=ranks, nodes=max(1, ranks // 8), job_id="0")
    now = time.time()
    for rank in range(ranks):
        host = f"n{rank // 8:04d}"
        _write_results(run, rank, host, ranks, sizes, now)
        _write_log(run, rank, host, log_lines, now)
        status = RankStatus(
            rank=rank, host=host, pid=1000 + rank, device="cuda:0", state=RankState.OK, started=now, updated=now
        )
        STATUS.write(run.rank_status(rank), status)
        HEARTBEAT.write(run.rank_heartbeat(rank), Beat(rank=rank, host=host, phase=HeartbeatPhase.DONE, at=now))
        env = {"hostname": host, "torch": "2.13.0", "nccl": "2.21.5", "variables": {"NCCL_IB_HCA": "mlx5_0"}}
        write_json_atomic(run.rank_env(rank), env)
    return run


def _write_results(run: RunDir, rank: int, host: str, ranks: int, sizes: int, now: float) -> None:
    lines = []
    for step in range(sizes):
        size = 8 << step
        time_us = 10.0 + size / 1e4 * (1.5 if rank == SLOW_RANK else 1.0)
        algbw, busbw = LAYOUTS["all_reduce"].bandwidths(size // 4, 4, ranks, time_us / 1e6)
        lines.append(RankResult(
            op="all_reduce", size=size, count=size // 4, dtype="float32", redop="sum", root=-1, in_place=True,
            rank=rank, local_rank=rank % 8, host=host, nranks=ranks, iters=20, time_us=time_us, algbw=algbw,
            busbw=busbw, wrong=0, times_us=[time_us] * 20, min_us=time_us, median_us=time_us, p99_us=time_us,
            max_us=time_us, started_at=now + step + (0.05 if rank == SLOW_RANK else 0.0),
        ).to_json())  # fmt: skip
    run.rank_results(rank).write_text("\n".join(lines) + "\n")


def _write_log(run: RunDir, rank: int, host: str, log_lines: int, now: float) -> None:
    prefix = f"| INFO    | rank={rank} local={rank % 8} host={host} | "
    log = [
        f"{time.strftime('%Y-%m-%dT%H:%M:%S', time.gmtime(now + i * 0.01))}.{rank % 1000:06d}+0000 {prefix}line {i}"
        for i in range(log_lines)
    ]
    run.rank_log(rank).write_text("\n".join(log) + "\n")


def timed(argv: list[str], checkout: Path) -> tuple[float, float, int]:
    """(seconds, peak RSS in MiB, output bytes) of one collbench command run from `checkout`."""
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    start = time.perf_counter()
    with tempfile.TemporaryFile() as sink:
        proc = subprocess.Popen(
            [sys.executable, "-m", "jobs.cli", *argv], stdout=sink, stderr=subprocess.DEVNULL, cwd=checkout, env=env
        )
        _, _, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
        size = sink.seek(0, os.SEEK_END)
    return seconds, usage.ru_maxrss / 1024, size


def commands(run: RunDir, ranks: int) -> list[tuple[str, list[str]]]:
    slow = str(min(SLOW_RANK, ranks - 1))
    return [
        (f"logs --rank {slow}", ["logs", str(run.path), "--rank", slow]),
        ("logs --rank 0-7", ["logs", str(run.path), "--rank", "0-7"]),
        ("logs (every rank, merged)", ["logs", str(run.path)]),
        ("report", ["report", str(run.path)]),
        ("report --format json", ["report", str(run.path), "--format", "json"]),
        ("status", ["status", str(run.path)]),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=4096)
    parser.add_argument("--sizes", type=int, default=20)
    parser.add_argument("--log-lines", type=int, nargs="+", default=[100, 400])
    parser.add_argument("--before", type=Path, help="a checkout of an earlier collbench to time beside this one")
    args = parser.parse_args()
    sides = [("after", REPO)] + ([("before", args.before.resolve())] if args.before else [])
    print(f"# {args.ranks} ranks x {args.sizes} sizes; each command a separate process; seconds and max RSS MiB")
    header = f"{'log lines':>9} {'command':<28}" + "".join(
        f" {f'{side} s':>9} {f'{side} MiB':>11}" for side, _ in sides
    )
    print(header + f" {'output KiB':>11}")
    with tempfile.TemporaryDirectory(prefix="collbench-scale-") as root:
        for log_lines in args.log_lines:
            started = time.perf_counter()
            run = build_run(Path(root) / f"lines{log_lines}", args.ranks, args.sizes, log_lines)
            print(f"# built {run.path.name} ({log_lines} log lines per rank) in {time.perf_counter() - started:.1f} s")
            for name, argv in commands(run, args.ranks):
                cells, size = "", 0
                for _, checkout in reversed(sides):  # before first, so the page cache favours neither
                    seconds, rss, size = timed(argv, checkout)
                    cells = f" {seconds:>9.2f} {rss:>11.1f}" + cells
                print(f"{log_lines:>9} {name:<28}{cells} {size / 1024:>11.1f}", flush=True)


if __name__ == "__main__":
    main()
