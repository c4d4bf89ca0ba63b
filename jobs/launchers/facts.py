"""The run directory as the launchers write it: slurm.json (what Slurm says of the job) and the run's final
files. Only `wait` (jobs.launchers.watcher) and a local `run` write; every other reader gets facts in
memory (Launcher.facts) and writes nothing."""

from __future__ import annotations

from jobs.inspect.report import OutcomeOnce, await_final_files, record_summary
from jobs.rundir.layout import RunDir
from jobs.rundir.records.run import Task
from jobs.rundir.records.slurm import JobFacts


def load_facts(run: RunDir) -> JobFacts:
    return JobFacts.read(run)


def save_facts(run: RunDir, facts: JobFacts) -> None:
    """slurm.json, when it says something new."""
    facts.save(run)


def write_final_files(run: RunDir, job_over: bool = False) -> None:
    """table.txt and summary.json, and for collbench isolate its verdict files, by whoever first sees the
    run end (record_summary writes only while summary.json does not exist). `job_over`: the launcher says
    the job has ended, so ranks that never started count as ended too. When rank 0 (or an earlier wait)
    has recorded them already, the run is not read again: at thousands of ranks that read takes seconds.
    Then the run goes into the history (jobs.history): here, on the login node, because the compute nodes
    may not reach the database; a history that cannot be reached costs one line on stderr. Last, the
    config's `exports` (jobs.launchers.exports): a textfile or Pushgateway that fails costs one line too."""
    from jobs.inspect.isolate import assess_isolate, record_isolate  # where a run ends, not for every reader
    from jobs.launchers.exports import export_ended_run  # prometheus_client, likewise

    isolate = run.read_meta().task == Task.ISOLATE
    outcome = OutcomeOnce(run)  # the run is read once at most, for all three
    if not run.summary_file.exists() or (isolate and not run.isolate_verdict.exists()):
        record_summary(run, outcome(), job_over=job_over)
        if isolate:
            record_isolate(run, assess_isolate(run, outcome()), job_over=job_over)
    else:
        await_final_files(run)  # rank 0 may be writing them this moment: return once they are whole
    from jobs.history.hook import record_ended_run  # SQLAlchemy only where a run ends

    record_ended_run(run, outcome_of=outcome)
    export_ended_run(run, outcome_of=outcome)
