"""The config's `history` section: where every run is recorded (jobs.history)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(kw_only=True, slots=True)
class HistorySettings:
    url: str = ""
    """The results history: empty for an SQLite file, $XDG_DATA_HOME/collbench/history.sqlite
    (~/.local/share/collbench/history.sqlite); sqlite:///PATH for another file; or
    postgresql://USER@HOST:PORT/DB for a team's server. Never a password in it: libpq takes it from
    PGPASSWORD or ~/.pgpass."""
    create_dir: bool = False
    """Create the directory of an sqlite:///PATH history when it does not exist; false: a missing directory is
    bad input (a mistyped path would otherwise start an empty history). The default file's directory is
    always created."""
    record: bool = True
    """Record the run in the history when it ends (by the wait or local run that sees it end)."""
    cluster: str = ""
    """The cluster's name in the history; empty: Slurm's SLURM_CLUSTER_NAME as rank 0 saw it, else local."""
