"""Faults injected for real on the project's three-node Slurm cluster: a killed rank, a lost node, a cancel,
requeues with and without slurm.requeue, a controller restart, and requests the cluster can never run.
What is asserted is what the user sees: the headline names the cause, status shows how each rank ended."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from slurm.submission import unanswering_nodes
from tests.conftest import CLUSTER_DIR, CLUSTER_LAB, SlurmCluster, collbench, read_jsonl, startup_s, until
from tests.jobs.accusations import assert_accuses_only, everything_said
from tests.jobs.history.session import recorded
from tests.jobs.launchers.test_submit_slurm import statuses, submit, wait

pytestmark = [pytest.mark.slurm, pytest.mark.integration]

LONG = ["bench.ops=[all_reduce,all_gather]", "bench.iters=400", "bench.warmup_iters=1"]


def slurm(cluster: SlurmCluster, *argv: str, check: bool = True) -> str:
    done = subprocess.run(list(argv), capture_output=True, text=True, env=cluster.env(), check=False, timeout=60)
    if check:
        assert done.returncode == 0, f"{argv}: {done.stderr}"
    return done.stdout + done.stderr


def measured(run: Path, rank: int) -> int:
    path = run / "results" / f"rank-{rank:05d}.jsonl"
    return len(path.read_text().splitlines()) if path.exists() else 0


def running_with_progress(run: Path, ranks: int, lines: int = 2) -> bool:
    found = statuses(run)
    return len(found) == ranks and all(measured(run, r) >= lines for r in range(ranks))


def node_state(cluster: SlurmCluster, node: str) -> str:
    return slurm(cluster, "sinfo", "-h", "-N", "-n", node, "-o", "%T").strip()


def accounting(cluster: SlurmCluster, job_id: str) -> list[str]:
    """The job's state per attempt, from sacct --duplicates."""
    return slurm(cluster, "sacct", "-j", job_id, "-X", "-D", "-n", "-P", "-o", "State").split()


def answering(state: str) -> bool:
    """A node Slurm can schedule on again: not down, drained, failed, nor marked not responding (*)."""
    return bool(state) and not state.endswith("*") and not state.startswith(("down", "drain", "fail"))


@pytest.fixture
def healthy(slurm_cluster: SlurmCluster) -> Iterator[SlurmCluster]:
    """Every node answering after the test: a fault it injected is undone here, whatever happened."""
    yield slurm_cluster
    for i in range(1, len(slurm_cluster.nodes) + 1):
        subprocess.run(["ip", "-n", f"cbnode{i}", "link", "set", "eth0", "up"], check=False)
    seen: dict[str, str] = {}

    def all_answering() -> bool:
        for node in slurm_cluster.nodes:
            seen[node] = node_state(slurm_cluster, node)
            if seen[node].startswith("down") and not seen[node].endswith("*"):  # answering, still marked down
                slurm(slurm_cluster, "scontrol", "update", f"nodename={node}", "state=resume", check=False)
        return all(answering(state) for state in seen.values())

    if not all_answering():
        restart_silent_slurmds(slurm_cluster, [node for node, state in seen.items() if state.endswith("*")])
    try:
        until(all_answering, 150, "every node to answer again")
    except AssertionError as error:
        raise AssertionError(f"{error}: {seen}") from None


def restart_silent_slurmds(cluster: SlurmCluster, nodes: list[str]) -> None:
    """A node whose link is back is only pinged again after a while (about a minute here): restarting
    its slurmd makes it register at once, as an admin would."""
    for node in nodes:
        pid_file = CLUSTER_LAB / "run" / f"slurmd-{node}.pid"
        if pid_file.exists():
            pid = pid_file.read_text().strip()
            subprocess.run(["kill", "-TERM", pid], check=False)
            until(lambda pid=pid: not Path(f"/proc/{pid}").exists(), 30, f"slurmd on {node} to stop")
    if nodes:
        subprocess.run([str(CLUSTER_DIR / "up.sh")], check=True, capture_output=True, env={**cluster.env(),
                       "LAB": str(CLUSTER_LAB)})  # fmt: skip


def test_a_killed_rank_is_the_one_blamed_and_status_shows_it_dead(healthy: SlurmCluster, workdir: Path) -> None:
    job_id, run = submit(healthy, workdir, "nodes=2", "slurm.tasks_per_node=2", "timeouts.collective_s=30", *LONG)
    until(lambda: running_with_progress(run, 4), 120, "every rank to measure")
    victim = statuses(run)[3]
    assert victim["host"] == "n2"
    subprocess.run(["kill", "-9", str(victim["pid"])], check=True)
    result = wait(healthy, workdir, job_id, timeout=120)
    assert result.returncode == 1
    failed = [line for line in result.stderr.splitlines() if line.startswith("collbench: FAILED: ")]
    assert failed[0].startswith("collbench: FAILED: rank 3 on n2 died: Killed (SIGKILL) per srun"), result.stderr
    assert any("noticed a lost peer" in line for line in failed[1:]), result.stderr
    assert not any(re.search(r"rank [012] on n\d (failed first|died|hung)", line) for line in failed), result.stderr
    status = collbench("status", job_id, "--output-dir", str(workdir / "runs"), cwd=workdir, env=healthy.env())
    assert re.search(r"^\s+3\s+n2\s+dead\s", status.stdout, re.M), status.stdout
    assert "cause: rank 3 on n2 died" in status.stdout
    assert not re.search(r"^\s+\d+\s+n\d\s+running\s", status.stdout, re.M), "no rank 'running' in a finished job"
    assert_accuses_only(everything_said(healthy, workdir, run, result.stdout + result.stderr), {"n2", "rank 3"})


def test_a_lost_node_is_named_within_the_timeout_and_the_job_is_not_rerun(
    healthy: SlurmCluster, workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a collective timeout longer than Slurm's (SlurmdTimeout=30 s marks a silent node within ~25 s)
    job_id, run = submit(healthy, workdir, "nodes=3", "slurm.tasks_per_node=1", "timeouts.collective_s=40", *LONG)
    until(lambda: running_with_progress(run, 3), 120, "every rank to measure")
    startup = startup_s(cwd=workdir, env=healthy.env())  # the wait's own start, measured under this load
    lost = statuses(run)[1]["host"]
    subprocess.run(["ip", "-n", f"cbnode{lost.removeprefix('n')}", "link", "set", "eth0", "down"], check=True)
    cut = time.monotonic()
    monkeypatch.setenv("SLURM_CONF", str(healthy.slurm_conf))
    assert unanswering_nodes(list(healthy.nodes)) == [lost], "the slurmd probe finds the silent node"
    result = wait(healthy, workdir, job_id, timeout=150)
    took = time.monotonic() - cut
    assert result.returncode == 1
    # the feature: the survivors give up after the collective timeout, not at the job's time limit; the 15 s
    # are Slurm's teardown (KillWait 5 s) and the watcher's polls of it (2 s, then 4 s apart), the wait
    # command's own start is measured (a loaded machine takes seconds to start an interpreter)
    print(f"wait reported {took:.1f} s after the node was lost (starting it: {startup:.1f} s)")
    assert took < 40 + 15 + startup, f"wait reported {took:.0f} s after the node was lost (collective timeout 40 s)"
    assert re.search(rf"^collbench: Slurm marks node {lost} \S+ and not responding.*: rank\(s\) 1 ran there$",
                     result.stderr, re.M), result.stderr  # fmt: skip
    failed = [line for line in result.stderr.splitlines() if line.startswith("collbench: FAILED: ")]
    assert failed[0].startswith(f"collbench: FAILED: node {lost} stopped answering (Slurm marks it "), result.stderr
    assert failed[0].endswith("rank(s) 1 ran there")
    assert not any(re.search(r"rank [02] on n\d (failed first|died|hung)", line) for line in failed), result.stderr
    # Slurm fails the job on the node: it must not run it again into this directory
    until(lambda: accounting(healthy, job_id)[-1:] == ["NODE_FAIL"], 150, "Slurm to fail the job on the lost node")
    assert accounting(healthy, job_id) == ["NODE_FAIL"], "one attempt, never requeued"
    # not "no requeue seen within a few seconds" but Slurm's own record that it will never requeue it: the
    # controller decides at the node failure, from the job's requeue flag (--no-requeue), and counts restarts.
    # Its JobState may still be COMPLETING: it cannot finish killing the job on a node that never answers,
    # while accounting has recorded NODE_FAIL already (asserted above)
    held = slurm(healthy, "scontrol", "show", "job", "-o", job_id)
    assert re.search(r"\bJobState=(NODE_FAIL|COMPLETING)\b", held) and re.search(r"\bRequeue=0\b", held), held
    assert re.search(r"\bRestarts=0\b", held), held
    assert not (run / "attempts").exists()
    for rank in range(3):
        hosts = {r["host"] for r in read_jsonl(run / "results" / f"rank-{rank:05d}.jsonl")}
        assert len(hosts) == 1, f"rank {rank}'s results were written on {hosts}"
    said = everything_said(healthy, workdir, run, result.stdout + result.stderr)
    assert "the job ended NODE_FAIL" in said["report"] and "was not run again" in said["report"]
    assert_accuses_only(said, {lost})


def test_a_cancel_leaves_every_rank_stopped_with_its_stacks(healthy: SlurmCluster, workdir: Path) -> None:
    job_id, run = submit(healthy, workdir, "nodes=2", "slurm.tasks_per_node=1", *LONG)
    until(lambda: running_with_progress(run, 2), 120, "every rank to measure")
    cancelled = collbench("cancel", job_id, "--output-dir", str(workdir / "runs"), cwd=workdir, env=healthy.env())
    assert cancelled.returncode == 0
    result = wait(healthy, workdir, job_id, timeout=60)
    assert result.returncode == 1
    assert "collbench: FAILED: stopped: rank(s) 0-1 recorded a stop (stopped by SIGTERM" in result.stderr
    assert "hung" not in result.stderr and "did not finish" not in result.stderr
    assert re.search(r"recorded a stop \(stopped by SIGTERM.*\): cancelled\b", result.stderr), result.stderr
    assert_accuses_only(everything_said(healthy, workdir, run, result.stdout + result.stderr), set())
    for rank, status in statuses(run).items():
        assert (status["state"], status["signal"]) == ("stopped", "SIGTERM"), status
        log = (run / "logs" / f"rank-{rank:05d}.log").read_text()
        assert "# collbench: Python stacks of every thread (stopped by SIGTERM):" in log
        assert 'File "' in log.split("(stopped by SIGTERM):")[1], "the dump holds the rank's stack"


def test_scontrol_requeue_is_refused_by_default_so_one_attempt_completes(healthy: SlurmCluster, workdir: Path) -> None:
    job_id, run = submit(healthy, workdir, "nodes=2", "slurm.tasks_per_node=1", "bench.ops=[all_reduce]")
    until(lambda: running_with_progress(run, 2, lines=1), 120, "every rank to measure")
    refused = slurm(healthy, "scontrol", "requeue", job_id, check=False)
    assert "disabled" in refused, refused
    assert wait(healthy, workdir, job_id).returncode == 0
    assert accounting(healthy, job_id) == ["COMPLETED"]
    assert not (run / "attempts").exists()
    assert "#SBATCH --no-requeue" in (run / "submitit" / f"{job_id}_submission.sh").read_text()


def requeue_when_measured(
    cluster: SlurmCluster, job_id: str, run: Path, lines: int, by: str = "scontrol", **update: str
) -> None:
    """Requeue once every rank has `lines` results, then let the job start again at once: `scontrol
    requeue`, or by="preemption": Slurm's warning signal, on which submitit checkpoints rank 0 and
    requeues the job itself."""
    until(lambda: running_with_progress(run, 2, lines), 120, f"{lines} measurements on every rank")
    if by == "preemption":
        slurm(cluster, "scancel", "--signal=USR2", job_id)
    else:
        slurm(cluster, "scontrol", "requeue", job_id)
    until(lambda: "PENDING" in slurm(cluster, "squeue", "-h", "-j", job_id, "-o", "%T"), 60, "the requeue")
    # Slurm holds a requeued job back (BeginTime) while its nodes clean up; starting it at once, as the test
    # does to save that wait, must still come after every node is idle and a second later than the nodes
    # revoked the old attempt's credential (whole seconds), or slurmd refuses it: "Job credential revoked".
    until(lambda: set(slurm(cluster, "sinfo", "-h", "-N", "-o", "%T").split()) == {"idle"}, 60, "idle nodes")
    time.sleep(1.5)
    changes = [f"{key}={value}" for key, value in update.items()]
    slurm(cluster, "scontrol", "update", f"jobid={job_id}", "StartTime=now", *changes)


def test_requeue_keeps_each_attempt_apart_and_resumes_only_on_the_same_nodes(
    healthy: SlurmCluster, workdir: Path
) -> None:
    job_id, run = submit(
        healthy, workdir, "nodes=2", "slurm.tasks_per_node=1", "slurm.requeue=true", "slurm.exclude=n3", *LONG
    )
    requeue_when_measured(healthy, job_id, run, 3, by="preemption")  # back on n[1-2]: carries over
    until(lambda: (run / "attempts" / "0").is_dir() and running_with_progress(run, 2, 1), 120, "attempt 1")
    requeue_when_measured(healthy, job_id, run, 1, ExcNodeList="n1")  # now on n[2-3]: starts over
    result = wait(healthy, workdir, job_id, timeout=240)
    assert result.returncode == 0, result.stderr

    attempts = json.loads((run / "attempts.json").read_text())["attempts"]
    assert [(a["number"], a["nodes"], a["previous_ended"]) for a in attempts] == [
        (0, "n[1-2]", ""), (1, "n[1-2]", "REQUEUED"), (2, "n[2-3]", "REQUEUED")
    ]  # fmt: skip
    first = [read_jsonl(run / "attempts" / "0" / "results" / f"rank-{r:05d}.jsonl") for r in range(2)]
    carried = min(len(lines) for lines in first)
    assert attempts[1]["resume_from"] == carried >= 3 and attempts[2]["resume_from"] == 0
    second = read_jsonl(run / "attempts" / "1" / "results" / "rank-00000.jsonl")
    assert [r["attempt"] for r in second[:carried]] == [0] * carried, "attempt 1 starts with attempt 0's records"
    assert second[:carried] == first[0][:carried]
    assert all(r["attempt"] == 1 for r in second[carried:])
    summary = json.loads((run / "summary.json").read_text())
    keys = [(r["op"], r["size"], r["in_place"]) for r in summary["rows"]]
    assert len(keys) == len(set(keys)) and summary["passed"]
    assert all(r["ranks_reporting"] == 2 and r["duplicate_ranks"] == [] for r in summary["rows"])
    for rank, status in statuses(run).items():
        records = read_jsonl(run / "results" / f"rank-{rank:05d}.jsonl")
        assert {r["attempt"] for r in records} == {2}, "other nodes: the last attempt measured everything again"
        assert {r["host"] for r in records} == {status["host"]}, "a rank file is written by one host"
        assert status["host"] in ("n2", "n3")
    preempted = json.loads((run / "attempts" / "0" / "status" / "rank-00000.json").read_text())
    assert (preempted["state"], preempted["signals"][0]["signal"]) == ("stopped", "SIGUSR2"), preempted
    assert "Caught signal SIGUSR2" in (run / "attempts" / "0" / "submitit" / f"{job_id}_0_log.err").read_text()
    said = everything_said(healthy, workdir, run, result.stdout + result.stderr)
    assert_accuses_only(said, set())
    report = collbench("report", str(run), cwd=workdir, env=healthy.env())
    assert "collbench: attempt 2 of the job (on n[2-3]) is the one shown; earlier attempts:" in report.stderr
    assert "attempt 0 on n[1-2]: ended REQUEUED (requeued by hand" in report.stderr
    assert "kept in attempts/1/" in report.stderr
    found = recorded(run.name)  # the history holds the job once, with its latest attempt
    assert found is not None
    row, children = found
    assert (row["job_id"], row["attempt"], row["outcome"], row["hostlist"]) == (job_id, 2, "passed", "n[2-3]")
    assert [(a["number"], a["nodes"]) for a in children["attempts"]] == [(0, "n[1-2]"), (1, "n[1-2]"), (2, "n[2-3]")]
    assert sorted(h["host"] for h in children["hosts"]) == ["n2", "n3"]


def test_wait_outlives_a_controller_restart(healthy: SlurmCluster, workdir: Path) -> None:
    job_id, run = submit(healthy, workdir, "nodes=2", "slurm.tasks_per_node=1", "bench.ops=[all_reduce]",
                         "bench.iters=200")  # fmt: skip
    until(lambda: running_with_progress(run, 2, 1), 120, "every rank to measure")
    waiting = subprocess.Popen(
        [*collbench_argv(), "wait", job_id, "--output-dir", str(workdir / "runs")],
        cwd=workdir, env=healthy.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    pid_file = CLUSTER_LAB / "run" / "slurmctld.pid"
    subprocess.run(["kill", "-TERM", pid_file.read_text().strip()], check=True)
    until(lambda: not pid_file.exists() or not Path(f"/proc/{pid_file.read_text().strip()}").exists(), 30, "stop")
    time.sleep(2)
    subprocess.run(["slurmctld", "-f", str(healthy.slurm_conf)], check=True, env=healthy.env())
    out, err = waiting.communicate(timeout=180)
    assert waiting.returncode == 0, err
    assert f"job {job_id} ended COMPLETED" in err or "every rank has recorded its end" in err
    assert "# collbench all_reduce: 2 ranks" in out


def collbench_argv() -> list[str]:
    return [sys.executable, "-m", "jobs.cli"]


BAD_REQUESTS = {
    "nodes beyond the partition": (["nodes=5"], "nodes: 5 is more than partition 'debug' can ever hold"),
    "unknown partition": (["slurm.partition=nosuch"], "slurm.partition: 'nosuch' is not a partition"),
    "unknown account": (["slurm.account=nosuch"], "slurm.account: 'nosuch' is not one Slurm knows"),
    "unknown qos": (["slurm.qos=turbo"], "slurm.qos: 'turbo' is not one Slurm knows"),
    "excluded into too few nodes": (["nodes=3", "slurm.exclude=n3"], "nodes: 3 is more than partition 'debug'"),
    "sbatch refuses": (["slurm.sbatch_extra={mincpus: '64'}"], "sbatch refused the job: "),
}


@pytest.mark.parametrize("case", BAD_REQUESTS, ids=str)
def test_a_request_the_cluster_can_never_run_is_bad_input(
    case: str, slurm_cluster: SlurmCluster, workdir: Path
) -> None:
    overrides, message = BAD_REQUESTS[case]
    result = collbench("submit", "--config", "testcluster", f"output_dir={workdir / 'runs'}", *overrides,
                       cwd=workdir, env=slurm_cluster.env())  # fmt: skip
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], result.stderr
    assert not (workdir / "runs").exists() or not list((workdir / "runs").iterdir())
    assert jobs_submitted_from(slurm_cluster, workdir) == [], "nothing was queued"


def jobs_submitted_from(cluster: SlurmCluster, directory: Path) -> list[str]:
    """This test's jobs only: other sessions may share the cluster, so the whole queue proves nothing."""
    lines = slurm(cluster, "squeue", "-h", "-o", "%i %Z").splitlines()
    return [job for job, where in (line.split(maxsplit=1) for line in lines) if Path(where) == directory]


def test_an_output_dir_that_cannot_hold_runs_is_bad_input(slurm_cluster: SlurmCluster, workdir: Path) -> None:
    a_file = workdir / "not-a-dir"
    a_file.write_text("")
    read_only = workdir / "ro"
    read_only.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(read_only)], check=True)
    try:
        for where, message in ((a_file, "is not a directory"), (read_only / "runs", "Read-only file system")):
            result = collbench("submit", "--config", "testcluster", f"output_dir={where}", cwd=workdir,
                               env=slurm_cluster.env())  # fmt: skip
            assert result.returncode == 2 and message in result.stderr, result.stderr
            assert len(result.stderr.strip().splitlines()) == 1
    finally:
        subprocess.run(["umount", str(read_only)], check=False)


def test_a_job_queued_for_ever_is_said_to_never_start(slurm_cluster: SlurmCluster, workdir: Path) -> None:
    failing = slurm(slurm_cluster, "sbatch", "--parsable", "-p", "debug", "-o", "/dev/null", "--wrap", "exit 1").strip()
    until(lambda: accounting(slurm_cluster, failing) == ["FAILED"], 60, "the job to fail")
    job_id, _ = submit(slurm_cluster, workdir, "nodes=1", f"slurm.sbatch_extra={{dependency: 'afterok:{failing}'}}")
    try:
        result = wait(slurm_cluster, workdir, job_id, timeout=60)
        assert result.returncode == 1
        assert f"job {job_id} is queued but will never start: DependencyNeverSatisfied" in result.stderr
        assert f"scancel {job_id}, or change the request" in result.stderr
        assert "ended" not in result.stderr
    finally:
        slurm(slurm_cluster, "scancel", job_id, check=False)
