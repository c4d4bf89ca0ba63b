"""`collbench logs --follow` (jobs/inspect/logs.py `follow`) while ranks write: the last `--tail` lines there
already, then only the lines written since, a line printed once it is complete, and each line named with
its rank's host, the task's stdout too (its submitit lines carry none: the rank's collbench log says it)."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path

from jobs.inspect.logs import LogFilter, follow, parse_rank_spec
from jobs.rundir.layout import RunDir

DAY = "2026-01-02T03:04"


def _log(rank: int, second: int, text: str) -> str:
    return f"{DAY}:{second:02d}.000000+0000 | INFO    | rank={rank} local={rank} host=node{rank} | {text}\n"


def _submitit(second: int, text: str) -> str:
    return f"submitit INFO (2026-01-02 03:04:{second:02d},500) - {text}\n"


def _append(path: Path, text: str) -> None:
    with path.open("a", encoding="utf-8") as handle:
        handle.write(text)


def _run(tmp_path: Path) -> RunDir:
    run = RunDir.create_at(tmp_path / "20260102-030405-local-abcdef")
    for rank in (0, 1):
        run.rank_log(rank).write_text("".join(_log(rank, 2 * step + rank, f"step {step}") for step in range(5)))
    return run


def _script(*steps: Callable[[], None]) -> Callable[[], bool]:
    """`finished` for follow: each call does the next step (ranks writing) and says the run goes on; once
    the steps are done, the run has ended."""
    left = list(steps)

    def finished() -> bool:
        if not left:
            return True
        left.pop(0)()
        return False

    return finished


def test_tail_then_only_the_new_lines_each_with_its_host(tmp_path: Path) -> None:
    run = _run(tmp_path)
    stdout = run.submitit_dir / "4242_1_log.out"

    def rank_1_writes() -> None:
        _append(run.rank_log(1), _log(1, 20, "step 10"))
        stdout.write_text(_submitit(21, "Job completed") + "print from rank 1\n")
        _append(run.rank_log(0), "a line still being wri")  # no newline yet: not printed

    def rank_0_finishes_its_line() -> None:
        _append(run.rank_log(0), "tten\n" + _log(0, 30, "done"))

    out = io.StringIO()
    follow(run, LogFilter(), _script(rank_1_writes, rank_0_finishes_its_line), tail=3, poll_s=0, out=out)
    assert out.getvalue().splitlines() == [
        _shown(1, "log", _log(1, 7, "step 3")),  # the last 3 lines there when it started
        _shown(0, "log", _log(0, 8, "step 4")),
        _shown(1, "log", _log(1, 9, "step 4")),
        _shown(1, "log", _log(1, 20, "step 10")),  # then what the ranks wrote since, as they wrote it
        _shown(1, "out", _submitit(21, "Job completed")),
        _shown(1, "out", "print from rank 1"),
        _shown(0, "log", "a line still being written"),
        _shown(0, "log", _log(0, 30, "done")),
    ]


def test_without_tail_every_line_there_is_printed_first(tmp_path: Path) -> None:
    run = _run(tmp_path)
    out = io.StringIO()
    follow(run, LogFilter(ranks=parse_rank_spec("1")), _script(), poll_s=0, out=out)
    assert out.getvalue().splitlines() == [_shown(1, "log", _log(1, 2 * step + 1, f"step {step}")) for step in range(5)]


def test_tail_0_prints_only_new_lines(tmp_path: Path) -> None:
    run = _run(tmp_path)
    out = io.StringIO()
    follow(run, LogFilter(), _script(lambda: _append(run.rank_log(0), _log(0, 40, "late"))), tail=0, poll_s=0, out=out)
    assert out.getvalue().splitlines() == [_shown(0, "log", _log(0, 40, "late"))]


def _shown(rank: int, source: str, text: str) -> str:
    return f"{rank:>5} {f'node{rank}':<12} {source} | {text.rstrip()}"
