"""The fault matrix: each fault injected for real on the test cluster, and what a user reads about it.

Every job is submitted at once and watched by its own `collbench wait`, so the matrix costs about as long
as its longest job. A fault on the network (tc in a node's namespace) goes only onto the nodes of its own
job, taken whole (slurm.exclusive), once Slurm has placed it (the batch script sleeps first, so the ranks
start after it), and is undone whatever happens. For each fault the test asserts the headline's cause and
host, and that no healthy host or rank is accused anywhere in `wait`, `report` or the JSON document.
Faults the other Slurm tests inject (a killed rank, a lost node, a cancel, a requeue) get the same
no-accusation assertions there (tests/jobs/launchers/test_faults_slurm.py)."""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from slurm.hostlist import expand_hostlist
from tests.conftest import SlurmCluster
from tests.jobs.accusations import assert_accuses_only, everything_said
from tests.jobs.cli.test_isolate_slurm import node_address, shaped, slow_link_to
from tests.jobs.launchers.test_faults_slurm import collbench_argv, slurm
from tests.jobs.launchers.test_submit_slurm import statuses, submit

pytestmark = [pytest.mark.slurm, pytest.mark.integration]

TINY = ["bench.ops=[all_reduce]", "bench.warmup_iters=1", "bench.iters=3", "slurm.tasks_per_node=1"]
LINE_BOUND = ["bench.min_bytes=1M", "bench.max_bytes=1M", "slurm.exclusive=true", "slurm.partition=wide"]
SHAPE_LATER = ['slurm.setup=["sleep 10"]']
"""The batch script waits before it starts the ranks: time for the test to shape the nodes Slurm gave it."""
TBF = ["tc qdisc add dev eth0 root tbf rate 50mbit burst 32kbit latency 400ms"]


@dataclass(frozen=True)
class Fault:
    overrides: list[str]
    headline: str
    """A regular expression the first verdict line must match; {a} and {b}: the job's first and second node."""
    culprits: Callable[[list[str]], set[str]]
    """The job's nodes -> the hosts (and 'rank N' words) that may be accused."""
    shape: Callable[[list[str]], dict[str, list[str]]] | None = None
    """The job's nodes -> node -> tc commands to run in its namespace once the job runs."""


def _rank_on(rank: int, node: int) -> Callable[[list[str]], set[str]]:
    return lambda nodes: {nodes[node], f"rank {rank}"}


FAULTS: dict[str, Fault] = {  # the longest first: it starts at once, before the others fill the nodes
    "time limit reached": Fault(
        [
            "nodes=1",
            *TINY,
            "slurm.tasks_per_node=2",
            "faults.hang_rank=1",
            "timeouts.collective_s=300",
            "timeouts.job_min=1",
            # Slurm's warning (submitit asks for it 90 s ahead) 5 s before the limit: the ranks are up by then
            "slurm.sbatch_extra={signal: 'USR2@5'}",
        ],
        r"stopped: rank\(s\) 0-1 recorded a stop \(.*\): (cancelled at \S+ due to time limit|out of time)",
        lambda nodes: set(),
    ),
    "rank hung": Fault(
        ["nodes=2", *TINY, "faults.hang_rank=1", "timeouts.collective_s=10"],
        r"rank 1 on {b} hung: never failed itself and was behind the ranks that gave up on it",
        _rank_on(1, 1),
    ),
    "rank's own work slowed": Fault(
        ["nodes=2", *TINY, "bench.max_bytes=4K", "faults.slow_rank=1", "faults.slow_ms=300"],
        r"slow host: {b}: rank\(s\) 1 slow at their own work, outside any collective \(\d+\.\d ms of its own",
        _rank_on(1, 1),
    ),
    "node's link slowed (tbf)": Fault(
        ["nodes=2", *TINY, "slurm.tasks_per_node=2", *LINE_BOUND, *SHAPE_LATER],
        r"every rank waited; the run as a whole is \d+x below the line rate of 10 Gb/s \(fabric\.line_gbps\)",
        lambda nodes: set(),
        lambda nodes: {nodes[1]: TBF},
    ),
    "one link slowed (htb+u32)": Fault(  # two nodes: gloo's all_reduce over three need not use a given link
        ["nodes=2", *TINY, *LINE_BOUND, *SHAPE_LATER],
        r"every rank waited; the run as a whole is \d+x below the line rate of 10 Gb/s \(fabric\.line_gbps\)",
        lambda nodes: set(),
        lambda nodes: {nodes[0]: slow_link_to(node_address(nodes[1]))},
    ),
    "unreachable rendezvous": Fault(
        [
            "nodes=2",
            *TINY,
            "slurm.tasks_per_node=2",
            "rendezvous.master_addr=10.80.0.99",
            "rendezvous.master_port=20015",
            "timeouts.collective_s=10",
        ],
        r"rank(\(s\))? [\d,-]+ on (n\d) failed in set-up: cannot reach the rendezvous address 10\.80\.0\.99:20015 "
        r"\(.*\): look at rendezvous\.master_addr",
        lambda nodes: set(nodes) | {f"rank {r}" for r in range(4)},
    ),
    "refused rendezvous": Fault(
        [
            "nodes=1",
            *TINY,
            "slurm.tasks_per_node=2",
            "rendezvous.master_addr=10.78.0.1",
            "rendezvous.master_port=20016",
            "timeouts.collective_s=8",
        ],
        r"rank(\(s\))? [\d,-]+ on {a} failed in set-up: was refused at the rendezvous address 10\.78\.0\.1:20016 "
        r"\(.*\): nothing listens there: look at rendezvous\.master_addr and rendezvous\.master_port",
        lambda nodes: set(nodes) | {"rank 0", "rank 1"},
    ),
}


@dataclass
class Observed:
    job_id: str
    run: Path
    nodes: list[str] = field(default_factory=list)
    wait: str = ""
    wait_code: int = -1
    said: dict[str, str] = field(default_factory=dict)
    """wait's, report's and the JSON document's words."""

    def verdicts(self) -> list[str]:
        """wait's verdict lines on stderr, cause first."""
        keep = ("collbench: FAILED: ", "collbench: slow host: ", "collbench: every rank waited")
        lines = [line for line in self.wait.splitlines() if line.startswith(keep)]
        return [line.removeprefix("collbench: ").removeprefix("FAILED: ") for line in lines]


def _job_nodes(cluster: SlurmCluster, job_id: str) -> list[str]:
    out = slurm(cluster, "squeue", "-h", "-j", job_id, "-o", "%T|%N", check=False).strip()
    state, _, nodes = out.partition("|")
    return expand_hostlist(nodes) if state == "RUNNING" and nodes else []


@pytest.fixture(scope="module")
def matrix(slurm_cluster: SlurmCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Observed]]:
    workdir = tmp_path_factory.mktemp("fault-matrix")
    observed: dict[str, Observed] = {}
    started = time.monotonic()
    try:
        for name, fault in FAULTS.items():
            observed[name] = Observed(*submit(slurm_cluster, workdir, *fault.overrides))
        with _shaped_once_placed(slurm_cluster, observed):
            _wait_all(slurm_cluster, workdir, observed)
        with ThreadPoolExecutor(max_workers=4) as pool:  # the readers are CLI processes, mostly starting up
            list(pool.map(lambda seen: _read_back(slurm_cluster, workdir, seen), observed.values()))
        print(f"fault matrix: {len(FAULTS)} jobs, {time.monotonic() - started:.0f} s from submit to verdicts")
        yield observed
    finally:
        for seen in observed.values():
            slurm(slurm_cluster, "scancel", seen.job_id, check=False)


@contextmanager
def _shaped_once_placed(cluster: SlurmCluster, observed: dict[str, Observed]) -> Iterator[None]:
    """The network faults on the nodes of their own job once Slurm has placed it, removed after the block."""
    with ExitStack() as undo:
        waiting = {name: seen for name, seen in observed.items() if FAULTS[name].shape is not None}
        deadline = time.monotonic() + 180
        while waiting:
            assert time.monotonic() < deadline, f"never placed: {', '.join(waiting)}"
            for name, seen in list(waiting.items()):
                seen.nodes = _job_nodes(cluster, seen.job_id)
                shape = FAULTS[name].shape
                if seen.nodes and shape is not None:
                    for node, commands in shape(seen.nodes).items():
                        undo.enter_context(shaped(node, commands))
                    del waiting[name]
            time.sleep(0.3)
        yield


def _wait_all(cluster: SlurmCluster, workdir: Path, observed: dict[str, Observed]) -> None:
    waits = {
        name: subprocess.Popen(
            [*collbench_argv(), "wait", seen.job_id, "--output-dir", str(workdir / "runs")],
            cwd=workdir,
            env=cluster.env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for name, seen in observed.items()
    }
    for name, waiting in waits.items():
        out, _ = waiting.communicate(timeout=300)
        observed[name].wait, observed[name].wait_code = out, waiting.returncode


def _read_back(cluster: SlurmCluster, workdir: Path, seen: Observed) -> None:
    if not seen.nodes:
        seen.nodes = sorted({s["host"] for s in statuses(seen.run).values()}) or _sacct_nodes(cluster, seen.job_id)
    seen.said = everything_said(cluster, workdir, seen.run, seen.wait)


def _sacct_nodes(cluster: SlurmCluster, job_id: str) -> list[str]:
    return expand_hostlist(slurm(cluster, "sacct", "-j", job_id, "-X", "-n", "-P", "-o", "NodeList").split()[0])


@pytest.mark.parametrize("fault", FAULTS, ids=str)
def test_the_headline_names_the_cause_and_no_healthy_host_or_rank_is_accused(
    matrix: dict[str, Observed], fault: str
) -> None:
    seen, expected = matrix[fault], FAULTS[fault]
    print(f"{fault}: job {seen.job_id} on {seen.nodes}\n{seen.wait}")
    verdicts = seen.verdicts()
    assert verdicts, seen.wait
    a, b = seen.nodes[0], seen.nodes[-1] if len(seen.nodes) > 1 else "-"
    assert re.match(expected.headline.format(a=a, b=b), verdicts[0]), verdicts
    assert_accuses_only(seen.said, expected.culprits(seen.nodes))
    if fault != "time limit reached":
        assert not re.search(r"(?<!not a )\bcancel", " ".join(verdicts)), verdicts
