"""Machine-readable views of a run: one JSON document, or CSV rows."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import asdict
from typing import Any

import msgspec

from jobs.config.schema import to_plain
from jobs.inspect.report import RunOutcome
from jobs.rundir.layout import RunDir, read_json

DOCUMENT_VERSION = 2
"""2: the analysis names ranks slow at their own work and their hosts (slow_ranks, slow_hosts), the run as a
whole (whole_run, isolate_command); start lag and time outliers inside a collective are no longer in it."""

CSV_COLUMNS = (
    "op", "size", "count", "dtype", "redop", "root", "in_place", "nranks", "time_us", "algbw", "busbw", "wrong",
    "slowest_rank", "slowest_host", "slowest_time_us", "fastest_rank", "fastest_host", "fastest_time_us",
    "page_faults_per_iter", "timer", "enqueue_us", "average",
)  # fmt: skip


def json_document(run: RunDir, outcome: RunOutcome) -> dict[str, Any]:
    """The config, every rank's status and environment, and every aggregated row."""
    ranks = []
    for rank, status in sorted(outcome.statuses.items()):
        env_file = run.rank_env(rank)
        environment = read_json(env_file) if env_file.exists() else None
        ranks.append({"status": msgspec.to_builtins(status), "environment": environment})
    return {
        "format": "collbench-run",
        "version": DOCUMENT_VERSION,
        "run_id": run.run_id,
        "run_dir": str(run.path),
        "passed": outcome.passed,
        "problems": outcome.problems,
        "config": to_plain(outcome.config),
        "ranks": ranks,
        "setup": asdict(outcome.setup) if outcome.setup else None,
        "fabric": outcome.fabric.to_json() if outcome.fabric else None,
        "rows": [asdict(row) for row in outcome.rows],
        "analysis": asdict(outcome.analysis) if outcome.analysis else None,
    }


def render_json(run: RunDir, outcome: RunOutcome) -> str:
    return json.dumps(json_document(run, outcome), indent=1) + "\n"


def render_csv(outcome: RunOutcome) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=CSV_COLUMNS, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for row in outcome.rows:
        writer.writerow(asdict(row))
    return out.getvalue()
