"""A node's record agrees with the run's own verdict: a failure counts against the node the verdict
blames, not against the nodes whose ranks srun's clean-up stopped after it; a host is slow only where the
report names it slow at its own work, never for whose timer read longest inside a collective."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import pytest
from sqlalchemy import select

from jobs.history import schema
from jobs.history.database import open_history
from jobs.history.gather import gather
from jobs.history.ingest import record_run, write_record
from jobs.history.node_record import node_record
from jobs.rundir.layout import RunDir
from jobs.rundir.records.rank import STATUS, RankState
from jobs.rundir.records.summary import SUMMARY
from tests.conftest import collbench
from tests.jobs.rundir import synthetic

HOSTS = ("n1", "n1", "n2", "n2")


def four_ranks(output_dir: Path, own_s: dict[int, float], late: dict[int, float]) -> RunDir:
    """A finished run of 4 ranks on n1 and n2: each measurement 0.2 s; ranks in `late` start and end it
    later (their timers read longest), ranks in `own_s` spend that long of their own between measurements."""
    run = synthetic.sweep_run(output_dir, ranks=4)
    run.update_meta(nodes=2)
    for rank, host in enumerate(HOSTS):
        clock, lines = 1000.0 + late.get(rank, 0.0), []
        for step in range(10):
            clock += own_s.get(rank, 0.0005 + 0.0001 * ((rank * 7 + step) % 3))
            base = synthetic.result(rank, host, 1024 << step, 4, 100.0 * (1.5 if rank in late else 1.0))
            lines.append(dataclasses.replace(base, started_at=clock, ended_at=clock + 0.2))
            clock += 0.2
        synthetic._rank_files(run, rank, host, rank // 2, lines)
    return run


def test_only_the_blamed_node_counts_a_failure_and_only_the_report_s_slow_host_is_slow(
    history_url: str, tmp_path: Path
) -> None:
    history = open_history(history_url)
    slow = four_ranks(tmp_path, own_s={3: 0.3}, late={0: 0.05, 1: 0.05})  # n1's timers last, n2 slow on its own
    failed = four_ranks(tmp_path, own_s={}, late={})
    now = time.time()
    for rank, state in ((2, RankState.FAILED), (0, RankState.STOPPED), (1, RankState.STOPPED), (3, RankState.STOPPED)):
        status = STATUS.read(failed.rank_status(rank))
        error = "RuntimeError: CUDA error: an illegal memory access" if state is RankState.FAILED else ""
        signal = "SIGTERM" if state is RankState.STOPPED else ""
        STATUS.write(failed.rank_status(rank), dataclasses.replace(
            status, state=state, error=error, signal=signal, failed_at=now if error else 0.0,
            stopped_at=now + 1 if signal else 0.0,
        ))  # fmt: skip
    assert record_run(history, slow) and record_run(history, failed)

    n1 = node_record(history, "n1")
    assert n1 == [], "its ranks were stopped after n2's failed, and came last in collectives: no verdict names it"
    n2 = node_record(history, "n2")
    assert sorted((e.run_id, e.what) for e in n2) == sorted([(slow.run_id, "slow host"), (failed.run_id, "failure")])
    by_what = {e.what: e.detail for e in n2}
    assert by_what["failure"] == "rank 2 failed: RuntimeError: CUDA error: an illegal memory access"
    assert by_what["slow host"].startswith("n2: rank(s) 3 slow at their own work")


FAST = ["bench.min_bytes=64", "bench.max_bytes=4K", "bench.step_factor=8", "bench.warmup_iters=1", "bench.iters=3"]


@pytest.fixture(scope="module")
def corrupted_run(tmp_path_factory: pytest.TempPathFactory) -> RunDir:
    """A real local run of 2 ranks whose rank 1 corrupts one element of its output at each measurement."""
    workdir = tmp_path_factory.mktemp("corrupt")
    made = collbench(
        "run", "ranks=2", "bench.ops=[reduce_scatter]", "faults.corrupt_rank=1", "history.record=false",
        "output_dir=runs", *FAST, cwd=workdir,
    )  # fmt: skip
    assert made.returncode == 1, made.stderr
    return RunDir(made.run_dir())


@pytest.mark.integration
def test_wrong_elements_reach_the_node_that_had_them(history_url: str, corrupted_run: RunDir) -> None:
    host = STATUS.read(corrupted_run.rank_status(1)).host
    sizes = [row.size for row in SUMMARY.read(corrupted_run.summary_file).rows]  # in place and out of place
    assert f"#wrong 1 on rank(s) 1 ({host})" in SUMMARY.read(corrupted_run.summary_file).problems[0]
    history = open_history(history_url)
    assert record_run(history, corrupted_run)
    (event,) = node_record(history, host)
    assert (event.run_id, event.what) == (corrupted_run.run_id, "wrong elements")
    assert event.detail == (
        f"{len(sizes)} wrong element(s) on rank(s) 1 in reduce_scatter at {len(set(sizes))} size(s), "
        f"{min(sizes)} B to {max(sizes)} B"
    )
    query = select(schema.hosts).join(schema.runs).where(schema.runs.c.run_id == corrupted_run.run_id)
    excluded = select(schema.runs.c.excluded).where(schema.runs.c.run_id == corrupted_run.run_id)
    with history.engine.connect() as connection:
        (row,) = connection.execute(query).mappings().all()
        why = connection.execute(excluded).scalar_one()
    assert why.startswith("injected fault faults.corrupt_rank=1; failed: reduce_scatter size ")
    assert why.endswith(f"; {len(sizes)} wrong element(s) on {host} (rank(s) 1)")
    assert (row["wrong"], row["wrong_ranks"], row["blamed_ranks"]) == (len(sizes), "1", 0)


def test_a_failed_check_node_shows_as_a_failure_with_its_fail_line(history_url: str, tmp_path: Path) -> None:
    """What `collbench check --node` records for a FAIL: task check-node, its host's ranks blamed, the FAIL
    line as the cause."""
    record = gather(synthetic.sweep_run(tmp_path))
    fail = "FAIL vm: all_reduce busbw 0.41 GB/s under check.local_min_busbw 100"
    (host,) = record.children["hosts"]
    host.update(blamed_ranks=host["ranks"], cause=fail)
    record.run.update(task="check-node", outcome="failed", excluded="a check --node run")
    history = open_history(history_url)
    assert write_record(history, record).recorded
    (event,) = node_record(history, "vm")
    assert (event.what, event.detail) == ("failure", fail)
