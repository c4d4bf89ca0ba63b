"""The config's `check` section: what `collbench check` measures inside an allocation, and in how long."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Literal

from collectives.settings import parse_size_list
from collectives.sizes import parse_size
from jobs.config.isolate_settings import DEFAULT_TOLERANCE, IsolateSettings
from jobs.config.tasks import CHECK_PLAN_MODE

NodeRecord = Literal["daily", "always", "never"]

MAX_PAIR_ROUNDS = 2
"""Two rounds of pairs tell the slow node from its partner (it is slow with both partners, they with one);
more would be isolate's job, not a preflight's."""
MAX_CONFIRM_ROUNDS = 2
"""Each confirming round is a share of the check's budget taken from every round: more is isolate's job."""


def _default_sizes() -> list[int]:
    return [256 << 20]


def _default_local_sizes() -> list[int]:
    return [16 << 20]


@dataclass(kw_only=True, slots=True)
class CheckSettings:
    budget_s: float = 60.0
    """Wall time of the whole check, from start to verdict: the step is cancelled (never the allocation)
    when it runs past it, and each measurement's length and time-out are cut from it."""
    pair_rounds: int = 2
    """Rounds of random pairs after the whole allocation (1 or 2): with 2 a slow node is told from its
    partners; with 1 both nodes of a slow pair are cordoned."""
    confirm_rounds: int = 1
    """Rounds after the pairs that measure every suspect again (a node or rail against a partner held healthy,
    a switch link across healthy nodes, a pair slow once) before it is named: 0 names on the pairs alone. A
    check with no suspect runs none; with 0 a noisy fabric's chance dip can cordon a healthy node."""
    sizes: list[int] = field(default_factory=_default_sizes, metadata={"parse": parse_size_list})
    """Message sizes of every measurement; a group's figure is the best busbw over them. 256 MiB is close to
    the bus bandwidth of a pair of 8-GPU nodes and takes milliseconds; a short budget cannot see what only
    shows at 1 GiB and beyond, nor a fault that comes and goes."""
    probe_size: int = field(default=1 << 20, metadata={"parse": parse_size})
    """Below the smallest of check.sizes, every group measures this first, then grows to check.sizes while
    its round's share of the budget allows (isolate.round_budget_s, set by check): a node too slow to finish
    256 MiB in time (a link shaped to megabits) still gets a figure and is cordoned by it, instead of a round
    that never ends. A healthy group reaches check.sizes and is judged by them."""
    tolerance: float = DEFAULT_TOLERANCE
    """A measurement is slow below (1 - tolerance) x the healthy level."""
    expected_busbw: float = 0.0
    """The healthy level of a pair in GB/s; 0: from the results history (check.from_history), else the
    median of the nodes' medians over the pairs measured."""
    from_history: bool = True
    """With check.expected_busbw 0: the level is the median of the last healthy 2-node runs of all_reduce at
    check.sizes on this cluster in the results history (history.url), when it holds at least 3."""
    seed: int = 0
    """The seed of the random pairs, so a check can be repeated."""
    local_ranks: int = 2
    """check --node: ranks on this one node (one per GPU on a GPU node)."""
    local_sizes: list[int] = field(default_factory=_default_local_sizes, metadata={"parse": parse_size_list})
    """check --node: message sizes of its all_reduce. 16 MiB takes well under a millisecond over NVLink and
    a fraction of a second on the CPU: enough to find a GPU, a link or a driver that fails or hangs, not to
    measure the node's peak (set check.local_min_busbw for a floor)."""
    local_min_busbw: float = 0.0
    """check --node: fail below this busbw in GB/s (the best over check.local_sizes); 0: not checked."""
    local_budget_s: float = 10.0
    """check --node: the most it may take, from start to its one line."""
    node_keep_run: bool = False
    """check --node: keep its run directory under output_dir (the line says where); by default it runs in a
    scratch directory of the system's temp dir, removed when it ends: a prolog runs for every job."""
    node_record: NodeRecord = "daily"
    """check --node in the results history (task check-node): daily records a passing check only when this
    host has no passing one in the last 24 h, a FAIL or UNKNOWN always; always records every check; never
    none. A prolog runs thousands of times a day: daily keeps each node's record without the flood."""

    def isolate_settings(self, within: IsolateSettings | None = None, **derived: Any) -> IsolateSettings:
        """isolate's section as the job runs a check's rounds, the one mapping between the two: mode check and
        the keys check shares with isolate from this section (sizes, probe_size, pair_rounds as rounds,
        confirm_rounds, seed, tolerance, expected_busbw), over `within` (the config's isolate section, whose
        other keys stay), then `derived` (what jobs.cli.check_setup works out: the seed mixed with the job
        id, the level and where it came from, each round's budget)."""
        shared = {
            "mode": CHECK_PLAN_MODE,
            "sizes": list(self.sizes),
            "probe_size": self.probe_size,
            "rounds": self.pair_rounds,
            "confirm_rounds": self.confirm_rounds,
            "seed": self.seed,
            "tolerance": self.tolerance,
            "expected_busbw": self.expected_busbw,
        }
        return replace(within or IsolateSettings(), **{**shared, **derived})

    def problems(self) -> list[str]:
        found = []
        if self.budget_s <= 0:
            found.append(f"check.budget_s: {self.budget_s:g} must be > 0 seconds")
        if not 1 <= self.pair_rounds <= MAX_PAIR_ROUNDS:
            found.append(f"check.pair_rounds: {self.pair_rounds} must be 1 or {MAX_PAIR_ROUNDS}")
        if not 0 <= self.confirm_rounds <= MAX_CONFIRM_ROUNDS:
            found.append(
                f"check.confirm_rounds: {self.confirm_rounds} must be 0 (name on the pairs alone) to "
                f"{MAX_CONFIRM_ROUNDS}"
            )
        if not self.sizes or any(size <= 0 for size in self.sizes):
            found.append(f"check.sizes: {self.sizes} must be a list of positive sizes such as [256M]")
        if self.probe_size <= 0:
            found.append(f"check.probe_size: {self.probe_size} must be a positive size such as 1M")
        if not 0 < self.tolerance < 1:
            found.append(f"check.tolerance: {self.tolerance:g} must be between 0 and 1 (0.15 = 15% under the level)")
        if self.expected_busbw < 0:
            found.append(f"check.expected_busbw: {self.expected_busbw:g} must be 0 (from the pairs) or positive GB/s")
        if not self.local_sizes or any(size <= 0 for size in self.local_sizes):
            found.append(f"check.local_sizes: {self.local_sizes} must be a list of positive sizes such as [16M]")
        if self.local_min_busbw < 0:
            found.append(f"check.local_min_busbw: {self.local_min_busbw:g} must be 0 (not checked) or positive GB/s")
        if self.local_ranks < 1:
            found.append(f"check.local_ranks: {self.local_ranks} must be >= 1")
        if self.local_budget_s <= 0:
            found.append(f"check.local_budget_s: {self.local_budget_s:g} must be > 0 seconds")
        return found
