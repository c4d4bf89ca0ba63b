"""`collbench logs` when the merge spills to disk: every line, once, in time order.

jobs/inspect/logs.py merges one open file per source (each rank's log, each task's stdout/stderr). When
there are more sources than its open-file budget (RLIMIT_NOFILE's hard limit, less 64 kept for the rest,
at least 16) it merges them in groups of that size into JSON-lines files in a temporary directory and
merges those. Here a run directory holds 100 rank logs and some task output, and `collbench logs` runs
under `ulimit -n 80` (a budget of 16: seven groups); it could not even open its sources at once there.

The run directory is written by hand, line by line with known times, so the expected output is known
exactly: lines in time order, ties broken by rank and then by position in the file; a line without a
timestamp (a traceback, a print) keeps the time and level of the line before it in its file, or, at the
start of a file, those of the file's first timestamp, or the file's mtime when it has none; the lines
rank 0 echoes from its collbench log to its stderr are shown once, from the log.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import pytest

from tests.conftest import REPO

RANKS = 100
STEPS = 30
FD_LIMIT = 80
BASE_US = int(datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc).timestamp()) * 1_000_000
LEVELS = {"INFO": 20, "WARNING": 30, "ERROR": 40}


@dataclass(frozen=True, slots=True)
class Expected:
    at_us: int
    rank: int
    seq: int
    host: str
    level: str
    source: str
    text: str

    def rendered(self) -> str:
        return f"{self.rank:>5} {self.host:<12} {self.source:<3} | {self.text}"


def _loguru_stamp(at_us: int) -> str:
    return datetime.fromtimestamp(at_us / 1e6, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f+0000")


def _submitit_stamp(at_us: int) -> str:
    assert at_us % 1000 == 0, "submitit's stamps have milliseconds"
    return datetime.fromtimestamp(at_us / 1e6, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S,%f")[:-3]


def _host(rank: int) -> str:
    return f"node{rank // 8:02d}"


class RunWriter:
    """Writes the run directory's log files and records what `collbench logs` must print for each line."""

    def __init__(self, run: Path) -> None:
        self.run = run
        self.expected: list[Expected] = []

    def file(self, name: str, rank: int, source: str, lines: list[tuple[str, int | None, str]]) -> None:
        """lines: (kind, time in us or None, text), kind: 'log' (collbench's stamp), 'submitit', 'echo' (a
        collbench line on stderr, not shown), 'plain' (no stamp), 'blank'."""
        folder = self.run / ("logs" if source == "log" else "submitit")
        raw: list[str] = []
        at: int | None = None
        level = "INFO"
        lead: list[tuple[int, str]] = []
        for seq, (kind, when, text) in enumerate(lines):
            if kind == "log":
                tag = f"rank={rank} local={rank % 8} host={_host(rank)}"
                raw.append(f"{_loguru_stamp(when or 0)} | {text.split(':', 1)[0]:<8}| {tag} | {text}")
            elif kind == "echo":
                raw.append(f"{_loguru_stamp(when or 0)} | INFO    | rank={rank} local=0 host={_host(rank)} | {text}")
            elif kind == "submitit":
                raw.append(f"submitit {text.split(':', 1)[0]} ({_submitit_stamp(when or 0)}) - {text}")
            else:
                raw.append(text)
            if kind in ("log", "submitit", "echo"):
                at, level = when, text.split(":", 1)[0] if kind != "echo" else "INFO"
                for early_seq, early_text in lead:
                    self._expect(at, rank, early_seq, level, source, early_text)
                lead.clear()
            if kind in ("blank", "echo"):
                continue
            shown = raw[-1]
            if at is None:
                lead.append((seq, shown))
            else:
                self._expect(at, rank, seq, level, source, shown)
        path = folder / name
        path.write_text("\n".join(raw) + "\n", encoding="utf-8")
        if lead:  # no timestamp in the whole file: its lines are shown at its mtime
            mtime_us = BASE_US + 7_000_500
            os.utime(path, ns=(mtime_us * 1000, mtime_us * 1000))
            for early_seq, early_text in lead:
                self._expect(mtime_us, rank, early_seq, "INFO", source, early_text)

    def _expect(self, at: int | None, rank: int, seq: int, level: str, source: str, text: str) -> None:
        assert at is not None
        self.expected.append(Expected(at, rank, seq, _host(rank), level, source, text))

    def in_order(self) -> list[Expected]:
        return sorted(self.expected, key=lambda e: (e.at_us, e.rank, e.seq))


def _rank_log(rank: int) -> list[tuple[str, int | None, str]]:
    lines: list[tuple[str, int | None, str]] = []
    for step in range(STEPS):
        if rank == 0 and step == 3:  # the line rank 0 also echoes to its stderr
            lines.append(("log", BASE_US + 3_000_123, "INFO: rank 0 echoed line: shown once, from the log"))
        # every rank's lines interleave with every other's; at every 10th step all ranks share one time
        offset_ms = 0 if step % 10 == 5 else (rank * 37 + step * 11) % 1000
        at = BASE_US + step * 1_000_000 + offset_ms * 1000 + 123  # never a whole millisecond: no tie with submitit
        level = "ERROR" if (rank + step) % 13 == 0 else "WARNING" if (rank + step) % 7 == 0 else "INFO"
        lines.append(("log", at, f"{level}: rank {rank} step {step}"))
        if step % 9 == 4 and rank % 5 == 0:
            lines.append(("plain", None, "Traceback (most recent call last):"))
            lines.append(("plain", None, f"ValueError: rank {rank} step {step} (continued)"))
        if step == 17 and rank == 3:
            lines.append(("blank", None, ""))
    return lines


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Expected]]:
    run = tmp_path_factory.mktemp("logs") / "20260102-030405-local-abcdef"
    for folder in ("logs", "results", "status", "heartbeat", "env", "submitit"):
        (run / folder).mkdir(parents=True)
    meta = {"run_id": run.name, "launcher": "local", "job_id": "4242", "world_size": RANKS, "nodes": 13}
    (run / "run.json").write_text(json.dumps({**meta, "layout_version": 1, "task": "sweep"}), encoding="utf-8")
    writer = RunWriter(run)
    for rank in range(RANKS):
        writer.file(f"rank-{rank:05d}.log", rank, "log", _rank_log(rank))
    for rank in range(4):
        writer.file(
            f"4242_{rank}_log.out",
            rank,
            "out",
            [
                ("submitit", BASE_US + rank * 1000, f"INFO: Starting with JobEnvironment(rank={rank})"),
                ("plain", None, f"print from rank {rank}"),
                ("submitit", BASE_US + 29_500_000 + rank * 1000, "INFO: Job completed successfully"),
            ],
        )
    writer.file(
        "4242_0_log.err",
        0,
        "err",
        [
            ("plain", None, "lead line before any stamp"),
            ("plain", None, "second lead line"),
            ("submitit", BASE_US + 2_250_000, "WARNING: Bypassing signal SIGCONT"),
            ("echo", BASE_US + 3_000_123, "rank 0 echoed line: shown once, from the log"),
            ("plain", None, "stderr after the echo keeps its time"),
        ],
    )
    writer.file("4242_1_log.err", 1, "err", [("plain", None, "no stamp in this file"), ("plain", None, "nor here")])
    for rank in (2, 3):
        (run / "submitit" / f"4242_{rank}_log.err").write_text("", encoding="utf-8")
    return run, writer.in_order()


def logs(run: Path, *args: str, fd_limit: int | None = FD_LIMIT) -> subprocess.CompletedProcess[str]:
    """`collbench logs RUN ARGS` in a shell, under `ulimit -n fd_limit` when given."""
    command = [sys.executable, "-m", "jobs.cli", "logs", str(run), *args]
    if fd_limit is not None:
        command = ["bash", "-c", f'ulimit -n {fd_limit} && exec "$@"', "bash", *command]
    env = {
        **os.environ,
        "TZ": "UTC",
        "PYTHONPATH": os.pathsep.join(filter(None, (str(REPO), os.environ.get("PYTHONPATH")))),
    }
    return subprocess.run(command, cwd=run.parent, env=env, capture_output=True, text=True, timeout=120, check=False)


def test_the_fd_limit_is_too_low_to_open_every_source_at_once(run_dir: tuple[Path, list[Expected]]) -> None:
    run, _ = run_dir
    sources = len(list((run / "logs").glob("rank-*.log"))) + len(list((run / "submitit").glob("*_log.*")))
    assert sources > FD_LIMIT
    code = f"import glob; handles = [open(p) for p in sorted(glob.glob({str(run)!r} + '/*/*log*'))]"
    opened = subprocess.run(
        ["bash", "-c", f'ulimit -n {FD_LIMIT} && exec "$@"', "bash", sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=False,
    )
    assert opened.returncode == 1 and "Too many open files" in opened.stderr, opened.stderr


@pytest.mark.parametrize("fd_limit", [FD_LIMIT, None], ids=["spilled", "in-memory"])
def test_every_line_once_in_time_order(run_dir: tuple[Path, list[Expected]], fd_limit: int | None) -> None:
    run, expected = run_dir
    result = logs(run, fd_limit=fd_limit)
    assert result.returncode == 0, result.stderr
    printed = result.stdout.splitlines()
    assert len(printed) == len(expected) == RANKS * STEPS + 1 + 2 * 20 * 3 + 4 * 3 + 4 + 2
    first_wrong = next((i for i, (a, b) in enumerate(zip(printed, expected, strict=True)) if a != b.rendered()), None)
    assert first_wrong is None, (
        f"line {first_wrong}: got {printed[first_wrong]!r}, expected {expected[first_wrong].rendered()!r}"
    )
    assert sum("rank 0 echoed line" in line for line in printed) == 1


def test_filters_and_tail_apply_to_the_spilled_merge(run_dir: tuple[Path, list[Expected]]) -> None:
    run, expected = run_dir
    ranks = {0, 1, 2, 3, 42, 99}
    result = logs(run, "--rank", "0-3,42,99", "--level", "WARNING", "--grep", r"step 1\d|SIGCONT")
    assert result.returncode == 0, result.stderr
    pattern = re.compile(r"step 1\d|SIGCONT")
    wanted = [e for e in expected if e.rank in ranks and LEVELS[e.level] >= 30 and pattern.search(e.text)]
    assert len(wanted) > 10
    assert result.stdout.splitlines() == [e.rendered() for e in wanted]

    tail = logs(run, "--tail", "25")
    assert tail.returncode == 0, tail.stderr
    assert tail.stdout.splitlines() == [e.rendered() for e in expected[-25:]]

    on_host = logs(run, "--host", "node05")
    assert on_host.stdout.splitlines() == [e.rendered() for e in expected if e.host == "node05"]
