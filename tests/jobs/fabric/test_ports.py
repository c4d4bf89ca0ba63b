"""Port snapshots from fake sysfs trees: states, rates, counters, interfaces, and what grew in between."""

from __future__ import annotations

from pathlib import Path

from jobs.fabric.ports import error_growth, snapshot
from tests.jobs.fabric.sysfs import node, write_interface, write_port


def test_every_port_and_interface_is_read_as_the_kernel_words_it(tmp_path: Path) -> None:
    snap = snapshot(node(tmp_path), "n1")
    assert snap["host"] == "n1" and sorted(snap["rdma"]) == [f"mlx5_{i}" for i in range(8)]
    port = snap["rdma"]["mlx5_0"]["1"]
    assert (port["state"], port["phys_state"], port["rate_gbps"], port["link_layer"]) == (
        "ACTIVE", "LinkUp", 400.0, "InfiniBand"
    )  # fmt: skip
    assert port["rate"] == "400 Gb/sec (4X NDR)"
    assert port["counters"] == {"link_downed": 0, "port_rcv_errors": 0, "port_xmit_data": 123456789, "symbol_error": 0}
    assert snap["net"] == {
        "eth0": {"operstate": "up", "speed_mbps": 25000, "mtu": 1500},
        "ib0": {"operstate": "up", "speed_mbps": 100000, "mtu": 4092},
    }, "lo is left out"


def test_a_port_down_and_at_half_rate_are_read_as_such(tmp_path: Path) -> None:
    write_port(tmp_path, "mlx5_0", state="DOWN", phys="Polling", rate=200)
    write_interface(tmp_path, "ib0", operstate="down", speed="-1")  # what a down link reports
    snap = snapshot(tmp_path, "n2")
    port = snap["rdma"]["mlx5_0"]["1"]
    assert (port["state"], port["phys_state"], port["rate_gbps"]) == ("DOWN", "Polling", 200.0)
    assert snap["net"]["ib0"]["speed_mbps"] is None


def test_only_error_counters_that_grew_are_reported(tmp_path: Path) -> None:
    start = snapshot(node(tmp_path), "n1")
    write_port(tmp_path, "mlx5_3", counters={"symbol_error": 12, "port_rcv_errors": 3, "port_xmit_data": 999999999})
    end = snapshot(tmp_path, "n1")
    assert error_growth(start, end) == {("mlx5_3", "1"): {"symbol_error": 12, "port_rcv_errors": 3}}


def test_a_machine_without_rdma_or_sysfs_gives_empty_maps(tmp_path: Path) -> None:
    assert snapshot(tmp_path / "absent", "n3")["rdma"] == {}
    assert snapshot(tmp_path / "absent", "n3")["net"] == {}
