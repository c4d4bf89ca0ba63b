"""Debian packages the suite installs when missing, as it installs Slurm and PostgreSQL: root and apt-get
install them; elsewhere a test that needs them is skipped, except in CI, where it must run and fails."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence

import pytest


def install(packages: Sequence[str]) -> None:
    """apt-get install `packages` (without recommends), updating the lists first only when that fails."""
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    command = ["apt-get", "install", "-y", "-q", "--no-install-recommends", *packages]
    if subprocess.run(command, env=env, capture_output=True, check=False).returncode != 0:
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
