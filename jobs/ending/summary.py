"""summary.json, nccl-tests/<op>.json and table.txt: written once, by whoever first sees the run end."""

from __future__ import annotations

import errno
import time

from jobs.ending.nccl_tests import write_nccl_tests_files
from jobs.inspect.report import RunOutcome, render_tables, summary_of
from jobs.rundir.layout import RunDir
from jobs.rundir.records.summary import SUMMARY
from jobs.rundir.writing import create_exclusive, write_atomic

READ_ONLY = (errno.EROFS, errno.EACCES, errno.EPERM)
"""A run directory that cannot be written (a read-only mount, another user's): left as it is."""

FINAL_FILES_WAIT_S = 10.0
"""How long a writer that lost the race waits for the winner's last file."""


def record_summary(run: RunDir, outcome: RunOutcome, job_over: bool = False) -> bool:
    """Write the run's summary.json, nccl-tests/<op>.json and table.txt, once: only when the run has ended
    (every rank recorded its end or is known dead; or `job_over`: the caller saw the job end, e.g. Slurm
    says it is final, even with ranks that never started) and summary.json does not exist yet. True when
    this call wrote them.

    Called by rank 0 at the end of the job (jobs.runtime.rank_job), by the first `wait` (or `run`) that
    sees the run end (jobs.ending.final_files), and by `collbench import`, with the outcome just assessed;
    every other reader only assesses. summary.json is created exclusively (whole, in one link), so of
    racing writers exactly one wins; the winner then writes nccl-tests/ (docs/exports.md) and table.txt,
    last. A loser returns only once the winner's table.txt is there (FINAL_FILES_WAIT_S at most), so
    whoever returns from here leaves the final files whole. A run directory that cannot be written is
    left as it is: False."""
    if not (outcome.ended or job_over):
        return False
    if run.summary_file.exists():
        await_final_files(run)
        return False
    try:
        if not create_exclusive(run.summary_file, SUMMARY.encode(summary_of(run, outcome)) + b"\n"):
            await_final_files(run)
            return False
        write_nccl_tests_files(run, outcome)
        write_atomic(run.table_file, ("\n".join(render_tables(outcome)) + "\n").encode())
        return True
    except OSError as error:
        if error.errno in READ_ONLY:
            return False
        raise


def await_final_files(run: RunDir, timeout_s: float = FINAL_FILES_WAIT_S) -> bool:
    """summary.json is there: wait (briefly) for table.txt, which its writer writes last."""
    deadline = time.monotonic() + timeout_s
    while not run.table_file.exists():
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
    return True
