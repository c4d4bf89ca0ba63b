"""The `slurm` section of a collbench config: the resources a job asks Slurm for."""

from __future__ import annotations

import re
from dataclasses import dataclass, field


@dataclass(kw_only=True, slots=True)
class SlurmSettings:
    partition: str = ""
    """Partition (sbatch --partition); empty for the cluster's default."""
    account: str = ""
    """Account to charge (--account)."""
    qos: str = ""
    """Quality of service (--qos)."""
    tasks_per_node: int | None = None
    """Ranks per node; default one per GPU (gpus_per_node), or 1 without GPUs."""
    gpus_per_node: int = 0
    """GPUs per node (--gpus-per-node); 0 asks for none."""
    cpus_per_task: int | None = None
    """CPUs per rank (--cpus-per-task); unset leaves Slurm's default."""
    mem: str = ""
    """Memory per node (--mem), such as 200G, or 0 for all of it; empty leaves Slurm's default."""
    constraint: str = ""
    """Node features (--constraint)."""
    exclude: str = ""
    """Nodes never to use (--exclude), a hostlist."""
    nodelist: str = ""
    """Nodes to use (--nodelist), a hostlist."""
    exclusive: bool = False
    """Take whole nodes (--exclusive)."""
    job_name: str = "collbench"
    """Job name (--job-name)."""
    setup: list[str] = field(default_factory=list)
    """Shell lines run in the batch script before the ranks start (module loads, ...)."""
    srun_args: list[str] = field(default_factory=list)
    """Extra arguments for srun, such as --cpu-bind=none."""
    kill_on_bad_exit: bool = True
    """srun --kill-on-bad-exit=1: one rank that dies ends the whole step."""
    requeue: bool = False
    """Let Slurm run the job again after a node failure or a preemption (--requeue); each attempt is
    kept apart in the run directory. Off (--no-requeue): a benchmark whose nodes changed mid-run
    measured another cluster, so a failed job stays failed."""
    resume: bool = True
    """With requeue: an attempt on the same nodes as the one before carries over every measurement
    all ranks had finished and goes on from there; on other nodes it starts over."""
    sbatch_extra: dict[str, str] = field(default_factory=dict)
    """Further sbatch options by long name without dashes, such as {reservation: maint}."""

    def resolved_tasks_per_node(self) -> int:
        if self.tasks_per_node is not None:
            return self.tasks_per_node
        return self.gpus_per_node if self.gpus_per_node > 0 else 1

    def problems(self) -> list[str]:
        """One line per value that is not usable in an sbatch script."""
        found = []
        for name in ("partition", "account", "qos", "mem", "constraint", "exclude", "nodelist", "job_name"):
            found += _sbatch_value(f"slurm.{name}", getattr(self, name))
        for i, line in enumerate(self.setup):
            found += _single_line(f"slurm.setup[{i}]", line)
        for i, arg in enumerate(self.srun_args):
            found += _single_line(f"slurm.srun_args[{i}]", arg)
        for key, value in self.sbatch_extra.items():
            if not _OPTION_NAME.match(key):
                found.append(
                    f"slurm.sbatch_extra: {key!r} is not an sbatch option name; allowed: letters, digits, '-' and '_'"
                )
            found += _sbatch_value(f"slurm.sbatch_extra.{key}", value)
        for name in ("tasks_per_node", "cpus_per_task"):
            value = getattr(self, name)
            if value is not None and value < 1:
                found.append(f"slurm.{name}: {value} must be >= 1")
        if self.gpus_per_node < 0:
            found.append(f"slurm.gpus_per_node: {self.gpus_per_node} must be >= 0")
        return found


_OPTION_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*$")


def _sbatch_value(key: str, value: str) -> list[str]:
    """An #SBATCH value: one word, so it can carry neither a second option nor a second line."""
    if any(char.isspace() for char in value):
        return [f"{key}: {value!r} contains whitespace; allowed: a single word such as gpu or n[1-4]"]
    return []


def _single_line(key: str, value: str) -> list[str]:
    if "\n" in value or "\r" in value:
        return [f"{key}: {value!r} spans several lines; allowed: a single line (no newline could reach sbatch)"]
    return []
