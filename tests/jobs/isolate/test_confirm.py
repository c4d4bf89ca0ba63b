"""isolate's pairs and random plans measure a slow pair again before naming it a bad link (jobs.isolate.confirm):
through Rounds and replay, as the job and the verdict run them."""

from __future__ import annotations

from collections.abc import Callable

from jobs.config.isolate_settings import IsolateSettings
from jobs.isolate.confirm import _slow_partners, _the_pair_or_its_node, confirming, longer, planned_rounds
from jobs.isolate.grains import judge_fabric
from jobs.isolate.naming import unconfirmed_line
from jobs.isolate.plan import Group, pairs_plan
from jobs.isolate.rounds import GroupKey, Rounds
from jobs.isolate.verdict import Measured, Unconfirmed, Verdict, judge

HOSTS = [f"n{i}" for i in range(1, 7)]
ONE_ROUND = IsolateSettings(mode="pairs", confirm_rounds=1)


def run(figure: Callable[[int, Group], float], settings: IsolateSettings | None = None) -> Rounds:
    """Every round as the job runs it, each group's figure from `figure(round, group)`."""
    rounds = Rounds(settings or IsolateSettings(mode="pairs"), HOSTS)
    while (groups := rounds.start()) is not None:
        figures: dict[GroupKey, float] = {rounds.key(g): figure(rounds.round_no, g) for g in groups}
        assert rounds.finish(figures)
    return rounds


def test_a_pair_slow_once_is_measured_again_and_not_named() -> None:
    rounds = run(lambda number, group: 0.1 if group == (1, 4) and number <= 5 else 10.0)
    assert rounds.round_no == 6, "the five rounds of pairs, then the slow pair again"
    assert [m.nodes for m in rounds.measured if m.round == 6] == [(1, 4)]
    assert judge(rounds.measured).bad_links == []


def test_a_pair_slow_twice_is_named() -> None:
    rounds = run(lambda number, group: 0.1 if group == (1, 4) else 10.0)
    assert rounds.round_no == 6 and [link.nodes for link in judge(rounds.measured).bad_links] == [(1, 4)]


def test_a_bad_node_is_measured_again_against_a_healthy_partner_and_sharing_pairs_take_two_rounds() -> None:
    bad = run(lambda number, group: 0.1 if 2 in group else 10.0)
    assert bad.round_no == 6, "the plan, then node 2 against a healthy node once more"
    [again] = [m.nodes for m in bad.measured if m.round == 6]
    assert 2 in again
    assert [f.node for f in judged(bad).bad_nodes] == [2]
    slow = {(0, 1), (0, 2)}
    rounds = run(lambda number, group: 0.1 if group in slow else 10.0)
    assert {m.nodes for m in rounds.measured if m.round == 6} | {
        m.nodes for m in rounds.measured if m.round == 7
    } >= slow
    assert rounds.round_no == 7, "two slow pairs that share node 0: one round each"


def test_no_confirmation_when_asked_for_none() -> None:
    settings = IsolateSettings(mode="pairs", confirm_rounds=0)
    assert run(lambda number, group: 0.1 if group == (1, 4) else 10.0, settings).round_no == len(pairs_plan(6))


def test_a_dip_on_one_rail_is_what_is_measured_again() -> None:
    """The suspects are the verdict's own, rail by rail: a pair slow on one rail of two is measured again."""
    rounds = Rounds(IsolateSettings(mode="pairs"), HOSTS, [0, 1])
    while (groups := rounds.start()) is not None:
        number = rounds.round_no
        figures = {
            rounds.key(g, rail): 0.1 if (g, rail, number <= 5) == ((1, 4), 1, True) else 10.0
            for g in groups
            for rail in (0, 1)
        }
        assert rounds.finish(figures)
    assert [(m.nodes, m.rail) for m in rounds.measured if m.round == 6] == [((1, 4), 0), ((1, 4), 1)]
    assert judge_fabric(rounds.measured).bad_links == []


PLANNED = {
    (0, 1): 0.86, (0, 2): 0.72, (0, 3): 1.12, (0, 4): 0.66, (0, 5): 1.03, (1, 2): 0.89, (1, 3): 0.65, (1, 4): 1.01,
    (1, 5): 0.63, (2, 3): 0.95, (2, 4): 0.66, (2, 5): 0.67, (3, 4): 0.94, (3, 5): 1.26, (4, 5): 0.7,
}  # fmt: skip
"""A fabric whose healthy pairs spread from 0.63 to 1.26, as two cores shared by every node make them here."""


def test_figures_measured_again_do_not_move_the_level() -> None:
    """Pairs measured again run with few others beside them, and on shared hosts measure faster than under the
    plan's load: the level is taken over each pair's first figure, so a healthy planned pair never falls under a
    threshold the confirmation raised (seen on the test cluster: a healthy link named, measured once, after the
    last confirming round)."""
    dips = {(1, 3), (2, 3), (2, 4)}

    def figure(number: int, group: Group) -> float:
        if number <= 5:
            return 0.05 if group in dips else PLANNED[group]
        return 2 * PLANNED[group]

    rounds = run(figure)
    assert max(m.round for m in rounds.measured) > 5, "the dips were measured again"
    planned = [m for m in rounds.measured if m.round <= 5]
    assert judge_fabric(rounds.measured).level == judge_fabric(planned).level


def judged(rounds: Rounds) -> Verdict:
    """The verdict as isolate's judges it: with `confirming` when its planner measured slow pairs again."""
    planner = rounds.planner
    return judge_fabric(rounds.measured, confirming=confirming(planner), planned_rounds=planned_rounds(planner))


def test_more_suspects_than_confirming_rounds_leave_a_link_measured_once_unconfirmed_not_bad() -> None:
    """Two pairs slow once that share node 0, one confirming round: (0, 1) is measured again and proves fast,
    (0, 2) never is. Its one low figure names no bad link (and costs no exit status): it is unconfirmed."""
    slow = {(0, 1), (0, 2)}
    rounds = run(lambda number, group: 0.1 if group in slow and number <= 5 else 10.0, ONE_ROUND)
    assert [m.nodes for m in rounds.measured if m.round > 5] == [(0, 1)], "no room left for (0, 2)"
    verdict = judged(rounds)
    assert verdict.bad_links == [] and verdict.bad_nodes == [] and verdict.bad_rails == [] and not verdict.found
    assert verdict.unconfirmed == [Unconfirmed((0, 2), 0.1, 0.01)]
    assert unconfirmed_line(verdict.unconfirmed[0], HOSTS) == (
        "unconfirmed: link n1-n3 measured once at 0.1 GB/s (0.01 of the level); re-run isolate to confirm"
    )


def test_a_link_slow_again_when_measured_again_is_named_bad_with_confirmation_on() -> None:
    rounds = run(lambda number, group: 0.1 if group == (1, 4) else 10.0, ONE_ROUND)
    verdict = judged(rounds)
    assert [link.nodes for link in verdict.bad_links] == [(1, 4)] and verdict.unconfirmed == [] and verdict.found


def test_with_confirmation_off_a_link_measured_once_is_unconfirmed_not_named() -> None:
    slow = {(0, 1), (0, 2)}
    rounds = run(lambda number, group: 0.1 if group in slow else 10.0, IsolateSettings(mode="pairs", confirm_rounds=0))
    assert not confirming(rounds.planner)
    verdict = judged(rounds)
    assert verdict.bad_links == [] and verdict.bad_nodes == []
    assert sorted(u.nodes for u in verdict.unconfirmed) == [(0, 1), (0, 2)]


def test_two_nodes_slow_on_one_rail_once_are_measured_again_not_named_on_one_figure() -> None:
    """With two nodes each (node, rail) has one figure: a dip on rail 1 is a suspect, measured again. Measured
    again fast, nothing is named; slow again, neither rail is named: the pair cannot tell which node's NIC it is,
    and the old verdict drained both (one healthy). Both are inconclusive."""

    def run_two(slow_again: bool) -> Rounds:
        rounds = Rounds(IsolateSettings(mode="pairs"), HOSTS[:2], [0, 1])
        while (groups := rounds.start()) is not None:
            dip = rounds.round_no == 1 or slow_again
            figures = {rounds.key(g, rail): 2.0 if rail == 1 and dip else 10.0 for g in groups for rail in (0, 1)}
            assert rounds.finish(figures)
        return rounds

    healthy = run_two(slow_again=False)
    assert healthy.round_no == 2, "the one pair, then measured again"
    assert not judged(healthy).found and judged(healthy).unconfirmed == []
    faulty = judged(run_two(slow_again=True))
    assert faulty.bad_rails == [] and not faulty.found
    assert {n for u in faulty.inconclusive for n in u.nodes} == {0, 1}


def test_a_confirming_round_measures_longer_as_the_spread_widens_up_to_four_times() -> None:
    assert [longer(noise, 0.15) for noise in (0.0, 0.05, 0.075, 0.1, 0.2, 0.4)] == [1, 1, 1, 2, 4, 4]
    assert longer(0.4, 0.15, longest=1) == 1


def _noisy(number: int, group: Group) -> float:
    """A slow pair among figures spread by about 25% (fixed, so the test judges the same figures each time)."""
    return 0.1 if group == (1, 4) else 10.0 * (1 + ((group[0] * 7 + group[1] * 13 + number * 5) % 9 - 4) / 10)


def _lengths(settings: IsolateSettings, figure: Callable[[int, Group], float]) -> list[int]:
    """Each round's length as the job runs 10 nodes' rounds."""
    rounds, lengths = Rounds(settings, [f"n{i}" for i in range(1, 11)]), []
    while (groups := rounds.start()) is not None:
        lengths.append(rounds.length)
        assert rounds.finish({rounds.key(g): figure(rounds.round_no, g) for g in groups})
    return lengths


def test_under_wide_noise_isolate_measures_its_suspects_longer_and_check_keeps_its_budget() -> None:
    quiet = _lengths(ONE_ROUND, lambda number, group: 0.1 if group == (1, 4) else 10.0)
    assert quiet == [1] * len(quiet) and len(quiet) == len(pairs_plan(10)) + 1, "as long as the plan's rounds"
    noisy = _lengths(ONE_ROUND, _noisy)
    assert len(noisy) == len(pairs_plan(10)) + 1 and noisy[:-1] == [1] * (len(noisy) - 1) and noisy[-1] > 1
    check = _lengths(IsolateSettings(mode="check", rounds=2, confirm_rounds=1), _noisy)
    assert len(check) == 4 and set(check) == {1}, "check's confirming round shares its budget"


def test_every_suspect_is_measured_again_in_the_first_confirming_round_each_with_a_partner_of_its_own() -> None:
    """Every partner met already, each suspect took the first healthy node, the round could hold one of them,
    and under wide noise (tens of suspects) a slow switch link among them was never measured again."""
    bad = {1, 2, 3}
    hosts = [f"n{i}" for i in range(1, 11)]
    rounds = Rounds(IsolateSettings(mode="pairs"), hosts)
    while (groups := rounds.start()) is not None:
        assert rounds.finish({rounds.key(g): 0.1 if bad & set(g) else 10.0 for g in groups})
    again = [m.nodes for m in rounds.measured if m.round == len(pairs_plan(len(hosts))) + 1]
    assert {node for pair in again for node in pair} >= bad
    assert all(len(bad & set(pair)) == 1 for pair in again), "each against a healthy partner"
    assert sorted(f.node for f in judge_fabric(rounds.measured, confirming=True).bad_nodes) == sorted(bad)


def test_a_pair_slow_once_whose_node_was_slow_with_another_partner_measures_that_node_against_a_new_one() -> None:
    """check's plan: n5 slow on rail 3 with n4 and n6. Measuring (4, 5) again would say only that the pair is
    slow (and the node is named only once it was slow with a partner it had not met), so n5 meets n0 instead;
    where n5 met every healthy node, or neither node was slow with anyone else, the pair itself."""
    plan = [Measured(1, (4, 5), 40.0, 3), Measured(2, (5, 6), 45.0, 3), Measured(1, (0, 1), 100.0, 3)]
    plan += [Measured(2, (3, 4), 100.0, 3), Measured(1, (2, 3), 30.0, 0)]
    slow_with = _slow_partners(plan, 85.0)
    met = {m.nodes for m in plan}
    assert _the_pair_or_its_node((4, 5), {3}, slow_with, [0, 1, 2, 3], [], met) == [(0, 5)]
    assert _the_pair_or_its_node((4, 5), {3}, slow_with, [0], [], met | {(0, 5)}) == [(4, 5)], "met them all"
    assert _the_pair_or_its_node((2, 3), {0}, slow_with, [0, 1], [], met) == [(2, 3)], "slow with no one else"
