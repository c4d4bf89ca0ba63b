"""Port snapshots from fake sysfs trees: states, rates, counters, interfaces, and what grew in between."""

from __future__ import annotations

import json
from pathlib import Path

from jobs.fabric.ports import error_growth, snapshot
from jobs.rundir.layout import RunDir
from jobs.rundir.records.ports import PORTS, NetInterface
from jobs.runtime.port_snapshots import record_ports
from tests.jobs.fabric.sysfs import node, write_interface, write_port


def test_every_port_and_interface_is_read_as_the_kernel_words_it(tmp_path: Path) -> None:
    snap = snapshot(node(tmp_path), "n1")
    assert snap.host == "n1" and sorted(snap.rdma) == [f"mlx5_{i}" for i in range(8)]
    port = snap.rdma["mlx5_0"]["1"]
    assert (port.state, port.phys_state, port.rate_gbps, port.link_layer) == ("ACTIVE", "LinkUp", 400.0, "InfiniBand")
    assert port.rate == "400 Gb/sec (4X NDR)"
    assert port.counters == {"link_downed": 0, "port_rcv_errors": 0, "port_xmit_data": 123456789, "symbol_error": 0}
    assert snap.net == {
        "eth0": NetInterface(operstate="up", speed_mbps=25000, mtu=1500),
        "ib0": NetInterface(operstate="up", speed_mbps=100000, mtu=4092),
    }, "lo is left out"


def test_a_port_down_and_at_half_rate_are_read_as_such(tmp_path: Path) -> None:
    write_port(tmp_path, "mlx5_0", state="DOWN", phys="Polling", rate=200)
    write_interface(tmp_path, "ib0", operstate="down", speed="-1")  # what a down link reports
    snap = snapshot(tmp_path, "n2")
    port = snap.rdma["mlx5_0"]["1"]
    assert (port.state, port.phys_state, port.rate_gbps) == ("DOWN", "Polling", 200.0)
    assert snap.net["ib0"].speed_mbps is None


def test_only_error_counters_that_grew_are_reported(tmp_path: Path) -> None:
    start = snapshot(node(tmp_path), "n1")
    write_port(tmp_path, "mlx5_3", counters={"symbol_error": 12, "port_rcv_errors": 3, "port_xmit_data": 999999999})
    end = snapshot(tmp_path, "n1")
    assert error_growth(start, end) == {("mlx5_3", "1"): {"symbol_error": 12, "port_rcv_errors": 3}}


def test_a_machine_without_rdma_or_sysfs_gives_empty_maps(tmp_path: Path) -> None:
    assert snapshot(tmp_path / "absent", "n3").rdma == {}
    assert snapshot(tmp_path / "absent", "n3").net == {}


def test_a_snapshot_is_recorded_with_its_format_and_reads_back(tmp_path: Path) -> None:
    run = RunDir(tmp_path / "run")
    run.path.mkdir()
    path = record_ports(run, node(tmp_path / "sys"), "n1", "start")
    assert path == run.port_snapshot("n1", "start")
    snap = PORTS.read(path)
    assert snap.version == 1 and snap.rdma["mlx5_7"]["1"].rate_gbps == 400.0 and "eth0" in snap.net
    assert json.loads(path.read_text())["version"] == 1


def test_a_snapshot_written_before_records_carried_a_version_reads_as_format_1() -> None:
    old = {
        "host": "n1",
        "taken_at": 1.0,
        "rdma": {"mlx5_0": {"1": {"state": "ACTIVE", "phys_state": "LinkUp", "rate": "400 Gb/sec (4X NDR)",
                                  "rate_gbps": 400.0, "link_layer": "InfiniBand", "counters": {"symbol_error": 2}}}},
        "net": {"eth0": {"operstate": "up", "speed_mbps": None, "mtu": 1500}},
    }  # fmt: skip
    snap = PORTS.decode(json.dumps(old).encode(), "fabric/ports-n1-start.json")
    assert snap.version == 1 and snap.rdma["mlx5_0"]["1"].counters == {"symbol_error": 2}
    assert snap.net["eth0"] == NetInterface(operstate="up", speed_mbps=None, mtu=1500)


def test_a_snapshot_of_a_newer_format_is_left_out_and_named_in_one_line(tmp_path: Path) -> None:
    from jobs.config.fabric_settings import FabricSettings
    from jobs.inspect.fabric import fabric_report
    from jobs.rundir.records.rank import RankState, RankStatus

    run = RunDir(tmp_path / "run")
    run.path.mkdir()
    record_ports(run, node(tmp_path / "sys"), "n1", "start")
    newer = run.port_snapshot("n2", "start")
    newer.write_text(json.dumps({"version": 99, "host": "n2"}))
    statuses = {
        rank: RankStatus(rank=rank, host=host, pid=rank, device="cpu", state=RankState.OK, started=0, updated=0)
        for rank, host in enumerate(["n1", "n2"])
    }
    found = fabric_report(run, "gloo", FabricSettings(), statuses)
    assert [host.host for host in found.hosts] == ["n1", "n2"] and found.hosts[1].ports == ""
    assert f"port snapshot left out: {newer}: fabric/ports-<host>-<when>.json format 99 is newer" in found.notes[-1]
    assert "\n" not in found.notes[-1]
