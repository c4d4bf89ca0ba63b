"""Many jobs in one question: what `squeue -j 1,2,3` and `sacct -j 1,2,3` say, parsed. No commands run here
(slurm.submission runs them), so a watcher of N jobs costs one squeue per poll, not N."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

from slurm.states import completing_as, ended_as

SQUEUE_FORMAT = "%i|%T|%r|%N"
SACCT_FIELDS = "JobIDRaw,State,NodeList"


class Source(Enum):
    """Who said it: the controller (current) or accounting (lags a moment, but keeps finished jobs)."""

    SQUEUE = "squeue"
    SACCT = "sacct"
    NOBODY = "nobody"


@dataclass(frozen=True, slots=True)
class JobRecord:
    job_id: str
    state: str
    """'RUNNING', 'PENDING (Resources)', 'COMPLETED', 'CANCELLED by 0'; 'UNKNOWN' when nobody knows the job."""
    nodes: str
    """The job's node list ('n[1-2]'), '' before it starts."""
    source: Source


def squeue_argv(job_ids: Sequence[str]) -> list[str]:
    return ["squeue", "-h", "-t", "all", "-j", ",".join(job_ids), "-o", SQUEUE_FORMAT]


def sacct_argv(job_ids: Sequence[str]) -> list[str]:
    return ["sacct", "-X", "-n", "-P", "-j", ",".join(job_ids), "-o", SACCT_FIELDS]


def attempts_argv(job_id: str) -> list[str]:
    """Every attempt of one requeued job, in order (--duplicates): its state, nodes and end."""
    return ["sacct", "-j", job_id, "-X", "-D", "-n", "-P", "-o", "State,NodeList,End"]


def parse_attempt_states(text: str) -> list[str]:
    """`sacct -D -P -o State,...` lines -> each attempt's state word, the first attempt first."""
    return [line.split("|")[0] for line in text.splitlines() if line.strip()]


def parse_squeue(text: str) -> dict[str, JobRecord]:
    """`squeue -o '%i|%T|%r|%N'` lines -> job id -> record; a pending job's state carries its reason."""
    found = {}
    for line in text.splitlines():
        parts = line.strip().split("|")
        if len(parts) != 4 or not parts[0]:
            continue
        job_id, state, reason, nodes = parts
        if state == "PENDING" and reason and reason != "None":
            state = f"PENDING ({reason})"
        found[job_id] = JobRecord(job_id, state, nodes, Source.SQUEUE)
    return found


def parse_sacct(text: str) -> dict[str, JobRecord]:
    """`sacct -X -P -o JobIDRaw,State,NodeList` lines -> job id -> record (the last line of a job wins)."""
    found = {}
    for line in text.splitlines():
        parts = line.strip().split("|")
        if len(parts) != 3 or not parts[0]:
            continue
        job_id, state, nodes = parts
        found[job_id] = JobRecord(job_id, state, "" if nodes == "None assigned" else nodes, Source.SACCT)
    return found


def with_accounted_end(queued: JobRecord, accounted: JobRecord | None) -> JobRecord:
    """A job squeue shows COMPLETING, with the end accounting recorded for it (slurm.states.completing_as);
    as squeue said while accounting has no end yet."""
    if accounted is None or not ended_as(accounted.state):
        return queued
    return JobRecord(queued.job_id, completing_as(accounted.state), queued.nodes or accounted.nodes, queued.source)


def unknown(job_id: str) -> JobRecord:
    return JobRecord(job_id, "UNKNOWN", "", Source.NOBODY)
