"""A sweep's directory (jobs/rundir/sweep.py): its path chosen before it exists, sweep.json made through its
record, entries updated in place, and a sweep.json of before records carried a version read as format 1."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jobs.rundir.records.codec import RecordError
from jobs.rundir.records.sweep import SWEEP_VERSION, SweepEntry
from jobs.rundir.sweep import Sweep


def test_a_new_path_is_named_under_the_output_dir_and_not_created(tmp_path: Path) -> None:
    path = Sweep.new_path(tmp_path / "runs")
    assert path.parent == (tmp_path / "runs").resolve() and path.name.startswith("sweep-")
    assert not path.parent.exists(), "nothing is made before create_at"
    assert Sweep.new_path(tmp_path / "runs") != path


def test_create_at_makes_the_directory_and_its_record_of_every_node_count(tmp_path: Path) -> None:
    path = Sweep.new_path(tmp_path / "runs")
    sweep = Sweep.create_at(path, [1, 2, 4], "slurm", ["bench.iters=5"])
    assert sweep.path == path and sweep.sweep_id == path.name
    meta = sweep.read()
    assert (meta.sweep_id, meta.config, meta.overrides, meta.node_counts) == (
        path.name, "slurm", ["bench.iters=5"], [1, 2, 4]
    )  # fmt: skip
    assert sweep.entries() == [SweepEntry(nodes=n) for n in (1, 2, 4)]
    assert json.loads(sweep.meta_file.read_text())["version"] == SWEEP_VERSION
    with pytest.raises(FileExistsError):
        Sweep.create_at(path, [1], None, [])


def test_create_picks_its_own_path(tmp_path: Path) -> None:
    sweep = Sweep.create(tmp_path / "runs", [2], None, [])
    assert sweep.path.parent == (tmp_path / "runs").resolve() and sweep.meta_file.is_file()


def test_an_entry_is_updated_and_what_is_not_given_is_kept(tmp_path: Path) -> None:
    sweep = Sweep.create(tmp_path, [1, 2], None, [])
    sweep.update_entry(1, run_dir="/r/1", job_id="11")
    sweep.update_entry(2, error="sbatch: error: refused")
    sweep.update_entry(1, error="late")
    assert sweep.entries() == [
        SweepEntry(nodes=1, run_dir="/r/1", job_id="11", error="late"),
        SweepEntry(nodes=2, error="sbatch: error: refused"),
    ]


def test_a_sweep_json_without_a_version_reads_as_format_1(tmp_path: Path) -> None:
    old = {
        "sweep_id": tmp_path.name, "created": 1700000000.5, "config": "testcluster", "overrides": [],
        "node_counts": [1, 4],
        "entries": [
            {"nodes": 1, "run_dir": "/runs/a", "job_id": "7", "error": None},
            {"nodes": 4, "run_dir": None, "job_id": None, "error": "Invalid partition name specified"},
        ],
    }  # fmt: skip
    (tmp_path / "sweep.json").write_text(json.dumps(old, indent=1, sort_keys=True))
    sweep = Sweep(tmp_path)
    assert sweep.read().version == 1 and sweep.read().config == "testcluster"
    assert [(e.nodes, e.run_dir, e.job_id, e.error) for e in sweep.entries()] == [
        (1, "/runs/a", "7", None),
        (4, None, None, "Invalid partition name specified"),
    ]
    sweep.update_entry(1, job_id="8")
    assert json.loads(sweep.meta_file.read_text())["version"] == 1 and sweep.entries()[0].job_id == "8"


def test_a_newer_sweep_json_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "sweep.json").write_text(json.dumps({"version": 7, "sweep_id": "s"}))
    with pytest.raises(RecordError, match=r"sweep.json format 7 is newer than this collbench reads") as caught:
        Sweep(tmp_path).entries()
    assert "\n" not in str(caught.value)


def test_a_hand_made_sweep_json_of_entries_alone_reads(tmp_path: Path) -> None:
    """As tests and people write one to compare two sets of runs: only what compare needs."""
    entries = [{"nodes": 2, "run_dir": "/runs/b", "job_id": "9", "error": None}]
    (tmp_path / "sweep.json").write_text(json.dumps({"entries": entries}))
    assert Sweep(tmp_path).entries() == [SweepEntry(nodes=2, run_dir="/runs/b", job_id="9")]
