"""Opening the history: the URL checked, an SQLite file's place checked (its directory must exist, unless it
is collbench's own default or the caller may create it; a reader never creates a history), the engine made
for its dialect, the schema migrated to this collbench's head (Alembic, in the same transaction), or
refused with one line."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from alembic import command
from alembic.config import Config as AlembicConfig
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from alembic.util.exc import CommandError
from sqlalchemy import Connection, Engine, create_engine, event, func, select
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, SQLAlchemyError

from jobs.config.schema import ConfigError

if TYPE_CHECKING:
    from jobs.config.model import Config

MIGRATIONS = Path(__file__).resolve().parent / "migrations"
SCHEMES = {"sqlite": "sqlite+pysqlite", "postgresql": "postgresql+psycopg"}
ALLOWED = "sqlite:///PATH or postgresql://USER@HOST[:PORT]/DB"
SQLITE_BUSY_S = 60.0
"""How long an SQLite writer waits for another's lock before giving up."""
PG_CONNECT_S = 5
MIGRATION_LOCK = 0x636F6C6C
"""PostgreSQL advisory lock key ('coll') held while the schema is checked and upgraded."""


class HistoryError(ConfigError):
    """The history cannot be used as given: one line; exit 2 where the user typed it."""


class HistoryUnavailable(HistoryError):
    """The database did not answer, or refused us."""


class NoSuchHistory(HistoryError):
    """A reader was pointed at an SQLite file that is not there: nothing was ever recorded at that path."""


def default_sqlite() -> Path:
    data = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data) / "collbench" / "history.sqlite"


def resolve_history_url(given: str | None, config: Config | Callable[[], Config] | None = None) -> str:
    """The history's URL, worked out here alone: `given` (the --db flag) when said; else the config's
    history.url (`config` may be a callable, so that a config is loaded only when no URL was given); and
    an empty one, the default, is the SQLite file `default_sqlite()`."""
    if given is None and config is not None:
        given = (config() if callable(config) else config).history.url
    return given or f"sqlite:///{default_sqlite()}"


def parse_url(history_url: str) -> URL:
    """history.url as a SQLAlchemy URL with its driver; never one that carries a password."""
    history_url = resolve_history_url(history_url)
    try:
        url = make_url(history_url)
    except ArgumentError:
        raise HistoryError(f"history.url: {history_url!r} is not a database URL; allowed: {ALLOWED}") from None
    backend = url.get_backend_name()
    if backend not in SCHEMES or url.drivername not in (backend, SCHEMES[backend]):
        raise HistoryError(f"history.url: unknown scheme {url.drivername!r}; allowed: {ALLOWED}")
    if url.password is not None:
        raise HistoryError(
            "history.url: a password in the URL would land in config.yaml and the process listing; "
            "leave it out and set PGPASSWORD or ~/.pgpass"
        )
    if backend == "sqlite" and not url.database:
        raise HistoryError(f"history.url: {history_url!r} names no file; allowed: {ALLOWED}")
    return url.set(drivername=SCHEMES[backend])


def describe(url: URL) -> str:
    """The URL as a user writes it (sqlite:///PATH, postgresql://USER@HOST/DB: no driver, no password)."""
    return url.set(drivername=url.get_backend_name()).render_as_string(hide_password=True)


def sqlite_file(url: URL) -> Path | None:
    """The file an SQLite URL names, as SQLite opens it (relative to the working directory unless absolute);
    None for a server."""
    return Path(url.database or "") if url.get_backend_name() == "sqlite" else None


def check_place(url: URL, *, create_dir: bool = False, must_exist: bool = False) -> None:
    """Refuse (HistoryError, one line naming the path) an SQLite history that cannot be where it is said to
    be: with `must_exist`, a file that is not there; otherwise a directory that does not exist, unless
    `create_dir` or the file is collbench's own default (whose directory is always made). Creates nothing."""
    file = sqlite_file(url)
    if file is None:
        return
    where = describe(url)
    if must_exist:
        if not file.is_file():
            raise NoSuchHistory(
                f"history {where}: no such history (nothing recorded there yet); check --db or history.url"
            )
        return
    folder = file.parent
    if folder.is_dir() or create_dir or _is_default(file):
        return
    what = "is not a directory" if folder.exists() else "does not exist"
    raise HistoryError(
        f"history {where}: its directory {str(folder)!r} {what} (a mistyped path?); "
        "create it, or set history.create_dir=true to have collbench create it"
    )


def _is_default(file: Path) -> bool:
    return file.absolute() == default_sqlite().absolute()


def make_engine(url: URL) -> Engine:
    if url.get_backend_name() == "sqlite":
        engine = create_engine(url, connect_args={"timeout": SQLITE_BUSY_S})
        _serialise_sqlite_writers(engine)
        return engine
    return create_engine(url, connect_args={"connect_timeout": PG_CONNECT_S}, pool_pre_ping=True)


def _serialise_sqlite_writers(engine: Engine) -> None:
    """pysqlite begins a transaction only at the first write, so two writers that both read first would
    deadlock on the upgrade; BEGIN IMMEDIATE takes the write lock at once and the other waits (busy timeout)."""

    @event.listens_for(engine, "connect")
    def _autocommit_driver(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None

    @event.listens_for(engine, "begin")
    def _begin_immediate(connection: Connection) -> None:
        connection.exec_driver_sql("BEGIN IMMEDIATE")


@dataclass(frozen=True)
class History:
    """An open history: `with open_history(history_url) as history:` closes it (its engine's connections)
    however the block ends."""

    engine: Engine
    where: str
    """The URL without a password, for messages."""

    def close(self) -> None:
        self.engine.dispose()

    def __enter__(self) -> History:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def _stderr(line: str) -> None:
    print(f"collbench: {line}", file=sys.stderr, flush=True)


def open_history(
    history_url: str,
    *,
    must_exist: bool = False,
    create_dir: bool = False,
    say: Callable[[str], None] = _stderr,
) -> History:
    """The history at `history_url` (resolve_history_url's; empty: the default SQLite file), its schema
    upgraded to this collbench's; HistoryError otherwise. A reader passes `must_exist`: a missing SQLite
    file is then NoSuchHistory, and nothing is created. Otherwise a new SQLite file is made where its
    directory exists (or is made: `create_dir`, history.create_dir; always for the default file), and
    `say` tells so once: "history: new history at PATH"."""
    url = parse_url(history_url)
    check_place(url, create_dir=create_dir, must_exist=must_exist)
    file = sqlite_file(url)
    new = file is not None and not file.exists()
    if file is not None and new:
        file.parent.mkdir(parents=True, exist_ok=True)
    history = _opened(url)
    if file is not None and new and file.exists():
        say(f"history: new history at {file.absolute()}")
    return history


def _opened(url: URL) -> History:
    engine = make_engine(url)
    where = describe(url)
    try:
        with engine.begin() as connection:
            _migrate(connection, where)
    except DBAPIError as error:
        engine.dispose()
        raise HistoryUnavailable(f"history {where}: {first_line(error.orig)}") from None
    except SQLAlchemyError as error:
        engine.dispose()
        raise HistoryUnavailable(f"history {where}: {first_line(error)}") from None
    return History(engine, where)


def first_line(error: BaseException | None) -> str:
    text = str(error).strip() or type(error).__name__
    return text.splitlines()[0].strip()


def _migrate(connection: Connection, where: str) -> None:
    if connection.dialect.name == "postgresql":
        connection.execute(select(func.pg_advisory_xact_lock(MIGRATION_LOCK)))
    script = ScriptDirectory(str(MIGRATIONS))
    current = MigrationContext.configure(connection).get_current_revision()
    head = script.get_current_head()
    if current == head:
        return
    if current is not None and not _known(script, current):
        raise HistoryError(
            f"history {where}: its schema is revision {current}, newer than this collbench knows ({head}); "
            "use a newer collbench"
        )
    config = AlembicConfig()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["connection"] = connection
    command.upgrade(config, "head")


def _known(script: ScriptDirectory, revision: str) -> bool:
    try:
        return script.get_revision(revision) is not None
    except CommandError:
        return False


def schema_revision(connection: Connection) -> str | None:
    return MigrationContext.configure(connection).get_current_revision()
