"""`collbench report RUN` exits with the same status whatever it prints: an isolate run's verdict counts in
JSON and CSV as in the table, and as `isolate report` says it (issue 39)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jobs.cli.main import main
from tests.jobs.rundir.synthetic import isolate_run


@pytest.mark.parametrize("fmt", ["table", "json", "csv"])
def test_every_format_of_an_isolate_run_exits_as_isolate_report_does(
    fmt: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = isolate_run(tmp_path, nodes=4, slow_link=(1, 2))
    assert main(["isolate", "report", str(run.path)]) == 1, "the slow link n2-n3 is named: exit 1"
    capsys.readouterr()
    assert main(["report", str(run.path), "--format", fmt]) == 1
    printed = capsys.readouterr().out
    if fmt == "json":
        assert json.loads(printed)["run_id"] == run.run_id, "stdout stays one JSON document: no verdict text in it"


def test_a_healthy_isolate_run_exits_0_in_every_format(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = isolate_run(tmp_path, nodes=4, slow_link=(-1, -1))
    codes = {fmt: main(["report", str(run.path), "--format", fmt]) for fmt in ("table", "json", "csv")}
    assert codes == {"table": 0, "json": 0, "csv": 0}, capsys.readouterr().err


@pytest.mark.parametrize("command", [["report"], ["isolate", "report"]])
def test_a_slurm_run_is_read_where_no_slurm_is_installed(
    command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run directory copied off the cluster: the readers render its verdict from the directory and say Slurm
    could not tell the job's state now (they exited 3 on squeue missing, the verdict unread)."""
    run = isolate_run(tmp_path, nodes=4, slow_link=(1, 2))
    (tmp_path / "bin").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    assert main([*command, str(run.path)]) == 1, "the slow link n2-n3 is named: exit 1"
    said = capsys.readouterr()
    assert "squeue not found on PATH" in said.err and f"the job's state is what {run.path} kept" in said.err
    assert "n2" in said.out and "n3" in said.out
