"""NCCL's own account read back, for every version's line formats (tests/jobs/fabric/nccl_formats.py)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from jobs.fabric.nccl_log import NcclRankLog, parse_lines
from tests.jobs.fabric.nccl_formats import PROFILES, rank_log


def parsed(version: str, rank: int, **changes: Any) -> NcclRankLog:
    profile = replace(PROFILES[version], **changes)
    return parse_lines(rank, rank_log(profile, rank).splitlines())


@pytest.mark.parametrize("version", PROFILES)
def test_a_rank_at_the_node_boundary_reaches_the_network_over_ib_with_gdrdma(version: str) -> None:
    log = parse_lines(7, rank_log(PROFILES[version], 7).splitlines())
    assert (log.host, log.version, log.network) == ("n1", version, "IB")
    assert [d.name for d in log.ib_devices] == [f"mlx5_{i}" for i in range(8)]
    assert {(d.port, d.link_layer) for d in log.ib_devices} == {(1, "IB")}
    assert log.oob == "ib0:10.0.0.1<0>"
    network = log.network_channels
    assert [(c.src, c.dst, c.transport, c.device, c.gdr) for c in network] == [(7, 8, "NET/IB", 7, True)] * 2
    assert log.network_gdr is True and log.path_gdr == [True]
    assert log.nranks == 16
    assert log.nnodes == (2 if PROFILES[version].shape_line else 0), "nNodes is printed from 2.21 on"
    assert log.warnings == []


@pytest.mark.parametrize("version", PROFILES)
def test_a_rank_inside_the_node_uses_p2p_and_shm_and_no_network(version: str) -> None:
    log = parse_lines(3, rank_log(PROFILES[version], 3).splitlines())
    expected_p2p = "P2P/IPC" if PROFILES[version].p2p.startswith("P2P/IPC") else "P2P/CUMEM"
    assert log.intra_node == [expected_p2p, "SHM"]
    assert log.network_channels == [] and log.network_gdr is None
    assert [(c.src, c.dst) for c in log.channels if c.transport == "SHM"] == [(3, 2)]


@pytest.mark.parametrize("version", PROFILES)
def test_without_gdrdma_the_channels_and_the_hca_say_so(version: str) -> None:
    log = parsed(version, 8, gdr=False)
    assert log.network_gdr is False
    assert log.hca_gdr == {"mlx5_0": False}
    assert log.path_gdr == [False]


@pytest.mark.parametrize("version", ["2.10.3", "2.18.5", "2.27.7"])
def test_a_socket_fallback_is_read_with_its_reason(version: str) -> None:
    log = parsed(version, 7, network="Socket")
    assert log.network == "Socket"
    assert log.ib_missing == "libibverbs could not be opened"
    assert log.socket_interfaces == ["eth0"] and log.ib_devices == []
    assert {c.transport for c in log.network_channels} == {"NET/Socket"}


def test_roce_and_a_plugin_are_named_as_nccl_names_them() -> None:
    log = parsed("2.21.5", 7, network="IBext_v8", link_layer="RoCE")
    assert log.network == "IBext_v8" and log.plugin == "IBext_v8 (v8)"
    assert {d.link_layer for d in log.ib_devices} == {"RoCE"}
    assert {c.transport for c in log.network_channels} == {"NET/IBext_v8"}


@pytest.mark.parametrize("version", ["2.10.3", "2.18.5", "2.27.7"])
def test_warnings_keep_their_source_location_in_every_form(version: str) -> None:
    log = parse_lines(8, rank_log(PROFILES[version], 8, warnings=2).splitlines())
    assert [w.where for w in log.warnings] == ["transport/net_ib.cc:1295"] * 2
    assert "Got completion from peer 10.0.0.1<45678>" in log.warnings[0].message


def test_nvls_collnet_merged_nics_and_the_bare_version_line() -> None:
    lines = [
        "NCCL version 2.26.2+cuda12.8",  # NCCL_DEBUG=VERSION/WARN: the bare form
        "n1:1:2 [0] NCCL INFO NVLS multicast support is available on dev 0 (NVLS_NCHANNELS 16)",
        "n1:1:2 [0] NCCL INFO Connected NVLS tree",
        "n1:1:2 [0] NCCL INFO CollNet 00/0 : 0 [send] via COLLNET/IBext_v8/0/GDRDMA",
        "n1:1:2 [0] NCCL INFO NET/IB : Using [0]={[0] mlx5_0:1/IB, [1] mlx5_1:1/IB} [RO]; OOB ib0:10.0.0.1<0>",
        "n1:1:2 [0] NCCL INFO NVLS multicast support is not available on dev 1",
    ]
    log = parse_lines(0, lines)
    assert log.version == "2.26.2" and log.nvls and "NVLS" in log.intra_node
    assert [(c.transport, c.gdr) for c in log.network_channels] == [("COLLNET/IBext_v8", True)]
    assert [d.name for d in log.ib_devices] == ["mlx5_0", "mlx5_1"], "a merged (virtual) NIC lists its devices"


def test_lines_of_no_known_form_are_nothing() -> None:
    log = parse_lines(0, ["", "garbage", "n1:1:2 [0] NCCL INFO Channel 00 : x -> y", "\x00\xff", "NCCL INFO"])
    assert (log.version, log.network, log.channels, log.warnings, log.lines_read) == ("", "", [], [], 5)
