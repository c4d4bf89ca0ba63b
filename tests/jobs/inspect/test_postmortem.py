"""Cause before symptom, on hand-made evidence: every way a rank ends, and which one the headline names."""

from __future__ import annotations

from typing import Any

from jobs.inspect.postmortem import JobFacts, is_lost_peer, judge, short_error
from jobs.inspect.progress import RankProgress
from jobs.rundir.records.rank import RankState, RankStatus, SetupFailure, SetupProbe
from slurm.evidence import read_step_messages

RESET = "RuntimeError: [/__w/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:537] Read error [10.0.0.2]:60629: "
RESET += "Connection reset by peer. This is typically caused by a remote worker hanging."
TIMEOUT = "RuntimeError: [../gloo/transport/tcp/unbound_buffer.cc:78] Timed out waiting 30000ms for recv operation"


def status(rank: int, host: str, state: str, **fields: Any) -> RankStatus:
    return RankStatus(rank=rank, host=host, state=RankState(state), pid=100 + rank, device="cpu", started=1.0,
                      updated=1.0, addresses=[f"10.0.0.{host[1:]}"], **fields)  # fmt: skip


def at(rank: int, host: str, position: int) -> RankProgress:
    return RankProgress(rank, host, "start", position, 1.0, f"in all_reduce (measurement {position // 2 + 1})", 10)


def test_a_killed_rank_is_the_cause_and_the_survivors_only_noticed() -> None:
    statuses = {
        0: status(0, "n1", "failed", error=RESET, failed_at=10.4),
        1: status(1, "n1", "running"),
        2: status(2, "n2", "failed", error=RESET, failed_at=10.5),
        3: status(3, "n2", "running"),
    }
    steps = read_step_messages(
        ["srun: error: n2: task 3: Killed", "srun: launch/slurm: _step_signal: Terminating StepId=1.0",
         "srun: error: n1: task 1: Terminated"]
    )  # fmt: skip
    progress = {r: at(r, s.host, 6) for r, s in statuses.items()}
    report = judge(4, statuses, progress, steps, JobFacts(state="FAILED"))
    assert report.causes == [
        "rank 3 on n2 died: Killed (SIGKILL) per srun, with nothing recorded (killed, out of memory or crashed)"
    ]
    assert report.consequences[0].startswith("rank(s) 0,2 noticed a lost peer (first rank 0 on n1: RuntimeError: ")
    assert "(the peer at 10.0.0.2 is n2)" in report.consequences[0]
    assert report.consequences[1] == "rank(s) 1 were ended by srun after the step failed"
    assert {r: e.state for r, e in report.ends.items()} == {0: "failed", 1: "dead", 2: "failed", 3: "dead"}
    assert report.ended()


def test_an_error_of_its_own_comes_before_the_ranks_that_lost_it() -> None:
    statuses = {
        0: status(0, "n1", "failed", error=TIMEOUT, failed_at=40.0),
        1: status(1, "n2", "failed", error="InjectedFault: injected failure on rank 1", failed_at=11.0),
    }
    report = judge(2, statuses, {}, None, JobFacts())
    assert report.causes == ["rank 1 on n2 failed first: InjectedFault: injected failure on rank 1"]
    assert report.consequences[0].startswith("rank(s) 0 noticed a lost peer")


def test_a_rank_that_never_failed_and_was_behind_hung() -> None:
    statuses = {0: status(0, "n1", "failed", error=TIMEOUT, failed_at=40.0), 1: status(1, "n2", "running")}
    progress = {0: at(0, "n1", 0), 1: RankProgress(1, "n2", "init", -1, 1.0, "initialising", 0)}
    report = judge(2, statuses, progress, None, JobFacts(state="RUNNING"))
    assert report.causes[0].startswith("rank 1 on n2 hung: never failed itself and was behind the ranks")
    assert report.ended(), "a hung rank's verdict is final: wait need not wait for it"


def test_a_node_that_stopped_answering_is_named_with_its_ranks() -> None:
    statuses = {r: status(r, f"n{r + 1}", "failed", error=TIMEOUT, failed_at=40.0) for r in range(3)}
    facts = JobFacts(state="RUNNING", nodes="n[1-3]", unanswering=["n2"])
    report = judge(3, statuses, {}, None, facts)
    assert report.causes == ["node n2 stopped answering (its slurmd does not answer from here): rank(s) 1 ran there"]
    assert report.ends[1].state == "lost" and report.consequences[0].startswith("rank(s) 0,2 noticed a lost peer")


def test_a_node_fail_accounting_has_recorded_is_said_while_slurm_still_kills_the_job() -> None:
    statuses = {r: status(r, f"n{r + 1}", "failed", error=TIMEOUT, failed_at=40.0) for r in (0, 2)}
    statuses[1] = status(1, "n2", "running")
    facts = JobFacts(state="COMPLETING (NODE_FAIL)", nodes="n[1-3]", unhealthy={"n2": "Slurm marks it down"})
    report = judge(3, statuses, {}, None, facts)
    assert report.causes[0] == "node n2 stopped answering (Slurm marks it down): rank(s) 1 ran there"
    assert report.causes[1].startswith("the job ended NODE_FAIL on n[1-3] and was not run again")
    assert not judge(3, statuses, {}, None, JobFacts(state="COMPLETING", unhealthy=facts.unhealthy)).causes[1:]


def test_a_cancel_seen_while_slurm_still_kills_the_job_is_a_cancel() -> None:
    statuses = {r: stopped(r, "n1") for r in range(2)}
    report = judge(2, statuses, {}, None, JobFacts(state="COMPLETING (CANCELLED by 0)"))
    assert report.causes[0].endswith("Slurm: COMPLETING (CANCELLED by 0)): cancelled"), report.causes


def test_a_cancel_is_a_stop_not_a_hang() -> None:
    statuses = {r: status(r, "n1", "stopped", signal="SIGTERM", stopped_at=5.0 + r, error="stopped by SIGTERM")
                for r in range(2)}  # fmt: skip
    report = judge(2, statuses, {}, None, JobFacts(state="CANCELLED by 0"))
    assert len(report.causes) == 1 and report.causes[0].startswith("stopped: rank(s) 0-1 recorded a stop (stopped by")
    assert "Slurm: CANCELLED by 0" in report.causes[0] and report.consequences == []


UNREACHABLE = "DistNetworkError: The client socket has failed to connect to any network address of (10.79.0.99, 20015)"
SRUN_ENDS_STEP = [
    "srun: error: n1: tasks 0-1: Exited with exit code 1",
    "srun: launch/slurm: _step_signal: Terminating StepId=15.0",
    "slurmstepd-n2: error: *** STEP 15.0 ON n2 CANCELLED AT 2026-12-04T08:00:52 ***",
    "srun: error: n2: tasks 2-3: Terminated",
]


def stopped(rank: int, host: str) -> RankStatus:
    return status(rank, host, "stopped", signal="SIGTERM", stopped_at=9.0, error="stopped by SIGTERM")


def test_an_unreachable_rendezvous_is_a_set_up_error_and_srun_ending_the_step_no_cancel() -> None:
    failure = SetupFailure("10.79.0.99", 20015, SetupProbe.UNREACHABLE, "10.79.0.99; Network is unreachable")
    statuses = {
        **{r: status(r, "n1", "failed", error=UNREACHABLE, failed_at=5.0 + r, setup_failure=failure) for r in (0, 1)},
        **{r: stopped(r, "n2") for r in (2, 3)},
    }
    report = judge(4, statuses, {}, read_step_messages(SRUN_ENDS_STEP), JobFacts(state="FAILED"))
    assert report.causes == [
        "rank(s) 0-1 on n1 failed in set-up: cannot reach the rendezvous address 10.79.0.99:20015 (10.79.0.99; "
        f"Network is unreachable; {UNREACHABLE}): look at rendezvous.master_addr (an address of the job's first "
        "node?), the routes and a firewall between n1 and it, GLOO_SOCKET_IFNAME/NCCL_SOCKET_IFNAME"
    ]
    assert report.consequences == [
        "rank(s) 2-3 were stopped (SIGTERM) by srun ending the step after task(s) 0-1 exited (Exited with exit "
        "code 1): srun's clean-up (--kill-on-bad-exit, Terminating StepId=15.0), not a cancel"
    ]
    assert not any("cancelled" in line or "lost peer" in line for line in report.problems)


def test_a_set_up_that_waited_for_ranks_that_never_came_names_them_after_its_own_causes() -> None:
    failure = SetupFailure("n1", 20015, SetupProbe.ANSWERS, "n1 is this host: the store was here")
    statuses = {0: status(0, "n1", "failed", error="DistStoreError: Timed out", failed_at=5.0, setup_failure=failure)}
    report = judge(2, statuses, {}, None, JobFacts(state="FAILED"))
    assert report.causes[0].startswith("rank 0 on n1 failed in set-up: timed out in set-up waiting for the other")
    assert "rank(s) 1 never started (no status file)" in report.consequences


def test_srun_ending_the_step_after_a_lost_peer_is_no_cancel_and_no_cause() -> None:
    statuses = {0: status(0, "n1", "failed", error=RESET, failed_at=5.0), 1: stopped(1, "n2")}
    steps = read_step_messages(["srun: error: n1: task 0: Exited with exit code 1", *SRUN_ENDS_STEP[1:3]])
    report = judge(2, statuses, {}, steps, JobFacts(state="FAILED"))
    assert report.causes == []
    assert report.consequences[0].startswith("rank(s) 0 noticed a lost peer first, and no rank shows a cause")
    assert report.consequences[1].startswith("rank(s) 1 were stopped (SIGTERM) by srun ending the step after task")


def test_a_stop_is_a_cancel_only_when_slurm_says_so() -> None:
    statuses = {r: stopped(r, "n1") for r in range(2)}
    failed = judge(2, statuses, {}, None, JobFacts(state="FAILED"))
    assert failed.causes[0].endswith("Slurm: FAILED): Slurm records no cancel, preemption or time limit")
    out_of_time = judge(2, statuses, {}, None, JobFacts(state="TIMEOUT"))
    assert out_of_time.causes[0].endswith("Slurm: TIMEOUT): out of time")


def test_a_finished_job_has_no_running_rank() -> None:
    statuses = {0: status(0, "n1", "ok"), 1: status(1, "n2", "running")}
    report = judge(3, statuses, {}, None, JobFacts(state="FAILED"))
    assert report.ends[1].state == "dead" and "the job ended FAILED" in report.ends[1].how
    assert report.ends[2].state == "never started"
    assert "rank(s) 2 never started (no status file)" in report.consequences


def test_lost_peer_errors_and_their_short_form() -> None:
    assert is_lost_peer(RESET) and is_lost_peer(TIMEOUT)
    assert is_lost_peer("DistBackendError: NCCL error: remote process exited or there was a network error")
    assert not is_lost_peer("InjectedFault: injected failure on rank 1")
    assert not is_lost_peer("RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB")
    assert short_error(RESET) == (
        "RuntimeError: [gloo/gloo/transport/tcp/pair.cc:537] Read error [10.0.0.2]:60629: Connection reset by peer"
    )
