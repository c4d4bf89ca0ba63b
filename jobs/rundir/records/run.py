"""run.json: what ran, written when the run directory is made and when its job is known."""

from __future__ import annotations

from dataclasses import dataclass

from jobs.rundir.records.codec import Format, Plain
from jobs.rundir.records.kinds import Word


class Launcher(Word):
    """What started the ranks (jobs.launchers): one more launcher is one more member."""

    LOCAL = "local"
    SLURM = "slurm"
    SLURM_STEP = "slurm-step"
    """srun job steps inside an allocation already held (collbench check)."""


class Task(Word):
    """What the ranks run."""

    SWEEP = "sweep"
    """The nccl-tests style sweep over ops and sizes."""
    ISOLATE = "isolate"
    """collbench isolate's rounds of node groups."""


RUN_VERSION = 2


@dataclass(kw_only=True, slots=True)
class RunMeta:
    """run.json."""

    run_id: str
    """The run directory's name."""
    launcher: Launcher
    world_size: int
    """Ranks in the job."""
    nodes: int
    task: Task = Task.SWEEP
    job_id: str = ""
    """Slurm's job id, or the local controller's pid; empty until the job is started."""
    master_addr: str = ""
    """The local rendezvous (Slurm jobs find theirs inside the job)."""
    master_port: int = 0
    version: int = RUN_VERSION
    """The format of this file."""


def _from_v1(plain: Plain) -> Plain:
    """Format 1 (no version; layout_version 1) had the same fields, a job id possibly a number."""
    plain.pop("layout_version", None)
    if plain.get("job_id") is not None:
        plain["job_id"] = str(plain["job_id"])
    else:
        plain.pop("job_id", None)
    return plain


RUN = Format("run.json", RunMeta, RUN_VERSION, {1: _from_v1}, pretty=True)
