"""The history's views as the user reads them: a table, JSON (format collbench-history) or CSV, from each
record's `to_plain()` row (its keys, in order, are the columns). A table's figures carry enough digits to
be told apart: at least three decimals, three significant digits of the column's smallest."""

from __future__ import annotations

import csv
import io
import json
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from collectives.table import busbw_decimals

Row = dict[str, Any]
LEAST_DECIMALS = 3


def print_rows(rows: list[Row], fmt: str, view: str) -> None:
    """The rows on stdout; an empty table prints nothing (the view says on stderr that nothing matched)."""
    if fmt == "json":
        print(json.dumps({"format": "collbench-history", "view": view, "rows": rows}, indent=1))
    elif fmt == "csv":
        print(csv_text(rows), end="")
    elif rows:
        print("\n".join(table_lines(rows)))


def csv_text(rows: list[Row]) -> str:
    out = io.StringIO()
    if rows:
        writer = csv.DictWriter(out, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return out.getvalue()


def figure_decimals(values: Iterable[float]) -> int:
    """Decimals for a column of figures: three, or three significant digits of its smallest non-zero one
    (busbw of 0.000123 GB/s reads 0.000123, not 0.000)."""
    return max(LEAST_DECIMALS, busbw_decimals(abs(v) for v in values))


def _cell(name: str, value: Any, decimals: int) -> str:
    if name == "started" and isinstance(value, float):
        return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(value))
    if isinstance(value, float):
        return f"{value:.{decimals}f}"
    return "" if value is None else str(value)


def table_lines(rows: Sequence[Row], decimals: Mapping[str, int] | None = None) -> list[str]:
    """The rows as an aligned table; a column of floats with the decimals `decimals` gives it, else its own
    (figure_decimals)."""
    if not rows:
        return []
    names = list(rows[0])
    given = decimals or {}
    places = {n: given.get(n) or figure_decimals(row[n] for row in rows if isinstance(row[n], float)) for n in names}
    cells = [[_cell(n, row[n], places[n]) for n in names] for row in rows]
    widths = [max(len(n), *(len(c[i]) for c in cells)) for i, n in enumerate(names)]
    lines = ["  ".join(n.ljust(w) for n, w in zip(names, widths, strict=True)).rstrip()]
    return lines + ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in cells]
