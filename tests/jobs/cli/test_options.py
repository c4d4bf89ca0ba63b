"""One spelling per option across commands: a wrong spelling fails with that command's usage and the right one."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobs.cli.main import main


@pytest.mark.parametrize(
    ("argv", "command", "wrong", "meant"),
    [
        (["check", "--json", "d"], "check", "--json", "--output"),
        (["report", "RUN", "--json"], "report", "--json", "--format json"),
        (["history", "list", "--url", "sqlite:///x.db"], "history list", "--url", "--db"),
        (["report", "RUN", "--outdir", "runs"], "report", "--outdir", "--output-dir"),
        (["isolate", "wait", "RUN", "--out-dir", "runs"], "isolate", "--out-dir", "--output-dir"),
    ],
)
def test_a_wrong_spelling_names_the_right_one_in_one_line(
    argv: list[str], command: str, wrong: str, meant: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith(f"usage: collbench {command}")  # the command's own usage, not the top level's
    assert err[-1].startswith(f"collbench {command}: {wrong} is not an option here; allowed: ")
    assert err[-1].endswith(f"; did you mean {meant}?")


def test_an_option_is_never_taken_for_an_abbreviation_of_another(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", "RUN", "--output-d", "runs"]) == 2  # not silently --output-dir
    assert "--output-d is not an option here" in capsys.readouterr().err


def test_the_old_spellings_stay_as_aliases(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for spelling in ("--out", "--output"):  # parsed alike; then refused, as outside an allocation it must be
        assert main(["check", spelling, str(tmp_path), "--dry-run"]) == 2
        assert capsys.readouterr().err.startswith("collbench: error: not inside a Slurm allocation")


def test_output_dir_is_the_runs_directory_on_the_commands_that_start_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "--output-dir", str(tmp_path / "elsewhere"), "--dry-run"]) == 0
    assert f"output_dir: {tmp_path / 'elsewhere'}" in capsys.readouterr().out


def test_version_and_the_exit_codes_in_the_top_level_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out.startswith("collbench ")
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "4 (check only)" in " ".join(capsys.readouterr().out.split())
