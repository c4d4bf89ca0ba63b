"""The loop on a schedule, on the project's Slurm cluster (`ScronParameters=enable`): the shipped scrontab's
nightly entry, made to fire every minute on partition debug, checks the nodes while n3 is slowed, drains
n3 with its coded reason, records the run, and is requeued for a next time after its end (the next firing
cannot overlap it); the fault cleared, the shipped recheck script hands n3 back. Every fault, crontab,
drain and reservation is undone whatever happens."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import pytest

from slurm.evidence import parse_node_states, sinfo_argv
from tests.conftest import REPO, SlurmCluster, collbench, until
from tests.jobs.cli.test_check_slurm import held
from tests.jobs.cli.test_isolate_slurm import SLOW_NODE, shaped

pytestmark = [pytest.mark.slurm, pytest.mark.integration]

SCRONTAB = REPO / "examples" / "schedule" / "collbench.scrontab"
RECHECK = REPO / "examples" / "schedule" / "collbench-recheck.sh"
SLOWED = "n3"
HEALTH_CHECKED = "n6"
"""Outside partition debug, where the nightly entry runs."""
CHECK_ARGS = ["--config", "testcluster", "slurm.tasks_per_node=1", "check.budget_s=25", "check.from_history=false"]


def nightly_entry(cluster: SlurmCluster, workdir: Path, url: str) -> str:
    """The shipped nightly entry for the test cluster: every minute, partition debug, kept in `workdir`, the
    command run as collbench from this checkout (a cron job gets root's login environment, not the test's)."""
    lines = SCRONTAB.read_text().splitlines()
    at = next(n for n, line in enumerate(lines) if line.startswith("#SCRON") and "collbench-nightly" in line)
    options, cron = lines[at], lines[at + 1].split()
    assert cron[:6] == ["0", "2", "*", "*", "*", "examples/schedule/collbench-nightly.sh"], cron
    for shipped, here in (("--partition=batch", "--partition=debug"), ("--nodes=2-64", "--nodes=2-3"),
                          ("--chdir=/shared/collbench", f"--chdir={workdir}")):  # fmt: skip
        assert shipped in options, options
        options = options.replace(shipped, here)
    env = (
        f"env SLURM_CONF={cluster.slurm_conf} PYTHONPATH={REPO} PATH={Path(sys.executable).parent}:/usr/bin:/bin "
        f"COLLBENCH='{sys.executable} -m jobs.cli'"
    )
    command = [str(REPO / cron[5]), *CHECK_ARGS, f"history.url={url}"]
    return f"{options}\n* * * * * {env} {' '.join(command)}\n"


def cron_job(env: dict[str, str]) -> tuple[str, str] | None:
    """The nightly entry's job: its id and state, once Slurm lists it."""
    out = subprocess.run(["squeue", "-h", "-n", "collbench-nightly", "-o", "%i %T"], capture_output=True,
                         text=True, env=env, check=False).stdout.split()  # fmt: skip
    return (out[0], out[1]) if len(out) == 2 else None


def job_field(job: str, name: str, env: dict[str, str]) -> str:
    shown = subprocess.run(["scontrol", "show", "job", "-o", job], capture_output=True, text=True, env=env).stdout
    found = re.search(rf"\b{name}=(\S+)", shown)
    return found.group(1) if found else ""


def runs_of(job: str, env: dict[str, str]) -> list[tuple[datetime, datetime]]:
    """Each run of the cron job that has ended, as accounting has it (sacct -D: every requeued run; the pending
    record `scrontab -r` cancelled never ran)."""
    out = subprocess.run(["sacct", "-n", "-X", "-D", "-P", "-j", job, "-o", "Start,End,State"], capture_output=True,
                         text=True, env=env, check=False).stdout  # fmt: skip
    spans = [line.split("|") for line in out.splitlines() if line.count("|") == 2]
    return [
        (datetime.fromisoformat(a), datetime.fromisoformat(b))
        for a, b, state in spans
        if "Unknown" not in (a, b) and not state.startswith("CANCELLED")
    ]


def drained_by_check(host: str, env: dict[str, str]) -> str:
    """The host's reason while it is held with collbench's mark on it, else ''."""
    shown = subprocess.run(sinfo_argv([host]), capture_output=True, text=True, env=env, check=False).stdout
    state = next((state for state in parse_node_states(shown) if state.node == host), None)
    return state.reason if state and state.out_of_service and state.reason.startswith("collbench:") else ""


def test_the_shipped_schedule_drains_a_slowed_node_and_the_recheck_hands_it_back(
    slurm_cluster: SlurmCluster, workdir: Path
) -> None:
    env = slurm_cluster.env()
    url = f"sqlite:///{workdir / 'history.sqlite'}"
    (workdir / "logs").mkdir()
    crontab = workdir / "crontab"
    crontab.write_text(nightly_entry(slurm_cluster, workdir, url))
    try:
        with shaped(SLOWED, SLOW_NODE):
            slowed = time.monotonic()
            subprocess.run(["scrontab", str(crontab)], env=env, check=True, capture_output=True, text=True)
            job, _ = until(lambda: cron_job(env), 30, "the nightly entry's job")
            assert job_field(job, "CronJob", env) == "Yes"
            health_check_program(workdir, env)  # while the entry waits for its minute, on a node it does not use
            reason = until(lambda: drained_by_check(SLOWED, env), 150, f"{SLOWED} drained by the nightly check")
            drained = time.monotonic() - slowed
            [(start, end)] = until(lambda: runs_of(job, env) if cron_job(env) == (job, "PENDING") else [], 120,
                                   "the run to end and the entry to be requeued")  # fmt: skip
            begin = job_field(job, "EligibleTime", env)  # its next firing
        subprocess.run(["scrontab", "-r"], env=env, check=True, capture_output=True)
        assert re.fullmatch(r"collbench:slow_node by check run=\S+ busbw .*", reason), reason
        assert datetime.fromisoformat(begin) > end, f"the next firing at {begin} would overlap the run ending {end}"
        log = next((workdir / "logs").glob("collbench-nightly-*.out")).read_text()
        assert f"DRAINED {SLOWED}: collbench:slow_node by check run=" in log, log

        cleared = time.monotonic()
        rechecked = subprocess.run(
            [str(RECHECK), *CHECK_ARGS, f"history.url={url}"], cwd=workdir, capture_output=True, text=True,
            env={**env, "COLLBENCH": f"{sys.executable} -m jobs.cli"}, timeout=180, check=False,
        )  # fmt: skip
        resumed = time.monotonic() - cleared
        print(f"slowed -> drained by the shipped nightly entry: {drained:.0f} s (its run {start:%T} to {end:%T}); "
              f"cleared -> resumed by the shipped recheck: {resumed:.0f} s\n{log}\n{rechecked.stdout}")  # fmt: skip
        assert rechecked.returncode == 0, rechecked.stdout + rechecked.stderr
        assert re.search(
            rf"^RESUMED {SLOWED}: recheck passed it \(drained by collbench for slow_node in ", rechecked.stdout, re.M
        )
        assert not drained_by_check(SLOWED, env)
        shown = subprocess.run(["scontrol", "show", "reservation"], capture_output=True, text=True, env=env).stdout
        assert "collbench-recheck" not in shown, "the reservation is released"
        record = collbench("history", "node", SLOWED, "--db", url, cwd=workdir, env=env)
        assert re.search(r"drained by check\s+collbench:slow_node by check run=", record.stdout), record.stdout
        assert "resumed by check" in record.stdout and record.stdout.count("isolate") >= 1, record.stdout
    finally:
        subprocess.run(["scrontab", "-r"], env=env, check=False, capture_output=True)
        for node in (SLOWED, HEALTH_CHECKED):
            if drained_by_check(node, env):
                subprocess.run(["scontrol", "update", f"NodeName={node}", "State=RESUME"], env=env, check=False)
        shown = subprocess.run(["scontrol", "show", "reservation"], capture_output=True, text=True, env=env).stdout
        for name in re.findall(r"ReservationName=(collbench-recheck-\d+)", shown):
            subprocess.run(["scontrol", "delete", f"ReservationName={name}"], env=env, check=False)


def health_check_program(workdir: Path, env: dict[str, str]) -> None:
    """check --node --apply as a HealthCheckProgram runs it, on a node a FAIL drained: the next OK hands the node
    back; a node drained by a pair check (a NIC a node-local check cannot see) is left drained. The node is held
    first (a drained node takes no new job; slurmd runs the program on it whatever its state)."""
    node = HEALTH_CHECKED
    argv = ["srun", "-N1", "-n1", f"-w{node}", sys.executable, "-m", "jobs.cli", "check", "--node", "--apply",
            "--config", "testcluster", f"output_dir={workdir / 'runs'}", "check.local_budget_s=30"]  # fmt: skip
    with held(env, "wide", node, 1) as allocation:
        for drained_by, code, expected in (
            ("check", "slow_rail", rf"^LEFT {node}: passed, but drained by check for slow_rail"),
            ("check-node", "node_stopped", rf"^RESUMED {node}: check-node passed it"),
        ):
            reason = f"collbench:{code} by {drained_by} run=EARLIER x"
            subprocess.run(["scontrol", "update", f"NodeName={node}", "State=DRAIN", f"Reason={reason}"],
                           env=env, check=True)  # fmt: skip
            done = subprocess.run(argv, capture_output=True, text=True, cwd=workdir, env=allocation, timeout=120)
            assert done.returncode == 0 and re.search(expected, done.stdout, re.M), done.stdout + done.stderr
    assert not drained_by_check(node, env), "the check-node drain resumed"
