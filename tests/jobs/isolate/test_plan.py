"""The isolate planner: every pair exactly once in pairs mode, valid rounds everywhere, and bisect finding
one bad node in logarithmically many rounds, against a simulated fabric."""

from __future__ import annotations

import functools
import itertools
import time

import pytest

from jobs.isolate.bisect import Bisect, across
from jobs.isolate.plan import Group, Round, check_round, pairs_measured, pairs_plan, random_plan

COUNTS = [*range(2, 65), 512, 4096]


@functools.cache
def planned(n: int) -> list[Round]:
    """Each node count planned once: the 4096-node plan (8.4 million pairs) takes seconds in Python."""
    start = time.perf_counter()
    plan = pairs_plan(n)
    TOOK[n] = time.perf_counter() - start
    return plan


TOOK: dict[int, float] = {}


@pytest.mark.parametrize("n", COUNTS)
def test_pairs_measures_every_pair_exactly_once_and_no_node_twice_in_a_round(n: int) -> None:
    plan = planned(n)
    assert len(plan) == (n - 1 if n % 2 == 0 else n)
    for measured in plan:
        check_round(measured, n)
        assert len(measured) == n // 2
    pairs = pairs_measured(plan)
    assert len(pairs) == len(set(pairs)) == n * (n - 1) // 2


def test_planning_4096_nodes_takes_seconds_not_minutes() -> None:
    plan = planned(4096)
    print(f"pairs plan for 4096 nodes: {len(plan)} rounds, {len(pairs_measured(plan))} pairs in {TOOK[4096]:.2f} s")
    assert len(plan) == 4095


@pytest.mark.parametrize("n", [2, 3, 7, 64, 513])
def test_random_matchings_are_perfect_and_repeatable(n: int) -> None:
    plan = random_plan(n, 5, seed=11)
    assert plan == random_plan(n, 5, seed=11)
    assert n == 2 or plan != random_plan(n, 5, seed=12), "another seed, other matchings"
    for measured in plan:
        check_round(measured, n)
        assert len(measured) == n // 2


@pytest.mark.parametrize(
    ("bad", "message"),
    [(((0, 1), (1, 2)), "node 1 is in two groups"), (((0,),), "fewer than 2 nodes"), (((0, 9),), "not one of")],
)
def test_an_invalid_round_is_refused(bad: tuple[Group, ...], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        check_round(bad, 4)


def fabric(bad_nodes: set[int] = frozenset(), bad_links: set[Group] = frozenset()):  # type: ignore[assignment]
    """busbw of a group: 100 when healthy, 40 when it holds a bad node or both ends of a bad link."""

    def busbw(group: Group) -> float:
        hit = bad_nodes & set(group) or any(set(link) <= set(group) for link in bad_links)
        return 40.0 if hit else 100.0

    return busbw


def run_bisect(n: int, busbw, **options: float) -> Bisect:  # type: ignore[no-untyped-def]
    search = Bisect(n, **options)
    while (measured := search.next_round()) is not None:
        check_round(measured, n)
        for group in measured:
            search.record(group, busbw(group))
        assert search.rounds <= 4 * n, "the search ends"
    return search


@pytest.mark.parametrize("n", [4, 5, 6, 8, 13, 16, 64, 512])
def test_bisect_finds_one_bad_node_in_logarithmically_many_rounds(n: int) -> None:
    for bad in sorted({0, n // 3, n - 1}):
        search = run_bisect(n, fabric({bad}))
        assert search.bad_nodes == {bad} and not search.bad_links and not search.unresolved, (n, bad)
        assert search.rounds <= 2 + (n - 1).bit_length() + 1, (n, bad, search.rounds)
        if n >= 6:
            assert search.rounds < len(pairs_plan(n)), "fewer rounds than the full tournament"


@pytest.mark.parametrize("n", [4, 8, 16])
def test_bisect_names_nothing_on_a_healthy_fabric(n: int) -> None:
    search = run_bisect(n, fabric())
    assert (search.bad_nodes, search.bad_links, search.cross_faults) == (set(), set(), [])
    assert search.rounds == 2, "the whole, then both halves"


def test_bisect_finds_a_bad_link_inside_a_half() -> None:
    search = run_bisect(8, fabric(bad_links={(2, 3)}))
    assert search.bad_links == {(2, 3)} and search.bad_nodes == set()


def test_a_fault_across_the_halves_is_tested_pair_by_pair() -> None:
    search = run_bisect(8, fabric(bad_links={(1, 6)}))
    assert search.cross_faults == [((0, 1, 2, 3), (4, 5, 6, 7))]
    assert search.bad_links == {(1, 6)} and search.bad_nodes == set()


def test_across_pairs_every_node_of_one_half_with_every_node_of_the_other() -> None:
    pairs = across((0, 1), (2, 3, 4))
    assert sorted(pairs) == sorted(tuple(sorted(p)) for p in itertools.product((0, 1), (2, 3, 4)))


def test_an_expected_level_judges_the_whole_on_its_own() -> None:
    search = run_bisect(4, fabric(), expected_busbw=200.0)
    assert search.level() == 200.0
    assert search.unresolved == {0, 1, 2, 3} and search.bad_nodes == set(), "all short: no healthy node to judge by"
