"""Helpers shared by the test packages: running the real `collbench` command."""

from __future__ import annotations

import json
import subprocess
import sys
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


def collbench(*args: str, cwd: Path, timeout: float = 300) -> CommandResult:
    """Run `collbench ARGS` as a user would, in a fresh interpreter."""
    proc = subprocess.run(
        [sys.executable, "-m", "jobs.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    return CommandResult(proc.returncode, proc.stdout, proc.stderr)


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    return tmp_path
