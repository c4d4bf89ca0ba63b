"""The fabric section over a run directory holding a 2-node x 8-GPU job's NCCL logs and port snapshots:
one line per host, each problem naming host, rank and device, and the requirements that fail the run."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from jobs.config.fabric_settings import FabricSettings
from jobs.inspect.fabric import FabricReport, fabric_report
from jobs.rundir.layout import RunDir
from jobs.rundir.records.rank import RankState, RankStatus
from jobs.runtime.port_snapshots import record_ports
from tests.jobs.fabric.nccl_formats import NODES, PROFILES, host_of, job_logs
from tests.jobs.fabric.sysfs import node, write_port


def status(rank: int, host: str) -> RankStatus:
    return RankStatus(rank=rank, host=host, pid=rank, device="cuda:0", state=RankState.OK, started=0, updated=0)


STATUSES = {rank: status(rank, host_of(rank)) for rank in range(16)}


def a_run(tmp_path: Path, logs: dict[int, str], **port_changes: dict[str, Any]) -> RunDir:
    """The run's NCCL logs, and each node's snapshots at the start and the end (port_changes[host]: how its
    mlx5_3 looks at the end, as write_port's keywords)."""
    run = RunDir(tmp_path / "run")
    run.logs_dir.mkdir(parents=True)
    for rank, text in logs.items():
        run.nccl_debug_log(rank).write_text(text)
    for host in NODES:
        root = node(tmp_path / f"sys-{host}")
        record_ports(run, root, host, "start")
        if host in port_changes:
            write_port(root, "mlx5_3", **port_changes[host])
        record_ports(run, root, host, "end")
    return run


def report(run: RunDir, **settings: Any) -> FabricReport:
    return fabric_report(run, "nccl", FabricSettings(nccl_info=True, **settings), STATUSES)


def test_a_healthy_job_gives_one_line_per_host_and_nothing_else(tmp_path: Path) -> None:
    found = report(a_run(tmp_path, job_logs(PROFILES["2.21.5"])), require_network="ib", require_gdr=True,
                   max_port_errors=0)  # fmt: skip
    assert [host.line() for host in found.hosts] == [
        f"{host:<10}  NCCL 2.21.5  network IB  mlx5_[0-7] (8 ports ACTIVE 400 Gb/sec)  GDRDMA 2/2  "
        "intra-node P2P/CUMEM/SHM"
        for host in NODES
    ]
    assert (found.findings, found.failures, found.notes) == ([], [], [])
    assert found.lines()[0].startswith("# fabric: per host")


def test_ranks_on_sockets_are_named_with_their_host_and_reason_and_fail_require_network(tmp_path: Path) -> None:
    run = a_run(tmp_path, job_logs(PROFILES["2.18.5"], socket_ranks=range(12, 16)))
    found = report(run, require_network="ib")
    assert found.findings == [
        "n2 rank(s) 12-15 use network Socket while 12 other rank(s) use IB (NCCL: libibverbs could not be opened)"
    ]
    assert found.failure_lines() == ["fabric.require_network=ib: n2 rank(s) 12-15 use Socket"]
    assert report(run).failure_lines() == [], "without the requirement it is a finding, not a failure"


def test_a_host_without_gdrdma_is_named_with_its_devices_and_fails_require_gdr(tmp_path: Path) -> None:
    found = report(a_run(tmp_path, job_logs(PROFILES["2.27.7"], gdr_off_host="n2")), require_gdr=True)
    assert found.findings == [
        "n2 rank(s) 8,15 reach the network without GPUDirect RDMA (via NET/IB/0, NET/IB/7, no /GDRDMA); "
        "NCCL: GPU Direct RDMA disabled for HCA mlx5_0, mlx5_7"
    ]
    assert found.failure_lines() == ["fabric.require_gdr: n2 rank(s) 8,15 reach the network without GPUDirect RDMA"]
    assert [re.findall(r"GDRDMA \d+/\d+", host.line()) for host in found.hosts] == [["GDRDMA 2/2"], ["GDRDMA 0/2"]]


def test_a_port_that_went_down_during_the_job_is_named(tmp_path: Path) -> None:
    found = report(a_run(tmp_path, job_logs(PROFILES["2.21.5"]), n2={"state": "DOWN", "phys": "Polling"}))
    assert found.findings == ["n2 mlx5_3 port 1: DOWN / Polling at the end of the job"]


def test_a_port_trained_down_is_compared_with_the_same_port_elsewhere(tmp_path: Path) -> None:
    run = a_run(tmp_path, job_logs(PROFILES["2.21.5"]))
    write_port(tmp_path / "sys-n2", "mlx5_3", rate=200)
    record_ports(run, tmp_path / "sys-n2", "n2", "start")
    found = report(run)
    assert found.findings == ["n2 mlx5_3 port 1 runs at 200 Gb/sec; the same port on n1 at 400 Gb/sec (trained down?)"]
    assert "n2          NCCL 2.21.5  network IB  mlx5_[0-7] (8 ports ACTIVE 400/200 Gb/sec)" in found.hosts[1].line()


def test_error_counters_that_grew_are_named_and_held_to_max_port_errors(tmp_path: Path) -> None:
    grew = {"counters": {"symbol_error": 12, "port_rcv_errors": 3}}
    run = a_run(tmp_path, job_logs(PROFILES["2.21.5"]), n2=grew)
    found = report(run, max_port_errors=0)
    assert found.findings == [
        "n2 mlx5_3 port 1: error counters grew during the job: symbol_error +12, port_rcv_errors +3"
    ]
    assert found.failure_lines() == ["fabric.max_port_errors=0: n2 mlx5_3 port 1 counted 15 error(s) during the job"]
    assert report(run, max_port_errors=15).failure_lines() == []
    run.port_snapshot("n2", "end").unlink()
    assert report(run, max_port_errors=15).failure_lines() == [
        "fabric.max_port_errors: n2 took no end-of-job port snapshot, so it cannot be checked"
    ]


def test_nccl_warnings_are_grouped_by_source_location_with_their_ranks(tmp_path: Path) -> None:
    found = report(a_run(tmp_path, job_logs(PROFILES["2.10.3"], warnings={8: 2, 9: 1})))
    assert found.findings == [
        "NCCL WARN transport/net_ib.cc:1295 (3 line(s); n2 rank(s) 8-9): NET/IB : Got completion from peer "
        "10.0.0.1<45678> with error 12, opcode 0, len 0, vendor err 129"
    ]


def test_different_nccl_versions_on_the_two_nodes_are_named(tmp_path: Path) -> None:
    logs = job_logs(PROFILES["2.21.5"])
    logs.update({r: text for r, text in job_logs(replace(PROFILES["2.21.5"], version="2.18.3")).items() if r >= 8})
    found = report(a_run(tmp_path, logs))
    assert found.findings == ["NCCL versions differ: 2.21.5 on n1 rank(s) 0-7, 2.18.3 on n2 rank(s) 8-15"]


def test_ranks_without_a_log_cannot_meet_a_requirement(tmp_path: Path) -> None:
    logs = {r: text for r, text in job_logs(PROFILES["2.21.5"]).items() if r != 5}
    found = report(a_run(tmp_path, logs), require_network="ib")
    assert found.failure_lines() == [
        "rank(s) 5: no NCCL network choice in logs/nccl-rank-*.log, so fabric.require_network / require_gdr "
        "cannot be checked"
    ]


@pytest.mark.parametrize("backend", ["gloo", "nccl"])
def test_without_rdma_devices_or_nccl_the_section_says_so_plainly(tmp_path: Path, backend: str) -> None:
    run = RunDir(tmp_path / "run")
    run.logs_dir.mkdir(parents=True)
    for host in ("n1", "n2"):
        record_ports(run, tmp_path / "empty-sysfs", host, "start")
        record_ports(run, tmp_path / "empty-sysfs", host, "end")
    statuses = {rank: status(rank, host) for rank, host in enumerate(["n1", "n1", "n2", "n2"])}
    found = fabric_report(run, backend, FabricSettings(max_port_errors=0), statuses)
    first = "NCCL was not used (backend gloo): no transport to report" if backend == "gloo" else (
        "no NCCL debug log in logs/ (set fabric.nccl_info=true to keep NCCL's own account)"
    )  # fmt: skip
    assert found.notes == [first, "no RDMA device found on n[1-2] (nothing under /sys/class/infiniband)"]
    assert (found.findings, found.failures) == ([], [])
    assert found.hosts[0].line() == (
        "n1          no RDMA device" if backend == "gloo" else "n1          NCCL log not found  no RDMA device"
    )


def test_a_host_name_no_hostlist_can_hold_is_listed_as_it_is(tmp_path: Path) -> None:
    """A local run on a host named so had ended in BadHostlist here, with no table.txt or summary.json."""
    odd = "n1<img src=x onerror=alert(1)>"
    run = RunDir(tmp_path / "run")
    run.logs_dir.mkdir(parents=True)
    for host in (odd, "n2"):
        record_ports(run, tmp_path / "empty-sysfs", host, "start")
    found = fabric_report(run, "gloo", FabricSettings(), {0: status(0, odd), 1: status(1, "n2")})
    assert found.notes[-1] == f"no RDMA device found on n2,{odd} (nothing under /sys/class/infiniband)"
