"""The history views that change or copy it: `history ingest` (record run directories not recorded yet),
`history prune` (remove runs, all their rows with them, or count them with --dry-run) and `history
export` (the runs the filters pick, every row of theirs, as JSON or CSV)."""

from __future__ import annotations

import argparse
import json
import sys

from jobs.cli.history_args import open_view, say_unmatched, view_filters
from jobs.cli.history_rows import csv_text
from jobs.config.model import ConfigError


def cmd_ingest(args: argparse.Namespace) -> int:
    from jobs.history.ingest import ingest

    missing = [str(d) for d in args.dirs if not d.exists()]
    if missing:
        raise ConfigError(f"history ingest: no such directory: {', '.join(missing)}")
    with open_view(args) as history:
        done = ingest(history, args.dirs)
    for line in done.skipped:
        print(f"collbench: history: skipped {line}", file=sys.stderr)
    for line in done.same:
        print(f"collbench: history: not recorded again: {line}", file=sys.stderr)
    print(f"{history.where}: {done.line()}")
    return 0


def cmd_prune(args: argparse.Namespace) -> int:
    from jobs.history.prune import prune
    from jobs.history.queries import list_runs

    if args.before is None and args.keep_last is None:
        raise ConfigError("history prune: say which runs go: --before DATE_OR_AGE, --keep-last N, or both")
    if args.keep_last is not None and args.keep_last < 0:
        raise ConfigError(f"history prune: --keep-last {args.keep_last}: allowed: 0 or more")
    filters = view_filters(args)
    with open_view(args) as history:
        done = prune(history, filters, args.before, args.keep_last, args.dry_run)
        if not done.runs and not list_runs(history, filters, 1):
            say_unmatched(history, args)
    if args.format == "json":
        plain = {"dry_run": done.dry_run, "runs": done.runs, "rows": done.rows}
        print(json.dumps({"format": "collbench-history", "view": "prune", **plain}, indent=1))
    elif args.format == "csv":
        print(csv_text([{"run_id": run_id} for run_id in done.runs]), end="")
    else:
        for run_id in done.runs:
            print(f"{'would remove' if done.dry_run else 'removed'} {run_id}")
        print(f"{history.where}: {done.line()}")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from jobs.history.export import export_runs, to_csv, to_json

    filters = view_filters(args)
    with open_view(args) as history:
        runs = export_runs(history, filters)
        if not runs:
            say_unmatched(history, args)
    text = to_json(runs) if args.format == "json" else to_csv(runs)
    if args.output is None:
        print(text, end="")
        return 0
    from jobs.rundir.writing import write_atomic

    try:
        write_atomic(args.output, text.encode())
    except OSError as error:
        raise ConfigError(f"history export: --output {args.output}: {error.strerror or error}") from None
    print(f"collbench: {len(runs)} run(s) written to {args.output}", file=sys.stderr)
    return 0
