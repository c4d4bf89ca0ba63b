"""Attempts of a requeued job: each one files the one before it away, records how it began, and carries
over only what every rank of the attempt before had finished."""

from __future__ import annotations

from pathlib import Path

from jobs.rundir.attempts import archive_dir, begin, carry_over, earlier_host, notes, read_attempts
from jobs.rundir.records.attempts import ATTEMPTS
from tests.jobs.rundir.synthetic import sweep_run


def environ(attempt: int, nodes: str = "n[1-2]") -> dict[str, str]:
    return {"SLURM_RESTART_COUNT": str(attempt), "SLURM_JOB_NODELIST": nodes}


def test_the_first_attempt_moves_nothing_and_is_on_file(tmp_path: Path) -> None:
    run = sweep_run(tmp_path)
    first = begin(run, environ(0), resume=True)
    assert (first.number, first.nodes, first.resume_from, first.previous_ended) == (0, "n[1-2]", 0, "")
    assert read_attempts(run) == [first] and run.summary_file.exists() is False
    assert not (run.path / "attempts").exists() and notes(run) == []


def test_a_requeued_attempt_files_the_one_before_away_and_carries_over_what_every_rank_finished(tmp_path: Path) -> None:
    run = sweep_run(tmp_path)
    begin(run, environ(0), resume=True)
    with run.rank_results(0).open("a") as whole:
        whole.write(run.rank_results(0).read_text().splitlines(keepends=True)[-1])  # rank 0 measured a third
    with run.rank_results(1).open("a") as cut:
        cut.write('{"op": "all_reduce", "size"')  # rank 1 was killed writing its third
    lines_before = run.rank_results(0).read_text().splitlines(keepends=True)
    second = begin(run, environ(1), resume=True)
    archive = archive_dir(run, 0)
    assert second.resume_from == 2, "both ranks finished two measurements whole"
    assert archive.rank_results(0).read_text() == "".join(lines_before)
    assert not run.rank_results(0).exists() and run.results_dir.is_dir(), "the top level is the new attempt's"
    carry_over(run, second, 0, second.resume_from)
    assert run.rank_results(0).read_text() == "".join(lines_before[:2])
    assert earlier_host(run, second, 0) == "vm"
    assert [a.number for a in ATTEMPTS.read(run.path / "attempts.json").attempts] == [0, 1]
    said = notes(run)
    assert said[0] == "attempt 1 of the job (on n[1-2]) is the one shown; earlier attempts:"
    assert said[1] == "  attempt 0 on n[1-2]: ended unknown (requeued); kept in attempts/0/"
    assert said[2] == "  attempt 1 carried over 2 measurement(s) it did not repeat"


def test_an_attempt_on_other_nodes_carries_nothing_over(tmp_path: Path) -> None:
    run = sweep_run(tmp_path)
    begin(run, environ(0, "n[1-2]"), resume=True)
    assert begin(run, environ(1, "n[3-4]"), resume=True).resume_from == 0


def test_an_unreadable_attempts_file_shows_the_run_as_one_attempt(tmp_path: Path) -> None:
    run = sweep_run(tmp_path)
    (run.path / "attempts.json").write_text('{"version": 99}')
    assert read_attempts(run) == [] and notes(run) == []
