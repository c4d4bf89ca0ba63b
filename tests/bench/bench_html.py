"""How big the --html page is and how long it takes to write and to render, at the issue's three scales.

    .venv/bin/python -m tests.bench.bench_html [--skip-big]

Not part of the test run. Builds three run directories without running anything (a 3-node run of 24 ranks
and a 16,384-rank run as bench_scale writes them, 20 sizes of all_reduce; a 1,024-node isolate run as the
job plans its rounds, one node three times slower: tests/jobs/rundir/synthetic.paced_isolate_run), then for
each: the command with and without --html as separate processes (seconds, peak RSS), the page's size, and
the time headless Chromium (tests/browser) takes to load it and to take a full-page screenshot, less the
same for about:blank.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.bench.bench_scale import build_run
from tests.browser import chromium
from tests.jobs.rundir.synthetic import paced_isolate_run

REPO = Path(__file__).resolve().parents[2]


def timed(argv: list[str]) -> tuple[float, float]:
    """(seconds, peak RSS MiB) of one collbench command in a fresh interpreter."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as sink:
        proc = subprocess.Popen([sys.executable, "-m", "jobs.cli", *argv], stdout=sink, stderr=sink, cwd=REPO)
        _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) not in (0, 1):
        raise SystemExit(f"collbench {' '.join(argv)} failed: exit {os.waitstatus_to_exitcode(status)}")
    return seconds, usage.ru_maxrss / 1024


def render_s(browser: object, url: str) -> float:
    """Seconds from navigation to a full-page screenshot of `url`, in a fresh page."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})  # type: ignore[attr-defined]
    try:
        start = time.perf_counter()
        page.goto(url, wait_until="load")
        page.screenshot(full_page=True)
        return time.perf_counter() - start
    finally:
        page.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-big", action="store_true", help="leave out the 16,384-rank run (it takes minutes)")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="collbench-bench-html-"))
    cases = [
        ("3-node run, 24 ranks", ["report"], build_run(root / "small", 24, 20, 20).path),
        ("1,024-node isolate", ["isolate", "report"], paced_isolate_run(root / "iso", 1024, _one_slow).path),
    ]
    if not args.skip_big:
        cases.append(("16,384-rank run", ["report"], build_run(root / "big", 16384, 20, 5).path))
    print(f"# run directories under {root}; each command a separate process")
    print(f"{'run':<22} {'page KiB':>9} {'without s':>10} {'with s':>8} {'with MiB':>9} {'render s':>9}")
    with chromium() as browser:
        blank = min(render_s(browser, "about:blank") for _ in range(3))
        for name, command, run in cases:
            without, _ = timed([*command, str(run)])
            page = run / "report.html"
            with_html, peak = timed([*command, str(run), "--html", str(page)])
            if not page.is_file():
                raise SystemExit(f"collbench {' '.join(command)} {run} --html {page} wrote no page")
            render = min(render_s(browser, page.as_uri()) for _ in range(3)) - blank
            print(
                f"{name:<22} {page.stat().st_size / 1024:>9.0f} {without:>10.2f} {with_html:>8.2f} {peak:>9.0f} "
                f"{render:>9.2f}",
                flush=True,
            )
    print(f"# render: the best of three loads to a full-page screenshot, less about:blank's {blank:.2f} s")


def _one_slow(group: tuple[int, ...]) -> float:
    return 3.0 if 513 in group else 1.0


if __name__ == "__main__":
    main()
