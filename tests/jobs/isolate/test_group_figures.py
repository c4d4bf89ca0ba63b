"""A group's figure is keyed by its round and nodes, as the results lines carry them; lines written before
they did (the group only as a label) are placed by their label."""

from __future__ import annotations

from dataclasses import replace

from collectives.results import SummaryRow, summarize
from jobs.isolate.rounds import group_figures, group_label
from tests.jobs.rundir.synthetic import result

HOSTS = ["n1", "n2", "n3", "n4"]


def rows(round_no: int, nodes: tuple[int, ...], busbw_scale: float, as_data: bool) -> list[SummaryRow]:
    members = [2 * n + r for n in nodes for r in (0, 1)]
    label = group_label(round_no, HOSTS, nodes)
    records = [
        result(rank, HOSTS[rank // 2], 1 << 20, len(members), 100.0 * busbw_scale, group=label, members=members)
        for rank in members
    ]
    if as_data:
        records = [replace(r, round=round_no, nodes=list(nodes)) for r in records]
    return summarize(records)


def test_figures_are_keyed_by_round_and_nodes_whether_carried_or_labelled() -> None:
    for as_data in (True, False):
        found = group_figures(rows(2, (0, 3), 1.0, as_data) + rows(2, (1, 2), 4.0, as_data), HOSTS)
        assert set(found) == {(2, (0, 3), -1), (2, (1, 2), -1)}
        assert found[(2, (0, 3), -1)] > found[(2, (1, 2), -1)]


def test_a_label_naming_a_host_outside_the_job_is_left_out() -> None:
    assert group_figures(rows(1, (0, 1), 1.0, as_data=False), ["x1", "x2"]) == {}


def test_each_rail_of_a_group_is_a_figure_of_its_own() -> None:
    def on_rail(rail: int, scale: float) -> list[SummaryRow]:
        members = [2 * n + rail for n in (0, 3)]
        label = group_label(2, HOSTS, (0, 3), rail)
        records = [
            result(rank, HOSTS[rank // 2], 1 << 20, 2, 100.0 * scale, group=label, members=members) for rank in members
        ]
        return summarize([replace(r, round=2, nodes=[0, 3], rail=rail) for r in records])

    found = group_figures(on_rail(0, 1.0) + on_rail(1, 4.0), HOSTS)
    assert set(found) == {(2, (0, 3), 0), (2, (0, 3), 1)} and found[(2, (0, 3), 0)] > found[(2, (0, 3), 1)]
    assert group_label(2, HOSTS, (0, 3), 1) == "round 2: n[1,4] rail 1"


def test_a_round_on_rails_finishes_when_every_rail_of_every_group_has_its_figure() -> None:
    from jobs.config.isolate_settings import IsolateSettings
    from jobs.isolate.rounds import Rounds

    rounds = Rounds(IsolateSettings(mode="pairs"), HOSTS[:2], [0, 1])
    assert rounds.start() == ((0, 1),)
    assert not rounds.finish({(1, (0, 1), 0): 5.0})
    assert rounds.unfinished == [(0, 1)] and [(m.rail, m.busbw) for m in rounds.measured] == [(0, 5.0)]
    rounds = Rounds(IsolateSettings(mode="pairs", confirm_rounds=0), HOSTS[:2], [0, 1])  # one figure: no confirming
    rounds.start()
    assert rounds.finish({(1, (0, 1), 0): 5.0, (1, (0, 1), 1): 2.0})
    assert [(m.rail, m.busbw) for m in rounds.measured] == [(0, 5.0), (1, 2.0)] and rounds.start() is None
