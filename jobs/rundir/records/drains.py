"""drains.json: what the command that ran a check or isolate did to Slurm's nodes once its verdict stood (the
drains and resumes it ran, refused or skipped, each with why). Written once, by that command, when
drain.apply is on; a dry run (--drain) prints the same steps and writes nothing."""

from __future__ import annotations

from dataclasses import dataclass, field

from jobs.rundir.records.codec import Format

DRAINS_VERSION = 1


@dataclass(frozen=True, slots=True)
class DrainStep:
    host: str
    action: str
    """drain, resume, or leave (nothing run: someone else's drain, a reason still open)."""
    codes: list[str]
    reason: str
    """drain: the reason set; resume and leave: the node's reason before."""
    why: str
    done: bool
    """The scontrol line ran and Slurm took it (false for leave, and for a line refused or not run)."""
    error: str = ""
    """Slurm's words when it refused the line (no rights: 'Invalid user id')."""


@dataclass(kw_only=True, slots=True)
class DrainRecord:
    run_id: str
    task: str
    at: float
    steps: list[DrainStep] = field(default_factory=list)
    version: int = DRAINS_VERSION


DRAINS = Format("drains.json", DrainRecord, DRAINS_VERSION, {}, pretty=True)
