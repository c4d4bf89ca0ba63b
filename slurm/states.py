"""Slurm job states, in one table: what each means to collbench and whether it is final."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Phase = Literal["pending", "running", "completed", "failed", "cancelled", "never_starts", "unknown"]


@dataclass(frozen=True, slots=True)
class StateInfo:
    phase: Phase
    final: bool
    """Nothing more will happen to the job unless somebody acts (a job that can never start is final too)."""

    def meaning(self, slurm_state: str) -> str:
        """The state in words: 'ended FAILED', or 'will never start: PartitionNodeLimit'."""
        if self.phase == "never_starts":
            reason = slurm_state.split("(", 1)[-1].rstrip(")") if "(" in slurm_state else slurm_state
            return f"is queued but will never start: {reason}"
        return f"ended {slurm_state}" if self.final else f"is {slurm_state}"


SLURM_STATES: dict[str, StateInfo] = {
    "PENDING": StateInfo("pending", False),
    "REQUEUED": StateInfo("pending", False),
    "REQUEUE_HOLD": StateInfo("pending", False),
    "REQUEUE_FED": StateInfo("pending", False),
    "RESIZING": StateInfo("pending", False),
    "CONFIGURING": StateInfo("running", False),
    "RUNNING": StateInfo("running", False),
    "COMPLETING": StateInfo("running", False),
    "SUSPENDED": StateInfo("running", False),
    "STOPPED": StateInfo("running", False),
    "SIGNALING": StateInfo("running", False),
    "STAGE_OUT": StateInfo("running", False),
    "COMPLETED": StateInfo("completed", True),
    "FAILED": StateInfo("failed", True),
    "TIMEOUT": StateInfo("failed", True),
    "NODE_FAIL": StateInfo("failed", True),
    "OUT_OF_MEMORY": StateInfo("failed", True),
    "BOOT_FAIL": StateInfo("failed", True),
    "DEADLINE": StateInfo("failed", True),
    "PREEMPTED": StateInfo("failed", True),
    "SPECIAL_EXIT": StateInfo("failed", True),
    "REVOKED": StateInfo("cancelled", True),
    "CANCELLED": StateInfo("cancelled", True),
}

UNKNOWN = StateInfo("unknown", False)

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


def state_info(slurm_state: str) -> StateInfo:
    """sacct/squeue's state ('CANCELLED by 0', 'RUNNING', 'PENDING (PartitionNodeLimit)') -> its meaning."""
    words = slurm_state.strip().split()
    word = words[0].rstrip("+") if words else ""
    if word == "PENDING" and len(words) > 1 and words[1].strip("()") in NEVER_STARTS:
        return StateInfo("never_starts", True)
    return SLURM_STATES.get(word, UNKNOWN)


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
    return word if SLURM_STATES.get(word, UNKNOWN).final else ""
