"""The --html pages opened in a real browser (Debian's headless Chromium, tests/browser): a local run made on a
host whose name is markup, and a history trend. Each page renders with no console error and no request for
anything outside the file, says its verdict, shows a table row per result, and its screenshot is not blank.
The isolate run with a slowed node and the sweep are opened on the test cluster
(test_fabric_grains_slurm.py, test_scale_slurm.py).

COLLBENCH_SCREENSHOTS=DIR keeps each screenshot there (docs/img holds the README's)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from jobs.cli.main import main
from jobs.history.database import open_history
from jobs.history.gather import gather
from jobs.history.ingest import write_record
from tests.browser import OpenedReport, distinct_colours, open_report
from tests.conftest import REPO
from tests.jobs.rundir import synthetic

MARKUP_HOST = "n1<img src=x onerror=alert(1)>"
"""A host name no hostlist can hold, with markup that would run script if it reached the page as markup."""
SMALL = ["bench.ops=[all_reduce,all_gather]", "bench.max_bytes=4K", "bench.iters=2", "bench.warmup_iters=1"]


def screenshot_path(name: str) -> Path | None:
    folder = os.environ.get("COLLBENCH_SCREENSHOTS")
    return Path(folder) / f"{name}.png" if folder else None


def assert_shown_whole(opened: OpenedReport) -> None:
    """No console error, nothing fetched, no script run from the data, and a screenshot with content."""
    assert opened.console_errors == [], opened.console_errors
    assert opened.outside_requests == [], opened.outside_requests
    assert opened.dialogs == [], f"a value from the run ran as script: {opened.dialogs}"
    assert distinct_colours(opened.screenshot) > 50, "the screenshot is blank"


def local_run_on(host: str, where: Path) -> Path:
    """A real local run whose ranks see `host` as their host name (a UTS namespace of its own, as root)."""
    set_name = f"import socket, sys; socket.sethostname({host!r})"
    command = [sys.executable, "-m", "jobs.cli", "run", "ranks=2", f"output_dir={where}", *SMALL]
    script = f"{sys.executable} -c {json.dumps(set_name)} && exec " + " ".join(f"'{word}'" for word in command)
    done = subprocess.run(["unshare", "--uts", "sh", "-c", script], cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    run = next(line for line in done.stdout.splitlines() if line.startswith("# Run directory: "))
    return Path(run.removeprefix("# Run directory: "))


@pytest.mark.integration
def test_a_local_run_on_a_host_named_with_markup_shows_the_name_as_text(
    browser: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if os.geteuid() != 0:
        pytest.skip("a host name of the test's own needs a UTS namespace (root)")
    run = local_run_on(MARKUP_HOST, tmp_path / "runs")
    page = run / "report.html"
    assert main(["report", str(run), "--html", str(page)]) == 0
    lines = [line for line in (run / "table.txt").read_text().splitlines() if line.strip() and line[0] != "#"]
    with open_report(browser, page, screenshot_path("local-run")) as opened:
        assert_shown_whole(opened)
        assert opened.page.locator("img").count() == 0, "the host name became an <img> element"
        verdict = opened.text("#verdict")
        assert "PASSED" in verdict.upper(), verdict
        rows = sum(
            int(opened.page.locator("table.results").nth(i).get_attribute("data-rows"))
            for i in range(opened.count("table.results"))
        )
        assert rows == len(lines) == opened.count("table.results tbody tr"), "a row per line of table.txt"
        assert MARKUP_HOST in opened.text("#logs"), "the host name is shown, as text, beside its ranks' logs"
        first_log = opened.page.locator("#logs a[href$='.log']").first.get_attribute("href")
        assert first_log and (page.parent / first_log).is_file(), first_log


def test_a_history_trend_page_flags_the_run_below_its_baseline(
    browser: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'history.sqlite'}"
    nights = [1.0] * 6 + [3.0]
    with open_history(url) as history:
        for night, slower in enumerate(nights):
            record = gather(synthetic.sweep_run(tmp_path / "runs", slower=slower))
            record.run.update({"started": 1e9 + night * 86400.0, "excluded": ""})
            assert write_record(history, record).recorded
    page = tmp_path / "trend.html"
    size = str(synthetic.SIZES[-1])
    assert main(["history", "trend", "--op", "all_reduce", "--size", size, "--db", url, "--html", str(page)]) == 0
    capsys.readouterr()
    with open_report(browser, page, screenshot_path("history-trend")) as opened:
        assert_shown_whole(opened)
        assert opened.count("table.trend tbody tr") == len(nights)
        assert opened.count("#curves svg") >= 1
        below = opened.page.locator("table.trend tbody tr", has_text="below")
        assert below.count() == 1, opened.text("table.trend")


def test_the_browser_checks_catch_a_fetch_a_script_and_a_blank_page(browser: Any, tmp_path: Path) -> None:
    """The checks above can fail: a page that fetches an image and runs a script is caught, a blank one too."""
    bad = tmp_path / "bad.html"
    bad.write_text('<!doctype html><img src="http://192.0.2.1/x.png"><script>alert("ran")</script>')
    with open_report(browser, bad) as opened:
        assert opened.outside_requests == ["http://192.0.2.1/x.png"] and opened.dialogs == ["ran"]
    blank = tmp_path / "blank.html"
    blank.write_text("<!doctype html><title>nothing</title>")
    with open_report(browser, blank) as opened:
        assert distinct_colours(opened.screenshot) == 1
