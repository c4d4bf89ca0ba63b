"""The accuracy simulation of tests/bench/bench_grains.py: its faults, the rounds driven through Rounds as the
job drives them, its scoring on hand-made verdicts, and a few trials at 64 nodes (its own figures are printed
by the bench, not asserted here)."""

from __future__ import annotations

import random
from itertools import combinations

import pytest

from jobs.isolate.check_plan import WHOLE_ROUND
from jobs.isolate.confirm import ConfirmedPlan, planned_rounds
from jobs.isolate.grains import judge_fabric
from jobs.isolate.plan import pairs_plan
from jobs.isolate.verdict import EVERY_RAIL, NodeFigures, RailFault, SwitchFault, Verdict
from tests.bench.bench_grains import (
    CONFIRM_ROUNDS,
    LEAF_SIZE,
    PLANS,
    RAILS,
    Cell,
    Fabric,
    Faults,
    Scenario,
    cells,
    chosen,
    confirm_cost,
    drive,
    factor,
    make_faults,
    run_cell,
    score,
    sizes,
    slowed,
)

FABRIC = Fabric.of(64)
"""Two leaves: s1 holds nodes 0-31, s2 nodes 32-63."""


def figures(node: int) -> NodeFigures:
    return NodeFigures(node, 8, 8, 50.0, 0.5)


def rail_fault(node: int, rail: int) -> RailFault:
    return RailFault(node, rail, 1, 1, 50.0, 0.5, [])


def switch(switches: tuple[str, ...], rail: int, sides: tuple[tuple[int, ...], ...] = ((), ())) -> SwitchFault:
    return SwitchFault(switches, sides, rail, 32, 32, 50.0, 0.5)


def verdict(
    nodes: list[int] = [],  # noqa: B006 - never mutated
    rails: list[tuple[int, int]] = [],  # noqa: B006
    switches: list[SwitchFault] = [],  # noqa: B006
) -> Verdict:
    found = Verdict(100.0, 1.0, 0.15, [], [figures(node) for node in nodes])
    found.bad_rails = [rail_fault(node, rail) for node, rail in rails]
    found.switch_faults = list(switches)
    return found


def test_the_fabric_has_leaves_of_32() -> None:
    assert FABRIC.leaves[0] == "s1" and FABRIC.leaves[LEAF_SIZE] == "s2" and set(FABRIC.members) == {"s1", "s2"}
    assert len(FABRIC.members["s2"]) == LEAF_SIZE


def test_each_fault_slows_only_its_own_path() -> None:
    node = Faults("node", 0.5, nodes=frozenset({3}))
    assert [factor(FABRIC, node, 3, 4, rail) for rail in range(RAILS)] == [0.5] * RAILS
    assert factor(FABRIC, node, 4, 5, 0) == 1.0
    rail = Faults("rail", 0.5, rails=frozenset({(3, 2)}))
    assert factor(FABRIC, rail, 3, 40, 2) == 0.5 and factor(FABRIC, rail, 3, 40, 1) == 1.0
    link = Faults("link", 0.8, links=frozenset({("s1", 4)}))
    assert factor(FABRIC, link, 3, 40, 4) == 0.8  # across s1's uplink on rail 4
    assert factor(FABRIC, link, 3, 4, 4) == 1.0  # within s1: no uplink on the path
    assert factor(FABRIC, link, 3, 40, 5) == 1.0


def test_faults_are_k_distinct_places() -> None:
    draw = random.Random(1)
    assert len(make_faults(FABRIC, "node", 3, 0.5, draw).nodes) == 3
    rails = make_faults(FABRIC, "rail", 3, 0.5, draw).rails
    assert len({node for node, _ in rails}) == 3
    assert len(make_faults(FABRIC, "link", 3, 0.5, draw).links) == 3
    assert make_faults(FABRIC, "healthy", 0, 1.0, draw).count == 0


def test_a_group_runs_at_its_slowest_pair_and_the_whole_allocation_too() -> None:
    link = Faults("link", 0.5, links=frozenset({("s1", 4)}))
    assert slowed(FABRIC, link, (3, 5, 40)) == tuple(0.5 if rail == 4 else 1.0 for rail in range(RAILS))
    assert slowed(FABRIC, link, (3, 5)) == (1.0,) * RAILS
    two = Faults("rail", 0.8, rails=frozenset({(3, 2), (50, 2), (7, 6)}))
    whole = tuple(range(FABRIC.n))
    for faults in (link, two, Faults("node", 0.5, nodes=frozenset({1, 63}))):
        every_pair = [min(factor(FABRIC, faults, a, b, r) for a, b in combinations(whole, 2)) for r in range(RAILS)]
        assert slowed(FABRIC, faults, whole) == tuple(every_pair)


def test_check_is_driven_through_its_rounds_and_judged_on_its_pairs() -> None:
    """Healthy at 5% noise: the plan's three rounds, no pair under the threshold, so no confirming round."""
    rounds = drive(PLANS["check"].settings(64, 7), FABRIC, Faults("healthy", 1.0), 0.05, random.Random(0))
    planned = [m for m in rounds.measured if m.round <= 3]
    assert rounds.mode == "check" and rounds.round_no == 3 and not rounds.unfinished
    assert [m.nodes for m in planned if m.round == WHOLE_ROUND] == [tuple(range(64))] * RAILS
    assert len(planned) == (1 + 32 + 32) * RAILS and {m.rail for m in planned} == set(range(RAILS))
    assert all(m.round != WHOLE_ROUND and len(m.nodes) == 2 and m.busbw > 0 for m in rounds.judged)
    assert confirm_cost(rounds) == (0, 0)


def test_isolate_measures_its_suspects_again_with_new_noise() -> None:
    """A slow node at 20% noise: measured again against healthy partners after the plan, each figure new noise."""
    faults = Faults("node", 0.5, nodes=frozenset({3}))
    rounds = drive(PLANS["isolate"].settings(64, 1), FABRIC, faults, 0.20, random.Random(2), FABRIC.leaf_list())
    assert isinstance(rounds.planner, ConfirmedPlan) and len(rounds.planner.plan) == len(pairs_plan(64))
    planned = len(pairs_plan(64))
    extra_rounds, extra_groups = confirm_cost(rounds)
    assert 1 <= extra_rounds <= CONFIRM_ROUNDS and extra_groups > 0
    again = [m for m in rounds.measured if m.round > planned]
    assert len(again) == extra_groups * RAILS and any(3 in m.nodes for m in again), "node 3 against a partner"
    assert len({m.busbw for m in again}) == len(again), "each figure measured again draws new noise"
    first = {(m.nodes, m.rail) for m in rounds.measured if m.round <= planned}
    assert all(3 in m.nodes or (m.nodes, m.rail) in first for m in again), "else only pairs slow once, again"


def test_the_faults_named_at_their_grain_are_exact() -> None:
    made = Faults("node", 0.5, nodes=frozenset({3, 40}))
    got = score(FABRIC, made, verdict(nodes=[3, 40]))
    assert (got.exact, got.exact_all, got.drained, got.missed, got.wrong_grain) == (1, 1, 0, 0, 0)


def test_a_healthy_node_named_is_drained_and_the_fault_left_unnamed_is_missed() -> None:
    made = Faults("node", 0.5, nodes=frozenset({3}))
    got = score(FABRIC, made, verdict(rails=[(5, 1)]))
    assert (got.exact, got.drained, got.missed, got.wrong_grain) == (0, 1, 1, 0)


def test_a_fault_named_at_another_grain_is_neither_drained_nor_missed() -> None:
    got = score(FABRIC, Faults("rail", 0.5, rails=frozenset({(3, 2)})), verdict(nodes=[3]))
    assert (got.exact, got.drained, got.missed, got.wrong_grain) == (0, 0, 0, 1)
    got = score(FABRIC, Faults("node", 0.5, nodes=frozenset({3})), verdict(rails=[(3, 0), (3, 1)]))
    assert (got.exact, got.drained, got.missed, got.wrong_grain) == (0, 0, 0, 1)


def test_an_uplink_is_named_by_a_switch_fault_holding_its_leaf_on_its_rail_or_every_rail() -> None:
    made = Faults("link", 0.5, links=frozenset({("s2", 4)}))
    for named in (switch(("s1", "s2"), 4), switch(("s2",), 4), switch(("s1", "s2"), EVERY_RAIL)):
        got = score(FABRIC, made, verdict(switches=[named]))
        assert (got.exact, got.missed, got.false_switch) == (1, 0, 0)
    got = score(FABRIC, made, verdict(switches=[switch(("s1", "s2"), 5)]))
    assert (got.exact, got.missed, got.false_switch) == (0, 1, 1)


def test_with_no_topology_an_uplink_is_named_by_a_side_within_its_leaf() -> None:
    made = Faults("link", 0.5, links=frozenset({("s2", 4)}))
    inside = switch((), 4, (tuple(range(32, 64)), tuple(range(32))))
    assert score(FABRIC, made, verdict(switches=[inside])).exact == 1
    mixed = switch((), 4, ((30, 31, 32), (0, 1)))
    assert score(FABRIC, made, verdict(switches=[mixed])).missed == 1


def test_an_uplink_named_only_by_its_nodes_is_the_wrong_grain_and_drains_them() -> None:
    made = Faults("link", 0.5, links=frozenset({("s2", 4)}))
    got = score(FABRIC, made, verdict(rails=[(40, 4), (41, 4)]))
    assert (got.exact, got.drained, got.missed, got.wrong_grain) == (0, 2, 0, 1)


def test_a_few_trials_at_64_nodes_find_a_half_speed_node_and_repeat() -> None:
    cell = Cell("check", 64, Scenario("node", 1, 0.5), 0.05, 3, seed=5)
    got = run_cell(cell)
    assert got.trials == 3 and got.missed == 0 and len(got.judge_s) == 3
    assert got.extra_rounds == 3, "the slow node measured again in one confirming round a trial"
    again = run_cell(cell)
    assert (again.exact, again.drained, again.pair_links) == (got.exact, got.drained, got.pair_links)


def test_isolate_pairs_at_64_nodes_name_a_half_speed_uplink_and_count_their_confirm_rounds() -> None:
    got = run_cell(Cell("isolate", 64, Scenario("link", 1, 0.5), 0.05, 1, seed=0))
    assert got.missed == 0 and got.drained == 0 and got.false_switch == 0
    assert 0 <= got.extra_rounds <= CONFIRM_ROUNDS and got.most_extra == (got.extra_rounds, got.extra_groups)


def test_the_quick_grid_is_small() -> None:
    quick = cells(sizes(20, quick=True), seed=0)
    assert {cell.nodes for cell in quick} == {64, 1024} and all(cell.trials == 1 for cell in quick)
    full = sizes(20, quick=False)
    assert [size.nodes for size in full] == [64, 1024, 4096] and full[0].trials["check"] == 20
    assert full[2].trials == {"isolate": 1, "check": 2} and full[2].counts == (1,)


def test_isolate_names_each_fault_after_measuring_it_again_and_drains_no_healthy_node() -> None:
    """As isolate's verdict judges its rounds (`confirming`, `planned_rounds`): each fault of 0.8 at 5% noise is
    named at its grain, only with a slow figure after the plan, and no healthy node is named."""
    made = [
        Faults("healthy", 1.0),
        Faults("node", 0.8, nodes=frozenset({3})),
        Faults("rail", 0.8, rails=frozenset({(40, 2)})),
        Faults("link", 0.8, links=frozenset({("s2", 4)})),
    ]
    for seed, faults in enumerate(made):
        settings = PLANS["isolate"].settings(64, seed)
        rounds = drive(settings, FABRIC, faults, 0.05, random.Random(seed), FABRIC.leaf_list())
        planned = planned_rounds(rounds.planner)
        assert planned == len(pairs_plan(64))
        verdict = judge_fabric(rounds.judged, leaves=FABRIC.leaves, confirming=True, planned_rounds=planned)
        got = score(FABRIC, faults, verdict)
        assert (got.exact, got.drained, got.missed, got.wrong_grain) == (1, 0, 0, 0), (faults, got)
        assert verdict.inconclusive == [] and verdict.unconfirmed == []
        assert confirm_cost(rounds)[0] <= CONFIRM_ROUNDS


@pytest.mark.parametrize("leaf", ["s1", "s2", "s3"])
def test_check_tells_a_leaf_s_uplink_from_its_neighbour_s_by_a_pair_to_a_third_leaf(leaf: str) -> None:
    """check's pairs across measure each leaf against one other: the uplinks of both and the link between them
    explain the same slow pairs (margin 0, all three inconclusive at 128 nodes, every leaf), until the confirming
    round measures each side against a third leaf."""
    fabric = Fabric.of(128)
    faults = Faults("link", 0.5, links=frozenset({(leaf, 3)}))
    settings = PLANS["check"].settings(fabric.n, 7)
    rounds = drive(settings, fabric, faults, 0.05, random.Random(1), fabric.leaf_list())
    verdict = judge_fabric(
        rounds.judged, settings.tolerance, leaves=fabric.leaves, confirming=True,
        planned_rounds=planned_rounds(rounds.planner),
    )  # fmt: skip
    assert [(fault.switches, fault.rail) for fault in verdict.switch_faults] == [((leaf,), 3)]
    assert score(fabric, faults, verdict).exact and not verdict.inconclusive


def test_the_bench_runs_the_plans_and_faults_asked_for_and_refuses_one_it_has_not() -> None:
    grid = cells(sizes(10, quick=False), seed=0)
    picked = chosen(grid, ["check"], ["healthy", "link:0.5"])
    assert {cell.plan for cell in picked} == {"check"}
    assert {(cell.scenario.label, cell.scenario.slowdown) for cell in picked} == {("healthy", 1.0), ("link", 0.5)}
    assert {cell.scenario.kind for cell in chosen(grid, [], ["node"])} == {"node"}
    assert chosen(grid, [], []) == grid
    with pytest.raises(ValueError, match=r"--plan 'checks': want one of isolate; check;"):
        chosen(grid, ["checks"], [])
    with pytest.raises(ValueError, match=r"--fault 'link:0.3': .* one of 0.5, 0.8"):
        chosen(grid, [], ["link:0.3"])
