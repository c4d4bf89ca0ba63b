"""nccl-tests' JSON files (`-J FILE`, src/util.cu) read back into a table (model.Table).

JSON_FILE_VERSION 3 (nccl-tests 2.19.6, what jobs/inspect/exports/nccl_tests_json.py writes) is read
whole. Older files are read for what they have, with one line saying what they lack: version 1 (2.18.0 to
2.19.2) has no per-iteration times; version 2 (2.19.3 to 2.19.5) has them but no per_iter_skip (taken as
0). A newer version is refused: its fields may mean something this collbench does not know."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from jobs.imports.model import BINARY_OF, COLLBENCH_JSON, NCCL_TESTS_JSON, BadImport, Device, Parsed, Row, Table

READ_VERSIONS = (1, 2, 3)
LACKS = {
    1: "has no per-iteration times (nccl-tests 2.18.0 to 2.19.2): imported without them",
    2: "has no per_iter_skip (nccl-tests 2.19.3 to 2.19.5): its per-iteration times are taken as skipping none",
}


def looks_like_json(path: Path) -> bool:
    with path.open("rb") as handle:
        return handle.read(64).lstrip()[:1] == b"{"


def parse_json(path: Path, parsed: Parsed) -> None:
    """Add the one table of an nccl-tests JSON file to `parsed`; BadImport when it is not one."""
    try:
        document = json.loads(path.read_bytes())
    except (ValueError, UnicodeDecodeError) as error:
        raise BadImport(f"{path}: not an nccl-tests JSON file (cut short or damaged): {error}") from None
    if not isinstance(document, dict) or "results" not in document:
        raise BadImport(f"{path}: not an nccl-tests JSON file: no results in it")
    version = document.get("version")
    if version not in READ_VERSIONS:
        raise BadImport(
            f"{path}: JSON_FILE_VERSION {version!r} is not one this collbench reads "
            f"({', '.join(map(str, READ_VERSIONS))}; nccl-tests 2.18 to 2.19.6): refused"
        )
    if version in LACKS:
        parsed.notes.append(f"{path}: JSON_FILE_VERSION {version} {LACKS[version]}")
    try:
        parsed.tables.append(_table(path, document))
    except (KeyError, TypeError, ValueError) as error:
        raise BadImport(f"{path}: damaged nccl-tests JSON: {type(error).__name__} {error}") from None


def _program(args: Any) -> str:
    """The binary from args[0]; for a file collbench wrote, the op of its `bench.ops=[OP]`."""
    if not isinstance(args, list) or not args:
        return ""
    for arg in args:
        if isinstance(arg, str) and arg.startswith("bench.ops=[") and arg.endswith("]"):
            op = arg[len("bench.ops=[") : -1]
            return f"{BINARY_OF.get(op, op)}_perf"
    first = str(args[0])
    return first if first.endswith(("_perf", "_perf_mpi")) else ""


def _written_by(args: Any) -> str:
    """COLLBENCH_JSON for `collbench run`'s export (args `collbench run --config ...`); NCCL_TESTS_JSON
    otherwise, an export of an imported run (`collbench import FILE...`) included."""
    ran_by_collbench = isinstance(args, list) and [str(arg) for arg in args[:2]] == ["collbench", "run"]
    return COLLBENCH_JSON if ran_by_collbench else NCCL_TESTS_JSON


def _table(path: Path, document: dict[str, Any]) -> Table:
    config = document.get("config") or {}
    table = Table(
        where=str(path),
        written_by=_written_by(document.get("args")),
        program=_program(document.get("args")),
        nccl_version=document.get("nccl_version"),
        nthreads=int(config.get("nthreads", 1)),
        ngpus=int(config.get("ngpus", 1)),
        min_bytes=int(config.get("minimum_bytes", 0)),
        max_bytes=int(config.get("maximum_bytes", 0)),
        step_factor=float(config.get("step_factor", 2)),
        step_bytes=int(config.get("step_bytes", 0)),
        warmup_iters=int(config.get("warmup_iters", 5)),
        iters=int(config.get("iterations", 20)),
        validation=bool(int(config.get("validation", 1))),
        graph=int(config.get("graph", 0)),
        per_iteration=config.get("per_iter_timing") == "true",
        started=str(document.get("start_time") or ""),
        ended=str(document.get("end_time") or ""),
        env=[str(item) for item in document.get("env") or []],
        errors=[str(item) for item in document.get("errors") or []],
    )
    for device in config.get("devices") or []:
        table.devices.append(
            Device(rank=int(device["rank"]), group=int(device.get("group") or 0), pid=int(device.get("pid") or 0),
                   host=str(device.get("hostname") or "?"),
                   device=None if device.get("device") is None else int(device["device"]),
                   bus_id=str(device.get("device_hex") or ""), name=str(device.get("device_info") or ""))
        )  # fmt: skip
    for index, record in enumerate(document["results"]):
        where = f"{path}:results[{index}]"
        for name, in_place in (("out_of_place", False), ("in_place", True)):
            placed = record.get(name)
            if placed is None:
                continue
            table.cputime = "cpu_time" in placed
            table.rows.append(_row(record, placed, record.get(f"{name}_per_iter"), in_place, where))
    oob = document.get("out_of_bounds") or {}
    table.out_of_bounds = None if oob.get("count") is None else int(oob["count"])
    average = (document.get("average_bus_bandwidth") or {}).get("bandwidth")
    table.avg_busbw = None if average in (None, "nan") else float(average)
    table.complete = bool(document.get("end_time"))
    if not table.complete:
        table.cut_at = f"{path}: no end_time: the run did not finish"
    return table


def _float(value: Any) -> float:
    return float("nan") if value == "nan" else float(value)


def _row(record: dict[str, Any], placed: dict[str, Any], per_iter: Any, in_place: bool, where: str) -> Row:
    wrong = placed.get("nwrong")
    row = Row(
        size=int(record["size"]), count=int(record["count"]), type=str(record["type"]),
        redop=str(record["redop"]), root=int(str(record["root"]).strip()), in_place=in_place,
        time_us=_float(placed.get("time", placed.get("cpu_time"))), algbw=_float(placed["alg_bw"]),
        busbw=_float(placed["bus_bw"]), wrong=-1 if wrong is None else int(_float(wrong)), where=where,
    )  # fmt: skip
    if isinstance(per_iter, dict):
        row.times_us = [_float(t) for t in per_iter.get("times_us") or []]
        row.per_process = [[_float(t) for t in times] for times in per_iter.get("per_process_max_times_us") or []]
    return row
