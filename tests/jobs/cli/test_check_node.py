"""`collbench check --node` on this machine: a rank that fails and a rank that hangs each end the check
within its budget (check.local_budget_s) with exit 1 and one line naming the rank and what happened (a
drain reason); its run directory is a scratch one, removed when it ends, unless check.node_keep_run keeps it.
How it is recorded in the history: tests/jobs/history/test_node_check.py."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from jobs.rundir.layout import RunDir
from tests.conftest import collbench, startup_s

pytestmark = pytest.mark.integration

BUDGET_S = 30.0
"""check.local_budget_s for these checks. The default 10 s holds on an idle node; on a loaded 2-core CI
machine two ranks importing torch have taken over 10 s, and the check then rightly says the ranks did not
finish instead of naming the failed or hung one. A hung rank is named by its peer after 0.3 of the budget
(check_node_command.COLLECTIVE_SHARE), so 30 s leaves about 20 s for the ranks to start."""


def _scratch_in(workdir: Path) -> dict[str, str]:
    """The environment that puts the check's scratch directory (under the system's temp dir) in workdir."""
    return {**os.environ, "TMPDIR": str(workdir)}


@pytest.mark.parametrize(
    ("fault", "said"),
    [("faults.fail_rank=1", r"rank 1 on \S+ failed first: InjectedFault")],  # a hung rank: the SIGINT test below
)
def test_a_failed_rank_fails_the_node_in_one_line_within_the_budget(workdir: Path, fault: str, said: str) -> None:
    startup = startup_s(cwd=workdir)
    started = time.monotonic()
    result = collbench(
        "check", "--node", "check.local_sizes=[64K]", f"check.local_budget_s={BUDGET_S:g}", f"output_dir={workdir}",
        fault, cwd=workdir, env=_scratch_in(workdir),
    )  # fmt: skip
    took = time.monotonic() - started
    print(f"check --node, {fault}: {took:.1f} s, of which starting the interpreter about {startup:.1f} s")
    assert result.returncode == 1, result.stdout + result.stderr
    assert re.fullmatch(rf"FAIL \S+: {said}[^\n]*\n", result.stdout), result.stdout
    assert list(workdir.iterdir()) == [], "a failed check leaves no run directory either"
    # the product's promise: from its start (after the interpreter's) to its line within the budget (the
    # ranks are stopped END_WAIT_S before it ends); the interpreter's start is measured, not guessed
    assert took < BUDGET_S + startup, f"{took:.1f} s over the {BUDGET_S:g} s budget + {startup:.1f} s to start"


def test_bad_input_is_refused_before_anything_starts(workdir: Path) -> None:
    result = collbench("check", "--node", "check.local_ranks=0", f"output_dir={workdir}", cwd=workdir)
    assert result.returncode == 2 and "check.local_ranks: 0 must be >= 1" in result.stderr, result.stderr
    assert list(workdir.iterdir()) == []


def test_a_check_started_with_sigint_ignored_still_stops_its_hung_rank(workdir: Path) -> None:
    """A prolog or a shell's background job may start collbench with SIGINT ignored, a disposition every child
    inherits: the local run is cancelled by SIGINT to submitit's controller, which then did nothing, so the
    check overran its budget twice over and left the hung rank running. (It is the hung-rank case of the test
    above too: the same line, within the budget, nothing left behind.)"""
    startup = startup_s(cwd=workdir)
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "jobs.cli", "check", "--node", "check.local_sizes=[64K]",
         f"check.local_budget_s={BUDGET_S:g}", f"output_dir={workdir}", "faults.hang_rank=1"],
        cwd=workdir, env=_scratch_in(workdir), capture_output=True, text=True, timeout=300, check=False,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )  # fmt: skip
    took = time.monotonic() - started
    # the ranks' command lines name their run directory, a scratch one in workdir (TMPDIR)
    left = subprocess.run(["pgrep", "-f", str(workdir)], capture_output=True, text=True, check=False).stdout.split()
    subprocess.run(["pkill", "-KILL", "-f", str(workdir)], check=False)  # a failed check leaves none behind either
    assert result.returncode == 1 and re.fullmatch(r"FAIL \S+: rank 1 on \S+ hung[^\n]*\n", result.stdout), result
    assert took < BUDGET_S + startup, f"{took:.1f} s over the {BUDGET_S:g} s budget + {startup:.1f} s to start"
    assert left == [], f"processes of the check still running: {left}"
    assert list(workdir.iterdir()) == [], "a failed check leaves no run directory either"


@pytest.mark.parametrize("keep", ["check.node_keep_run=true", "--keep-run"])
def test_a_kept_run_stays_under_output_dir_and_the_line_says_where(workdir: Path, keep: str) -> None:
    runs = workdir / "runs"
    result = collbench(
        "check", "--node", "check.local_sizes=[64K]", f"check.local_budget_s={BUDGET_S:g}", f"output_dir={runs}",
        keep, cwd=workdir, env=_scratch_in(workdir),
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    kept = re.fullmatch(
        r"OK \S+: all_reduce over 2 local rank\(s\), busbw \S+ GB/s, \S+ s; run kept in (\S+)\n", result.stdout
    )
    assert kept, result.stdout
    assert [Path(kept.group(1))] == list(runs.iterdir()) and RunDir(Path(kept.group(1))).meta_file.is_file()
    assert sorted(workdir.iterdir()) == [runs], "no scratch directory either"


def test_keep_run_without_node_is_refused_before_anything_runs(workdir: Path) -> None:
    result = collbench("check", "--keep-run", cwd=workdir)
    assert result.returncode == 2 and "--keep-run goes with --node" in result.stderr, result.stderr
    assert list(workdir.iterdir()) == []
