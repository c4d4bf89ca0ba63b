"""The rounds of one isolate run, driven by their figures: live inside the job, replayed from the results
afterwards. Both go through `Rounds`, so the verdict sees exactly the rounds the job ran (bisect decides
each round from the figures of the ones before). Plain data: no torch, no Slurm.

A group's figure is the best busbw over its sizes, from the row every rank of the group reported (the
plateau: a degraded link is slow at every size, a healthy one reaches its bandwidth at the largest).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from collectives.results import SummaryRow
from jobs.config.isolate_settings import IsolateSettings
from jobs.isolate.bisect import Bisect
from jobs.isolate.check_plan import WHOLE_ROUND, check_plan
from jobs.isolate.confirm import LONGEST, ConfirmedPlan
from jobs.isolate.plan import Group, Round, pairs_plan, random_plan
from jobs.isolate.verdict import EVERY_RAIL, Measured
from slurm.hostlist import BadHostlist, expand_hostlist, readable_hostlist

GroupKey = tuple[int, Group, int]
"""(round, the group's nodes, its rail): a group measured, as the results lines carry it (rail EVERY_RAIL:
every rank of the nodes)."""


class Planner(Protocol):
    def next_round(self) -> Round | None: ...

    def record(self, group: Group, busbw: float) -> None: ...


def planner_for(
    settings: IsolateSettings, n: int, leaves: Sequence[str | None] = (), measured: list[Measured] | None = None
) -> Planner:
    """The mode's planner; `measured`: the list the rounds fill, which the slow pairs are judged from."""
    planner = PLANNERS[settings.resolved_mode(n)]
    return planner(settings, n, leaves, measured if measured is not None else [])


def _bisect(settings: IsolateSettings, n: int, leaves: Sequence[str | None], measured: list[Measured]) -> Planner:
    return Bisect(n, tolerance=settings.tolerance, expected_busbw=settings.expected_busbw)


PlanOf = Callable[[IsolateSettings, int, Sequence[str | None]], list[Round]]
"""(settings, node count, each node's leaf) -> the rounds known in advance."""


def _confirmed(plan_of: PlanOf, whole_round: int = 0) -> PlannerFor:
    """A planner of `plan_of`'s rounds whose suspects are measured again after them (pairs, random and check;
    `whole_round`: the plan's round of every node, check's, which no suspect is judged from)."""

    def planner(settings: IsolateSettings, n: int, leaves: Sequence[str | None], measured: list[Measured]) -> Planner:
        known = {node: leaf for node, leaf in enumerate(leaves) if leaf is not None}
        return ConfirmedPlan(
            plan_of(settings, n, leaves),
            settings.tolerance,
            settings.expected_busbw,
            settings.confirm_rounds,
            measured,
            known or None,
            whole_round,
            longest=1 if whole_round else LONGEST,  # check's rounds share its budget: never longer
        )

    return planner


PlannerFor = Callable[[IsolateSettings, int, Sequence[str | None], list[Measured]], Planner]
PLANNERS: dict[str, PlannerFor] = {
    "bisect": _bisect,
    "check": _confirmed(lambda settings, n, leaves: check_plan(n, settings.rounds, settings.seed, leaves), WHOLE_ROUND),
    "random": _confirmed(lambda settings, n, leaves: random_plan(n, settings.rounds, settings.seed)),
    "pairs": _confirmed(lambda settings, n, leaves: pairs_plan(n)),
}
"""isolate.mode, resolved (auto is pairs or random) -> its planner."""


def group_label(round_no: int, hosts: Sequence[str], group: Group, rail: int = EVERY_RAIL) -> str:
    on_rail = f" rail {rail}" if rail != EVERY_RAIL else ""
    return f"round {round_no}: {readable_hostlist(hosts[node] for node in group)}{on_rail}"


def group_figures(rows: Iterable[SummaryRow], hosts: Sequence[str] = ()) -> dict[GroupKey, float]:
    """(round, nodes, rail) -> the group's best busbw over the rows every member reported. Rows of results
    written before the lines carried their round and nodes are placed by their label and `hosts`."""
    figures: dict[GroupKey, float] = {}
    for row in rows:
        if not row.group or not row.complete:
            continue
        key = (row.round, tuple(row.nodes), row.rail) if row.round else _key_of_label(row.group, hosts)
        if key is not None:
            figures[key] = max(figures.get(key, 0.0), row.busbw)
    return figures


def _key_of_label(label: str, hosts: Sequence[str]) -> GroupKey | None:
    """'round 2: n[1,4]' (results format 1, which had no round nor nodes) -> (2, (0, 3)) for hosts n1..n4."""
    head, _, names = label.partition(": ")
    number = head.removeprefix("round ")
    index = {host: node for node, host in enumerate(hosts)}
    try:
        nodes = [index.get(host) for host in expand_hostlist(names)]
    except BadHostlist:
        return None
    if not number.isdigit() or not nodes or None in nodes:
        return None
    return int(number), tuple(sorted(node for node in nodes if node is not None)), EVERY_RAIL


@dataclass(slots=True)
class Rounds:
    settings: IsolateSettings
    hosts: list[str]
    """Node index -> host, in the job's node order."""
    rails: list[int] = field(default_factory=lambda: [EVERY_RAIL])
    """The rails every node group is measured on, one group a rail, all at once (EVERY_RAIL: one group of
    every rank of its nodes)."""
    leaves: Sequence[str | None] = ()
    """Node index -> its leaf switch (None: not known): check plans pairs within and across leaves."""
    planner: Planner = field(init=False)
    measured: list[Measured] = field(default_factory=list)
    current: Round | None = None
    round_no: int = 0
    unfinished: list[Group] = field(default_factory=list)
    """Groups of the last round handed out that have no figure: the run stopped there."""

    def __post_init__(self) -> None:
        self.planner = planner_for(self.settings, len(self.hosts), self.leaves, self.measured)

    @property
    def mode(self) -> str:
        return self.settings.resolved_mode(len(self.hosts))

    @property
    def confirm_rounds(self) -> int:
        """The rounds the planner may add after its plan to measure suspects again (bisect: none)."""
        return self.planner.confirm_rounds if isinstance(self.planner, ConfirmedPlan) else 0

    @property
    def judged(self) -> list[Measured]:
        """What the verdict weighs: every group but a plan's whole-allocation round (collbench check's: it holds
        every node, and would count a bad node's slowness against every other)."""
        whole = self.planner.whole_round if isinstance(self.planner, ConfirmedPlan) else 0
        return [m for m in self.measured if m.round != whole] or self.measured

    @property
    def length(self) -> int:
        """How many times the plan's iterations the current round measures (a confirming round under wide
        noise: jobs.isolate.confirm.longer); 1 for every other."""
        return self.planner.length if isinstance(self.planner, ConfirmedPlan) else 1

    def start(self) -> Round | None:
        """The next round's groups, or None when the plan is done."""
        self.current = self.planner.next_round()
        if self.current is not None:
            self.round_no += 1
        return self.current

    def label(self, group: Group, rail: int = EVERY_RAIL) -> str:
        return group_label(self.round_no, self.hosts, group, rail)

    def key(self, group: Group, rail: int = EVERY_RAIL) -> GroupKey:
        return (self.round_no, tuple(group), rail)

    def finish(self, figures: Mapping[GroupKey, float]) -> bool:
        """Record the current round's figures; False when a group lacks one on some rail. What did finish of
        an unfinished round is kept as measurements, but the planner never sees a partial round. The
        planner hears of a node group by its slowest rail."""
        assert self.current is not None
        keys = {group: [self.key(group, rail) for rail in self.rails] for group in self.current}
        self.measured.extend(
            Measured(self.round_no, group, figures[key], key[2]) for group in self.current for key in keys[group]
            if key in figures
        )  # fmt: skip
        self.unfinished = [group for group in self.current if any(key not in figures for key in keys[group])]
        if self.unfinished:
            return False
        for group in self.current:
            self.planner.record(group, min(figures[key] for key in keys[group]))
        return True


def replay(
    settings: IsolateSettings,
    hosts: list[str],
    figures: Mapping[GroupKey, float],
    rails: Sequence[int] = (),
    leaves: Sequence[str | None] = (),
) -> Rounds:
    """The rounds the job ran, from the figures its results hold, up to the first round left unfinished
    (with the rails and leaves the job planned with)."""
    rounds = Rounds(settings, hosts, list(rails) or [EVERY_RAIL], leaves)
    while rounds.start() is not None and rounds.finish(figures):
        pass
    return rounds
