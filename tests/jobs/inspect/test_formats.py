"""`--format json` and `--format csv` of a real local run: the keys are there and the rows are the table's.

The run has two ops so that both placements appear: all_reduce (in place only) and all_gather (out of
place and in place). Every figure of the JSON and CSV rows is checked against the nccl-tests table that
`collbench report` prints for the same run, at the precision the table prints it.
"""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import collbench

RUN = ["ranks=2", "bench.ops=[all_reduce,all_gather]", "bench.max_bytes=64K", "bench.step_factor=4",
       "bench.warmup_iters=1", "bench.iters=3"]  # fmt: skip
DOCUMENT_KEYS = {"format", "version", "run_id", "run_dir", "passed", "problems", "config", "ranks", "setup",
                 "fabric", "rows", "analysis"}  # fmt: skip
ROW_KEYS = {"op", "size", "count", "dtype", "redop", "root", "in_place", "nranks", "ranks_reporting", "time_us",
            "algbw", "busbw", "wrong", "slowest_rank", "slowest_host", "slowest_time_us", "fastest_rank",
            "fastest_host", "fastest_time_us", "timer", "enqueue_us", "average"}  # fmt: skip
CSV_HEADER = (
    "op,size,count,dtype,redop,root,in_place,nranks,time_us,algbw,busbw,wrong,slowest_rank,slowest_host,"
    "slowest_time_us,fastest_rank,fastest_host,fastest_time_us,page_faults_per_iter,timer,enqueue_us,average"
)
NCCL_TYPES = {"float32": "float"}


@pytest.fixture(scope="module")
def run_json(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """A real run, run with --format json: its stdout is the document and nothing else."""
    workdir = tmp_path_factory.mktemp("formats")
    result = collbench("run", *RUN, "output_dir=runs", "--format", "json", cwd=workdir)
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    return workdir, document


@pytest.fixture(scope="module")
def table(run_json: tuple[Path, dict[str, Any]]) -> dict[tuple[str, int, bool], dict[str, str]]:
    """(op, size, in_place) -> the printed cells of `collbench report`'s table for that row."""
    workdir, document = run_json
    result = collbench("report", document["run_id"], cwd=workdir)
    assert result.returncode == 0, result.stderr
    cells: dict[tuple[str, int, bool], dict[str, str]] = {}
    op = ""
    for line in result.stdout.splitlines():
        header = re.match(r"# collbench (\w+): 2 ranks, backend gloo$", line)
        if header:
            op = header.group(1)
            continue
        if line.startswith("#") or not line.strip() or not op:
            continue
        parts = line.split()
        if len(parts) != 13:
            continue
        size, count, dtype, redop, root = parts[:5]
        for in_place, (time, algbw, busbw, wrong) in ((False, parts[5:9]), (True, parts[9:13])):
            if time != "N/A":
                cells[(op, int(size), in_place)] = dict(
                    count=count, dtype=dtype, redop=redop, root=root, time=time, algbw=algbw, busbw=busbw, wrong=wrong
                )
    assert cells, result.stdout
    return cells


def _decimals(cell: str) -> int:
    return len(cell.split(".")[1]) if "." in cell else 0


def _matches(cell: str, value: float) -> bool:
    return abs(float(cell) - value) <= 0.5 * 10.0 ** -_decimals(cell) + 1e-12


def test_the_document_has_every_key(run_json: tuple[Path, dict[str, Any]]) -> None:
    workdir, document = run_json
    assert set(document) == DOCUMENT_KEYS
    assert (document["format"], document["version"], document["passed"], document["problems"]) == (
        "collbench-run",
        2,
        True,
        [],
    )
    run = Path(document["run_dir"])
    assert run.parent == (workdir / "runs").resolve() and run.name == document["run_id"]
    assert document["config"]["ranks"] == 2 and document["config"]["bench"]["ops"] == ["all_reduce", "all_gather"]
    assert document["config"]["launcher"] == "local"
    assert [r["status"]["rank"] for r in document["ranks"]] == [0, 1]
    for rank in document["ranks"]:
        assert rank["status"]["state"] == "ok"
        assert {"hostname", "python", "torch", "variables"} <= set(rank["environment"])
    assert document["setup"]["ranks"] == 2 and document["setup"]["slowest_rank"] in (0, 1)
    assert set(document["analysis"]) >= {"slow_ranks", "slow_hosts", "whole_run", "isolate_command", "wrong"}
    assert document["fabric"] is not None
    for row in document["rows"]:
        assert set(row) >= ROW_KEYS, ROW_KEYS - set(row)
        assert row["nranks"] == row["ranks_reporting"] == 2 and row["wrong"] == 0


def test_json_rows_are_the_tables_figures(
    run_json: tuple[Path, dict[str, Any]], table: dict[tuple[str, int, bool], dict[str, str]]
) -> None:
    _, document = run_json
    rows = {(r["op"], r["size"], r["in_place"]): r for r in document["rows"]}
    assert set(rows) == set(table), "one row per printed (op, size, placement), no more, no fewer"
    assert {(op, in_place) for op, _, in_place in rows} == {("all_reduce", True), ("all_gather", False),
                                                            ("all_gather", True)}  # fmt: skip
    for key, row in rows.items():
        cells = table[key]
        assert int(cells["count"]) == row["count"], key
        assert cells["dtype"] == NCCL_TYPES[row["dtype"]] and cells["redop"] == row["redop"], key
        assert int(cells["root"]) == row["root"] and int(cells["wrong"]) == row["wrong"], key
        assert _matches(cells["time"], row["time_us"]), (key, cells["time"], row["time_us"])
        assert _matches(cells["algbw"], row["algbw"]), (key, cells["algbw"], row["algbw"])
        assert _matches(cells["busbw"], row["busbw"]), (key, cells["busbw"], row["busbw"])


def test_report_json_is_the_run_json_and_summary(run_json: tuple[Path, dict[str, Any]]) -> None:
    workdir, document = run_json
    result = collbench("report", document["run_id"], "--format", "json", cwd=workdir)
    assert result.returncode == 0, result.stderr
    again = json.loads(result.stdout)
    assert again["rows"] == document["rows"]
    assert again["config"] == document["config"] and again["ranks"] == document["ranks"]
    summary = json.loads((Path(document["run_dir"]) / "summary.json").read_text())
    assert summary["rows"] == document["rows"]


def test_csv_rows_are_the_json_rows(run_json: tuple[Path, dict[str, Any]]) -> None:
    workdir, document = run_json
    result = collbench("report", document["run_id"], "--format", "csv", cwd=workdir)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == CSV_HEADER
    records = list(csv.DictReader(io.StringIO(result.stdout)))
    assert len(records) == len(document["rows"])
    for record, row in zip(records, document["rows"], strict=True):
        for column, text in record.items():
            value = row[column]
            if isinstance(value, float):
                assert float(text) == value, (column, text, value)  # full precision, not the table's
            else:
                assert text == ("" if value is None else str(value)), (column, text, value)


def test_a_busbw_gate_shows_in_the_document(run_json: tuple[Path, dict[str, Any]]) -> None:
    workdir, document = run_json
    largest = max(r["size"] for r in document["rows"])
    result = collbench(
        "report", document["run_id"], "--format", "json", "--min-busbw", "1000", "--busbw-sizes", f"{largest}:",
        cwd=workdir,
    )  # fmt: skip
    assert result.returncode == 1, "no gloo run reaches 1000 GB/s"
    gated = json.loads(result.stdout)
    assert gated["passed"] is False
    assert gated["problems"] and all("busbw" in p for p in gated["problems"]), gated["problems"]
    assert len(gated["problems"]) == sum(r["size"] >= largest for r in document["rows"])
    assert all(f"{largest}" in p for p in gated["problems"])
    assert "collbench: FAILED:" in result.stderr
