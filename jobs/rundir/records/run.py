"""run.json: what ran, written when the run directory is made and when its job is known."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from jobs.config.tasks import TASKS, TaskName, kind_of
from jobs.rundir.records.codec import Format, Plain
from jobs.rundir.records.kinds import Word


class LauncherName(Word):
    """What started the ranks (jobs.launchers): one more launcher is one more member."""

    LOCAL = "local"
    SLURM = "slurm"
    SLURM_STEP = "slurm-step"
    """srun job steps inside an allocation already held (collbench check)."""
    IMPORTED = "imported"
    """No ranks ran here: `collbench import` wrote the run directory from nccl-tests' output."""
    EXTERNAL = "external"
    """Another launcher started the ranks, each `collbench rank` (run.json's `external` says which)."""


RUN_VERSION = 4
TASK_KINDS_VERSION = 4
"""The format from which task says every kind (check, check-node); before it a check run said isolate and
a check --node run sweep (jobs.rundir.layout.RunDir.read_meta reads them as what they were)."""


UNKNOWN = "unknown"
"""What an imported run's file did not say."""


@dataclass(kw_only=True, slots=True)
class ImportedAs:
    """What an imported run's files say it ran on, each "unknown" where they do not say: never assumed."""

    backend: str = UNKNOWN
    """nccl, gloo (collbench's own nccl-tests JSON of a gloo run), or unknown."""
    device: str = UNKNOWN
    """cuda, cpu, or unknown."""
    nccl_version: str = UNKNOWN
    cuda_version: str = UNKNOWN
    torch_version: str = UNKNOWN


@dataclass(kw_only=True, slots=True)
class RunMeta:
    """run.json."""

    run_id: str
    """The run directory's name."""
    launcher: LauncherName
    world_size: int
    """Ranks in the job."""
    nodes: int
    task: TaskName = "sweep"
    """The kind of run (jobs.config.tasks): sweep, isolate, check or check-node (format 4)."""
    job_id: str = ""
    """Slurm's job id, or the local controller's pid; empty until the job is started."""
    master_addr: str = ""
    """The local rendezvous (Slurm jobs find theirs inside the job)."""
    master_port: int = 0
    imported_from: list[str] = field(default_factory=list)
    """launcher imported: the nccl-tests files `collbench import` read, as given (format 3)."""
    imported_as: ImportedAs | None = None
    """launcher imported: the backend, device and versions its files say (None: a run collbench ran, or one
    imported before this field, which the history labels from its config)."""
    imported_digest: str = ""
    """launcher imported: the sha256 of the files' contents, so the same files imported again are found."""
    external: str = ""
    """launcher external: who started the ranks (torchrun, env, slurm, mpi, pmix: docs/launchers.md)."""
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


def _from_v2(plain: Plain) -> Plain:
    """Format 3 added launcher imported and imported_from; a format 2 file has neither."""
    return plain


def _from_v3(plain: Plain) -> Plain:
    """Format 4 says check and check-node in task; a format 3 file said isolate or sweep, which the run
    directory's reader tells apart by the config (RunDir.read_meta)."""
    return plain


RUN = Format("run.json", RunMeta, RUN_VERSION, {1: _from_v1, 2: _from_v2, 3: _from_v3}, pretty=True)


def read_run(path: Path, plan_mode: Callable[[], str]) -> RunMeta:
    """run.json at `path`, its task the kind of run: a file of a format before TASK_KINDS_VERSION said isolate
    for a check run too, told apart by `plan_mode()` (the config's isolate.mode, asked only then). A check
    --node run of those formats said sweep, and nothing in its directory marks it otherwise: it reads as the
    local sweep it ran (the history recorded it as check-node, jobs.history.node_check)."""
    data = path.read_bytes()
    meta = RUN.decode(data, str(path))
    if TASKS[meta.task].in_rounds and RUN.version_in(data, str(path)) < TASK_KINDS_VERSION:
        return replace(meta, task=kind_of(meta.task, plan_mode()))
    return meta
