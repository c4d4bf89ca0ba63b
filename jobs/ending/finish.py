"""finish_run: what a launcher's wait does where it sees a run end, in order, from one read of the run."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from jobs.ending.final_files import write_final_files
from jobs.inspect.report import OutcomeOnce, RunOutcome
from jobs.rundir.layout import RunDir


class Recorder(Protocol):
    """Records an ended run in the results history (jobs.history.hook.record_ended_run): handed in by the
    launchers, because this package sits below jobs.history and never loads a database driver."""

    def __call__(self, run: RunDir, *, outcome_of: Callable[[], RunOutcome]) -> object: ...


def finish_run(run: RunDir, *, job_over: bool = False, record: Recorder | None = None) -> None:
    """The final files (jobs.ending.final_files: written once, or awaited while rank 0 writes them), then
    `record` (the history: here, on the login node, because the compute nodes may not reach the database;
    it says in one line on stderr where it recorded the run, or why it did not, and a history that cannot
    be reached costs no more than that line), then the config's `exports`
    (jobs.ending.exports: a textfile or Pushgateway that fails costs one line too). The run is read once
    at most, for all three, and not at all when none of them needs it."""
    from jobs.ending.exports import export_ended_run  # prometheus_client only where a run ends

    outcome = OutcomeOnce(run)
    write_final_files(run, outcome, job_over=job_over)
    if record is not None:
        record(run, outcome_of=outcome)
    export_ended_run(run, outcome_of=outcome)
