"""slurm.runner: the one failure policy of every Slurm command collbench runs (an answer, SlurmUnavailable,
SlurmFailed), with real processes standing in for Slurm's commands."""

from __future__ import annotations

from pathlib import Path

import pytest

from slurm import runner
from slurm.runner import SlurmFailed, SlurmUnavailable
from tests.slurm.commands import calls, fake_commands


def test_an_answer_is_what_the_command_said(tmp_path: Path) -> None:
    env = fake_commands(tmp_path, sinfo="echo 'n1|idle|none'; echo 'a note' >&2")
    answer = runner.run(["sinfo", "-h", "-N"], env=env)
    assert (answer.stdout, answer.stderr) == ("n1|idle|none\n", "a note\n")
    assert calls(tmp_path) == ["sinfo -h -N"]


def test_a_missing_command_is_slurm_unavailable(tmp_path: Path) -> None:
    env = fake_commands(tmp_path)
    with pytest.raises(SlurmUnavailable, match=r"^Slurm is not installed here: squeue not found on PATH$"):
        runner.run(["squeue", "-h"], env=env)


def test_a_command_that_does_not_answer_in_time_is_slurm_unavailable(tmp_path: Path) -> None:
    env = fake_commands(tmp_path, scontrol="sleep 5")
    with pytest.raises(SlurmUnavailable, match=r"^Slurm did not answer scontrol show config within 0.2 s$"):
        runner.run(["scontrol", "show", "config"], timeout_s=0.2, env=env)


def test_a_non_zero_exit_is_slurm_failed_with_its_words(tmp_path: Path) -> None:
    env = fake_commands(
        tmp_path,
        scontrol="echo 'scontrol: error: first' >&2; echo 'scontrol: error: Invalid user id' >&2; exit 1",
        sacct="exit 7",
        squeue="echo 'squeue: error: Unable to contact slurm controller (connect failure)' >&2; exit 1",
    )
    with pytest.raises(SlurmFailed) as refused:
        runner.run(["scontrol", "update", "NodeName=n1", "State=DRAIN"], env=env)
    assert (refused.value.returncode, refused.value.words) == (1, "scontrol: error: Invalid user id")
    assert str(refused.value) == "scontrol failed: scontrol: error: Invalid user id"
    assert not refused.value.unreachable
    with pytest.raises(SlurmFailed, match=r"^sacct failed: exit status 7$"):
        runner.run(["sacct", "-j", "1"], env=env)
    with pytest.raises(SlurmFailed) as unreachable:
        runner.run(["squeue", "-h"], env=env)
    assert unreachable.value.unreachable


def test_require_names_every_missing_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", fake_commands(tmp_path, sbatch="exit 0")["PATH"])
    runner.require("sbatch")
    with pytest.raises(SlurmUnavailable, match=r"^Slurm is not installed here: squeue, scancel not found on PATH$"):
        runner.require("sbatch", "squeue", "scancel")


def test_an_attached_command_gives_its_own_exit_status(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PATH", fake_commands(tmp_path, salloc='echo "checked $*"; exit 4')["PATH"])
    assert runner.attached(["salloc", "--nodes=2", "true"]) == 4
    assert capfd.readouterr().out == "checked --nodes=2 true\n", "its words reach this terminal"
    with pytest.raises(SlurmUnavailable, match="srun not found on PATH"):
        runner.attached(["srun", "true"])
