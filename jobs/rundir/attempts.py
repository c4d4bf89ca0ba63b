"""One Slurm job, one or more attempts, each with its own results.

By default a collbench job is submitted with --no-requeue: after a node failure the job stays failed,
since a rerun on other nodes would measure another cluster. With slurm.requeue=true (preemptible
partitions) Slurm may start the job again; every attempt then begins, in the batch script and before
any rank starts, with `python -m jobs.rundir.attempts RUN_DIR`, which

  - moves what the previous attempt left at the top of the run directory (logs/, results/, status/,
    heartbeat/, env/, fabric/, table.txt, summary.json, nccl-tests/, slurm.json, and a copy of submitit's
    task logs) into
    attempts/<n>/, so the top level only ever holds the current attempt and no file is written by two;
  - records in attempts.json each attempt's nodes, start, how the one before it ended (NODE_FAIL,
    PREEMPTED, REQUEUED by hand or by submitit) and, with slurm.resume on the same nodes, how many
    measurements it carries over: those every rank had finished, never one measured twice.

`report`, `status`, `logs` and `compare` read the top level, the latest attempt, and say that earlier
attempts exist and why (notes()).
"""

from __future__ import annotations

import itertools
import os
import shutil
import sys
import time
from collections.abc import Mapping
from pathlib import Path

from jobs.rundir.layout import RunDir
from jobs.rundir.records.attempts import ATTEMPTS, Attempt, Attempts
from jobs.rundir.records.codec import RecordError
from jobs.rundir.records.rank import STATUS
from slurm.submission import attempt_state

MOVED = (
    "logs", "results", "status", "heartbeat", "env", "fabric", "isolate",
    "table.txt", "summary.json", "nccl-tests", "slurm.json", "isolate.json", "isolate-matrix.csv",
)  # fmt: skip


def attempts_file(run: RunDir) -> Path:
    return run.path / "attempts.json"


def archive_dir(run: RunDir, number: int) -> RunDir:
    """Where attempt `number` was moved once a later one began: a run directory of its own shape."""
    return RunDir(run.path / "attempts" / str(number))


def read_attempts(run: RunDir) -> list[Attempt]:
    """Every attempt on file, oldest first; none when the job was never requeued (or the file is unreadable:
    the run is then shown as one attempt)."""
    try:
        record = ATTEMPTS.read_if_any(attempts_file(run))
    except (OSError, RecordError):
        return []
    return record.attempts if record else []


def current_attempt(run: RunDir, number: int) -> Attempt | None:
    return next((a for a in read_attempts(run) if a.number == number), None)


def begin(run: RunDir, environ: Mapping[str, str], resume: bool) -> Attempt:
    """Start attempt SLURM_RESTART_COUNT: file away the one before, decide what carries over."""
    number = int(environ.get("SLURM_RESTART_COUNT") or 0)
    nodes = environ.get("SLURM_JOB_NODELIST", "")
    known = read_attempts(run)
    before = known[-1] if known else None
    ended, carried = "", 0
    if before is not None and before.number < number:
        archive = archive_dir(run, before.number)
        _move_top_level(run, archive, environ.get("SLURM_JOB_ID", ""))
        ended = _how_it_ended(environ.get("SLURM_JOB_ID", ""), before.number)
        world = run.read_meta().world_size
        if resume and before.nodes == nodes:
            carried = finished_by_every_rank(archive, world)
    attempt = Attempt(number, nodes, time.time(), resume_from=carried, previous_ended=ended)
    entries = [a for a in known if a.number != number] + [attempt]
    ATTEMPTS.write(attempts_file(run), Attempts(attempts=entries))
    return attempt


def _move_top_level(run: RunDir, archive: RunDir, job_id: str) -> None:
    archive.path.mkdir(parents=True, exist_ok=True)
    for name in MOVED:
        source = run.path / name
        if source.exists():
            os.replace(source, archive.path / name)
    for folder in (run.logs_dir, run.results_dir, run.status_dir, run.heartbeat_dir, run.env_dir):
        folder.mkdir(exist_ok=True)
    kept = archive.submitit_dir
    kept.mkdir(exist_ok=True)
    for log in run.submitit_dir.glob(f"{job_id}_*_log.*"):
        # srun and this very batch script hold them open in append mode: copy, then empty in place
        shutil.copy2(log, kept / log.name)
        with log.open("r+b") as handle:
            handle.truncate(0)


def _how_it_ended(job_id: str, number: int) -> str:
    """The state Slurm's accounting gave attempt `number` of the job (sacct --duplicates), '' unknown."""
    return attempt_state(job_id, number) if job_id else ""


def finished_by_every_rank(attempt: RunDir, world_size: int) -> int:
    """How many measurements, from the start of the sweep, every rank recorded whole."""
    counts = []
    for rank in range(world_size):
        path = attempt.rank_results(rank)
        counts.append(_whole_lines(path) if path.exists() else 0)
    return min(counts, default=0)


def _whole_lines(path: Path) -> int:
    count = 0
    with path.open(encoding="utf-8", errors="replace") as handle:
        for line in handle:
            if not line.endswith("\n") or not line.startswith("{") or not line.rstrip().endswith("}"):
                break
            count += 1
    return count


def _before(run: RunDir, attempt: Attempt) -> RunDir | None:
    previous = [a for a in read_attempts(run) if a.number < attempt.number]
    return archive_dir(run, previous[-1].number) if previous else None


def carry_over(run: RunDir, attempt: Attempt, rank: int, count: int) -> None:
    """Start this rank's results with the first `count` lines the attempt before it wrote."""
    earlier = _before(run, attempt)
    if earlier is None or count <= 0:
        return
    with earlier.rank_results(rank).open(encoding="utf-8") as source:
        lines = [line for _, line in zip(range(count), source, strict=False)]
    run.rank_results(rank).write_text("".join(lines), encoding="utf-8")


def earlier_host(run: RunDir, attempt: Attempt, rank: int) -> str:
    """The host this rank ran on in the attempt before (from its status file there), or ''."""
    earlier = _before(run, attempt)
    try:
        return STATUS.read(earlier.rank_status(rank)).host if earlier else ""
    except (OSError, RecordError):
        return ""


def notes(run: RunDir) -> list[str]:
    """One line per earlier attempt, for every command that reads the run: what it is looking at."""
    attempts = read_attempts(run)
    if len(attempts) < 2:
        return []
    latest = attempts[-1]
    lines = [f"attempt {latest.number} of the job (on {latest.nodes}) is the one shown; earlier attempts:"]
    for before, after in itertools.pairwise(attempts):
        ended = after.previous_ended or "unknown"
        lines.append(
            f"  attempt {before.number} on {before.nodes}: ended {ended} ({_why(ended)}); kept in "
            f"{archive_dir(run, before.number).path.relative_to(run.path)}/"
        )
    if latest.resume_from:
        lines.append(f"  attempt {latest.number} carried over {latest.resume_from} measurement(s) it did not repeat")
    return lines


def _why(state: str) -> str:
    word = state.split()[0] if state else ""
    return {
        "NODE_FAIL": "a node failed",
        "PREEMPTED": "preempted",
        "REQUEUED": "requeued by hand (scontrol requeue), by a preemption or by submitit before the time limit",
        "TIMEOUT": "hit its time limit",
    }.get(word, "requeued")


def main(argv: list[str]) -> int:
    """`python -m jobs.rundir.attempts RUN_DIR`: the first line of every collbench batch script."""
    if len(argv) != 1:
        print("usage: python -m jobs.rundir.attempts RUN_DIR", file=sys.stderr)
        return 2
    from jobs.rundir.records.config import load_run_config

    run = RunDir(Path(argv[0]))
    attempt = begin(run, os.environ, resume=load_run_config(run).slurm.resume)
    print(f"collbench: attempt {attempt.number} on {attempt.nodes}, carrying over {attempt.resume_from} measurement(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
