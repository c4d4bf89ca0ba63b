"""The run directory's write primitives, in one module: a file replaced whole, a file created once by
exactly one of any number of racing writers, JSON written so that no reader sees half of it.

The readers (jobs.inspect, jobs.fabric, jobs.isolate) never import this module (import-linter's "no reader
writes" contract): whoever writes a run's files imports it (the ranks, the launchers, jobs.ending, the
records' own Format.write in jobs.rundir.records.codec).
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any


def _scratch(path: Path) -> Path:
    """A temporary name of this process and thread alone, beside `path` (same filesystem: renames are atomic)."""
    return path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")


def write_atomic(path: Path, data: bytes) -> None:
    tmp = _scratch(path)
    tmp.write_bytes(data)
    os.replace(tmp, path)


def create_exclusive(path: Path, data: bytes) -> bool:
    """Link a whole temporary file into place: exactly one of any number of writers wins, and no reader
    sees a partial file. False when `path` already exists (then nothing is written at all)."""
    if path.exists():
        return False
    tmp = _scratch(path)
    tmp.write_bytes(data)
    try:
        os.link(tmp, path)
    except FileExistsError:
        return False
    finally:
        tmp.unlink()
    return True


def write_json_atomic(path: Path, data: dict[str, Any]) -> None:
    """Write JSON so that a reader never sees half a file (the records' own atomic write)."""
    write_atomic(path, (json.dumps(data, indent=1, sort_keys=True) + "\n").encode())
