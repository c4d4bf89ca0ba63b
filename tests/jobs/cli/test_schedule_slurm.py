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

from slurm.nodes import parse_sinfo, sinfo_argv
from tests.conftest import REPO, SlurmCluster, collbench, until
from tests.jobs.cli.test_isolate_slurm import SLOW_NODE, shaped

pytestmark = [pytest.mark.slurm, pytest.mark.integration]

SCRONTAB = REPO / "examples" / "schedule" / "collbench.scrontab"
RECHECK = REPO / "examples" / "schedule" / "collbench-recheck.sh"
SLOWED = "n3"
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
    state = parse_sinfo(shown).get(host)
    return state.reason if state and state.held and state.reason.startswith("collbench:") else ""


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
            fired = until(lambda: job_field(job, "StartTime", env) if cron_job(env) == (job, "RUNNING") else "", 150,
                          "the entry to fire")  # fmt: skip
            reason = until(lambda: drained_by_check(SLOWED, env), 120, f"{SLOWED} drained by the nightly check")
            drained = time.monotonic() - slowed
            until(lambda: cron_job(env) == (job, "PENDING"), 120, "the run to end and the entry to be requeued")
            begin = job_field(job, "EligibleTime", env)  # its next firing
            assert job_field(job, "CronJob", env) == "Yes"
        subprocess.run(["scrontab", "-r"], env=env, check=True, capture_output=True)
        assert re.fullmatch(r"collbench:slow_node by check run=\S+ busbw .*", reason), reason
        [(start, end)] = until(lambda: runs_of(job, env), 30, "the run in accounting")
        assert start.isoformat() == fired, (start, fired)
        assert datetime.fromisoformat(begin) > end, f"the next firing at {begin} would overlap the run ending {end}"
        log = next((workdir / "logs").glob("collbench-nightly-*.out")).read_text()
        assert f"DRAINED {SLOWED}: collbench:slow_node by check run=" in log, log

        cleared = time.monotonic()
        rechecked = subprocess.run(
            [str(RECHECK), *CHECK_ARGS, f"history.url={url}"], cwd=workdir, capture_output=True, text=True,
            env={**env, "COLLBENCH": f"{sys.executable} -m jobs.cli"}, timeout=180, check=False,
        )  # fmt: skip
        resumed = time.monotonic() - cleared
        print(f"slowed -> drained by the shipped nightly entry: {drained:.0f} s (fired at {fired}); cleared -> "
              f"resumed by the shipped recheck: {resumed:.0f} s\n{log}\n{rechecked.stdout}")  # fmt: skip
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
        if drained_by_check(SLOWED, env):
            subprocess.run(["scontrol", "update", f"NodeName={SLOWED}", "State=RESUME"], env=env, check=False)
        shown = subprocess.run(["scontrol", "show", "reservation"], capture_output=True, text=True, env=env).stdout
        for name in re.findall(r"ReservationName=(collbench-recheck-\d+)", shown):
            subprocess.run(["scontrol", "delete", f"ReservationName={name}"], env=env, check=False)
