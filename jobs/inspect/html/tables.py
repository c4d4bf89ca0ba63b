"""The nccl-tests tables as rows of cells for the page: one table per op (and per node count of a sweep),
one row per line of nccl-tests' table (a size, its dtype, reduce op and root, out-of-place and in-place
side by side), with its caption, totals and notes as the text table prints them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from collectives.dtypes import DTYPES
from collectives.results import SummaryRow
from collectives.table import SweepHeader, busbw_decimals, format_time_us, render_op_table
from jobs.config.model import Config

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


def sweep_header(cfg: Config) -> SweepHeader:
    bench = cfg.measured_bench()
    return SweepHeader(
        min_bytes=bench.min_bytes, max_bytes=bench.max_bytes, step_factor=bench.step_factor,
        warmup_iters=bench.warmup_iters, iters=bench.iters, check=bench.check, backend=cfg.backend,
        graph_launches=bench.cuda_graph_launches, average=bench.average, report_cputime=bench.report_cputime,
    )  # fmt: skip


def results_tables(rows: Sequence[SummaryRow], header: SweepHeader) -> list[ResultsTable]:
    """A table per op of the whole job's rows (an isolate group's rows are the pair sections' business)."""
    whole = [row for row in rows if not row.group]
    tables = []
    for op in dict.fromkeys(row.op for row in whole):
        op_rows = [row for row in whole if row.op == op]
        text = render_op_table(op, op_rows, header)
        caption = [line.removeprefix("# ") for line in text[:2]]
        footer = [line.removeprefix("# ") for line in text if line.startswith(("# Out of", "# Avg", "# Note"))]
        tables.append(ResultsTable(op, caption, _lines(op_rows, header.report_cputime), footer))
    return tables


def _lines(rows: Sequence[SummaryRow], cputime: bool) -> list[list[Cell]]:
    decimals = busbw_decimals(row.busbw for row in rows)
    by_line: dict[tuple[int, str, str, int], dict[bool, SummaryRow]] = {}
    for row in rows:
        by_line.setdefault((row.size, row.dtype, row.redop, row.root), {})[row.in_place] = row
    lines = []
    for (size, dtype, redop, root), placed in by_line.items():
        count = next(iter(placed.values())).count
        cells = [Cell(str(size)), Cell(str(count)), Cell(DTYPES[dtype].nccl_name), Cell(redop), Cell(str(root))]
        for in_place in (False, True):
            cells += _placed(placed.get(in_place), cputime, decimals)
        lines.append(cells)
    return lines


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
