"""The isolate verdict over simulated pair measurements: one bad node is named and cannot move the level,
a bad link is named without blaming either of its nodes, and the lines a user pastes are exact."""

from __future__ import annotations

import pytest

from jobs.inspect.isolate_verdict import verdict_findings
from jobs.isolate.drain_plan import verdict_drains
from jobs.isolate.plan import Group, pairs_plan
from jobs.isolate.verdict import Measured, exclude_override, judge

HOSTS = [f"n{i + 1}" for i in range(8)]


def measure(n: int, bad_nodes: set[int] = frozenset(), bad_links: set[Group] = frozenset()) -> list[Measured]:  # type: ignore[assignment]
    """Every pair once; a healthy pair gives 100 GB/s give or take 3%, a bad node or link 40."""
    found = []
    for number, measured in enumerate(pairs_plan(n)):
        for pair in measured:
            wobble = 1 + 0.03 * (((pair[0] * 7 + pair[1] * 3) % 5) - 2) / 2
            slow = bad_nodes & set(pair) or pair in bad_links
            found.append(Measured(number, pair, (40.0 if slow else 100.0) * wobble))
    return found


@pytest.mark.parametrize("n", [3, 4, 5, 8])
def test_one_bad_node_is_named_and_the_level_stays_healthy(n: int) -> None:
    verdict = judge(measure(n, bad_nodes={2}))
    assert [f.node for f in verdict.bad_nodes] == [2]
    assert verdict.bad_links == [], "its slow pairs are its own, not links"
    if n >= 4:  # with 3 nodes each healthy node has one pair of two with the bad node: its median is between
        assert 95 <= verdict.level <= 105, "the bad node cannot drag the level down"
    assert verdict.bad_nodes[0].slow == verdict.bad_nodes[0].measurements == n - 1
    assert exclude_override(HOSTS, verdict) == "slurm.exclude=n3"
    [drain] = verdict_drains(verdict_findings(verdict, list(HOSTS), []), "isolate", "run-1")
    assert drain.startswith(
        "scontrol update NodeName=n3 State=DRAIN 'Reason=collbench:slow_node by isolate run=run-1 busbw 0."
    )


@pytest.mark.parametrize("n", [4, 8])
def test_a_bad_link_is_named_and_neither_of_its_nodes(n: int) -> None:
    verdict = judge(measure(n, bad_links={(1, 3)}))
    assert [link.nodes for link in verdict.bad_links] == [(1, 3)]
    assert verdict.bad_nodes == [] and exclude_override(HOSTS, verdict) == ""
    assert verdict.bad_links[0].ratio == pytest.approx(0.4, abs=0.03)


def test_a_healthy_cluster_names_nothing_and_keeps_its_matrix() -> None:
    verdict = judge(measure(8))
    assert not verdict.found and verdict_drains(verdict_findings(verdict, list(HOSTS), []), "isolate", "r") == []
    assert len(verdict.matrix) == 28 and verdict.spread < 5


def test_an_expected_level_is_used_as_given() -> None:
    verdict = judge(measure(4), expected_busbw=200.0)
    assert verdict.level == 200.0 and len(verdict.bad_nodes) == 4, "everything is short of 200 GB/s"


def test_two_bad_nodes_in_eight_are_both_named_with_one_exclude_list() -> None:
    verdict = judge(measure(8, bad_nodes={2, 6}))
    assert [f.node for f in verdict.bad_nodes] == [2, 6]
    assert exclude_override(HOSTS, verdict) == "slurm.exclude=n[3,7]"
