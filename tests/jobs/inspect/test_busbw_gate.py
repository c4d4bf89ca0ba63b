"""--min-busbw over --busbw-sizes: a gate whose size range matches no row of the run fails, one line, in every
format; it never passes having checked nothing (issue 40)."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobs.cli.main import main
from jobs.inspect.report import Thresholds
from tests.jobs.rows import summary_row
from tests.jobs.rundir.synthetic import sweep_run


def test_a_range_that_matches_no_row_is_one_problem_and_one_that_matches_checks_its_rows() -> None:
    rows = [summary_row("all_reduce", size, 5.0, 2) for size in (1024, 4096)]
    assert Thresholds(min_busbw=10.0, min_size=1 << 30).problems(rows) == [
        "--min-busbw 10 --busbw-sizes 1G: matched no row (the run measured 1K to 4K bytes): nothing was checked"
    ]
    assert Thresholds(min_busbw=1.0, min_size=1 << 30).problems(rows) != [], "the floor is low, but nothing met it"
    assert Thresholds(min_busbw=1.0, min_size=2048).problems(rows) == [], "4K is in range and above the floor"
    assert len(Thresholds(min_busbw=10.0, max_size=2048).problems(rows)) == 1, "1K is in range and below it"
    assert Thresholds().problems(rows) == [], "no gate asked: nothing to match"


@pytest.mark.parametrize("fmt", ["table", "json", "csv"])
def test_report_with_a_gate_that_matches_nothing_exits_1_and_says_so(
    fmt: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = sweep_run(tmp_path)
    assert main(["report", str(run.path), "--format", fmt, "--min-busbw", "0", "--busbw-sizes", "1G:"]) == 1
    failed = [line for line in capsys.readouterr().err.splitlines() if line.startswith("collbench: FAILED")]
    assert failed == [
        "collbench: FAILED: --min-busbw 0 --busbw-sizes 1G: matched no row (the run measured 1K to 4K bytes): "
        "nothing was checked"
    ]
    assert main(["report", str(run.path), "--format", fmt, "--min-busbw", "0", "--busbw-sizes", "2K:"]) == 0
