"""Node-count sweeps read: one ordinary run per node count, all under one sweep directory
(jobs/rundir/sweep.py: its layout, and sweep.json made and kept up to date), found by id and reported on.

Slurm job arrays share one resource request, so jobs of different node counts cannot be one array:
each node count is its own job, submitted at once.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from collectives.results import SummaryRow, headline_rows
from collectives.table import busbw_decimals
from jobs.config.schema import ConfigError
from jobs.rundir.layout import RunDir
from jobs.rundir.sweep import SWEEP_FILE, Sweep

SIZE_BANDS: tuple[tuple[str, int], ...] = (
    ("<= 64 KiB", 64 << 10),
    ("64 KiB - 16 MiB", 16 << 20),
    ("> 16 MiB", 1 << 62),
)


MAX_NODE_COUNTS = 256
"""A sweep submits one job per node count: more than this is a typo (1..100000000), not a plan."""


def parse_node_counts(text: str) -> list[int]:
    """'[1,2,4,8]', '1,2,4', '1..16:x2' (doubling), '2..8:+2' or '1..4' -> sorted distinct node counts."""
    spec = text.strip()
    ranged = re.fullmatch(r"(\d+)\.\.(\d+)(?::([x+])(\d+))?", spec)
    if ranged:
        low, high = int(ranged.group(1)), int(ranged.group(2))
        kind, step = ranged.group(3) or "+", int(ranged.group(4) or 1)
        if low < 1 or high < low or (kind == "x" and step < 2) or step < 1:
            raise ConfigError(f"nodes: {text!r} is not a usable range; e.g. 1..16:x2, 2..8:+2 or 1..4")
        if kind == "+" and (high - low) // step + 1 > MAX_NODE_COUNTS:
            raise ConfigError(
                f"nodes: {text!r} gives {(high - low) // step + 1} node counts, one job each; allowed: at most "
                f"{MAX_NODE_COUNTS} (a coarser step: 1..{high}:x2 or {low}..{high}:+{max(step, high // 16)})"
            )
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
            if counts is not None:
                raise ConfigError(f"nodes: given twice ({override!r} after another nodes=); allowed: one nodes=")
            counts = parse_node_counts(override.removeprefix("nodes="))
        else:
            rest.append(override)
    if counts is None:
        raise ConfigError("nodes: a scale sweep needs the node counts, e.g. nodes=[1,2,4,8] or nodes=1..16:x2")
    return counts, rest


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
    return {e.nodes: RunDir(Path(e.run_dir)) for e in sweep.entries() if e.run_dir}


# ---- the scaling report

Cells = dict[tuple[str, int], SummaryRow]
"""(op, requested size) -> that node count's headline row."""


@dataclass(frozen=True, slots=True)
class RunAssessment:
    """What the scaling report needs to know about one run of the sweep."""

    rows: list[SummaryRow]
    problems: list[str]
    state: str
    """The Slurm state ('COMPLETED', 'PENDING (PartitionNodeLimit)', ...) or 'local'."""
    final: bool


Assess = Callable[[RunDir], RunAssessment]


@dataclass(frozen=True, slots=True)
class NodeOutcome:
    nodes: int
    outcome: Literal["completed", "failed", "not finished", "not submitted"]
    why: str = ""
    job_id: str | None = None
    run_dir: str | None = None
    state: str = ""

    def line(self) -> str:
        job = f"job {self.job_id} " if self.job_id else ""
        return f"# {self.nodes} node(s): {self.outcome.upper()}: {job}{self.why}".rstrip(": ")


@dataclass(frozen=True, slots=True)
class OpScaling:
    """One op's busbw by requested size and node count, with the efficiency against the base count."""

    op: str
    counts: list[int]
    base: int | None
    """The smallest node count that measured any busbw for this op."""
    busbw: dict[int, dict[int, float]]
    """size -> node count -> busbw (GB/s), where that count measured that size."""

    def efficiency(self, size: int, nodes: int) -> float | None:
        by_nodes = self.busbw.get(size, {})
        if self.base is None or nodes <= self.base or nodes not in by_nodes or not by_nodes.get(self.base):
            return None
        return by_nodes[nodes] / by_nodes[self.base]

    def table(self) -> list[str]:
        eff_counts = [n for n in self.counts if self.base is not None and n > self.base]
        # the size column is the size asked for; each run's own table shows its rounded sizes
        header = f"#{'size (B)':>11}" + "".join(f"{_nodes_label(n):>11}" for n in self.counts)
        header += "".join(f"{f'eff {n}':>9}" for n in eff_counts)
        lines = [
            f"# collbench scale {self.op}: busbw (GB/s) by message size and node count; efficiency = busbw / "
            f"busbw at {self.base if self.base is not None else '-'} node(s)",
            header,
        ]
        decimals = busbw_decimals(v for by_n in self.busbw.values() for v in by_n.values())
        for size, by_nodes in sorted(self.busbw.items()):
            line = f"{size:>12}" + "".join(f"{_busbw_cell(by_nodes.get(n), decimals):>11}" for n in self.counts)
            for n in eff_counts:
                eff = self.efficiency(size, n)
                line += f"{'-' if eff is None else f'{eff:.2f}':>9}"
            lines.append(line)
        return [*lines, "#"]

    def to_plain(self) -> dict[str, Any]:
        return {
            "op": self.op,
            "base_nodes": self.base,
            "rows": [
                {
                    "size": size,
                    "busbw": {str(n): v for n, v in sorted(by_nodes.items())},
                    "efficiency": {str(n): eff for n in self.counts if (eff := self.efficiency(size, n)) is not None},
                }
                for size, by_nodes in sorted(self.busbw.items())
            ],
        }


def _nodes_label(n: int) -> str:
    return f"{n} node" + ("s" if n > 1 else "")


def _busbw_cell(value: float | None, decimals: int) -> str:
    return "-" if value is None else f"{value:.{decimals}f}"


@dataclass(frozen=True, slots=True)
class ScaleReport:
    sweep_id: str
    outcomes: list[NodeOutcome]
    ops: list[OpScaling]
    per_nodes: dict[int, Cells]

    @property
    def complete(self) -> bool:
        return all(o.outcome == "completed" for o in self.outcomes)

    def lines(self) -> list[str]:
        lines = [line for op in self.ops for line in op.table()]
        failures = [o.line() for o in self.outcomes if o.outcome != "completed"]
        return lines + (failures or ["# every node count completed"])

    def to_plain(self) -> dict[str, Any]:
        return {
            "sweep_id": self.sweep_id,
            "complete": self.complete,
            "nodes": [asdict(o) for o in self.outcomes],
            "ops": [op.to_plain() for op in self.ops],
        }


def scale_report(sweep: Sweep, assess: Assess) -> ScaleReport:
    per_nodes: dict[int, Cells] = {}
    outcomes = []
    for entry in sweep.entries():
        nodes, job_id, run_dir = entry.nodes, entry.job_id, entry.run_dir
        if not run_dir:
            outcomes.append(NodeOutcome(nodes, "not submitted", entry.error or "no job was submitted"))
            continue
        seen = assess(RunDir(Path(run_dir)))
        per_nodes[nodes] = headline_rows(seen.rows)
        outcome, why = _judge(seen)
        outcomes.append(NodeOutcome(nodes, outcome, why, job_id, run_dir, seen.state))
    counts = sorted(per_nodes)
    ops = list(dict.fromkeys(op for cells in per_nodes.values() for op, _ in cells))
    return ScaleReport(sweep.sweep_id, outcomes, [_op_scaling(op, counts, per_nodes) for op in ops], per_nodes)


def _judge(seen: RunAssessment) -> tuple[Literal["completed", "failed", "not finished"], str]:
    if not seen.final:
        return "not finished", f"still {seen.state}"
    if seen.state.startswith("PENDING"):
        return "failed", f"Slurm will never start it as submitted: {seen.state} (scancel it, or change the request)"
    if seen.problems or seen.state not in ("COMPLETED", "local"):
        why = "; ".join(seen.problems[:3]) or "no problem recorded by the ranks"
        more = f" (+{len(seen.problems) - 3} more)" if len(seen.problems) > 3 else ""
        return "failed", f"ended {seen.state}: {why}{more}"
    return "completed", ""


def _op_scaling(op: str, counts: list[int], per_nodes: dict[int, Cells]) -> OpScaling:
    busbw: dict[int, dict[int, float]] = defaultdict(dict)
    for n in counts:
        for (name, size), row in per_nodes[n].items():
            if name == op:
                busbw[size][n] = row.busbw
    base = next((n for n in counts if any(by_n.get(n, 0) > 0 for by_n in busbw.values())), None)
    return OpScaling(op=op, counts=counts, base=base, busbw=dict(busbw))


def band_means(per_nodes: dict[int, Cells]) -> dict[str, dict[str, dict[int, float]]]:
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
