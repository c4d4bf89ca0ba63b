"""The same history tests on both databases: an SQLite file, and a database of the suite's own
PostgreSQL server (tests/postgres)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.postgres import PASSWORD


@pytest.fixture(params=["sqlite", "postgresql"])
def history_url(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'history.sqlite'}"
    server = request.getfixturevalue("postgres_server")
    monkeypatch.setenv("PGPASSWORD", PASSWORD)  # libpq's own variable: never in the URL
    return server.new_database()
