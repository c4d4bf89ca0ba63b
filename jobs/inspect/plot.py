"""PNG plots (matplotlib): busbw against size for a run, against nodes for a sweep."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from collectives.results import SummaryRow, headline_rows
from jobs.config.schema import ConfigError

if TYPE_CHECKING:
    from jobs.inspect.html.plain import TrendLine


def pyplot(option: str = "--plot") -> Any:
    """matplotlib's pyplot on the Agg backend; `option` names what needs it in the refusal where it is missing
    (a core dependency, so only a broken install lacks it)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ConfigError(f"{option} needs matplotlib: pip install matplotlib") from None
    return plt


def plot_busbw(rows: list[SummaryRow], path: Path, title: str) -> None:
    plt = pyplot()
    lines: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for row in headline_rows(rows).values():  # one line per op, as nccl-tests' first busbw column
        lines[row.op].append((row.size, row.busbw))
    figure, axes = plt.subplots(figsize=(8, 5))
    for op, points in lines.items():
        points.sort()
        axes.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=op)
    axes.set_xscale("log", base=2)
    axes.set_xlabel("message size (bytes)")
    axes.set_ylabel("busbw (GB/s)")
    axes.set_title(title)
    axes.grid(True, which="both", alpha=0.3)
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def plot_scaling(per_nodes: dict[int, dict[tuple[str, int], SummaryRow]], path: Path, title: str) -> None:
    """busbw against node count, one line per size band, one panel per op."""
    from jobs.inspect.scale import band_means

    plt = pyplot()
    means = band_means(per_nodes)
    figure, axes = plt.subplots(1, max(1, len(means)), figsize=(5 * max(1, len(means)), 4), squeeze=False)
    for axis, (op, bands) in zip(axes[0], means.items(), strict=False):
        for band, points in bands.items():
            counts = sorted(points)
            axis.plot(counts, [points[n] for n in counts], marker="o", label=band)
        axis.set_title(op)
        axis.set_xlabel("nodes")
        axis.set_ylabel("busbw (GB/s)")
        axis.grid(True, alpha=0.3)
        axis.legend(fontsize="small")
    figure.suptitle(title)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def draw_trend(axis: Any, lines: Sequence[TrendLine], label: Callable[[str], str] = str) -> None:
    """A figure over time, one line per comparable set, each with its baseline band (median +- 3 MAD) over its
    own span: `history trend --plot` and the trend's page draw it so."""
    from datetime import datetime

    for line in lines:
        when = [datetime.fromtimestamp(point.started) for point in line.points]
        (drawn,) = axis.plot(
            when, [point.value for point in line.points], marker="o", markersize=3, label=label(line.label)
        )
        if line.median is not None and line.mad is not None:
            low, high = line.median - 3 * line.mad, line.median + 3 * line.mad
            axis.fill_between([when[0], when[-1]], low, high, alpha=0.2, color=drawn.get_color())
            axis.hlines(line.median, when[0], when[-1], linestyles="--", colors=drawn.get_color())
    axis.grid(True, alpha=0.3)
    axis.legend(fontsize="small")
    axis.tick_params(axis="x", labelrotation=30)


def plot_trend(lines: Sequence[TrendLine], path: Path, title: str, figure_name: str) -> None:
    plt = pyplot()
    figure, axis = plt.subplots(figsize=(9, 4))
    draw_trend(axis, lines)
    axis.set_ylabel(figure_name)
    axis.set_title(title)
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)
