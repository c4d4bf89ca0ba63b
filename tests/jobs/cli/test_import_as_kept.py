"""`collbench import` of nccl-tests' output as people keep it (issue 29), to the run directory: processes that
each ran alone are ranks of their own, never averaged; the old error column fails the run where nccl-tests'
tolerance says so, with no count of wrong elements made up; rows with no header take --ranks. In-process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jobs.cli.main import main
from jobs.rundir.layout import RunDir
from jobs.rundir.records.rank import STATUS, RankState

LOGS = Path(__file__).parents[1] / "imports" / "logs"


def _import(tmp_path: Path, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, RunDir | None, str, str]:
    code = main(["import", *args, "--output-dir", str(tmp_path / "runs")])
    out, err = capsys.readouterr()
    made = list((tmp_path / "runs").iterdir()) if (tmp_path / "runs").is_dir() else []
    return code, RunDir(made[0]) if len(made) == 1 else None, out, err


def _rows(run: RunDir, capsys: pytest.CaptureFixture[str]) -> list[dict[str, object]]:
    main(["report", str(run.path), "--format", "json"])
    rows: list[dict[str, object]] = json.loads(capsys.readouterr().out)["rows"]
    return rows


def test_processes_each_alone_are_ranks_of_their_own(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, run, out, err = _import(tmp_path, capsys, str(LOGS / "mpirun-non-mpi-interleaved.log"))
    assert code == 0 and run is not None, err
    assert out == f"imported 12 row(s) of all_reduce on 2 processes, each alone (nranks 1) into {run.path}\n"
    assert "collbench: import: 2 processes, each alone (nranks 1): kept apart" in err
    rows = _rows(run, capsys)
    first = [(r["group"], r["nranks"], r["time_us"]) for r in rows if r["size"] == 1 << 30 and not r["in_place"]]
    assert first == [("process 0 alone (nranks 1)", 1, 700.0), ("process 1 alone (nranks 1)", 1, 703.0)]
    assert run.read_meta().world_size == 2


def test_the_old_error_column_beyond_tolerance_fails_the_run_without_a_made_up_count(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, run, _, err = _import(tmp_path, capsys, str(LOGS / "v2.11-sendrecv-error-column.log"))
    assert code == 1 and run is not None, err
    status = STATUS.read(run.rank_status(0))
    assert status.state is RankState.FAILED and status.error == (
        "imported: 1 row(s) wrong as nccl-tests judged them, by the old layout's error column (the largest "
        "deviation, not a count; #wrong N/A there): 4194304 B out-of-place at "
        f"{LOGS / 'v2.11-sendrecv-error-column.log'}:12: max deviation 3e+02 > float's tolerance 1e-05 x "
        "(nranks - 1) = 1e-05"
    )
    wrong = {(r["size"], r["in_place"]): r["wrong"] for r in _rows(run, capsys)}
    assert wrong[(4194304, False)] == -1 and wrong[(2097152, False)] == 0 and wrong[(4194304, True)] == 0


def test_rows_with_no_header_take_ranks_where_their_figures_tell_none(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(LOGS / "rows-only-broadcast.log")
    code, run, _, err = _import(tmp_path, capsys, path)
    assert code == 2 and run is None and err.count("\n") == 1
    assert "busbw/algbw = 1 fits any rank count (broadcast: 1); give it with --ranks N" in err
    code, run, _, err = _import(tmp_path, capsys, path, "--ranks", "0")
    assert code == 2 and run is None
    assert err == "collbench: error: --ranks: 0 is not a number of ranks; allowed: 1 or more\n"
    code, run, out, err = _import(tmp_path, capsys, path, "--ranks", "8")
    assert code == 0 and run is not None, err
    assert out.startswith("imported 8 row(s) of broadcast on 8 rank(s)") and run.read_meta().world_size == 8


def test_rows_with_no_header_of_16_ranks_say_how_their_ranks_were_told(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, run, out, err = _import(tmp_path, capsys, str(LOGS / "rows-only-all_reduce-16-ranks.log"))
    assert code == 0 and run is not None and run.read_meta().world_size == 16, err
    assert out.startswith("imported 16 row(s) of all_reduce on 16 rank(s)")
    assert "ranks: 16, inferred from busbw/algbw = 1.875 (all_reduce: 2(n-1)/n;" in err


def test_one_alltoall_process_printing_size_0_twice_is_one_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, run, out, err = _import(tmp_path, capsys, str(LOGS / "alltoall-one-process-b8.log"))
    assert code == 0 and run is not None, err
    assert out.startswith("imported 34 row(s) of all_to_all on 2 rank(s)") and run.read_meta().world_size == 2
    assert "printed size 0 B 2 times (8 and 16 B asked for)" in err
    rows = _rows(run, capsys)
    assert [(r["size"], r["time_us"]) for r in rows if r["size"] == 0 and not r["in_place"]] == [(0, 11.0)]
    assert not any(r["duplicate_ranks"] or r["missing_ranks"] for r in rows)
