"""`collbench history node HOST --trend` and `--against-history`: the node's level over time in its isolate and
check runs (jobs.history.node_drift), and its latest level against its own last healthy runs.

--against-history exits 1 naming the node when its latest level is beyond 3 MAD below its own median (even
while the run's verdict, with its fixed tolerance, named nothing), 0 when it is within, and 0 with the line
"not enough runs to judge" when fewer than 3 healthy runs of it came before (as a run's --against-history
does with too little history). A host the history has never seen is bad input there (exit 2, the known
hosts named): a check that cannot name its node must not read as passed."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from jobs.cli.history_args import never_seen, open_view, say
from jobs.cli.history_rows import csv_text, table_lines
from jobs.config.model import ConfigError

if TYPE_CHECKING:
    from jobs.history.node_drift import NodeDrift, NodeSeries

NOTHING = "no isolate or check run in the history measured {host}"


def add_drift_options(node: argparse.ArgumentParser) -> None:
    node.add_argument("--trend", action="store_true",
                      help="the node's level in each isolate and check run of its latest comparable set, with "
                      "its own baseline")  # fmt: skip
    node.add_argument("--against-history", action="store_true",
                      help="exit 1 when the node's latest level is beyond 3 MAD below the median of its own last "
                      "healthy runs")  # fmt: skip


def wants_drift(args: argparse.Namespace) -> bool:
    return bool(getattr(args, "trend", False) or getattr(args, "against_history", False))


def cmd_node_drift(args: argparse.Namespace) -> int:
    from jobs.history.node_drift import drift_of, node_series

    with open_view(args) as history:
        found = node_series(history, args.host)
        unknown = [] if found else never_seen(history, {"host": args.host})
    if unknown and args.against_history:
        raise ConfigError(f"history node {args.host} --against-history: {unknown[0]}")
    for line in unknown:
        say(line)
    drift = drift_of(found) if found else None
    verdict = verdict_line(args.host, drift)
    if args.format == "json":
        print(json.dumps(_document(args, found, drift, verdict), indent=1))
    elif args.format == "csv":
        rows = [level.to_plain() for level in found.levels] if found and args.trend else []
        print(csv_text(rows if args.trend else _drift_rows(drift)), end="")
        if args.against_history:
            say(verdict)
    else:
        lines = trend_lines(found, drift) if args.trend else []
        if not found and not unknown and args.trend:
            lines.append(f"# {NOTHING.format(host=args.host)}")
        lines += [verdict] if args.against_history else []
        if lines:
            print("\n".join(lines))
    return 1 if args.against_history and drift is not None and drift.drifted else 0


def trend_lines(found: NodeSeries | None, drift: NodeDrift | None) -> list[str]:
    """The node's comparable set, a row per run, then its baseline."""
    if found is None or drift is None:
        return []
    others = f"; {found.others} run(s) of it in other comparable sets, not compared" if found.others else ""
    head = f"# {found.host}: {found.key.words()}: {len(found.levels)} run(s){others}"
    return [head, *table_lines([level.to_plain() for level in found.levels]), f"# {baseline_words(drift)}"]


def baseline_words(drift: NodeDrift) -> str:
    from jobs.history.node_drift import MAD_FLOOR

    if not drift.runs:
        return "baseline: no healthy run of it before the latest"
    figures = f"busbw median {drift.median:.4g} GB/s, MAD {drift.mad:.3g} over its last {drift.runs} healthy run(s)"
    if not drift.enough:
        return f"baseline: {figures}: too few to judge (at least {drift.minimum})"
    floor = f"MAD counted at least {MAD_FLOOR:.0%} of the median"
    return f"baseline: {figures} before the latest; the latest is {_below(drift)} its median ({floor})"


def _below(drift: NodeDrift) -> str:
    side = "below" if drift.mads_below >= 0 else "above"
    return f"{abs(drift.mads_below):.1f} MAD {side}"


def verdict_line(host: str, drift: NodeDrift | None) -> str:
    """One line: DRIFTED, ok, or not enough runs to judge."""
    from jobs.history.node_drift import MAD_FLOOR
    from jobs.inspect.compare import figures_apart

    if drift is None:
        return f"{host}: not enough runs to judge: {NOTHING.format(host=host)}"
    latest = drift.latest
    if not drift.enough:
        return (
            f"{host}: not enough runs to judge: {drift.runs} healthy run(s) of it before its latest "
            f"{latest.run_id} ({drift.key.words()}), at least {drift.minimum} needed; not judged"
        )
    busbw, median = figures_apart(latest.busbw, drift.median, 4)
    verdict = "DRIFTED" if drift.drifted else "ok"
    named = "named by that run's verdict too" if latest.named else "not named by that run's verdict"
    return (
        f"{host}: {verdict}: busbw {busbw} GB/s in {latest.run_id} is {_below(drift)} the median {median} GB/s "
        f"of its own last {drift.runs} healthy run(s) (MAD {drift.mad:.3g}, counted at least {MAD_FLOOR:.0%} of the "
        f"median; a drift is beyond {drift.k:g} MAD below); {latest.ratio:.2f} of that run's level, {named}"
    )


def _drift_rows(drift: NodeDrift | None) -> list[dict[str, Any]]:
    if drift is None:
        return []
    names = ("host", "median", "mad", "runs", "mads_below", "drifted", "enough")
    return [{**{name: getattr(drift, name) for name in names}, "run_id": drift.latest.run_id,
             "busbw": drift.latest.busbw, "ratio": drift.latest.ratio}]  # fmt: skip


def _document(
    args: argparse.Namespace, found: NodeSeries | None, drift: NodeDrift | None, verdict: str
) -> dict[str, Any]:
    plain: dict[str, Any] = {"format": "collbench-history", "view": "node-drift", "host": args.host}
    plain["key"] = found.key.to_plain() if found else None
    plain["other_runs"] = found.others if found else 0
    if args.trend:
        plain["rows"] = [level.to_plain() for level in found.levels] if found else []
    plain["drift"] = drift.to_plain() if drift else None
    plain["verdict"] = verdict
    return plain
