"""`collbench history node HOST --trend` and `--against-history` as a user runs them, on a history of recorded
isolate runs where n3 is slowed a little more in each of the last three (0.97, 0.95, 0.93 of the level, all
above the fixed tolerance): exit 1 naming n3, exit 0 for a healthy node, a clear line with too few runs, exit 2
for a host the history has never seen."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jobs.history.database import open_history
from jobs.history.ingest import record_run
from tests.conftest import collbench
from tests.jobs.history.drift_runs import slowed_isolate_run

NOISE = (1.0, 1.004, 0.996, 1.002, 0.998)
SLOWED = (0.97, 0.95, 0.93)


@pytest.fixture(scope="module")
def drifting(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, list[str]]:
    """An SQLite history: five healthy isolate runs, then n3 at 0.97, 0.95, 0.93; and its run ids."""
    where = tmp_path_factory.mktemp("drift")
    url = f"sqlite:///{where / 'history.sqlite'}"
    ids = []
    with open_history(url) as history:
        for factors, noise in [({}, n) for n in NOISE] + [({"n3": f}, 1.0) for f in SLOWED]:
            run = slowed_isolate_run(where / "runs", factors, noise)
            assert record_run(history, run)
            ids.append(run.run_id)
    return url, ids


def test_against_history_names_the_drifted_node_and_exits_1(drifting: tuple[str, list[str]], tmp_path: Path) -> None:
    url, ids = drifting
    done = collbench("history", "node", "n3", "--against-history", "--db", url, cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    (line,) = done.stdout.splitlines()
    assert line.startswith("n3: DRIFTED: busbw ") and f" in {ids[-1]} is " in line
    assert "MAD below the median" in line and "of its own last 7 healthy run(s)" in line
    assert line.endswith("0.93 of that run's level, not named by that run's verdict")


def test_against_history_passes_a_healthy_node_with_its_figures(
    drifting: tuple[str, list[str]], tmp_path: Path
) -> None:
    url, _ = drifting
    done = collbench("history", "node", "n4", "--against-history", "--db", url, "--format", "json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    plain = json.loads(done.stdout)
    assert plain["view"] == "node-drift" and plain["key"]["nodes"] == 6 and "rows" not in plain
    assert plain["drift"]["drifted"] is False and plain["drift"]["runs"] == 7 and plain["verdict"].startswith("n4: ok:")


def test_trend_shows_each_run_then_the_baseline(drifting: tuple[str, list[str]], tmp_path: Path) -> None:
    url, ids = drifting
    done = collbench("history", "node", "n3", "--trend", "--db", url, cwd=tmp_path)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    head, columns, *rows, baseline = done.stdout.splitlines()
    assert head.startswith("# n3: cluster local, config ") and head.endswith(", 6 node(s), 12 rank(s): 8 run(s)")
    assert columns.split() == ["run_id", "started", "task", "busbw", "ratio", "named", "left_out"]
    assert [row.split()[0] for row in rows] == ids
    assert [row.split()[5] for row in rows[-3:]] == ["0.970", "0.950", "0.930"]
    assert baseline.startswith("# baseline: busbw median ") and "over its last 7 healthy run(s)" in baseline
    assert "MAD below its median" in baseline


def test_too_few_runs_is_said_and_an_unknown_host_is_bad_input(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'history.sqlite'}"
    with open_history(url) as history:
        for noise in (1.0, 1.002):
            assert record_run(history, slowed_isolate_run(tmp_path / "runs", {}, noise))
    thin = collbench("history", "node", "n3", "--against-history", "--db", url, cwd=tmp_path)
    assert thin.returncode == 0, thin.stderr
    assert thin.stdout.startswith("n3: not enough runs to judge: 1 healthy run(s) of it before its latest ")
    assert thin.stdout.rstrip().endswith("at least 3 needed; not judged")
    unknown = collbench("history", "node", "n9", "--against-history", "--db", url, cwd=tmp_path)
    assert unknown.returncode == 2 and unknown.stdout == ""
    assert unknown.stderr.strip() == (
        "collbench: error: history node n9 --against-history: the history has never seen a host 'n9'; "
        "the hosts it knows: n1, n2, n3, n4, n5, n6"
    )
