"""A record collbench cannot read is bad input: one line naming the file and what this collbench reads,
exit 2, never a traceback; a run written before records carried a version still reads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import collbench
from tests.jobs.rundir.synthetic import sweep_run


def _set_version(path: Path, version: int | None) -> None:
    data = json.loads(path.read_text())
    if version is None:
        data.pop("version", None)
    else:
        data["version"] = version
    path.write_text(json.dumps(data))


@pytest.mark.parametrize("command", [["report"], ["status"], ["report", "--format", "json"]])
def test_a_newer_run_json_is_named_in_one_line(tmp_path: Path, command: list[str]) -> None:
    run = sweep_run(tmp_path / "runs")
    _set_version(run.meta_file, 99)
    result = collbench(*command, str(run.path), cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "run.json format 99 is newer than this collbench reads" in lines[0]


def test_a_damaged_status_is_named_with_its_file(tmp_path: Path) -> None:
    run = sweep_run(tmp_path / "runs")
    run.rank_status(1).write_text("{not json")
    result = collbench("report", str(run.path), cwd=tmp_path)
    assert "Traceback" not in result.stderr
    assert result.returncode == 1, result.stderr
    assert "rank-00001.json" in result.stderr + result.stdout


def test_a_run_json_without_a_version_reads_as_format_1(tmp_path: Path) -> None:
    run = sweep_run(tmp_path / "runs")
    _set_version(run.meta_file, None)
    result = collbench("report", str(run.path), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "all_reduce" in result.stdout
