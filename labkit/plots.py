"""Small matplotlib helpers for lessons and widgets (non-interactive Agg rendering to PNG bytes).

Introduced in ``notebooks/00_start_here.ipynb``.
"""
from __future__ import annotations

import io
from typing import Callable, Sequence

MiB = 1024 * 1024
BSON_LIMIT = 16 * MiB


def render_png(draw: Callable[["object"], None], *, size: tuple[float, float] = (5.0, 2.6), dpi: int = 80) -> bytes:
    """Call ``draw(ax)`` on a fresh figure and return it as PNG bytes (for an ``ipywidgets.Image``)."""
    from matplotlib.figure import Figure  # no pyplot: no global state, no backend switching

    fig = Figure(figsize=size, dpi=dpi)
    ax = fig.add_subplot(1, 1, 1)
    draw(ax)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    return buf.getvalue()


def bars_against_limit(ax, labels: Sequence[str], sizes: Sequence[float], *, limit: float = BSON_LIMIT,
                       unit: str = "MiB", title: str = "") -> None:
    """Horizontal bars of byte sizes with the 16 MiB document limit drawn as a red line."""
    scale = MiB if unit == "MiB" else 1024 if unit == "KiB" else 1
    values = [s / scale for s in sizes]
    ax.barh(list(labels), values, color=["#d62728" if s > limit else "#1f77b4" for s in sizes])
    top = max(values, default=0)
    if top >= 0.05 * limit / scale:  # the wall is drawn once it is in sight
        ax.axvline(limit / scale, color="#d62728", linestyle="--", linewidth=1)
        ax.text(limit / scale, 0, " 16 MiB limit", color="#d62728", fontsize=8, va="bottom")
        top = max(top, limit / scale)
    ax.set_xlabel(unit)
    ax.set_xlim(0, (top or 1) * 1.15)
    if title:
        ax.set_title(title, fontsize=10)
