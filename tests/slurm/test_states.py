import pytest

from slurm.states import JobState, completing_as, ended_as, job_state, meaning


@pytest.mark.parametrize(
    ("state", "phase", "final"),
    [
        ("PENDING", "pending", False),
        ("PENDING (Resources)", "pending", False),
        ("PENDING (PartitionNodeLimit)", "never_starts", True),
        ("PENDING (DependencyNeverSatisfied)", "never_starts", True),
        ("RUNNING", "running", False),
        ("COMPLETING", "running", False),
        ("COMPLETED", "completed", True),
        ("FAILED", "failed", True),
        ("TIMEOUT", "failed", True),
        ("NODE_FAIL", "failed", True),
        ("OUT_OF_MEMORY", "failed", True),
        ("CANCELLED by 0", "cancelled", True),
        ("CANCELLED+", "cancelled", True),
        ("WHATEVER", "unknown", False),
        ("", "unknown", False),
    ],
)
def test_every_state_has_one_meaning(state: str, phase: str, final: bool) -> None:
    found = job_state(state)
    assert (found.value, found.is_final) == (phase, final)


def test_a_job_that_can_never_start_is_not_said_to_have_ended() -> None:
    state = "PENDING (PartitionNodeLimit)"
    assert meaning(job_state(state), state) == "is queued but will never start: PartitionNodeLimit"
    assert meaning(JobState.FAILED, "FAILED") == "ended FAILED"
    assert meaning(JobState.RUNNING, "RUNNING") == "is RUNNING"


@pytest.mark.parametrize(
    ("state", "end"),
    [
        ("NODE_FAIL", "NODE_FAIL"),
        ("CANCELLED by 0", "CANCELLED"),
        ("CANCELLED+", "CANCELLED"),
        (completing_as("NODE_FAIL"), "NODE_FAIL"),
        (completing_as("CANCELLED by 0"), "CANCELLED"),
        ("COMPLETING", ""),
        ("RUNNING", ""),
        ("PENDING (PartitionNodeLimit)", ""),
        ("REQUEUED", ""),
        ("", ""),
    ],
)
def test_the_end_is_slurms_final_word_even_while_the_job_is_completing(state: str, end: str) -> None:
    assert ended_as(state) == end


def test_a_job_accounting_has_ended_is_not_final_while_slurm_still_kills_it() -> None:
    state = completing_as("NODE_FAIL")
    assert (job_state(state), job_state(state).is_final) == (JobState.RUNNING, False)
    assert meaning(job_state(state), state) == "is COMPLETING (NODE_FAIL)"
