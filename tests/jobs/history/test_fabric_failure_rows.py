"""The history's fabric rows of a failed requirement name the hosts of its record in summary.json
(failure_records), not the host names its words happen to hold; a summary written before the records were
kept is still read by its words."""

from __future__ import annotations

from pathlib import Path

from jobs.history.gather import gather
from jobs.inspect.fabric import FabricFailure, FabricReport
from jobs.inspect.report import assess
from jobs.rundir.layout import RunDir
from jobs.rundir.records.summary import SUMMARY, Summary
from tests.jobs.rundir import synthetic


def _with_fabric(run: RunDir, fabric: dict[str, object]) -> RunDir:
    summary = Summary(run_id=run.run_id, passed=False, problems=["fabric: unmet"], fabric=fabric, rows=assess(run).rows)
    SUMMARY.write(run.summary_file, summary)
    return run


def _rows(run: RunDir) -> list[tuple[str, str, str]]:
    return [(str(r["kind"]), str(r["host"]), str(r["line"])) for r in gather(run).children["fabric"]]


def test_a_failed_requirement_names_its_records_hosts_and_one_not_checked_names_none(tmp_path: Path) -> None:
    run = synthetic.sweep_run(tmp_path / "run")
    vm = assess(run).statuses[0].host
    named = FabricFailure("network", "fabric.require_network", "ib", vm, (("elsewhere", (0, 1)),))
    unchecked = FabricFailure("no_network_choice", "fabric.require_network / require_gdr", "", "", ((vm, (1,)),),
                              code="not_run")  # fmt: skip
    _with_fabric(run, FabricReport(hosts=[], findings=[], failures=[named, unchecked], notes=[]).to_json())
    assert _rows(run) == [("failure", "", named.sentence()), ("failure", "", unchecked.sentence())], (
        f"{vm} is in the first sentence's words, not its record; the second could not be checked"
    )
    blamed = FabricFailure("gdr", "fabric.require_gdr", "true", "no GPUDirect RDMA", ((vm, (0, 1)),))
    _with_fabric(run, FabricReport(hosts=[], findings=[], failures=[blamed], notes=[]).to_json())
    assert _rows(run) == [("failure", vm, blamed.sentence())]


def test_a_summary_without_records_is_read_by_its_words(tmp_path: Path) -> None:
    run = synthetic.sweep_run(tmp_path)
    vm = assess(run).statuses[0].host
    failure = f"fabric.require_network=ib: {vm} rank(s) 0-1 use Socket"
    _with_fabric(run, {"hosts": [], "findings": [], "failures": [failure], "notes": []})
    assert _rows(run) == [("failure", vm, failure)]
