from __future__ import annotations

from tests.architecture.cycles import cycles, import_graph


def test_the_cycle_finder_finds_a_cycle_and_only_the_cycle() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e2"}, "e2": set()}
    assert cycles(edges) == [["a", "b", "c"]]


def test_no_module_of_collbench_imports_itself_back() -> None:
    assert cycles(import_graph()) == []
