"""The page's line plots as inline SVG: busbw against size (one curve per op; per node count for a sweep;
baseline and candidate for a comparison) and a figure over time with its baseline band (a history trend)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from markupsafe import Markup

from collectives.results import SummaryRow, headline_rows
from jobs.inspect.html.plain import TrendLine
from jobs.inspect.html.svg import figure, plain, to_svg

Points = list[tuple[int, float]]
"""(requested size, busbw), smallest first."""


def op_curves(rows: Sequence[SummaryRow]) -> dict[str, Points]:
    """op -> its busbw at each size: the whole job's rows, the figure nccl-tests reads first."""
    curves: dict[str, Points] = {}
    for (op, size), row in headline_rows(row for row in rows if not row.group).items():
        curves.setdefault(op, []).append((size, row.busbw))
    return {op: sorted(points) for op, points in curves.items()}


def busbw_plot(panels: Mapping[str, Mapping[str, Points]], title: str) -> Markup | None:
    """One panel per key of `panels` (an op), one curve per label in it; None when there is nothing to draw."""
    drawn = {name: curves for name, curves in panels.items() if any(curves.values())}
    if not drawn:
        return None
    fig, axes = figure(max(7.0, min(5.0 * len(drawn), 12.0)), 3.8, len(drawn))
    for axis, (name, curves) in zip(axes[0], drawn.items(), strict=True):
        for label, points in curves.items():
            if points:
                axis.plot([p[0] for p in points], [p[1] for p in points], marker="o", markersize=3, label=plain(label))
        axis.set_xscale("log", base=2)
        axis.set_xlabel("message size (bytes)")
        axis.set_ylabel("busbw (GB/s)")
        axis.set_title(plain(name))
        axis.grid(True, which="both", alpha=0.3)
        if len(curves) > 1 or len(drawn) == 1:
            axis.legend(fontsize="small")
    fig.suptitle(plain(title), fontsize=9)
    fig.tight_layout()
    return to_svg(fig)


def trend_plot(lines: Sequence[TrendLine], title: str, figure_name: str) -> Markup | None:
    """The figure over time, one line per comparable set, each with its band (jobs.inspect.plot.draw_trend)."""
    from jobs.inspect.plot import draw_trend

    if not any(line.points for line in lines):
        return None
    fig, axes = figure(9.0, 3.8)
    axis = axes[0][0]
    draw_trend(axis, lines, plain)
    axis.set_ylabel(figure_name)
    fig.suptitle(plain(title))
    fig.tight_layout()
    return to_svg(fig)
