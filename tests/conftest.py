"""Helpers shared by the test packages: running the real `collbench` command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent


@dataclass
class CommandResult:
    returncode: int
    stdout: str
    stderr: str

    def run_dir(self) -> Path:
        for line in self.stdout.splitlines():
            if line.startswith("# Run directory: "):
                return Path(line.removeprefix("# Run directory: "))
        raise AssertionError(f"no run directory in output:\n{self.stdout}\n{self.stderr}")


def collbench(*args: str, cwd: Path, timeout: float = 300, env: dict[str, str] | None = None) -> CommandResult:
    """Run `collbench ARGS` as a user would, in a fresh interpreter."""
    proc = subprocess.run(
        [sys.executable, "-m", "jobs.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    return CommandResult(proc.returncode, proc.stdout, proc.stderr)


def until(predicate: Callable[[], Any], timeout: float, what: str) -> Any:
    """The predicate's first true value, polled; a failed assertion naming `what` past the timeout."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out after {timeout:g} s waiting for {what}"
        time.sleep(0.3)


def startup_s(*prefix: str, cwd: Path, env: dict[str, str] | None = None) -> float:
    """What starting `collbench` costs here and now, before a command starts its own clock: a fresh
    interpreter that imports the CLI and parses `check --help` (behind `prefix`, e.g. srun, when given).
    A bound on a whole command's wall time is its budget plus this, measured under the same load."""
    started = time.monotonic()
    proc = subprocess.run(
        [*prefix, sys.executable, "-m", "jobs.cli", "check", "--help"],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return time.monotonic() - started


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    return tmp_path


CLUSTER_DIR = REPO / "tests" / "cluster"
CLUSTER_LAB = Path("/tmp/collbench-slurm")
CLUSTER_NODES = 6
"""tests/cluster/up.sh's default NNODES: partition debug is n[1-3], partition wide n[1-6]."""


@dataclass(frozen=True)
class SlurmCluster:
    slurm_conf: Path
    nodes: tuple[str, ...]
    """The default partition (debug): what most tests submit to."""
    wide_nodes: tuple[str, ...] = ()
    """Partition `wide`, every node of the cluster: what collbench isolate's tests submit to."""

    def env(self) -> dict[str, str]:
        import os

        return {**os.environ, "SLURM_CONF": str(self.slurm_conf)}


def _cannot_run_cluster() -> str | None:
    import os
    import shutil

    if os.geteuid() != 0:
        return "the test Slurm cluster needs root (network namespaces, apt, slurmd)"
    for tool in ("ip", "nsenter", "unshare", "apt-get"):
        if shutil.which(tool) is None:
            return f"the test Slurm cluster needs {tool}, which is not installed"
    if not Path("/proc/self/ns/net").exists():
        return "this kernel has no network namespaces"
    return None


def _cluster_is_up() -> bool:
    pid_file = CLUSTER_LAB / "run" / "slurmctld.pid"
    if not pid_file.exists():
        return False
    return Path(f"/proc/{pid_file.read_text().strip()}").exists()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A test on the Slurm cluster is marked `slurm`: `python -m tests` runs the marked ones in a stream of their
    own, and an unmarked one would start the cluster a second time beside them (tests/__main__.py)."""
    unmarked = [
        item.nodeid
        for item in items
        if "slurm_cluster" in getattr(item, "fixturenames", ()) and item.get_closest_marker("slurm") is None
    ]
    if unmarked:
        raise pytest.UsageError(f"uses the Slurm cluster but is not marked slurm: {', '.join(unmarked)}")


@pytest.fixture(scope="session")
def slurm_cluster() -> Any:
    """The project's real multi-node Slurm cluster; started here and stopped after, unless it was already up.
    The session holds the cluster's lock throughout, and finds the fabric as up.sh made it."""
    reason = _cannot_run_cluster()
    if reason:
        if os.environ.get("CI"):
            pytest.fail(f"Slurm tests must run in CI, but: {reason}")
        pytest.skip(reason)
    with cluster_lock():
        was_up = _cluster_is_up()
        subprocess.run(
            [str(CLUSTER_DIR / "up.sh")],
            check=True,
            env={**os.environ, "LAB": str(CLUSTER_LAB), "NNODES": str(CLUSTER_NODES)},
        )
        from tests.cluster import fabric

        if removed := fabric.clear_leftovers():
            warnings.warn("the test cluster kept a killed test's shaping, removed: " + "; ".join(removed), stacklevel=1)
        wide = tuple(f"n{i}" for i in range(1, CLUSTER_NODES + 1))
        yield SlurmCluster(slurm_conf=CLUSTER_LAB / "etc" / "slurm.conf", nodes=("n1", "n2", "n3"), wide_nodes=wide)
        if not was_up:
            subprocess.run([str(CLUSTER_DIR / "down.sh")], check=False, env={**os.environ, "LAB": str(CLUSTER_LAB)})


CLUSTER_LOCK = CLUSTER_LAB.with_name("collbench-slurm.lock")
"""Held by the pytest session that has the test cluster. Two sessions on one machine shared it unawares: one
slowed n5 for its test while the other's healthy check measured it (and cordoned it), and the first to end
would stop the cluster under the other. The second now waits for the first."""


@contextmanager
def cluster_lock(path: Path = CLUSTER_LOCK) -> Iterator[None]:
    """`path` locked for the block, with this process's pid in it; where another holds it, a line on stderr
    that says who, and a wait for it."""
    import fcntl

    with path.open("a+") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.seek(0)
            print(f"# waiting for the test cluster: {lock.read().strip() or 'another session'} holds {path}",
                  file=sys.stderr, flush=True)  # fmt: skip
            fcntl.flock(lock, fcntl.LOCK_EX)
        lock.truncate(0)
        lock.write(f"pytest pid {os.getpid()}\n")
        lock.flush()
        yield


@pytest.fixture(autouse=True, scope="session")
def _history_of_the_tests(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Runs the tests start record into a history of the session's own (history.url's default lives
    under XDG_DATA_HOME), never into the user's."""
    import os

    before = os.environ.get("XDG_DATA_HOME")
    os.environ["XDG_DATA_HOME"] = str(tmp_path_factory.mktemp("xdg-data"))
    yield
    if before is None:
        os.environ.pop("XDG_DATA_HOME", None)
    else:
        os.environ["XDG_DATA_HOME"] = before


@pytest.fixture(scope="session")
def postgres_server() -> Any:
    """A real PostgreSQL server of the session's own (tests/postgres/up.sh: Debian's postgresql installed
    when missing, initdb into a temporary directory, a unix socket only); stopped after. Yields its URL
    base, postgresql://collbench@/?host=SOCKET_DIR, to which a test adds a database name."""
    import os

    from tests.postgres import PostgresServer, cannot_run_postgres

    reason = cannot_run_postgres()
    if reason:
        if os.environ.get("CI"):
            pytest.fail(f"PostgreSQL tests must run in CI, but: {reason}")
        pytest.skip(reason)
    server = PostgresServer.start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def browser() -> Any:
    """Headless Chromium from Debian's chromium package (installed when missing), driven by Playwright;
    one for the session (tests/browser)."""
    import os

    from tests.browser import cannot_run_browser, chromium

    reason = cannot_run_browser()
    if reason:
        if os.environ.get("CI"):
            pytest.fail(f"browser tests must run in CI, but: {reason}")
        pytest.skip(reason)
    with chromium() as launched:
        yield launched
