"""`collbench wait` is never silent: a live line on a terminal, a plain line otherwise, stdout left alone."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from tests.conftest import SlurmCluster, collbench
from tests.jobs.launchers.test_submit_slurm import submit

pytestmark = [pytest.mark.slurm, pytest.mark.integration]

SWEEP = [
    "nodes=2",
    "slurm.tasks_per_node=1",
    "bench.ops=[all_reduce,all_gather]",
    "bench.iters=20",
    "faults.slow_rank=1",
    "faults.slow_ms=400",
]
"""At least 5 s on any machine: rank 1 reaches each of the 21 measurements 0.25 s late."""


def test_without_a_terminal_wait_prints_a_plain_line_and_json_keeps_stdout(
    slurm_cluster: SlurmCluster, workdir: Path
) -> None:
    job_id, _ = submit(slurm_cluster, workdir, *SWEEP)
    result = collbench(
        "wait", job_id, "--progress-every", "2", "--format", "json", "--output-dir", str(workdir / "runs"),
        cwd=workdir, env=slurm_cluster.env(),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["passed"] is True, "stdout is the JSON document and nothing else"
    lines = re.findall(rf"^collbench: job {job_id} (?:RUNNING|PENDING)\S* for \d+m\d\ds.*$", result.stderr, re.M)
    assert len(lines) >= 2, result.stderr
    assert any(re.search(r"; \d+/\d+ measurements \(slowest rank\)", line) for line in lines), lines


def test_on_a_terminal_wait_shows_a_live_line(slurm_cluster: SlurmCluster, workdir: Path) -> None:
    job_id, _ = submit(slurm_cluster, workdir, *SWEEP)
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 160, 0, 0))  # a terminal of 160 columns
    waiting = subprocess.Popen(
        [sys.executable, "-m", "jobs.cli", "wait", job_id, "--output-dir", str(workdir / "runs")],
        cwd=workdir, env=slurm_cluster.env(), stdout=subprocess.PIPE, stderr=follower,
    )  # fmt: skip
    os.close(follower)
    screen = b""
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        ready, _, _ = select.select([leader], [], [], 0.5)
        if ready:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the other side closed: wait is done
                break
            if not chunk:
                break
            screen += chunk
        elif waiting.poll() is not None:
            break
    out, _ = waiting.communicate(timeout=60)
    os.close(leader)
    text = screen.decode("utf-8", "replace")
    assert waiting.returncode == 0, text
    assert re.search(rf"job {job_id}: \d+/\d+ measurements \|", text), text
    assert "RUNNING for" in text and "\r" in text, "one line, redrawn in place"
    assert b"# collbench all_reduce: 2 ranks" in out
