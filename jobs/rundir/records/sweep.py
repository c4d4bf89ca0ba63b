"""sweep.json: a node-count sweep (`collbench scale`), what it asked for and, per node count, its run or why none."""

from __future__ import annotations

from dataclasses import dataclass, field

from jobs.rundir.records.codec import Format

SWEEP_VERSION = 1
"""Format 1 is sweep.json as collbench wrote it before records carried a version: read as it is."""


@dataclass(kw_only=True, slots=True)
class SweepEntry:
    """One node count of the sweep: its run once submitted, or the error that kept it from being submitted."""

    nodes: int
    run_dir: str | None = None
    """The run directory, once the job was submitted; None before, and for ever when it was refused."""
    job_id: str | None = None
    """The launcher's id for the run (a Slurm job id)."""
    error: str | None = None
    """Why the node count was not submitted (the cluster refused it)."""


@dataclass(kw_only=True, slots=True)
class SweepMeta:
    """sweep.json."""

    sweep_id: str = ""
    """The sweep directory's name (the directory itself is what names a sweep)."""
    created: float = 0.0
    """When the sweep was created (seconds since the epoch)."""
    config: str | None = None
    """The config as given to `collbench scale --config`: a name or a path; None for the default."""
    overrides: list[str] = field(default_factory=list)
    """The KEY=VALUE overrides given, nodes= left out."""
    node_counts: list[int] = field(default_factory=list)
    entries: list[SweepEntry] = field(default_factory=list)
    """One per node count, in the order of node_counts."""
    version: int = SWEEP_VERSION
    """The format of this file."""


SWEEP = Format("sweep.json", SweepMeta, SWEEP_VERSION, pretty=True)
