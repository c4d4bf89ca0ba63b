"""One row of an nccl-tests text table read into its placements (model.Row): its columns from the header
above it, or, for rows with no header, from the values themselves.

A row is size, count, type, then the columns up to 2.11 each op printed its own (all_gather none, broadcast
a root, reduce a redop and a root; 2.13 on every op prints both), then time, algbw, busbw and #wrong per
placement (four i_* columns more each with -I 1), and a timestamp with -S 1. Told from the values: the
figures come in fours, so what stands between the type and them is 0, 1 or 2 columns, a redop being a
word and a root an integer. The last figure of a placement is #wrong (a count, `N/A` without validation)
from 2.13, and up to 2.11 `error`, the largest deviation (`%5.0le`, one digit: jobs/imports/deviation.py)."""

from __future__ import annotations

import re

from jobs.imports.model import DTYPE_OF, BadImport, Row, Table

COLUMNS: tuple[str, ...] = ("size", "count", "type", "redop", "root")
"""The columns before the figures from 2.13 on (common.cu, then util.cu's writeBenchmarkLinePreamble)."""
REDOPS = frozenset({"sum", "prod", "max", "min", "avg", "mulsum", "premulsum", "none"})
TYPE_NAMES = frozenset(DTYPE_OF) | {"char", "int", "uint32", "uint64", "fp8_e4m3", "fp8_e5m2"}
"""Every type name nccl-tests prints (collbench has a dtype for those in DTYPE_OF; the others are refused)."""
PER_ITER = " and four i_* columns"
NULL_BODY_AT = (52, 84)
"""Columns of the out-of-place figures in a row (after util.cu's 52-character preamble): blank when
writeBenchMarkLineNullBody left them out (a trace replay runs in place only)."""
_TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\d$")
_ONE_DIGIT_EXPONENT = re.compile(r"^\d[eE][+-]\d+$")
"""`%5.0le` as 2.11 and before printed the largest deviation: `0e+00`, `3e+02`."""


def looks_like_row(line: str) -> bool:
    fields = line.split()
    return len(fields) >= 2 and fields[0].isdigit() and fields[1].isdigit()


def headerless_row(line: str) -> bool:
    """A row read with no header above it: size, count, then a type nccl-tests prints."""
    fields = line.split()
    return len(fields) >= 7 and fields[0].isdigit() and fields[1].isdigit() and fields[2] in TYPE_NAMES


def columns_of_values(fields: list[str], where: str) -> tuple[tuple[str, ...], int]:
    """The columns before the figures, and the figures per placement, of a row with no header."""
    between = len(fields) - 3
    if len(fields) >= 2 and _TIMESTAMP.match(fields[-2]):
        between -= 2
    lead = between % 4
    if lead == 3 or between < 4:
        raise BadImport(
            f"{where}: a row with no header whose {len(fields)} columns fit none of nccl-tests' layouts "
            "(size count type [redop] [root], then 4 figures per placement): paste the column header above it"
        )
    first = fields[3] if lead else ""
    named = ("redop", "root") if lead == 2 else ("redop",) if first in REDOPS else ("root",) if lead else ()
    per_placement = 8 if between - lead == 16 else 4
    return ("size", "count", "type", *named), per_placement


def read_row(
    line: str, where: str, columns: tuple[str, ...] | None, per_placement: int, old_error: bool | None
) -> tuple[list[Row], bool]:
    """The row's placements, and whether it is whole (both placements, or in place alone by design).
    `columns`: the column header's words before the figures; None where there is no header (told from the
    values). `old_error`: the header named the last figure `error` (True) or `#wrong` (False); None: no
    header, told from the value."""
    fields = line.split()
    if columns is None:
        columns, per_placement = columns_of_values(fields, where)
    if len(fields) >= 2 and _TIMESTAMP.match(fields[-2]):
        fields = fields[:-2]  # -S 1: the in-place time's wall-clock timestamp
    lead = len(columns)
    placements = fields[lead:]
    if len(fields) < lead or len(placements) not in (per_placement, 2 * per_placement):
        raise BadImport(
            f"{where}: damaged row: {len(fields)} columns, where nccl-tests prints {lead} ({' '.join(columns)}) + "
            f"{per_placement} per placement (time algbw busbw #wrong{PER_ITER if per_placement == 8 else ''})"
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
    groups = (
        [placements[:per_placement], placements[per_placement:]] if len(placements) > per_placement else [placements]
    )
    null_body = len(groups) == 1 and not line[NULL_BODY_AT[0] : NULL_BODY_AT[1]].strip()
    rows = []
    for index, group in enumerate(groups):
        wrong, max_delta = _wrong(group[3], where, old_error)
        rows.append(
            Row(size=size_bytes, count=elements, type=dtype, redop=redop, root=root_rank,
                in_place=null_body or index == 1, time_us=number(group[0], where, "time"),
                algbw=number(group[1], where, "algbw"), busbw=number(group[2], where, "busbw"),
                wrong=wrong, max_delta=max_delta, where=where)
        )  # fmt: skip
    return rows, len(groups) == 2 or null_body


def number(text: str, where: str, column: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise BadImport(f"{where}: damaged row: {column} {text!r} is not a number") from None


def _wrong(text: str, where: str, old_error: bool | None) -> tuple[int, float | None]:
    """(#wrong, max deviation): a count from 2.13 (`%5g`: 1.5e+06 is a count too), N/A without validation;
    up to 2.11 the largest deviation, judged against its tolerance once the ranks are known (wrong 0 meanwhile).
    Without a header, a one-digit `3e+02` is the old deviation, anything else a count."""
    if text == "N/A":
        return -1, None
    value = number(text, where, "#wrong")
    if old_error or (old_error is None and _ONE_DIGIT_EXPONENT.match(text)):
        return 0, value
    if value != int(value) or value < 0:
        raise BadImport(f"{where}: damaged row: #wrong {text!r} is not a count of wrong elements")
    return int(value), None


def repeated_keys(table: Table) -> dict[tuple[int, str, str, int, bool], int]:
    """Row keys the table holds more than once, with how many times: rows several processes printed."""
    seen: dict[tuple[int, str, str, int, bool], int] = {}
    for row in table.rows:
        key = (row.size, row.type, row.redop, row.root, row.in_place)
        seen[key] = seen.get(key, 0) + 1
    return {key: times for key, times in seen.items() if times > 1}
