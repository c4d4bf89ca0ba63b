"""A finished rail-aligned isolate run (tests/jobs/history/fabric_runs.py) whose isolate.json holds units the
evidence could not settle, as the inference writes them: for the readers of isolate.json (history, exports, page)."""

from __future__ import annotations

from pathlib import Path

from jobs.inspect.isolate_verdict import assess_isolate, verdict_record
from jobs.inspect.report import assess
from jobs.rundir.layout import RunDir
from jobs.rundir.records.isolate import ISOLATE_VERDICT, InconclusiveVerdict
from tests.jobs.history.fabric_runs import rail_isolate_run

UNITS = [
    InconclusiveVerdict(["n3"], "node", -1, [], 6, 3, 15.0, 0.78, "spread", 0.9, "INCONCLUSIVE n3: figures"),
    InconclusiveVerdict(["n5"], "rail", 1, [], 5, 2, 16.0, 0.8, "few_partners", 0.4, "INCONCLUSIVE n5 rail 1"),
    InconclusiveVerdict(["n1", "n6"], "link", 0, [], 1, 1, 9.0, 0.5, "once", 0.2, "INCONCLUSIVE link n1-n6"),
]


def inconclusive_run(output_dir: Path, found: bool = False) -> RunDir:
    """A healthy rail-aligned isolate run whose isolate.json holds UNITS inconclusive (what the inference writes
    when the evidence cannot settle them); `found`: n1's rail 0 slow and confirmed besides."""
    run = rail_isolate_run(output_dir, (lambda pair, rail: rail == 0 and 0 in pair) if found else (lambda *_: False))
    record = verdict_record(assess_isolate(run, assess(run)))
    record.inconclusive = list(UNITS)
    if not found:
        record.exit_code = 5
    run.isolate_verdict.write_bytes(ISOLATE_VERDICT.encode(record))
    return run
