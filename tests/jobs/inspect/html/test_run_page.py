"""A run's page from its directory: the sections in the issue's order, the hooks a browser test reads, the
tables row for row, the logs linked relative to the page, and every value from a host or an error shown as
text, never as markup."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from urllib.parse import unquote

import pytest

from jobs.inspect.html.pages import render
from jobs.inspect.html.plain import HistoryPlace, PlaceRow
from jobs.inspect.html.run_page import render_run_page
from jobs.inspect.report import assess
from jobs.rundir.layout import RunDir
from jobs.rundir.records.rank import STATUS, RankState
from tests.jobs.inspect.html.pages import Parsed, rows_of
from tests.jobs.rundir.synthetic import SIZES, isolate_run, sweep_run

SCRIPT = "<script>alert(1)</script>"
IMG = "n1<img src=x onerror=alert(1)>"


def page_of(run: RunDir, exit_code: int | None = None, **more: object) -> Parsed:
    outcome = assess(run, with_analysis=True)
    code = outcome.exit_code if exit_code is None else exit_code
    return Parsed(render_run_page(run, outcome, code, run.path, **more))  # type: ignore[arg-type]


def test_a_run_page_opens_with_the_verdict_then_the_sections_in_order(tmp_path: Path) -> None:
    run = sweep_run(tmp_path, ranks=2)
    page = page_of(run)
    verdict = page.by_id("verdict")
    assert verdict.attrs["data-exit"] == "0" and "PASSED" in verdict.text and "exit status 0" in verdict.text
    assert f"collbench run --config {run.config_file}" in page.by_id("command").text
    order = [e.attrs["id"] for e in page.tags("section")]
    assert order == ["verdict", "tables", "curves", "per-host", "fabric", "history", "logs"]
    assert "add --against-history" in page.by_id("history").text
    assert not page.tags("script") and not [e for e in page.elements if e.attrs.get("src")]


def test_each_results_table_has_a_row_per_line_of_the_text_table(tmp_path: Path) -> None:
    page = page_of(sweep_run(tmp_path, ranks=2))
    [table] = page.with_class("results")
    assert table.attrs["data-op"] == "all_reduce"
    assert len(rows_of(table)) == int(table.attrs["data-rows"]) == len(SIZES)
    cells = [child.text for child in rows_of(table)[0].children]
    assert cells[:5] == ["1024", "256", "float", "sum", "-1"] and cells[5] == "N/A"  # in place only
    [svg] = page.by_id("curves").children[1].children  # <figure><svg>
    assert svg.tag == "svg"


def test_the_logs_are_linked_relative_to_the_page_and_the_failed_rank_comes_first(tmp_path: Path) -> None:
    run = sweep_run(tmp_path, ranks=3)
    failed = replace(STATUS.read(run.rank_status(2)), state=RankState.FAILED, error="RuntimeError: boom")
    STATUS.write(run.rank_status(2), replace(failed, failed_at=time.time()))
    elsewhere = tmp_path / "reports"
    elsewhere.mkdir()
    outcome = assess(run, with_analysis=True)
    page = Parsed(render_run_page(run, outcome, 1, elsewhere))
    logs = page.by_id("logs")
    hrefs = [e.attrs["href"] for e in page.tags("a") if e.attrs.get("href", "").startswith("../")]
    assert all(href.endswith(".log") for href in hrefs)  # the first link of the logs is a log
    assert hrefs[0].endswith("rank-00002.log") and "boom" in logs.text  # the failed rank first, with why
    assert {(elsewhere / unquote(href)).resolve() for href in hrefs} == {run.rank_log(r).resolve() for r in range(3)}
    assert all(not href.startswith("/") for href in hrefs)
    assert page.by_id("verdict").attrs["class"] == "verdict failed" and "FAILED" in page.by_id("verdict").text


def test_an_isolate_run_marks_the_slow_link_on_the_heatmap_and_names_it_with_its_code(tmp_path: Path) -> None:
    run = isolate_run(tmp_path, nodes=6, slow_link=(1, 2))
    page = page_of(run, exit_code=1)
    assert "FOUND n2-n3" in page.by_id("verdict").text and "exit status 1" in page.by_id("verdict").text
    heatmap = page.by_id("heatmap")
    assert heatmap.attrs["data-named"].split() == ["n2", "n3"] and "n2" in heatmap.text
    assert len([e for e in page.elements if e.tag == "image"]) >= 1  # the matrix is one raster, not a shape per cell
    [findings] = page.with_class("findings")
    assert [child.text for child in rows_of(findings)[0].children][:2] == ["n2-n3", "slow_link"]
    [groups] = page.with_class("groups")
    slow = [row for row in rows_of(groups) if row.attrs.get("class") == "bad"]
    assert slow and all("n2 n3" in row.text for row in slow)
    assert [e.attrs["id"] for e in page.tags("section")][3] == "pairs"


def test_hosts_and_errors_with_markup_show_as_text_never_as_elements(tmp_path: Path) -> None:
    run = sweep_run(tmp_path, ranks=2)
    for rank, host in enumerate((SCRIPT, IMG)):
        status = replace(STATUS.read(run.rank_status(rank)), host=host)
        if rank == 1:
            status = replace(status, state=RankState.FAILED, error=f"failed on {SCRIPT}", failed_at=time.time())
        STATUS.write(run.rank_status(rank), status)
    outcome = assess(run, with_analysis=True)
    history = HistoryPlace(f"{SCRIPT} against the history", [PlaceRow("all_reduce", 1024, 1.0, 0, IMG)], [IMG])
    html = render_run_page(run, outcome, 1, run.path, history=history, history_asked=True)
    page = Parsed(html)
    assert not page.tags("script") and not page.tags("img")
    text = "".join(page.text)
    assert SCRIPT in text and IMG in text and f"failed on {SCRIPT}" in text
    assert "&lt;script&gt;" in html and "<script>" not in html


def test_an_isolate_heatmap_with_markup_in_a_host_keeps_it_text_inside_the_svg(tmp_path: Path) -> None:
    from jobs.inspect.html.heatmap import PairMatrix, heatmap_svg

    svg = heatmap_svg(
        PairMatrix([SCRIPT, IMG, "n$3$"], {(0, 1): 0.1, (0, 2): 1.0, (1, 2): 1.0}, 1.0, {}, {0: SCRIPT}), "t"
    )
    assert svg is not None
    page = Parsed(f"<html><body>{svg}</body></html>")
    assert not page.tags("script") and not page.tags("img")
    assert SCRIPT in "".join(page.text) and IMG in "".join(page.text)


def test_an_undefined_name_in_a_template_is_an_error_not_an_empty_string() -> None:
    import jinja2

    with pytest.raises(jinja2.UndefinedError):
        render("compare.html.j2")
