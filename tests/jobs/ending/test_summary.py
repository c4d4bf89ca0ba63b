"""table.txt, summary.json and nccl-tests/ (jobs.ending.summary), and an isolate run's verdict files
(jobs.ending.isolate_files), are written once, when the run has ended, by whichever caller gets there first, and
never over; assessing a run (jobs.inspect) writes nothing."""

from __future__ import annotations

import os
import threading
from dataclasses import replace
from pathlib import Path

from jobs.ending.isolate_files import record_isolate
from jobs.ending.summary import record_summary
from jobs.inspect.isolate_verdict import assess_isolate
from jobs.inspect.report import Thresholds, assess, read_summary
from jobs.rundir.records.rank import STATUS, RankState
from tests.jobs.rundir.files import fingerprint
from tests.jobs.rundir.synthetic import isolate_run, sweep_run


def test_assessing_a_run_writes_nothing(tmp_path: Path) -> None:
    run = sweep_run(tmp_path)
    before = fingerprint(tmp_path)
    outcome = assess(run, with_analysis=True)
    assert outcome.passed and outcome.ended and len(outcome.rows) == 2
    assert fingerprint(tmp_path) == before


def test_the_summary_is_written_once_and_a_later_verdict_does_not_replace_it(tmp_path: Path) -> None:
    run = sweep_run(tmp_path)
    assert record_summary(run, assess(run)) is True
    written = fingerprint(run.path)
    assert {"summary.json", "table.txt", "nccl-tests/all_reduce.json"} <= set(written)
    summary = read_summary(run)
    assert summary is not None and summary.passed and summary.run_id == run.run_id and len(summary.rows) == 2
    failing = assess(run, Thresholds(min_busbw=1e9))
    assert not failing.passed
    assert record_summary(run, failing) is False
    assert fingerprint(run.path) == written, "the first verdict on file stands"


def test_a_run_still_running_gets_no_summary(tmp_path: Path) -> None:
    run = sweep_run(tmp_path)
    status = STATUS.read(run.rank_status(1))
    STATUS.write(run.rank_status(1), replace(status, state=RankState.RUNNING, pid=os.getpid()))
    outcome = assess(run)
    assert not outcome.ended
    assert record_summary(run, outcome) is False
    assert not run.summary_file.exists() and not run.table_file.exists()


def test_of_writers_racing_exactly_one_writes(tmp_path: Path) -> None:
    run = sweep_run(tmp_path)
    outcome = assess(run)
    wins: list[bool] = []
    start = threading.Barrier(8)

    def write() -> None:
        start.wait()
        wins.append(record_summary(run, outcome))

    threads = [threading.Thread(target=write) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(wins) == [False] * 7 + [True]
    assert sorted(p.name for p in run.path.iterdir() if p.name.startswith(".")) == [], "no scratch file left"
    assert [p.name for p in run.nccl_tests_dir.iterdir()] == ["all_reduce.json"], "the winner wrote it, once"


def test_the_isolate_verdict_is_written_once(tmp_path: Path) -> None:
    run = isolate_run(tmp_path)
    iso = assess_isolate(run, assess(run))
    assert iso.ended and [link.nodes for link in iso.verdict.bad_links] == [(1, 2)]  # type: ignore[union-attr]
    before = fingerprint(run.path)
    assert record_isolate(run, iso) is True
    written = fingerprint(run.path)
    assert set(written) - set(before) == {"isolate.json", "isolate-matrix.csv"}
    assert record_isolate(run, iso) is False
    assert fingerprint(run.path) == written


def test_a_job_seen_over_gets_its_summary_even_with_ranks_that_never_started(tmp_path: Path) -> None:
    run = sweep_run(tmp_path)
    run.rank_status(1).unlink()
    outcome = assess(run)
    assert not outcome.ended and not outcome.passed
    assert record_summary(run, outcome) is False
    assert record_summary(run, outcome, job_over=True) is True
    summary = read_summary(run)
    assert summary is not None and not summary.passed
    assert "rank(s) 1 never started (no status file)" in summary.problems


def test_an_isolate_run_gets_no_nccl_tests_json(tmp_path: Path) -> None:
    """Its rows are rounds of node groups: nccl-tests' schema has no place for them."""
    run = isolate_run(tmp_path)
    assert record_summary(run, assess(run)) is True
    assert run.summary_file.exists() and not run.nccl_tests_dir.exists()
