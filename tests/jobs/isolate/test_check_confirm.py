"""collbench check measures its suspects again before it names them (check.confirm_rounds, jobs.isolate.confirm):
its rounds driven through Rounds in mode check, as the job drives them, and judged by check_verdict as
collbench check judges them."""

from __future__ import annotations

from collections.abc import Callable

from jobs.config.isolate_settings import IsolateSettings
from jobs.isolate.check_judge import CheckVerdict, check_verdict
from jobs.isolate.check_plan import WHOLE_ROUND, check_rounds
from jobs.isolate.confirm import planned_rounds
from jobs.isolate.plan import Group
from jobs.isolate.rounds import GroupKey, Rounds

HOSTS = [f"n{i}" for i in range(1, 9)]
PLANNED = 3
"""The whole allocation and two rounds of pairs."""


def run(figure: Callable[[int, Group], float], confirm_rounds: int = 1) -> Rounds:
    rounds = Rounds(IsolateSettings(mode="check", rounds=2, seed=3, confirm_rounds=confirm_rounds), HOSTS)
    while (groups := rounds.start()) is not None:
        figures: dict[GroupKey, float] = {rounds.key(g): figure(rounds.round_no, g) for g in groups}
        assert rounds.finish(figures)
    return rounds


def judged(rounds: Rounds) -> CheckVerdict:
    return check_verdict(HOSTS, rounds.measured, {}, tolerance=0.15, planned_rounds=planned_rounds(rounds.planner))


def slow_node(node: int) -> Callable[[int, Group], float]:
    return lambda number, group: 10.0 if node in group and number != WHOLE_ROUND else 100.0


def test_a_slow_node_is_measured_again_with_a_new_healthy_partner_then_cordoned() -> None:
    rounds = run(slow_node(5))
    again = [m.nodes for m in rounds.measured if m.round > PLANNED]
    met = {m.nodes for m in rounds.measured if m.round <= PLANNED and len(m.nodes) == 2}
    assert rounds.round_no == PLANNED + 1 and len(again) == 1 and 5 in again[0] and again[0] not in met
    verdict = judged(rounds)
    assert [node.host for node in verdict.cordoned] == ["n6"] and verdict.exit_code == 1
    assert "n6" not in verdict.vetted and not verdict.inconclusive


def test_a_healthy_check_measures_nothing_again_and_spends_no_confirming_round() -> None:
    rounds = run(lambda number, group: 100.0 + number)
    assert rounds.round_no == PLANNED and judged(rounds).exit_code == 0


def test_a_node_slow_in_the_plan_and_fast_when_measured_again_is_not_cordoned() -> None:
    """A chance dip of both of n6's pairs (other jobs' traffic): fast with its new partner, it is not drained."""
    dipped = slow_node(5)
    rounds = run(lambda number, group: dipped(number, group) if number <= PLANNED else 100.0)
    verdict = judged(rounds)
    assert not verdict.cordoned and verdict.exit_code in (0, 5), verdict.cordoned


def test_a_suspect_the_check_had_no_round_left_to_measure_again_is_inconclusive_not_cordoned() -> None:
    rounds = run(slow_node(5))
    plan_only = [m for m in rounds.measured if m.round <= PLANNED]
    verdict = check_verdict(HOSTS, plan_only, {}, tolerance=0.15, planned_rounds=PLANNED)
    assert not verdict.cordoned and verdict.inconclusive == ["n6"] and verdict.exit_code == 5


def test_with_no_confirming_round_the_check_names_on_its_pairs_alone() -> None:
    rounds = run(slow_node(5), confirm_rounds=0)
    assert rounds.round_no == PLANNED and planned_rounds(rounds.planner) is None
    assert [node.host for node in judged(rounds).cordoned] == ["n6"]


def test_the_budget_is_shared_with_the_confirming_rounds_but_two_nodes_have_none() -> None:
    assert check_rounds(8, 2, 1) == 4 and check_rounds(8, 2, 0) == 3
    assert check_rounds(2, 2, 1) == 1, "two nodes: the whole allocation is the only pair"
