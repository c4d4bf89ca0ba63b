"""What a run itself names against a node, each with its reason code: ranks that failed to set up, a fabric
requirement not met on a host (only the hosts its record names), wrong elements on a host's ranks."""

from __future__ import annotations

from jobs.config.model import load_config
from jobs.inspect.fabric import FabricFailure, FabricReport
from jobs.inspect.findings import run_findings
from jobs.inspect.postmortem import Postmortem, RankEnd
from jobs.inspect.report import RunOutcome
from jobs.rundir.records.rank import RankState, RankStatus


def _status(rank: int, host: str) -> RankStatus:
    return RankStatus(rank=rank, host=host, pid=1, device="cpu", state=RankState.FAILED, started=1.0, updated=2.0)


def test_a_failed_set_up_and_a_fabric_requirement_name_their_hosts_with_their_codes() -> None:
    statuses = {rank: _status(rank, host) for rank, host in enumerate(["n1", "n1", "n10", "n10"])}
    ends = {
        0: RankEnd(0, "n1", "ok", "ok", ""),
        1: RankEnd(1, "n1", "ok", "ok", ""),
        2: RankEnd(2, "n10", "setup", "failed", "RendezvousTimeout: no peer"),
        3: RankEnd(3, "n10", "setup", "failed", "RendezvousTimeout: no peer"),
    }
    gdr = FabricFailure("gdr", "fabric.require_gdr", "true", "no GPUDirect RDMA", (("n10", (2, 3)),))
    fabric = FabricReport(hosts=[], findings=[], failures=[gdr], notes=[])
    outcome = RunOutcome(load_config(None, []), statuses, [], postmortem=Postmortem(ends), fabric=fabric)
    found = [(f.host, f.code, f.figure) for f in run_findings(outcome)]
    assert found == [
        ("n10", "setup_failed", "rank(s) 2-3 failed to set up: RendezvousTimeout: no peer"),
        (
            "n10",
            "fabric_failed",
            "fabric requirement not met: fabric.require_gdr: n10 rank(s) 2-3 reach the network without GPUDirect RDMA",
        ),
    ], "n1 is not named by a record that names n10"


def test_a_healthy_run_names_nobody() -> None:
    assert run_findings(RunOutcome(load_config(None, []), {0: _status(0, "n1")}, [])) == []
