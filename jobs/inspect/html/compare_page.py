"""`collbench compare A B` as a page: the verdict, every compared row (its ratio and verdict), and the two
sides' busbw against size, one panel per op (per node count for two sweeps)."""

from __future__ import annotations

from dataclasses import dataclass

from markupsafe import Markup

from jobs.inspect.compare import ComparedRow, Comparison
from jobs.inspect.html.banner import Banner, Command, banner
from jobs.inspect.html.curves import Points, busbw_plot
from jobs.inspect.html.pages import render


@dataclass(frozen=True, slots=True)
class ComparePage:
    title: str
    verdict: Banner
    command: Command
    comparison: Comparison
    curves: Markup | None
    names: tuple[str, str]


def render_compare_page(
    comparison: Comparison, names: tuple[str, str], tolerance: str, exit_code: int, command: str
) -> str:
    """`names`: the baseline's and the candidate's; `tolerance`: in words; `command`: the command line."""
    lines = [f"REGRESSION: {line}" for line in comparison.regressions]
    lines += [f"INCOMPLETE: {line}" for line in comparison.incomplete]
    if not comparison.rows:
        lines.append("FAILED: nothing comparable between the two")
    rows, regressions = len(comparison.rows), len(comparison.regressions)
    headline = f"no regression in {rows} row(s)" if exit_code == 0 else lines[0]
    if regressions:
        headline = f"REGRESSION in {regressions} of {rows} row(s)"
    page = ComparePage(
        title=f"collbench compare {names[0]} {names[1]}",
        verdict=banner(headline, exit_code, "compare", lines),
        command=Command(command, f"tolerance {tolerance}"),
        comparison=comparison,
        curves=busbw_plot(compare_curves(comparison.rows, names), f"baseline {names[0]}, candidate {names[1]}"),
        names=names,
    )
    return render("compare.html.j2", page=page)


def compare_curves(rows: list[ComparedRow], names: tuple[str, str]) -> dict[str, dict[str, Points]]:
    """op -> (node count and) side -> (size, busbw), the first placement and root of each size."""
    seen: set[tuple[str, str, int]] = set()
    panels: dict[str, dict[str, Points]] = {}
    for row in sorted(rows, key=lambda r: (r.label, r.op, r.size, r.in_place, r.root)):
        if (row.label, row.op, row.size) in seen:
            continue
        seen.add((row.label, row.op, row.size))
        prefix = f"{row.label} " if row.label else ""
        panel = panels.setdefault(row.op, {})
        panel.setdefault(f"{prefix}baseline {names[0]}", []).append((row.size, row.base_busbw))
        panel.setdefault(f"{prefix}candidate {names[1]}", []).append((row.size, row.cand_busbw))
    return panels
