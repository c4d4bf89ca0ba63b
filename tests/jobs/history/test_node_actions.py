"""What collbench did to a node after a verdict is in the history, and `history node` lists it: the drain
with its coded reason, a resume, a node left alone, a drain Slurm refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobs.config.model import load_config
from jobs.history.database import open_history
from jobs.history.ingest import record_run
from jobs.history.node_actions import record_actions
from jobs.history.node_drift import node_levels
from jobs.history.node_record import node_record
from jobs.isolate.reasons import drain_reason
from jobs.rundir.records.drains import DrainRecord, DrainStep
from tests.jobs.history.drift_runs import slowed_isolate_run


def test_drains_resumes_and_refusals_are_recorded_and_listed(history_url: str, tmp_path: Path) -> None:
    cfg = load_config(None, [f"history.url={history_url}"])
    reason = drain_reason(("slow_node",), "check", "R1", "busbw 0.4 of 10 GB/s")
    drained = DrainRecord(
        run_id="R1",
        task="check",
        at=1000.0,
        steps=[DrainStep("n3", "drain", ["slow_node"], reason, "check named it", True)],
    )
    resumed = DrainRecord(
        run_id="R2", task="check", at=2000.0,
        steps=[
            DrainStep("n3", "resume", ["slow_node"], reason, "check passed it; drained by collbench in R1", True),
            DrainStep("n4", "leave", [], "bad dimm", "passed, but drained by someone else (bad dimm)", False),
            DrainStep("n5", "drain", ["node_stopped"], "collbench:node_stopped by check run=R2 x", "hung", False,
                      "slurm_update error: Invalid user id"),
        ],
    )  # fmt: skip
    assert record_actions(cfg, "lab", drained) and record_actions(cfg, "lab", resumed)
    with open_history(history_url) as history:
        n3 = [(e.run_id, e.what, e.detail) for e in node_record(history, "n3")]
        (n4,) = node_record(history, "n4")
        (n5,) = node_record(history, "n5")
    assert n3 == [
        ("R1", "drained by check", reason),
        ("R2", "resumed by check", "check passed it; drained by collbench in R1"),
    ]
    assert (n4.what, n4.detail) == ("left by check", "passed, but drained by someone else (bad dimm)")
    assert n5.what == "drain refused by check" and "Invalid user id" in n5.detail


def test_a_history_that_cannot_be_reached_costs_one_line_and_the_drain_stands(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = load_config(None, ["history.url=postgresql://nobody@127.0.0.1:1/none"])
    record = DrainRecord(
        run_id="R", task="check", at=1.0, steps=[DrainStep("n1", "drain", ["slow_node"], "r", "w", True)]
    )
    assert record_actions(cfg, "lab", record) is False
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "drains.json in its run directory holds them" in err


def test_what_collbench_did_after_a_run_does_not_spoil_the_node_s_baseline(history_url: str, tmp_path: Path) -> None:
    """A resume (or a node left alone) recorded against a run is no verdict on the node: the run stays in the
    node's own baseline, though history node lists it."""
    cfg = load_config(None, [f"history.url={history_url}"])
    with open_history(history_url) as history:
        runs = [slowed_isolate_run(tmp_path / f"r{n}", {}, 1.0 + 0.002 * n) for n in range(4)]
        assert all(record_run(history, run) for run in runs)
    step = DrainStep("n3", "resume", ["slow_node"], "collbench:slow_node by check run=OLD x", "check passed it", True)
    assert record_actions(cfg, "lab", DrainRecord(run_id=runs[1].run_id, task="check", at=2.0, steps=[step]))
    with open_history(history_url) as history:
        assert any(e.what == "resumed by check" for e in node_record(history, "n3"))
        levels = node_levels(history, "n3")
    assert [level.healthy for level in levels] == [True] * 4, levels
