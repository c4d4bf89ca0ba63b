"""The config's `isolate` section: what `collbench isolate` measures and how it judges."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Literal

from collectives.layout import OpName
from collectives.settings import BenchSettings, parse_size_list
from collectives.sizes import parse_size

IsolateMode = Literal["auto", "pairs", "bisect", "random", "check"]

PAIRS_MAX_NODES = 64
"""auto runs pairs up to this many nodes: N-1 rounds, each a communicator set-up (about 1-3 s with NCCL)
plus the measurement (about 0.2 s for 1 GiB on 2 x 8 GPUs at 400 Gb/s): 63 rounds take a few minutes.
Beyond it, random matchings keep the job short."""

BISECT_MIN_NODES = 4
"""Bisect measures halves against each other: with fewer nodes a half is one node, and pairs mode costs
no more rounds."""


def _default_sizes() -> list[int]:
    return [1 << 30]


DEFAULT_TOLERANCE = 0.15
"""Slow means more than 15% under the healthy level: above run-to-run noise of a healthy IB pair (a few
percent), below what one degraded link or a port trained to half rate costs (50%)."""


@dataclass(kw_only=True, slots=True)
class IsolateSettings:
    mode: IsolateMode = "auto"
    """pairs: every pair of nodes once (circle method, N-1 rounds); bisect: all nodes, then halves, recursing
    into the short ones (about log2 N rounds for one bad node); random: isolate.rounds random perfect
    matchings from isolate.seed; auto: pairs up to isolate.pairs_max_nodes nodes, random beyond; check: what
    collbench check runs (the whole allocation, then isolate.rounds rounds of random pairs, see check.*)."""
    pairs_max_nodes: int = PAIRS_MAX_NODES
    """The most nodes auto tests pair by pair."""
    op: OpName = "all_reduce"
    """The collective each group runs."""
    sizes: list[int] = field(default_factory=_default_sizes, metadata={"parse": parse_size_list})
    """Message sizes each group measures; its figure is the best busbw over them. The default, 1 GiB, is where
    all_reduce over 2 nodes x 8 GPUs reaches its bus bandwidth on InfiniBand (below about 256 MiB latency and
    protocol changes still show, and a healthy pair would look slow)."""
    rounds: int = 10
    """random: how many matchings (each node is measured against this many partners)."""
    seed: int = 0
    """random: the seed of the matchings, so a run can be repeated."""
    tolerance: float = DEFAULT_TOLERANCE
    """A measurement is slow below (1 - tolerance) x the healthy level."""
    confirm_rounds: int = 2
    """pairs and random: after the plan, rounds that measure again every pair that would be named a bad link
    (one figure is one sample: a healthy pair can fall under the level once on a noisy fabric), disjoint
    pairs at once; a pair measured again is judged by its last figure. Pairs that share a node take a round
    each: those beyond this many rounds keep their one figure. 0: name a link from its one figure."""
    expected_busbw: float = 0.0
    """The healthy level in GB/s; 0: from the results history (isolate.from_history), else the median of the
    nodes' median busbw (bisect: the best figure so far)."""
    from_history: bool = True
    """With isolate.expected_busbw 0 (pairs and random): collbench isolate takes the level from the results
    history, the median of the last healthy 2-node runs of isolate.op at isolate.sizes on this cluster, when it
    holds at least 3; else the run's own median."""
    expected_from: str = ""
    """Where the level came from, in words, for the verdict: set by collbench isolate when it consults the
    history (not to be set by hand)."""
    round_budget_s: float = 120.0
    """The most one round may take, in seconds: each group measures its smallest size first (isolate.sizes
    in increasing order) and stops growing when the next size, projected from the last one measured, would
    run past it, so a very slow member still ends its round with a figure. collbench check sets it to each
    round's share of check.budget_s. 0: no bound (every size, in the order given)."""
    probe_size: int = field(default=1 << 20, metadata={"parse": parse_size})
    """With isolate.round_budget_s > 0 and this below the smallest of isolate.sizes, every group measures it
    first: a member too slow to finish the large sizes still has a figure. A group's figure is its best busbw
    over the sizes it measured, so a group that reached its large sizes is judged by them (the probe is
    lower on a healthy fabric, latency still shows at 1 MiB), and one stopped at the probe by the probe's
    figure: far under the level when it was stopped by a very slow member, but possibly under it too for a
    healthy group stopped only because the round's budget is too short for its sizes (raise
    isolate.round_budget_s, or lower isolate.sizes, when healthy groups stop at the probe)."""

    def resolved_mode(self, nodes: int) -> IsolateMode:
        if self.mode != "auto":
            return self.mode
        return "pairs" if nodes <= self.pairs_max_nodes else "random"

    def measured_sizes(self) -> list[int]:
        """The sizes every group measures, in order: isolate.sizes as given when rounds are unbounded; else
        smallest first, with isolate.probe_size before them when it is smaller."""
        if self.round_budget_s <= 0:
            return list(self.sizes)
        probe = [self.probe_size] if self.sizes and 0 < self.probe_size < min(self.sizes) else []
        return sorted({*probe, *self.sizes})

    def bench(self, base: BenchSettings) -> BenchSettings:
        """What every group's sweep measures: the bench section with isolate's op and measured sizes."""
        sizes = self.measured_sizes()
        return replace(base, ops=[self.op], sizes=sizes, min_bytes=min(sizes), max_bytes=max(sizes))

    def round_deadline(self, started: float) -> float:
        """When a round that started at `started` (a time.time() value) must be done: run_sweep's deadline;
        0 when rounds are unbounded."""
        return started + self.round_budget_s if self.round_budget_s > 0 else 0.0

    def problems(self, nodes: int) -> list[str]:
        found = []
        if not self.sizes:
            found.append("isolate.sizes: the list is empty; give at least one size such as [1G]")
        found += [
            f"isolate.sizes[{i}]: {size} must be a positive size" for i, size in enumerate(self.sizes) if size <= 0
        ]
        if not 0 < self.tolerance < 1:
            found.append(f"isolate.tolerance: {self.tolerance:g} must be between 0 and 1 (0.15 = 15% under the level)")
        if self.expected_busbw < 0:
            found.append(f"isolate.expected_busbw: {self.expected_busbw:g} must be 0 (from the run) or positive GB/s")
        if self.rounds < 1:
            found.append(f"isolate.rounds: {self.rounds} must be >= 1")
        if self.confirm_rounds < 0:
            found.append(f"isolate.confirm_rounds: {self.confirm_rounds} must be 0 (no confirmation) or more")
        if self.round_budget_s < 0:
            found.append(f"isolate.round_budget_s: {self.round_budget_s:g} must be 0 (no bound) or positive seconds")
        if self.probe_size <= 0:
            found.append(f"isolate.probe_size: {self.probe_size} must be a positive size such as 1M")
        if self.pairs_max_nodes < 2:
            found.append(f"isolate.pairs_max_nodes: {self.pairs_max_nodes} must be >= 2")
        if nodes < 2:
            found.append(f"nodes: {nodes}; isolate needs at least 2 nodes to measure a link")
        elif self.resolved_mode(nodes) == "bisect" and nodes < BISECT_MIN_NODES:
            found.append(
                f"isolate.mode: bisect needs at least {BISECT_MIN_NODES} nodes, this job has {nodes}; allowed: pairs"
            )
        return found
