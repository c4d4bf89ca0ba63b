"""`collbench history trend`: one figure of (op, size) over time, one series per comparable set (cluster,
fingerprint, node count, world size), each with its baseline; as a table, JSON, CSV, a plot (--plot) or a page
(--html)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jobs.cli.history_args import (
    KNOWN_SHOWN,
    filter_words,
    never_seen,
    open_view,
    say,
    say_unmatched,
    view_filters,
)
from jobs.cli.history_rows import csv_text
from jobs.cli.html_output import html_target, write_html

if TYPE_CHECKING:
    from jobs.history.database import History
    from jobs.history.queries import Baseline, Series
    from jobs.inspect.html.plain import TrendLine


def cmd_trend(args: argparse.Namespace) -> int:
    """One series per comparable set the filters let through, each with its own baseline."""
    from jobs.history.queries import series, trend

    filters = view_filters(args)
    plt = _pyplot() if args.plot else None  # refused before anything is read, as report --plot is
    html = html_target(args.html)
    with open_view(args) as history:
        points = trend(history, args.op, args.size, filters, args.figure)
        if not points:
            _say_no_trend(history, args)
    drawn = series(points)
    if args.format == "json":
        print(json.dumps(_trend_plain(args, drawn), indent=1))
    elif args.format == "csv":
        print(csv_text([point.to_plain() for point in points]), end="")
    elif drawn:
        print("\n\n".join("\n".join(_series_lines(one, args.figure)) for one in drawn))
    if plt is not None and drawn:
        from jobs.inspect.plot import plot_trend

        title = f"{args.op} {args.size} B: {args.figure} (bands: median ± 3 MAD)"
        plot_trend(_trend_lines(drawn, args), Path(args.plot), title, args.figure)
        print(f"collbench: plot written to {args.plot}", file=sys.stderr)
    if html is not None:
        _write_page(html, drawn, args)
    return 0


def _write_page(path: Path, drawn: list[Series], args: argparse.Namespace) -> None:
    """The trend as a page: each comparable set's runs and baseline handed over as plain data."""
    from jobs.history.against import MIN_BASELINE_RUNS
    from jobs.inspect.html.trend_page import render_trend_page

    what = f"{args.op} {args.size} B"
    command = f"collbench history trend --size {args.size} --figure {args.figure} {filter_words(args)}".rstrip()
    write_html(path, render_trend_page(_trend_lines(drawn, args), what, args.figure, command, MIN_BASELINE_RUNS))


def _trend_lines(drawn: list[Series], args: argparse.Namespace) -> list[TrendLine]:
    """Each comparable set's runs and baseline as the plot and the page draw them."""
    from jobs.inspect.html.plain import TrendLine, TrendPoint

    return [
        TrendLine(
            label=one.key.words(),
            points=[TrendPoint(p.run_id, p.started, p.value, p.outcome, p.excluded) for p in one.points],
            median=one.baseline.median if one.baseline else None,
            mad=one.baseline.mad if one.baseline else None,
            baseline_runs=len(one.baseline.runs) if one.baseline else 0,
            higher_is_better=args.figure != "time_us",
        )
        for one in drawn
    ]


def _say_no_trend(history: History, args: argparse.Namespace) -> None:
    """No point: an op, cluster or fingerprint never seen, a size the op was never run at, or the filters."""
    from jobs.history.queries import known_sizes

    if never_seen(history, {"op": args.op, "cluster": args.cluster, "config": args.fingerprint}):
        say_unmatched(history, args)
        return
    sizes = known_sizes(history, args.op)
    if args.size not in sizes:
        say(f"the history holds no {args.op} at {args.size} B; its sizes of {args.op}: {_listed_sizes(sizes)}")
        return
    say_unmatched(history, args, f"--size {args.size}")


def _listed_sizes(sizes: list[int]) -> str:
    shown = ", ".join(map(str, sizes[:KNOWN_SHOWN]))
    return shown + (f", and {len(sizes) - KNOWN_SHOWN} more" if len(sizes) > KNOWN_SHOWN else "")


def _trend_plain(args: argparse.Namespace, drawn: list[Series]) -> dict[str, Any]:
    """The trend as JSON: every row, and each comparable set's rows and baseline; the top-level baseline only
    where there is one set (a baseline over several would mix what must not be compared)."""
    plain = [
        {"key": one.key.to_plain(), "rows": [p.to_plain() for p in one.points], "baseline": _baseline_plain(one)}
        for one in drawn
    ]
    points = sorted((p for one in drawn for p in one.points), key=lambda p: (p.started, p.run_id))
    rows = [point.to_plain() for point in points]
    return {
        "format": "collbench-history", "view": "trend", "op": args.op, "size": args.size, "figure": args.figure,
        "baseline": plain[0]["baseline"] if len(plain) == 1 else None, "rows": rows, "series": plain,
    }  # fmt: skip


def _baseline_plain(one: Series) -> dict[str, Any] | None:
    base = one.baseline
    return {"median": base.median, "mad": base.mad, "runs": base.runs} if base else None


SERIES_KEY_COLUMNS = ("cluster", "config", "nodes", "world_size")
"""A series' own key: said once in its header, not on every row of its table."""


def _series_lines(one: Series, figure: str) -> list[str]:
    """One comparable set: its key, its runs (the figure with enough digits) and its baseline line."""
    from jobs.cli.history_rows import figure_decimals, table_lines

    decimals = figure_decimals([p.value for p in one.points] + ([one.baseline.median] if one.baseline else []))
    rows = [{k: v for k, v in p.to_plain().items() if k not in SERIES_KEY_COLUMNS} for p in one.points]
    header = f"# {one.key.words()}: {len(one.points)} run(s)"
    return [header, *table_lines(rows, {figure: decimals}), _baseline_line(one.baseline, figure, decimals)]


def _baseline_line(base: Baseline | None, figure: str, decimals: int) -> str:
    from jobs.history.against import MIN_BASELINE_RUNS

    if base is None:
        return f"# baseline: too little history (fewer than {MIN_BASELINE_RUNS} healthy runs)"
    return (
        f"# baseline: {figure} median {base.median:.{decimals}f}, MAD {base.mad:.{decimals}f} over the last "
        f"{len(base.runs)} healthy runs"
    )


def _pyplot() -> Any:
    from jobs.inspect.plot import pyplot

    return pyplot()
