"""A run page whose verdict holds units the evidence could not settle: the verdict block says INCONCLUSIVE with
data-exit 5 and lists each unit's line, the heatmap marks them apart from the named (data-inconclusive, dashed
amber, italic labels), and nothing is in the named table, the exclude or the drain lines for them."""

from __future__ import annotations

from pathlib import Path

from jobs.inspect.html.heatmap import UNDECIDED
from jobs.inspect.html.run_page import render_run_page
from jobs.inspect.isolate_verdict import IsolateOutcome, assess_isolate
from jobs.inspect.report import assess
from jobs.isolate.verdict import EVERY_RAIL, BadLink, Inconclusive
from jobs.rundir.layout import RunDir
from tests.jobs.inspect.html.pages import Parsed
from tests.jobs.rundir.synthetic import paced_isolate_run


def units() -> list[Inconclusive]:
    return [
        Inconclusive("node", (3,), EVERY_RAIL, (), 5, 2, 0.8, 0.8, "spread", 0.5),
        Inconclusive("link", (0, 5), EVERY_RAIL, (), 1, 1, 0.5, 0.5, "once", 0.3),
    ]


def page_of(run: RunDir, iso: IsolateOutcome) -> Parsed:
    outcome = assess(run, with_analysis=True)
    return Parsed(render_run_page(run, outcome, iso.exit_code, run.path, isolate=iso))


def undecided_run(tmp_path: Path) -> tuple[RunDir, IsolateOutcome]:
    run = paced_isolate_run(tmp_path, 6, lambda group: 1.0)
    iso = assess_isolate(run, assess(run))
    assert iso.verdict is not None and not iso.verdict.found
    iso.verdict.inconclusive = units()
    return run, iso


def test_the_verdict_is_inconclusive_with_exit_5_and_each_unit_listed(tmp_path: Path) -> None:
    run, iso = undecided_run(tmp_path)
    page = page_of(run, iso)
    verdict = page.by_id("verdict")
    assert verdict.attrs["data-exit"] == "5" and "inconclusive" in verdict.attrs["class"].split()
    assert "INCONCLUSIVE n4, link n1-n6: nothing confirmed, drain nothing for it" in verdict.text
    assert "exit status 5: nothing confirmed, but a node, rail or link inconclusive" in verdict.text
    assert "INCONCLUSIVE n4: busbw 0.8 GB/s" in verdict.text and "INCONCLUSIVE link n1-n6: " in verdict.text
    listed = page.by_id("inconclusive")
    assert listed.attrs["data-rows"] == "2" and "collbench isolate nodes=" in listed.text
    heatmap = page.by_id("heatmap")
    assert heatmap.attrs["data-inconclusive"].split() == ["n1", "n4", "n6"] and heatmap.attrs["data-named"] == ""
    assert UNDECIDED in heatmap.text or any(UNDECIDED in str(e.attrs) for e in page.elements), "marked apart"
    assert not page.with_class("findings") and "nothing named" in page.by_id("pairs").text
    assert not [e for e in page.elements if e.attrs.get("id") in ("exclude", "drain")]


def test_a_confirmed_fault_beside_an_inconclusive_unit_is_a_failure_marked_as_named(tmp_path: Path) -> None:
    run, iso = undecided_run(tmp_path)
    assert iso.verdict is not None
    iso.verdict.bad_links = [BadLink((1, 2), 0.01, 0.01)]
    page = page_of(run, iso)
    verdict = page.by_id("verdict")
    assert verdict.attrs["data-exit"] == "1" and "failed" in verdict.attrs["class"].split()
    heatmap = page.by_id("heatmap")
    assert heatmap.attrs["data-named"].split() == ["n2", "n3"]
    assert heatmap.attrs["data-inconclusive"].split() == ["n1", "n4", "n6"]
