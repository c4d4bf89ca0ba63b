"""The nccl-tests tables as rows of cells for the page: one table per op (and per node count of a sweep),
one row per line of nccl-tests' table (a size, its dtype, reduce op and root, out-of-place and in-place
side by side), with its caption, totals and notes as the text table prints them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from collectives.results import SummaryRow
from collectives.table import SweepHeader, busbw_decimals, caption_lines, footer_lines, format_time_us, table_lines

COLUMNS = ("size (B)", "count", "type", "redop", "root")
PLACED_COLUMNS = ("time (us)", "algbw (GB/s)", "busbw (GB/s)", "#wrong")
"""Under each of out-of-place and in-place."""


@dataclass(frozen=True, slots=True)
class Cell:
    text: str
    flag: str = ""
    """A CSS class: 'bad' for #wrong > 0, 'na' for a placement not measured."""


@dataclass(frozen=True, slots=True)
class ResultsTable:
    op: str
    caption: list[str]
    """nccl-tests' header lines: the op, its ranks and backend; the sweep's sizes and iterations."""
    rows: list[list[Cell]]
    footer: list[str]
    """The totals and the notes, as the text table ends."""


def results_tables(rows: Sequence[SummaryRow], header: SweepHeader) -> list[ResultsTable]:
    """A table per op of the whole job's rows (an isolate group's rows are the pair sections' business)."""
    whole = [row for row in rows if not row.group]
    tables = []
    for op in dict.fromkeys(row.op for row in whole):
        op_rows = [row for row in whole if row.op == op]
        caption, footer = caption_lines(op, op_rows, header), footer_lines(op, op_rows, header)
        tables.append(ResultsTable(op, caption, _lines(op_rows, header.report_cputime), footer))
    return tables


def _lines(rows: Sequence[SummaryRow], cputime: bool) -> list[list[Cell]]:
    decimals = busbw_decimals(row.busbw for row in rows)
    return [
        [
            *(Cell(str(value)) for value in (line.size, line.count, line.type_name, line.redop, line.root)),
            *_placed(line.placed.get(False), cputime, decimals),
            *_placed(line.placed.get(True), cputime, decimals),
        ]
        for line in table_lines(rows)
    ]


def _placed(row: SummaryRow | None, cputime: bool, decimals: int) -> list[Cell]:
    if row is None:
        return [Cell("N/A", "na")] * len(PLACED_COLUMNS)
    wrong = "N/A" if row.wrong < 0 else str(row.wrong)
    time_us = row.enqueue_us if cputime else row.time_us
    return [
        Cell(format_time_us(time_us).strip()),
        Cell(f"{row.algbw:.{decimals}f}"),
        Cell(f"{row.busbw:.{decimals}f}"),
        Cell(wrong, "bad" if row.wrong > 0 else ""),
    ]
