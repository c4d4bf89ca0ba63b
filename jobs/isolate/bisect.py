"""isolate.mode=bisect as a pure state machine: hand out a round, take its figures, hand out the next.

Measure all nodes, then both halves at once, and split again every half that falls short of the healthy
level; a half of one node is measured against a node already shown healthy. When neither half of a
short group is short, the fault needs nodes from both halves (a switch, routing): every pair across the
two halves is measured; a short pair of two healthy nodes is a bad link. The healthy level is
isolate.expected_busbw when given, else the best figure so far: the groups shrink as the search goes on,
and the healthy halves set the bar.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from jobs.isolate.plan import Group, Round, check_round, halves


@dataclass(slots=True)
class _Split:
    """A short group split in two: each half measured as a group, or (one node) with a healthy partner."""

    parent: Group
    halves: tuple[Group, Group]
    placed: list[tuple[Group, Group]] = field(default_factory=list)
    """(group measured, the half it stands for), once handed out."""
    results: dict[Group, float] = field(default_factory=dict)


Work = _Split | Group
"""What waits for a round: a split, or one pair across two halves."""


@dataclass(slots=True)
class Bisect:
    n: int
    tolerance: float = 0.15
    expected_busbw: float = 0.0
    measured: list[tuple[Group, float]] = field(default_factory=list)
    rounds: int = 0
    healthy: set[int] = field(default_factory=set)
    bad_nodes: set[int] = field(default_factory=set)
    bad_links: set[Group] = field(default_factory=set)
    cross_faults: list[tuple[Group, Group]] = field(default_factory=list)
    """Short groups whose halves were both healthy: the fault needs nodes from both halves."""
    unresolved: set[int] = field(default_factory=set)
    """Suspects that no healthy node was left to be measured against."""
    _queue: list[Work] = field(default_factory=list)
    _pending: dict[Group, _Split | None] = field(default_factory=dict)
    _open: list[_Split] = field(default_factory=list)
    _cross: list[Group] = field(default_factory=list)

    def level(self) -> float:
        return self.expected_busbw or max((busbw for _, busbw in self.measured), default=0.0)

    def short(self, busbw: float) -> bool:
        return busbw < self.level() * (1 - self.tolerance)

    def next_round(self) -> Round | None:
        """The groups to measure next, disjoint; None once the search is over."""
        if self._pending:
            raise RuntimeError("the last round's figures have not all been recorded")
        if self.rounds == 0:
            self._pending = {tuple(range(self.n)): None}
            return self._hand_out()
        busy: set[int] = set()
        self._queue = [work for work in self._queue if not self._place(work, busy)]
        if not self._pending:
            stuck = {node for work in self._queue for node in _nodes(work)}
            self.unresolved |= stuck - self.healthy - self.bad_nodes
            self._queue = []
            return None
        return self._hand_out()

    def record(self, group: Group, busbw: float) -> None:
        if group not in self._pending:
            raise ValueError(f"group {group} was not handed out in this round")
        self.measured.append((group, busbw))
        owner = self._pending.pop(group)
        if owner is not None:
            owner.results[group] = busbw
        if not self._pending:
            self._judge_round()

    def _hand_out(self) -> Round:
        self.rounds += 1
        measured = tuple(self._pending)
        check_round(measured, self.n)
        return measured

    def _place(self, work: Work, busy: set[int]) -> bool:
        """Add `work` to the round being built, if its nodes (and a healthy partner) are free."""
        if isinstance(work, tuple):
            if busy & set(work):
                return False
            busy.update(work)
            self._pending[work] = None
            self._cross.append(work)
            return True
        spare = sorted(self.healthy - busy - set(work.parent))
        placed = []
        for half in work.halves:
            if len(half) >= 2:
                placed.append((half, half))
            elif spare:
                placed.append((tuple(sorted((half[0], spare.pop(0)))), half))
            else:
                return False
        if any(busy & set(group) for group, _ in placed):
            return False
        work.placed = placed
        for group, _ in placed:
            busy.update(group)
            self._pending[group] = work
        self._open.append(work)
        return True

    def _judge_round(self) -> None:
        if self.rounds == 1:
            whole = tuple(range(self.n))
            self._queue.append(_Split(whole, halves(whole)))
            return
        for split in self._open:
            self._judge_split(split)
        latest = dict(self.measured)
        self.bad_links.update(pair for pair in self._cross if self.short(latest[pair]))
        self._open = []
        self._cross = []

    def _judge_split(self, split: _Split) -> None:
        parent = next(busbw for group, busbw in reversed(self.measured) if group == split.parent)
        found_short = False
        for group, half in split.placed:
            busbw = split.results[group]
            if len(half) == 1:
                (self.bad_nodes if self.short(busbw) else self.healthy).add(half[0])
                found_short |= self.short(busbw)
            elif self.short(busbw):
                found_short = True
                self._queue.append(_Split(half, halves(half)))
            else:
                self.healthy.update(half)
        if not found_short and self.short(parent):
            if len(split.parent) == 2:
                self.bad_links.add(split.parent)
            else:
                self.cross_faults.append(split.halves)
                self._queue.extend(across(*split.halves))


def _nodes(work: Work) -> set[int]:
    return set(work) if isinstance(work, tuple) else set(work.parent)


def across(a: Group, b: Group) -> list[Group]:
    """Every pair with one node in each half, in bipartite round-robin order (each round a matching)."""
    small, large = (a, b) if len(a) <= len(b) else (b, a)
    return [
        tuple(sorted((small[i], large[(i + r) % len(large)]))) for r in range(len(large)) for i in range(len(small))
    ]
