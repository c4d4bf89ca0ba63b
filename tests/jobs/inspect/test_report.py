"""Pieces of jobs.inspect.report that read no run directory."""

from __future__ import annotations

import pytest

from jobs.inspect.report import rank_spans


@pytest.mark.parametrize(
    ("ranks", "text"),
    [([0], "0"), ([0, 1, 2, 5, 7, 8], "0-2,5,7-8"), ([9, 3, 4], "3-4,9"), (list(range(4096)), "0-4095")],
)
def test_rank_spans(ranks: list[int], text: str) -> None:
    assert rank_spans(ranks) == text
