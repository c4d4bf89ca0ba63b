"""`python -m tests` (tests/__main__.py): which arguments make one plain run, and the suite's exit status."""

from __future__ import annotations

import pytest

from tests.__main__ import NICENESS, NO_TESTS, STREAMS, asks_for_one_run, combined, for_stream


@pytest.mark.parametrize(
    ("argv", "one"),
    [
        ([], False),
        (["-x", "-q"], False),
        (["-k", "grains"], False),
        (["--durations=0"], False),
        (["-m", "slurm"], True),
        (["tests/jobs/isolate"], True),
        (["tests/jobs/isolate/test_grains.py::test_a_healthy_fabric_names_nothing_at_any_grain"], True),
        (["-x", "tests/slurm"], True),
        (["--collect-only"], True),
    ],
)
def test_a_path_a_node_id_or_a_marker_asks_for_one_plain_run(argv: list[str], one: bool) -> None:
    assert asks_for_one_run(argv) is one


def test_the_streams_cover_every_test_once_and_the_slurm_one_comes_first_for_a_core() -> None:
    assert sorted(STREAMS.values()) == ["not slurm", "slurm"]
    assert set(NICENESS) == set(STREAMS) and NICENESS["slurm"] < NICENESS["rest"]


@pytest.mark.parametrize(
    ("codes", "status"),
    [
        ({"slurm": 0, "rest": 0}, 0),
        ({"slurm": 1, "rest": 0}, 1),
        ({"slurm": 0, "rest": 2}, 2),
        ({"slurm": NO_TESTS, "rest": 0}, 0),
        ({"slurm": NO_TESTS, "rest": 1}, 1),
        ({"slurm": NO_TESTS, "rest": NO_TESTS}, NO_TESTS),
    ],
)
def test_the_suite_fails_when_a_stream_fails_and_a_stream_with_nothing_selected_is_no_failure(
    codes: dict[str, int], status: int
) -> None:
    assert combined(codes) == status


def test_a_file_both_streams_would_write_gets_each_stream_s_name() -> None:
    argv = ["-x", "--junitxml=out/report.xml", "--durations=5"]
    assert for_stream(argv, "slurm") == ["-x", "--junitxml=out/report-slurm.xml", "--durations=5"]
