"""Where a launcher's wait sees a run end: jobs.ending.finish_run, with the history record handed in
(jobs.ending sits below jobs.history, and the ranks that import it never load a database driver)."""

from __future__ import annotations

from jobs.ending.finish import finish_run
from jobs.rundir.layout import RunDir


def end_run(run: RunDir, job_over: bool = False) -> None:
    """The run's final files (once), its history record, its exports. `job_over`: the launcher says the
    job has ended, so ranks that never started count as ended too."""
    from jobs.history.hook import record_ended_run  # SQLAlchemy only where a run ends

    finish_run(run, job_over=job_over, record=record_ended_run)
