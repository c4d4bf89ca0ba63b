"""Opening the history (jobs/history/database.py): a reader never creates a database, a history path whose
directory does not exist is refused unless the caller may create it, collbench's own default file always
finds its directory, and a new SQLite file is said once."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobs.history.database import HistoryError, NoSuchHistory, default_sqlite, open_history
from jobs.history.queries import Filters, list_runs


def test_a_reader_is_told_there_is_no_such_history_and_nothing_is_created(tmp_path: Path) -> None:
    file = tmp_path / "history.sqlite"
    with pytest.raises(NoSuchHistory) as refused:
        open_history(f"sqlite:///{file}", must_exist=True)
    assert str(refused.value) == (
        f"history sqlite:///{file}: no such history (nothing recorded there yet); check --db or history.url"
    )
    assert not file.exists()


def test_a_reader_of_a_missing_directory_creates_neither_it_nor_the_file(tmp_path: Path) -> None:
    file = tmp_path / "typo" / "history.sqlite"
    with pytest.raises(NoSuchHistory):
        open_history(f"sqlite:///{file}", must_exist=True, create_dir=True)
    assert not file.parent.exists()


def test_a_reader_of_the_default_history_creates_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    with pytest.raises(NoSuchHistory, match="no such history"):
        open_history("", must_exist=True)
    assert not (tmp_path / "xdg").exists()


def test_a_reader_opens_a_history_that_is_there(history_url: str) -> None:
    said: list[str] = []
    open_history(history_url, say=said.append).close()  # a writer made it (a new SQLite file, or upgraded the server's)
    assert len(said) == (1 if history_url.startswith("sqlite") else 0)
    with open_history(history_url, must_exist=True, say=_never) as history:
        assert list_runs(history, Filters()) == []
        assert history.where.split(":")[0] in ("sqlite", "postgresql"), "the URL as a user writes it, no driver"


def test_a_missing_directory_is_bad_input_naming_the_path(tmp_path: Path) -> None:
    file = tmp_path / "histroy" / "history.sqlite"
    with pytest.raises(HistoryError) as refused:
        open_history(f"sqlite:///{file}")
    message = str(refused.value)
    assert len(message.splitlines()) == 1
    assert f"sqlite:///{file}" in message and "does not exist" in message and "history.create_dir=true" in message
    assert not file.parent.exists()


def test_a_directory_that_is_a_file_is_bad_input(tmp_path: Path) -> None:
    (tmp_path / "plain").write_text("")
    with pytest.raises(HistoryError, match="is not a directory"):
        open_history(f"sqlite:///{tmp_path / 'plain' / 'history.sqlite'}")


def test_create_dir_makes_the_directory_and_the_new_file_is_said_once(tmp_path: Path) -> None:
    file = tmp_path / "team" / "nightly" / "history.sqlite"
    said: list[str] = []
    with open_history(f"sqlite:///{file}", create_dir=True, say=said.append):
        pass
    assert file.is_file()
    assert said == [f"history: new history at {file}"]
    with open_history(f"sqlite:///{file}", say=said.append) as history:
        assert history.where == f"sqlite:///{file}", "the URL as a user writes it, without the driver"
    assert len(said) == 1, "an existing history is opened without a word"


def test_the_default_history_s_directory_is_always_made(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    said: list[str] = []
    with open_history("", say=said.append):
        pass
    assert default_sqlite() == tmp_path / "xdg" / "collbench" / "history.sqlite"
    assert default_sqlite().is_file()
    assert said == [f"history: new history at {default_sqlite()}"]


def test_a_relative_path_is_checked_where_sqlite_opens_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(HistoryError, match="'runs' does not exist"):
        open_history("sqlite:///runs/history.sqlite")
    said: list[str] = []
    with open_history("sqlite:///history.sqlite", say=said.append):
        pass
    assert (tmp_path / "history.sqlite").is_file()
    assert said == [f"history: new history at {tmp_path / 'history.sqlite'}"]


def _never(line: str) -> None:
    raise AssertionError(f"said {line!r}")
