"""Job steps inside an allocation this process already holds (an `salloc` shell, a batch script): the
allocation from Slurm's variables, the `srun` command line of a step, its step id from srun's own words,
whether it still runs, and cancelling it, never the allocation. No torch.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from slurm import runner
from slurm.hostlist import BadHostlist, expand_hostlist
from slurm.runner import SlurmError, SlurmFailed
from slurm.settings import SlurmSettings
from slurm.submission import SubmissionFailed

_LAUNCHING = re.compile(r"launching StepId=(?P<step>\d+(?:_\d+)?\.\d+)")


class StepRefused(SubmissionFailed):
    """srun did not start the step (a node outside the allocation, resources busy, ...): srun's words."""


class NotInAllocation(ValueError):
    """This process holds no Slurm allocation (SLURM_JOB_ID unset): there is nowhere to run a step."""


@dataclass(frozen=True, slots=True)
class Allocation:
    job_id: str
    hosts: tuple[str, ...]
    """The allocation's nodes, in Slurm's order."""

    def submitit_job_id(self, env: Mapping[str, str]) -> str:
        """The id submitit's task reads its pickle by: '<array>_<task>' in an array job, else the job id."""
        array, task = env.get("SLURM_ARRAY_JOB_ID", ""), env.get("SLURM_ARRAY_TASK_ID", "")
        return f"{array}_{task}" if array and task else self.job_id


def current_allocation(env: Mapping[str, str]) -> Allocation:
    """The allocation this process runs in, from SLURM_JOB_ID and SLURM_JOB_NODELIST."""
    job_id = env.get("SLURM_JOB_ID") or env.get("SLURM_JOBID") or ""
    if not job_id:
        raise NotInAllocation(
            "not inside a Slurm allocation (SLURM_JOB_ID is not set): run it from salloc or a batch script"
        )
    nodelist = env.get("SLURM_JOB_NODELIST") or env.get("SLURM_NODELIST") or ""
    try:
        hosts = tuple(expand_hostlist(nodelist))
    except BadHostlist as error:
        raise NotInAllocation(f"allocation {job_id}: SLURM_JOB_NODELIST {nodelist!r}: {error}") from None
    return Allocation(job_id, hosts)


def step_hosts(allocation: Allocation, settings: SlurmSettings) -> list[str]:
    """The allocation's nodes a step runs on: slurm.nodelist when given (each must be in the allocation),
    else all of them, less slurm.exclude. ValueError names a node outside the allocation."""
    held = list(allocation.hosts)
    chosen = expand_hostlist(settings.nodelist) if settings.nodelist else held
    outside = [host for host in chosen if host not in held]
    if outside:
        raise ValueError(
            f"slurm.nodelist: {', '.join(outside)} not in allocation {allocation.job_id} ({len(held)} nodes)"
        )
    excluded = set(expand_hostlist(settings.exclude)) if settings.exclude else set()
    return [host for host in chosen if host not in excluded]


def srun_argv(settings: SlurmSettings, hosts: Sequence[str], command: Sequence[str], job_name: str) -> list[str]:
    """One step on exactly `hosts` of the allocation: -v so srun says its step id, --kill-on-bad-exit so
    one dead rank ends the step, SUBMITIT_EXECUTOR so submitit reads the task as a Slurm one."""
    argv = [
        "srun",
        "-v",
        f"--job-name={job_name}",
        f"--nodes={len(hosts)}",
        f"--ntasks-per-node={settings.resolved_tasks_per_node()}",
        f"--nodelist={','.join(hosts)}",
        "--export=ALL,SUBMITIT_EXECUTOR=slurm",
    ]
    if settings.kill_on_bad_exit:
        argv.append("--kill-on-bad-exit=1")
    if settings.cpus_per_task is not None:
        argv.append(f"--cpus-per-task={settings.cpus_per_task}")
    if settings.gpus_per_node > 0:
        argv.append(f"--gpus-per-node={settings.gpus_per_node}")
    return [*argv, *settings.srun_args, *command]


def command_text(argv: Sequence[str]) -> str:
    return " ".join(shlex.quote(word) for word in argv)


def step_id_of(lines: Iterable[str]) -> str:
    """'JOB.STEP' from srun -v's 'launching StepId=196.0 on host n4', or '' before srun has said it."""
    for line in lines:
        found = _LAUNCHING.search(line)
        if found:
            return found.group("step")
    return ""


def step_running(step_id: str) -> bool | None:
    """Whether Slurm still lists the step (squeue --steps); None when Slurm cannot say."""
    try:
        return step_id in runner.output(["squeue", "-h", "--steps", step_id, "-o", "%i"]).split()
    except SlurmError:
        return None


def cancel_step(step_id: str) -> str:
    """scancel JOB.STEP: the step ends, the allocation stays. '' when done, else Slurm's words."""
    try:
        runner.run(["scancel", step_id])
    except SlurmFailed as error:
        return error.words
    except SlurmError as error:
        return str(error)
    return ""


def cluster_name(env: Mapping[str, str] | None = None) -> str:
    """The cluster's name as the history records it: SLURM_CLUSTER_NAME inside a job, else Slurm's
    ClusterName (`scontrol show config`, on a login node), else 'local'."""
    import os

    named = (os.environ if env is None else env).get("SLURM_CLUSTER_NAME")
    if named:
        return named
    try:
        said = runner.output(["scontrol", "show", "config"])
    except SlurmError:
        return "local"
    found = re.search(r"^ClusterName\s*=\s*(\S+)", said, re.MULTILINE)
    return found.group(1) if found else "local"
