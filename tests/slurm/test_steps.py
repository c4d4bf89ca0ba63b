"""Job steps inside an allocation, Slurm's side: the allocation from its variables, the step's nodes and
srun line, and the step id from srun -v's own words."""

from __future__ import annotations

import pytest

from slurm.settings import SlurmSettings
from slurm.steps import (
    Allocation,
    NotInAllocation,
    current_allocation,
    srun_argv,
    step_hosts,
    step_id_of,
)

HELD = Allocation("196", ("n3", "n4", "n5", "n6"))


def test_the_allocation_comes_from_slurms_variables_or_is_refused_in_one_line() -> None:
    assert current_allocation({"SLURM_JOB_ID": "196", "SLURM_JOB_NODELIST": "n[3-6]"}) == HELD
    with pytest.raises(NotInAllocation, match="not inside a Slurm allocation"):
        current_allocation({})
    with pytest.raises(NotInAllocation, match="SLURM_JOB_NODELIST"):
        current_allocation({"SLURM_JOB_ID": "7", "SLURM_JOB_NODELIST": "n[3-"})
    assert HELD.submitit_job_id({"SLURM_ARRAY_JOB_ID": "9", "SLURM_ARRAY_TASK_ID": "2"}) == "9_2"
    assert HELD.submitit_job_id({}) == "196"


def test_a_step_runs_on_the_allocation_or_a_subset_of_it_never_outside() -> None:
    assert step_hosts(HELD, SlurmSettings()) == ["n3", "n4", "n5", "n6"]
    assert step_hosts(HELD, SlurmSettings(exclude="n4")) == ["n3", "n5", "n6"]
    assert step_hosts(HELD, SlurmSettings(nodelist="n[5-6]")) == ["n5", "n6"]
    with pytest.raises(ValueError, match=r"n1 not in allocation 196 \(4 nodes\)"):
        step_hosts(HELD, SlurmSettings(nodelist="n[1,3]"))


def test_the_srun_line_names_its_nodes_tasks_and_kills_the_step_on_a_bad_exit() -> None:
    settings = SlurmSettings(tasks_per_node=8, gpus_per_node=8, cpus_per_task=4, srun_args=["--cpu-bind=none"])
    argv = srun_argv(settings, ["n3", "n5"], ["python", "-m", "x"], "collbench")
    assert argv == [
        "srun", "-v", "--job-name=collbench", "--nodes=2", "--ntasks-per-node=8", "--nodelist=n3,n5",
        "--export=ALL,SUBMITIT_EXECUTOR=slurm", "--kill-on-bad-exit=1", "--cpus-per-task=4", "--gpus-per-node=8",
        "--cpu-bind=none", "python", "-m", "x",
    ]  # fmt: skip


def test_the_step_id_is_read_from_srun_v() -> None:
    said = [
        "srun: jobid 196: nodes(3):`n[4-6]', cpu counts: 1(x3)",
        "srun: launching StepId=196.3 on host n4, 1 tasks: 0",
    ]
    assert step_id_of(said) == "196.3"
    assert step_id_of(["srun: error: Unable to create step for job 196: More processors requested"]) == ""
