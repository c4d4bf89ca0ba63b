"""The suite's own PostgreSQL server, as tests/cluster is its own Slurm cluster: Debian's postgresql
installed when missing, a cluster initdb'd into a temporary directory as the postgres user, listening on
a unix socket only (no port to collide with), password authentication (scram) so that a wrong password
is a real refusal. Stopped and removed after the session."""

from __future__ import annotations

import glob
import os
import secrets
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import psycopg
from psycopg import sql

USER = "collbench"
PASSWORD = "collbench-test-" + secrets.token_hex(4)
ADMIN_PASSWORD = "admin-" + secrets.token_hex(4)
PACKAGE = "postgresql"


def _bin_dir() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(found[-1]).parent if found else None


def cannot_run_postgres() -> str | None:
    if _bin_dir() is None and os.geteuid() != 0:
        return "PostgreSQL is not installed and installing it needs root"
    if os.geteuid() != 0:
        return "the test PostgreSQL server runs as the postgres user, which needs root"
    return None


def _install() -> Path:
    from tests.debian import install

    install([PACKAGE])
    found = _bin_dir()
    assert found is not None, "apt-get installed postgresql, but no initdb under /usr/lib/postgresql"
    return found


def _as_postgres(*argv: str) -> None:
    subprocess.run(["runuser", "-u", "postgres", "--", *argv], check=True, capture_output=True, timeout=120)


@dataclass
class PostgresServer:
    lab: Path
    bin_dir: Path

    @property
    def socket_dir(self) -> str:
        return str(self.lab)

    @classmethod
    def start(cls) -> PostgresServer:
        bin_dir = _bin_dir() or _install()
        lab = Path(tempfile.mkdtemp(prefix="collbench-pg-"))
        shutil.chown(lab, "postgres", "postgres")
        pwfile = lab / "pw"
        pwfile.write_text(ADMIN_PASSWORD + "\n")
        shutil.chown(pwfile, "postgres", "postgres")
        server = cls(lab, bin_dir)
        _as_postgres(str(bin_dir / "initdb"), "-D", str(lab / "data"), "-U", "postgres", f"--pwfile={pwfile}",
                     "--auth=scram-sha-256", "-E", "UTF8", "--no-sync")  # fmt: skip
        options = f"-k {lab} -c listen_addresses= -c fsync=off -c max_connections=60"
        _as_postgres(
            str(bin_dir / "pg_ctl"), "-D", str(lab / "data"), "-o", options, "-l", str(lab / "log"), "-w", "start"
        )
        with server.admin() as connection:
            connection.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(sql.Identifier(USER), PASSWORD))
        return server

    def admin(self) -> psycopg.Connection[tuple[object, ...]]:
        return psycopg.connect(host=self.socket_dir, user="postgres", password=ADMIN_PASSWORD, dbname="postgres",
                               autocommit=True)  # fmt: skip

    def new_database(self) -> str:
        """A new empty database owned by USER; its URL, without the password (PGPASSWORD carries it)."""
        name = "history_" + secrets.token_hex(6)
        with self.admin() as connection:
            connection.execute(
                sql.SQL("CREATE DATABASE {} OWNER {}").format(sql.Identifier(name), sql.Identifier(USER))
            )
        return f"postgresql://{USER}@/{name}?host={self.socket_dir}"

    def stop(self) -> None:
        subprocess.run(["runuser", "-u", "postgres", "--", str(self.bin_dir / "pg_ctl"), "-D", str(self.lab / "data"),
                        "-m", "immediate", "stop"], capture_output=True, check=False)  # fmt: skip
        shutil.rmtree(self.lab, ignore_errors=True)
