"""Slurm job states, in one table: what each means to collbench and whether it is final."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Phase = Literal["pending", "running", "completed", "failed", "cancelled", "unknown"]


@dataclass(frozen=True, slots=True)
class StateInfo:
    phase: Phase
    final: bool


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
"""Pending reasons under which a job can never start as submitted: treated as a final failure."""


def state_info(slurm_state: str) -> StateInfo:
    """sacct/squeue's state ('CANCELLED by 0', 'RUNNING', 'PENDING (PartitionNodeLimit)') -> its meaning."""
    words = slurm_state.strip().split()
    word = words[0].rstrip("+") if words else ""
    if word == "PENDING" and len(words) > 1 and words[1].strip("()") in NEVER_STARTS:
        return StateInfo("failed", True)
    return SLURM_STATES.get(word, UNKNOWN)
