"""The text a `*_perf` binary of nccl-tests prints, from 2.0 on, read back into tables (model.Table).

The layouts, from nccl-tests' src/common.cu (2.0 to 2.17) and src/util.cu (2.18 on):

- `# nccl-tests version V nccl-headers=H nccl-library=L` (2.18 on) and `# Collective test starting: NAME`
  (2.17 on) open a run; else its `# nThread N nGpus G minBytes A maxBytes B step: S(factor|bytes) warmup
  iters: W iters: I [agg iters: A] validation: V [graph: G] [unalign: U]` line does (agg iters and graph
  from 2.13, unalign from 2.19);
- `# Using devices`, then one line per rank: `#   Rank R Pid P on HOST device D [0xBB] NAME` (2.0 to
  2.13.5), `#  Rank R Group G Pid P on HOST device D [dddd:bb:dd] NAME` (2.13.6 on);
- the column headers, then the rows (text_rows.py; up to 2.11 the last figure of a placement is `error`,
  the largest deviation: deviation.py);
- `# Out of bounds values : N OK|FAILED`, `# Avg bus bandwidth    : X [OK|FAILED]` close the table.

As people keep them: a launcher's prefix on every line is stripped, and each task's, rank's or host's lines
read apart (prefixes.py); rows with no header above them open a table of their own (headerless, its ranks
from --ranks); processes that printed the same header lines interleaved (a non-MPI build under mpirun)
share one table whose devices repeat rank 0, kept apart afterwards (processes.py).

Lines that are none of these (NCCL's INFO lines, srun's or mpirun's words) are skipped and counted; of
them, NCCL's own `NCCL version 2.27.3+cuda12.9` (NCCL_DEBUG=INFO or VERSION) is kept for the label. A row
that does not parse is a BadImport naming its file and line; a row cut off at the very end of the output,
or a table with no closing lines, is a run cut short (by a time limit, a kill): its rows are kept and the
table is marked incomplete."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from jobs.imports.model import BadImport, Device, LoggedVersion, Parsed, Row, Table
from jobs.imports.prefixes import Stream, split_streams
from jobs.imports.text_rows import COLUMNS, headerless_row, looks_like_row, number, read_row

_NCCL_LOGGED = re.compile(r"\bNCCL version (\d+\.\d+\.\d+)[^\s+]*(?:\+cuda(\d+\.\d+))?")
_VERSION = re.compile(r"^# nccl-tests version (\S+) nccl-headers=(\d+) nccl-library=(\d+)")
_STARTING = re.compile(r"^# Collective test starting: (\S+)")
_PARAMS = re.compile(
    r"^# nThread (\d+) nGpus (\d+) minBytes (\d+) maxBytes (\d+) step: (\d+)\((factor|bytes)\) "
    r"warmup iters: (\d+) iters: (\d+)(?: agg iters: (\d+))? validation: (\d+)(?: graph: (\d+))?"
    r"(?: unalign: (\d+))?\s*$"
)
_DEVICE = re.compile(r"^#\s+Rank\s+(\d+)(?: Group\s+(\d+))? Pid\s+(\d+) on\s+(\S+) device\s+(\d+) \[([^\]]*)\] ?(.*)$")
_REDUCING = re.compile(r"^#\s*Reducing maxBytes to (\d+) due to memory limitation")
_OOB = re.compile(r"^# Out of bounds values\s*: (\d+) (OK|FAILED)")
_AVG = re.compile(r"^# Avg bus bandwidth\s*: (\S+)")
_ERROR = re.compile(r"^# error: (.*)$")
_KNOWN_COMMENTS = (
    "# Using devices",
    "# Blocking Enabled",
    "# Parallel Init Enabled",
    "# Collective test concluded",
    "# GPU memory usage",
    "# Writing JSON output to",
    "# skipping json output",
)


def parse_text(path: Path, parsed: Parsed) -> None:
    """Add the tables of one text file to `parsed`, each stream of it read on its own; BadImport on a
    damaged row."""
    split = split_streams(path.read_bytes().decode(errors="replace").splitlines())
    if split.kind:
        keys = [stream.key for stream in split.streams if stream.key]
        shown = ", ".join(keys[:4]) + (" ..." if len(keys) > 4 else "")
        apart = f"; {len(keys)} stream(s) read apart ({shown})" if keys else ""
        parsed.notes.append(f"{path}: {split.kind} stripped from {split.stripped} line(s){apart}")
    for stream in split.streams:
        _StreamReader(path, parsed, stream).read()


class _StreamReader:
    """nccl-tests' lines of one stream, in order, into tables."""

    def __init__(self, path: Path, parsed: Parsed, stream: Stream) -> None:
        self.path, self.parsed, self.stream = path, parsed, stream
        self.table: Table | None = None
        self.columns: tuple[str, ...] | None = COLUMNS
        self.per_placement = 4
        self.old_error: bool | None = False
        self.header_seen: set[str] = set()
        self.pending: tuple[BadImport, list[Row], Table, str] | None = None
        """A row that does not parse (or holds one placement only), with its placements read and its
        FILE:LINE: the output cut short mid-row if nothing of nccl-tests' follows it, a damaged row
        otherwise."""

    def read(self) -> None:
        for line in self.stream.lines:
            text = line.text.rstrip()
            if text.strip() and text != "#":
                self._line(text, line.text, f"{self.path}:{line.number}")
        if self.pending is not None:
            _, rows, cut, where = self.pending
            cut.rows += rows
            kept = "its out-of-place half kept" if rows else "left out"
            cut.cut_at = f"{where}: the output ends mid-row ({kept})"
            cut.complete = False
        self._close(f"{self.path}: the output ends before the table's closing lines")

    def _line(self, line: str, raw: str, where: str) -> None:
        known = _known(line, self.table)
        if known and self.pending is not None:
            raise self.pending[0]
        if known and self.table is None and headerless_row(line):
            self._opens(where, headerless=True)
        if not known:
            self.parsed.skip(where)
            if logged := _NCCL_LOGGED.search(line):
                self.parsed.logged.append(LoggedVersion(nccl=logged[1], cuda=logged[2] or "", where=where))
        elif self._another_process_said(line):
            return
        elif match := _VERSION.match(line):
            opened = self._opens(where)
            opened.tests_version, opened.nccl_version = match[1], int(match[3])
            self.header_seen.add(line)
        elif match := _STARTING.match(line):
            self._current(where, lambda t: bool(t.program or t.min_bytes)).program = match[1]
            self.header_seen.add(line)
        elif match := _PARAMS.match(line):
            _params(self._current(where, lambda t: bool(t.min_bytes or t.max_bytes)), match)
            self.header_seen.add(line)
        elif self.table is None:
            return  # a footer or header line of a run whose start is not in this file
        else:
            self._in_table(self.table, line, raw, where)

    def _in_table(self, table: Table, line: str, raw: str, where: str) -> None:
        if match := _DEVICE.match(line):
            bus = match[6] if ":" in match[6] else ""
            table.devices.append(
                Device(rank=int(match[1]), group=int(match[2] or 0), pid=int(match[3]), host=match[4],
                       device=int(match[5]), bus_id=bus, name=match[7].strip())
            )  # fmt: skip
        elif match := _REDUCING.match(line):
            table.max_bytes = int(match[1])
        elif line.startswith("# Per-Iteration Report"):
            table.per_iteration = True
        elif _is_column_header(line):
            self._header(table, line)
        elif match := _OOB.match(line):
            table.out_of_bounds = (table.out_of_bounds or 0) + int(match[1])
        elif match := _AVG.match(line):
            table.avg_busbw = number(match[1], where, "Avg bus bandwidth")
            table.closings += 1
            table.complete = True
        elif match := _ERROR.match(line):
            table.errors.append(match[1])
        elif looks_like_row(line):
            self._row(table, raw, where)

    def _header(self, table: Table, line: str) -> None:
        table.cputime = "cputime" in line
        self.per_placement = 8 if "i_min" in line else 4
        words = line.lstrip("#").split()
        first = next((i for i, word in enumerate(words) if word in ("time", "cputime")), len(words))
        self.columns = tuple(words[:first])
        self.old_error = "error" in words

    def _row(self, table: Table, raw: str, where: str) -> None:
        try:
            rows, whole = read_row(raw, where, self.columns, self.per_placement, self.old_error)
        except BadImport as damaged:
            self.pending = (damaged, [], table, where)
            return
        if whole:
            table.rows += rows
        else:
            half = BadImport(f"{where}: damaged row: one placement where nccl-tests prints two")
            self.pending = (half, rows, table, where)

    def _opens(self, where: str, headerless: bool = False) -> Table:
        self._close(f"{where}: another run starts before its closing lines")
        fresh = Table(where=where, headerless=headerless, stream=self.stream.key, stream_host=self.stream.host)
        self.parsed.tables.append(fresh)
        self.table, self.header_seen = fresh, set()
        self.columns, self.per_placement, self.old_error = (None, 4, None) if headerless else (COLUMNS, 4, False)
        return fresh

    def _current(self, where: str, said: Callable[[Table], bool]) -> Table:
        """The table a header line belongs to: the current one, or a new one where the current one already
        said it, holds rows or is closed."""
        table = self.table
        if table is None or said(table) or table.rows or table.complete:
            return self._opens(where)
        return table

    def _close(self, why: str) -> None:
        if self.table is not None and not self.table.complete:
            self.table.cut_at = self.table.cut_at or why

    def _another_process_said(self, line: str) -> bool:
        """A header line the table already holds, before any row: another process printing the same run's
        header (a non-MPI build under mpirun, its lines interleaved), not a run of its own."""
        if not (_VERSION.match(line) or _STARTING.match(line) or _PARAMS.match(line)):
            return False
        table = self.table
        return table is not None and not table.rows and not table.complete and line in self.header_seen


def _known(line: str, table: Table | None) -> bool:
    """One of nccl-tests' lines (a row, a header, a footer, a device), not someone else's."""
    if looks_like_row(line):
        return table is not None or headerless_row(line)
    if not line.startswith("#"):
        return False
    patterns = (_VERSION, _STARTING, _PARAMS, _DEVICE, _REDUCING, _OOB, _AVG, _ERROR)
    return (
        any(p.match(line) for p in patterns)
        or line.startswith(_KNOWN_COMMENTS)
        or line.startswith("# Per-Iteration Report")
        or _is_column_header(line)
        or ("(B)" in line and "(elements)" in line)
        or ("out-of-place" in line and "in-place" in line)
    )


def _is_column_header(line: str) -> bool:
    words = line.split()
    return line.startswith("#") and "size" in words and "count" in words and "type" in words


def _params(table: Table, match: re.Match[str]) -> None:
    table.nthreads, table.ngpus = int(match[1]), int(match[2])
    table.min_bytes, table.max_bytes = int(match[3]), int(match[4])
    if match[6] == "factor":
        table.step_factor = float(match[5])
    else:
        table.step_bytes = int(match[5])
    table.warmup_iters, table.iters = int(match[7]), int(match[8])
    table.validation = match[10] != "0"
    table.graph = int(match[11] or 0)
