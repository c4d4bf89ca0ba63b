"""Accuracy under noise: collbench isolate's and check's plans and verdict (jobs.isolate) over synthetic figures.

    .venv/bin/python -m tests.bench.bench_grains [--quick] [--trials N] [--seed S] [--jobs J] [--nodes N,..]
        [--plan PLAN]... [--fault KIND[:SLOWDOWN]]...

Not part of the test run, and not timed: it prints how often the verdict is right. The fabric: n nodes in
leaves of 32 (s1, s2, ...), 8 rails; every group a plan measures is measured on each rail (rail-aligned
groups), its figure 100 GB/s x noise x the faults on its slowest path, the noise Normal(1, sigma) clipped at
0.05, drawn afresh every time a group is measured (a pair measured again gets new noise).
One kind of fault a scenario, k of them, each slowing its path to 0.5x or 0.8x:
- node: every rail of the node;
- rail: one (node, rail);
- link: a leaf's uplink on one rail (every pair across that leaf on that rail).
The rounds are driven as the job drives them, through jobs.isolate.rounds.Rounds (start() a round of node
groups, finish() its figure per (group, rail)): isolate as its auto mode picks (pairs up to
isolate.pairs_max_nodes, isolate.rounds = 10 random matchings beyond), then its confirm rounds (every pair
the node-grain verdict would name a bad link measured again, at most isolate.confirm_rounds = 2 rounds);
check's whole allocation and two rounds of pairs (mode check, rounds 2, the leaves in node order), then its
confirm round (check.confirm_rounds = 1: every suspect measured again, as isolate's). The
verdict is judge_fabric over rounds.measured (check: its pair rounds only, as the verdict's Rounds.judged takes
them), tolerance 0.15, leaves={node: leaf}, and at 64 nodes also with no topology (leaves=None).

Per trial: exact, the faults named are the faults made, at their grain (a bad uplink is named by a switch
fault whose switches hold the leaf, or with no topology whose side lies in the leaf, on its rail or every
rail), and nothing else is named; healthy drained, the nodes named bad (a bad node or a bad rail of it) with
no fault of their own; missed, the faults made that nothing names at any grain; wrong grain, a fault named
at another grain (a bad node as its rails, a bad rail as its node, an uplink as its nodes); false links,
switch faults and pair links that cover no fault made; confirm, the rounds and groups measured after the
plan. Every figure is summed over the trials.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import statistics
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from itertools import combinations

from jobs.config.check_settings import CheckSettings
from jobs.config.isolate_settings import DEFAULT_TOLERANCE, PAIRS_MAX_NODES, IsolateMode, IsolateSettings
from jobs.isolate.bisect import Bisect
from jobs.isolate.check_plan import plan_cost
from jobs.isolate.confirm import ConfirmedPlan, confirming, planned_rounds
from jobs.isolate.grains import judge_fabric
from jobs.isolate.plan import Group, pairs_plan, random_plan
from jobs.isolate.rounds import GroupKey, Rounds
from jobs.isolate.verdict import EVERY_RAIL, Verdict

LEAF_SIZE = 32
RAILS = 8
LEVEL = 100.0
"""The healthy busbw, GB/s."""
NOISE_FLOOR = 0.05
SIGMAS = (0.05, 0.10, 0.20, 0.40)
SLOWDOWNS = (0.5, 0.8)
COUNTS = (1, 3)
KINDS = ("node", "rail", "link")
CHECK_PAIR_ROUNDS = 2
RANDOM_ROUNDS = 10
CONFIRM_ROUNDS = IsolateSettings().confirm_rounds
CHECK_CONFIRM_ROUNDS = CheckSettings().confirm_rounds
COST_SIZES = (4, 64, 1024, 4096)


@dataclass(frozen=True, slots=True)
class Fabric:
    n: int
    leaves: dict[int, str]
    """node -> its leaf switch."""
    members: dict[str, frozenset[int]]
    """leaf -> its nodes."""
    hosts: list[str]
    """node -> its host name, in the job's node order."""

    @classmethod
    def of(cls, n: int) -> Fabric:
        leaves = {node: f"s{node // LEAF_SIZE + 1}" for node in range(n)}
        members: dict[str, set[int]] = {}
        for node, leaf in leaves.items():
            members.setdefault(leaf, set()).add(node)
        hosts = [f"n{node + 1}" for node in range(n)]
        return cls(n, leaves, {leaf: frozenset(nodes) for leaf, nodes in members.items()}, hosts)

    def leaf_list(self) -> list[str | None]:
        return [self.leaves[node] for node in range(self.n)]


@dataclass(frozen=True, slots=True)
class Faults:
    kind: str
    slowdown: float
    nodes: frozenset[int] = frozenset()
    rails: frozenset[tuple[int, int]] = frozenset()
    """(node, rail)."""
    links: frozenset[tuple[str, int]] = frozenset()
    """(leaf, rail): the leaf's uplink on that rail."""

    @property
    def count(self) -> int:
        return len(self.nodes) + len(self.rails) + len(self.links)


def make_faults(fabric: Fabric, kind: str, k: int, slowdown: float, draw: random.Random) -> Faults:
    """k faults of one kind at random places: distinct nodes (for rails too), distinct (leaf, rail)."""
    if k == 0 or kind == "healthy":
        return Faults("healthy", 1.0)
    if kind == "node":
        return Faults(kind, slowdown, nodes=frozenset(draw.sample(range(fabric.n), k)))
    if kind == "rail":
        return Faults(
            kind, slowdown, rails=frozenset((node, draw.randrange(RAILS)) for node in draw.sample(range(fabric.n), k))
        )
    if kind == "link":
        places = [(leaf, rail) for leaf in sorted(fabric.members) for rail in range(RAILS)]
        return Faults(kind, slowdown, links=frozenset(draw.sample(places, k)))
    raise ValueError(f"unknown fault kind {kind!r}")


def factor(fabric: Fabric, faults: Faults, a: int, b: int, rail: int) -> float:
    """What the faults on the path of (a, b) on `rail` leave of the healthy figure."""
    hits = sum(node in faults.nodes or (node, rail) in faults.rails for node in (a, b))
    leaf_a, leaf_b = fabric.leaves[a], fabric.leaves[b]
    if leaf_a != leaf_b:
        hits += ((leaf_a, rail) in faults.links) + ((leaf_b, rail) in faults.links)
    return float(faults.slowdown**hits)


HEALTHY = (1.0,) * RAILS


def slowed(fabric: Fabric, faults: Faults, group: Group) -> tuple[float, ...]:
    """Each rail's share of the healthy figure a group keeps: its slowest pair's (a collective runs at its
    slowest path). A large group (check's whole allocation) is searched over its faulty nodes and one other
    node of each leaf: any pair of it is as slow as one of those."""
    touched = faults.nodes | {node for node, _ in faults.rails}
    uplinks = {leaf for leaf, _ in faults.links}
    leaves = fabric.leaves
    if not any(node in touched or leaves[node] in uplinks for node in group):
        return HEALTHY
    nodes: Sequence[int] = group
    if len(group) > 3:
        stand_in: dict[str, int] = {}
        for node in group:
            if node not in touched:
                stand_in.setdefault(leaves[node], node)
        nodes = sorted(touched & set(group)) + list(stand_in.values())
    pairs = list(combinations(nodes, 2))
    return tuple(min(factor(fabric, faults, a, b, rail) for a, b in pairs) for rail in range(RAILS))


def drive(
    settings: IsolateSettings,
    fabric: Fabric,
    faults: Faults,
    sigma: float,
    draw: random.Random,
    leaves: Sequence[str | None] = (),
) -> Rounds:
    """Every round as the job runs it, through Rounds: each group of a round measured on every rail, each
    figure with noise of its own (a group measured again in a later round draws new noise)."""
    rounds = Rounds(settings, fabric.hosts, list(range(RAILS)), leaves)
    gauss = draw.gauss
    while (groups := rounds.start()) is not None:
        figures: dict[GroupKey, float] = {}
        for group in groups:
            share = slowed(fabric, faults, group)
            for rail in range(RAILS):
                figures[rounds.key(group, rail)] = LEVEL * max(NOISE_FLOOR, gauss(1.0, sigma)) * share[rail]
        if not rounds.finish(figures):
            raise AssertionError(f"round {rounds.round_no} left unfinished: {rounds.unfinished}")
    return rounds


def confirm_cost(rounds: Rounds) -> tuple[int, int]:
    """The rounds and groups measured after the plan (isolate's confirm rounds; 0 for a fixed plan)."""
    if not isinstance(rounds.planner, ConfirmedPlan):
        return 0, 0
    planned = len(rounds.planner.plan)
    groups = {(m.round, m.nodes) for m in rounds.measured if m.round > planned}
    return rounds.round_no - planned, len(groups)


# ---- the plans


@dataclass(frozen=True, slots=True)
class Plan:
    label: str
    check: bool
    """collbench check's rounds (else isolate's, as auto picks them)."""
    topology: bool
    """The verdict is given each node's leaf (the plan too, for check)."""

    def settings(self, n: int, seed: int) -> IsolateSettings:
        if self.check:
            return IsolateSettings(
                mode="check",
                rounds=CHECK_PAIR_ROUNDS,
                confirm_rounds=CHECK_CONFIRM_ROUNDS,
                seed=seed,
                tolerance=DEFAULT_TOLERANCE,
            )
        mode: IsolateMode = "pairs" if n <= PAIRS_MAX_NODES else "random"
        return IsolateSettings(mode=mode, rounds=RANDOM_ROUNDS, seed=seed, tolerance=DEFAULT_TOLERANCE)


PLANS = {
    "isolate": Plan("isolate", check=False, topology=True),
    "check": Plan("check", check=True, topology=True),
    "isolate, no topology": Plan("isolate, no topology", check=False, topology=False),
    "check, no topology": Plan("check, no topology", check=True, topology=False),
}


# ---- scoring


@dataclass(slots=True)
class Score:
    trials: int = 0
    exact: int = 0
    """The bad nodes, bad rails and switch faults named are the faults made (pair links aside)."""
    exact_all: int = 0
    """Exact, and no pair link named either."""
    drained: int = 0
    """Healthy nodes named bad (as a node or by one of its rails)."""
    missed: int = 0
    """Faults made that nothing names, at any grain."""
    wrong_grain: int = 0
    """Faults named, but at another grain."""
    false_switch: int = 0
    """Switch faults that cover no fault made."""
    pair_links: int = 0
    """Pair links named (verdict.bad_links: a pair slow on a rail, both its nodes healthy); no fault made is one."""
    inconclusive: int = 0
    """Trials whose verdict holds an inconclusive unit (verdict.inconclusive): said, neither named nor drained."""
    inconclusive_units: int = 0
    """The inconclusive units, summed."""
    extra_rounds: int = 0
    """Rounds measured after the plan (isolate's confirm rounds)."""
    extra_groups: int = 0
    """Groups measured in them (each on every rail)."""
    most_extra: tuple[int, int] = (0, 0)
    """The most extra rounds, and groups, of one trial."""
    judge_s: list[float] = field(default_factory=list)

    def add(self, other: Score) -> None:
        self.trials += other.trials
        self.exact += other.exact
        self.exact_all += other.exact_all
        self.drained += other.drained
        self.missed += other.missed
        self.wrong_grain += other.wrong_grain
        self.false_switch += other.false_switch
        self.pair_links += other.pair_links
        self.inconclusive += other.inconclusive
        self.inconclusive_units += other.inconclusive_units
        self.extra_rounds += other.extra_rounds
        self.extra_groups += other.extra_groups
        self.most_extra = max(self.most_extra[0], other.most_extra[0]), max(self.most_extra[1], other.most_extra[1])
        self.judge_s += other.judge_s


def covered_links(
    fabric: Fabric, verdict: Verdict, made: frozenset[tuple[str, int]]
) -> tuple[set[tuple[str, int]], int]:
    """The uplinks made that a switch fault names, and how many switch faults name none."""
    named: set[tuple[str, int]] = set()
    stray = 0
    for fault in verdict.switch_faults:
        mine = {
            (leaf, rail)
            for leaf, rail in made
            if fault.rail in (rail, EVERY_RAIL)
            and (
                leaf in fault.switches
                if fault.switches
                else any(side and set(side) <= fabric.members[leaf] for side in fault.sides)
            )
        }
        named |= mine
        stray += not mine
    return named, stray


def score(fabric: Fabric, faults: Faults, verdict: Verdict) -> Score:
    bad_nodes = {figures.node for figures in verdict.bad_nodes}
    bad_rails = {(fault.node, fault.rail) for fault in verdict.bad_rails}
    drained = bad_nodes | {node for node, _ in bad_rails}
    faulty = set(faults.nodes) | {node for node, _ in faults.rails}
    links, stray = covered_links(fabric, verdict, faults.links)
    missed = wrong = 0
    for node in faults.nodes:
        if node not in bad_nodes:
            wrong += node in drained
            missed += node not in drained
    for node, rail in faults.rails:
        if (node, rail) not in bad_rails:
            wrong += node in bad_nodes
            missed += node not in bad_nodes
    for leaf, rail in faults.links:
        if (leaf, rail) not in links:
            behind = drained & fabric.members[leaf]
            wrong += bool(behind)
            missed += not behind
    exact = (
        bad_nodes == set(faults.nodes) and bad_rails == set(faults.rails) and links == set(faults.links) and not stray
    )
    return Score(
        trials=1,
        exact=int(exact),
        exact_all=int(exact and not verdict.bad_links),
        drained=len(drained - faulty),
        missed=missed,
        wrong_grain=wrong,
        false_switch=stray,
        pair_links=len(verdict.bad_links),
        inconclusive=int(bool(getattr(verdict, "inconclusive", []))),
        inconclusive_units=len(getattr(verdict, "inconclusive", [])),
    )


def trial(plan: Plan, fabric: Fabric, faults: Faults, sigma: float, draw: random.Random) -> Score:
    """One run: the rounds driven as the job drives them, judged as the verdict judges them."""
    settings = plan.settings(fabric.n, draw.randrange(1 << 30))
    rounds = drive(settings, fabric, faults, sigma, draw, fabric.leaf_list() if plan.topology else ())
    started = time.perf_counter()
    leaves = fabric.leaves if plan.topology else None
    planner = rounds.planner
    verdict = judge_fabric(
        rounds.judged,
        settings.tolerance,
        leaves=leaves,
        confirming=confirming(planner),
        planned_rounds=planned_rounds(planner),
    )
    took = time.perf_counter() - started
    result = score(fabric, faults, verdict)
    result.extra_rounds, result.extra_groups = result.most_extra = confirm_cost(rounds)
    result.judge_s.append(took)
    return result


# ---- the run


@dataclass(frozen=True, slots=True)
class Scenario:
    kind: str
    k: int
    slowdown: float

    @property
    def label(self) -> str:
        return "healthy" if self.k == 0 else self.kind


def scenarios(counts: Sequence[int]) -> list[Scenario]:
    return [Scenario("healthy", 0, 1.0)] + [
        Scenario(kind, k, slowdown) for kind in KINDS for k in counts for slowdown in SLOWDOWNS
    ]


@dataclass(frozen=True, slots=True)
class Size:
    nodes: int
    trials: dict[str, int]
    """plan -> trials."""
    counts: tuple[int, ...] = COUNTS


def sizes(trials: int, quick: bool) -> list[Size]:
    """`trials` at 64 nodes for check; a trial of isolate costs what 30 of check's do there (63 rounds of
    pairs and their confirm rounds, judged over 16,000 figures), so it runs 1/10 as many; at 1,024 1/20 for
    isolate and 1/5 for check; at 4,096 (k = 1 only), where one isolate verdict takes seconds, 1/20 and 1/10."""
    if quick:
        return [Size(64, dict.fromkeys(PLANS, 1), (1,)), Size(1024, {"isolate": 1}, (1,))]

    def share(part: float) -> int:
        return max(1, round(trials * part))

    return [
        Size(
            64,
            {
                "isolate": share(1 / 10),
                "check": trials,
                "isolate, no topology": share(1 / 10),
                "check, no topology": trials,
            },
        ),
        Size(1024, {"isolate": share(1 / 20), "check": share(1 / 5)}),
        Size(4096, {"isolate": share(1 / 20), "check": share(1 / 10)}, (1,)),
    ]


@dataclass(frozen=True, slots=True)
class Cell:
    plan: str
    nodes: int
    scenario: Scenario
    sigma: float
    trials: int
    seed: int


def run_cell(cell: Cell) -> Score:
    """The cell's trials, each with its own faults, plan seed and noise, all drawn from the cell's seed."""
    total = Score()
    fabric = Fabric.of(cell.nodes)
    draw = random.Random(f"{cell.seed}/{cell.plan}/{cell.nodes}/{cell.scenario}/{cell.sigma}")
    for _ in range(cell.trials):
        faults = make_faults(fabric, cell.scenario.kind, cell.scenario.k, cell.scenario.slowdown, draw)
        total.add(trial(PLANS[cell.plan], fabric, faults, cell.sigma, draw))
    return total


def weight(cell: Cell) -> float:
    """About what a cell costs: isolate's verdict weighs many more figures than check's."""
    return cell.trials * cell.nodes * (1 if PLANS[cell.plan].check else 6)


def cells(grid: Sequence[Size], seed: int) -> list[Cell]:
    return [
        Cell(plan, size.nodes, scenario, sigma, trials, seed)
        for size in grid
        for plan, trials in size.trials.items()
        for scenario in scenarios(size.counts)
        for sigma in SIGMAS
    ]


def chosen(todo: list[Cell], plans: Sequence[str], faults: Sequence[str]) -> list[Cell]:
    """The cells of `plans` (every plan where empty) and `faults` (kind, or kind:slowdown, as healthy or
    link:0.5; every scenario where empty)."""
    for plan in plans:
        if plan not in PLANS:
            raise ValueError(f"--plan {plan!r}: want one of {'; '.join(PLANS)}")
    for fault in faults:
        kind, _, slowdown = fault.partition(":")
        if kind not in ("healthy", *KINDS) or (slowdown and slowdown not in {f"{x:g}" for x in SLOWDOWNS}):
            raise ValueError(
                f"--fault {fault!r}: want healthy or {', '.join(KINDS)}, with :SLOWDOWN one of "
                + ", ".join(f"{x:g}" for x in SLOWDOWNS)
            )

    def wanted(scenario: Scenario) -> bool:
        label = f"{scenario.label}:{scenario.slowdown:g}"
        return not faults or any(fault in (scenario.label, label) for fault in faults)

    return [cell for cell in todo if (not plans or cell.plan in plans) and wanted(cell.scenario)]


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.0f}%" if whole else "-"


def _total(count: int, trials: int) -> str:
    return f"{count} ({count / trials:.3g})" if trials else "-"


def _confirm(got: Score, plan: str) -> str:
    if not got.trials:
        return "-"
    return f"{got.extra_rounds / got.trials:.2g} ({got.extra_groups / got.trials:.3g})"


def print_accuracy(results: Sequence[tuple[Cell, Score]]) -> None:
    head = ["plan", "nodes", "fault", "k", "slowdown", "trials", "exact", "exact, no pair link"]
    head += ["healthy drained (per trial)", "missed", "wrong grain", "false switch links", "pair links (per trial)"]
    head += ["inconclusive (units per trial)", "confirm rounds (groups) per trial"]
    for sigma in SIGMAS:
        print(f"\n### noise sigma {sigma:.0%}\n")
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for cell, got in results:
            if cell.sigma != sigma:
                continue
            scenario = cell.scenario
            row = [cell.plan, f"{cell.nodes:,}", scenario.label, str(scenario.k)]
            row += [f"{scenario.slowdown:g}x" if scenario.k else "-", str(got.trials)]
            row += [_pct(got.exact, got.trials), _pct(got.exact_all, got.trials), _total(got.drained, got.trials)]
            row += [str(got.missed), str(got.wrong_grain), str(got.false_switch), _total(got.pair_links, got.trials)]
            row.append(f"{_pct(got.inconclusive, got.trials)} ({got.inconclusive_units / max(1, got.trials):.2g})")
            row.append(_confirm(got, cell.plan))
            print("| " + " | ".join(row) + " |")


# ---- cost


def bisect_cost(n: int, slowdown: float = 0.5) -> tuple[int, int]:
    """Rounds and groups bisect takes to find one bad node (the last), noise-free: adaptive, so one case."""
    search = Bisect(n, DEFAULT_TOLERANCE)
    bad = n - 1
    groups = 0
    while (measured := search.next_round()) is not None:
        for group in measured:
            groups += 1
            search.record(group, LEVEL * (slowdown if bad in group else 1.0))
    return search.rounds, groups


def confirm_rows(results: Sequence[tuple[Cell, Score]], n: int) -> list[str]:
    """isolate's confirm rounds at n nodes, as the trials ran them: their mean (and most) rounds, groups and
    measurements a run, over every scenario at each noise."""
    rows = []
    mode = "pairs (auto)" if n <= PAIRS_MAX_NODES else f"random({RANDOM_ROUNDS}) (auto)"
    for sigma in SIGMAS:
        got = Score()
        for cell, score_ in results:
            if cell.nodes == n and cell.sigma == sigma and cell.plan == "isolate":
                got.add(score_)
        if not got.trials:
            continue
        rounds, groups = got.extra_rounds / got.trials, got.extra_groups / got.trials
        most_rounds, most_groups = got.most_extra
        label = f"isolate {mode}: its confirm rounds at {sigma:.0%} noise, mean (most) of {got.trials} runs"
        rows.append(
            f"| {label} | {n:,} | +{rounds:.2g} ({most_rounds}) | +{groups:,.3g} ({most_groups:,}) "
            f"| +{groups * RAILS:,.0f} ({most_groups * RAILS:,}) |"
        )
    return rows


def cost(results: Sequence[tuple[Cell, Score]] = ()) -> None:
    print("| plan | nodes | rounds | groups | measurements (groups x 8 rails) |")
    print("|---|---|---|---|---|")
    for n in COST_SIZES:
        fabric = Fabric.of(n)
        odd = n % 2
        pairs_rounds = n - 1 + odd
        pairs_groups = n * (n - 1) // 2
        if n <= PAIRS_MAX_NODES:  # the formula, checked against the plan where building it is cheap
            built = pairs_plan(n)
            assert (len(built), sum(map(len, built))) == (pairs_rounds, pairs_groups)
        rows = [
            (f"isolate pairs{' (auto)' if n <= PAIRS_MAX_NODES else ''}", pairs_rounds, pairs_groups),
            (
                f"isolate random({RANDOM_ROUNDS}){' (auto)' if n > PAIRS_MAX_NODES else ''}",
                RANDOM_ROUNDS,
                sum(map(len, random_plan(n, RANDOM_ROUNDS, 0))),
            ),
        ]
        for label, leaves in (("check", []), ("check, leaves known", fabric.leaf_list())):
            spent = plan_cost(n, CHECK_PAIR_ROUNDS, leaves, CHECK_CONFIRM_ROUNDS)
            rows.append((label, spent.rounds, spent.measurements))
        for label, rounds, groups in rows:
            print(f"| {label} | {n:,} | {rounds:,} | {groups:,} | {groups * RAILS:,} |")
        for row in confirm_rows(results, n):
            print(row)
        if n >= 4:
            rounds, groups = bisect_cost(n)
            print(f"| isolate bisect (adaptive: one bad node, no noise) | {n:,} | {rounds} | {groups} | node grain |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", help="one trial a cell, k = 1, 64 nodes and isolate at 1,024 (about 20 s)"
    )
    parser.add_argument(
        "--trials",
        type=int,
        default=20,
        help="check's trials at 64 nodes (isolate: 1/10; 1,024: 1/20 isolate, 1/5 check; 4,096: 1/20 and 1/10)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--nodes", default="", help="only these node counts, comma-separated (default: every size)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="worker processes (default: every core)")
    parser.add_argument(
        "--plan", action="append", default=[], help=f"only this plan (again for more): {'; '.join(PLANS)}"
    )
    parser.add_argument(
        "--fault", action="append", default=[], help="only this scenario (again for more): healthy, or KIND[:SLOWDOWN]"
    )
    args = parser.parse_args()
    started = time.perf_counter()
    grid = sizes(args.trials, args.quick)
    if args.nodes:
        wanted = {int(n) for n in args.nodes.split(",")}
        grid = [size for size in grid if size.nodes in wanted]
    try:
        todo = chosen(cells(grid, args.seed), args.plan, args.fault)
    except ValueError as error:
        parser.error(str(error))
    # the heaviest cells first, so the workers end together; the printing keeps the grid's order
    order = sorted(range(len(todo)), key=lambda i: -weight(todo[i]))
    with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        done = dict(zip(order, pool.map(run_cell, [todo[i] for i in order]), strict=True))
    results = [(todo[i], done[i]) for i in range(len(todo))]
    print(
        f"## Accuracy: level {LEVEL:g} GB/s, leaves of {LEAF_SIZE} nodes, {RAILS} rails, "
        f"tolerance {DEFAULT_TOLERANCE:g}, seed {args.seed}"
    )
    print(
        "\nexact: the bad nodes, bad rails and switch faults named are the faults made; healthy drained: nodes named\n"
        "bad (or a rail of theirs) with no fault of their own; missed: faults nothing names at any grain; wrong\n"
        "grain: faults named at another grain; false switch links: switch faults naming no fault made; pair links:\n"
        "verdict.bad_links (a pair slow on one rail, both nodes healthy), none of them made; confirm: isolate's\n"
        "rounds after its plan (each measures again, on every rail, the pairs the node-grain verdict would name bad\n"
        "links), and their groups, per trial (check has none). Sums over the trials."
    )
    print_accuracy(results)
    print("\n## Cost of the plans\n")
    cost(results)
    largest = max(cell.nodes for cell in todo)
    for plan in sorted({cell.plan for cell in todo if cell.nodes == largest}):
        times = [t for cell, got in results if cell.nodes == largest and cell.plan == plan for t in got.judge_s]
        print(
            f"\njudge_fabric, {plan} at {largest:,} nodes x {RAILS} rails: median {statistics.median(times):.2f} s, "
            f"max {max(times):.2f} s over {len(times)} verdicts ({args.jobs} worker(s) on {os.cpu_count()} cores)"
        )
    spent = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = sum(usage.ru_utime + usage.ru_stime for usage in spent)
    print(f"\ntotal {time.perf_counter() - started:.0f} s wall, {cpu:.0f} s CPU ({args.jobs} worker(s))")


if __name__ == "__main__":
    main()
