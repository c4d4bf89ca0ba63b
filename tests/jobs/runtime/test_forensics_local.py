"""A local run with a hung or slow rank: status, logs and report name it, and its stack is in its log."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from jobs.rundir.records.rank import HEARTBEAT, HeartbeatPhase
from tests.conftest import collbench, startup_s

pytestmark = pytest.mark.integration

SMALL = ["bench.ops=[all_reduce]", "bench.max_bytes=4K", "bench.iters=3", "bench.warmup_iters=1", "output_dir=runs"]


def wait_for(predicate: object, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.2)


def test_a_hung_rank_is_named_by_status_logs_and_report(workdir: Path) -> None:
    host = re.escape(socket.gethostname())
    # status must run while rank 0 still waits for the hung rank: between rank 1's stack dump (watchdog_s
    # after it hangs) and rank 0 giving up (collective_s after its first collective began). That window is
    # sized from what a status costs here and now, a fresh interpreter (measured), with room for 8 of them:
    # 12 s on an idle machine, more on a loaded one, where a fixed 12 s has left too little.
    watchdog_s = 2
    collective_s = max(12, round(watchdog_s + 8 * startup_s(cwd=workdir)))
    launcher = subprocess.Popen(
        [sys.executable, "-m", "jobs.cli", "run", "faults.hang_rank=1", f"timeouts.collective_s={collective_s}",
         f"timeouts.watchdog_s={watchdog_s}", *SMALL],
        cwd=workdir, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        wait_for(lambda: list((workdir / "runs").glob("*/heartbeat/rank-00000.json")))
        run = next((workdir / "runs").glob("*"))
        wait_for(lambda: HEARTBEAT.read(run / "heartbeat" / "rank-00000.json").phase is HeartbeatPhase.START)
        log1 = run / "logs" / "rank-00001.log"
        wait_for(lambda: "Timeout (" in log1.read_text())  # the watchdog dumped the hung rank's stacks
        status = collbench("status", str(run), cwd=workdir)
        assert re.search(rf"behind the rest: 1 rank\(s\): 1 \({host}, initialising", status.stdout), status.stdout
        assert re.search(rf"^\s+1\s+{host}\s+running\s", status.stdout, re.M), status.stdout
    finally:
        _, err = launcher.communicate(timeout=120)
    assert launcher.returncode == 1
    failed = [line for line in err.splitlines() if line.startswith("collbench: FAILED: ")]
    assert re.match(rf"collbench: FAILED: rank 1 on {host} hung: never failed itself", failed[0]), err
    assert "rank(s) 0 noticed a lost peer" in failed[1] and "Timed out" in failed[1], err

    logs = collbench("logs", str(run), "--rank", "1", cwd=workdir)
    lines = logs.stdout.splitlines()
    assert lines and all(re.match(rf"    1 {host}\b", line) for line in lines), logs.stdout
    text = logs.stdout
    assert "Timeout (" in text and "in _inject_faults" in text  # the stack shows where it hung
    report = collbench("report", str(run), cwd=workdir)
    assert report.returncode == 1 and re.search(rf"FAILED: rank 1 on {host} hung", report.stderr), report.stderr


def test_logs_filter_by_host_level_pattern_and_tail(workdir: Path) -> None:
    run = collbench("run", "ranks=3", *SMALL, cwd=workdir).run_dir()
    everything = collbench("logs", str(run), cwd=workdir).stdout.splitlines()
    assert {line.split()[0] for line in everything} == {"0", "1", "2"}
    stamps = [m.group(1) for line in everything if (m := re.search(r"\| (\d{4}-\S+) \|", line))]
    assert stamps == sorted(stamps), "merged in time order"
    assert collbench("logs", str(run), "--host", "elsewhere", cwd=workdir).stdout == ""
    warnings = collbench("logs", str(run), "--level", "WARNING", cwd=workdir).stdout
    assert "| INFO " not in warnings and "| DEBUG " not in warnings
    finished = collbench("logs", str(run), "--grep", r"finished: \d+ results", cwd=workdir).stdout.splitlines()
    assert len(finished) == 3
    assert len(collbench("logs", str(run), "--tail", "4", cwd=workdir).stdout.splitlines()) == 4
    assert collbench("logs", str(run), "--rank", "1-", cwd=workdir).returncode == 2


def test_a_rank_slow_at_its_own_work_is_named_by_report_and_wait(workdir: Path) -> None:
    ran = collbench("run", "ranks=3", "faults.slow_rank=2", "faults.slow_ms=60", *SMALL, cwd=workdir)
    assert re.search(r"^collbench: slow host: \S+: rank\(s\) 2 slow at their own work", ran.stderr, re.M), ran.stderr
    report = collbench("report", str(ran.run_dir()), cwd=workdir)
    assert report.returncode == 0, report.stderr
    assert re.search(r"slow at its own work: rank 2 on \S+: \d+\.\d ms of its own between measurements", report.stdout)
    assert "own work: rank 0" not in report.stdout and "own work: rank 1" not in report.stdout
    assert "isolate" not in report.stdout + report.stderr, "a local run has no isolate command to offer"


def test_report_plots_busbw_against_size(workdir: Path) -> None:
    pytest.importorskip("matplotlib")
    run = collbench("run", *SMALL, cwd=workdir).run_dir()
    plot = workdir / "busbw.png"
    assert collbench("report", str(run), "--plot", str(plot), cwd=workdir).returncode == 0
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
