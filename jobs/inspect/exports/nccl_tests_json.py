"""A finished run in nccl-tests' own JSON (`-J`, `JSON_FILE_VERSION 3`, `src/util.cu` at v2.19.6): one
document per op, as one `*_perf` binary writes one file, so that nccl-tests' `tools/analyze_perf_json.py`
and whatever else reads those files reads collbench's runs.

Field for field as util.cu writes them, in its order, with its types: `jsonBool` writes the *strings*
"true"/"false", `root` is the `%6i` string of the table, `nwrong` a double, a NaN the string "nan". What
collbench cannot say is written as nccl-tests writes a placement it did not run: `null`
(`writeBenchMarkLineNullBody`). The mapping, field by field, is in docs/exports.md.

Reads the run directory only; jobs.ending writes the files, once, beside summary.json.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from collectives.dtypes import DTYPES
from collectives.results import RankResult, RowKey, SummaryRow, iter_rank_results
from jobs.config.secrets import REDACTED, is_secret_name
from jobs.rundir.layout import RunDir, rank_files, read_json

if TYPE_CHECKING:
    from jobs.inspect.report import RunOutcome

JSON_FILE_VERSION = 3
"""nccl-tests' JSON_FILE_VERSION this module writes (src/util.cu, v2.19.6)."""
TIME_STRING_FORMAT = "%Y-%m-%d %H:%M:%S"
"""util.cu's TIME_STRING_FORMAT: local time, as nccl-tests' formatNow."""
PROCESS_TIMES_KEY = "per_process_max_times_us"


class NotExportable(ValueError):
    """A run nccl-tests' JSON cannot hold (collbench isolate's subgroup rounds). One line."""


def _flag(value: bool) -> str:
    """util.cu's jsonBool: the strings "true" and "false", not JSON booleans."""
    return "true" if value else "false"


def _double(value: float) -> float | str:
    """util.cu's jsonDouble: `%lf` (six decimals); NaN as the string "nan"."""
    return "nan" if math.isnan(value) else round(value, 6)


def nccl_version_code(version: str) -> int | None:
    """NCCL's version code as nccl-tests prints it (NCCL_VERSION_CODE: 2.21.5 -> 22105; before 2.9,
    major*1000 + minor*100 + patch); None where the rank had no NCCL (a CPU build: "none")."""
    parts = version.split(".")
    if len(parts) < 2 or not all(part.isdigit() for part in parts[:3]):
        return None
    major, minor, patch = (int(p) for p in [*parts, "0"][:3])
    if major < 2 or (major == 2 and minor < 9):
        return major * 1000 + minor * 100 + patch
    return major * 10000 + minor * 100 + patch


def nccl_version_of_code(code: int | None) -> str:
    """nccl_version_code's inverse (22105 -> 2.21.5; before 2.9: 2804 -> 2.8.4); "none" for no code."""
    if not code:
        return "none"
    if code >= 10000:
        return f"{code // 10000}.{code // 100 % 100}.{code % 100}"
    return f"{code // 1000}.{code // 100 % 10}.{code % 100}"


def iter_stats(times: Sequence[float]) -> dict[str, float]:
    """util.cu's computeIterStats: p50 = sorted[n/2], p95/p99 by its percentileIndex, the population
    standard deviation."""
    ordered = sorted(times)
    n = len(ordered)

    def percentile(p: int) -> float:
        return ordered[min(n - 1, (n * p + 99) // 100 - 1)]

    avg = sum(ordered) / n
    stdev = math.sqrt(sum((t - avg) ** 2 for t in ordered) / n)
    return {
        "min": ordered[0],
        "max": ordered[-1],
        "avg": avg,
        "p50": ordered[n // 2],
        "p95": percentile(95),
        "p99": percentile(99),
        "stdev": stdev,
    }


def per_iter_block(process_rows: Sequence[Sequence[float]]) -> dict[str, Any] | None:
    """`*_place_per_iter` from every process's per-iteration times (µs; a collbench rank is one process
    driving one device, so its own times are nccl-tests' process-max row): `times_us` is the max over
    the process rows per iteration (ReduceProcessMaxIterTimes), the statistics are over it, and the rows
    themselves are `per_process_max_times_us` when there is more than one. None without times."""
    rows = [list(row) for row in process_rows if row]
    if not rows or len(rows) != len(process_rows):
        return None
    n_iters = min(len(row) for row in rows)
    times = [max(row[i] for row in rows) for i in range(n_iters)]
    stats = iter_stats(times)
    cv_pct = stats["stdev"] / stats["avg"] * 100.0 if stats["avg"] > 0 else 0.0
    block: dict[str, Any] = {
        "skipped_iterations": 0,
        "min_us": _double(stats["min"]),
        "max_us": _double(stats["max"]),
        "avg_us": _double(stats["avg"]),
        "p50_us": _double(stats["p50"]),
        "p95_us": _double(stats["p95"]),
        "p99_us": _double(stats["p99"]),
        "stdev_us": _double(stats["stdev"]),
        "cv_pct": _double(cv_pct),
        "times_us": [_double(t) for t in times],
    }
    if len(rows) > 1:
        block[PROCESS_TIMES_KEY] = [[_double(t) for t in row[:n_iters]] for row in rows]
    return block


Times = dict[int, list[float]]
"""One row's per-iteration times, by rank, read for the per-iteration blocks."""


def _read_times(run: RunDir) -> dict[RowKey, Times]:
    found: dict[RowKey, Times] = {}
    records: Iterable[RankResult] = iter_rank_results(
        rank_files(run.results_dir, ".jsonl"), keep_times=True, on_damage=lambda _: None
    )
    for record in records:
        if record.group:
            continue
        found.setdefault(record.key, {}).setdefault(record.rank, list(record.times_us))
    return found


def _placement(row: SummaryRow | None, cputime: bool) -> dict[str, Any] | None:
    """util.cu's writeBenchmarkLineBody; None (JSON null) for a placement not measured."""
    if row is None:
        return None
    return {
        ("cpu_time" if cputime else "time"): _double(row.enqueue_us if cputime else row.time_us),
        "alg_bw": _double(row.algbw),
        "bus_bw": _double(row.busbw),
        "nwrong": None if row.wrong < 0 else _double(float(row.wrong)),
    }


def _results(
    rows: Sequence[SummaryRow], times: dict[RowKey, Times], cputime: bool, per_iter: bool, world: int
) -> list[dict[str, Any]]:
    """One record per (size, type, redop, root), out-of-place before in-place, as TimeTest writes them."""
    by_line: dict[tuple[int, str, str, int], dict[bool, SummaryRow]] = {}
    for row in rows:
        by_line.setdefault((row.size, row.dtype, row.redop, row.root), {})[row.in_place] = row
    records = []
    for (size, dtype, redop, root), placed in by_line.items():
        first = next(iter(placed.values()))
        record: dict[str, Any] = {
            "size": size,
            "count": first.count,
            "type": DTYPES[dtype].nccl_name,
            "redop": redop,
            "root": "%6i" % root,
        }
        iterations = 0
        for in_place, name in ((False, "out_of_place"), (True, "in_place")):
            measured_row = placed.get(in_place)
            record[name] = _placement(measured_row, cputime)
            measured = times.get(measured_row.key) if measured_row is not None else None
            if measured_row is not None:
                iterations = max(iterations, measured_row.iters)
            if per_iter and measured_row is not None and measured is not None:
                ranks = measured_row.members or list(range(world))
                block = per_iter_block([measured.get(rank, []) for rank in ranks])
                if block is not None:
                    record[f"{name}_per_iter"] = block
        record["actual_iterations"] = iterations
        record["experiment_name"] = ""
        records.append(record)
    return records


def _env(run: RunDir) -> list[str]:
    """Rank 0's captured variables (env/rank-0.json: NCCL_*, SLURM_*, ...; never the whole environment),
    as nccl-tests' NAME=VALUE strings, secret-looking names redacted (again: a file from an older
    collbench is not trusted to have done it)."""
    environment = _environment(run, 0)
    variables = environment.get("variables", {})
    if not isinstance(variables, dict):
        return []
    return [f"{name}={REDACTED if is_secret_name(name) else value}" for name, value in sorted(variables.items())]


def _environment(run: RunDir, rank: int) -> dict[str, Any]:
    path = run.rank_env(rank)
    try:
        return read_json(path)
    except (OSError, ValueError):
        return {}


def _device(run: RunDir, outcome: RunOutcome, rank: int) -> dict[str, Any]:
    """util.cu's jsonRankInfo, from the rank's status and environment; a CPU rank has no device index
    or PCI address (null) and says "cpu" where nccl-tests names the GPU."""
    status = outcome.statuses[rank]
    gpu = _environment(run, rank).get("gpu")
    index: int | None = None
    hex_id: str | None = None
    info = status.device
    if isinstance(gpu, dict):
        index = int(gpu.get("index", -1))
        bus = str(gpu.get("pci_bus_id", ""))
        hex_id = bus.removesuffix(".0") or None
        info = str(gpu.get("name", status.device))
    elif status.device.startswith("cuda:") and status.device[5:].isdigit():
        index = int(status.device[5:])
    return {
        "rank": rank,
        "group": 0,
        "pid": status.pid,
        "hostname": status.host,
        "device": index,
        "device_hex": hex_id,
        "device_info": info,
    }


def _config(run: RunDir, outcome: RunOutcome, rows: Sequence[SummaryRow]) -> dict[str, Any]:
    """util.cu's writeDeviceReport: the sweep's parameters, then every rank's device."""
    bench = outcome.config.bench
    sizes = bench.size_list()
    config: dict[str, Any] = {
        "nthreads": 1,
        "ngpus": 1,
        "minimum_bytes": min(sizes) if sizes else bench.min_bytes,
        "maximum_bytes": max(sizes) if sizes else bench.max_bytes,
    }
    if bench.step_bytes > 0:
        config["step_bytes"] = bench.step_bytes
    else:
        factor = bench.step_factor
        config["step_factor"] = int(factor) if factor == int(factor) else factor
    config.update(
        {
            "warmup_iters": bench.warmup_iters,
            "iterations": bench.iters,
            "aggregated_iterations": 1,
            "validation": int(bench.check),
            "graph": bench.cuda_graph_launches,
            # the host timer blocks on every call: nccl-tests' -m
            "blocking_collectives": _flag(any(row.timer == "host" for row in rows)),
            "per_iter_timing": _flag(bench.per_iteration),
            "per_iter_skip": 0,
            "parallel_init": _flag(False),
            "devices": [_device(run, outcome, rank) for rank in sorted(outcome.statuses)],
        }
    )
    return config


def _local_time(epoch: float) -> str | None:
    return time.strftime(TIME_STRING_FORMAT, time.localtime(epoch)) if epoch > 0 else None


def rerun_args(run: RunDir, op: str) -> list[str]:
    """`args`: the collbench command that measures this op again, from the run's resolved config (the
    command line typed is not recorded; config.yaml holds everything it resolved to). For a run made by
    `collbench import`, the command that made it: no collbench run measured it."""
    meta = run.read_meta()
    if meta.imported_from:
        return ["collbench", "import", *meta.imported_from]
    return ["collbench", "run", "--config", str(run.config_file), f"bench.ops=[{op}]"]


def documents(run: RunDir, outcome: RunOutcome) -> dict[str, dict[str, Any]]:
    """op -> its nccl-tests JSON document, in the order the run measured the ops. NotExportable for a
    collbench isolate run (its rows are rounds of subgroups, which nccl-tests' schema has no place for)."""
    cfg = outcome.config
    if cfg.spec.in_rounds:
        raise NotExportable(
            f"{run.path}: a collbench {cfg.task} run has no nccl-tests JSON (its rows are rounds of node groups); "
            "the formats it has are table, json and csv"
        )
    rows = [row for row in outcome.rows if not row.group]
    per_iter = cfg.bench.per_iteration
    times = _read_times(run) if per_iter else {}  # the results are read again only for per-iteration times
    environment = _environment(run, 0)
    version = nccl_version_code(str(environment.get("nccl", "none")))
    started = min((s.started for s in outcome.statuses.values()), default=0.0)
    ended = max((s.updated for s in outcome.statuses.values()), default=0.0)
    errors = [
        f"rank {rank} ({status.host}): {status.error}"
        for rank, status in sorted(outcome.statuses.items())
        if status.error
    ]
    env = _env(run)
    out: dict[str, dict[str, Any]] = {}
    for op in dict.fromkeys(row.op for row in rows):
        op_rows = [row for row in rows if row.op == op]
        wrong_checks = sum(len(row.wrong_ranks) for row in op_rows)  # util.cu's errors[0]: checks that failed
        average = sum(row.busbw for row in op_rows) / len(op_rows)
        out[op] = {
            "version": JSON_FILE_VERSION,
            "start_time": _local_time(started),
            "args": rerun_args(run, op),
            "env": env,
            "nccl_version": version,
            "config": _config(run, outcome, op_rows),
            "results": _results(op_rows, times, cfg.bench.report_cputime, per_iter, cfg.world_size),
            "out_of_bounds": {"count": wrong_checks, "okay": _flag(wrong_checks == 0)},
            "average_bus_bandwidth": {"bandwidth": _double(average), "okay": "unchecked"},
            "errors": errors,
            "end_time": _local_time(ended),
        }
    return out


def render(document: dict[str, Any]) -> str:
    """One document on one line (what `report --format nccl-tests-json` prints per op)."""
    return json.dumps(document, separators=(",", ":"))
