"""A real local run's nccl-tests/<op>.json, field for field against what nccl-tests' src/util.cu writes at
v2.19.6 (JSON_FILE_VERSION 3), and `report --format nccl-tests-json` printing the same documents.

The schema below is util.cu's, written down from its writers (jsonOutputInit, writeDeviceReport,
jsonRankInfo, writeBenchmarkLinePreamble/Body/Terminator, writePerIterReport, writeResultFooter,
writeErrors, jsonOutputFinalize): each key in the order util.cu writes it, and the JSON type its json*
call produces (jsonBool writes the strings "true"/"false"; jsonDouble a number, or "nan").
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import pytest

from jobs.inspect.exports.nccl_tests_json import iter_stats, nccl_version_code, nccl_version_of_code, per_iter_block
from tests.conftest import collbench, read_jsonl

INT, NUMBER, STRING, FLAG, NULL = "int", "number", "string", "flag", "null"

TOP = [
    ("version", INT), ("start_time", STRING), ("args", list), ("env", list), ("nccl_version", (INT, NULL)),
    ("config", dict), ("results", list), ("out_of_bounds", dict), ("average_bus_bandwidth", dict),
    ("errors", list), ("end_time", STRING),
]  # fmt: skip
CONFIG = [
    ("nthreads", INT), ("ngpus", INT), ("minimum_bytes", INT), ("maximum_bytes", INT), ("step_factor", INT),
    ("warmup_iters", INT), ("iterations", INT), ("aggregated_iterations", INT), ("validation", INT),
    ("graph", INT), ("blocking_collectives", FLAG), ("per_iter_timing", FLAG), ("per_iter_skip", INT),
    ("parallel_init", FLAG), ("devices", list),
]  # fmt: skip
DEVICE = [
    ("rank", INT), ("group", INT), ("pid", INT), ("hostname", STRING), ("device", (INT, NULL)),
    ("device_hex", (STRING, NULL)), ("device_info", STRING),
]  # fmt: skip
PREAMBLE = [("size", INT), ("count", INT), ("type", STRING), ("redop", STRING), ("root", STRING)]
TERMINATOR = [("actual_iterations", INT), ("experiment_name", STRING)]
BODY = [("time", NUMBER), ("alg_bw", NUMBER), ("bus_bw", NUMBER), ("nwrong", (NUMBER, NULL))]
PER_ITER = [
    ("skipped_iterations", INT), ("min_us", NUMBER), ("max_us", NUMBER), ("avg_us", NUMBER), ("p50_us", NUMBER),
    ("p95_us", NUMBER), ("p99_us", NUMBER), ("stdev_us", NUMBER), ("cv_pct", NUMBER), ("times_us", list),
    ("per_process_max_times_us", list),
]  # fmt: skip
OUT_OF_BOUNDS = [("count", INT), ("okay", FLAG)]
AVERAGE = [("bandwidth", NUMBER), ("okay", (FLAG, "unchecked"))]


def _is(value: Any, kind: Any) -> bool:
    if isinstance(kind, tuple):
        return any(_is(value, k) for k in kind)
    if kind == INT:
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == NUMBER:
        return (isinstance(value, (int, float)) and not isinstance(value, bool)) or value == "nan"
    if kind == FLAG:
        return value in ("true", "false")
    if kind == NULL:
        return value is None
    if kind == STRING:
        return isinstance(value, str)
    if kind == "unchecked":
        return value == "unchecked"
    return isinstance(value, kind)


def check_object(where: str, obj: dict[str, Any], schema: list[tuple[str, Any]]) -> None:
    assert list(obj) == [name for name, _ in schema], f"{where}: keys or their order differ from util.cu's"
    for name, kind in schema:
        assert _is(obj[name], kind), f"{where}.{name} = {obj[name]!r} is not {kind}"


OPS = ("all_reduce", "all_gather")
SECRET = "hunter2-not-for-files"


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """One real local run of two ops with per-iteration timing, and the directory it ran from."""
    workdir = tmp_path_factory.mktemp("nccl-tests-json")
    env = {**os.environ, "NCCL_FAKE_API_KEY": SECRET, "NCCL_DEBUG_SUBSYS": "INIT"}
    result = collbench(
        "run", "bench.max_bytes=64K", f"bench.ops=[{','.join(OPS)}]", "bench.per_iteration=true",
        "bench.iters=5", "bench.warmup_iters=1", cwd=workdir, env=env,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return result.run_dir(), workdir


def _documents(run: Path) -> dict[str, dict[str, Any]]:
    return {op: json.loads((run / "nccl-tests" / f"{op}.json").read_text()) for op in OPS}


def test_every_op_gets_a_file_in_util_cu_s_schema_field_for_field(finished: tuple[Path, Path]) -> None:
    run, _ = finished
    assert sorted(p.name for p in (run / "nccl-tests").iterdir()) == [f"{op}.json" for op in sorted(OPS)]
    for op, doc in _documents(run).items():
        check_object(op, doc, TOP)
        assert doc["version"] == 3
        check_object(f"{op}.config", doc["config"], CONFIG)
        assert doc["config"]["per_iter_timing"] == "true" and doc["config"]["iterations"] == 5
        assert [d["rank"] for d in doc["config"]["devices"]] == [0, 1]
        for device in doc["config"]["devices"]:
            check_object(f"{op}.config.devices", device, DEVICE)
        check_object(f"{op}.out_of_bounds", doc["out_of_bounds"], OUT_OF_BOUNDS)
        check_object(f"{op}.average_bus_bandwidth", doc["average_bus_bandwidth"], AVERAGE)
        assert all(isinstance(arg, str) for arg in doc["args"]) and f"bench.ops=[{op}]" in doc["args"]
        assert doc["results"], op
        for record in doc["results"]:
            placed = [p for p in ("out_of_place", "in_place") if record[p] is not None]
            schema = list(PREAMBLE)
            for placement in ("out_of_place", "in_place"):
                schema.append((placement, (dict, NULL)))
                if placement in placed:
                    schema.append((f"{placement}_per_iter", dict))
            check_object(f"{op}.results[{record['size']}]", record, schema + TERMINATOR)
            assert record["root"] == "    -1"  # the table's %6i, as a string
            for placement in placed:
                check_object(f"{op}.{placement}", record[placement], BODY)
                check_object(f"{op}.{placement}_per_iter", record[f"{placement}_per_iter"], PER_ITER)


def test_a_placement_torch_cannot_run_is_null_as_nccl_tests_writes_it(finished: tuple[Path, Path]) -> None:
    docs = _documents(finished[0])
    assert all(r["out_of_place"] is None and "out_of_place_per_iter" not in r for r in docs["all_reduce"]["results"])
    assert all(r["out_of_place"] and r["in_place"] for r in docs["all_gather"]["results"])


def test_the_figures_are_collbench_s_own(finished: tuple[Path, Path]) -> None:
    """time, bandwidths and #wrong are summary.json's rows; each process row is that rank's own
    per-iteration times, and times_us their max per iteration (the analyzer's consistency check)."""
    run, _ = finished
    summary = json.loads((run / "summary.json").read_text())
    lines = [line for rank in (0, 1) for line in read_jsonl(run / "results" / f"rank-{rank:05d}.jsonl")]
    for op, doc in _documents(run).items():
        rows = [row for row in summary["rows"] if row["op"] == op]
        sizes = sorted({row["size"] for row in rows})
        assert [r["size"] for r in doc["results"]] == sizes
        for row in rows:
            record = next(r for r in doc["results"] if r["size"] == row["size"])
            placement = "in_place" if row["in_place"] else "out_of_place"
            body = record[placement]
            assert body["time"] == pytest.approx(row["time_us"], abs=1e-6)
            assert body["alg_bw"] == pytest.approx(row["algbw"], abs=1e-6)
            assert body["bus_bw"] == pytest.approx(row["busbw"], abs=1e-6)
            assert body["nwrong"] == row["wrong"] == 0
            per_iter = record[f"{placement}_per_iter"]
            mine = [
                next(
                    line["times_us"]
                    for line in lines
                    if (line["op"], line["size"], line["in_place"], line["rank"])
                    == (op, row["size"], row["in_place"], r)
                )
                for r in (0, 1)
            ]
            assert per_iter["per_process_max_times_us"] == [pytest.approx(t, abs=1e-6) for t in mine]
            assert per_iter["times_us"] == pytest.approx([max(a, b) for a, b in zip(*mine, strict=True)], abs=1e-6)
            # the mean of the per-process means is the table's time (the loop of each rank, averaged)
            means = [sum(t) / len(t) for t in mine]
            assert sum(means) / 2 == pytest.approx(row["time_us"], rel=1e-6)
        average = sum(row["busbw"] for row in rows) / len(rows)
        assert doc["average_bus_bandwidth"]["bandwidth"] == pytest.approx(average, abs=1e-6)
        assert doc["out_of_bounds"] == {"count": 0, "okay": "true"}


def test_env_is_what_collbench_captured_with_secrets_redacted(finished: tuple[Path, Path]) -> None:
    run, _ = finished
    captured = json.loads((run / "env" / "rank-00000.json").read_text())["variables"]
    for doc in _documents(run).values():
        env = dict(item.split("=", 1) for item in doc["env"])
        assert env == {name: str(value) for name, value in captured.items()}
        assert env["NCCL_FAKE_API_KEY"] == "<redacted>" and env["NCCL_DEBUG_SUBSYS"] == "INIT"
        assert "PATH" not in env and "HOME" not in env, "never the whole environment"
    assert not any(SECRET in path.read_text() for path in (run / "nccl-tests").iterdir())


def test_report_prints_one_document_per_op_per_line(finished: tuple[Path, Path]) -> None:
    run, workdir = finished
    before = {p: p.stat().st_mtime_ns for p in run.rglob("*")}
    result = collbench("report", str(run), "--format", "nccl-tests-json", cwd=workdir)
    assert result.returncode == 0, result.stderr
    printed = [json.loads(line) for line in result.stdout.splitlines()]
    assert printed == list(_documents(run).values())
    assert {p: p.stat().st_mtime_ns for p in run.rglob("*")} == before, "report writes nothing"


def test_util_cu_s_statistics_and_version_code() -> None:
    stats = iter_stats([5.0, 1.0, 3.0, 2.0, 4.0])
    assert (stats["min"], stats["max"], stats["p50"], stats["p95"], stats["p99"]) == (1.0, 5.0, 3.0, 5.0, 5.0)
    assert stats["stdev"] == pytest.approx(math.sqrt(2.0))
    assert nccl_version_code("2.21.5") == 22105 and nccl_version_code("2.8.4") == 2804
    assert nccl_version_code("none") is None
    assert [nccl_version_of_code(nccl_version_code(v)) for v in ("2.21.5", "2.8.4", "none")] == [
        "2.21.5",
        "2.8.4",
        "none",
    ]
    block = per_iter_block([[1.0, 4.0], [2.0, 3.0]])
    assert block is not None and block["times_us"] == [2.0, 4.0] and block["cv_pct"] == pytest.approx(100 / 3)
    single = per_iter_block([[1.0, 4.0]])
    assert single is not None and "per_process_max_times_us" not in single, "util.cu writes rows only for >1"
    assert per_iter_block([[1.0], []]) is None, "a rank without times: no per-iteration block"
