"""Cause before symptom, on hand-made evidence: every way a rank ends, and which one the headline names."""

from __future__ import annotations

from typing import Any

from jobs.inspect.postmortem import JobFacts, is_lost_peer, judge, short_error
from jobs.inspect.progress import RankProgress
from jobs.rundir.records.rank import RankState, RankStatus
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


def test_a_cancel_is_a_stop_not_a_hang() -> None:
    statuses = {r: status(r, "n1", "stopped", signal="SIGTERM", stopped_at=5.0 + r, error="stopped by SIGTERM")
                for r in range(2)}  # fmt: skip
    report = judge(2, statuses, {}, None, JobFacts(state="CANCELLED by 0"))
    assert len(report.causes) == 1 and report.causes[0].startswith("stopped: rank(s) 0-1 recorded a stop (stopped by")
    assert "Slurm: CANCELLED by 0" in report.causes[0] and report.consequences == []


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
