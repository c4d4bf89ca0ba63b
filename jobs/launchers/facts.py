"""The run directory as the launchers write it: slurm.json (what Slurm says of the job) and the run's final
files. Only `wait` (jobs.launchers.watcher) and a local `run` write; every other reader gets facts in
memory (Launcher.facts) and writes nothing."""

from __future__ import annotations

from jobs.inspect.isolate import assess_isolate, record_isolate
from jobs.inspect.report import assess, record_summary
from jobs.rundir.layout import RunDir
from jobs.rundir.records.slurm import JobFacts


def load_facts(run: RunDir) -> JobFacts:
    return JobFacts.read(run)


def save_facts(run: RunDir, facts: JobFacts) -> None:
    """slurm.json, when it says something new."""
    facts.save(run)


def write_final_files(run: RunDir) -> None:
    """table.txt and summary.json, and for collbench isolate its verdict files, by whoever first sees the
    run end (record_summary writes only while summary.json does not exist)."""
    outcome = assess(run)
    record_summary(run, outcome)
    if outcome.config.task == "isolate":
        record_isolate(run, assess_isolate(run, outcome))
