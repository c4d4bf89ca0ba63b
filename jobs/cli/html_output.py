"""`--html FILE`: one self-contained HTML file beside what a command prints. The file is checked before
any work (a name ending in .html or .htm, in a folder that exists and can be written, never among a run
directory's own records), written atomically (a scratch file in the same folder, then renamed: a reader
never sees half a page, a failed write leaves nothing), and said on stderr with its size. The pages
themselves are jobs.inspect.html's; what they need from the results history is gathered here."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from jobs.config.model import ConfigError

if TYPE_CHECKING:
    from jobs.history.held import HeldRun
    from jobs.inspect.check_verdict import CheckOutcome
    from jobs.inspect.html.plain import HistoryPlace
    from jobs.inspect.isolate_verdict import IsolateOutcome
    from jobs.inspect.report import RunOutcome
    from jobs.rundir.layout import RunDir

SUFFIXES = (".html", ".htm")
RECORD_FOLDERS = frozenset(
    ("logs", "results", "status", "env", "heartbeat", "submitit", "isolate", "fabric", "nccl-tests", "check")
)
"""A run directory's folders of records: a page is written beside them, never into them."""


def add_html_option(command: argparse.ArgumentParser, what: str) -> None:
    command.add_argument(
        "--html",
        metavar="FILE.html",
        default=None,
        help=f"also write {what} as one self-contained HTML file (opens offline in any browser)",
    )


def html_target(text: str | None) -> Path | None:
    """The file --html names, refused (ConfigError: one line, exit 2) before anything is read or run."""
    if text is None:
        return None
    path = Path(text).expanduser()
    if path.suffix.lower() not in SUFFIXES:
        raise ConfigError(f"--html {text}: the file must end in .html or .htm")
    if path.is_dir():
        raise ConfigError(f"--html {text}: is a directory; allowed: a file ending in .html or .htm")
    folder = path.parent.resolve()
    if not folder.is_dir():
        raise ConfigError(f"--html {text}: its folder {str(folder)!r} does not exist")
    if not os.access(folder, os.W_OK):
        raise ConfigError(f"--html {text}: its folder {str(folder)!r} cannot be written")
    if folder.name in RECORD_FOLDERS and (folder.parent / "run.json").is_file():
        raise ConfigError(
            f"--html {text}: inside the run directory's records ({folder.name}/); allowed: beside them, "
            f"e.g. {folder.parent / 'report.html'}"
        )
    return path


def write_html(path: Path, page: str) -> None:
    """The page written whole or not at all, then `# HTML report: FILE (N KiB)` on stderr."""
    data = page.encode("utf-8")
    try:
        handle, scratch = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as error:
        raise ConfigError(f"--html {path}: cannot write it: {error}") from None
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.chmod(scratch, 0o666 & ~_umask())  # as open() would have made it
        os.replace(scratch, path)
    except OSError as error:
        Path(scratch).unlink(missing_ok=True)
        raise ConfigError(f"--html {path}: cannot write it: {error}") from None
    print(f"# HTML report: {path} ({len(data) / 1024:.0f} KiB)", file=sys.stderr, flush=True)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_run_html(
    target: Path,
    run: RunDir,
    outcome: RunOutcome,
    exit_code: int,
    *,
    isolate: IsolateOutcome | None = None,
    check: CheckOutcome | None = None,
    history: HistoryPlace | None = None,
    history_asked: bool = False,
) -> None:
    """The run's page (report, isolate wait/report, check): one code path for every command that shows a run."""
    from jobs.inspect.html.run_page import render_run_page

    page = render_run_page(
        run, outcome, exit_code, target.parent, isolate=isolate, check=check, history=history,
        history_asked=history_asked,
    )  # fmt: skip
    write_html(target, page)


def history_place(held: HeldRun) -> HistoryPlace:
    """A judged run as the page's plain data: its header, a row per (op, size), the lines said besides."""
    from jobs.cli.against_history import excluded_lines, left_out_lines
    from jobs.inspect.html.plain import HistoryPlace, PlaceRow

    judgement = held.judgement
    regressed = judgement.regressions
    rows = [
        PlaceRow(
            op=row.op, size=row.size, busbw=row.busbw, runs=row.runs, verdict=row.verdict, median=row.median,
            mad=row.mad, allowed=row.allowed, rank=row.rank, percentile=row.percentile,
            drop=row.drop_words() if row.median is not None else "",
            regression=row.regression() if row in regressed else "",
        )
        for row in judgement.rows
    ]  # fmt: skip
    lines: list[str] = []
    if judgement.against:
        lines.append(f"judged against {len(judgement.against)} run(s): {', '.join(judgement.against)}")
    thin = judgement.thin_line()
    lines += [thin] if thin else []
    return HistoryPlace(held.header().removeprefix("# "), rows, [*lines, *left_out_lines(held)], excluded_lines(held))
