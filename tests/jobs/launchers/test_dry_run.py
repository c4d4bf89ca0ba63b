"""A dry run refuses what the real start would refuse (jobs/launchers/base.py `check_offline`), short of
asking Slurm or connecting to the history: a history URL with a password or an unknown scheme, an SQLite
history whose directory does not exist (unless history.create_dir), an output_dir that cannot be written.
One line, exit 2, nothing created; and the real start refuses the same before anything runs or is
submitted. No cluster is needed: these refusals come before Slurm is asked anything."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import CommandResult, collbench

DRY_RUNS = {
    "run local": ["run", "--dry-run"],
    "run slurm": ["run", "--config", "testcluster", "--dry-run"],
    "submit": ["submit", "--config", "testcluster", "--dry-run"],
    "isolate": ["isolate", "--config", "testcluster", "nodes=3", "--dry-run"],
}
BAD_URLS = {
    "postgresql://u:pw@h/db": "history.url: a password in the URL would land in config.yaml",
    "mysql://x/y": "history.url: unknown scheme 'mysql'; allowed: sqlite:///PATH or postgresql://USER@HOST[:PORT]/DB",
}


def _one_line_refusal(result: CommandResult, says: str) -> None:
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("collbench: error: ") and says in lines[0], result.stderr


@pytest.mark.parametrize("url", BAD_URLS)
@pytest.mark.parametrize("command", DRY_RUNS)
def test_a_history_url_the_real_run_refuses_is_refused_by_the_dry_run(command: str, url: str, tmp_path: Path) -> None:
    result = collbench(*DRY_RUNS[command], f"history.url={url}", cwd=tmp_path)
    _one_line_refusal(result, BAD_URLS[url])
    assert list(tmp_path.iterdir()) == [], "a dry run creates nothing"


def test_every_node_count_of_a_sweep_s_dry_run_is_checked(tmp_path: Path) -> None:
    result = collbench(
        "scale", "--config", "testcluster", "nodes=1..2", "--dry-run", "history.url=mysql://x/y", cwd=tmp_path
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines() == [f"collbench: error: {BAD_URLS['mysql://x/y']}"]
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("command", ["run local", "run slurm", "submit"])
def test_a_history_directory_that_does_not_exist_is_refused_by_the_dry_run(command: str, tmp_path: Path) -> None:
    file = tmp_path / "histroy" / "history.sqlite"
    result = collbench(*DRY_RUNS[command], f"history.url=sqlite:///{file}", cwd=tmp_path)
    _one_line_refusal(result, f"history sqlite:///{file}: its directory {str(file.parent)!r} does not exist")
    allowed = collbench(*DRY_RUNS[command], f"history.url=sqlite:///{file}", "history.create_dir=true", cwd=tmp_path)
    assert allowed.returncode == 0, allowed.stderr
    assert list(tmp_path.iterdir()) == [], "a dry run creates neither the directory nor the history"


@pytest.mark.parametrize("command", ["run local", "run slurm"])
def test_with_recording_off_the_history_is_not_checked_by_either(command: str, tmp_path: Path) -> None:
    result = collbench(*DRY_RUNS[command], "history.url=mysql://x/y", "history.record=false", cwd=tmp_path)
    assert result.returncode == 0, result.stderr


def test_an_output_dir_that_cannot_be_written_is_refused_by_the_dry_run(tmp_path: Path) -> None:
    (tmp_path / "taken").write_text("")
    result = collbench(*DRY_RUNS["submit"], f"output_dir={tmp_path / 'taken'}", cwd=tmp_path)
    _one_line_refusal(result, "is not a directory")


@pytest.mark.parametrize(
    "command", [["run", "bench.max_bytes=4K"], ["submit", "--config", "testcluster"]], ids=["run", "submit"]
)
def test_the_real_start_refuses_a_missing_history_directory_before_anything_runs(
    command: list[str], tmp_path: Path
) -> None:
    file = tmp_path / "histroy" / "history.sqlite"
    result = collbench(*command, f"history.url=sqlite:///{file}", f"output_dir={tmp_path / 'runs'}", cwd=tmp_path)
    _one_line_refusal(result, f"history sqlite:///{file}: its directory {str(file.parent)!r} does not exist")
    assert list(tmp_path.iterdir()) == [], "no run directory, no history: nothing ran, nothing was submitted"
