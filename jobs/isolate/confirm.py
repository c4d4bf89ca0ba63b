"""pairs, random and check: every round known in advance, then every accusation measured again before it is named.

One figure is one sample: on a loaded or noisy fabric a healthy pair can fall under the level once. After the
plan, for at most isolate.confirm_rounds rounds, disjoint pairs at once, on every rail, every suspect the verdict
holds (judge_fabric over what the rounds measured, with `planned_rounds`, so that nothing is named before it was
measured again) is measured again: a node or a rail of it, the node against a partner the run holds healthy
that it has not met yet; a switch link, two healthy nodes across it; a link or a pair slow once, the pair
itself (or, where one of its nodes was slow on that rail with another partner too, that node against a partner
it has not met: the pair again would not say which node); then every pair measured once under the threshold,
slowest first (under wide noise one slow figure is
too little to suspect, and measuring again costs less than guessing). They are asked for again before each
confirming round: a pair above the threshold before may be under it now.

Under wide noise a confirming round also measures longer: isolate's, up to LONGEST times the plan's iterations
(`longer`); check's never, it keeps its budget.

What was never measured again stays inconclusive (a node or rail, a switch link) or unconfirmed (a link): named
neither bad nor healthy, drained by nothing."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from jobs.isolate.grains import judge_fabric
from jobs.isolate.plan import Group, Round
from jobs.isolate.verdict import Measured

LONGEST = 4
"""The most times longer than the plan's rounds an isolate confirming round measures: 4 halves the spread of
its figures where the noise changes faster than a round lasts (other jobs' bursts, adaptive routing)."""


def longer(noise: float, tolerance: float, longest: int = LONGEST) -> int:
    """How many times the plan's iterations a confirming round measures, by the spread the run measured (one
    standard deviation over the level): a figure over n times the iterations spreads about sqrt(n) times less,
    so n = (noise / (tolerance / 2))^2 brings it to the half tolerance the threshold is chosen for (the verdict's
    noise note); 1 where the spread is that narrow already, at most `longest`."""
    if noise <= 0 or tolerance <= 0:
        return 1
    return max(1, min(longest, math.ceil((2 * noise / tolerance) ** 2 - 1e-9)))


@dataclass(slots=True)
class ConfirmedPlan:
    plan: list[Round]
    tolerance: float
    expected_busbw: float = 0.0
    confirm_rounds: int = 2
    measured: list[Measured] = field(default_factory=list)
    """What the rounds measured, rail by rail: the list jobs.isolate.rounds.Rounds fills as rounds finish."""
    leaves: Mapping[int, str] | None = None
    whole_round: int = 0
    """The plan's round that holds every node (check's), which no suspect is judged from (0: none)."""
    longest: int = LONGEST
    """The most times longer a confirming round measures than the plan's (1: never longer, check's)."""
    handed_out: int = 0
    length: int = 1
    """How many times the plan's iterations the round handed out last measures (`longer`)."""
    again: set[Group] = field(default_factory=set)
    """The pairs measured again already: their last figure is the verdict's."""

    def next_round(self) -> Round | None:
        if self.handed_out < len(self.plan):
            self.handed_out += 1
            return self.plan[self.handed_out - 1]
        if self.handed_out >= len(self.plan) + self.confirm_rounds:
            return None
        judged = [m for m in self.measured if m.round != self.whole_round]
        suspects, noise = suspects_and_noise(judged, self.tolerance, self.expected_busbw, self.leaves, len(self.plan))
        fresh = [pair for pair in suspects if pair not in self.again]
        if not fresh:
            return None
        self.handed_out += 1
        self.length = longer(noise, self.tolerance, self.longest)
        measured, _ = disjoint(fresh)
        self.again.update(measured)
        return measured

    def record(self, group: Group, busbw: float) -> None:
        return None  # the suspects are judged from `measured`, rail by rail


def confirming(planner: object) -> bool:
    """The rounds' planner measures slow pairs again: the verdict is then to be judged with `confirming`."""
    return isinstance(planner, ConfirmedPlan) and planner.confirm_rounds > 0


def planned_rounds(planner: object) -> int | None:
    """The plan's last round when the planner measures its suspects again after it (None: it does not)."""
    return len(planner.plan) if isinstance(planner, ConfirmedPlan) and planner.confirm_rounds > 0 else None


def suspects_and_noise(
    measured: list[Measured],
    tolerance: float,
    expected_busbw: float,
    leaves: Mapping[int, str] | None,
    planned: int | None = None,
) -> tuple[list[Group], float]:
    """The pairs to measure again: every suspect of the verdict over what was measured (with confirmation, so
    that nothing is named on figures from the plan alone), as the module's docstring says; and the spread that
    verdict measured (one standard deviation over the level), which sets how long they are measured."""
    if not measured:
        return [], 0.0
    last = planned if planned is not None else max(m.round for m in measured)
    verdict = judge_fabric(measured, tolerance, expected_busbw, leaves or None, confirming=True, planned_rounds=last)
    links = [(link.rail, link.nodes) for link in verdict.unconfirmed]
    links += [(u.rail, u.nodes) for u in verdict.inconclusive if u.grain == "link"]
    slow = verdict.level * (1 - tolerance)
    suspects = {n for u in verdict.inconclusive if u.grain != "switch_link" for n in u.nodes}
    suspects |= {n for _, pair in links for n in pair}
    healthy = [node for node in sorted({n for m in measured for n in m.nodes}) if node not in suspects]
    met: set[Group] = {m.nodes for m in measured if len(m.nodes) == 2}
    pairs: list[Group] = []  # the units first: disjoint() takes them in order, one partner each a round
    for unit in verdict.inconclusive:
        free = _free_first(healthy, pairs)
        if unit.grain in ("node", "rail"):
            pairs += _new_partner(unit.nodes[0], free, met)
        elif unit.grain == "switch_link":
            inside = [n for n in free if n in unit.nodes]
            outside = [n for n in free if n not in unit.nodes and _across(n, unit.nodes, measured, slow)]
            pairs += [tuple(sorted((inside[0], outside[0])))] if inside and outside else []
            pairs += _to_a_third_leaf(inside, outside, free, leaves) if leaves else []
    slow_with = _slow_partners(measured, slow)
    for rail, nodes in sorted(links):
        pairs += _the_pair_or_its_node(nodes, {rail}, slow_with, healthy, pairs, met)
    sides = [set(u.nodes) for u in verdict.inconclusive if u.grain == "switch_link"]
    named = {f.node for f in verdict.bad_nodes} | {f.node for f in verdict.bad_rails} | suspects
    for pair, rails in _under(measured, slow):
        if not named & set(pair) and not any(len(side & set(pair)) == 1 for side in sides):
            pairs += _the_pair_or_its_node(pair, rails, slow_with, healthy, pairs, met)
    return list(dict.fromkeys(pairs)), verdict.noise


def _slow_partners(measured: list[Measured], threshold: float) -> dict[tuple[int, int], set[int]]:
    """(node, rail) -> the partners it was slow with on that rail."""
    found: dict[tuple[int, int], set[int]] = {}
    for m in measured:
        if len(m.nodes) == 2 and m.busbw < threshold:
            a, b = m.nodes
            found.setdefault((a, m.rail), set()).add(b)
            found.setdefault((b, m.rail), set()).add(a)
    return found


def _the_pair_or_its_node(
    pair: Group,
    rails: set[int],
    slow_with: dict[tuple[int, int], set[int]],
    healthy: list[int],
    taken: list[Group],
    met: set[Group],
) -> list[Group]:
    """What to measure again for a pair slow once: the pair itself, or, where one of its nodes was slow on that
    rail with another partner too and has a partner left it has not met, that node against it. The pair measured
    again would say only that the pair is slow, and a node is named only once it was slow with a new partner
    (jobs.isolate.inference): at 4,096 nodes check's one confirming round spent itself on the pair and left a
    0.5x rail inconclusive that a new partner names. `taken`: the pairs asked for so far (their nodes' partners
    come last, _free_first), looked at only where a node is to be measured."""
    for node in sorted(pair, key=lambda n: -max(len(slow_with.get((n, rail), ())) for rail in rails)):
        if max(len(slow_with.get((node, rail), ())) for rail in rails) < 2:
            break
        fresh = _fresh_partners(node, _free_first(healthy, taken), met)
        if fresh:  # pairs' plan met every node: two slow pairs of a node there are two links, measured again
            return fresh[:1]
    return [pair]


def _under(measured: list[Measured], threshold: float) -> list[tuple[Group, set[int]]]:
    """The pairs measured once, under the threshold on some rail, slowest first, each with the rails it was slow
    on: too little to suspect on one figure under wide noise, and measuring again is how the verdict learns
    more instead of guessing."""
    seen: set[tuple[Group, int]] = set()
    again: set[Group] = set()
    for m in measured:
        if (m.nodes, m.rail) in seen:
            again.add(m.nodes)
        seen.add((m.nodes, m.rail))
    low = sorted((m.busbw, m.nodes, m.rail) for m in measured if len(m.nodes) == 2 and m.busbw < threshold)
    rails: dict[Group, set[int]] = {}
    for _, nodes, rail in low:
        if nodes not in again:
            rails.setdefault(nodes, set()).add(rail)
    return list(rails.items())


def _to_a_third_leaf(inside: list[int], outside: list[int], free: list[int], leaves: Mapping[int, str]) -> list[Group]:
    """A node of each side against a healthy node of a leaf on neither side: where the plan measured a leaf
    only against one other (check's pairs across), the link between the two and either leaf's uplink explain
    the same slow pairs, and only a pair to a third leaf tells them apart (slow from the leaf whose uplink it is)."""
    sides = {leaves.get(n) for n in (*inside, *outside)}
    third = [n for n in free if leaves.get(n) not in sides]
    ends = [nodes[1] if len(nodes) > 1 else nodes[0] for nodes in (inside, outside) if nodes]  # [0] is across
    return [tuple(sorted((end, partner))) for end, partner in zip(ends, third, strict=False)]


def _free_first(healthy: list[int], pairs: list[Group]) -> list[int]:
    """The healthy nodes no pair taken so far holds, then the rest: each unit's partner the first of them, every
    unit would pick the same lowest node, disjoint() would keep the first unit's pair alone, and under wide noise
    (tens of units) the rest, a slow switch link among them, would never be measured again."""
    busy = {n for pair in pairs for n in pair}
    return [n for n in healthy if n not in busy] + [n for n in healthy if n in busy]


def _new_partner(node: int, healthy: list[int], met: set[Group]) -> list[Group]:
    """A healthy node `node` has not been measured with yet (or, when it met them all, the first)."""
    fresh = _fresh_partners(node, healthy, met)
    return fresh[:1] or [tuple(sorted((node, other))) for other in healthy if other != node][:1]


def _fresh_partners(node: int, healthy: list[int], met: set[Group]) -> list[Group]:
    """`node` paired with each of `healthy` it has not been measured with, in their order."""
    return [pair for other in healthy if other != node and (pair := tuple(sorted((node, other)))) not in met]


def _across(node: int, side: tuple[int, ...], measured: list[Measured], slow: float) -> bool:
    """`node` was slow with a node of `side`: it lies across the switch link from it."""
    return any(node in m.nodes and set(m.nodes) & set(side) and m.busbw < slow for m in measured if len(m.nodes) == 2)


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
