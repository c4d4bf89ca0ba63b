"""`collbench config [SECTION]`: the keys a user can set, from the schema; and the pointer to it at the end of
`run --help` and `submit --help`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jobs.cli.config import POINTER
from jobs.cli.main import main
from jobs.config.keys import all_keys, section_names
from tests.conftest import collbench


def test_lists_every_key(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config"]) == 0
    out = capsys.readouterr().out
    for key in all_keys():
        assert f"  {key.name}: " in out


def test_one_section(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "bench"]) == 0
    out = capsys.readouterr().out
    assert "bench.timer: auto | loop | per_call = auto" in out
    assert "bench.max_bytes: size = 4M" in out
    assert "slurm.partition" not in out and "ranks:" not in out


def test_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "slurm", "--format", "json"]) == 0
    keys = json.loads(capsys.readouterr().out)
    assert {key["section"] for key in keys} == {"slurm"}
    requeue = next(key for key in keys if key["key"] == "slurm.requeue")
    assert requeue["default"] is False and requeue["type"] == "bool" and "--requeue" in requeue["doc"]


def test_unknown_section_is_exit_2_with_one_line(workdir: Path) -> None:
    # as a user runs it: a fresh interpreter, the real entry point
    result = collbench("config", "benhc", cwd=workdir)
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "'benhc'" in lines[0] and ", ".join(section_names()) in lines[0]


@pytest.mark.parametrize("command", ["run", "submit"])
def test_run_and_submit_help_end_pointing_at_config(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main([command, "--help"])
    assert done.value.code == 0
    assert capsys.readouterr().out.strip().splitlines()[-1] == POINTER


def test_format_table_is_the_listing_and_text_its_old_name(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "bench"]) == 0
    default = capsys.readouterr().out
    assert main(["config", "bench", "--format", "table"]) == 0
    assert capsys.readouterr().out == default
    assert main(["config", "bench", "--format", "text"]) == 0
    assert capsys.readouterr().out == default
