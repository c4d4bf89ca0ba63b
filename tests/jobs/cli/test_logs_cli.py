"""`collbench logs` from the command line: a rank outside the run is bad input naming the world size, and
`--follow` starts as `logs` prints (the last `--tail` lines, each rank's host named) on a run that ended."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from jobs.rundir.layout import RunDir
from tests.conftest import collbench
from tests.jobs.rundir import synthetic

RANKS = 3
STEPS = 20


def _stamp(at: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(at)) + f".{int(at * 1e6) % 1_000_000:06d}+0000"


@pytest.fixture
def run(tmp_path: Path) -> RunDir:
    """An ended 3-rank run on hosts h0, h1, h2: each rank's log, and each task's stdout, whose submitit lines
    name no host (the host of those lines comes from the rank's log)."""
    run = synthetic.sweep_run(tmp_path / "runs", ranks=RANKS)
    run.update_meta(job_id="gone")  # no process: the local launcher says the run has ended
    base = time.time() - 600
    for rank in range(RANKS):
        lines = [
            f"{_stamp(base + step + rank / 10)} | INFO    | rank={rank} local={rank} host=h{rank} | step {step}"
            for step in range(STEPS)
        ]
        run.rank_log(rank).write_text("\n".join(lines) + "\n")
    run.submitit_dir.mkdir(parents=True, exist_ok=True)
    for rank in range(RANKS):
        at = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(base + STEPS + rank)) + ",000"
        (run.submitit_dir / f"gone_{rank}_log.out").write_text(f"submitit INFO ({at}) - Job completed\nbye {rank}\n")
    return run


@pytest.mark.parametrize(
    ("spec", "named"),
    [("7", "rank 7 is"), ("1,7", "rank 7 is"), ("5-9", "ranks 5-9 are"), ("0,3,5-6", "ranks 3,5-6 are")],
)
def test_a_rank_outside_the_run_is_one_line_naming_the_world_size(run: RunDir, spec: str, named: str) -> None:
    result = collbench("logs", str(run.path), "--rank", spec, cwd=run.path.parent)
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        f"collbench: error: --rank: {named} outside the run, whose world size is 3; allowed: 0-2"
    ]


def test_ranks_inside_the_run_are_printed(run: RunDir) -> None:
    result = collbench("logs", str(run.path), "--rank", "0-2", cwd=run.path.parent)
    assert result.returncode == 0, result.stderr
    assert len(result.stdout.splitlines()) == RANKS * (STEPS + 2)


def test_follow_on_an_ended_run_prints_what_logs_prints(run: RunDir) -> None:
    plain = collbench("logs", str(run.path), cwd=run.path.parent)
    followed = collbench("logs", str(run.path), "--follow", cwd=run.path.parent)
    assert plain.returncode == followed.returncode == 0, followed.stderr
    assert followed.stdout == plain.stdout
    assert len(plain.stdout.splitlines()) == RANKS * (STEPS + 2)
    out_lines = [line for line in plain.stdout.splitlines() if " out | " in line]
    assert [line.split()[:2] for line in out_lines] == [[str(r), f"h{r}"] for r in range(RANKS) for _ in range(2)]


@pytest.mark.parametrize("tail", [0, 2, 5, 500])
def test_follow_honours_tail(run: RunDir, tail: int) -> None:
    plain = collbench("logs", str(run.path), "--tail", str(tail), cwd=run.path.parent)
    followed = collbench("logs", str(run.path), "--follow", "--tail", str(tail), cwd=run.path.parent)
    assert plain.returncode == followed.returncode == 0, followed.stderr
    assert followed.stdout == plain.stdout
    assert len(followed.stdout.splitlines()) == min(tail, RANKS * (STEPS + 2))
