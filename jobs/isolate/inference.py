"""The verdict as an inference: which set of faults explains the figures best, under the noise the run measured.

Every figure is a group of nodes on one rail. Under an explanation (a set of faults, each a node, a (node, rail),
a switch link or leaf uplink on one rail or every rail, or one pair's link), a figure's expected ratio to the
healthy level is the factor of the slowest fault on its path (1 with none); each fault's factor is fitted as
the median of the figures it alone would explain. A figure's likelihood is a mixture, so no one figure decides:

    healthy:  (1 - OUTLIER) N(x; 1, sigma)                      + OUTLIER g
    faulted:  (1 - OUTLIER - FLAKY) N(x; s, s sigma) + FLAKY N(x; 1, sigma) + OUTLIER g

x the figure over the level, sigma the healthy figures' relative spread as this run measured it, g a flat
density for figures no explanation expects (a healthy pair's one deep dip costs about 5 nats, not a fault).

The explanation is built greedily, the fault that raises the log-likelihood most first, and a fault joins only
when it raises it by more than its penalty, log(candidates of its grain) + log(1 / ADMIT): with C candidates a
grain, noise alone lifts about C x exp(-gain) of them by `gain`, so about ADMIT of a healthy fabric's units get
in by chance (a Bonferroni bound, which is also the parsimony: one slow uplink costs one penalty, the four
rails it slows four). A fault in the explanation is then named only when the best explanation without it,
rebuilt from every other candidate, is worse by NAMING_MARGIN nats or more (a likelihood ratio of 100 to 1
against the next best); below that it is inconclusive, as it is when the figures cannot place it (fewer than
two partners slow with it, every partner a suspect itself, a link slow in one figure, or with isolate's
confirmation on, never measured again).
"""

from __future__ import annotations

import heapq
import math
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np
import numpy.typing as npt

from jobs.isolate.cut import alone, bipartitions
from jobs.isolate.verdict import EVERY_RAIL, Grain, Measured, Undecided

Floats = npt.NDArray[np.float64]
Indices = npt.NDArray[np.intp]
LeafOf = Callable[[int, int], "str | None"]

OUTLIER = 0.01
"""The share of figures no explanation expects (a hiccup, a neighbour's burst)."""
OUTLIER_DENSITY = 0.5
"""g: flat over ratios 0 to 2."""
FLAKY = 0.05
"""The share of a faulted unit's figures that come out healthy all the same (a flapping link, an idle moment)."""
ADMIT = 0.1
"""About how many healthy units a run lets into its explanation by chance, over every grain (each grain's share)."""
NAMING_MARGIN = math.log(100)
"""nats: the explanation with the fault must beat the best without it by a likelihood ratio of 100."""
MIN_SIGMA = 0.01
"""The spread assumed at least: no fabric measures a group closer than 1% run to run."""
FAULT_SPREAD = 0.02
"""A faulted figure's spread, over the level, at least: the figures of a link 40 times under the level come from
a few iterations each and spread by a factor of 3 or 4 (0.01 to 0.04 of the level on the test cluster's
100 Mbit/s uplink), not by the healthy figures' relative spread times their own size (0.004 there). Held to
that, the uplink's deepest and shallowest figures fitted two faults better than one, and a link on every rail,
fitted at the shallow ones, came within 4 nats of the uplink on its own rail."""
MIN_PARTNERS = 2
"""A node or rail is named only when it was slow with two partners or more whose slowness nothing else explains."""
MIN_PARTNERS_NO_TOPOLOGY = 3
"""With no topology known: two slow partners of a node in a sparse plan (check's cycle of pairs) are as well
explained by a cut between sets of nodes no topology names, with the node on one side and its partners on the
other; a third partner held healthy, with the rest of the plan fast, leaves no such cut."""
SPARSE_PARTNERS = 5
"""With no topology known, a node the plan gave fewer partners than this in all (check's two and its confirming
partner) is named only where its partners' own pairs leave it alone on its side: three slow partners are three
nodes across a slow uplink as often as a slow node, and check drained 25 healthy nodes behind a 0.8x uplink in 20
runs of 64 nodes at 5% noise on the partner count alone (bench_grains, check, no topology)."""


@dataclass(frozen=True, slots=True)
class Candidate:
    grain: Grain
    nodes: tuple[int, ...]
    """node and rail: the node; link: the pair; switch_link: the nodes of the first side."""
    rail: int
    switches: tuple[str, ...]
    covers: Indices
    """The figures whose path it lies on."""
    searched: float = 0.0
    """nats: log of how many such candidates the figures were searched for. A cut whose sides the figures chose
    (no topology) is one of 2^(n-1) ways to split n nodes: a free partition fits any noise."""


@dataclass(frozen=True, slots=True)
class Judged:
    """One fault of the best explanation, named or left inconclusive."""

    candidate: Candidate
    factor: float
    """Its fitted figure over the level."""
    margin: float
    """nats the explanation with it beats the best without it by."""
    why: Undecided | None
    """None: named; else why it is inconclusive."""


@dataclass(slots=True)
class Inference:
    judged: list[Judged] = field(default_factory=list)
    sigma: float = 0.0

    def named(self, grain: Grain) -> list[Judged]:
        return [j for j in self.judged if j.why is None and j.candidate.grain == grain]

    @property
    def undecided(self) -> list[Judged]:
        return [j for j in self.judged if j.why is not None]


def noise_of(records: Sequence[Measured], level: float, tolerance: float) -> float:
    """The healthy figures' relative spread (one standard deviation over the level), read from the figures above
    the level only (a fault only ever lowers a figure): for normal noise the median distance above is 0.6745
    standard deviations. With fewer than 8 such figures, half the tolerance: the noise it was chosen for."""
    above = [r.busbw / level - 1 for r in records if level and r.busbw > level]
    if len(above) < 8:
        return max(tolerance / 2, MIN_SIGMA)
    return max(float(np.median(above)) / 0.6745, MIN_SIGMA)


def infer(
    records: Sequence[Measured],
    level: float,
    tolerance: float,
    leaf_of: LeafOf,
    named_switches: bool,
    remeasured_after: int | None = None,
) -> Inference:
    """The best explanation of `records` and each of its faults judged. `remeasured_after`: with isolate's
    confirmation, the last planned round; a fault with no slow figure after it was never measured again."""
    x = np.array([r.busbw / level if level else 1.0 for r in records], dtype=np.float64)
    sigma = noise_of(records, level, tolerance)
    model = _Model(x, sigma, 1 - tolerance, level, records)
    candidates, tested = _candidates(records, leaf_of, model, level, cuts=not named_switches)
    penalty = _penalties(candidates, tested)
    chosen, rivals = model.improved(candidates, penalty, model.explain(candidates, penalty, set()))
    judged: dict[int, Judged] = {}
    for index, factor in sorted(chosen.items()):
        margin, instead = model.margin(candidates, penalty, chosen, rivals[index])
        why = _why(candidates[index], margin, records, model, chosen, candidates, remeasured_after, named_switches)
        judged[index] = Judged(candidates[index], factor, margin, why)
        if why is not None and margin < NAMING_MARGIN:  # what explains its figures about as well is as suspect
            same = candidates[index].covers.tobytes()
            alike = {i: factor for i, c in enumerate(candidates) if i != index and c.covers.tobytes() == same}
            for other, fitted in {**instead, **alike}.items():
                judged.setdefault(other, Judged(candidates[other], fitted, margin, why))
    return Inference(list(judged.values()), sigma)


class _Model:
    """The figures, the noise, and the likelihood of each figure under a factor."""

    def __init__(self, x: Floats, sigma: float, threshold: float, level: float, records: Sequence[Measured]) -> None:
        self.x, self.sigma, self.threshold, self.level = x, sigma, threshold, level
        self.records = records
        self.healthy_nll = self.nll(x, np.ones_like(x))

    @cached_property
    def by_node(self) -> dict[int, list[int]]:
        """node -> the indices of the pairs' figures that hold it."""
        found: dict[int, list[int]] = defaultdict(list)
        for index, record in enumerate(self.records):
            if len(record.nodes) == 2:
                for node in record.nodes:
                    found[node].append(index)
        return found

    def nll(self, x: Floats, factor: Floats) -> Floats:
        healthy = _normal(x, 1.0, self.sigma)
        faulted = _normal(x, factor, np.maximum(factor * self.sigma, FAULT_SPREAD))
        is_fault = factor < 1.0
        mixed = np.where(
            is_fault,
            (1 - OUTLIER - FLAKY) * faulted + FLAKY * healthy,
            (1 - OUTLIER) * healthy,
        )
        return np.asarray(-np.log(mixed + OUTLIER * OUTLIER_DENSITY), dtype=np.float64)

    def fit(self, covers: Indices, factor: Floats) -> float | None:
        """The fault's factor: the median of the figures it covers that nothing slower explains already; None
        when that is within the tolerance (no fault)."""
        unexplained = covers[factor[covers] >= 1.0]
        figures = self.x[unexplained if len(unexplained) else covers]
        fitted = float(np.median(figures))
        return fitted if fitted < self.threshold else None

    def gain(self, candidate: Candidate, factor: Floats, nll: Floats) -> tuple[float, float]:
        """(log-likelihood gained by adding the candidate, its fitted factor); (-inf, 1) when it is no fault."""
        fitted = self.fit(candidate.covers, factor)
        if fitted is None:
            return -math.inf, 1.0
        covers = candidate.covers
        after = self.nll(self.x[covers], np.minimum(factor[covers], fitted))
        return float(np.sum(nll[covers] - after)), fitted

    def explain(
        self,
        candidates: Sequence[Candidate],
        penalty: Sequence[float],
        excluded: set[int],
        start: dict[int, float] | None = None,
    ) -> dict[int, float]:
        """Greedy, lazily re-evaluated: the candidate with the best gain over its penalty joins while that is
        positive (a gain only shrinks as others join). Returns candidate index -> fitted factor."""
        chosen = dict(start or {})
        factor = self.factors(candidates, chosen)
        nll = self.nll(self.x, factor)
        heap = []
        for index, candidate in enumerate(candidates):
            if index not in excluded and index not in chosen:
                net = self.gain(candidate, factor, nll)[0] - penalty[index]
                if net > 0:
                    heap.append((-net, index))
        heapq.heapify(heap)
        while heap:
            _, index = heapq.heappop(heap)
            gained, fitted = self.gain(candidates[index], factor, nll)
            net = gained - penalty[index]
            if net <= 0:
                continue
            if heap and -heap[0][0] > net:
                heapq.heappush(heap, (-net, index))
                continue
            chosen[index] = fitted
            covers = candidates[index].covers
            factor[covers] = np.minimum(factor[covers], fitted)
            nll[covers] = self.nll(self.x[covers], factor[covers])
        return chosen

    def factors(self, candidates: Sequence[Candidate], chosen: dict[int, float]) -> Floats:
        factor = np.ones_like(self.x)
        for index, fitted in chosen.items():
            covers = candidates[index].covers
            factor[covers] = np.minimum(factor[covers], fitted)
        return factor

    def cost(self, candidates: Sequence[Candidate], penalty: Sequence[float], chosen: dict[int, float]) -> float:
        return float(np.sum(self.nll(self.x, self.factors(candidates, chosen)))) + sum(penalty[i] for i in chosen)

    def margin(
        self,
        candidates: Sequence[Candidate],
        penalty: Sequence[float],
        chosen: dict[int, float],
        without: dict[int, float],
    ) -> tuple[float, dict[int, float]]:
        """How much worse `without`, the best explanation without one of `chosen`'s faults, is, and what it
        added instead."""
        instead = {i: f for i, f in without.items() if i not in chosen}
        return self.cost(candidates, penalty, without) - self.cost(candidates, penalty, chosen), instead

    def without(
        self, candidates: Sequence[Candidate], penalty: Sequence[float], chosen: dict[int, float], index: int
    ) -> dict[int, float]:
        """The best explanation without candidate `index`: the rest kept, the candidate left out, and whatever
        else now explains its figures added."""
        rest = {i: f for i, f in chosen.items() if i != index}
        return self.explain(candidates, penalty, {index, *_its_own_links(candidates, index)}, start=rest)

    def improved(
        self, candidates: Sequence[Candidate], penalty: Sequence[float], chosen: dict[int, float]
    ) -> tuple[dict[int, float], dict[int, dict[int, float]]]:
        """Greedy takes the fault that gains most first, and a wide one can win so over a narrower one that, with
        a second fault, explains the figures better: a leaf's uplink on rail 0 and one node's rail 1 slowed,
        the link on every rail gains most (it also covers that node's pairs across on rail 1), then the node's
        rail joins, and the healthy pairs across on rail 1 are left to chance. Whichever explanation without one
        of its faults costs less replaces it, until none does (the cost falls each time, so this ends). Returns
        the explanation and, for each of its faults, the best explanation without it: its margin's rival."""
        cost = self.cost(candidates, penalty, chosen)
        for _ in range(len(candidates) + 1):
            rivals: dict[int, dict[int, float]] = {}
            for index in sorted(chosen):
                rivals[index] = self.without(candidates, penalty, chosen, index)
                cheaper = self.cost(candidates, penalty, rivals[index])
                if cheaper < cost - 1e-9:
                    chosen, cost = rivals[index], cheaper
                    break
            else:
                return chosen, rivals
        return chosen, {index: self.without(candidates, penalty, chosen, index) for index in chosen}


def _its_own_links(candidates: Sequence[Candidate], index: int) -> set[int]:
    """A node's links to its partners: its own ports and cables, so no rival to it. Two slow links that share a
    node, the rest fast, say that node is slow: that is the node, not two faults. A rail keeps its links as
    rivals: on one rail a unit has one figure a partner, and two deep dips of noise would name it."""
    unit = candidates[index]
    if unit.grain != "node":
        return set()
    return {i for i, c in enumerate(candidates) if c.grain == "link" and unit.nodes[0] in c.nodes}


def _normal(x: Floats, mean: Floats | float, sd: Floats | float) -> Floats:
    return np.asarray(np.exp(-0.5 * ((x - mean) / sd) ** 2) / (sd * math.sqrt(2 * math.pi)), dtype=np.float64)


def _penalties(candidates: Sequence[Candidate], tested: Mapping[Grain, int]) -> list[float]:
    """Each candidate's: log(the units of its grain tested, every one measured, slow or not) + log(1 / its
    grain's share of ADMIT)."""
    share = ADMIT / max(1, len(tested))
    return [math.log(tested[c.grain]) + math.log(1 / share) + c.searched for c in candidates]


def _why(
    candidate: Candidate,
    margin: float,
    records: Sequence[Measured],
    model: _Model,
    chosen: dict[int, float],
    candidates: Sequence[Candidate],
    remeasured_after: int | None,
    topology: bool,
) -> Undecided | None:
    slow = [int(i) for i in candidate.covers if model.x[i] < model.threshold]
    if candidate.grain == "link" and len(slow) < 2:
        return "once"
    if candidate.grain == "switch_link" and not _two_sided(candidate, slow, records):
        return "few_partners"
    if candidate.grain in ("node", "rail"):
        others = [candidates[i] for i in chosen if candidates[i] is not candidate]
        partners = _partners(candidate, slow, records, others, model)
        least = MIN_PARTNERS if topology or _no_cut(candidate, slow, records, model) else MIN_PARTNERS_NO_TOPOLOGY
        if len(partners) < least:
            suspect = {p for i in slow for p in records[i].nodes if p not in candidate.nodes}
            return "suspect_partners" if len(suspect) >= least else "few_partners"
        if not topology and _few_partners_in_all(candidate, records) and not _alone_nearby(candidate, slow, model):
            return "maybe_cut"
    if remeasured_after is not None:
        again = [i for i in slow if records[i].round > remeasured_after]
        if not again:
            return "once"
        if candidate.grain in ("node", "rail") and not _with_a_new_partner(candidate, again, model, remeasured_after):
            return "same_partner"
    if margin < NAMING_MARGIN:
        return "spread"
    return None


def _with_a_new_partner(candidate: Candidate, again: Sequence[int], model: _Model, planned: int) -> bool:
    """Among the figures slow after the plan, one with a partner the node did not meet in the plan (or, where it
    met every node measured in pairs, as in pairs' plan, any): a pair measured again says the pair is slow, not
    which of its two nodes. Under 40% noise a healthy node slow by chance with both its partners in check's plan,
    one of the pairs then measured again (a pair slow once) and slow again, was named and drained at 4,096 nodes
    (bench_grains)."""
    records = model.records
    met = {
        p
        for i in candidate.covers
        if records[i].round <= planned and len(records[i].nodes) == 2
        for p in records[i].nodes
    }
    if len(met) >= len(model.by_node):  # every node measured in pairs
        return True
    return any(not set(records[i].nodes) <= met for i in again)


def _few_partners_in_all(candidate: Candidate, records: Sequence[Measured]) -> bool:
    """The plan gave the node fewer than SPARSE_PARTNERS partners, confirming rounds included (check's)."""
    met = {p for i in candidate.covers if len(records[i].nodes) == 2 for p in records[i].nodes}
    return len(met) - 1 < SPARSE_PARTNERS


def _alone_nearby(candidate: Candidate, slow: Sequence[int], model: _Model) -> bool:
    """The pairs of the candidate's partners (one figure a pair: its median over the node's every rail, or over a
    rail's one rail) put it alone on its side (jobs.isolate.cut.alone): a cut would leave a node beside it, slow
    with those partners too. Nearby, not over the whole matrix: under noise a dip anywhere in thousands of pairs
    leaves no sides at all, and every node would be inconclusive."""
    node, records = candidate.nodes[0], model.records
    rails = {records[i].rail for i in slow} if candidate.grain == "rail" else {None}
    for rail in rails:
        near = {p for i in model.by_node[node] if rail in (None, records[i].rail) for p in records[i].nodes}
        figures: dict[tuple[int, ...], list[float]] = defaultdict(list)
        for index in {i for other in near for i in model.by_node[other]}:
            if rail in (None, records[index].rail):
                figures[records[index].nodes].append(records[index].busbw)
        pairs = [Measured(0, nodes, float(np.median(busbw))) for nodes, busbw in figures.items()]
        if not alone(pairs, model.level * model.threshold, node):
            return False
    return True


def _no_cut(candidate: Candidate, slow: Sequence[int], records: Sequence[Measured], model: _Model) -> bool:
    """On every rail the candidate is slow on, no cut could explain its slow pairs (jobs.isolate.cut.alone)."""
    node = candidate.nodes[0]
    threshold = model.level * model.threshold
    for rail in sorted({records[i].rail for i in slow}):
        if not alone([r for r in records if r.rail == rail], threshold, node):
            return False
    return True


def _two_sided(candidate: Candidate, slow: Sequence[int], records: Sequence[Measured]) -> bool:
    """A slow link slows every node across it: its slow figures hold two nodes or more on each side (one node
    alone behind a leaf cannot be told from its uplink)."""
    inside = set(candidate.nodes)
    nodes = {n for i in slow for n in records[i].nodes}
    return len(nodes & inside) >= MIN_PARTNERS and len(nodes - inside) >= MIN_PARTNERS


def _partners(
    candidate: Candidate, slow: Sequence[int], records: Sequence[Measured], others: Sequence[Candidate], model: _Model
) -> set[int]:
    """The partners the candidate was slow with whose figure no other fault of the explanation lies on, and that
    the run holds healthy: fast in a figure of their own (on the candidate's rail, for a rail)."""
    explained: set[int] = set()
    for other in others:
        explained.update(int(i) for i in other.covers)
    fast = {
        (n, r.rail if candidate.grain == "rail" else EVERY_RAIL)
        for i, r in enumerate(records)
        if model.x[i] >= model.threshold
        for n in r.nodes
    }
    rail = candidate.rail if candidate.grain == "rail" else EVERY_RAIL
    return {
        p
        for i in slow
        if i not in explained
        for p in records[i].nodes
        if p not in candidate.nodes and (p, rail) in fast
    }


# ---- the candidates at every grain


def _candidates(
    records: Sequence[Measured], leaf_of: LeafOf, model: _Model, level: float, cuts: bool
) -> tuple[list[Candidate], dict[Grain, int]]:
    """Every unit that could be at fault and whose figures are, at the median, slow (one whose figures are not
    can never be: taking the figures other faults explain out of its median only raises it), and how many units
    of each grain were tested. `cuts`: no topology is known, so the sides the figures suggest are candidates too."""
    found = _nodes_and_rails(records) + _pair_links(records) + _switch_links(records, leaf_of)
    if cuts:
        found = [_searched(c, records) if c.grain == "switch_link" else c for c in found]
        found += _cuts(records, level * model.threshold, {c.covers.tobytes() for c in found})
    tested: dict[Grain, int] = defaultdict(int)
    for candidate in found:
        tested[candidate.grain] += 1
    slow = [c for c in found if len(c.covers) and float(np.median(model.x[c.covers])) < model.threshold]
    return slow, tested


def _nodes_and_rails(records: Sequence[Measured]) -> list[Candidate]:
    by_node: dict[int, list[int]] = defaultdict(list)
    by_unit: dict[tuple[int, int], list[int]] = defaultdict(list)
    for index, record in enumerate(records):
        for node in record.nodes:
            by_node[node].append(index)
            by_unit[(node, record.rail)].append(index)
    rails = {record.rail for record in records} - {EVERY_RAIL}
    found = [Candidate("node", (node,), EVERY_RAIL, (), _ids(ids)) for node, ids in sorted(by_node.items())]
    if len(rails) >= 2:
        found += [
            Candidate("rail", (node,), rail, (), _ids(ids))
            for (node, rail), ids in sorted(by_unit.items())
            if rail != EVERY_RAIL
        ]
    return found


def _pair_links(records: Sequence[Measured]) -> list[Candidate]:
    by_pair: dict[tuple[tuple[int, ...], int], list[int]] = defaultdict(list)
    for index, record in enumerate(records):
        if len(record.nodes) == 2:
            by_pair[(record.nodes, record.rail)].append(index)
    return [Candidate("link", pair, rail, (), _ids(ids)) for (pair, rail), ids in sorted(by_pair.items())]


def _switch_links(records: Sequence[Measured], leaf_of: LeafOf) -> list[Candidate]:
    """On each rail and on every rail at once: each leaf's uplink (three leaves or more: slow with every other
    leaf) and each link between two leaves, over the pairs measured across it."""
    crossing: dict[tuple[int, str, str], list[int]] = defaultdict(list)
    for index, record in enumerate(records):
        if len(record.nodes) != 2:
            continue
        a, b = (leaf_of(node, record.rail) for node in record.nodes)
        if a is not None and b is not None and a != b:
            low, high = sorted((a, b))
            crossing[(record.rail, low, high)].append(index)
    rails = sorted({rail for rail, _, _ in crossing})
    spans = [[rail] for rail in rails] + ([rails] if len(rails) >= 2 else [])
    found = []
    for span in spans:
        rail = span[0] if len(span) == 1 else EVERY_RAIL
        mine: dict[tuple[str, str], list[int]] = defaultdict(list)
        for (r, a, b), ids in crossing.items():
            if r in span:
                mine[(a, b)] += ids
        leaves = sorted({leaf for pair in mine for leaf in pair})
        for (a, b), ids in sorted(mine.items()):
            found.append(Candidate("switch_link", _side(records, ids, leaf_of, a), rail, (a, b), _ids(ids)))
        if len(leaves) >= 3:
            for leaf in leaves:
                ids = [i for pair, pair_ids in mine.items() if leaf in pair for i in pair_ids]
                found.append(Candidate("switch_link", _side(records, ids, leaf_of, leaf), rail, (leaf,), _ids(ids)))
    return found


def _searched(candidate: Candidate, records: Sequence[Measured]) -> Candidate:
    """A switch link between sets the matrix showed (no topology): its sides were chosen from the figures."""
    nodes = {n for i in candidate.covers for n in records[int(i)].nodes}
    measured = {n for r in records if candidate.rail in (r.rail, EVERY_RAIL) for n in r.nodes}
    return replace(candidate, searched=search_cost(len(nodes), len(measured)))


def search_cost(placed: int, measured: int) -> float:
    """nats: log of how many cuts the figures chose one among. Sides that hold every node measured are one of
    2^(n-1) bipartitions; sides that leave some out (a link between two leaves of three or more) put each node on
    one side, the other or neither, one of about 3^n / 2 ways. Held only to the 2^(placed-1) splits of the nodes
    it holds, a cut grown from the slowest nodes under wide noise (26 of 64, their pairs across slow by
    selection) beat its penalty and was named on a healthy rail."""
    if placed >= measured:
        return (measured - 1) * math.log(2)
    return measured * math.log(3) - math.log(2)


def _cuts(records: Sequence[Measured], threshold: float, known: set[bytes]) -> list[Candidate]:
    """With no topology, each rail's cuts the figures suggest (jobs.isolate.cut.bipartitions), a switch link
    between sets of nodes: none the leaves from the matrix already hold."""
    by_rail: dict[int, list[int]] = defaultdict(list)
    for index, record in enumerate(records):
        if len(record.nodes) == 2:
            by_rail[record.rail].append(index)
    found = []
    for rail, ids in sorted(by_rail.items()):
        measured = len({n for i in ids for n in records[i].nodes})
        for inside, outside in bipartitions([records[i] for i in ids], threshold):
            a, b = set(inside), set(outside)
            across = [i for i in ids if {*records[i].nodes} & a and {*records[i].nodes} & b]
            covers = _ids(across)
            if covers.tobytes() not in known:
                known.add(covers.tobytes())
                searched = search_cost(len(a | b), measured)
                found.append(Candidate("switch_link", inside, rail, (), covers, searched))
    return found


def _side(records: Sequence[Measured], ids: Sequence[int], leaf_of: LeafOf, leaf: str) -> tuple[int, ...]:
    return tuple(sorted({n for i in ids for n in records[i].nodes if leaf_of(n, records[i].rail) == leaf}))


def _ids(ids: Sequence[int]) -> Indices:
    return np.array(sorted(set(ids)), dtype=np.intp)
