import pytest

from slurm.rendezvous import (
    PORT_BASE,
    PORT_SPAN,
    SlurmEnvError,
    master_addr_for,
    master_port_for_job,
    placement_from_env,
    tasks_per_node,
)

TASK_ENV = {
    "SLURM_JOB_ID": "4242",
    "SLURM_STEP_NODELIST": "gpu[07-08]",
    "SLURM_JOB_NODELIST": "gpu[07-08]",
    "SLURM_NODEID": "1",
    "SLURM_PROCID": "10",
    "SLURM_LOCALID": "2",
    "SLURM_NTASKS": "16",
    "SLURM_STEP_TASKS_PER_NODE": "8(x2)",
    # left over from the submitting shell: must not matter
    "MASTER_PORT": "1",
    "RANK": "99",
    "WORLD_SIZE": "3",
}


def test_placement_comes_from_slurm_variables_only() -> None:
    p = placement_from_env(TASK_ENV)
    assert (p.rank, p.world_size, p.local_rank, p.local_world_size) == (10, 16, 2, 8)
    assert (p.node_rank, p.nnodes, p.hosts) == (1, 2, ("gpu07", "gpu08"))
    assert p.master_addr == "gpu07"
    assert p.master_port == master_port_for_job("4242")


def test_master_addr_can_be_a_template_or_an_address() -> None:
    assert placement_from_env(TASK_ENV, master_addr="{host}-ib").master_addr == "gpu07-ib"
    assert placement_from_env(TASK_ENV, master_addr="10.1.2.3").master_addr == "10.1.2.3"
    assert master_addr_for("n1", "") == "n1"


def test_master_port_can_be_fixed() -> None:
    assert placement_from_env(TASK_ENV, master_port=29500).master_port == 29500


@pytest.mark.parametrize("job_id", ["1", "4242", "999999", "123_7", "31999", "20000"])
def test_derived_ports_stay_below_the_ephemeral_range(job_id: str) -> None:
    port = master_port_for_job(job_id)
    assert PORT_BASE <= port < PORT_BASE + PORT_SPAN <= 32768
    assert port == master_port_for_job(job_id)


def test_neighbouring_jobs_get_different_ports() -> None:
    assert len({master_port_for_job(str(j)) for j in range(1000, 1100)}) == 100


def test_world_size_mismatch_is_an_error_naming_both_sizes() -> None:
    with pytest.raises(SlurmEnvError, match="Slurm started 16 tasks on 2 nodes, but the config asks for 8"):
        placement_from_env(TASK_ENV, expected_world_size=8)


def test_missing_variables_say_srun_did_not_start_the_task() -> None:
    env = {k: v for k, v in TASK_ENV.items() if k != "SLURM_PROCID"}
    with pytest.raises(SlurmEnvError, match="SLURM_PROCID is not set"):
        placement_from_env(env)


@pytest.mark.parametrize(("spec", "counts"), [("2(x3)", [2, 2, 2]), ("4", [4]), ("2(x2),1", [2, 2, 1])])
def test_tasks_per_node_reads_slurms_compressed_form(spec: str, counts: list[int]) -> None:
    assert tasks_per_node(spec) == counts


def test_tasks_per_node_refuses_garbage() -> None:
    with pytest.raises(SlurmEnvError):
        tasks_per_node("2(y3)")
