"""isolate's pairs and random plans measure a slow pair again before naming it a bad link (jobs.isolate.confirm):
through Rounds and replay, as the job and the verdict run them."""

from __future__ import annotations

from collections.abc import Callable

from jobs.config.isolate_settings import IsolateSettings
from jobs.isolate.plan import Group, pairs_plan
from jobs.isolate.rounds import GroupKey, Rounds
from jobs.isolate.verdict import judge

HOSTS = [f"n{i}" for i in range(1, 7)]


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


def test_a_bad_node_s_pairs_are_not_measured_again_and_sharing_pairs_take_two_rounds() -> None:
    assert run(lambda number, group: 0.1 if 2 in group else 10.0).round_no == 5
    slow = {(0, 1), (0, 2)}
    rounds = run(lambda number, group: 0.1 if group in slow else 10.0)
    assert [m.nodes for m in rounds.measured if m.round > 5] == [(0, 1), (0, 2)]
    assert rounds.round_no == 7, "two slow pairs that share node 0: one round each"


def test_no_confirmation_when_asked_for_none() -> None:
    settings = IsolateSettings(mode="pairs", confirm_rounds=0)
    assert run(lambda number, group: 0.1 if group == (1, 4) else 10.0, settings).round_no == len(pairs_plan(6))


def test_a_dip_on_one_rail_is_what_is_measured_again() -> None:
    """The suspects are the verdict's own, rail by rail: a pair slow on one rail of two is measured again."""
    from jobs.isolate.grains import judge_fabric

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
    from jobs.isolate.grains import judge_fabric

    dips = {(1, 3), (2, 3), (2, 4)}

    def figure(number: int, group: Group) -> float:
        if number <= 5:
            return 0.05 if group in dips else PLANNED[group]
        return 2 * PLANNED[group]

    rounds = run(figure)
    assert max(m.round for m in rounds.measured) > 5, "the dips were measured again"
    planned = [m for m in rounds.measured if m.round <= 5]
    assert judge_fabric(rounds.measured).level == judge_fabric(planned).level
