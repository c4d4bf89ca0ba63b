"""The suite's own headless browser, as tests/postgres is its own database: Debian's chromium installed when
missing, driven by Playwright with that system browser (no browser download), one instance for the session.

`open_report` opens an HTML file from disk as a user would and keeps what the checks need: every console
error and uncaught page error, every request for anything but the file itself (a report must fetch nothing:
no CDN, no web font, no image from a host name), every dialog a script opened, and a full-page screenshot.
"""

from __future__ import annotations

import io
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PACKAGE = "chromium"
EXECUTABLE = "/usr/bin/chromium"
FLAGS = [
    # As root in a container: no sandbox, no GPU. The rest keep Chromium from reaching for Google's hosts,
    # which this machine's closed network refuses (noise in the console, slow starts).
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
]


def cannot_run_browser() -> str | None:
    if Path(EXECUTABLE).exists():
        return None
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        return f"{EXECUTABLE} is missing, and installing Debian's {PACKAGE} needs root and apt-get"
    return None


def install_chromium() -> None:
    if Path(EXECUTABLE).exists():
        return
    from tests.debian import install

    install([PACKAGE])
    assert Path(EXECUTABLE).exists(), f"apt-get installed {PACKAGE}, but there is no {EXECUTABLE}"


@contextmanager
def chromium() -> Iterator[Any]:
    """A headless Chromium (Playwright's Browser) for as long as the block runs."""
    from playwright.sync_api import sync_playwright

    install_chromium()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=EXECUTABLE, args=FLAGS, headless=True)
        try:
            yield browser
        finally:
            browser.close()


@dataclass
class OpenedReport:
    """An HTML report as the browser showed it."""

    page: Any
    """Playwright's Page, still open: query it with page.locator(...)."""
    console_errors: list[str] = field(default_factory=list)
    outside_requests: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)
    """Every alert, confirm or prompt the page opened: script that ran (an onerror=alert(1) from the data)."""
    screenshot: bytes = b""

    def text(self, selector: str) -> str:
        return str(self.page.locator(selector).first.inner_text())

    def count(self, selector: str) -> int:
        return int(self.page.locator(selector).count())


@contextmanager
def open_report(browser: Any, path: Path, screenshot_to: Path | None = None) -> Iterator[OpenedReport]:
    """Open `path` (file://) in a fresh page; the screenshot is the whole page, also written to
    `screenshot_to` when given."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    own = path.resolve().as_uri()
    opened = OpenedReport(page)
    page.on("console", lambda message: message.type == "error" and opened.console_errors.append(message.text))
    page.on("pageerror", lambda error: opened.console_errors.append(f"page error: {error}"))
    page.on("dialog", lambda dialog: (opened.dialogs.append(dialog.message), dialog.dismiss()))
    page.on("request", lambda request: _outside(request.url, own) and opened.outside_requests.append(request.url))
    try:
        page.goto(own, wait_until="load")
        opened.screenshot = page.screenshot(full_page=True)
        if screenshot_to is not None:
            screenshot_to.write_bytes(opened.screenshot)
        yield opened
    finally:
        page.close()


def _outside(url: str, own: str) -> bool:
    """A data: URL is the file's own inline image; anything else but the file itself was fetched."""
    return url != own and not url.startswith("data:")


def distinct_colours(png: bytes) -> int:
    """How many colours the screenshot holds: a blank page is one, a page with text, tables and plots
    hundreds."""
    from PIL import Image

    with Image.open(io.BytesIO(png)) as image:
        colours = image.convert("RGB").getcolors(maxcolors=1 << 20)
    return len(colours) if colours is not None else 1 << 20
