"""`collbench check --node` in the history, as what it is: task check-node with its verdict (FAIL is failed,
its line the problem and, on its host, the cause), never part of a baseline, and by default recorded once a
day per node while it passes and every time it does not; a history that cannot be reached costs one line and
changes neither the verdict nor the exit status. On SQLite and PostgreSQL (the history_url fixture)."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from jobs.config.model import load_config
from jobs.ending.finish import finish_run
from jobs.history import schema
from jobs.history.database import History, open_history
from jobs.history.gather import RunRecord
from jobs.history.node_check import (
    DAY_S,
    NODE_CHECK_TASK,
    NOT_A_BASELINE,
    HostCheck,
    Said,
    node_check_record,
    record_node_check,
    write_node_check,
)
from jobs.rundir.layout import RunDir
from tests.conftest import collbench
from tests.jobs.rundir import synthetic

OK = HostCheck("vm", "OK", "OK vm: all_reduce over 2 local rank(s), busbw 0.5 GB/s, 3.1 s")
FAIL = HostCheck(
    "vm", "FAIL", "FAIL vm: all_reduce over 2 local rank(s) reached 0.5 GB/s, under check.local_min_busbw 9"
)
UNKNOWN = HostCheck("vm", "UNKNOWN", "UNKNOWN vm: nothing measured; drain nothing for it")


def _run_on(tmp_path: Path, host: str) -> RunDir:
    """A finished local run of 2 ranks on `host`, written as ranks write it."""
    run = synthetic.sweep_run(tmp_path / "runs")
    for rank in range(2):
        lines = [synthetic.result(rank, host, size, 2, 20.0 + size / 100) for size in synthetic.SIZES]
        synthetic._rank_files(run, rank, host, 0, lines)
    return run


def _record(tmp_path: Path, verdict: HostCheck, hours_later: float = 0.0, **run: Any) -> RunRecord:
    """A finished run on the verdict's host, gathered as the check `verdict` said, `hours_later`."""
    record = node_check_record(_run_on(tmp_path, verdict.host), verdict)
    record.run["started"] += hours_later * 3600
    record.run.update(run)
    return record


def _runs(history: History) -> list[dict[str, Any]]:
    runs = schema.runs.c
    query = select(runs.run_id, runs.task, runs.outcome, runs.excluded).order_by(runs.started)
    with history.engine.connect() as connection:
        return [dict(row) for row in connection.execute(query).mappings()]


def _host_row(history: History, run_id: str) -> dict[str, Any]:
    hosts, runs = schema.hosts.c, schema.runs.c
    query = select(schema.hosts).join(schema.runs, runs.id == hosts.run).where(runs.run_id == run_id)
    with history.engine.connect() as connection:
        [row] = connection.execute(query).mappings().all()
    return dict(row)


def _problems(history: History, run_id: str) -> list[str]:
    problems, runs = schema.problems.c, schema.runs.c
    query = select(problems.line).join(schema.runs, runs.id == problems.run).where(runs.run_id == run_id)
    with history.engine.connect() as connection:
        return list(connection.execute(query.order_by(problems.seq)).scalars())


@pytest.mark.parametrize("said", ["OK", "FAIL", "UNKNOWN"])
def test_the_record_is_a_check_never_part_of_a_baseline(tmp_path: Path, said: Said) -> None:
    verdict = {"OK": OK, "FAIL": FAIL, "UNKNOWN": UNKNOWN}[said]
    record = _record(tmp_path, verdict)
    assert record.run["task"] == NODE_CHECK_TASK and record.run["excluded"].startswith(NOT_A_BASELINE)
    assert record.run["outcome"] == ("passed" if said == "OK" else "failed")
    problems = [row["line"] for row in record.children["problems"]]
    assert problems == ([] if said == "OK" else [verdict.line])
    [host] = record.children["hosts"]
    blamed = said == "FAIL"  # UNKNOWN measured nothing: nothing against the node
    assert (host["host"], host["blamed_ranks"], host["cause"]) == (
        "vm",
        2 if blamed else 0,
        verdict.line if blamed else "",
    )


def test_a_node_whose_ranks_never_started_still_has_its_host_row(tmp_path: Path) -> None:
    run = synthetic.sweep_run(tmp_path / "runs")
    for rank in range(2):
        run.rank_status(rank).unlink()
    finish_run(run, job_over=True)  # as the local launcher's wait ends it when its controller has gone
    failed = HostCheck("n7", "FAIL", "FAIL n7: all_reduce over 2 local rank(s) did not finish within 10 s")
    record = node_check_record(run, failed)
    assert [(h["host"], h["ranks"], h["blamed_ranks"], h["cause"]) for h in record.children["hosts"]] == [
        ("n7", 2, 2, failed.line)
    ]


def test_daily_records_a_pass_once_a_day_per_host_and_cluster_and_every_failure(
    history_url: str, tmp_path: Path
) -> None:
    with open_history(history_url) as history:
        first = _record(tmp_path, OK)
        assert write_node_check(history, first, OK, "daily")
        assert not write_node_check(history, _record(tmp_path, OK, hours_later=23), OK, "daily")
        failed = [_record(tmp_path, verdict, hours_later=23.5) for verdict in (FAIL, FAIL, UNKNOWN)]
        assert all(write_node_check(history, record, record_verdict, "daily")
                   for record, record_verdict in zip(failed, (FAIL, FAIL, UNKNOWN), strict=True))  # fmt: skip
        elsewhere = _record(tmp_path, OK, hours_later=1, cluster="prod")
        assert write_node_check(history, elsewhere, OK, "daily"), "another cluster's vm is another node"
        n2 = HostCheck("n2", "OK", OK.line.replace("vm", "n2"))
        assert write_node_check(history, _record(tmp_path, n2, hours_later=1), n2, "daily")
        next_day = _record(tmp_path, OK, hours_later=DAY_S / 3600 + 0.1)
        assert write_node_check(history, next_day, OK, "daily")
        assert [run["outcome"] for run in _runs(history)] == ["passed", "passed", "passed", "failed", "failed",
                                                              "failed", "passed"]  # fmt: skip


def test_always_records_every_check_and_never_none(history_url: str, tmp_path: Path) -> None:
    with open_history(history_url) as history:
        assert write_node_check(history, _record(tmp_path, OK), OK, "always")
        assert write_node_check(history, _record(tmp_path, OK, hours_later=1), OK, "always")
        assert not write_node_check(history, _record(tmp_path, FAIL, hours_later=2), FAIL, "never")
        assert len(_runs(history)) == 2


def test_a_history_that_cannot_be_reached_costs_one_line(tmp_path: Path) -> None:
    cfg = load_config(None, ["history.url=postgresql://collbench@127.0.0.1:1/nowhere"])
    said: list[str] = []
    assert not record_node_check(cfg, _record(tmp_path, FAIL), FAIL, say=said.append)
    [line] = said
    assert line.startswith("history: check --node of vm not recorded (history postgresql://collbench@127.0.0.1:1/"), (
        line
    )


def _check_node(tmp_path: Path, history_url: str, *words: str) -> tuple[int, str, str]:
    """`collbench check --node` as a prolog runs it, its scratch directory in tmp_path/tmp (TMPDIR)."""
    scratch = tmp_path / "tmp"
    scratch.mkdir(exist_ok=True)
    env = {**os.environ, "TMPDIR": str(scratch)}
    result = collbench(
        "check", "--node", "check.local_sizes=[64K]", "check.local_budget_s=30", f"output_dir={tmp_path / 'runs'}",
        f"history.url={history_url}", *words, cwd=tmp_path, env=env,
    )  # fmt: skip
    return result.returncode, result.stdout, result.stderr


def _left_behind(tmp_path: Path) -> list[Path]:
    return sorted(p for folder in (tmp_path / "runs", tmp_path / "tmp") if folder.exists() for p in folder.iterdir())


@pytest.mark.integration
def test_a_check_leaves_no_run_directory_records_a_pass_once_that_day_and_a_fail_as_failed(tmp_path: Path) -> None:
    """End to end through real checks, on SQLite: the recording rules themselves are tested on both databases
    above, and the checks cost seconds each."""
    history_url = f"sqlite:///{tmp_path / 'history.sqlite'}"
    host = socket.gethostname()
    for _ in range(2):
        code, out, err = _check_node(tmp_path, history_url)
        assert code == 0 and out.startswith(f"OK {host}: ") and out.count("\n") == 1, out + err
        assert _left_behind(tmp_path) == []
    with open_history(history_url) as history:
        [passed] = _runs(history)
    assert (passed["task"], passed["outcome"], passed["excluded"]) == (NODE_CHECK_TASK, "passed", NOT_A_BASELINE)

    code, out, err = _check_node(tmp_path, history_url, "check.local_min_busbw=1000000")
    line = out.rstrip("\n")
    assert code == 1 and line.startswith(f"FAIL {host}: ") and "under check.local_min_busbw" in line, out + err
    assert _left_behind(tmp_path) == []
    with open_history(history_url) as history:
        [run] = [r for r in _runs(history) if r["run_id"] != passed["run_id"]]
        assert (run["task"], run["outcome"]) == (NODE_CHECK_TASK, "failed")
        assert _problems(history, run["run_id"]) == [line]
        host_row = _host_row(history, run["run_id"])
    assert (host_row["blamed_ranks"], host_row["cause"]) == (host_row["ranks"], line)
    shown = collbench("history", "node", host, "--db", history_url, "--format", "json", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    events = json.loads(shown.stdout)["rows"]
    assert [(e["run_id"], e["what"]) for e in events] == [(run["run_id"], "failure")]
