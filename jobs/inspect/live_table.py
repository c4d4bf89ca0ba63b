"""What the terminal of a run waited for shows while it runs, as nccl-tests' does: the header once rank 0's
environment is recorded (the versions, each rank's device and host), then each row as rank 0 records it in
results/rank-00000.jsonl, in the final table's layout (collectives/table.py formats both). Only reads.

StreamedRows prints them from a thread where the process is rank 0 itself (`collbench rank`).

The rows are rank 0's own figures (its time, its #wrong): the final table, printed when the run has ended,
combines every rank's. An isolate or check run shows the header only: its rows are its rounds' groups."""

from __future__ import annotations

import os
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from collectives.layout import LAYOUTS
from collectives.results import RankResult, ResultFormatError, RowKey, summarize
from collectives.table import caption_lines, column_headers, row_line, table_lines
from jobs.config.model import Config
from jobs.inspect.report import read_statuses, sweep_header
from jobs.inspect.run_header import header_lines, rank_places, read_environments, versions_line
from jobs.rundir.layout import RunDir
from jobs.rundir.records.config import load_run_config

STREAM_EVERY_S = 0.25
"""How often StreamedRows looks for rows rank 0 recorded."""

LineKey = tuple[str, str, str, int, int, str]
"""(op, dtype, reduce op, root, size, group): one line of the table, its placements side by side."""


@dataclass(slots=True)
class _Tail:
    """The complete lines a file gains, read from where the last read ended; a file replaced (a new attempt
    filed the old one away and began its own) is read from its start."""

    path: Path
    offset: int = 0
    partial: bytes = b""
    inode: int = -1

    def new_lines(self) -> list[bytes]:
        try:
            with self.path.open("rb") as handle:
                stat = os.fstat(handle.fileno())
                if stat.st_ino != self.inode or stat.st_size < self.offset:
                    self.offset, self.partial, self.inode = 0, b"", stat.st_ino
                handle.seek(self.offset)
                chunk = handle.read()
        except FileNotFoundError:
            return []
        self.offset += len(chunk)
        *lines, self.partial = (self.partial + chunk).split(b"\n")
        return [line for line in lines if line.strip()]


@dataclass(slots=True)
class LiveTable:
    """The header and rows of one run, as they become known; `lines()` gives what is new since its last call."""

    run: RunDir
    config: Config | None = None
    header_shown: bool = False
    op_shown: str = ""
    """The op whose caption and column headers are above the rows shown last."""
    pending: dict[LineKey, list[RankResult]] = field(default_factory=dict)
    shown: set[RowKey] = field(default_factory=set)
    tail: _Tail | None = None

    def lines(self, final: bool = False) -> list[str]:
        """What to print now; with `final` (the wait is over) the header whatever is on file, and a row whose
        other placement will not come (the rank ended before it)."""
        cfg = self._config()
        if cfg is None:
            return []
        out: list[str] = []
        if not self.header_shown:
            if not (final or self._header_ready(cfg)):
                return []
            out += self._header(cfg)
        if not cfg.spec.in_rounds:
            out += self._rows(cfg, final)
        return out

    def _config(self) -> Config | None:
        if self.config is None and self.run.config_file.exists():
            try:
                self.config = load_run_config(self.run)
            except (OSError, ValueError):
                return None
        return self.config

    def _header_ready(self, cfg: Config) -> bool:
        """Rank 0's environment is on file, and every rank's is, or rank 0 has measured (then every rank has
        passed the set-up, and each wrote its environment before it)."""
        if not self.run.rank_env(0).exists():
            return False
        try:
            recorded = len(os.listdir(self.run.env_dir))
        except FileNotFoundError:
            return False
        return recorded >= cfg.world_size or self.run.rank_results(0).exists()

    def _header(self, cfg: Config) -> list[str]:
        self.header_shown = True
        environments = read_environments(self.run)
        if not environments:
            return []
        places = rank_places(read_statuses(self.run), environments)
        return header_lines(versions_line(environments, cfg.backend), places)

    def _rows(self, cfg: Config, final: bool) -> list[str]:
        self.tail = self.tail or _Tail(self.run.rank_results(0))
        ready: list[list[RankResult]] = []
        for raw in self.tail.new_lines():
            result = _parse(raw)
            if result is None or result.key in self.shown:
                continue  # damaged, or carried over from an attempt before and shown already
            self.shown.add(result.key)
            key = _line_key(result)
            ready += [self.pending.pop(k) for k in list(self.pending) if k != key]  # that line's placements are over
            self.pending.setdefault(key, []).append(result)
            if {r.in_place for r in self.pending[key]} >= set(LAYOUTS[result.op].placements):
                ready.append(self.pending.pop(key))
        if final:
            ready += list(self.pending.values())
            self.pending.clear()
        return [line for results in ready for line in self._line(cfg, results)]

    def _line(self, cfg: Config, results: list[RankResult]) -> list[str]:
        header = sweep_header(cfg)
        rows = summarize(results, average="rank0")
        out = []
        if rows[0].op != self.op_shown:
            self.op_shown = rows[0].op
            out += [f"# {line}" for line in caption_lines(rows[0].op, rows, header)]
            out += ["#  (rows as rank 0 measures them; the table at the end combines every rank)", *column_headers()]
        return out + [row_line(line, header.report_cputime) for line in table_lines(rows)]


def _parse(raw: bytes) -> RankResult | None:
    try:
        return RankResult.from_json(raw)
    except ResultFormatError:  # damaged, or a format this collbench does not read: the final table names it
        return None


def _line_key(result: RankResult) -> LineKey:
    return (result.op, result.dtype, result.redop, result.root, result.size, result.group)


class StreamedRows:
    """A LiveTable's lines printed on `out` from a thread of their own every `every_s` seconds, while the
    process itself runs the rank (`collbench rank`'s rank 0, which has no wait loop to print them from);
    stop() prints what is left, the rows of a rank that ended before its other placement included."""

    def __init__(self, run: RunDir, out: TextIO | None = None, every_s: float = STREAM_EVERY_S) -> None:
        self.table = LiveTable(run)
        self.out = out or sys.stdout
        self.every_s = every_s
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._print_until_stopped, name="collbench-rows", daemon=True)

    def start(self) -> StreamedRows:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.stopped.set()
        if self.thread.is_alive():
            self.thread.join()
        self._print(final=True)

    def _print_until_stopped(self) -> None:
        while not self.stopped.wait(self.every_s):
            self._print(final=False)

    def _print(self, final: bool) -> None:
        lines = self.table.lines(final)
        if lines:
            self.out.write("".join(line + "\n" for line in lines))
            self.out.flush()
