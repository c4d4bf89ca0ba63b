"""The Slurm watcher's policy: how its polls back off, and that N runs cost one squeue per poll, not N
(the batching is checked on the real test cluster, with a PATH shim that logs every Slurm call)."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from jobs.launchers.watcher import BACKOFF, Backoff, Watcher
from jobs.rundir.layout import RunDir
from slurm.states import ended_as, job_state
from slurm.submission import query_jobs
from tests.conftest import SlurmCluster

SLURM_COMMANDS = ("squeue", "sacct", "sinfo", "scontrol", "sbatch", "scancel", "srun")


def polls_in(seconds: float, backoff: Backoff, changes_at: tuple[float, ...] = ()) -> list[float]:
    """When a watcher polls over `seconds` of waiting, a change being seen at each time in `changes_at`."""
    at, interval, times = 0.0, None, []
    pending = sorted(changes_at)
    while at <= seconds:
        times.append(at)
        changed = bool(pending) and pending[0] <= at
        while pending and pending[0] <= at:
            pending.pop(0)
        interval = backoff.after(interval, changed)
        at += interval
    return times


def test_the_interval_starts_short_and_doubles_up_to_the_longest() -> None:
    backoff = Backoff(first_s=2.0, longest_s=30.0, factor=2.0)
    intervals, interval = [], None
    for _ in range(7):
        interval = backoff.after(interval, changed=False)
        intervals.append(interval)
    assert intervals == [2.0, 4.0, 8.0, 16.0, 30.0, 30.0, 30.0]


def test_a_change_brings_the_interval_back_to_the_first() -> None:
    assert BACKOFF.after(30.0, changed=True) == BACKOFF.first_s
    assert BACKOFF.after(None, changed=False) == BACKOFF.first_s


def test_a_quiet_two_minute_wait_polls_at_most_a_dozen_times() -> None:
    quiet = polls_in(120, BACKOFF)
    assert len(quiet) <= 10, quiet
    with_changes = polls_in(120, BACKOFF, changes_at=(3.0, 60.0))  # the job starts, then a rank ends
    assert len(with_changes) <= 12, with_changes
    assert any(60.0 < t <= 60.0 + 2 * BACKOFF.longest_s for t in with_changes)


@pytest.mark.parametrize(("first", "longest", "factor"), [(0.0, 30.0, 2.0), (40.0, 30.0, 2.0), (2.0, 30.0, 0.5)])
def test_a_backoff_that_cannot_work_is_refused_by_its_values(first: float, longest: float, factor: float) -> None:
    with pytest.raises(ValueError, match=rf"Backoff\({first}, {longest}, {factor}\): allowed 0 < first_s"):
        Backoff(first_s=first, longest_s=longest, factor=factor)


# ---- on the real cluster


@pytest.fixture
def slurm_calls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, slurm_cluster: SlurmCluster) -> Iterator[Path]:
    """Every Slurm command this process runs from now on, one line each (command and arguments)."""
    shim, log = tmp_path / "shim", tmp_path / "slurm-calls.log"
    shim.mkdir()
    for command in SLURM_COMMANDS:
        script = shim / command
        script.write_text(f'#!/bin/sh\necho "{command} $*" >>"{log}"\nexec /usr/bin/{command} "$@"\n')
        script.chmod(0o755)
    log.write_text("")
    monkeypatch.setenv("SLURM_CONF", str(slurm_cluster.slurm_conf))
    monkeypatch.setenv("PATH", f"{shim}:{Path('/usr/bin')}:/bin")
    yield log


def sleeping_jobs(cluster: SlurmCluster, count: int, seconds: int) -> list[str]:
    argv = ["/usr/bin/sbatch", "--parsable", "-p", "debug", "-o", "/dev/null", "--wrap", f"sleep {seconds}"]
    return [
        subprocess.run(argv, capture_output=True, text=True, env=cluster.env(), check=True).stdout.strip()
        for _ in range(count)
    ]


def cancel(cluster: SlurmCluster, jobs: list[str]) -> None:
    subprocess.run(["/usr/bin/scancel", *jobs], env=cluster.env(), check=False)


@pytest.mark.slurm
def test_the_state_of_n_jobs_is_one_squeue(slurm_cluster: SlurmCluster, slurm_calls: Path) -> None:
    jobs = sleeping_jobs(slurm_cluster, 3, 60)
    try:
        states = query_jobs(jobs)
    finally:
        cancel(slurm_cluster, jobs)
    assert sorted(states) == sorted(jobs)
    assert all(s.state.startswith(("PENDING", "RUNNING", "CONFIGURING")) for s in states.values()), states
    assert slurm_calls.read_text().splitlines() == [f"squeue -h -t all -j {','.join(jobs)} -o %i|%T|%r|%N"]


MIN_JOB_AGE_S = 300
"""tests/cluster/up.sh's MinJobAge: how long squeue still lists a job that has ended."""


def forgotten_completed_jobs(cluster: SlurmCluster, count: int) -> list[str]:
    """`count` jobs accounting has as COMPLETED that the controller no longer lists, oldest first. Which job
    ids those are depends on what ran before on the cluster (job 1 may have been cancelled, or be minutes
    young), so they are looked up; on a cluster too young to have any, quick jobs are run and waited for
    until the controller has forgotten them (MinJobAge, then its purge pass)."""

    def lookup() -> list[str]:
        accounted = subprocess.run(
            ["/usr/bin/sacct", "-X", "-n", "-P", "-a", "-S", "2000-01-01", "-o", "JobIDRaw,State"],
            capture_output=True, text=True, env=cluster.env(), check=True,
        ).stdout  # fmt: skip
        listed = subprocess.run(
            ["/usr/bin/squeue", "-h", "-t", "all", "-o", "%i"], capture_output=True, text=True, env=cluster.env()
        ).stdout.split()
        completed = [line.split("|")[0] for line in accounted.splitlines() if line.endswith("|COMPLETED")]
        return [job for job in completed if job.isdigit() and job not in listed][:count]

    if len(found := lookup()) < count:
        argv = ["/usr/bin/sbatch", "--parsable", "-p", "debug", "-o", "/dev/null", "--wrap", "true"]
        for _ in range(count):
            subprocess.run(argv, capture_output=True, text=True, env=cluster.env(), check=True)
        deadline = time.monotonic() + MIN_JOB_AGE_S + 180
        while len(found := lookup()) < count:
            assert time.monotonic() < deadline, f"squeue still lists every completed job after {MIN_JOB_AGE_S} s"
            time.sleep(5)
    return found


@pytest.mark.slurm
def test_jobs_squeue_forgot_are_asked_of_accounting_in_one_sacct(
    slurm_cluster: SlurmCluster, slurm_calls: Path
) -> None:
    old = forgotten_completed_jobs(slurm_cluster, 2)  # ended long ago: only accounting remembers them
    slurm_calls.write_text("")
    live = sleeping_jobs(slurm_cluster, 1, 60)
    try:
        states = query_jobs([*live, *old])
    finally:
        cancel(slurm_cluster, live)
    assert all(states[job].state == "COMPLETED" and states[job].nodes for job in old), states
    calls = slurm_calls.read_text().splitlines()
    assert [call.split()[0] for call in calls] == ["squeue", "sacct"], calls
    assert f"-j {','.join(old)} " in calls[1], "only the jobs squeue no longer lists"


@pytest.mark.slurm
def test_the_watcher_polls_every_run_in_one_squeue_and_leaves_nodes_alone(
    slurm_cluster: SlurmCluster, slurm_calls: Path, tmp_path: Path
) -> None:
    jobs = sleeping_jobs(slurm_cluster, 3, 60)
    runs = []
    for job_id in jobs:
        run = RunDir.create(tmp_path / "runs", "slurm")
        run.update_meta(run_id=run.run_id, launcher="slurm", world_size=1, nodes=1, job_id=job_id)
        runs.append(run)
    try:
        watcher = Watcher(runs)
        watcher.step(0.0, None)
        watcher.step(0.5, None)  # not due yet, nothing changed on file: no Slurm call
    finally:
        cancel(slurm_cluster, jobs)
    calls = slurm_calls.read_text().splitlines()
    assert calls == [f"squeue -h -t all -j {','.join(jobs)} -o %i|%T|%r|%N"], calls
    assert watcher.interval == BACKOFF.first_s


KILL_WAIT_S = 5.0
"""tests/cluster/up.sh's KillWait: how long a task that ignores SIGTERM keeps a cancelled job COMPLETING."""


def wait_for_file(cluster: SlurmCluster, job: str, marker: Path, within_s: float) -> None:
    """Until the job's task has written `marker`; fails with the job's state when it never does."""
    deadline = time.monotonic() + within_s
    while not marker.exists():
        state = query_jobs([job])[job].state
        if job_state(state).is_final or time.monotonic() > deadline:
            cancel(cluster, [job])
            pytest.fail(f"job {job} never wrote {marker.name} within {within_s:g} s (it is {state})")
        time.sleep(0.1)


@pytest.mark.slurm
def test_a_job_slurm_is_still_killing_carries_the_end_accounting_recorded(
    slurm_cluster: SlurmCluster, slurm_calls: Path, tmp_path: Path
) -> None:
    # a task that ignores SIGTERM keeps a cancelled job COMPLETING until KillWait's SIGKILL (5 s here):
    # accounting says CANCELLED meanwhile, and so must the job's state, though it is not final yet.
    # squeue says RUNNING as soon as the job is allocated, before its TaskProlog and script run: a cancel
    # then ends it at once (SIGTERM kills the prolog, no trap exists yet). So the cancel waits for the
    # marker the script writes after it set the trap, and the job is sure to outlive SIGTERM by KillWait.
    ready = tmp_path / "sigterm-ignored"
    script = f"trap '' TERM; touch {ready}; sleep 120"
    argv = ["/usr/bin/sbatch", "--parsable", "-p", "debug", "-o", "/dev/null", "--wrap", script]
    job = subprocess.run(argv, capture_output=True, text=True, env=slurm_cluster.env(), check=True).stdout.strip()
    wait_for_file(slurm_cluster, job, ready, within_s=120)
    cancel(slurm_cluster, [job])
    cancelled_at = time.monotonic()
    seen, state = [], ""
    # polls until the job is final (KillWait after the cancel), bounded well past that
    while time.monotonic() < cancelled_at + KILL_WAIT_S + 60:
        state = query_jobs([job])[job].state
        if job_state(state).is_final:
            break
        seen.append((round(time.monotonic() - cancelled_at, 2), state))
        time.sleep(0.2)
    lasted = time.monotonic() - cancelled_at
    # slurmd counts KillWait in whole seconds: the SIGKILL comes 4 to 5 s after the SIGTERM
    assert lasted > KILL_WAIT_S / 2, f"premise: the task outlives SIGTERM until KillWait, not {lasted:.1f} s: {seen}"
    assert "COMPLETING (CANCELLED by 0)" in [said for _, said in seen], f"(s after the cancel, state): {seen}"
    assert job_state(state).is_final and ended_as(state) == "CANCELLED", state
    assert not job_state("COMPLETING (CANCELLED by 0)").is_final
    asked = [call for call in slurm_calls.read_text().splitlines() if call.startswith("sacct")]
    assert asked and all(f"-j {job} " in call for call in asked), "accounting is asked only of the completing job"
