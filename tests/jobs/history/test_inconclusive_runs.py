"""A run whose verdict is inconclusive is recorded as such: runs.outcome "inconclusive" (no baseline takes it),
no node of it bad, no finding, nothing in the node's record; `history list --outcome inconclusive` finds it."""

from __future__ import annotations

import json
from pathlib import Path

from sqlalchemy import select

from jobs.history import schema
from jobs.history.database import open_history
from jobs.history.ingest import record_run
from jobs.history.node_record import node_record
from jobs.inspect.isolate_verdict import assess_isolate, verdict_record
from jobs.inspect.report import assess
from jobs.rundir.layout import RunDir
from jobs.rundir.records.isolate import ISOLATE_VERDICT, InconclusiveVerdict
from tests.conftest import collbench
from tests.jobs.history.fabric_runs import rail_isolate_run


def inconclusive_run(output_dir: Path, found: bool = False) -> RunDir:
    """A healthy rail-aligned isolate run whose isolate.json holds n3 and n5's rail 1 inconclusive (what the
    inference writes when the evidence cannot settle them); `found`: n1's rail 0 slow and confirmed besides."""
    run = rail_isolate_run(output_dir, (lambda pair, rail: rail == 0 and 0 in pair) if found else (lambda *_: False))
    record = verdict_record(assess_isolate(run, assess(run)))
    record.inconclusive = [
        InconclusiveVerdict(["n3"], "node", -1, [], 6, 3, 15.0, 0.78, "spread", 0.9, "INCONCLUSIVE n3: ..."),
        InconclusiveVerdict(["n5"], "rail", 1, [], 5, 2, 16.0, 0.8, "few_partners", 0.4, "INCONCLUSIVE n5 ..."),
    ]
    run.isolate_verdict.write_bytes(ISOLATE_VERDICT.encode(record))
    return run


def outcomes(history_url: str) -> dict[str, tuple[str, str]]:
    runs = schema.runs.c
    with open_history(history_url).engine.connect() as connection:
        found = connection.execute(select(runs.run_id, runs.outcome, runs.excluded)).all()
    return {run_id: (outcome, excluded) for run_id, outcome, excluded in found}


def test_an_inconclusive_run_is_recorded_as_such_and_its_units_are_no_fault(history_url: str, tmp_path: Path) -> None:
    run = inconclusive_run(tmp_path / "a")
    confirmed = inconclusive_run(tmp_path / "b", found=True)
    history = open_history(history_url)
    assert record_run(history, run) and record_run(history, confirmed)
    said = outcomes(history_url)
    assert said[run.run_id][0] == "inconclusive" and said[confirmed.run_id][0] == "passed", said
    nodes = schema.isolate_nodes.c
    with history.engine.connect() as connection:
        bad = connection.execute(select(nodes.host, nodes.rail).where(nodes.bad.is_(True))).all()
        findings = connection.execute(select(schema.findings.c.host)).all()
    assert [tuple(row) for row in bad] == [("n1", 0)] and [tuple(row) for row in findings] == [("n1",)]
    assert node_record(history, "n3") == [] == node_record(history, "n5")

    listed = collbench("history", "list", "--db", history_url, "--outcome", "inconclusive", "--format", "json",
                       cwd=tmp_path)  # fmt: skip
    assert listed.returncode == 0, listed.stderr
    assert [row["run_id"] for row in json.loads(listed.stdout)["rows"]] == [run.run_id]
