"""Attempts of a requeued job: each one files the one before it away, records how it began, and carries
over only what every rank of the attempt before had finished.

The first tests call jobs.rundir.attempts on a synthetic run. The rest run the batch script's first line,
`python -m jobs.rundir.attempts RUN_DIR`, as a requeued job's batch script does (SLURM_RESTART_COUNT, the
attempt; SLURM_JOB_NODELIST; SLURM_JOB_ID), on a copy of a real run directory (a local run made with torch,
or a real Slurm job), and read the result from the files and through the CLI.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from jobs.rundir.attempts import archive_dir, begin, carry_over, earlier_host, notes, read_attempts
from jobs.rundir.records.attempts import ATTEMPTS
from tests.conftest import REPO, SlurmCluster, collbench
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


# ---- the batch script's first line, on real run directories

SMALL = ["bench.ops=[all_reduce]", "bench.max_bytes=64K", "bench.warmup_iters=1", "bench.iters=3"]
FILED = ("logs", "results", "status", "heartbeat", "env", "fabric", "table.txt", "summary.json")
"""What a finished local run has at its top level that belongs to its attempt (docs/run-directory.md)."""
EMPTIED = ("logs", "results", "status", "heartbeat", "env")
"""Folders the next attempt's ranks write into: there again, empty."""
NO_ACCOUNTING = (
    "ClusterName=nowhere\nSlurmctldHost=localhost\nAccountingStorageType=accounting_storage/none\n"
    "JobCompType=jobcomp/none\n"
)
"""sacct answers at once there ('accounting storage is disabled'), where a missing slurm.conf makes it retry 60 s."""


def begin_attempt(
    run: Path, attempt: int | None, nodes: str, job_id: str, base_env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ if base_env is None else base_env)
    for name in [n for n in env if n.startswith("SLURM_") and n != "SLURM_CONF"]:
        del env[name]
    if base_env is None:  # a Slurm that keeps no accounting: how the attempt before ended stays unknown
        conf = run.parent / "no-accounting.conf"
        conf.write_text(NO_ACCOUNTING, encoding="utf-8")
        env["SLURM_CONF"] = str(conf)
    env.update({"SLURM_JOB_NODELIST": nodes, "SLURM_JOB_ID": job_id})
    if attempt is not None:
        env["SLURM_RESTART_COUNT"] = str(attempt)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, (str(REPO), env.get("PYTHONPATH"))))
    return subprocess.run(
        [sys.executable, "-m", "jobs.rundir.attempts", str(run)],
        cwd=run.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def attempts(run: Path) -> list[dict[str, Any]]:
    return list(json.loads((run / "attempts.json").read_text())["attempts"])


def contents(root: Path) -> dict[str, bytes]:
    """Every file under root (or root itself), by path relative to root."""
    if root.is_file():
        return {".": root.read_bytes()}
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def finished_local_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    workdir = tmp_path_factory.mktemp("attempts")
    result = collbench("run", "ranks=2", "output_dir=runs", *SMALL, cwd=workdir)
    assert result.returncode == 0, result.stderr
    return result.run_dir()


@pytest.fixture
def run(finished_local_run: Path, tmp_path: Path) -> Path:
    """A fresh copy of the finished run for each test, so each can move its files around."""
    copy = tmp_path / finished_local_run.name
    shutil.copytree(finished_local_run, copy)
    return copy


def _job_id(run: Path) -> str:
    return str(json.loads((run / "run.json").read_text())["job_id"])


def _cut(results: Path, whole: int) -> None:
    """Keep `whole` complete lines, then half of the next: what a rank killed mid-write leaves."""
    lines = results.read_text().splitlines(keepends=True)
    assert len(lines) > whole + 1
    results.write_text("".join(lines[:whole]) + lines[whole][: len(lines[whole]) // 2])


def test_the_first_attempt_files_nothing(run: Path) -> None:
    before = contents(run)
    started = begin_attempt(run, None, "n[1-2]", _job_id(run))
    assert started.returncode == 0, started.stderr
    assert started.stdout == "collbench: attempt 0 on n[1-2], carrying over 0 measurement(s)\n"
    assert [(a["number"], a["nodes"], a["resume_from"], a["previous_ended"]) for a in attempts(run)] == [
        (0, "n[1-2]", 0, "")
    ]
    assert not (run / "attempts").exists()
    after = contents(run)
    del after["attempts.json"]
    assert after == before, "the first attempt moves and empties nothing"


def test_a_requeued_attempt_files_the_one_before_and_counts_what_carries_over(run: Path) -> None:
    job = _job_id(run)
    assert begin_attempt(run, 0, "n[1-2]", job).returncode == 0
    _cut(run / "results" / "rank-00001.jsonl", 3)  # rank 1 finished 3 measurements, rank 0 all of them
    filed = {name: contents(run / name) for name in FILED}
    assert all(filed.values()), f"the run left each of {FILED}"
    task_logs = {p.name: p.read_bytes() for p in (run / "submitit").glob(f"{job}_*_log.*")}
    assert len(task_logs) == 4 and any(task_logs.values())
    others = {p.name: p.read_bytes() for p in (run / "submitit").iterdir() if p.name not in task_logs}
    kept = {name: (run / name).read_bytes() for name in ("run.json", "config.yaml")}

    started = begin_attempt(run, 1, "n[1-2]", job)
    assert started.returncode == 0, started.stderr
    assert started.stdout == "collbench: attempt 1 on n[1-2], carrying over 3 measurement(s)\n"
    archive = run / "attempts" / "0"
    for name, files in filed.items():
        assert contents(archive / name) == files, f"{name} filed under attempts/0/ as it was"
        assert not (run / name).exists() or name in EMPTIED
    for name in EMPTIED:
        assert (run / name).is_dir() and not any((run / name).iterdir()), f"{name}/ is there again, empty"
    assert {p.name: p.read_bytes() for p in (archive / "submitit").iterdir()} == task_logs
    for name in task_logs:
        assert (run / "submitit" / name).stat().st_size == 0, f"{name} emptied in place (srun still appends)"
    assert {p.name: p.read_bytes() for p in (run / "submitit").iterdir() if p.name not in task_logs} == others
    assert {name: (run / name).read_bytes() for name in kept} == kept

    recorded = attempts(run)
    assert [(a["number"], a["nodes"], a["resume_from"]) for a in recorded] == [(0, "n[1-2]", 0), (1, "n[1-2]", 3)]
    assert recorded[1]["started"] >= recorded[0]["started"]

    status = collbench("status", str(run), cwd=run.parent)
    assert status.returncode == 0, status.stderr
    assert status.stderr.splitlines() == [
        "collbench: attempt 1 of the job (on n[1-2]) is the one shown; earlier attempts:",
        "collbench:   attempt 0 on n[1-2]: ended unknown (requeued); kept in attempts/0/",
        "collbench:   attempt 1 carried over 3 measurement(s) it did not repeat",
    ]
    report = collbench("report", str(run), cwd=run.parent)
    assert report.returncode == 1, "the top level is the new attempt, whose ranks have not started"
    assert "kept in attempts/0/" in report.stderr
    assert "no rank started" in report.stderr


def test_on_other_nodes_nothing_carries_over(run: Path) -> None:
    assert begin_attempt(run, 0, "n[1-2]", _job_id(run)).returncode == 0
    started = begin_attempt(run, 1, "n[2-3]", _job_id(run))
    assert started.returncode == 0, started.stderr
    assert started.stdout == "collbench: attempt 1 on n[2-3], carrying over 0 measurement(s)\n"
    assert [(a["nodes"], a["resume_from"]) for a in attempts(run)] == [("n[1-2]", 0), ("n[2-3]", 0)]
    assert (run / "attempts" / "0" / "results" / "rank-00000.jsonl").is_file(), "filed all the same"


def test_without_resume_nothing_carries_over(run: Path) -> None:
    config = run / "config.yaml"
    text = config.read_text()
    assert re.search(r"^  resume: true$", text, re.M)
    config.write_text(re.sub(r"^  resume: true$", "  resume: false", text, flags=re.M))
    assert begin_attempt(run, 0, "n1", _job_id(run)).returncode == 0
    started = begin_attempt(run, 1, "n1", _job_id(run))
    assert started.returncode == 0, started.stderr
    assert [a["resume_from"] for a in attempts(run)] == [0, 0]
    assert (run / "attempts" / "0" / "summary.json").is_file()


def test_a_damaged_line_ends_what_a_rank_finished(run: Path) -> None:
    results = run / "results" / "rank-00000.jsonl"
    lines = results.read_text().splitlines(keepends=True)
    lines[5] = "not json\n"
    results.write_text("".join(lines))
    assert begin_attempt(run, 0, "n1", _job_id(run)).returncode == 0
    assert begin_attempt(run, 1, "n1", _job_id(run)).returncode == 0
    assert attempts(run)[-1]["resume_from"] == 5


def test_a_third_attempt_files_the_second_beside_the_first(run: Path) -> None:
    job = _job_id(run)
    assert begin_attempt(run, 0, "n1", job).returncode == 0
    assert begin_attempt(run, 1, "n1", job).returncode == 0
    first = contents(run / "attempts" / "0")
    (run / "logs" / "rank-00000.log").write_text("attempt 1 got this far\n")  # what attempt 1's rank 0 wrote
    started = begin_attempt(run, 2, "n2", job)
    assert started.returncode == 0, started.stderr
    assert contents(run / "attempts" / "0") == first, "attempt 0 stays as it was filed"
    assert (run / "attempts" / "1" / "logs" / "rank-00000.log").read_text() == "attempt 1 got this far\n"
    assert not any((run / "logs").iterdir())
    assert [(a["number"], a["nodes"]) for a in attempts(run)] == [(0, "n1"), (1, "n1"), (2, "n2")]
    assert attempts(run)[1]["resume_from"] > 0 and attempts(run)[2]["resume_from"] == 0

    logs = collbench("logs", str(run), cwd=run.parent)
    assert logs.returncode == 0, logs.stderr
    assert logs.stdout == "", "the top level is attempt 2, which has written nothing yet"
    assert logs.stderr.splitlines()[:3] == [
        "collbench: attempt 2 of the job (on n2) is the one shown; earlier attempts:",
        "collbench:   attempt 0 on n1: ended unknown (requeued); kept in attempts/0/",
        "collbench:   attempt 1 on n1: ended unknown (requeued); kept in attempts/1/",
    ]


@pytest.mark.slurm
@pytest.mark.integration
def test_a_real_jobs_attempt_and_how_slurm_says_it_ended(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    """A real job's batch script records attempt 0; attempt 1 asks Slurm's accounting how 0 ended."""
    submitted = collbench(
        "submit", "--config", "testcluster", "nodes=1", "output_dir=runs", "bench.ops=[all_reduce]",
        "bench.max_bytes=4K", cwd=tmp_path, env=slurm_cluster.env(),
    )  # fmt: skip
    assert submitted.returncode == 0, submitted.stderr
    named = re.search(r"^run directory (.+)$", submitted.stdout, re.M)
    assert named, submitted.stdout
    run = Path(named.group(1))
    waited = collbench("wait", str(run), "--timeout", "240", cwd=tmp_path, env=slurm_cluster.env(), timeout=300)
    assert waited.returncode == 0, waited.stdout + waited.stderr
    job = _job_id(run)
    (first,) = attempts(run)
    assert (first["number"], first["resume_from"], first["previous_ended"]) == (0, 0, "")
    assert re.fullmatch(r"n[1-3]", first["nodes"]), first
    rows = len(json.loads((run / "summary.json").read_text())["rows"])

    started = begin_attempt(run, 1, first["nodes"], job, slurm_cluster.env())
    assert started.returncode == 0, started.stderr
    second = attempts(run)[1]
    assert (second["previous_ended"], second["resume_from"]) == ("COMPLETED", rows)
    status = collbench("status", str(run), cwd=tmp_path, env=slurm_cluster.env())
    assert f"collbench:   attempt 0 on {first['nodes']}: ended COMPLETED (requeued); kept in attempts/0/" in (
        status.stderr.splitlines()
    )
