"""A node's drift from its own past, over real isolate runs recorded into a real history: a node slowed a little
more in each run, never below the fixed tolerance and so never named by a verdict, is named here; a healthy node
with noise is not; runs that named the node, or that another node's failure spoiled, stay out of its baseline;
only runs of the latest run's comparable set are compared."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from jobs.history.database import History, open_history
from jobs.history.gather import gather
from jobs.history.ingest import record_run, write_record
from jobs.history.node_drift import MAD_FLOOR, node_drift, node_levels, node_series
from tests.jobs.history.drift_runs import NODES, slowed_isolate_run

NOISE = (1.0, 1.004, 0.996, 1.002, 0.998, 1.003, 0.997, 1.001, 0.999, 1.002)
"""Each healthy run's pace: every pair of it a few parts in a thousand off."""
HEALTHY = [f"n{node}" for node in range(1, NODES + 1) if node != 3]


def record(history: History, tmp_path: Path, runs: Sequence[tuple[Mapping[str, float], float]]) -> list[str]:
    """Each (factors, noise) as an isolate run, recorded in order; their run ids."""
    ids = []
    for factors, noise in runs:
        run = slowed_isolate_run(tmp_path / "runs", factors, noise)
        assert record_run(history, run)
        ids.append(run.run_id)
    return ids


def test_a_node_slowed_a_little_in_each_run_is_named_while_above_the_fixed_tolerance(
    history_url: str, tmp_path: Path
) -> None:
    history = open_history(history_url)
    healthy = record(history, tmp_path, [({}, noise) for noise in NOISE[:5]])
    slowed = record(history, tmp_path, [({"n3": 0.97}, 1.001), ({"n3": 0.95}, 0.999), ({"n3": 0.93}, 1.002)])

    levels = node_levels(history, "n3")
    assert [level.run_id for level in levels] == healthy + slowed
    assert [round(level.ratio, 3) for level in levels[-3:]] == [0.97, 0.95, 0.93]
    assert not any(level.named or level.left_out for level in levels), "no verdict named it: all above 0.85"
    drift = node_drift(history, "n3")
    assert drift is not None and drift.enough and drift.drifted
    assert drift.latest.run_id == slowed[-1] and drift.runs == 7 and drift.against == tuple(healthy + slowed[:2])
    scale = max(drift.mad, MAD_FLOOR * drift.median)
    assert drift.mads_below == (drift.median - drift.latest.busbw) / scale > 3
    for host in HEALTHY:
        steady = node_drift(history, host)
        assert steady is not None
        assert steady.enough and not steady.drifted, (host, steady.mads_below)
        assert abs(steady.mads_below) < 1, "noise of a few parts in a thousand is well inside 3 MAD"


def test_a_drop_within_3_mad_is_not_a_drift(history_url: str, tmp_path: Path) -> None:
    history = open_history(history_url)
    record(history, tmp_path, [({}, noise) for noise in NOISE[:5]] + [({"n3": 0.98}, 1.0)])
    drift = node_drift(history, "n3")
    assert drift is not None and drift.enough and not drift.drifted and 0 < drift.mads_below < 3


def test_too_few_healthy_runs_judge_nothing(history_url: str, tmp_path: Path) -> None:
    history = open_history(history_url)
    record(history, tmp_path, [({}, 1.0), ({}, 1.002), ({"n3": 0.9}, 1.0)])
    drift = node_drift(history, "n3")
    assert drift is not None and drift.runs == 2 and not drift.enough and not drift.drifted
    assert drift.mads_below == 0.0
    assert node_drift(history, "n7") is None and node_levels(history, "n7") == []


def test_runs_that_named_the_node_or_that_a_failure_spoiled_stay_out_of_its_baseline(
    history_url: str, tmp_path: Path
) -> None:
    history = open_history(history_url)
    before = record(history, tmp_path, [({}, noise) for noise in NOISE[:3]])
    (bad,) = record(history, tmp_path, [({"n3": 0.5}, 1.0)])  # under 0.85: the verdict names n3
    spoiled = gather(slowed_isolate_run(tmp_path / "runs", {}, 0.9))  # every pair 10% slow, n5's rank failed
    (n5,) = [host for host in spoiled.children["hosts"] if host["host"] == "n5"]
    n5.update(blamed_ranks=1, cause="rank 8 died")
    assert write_record(history, spoiled).recorded
    (latest,) = record(history, tmp_path, [({}, 1.0)])

    by_run = {level.run_id: level for level in node_levels(history, "n3")}
    assert by_run[bad].named and by_run[bad].left_out == "named: isolate node"
    assert not by_run[spoiled.run_id].named and by_run[spoiled.run_id].left_out == "a failure blamed on n5"
    drift = node_drift(history, "n3")
    assert drift is not None and drift.against == tuple(before) and not drift.drifted
    n4 = node_drift(history, "n4")
    assert n4 is not None and n4.against == (*before, bad), "n3 named bad spoils nothing of n4's level"
    assert n4.latest.run_id == latest and not n4.drifted


def test_only_the_latest_run_s_comparable_set_is_compared(history_url: str, tmp_path: Path) -> None:
    history = open_history(history_url)
    six = record(history, tmp_path, [({}, noise) for noise in NOISE[:4]])
    four = slowed_isolate_run(tmp_path / "runs", {"n3": 0.9}, 1.0, nodes=4)
    assert record_run(history, four)
    found = node_series(history, "n3")
    assert found is not None and found.key.nodes == 4 and found.others == len(six)
    assert [level.run_id for level in found.levels] == [four.run_id]
    drift = node_drift(history, "n3")
    assert drift is not None and drift.runs == 0 and not drift.enough, "six-node runs say nothing of a four-node one"
