"""Slurm's commands as small shell scripts on a PATH of their own, for the code that runs them: each logs its
arguments to calls.log (one line per call, the command first) and then runs its script. Real processes, run
by slurm.runner as Slurm's would be; no real cluster."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

BASICS = ("sleep", "mkdir", "cat", "true")
"""What the scripts may call besides the shell's builtins: linked into their PATH, where Slurm's own are not."""


def fake_commands(folder: Path, **scripts: str) -> dict[str, str]:
    """An environment whose PATH holds only `folder`/bin: one script per keyword (`sinfo="echo n1"`) and the
    BASICS (this machine's own Slurm commands are not on it); calls.log in `folder` records every call."""
    bin_dir = folder / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    log = folder / "calls.log"
    for name, script in scripts.items():
        path = bin_dir / name
        path.write_text(f'#!/bin/sh\necho "{name} $*" >> {log}\n{script}\n', encoding="utf-8")
        path.chmod(path.stat().st_mode | stat.S_IEXEC)
    for basic in BASICS:
        found = shutil.which(basic)
        if found and not (bin_dir / basic).exists():
            (bin_dir / basic).symlink_to(found)
    return {**os.environ, "PATH": str(bin_dir)}


def calls(folder: Path) -> list[str]:
    """Every call the fake commands in `folder` received, in order."""
    log = folder / "calls.log"
    return log.read_text(encoding="utf-8").splitlines() if log.exists() else []
