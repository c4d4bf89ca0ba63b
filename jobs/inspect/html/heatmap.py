"""The pair matrix of an isolate or check run as a heatmap: one raster image (matplotlib's imshow), never a
shape per cell, so a 1,024-node matrix (a million cells) stays a few hundred KiB. Hosts are ordered by leaf
switch when the topology is known; the named nodes and links are marked, and labelled on the axes (every
host only up to LABEL_ALL_UP_TO hosts)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from markupsafe import Markup

from jobs.inspect.html.svg import figure, plain, to_svg

LABEL_ALL_UP_TO = 64
"""Up to this many hosts every host is labelled; beyond, only the named ones."""
MOST_PIXELS = 512
"""Beyond this many hosts a side, each pixel is a block of pairs showing the slowest of them: a slow pair
stays visible, where sampling would drop it."""
NAMED = "#c00000"
UNDECIDED = "#b06000"
"""The inconclusive nodes and links: marked dashed, in amber, never as the named."""


@dataclass(frozen=True, slots=True)
class PairMatrix:
    hosts: list[str]
    cells: Mapping[tuple[int, ...], float]
    """(node a, node b), a < b -> the pair's busbw (GB/s); a pair not measured is absent."""
    level: float = 0.0
    """The healthy level the pairs were judged against: cells are drawn as a share of it (0: in GB/s)."""
    leaves: Mapping[int, str] = field(default_factory=dict)
    """Node -> its leaf switch, when known: the hosts are drawn grouped by leaf."""
    named_nodes: Mapping[int, str] = field(default_factory=dict)
    """Node -> its label on the axes (its host, with the rail when a rail was named)."""
    named_links: Sequence[tuple[int, int]] = ()
    undecided_nodes: Mapping[int, str] = field(default_factory=dict)
    """Node -> its label: a node or rail of it the verdict could not settle (marked apart from the named)."""
    undecided_links: Sequence[tuple[int, int]] = ()


def heatmap_svg(matrix: PairMatrix, title: str) -> Markup | None:
    """The heatmap as inline SVG; None when no pair was measured."""
    if not matrix.cells or len(matrix.hosts) < 2:
        return None
    n = len(matrix.hosts)
    order = sorted(range(n), key=lambda node: (matrix.leaves.get(node, ""), node)) if matrix.leaves else list(range(n))
    place = {node: at for at, node in enumerate(order)}
    grid, block = _pooled(_grid(matrix, place), n)
    side = 2.6 + 0.32 * n if n <= 16 else 8.0
    fig, axes = figure(side + 1.2, side)
    axis = axes[0][0]
    cmap = _colours()
    share = matrix.level > 0
    image = axis.imshow(
        grid, cmap=cmap, interpolation="nearest", vmin=0.0, vmax=max(1.2, float(_top(grid))) if share else None,
        extent=(-0.5, n - 0.5, n - 0.5, -0.5),
    )  # fmt: skip
    fig.colorbar(image, ax=axis, label="busbw / healthy level" if share else "busbw (GB/s)", shrink=0.8)
    _leaf_lines(axis, matrix.leaves, order)
    _ticks(axis, matrix, order, place)
    _marks(axis, matrix, place, n)
    pooled = f"; each pixel the slowest of {block} x {block} pairs" if block > 1 else ""
    axis.set_title(plain(title + pooled), fontsize=8)
    fig.tight_layout()
    return to_svg(fig, dpi=min(110.0, max(72.0, grid.shape[0] / 5.0)))


def _grid(matrix: PairMatrix, place: Mapping[int, int]) -> Any:
    import numpy as np

    n = len(matrix.hosts)
    grid = np.full((n, n), np.nan)
    if not matrix.cells:
        return grid
    pairs = np.array([(place[a], place[b]) for a, b in matrix.cells], dtype=np.int64)
    values = np.fromiter(matrix.cells.values(), dtype=float, count=len(matrix.cells))
    if matrix.level > 0:
        values = values / matrix.level
    grid[pairs[:, 0], pairs[:, 1]] = values
    grid[pairs[:, 1], pairs[:, 0]] = values
    return grid


def _pooled(grid: Any, n: int) -> tuple[Any, int]:
    """The grid at most MOST_PIXELS a side: blocks of cells, each the slowest (min) of its measured pairs."""
    import numpy as np

    block = math.ceil(n / MOST_PIXELS)
    if block == 1:
        return grid, 1
    side = math.ceil(n / block)
    padded = np.full((side * block, side * block), np.nan)
    padded[:n, :n] = grid
    blocks = padded.reshape(side, block, side, block).swapaxes(1, 2).reshape(side, side, block * block)
    with np.errstate(all="ignore"):
        measured = ~np.isnan(blocks)
        slowest = np.where(measured, blocks, np.inf).min(axis=2)
    return np.where(measured.any(axis=2), slowest, np.nan), block


def _top(grid: Any) -> float:
    import numpy as np

    return float(np.nanmax(grid)) if not np.all(np.isnan(grid)) else 1.0


def _colours() -> Any:
    import matplotlib

    return matplotlib.colormaps["RdYlGn"].with_extremes(bad="#e8e8e8")  # grey: not measured


def _leaf_lines(axis: Any, leaves: Mapping[int, str], order: Sequence[int]) -> None:
    """A thin line between leaves, when the topology is known."""
    if not leaves:
        return
    for at in range(1, len(order)):
        if leaves.get(order[at], "") != leaves.get(order[at - 1], ""):
            axis.axhline(at - 0.5, color="#555555", linewidth=0.5)
            axis.axvline(at - 0.5, color="#555555", linewidth=0.5)


def _ticks(axis: Any, matrix: PairMatrix, order: Sequence[int], place: Mapping[int, int]) -> None:
    n = len(order)
    if n <= LABEL_ALL_UP_TO:
        shown = list(range(n))
        labels = [_label(matrix, node) for node in order]
    else:
        named = sorted({*matrix.named_nodes, *matrix.undecided_nodes}, key=lambda node: place[node])
        shown = [place[node] for node in named]
        labels = [_label(matrix, node) for node in named]
    labels = [plain(label) for label in labels]
    small = 7 if n <= 32 else 6
    axis.set_xticks(shown, labels, rotation=90, fontsize=small)
    axis.set_yticks(shown, labels, fontsize=small)
    for tick_labels in (axis.get_xticklabels(), axis.get_yticklabels()):
        for at, text in zip(shown, tick_labels, strict=True):
            if order[at] in matrix.named_nodes:
                text.set_color(NAMED)
                text.set_fontweight("bold")
            elif order[at] in matrix.undecided_nodes:
                text.set_color(UNDECIDED)
                text.set_fontstyle("italic")


def _label(matrix: PairMatrix, node: int) -> str:
    return matrix.named_nodes.get(node) or matrix.undecided_nodes.get(node) or matrix.hosts[node]


def _marks(axis: Any, matrix: PairMatrix, place: Mapping[int, int], n: int) -> None:
    """A line along each named node's row and column; a square around each named link's two cells; the same,
    dashed and amber, for each inconclusive node and link."""
    for nodes, colour, style in ((matrix.named_nodes, NAMED, "-"), (matrix.undecided_nodes, UNDECIDED, "--")):
        for node in nodes:
            axis.axhline(place[node], color=colour, linewidth=0.6, alpha=0.5, linestyle=style)
            axis.axvline(place[node], color=colour, linewidth=0.6, alpha=0.5, linestyle=style)
    size = max(12.0, (300.0 / n) ** 2)
    for links, colour, style in ((matrix.named_links, NAMED, "-"), (matrix.undecided_links, UNDECIDED, "--")):
        if links:
            xs = [place[b] for a, b in links] + [place[a] for a, b in links]
            ys = [place[a] for a, b in links] + [place[b] for a, b in links]
            axis.scatter(xs, ys, s=size, marker="s", facecolors="none", edgecolors=colour, linewidths=1.2,
                         linestyle=style)  # fmt: skip
    axis.set_xlim(-0.5, n - 0.5)
    axis.set_ylim(n - 0.5, -0.5)
