"""Local rank 0's snapshots of its node's RDMA ports and interfaces (jobs.fabric.ports reads sysfs), written
into the run directory at the start and the end of the job for the fabric verdict to compare."""

from __future__ import annotations

from pathlib import Path

from jobs.fabric.ports import snapshot
from jobs.rundir.layout import RunDir
from jobs.rundir.records.ports import PORTS


def record_ports(run: RunDir, root: Path, host: str, when: str) -> Path:
    """Take this node's snapshot into the run directory: fabric/ports-<host>-<when>.json."""
    path = run.port_snapshot(host, when)
    path.parent.mkdir(exist_ok=True)
    PORTS.write(path, snapshot(root, host))
    return path
