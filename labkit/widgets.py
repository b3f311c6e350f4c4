"""Slider-driven explorers for lessons: ``explorer(compute, sliders=...)`` returns a handle.

Introduced in ``notebooks/00_start_here.ipynb``. The handle holds the widgets and the function they drive, so
tests move ``handle.sliders["users"].value`` and read ``handle.result`` without a browser. In a notebook, the
handle displays as the widget, and its plain-text form is a deterministic summary (what nbval compares).
"""
from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import ipywidgets as w

from labkit.plots import render_png

Compute = Callable[..., Mapping[str, Any]]
Draw = Callable[[Any, Mapping[str, int], Mapping[str, Any]], None]


@dataclass
class Explorer:
    """A set of sliders, a readout table and an optional plot, all driven by ``compute``."""

    compute: Compute
    sliders: dict[str, w.ValueWidget]  # sliders and dropdowns, by name
    readout: w.HTML
    image: w.Image | None
    draw: Draw | None
    title: str = ""
    result: dict[str, Any] = field(default_factory=dict)
    updates: int = 0

    @property
    def values(self) -> dict[str, Any]:
        """The current control values by name."""
        return {k: s.value for k, s in self.sliders.items()}

    def update(self, *_: Any) -> dict[str, Any]:
        """Recompute for the current slider values and refresh the readout and plot."""
        values = self.values
        self.result = dict(self.compute(**values))
        self.readout.value = self._html()
        if self.image is not None and self.draw is not None:
            self.image.value = render_png(lambda ax: self.draw(ax, values, self.result))
        self.updates += 1
        return self.result

    def set(self, **values: int) -> dict[str, Any]:
        """Move sliders by name (as a learner would) and return the new result."""
        unknown = set(values) - set(self.sliders)
        if unknown:
            raise ValueError(f"unknown slider(s) {sorted(unknown)}; this explorer has {sorted(self.sliders)}")
        with_change = False
        for name, value in values.items():
            if self.sliders[name].value != value:
                self.sliders[name].value = value  # fires update() through observe
                with_change = True
        if not with_change:
            self.update()
        return self.result

    def text(self) -> str:
        """Deterministic plain-text summary of the current values and result."""
        parts = [f"{k}={_fmt(v)}" for k, v in self.values.items()]
        lines = [(self.title + ": " if self.title else "") + ", ".join(parts)]
        lines += [f"  {k}: {_fmt(v)}" for k, v in self.result.items()]
        return "\n".join(lines)

    def _html(self) -> str:
        rows = "".join(
            f"<tr><th style='text-align:left;padding-right:1em'>{html.escape(str(k))}</th>"
            f"<td style='text-align:right' class='labkit-{_slug(k)}'>{html.escape(_fmt(v))}</td></tr>"
            for k, v in self.result.items()
        )
        return f"<table class='labkit-readout'>{rows}</table>"

    @property
    def widget(self) -> w.VBox:
        """The widget tree to display."""
        children: list[w.Widget] = []
        if self.title:
            children.append(w.HTML(f"<b>{html.escape(self.title)}</b>"))
        children += list(self.sliders.values())
        body: list[w.Widget] = [self.readout] + ([self.image] if self.image is not None else [])
        children.append(w.HBox(body))
        return w.VBox(children)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        bundle = self.widget._repr_mimebundle_(include=include, exclude=exclude) or {}
        if isinstance(bundle, tuple):
            bundle = bundle[0]
        bundle = dict(bundle)
        bundle["text/plain"] = self.text()
        return bundle

    def __repr__(self) -> str:
        return self.text()


def _slug(text: Any) -> str:
    return "".join(c if c.isalnum() else "-" for c in str(text).lower()).strip("-")


def _fmt(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.2f}"
    return str(value)


def slider(name: str, min: int, max: int, value: int, step: int = 1, *, description: str | None = None) -> w.IntSlider:
    """An integer slider that updates when released (no flood of recomputations while dragging)."""
    if not (isinstance(min, int) and isinstance(max, int) and isinstance(value, int)) or not min <= value <= max:
        raise ValueError(f"slider {name!r}: need integers with min <= value <= max, got {min}, {value}, {max}")
    return w.IntSlider(value=value, min=min, max=max, step=step, description=description or name,
                       continuous_update=False, style={"description_width": "initial"},
                       layout=w.Layout(width="460px"))


def dropdown(name: str, options: list, value: Any = None) -> w.Dropdown:
    """A dropdown of ``options`` (strings, or ``(label, value)`` pairs)."""
    if not options:
        raise ValueError(f"dropdown {name!r}: options must not be empty")
    values = [o[1] if isinstance(o, tuple) else o for o in options]
    if value is None:
        value = values[0]
    if value not in values:
        raise ValueError(f"dropdown {name!r}: value {value!r} is not one of the options")
    return w.Dropdown(options=options, value=value, description=name, style={"description_width": "initial"},
                      layout=w.Layout(width="460px"))


def explorer(compute: Compute, *, sliders: Mapping[str, Any], draw: Draw | None = None, title: str = "") -> Explorer:
    """Build an :class:`Explorer`: ``compute(**control_values)`` returns an ordered mapping of readouts.

    ``sliders`` maps names to a control: an ``IntSlider`` or ``Dropdown``, ``(min, max, value[, step])`` for a
    slider, or a list of options for a dropdown. ``draw(ax, values, result)`` optionally draws a matplotlib plot
    under the same update.
    """
    if not callable(compute):
        raise TypeError("compute must be a function of the slider values returning a mapping of readouts")
    if not sliders:
        raise ValueError("sliders: give at least one slider, e.g. {'users': (10, 1000, 100)}")
    built: dict[str, w.ValueWidget] = {}
    for name, spec in sliders.items():
        if isinstance(spec, (w.IntSlider, w.Dropdown)):
            built[name] = spec
        elif isinstance(spec, list):
            built[name] = dropdown(name, spec)
        else:
            lo, hi, val, *step = spec
            built[name] = slider(name, lo, hi, val, step[0] if step else 1)
    handle = Explorer(
        compute=compute, sliders=built, readout=w.HTML(), title=title, draw=draw,
        image=w.Image(format="png") if draw is not None else None,
    )
    for s in built.values():
        s.observe(handle.update, names="value")
    handle.update()
    return handle
