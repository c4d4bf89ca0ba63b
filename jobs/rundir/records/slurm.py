"""slurm.json: what Slurm said of the job when `wait` last asked (status and report only read it, and add
what Slurm says now in memory)."""

from __future__ import annotations

import errno
from dataclasses import dataclass, field

from jobs.rundir.layout import RunDir
from jobs.rundir.records.codec import Format, Plain, RecordError
from slurm.states import job_state

FACTS_VERSION = 2


@dataclass(kw_only=True, slots=True)
class JobFacts:
    """slurm.json."""

    state: str = ""
    """Slurm's state of the job (COMPLETED, NODE_FAIL, PENDING (Resources), ...); empty when never asked."""
    nodes: str = ""
    """The job's nodes, as Slurm's hostlist."""
    unhealthy: dict[str, str] = field(default_factory=dict)
    """Node -> Slurm's description (down and not responding (Not responding), ...)."""
    unanswering: list[str] = field(default_factory=list)
    """Nodes whose slurmd did not accept a connection from the submitting host."""
    version: int = FACTS_VERSION
    """The format of this file."""

    @property
    def final(self) -> bool:
        return bool(self.state) and job_state(self.state).is_final

    @classmethod
    def read(cls, run: RunDir) -> JobFacts:
        """What was last recorded; nothing known when the file is missing or unreadable."""
        try:
            return SLURM_FACTS.read_if_any(run.slurm_file) or cls()
        except (OSError, RecordError):
            return cls()

    def save(self, run: RunDir) -> bool:
        """Record these facts if they differ from the file's; a directory that cannot be written (a
        read-only mount) keeps what it has. True when written."""
        if JobFacts.read(run) == self:
            return False
        try:
            SLURM_FACTS.write(run.slurm_file, self)
        except OSError as error:
            if error.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
                return False
            raise
        return True


def _from_v1(plain: Plain) -> Plain:
    return plain


SLURM_FACTS = Format("slurm.json", JobFacts, FACTS_VERSION, {1: _from_v1}, pretty=True)
