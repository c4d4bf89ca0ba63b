"""A node-count sweep as a page: the verdict (every node count completed, or which did not), busbw by size
and node count per op as tables and as curves (one panel per op, one curve per node count), and each
run's directory, linked relative to the page."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from markupsafe import Markup

from jobs.inspect.html.banner import Banner, Command, banner
from jobs.inspect.html.curves import Points, busbw_plot
from jobs.inspect.html.pages import render
from jobs.inspect.html.tables import Cell
from jobs.inspect.scale import NodeOutcome, OpScaling, ScaleReport
from jobs.rundir.records.sweep import SweepMeta


@dataclass(frozen=True, slots=True)
class ScalingTable:
    op: str
    columns: list[str]
    rows: list[list[Cell]]
    base: int | None


@dataclass(frozen=True, slots=True)
class RunLink:
    outcome: NodeOutcome
    href: str
    """The run directory, relative to the page; '' when no run was submitted."""


@dataclass(frozen=True, slots=True)
class SweepPage:
    title: str
    verdict: Banner
    command: Command
    tables: list[ScalingTable]
    curves: Markup | None
    runs: list[RunLink]


def render_sweep_page(report: ScaleReport, meta: SweepMeta, sweep_path: Path, exit_code: int, links_from: Path) -> str:
    """`meta`: sweep.json (the command that made the sweep); `links_from`: the folder the page is written to."""
    failed = [o.line().removeprefix("# ") for o in report.outcomes if o.outcome != "completed"]
    headline = "every node count COMPLETED" if report.complete else f"FAILED: {failed[0]}"
    page = SweepPage(
        title=f"collbench scale {report.sweep_id}",
        verdict=banner(headline, exit_code, "sweep", failed),
        command=sweep_command(meta),
        tables=[scaling_table(op) for op in report.ops],
        curves=busbw_plot(sweep_curves(report), f"collbench scale {report.sweep_id}"),
        runs=[RunLink(o, _relative(o.run_dir, links_from)) for o in report.outcomes],
    )
    return render("sweep.html.j2", page=page, sweep_path=str(sweep_path))


def sweep_command(meta: SweepMeta) -> Command:
    config = f" --config {meta.config}" if meta.config else ""
    counts = ",".join(map(str, meta.node_counts))
    overrides = "".join(f" {word}" for word in meta.overrides)
    return Command(f"collbench scale{config}{overrides} nodes=[{counts}]", "as sweep.json records it")


def scaling_table(op: OpScaling) -> ScalingTable:
    others = [n for n in op.counts if op.base is not None and n > op.base]
    columns = ["size (B)", *(f"{n} node(s)" for n in op.counts), *(f"eff {n}" for n in others)]
    rows = []
    for size, by_nodes in sorted(op.busbw.items()):
        cells = [Cell(str(size))]
        cells += [Cell("-" if by_nodes.get(n) is None else f"{by_nodes[n]:.4g}") for n in op.counts]
        for n in others:
            eff = op.efficiency(size, n)
            cells.append(Cell("-" if eff is None else f"{eff:.2f}"))
        rows.append(cells)
    return ScalingTable(op.op, columns, rows, op.base)


def sweep_curves(report: ScaleReport) -> dict[str, dict[str, Points]]:
    """op -> node count's label -> (size, busbw)."""
    panels: dict[str, dict[str, Points]] = {}
    for nodes, cells in sorted(report.per_nodes.items()):
        for (op, size), row in sorted(cells.items()):
            panels.setdefault(op, {}).setdefault(f"{nodes} node(s)", []).append((size, row.busbw))
    return panels


def _relative(path: str | None, links_from: Path) -> str:
    if not path:
        return ""
    return quote(Path(os.path.relpath(Path(path).resolve(), links_from.resolve())).as_posix() + "/")
