"""The ranks of a table that lists none (rows pasted with no header), told by its figures where the op's bus
factor tells them: nccl-tests prints busbw = algbw x factor(n) (src/<op>.cu, getBw), all_reduce's 2(n-1)/n,
all_gather's, reduce_scatter's and alltoall's (n-1)/n; broadcast's, reduce's and sendrecv's 1 tells nothing.

Each figure is printed rounded (util.cu's getFloatStr: two decimals below 1000, one below 10000, none
above; `%6.2f` before 2.19), so each row bounds busbw/algbw between what its printed figures allow, and
the ranks are the n whose factor lies within every row's bounds: one n, or none told. A row whose algbw
printed 0.00 bounds nothing; busbw 0.00 beside an algbw above it is one rank's factor, 0."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from collectives.dtypes import DTYPES
from collectives.layout import LAYOUTS
from jobs.imports.model import DTYPE_OF, BadImport, Row, Table, fits

MOST_RANKS = 1 << 20
"""The largest rank count considered: a factor still rising there tells no bound."""
FORMULAS = {"all_reduce": "2(n-1)/n", "broadcast": "1", "reduce": "1", "sendrecv": "1"}
"""Each op's bus factor in words; (n-1)/n for the others."""


@dataclass(frozen=True, slots=True)
class Told:
    """What one op's factor says of the table's ranks: the range of rank counts every row allows."""

    op: str
    lowest: int
    highest: int
    """MOST_RANKS where no row bounds it: the factor tells no upper bound."""

    @property
    def one(self) -> bool:
        return self.lowest == self.highest


def infer_ranks(table: Table, op: str | None) -> tuple[int, str]:
    """(ranks, how they were told, in one line) for a table that lists no ranks; `op` its op where the
    table or --op names it, else every op whose columns its rows fit. BadImport naming --ranks where its
    figures tell no one rank count."""
    what = "rows with no header" if table.headerless else "no '# Using devices' lines before its rows"
    ask = f"{table.where}: {what}: the number of ranks is unknown"
    give = (
        "give it with --ranks N (the ranks of the job that printed them; --ranks 1 where each process ran alone "
        "and printed its own rows)"
    )
    bounded = [row for row in table.rows if row.algbw > _half_unit(row.algbw)]
    if not bounded:
        raise BadImport(f"{ask}, and no row's algbw bounds busbw/algbw; {give}")
    candidates = [op] if op else [name for name in LAYOUTS if _shaped_like(name, table.rows)]
    told = [found for name in candidates if (found := _told_by(name, bounded)) is not None]
    told = [found for found in told if not found.one or op or fits(found.op, table, found.lowest)]
    ratio = _ratio_said(bounded)
    if not told:
        raise BadImport(f"{ask}: its rows' busbw/algbw ({ratio}) fit no rank count of {_ops(candidates)}; {give}")
    vague = [found for found in told if not found.one]
    if vague:
        ranges = ", ".join(f"{_range(found)} ({found.op}: {_formula(found.op)})" for found in vague)
        raise BadImport(f"{ask}: busbw/algbw = {ratio} fits {ranges}; {give}")
    counts = sorted({found.lowest for found in told})
    if len(counts) > 1:
        each = ", ".join(f"{found.lowest} for {found.op}" for found in told)
        raise BadImport(f"{ask}: busbw/algbw = {ratio} tells {each}; name the op with --op or {give}")
    ops = " or ".join(f"{found.op}: {_formula(found.op)}" for found in told)
    factor = f"{LAYOUTS[told[0].op].bus_factor(counts[0]):.4f}".rstrip("0").rstrip(".")
    rows = f"all {len(bounded)} placements within their rounding" if len(bounded) > 1 else "its one placement"
    return counts[0], f"ranks: {counts[0]}, inferred from busbw/algbw = {factor} ({ops}; {rows})"


def _told_by(op: str, rows: list[Row]) -> Told | None:
    """The rank counts whose factor every row's printed figures allow (and, for an op whose size is count x
    element x ranks, that its size and count tell); None where none does."""
    factor = LAYOUTS[op].bus_factor
    lowest, highest = 1, MOST_RANKS
    if LAYOUTS[op].param_is_per_rank:
        told = {_per_count(row) for row in rows if row.count and row.type in DTYPE_OF}
        if len(told) > 1 or 0 in told:
            return None
        if told:
            lowest = highest = next(iter(told))
    for row in rows:
        low, high = _bounds(row)
        lowest = max(lowest, _first(factor, low, above=False))
        highest = min(highest, _first(factor, high, above=True) - 1)
        if lowest > highest:
            return None
    return Told(op=op, lowest=lowest, highest=highest)


def _per_count(row: Row) -> int:
    """size / (count x element): the ranks of an op whose size counts every rank's part; 0 where it is no
    whole number."""
    whole = row.count * DTYPES[DTYPE_OF[row.type]].size
    return row.size // whole if row.size % whole == 0 else 0


def _bounds(row: Row) -> tuple[float, float]:
    """The least and most busbw/algbw can be, given both figures as printed."""
    bus, alg = _half_unit(row.busbw), _half_unit(row.algbw)
    return max(0.0, row.busbw - bus) / (row.algbw + alg), (row.busbw + bus) / (row.algbw - alg)


def _first(factor: Callable[[int], float], bound: float, *, above: bool) -> int:
    """The least n in 1..MOST_RANKS whose (non-decreasing) factor reaches `bound` (passes it, `above`);
    MOST_RANKS + 1 where none does."""
    low, high = 1, MOST_RANKS + 1
    while low < high:
        middle = (low + high) // 2
        if factor(middle) > bound if above else factor(middle) >= bound:
            high = middle
        else:
            low = middle + 1
    return low


def _half_unit(figure: float) -> float:
    """Half the last printed digit's unit: the most rounding can have moved the figure."""
    return 0.005 if figure < 999.995 else 0.05 if figure < 9999.95 else 0.5


def _shaped_like(op: str, rows: list[Row]) -> bool:
    layout = LAYOUTS[op]
    return all((row.redop != "none") == layout.reduces and (row.root >= 0) == layout.rooted for row in rows)


def _ratio_said(rows: list[Row]) -> str:
    """busbw/algbw of the row with the largest figures, as precisely as they tell it."""
    row = max(rows, key=lambda r: (r.algbw, r.busbw))
    low, high = _bounds(row)
    digits = max(2, min(6, 1 - math.floor(math.log10(max(high - low, 1e-9)))))
    return f"{row.busbw / row.algbw:.{digits}f}".rstrip("0").rstrip(".") if row.busbw else "0"


def _formula(op: str) -> str:
    return FORMULAS.get(op, "(n-1)/n")


def _range(found: Told) -> str:
    if found.highest >= MOST_RANKS:
        return "any rank count" if found.lowest == 1 else f"any rank count from {found.lowest}"
    return f"{found.lowest} to {found.highest} ranks"


def _ops(names: list[str]) -> str:
    return " or ".join(names) if names else "any op (their columns fit none)"
