"""The text a `*_perf` binary of nccl-tests prints, from 2.10 on, read back into tables (model.Table).

The layouts, from nccl-tests' src/common.cu (2.10 to 2.17) and src/util.cu (2.18 on):

- `# nccl-tests version V nccl-headers=H nccl-library=L` (2.18 on) and `# Collective test starting: NAME`
  (2.17 on) open a run; else its `# nThread N nGpus G minBytes A maxBytes B step: S(factor|bytes) warmup
  iters: W iters: I [agg iters: A] validation: V [graph: G] [unalign: U]` line does (agg iters and graph
  from 2.13, unalign from 2.19);
- `# Using devices`, then one line per rank: `#   Rank R Pid P on HOST device D [0xBB] NAME` (2.10 to
  2.13.5), `#  Rank R Group G Pid P on HOST device D [dddd:bb:dd] NAME` (2.13.6 on);
- the column headers (`size count type redop root`, then time, algbw, busbw, #wrong per placement;
  `cputime` with -C 1, four i_* columns per placement with -I 1, a timestamp with -S 1);
- a row: size, count, type, redop, root, then out-of-place and in-place; #wrong is `N/A` without
  validation, and up to 2.11 it is the largest difference found (`%5.0le`), not a count;
- `# Out of bounds values : N OK|FAILED`, `# Avg bus bandwidth    : X [OK|FAILED]` close the table.

Lines that are none of these (NCCL's INFO lines, srun's or mpirun's words) are skipped and counted; of
them, NCCL's own `NCCL version 2.27.3+cuda12.9` (NCCL_DEBUG=INFO or VERSION) is kept for the label. A row
that does not parse is a BadImport naming its file and line; a row cut off at the very end of the output,
or a table with no closing lines, is a run cut short (by a time limit, a kill): its rows are kept and the
table is marked incomplete."""

from __future__ import annotations

import re
from pathlib import Path

from jobs.imports.model import BadImport, Device, LoggedVersion, Parsed, Row, Table

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
_PER_ITER = " and four i_* columns"
COLUMNS: tuple[str, ...] = ("size", "count", "type", "redop", "root")
"""The columns before the figures from 2.13 on (common.cu, then util.cu's writeBenchmarkLinePreamble)."""
_TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\d$")


def parse_text(path: Path, parsed: Parsed) -> None:
    """Add the tables of one text file to `parsed`; BadImport on a damaged row."""
    data = path.read_bytes().decode(errors="replace")
    lines = data.splitlines()
    table: Table | None = None
    per_placement = 4
    columns = COLUMNS

    pending: tuple[BadImport, list[Row], Table, str] | None = None
    """A row that does not parse (or holds one placement only), with its placements read and its FILE:LINE:
    the output cut short mid-row if nothing of nccl-tests' follows it, a damaged row otherwise."""

    def close(current: Table | None, why: str) -> None:
        if current is not None and not current.complete:
            current.cut_at = current.cut_at or why

    def opens(where: str) -> Table:
        close(table, f"{where}: another run starts before its closing lines")
        fresh = Table(where=where)
        parsed.tables.append(fresh)
        return fresh

    for number, raw in enumerate(lines, start=1):
        where = f"{path}:{number}"
        line = raw.rstrip()
        if not line.strip() or line == "#":
            continue
        known = _known(line, table)
        if known and pending is not None:
            raise pending[0]
        if not known:
            parsed.skip(where)
            if logged := _NCCL_LOGGED.search(line):
                parsed.logged.append(LoggedVersion(nccl=logged[1], cuda=logged[2] or "", where=where))
        elif match := _VERSION.match(line):
            table = opens(where)
            table.tests_version, table.nccl_version = match[1], int(match[3])
        elif match := _STARTING.match(line):
            if table is None or table.program or table.min_bytes or table.rows or table.complete:
                table = opens(where)
            table.program = match[1]
        elif match := _PARAMS.match(line):
            if table is None or table.min_bytes or table.max_bytes or table.rows or table.complete:
                table = opens(where)
            _params(table, match)
        elif table is None:
            continue  # a footer or header line of a run whose start is not in this file
        elif match := _DEVICE.match(line):
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
            table.cputime = "cputime" in line
            per_placement = 8 if "i_min" in line else 4
            words = line.lstrip("#").split()
            first = next((i for i, word in enumerate(words) if word in ("time", "cputime")), len(words))
            columns = tuple(words[:first])
        elif match := _OOB.match(line):
            table.out_of_bounds = int(match[1])
        elif match := _AVG.match(line):
            table.avg_busbw = _number(match[1], where, "Avg bus bandwidth")
            table.complete = True
        elif match := _ERROR.match(line):
            table.errors.append(match[1])
        elif _looks_like_row(line):
            try:
                rows, whole = _row(raw, where, columns, per_placement, table)
            except BadImport as damaged:
                pending = (damaged, [], table, where)
                continue
            if whole:
                table.rows += rows
            else:
                half = BadImport(f"{where}: damaged row: one placement where nccl-tests prints two")
                pending = (half, rows, table, where)
    if pending is not None:
        _, rows, cut, where = pending
        cut.rows += rows
        kept = "its out-of-place half kept" if rows else "left out"
        cut.cut_at = f"{where}: the output ends mid-row ({kept})"
        cut.complete = False
    close(table, f"{path}: the output ends before the table's closing lines")


def _known(line: str, table: Table | None) -> bool:
    """One of nccl-tests' lines (a row, a header, a footer, a device), not someone else's."""
    if _looks_like_row(line):
        return table is not None
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


def _looks_like_row(line: str) -> bool:
    fields = line.split()
    return len(fields) >= 2 and fields[0].isdigit() and fields[1].isdigit()


def _number(text: str, where: str, column: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise BadImport(f"{where}: damaged row: {column} {text!r} is not a number") from None


NULL_BODY_AT = (52, 84)
"""Columns of the out-of-place figures in a row (after util.cu's 52-character preamble): blank when
writeBenchMarkLineNullBody left them out (a trace replay runs in place only)."""


def _row(line: str, where: str, columns: tuple[str, ...], per_placement: int, table: Table) -> tuple[list[Row], bool]:
    """The row's placements, and whether it is whole (both placements, or in place alone by design).
    `columns`: the column header's words before the figures (up to 2.11 each op printed its own: all_gather
    no redop and no root, broadcast a root but no redop, ...)."""
    fields = line.split()
    if len(fields) >= 2 and _TIMESTAMP.match(fields[-2]):
        fields = fields[:-2]  # -S 1: the in-place time's wall-clock timestamp
    lead = len(columns)
    placements = fields[lead:]
    if len(fields) < lead or len(placements) not in (per_placement, 2 * per_placement):
        raise BadImport(
            f"{where}: damaged row: {len(fields)} columns, where nccl-tests prints {lead} ({' '.join(columns)}) + "
            f"{per_placement} per placement (time algbw busbw #wrong{_PER_ITER if per_placement == 8 else ''})"
        )
    named = dict(zip(columns, fields[:lead], strict=True))
    size, count, dtype = named.get("size", ""), named.get("count", ""), named.get("type", "")
    redop, root = named.get("redop", "none"), named.get("root", "-1")
    try:
        root_rank, size_bytes, elements = int(root), int(size), int(count)
    except ValueError:
        raise BadImport(
            f"{where}: damaged row: size {size!r}, count {count!r}, root {root!r} are not integers"
        ) from None
    rows = []
    groups = (
        [placements[:per_placement], placements[per_placement:]] if len(placements) > per_placement else [placements]
    )
    null_body = len(groups) == 1 and not line[NULL_BODY_AT[0] : NULL_BODY_AT[1]].strip()
    for index, group in enumerate(groups):
        time_us = _number(group[0], where, "time")
        algbw = _number(group[1], where, "algbw")
        busbw = _number(group[2], where, "busbw")
        rows.append(
            Row(size=size_bytes, count=elements, type=dtype, redop=redop, root=root_rank,
                in_place=null_body or index == 1, time_us=time_us, algbw=algbw, busbw=busbw,
                wrong=_wrong(group[3], where, table), where=where)
        )  # fmt: skip
    return rows, len(groups) == 2 or null_body


def _wrong(text: str, where: str, table: Table) -> int:
    """#wrong: a count; N/A without validation; up to 2.11 the largest difference found (`0e+00`): nonzero
    counts as one wrong row, as nccl-tests' own 'Out of bounds values' then counts it."""
    if text == "N/A":
        return -1
    value = _number(text, where, "#wrong")
    if value != int(value) or "e" in text.lower():
        return 0 if value == 0 else 1
    return int(value)
