"""What the terminal of `collbench run` shows, as nccl-tests' does: the header (versions, each rank's device
and host) and each row as rank 0 measures it while the run runs, then the final table as before; no line per
measurement. Real rank processes over gloo."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest
import torch

from tests.conftest import collbench

pytestmark = pytest.mark.integration

SLOW_MS = 2000
"""Rank 1 reaches each of the 4 measurements this late: 6 s of the run are still to come at the first row."""
SMALL = ["bench.ops=[all_reduce]", "bench.min_bytes=64", "bench.max_bytes=64K", "bench.step_factor=8"]
VERSION = metadata.version("collbench")
ROW = re.compile(r"^ +(\d+) +\d+ +float +sum +-1 ")
PER_MEASUREMENT = re.compile(r"all_reduce \d+ B in-place: [\d.]+ us, busbw")
"""The INFO line each measurement writes to the rank's log."""


def test_run_streams_the_header_and_rows_then_prints_the_table_and_report_names_the_versions(workdir: Path) -> None:
    args = ["run", *SMALL, "bench.warmup_iters=1", "bench.iters=3", "faults.slow_rank=1", f"faults.slow_ms={SLOW_MS}"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "jobs.cli", *args, "output_dir=runs"],
        cwd=workdir, stdout=subprocess.PIPE, stderr=(workdir / "stderr.txt").open("w"), text=True,
    )  # fmt: skip
    assert proc.stdout is not None
    lines: list[str] = []
    running_at_first_row: bool | None = None
    for line in proc.stdout:
        lines.append(line.rstrip("\n"))
        if running_at_first_row is None and ROW.match(line):
            run = Path(re.findall(r"run directory (\S+)", (workdir / "stderr.txt").read_text())[0])
            running_at_first_row = not (run / "summary.json").exists()
    assert proc.wait(timeout=300) == 0, (workdir / "stderr.txt").read_text()
    stdout, stderr = "\n".join(lines), (workdir / "stderr.txt").read_text()
    assert running_at_first_row, "the first row came when the run had ended, not as rank 0 measured it"

    host = socket.gethostname()
    assert lines[0] == f"# collbench version {VERSION} torch {torch.__version__} backend gloo device cpu"
    assert re.match(rf"^#  Rank  0 Group  0 Pid +\d+ on +{re.escape(host)} device cpu$", lines[3]), lines[3]
    assert re.match(rf"^#  Rank  1 Group  0 Pid +\d+ on +{re.escape(host)} device cpu$", lines[4]), lines[4]
    final = lines.index(lines[0], 1)  # the final table opens with the versions line too
    streamed = [int(m.group(1)) for line in lines[:final] if (m := ROW.match(line))]
    assert streamed == [64, 512, 4096, 32768], "each row once, in the order measured, before the final table"
    run = Path(re.findall(r"run directory (\S+)", stderr)[0])
    assert (run / "table.txt").read_text() in stdout + "\n", "the final table as before, whole"
    assert not PER_MEASUREMENT.search(stdout + stderr), "a line per measurement reached the terminal"
    assert "| INFO " not in stderr
    assert len(PER_MEASUREMENT.findall((run / "logs" / "rank-00000.log").read_text())) == 4, "they stay in the log"

    report = collbench("report", str(run), cwd=workdir)
    assert report.returncode == 0, report.stderr
    assert report.stdout.splitlines()[0] == lines[0]
    assert "# collbench all_reduce: 2 ranks" in report.stdout and "backend gloo" in report.stdout


def test_json_and_csv_stay_documents_with_no_row_streamed(workdir: Path) -> None:
    result = collbench("run", *SMALL, "bench.iters=2", "--format", "json", "output_dir=runs", cwd=workdir)
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["ranks"][0]["environment"]["torch"] == torch.__version__
    assert document["ranks"][0]["environment"]["collbench"] == VERSION
    csv = collbench("run", *SMALL, "bench.iters=2", "--format", "csv", "output_dir=runs", cwd=workdir)
    assert csv.returncode == 0, csv.stderr
    assert csv.stdout.splitlines()[0].startswith("op,size,") and not any(ROW.match(x) for x in csv.stdout.splitlines())
