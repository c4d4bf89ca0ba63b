"""The run directory's records: every file collbench writes and reads back, as versioned dataclasses.

Each module holds the records of one concern and their Format (file name, version, upgrades); the
codec reads and writes them all. Import the modules themselves: this package imports nothing, so that
jobs.rundir.layout can use the run record without a cycle.
"""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    """`from jobs.rundir.records import load_run_config`, loaded on first use (it needs jobs.rundir.layout)."""
    if name == "load_run_config":
        from jobs.rundir.records.config import load_run_config

        return load_run_config
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
