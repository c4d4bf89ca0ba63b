"""`collbench history trend` as a page: the figure over time, one line per comparable set with its
baseline band, and each set's runs as a table. The CLI hands the rows over as plain data (plain.TrendLine):
this layer reads no history."""

from __future__ import annotations

from dataclasses import dataclass

from markupsafe import Markup

from jobs.inspect.html.banner import Banner, Command, banner
from jobs.inspect.html.curves import trend_plot
from jobs.inspect.html.pages import render
from jobs.inspect.html.plain import TrendLine


@dataclass(frozen=True, slots=True)
class TrendPage:
    title: str
    verdict: Banner
    command: Command
    lines: list[TrendLine]
    figure: str
    plot: Markup | None
    min_runs: int


def render_trend_page(lines: list[TrendLine], what: str, figure: str, command: str, min_runs: int) -> str:
    """`what`: the op and size in words; `figure`: busbw, algbw or time_us; `min_runs`: the fewest healthy
    runs a baseline is taken over."""
    runs = sum(len(line.points) for line in lines)
    below = [
        f"{line.label}: {point.run_id} {line.against_band(point)} ({figure} {point.value:.4g} "
        f"{'< median - 3 MAD' if line.higher_is_better else '> median + 3 MAD'})"
        for line in lines
        for point in line.worse_than_band()
    ]
    headline = f"{runs} run(s) in {len(lines)} comparable set(s)" if lines else "no run matches"
    page = TrendPage(
        title=f"collbench history trend {what}",
        verdict=banner(headline, 0, "trend", below),
        command=Command(command),
        lines=lines,
        figure=figure,
        plot=trend_plot(lines, f"{what}: {figure} (bands: median ± 3 MAD)", figure),
        min_runs=min_runs,
    )
    return render("trend.html.j2", page=page)
