"""Fake sysfs trees, laid out and worded as the kernel's (drivers/infiniband/core/sysfs.c, net-sysfs.c)."""

from __future__ import annotations

from pathlib import Path

STATES = {"ACTIVE": "4: ACTIVE", "DOWN": "1: DOWN", "INIT": "2: INIT"}
PHYS = {"LinkUp": "5: LinkUp", "Polling": "2: Polling", "Disabled": "3: Disabled"}
RATES = {400: "400 Gb/sec (4X NDR)", 200: "200 Gb/sec (4X HDR)", 100: "100 Gb/sec (4X EDR)"}


def write_port(
    root: Path, hca: str, port: int = 1, *, state: str = "ACTIVE", phys: str = "LinkUp", rate: int = 400,
    counters: dict[str, int] | None = None, link_layer: str = "InfiniBand",
) -> None:  # fmt: skip
    base = root / "class" / "infiniband" / hca / "ports" / str(port)
    (base / "counters").mkdir(parents=True, exist_ok=True)
    (base / "state").write_text(STATES[state] + "\n")
    (base / "phys_state").write_text(PHYS[phys] + "\n")
    (base / "rate").write_text(RATES[rate] + "\n")
    (base / "link_layer").write_text(link_layer + "\n")
    values = {"symbol_error": 0, "link_downed": 0, "port_rcv_errors": 0, "port_xmit_data": 123456789}
    for name, value in {**values, **(counters or {})}.items():
        (base / "counters" / name).write_text(f"{value}\n")


def write_interface(root: Path, name: str, *, operstate: str = "up", speed: str = "100000", mtu: int = 4092) -> None:
    base = root / "class" / "net" / name
    base.mkdir(parents=True, exist_ok=True)
    (base / "operstate").write_text(operstate + "\n")
    if speed:
        (base / "speed").write_text(speed + "\n")
    (base / "mtu").write_text(f"{mtu}\n")


def node(root: Path, hcas: int = 8, **port: object) -> Path:
    """A GPU node: mlx5_0..hcas-1 with one port each, ib0 and eth0; `port` changes mlx5_3's port."""
    for index in range(hcas):
        write_port(root, f"mlx5_{index}", **(port if index == 3 else {}))  # type: ignore[arg-type]
    write_interface(root, "ib0")
    write_interface(root, "eth0", speed="25000", mtu=1500)
    write_interface(root, "lo", speed="", mtu=65536)
    return root
