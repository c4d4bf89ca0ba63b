"""pairs and random: every round known in advance, then the slow pairs measured again before they are named.

One figure is one sample: on a loaded or noisy fabric a healthy pair can fall under the level once. After the
plan, every pair the verdict would name a bad link (slow, while neither of its nodes is bad) is measured
again, disjoint pairs at once, for at most isolate.confirm_rounds rounds; the verdict then judges the pair by
its last figure, so a link is named only when it was slow both times. A bad node's pairs are not measured
again: most of its figures are slow, and that is the verdict already."""

from __future__ import annotations

from dataclasses import dataclass, field

from jobs.isolate.plan import Group, Round
from jobs.isolate.verdict import Measured, judge


@dataclass(slots=True)
class ConfirmedPlan:
    plan: list[Round]
    tolerance: float
    expected_busbw: float = 0.0
    confirm_rounds: int = 2
    handed_out: int = 0
    figures: list[Measured] = field(default_factory=list)
    suspects: list[Group] | None = None
    """The slow pairs still to measure again; None until the plan is done."""

    def next_round(self) -> Round | None:
        if self.handed_out < len(self.plan):
            self.handed_out += 1
            return self.plan[self.handed_out - 1]
        if self.suspects is None:
            self.suspects = slow_pairs(self.figures, self.tolerance, self.expected_busbw)
        if not self.suspects or self.handed_out >= len(self.plan) + self.confirm_rounds:
            return None
        self.handed_out += 1
        measured, self.suspects = disjoint(self.suspects)
        return measured

    def record(self, group: Group, busbw: float) -> None:
        self.figures.append(Measured(self.handed_out, group, busbw))


def slow_pairs(figures: list[Measured], tolerance: float, expected_busbw: float) -> list[Group]:
    """The pairs the verdict would name bad links, from what the plan measured."""
    if not figures:
        return []
    return [link.nodes for link in judge(figures, tolerance, expected_busbw).bad_links]


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
