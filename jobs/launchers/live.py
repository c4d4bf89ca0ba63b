"""What `wait` shows while it waits: a live line on a terminal (tqdm), otherwise a plain line every 30 s,
always on stderr, so `--format json|csv` leaves stdout to the document; and for the text format, on stdout as
nccl-tests prints them, the run's header and each row as rank 0 records it (jobs/inspect/live_table.py)."""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass
from typing import Any, TextIO

from jobs.inspect.live_table import LiveTable
from jobs.inspect.progress import RankProgress
from jobs.rundir.layout import RunDir

PLAIN_EVERY_S = 30.0


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Where a job stands at one poll."""

    job_id: str
    state: str
    state_since: float
    """time.monotonic() when this wait first saw the state."""
    progress: list[RankProgress]

    @property
    def total(self) -> int:
        return max((p.total for p in self.progress), default=0)

    @property
    def done(self) -> int:
        """Measurements the slowest rank has finished: the job's real progress."""
        return min((p.completed for p in self.progress), default=0) if self.total else 0

    @property
    def furthest_behind(self) -> RankProgress | None:
        started = [p for p in self.progress if p.phase != "none"]
        if not started or len({p.position for p in self.progress}) < 2:
            return None
        return min(self.progress, key=lambda p: p.position)


def _duration(seconds: float) -> str:
    seconds = max(0, int(seconds))
    return f"{seconds // 3600}h{seconds // 60 % 60:02d}m" if seconds >= 3600 else f"{seconds // 60}m{seconds % 60:02d}s"


def describe(snapshot: Snapshot, now: float) -> str:
    """The job's state and for how long, and the rank furthest behind, in one short phrase."""
    text = f"{snapshot.state} for {_duration(now - snapshot.state_since)}"
    behind = snapshot.furthest_behind
    if behind is not None:
        text += f", furthest behind: rank {behind.rank} on {behind.host}, {behind.where}"
    return text


def _columns(out: TextIO) -> int:
    """The terminal's width; 0 when it does not say (a fresh pseudo-terminal reports 0 x 0)."""
    try:
        return os.get_terminal_size(out.fileno()).columns
    except (OSError, ValueError):
        return 0


class Live:
    """A live tqdm line on a terminal; elsewhere one plain line every `every_s` seconds. With `rows_of`, the
    header and rows of that run on `rows_out` as they are recorded, unless it had ended before the wait."""

    def __init__(
        self,
        out: TextIO = sys.stderr,
        interactive: bool | None = None,
        every_s: float = PLAIN_EVERY_S,
        rows_of: RunDir | None = None,
        rows_out: TextIO | None = None,
    ) -> None:
        self.out = out
        self.every_s = every_s
        self.interactive = out.isatty() if interactive is None else interactive
        self.started = time.monotonic()
        self.last_plain = self.started
        self.bar: object | None = None
        self.table = LiveTable(rows_of) if rows_of is not None and not rows_of.summary_file.exists() else None
        self.rows_out = rows_out or sys.stdout

    def pump(self, final: bool = False) -> None:
        """The header and rows recorded since the last pump, on `rows_out` (above the live line)."""
        if self.table is None:
            return
        lines = self.table.lines(final)
        if not lines:
            return
        if self.bar is not None:
            from tqdm import tqdm

            with tqdm.external_write_mode(file=self.rows_out):
                self._write_rows(lines)
        else:
            self._write_rows(lines)

    def _write_rows(self, lines: list[str]) -> None:
        self.rows_out.write("".join(line + "\n" for line in lines))
        self.rows_out.flush()

    def say(self, line: str) -> None:
        """A line that must be seen now (a node down): above the live line."""
        if self.bar is not None:
            from tqdm import tqdm

            tqdm.write(line, file=self.out)
        else:
            print(line, file=self.out, flush=True)

    def update(self, snapshot: Snapshot) -> None:
        self.pump()
        now = time.monotonic()
        if self.interactive:
            self._update_bar(snapshot, now)
        elif now - self.last_plain >= self.every_s:
            self.last_plain = now
            print(f"collbench: {self.plain_line(snapshot, now)}", file=self.out, flush=True)

    def plain_line(self, snapshot: Snapshot, now: float) -> str:
        line = f"job {snapshot.job_id} {describe(snapshot, now)}; elapsed {_duration(now - self.started)}"
        if snapshot.total:
            line += f"; {snapshot.done}/{snapshot.total} measurements (slowest rank)"
            rate = snapshot.done / max(now - self.started, 1e-9)
            if 0 < snapshot.done < snapshot.total and rate > 0:
                line += f", about {_duration((snapshot.total - snapshot.done) / rate)} left"
        return line

    def _update_bar(self, snapshot: Snapshot, now: float) -> None:
        from tqdm import tqdm

        if self.bar is None:
            width: dict[str, Any] = {"dynamic_ncols": True} if _columns(self.out) > 0 else {"ncols": 120}
            self.bar = tqdm(
                total=snapshot.total or None,
                file=self.out,
                desc=f"job {snapshot.job_id}",
                unit="meas",
                bar_format="{desc}: {n}/{total} measurements |{bar}| {elapsed}<{remaining} {postfix}",
                **width,
            )
        bar = self.bar
        assert isinstance(bar, tqdm)
        if snapshot.total and bar.total != snapshot.total:
            bar.total = snapshot.total
        if snapshot.done > bar.n:
            bar.update(snapshot.done - bar.n)
        bar.set_postfix_str(describe(snapshot, now), refresh=True)

    def close(self) -> None:
        """The live line gone, then the rows still to show (a row whose other placement never came)."""
        if self.bar is not None:
            from tqdm import tqdm

            bar = self.bar
            assert isinstance(bar, tqdm)
            bar.close()
            self.bar = None
        self.pump(final=True)
        self.table = None
