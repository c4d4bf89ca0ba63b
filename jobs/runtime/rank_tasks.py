"""What each kind of run measures on a rank, by the name jobs.config.tasks.TASKS gives it (TaskSpec.rank_entry):
the rank job resolves the entry and calls it with one RankWork, so a new kind of run is one more function."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from jobs.config.model import Config
from jobs.config.tasks import TaskSpec
from jobs.rundir.layout import RunDir
from jobs.runtime.placement import Placement

if TYPE_CHECKING:  # torch is imported by the rank job once its version is checked
    from collectives.results import RankResult
    from collectives.sweep import OnProgress, RankContext


@dataclass(frozen=True, slots=True)
class RankWork:
    """Everything a kind of run's rank code may need, once the process group is up."""

    cfg: Config
    run: RunDir
    placement: Placement
    ctx: RankContext
    device: Any
    """The rank's torch.device."""
    emit: Callable[[RankResult], None]
    on_progress: OnProgress
    carried: int
    """Measurements an earlier attempt of this rank has on file already (0 for a task in rounds)."""


RankEntry = Callable[[RankWork], None]


def sweep(work: RankWork) -> None:
    """The bench sweep over every rank (sweep, check-node), passing over what an earlier attempt measured."""
    from collectives.sweep import run_sweep

    run_sweep(
        work.cfg.bench,
        work.ctx,
        work.emit,
        corrupt_output=work.cfg.faults.corrupt_rank == work.placement.rank,
        on_progress=work.on_progress,
        skip_first=work.carried,
    )


def rounds(work: RankWork) -> None:
    """isolate's rounds of node groups (isolate, check): each attempt runs them all again."""
    from jobs.runtime.isolate_rounds import run_isolate

    run_isolate(work.cfg, work.run, work.placement, work.device, work.emit, work.on_progress)


def rank_entry(spec: TaskSpec) -> RankEntry:
    """The function TaskSpec.rank_entry names ('module:function')."""
    module, _, name = spec.rank_entry.partition(":")
    entry: RankEntry = getattr(importlib.import_module(module), name)
    return entry
