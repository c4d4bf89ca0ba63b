"""pairs and random: every round known in advance, then the slow pairs measured again before they are named.

One figure is one sample: on a loaded or noisy fabric a healthy pair can fall under the level once. After the
plan, every pair the verdict would name a bad link on some rail (slow, while neither of its nodes is bad) is
measured again on every rail, disjoint pairs at once, for at most isolate.confirm_rounds rounds; the verdict
then judges each (pair, rail) by its last figure. The suspects come from the verdict itself (judge_fabric
over what the rounds measured, rail by rail, with the leaves), so what would be named is what is measured
again. A bad node's pairs are not: most of its figures are slow, and that is the verdict already."""

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
    suspects: list[Group] | None = None
    """The slow pairs still to measure again; None until the plan is done."""

    def next_round(self) -> Round | None:
        if self.handed_out < len(self.plan):
            self.handed_out += 1
            return self.plan[self.handed_out - 1]
        if self.suspects is None:
            self.suspects = slow_pairs(self.measured, self.tolerance, self.expected_busbw, self.leaves)
        if not self.suspects or self.handed_out >= len(self.plan) + self.confirm_rounds:
            return None
        self.handed_out += 1
        measured, self.suspects = disjoint(self.suspects)
        return measured

    def record(self, group: Group, busbw: float) -> None:
        return None  # the suspects are judged from `measured`, rail by rail


def slow_pairs(
    measured: list[Measured], tolerance: float, expected_busbw: float, leaves: Mapping[int, str] | None
) -> list[Group]:
    """The pairs the verdict would name bad links on some rail, from what the plan measured."""
    if not measured:
        return []
    links = judge_fabric(measured, tolerance, expected_busbw, leaves or None).bad_links
    return list(dict.fromkeys(link.nodes for link in links))


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
