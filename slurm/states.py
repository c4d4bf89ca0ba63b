"""Slurm job states, in one table: what each means to collbench and whether it is final."""

from __future__ import annotations

from enum import Enum


class JobState(Enum):
    """Where a job stands, whatever runs it: Slurm's words map onto it once (SLURM_STATES, job_state), the
    local and step launchers' ends once (jobs.launchers.children.ended_state)."""

    PENDING = "pending"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"
    NEVER_STARTS = "never_starts"
    """Queued under a reason it can never start with as submitted (NEVER_STARTS): final, though it stays queued."""
    UNKNOWN = "unknown"

    @property
    def is_final(self) -> bool:
        """Nothing more will happen to the job unless somebody acts (a job that can never start is final too)."""
        return self in _FINAL


_FINAL = frozenset({JobState.COMPLETED, JobState.FAILED, JobState.CANCELLED, JobState.NEVER_STARTS})

SLURM_STATES: dict[str, JobState] = {
    "PENDING": JobState.PENDING,
    "REQUEUED": JobState.PENDING,
    "REQUEUE_HOLD": JobState.PENDING,
    "REQUEUE_FED": JobState.PENDING,
    "RESIZING": JobState.PENDING,
    "CONFIGURING": JobState.RUNNING,
    "RUNNING": JobState.RUNNING,
    "COMPLETING": JobState.RUNNING,
    "SUSPENDED": JobState.RUNNING,
    "STOPPED": JobState.RUNNING,
    "SIGNALING": JobState.RUNNING,
    "STAGE_OUT": JobState.RUNNING,
    "COMPLETED": JobState.COMPLETED,
    "FAILED": JobState.FAILED,
    "TIMEOUT": JobState.FAILED,
    "NODE_FAIL": JobState.FAILED,
    "OUT_OF_MEMORY": JobState.FAILED,
    "BOOT_FAIL": JobState.FAILED,
    "DEADLINE": JobState.FAILED,
    "PREEMPTED": JobState.FAILED,
    "SPECIAL_EXIT": JobState.FAILED,
    "REVOKED": JobState.CANCELLED,
    "CANCELLED": JobState.CANCELLED,
}
"""Slurm's state words (squeue, sacct) -> the JobState each means."""

NEVER_STARTS = frozenset(
    {
        "PartitionNodeLimit",
        "PartitionTimeLimit",
        "PartitionConfig",
        "BadConstraints",
        "InvalidAccount",
        "InvalidQOS",
        "QOSMaxNodePerJobLimit",
        "AssocMaxNodesPerJobLimit",
        "AssocMaxWallDurationPerJobLimit",
        "QOSMaxWallDurationPerJobLimit",
        "DependencyNeverSatisfied",
    }
)
"""Pending reasons under which a job can never start as submitted: final, though it stays queued."""


def job_state(slurm_state: str) -> JobState:
    """sacct/squeue's state ('CANCELLED by 0', 'RUNNING', 'PENDING (PartitionNodeLimit)') -> its JobState."""
    words = slurm_state.strip().split()
    word = words[0].rstrip("+") if words else ""
    if word == "PENDING" and len(words) > 1 and words[1].strip("()") in NEVER_STARTS:
        return JobState.NEVER_STARTS
    return SLURM_STATES.get(word, JobState.UNKNOWN)


def meaning(state: JobState, words: str) -> str:
    """The state in words: 'ended FAILED', 'is RUNNING', or 'is queued but will never start: PartitionNodeLimit'
    (`words`: Slurm's, or the state's name)."""
    if state is JobState.NEVER_STARTS:
        reason = words.split("(", 1)[-1].rstrip(")") if "(" in words else words
        return f"is queued but will never start: {reason}"
    return f"ended {words}" if state.is_final else f"is {words}"


def completing_as(end: str) -> str:
    """squeue's COMPLETING with the end accounting has recorded already: 'COMPLETING (NODE_FAIL)'. The job
    has ended; Slurm is still killing its processes (for up to KillWait), so it is not final yet."""
    return f"COMPLETING ({end})"


def state_word(slurm_state: str) -> str:
    """The one word that names the state: 'CANCELLED' for 'CANCELLED by 0' and 'CANCELLED+', the end
    accounting recorded for 'COMPLETING (NODE_FAIL)'; '' for no state."""
    words = slurm_state.strip().split(maxsplit=1)
    if not words:
        return ""
    if words[0] == "COMPLETING" and len(words) > 1:
        return state_word(words[1].strip().removeprefix("(").removesuffix(")"))
    return words[0].rstrip("+")


def ended_as(slurm_state: str) -> str:
    """The state Slurm ended the job with, in one word: 'NODE_FAIL' for 'NODE_FAIL' and for
    'COMPLETING (NODE_FAIL)', 'CANCELLED' for 'CANCELLED by 0'; '' while it has not ended."""
    word = state_word(slurm_state)
    return word if SLURM_STATES.get(word, JobState.UNKNOWN).is_final else ""
