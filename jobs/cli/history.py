"""`collbench history`: record run directories, list runs, a figure's trend and baseline per comparable set, a
node's record, a switch's record, a run's place, prune, export (ingest, prune and export: history_keep.py).
No silent answers: a filter that matches nothing says so on stderr, naming the filters, and exits 0; an op
that is not an op is bad input (exit 2); an op, cluster, fingerprint, host or switch the history has never
seen is named as such with the ones it knows.
jobs.history (and with it SQLAlchemy) is imported inside the handlers, when the command runs: other
commands start as fast as before."""

from __future__ import annotations

import argparse
import json
import re
import time
from pathlib import Path
from typing import Any

from jobs.cli.history_args import history_url, never_seen, open_view, say, say_unmatched, view_filters
from jobs.cli.history_keep import cmd_export, cmd_ingest, cmd_prune
from jobs.cli.history_node import add_drift_options, cmd_node_drift, wants_drift
from jobs.cli.history_rows import Row, csv_text, print_rows
from jobs.cli.history_trend import cmd_trend
from jobs.cli.html_output import add_html_option

SPAN = re.compile(r"^(\d+(?:\.\d+)?)([smhdw])$")
SPAN_S = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def add_command(commands: Any) -> None:
    history = commands.add_parser(
        "history", help="the results history: ingest, list, trend, node, switch, show, prune, export"
    )
    views = history.add_subparsers(dest="view", required=True, metavar="VIEW")
    ingest = _view(views, "ingest", "record run directories, sweeps or whole output_dirs not recorded yet")
    ingest.add_argument("dirs", nargs="+", metavar="DIR", type=Path)
    ingest.set_defaults(handler=cmd_ingest)
    listing = _view(views, "list", "runs, newest first, filtered")
    _add_filters(listing)
    listing.add_argument("--limit", type=int, default=50, help="at most this many runs (default 50)")
    listing.set_defaults(handler=_cmd_list)
    trend = _view(views, "trend", "one figure of (op, size) over time, against its baseline")
    trend.add_argument("--size", required=True, type=_size, help="the requested size, e.g. 1G")
    trend.add_argument("--figure", choices=("busbw", "algbw", "time_us"), default="busbw")
    trend.add_argument("--plot", metavar="FILE.png", help="also draw it, with the baseline band (needs matplotlib)")
    add_html_option(trend, "the trend: every comparable set over time with its baseline band")
    _add_filters(trend)
    trend.set_defaults(handler=cmd_trend)
    node = _view(views, "node", "every isolate, fabric, failure and slow-host verdict that named a node")
    node.add_argument("host")
    add_drift_options(node)
    node.set_defaults(handler=_cmd_node)
    switch = _view(views, "switch", "every slow switch link the isolate and check verdicts named at a switch")
    switch.add_argument(
        "name", metavar="NAME", help="a switch (s1), or a link as the verdicts name it (s1-s2, 's1 uplink')"
    )
    switch.set_defaults(handler=_cmd_switch)
    show = _view(views, "show", "one run's place in its history: each op and size against the runs before it")
    show.add_argument("run_id", metavar="RUN", help="a recorded run id (or its first characters)")
    show.add_argument(
        "--tolerance", default="5%", help="a drop always allowed, with 3 sigma of the history (default 5%%)"
    )
    show.set_defaults(handler=_cmd_show)
    prune = _view(views, "prune", "remove runs (and all their rows) started before a date, or all but the newest N")
    prune.add_argument("--before", type=_since, help="runs started before: 90d, 12w, or a date 2026-01-31")
    prune.add_argument("--keep-last", type=int, metavar="N", help="keep the newest N runs the filters pick")
    prune.add_argument("--dry-run", action="store_true", help="count what would be removed; remove nothing")
    _add_filters(prune)
    prune.set_defaults(handler=cmd_prune)
    export = _view(views, "export", "the runs the filters pick with every row of theirs, as JSON or CSV", "json")
    export.add_argument("--output", metavar="FILE", type=Path, help="write to FILE (atomically) instead of stdout")
    _add_filters(export)
    export.set_defaults(handler=cmd_export)


def _view(views: Any, name: str, text: str, fmt: str = "table") -> argparse.ArgumentParser:
    view: argparse.ArgumentParser = views.add_parser(name, help=text)
    view.add_argument("--config", metavar="NAME_OR_PATH", default=None, help="the config whose history.url to use")
    view.add_argument("--db", dest="history_url", metavar="URL", default=None,
                      help="the history's URL (default: the config's history.url)")  # fmt: skip
    formats = ("json", "csv") if fmt == "json" else ("table", "json", "csv")
    view.add_argument("--format", choices=formats, default=fmt)
    return view


def _add_filters(view: argparse.ArgumentParser) -> None:
    view.add_argument("--since", type=_since, help="runs started since: 7d, 12h, or a date 2026-01-31")
    view.add_argument("--fingerprint", help="the config's fingerprint, or its first digits")
    view.add_argument("--cluster")
    view.add_argument("--nodes", type=int)
    view.add_argument("--world-size", type=int, metavar="RANKS", help="runs of this many ranks in all")
    view.add_argument("--op", required=view.prog.endswith("trend"), help="all_reduce, all_gather, ...")
    view.add_argument("--outcome", choices=("passed", "failed", "inconclusive"))


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


def _cmd_list(args: argparse.Namespace) -> int:
    from jobs.history.queries import list_runs

    filters = view_filters(args)
    with open_view(args) as history:
        runs = list_runs(history, filters, args.limit)
        if not runs:
            say_unmatched(history, args)
    print_rows([run.to_plain() for run in runs], args.format, "runs")
    return 0


def _cmd_node(args: argparse.Namespace) -> int:
    from jobs.history.node_record import node_record

    if wants_drift(args):
        return cmd_node_drift(args)
    with open_view(args) as history:
        events = node_record(history, args.host)
        unknown = [] if events else never_seen(history, {"host": args.host})
    _nothing_named(events, unknown, args, f"no verdict in the history names {args.host}")
    print_rows([event.to_plain() for event in events], args.format, "node")
    if args.format == "table" and not events:
        print(f"# no verdict in the history names {args.host}")
    return 0


def _cmd_switch(args: argparse.Namespace) -> int:
    from jobs.history.switch_record import switch_record

    with open_view(args) as history:
        events = switch_record(history, args.name)
        unknown = [] if events else never_seen(history, {"switch": args.name})
    _nothing_named(events, unknown, args, f"no verdict in the history names a slow link at {args.name}")
    print_rows([event.to_plain() for event in events], args.format, "switch")
    if args.format == "table" and not events:
        print(f"# no verdict in the history names a slow link at {args.name}")
    return 0


def _nothing_named(events: list[Any], unknown: list[str], args: argparse.Namespace, nothing: str) -> None:
    """On stderr: a name the history has never seen, with those it knows; or, where no table says it, that no
    verdict names it."""
    for line in unknown:
        say(line)
    if not events and not unknown and args.format != "table":
        say(nothing)


def _cmd_show(args: argparse.Namespace) -> int:
    from jobs.cli.against_history import excluded_lines, held_lines, held_words, left_out_lines
    from jobs.history.held import hold_recorded
    from jobs.inspect.compare import Tolerance

    tolerance = Tolerance.parse(args.tolerance, [])
    held = hold_recorded(history_url(args), args.run_id, tolerance.for_size, held_words(tolerance), tolerance.latency)
    if not held.judgement.rows:
        say(f"{held.run_id} has no result rows to place among the runs before it")
    if args.format == "json":
        print(json.dumps({"format": "collbench-history", "view": "show", **held.to_plain()}, indent=1))
    elif args.format == "csv":
        print(csv_text([_show_row(row) for row in held.judgement.rows]), end="")
        for line in excluded_lines(held) + left_out_lines(held):
            say(line)
    else:
        print("\n".join(held_lines(held)))
        if held.judgement.against:
            print(f"# judged against {len(held.judgement.against)} run(s): {', '.join(held.judgement.against)}")
        if held.judgement.thin_line():
            print(f"# {held.judgement.thin_line()}")
    return 0


def _show_row(row: Any) -> Row:
    names = ("op", "size", "busbw", "runs", "median", "mad", "allowed", "rank", "percentile", "drop", "verdict")
    return {**{name: getattr(row, name) for name in names}, "against": " ".join(row.against)}
