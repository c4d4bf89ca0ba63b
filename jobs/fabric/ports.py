"""The kernel's view of a node's RDMA ports and network interfaces, read from sysfs: taken by local rank 0 at
the start and at the end of the job (jobs.runtime.port_snapshots writes them), so that a port that is down,
trained to a lower rate, or counting errors during the job is named with its host and device.

    <root>/class/infiniband/<hca>/ports/<p>/{state,phys_state,rate,link_layer}, counters/*
    <root>/class/net/<if>/{operstate,speed,mtu}
"""

from __future__ import annotations

import re
import time
from pathlib import Path

from jobs.rundir.records.ports import NetInterface, PortSnapshot, RdmaPort

ERROR_COUNTERS = (
    "symbol_error",
    "link_error_recovery",
    "link_downed",
    "port_rcv_errors",
    "port_rcv_remote_physical_errors",
    "port_rcv_switch_relay_errors",
    "port_xmit_discards",
    "port_xmit_constraint_errors",
    "port_rcv_constraint_errors",
    "local_link_integrity_errors",
    "excessive_buffer_overrun_errors",
    "VL15_dropped",
)
"""The counters under ports/<p>/counters/ that count faults; the others (data, packets, wait) are kept too."""

_RATE = re.compile(r"(?P<gbps>\d+(?:\.\d+)?)\s*Gb/sec")


def snapshot(root: Path, host: str) -> PortSnapshot:
    """Every RDMA port and network interface under this sysfs root."""
    return PortSnapshot(host=host, taken_at=time.time(), rdma=_rdma_ports(root), net=_interfaces(root))


def _rdma_ports(root: Path) -> dict[str, dict[str, RdmaPort]]:
    devices: dict[str, dict[str, RdmaPort]] = {}
    base = root / "class" / "infiniband"
    for hca in sorted(base.iterdir()) if base.is_dir() else []:
        ports = hca / "ports"
        for port in sorted(ports.iterdir(), key=lambda p: p.name) if ports.is_dir() else []:
            devices.setdefault(hca.name, {})[port.name] = _port(port)
    return devices


def _port(port: Path) -> RdmaPort:
    state, phys_state = _read(port / "state"), _read(port / "phys_state")
    rate = _read(port / "rate")
    found = _RATE.search(rate)
    return RdmaPort(
        state=_after_colon(state),
        phys_state=_after_colon(phys_state),
        rate=rate,
        rate_gbps=float(found["gbps"]) if found else None,
        link_layer=_read(port / "link_layer"),
        counters=_counters(port / "counters"),
    )


def _counters(folder: Path) -> dict[str, int]:
    found: dict[str, int] = {}
    for counter in sorted(folder.iterdir()) if folder.is_dir() else []:
        value = _read(counter)
        if value.isdigit():
            found[counter.name] = int(value)
    return found


def _interfaces(root: Path) -> dict[str, NetInterface]:
    base = root / "class" / "net"
    found: dict[str, NetInterface] = {}
    for interface in sorted(base.iterdir()) if base.is_dir() else []:
        if interface.name == "lo":
            continue
        speed = _read(interface / "speed")  # EINVAL while the link is down: read as unknown
        mtu = _read(interface / "mtu")
        found[interface.name] = NetInterface(
            operstate=_read(interface / "operstate"),
            speed_mbps=int(speed) if speed.lstrip("-").isdigit() and int(speed) > 0 else None,
            mtu=int(mtu) if mtu.isdigit() else None,
        )
    return found


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return ""


def _after_colon(value: str) -> str:
    """sysfs writes '4: ACTIVE' and '5: LinkUp'."""
    return value.split(":", 1)[1].strip() if ":" in value else value


def error_growth(start: PortSnapshot, end: PortSnapshot) -> dict[tuple[str, str], dict[str, int]]:
    """(hca, port) -> error counter -> how much it grew between the two snapshots (only those that grew)."""
    grown: dict[tuple[str, str], dict[str, int]] = {}
    for hca, port, after in end.ports():
        known = start.rdma.get(hca, {}).get(port)
        before = known.counters if known is not None else {}
        deltas = {
            name: after.counters[name] - before[name]
            for name in ERROR_COUNTERS
            if name in after.counters and name in before and after.counters[name] > before[name]
        }
        if deltas:
            grown[(hca, port)] = deltas
    return grown
