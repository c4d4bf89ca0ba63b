"""What collbench asks Slurm (squeue, sacct, sinfo, scontrol, scancel), through slurm.runner, with real processes
standing in for Slurm's commands: each caller's answer when Slurm answers, refuses, or is not there."""

from __future__ import annotations

from pathlib import Path

import pytest

from slurm.nodes import node_states
from slurm.queue import Source
from slurm.runner import SlurmFailed, SlurmUnavailable
from slurm.steps import cancel_step, cluster_name, step_running
from slurm.submission import attempt_state, cancel, check_available, query_jobs
from tests.slurm.commands import calls, fake_commands


def _path(monkeypatch: pytest.MonkeyPatch, folder: Path, **scripts: str) -> None:
    monkeypatch.setenv("PATH", fake_commands(folder, **scripts)["PATH"])


def test_a_controller_that_does_not_answer_leaves_the_jobs_to_accounting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _path(
        monkeypatch,
        tmp_path,
        squeue="echo 'squeue: error: Unable to contact slurm controller' >&2; exit 1",
        sacct="echo '7|NODE_FAIL|n[1-2]'",
    )
    found = query_jobs(["7", "8"])
    assert (found["7"].state, found["7"].nodes, found["7"].source) == ("NODE_FAIL", "n[1-2]", Source.SACCT)
    assert (found["8"].state, found["8"].source) == ("UNKNOWN", Source.NOBODY)
    assert [call.split()[0] for call in calls(tmp_path)] == ["squeue", "sacct"], "two calls for any number of jobs"


def test_no_squeue_at_all_is_slurm_unavailable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _path(monkeypatch, tmp_path, sacct="exit 0")
    with pytest.raises(SlurmUnavailable, match="squeue not found on PATH"):
        query_jobs(["7"])


def test_node_states_are_one_mapping_and_a_refusal_is_slurm_failed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _path(monkeypatch, tmp_path, sinfo="printf 'n1|idle|none\\nn2|drained*|collbench:slow_node by check run=R\\n'")
    states = node_states(["n1", "n2", "n9"])
    assert sorted(states) == ["n1", "n2"], "a node Slurm does not know is absent"
    assert (states["n2"].out_of_service, states["n2"].unhealthy, states["n1"].reason) == (True, True, "")
    assert calls(tmp_path) == ["sinfo -h -N -n n[1-2,9] -o %N|%T|%E"]
    assert node_states([]) == {}
    _path(monkeypatch, tmp_path / "refusing", sinfo="echo 'sinfo: error: Invalid node name n9' >&2; exit 1")
    with pytest.raises(SlurmFailed, match=r"^sinfo failed: sinfo: error: Invalid node name n9$"):
        node_states(["n9"])


def test_an_attempts_state_from_accounting_and_none_when_it_cannot_say(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _path(monkeypatch, tmp_path, sacct="printf 'NODE_FAIL|n1|2026-12-07T09:00:00\\nRUNNING|n2|Unknown\\n'")
    assert [attempt_state("7", number) for number in (0, 1, 2)] == ["NODE_FAIL", "RUNNING", ""]
    assert calls(tmp_path)[0] == "sacct -j 7 -X -D -n -P -o State,NodeList,End"
    _path(monkeypatch, tmp_path / "none")
    assert attempt_state("7", 0) == "", "no accounting here: the batch script goes on"


def test_cancel_and_a_step_through_one_policy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    refuse = "echo 'scancel: error: Kill job error on job id 7: Access/permission denied' >&2; exit 1"
    _path(monkeypatch, tmp_path, scancel=refuse, squeue="echo 7.0", scontrol="echo 'ClusterName = alpha'")
    with pytest.raises(SlurmUnavailable, match=r"^scancel 7 failed: scancel: error: Kill job error on job id 7"):
        cancel("7")
    assert cancel_step("7.0").endswith("Access/permission denied")
    assert (step_running("7.0"), step_running("7.1")) == (True, False)
    assert cluster_name({}) == "alpha"
    _path(monkeypatch, tmp_path / "none")
    assert step_running("7.0") is None, "Slurm cannot say"
    assert cancel_step("7.0") == "Slurm is not installed here: scancel not found on PATH"
    assert cluster_name({}) == "local"


def test_check_available_names_what_is_missing_and_a_controller_down(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _path(monkeypatch, tmp_path / "none", sbatch="exit 0")
    with pytest.raises(SlurmUnavailable, match=r"^Slurm is not installed here: squeue, scancel not found on PATH$"):
        check_available()
    down = "echo 'Slurmctld(primary) at head is DOWN'"
    _path(monkeypatch, tmp_path / "down", sbatch="exit 0", squeue="exit 0", scancel="exit 0", scontrol=down)
    with pytest.raises(SlurmUnavailable, match=r"^Slurm's controller is not reachable: Slurmctld\(primary\) at head"):
        check_available()
    _path(monkeypatch, tmp_path / "up", sbatch="exit 0", squeue="exit 0", scancel="exit 0", scontrol="echo UP")
    check_available()
