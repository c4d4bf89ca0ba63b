"""Finished collbench isolate runs (pairs, node grain, two ranks a node) made without running anything, as
tests/jobs/rundir/synthetic.py makes them, where each node may be slowed by a factor of its own: a pair runs at
the pace of its slower node (`factors[host]`, 1.0 by default) times the run's `noise`, so a node at 0.93 is
slowed a little on every pair it is in, and stays above isolate's fixed tolerance (0.85 of the level)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from jobs.rundir.layout import RunDir
from tests.jobs.rundir.synthetic import paced_isolate_run

NODES = 6


def slowed_isolate_run(
    output_dir: Path, factors: Mapping[str, float] | None = None, noise: float = 1.0, nodes: int = NODES
) -> RunDir:
    """An isolate run of `nodes` nodes n1..nN where each pair's busbw is the healthy one x the smaller factor of
    its two nodes x `noise`."""
    factors = factors or {}

    def slower(group: tuple[int, ...]) -> float:
        return 1.0 / (min(factors.get(f"n{node + 1}", 1.0) for node in group) * noise)

    overrides = ["isolate.mode=pairs", "isolate.tolerance=0.15"]
    return paced_isolate_run(output_dir, nodes, slower, overrides, job_id="4000002")
