"""How `collbench logs --rank`, `report` and `status` scale: a synthetic run of 4096 ranks x 20 sizes.

    .venv/bin/python tests/bench/bench_scale.py [--ranks 4096] [--sizes 20] [--log-lines 100 400]

Not part of the test run. Writes the run directory (results, logs, status, heartbeats, env files, as
ranks write them) under a temporary folder, then times each command as a separate process and reads
its peak memory (max RSS) from the kernel. It builds the run twice, with two log lengths, so that the
memory of `logs` can be seen not to grow with ranks x log lines.
"""

from __future__ import annotations

import argparse
import json
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


def build_run(root: Path, ranks: int, sizes: int, log_lines: int) -> RunDir:
    cfg = load_config(
        None, [f"ranks={ranks}", "bench.ops=[all_reduce]", "bench.min_bytes=8", f"bench.max_bytes={8 << (sizes - 1)}"]
    )
    run = RunDir.create(root, "local")
    run.config_file.write_text(to_yaml(cfg))
    run.update_meta(run_id=run.run_id, launcher="local", world_size=ranks, nodes=ranks // 8, job_id="0")
    now = time.time()
    for rank in range(ranks):
        host = f"n{rank // 8:04d}"
        lines = []
        for step in range(sizes):
            size = 8 << step
            time_us = 10.0 + size / 1e4 * (1.5 if rank == 4000 else 1.0)
            algbw, busbw = LAYOUTS["all_reduce"].bandwidths(size // 4, 4, ranks, time_us / 1e6)
            lines.append(RankResult(
                op="all_reduce", size=size, count=size // 4, dtype="float32", redop="sum", root=-1, in_place=True,
                rank=rank, local_rank=rank % 8, host=host, nranks=ranks, iters=20, time_us=time_us, algbw=algbw,
                busbw=busbw, wrong=0, times_us=[time_us] * 20, min_us=time_us, median_us=time_us, p99_us=time_us,
                max_us=time_us, started_at=now + step + (0.05 if rank == 4000 else 0.0),
            ).to_json())  # fmt: skip
        run.rank_results(rank).write_text("\n".join(lines) + "\n")
        prefix = f"| INFO    | rank={rank} local={rank % 8} host={host} | "
        log = [
            f"{time.strftime('%Y-%m-%dT%H:%M:%S', time.gmtime(now + i * 0.01))}.{rank % 1000:06d}+0000 {prefix}line {i}"
            for i in range(log_lines)
        ]
        run.rank_log(rank).write_text("\n".join(log) + "\n")
        status = {"rank": rank, "host": host, "pid": 1000 + rank, "device": "cuda:0", "state": "ok", "updated": now}
        run.rank_status(rank).write_text(json.dumps(status))
        beat = {"rank": rank, "host": host, "phase": "done", "at": now}
        run.rank_heartbeat(rank).write_text(json.dumps(beat))
        env = {"hostname": host, "torch": "2.13.0", "nccl": "2.21.5", "variables": {"NCCL_IB_HCA": "mlx5_0"}}
        run.rank_env(rank).write_text(json.dumps(env))
    return run


def timed(argv: list[str]) -> tuple[float, float, int]:
    """(seconds, peak RSS in MiB, output bytes) of one collbench command."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as sink:
        proc = subprocess.Popen([sys.executable, "-m", "jobs.cli", *argv], stdout=sink, stderr=subprocess.DEVNULL)
        _, _, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
        size = sink.seek(0, os.SEEK_END)
    return seconds, usage.ru_maxrss / 1024, size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=4096)
    parser.add_argument("--sizes", type=int, default=20)
    parser.add_argument("--log-lines", type=int, nargs="+", default=[100, 400])
    args = parser.parse_args()
    print(f"# {args.ranks} ranks x {args.sizes} sizes; each command a separate process")
    print(f"{'log lines/rank':>14} {'command':<32} {'seconds':>8} {'max RSS MiB':>12} {'output KiB':>11}")
    with tempfile.TemporaryDirectory(prefix="collbench-scale-") as root:
        for log_lines in args.log_lines:
            started = time.perf_counter()
            run = build_run(Path(root) / f"lines{log_lines}", args.ranks, args.sizes, log_lines)
            print(f"# built {run.path.name} ({log_lines} log lines per rank) in {time.perf_counter() - started:.1f} s")
            for name, argv in (
                ("logs --rank 4000", ["logs", str(run.path), "--rank", str(min(4000, args.ranks - 1))]),
                ("logs (every rank, merged)", ["logs", str(run.path)]),
                ("report", ["report", str(run.path)]),
                ("status", ["status", str(run.path)]),
            ):
                seconds, rss, size = timed(argv)
                print(f"{log_lines:>14} {name:<32} {seconds:>8.2f} {rss:>12.1f} {size / 1024:>11.1f}")


if __name__ == "__main__":
    main()
