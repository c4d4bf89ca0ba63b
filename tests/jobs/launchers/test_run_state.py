"""RunState: one JobState whatever the launcher, with the launcher's own words beside it."""

from __future__ import annotations

from jobs.launchers.base import RunState
from slurm.states import JobState, job_state


def test_the_local_launchers_ends_and_slurms_words_meet_in_one_enum() -> None:
    local = RunState("123", JobState.COMPLETED, nodes="localhost")
    slurm = RunState("77", job_state("CANCELLED by 0"), "CANCELLED by 0")
    assert (local.said, local.meaning()) == ("COMPLETED", "ended COMPLETED")
    assert (slurm.state, slurm.said, slurm.meaning()) == (JobState.CANCELLED, "CANCELLED by 0", "ended CANCELLED by 0")
    assert {state for state in JobState if state.is_final} == {
        JobState.COMPLETED,
        JobState.FAILED,
        JobState.CANCELLED,
        JobState.NEVER_STARTS,
    }
