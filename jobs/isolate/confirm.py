"""pairs and random: every round known in advance, then the slow pairs measured again before they are named.

One figure is one sample: on a loaded or noisy fabric a healthy pair can fall under the level once. After the
plan, every pair the verdict would name a bad link on some rail, or the one pair a node was measured in on a rail
when slow (a bad rail or node on one figure), is measured again on every rail, disjoint pairs at once, for at most
isolate.confirm_rounds rounds. The suspects come from the verdict itself (judge_fabric over what the rounds
measured, rail by rail, with the leaves, `confirming`), so what would be named is what is measured again. They
are asked for again before each confirming round: a pair above the threshold before may be under it now (seen on
the test cluster: a link named on one figure, while the round re-measured two pairs that proved fast). A bad
node's pairs are not: most of its figures are slow, and that is the verdict already.

The verdict then judges each (pair, rail) by its last figure, and names a link only when it was slow twice. More
suspects than the confirming rounds can measure leave some slow in one figure only: those are unconfirmed
(verdict.unconfirmed), named neither bad link, rail nor node, drain nothing and leave the exit status 0."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from jobs.isolate.grains import judge_fabric
from jobs.isolate.plan import Group, Round
from jobs.isolate.verdict import Measured


@dataclass(slots=True)
class ConfirmedPlan:
    plan: list[Round]
    tolerance: float
    expected_busbw: float = 0.0
    confirm_rounds: int = 2
    measured: list[Measured] = field(default_factory=list)
    """What the rounds measured, rail by rail: the list jobs.isolate.rounds.Rounds fills as rounds finish."""
    leaves: Mapping[int, str] | None = None
    handed_out: int = 0
    again: set[Group] = field(default_factory=set)
    """The pairs measured again already: their last figure is the verdict's."""

    def next_round(self) -> Round | None:
        if self.handed_out < len(self.plan):
            self.handed_out += 1
            return self.plan[self.handed_out - 1]
        if self.handed_out >= len(self.plan) + self.confirm_rounds:
            return None
        suspects = slow_pairs(self.measured, self.tolerance, self.expected_busbw, self.leaves)
        fresh = [pair for pair in suspects if pair not in self.again]
        if not fresh:
            return None
        self.handed_out += 1
        measured, _ = disjoint(fresh)
        self.again.update(measured)
        return measured

    def record(self, group: Group, busbw: float) -> None:
        return None  # the suspects are judged from `measured`, rail by rail


def confirming(planner: object) -> bool:
    """The rounds' planner measures slow pairs again: the verdict is then to be judged with `confirming`."""
    return isinstance(planner, ConfirmedPlan) and planner.confirm_rounds > 0


def slow_pairs(
    measured: list[Measured], tolerance: float, expected_busbw: float, leaves: Mapping[int, str] | None
) -> list[Group]:
    """The pairs the verdict would name a bad link on some rail, or holds unconfirmed there (the one pair a node
    was measured in on a rail: a bad rail or node on one figure), from what was measured, rail by rail."""
    if not measured:
        return []
    verdict = judge_fabric(measured, tolerance, expected_busbw, leaves or None, confirming=True)
    links = [(link.rail, link.nodes) for link in verdict.bad_links]
    links += [(link.rail, link.nodes) for link in verdict.unconfirmed]
    return list(dict.fromkeys(nodes for _, nodes in sorted(links)))


def disjoint(pairs: list[Group]) -> tuple[Round, list[Group]]:
    """As many of `pairs` as share no node (in order), and the rest for a later round."""
    taken: set[int] = set()
    now, later = [], []
    for pair in pairs:
        if taken & set(pair):
            later.append(pair)
        else:
            now.append(pair)
            taken.update(pair)
    return tuple(now), later
