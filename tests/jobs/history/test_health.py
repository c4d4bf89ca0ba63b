"""Why a run is left out of every baseline (runs.excluded), one reason per cause, as gather records it from the
run directory: an injected fault, a failure (its first problem line), a slow host, wrong elements (how many, on
which host and ranks), a fabric finding or failed requirement, an isolate verdict's bad node, rail, link or slow
switch link; '' for a healthy run."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

from jobs.config.model import load_config, to_yaml
from jobs.history.gather import gather
from jobs.history.health import SEPARATOR, reasons, why_excluded
from jobs.inspect.report import assess
from jobs.rundir.layout import RunDir
from jobs.rundir.records.rank import STATUS, RankState
from jobs.rundir.records.summary import SUMMARY, Summary
from tests.jobs.history.fabric_runs import across, rail_isolate_run
from tests.jobs.history.test_node_record import four_ranks
from tests.jobs.rundir import synthetic


def _excluded(run: RunDir) -> str:
    return str(gather(run).run["excluded"])


def test_a_healthy_run_is_left_out_of_nothing(tmp_path: Path) -> None:
    record = gather(synthetic.sweep_run(tmp_path))
    assert record.run["excluded"] == "" and record.run["outcome"] == "passed"


def test_a_run_with_an_injected_fault_names_each_fault(tmp_path: Path) -> None:
    run = synthetic.sweep_run(tmp_path, ranks=3)
    overrides = ["ranks=3", "faults.slow_rank=1", "faults.slow_ms=50", "faults.corrupt_rank=2"]
    run.config_file.write_text(to_yaml(load_config(None, overrides)))
    assert _excluded(run) == "injected fault faults.corrupt_rank=2, faults.slow_rank=1, faults.slow_ms=50"


def test_a_failed_run_gives_its_first_problem_and_each_host_the_cause_in_words(tmp_path: Path) -> None:
    run = four_ranks(tmp_path, own_s={}, late={})
    _end(run, 2, RankState.FAILED, error="RuntimeError: CUDA error: an illegal memory access")
    for rank in (0, 1, 3):
        _end(run, rank, RankState.STOPPED, signal="SIGTERM")
    record = gather(run)
    assert record.run["excluded"] == (
        "failed: rank 2 on n2 failed first: RuntimeError: CUDA error: an illegal memory access"
    )
    causes = {h["host"]: (h["blamed_ranks"], h["cause"]) for h in record.children["hosts"]}
    assert causes == {"n1": (0, ""), "n2": (1, "rank 2 failed: RuntimeError: CUDA error: an illegal memory access")}


def test_each_blamed_rank_s_end_is_in_its_host_s_cause_and_ranks_that_ended_alike_share_one(tmp_path: Path) -> None:
    """A local run whose rank 2's process is gone with nothing recorded (it died), and whose ranks 0 and 1 both
    raised the same error."""
    run = four_ranks(tmp_path, own_s={}, late={})
    status = STATUS.read(run.rank_status(2))
    gone = _gone_pid()
    STATUS.write(run.rank_status(2), dataclasses.replace(status, state=RankState.RUNNING, pid=gone))
    for rank in (0, 1):
        _end(run, rank, RankState.FAILED, error="RuntimeError: out of host memory")
    hosts = {h["host"]: h for h in gather(run).children["hosts"]}
    assert (hosts["n1"]["blamed_ranks"], hosts["n2"]["blamed_ranks"]) == (2, 1)
    assert hosts["n1"]["cause"] == "rank(s) 0-1 failed: RuntimeError: out of host memory"
    assert hosts["n2"]["cause"] == f"rank 2 died: its process {gone} is gone, with nothing recorded"


def _gone_pid() -> int:
    """The pid of a process that has ended (reaped): no process of the run has it."""
    import subprocess

    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def _end(run: RunDir, rank: int, state: RankState, error: str = "", signal: str = "") -> None:
    now = time.time()
    status = STATUS.read(run.rank_status(rank))
    STATUS.write(run.rank_status(rank), dataclasses.replace(
        status, state=state, error=error, signal=signal, failed_at=now if error else 0.0,
        stopped_at=now + 1 if signal else 0.0,
    ))  # fmt: skip


def test_a_slow_host_is_named(tmp_path: Path) -> None:
    run = four_ranks(tmp_path, own_s={3: 0.3}, late={0: 0.05, 1: 0.05})  # n2 slow at its own work
    assert _excluded(run) == "slow host n2"


def test_wrong_elements_name_how_many_the_host_and_its_ranks(tmp_path: Path) -> None:
    run = synthetic.sweep_run(tmp_path, ranks=3)
    lines = [
        dataclasses.replace(synthetic.result(1, "vm", size, 3, 30.0), wrong=3, first_wrong_index=0)
        for size in synthetic.SIZES
    ]
    run.rank_results(1).write_text("".join(line.to_json() + "\n" for line in lines))
    record = gather(run)
    first = f"all_reduce size {synthetic.SIZES[0]} in-place: #wrong 3 on rank(s) 1 (vm)"
    assert record.run["excluded"] == f"failed: {first}; 6 wrong element(s) on vm (rank(s) 1)"
    (host,) = record.children["hosts"]
    assert (host["wrong"], host["wrong_ranks"], host["blamed_ranks"]) == (6, "1", 0)


def test_a_fabric_finding_and_a_failed_requirement_are_named_with_their_hosts(tmp_path: Path) -> None:
    found = synthetic.sweep_run(tmp_path)
    _summary(found, passed=True, findings=("vm: port mlx5_0/1 counted 12 symbol errors during the run",))
    assert _excluded(found) == "fabric finding on vm"
    unmet = synthetic.sweep_run(tmp_path)
    failure = "fabric.require_network=ib: rank(s) 0-1 on vm use Socket"
    _summary(unmet, passed=False, failures=(failure,), problems=(f"fabric: {failure}",))
    assert _excluded(unmet) == f"failed: fabric: {failure}; fabric requirement not met on vm"


def _summary(
    run: RunDir,
    passed: bool,
    findings: tuple[str, ...] = (),
    failures: tuple[str, ...] = (),
    problems: tuple[str, ...] = (),
) -> None:
    """summary.json with the run's rows and this verdict and fabric section, as the run's end writes it."""
    fabric = {"hosts": [], "findings": list(findings), "failures": list(failures), "notes": []}
    summary = Summary(run_id=run.run_id, passed=passed, problems=list(problems), fabric=fabric, rows=assess(run).rows)
    SUMMARY.write(run.summary_file, summary)


def test_an_isolate_verdict_names_its_bad_link_rail_and_switch_link(tmp_path: Path) -> None:
    assert _excluded(synthetic.isolate_run(tmp_path / "link")) == "isolate bad link n2-n3"
    rail = rail_isolate_run(tmp_path / "rail", lambda pair, r: r == 1 and 2 in pair)
    assert _excluded(rail) == "isolate bad rail n3 rail 1"
    switch = rail_isolate_run(tmp_path / "switch", lambda pair, r: r == 1 and across(pair))
    assert _excluded(switch) == "isolate slow switch link s1-s2 on rail 1"


def test_every_cause_of_one_run_is_a_reason_of_its_own_in_order() -> None:
    children = {
        "hosts": [
            {"host": "n1", "slow": "n1: rank(s) 0 slow at their own work", "wrong": 0, "wrong_ranks": ""},
            {"host": "n2", "slow": "", "wrong": 38, "wrong_ranks": "2,3"},
        ],
        "results": [{"wrong": 38}],
        "fabric": [{"kind": "failure", "host": "", "line": "fabric.require_gdr=true: ..."}],
        "isolate_nodes": [{"host": "n4", "bad": True, "rail": None}],
        "isolate_switches": [{"switches": "", "side_a": "n[1-2]", "side_b": "n[3-4]", "rail": None}],
    }
    found = reasons({"hang_rank": 1}, False, ["rank 1 on n1 hung: ..."], children)
    assert found == [
        "injected fault faults.hang_rank=1",
        "failed: rank 1 on n1 hung: ...",
        "slow host n1",
        "38 wrong element(s) on n2 (rank(s) 2,3)",
        "fabric requirement not met",
        "isolate bad node n4",
        "isolate slow switch link a cut n[1-2] | n[3-4]",
    ]
    assert why_excluded({"hang_rank": 1}, False, [], children).split(SEPARATOR)[1] == "failed"


def test_wrong_elements_no_rank_is_named_for_are_counted_still() -> None:
    """An imported run: nccl-tests counts #wrong over every rank and does not say whose."""
    assert reasons({}, True, [], {"hosts": [{"host": "g1", "wrong": 0}], "results": [{"wrong": 4}, {"wrong": -1}]}) == [
        "4 wrong element(s) (no rank named)"
    ]
