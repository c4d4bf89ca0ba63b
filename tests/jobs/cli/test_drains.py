"""After a verdict: the drain and resume steps printed (--drain) or run (drain.apply) through Slurm's commands as
small scripts (tests/slurm/commands.py), drains.json written once, and a refusal or a Slurm that cannot say
costing one line while the verdict stands. The real thing: test_isolate_slurm.py, test_check_slurm.py."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from jobs.cli.drains import act_on_verdict
from jobs.config.model import Config, load_config
from jobs.isolate.reasons import Finding
from jobs.rundir.layout import RunDir
from tests.slurm.commands import calls, fake_commands

STATES = "printf 'n1|idle|none\\nn2|drained|collbench:slow_node by isolate run=OLD busbw 0.4\\nn3|mixed|none\\n'"
FINDINGS = [Finding("n1", "slow_node", "busbw 0.42 of healthy 10 GB/s")]


def _config(apply: bool) -> Config:
    cfg = load_config("testcluster", ["slurm.tasks_per_node=1", "history.record=false"])
    return replace(cfg, drain=replace(cfg.drain, apply=apply, resume=True))


def _slurm(monkeypatch: pytest.MonkeyPatch, folder: Path, **scripts: str) -> None:
    monkeypatch.setenv("PATH", fake_commands(folder, **scripts)["PATH"])


def test_drain_prints_the_lines_and_runs_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _slurm(monkeypatch, tmp_path, sinfo=STATES, scontrol="exit 0")
    run = RunDir.create(tmp_path / "runs", "slurm")
    assert act_on_verdict(_config(apply=False), run, "isolate", FINDINGS, ["n2", "n3"], show=True) is None
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "# drain and resume (nothing runs: drain.apply=true or --apply runs them)"
    assert out[1].startswith(
        f"scontrol update NodeName=n1 State=DRAIN 'Reason=collbench:slow_node by isolate run={run.run_id}"
    )
    assert out[2].startswith("scontrol update NodeName=n2 State=RESUME  # ")
    assert [call.split()[0] for call in calls(tmp_path)] == ["sinfo"]
    assert not run.drains_file.exists()


def test_apply_runs_the_steps_and_writes_drains_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _slurm(monkeypatch, tmp_path, sinfo=STATES, scontrol="exit 0")
    run = RunDir.create(tmp_path / "runs", "slurm")
    acted = act_on_verdict(_config(apply=True), run, "isolate", FINDINGS, ["n2", "n3"], show=False)
    assert acted is not None and not acted.refused
    out = capsys.readouterr().out
    assert f"DRAINED n1: collbench:slow_node by isolate run={run.run_id}" in out
    assert "RESUMED n2: " in out
    assert [call.split()[:3] for call in calls(tmp_path)[1:]] == [
        ["scontrol", "update", "NodeName=n1"], ["scontrol", "update", "NodeName=n2"]
    ]  # fmt: skip
    steps = json.loads(run.drains_file.read_text())["steps"]
    assert [(s["host"], s["action"], s["done"]) for s in steps] == [("n1", "drain", True), ("n2", "resume", True)]


def test_a_refusal_is_one_line_and_the_later_steps_are_not_tried(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _slurm(monkeypatch, tmp_path, sinfo=STATES, scontrol="echo 'scontrol: error: Invalid user id' >&2; exit 1")
    run = RunDir.create(tmp_path / "runs", "slurm")
    acted = act_on_verdict(_config(apply=True), run, "isolate", FINDINGS, ["n2"], show=False)
    assert acted is not None and acted.refused == "scontrol: error: Invalid user id"
    said = capsys.readouterr()
    assert "DRAINED" not in said.out and "RESUMED" not in said.out
    assert said.err.strip() == (
        "collbench: drain not applied: Slurm refused (scontrol: error: Invalid user id); draining and resuming "
        "nodes needs a Slurm operator (or root); the verdict stands (--drain prints the lines to run)"
    )
    assert len([call for call in calls(tmp_path) if call.startswith("scontrol")]) == 1, "same rights: tried once"
    steps = json.loads(run.drains_file.read_text())["steps"]
    assert [(s["done"], s["error"]) for s in steps] == [(False, "scontrol: error: Invalid user id")] * 2


@pytest.mark.parametrize(
    ("scripts", "words"),
    [
        ({"sinfo": "echo 'sinfo: error: Unable to contact slurm controller' >&2; exit 1"}, "sinfo failed: sinfo"),
        ({}, "Slurm is not installed here: sinfo not found on PATH"),
    ],
)
def test_nodes_slurm_cannot_say_cost_one_line_and_nothing_is_done(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    scripts: dict[str, str],
    words: str,
) -> None:
    _slurm(monkeypatch, tmp_path, scontrol="exit 0", **scripts)
    run = RunDir.create(tmp_path / "runs", "slurm")
    assert act_on_verdict(_config(apply=True), run, "check", FINDINGS, [], show=False) is None
    err = capsys.readouterr().err
    assert err.startswith(f"collbench: cannot read the nodes' states ({words}")
    assert err.strip().endswith("; nothing drained or resumed") and err.count("\n") == 1
    assert not any(call.startswith("scontrol") for call in calls(tmp_path)) and not run.drains_file.exists()
