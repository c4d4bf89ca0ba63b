"""All of a run's final files, by whoever first sees the run end: summary.json, nccl-tests/ and table.txt,
then the verdict files its kind of run names (TaskSpec.verdict_files): isolate.json and isolate-matrix.csv
for an isolate or check run, and with them a check run's check/ files."""

from __future__ import annotations

from collections.abc import Callable

from jobs.config.tasks import TASKS
from jobs.ending.summary import await_final_files, record_summary
from jobs.inspect.report import RunOutcome
from jobs.rundir.layout import RunDir


def write_final_files(run: RunDir, outcome_of: Callable[[], RunOutcome], job_over: bool = False) -> None:
    """Write what is not on file yet (record_summary writes only while summary.json does not exist);
    `job_over`: the launcher says the job has ended, so ranks that never started count as ended too.
    When rank 0 (or an earlier wait) has recorded them already, the run is not read (`outcome_of` is not
    called): at thousands of ranks that read takes seconds."""
    verdicts = TASKS[run.read_meta().task].verdict_files
    if run.summary_file.exists() and not (verdicts and not run.isolate_verdict.exists()):
        await_final_files(run)  # rank 0 may be writing them this moment: return once they are whole
        return
    record_summary(run, outcome_of(), job_over=job_over)
    if verdicts:
        _record_verdicts(run, outcome_of(), job_over, with_check="check" in verdicts)


def _record_verdicts(run: RunDir, outcome: RunOutcome, job_over: bool, with_check: bool) -> None:
    """isolate.json and isolate-matrix.csv once; with them (`with_check`) a check run's check/ files."""
    from jobs.ending.check_files import write_check_files  # the verdicts' modules only where an isolate run ends
    from jobs.ending.isolate_files import record_isolate
    from jobs.inspect.check_verdict import assess_check
    from jobs.inspect.isolate_verdict import assess_isolate

    iso = assess_isolate(run, outcome)
    wrote = record_isolate(run, iso, job_over=job_over)
    if wrote and with_check:
        write_check_files(assess_check(run, outcome, iso), run.check_dir)
