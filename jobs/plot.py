"""`collbench report --plot FILE.png`: busbw against message size, one line per op (matplotlib, optional)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from collectives.results import SummaryRow
from jobs.schema import ConfigError


def plot_busbw(rows: list[SummaryRow], path: Path, title: str) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ConfigError("--plot needs matplotlib: pip install 'collbench[plot]'") from None
    lines: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for row in rows:
        # one line per op: out-of-place where measured (nccl-tests' first column), else in-place
        placements = {r.in_place for r in rows if r.op == row.op}
        if row.in_place == (placements == {True}) and row.root in (-1, 0):
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
