"""The history's views as the user reads them: a table, JSON (format collbench-history) or CSV, from each
record's `to_plain()` row (its keys, in order, are the columns)."""

from __future__ import annotations

import csv
import io
import json
import time
from collections.abc import Sequence
from typing import Any

Row = dict[str, Any]


def print_rows(rows: list[Row], fmt: str, view: str) -> None:
    if fmt == "json":
        print(json.dumps({"format": "collbench-history", "view": view, "rows": rows}, indent=1))
    elif fmt == "csv":
        print(csv_text(rows), end="")
    else:
        print("\n".join(table_lines(rows)))


def csv_text(rows: list[Row]) -> str:
    out = io.StringIO()
    if rows:
        writer = csv.DictWriter(out, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return out.getvalue()


def _cell(name: str, value: Any) -> str:
    if name == "started" and isinstance(value, float):
        return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(value))
    if isinstance(value, float):
        return f"{value:.3f}"
    return "" if value is None else str(value)


def table_lines(rows: Sequence[Row]) -> list[str]:
    if not rows:
        return []
    names = list(rows[0])
    cells = [[_cell(n, row[n]) for n in names] for row in rows]
    widths = [max(len(n), *(len(c[i]) for c in cells)) for i, n in enumerate(names)]
    lines = ["  ".join(n.ljust(w) for n, w in zip(names, widths, strict=True))]
    return lines + ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in cells]
