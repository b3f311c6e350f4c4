"""Small matplotlib helpers for lessons and widgets (non-interactive Agg rendering to PNG bytes).

Introduced in ``notebooks/00_start_here.ipynb``.
"""
from __future__ import annotations

import io
import re
from typing import Any, Callable, Sequence

MiB = 1024 * 1024
BSON_LIMIT = 16 * MiB

_DIGITS = re.compile(r"[0-9]")


def render_png(draw: Callable[["object"], None], *, size: tuple[float, float] = (5.0, 2.6), dpi: int = 80) -> bytes:
    """Call ``draw(ax)`` on a fresh figure and return it as PNG bytes (for an ``ipywidgets.Image``)."""
    return PngCanvas(size=size, dpi=dpi).render(draw)


class PngCanvas:
    """One reusable figure that renders ``draw(ax)`` to PNG bytes, for a widget that redraws on every step.

    The figure and its axes are made once and cleared between renders. The tight layout (margins that fit the
    labels) is half the cost of a render; it is recomputed only when what decides the margins changes: the
    axis labels, the title, the texts, the legend, and the tick labels (their distinct texts with every digit
    read as ``0``, since the font's digits all have one width, and how many pixels they reach beyond the ends
    of the axes). Otherwise the margins of the last layout are reused, which is what the tight layout
    would compute again (to within a pixel). Every layout starts from the default margins, as a fresh figure
    does, so the result never depends on the renders before it.
    """

    def __init__(self, *, size: tuple[float, float] = (5.0, 2.6), dpi: int = 80) -> None:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure  # no pyplot: no global state, no backend switching

        self.figure = Figure(figsize=size, dpi=dpi)
        FigureCanvasAgg(self.figure)  # attaches itself as figure.canvas (its renderer measures the texts)
        self.ax = self.figure.add_subplot(1, 1, 1)
        self._defaults = _subplot_params(self.figure)
        self._layout: tuple[tuple, dict[str, float]] | None = None  # (key, margins) of the last tight layout
        self.layouts = 0  # how many renders computed a tight layout (for tests)

    def render(self, draw: Callable[["object"], None]) -> bytes:
        """Clear the axes, call ``draw(ax)`` and return the figure as PNG bytes."""
        fig, ax = self.figure, self.ax
        ax.cla()
        fig.subplots_adjust(**self._defaults)  # measure the texts where a fresh figure would
        draw(ax)
        key = _layout_key(fig, ax)
        if self._layout is not None and self._layout[0] == key:
            fig.subplots_adjust(**self._layout[1])
        else:
            fig.tight_layout()
            self._layout = (key, _subplot_params(fig))
            self.layouts += 1
        return _png(fig)


def _png(fig: Any) -> bytes:
    """The figure as PNG bytes: what ``fig.savefig(buf, format="png", metadata={"Software": None})`` writes for
    a figure at its own dpi with the default face and edge colours and no layout engine (the same bytes,
    tested), without savefig's per-call setup (re-applying the dpi invalidates every transform)."""
    import matplotlib.image
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = fig.canvas
    FigureCanvasAgg.draw(canvas)
    buf = io.BytesIO()
    matplotlib.image.imsave(buf, canvas.buffer_rgba(), format="png", origin="upper", dpi=fig.dpi,
                            metadata={"Software": None})
    return buf.getvalue()


def _subplot_params(fig: Any) -> dict[str, float]:
    p = fig.subplotpars
    return {"left": p.left, "bottom": p.bottom, "right": p.right, "top": p.top, "wspace": p.wspace,
            "hspace": p.hspace}


def _text_key(text: Any) -> tuple:
    return (_DIGITS.sub("0", text.get_text()), text.get_fontsize(), text.get_rotation(), text.get_visible())


def _ticks_key(ax: Any, axis: Any, along: int, renderer: Any, box: Any) -> tuple:
    labels = [t for t in axis.get_majorticklabels() + axis.get_minorticklabels() if t.get_visible() and t.get_text()]
    lo, hi = sorted(axis.get_view_interval())
    shown = [t for t in labels if lo <= t.get_position()[along] <= hi or axis.get_scale() != "linear"]
    over = [0, 0]  # how far (whole pixels) tick labels reach beyond the axes' two ends along the axis
    for t in shown:
        ext = t.get_window_extent(renderer)
        if along == 0:
            over = [max(over[0], round(box.x0 - ext.x0)), max(over[1], round(ext.x1 - box.x1))]
        else:
            over = [max(over[0], round(box.y0 - ext.y0)), max(over[1], round(ext.y1 - box.y1))]
    return (_text_key(axis.label), tuple(sorted({_text_key(t) for t in shown})), tuple(over),
            axis.get_ticks_position(), axis.get_label_position())


def _layout_key(fig: Any, ax: Any) -> tuple:
    """What the tight layout depends on (see :class:`PngCanvas`)."""
    legend = ax.get_legend()
    renderer, box = fig.canvas.get_renderer(), ax.get_window_extent()
    return (tuple(fig.get_size_inches()), fig.dpi, _text_key(ax.title), _text_key(ax._left_title),
            _text_key(ax._right_title), ax.get_xscale(), ax.get_yscale(),
            _ticks_key(ax, ax.xaxis, 0, renderer, box), _ticks_key(ax, ax.yaxis, 1, renderer, box),
            tuple((_text_key(t), tuple(t.get_position()), t.get_ha(), t.get_va()) for t in ax.texts),
            None if legend is None else tuple(_text_key(t) for t in legend.get_texts()))


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


def before_after(compare: Any, row: str, xlabel: str) -> None:
    """The lessons' before-and-after chart: row ``row`` of a comparison table whose columns are the designs
    (the naive one first, drawn red, then the better one, blue), as horizontal bars labelled ``xlabel``."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 2.2))
    ax.barh(compare.columns, compare.loc[row], color=["#d62728", "#1f77b4"])
    ax.set_xlabel(xlabel)
    plt.tight_layout()
    plt.show()


class ShowsText:
    """For an object that holds an ipywidgets ``widget`` and describes itself in :meth:`text`: the notebook shows
    the widget, and its stored text/plain (what nbval compares, what a plain console prints) is that text."""

    widget: Any

    def text(self) -> str:  # pragma: no cover - each class says its own
        raise NotImplementedError

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        bundle = self.widget._repr_mimebundle_(include=include, exclude=exclude) or {}
        if isinstance(bundle, tuple):
            bundle = bundle[0]
        bundle = dict(bundle)
        bundle["text/plain"] = self.text()
        return bundle

    def __repr__(self) -> str:
        return self.text()
