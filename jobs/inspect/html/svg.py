"""matplotlib figures as inline SVG. Text in the SVG is written by matplotlib, which escapes it (a host
named `<script>` is text in the figure too); only that output is marked safe for the page. matplotlib
is imported here, when a page draws its first plot, never when the command starts."""

from __future__ import annotations

import io
from typing import Any

from markupsafe import Markup

SVG_STYLE = {
    "svg.fonttype": "none",  # text as <text>, in the page's own fonts: files a fraction of the size
    "svg.hashsalt": "collbench",  # the same figure gives the same SVG: no random ids from one run to the next
    "font.family": "sans-serif",
    "font.size": 9,
}
NO_METADATA = {"Date": None, "Creator": None, "Format": None, "Type": None}


def pyplot() -> Any:
    """matplotlib's pyplot on the Agg backend; a one-line refusal (exit 2) where matplotlib is missing."""
    from jobs.inspect.plot import pyplot as plot_pyplot

    return plot_pyplot("--html")


def figure(width: float, height: float, columns: int = 1) -> tuple[Any, Any]:
    """A new figure and its axes (a row of `columns` panels), styled for the page."""
    plt = pyplot()
    with plt.rc_context(SVG_STYLE):
        fig, axes = plt.subplots(1, columns, figsize=(width, height), squeeze=False)
    return fig, axes


def to_svg(fig: Any, dpi: float = 72.0) -> Markup:
    """The figure as an <svg> element (no XML prolog, no doctype: it sits inside the page), then closed;
    `dpi`: the resolution of any raster in it (the heatmap's image)."""
    plt = pyplot()
    buffer = io.StringIO()
    with plt.rc_context(SVG_STYLE):
        fig.savefig(buffer, format="svg", dpi=dpi, metadata=NO_METADATA)
    plt.close(fig)
    text = buffer.getvalue()
    return Markup(text[text.index("<svg") :])  # matplotlib's own output, its text escaped by matplotlib


def plain(text: str) -> str:
    """`text` as matplotlib draws it literally: a '$' pair would otherwise start mathtext (and a bad one
    fail the drawing)."""
    return text.replace("$", r"\$")
