"""When `wait` may believe the ranks' ends on file: not while the job may be starting another attempt."""

from __future__ import annotations

import pytest

from jobs.inspect.postmortem import Kind, Postmortem, RankEnd
from jobs.launchers.watcher import awaiting_next_attempt
from slurm.states import job_state


def ended(*kinds: Kind) -> Postmortem:
    return Postmortem(ends={rank: RankEnd(rank, f"n{rank + 1}", kind, kind, "") for rank, kind in enumerate(kinds)})


@pytest.mark.parametrize(
    ("slurm_state", "kinds", "may_requeue", "awaiting"),
    [
        ("RUNNING", ("stopped", "stopped"), True, True),  # SIGTERM of a requeue: Slurm has yet to say REQUEUED
        ("COMPLETING", ("stopped", "ok"), True, True),
        ("REQUEUED", ("stopped", "stopped"), True, True),
        ("PENDING", ("stopped", "stopped"), True, True),  # the last attempt's files wait for the next one
        ("PENDING", ("ok", "ok"), False, True),
        ("RUNNING", ("stopped", "stopped"), False, False),  # --no-requeue: a stop is the job's end
        ("RUNNING", ("ok", "ok"), True, False),  # finished: Slurm only has to catch up
        ("RUNNING", ("own", "peer"), True, False),
        ("CANCELLED by 0", ("stopped", "stopped"), True, False),
        ("", ("stopped", "stopped"), True, False),  # Slurm cannot say: believe the files
    ],
)
def test_ends_on_file_are_the_jobs_only_when_no_attempt_can_follow(
    slurm_state: str, kinds: tuple[Kind, ...], may_requeue: bool, awaiting: bool
) -> None:
    assert awaiting_next_attempt(job_state(slurm_state), ended(*kinds), may_requeue) is awaiting
