"""`collbench check` inside an allocation already held, on the project's Slurm cluster: a real `salloc`
shell, one shared allocation (`salloc --no-shell`, its variables handed to the command as an salloc shell
would) for the slowed node, the killed node and the refusals, and the shipped batch script end to end.
Nodes are slowed with tbf in their network namespace and always un-slowed (tests/jobs/cli/test_isolate_slurm.py)."""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from jobs.isolate.check_plan import plan_cost
from slurm.hostlist import collect_hostlist
from tests.browser import open_report
from tests.conftest import REPO, CommandResult, SlurmCluster, collbench, startup_s, until
from tests.jobs.cli.test_isolate_slurm import SLOW_NODE, shaped
from tests.jobs.cli.test_report_in_browser import assert_shown_whole, screenshot_path
from tests.jobs.launchers.test_submit_slurm import statuses

pytestmark = [pytest.mark.slurm, pytest.mark.integration]

PARTITION = "wide"
NODES = "n[3-6]"
HOSTS = ("n3", "n4", "n5", "n6")
BUDGET_S = 25.0
CHECK = [
    "--config",
    "testcluster",
    "slurm.tasks_per_node=1",
    f"check.budget_s={BUDGET_S:g}",
    "check.from_history=false",
]
"""The pairs judged against their own median, whatever 2-node runs the suite's history holds by then
(tests/jobs/history/test_pair_level.py tests the level from the history)."""
CHECK_FILES = ("vetted", "cordoned", "cordoned-reasons", "unchecked")
LOCAL_BUDGET_S = 30.0
"""check.local_budget_s of the node-local check: the default 10 s holds on an idle node, but two ranks
importing torch on a loaded 2-core machine have taken over 10 s (tests/jobs/cli/test_check_node.py)."""


def check(env: dict[str, str], workdir: Path, *extra: str, timeout: float = 120) -> tuple[CommandResult, float]:
    """collbench check as a job script runs it; its result and how long it took."""
    started = time.monotonic()
    result = collbench("check", *CHECK, f"output_dir={workdir / 'runs'}", *extra, cwd=workdir, env=env, timeout=timeout)
    return result, time.monotonic() - started


def assert_within_budget(stdout: str, took: float, startup: float) -> None:
    """The check's promise (check.budget_s: from its start to its verdict; the step is cancelled at 0.95 of
    it): the seconds its verdict line states, by its own clock, under the budget; and the wall time the test
    saw, which adds the interpreter's start, under the budget plus that start as measured just before,
    under the same load (a fixed allowance for it is what a loaded CI machine breaks)."""
    stated = re.search(r"^# collbench check \S+: .*, (\d+\.\d) s of a (\S+) s budget$", stdout, re.M)
    assert stated and float(stated.group(2)) == BUDGET_S, stdout
    assert float(stated.group(1)) < BUDGET_S, f"the check says it took {stated.group(1)} s of {BUDGET_S:g} s"
    assert took < BUDGET_S + startup, f"{took:.1f} s over a {BUDGET_S:g} s budget + {startup:.1f} s to start"


def job_state(job: str, env: dict[str, str]) -> str:
    """The job's state: squeue while Slurm lists it, then accounting."""
    queued = subprocess.run(["squeue", "-h", "-j", job, "-o", "%T"], capture_output=True, text=True, env=env)
    if queued.stdout.strip():
        return queued.stdout.strip()
    accounted = subprocess.run(
        ["sacct", "-n", "-X", "-P", "-j", job, "-o", "State"], capture_output=True, text=True, env=env
    )
    return accounted.stdout.strip().split(" ")[0] or "UNKNOWN"


def others(host: str) -> str:
    return collect_hostlist(h for h in HOSTS if h != host)


def hostlists(folder: Path) -> dict[str, str]:
    return {name: (folder / name).read_text().strip() for name in CHECK_FILES}


@contextmanager
def held(env: dict[str, str], partition: str, nodes: str, count: int) -> Iterator[dict[str, str]]:
    """An allocation of `nodes` held for the block (salloc --no-shell): the environment an salloc shell has."""
    out = subprocess.run(
        ["salloc", "--no-shell", "-p", partition, "-w", nodes, f"-N{count}", "--time=10"],
        capture_output=True, text=True, env=env, timeout=120, check=True,
    )  # fmt: skip
    job = re.search(r"Granted job allocation (\d+)", out.stderr)
    assert job, out.stderr
    try:
        yield {**env, "SLURM_JOB_ID": job.group(1), "SLURM_JOB_NODELIST": nodes}
    finally:
        subprocess.run(["scancel", job.group(1)], env=env, check=False)


@pytest.fixture(scope="module")
def allocation(slurm_cluster: SlurmCluster) -> Iterator[dict[str, str]]:
    """One allocation over the nodes for the module's checks."""
    with held(slurm_cluster.env(), PARTITION, NODES, len(HOSTS)) as env:
        yield env


def test_a_healthy_allocation_is_vetted_within_the_budget_from_an_salloc_shell(
    slurm_cluster: SlurmCluster, workdir: Path
) -> None:
    startup = startup_s(cwd=workdir, env=slurm_cluster.env())
    salloc = subprocess.Popen(
        ["salloc", "-p", PARTITION, "-w", NODES, f"-N{len(HOSTS)}", "--time=5",
         *collbench_argv("check", *CHECK, f"output_dir={workdir / 'runs'}", "--out", str(workdir / "out"))],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=workdir, env=slurm_cluster.env(),
    )  # fmt: skip
    try:
        # the clock starts when salloc holds the nodes (they may still be cleaning up after an earlier
        # test's step: Slurm's seconds, not the check's); salloc starts the command right after
        assert salloc.stderr is not None
        before: list[str] = []
        while not before or "Granted job allocation" not in before[-1]:
            line = salloc.stderr.readline()
            assert line, "salloc ended without an allocation: " + "".join(before)
            before.append(line)
        granted = time.monotonic()
        stdout, stderr = salloc.communicate(timeout=180)
    finally:
        salloc.kill()
    took = time.monotonic() - granted
    print(f"check, {len(HOSTS)} healthy nodes, from the allocation to the verdict: {took:.1f} s\n{stdout}")
    assert salloc.returncode == 0, stdout + stderr
    assert_within_budget(stdout, took, startup)
    assert f"VETTED {NODES}" in stdout and "CORDONED" not in stdout
    assert hostlists(workdir / "out") == {"vetted": NODES, "cordoned": "", "cordoned-reasons": "", "unchecked": ""}
    run = Path(re.search(r"^# files: (\S+)/check,", stdout, re.M).group(1))  # type: ignore[union-attr]
    meta = json.loads((run / "run.json").read_text())
    assert meta["launcher"] == "slurm-step" and re.fullmatch(r"\d+\.\d+", meta["job_id"]), "a step: JOB.STEP"
    assert (run / "isolate.json").is_file() and (run / "summary.json").is_file(), "the final files, as any run"
    listed = collbench("history", "list", "--format", "json", cwd=workdir, env=slurm_cluster.env())
    assert run.name in listed.stdout, "recorded in the results history, as any run"
    rounds = [line for line in (run / "isolate" / "rounds.jsonl").read_text().splitlines() if line]
    assert len(rounds) == plan_cost(len(HOSTS), 2).rounds, "the whole allocation, then the pairs"


def collbench_argv(*args: str) -> list[str]:
    import sys

    return [sys.executable, "-m", "jobs.cli", *args]


def test_a_slowed_node_is_cordoned_and_the_others_vetted(
    allocation: dict[str, str], workdir: Path, browser: Any
) -> None:
    startup = startup_s(cwd=workdir, env=allocation)
    page = workdir / "check.html"
    with shaped("n5", SLOW_NODE):
        result, took = check(allocation, workdir, "--out", str(workdir / "out"), "--drain", "--html", str(page))
    print(f"check, n5 slowed by tbf: {took:.1f} s to the verdict\n{result.stdout}")
    assert result.returncode == 1, result.stdout + result.stderr
    assert_within_budget(result.stdout, took, startup)
    files = hostlists(workdir / "out")
    assert files["cordoned"] == "n5" and files["vetted"] == others("n5"), files
    assert re.fullmatch(  # its two partners of the plan, then a third in the confirming round
        r"n5 busbw \S+ GB/s, 0\.\d\d of the median \S+ GB/s, 3 of 3 group\(s\) slow", files["cordoned-reasons"]
    ), files["cordoned-reasons"]
    assert re.search(
        r"^scontrol update NodeName=n5 State=DRAIN 'Reason=collbench:slow_node by check run=\S+ busbw ",
        result.stdout,
        re.M,
    ), "--drain: the line weighed against n5's state, its reason coded; nothing runs"
    assert "DRAINED" not in result.stdout
    with open_report(browser, page, screenshot_path("check-slow-node")) as opened:
        assert_shown_whole(opened)
        assert "n5" in opened.text("#verdict") and opened.page.locator("#verdict").get_attribute("data-exit") == "1"
        assert opened.page.locator("#heatmap").get_attribute("data-named") == "n5"
        assert "NodeName=n5 State=DRAIN" in opened.text("#drain")


def test_a_node_whose_ranks_die_is_named_within_the_budget(allocation: dict[str, str], workdir: Path) -> None:
    # rank 0 reaches every measurement 1.5 s late, so the kill lands mid-check, after the first round
    startup = startup_s(cwd=workdir, env=allocation)
    proc = subprocess.Popen(
        collbench_argv("check", *CHECK, f"output_dir={workdir / 'runs'}", "faults.slow_rank=0", "faults.slow_ms=1500"),
        cwd=workdir, env=allocation, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    started = time.monotonic()
    try:
        rounds = until(lambda: next((workdir / "runs").glob("*/isolate/rounds.jsonl"), None), 60, "the first round")
        victim = statuses(rounds.parent.parent)[HOSTS.index("n5")]
        assert victim["host"] == "n5"
        subprocess.run(["kill", "-9", str(victim["pid"])], check=True)
        stdout, stderr = proc.communicate(timeout=BUDGET_S + 30)
    finally:
        proc.kill()
    took = time.monotonic() - started
    print(f"check, n5's rank killed mid-check: {took:.1f} s to the verdict\n{stdout}")
    assert proc.returncode == 1, stdout + stderr
    assert_within_budget(stdout, took, startup)
    assert re.search(r"^CORDONED n5: its ranks stopped: rank \d+ dead: Killed", stdout, re.M), stdout
    assert re.findall(r"^CORDONED (\S+):", stdout, re.M) == ["n5"], stdout


def test_a_node_whose_ranks_hang_before_the_first_measurement_is_named(
    allocation: dict[str, str], workdir: Path
) -> None:
    rank = HOSTS.index("n5")
    startup = startup_s(cwd=workdir, env=allocation)
    result, took = check(allocation, workdir, f"faults.hang_rank={rank}")
    print(f"check, n5's rank hung: {took:.1f} s to the verdict\n{result.stdout}")
    assert result.returncode == 1, result.stdout + result.stderr
    assert_within_budget(result.stdout, took, startup)
    assert re.findall(r"^CORDONED (\S+): its ranks stopped: rank (\d+) hung: ", result.stdout, re.M) == [
        ("n5", str(rank))
    ]


def test_bad_input_and_a_refused_step_are_told_apart_from_a_failed_node(
    allocation: dict[str, str], slurm_cluster: SlurmCluster, workdir: Path
) -> None:
    outside, _ = check(slurm_cluster.env(), workdir)
    assert outside.returncode == 2 and "not inside a Slurm allocation" in outside.stderr, outside.stderr
    stranger, _ = check(allocation, workdir, "slurm.nodelist=n1")
    assert stranger.returncode == 2 and "n1 not in allocation" in stranger.stderr, stranger.stderr
    budget, _ = check(allocation, workdir, "check.budget_s=0")
    assert budget.returncode == 2 and "check.budget_s" in budget.stderr
    refused, _ = check(allocation, workdir, "slurm.tasks_per_node=8")  # each node has one CPU
    assert refused.returncode == 4, refused.stdout + refused.stderr
    assert "srun did not start the step: Unable to create step for job" in refused.stderr, refused.stderr
    assert not list((workdir / "runs").glob("*")), "a refused check leaves no run directory"


def test_the_shipped_batch_script_runs_its_real_step_on_the_vetted_nodes_only(
    slurm_cluster: SlurmCluster, workdir: Path
) -> None:
    env = {
        **slurm_cluster.env(),
        "COLLBENCH": " ".join(collbench_argv()),
        "CHECK_ARGS": " ".join([*CHECK, f"output_dir={workdir / 'runs'}"]),
        "NEED": str(len(HOSTS) - 1),
    }
    script = REPO / "examples" / "preflight.sbatch"
    with shaped("n4", SLOW_NODE):
        job = subprocess.run(
            ["sbatch", "--parsable", "-p", PARTITION, "-w", NODES, f"-N{len(HOSTS)}", "--time=5",
             f"--output={workdir / 'job.out'}", str(script), "hostname"],
            capture_output=True, text=True, cwd=workdir, env=env, timeout=60, check=True,
        ).stdout.strip()  # fmt: skip
        until(lambda: job_state(job, env) in ("COMPLETED", "FAILED", "CANCELLED"), 120, f"batch job {job} to end")
    out = (workdir / "job.out").read_text()
    print(out)
    assert job_state(job, env) == "COMPLETED", out
    assert re.search(r"^CORDONED n4: ", out, re.M), out
    real_step = sorted(line for line in out.splitlines() if re.fullmatch(r"n\d", line))
    assert real_step == sorted(set(HOSTS) - {"n4"}), out


def test_the_node_local_mode_answers_in_one_line_within_its_budget_on_a_node(
    allocation: dict[str, str], workdir: Path
) -> None:
    """As a HealthCheckProgram runs it: on the node itself (here a step of one task), no allocation asked."""
    node = HOSTS[-1]
    srun = ["srun", "-N1", "-n1", f"-w{node}"]
    startup = startup_s(*srun, cwd=workdir, env=allocation)  # srun's step and the interpreter, measured
    started = time.monotonic()
    proc = subprocess.run(
        [*srun, *collbench_argv("check", "--node", "--config", "testcluster", f"output_dir={workdir / 'runs'}",
                                f"check.local_budget_s={LOCAL_BUDGET_S:g}")],
        capture_output=True, text=True, cwd=workdir, env=allocation, timeout=120, check=False,
    )  # fmt: skip
    took = time.monotonic() - started
    print(f"check --node on {node} through srun: {took:.1f} s (starting it: {startup:.1f} s): {proc.stdout}")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    line = re.fullmatch(rf"OK {node}: all_reduce over 2 local rank\(s\), busbw \S+ GB/s, (\S+) s\n", proc.stdout)
    assert line, proc.stdout
    # check.local_budget_s: the most it may take from its start to its line, by its own clock; what the test
    # sees adds srun's step and the interpreter's start, measured just before under the same load
    assert float(line.group(1)) < LOCAL_BUDGET_S, proc.stdout
    assert took < LOCAL_BUDGET_S + startup, f"{took:.1f} s over {LOCAL_BUDGET_S:g} s + {startup:.1f} s to start"
