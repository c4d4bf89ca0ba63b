"""Node-count sweeps: one ordinary run per node count, all under one sweep directory.

    <output_dir>/sweep-<YYYYmmdd-HHMMSS>-<6 hex>/
      sweep.json       the node counts and, for each, its run directory, Slurm job id, or why it failed
      <run dirs>       one ordinary run per node count (every other command works on each)
      scale.txt        the scaling report, once rendered

Slurm job arrays share one resource request, so jobs of different node counts cannot be one array:
each node count is its own job, submitted at once.
"""

from __future__ import annotations

import re
import secrets
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from collectives.results import SummaryRow
from jobs.rundir import RunDir, read_json, write_json_atomic
from jobs.schema import ConfigError

SWEEP_FILE = "sweep.json"
SIZE_BANDS: tuple[tuple[str, int], ...] = (
    ("<= 64 KiB", 64 << 10),
    ("64 KiB - 16 MiB", 16 << 20),
    ("> 16 MiB", 1 << 62),
)


def parse_node_counts(text: str) -> list[int]:
    """'[1,2,4,8]', '1,2,4', '1..16:x2' (doubling), '2..8:+2' or '1..4' -> sorted distinct node counts."""
    spec = text.strip()
    ranged = re.fullmatch(r"(\d+)\.\.(\d+)(?::([x+])(\d+))?", spec)
    if ranged:
        low, high = int(ranged.group(1)), int(ranged.group(2))
        kind, step = ranged.group(3) or "+", int(ranged.group(4) or 1)
        if low < 1 or high < low or (kind == "x" and step < 2) or step < 1:
            raise ConfigError(f"nodes: {text!r} is not a usable range; e.g. 1..16:x2, 2..8:+2 or 1..4")
        counts, n = [], low
        while n <= high:
            counts.append(n)
            n = n * step if kind == "x" else n + step
        return counts
    items = spec.strip("[]").split(",")
    if not all(item.strip().isdigit() and int(item) >= 1 for item in items):
        raise ConfigError(f"nodes: {text!r} is not a list of node counts; e.g. [1,2,4,8] or 1..16:x2")
    return sorted({int(item) for item in items})


def split_nodes(overrides: Sequence[str]) -> tuple[list[int], list[str]]:
    """The nodes=... override of a scale command, and the others."""
    counts: list[int] | None = None
    rest = []
    for override in overrides:
        if override.startswith("nodes="):
            counts = parse_node_counts(override.removeprefix("nodes="))
        else:
            rest.append(override)
    if counts is None:
        raise ConfigError("nodes: a scale sweep needs the node counts, e.g. nodes=[1,2,4,8] or nodes=1..16:x2")
    return counts, rest


@dataclass(frozen=True, slots=True)
class Sweep:
    path: Path

    @property
    def sweep_id(self) -> str:
        return self.path.name

    @property
    def meta_file(self) -> Path:
        return self.path / SWEEP_FILE

    @property
    def report_file(self) -> Path:
        return self.path / "scale.txt"

    def read(self) -> dict[str, Any]:
        return read_json(self.meta_file)

    def entries(self) -> list[dict[str, Any]]:
        return list(self.read()["entries"])

    def update_entry(self, nodes: int, **fields: Any) -> None:
        meta = self.read()
        for entry in meta["entries"]:
            if entry["nodes"] == nodes:
                entry.update(fields)
        write_json_atomic(self.meta_file, meta)

    @classmethod
    def create(cls, output_dir: str | Path, counts: list[int], config_ref: str | None, overrides: list[str]) -> Sweep:
        parent = Path(output_dir).expanduser().resolve()
        parent.mkdir(parents=True, exist_ok=True)
        path = parent / f"sweep-{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(3)}"
        path.mkdir()
        sweep = cls(path)
        entries = [{"nodes": n, "run_dir": None, "job_id": None, "error": None} for n in counts]
        write_json_atomic(
            sweep.meta_file,
            {"sweep_id": path.name, "created": time.time(), "config": config_ref, "overrides": overrides,
             "node_counts": counts, "entries": entries},
        )  # fmt: skip
        return sweep


def find_sweep(ref: str, output_dir: str | Path = "runs") -> Sweep:
    for candidate in (Path(ref).expanduser(), Path(output_dir).expanduser() / ref):
        if (candidate / SWEEP_FILE).is_file():
            return Sweep(candidate.resolve())
    raise FileNotFoundError(f"no sweep {ref!r}: not a sweep directory, nor a sweep id under {str(output_dir)!r}")


def is_sweep(ref: str, output_dir: str | Path = "runs") -> bool:
    try:
        find_sweep(ref, output_dir)
    except FileNotFoundError:
        return False
    return True


def runs_by_nodes(sweep: Sweep) -> dict[int, RunDir]:
    return {int(e["nodes"]): RunDir(Path(e["run_dir"])) for e in sweep.entries() if e.get("run_dir")}


# ---- the scaling report

Assess = Callable[[RunDir], tuple[list[SummaryRow], list[str], str]]
"""(rows, problems, Slurm state) of one run of the sweep."""


def headline_rows(rows: list[SummaryRow]) -> dict[tuple[str, int], SummaryRow]:
    """(op, requested size) -> the row nccl-tests would read first: out-of-place where measured, root 0
    or none. Keyed by the size asked for, so that 4 and 6 ranks' rounded sizes line up."""
    chosen: dict[tuple[str, int], SummaryRow] = {}
    for row in rows:
        if row.root not in (-1, 0):
            continue
        key = (row.op, row.requested_size)
        if key not in chosen or (chosen[key].in_place and not row.in_place):
            chosen[key] = row
    return chosen


def scale_report(sweep: Sweep, assess: Assess) -> tuple[list[str], dict[int, dict[tuple[str, int], SummaryRow]], bool]:
    """Lines of the report, the busbw rows per node count, and whether every node count completed."""
    per_nodes: dict[int, dict[tuple[str, int], SummaryRow]] = {}
    failures: list[str] = []
    for entry in sweep.entries():
        nodes = int(entry["nodes"])
        if not entry.get("run_dir"):
            failures.append(f"# {nodes} node(s): FAILED before running: {entry.get('error') or 'not submitted'}")
            continue
        rows, problems, state = assess(RunDir(Path(entry["run_dir"])))
        per_nodes[nodes] = headline_rows(rows)
        if problems or state not in ("COMPLETED", "local"):
            why = "; ".join(problems[:3]) or "no problem recorded by the ranks"
            failures.append(f"# {nodes} node(s): FAILED: job {entry.get('job_id')} ended {state}: {why}")
    lines: list[str] = []
    counts = sorted(per_nodes)
    ops = list(dict.fromkeys(op for table in per_nodes.values() for op, _ in table))
    for op in ops:
        lines += _op_table(op, counts, per_nodes)
    lines += failures or ["# every node count completed"]
    return lines, per_nodes, not failures


def _op_table(op: str, counts: list[int], per_nodes: dict[int, dict[tuple[str, int], SummaryRow]]) -> list[str]:
    sizes = sorted({size for table in per_nodes.values() for name, size in table if name == op})
    base = next((n for n in counts if any(r.busbw > 0 for (o, _), r in per_nodes[n].items() if o == op)), None)
    eff_counts = [n for n in counts if base is not None and n > base]
    # the size column is the size asked for; each run's own table shows its rounded sizes
    header = f"#{'size (B)':>11}" + "".join(f"{f'{n} node' + ('s' if n > 1 else ''):>11}" for n in counts)
    header += "".join(f"{f'eff {n}':>9}" for n in eff_counts)
    lines = [
        f"# collbench scale {op}: busbw (GB/s) by message size and node count; efficiency = busbw / busbw at "
        f"{base if base is not None else '-'} node(s)",
        header,
    ]
    for size in sizes:
        cells = [per_nodes[n].get((op, size)) for n in counts]
        line = f"{size:>12}" + "".join(f"{c.busbw:>11.2f}" if c else f"{'-':>11}" for c in cells)
        base_row = per_nodes[base].get((op, size)) if base is not None else None
        for n in eff_counts:
            row = per_nodes[n].get((op, size))
            ok = row is not None and base_row is not None and base_row.busbw > 0
            line += f"{row.busbw / base_row.busbw:>9.2f}" if ok and row and base_row else f"{'-':>9}"
        lines.append(line)
    lines.append("#")
    return lines


def band_means(per_nodes: dict[int, dict[tuple[str, int], SummaryRow]]) -> dict[str, dict[str, dict[int, float]]]:
    """op -> size band -> node count -> mean busbw, for the plot."""
    sums: dict[str, dict[str, dict[int, list[float]]]] = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    for nodes, table in per_nodes.items():
        for (op, size), row in table.items():
            band = next(name for name, limit in SIZE_BANDS if size <= limit)
            sums[op][band][nodes].append(row.busbw)
    return {
        op: {band: {n: sum(v) / len(v) for n, v in by_n.items()} for band, by_n in bands.items()}
        for op, bands in sums.items()
    }
