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
from tests.conftest import collbench
from tests.jobs.inconclusive_runs import inconclusive_run


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
