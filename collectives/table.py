"""The nccl-tests table, rendered from summary rows so it can sit beside all_reduce_perf's."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from collectives.dtypes import DTYPES
from collectives.results import SummaryRow, placement_name


@dataclass(frozen=True, slots=True)
class RankPlace:
    """Where one rank ran, for the '# Using devices' block."""

    rank: int
    host: str
    pid: int
    device: str
    """cpu, cuda:N, or ? when the rank failed before it knew."""
    gpu_index: int = -1
    """The CUDA device's index as the rank saw it; -1: no GPU recorded (a CPU rank, or no environment record)."""
    pci: str = ""
    """The GPU's PCI address as nccl-tests prints it, dddd:bb:dd."""
    gpu_name: str = ""

    def device_line(self) -> str:
        """nccl-tests' line for the rank, without its '#': `  Rank  0 Group  0 Pid   1234 on         n1 device
        0 [0000:1b:00] NVIDIA H100 80GB HBM3` where a GPU is recorded, else the device as collbench names it."""
        where = f"  Rank {self.rank:2d} Group  0 Pid {self.pid:6d} on {self.host:>10s} device "
        if self.gpu_index < 0:
            return where + self.device
        return where + f"{self.gpu_index:2d} [{self.pci}] {self.gpu_name}".rstrip()


@dataclass(frozen=True, slots=True)
class SweepHeader:
    min_bytes: int
    max_bytes: int
    step_factor: float
    warmup_iters: int
    iters: int
    check: bool
    backend: str
    graph_launches: int = 0
    average: str = "mean"
    """How the ranks' times were combined (nccl-tests' -a)."""
    report_cputime: bool = False
    """The time columns show the enqueue time per call (nccl-tests' -C)."""


NOTES: dict[tuple[str, str], str] = {
    ("gloo", "reduce_scatter"): (
        "gloo has no native reduce-scatter: torch runs an all_reduce over a copy of the whole input and "
        "keeps its chunk, so reduce_scatter busbw here is capped near half of all_reduce's. "
        "That is gloo's limit, not the interconnect's."
    ),
}
"""Caveats printed under an op's table: (backend or '*', op) -> text."""

AVERAGE_NOTES = {
    "min": "time is the fastest rank's (-a 2), bandwidths follow from it",
    "max": "time is the slowest rank's (-a 3), bandwidths follow from it",
    "rank0": "time is rank 0's (-a 0), bandwidths follow from it",
}
TIMER_NOTES = {
    "cuda_events": (
        "time is the mean of CUDA events around each call (bench.timer=per_call): on small messages it "
        "includes the host's launch gap, which nccl-tests' loop timer hides; compare with bench.timer=loop."
    ),
    "host_loop": "time is one host clock around all iterations / iters (bench.timer=loop).",
}

CPUTIME_NOTE = "the time columns are the host's enqueue time per call (-C); algbw and busbw are from the full time."

HOST_BOUND_SHARE = 0.9
"""On the CUDA loop timer, a row whose host enqueue time per call is at least this share of its time per call
is host-bound: the GPU waited for the host to enqueue the next call (torch's per-call overhead)."""

PAGE_FAULT_NOTE_THRESHOLD = 64.0
"""Minor page faults per timed call above which the backend is taken to allocate inside the loop."""


def _notes(op: str, rows: Sequence[SummaryRow], header: SweepHeader) -> list[str]:
    backend = header.backend
    notes = [text for (where, name), text in NOTES.items() if name == op and where in ("*", backend)]
    if header.report_cputime:
        notes.append(CPUTIME_NOTE)
    if header.average in AVERAGE_NOTES:
        notes.append(AVERAGE_NOTES[header.average] + ".")
    notes += sorted({TIMER_NOTES[row.timer] for row in rows if row.timer in TIMER_NOTES})
    placements = {row.in_place for row in rows}
    if placements == {True}:
        notes.append(f"torch.distributed's {op} works in place only, so out-of-place is not measured (N/A).")
    if placements == {False}:
        notes.append(f"{op} has no in-place form in torch.distributed (nccl-tests does not check it either): N/A.")
    incomplete = [row for row in rows if not row.complete]
    if incomplete:
        shown = "; ".join(_incomplete_cell(row) for row in incomplete[:8])
        more = f"; and {len(incomplete) - 8} more" if len(incomplete) > 8 else ""
        notes.append(f"INCOMPLETE rows, their figures are over the ranks that reported: {shown}{more}.")
    notes += _host_bound_note(rows)
    faulting = [row for row in rows if row.page_faults_per_iter > PAGE_FAULT_NOTE_THRESHOLD]
    if faulting:
        first = min(faulting, key=lambda row: row.size)
        worst = max(faulting, key=lambda row: row.page_faults_per_iter)
        notes.append(
            f"{backend} allocates inside the timed call from {first.size} B up ({worst.page_faults_per_iter:.0f} "
            f"page faults per call at {worst.size} B): those times include the allocation."
        )
    return notes


def _host_bound_note(rows: Sequence[SummaryRow]) -> list[str]:
    """Small messages on a GPU where the host, not the GPU or the fabric, sets the time: say which, by how much."""
    bound = [
        row
        for row in rows
        if row.timer == "cuda_loop" and row.time_us > 0 and row.enqueue_us >= HOST_BOUND_SHARE * row.time_us
    ]
    if not bound:
        return []
    sizes = sorted({row.size for row in bound})
    worst = max(bound, key=lambda row: row.enqueue_us / row.time_us)
    where = f"{sizes[0]} B" if len(sizes) == 1 else f"{len(sizes)} sizes from {sizes[0]} B to {sizes[-1]} B"
    return [
        f"host-bound at {where}: the host took {worst.enqueue_us:.1f} us of the {worst.time_us:.1f} us per call to "
        f"enqueue it ({worst.size} B), so the GPU waited for torch's per-call overhead and these times are the "
        "host's, not the fabric's; graphs mode (bench.cuda_graph_launches > 0) launches the calls without it."
    ]


@dataclass(frozen=True, slots=True)
class TableLine:
    size: int
    count: int
    type_name: str
    """nccl-tests' name of the dtype (float, bfloat16, ...)."""
    redop: str
    root: int
    placed: dict[bool, SummaryRow]
    """in_place -> its row; a placement not measured is missing."""


def _incomplete_cell(row: SummaryRow) -> str:
    missing = f" (missing rank(s) {', '.join(map(str, row.missing_ranks[:16]))})" if row.missing_ranks else ""
    return f"{row.size} B {placement_name(row.in_place)} {row.ranks_reporting}/{row.nranks} ranks{missing}"


_HEADER_META = "# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          "
_HEADER_NAMES = "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s %6s  %7s  %6s  %6s %6s"
_HEADER_UNITS = "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %5s  %7s  %6s  %6s  %5s"
_ROW_PARAMS = "%12li  %12li  %8s  %6s  %6i"
_ROW_RESULT = "  %7s  %6.2f  %6.2f  %5s"
_ROW_MISSING = "  %7s  %6s  %6s  %5s" % ("N/A", "N/A", "N/A", "N/A")


def busbw_decimals(values: Iterable[float]) -> int:
    """nccl-tests' two decimals, or enough for three significant digits of the smallest non-zero busbw
    (gloo on small messages sits far below 0.01 GB/s), at most eight: for tables beyond nccl-tests'."""
    smallest = min((v for v in values if v > 0), default=1.0)
    return 2 if smallest >= 0.01 else min(8, 2 - math.floor(math.log10(smallest)))


def format_time_us(time_us: float) -> str:
    """nccl-tests' time column: fewer decimals as the time grows."""
    if time_us >= 10000.0:
        return "%7.0f" % time_us
    if time_us >= 100.0:
        return "%7.1f" % time_us
    return "%7.2f" % time_us


def _result_cell(row: SummaryRow | None, cputime: bool) -> str:
    if row is None:
        return _ROW_MISSING
    wrong = "N/A" if row.wrong < 0 else str(row.wrong)
    time_us = row.enqueue_us if cputime else row.time_us
    return _ROW_RESULT % (format_time_us(time_us), row.algbw, row.busbw, wrong)


def render_op_table(
    op: str,
    rows: Sequence[SummaryRow],
    header: SweepHeader,
    places: Sequence[RankPlace] = (),
) -> list[str]:
    """Lines of one op's table: parameters, devices, column headers, one line per size, totals, notes."""
    lines = [f"# {line}" for line in caption_lines(op, rows, header, len(places))] + ["#"]
    if places:
        lines.append("# Using devices")
        lines += [f"#{place.device_line()}" for place in places]
        lines.append("#")
    lines += column_headers()
    lines += [row_line(line, header.report_cputime) for line in table_lines(rows)]
    lines += [f"# {line}" for line in _totals(rows)] + ["#"]
    lines += [f"# Note: {text}" for text in _notes(op, rows, header)]
    return lines


def column_headers() -> list[str]:
    """nccl-tests' three lines above the rows: the placements, the column names, their units."""
    names = ("size", "count", "type", "redop", "root") + ("time", "algbw", "busbw", "#wrong") * 2
    units = ("(B)", "(elements)", "", "", "") + ("(us)", "(GB/s)", "(GB/s)", "") * 2
    return [_HEADER_META % ("", "", "", "", ""), _HEADER_NAMES % names, _HEADER_UNITS % units]


def row_line(line: TableLine, cputime: bool = False) -> str:
    """One row in nccl-tests' layout: the parameters, then out-of-place's figures and in-place's (N/A where
    a placement was not measured); the time columns show the enqueue time per call with `cputime` (-C)."""
    return (
        _ROW_PARAMS % (line.size, line.count, line.type_name, line.redop, line.root)
        + _result_cell(line.placed.get(False), cputime)
        + _result_cell(line.placed.get(True), cputime)
    )


def caption_lines(op: str, rows: Sequence[SummaryRow], header: SweepHeader, ranks: int = 0) -> list[str]:
    """The table's first two lines, without their '# ': the op, its ranks and backend; the sweep."""
    return [
        f"collbench {op}: {rows[0].nranks if rows else ranks} ranks, backend {header.backend}",
        f"minBytes {header.min_bytes} maxBytes {header.max_bytes} step: {header.step_factor:g}(factor) "
        f"warmup iters: {header.warmup_iters} iters: {header.iters} validation: {int(header.check)} "
        f"graph: {header.graph_launches}",
    ]


def footer_lines(op: str, rows: Sequence[SummaryRow], header: SweepHeader) -> list[str]:
    """The totals and the notes under the table, without their '# '."""
    return _totals(rows) + [f"Note: {text}" for text in _notes(op, rows, header)]


def _totals(rows: Sequence[SummaryRow]) -> list[str]:
    wrong = sum(r.wrong for r in rows if r.wrong > 0)
    avg_busbw = sum(r.busbw for r in rows) / len(rows) if rows else 0.0
    return [
        f"Out of bounds values : {wrong} {'OK' if wrong == 0 else 'FAILED'}",
        f"Avg bus bandwidth    : {avg_busbw:g} ",
    ]


def table_lines(rows: Sequence[SummaryRow]) -> list[TableLine]:
    """One line of the table per (size, dtype, redop, root), its out-of-place and in-place rows side by side."""
    by_line: dict[tuple[int, str, str, int], dict[bool, SummaryRow]] = {}
    for row in rows:
        by_line.setdefault((row.size, row.dtype, row.redop, row.root), {})[row.in_place] = row
    return [
        TableLine(size, next(iter(placed.values())).count, DTYPES[dtype].nccl_name, redop, root, placed)
        for (size, dtype, redop, root), placed in by_line.items()
    ]
