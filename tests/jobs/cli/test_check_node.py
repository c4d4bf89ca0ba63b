"""`collbench check --node` on this machine: a rank that fails and a rank that hangs each end the check
within its 10 s with exit 1 and one line naming the rank and what happened (a drain reason)."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from tests.conftest import collbench

pytestmark = pytest.mark.integration


@pytest.mark.parametrize(
    ("fault", "said"),
    [
        ("faults.fail_rank=1", r"rank 1 on \S+ failed first: InjectedFault"),
        ("faults.hang_rank=1", r"rank 1 on \S+ hung"),
    ],
)
def test_a_failed_or_hung_rank_fails_the_node_in_one_line_within_the_budget(
    workdir: Path, fault: str, said: str
) -> None:
    started = time.monotonic()
    result = collbench("check", "--node", "check.local_sizes=[64K]", f"output_dir={workdir}", fault, cwd=workdir)
    took = time.monotonic() - started
    assert result.returncode == 1, result.stdout + result.stderr
    assert re.fullmatch(rf"FAIL \S+: {said}[^\n]*\n", result.stdout), result.stdout
    assert took < 10 + 1, f"{took:.1f} s over the 10 s budget (interpreter start allowed 1 s)"


def test_bad_input_is_refused_before_anything_starts(workdir: Path) -> None:
    result = collbench("check", "--node", "check.local_ranks=0", f"output_dir={workdir}", cwd=workdir)
    assert result.returncode == 2 and "check.local_ranks: 0 must be >= 1" in result.stderr, result.stderr
    assert list(workdir.iterdir()) == []
