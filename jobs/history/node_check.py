"""`collbench check --node` in the results history, recorded as what it is: a check with its verdict (task
check-node, outcome failed for FAIL and UNKNOWN, its line the problem, never part of a baseline), the host
blamed with the line as the cause when it said FAIL. A prolog runs it for every job on every node, so by
default (check.node_record daily) a passing check is recorded once a day per node, and one that does not
pass every time."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from sqlalchemy import select
from sqlalchemy.exc import SQLAlchemyError

from jobs.config.check_settings import NodeRecord
from jobs.config.model import Config
from jobs.config.tasks import TaskName
from jobs.history import schema
from jobs.history.database import History, HistoryError, first_line, open_history, resolve_history_url
from jobs.history.gather import Row, RunRecord, gather
from jobs.history.ingest import write_record
from jobs.inspect.report import RunOutcome
from jobs.isolate.reasons import Code
from jobs.rundir.layout import RunDir

NODE_CHECK_TASK: TaskName = "check-node"
"""runs.task of a check --node run: its run.json says so from format 4; one of format 3 said sweep."""
NOT_A_BASELINE = "a check --node run"
"""Its runs.excluded reason: a node's own check measures the node alone, at the check's sizes and budget;
no sweep compares with it."""
DAY_S = 24 * 3600.0
"""check.node_record daily: a passing check is recorded when the host has none in the history this recent."""
HOST_DEFAULTS: Row = {"failed_ranks": 0, "blamed_ranks": 0, "slow": "", "wrong": 0, "wrong_ranks": "", "cause": ""}
"""Every column of a hosts row but its host and ranks: each row written carries them all (rows of one insert
share their keys)."""

Said = Literal["OK", "FAIL", "UNKNOWN"]


@dataclass(frozen=True, slots=True)
class HostCheck:
    """What check --node said of its host, and the one line it printed: OK; FAIL (the host is to blame, the
    line says why); UNKNOWN (nothing was measured: not a pass, but nothing against the host either)."""

    host: str
    said: Said
    line: str
    code: Code | None = None
    """Why, as a reason code (jobs.isolate.reasons): FAIL and UNKNOWN carry one, OK none."""

    @property
    def passed(self) -> bool:
        return self.said == "OK"


def node_check_record(run: RunDir, verdict: HostCheck, outcome_of: Callable[[], RunOutcome] | None = None) -> RunRecord:
    """The check's run as the history keeps it: gathered as any run (jobs.history.gather), then told as the
    check it is. Gather it before its scratch directory is removed."""
    record = gather(run, outcome_of=outcome_of)
    excluded = [NOT_A_BASELINE, *filter(None, [str(record.run.get("excluded", ""))])]
    record.run.update(
        task=NODE_CHECK_TASK, outcome="passed" if verdict.passed else "failed", excluded="; ".join(excluded)
    )
    if not verdict.passed:
        record.children["problems"] = _problems(verdict.line, record.children.get("problems", []))
    if verdict.code is not None:
        record.children["findings"] = [{"host": verdict.host, "code": verdict.code, "figure": verdict.line}]
    record.children["hosts"] = _hosts(record.children.get("hosts", []), verdict, int(record.run["world_size"]))
    return record


def _problems(line: str, gathered: list[Row]) -> list[Row]:
    """The check's line first, then the run's own problems it does not already hold."""
    lines = [line, *(str(row["line"]) for row in gathered if str(row["line"]) not in line)]
    return [{"seq": seq, "line": text} for seq, text in enumerate(lines)]


def _hosts(gathered: list[Row], verdict: HostCheck, world_size: int) -> list[Row]:
    """The run's hosts rows with a row for the checked host (its ranks may never have started); on a FAIL
    every one of its ranks blamed, the line as the cause, so `history node` lists it as a failure."""
    rows = [{**HOST_DEFAULTS, **row} for row in gathered]
    if not any(row["host"] == verdict.host for row in rows):
        rows.append({**HOST_DEFAULTS, "host": verdict.host, "ranks": world_size})
    if verdict.said == "FAIL":
        for row in rows:
            if row["host"] == verdict.host:
                row.update(blamed_ranks=row["ranks"], cause=verdict.line)
    return rows


def passed_recently(history: History, cluster: str, host: str, since: float) -> bool:
    """Whether the history holds a passing check of `host` on `cluster` that started at `since` or later."""
    runs, hosts = schema.runs.c, schema.hosts.c
    query = (
        select(runs.id)
        .join(schema.hosts, hosts.run == runs.id)
        .where(runs.task == NODE_CHECK_TASK, runs.outcome == "passed", runs.cluster == cluster, hosts.host == host)
        .where(runs.started >= since)
        .limit(1)
    )
    with history.engine.connect() as connection:
        return connection.execute(query).first() is not None


def write_node_check(history: History, record: RunRecord, verdict: HostCheck, policy: NodeRecord) -> bool:
    """Write the check's record as check.node_record says: True if written. daily: a passing check only
    when the host has no passing check in the last DAY_S before it; a check that did not pass always."""
    if policy == "never":
        return False
    if policy == "daily" and verdict.passed:
        since = float(record.run["started"]) - DAY_S
        if passed_recently(history, str(record.run["cluster"]), verdict.host, since):
            return False
    return write_record(history, record).recorded


def _stderr(line: str) -> None:
    print(f"collbench: {line}", file=sys.stderr, flush=True)


def record_node_check(cfg: Config, record: RunRecord, verdict: HostCheck, say: Callable[[str], None] = _stderr) -> bool:
    """Record the check in the history `cfg` names, as its check.node_record says; never raises for the
    history's sake: a history that cannot be reached costs one line (a prolog must not fail a job because
    a database is down). True if written."""
    try:
        with open_history(resolve_history_url(None, cfg)) as history:
            return write_node_check(history, record, verdict, cfg.check.node_record)
    except (HistoryError, SQLAlchemyError) as error:
        say(f"history: check --node of {verdict.host} not recorded ({first_line(error)})")
    return False
