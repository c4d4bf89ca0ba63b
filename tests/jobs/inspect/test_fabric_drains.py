"""The hosts a fabric requirement not met names, as records: a drain is taken from a record's hosts, never
from a sentence, so two hosts whose names are prefixes of each other (n1, n10) are each named for their own
failure alone, and the sentences users read are rendered from the same records."""

from __future__ import annotations

from pathlib import Path

from jobs.config.fabric_settings import FabricSettings
from jobs.config.model import load_config
from jobs.inspect.fabric import FabricFailure, FabricReport, fabric_report
from jobs.inspect.findings import run_findings
from jobs.inspect.report import RunOutcome
from jobs.rundir.layout import RunDir
from jobs.rundir.records.rank import RankState, RankStatus
from jobs.runtime.port_snapshots import record_ports
from tests.jobs.fabric.nccl_formats import GPUS, PROFILES, job_logs
from tests.jobs.fabric.sysfs import node, write_port

HOSTS = ("n1", "n10")
"""The log fixture's n1 and n2 run as n1 and n10 here: each name a prefix of the other's."""


def _status(rank: int) -> RankStatus:
    host = HOSTS[rank // GPUS]
    return RankStatus(rank=rank, host=host, pid=rank, device="cuda:0", state=RankState.OK, started=0, updated=0)


STATUSES = {rank: _status(rank) for rank in range(len(HOSTS) * GPUS)}


def _run(tmp_path: Path) -> RunDir:
    """n10's ranks reach the network without GPUDirect RDMA; n1's mlx5_3 counts 15 errors during the job."""
    run = RunDir(tmp_path / "run")
    run.logs_dir.mkdir(parents=True)
    for rank, text in job_logs(PROFILES["2.27.7"], gdr_off_host="n2").items():
        run.nccl_debug_log(rank).write_text(text)
    for host in HOSTS:
        root = node(tmp_path / f"sys-{host}")
        record_ports(run, root, host, "start")
        if host == "n1":
            write_port(root, "mlx5_3", counters={"symbol_error": 12, "port_rcv_errors": 3})
        record_ports(run, root, host, "end")
    return run


def _fabric(tmp_path: Path) -> FabricReport:
    settings = FabricSettings(nccl_info=True, require_gdr=True, max_port_errors=0)
    return fabric_report(_run(tmp_path), "nccl", settings, STATUSES)


def test_each_failure_is_a_record_of_its_own_host_with_what_was_measured_and_required(tmp_path: Path) -> None:
    failures = _fabric(tmp_path).failures
    assert [(f.setting, f.hosts, f.ranks, f.hca, f.port, f.measured, f.required, f.code) for f in failures] == [
        ("fabric.require_gdr", ("n10",), (8, 15), "", "", "no GPUDirect RDMA", "true", "fabric_failed"),
        ("fabric.max_port_errors", ("n1",), (), "mlx5_3", "1", "15", "0", "fabric_failed"),
    ]
    assert [f.sentence() for f in failures] == [
        "fabric.require_gdr: n10 rank(s) 8,15 reach the network without GPUDirect RDMA",
        "fabric.max_port_errors=0: n1 mlx5_3 port 1 counted 15 error(s) during the job",
    ]


def test_the_drains_come_from_the_records_hosts_each_with_its_own_failure(tmp_path: Path) -> None:
    fabric = _fabric(tmp_path)
    outcome = RunOutcome(load_config(None, []), STATUSES, [], fabric=fabric)
    assert [(f.host, f.code, f.figure) for f in run_findings(outcome)] == [
        ("n10", "fabric_failed", "fabric requirement not met: " + fabric.failures[0].sentence()),
        ("n1", "fabric_failed", "fabric requirement not met: " + fabric.failures[1].sentence()),
    ]


def test_a_record_names_its_hosts_whatever_its_sentence_says() -> None:
    """A host is drained for the record that names it; a name that only shows up in the words (n1 inside a
    requirement's value, say) drains nobody."""
    named = FabricFailure("network", "fabric.require_network", "ib", "n1", (("n10", (8, 9)),))
    fabric = FabricReport(hosts=[], findings=[], failures=[named], notes=[])
    assert named.sentence() == "fabric.require_network=ib: n10 rank(s) 8-9 use n1"
    outcome = RunOutcome(load_config(None, []), STATUSES, [], fabric=fabric)
    assert [f.host for f in run_findings(outcome)] == ["n10"], "n1 is in the sentence, not in the record"


def test_a_requirement_that_cannot_be_checked_drains_nobody(tmp_path: Path) -> None:
    run = _run(tmp_path)
    run.nccl_debug_log(3).unlink()
    fabric = fabric_report(run, "nccl", FabricSettings(nccl_info=True, require_network="ib"), STATUSES)
    assert [(f.code, f.hosts, f.ranks) for f in fabric.failures] == [("not_run", ("n1",), (3,))]
    assert fabric.failures[0].sentence() == (
        "rank(s) 3: no NCCL network choice in logs/nccl-rank-*.log, so fabric.require_network / require_gdr "
        "cannot be checked"
    )
    assert run_findings(RunOutcome(load_config(None, []), STATUSES, [], fabric=fabric)) == []


def test_the_json_keeps_the_sentences_and_carries_the_records(tmp_path: Path) -> None:
    plain = _fabric(tmp_path).to_json()
    assert plain["failures"] == [
        "fabric.require_gdr: n10 rank(s) 8,15 reach the network without GPUDirect RDMA",
        "fabric.max_port_errors=0: n1 mlx5_3 port 1 counted 15 error(s) during the job",
    ]
    assert [(r["hosts"], r["code"], r["line"]) for r in plain["failure_records"]] == [
        (["n10"], "fabric_failed", plain["failures"][0]),
        (["n1"], "fabric_failed", plain["failures"][1]),
    ]
