"""nccl-tests/<op>.json: the run in nccl-tests' own JSON (jobs.inspect.exports.nccl_tests_json builds the
documents), written beside summary.json by its one writer (jobs.ending.summary.record_summary)."""

from __future__ import annotations

import json
from pathlib import Path

from jobs.inspect.exports.nccl_tests_json import documents
from jobs.inspect.report import RunOutcome
from jobs.rundir.layout import RunDir
from jobs.rundir.writing import write_atomic


def write_nccl_tests_files(run: RunDir, outcome: RunOutcome) -> list[Path]:
    """nccl-tests/<op>.json for every op of a sweep run (none for a run in rounds: isolate, check), each
    replaced whole."""
    if outcome.config.spec.in_rounds:
        return []
    written = []
    for op, document in documents(run, outcome).items():
        path = run.nccl_tests_file(op)
        path.parent.mkdir(exist_ok=True)
        write_atomic(path, (json.dumps(document, indent=1) + "\n").encode())
        written.append(path)
    return written
