"""Debian packages the suite installs when missing, as it installs Slurm and PostgreSQL: root and apt-get
install them; elsewhere a test that needs them is skipped, except in CI, where it must run and fails."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import pytest

APT_LOCK = "/var/lock/collbench-apt.lock"
"""Held around every apt-get of the suite's (tests/cluster/up.sh takes it with flock(1)): the suite's two
streams (tests/__main__.py) may install at the same moment, and a second apt-get beside one running fails on
dpkg's own lock instead of waiting."""


@contextmanager
def apt_lock() -> Iterator[None]:
    with open(APT_LOCK, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def install(packages: Sequence[str]) -> None:
    """apt-get install `packages` (without recommends), updating the lists first only when that fails."""
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    command = ["apt-get", "install", "-y", "-q", "--no-install-recommends", *packages]
    with apt_lock():
        if subprocess.run(command, env=env, capture_output=True, check=False).returncode == 0:
            return
        subprocess.run(["apt-get", "update", "-q"], env=env, capture_output=True, check=False)
        done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.fail(f"apt-get install {' '.join(packages)} failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")


def need_tools(tools: Sequence[str], packages: Sequence[str], what: str) -> None:
    """Every one of `tools` on the PATH, installing Debian's `packages` when one is missing. `what`: the
    tests that need them, for the line that says why they cannot run."""
    if all(shutil.which(tool) for tool in tools):
        return
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        reason = f"{', '.join(tools)} missing, and installing Debian's {', '.join(packages)} needs root and apt-get"
        if os.environ.get("CI"):
            pytest.fail(f"{what} must run in CI, but: {reason}")
        pytest.skip(reason)
    install(packages)
    missing = [tool for tool in tools if shutil.which(tool) is None]
    assert not missing, f"{missing} still missing after apt-get install {' '.join(packages)}"
