"""`collbench logs`: every rank's log and its submitit stdout/stderr, merged in time order, filtered.

Streams: one open file per source and a heap merge, so memory follows the number of sources, never
ranks x lines. Lines without a timestamp (tracebacks, NCCL's own messages) keep the time and level of
the line before them in the same file.
"""

from __future__ import annotations

import heapq
import io
import json
import re
import resource
import sys
import tempfile
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TextIO

from jobs.inspect.postmortem import rank_spans
from jobs.rundir.layout import RunDir, rank_files, rank_of

LEVELS = {"TRACE": 5, "DEBUG": 10, "INFO": 20, "SUCCESS": 25, "WARNING": 30, "ERROR": 40, "CRITICAL": 50}
_LOGURU = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+[+-]\d{4}) \| (\w+)\s*\| rank=\d+ local=\d+ host=(\S+) \| ")
_SUBMITIT = re.compile(r"^submitit (\w+) \((\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\)")


@dataclass(frozen=True, slots=True)
class LogLine:
    at: float
    rank: int
    seq: int
    host: str
    level: str
    source: str
    """log (collbench's rank log), out or err (the task's stdout/stderr)."""
    text: str

    def render(self) -> str:
        return f"{self.rank:>5} {self.host:<12} {self.source:<3} | {self.text}"


@dataclass(frozen=True, slots=True)
class LogFilter:
    ranks: frozenset[int] | None = None
    host: str | None = None
    min_level: int = 0
    pattern: re.Pattern[str] | None = None

    def accepts(self, line: LogLine) -> bool:
        return (
            (self.host is None or line.host == self.host)
            and LEVELS.get(line.level, 20) >= self.min_level
            and (self.pattern is None or self.pattern.search(line.text) is not None)
        )


def parse_rank_spec(spec: str) -> frozenset[int]:
    """'3', '0-7,12' -> the ranks named; a ValueError names what is wrong."""
    ranks: set[int] = set()
    for part in spec.split(","):
        match = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", part)
        if not match:
            raise ValueError(f"--rank: {spec!r} is not a rank list; allowed: 3, 0-7 or 0-7,12")
        low, high = int(match.group(1)), int(match.group(2) or match.group(1))
        if high < low:
            raise ValueError(f"--rank: range {part.strip()!r} runs backwards")
        ranks.update(range(low, high + 1))
    return frozenset(ranks)


def check_ranks_within(ranks: frozenset[int], world_size: int) -> None:
    """A ValueError naming the ranks of `ranks` outside a run of `world_size` ranks, and the ranks it has."""
    outside = sorted(rank for rank in ranks if rank >= world_size)
    if not outside:
        return
    which = f"rank {outside[0]} is" if len(outside) == 1 else f"ranks {rank_spans(outside)} are"
    allowed = "none" if world_size < 1 else "0" if world_size == 1 else f"0-{world_size - 1}"
    raise ValueError(f"--rank: {which} outside the run, whose world size is {world_size}; allowed: {allowed}")


@dataclass(frozen=True, slots=True)
class Source:
    path: Path
    rank: int
    kind: str


def sources(run: RunDir, ranks: Iterable[int] | None = None) -> list[Source]:
    """Every rank log and every task stdout/stderr of the run (for the ranks asked, if any)."""
    wanted = None if ranks is None else set(ranks)
    found = []
    if wanted is None:
        found += [Source(path, rank_of(path), "log") for path in rank_files(run.logs_dir, ".log")]
    else:  # the files asked for by name: no listing of every rank's log
        found += [Source(run.rank_log(rank), rank, "log") for rank in sorted(wanted) if run.rank_log(rank).is_file()]
    for path in run.submitit_dir.glob("*_log.*"):
        match = re.fullmatch(r".+_(\d+)_log\.(out|err)", path.name)
        if match and (wanted is None or int(match.group(1)) in wanted):
            found.append(Source(path, int(match.group(1)), match.group(2)))
    return sorted(found, key=lambda s: (s.rank, s.kind))


LEAD_LIMIT = 10_000
"""Unstamped lines at the start of a file wait (up to this many) for the file's first timestamp."""


def read_lines(
    source: Source, handle: TextIO, host: str = "?", at: float = 0.0, level: str = "INFO"
) -> Iterator[LogLine]:
    lead: list[tuple[int, str]] = []
    stamped_yet = at > 0
    for seq, raw in enumerate(handle):
        text = raw.rstrip("\n")
        if not text:
            continue
        stamp = _stamp(text)
        if stamp is not None:
            at, level = stamp[0], stamp[1]
            host = stamp[2] or host
            stamped_yet = True
            if stamp[2] and source.kind != "log":
                continue  # rank 0 echoes its collbench log to stderr: the log file has it already
        if not stamped_yet and len(lead) < LEAD_LIMIT:
            lead.append((seq, text))
            continue
        for early_seq, early_text in lead:
            yield LogLine(at, source.rank, early_seq, host, level, source.kind, early_text)
        lead.clear()
        yield LogLine(at, source.rank, seq, host, level, source.kind, text)
    if lead:  # a file with no timestamp at all (NCCL's own output, a bare traceback): when it was last written
        at = _mtime(source.path)
    for early_seq, early_text in lead:
        yield LogLine(at, source.rank, early_seq, host, level, source.kind, early_text)


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _stamp(text: str) -> tuple[float, str, str] | None:
    """(time, level, host) of a collbench or submitit log line; None for anything else."""
    ours = _LOGURU.match(text)
    if ours:
        return datetime.fromisoformat(_iso(ours.group(1))).timestamp(), ours.group(2), ours.group(3)
    theirs = _SUBMITIT.match(text)
    if theirs:
        return datetime.strptime(theirs.group(2), "%Y-%m-%d %H:%M:%S,%f").timestamp(), theirs.group(1), ""
    return None


def _iso(stamp: str) -> str:
    return stamp[:-2] + ":" + stamp[-2:]  # +0000 -> +00:00 for Python 3.10's fromisoformat


def merged(found: list[Source], keep: LogFilter) -> Iterator[LogLine]:
    """All lines of all sources in time order (rank, then file order, breaking ties)."""
    hosts = _hosts(found)
    limit = _open_file_budget()
    if len(found) <= limit:
        yield from _merge_open(found, keep, hosts)
        return
    with tempfile.TemporaryDirectory(prefix="collbench-logs-") as scratch:
        runs = []
        for start in range(0, len(found), limit):
            spill = Path(scratch) / f"part-{start}.jsonl"
            with spill.open("w", encoding="utf-8") as out:
                for line in _merge_open(found[start : start + limit], keep, hosts):
                    out.write(
                        json.dumps([line.at, line.rank, line.seq, line.host, line.level, line.source, line.text]) + "\n"
                    )
            runs.append(spill)
        handles = [path.open(encoding="utf-8") for path in runs]
        try:
            yield from heapq.merge(*(_from_spill(h) for h in handles), key=_order)
        finally:
            for handle in handles:
                handle.close()


def _order(line: LogLine) -> tuple[float, int, int]:
    return (line.at, line.rank, line.seq)


def _from_spill(handle: TextIO) -> Iterator[LogLine]:
    for raw in handle:
        at, rank, seq, host, level, source, text = json.loads(raw)
        yield LogLine(at, rank, seq, host, level, source, text)


def _merge_open(found: list[Source], keep: LogFilter, hosts: dict[int, str]) -> Iterator[LogLine]:
    handles = [s.path.open(encoding="utf-8", errors="replace") for s in found]
    try:
        streams = [read_lines(s, h, hosts.get(s.rank, "?")) for s, h in zip(found, handles, strict=True)]
        yield from (line for line in heapq.merge(*streams, key=_order) if keep.accepts(line))
    finally:
        for handle in handles:
            handle.close()


def _hosts(found: list[Source]) -> dict[int, str]:
    """Each rank's host from the first tagged line of its collbench log (submitit files carry none)."""
    hosts = {}
    for source in found:
        if source.kind != "log":
            continue
        with source.path.open(encoding="utf-8", errors="replace") as handle:
            for raw in handle:
                match = _LOGURU.match(raw)
                if match:
                    hosts[source.rank] = match.group(3)
                    break
    return hosts


def _open_file_budget() -> int:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard and hard != resource.RLIM_INFINITY:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        soft = hard
    return max(16, min(soft, 1 << 16) - 64)


def print_logs(run: RunDir, keep: LogFilter, tail: int | None, out: TextIO = sys.stdout) -> None:
    lines: Iterable[LogLine] = merged(sources(run, keep.ranks), keep)
    if tail is not None:
        lines = deque(lines, maxlen=tail)
    for line in lines:
        out.write(line.render() + "\n")


def follow(
    run: RunDir,
    keep: LogFilter,
    finished: Callable[[], bool],
    tail: int | None = None,
    poll_s: float = 0.5,
    out: TextIO = sys.stdout,
) -> None:
    """The lines there already (only their last `tail`, when given), then new lines as ranks write them,
    until `finished()` says the run is over (then drain once more); each rank's host named as `logs` does."""
    reader = _Follower(run, keep)
    lines = reader.new_lines(tail)
    done = False
    while True:
        for line in lines:
            out.write(line.render() + "\n")
        out.flush()
        if done:
            return
        done = finished()
        if not done:
            time.sleep(poll_s)
        lines = reader.new_lines()


class _Follower:
    """Where `follow` stands in each source: the bytes read, the time, level and host a line without a
    stamp takes from the lines before it, and each rank's host once its collbench log has said it."""

    def __init__(self, run: RunDir, keep: LogFilter) -> None:
        self.run = run
        self.keep = keep
        self.offsets: dict[Path, int] = {}
        self.carried: dict[Path, tuple[str, float, str]] = {}
        self.hosts: dict[int, str] = {}

    def new_lines(self, tail: int | None = None) -> list[LogLine]:
        """The complete lines written since the last call, filtered, in time order (the last `tail` of them)."""
        found = sorted(sources(self.run, self.keep.ranks), key=lambda s: s.kind != "log")  # logs name the hosts
        batch: list[LogLine] = []
        for source in found:
            fresh = self._read(source)
            batch.extend(fresh if tail is None else deque(fresh, maxlen=tail))
        batch.sort(key=_order)
        if tail is None:
            return batch
        return batch[-tail:] if tail else []

    def _read(self, source: Source) -> Iterator[LogLine]:
        with source.path.open("rb") as handle:
            handle.seek(self.offsets.get(source.path, 0))
            chunk = handle.read()
        complete = chunk[: chunk.rfind(b"\n") + 1]
        self.offsets[source.path] = self.offsets.get(source.path, 0) + len(complete)
        host, at, level = self.carried.get(source.path, ("?", 0.0, "INFO"))
        host = self.hosts.get(source.rank, host)
        for line in read_lines(source, io.StringIO(complete.decode("utf-8", "replace")), host, at, level):
            self.carried[source.path] = (line.host, line.at, line.level)
            if source.kind == "log" and line.host != "?":
                self.hosts.setdefault(source.rank, line.host)
            if self.keep.accepts(line):
                yield line
