"""`collbench submit/status/wait/cancel` on the project's real multi-node Slurm cluster (tests/cluster)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from jobs.launchers.slurm import slurm_request
from jobs.rundir.layout import RunDir
from jobs.rundir.records.config import load_run_config
from slurm.hostlist import collect_hostlist, expand_hostlist
from tests.conftest import CommandResult, SlurmCluster, collbench, read_jsonl, startup_s, until
from tests.jobs.history.session import recorded

pytestmark = [pytest.mark.slurm, pytest.mark.integration]

LOG_HOST = re.compile(r"\| rank=(\d+) local=(\d+) host=(\S+) \|")


def submit(
    cluster: SlurmCluster, workdir: Path, *overrides: str, env: dict[str, str] | None = None
) -> tuple[str, Path]:
    result = collbench(
        "submit",
        "--config",
        "testcluster",
        f"output_dir={workdir / 'runs'}",
        *overrides,
        cwd=workdir,
        env=env or cluster.env(),
    )
    assert result.returncode == 0, result.stderr
    job = re.search(r"^job (\d+)$", result.stdout, re.M)
    run = re.search(r"^run directory (.+)$", result.stdout, re.M)
    assert job and run, result.stdout
    return job.group(1), Path(run.group(1))


def wait(cluster: SlurmCluster, workdir: Path, ref: str, timeout: float = 240) -> CommandResult:
    return collbench(
        "wait", ref, "--output-dir", str(workdir / "runs"), cwd=workdir, env=cluster.env(), timeout=timeout
    )


def statuses(run: Path) -> dict[int, dict[str, Any]]:
    return {int(p.stem.split("-")[1]): json.loads(p.read_text()) for p in (run / "status").glob("rank-*.json")}


def job_hosts(cluster: SlurmCluster, job_id: str) -> list[str]:
    out = subprocess.run(
        ["sacct", "-j", job_id, "-X", "-n", "-P", "-o", "NodeList"],
        capture_output=True,
        text=True,
        env=cluster.env(),
        check=True,
    ).stdout
    return expand_hostlist(out.split()[0])


def assert_ranks_placed_where_slurm_put_them(cluster: SlurmCluster, job_id: str, run: Path, world: int) -> set[str]:
    hosts = job_hosts(cluster, job_id)
    found = statuses(run)
    assert sorted(found) == list(range(world))
    for rank, status in found.items():
        assert status["state"] == "ok"
        assert status["host"] == hosts[status["node_rank"]]
        assert status["master_addr"] == hosts[0], "MASTER_ADDR must be the job's first node"
        for record in read_jsonl(run / "results" / f"rank-{rank:05d}.jsonl"):
            assert (record["rank"], record["host"]) == (rank, status["host"])
        log = (run / "logs" / f"rank-{rank:05d}.log").read_text()
        tags = {(int(m.group(1)), m.group(3)) for m in LOG_HOST.finditer(log)}
        assert tags == {(rank, status["host"])}
    assert len(list((run / "logs").glob("rank-*.log"))) == world
    return {s["host"] for s in found.values()}


def assert_all_correct(run: Path, world: int) -> None:
    summary = json.loads((run / "summary.json").read_text())
    assert summary["passed"], summary["problems"]
    assert {r["op"] for r in summary["rows"]} == {"all_reduce", "all_gather", "reduce_scatter"}
    for row in summary["rows"]:
        assert row["wrong"] == 0 and row["ranks_reporting"] == world


def test_two_nodes_by_two_tasks_all_ops(slurm_cluster: SlurmCluster, workdir: Path) -> None:
    job_id, run = submit(slurm_cluster, workdir, "nodes=2", "slurm.tasks_per_node=2")
    result = wait(slurm_cluster, workdir, job_id)
    assert result.returncode == 0, result.stderr
    assert "ended COMPLETED" in result.stderr
    assert "# collbench all_reduce: 4 ranks" in result.stdout
    assert_all_correct(run, 4)
    hosts = assert_ranks_placed_where_slurm_put_them(slurm_cluster, job_id, run, 4)
    assert len(hosts) == 2, "the job must really span two nodes"
    assert (run / "table.txt").is_file()
    # the fabric section on a cluster without RDMA: said plainly, nothing fails; one snapshot pair per node
    nodes = collect_hostlist(sorted(hosts))
    assert "#   NCCL was not used (backend gloo): no transport to report" in result.stdout
    assert f"#   no RDMA device found on {nodes} (nothing under /sys/class/infiniband)" in result.stdout
    snapshots = sorted(p.name for p in (run / "fabric").iterdir())
    assert snapshots == sorted(f"ports-{host}-{when}.json" for host in hosts for when in ("start", "end"))
    # what sbatch received is exactly what --dry-run renders for this run directory
    submitted = (run / "submitit" / f"{job_id}_submission.sh").read_text()
    assert submitted == slurm_request(load_run_config(RunDir(run)), run).script()
    # recorded in the history by the wait that saw it end, on the login node
    found = recorded(run.name)
    assert found is not None, "the wait that saw the job end records it"
    row, children = found
    assert (row["job_id"], row["outcome"], row["nodes"], row["world_size"]) == (job_id, "passed", 2, 4)
    assert (row["cluster"], row["hostlist"], row["task"]) == ("collbench", nodes, "sweep")
    assert len(children["results"]) == len(json.loads((run / "summary.json").read_text())["rows"])
    assert sorted(h["host"] for h in children["hosts"]) == sorted(hosts)


def test_three_nodes_by_one_task_ignores_a_stale_rendezvous_in_the_shell(
    slurm_cluster: SlurmCluster, workdir: Path
) -> None:
    stale = {**slurm_cluster.env(), "MASTER_ADDR": "10.99.99.99", "MASTER_PORT": "1", "RANK": "7", "WORLD_SIZE": "99"}
    job_id, run = submit(slurm_cluster, workdir, "nodes=3", "slurm.tasks_per_node=1", env=stale)
    # rank 0 renders the table itself, after every rank recorded "ok": wait for the table, not the statuses
    deadline = time.monotonic() + 180
    while not (run / "table.txt").is_file():
        assert time.monotonic() < deadline, statuses(run)
        time.sleep(0.5)
    assert all(s["state"] == "ok" for s in statuses(run).values()) and len(statuses(run)) == 3, statuses(run)
    assert "# collbench all_gather: 3 ranks" in (run / "table.txt").read_text()
    result = wait(slurm_cluster, workdir, str(run))
    assert result.returncode == 0, result.stderr
    assert_all_correct(run, 3)
    assert assert_ranks_placed_where_slurm_put_them(slurm_cluster, job_id, run, 3) == {"n1", "n2", "n3"}


def test_a_failing_rank_fails_the_job_and_is_named(slurm_cluster: SlurmCluster, workdir: Path) -> None:
    job_id, run = submit(slurm_cluster, workdir, "nodes=2", "slurm.tasks_per_node=1", "faults.fail_rank=1")
    result = wait(slurm_cluster, workdir, job_id)
    assert result.returncode == 1
    assert f"job {job_id} ended FAILED" in result.stderr
    assert "FAILED: rank 1 on n2 failed first: InjectedFault" in result.stderr
    assert statuses(run)[1]["state"] == "failed"


def test_a_cancelled_job_is_reported_promptly(slurm_cluster: SlurmCluster, workdir: Path) -> None:
    job_id, run = submit(
        slurm_cluster, workdir, "nodes=2", "slurm.tasks_per_node=1", "faults.hang_rank=0", "timeouts.collective_s=600"
    )
    until(lambda: len(statuses(run)) == 2, 120, "both ranks to start")
    startup = startup_s(cwd=workdir, env=slurm_cluster.env())  # the wait's own start, under this load
    status = collbench("status", job_id, "--output-dir", str(workdir / "runs"), cwd=workdir, env=slurm_cluster.env())
    assert f"job {job_id}  RUNNING (running)" in status.stdout, status.stdout
    cancelled = collbench("cancel", job_id, "--output-dir", str(workdir / "runs"), cwd=workdir, env=slurm_cluster.env())
    assert cancelled.returncode == 0 and f"cancelled job {job_id}" in cancelled.stdout
    started = time.monotonic()
    result = wait(slurm_cluster, workdir, job_id)
    took = time.monotonic() - started
    # promptly: Slurm kills the ranks within KillWait (5 s) and the watcher polls it 2 s, then 4 s apart; not
    # the 600 s collective timeout nor the job's limit. The wait command's own start is measured, not guessed.
    print(f"wait after the cancel: {took:.1f} s (starting it: {startup:.1f} s)")
    assert took < 30 + startup, f"wait took {took:.1f} s after the cancel"
    assert result.returncode == 1
    assert re.search(rf"job {job_id} ended CANCELLED", result.stderr)


def test_two_jobs_at_once_do_not_collide(slurm_cluster: SlurmCluster, workdir: Path) -> None:
    first = submit(slurm_cluster, workdir, "nodes=1", "slurm.tasks_per_node=2", "bench.ops=[all_reduce]")
    second = submit(slurm_cluster, workdir, "nodes=1", "slurm.tasks_per_node=2", "bench.ops=[all_reduce]")
    assert first[1] != second[1]
    for job_id, _ in (first, second):
        assert wait(slurm_cluster, workdir, job_id).returncode == 0
    ports = {statuses(run)[0]["master_port"] for _, run in (first, second)}
    assert len(ports) == 2


def test_a_world_size_slurm_did_not_start_is_an_error_on_every_rank(slurm_cluster: SlurmCluster, workdir: Path) -> None:
    # without kill-on-bad-exit no rank is killed before it has checked for itself
    job_id, run = submit(
        slurm_cluster,
        workdir,
        "nodes=2",
        "slurm.tasks_per_node=2",
        "slurm.srun_args=[--ntasks=3]",
        "slurm.kill_on_bad_exit=false",
    )
    result = wait(slurm_cluster, workdir, job_id)
    assert result.returncode == 1
    errors = [s["error"] for s in statuses(run).values()]
    assert len(errors) == 3
    assert all("Slurm started 3 tasks on 2 nodes, but the config asks for 4" in e for e in errors)


def test_missing_slurm_is_a_clear_error_and_submits_nothing(workdir: Path) -> None:
    env = {**os.environ, "PATH": "/nonexistent"}
    result = collbench("submit", "--config", "testcluster", f"output_dir={workdir / 'runs'}", cwd=workdir, env=env)
    assert result.returncode == 3
    assert "Slurm is not installed here: sbatch" in result.stderr
    assert not (workdir / "runs").exists()


def test_an_unreachable_controller_is_a_clear_error_without_hanging(slurm_cluster: SlurmCluster, workdir: Path) -> None:
    conf = workdir / "slurm.conf"
    conf.write_text(slurm_cluster.slurm_conf.read_text().replace("SlurmctldPort=6917", "SlurmctldPort=6999"))
    env = {**slurm_cluster.env(), "SLURM_CONF": str(conf)}
    started = time.monotonic()
    result = collbench("submit", "--config", "testcluster", f"output_dir={workdir / 'runs'}", cwd=workdir, env=env)
    assert time.monotonic() - started < 60
    assert result.returncode == 3
    assert "Slurm's controller is not reachable" in result.stderr
    assert not (workdir / "runs").exists()


def test_a_rank_slow_at_its_own_work_is_named_with_its_host(slurm_cluster: SlurmCluster, workdir: Path) -> None:
    job_id, _ = submit(
        slurm_cluster,
        workdir,
        "nodes=2",
        "slurm.tasks_per_node=1",
        "bench.ops=[all_reduce]",
        "faults.slow_rank=1",
        "faults.slow_ms=80",
    )
    assert wait(slurm_cluster, workdir, job_id).returncode == 0
    report = collbench("report", job_id, "--output-dir", str(workdir / "runs"), cwd=workdir, env=slurm_cluster.env())
    assert re.search(r"slow at its own work: rank 1 on n2: \d+\.\d ms of its own between", report.stdout), report.stdout
    assert "# slow host: n2: rank(s) 1 slow at their own work" in report.stdout
    logs = collbench("logs", job_id, "--rank", "1", "--output-dir", str(workdir / "runs"), cwd=workdir,
                     env=slurm_cluster.env())  # fmt: skip
    assert logs.stdout and all(line.startswith("    1 n2 ") for line in logs.stdout.splitlines())


def test_a_hung_rank_on_slurm_is_behind_and_leaves_its_stack(slurm_cluster: SlurmCluster, workdir: Path) -> None:
    # status must run while rank 0 still waits for the hung rank: between rank 1's stack dump (watchdog_s
    # after it hangs) and rank 0 giving up (collective_s after its first collective began). That window is
    # sized from what a status costs here and now, a fresh interpreter (measured), with room for 8 of them:
    # 20 s on an idle machine, more on a loaded one.
    watchdog_s = 3
    collective_s = max(20, round(watchdog_s + 8 * startup_s(cwd=workdir, env=slurm_cluster.env())))
    job_id, run = submit(
        slurm_cluster,
        workdir,
        "nodes=2",
        "slurm.tasks_per_node=1",
        "bench.ops=[all_reduce]",
        "faults.hang_rank=1",
        f"timeouts.collective_s={collective_s}",
        f"timeouts.watchdog_s={watchdog_s}",
    )
    log1 = run / "logs" / "rank-00001.log"
    until(lambda: log1.exists() and "Timeout (" in log1.read_text(), 120, "the hung rank to dump its stacks")
    status = collbench("status", job_id, "--output-dir", str(workdir / "runs"), cwd=workdir, env=slurm_cluster.env())
    assert re.search(r"behind the rest: 1 rank\(s\): 1 \(n2, initialising", status.stdout), status.stdout
    result = wait(slurm_cluster, workdir, job_id)
    assert result.returncode == 1 and f"job {job_id} ended FAILED" in result.stderr
    failed = [line for line in result.stderr.splitlines() if line.startswith("collbench: FAILED: ")]
    assert failed[0].startswith("collbench: FAILED: rank 1 on n2 hung: never failed itself"), result.stderr
    assert "initialising" in failed[0] and "rank(s) 0 noticed a lost peer" in failed[1]
    assert "in _inject_faults" in log1.read_text()


def test_an_environment_that_differs_on_one_node_is_flagged(slurm_cluster: SlurmCluster, workdir: Path) -> None:
    odd = slurm_cluster.slurm_conf.parent / "node-env" / "n2"  # read by the cluster's TaskProlog
    odd.write_text("NCCL_IB_HCA=mlx5_9\n")
    shell = {**slurm_cluster.env(), "NCCL_IB_HCA": "mlx5_0", "NCCL_PASSWORD_FOR_TEST": "s3cr3t-value"}
    try:
        job_id, run = submit(slurm_cluster, workdir, "nodes=2", "slurm.tasks_per_node=1", "bench.ops=[all_reduce]",
                             env=shell)  # fmt: skip
        assert wait(slurm_cluster, workdir, job_id).returncode == 0
    finally:
        odd.unlink()
    report = collbench("report", str(run), cwd=workdir, env=slurm_cluster.env())
    assert "# environment differs: NCCL_IB_HCA: 'mlx5_0' on 1 rank(s) (n1); 'mlx5_9' on 1 rank(s) (n2)" in report.stdout
    for path in run.rglob("*"):
        if path.is_file():
            assert b"s3cr3t-value" not in path.read_bytes(), f"a secret reached {path}"


def test_status_and_report_of_a_finished_run_only_read_it(slurm_cluster: SlurmCluster, workdir: Path) -> None:
    job_id, run = submit(slurm_cluster, workdir, "nodes=2", "slurm.tasks_per_node=1", "bench.ops=[all_reduce]")
    assert wait(slurm_cluster, workdir, job_id).returncode == 0
    before = {path: path.stat().st_mtime_ns for path in run.rglob("*")}
    subprocess.run(["mount", "--bind", str(run), str(run)], check=True)
    try:
        subprocess.run(["mount", "-o", "remount,bind,ro", str(run)], check=True)
        for command in ("status", "report"):
            result = collbench(command, str(run), cwd=workdir, env=slurm_cluster.env())
            assert result.returncode == 0, f"{command} on a read-only run: {result.stderr}"
        assert f"job {job_id}  COMPLETED (completed)" in collbench("status", str(run), cwd=workdir,
                                                                   env=slurm_cluster.env()).stdout  # fmt: skip
    finally:
        subprocess.run(["umount", str(run)], check=False)
    assert {path: path.stat().st_mtime_ns for path in run.rglob("*")} == before, "status and report wrote nothing"
