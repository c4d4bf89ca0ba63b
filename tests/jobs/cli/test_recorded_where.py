"""`run` and `wait` say in one line on stderr where the run's end recorded it: recorded in the history at its
URL, already there, or not recorded because history.record is false; a new SQLite history is said once. On
SQLite and on the suite's own PostgreSQL server. (`history ingest` prints its own summary with the URL.)"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest

from jobs.config.model import load_config, to_yaml
from jobs.history.database import describe, parse_url
from jobs.rundir.layout import RunDir
from tests.conftest import CommandResult, collbench
from tests.jobs.rundir import synthetic
from tests.postgres import PASSWORD

SMALL = ["bench.ops=[all_reduce]", "bench.max_bytes=4K", "bench.warmup_iters=1", "bench.iters=2"]


@pytest.fixture(params=["sqlite", "postgresql"])
def history(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, str, dict[str, str]]:
    """(history.url, the URL as messages write it, the environment collbench runs in)."""
    env = dict(os.environ)
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'history.sqlite'}"
        return url, url, env
    server: Any = request.getfixturevalue("postgres_server")
    env["PGPASSWORD"] = PASSWORD  # libpq's own variable: never in the URL
    url = server.new_database()
    return url, describe(parse_url(url)), env  # its socket directory %-quoted, as SQLAlchemy writes a URL


def _ended_run(tmp_path: Path, *words: str) -> RunDir:
    """A run whose ranks all ended and whose end nobody has seen: the next `wait` ends it (and records it)."""
    run = synthetic.sweep_run(tmp_path / "runs")
    run.update_meta(job_id="gone")  # no process: the local launcher says it has ended
    cfg = load_config(None, ["ranks=2", "bench.ops=[all_reduce]", "bench.min_bytes=1K", "bench.max_bytes=4K", *words])
    run.config_file.write_text(to_yaml(cfg))
    return run


def _history_lines(result: CommandResult) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.startswith("collbench: history")]


def test_wait_says_where_it_recorded_the_run(history: tuple[str, str, dict[str, str]], tmp_path: Path) -> None:
    url, shown, env = history
    run = _ended_run(tmp_path, f"history.url={url}")
    result = collbench("wait", str(run.path), cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stderr
    new = [f"collbench: history: new history at {tmp_path / 'history.sqlite'}"] if url.startswith("sqlite") else []
    assert _history_lines(result) == [*new, f"collbench: history: recorded {run.run_id} in {shown}"]


def test_wait_says_the_run_was_in_the_history_already(history: tuple[str, str, dict[str, str]], tmp_path: Path) -> None:
    url, shown, env = history
    run = _ended_run(tmp_path, f"history.url={url}")
    ingested = collbench("history", "ingest", "--db", url, str(run.path), cwd=tmp_path, env=env)
    assert ingested.returncode == 0, ingested.stderr
    result = collbench("wait", str(run.path), cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stderr
    assert _history_lines(result) == [f"collbench: history: {run.run_id} already in the history at {shown}"]


def test_wait_says_nothing_was_recorded_when_recording_is_off(tmp_path: Path) -> None:
    run = _ended_run(tmp_path, f"history.url=sqlite:///{tmp_path / 'history.sqlite'}", "history.record=false")
    result = collbench("wait", str(run.path), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert _history_lines(result) == ["collbench: history: not recorded (history.record is false)"]
    assert not (tmp_path / "history.sqlite").exists()


def test_run_says_its_new_history_once_and_where_it_recorded_the_run(tmp_path: Path) -> None:
    file = tmp_path / "team" / "history.sqlite"
    words = [f"history.url=sqlite:///{file}", "history.create_dir=true", f"output_dir={tmp_path / 'runs'}", *SMALL]
    result = collbench("run", *words, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    found = re.search(r"run directory (\S+)", result.stderr)
    assert found, result.stderr
    run_id = Path(found.group(1)).name
    assert _history_lines(result) == [
        f"collbench: history: new history at {file}",
        f"collbench: history: recorded {run_id} in sqlite:///{file}",
    ]
