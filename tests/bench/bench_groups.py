"""What creating a round's node groups costs (collbench isolate and check, jobs/runtime/isolate_rounds.py): every
rank creating every group (torch's default: a store barrier over the whole world per group) against each
group created by its own members (use_local_synchronization). Gloo ranks on this machine, pairs of ranks.

    PYTHONPATH=. .venv/bin/python tests/bench/bench_groups.py [--ranks 16] [--rounds 3]

Not part of the test run. Prints seconds per round, the median over the ranks' rounds.
"""

from __future__ import annotations

import argparse
import datetime
import os
import statistics
import time

import torch.distributed as dist
import torch.multiprocessing as mp

from jobs.launchers.local import free_port


def _rank(rank: int, world: int, port: int, rounds: int, local: bool, out: dict[int, list[float]]) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=120))
    took = []
    for number in range(rounds):
        shift = number + 1  # a new pairing each round: rank r with r + shift, as the circle method pairs nodes
        pairs = sorted({tuple(sorted((r, (r + shift) % world))) for r in range(world)})
        seen: set[int] = set()
        groups = [pair for pair in pairs if not (set(pair) & seen) and not seen.update(pair)]  # type: ignore[func-returns-value]
        dist.barrier()
        started = time.perf_counter()
        mine = None
        for pair in groups:
            if local and rank not in pair:
                continue
            group = dist.new_group(list(pair), use_local_synchronization=local)
            mine = group if rank in pair else mine
        took.append(time.perf_counter() - started)
        if mine is not None:
            dist.destroy_process_group(mine)
    out[rank] = took
    dist.destroy_process_group()


def measure(world: int, rounds: int, local: bool) -> float:
    with mp.Manager() as manager:
        out = manager.dict()
        mp.spawn(_rank, args=(world, free_port(), rounds, local, out), nprocs=world, join=True)
        return statistics.median(t for times in out.values() for t in times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, nargs="+", default=[8, 16, 32])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print("| ranks | groups a round | every rank creates every group | members only |")
    print("|---|---|---|---|")
    for world in args.ranks:
        world_s = measure(world, args.rounds, local=False)
        local_s = measure(world, args.rounds, local=True)
        print(f"| {world} | {world // 2} | {world_s * 1000:.0f} ms | {local_s * 1000:.0f} ms |", flush=True)


if __name__ == "__main__":
    main()
