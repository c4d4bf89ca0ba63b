"""attempts.json: the attempts of a requeued Slurm job (jobs.rundir.attempts files them)."""

from __future__ import annotations

from dataclasses import dataclass, field

from jobs.rundir.records.codec import Format, Plain


@dataclass(frozen=True, slots=True)
class Attempt:
    number: int
    """SLURM_RESTART_COUNT of the attempt."""
    nodes: str
    """The attempt's nodes, as Slurm's hostlist."""
    started: float
    resume_from: int = 0
    """Measurements carried over from the attempt before (every rank's first resume_from results)."""
    previous_ended: str = ""
    """How the attempt before this one ended, as Slurm recorded it."""


ATTEMPTS_VERSION = 2


@dataclass(kw_only=True, slots=True)
class Attempts:
    """attempts.json."""

    attempts: list[Attempt] = field(default_factory=list)
    """Oldest first."""
    version: int = ATTEMPTS_VERSION
    """The format of this file."""


def _from_v1(plain: Plain) -> Plain:
    return plain


ATTEMPTS = Format("attempts.json", Attempts, ATTEMPTS_VERSION, {1: _from_v1}, pretty=True)
