"""fabric/ports-<host>-<when>.json: a node's RDMA ports and network interfaces as sysfs words them, taken by its
local rank 0 at the start and at the end of the job (jobs/fabric/ports.py takes them, jobs/inspect/fabric.py
reads them)."""

from __future__ import annotations

from dataclasses import dataclass, field

from jobs.rundir.records.codec import Format

PORTS_VERSION = 1
"""Format 1 is the snapshot as collbench wrote it before records carried a version: read as it is."""


@dataclass(kw_only=True, slots=True)
class RdmaPort:
    """One port of an RDMA device: class/infiniband/<hca>/ports/<p>/."""

    state: str = ""
    """The port's state after sysfs's number: ACTIVE, DOWN, INIT, ..."""
    phys_state: str = ""
    """Its physical state after sysfs's number: LinkUp, Polling, Disabled, ..."""
    rate: str = ""
    """As sysfs words it: '400 Gb/sec (4X NDR)'."""
    rate_gbps: float | None = None
    """The rate in Gb/s; None when sysfs did not say."""
    link_layer: str = ""
    """InfiniBand or Ethernet."""
    counters: dict[str, int] = field(default_factory=dict)
    """Every counter under counters/ that read as a number: name -> value."""


@dataclass(kw_only=True, slots=True)
class NetInterface:
    """One network interface: class/net/<if>/."""

    operstate: str = ""
    speed_mbps: int | None = None
    """Mb/s; None while the link is down or the kernel does not say."""
    mtu: int | None = None


@dataclass(kw_only=True, slots=True)
class PortSnapshot:
    """fabric/ports-<host>-<when>.json."""

    host: str = ""
    taken_at: float = 0.0
    rdma: dict[str, dict[str, RdmaPort]] = field(default_factory=dict)
    """Device (mlx5_0) -> port number ('1') -> the port."""
    net: dict[str, NetInterface] = field(default_factory=dict)
    """Interface name -> the interface; lo left out."""
    version: int = PORTS_VERSION
    """The format of this file."""

    def ports(self) -> list[tuple[str, str, RdmaPort]]:
        """Every RDMA port as (device, port number, port), in the snapshot's order."""
        return [(hca, number, port) for hca, by_number in self.rdma.items() for number, port in by_number.items()]


PORTS = Format("fabric/ports-<host>-<when>.json", PortSnapshot, PORTS_VERSION, pretty=True)
