"""The GPUs a request asks Slurm for, wherever the config spells them, and what device=cuda needs of them."""

from slurm.gpus import gpu_problems, gpu_request
from slurm.settings import SlurmSettings


def test_every_spelling_of_a_gpu_request_is_read() -> None:
    assert gpu_request(SlurmSettings(gpus_per_node=8)).per_node == 8
    assert gpu_request(SlurmSettings(sbatch_extra={"gres": "gpu:h100:4,nic:1"})).per_node == 4
    assert gpu_request(SlurmSettings(sbatch_extra={"gres": "gpu"})).per_node == 1
    assert gpu_request(SlurmSettings(sbatch_extra={"gpus_per_task": "1"})).per_task == 1
    assert gpu_request(SlurmSettings(sbatch_extra={"gpus-per-node": "h100:2"})).per_node == 2
    assert gpu_request(SlurmSettings(sbatch_extra={"gpus": "16"})).total == 16
    assert gpu_request(SlurmSettings(srun_args=["--cpu-bind=none", "--gpus-per-task=1"])).per_task == 1
    assert not gpu_request(SlurmSettings(sbatch_extra={"gres": "nic:1", "reservation": "gpu"})).any


def test_no_gpu_asked_for_is_refused_for_a_job_but_not_for_a_step_of_an_allocation() -> None:
    [line] = gpu_problems(SlurmSettings(), nodes=2, submitted=True)
    assert line.startswith("slurm.gpus_per_node: 0 asks Slurm for no GPU, but device=cuda needs one per rank")
    assert gpu_problems(SlurmSettings(), nodes=2, submitted=False) == []


def test_more_ranks_per_node_than_gpus_per_node_is_refused_naming_the_key_that_asked() -> None:
    [line] = gpu_problems(SlurmSettings(tasks_per_node=8, sbatch_extra={"gres": "gpu:4"}), 1, submitted=True)
    assert line == (
        "slurm.tasks_per_node: 8 ranks per node, but slurm.sbatch_extra.gres asks for 4 GPU(s) per node; "
        "device=cuda needs one per rank: allowed: slurm.tasks_per_node <= 4"
    )
    assert gpu_problems(SlurmSettings(gpus_per_node=8), 4, submitted=True) == []  # tasks default to one per GPU


def test_gpus_per_task_gives_every_rank_its_own_and_a_total_must_cover_every_rank() -> None:
    assert gpu_problems(SlurmSettings(tasks_per_node=8, sbatch_extra={"gpus_per_task": "1"}), 4, True) == []
    [line] = gpu_problems(SlurmSettings(tasks_per_node=4, sbatch_extra={"gpus": "6"}), 2, submitted=True)
    assert line.startswith("slurm.sbatch_extra.gpus: 6 GPU(s) for 8 ranks (2 nodes x 4)")
