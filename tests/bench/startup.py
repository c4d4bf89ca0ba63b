"""Start-up cost of a command: median wall time and peak RSS over N runs. Not part of the test run.

    .venv/bin/python tests/bench/startup.py [--runs 15] [--warmup 2] -- .venv/bin/python -m jobs.cli status RUN

Each run is a fresh process; its wall time is taken around fork/exec and wait, its peak RSS (maxrss, in
MB) from the kernel's accounting of that one child (wait4). The output goes to /dev/null, so what is
measured is the command's own work: the imports, reading the run directory and, for a Slurm run, asking
Slurm. Pass the environment the command needs (SLURM_CONF, PYTHONPATH) as usual.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Sample:
    wall_s: float
    rss_mb: float
    returncode: int


def run_once(command: list[str]) -> Sample:
    started = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)  # reaped here: keep Popen from waiting again
    return Sample(wall, usage.ru_maxrss / 1024, child.returncode)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=15, help="measured runs (default 15)")
    parser.add_argument("--warmup", type=int, default=2, help="unmeasured runs first, to warm the page cache")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the command, after --")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command or args.runs < 1:
        parser.error("give --runs >= 1 and a command after --")
    for _ in range(args.warmup):
        run_once(command)
    samples = [run_once(command) for _ in range(args.runs)]
    walls = [s.wall_s for s in samples]
    rss = [s.rss_mb for s in samples]
    codes = sorted({s.returncode for s in samples})
    print(f"command: {' '.join(command)}")
    print(
        f"runs {len(samples)}: wall median {statistics.median(walls):.3f} s (min {min(walls):.3f}, "
        f"max {max(walls):.3f}); peak RSS median {statistics.median(rss):.1f} MB (max {max(rss):.1f}); "
        f"exit status {', '.join(map(str, codes))}"
    )
    return 0 if codes == [0] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
