"""`collbench history`: record run directories, list runs, a figure's trend and baseline, a node's record.
SQLAlchemy is imported only here, when the command runs: other commands start as fast as before."""

from __future__ import annotations

import argparse
import csv
import io
import json
import re
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jobs.config.model import ConfigError, load_config

if TYPE_CHECKING:
    from jobs.history.database import History
    from jobs.history.queries import Baseline, Filters

Row = dict[str, Any]
SPAN = re.compile(r"^(\d+(?:\.\d+)?)([smhdw])$")
SPAN_S = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def add_command(commands: Any) -> None:
    history = commands.add_parser("history", help="the results history: ingest, list, trend, node")
    views = history.add_subparsers(dest="view", required=True, metavar="VIEW")
    ingest = _view(views, "ingest", "record run directories, sweeps or whole output_dirs not recorded yet")
    ingest.add_argument("dirs", nargs="+", metavar="DIR", type=Path)
    ingest.set_defaults(handler=_cmd_ingest)
    listing = _view(views, "list", "runs, newest first, filtered")
    _add_filters(listing)
    listing.add_argument("--limit", type=int, default=50, help="at most this many runs (default 50)")
    listing.set_defaults(handler=_cmd_list)
    trend = _view(views, "trend", "one figure of (op, size) over time, against its baseline")
    trend.add_argument("--size", required=True, type=_size, help="the requested size, e.g. 1G")
    trend.add_argument("--figure", choices=("busbw", "algbw", "time_us"), default="busbw")
    trend.add_argument("--plot", metavar="FILE.png", help="also draw it, with the baseline band (needs matplotlib)")
    _add_filters(trend)
    trend.set_defaults(handler=_cmd_trend)
    node = _view(views, "node", "every isolate, fabric and failure verdict that named a node")
    node.add_argument("host")
    node.set_defaults(handler=_cmd_node)


def _view(views: Any, name: str, text: str) -> argparse.ArgumentParser:
    view: argparse.ArgumentParser = views.add_parser(name, help=text)
    view.add_argument("--config", metavar="NAME_OR_PATH", default=None, help="the config whose history.url to use")
    view.add_argument("--db", metavar="URL", default=None, help="the history's URL (default: the config's history.url)")
    view.add_argument("--format", choices=("table", "json", "csv"), default="table")
    return view


def _add_filters(view: argparse.ArgumentParser) -> None:
    view.add_argument("--since", type=_since, help="runs started since: 7d, 12h, or a date 2026-01-31")
    view.add_argument("--fingerprint", help="the config's fingerprint, or its first digits")
    view.add_argument("--cluster")
    view.add_argument("--nodes", type=int)
    view.add_argument("--op", required=view.prog.endswith("trend"))
    view.add_argument("--outcome", choices=("passed", "failed"))


def _since(text: str) -> float:
    span = SPAN.match(text)
    if span:
        return time.time() - float(span[1]) * SPAN_S[span[2]]
    try:
        return time.mktime(time.strptime(text, "%Y-%m-%d"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: allowed: 30m, 12h, 7d, 2w or a date such as 2026-01-31") from None


def _size(text: str) -> int:
    from collectives.sizes import parse_size

    try:
        return parse_size(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _open(args: argparse.Namespace) -> History:
    from jobs.history.database import open_history

    url = args.db if args.db is not None else load_config(args.config, []).history.url
    return open_history(url)


def _filters(args: argparse.Namespace) -> Filters:
    from jobs.history.queries import Filters

    return Filters(args.since, args.fingerprint, args.cluster, args.nodes, args.op, args.outcome)


def _cmd_ingest(args: argparse.Namespace) -> int:
    from jobs.history.ingest import ingest

    missing = [str(d) for d in args.dirs if not d.exists()]
    if missing:
        raise ConfigError(f"history ingest: no such directory: {', '.join(missing)}")
    history = _open(args)
    done = ingest(history, args.dirs)
    for line in done.skipped:
        print(f"collbench: history: skipped {line}", file=sys.stderr)
    print(f"{history.where}: {done.line()}")
    return 0


def _cmd_list(args: argparse.Namespace) -> int:
    from jobs.history.queries import list_runs

    rows = list_runs(_open(args), _filters(args), args.limit)
    _print(rows, args.format, "runs")
    return 0


def _cmd_trend(args: argparse.Namespace) -> int:
    from jobs.history.queries import baseline, trend

    points = trend(_open(args), args.op, args.size, _filters(args), args.figure)
    base = baseline(points, args.figure)
    if args.format == "json":
        plain = {"median": base.median, "mad": base.mad, "runs": base.runs} if base else None
        print(json.dumps({"format": "collbench-history", "view": "trend", "baseline": plain, "rows": points}, indent=1))
    else:
        _print(points, args.format, "trend")
    if args.format == "table":
        print(_baseline_line(base, args.figure))
    if args.plot:
        _plot(points, base, args, Path(args.plot))
    return 0


def _baseline_line(base: Baseline | None, figure: str) -> str:
    from jobs.history.queries import MIN_BASELINE_RUNS

    if base is None:
        return f"# baseline: too little history (fewer than {MIN_BASELINE_RUNS} healthy runs)"
    return (
        f"# baseline: {figure} median {base.median:.3f}, MAD {base.mad:.3f} over the last {len(base.runs)} healthy runs"
    )


def _plot(points: list[Row], base: Baseline | None, args: argparse.Namespace, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(9, 4))
    axes.plot([time.strftime("%m-%d %H:%M", time.localtime(p["started"])) for p in points],
              [p[args.figure] for p in points], marker="o")  # fmt: skip
    if base is not None:
        axes.axhspan(base.median - 3 * base.mad, base.median + 3 * base.mad, alpha=0.2, label="median ± 3 MAD")
        axes.axhline(base.median, linestyle="--")
        axes.legend()
    axes.set_title(f"{args.op} {args.size} B: {args.figure}")
    axes.tick_params(axis="x", labelrotation=45)
    figure.tight_layout()
    figure.savefig(path)
    print(f"collbench: plot written to {path}", file=sys.stderr)


def _cmd_node(args: argparse.Namespace) -> int:
    from jobs.history.queries import node_record

    rows = node_record(_open(args), args.host)
    _print(rows, args.format, "node")
    if args.format == "table" and not rows:
        print(f"# no verdict in the history names {args.host}")
    return 0


def _print(rows: list[Row], fmt: str, view: str) -> None:
    if fmt == "json":
        print(json.dumps({"format": "collbench-history", "view": view, "rows": rows}, indent=1))
    elif fmt == "csv":
        print(_csv(rows), end="")
    else:
        print("\n".join(_table(rows)))


def _csv(rows: list[Row]) -> str:
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


def _table(rows: Sequence[Row]) -> list[str]:
    if not rows:
        return []
    names = list(rows[0])
    cells = [[_cell(n, row[n]) for n in names] for row in rows]
    widths = [max(len(n), *(len(c[i]) for c in cells)) for i, n in enumerate(names)]
    lines = ["  ".join(n.ljust(w) for n, w in zip(names, widths, strict=True))]
    return lines + ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in cells]
