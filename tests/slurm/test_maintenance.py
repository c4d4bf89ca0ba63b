"""slurm.maintenance: the drain and resume lines run, and a re-check's reservation on its nodes (reserved, resumed into
the reservation, released whatever happens), with real processes standing in for sinfo and scontrol."""

from __future__ import annotations

from pathlib import Path

import pytest

from slurm.maintenance import MaintenanceReservation, Refused, apply, drain, idle_nodes, partition_nodes, reserved
from tests.slurm.commands import calls, fake_commands

RESERVATION = MaintenanceReservation(("n1", "n2"), ("n5",), "collbench-recheck-7", "alice", 30)
RESERVE = (
    "scontrol create reservation ReservationName=collbench-recheck-7 Nodes=n[1-2,5] StartTime=now Duration=30 "
    "Users=alice Flags=MAINT,IGNORE_JOBS"
)
RESUME = "scontrol update NodeName=n[1-2] State=RESUME"
RELEASE = "scontrol delete ReservationName=collbench-recheck-7"


def _path(monkeypatch: pytest.MonkeyPatch, folder: Path, **scripts: str) -> None:
    monkeypatch.setenv("PATH", fake_commands(folder, **scripts)["PATH"])


def test_the_nodes_are_reserved_resumed_and_released_around_the_block(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _path(monkeypatch, tmp_path, scontrol="exit 0", salloc="exit 0")
    with pytest.raises(ZeroDivisionError), reserved(RESERVATION):
        assert calls(tmp_path) == [RESERVE, RESUME]
        _ = 1 / 0
    assert calls(tmp_path) == [RESERVE, RESUME, RELEASE], "released whatever happens in the block"


def test_a_refused_reservation_resumes_nothing_and_a_refused_resume_checks_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _path(monkeypatch, tmp_path / "a", scontrol='echo "scontrol: error: Invalid user id" >&2; exit 1')
    refused = r"^the reservation was refused \(scontrol: error: Invalid user id\); nothing"
    with pytest.raises(Refused, match=refused), reserved(RESERVATION):
        pytest.fail("the block runs only once the nodes are reserved")
    assert calls(tmp_path / "a") == [RESERVE], "no reservation: nothing to resume or release"
    refuse_resume = 'case "$*" in *RESUME*) echo "scontrol: error: Access denied" >&2; exit 1;; esac'
    _path(monkeypatch, tmp_path / "b", scontrol=refuse_resume)
    refused = r"^Slurm refused the resume \(scontrol: error: Access denied\); nothing re-"
    with pytest.raises(Refused, match=refused), reserved(RESERVATION):
        pytest.fail("the block runs only once the nodes are reserved")
    assert calls(tmp_path / "b") == [RESERVE, RESUME, RELEASE]


def test_hold_lines_and_its_allocation() -> None:
    reserve, resume, release = RESERVATION.lines()
    assert (" ".join(reserve), " ".join(resume), " ".join(release)) == (RESERVE, RESUME, RELEASE)
    assert RESERVATION.allocation_argv("debug", 7, 120, ["python", "-m", "jobs.cli", "check"]) == [
        "salloc", "--reservation=collbench-recheck-7", "--partition=debug", "--nodelist=n[1-2,5]", "--nodes=3",
        "--time=7", "--immediate=120", "--job-name=collbench-recheck", "python", "-m", "jobs.cli", "check",
    ]  # fmt: skip
    assert "--partition=" not in " ".join(RESERVATION.allocation_argv("", 7, 120, ["true"]))


def test_a_line_slurm_refuses_or_cannot_run_comes_back_as_words(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _path(monkeypatch, tmp_path, scontrol='echo "scontrol: error: Invalid user id" >&2; exit 1')
    assert drain(["n1"], "collbench:slow_node by check run=R") == "scontrol: error: Invalid user id"
    assert calls(tmp_path) == ["scontrol update NodeName=n1 State=DRAIN Reason=collbench:slow_node by check run=R"]
    _path(monkeypatch, tmp_path / "none")
    assert apply(["scontrol", "update", "NodeName=n1", "State=RESUME"]) == (
        "Slurm is not installed here: scontrol not found on PATH"
    )


def test_a_partitions_nodes_and_its_idle_partners(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sinfo = 'case "$*" in *idle*) printf "n4\\nn2\\nn3\\nn2\\n";; *) printf "n2\\nn1\\nn1\\n";; esac'
    _path(monkeypatch, tmp_path, sinfo=sinfo)
    assert partition_nodes("debug") == ["n1", "n2"], "a node in two partitions once"
    assert idle_nodes("debug", ["n2"], 2) == ["n3", "n4"]
    assert idle_nodes("", [], 1) == ["n2"]
    assert calls(tmp_path) == [
        "sinfo -h -N -p debug -o %N", "sinfo -h -N -p debug -t idle -o %N", "sinfo -h -N -t idle -o %N"
    ]  # fmt: skip
    _path(monkeypatch, tmp_path / "refusing", sinfo="echo 'sinfo: error: bad partition' >&2; exit 1")
    assert idle_nodes("gpu", [], 2) == [], "no idle partner to name: the caller says so"
