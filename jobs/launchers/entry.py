"""What submitit pickles and every task calls: the rank's runtime, named rather than imported.

The launching side (a login node, `collbench submit`) never imports the rank's code, which needs torch:
the task imports `RANK_MODULE` when it starts, on the compute node, as a console script or torchx's
`AppDef.entrypoint` names a program by name.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

RANK_MODULE = "jobs.runtime.rank_job"
"""Defines run_rank(config, run_dir, local_rendezvous) -> dict."""


@dataclass(frozen=True, slots=True)
class RankEntry:
    """Picklable: submitit sends it to every task, local or on Slurm."""

    config: dict[str, Any]
    """The resolved config, as plain data (secrets withheld)."""
    run_dir: str
    local_rendezvous: tuple[str, int] | None = None
    """(master_addr, master_port) chosen by the local launcher; None on Slurm, where the ranks find it."""

    def checkpoint(self) -> Any:
        """submitit calls this on rank 0 when Slurm warns of the time limit or a preemption (SIGUSR2):
        the job itself asks submitit to requeue it where slurm.requeue allows (the next attempt resumes
        on its own, see jobs.rundir.attempts); None declines, and the job ends as stopped."""
        if not self.config.get("slurm", {}).get("requeue", False):
            return None
        from submitit.helpers import DelayedSubmission

        return DelayedSubmission(self)

    def __call__(self) -> dict[str, Any]:
        result: dict[str, Any] = importlib.import_module(RANK_MODULE).run_rank(
            self.config, self.run_dir, self.local_rendezvous
        )
        return result
