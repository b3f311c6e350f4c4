"""Slider-driven explorers for lessons: ``explorer(compute, sliders=...)`` returns a handle.

Introduced in ``notebooks/00_start_here.ipynb``. The handle holds the widgets and the function they drive, so
tests move ``handle.sliders["users"].value`` and read ``handle.result`` without a browser. In a notebook, the
handle displays as the widget, and its plain-text form is a deterministic summary (what nbval compares).
"""
from __future__ import annotations

import gc
import html
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import ipywidgets as w

from labkit.plots import PngCanvas, ShowsText

Compute = Callable[..., Mapping[str, Any]]
Draw = Callable[[Any, Mapping[str, int], Mapping[str, Any]], None]

CACHE_SIZE = 512  # results (and plots) kept per explorer, least recently used dropped first
READOUT_WIDTH = 520  # px: the readout keeps this width whatever its values, so nothing jumps as they change
FREEZE_HEAP = True  # see _freeze_heap()


def _freeze_heap() -> None:
    """Move everything alive now (the lesson's data, built before its explorer) out of the cyclic garbage
    collector's reach (``gc.collect()`` then ``gc.freeze()``), so a step never pays for a full collection that
    walks every stored document: with 10^5 documents on the heap one such pass takes a few hundred ms, more
    than the step itself. Reference counting still frees frozen objects; only cycles among them wait."""
    if FREEZE_HEAP:
        gc.collect()
        gc.freeze()


def data_version(source: Any) -> tuple | None:
    """A value that changes whenever the data of ``source`` change (a database or collection on the embedded
    engine): every collection's identity, drop count, write counter and size. ``None`` when it cannot be told
    (a real server, or anything else), and then nothing computed from it is cached."""
    from labkit.engine.catalog.store import EngineCollectionStore, EngineDatabaseStore

    store = getattr(source, "_store", None)
    if isinstance(store, EngineCollectionStore):
        return ("c", id(store), store.incarnation, store.version, len(store.docs))
    if isinstance(store, EngineDatabaseStore):
        colls = getattr(store, "_collections", {})
        return ("d", id(store), store.incarnation,
                tuple((name, id(c), c.incarnation, c.version, len(c.docs)) for name, c in sorted(colls.items())
                      if isinstance(c, EngineCollectionStore)))
    return None


def _versions(sources: tuple) -> tuple | None:
    versions = tuple(data_version(d) for d in sources)
    return None if any(v is None for v in versions) else versions


class Measured:
    """``fn(*args)`` measured once per ``args`` while the data in ``data`` stay as they were: what an explorer's
    compute measures for one control value (a plan's keys examined for a product of n reviews) is kept, so
    moving another control (a pure multiplier) costs nothing and coming back to a value is instant.

    Any change to ``data`` made outside ``fn`` (a learner's insert, a drop) forgets every kept value; ``fn``'s
    own writes (an account resized to the slider) do not. When the data cannot be versioned (a real server),
    nothing is kept: every call measures. Keeps up to :data:`CACHE_SIZE` values, least recently used dropped
    first. Callers must not modify what it returns."""

    def __init__(self, fn: Callable[..., Any], data: Any) -> None:
        if not callable(fn):
            raise TypeError("measured(fn, data=...): fn must be a function")
        self.fn = fn
        self.data: tuple = tuple(data) if isinstance(data, (list, tuple)) else (data,)
        self.calls = 0  # how many calls ran fn (for tests)
        self._kept: OrderedDict = OrderedDict()
        self._seen: tuple | None = None

    def __call__(self, *args: Any) -> Any:
        version = _versions(self.data)
        try:
            hash(args)
        except TypeError:
            version = None
        if version is None:
            self.calls += 1
            return self.fn(*args)
        if version != self._seen:
            self._kept.clear()
        if args in self._kept:
            self._kept.move_to_end(args)
            return self._kept[args]
        self.calls += 1
        self._seen = None  # until fn returns: a failure half-way leaves nothing trusted
        value = self.fn(*args)
        self._seen = _versions(self.data)  # fn's own writes included
        self._kept[args] = value
        while len(self._kept) > CACHE_SIZE:
            self._kept.popitem(last=False)
        return value

    def clear(self) -> None:
        """Forget every kept value."""
        self._kept.clear()
        self._seen = None


def measured(fn: Callable[..., Any], *, data: Any) -> Measured:
    """Wrap ``fn`` so each distinct ``fn(*args)`` is measured once while ``data`` (a database, a collection, or
    a list of them) is unchanged by anything but ``fn``; see :class:`Measured`."""
    return Measured(fn, data)


@dataclass(repr=False)  # shown by ShowsText
class Explorer(ShowsText):
    """A set of sliders, a readout table and an optional plot, all driven by ``compute``."""

    compute: Compute
    sliders: dict[str, w.ValueWidget]  # sliders and dropdowns, by name
    readout: w.HTML
    image: w.Image | None
    draw: Draw | None
    title: str = ""
    result: dict[str, Any] = field(default_factory=dict)
    updates: int = 0
    error: str = ""  # the last compute failure, shown instead of a stale result
    cache: bool = False  # reuse the result and plot of control values already shown (see explorer())
    data: tuple = ()  # databases/collections compute reads: any change to them outside compute empties the cache
    hits: int = 0  # updates answered from the cache
    _cached: OrderedDict = field(default_factory=OrderedDict, repr=False)
    _seen_version: Any = field(default=None, repr=False)
    _canvas: PngCanvas | None = field(default=None, repr=False)
    _holding: bool = field(default=False, repr=False)  # set() moving several controls: one update at the end
    figure: w.HTML = field(default_factory=w.HTML, repr=False)  # drawn results (a plan: labkit.draw_plan)

    def clear_cache(self) -> None:
        """Forget every cached result and plot (the next update of each value computes again)."""
        self._cached.clear()
        self._seen_version = None

    def _data_version(self) -> tuple | None:
        versions = tuple(data_version(d) for d in self.data)
        return None if any(v is None for v in versions) else versions

    def _cache_key(self, values: Mapping[str, Any]) -> tuple | None:
        """The cache key for ``values``, or ``None`` when caching is off or impossible. Empties the cache when
        the data changed since the last update (by anything but compute itself)."""
        if not self.cache:
            return None
        version = self._data_version() if self.data else ()
        if version is None:
            return None
        if version != self._seen_version:
            self._cached.clear()
        try:
            key = tuple(sorted(values.items()))
            hash(key)
        except TypeError:
            return None
        return key

    @property
    def values(self) -> dict[str, Any]:
        """The current control values by name."""
        return {k: s.value for k, s in self.sliders.items()}

    def update(self, *_: Any) -> dict[str, Any]:
        """Recompute for the current slider values and refresh the readout and plot.

        If ``compute`` raises, the readout shows that error for the current values (never the previous
        result beside the new values), :attr:`result` is emptied, and the exception propagates. With
        caching on, values shown before (since the data last changed) are answered from the cache.
        """
        if self._holding:
            return self.result
        values = self.values
        key = self._cache_key(values)
        if key is not None and key in self._cached:
            self._cached.move_to_end(key)
            result, png = self._cached[key]
            self.result = dict(result)
            self.error = ""
            self.readout.value = self._html()
            if self.image is not None and self.draw is not None:
                self.image.value = png
            self.hits += 1
            self.updates += 1
            return self.result
        try:
            self.result = dict(self.compute(**values))
        except Exception as exc:
            self.result = {}
            shown = ", ".join(f"{k}={_fmt(v)}" for k, v in values.items())
            self.error = f"could not compute for {shown}: {type(exc).__name__}: {exc}"
            self.readout.value = (f"<div class='labkit-readout labkit-error' style='color:#b00020'>"
                                  f"{html.escape(self.error)}</div>")
            self.figure.value = ""
            if self.image is not None:
                self.image.value = b""
            self.updates += 1
            if key is not None:
                self._seen_version = self._data_version() if self.data else ()
            raise
        self.error = ""
        self.readout.value = self._html()
        png = b""
        if self.image is not None and self.draw is not None:
            if self._canvas is None:
                self._canvas = PngCanvas()
            png = self._canvas.render(lambda ax: self.draw(ax, values, self.result))
            self.image.value = png
        if key is not None:
            self._seen_version = self._data_version() if self.data else ()  # compute's own writes included
            self._cached[key] = (dict(self.result), png)
            while len(self._cached) > CACHE_SIZE:
                self._cached.popitem(last=False)
        self.updates += 1
        return self.result

    def set(self, **values: Any) -> dict[str, Any]:
        """Move controls by name (as a learner would) and return the new result.

        Every value is checked first: a value outside a slider's range, of the wrong type, or not among a
        dropdown's options raises ``ValueError`` naming the control (a slider would silently clamp it).
        """
        unknown = set(values) - set(self.sliders)
        if unknown:
            raise ValueError(f"unknown slider(s) {sorted(unknown)}; this explorer has {sorted(self.sliders)}")
        for name, value in values.items():
            _check_control_value(name, self.sliders[name], value)
        self._holding = True  # several controls move as one step: compute once, for all the new values
        try:
            for name, value in values.items():
                self.sliders[name].value = value
        finally:
            self._holding = False
        self.update()
        return self.result

    def text(self) -> str:
        """Deterministic plain-text summary of the current values and result."""
        parts = [f"{k}={_fmt(v)}" for k, v in self.values.items()]
        lines = [(self.title + ": " if self.title else "") + ", ".join(parts)]
        lines += [f"  {k}: " + _fmt(v).replace("\n", "\n    ") for k, v in self.result.items()]
        if self.error:
            lines.append(f"  error: {self.error}")
        return "\n".join(lines)

    def _html(self) -> str:
        """The readout table, at a fixed width (long values wrap inside it instead of widening it). Values that
        draw themselves (``_repr_html_``, e.g. a plan from :func:`labkit.draw_plan`) go to :attr:`figure`."""
        rows = "".join(
            f"<tr><th style='text-align:left;padding-right:1em;vertical-align:top'>{html.escape(str(k))}</th>"
            f"<td style='text-align:{_align(v)};overflow-wrap:anywhere' class='labkit-{_slug(k)}'>"
            f"{html.escape(_fmt(v))}</td></tr>"
            for k, v in self.result.items() if not _draws(v)
        )
        self.figure.value = "".join(f"<div class='labkit-figure labkit-{_slug(k)}'>{v._repr_html_()}</div>"
                                    for k, v in self.result.items() if _draws(v))
        return (f"<table class='labkit-readout' style='table-layout:fixed;width:{READOUT_WIDTH}px'>"
                f"<colgroup><col style='width:45%'><col style='width:55%'></colgroup>{rows}</table>")

    @property
    def widget(self) -> w.VBox:
        """The widget tree to display."""
        children: list[w.Widget] = []
        if self.title:
            children.append(w.HTML(f"<b>{html.escape(self.title)}</b>"))
        children += list(self.sliders.values())
        body: list[w.Widget] = [self.readout] + ([self.image] if self.image is not None else [])
        children.append(w.HBox(body))
        if any(_draws(v) for v in self.result.values()):
            children.append(self.figure)
        return w.VBox(children)


def _draws(value: Any) -> bool:
    """True for a value that renders itself as HTML (a plan drawing), shown under the readout."""
    return hasattr(value, "_repr_html_") and not isinstance(value, (str, bytes, int, float))


def _align(value: Any) -> str:
    """Numbers and short words right-aligned, sentences left-aligned (they wrap)."""
    return "left" if isinstance(value, str) and len(value) > 24 else "right"


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


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _check_control_value(name: str, control: w.ValueWidget, value: Any) -> None:
    """Refuse what the control would silently clamp or coerce: out of range, wrong type, not an option."""
    if isinstance(control, w.Dropdown):
        options = [o[1] if isinstance(o, tuple) else o for o in control.options]
        if value not in options:
            raise ValueError(f"{name}={value!r}: not one of the dropdown {name!r}'s options {options}")
        return
    lo, hi = getattr(control, "min", None), getattr(control, "max", None)
    if not _is_int(value):
        raise ValueError(f"{name}={value!r}: slider {name!r} takes an integer between {lo:,} and {hi:,}, "
                         f"not {type(value).__name__}")
    if lo is not None and hi is not None and not lo <= value <= hi:
        raise ValueError(f"{name}={value:,}: slider {name!r} allows {lo:,} to {hi:,} "
                         f"({'above the maximum' if value > hi else 'below the minimum'})")


def _check_step(name: str, step: Any) -> None:
    if not _is_int(step) or step <= 0:
        raise ValueError(f"slider {name!r}: step must be a positive integer, got {step!r}")


def slider(name: str, min: int, max: int, value: int, step: int = 1, *, description: str | None = None) -> w.IntSlider:
    """An integer slider that updates when released (no flood of recomputations while dragging)."""
    if not (_is_int(min) and _is_int(max) and _is_int(value)) or not min <= value <= max:
        raise ValueError(f"slider {name!r}: need integers with min <= value <= max, got {min}, {value}, {max}")
    _check_step(name, step)
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


def explorer(compute: Compute, *, sliders: Mapping[str, Any], draw: Draw | None = None, title: str = "",
             cache: bool = False, data: Any = None) -> Explorer:
    """Build an :class:`Explorer`: ``compute(**control_values)`` returns an ordered mapping of readouts.

    ``sliders`` maps names to a control: an ``IntSlider`` or ``Dropdown``, ``(min, max, value[, step])`` for a
    slider, or a list of options for a dropdown. ``draw(ax, values, result)`` optionally draws a matplotlib plot
    under the same update.

    ``cache=True`` keeps the result and plot of every combination of values shown (up to :data:`CACHE_SIZE`),
    so moving back to a value costs nothing; use it when ``compute`` is a function of the control values and
    of the data in ``data``. ``data`` is a database or collection (or a list of them) that ``compute`` reads:
    a change to any of them made outside ``compute`` (a learner's insert, a drop) empties the cache, while
    compute's own writes (a lesson growing an account to the size the slider asks for) do not. On a real
    server the data cannot be versioned, so an explorer with ``data`` caches nothing there.
    """
    if not callable(compute):
        raise TypeError("compute must be a function of the slider values returning a mapping of readouts")
    if not sliders:
        raise ValueError("sliders: give at least one slider, e.g. {'users': (10, 1000, 100)}")
    built: dict[str, w.ValueWidget] = {}
    for name, spec in sliders.items():
        if isinstance(spec, (w.IntSlider, w.Dropdown)):
            if isinstance(spec, w.IntSlider):
                _check_step(name, spec.step)
            built[name] = spec
        elif isinstance(spec, list):
            built[name] = dropdown(name, spec)
        elif isinstance(spec, tuple) and len(spec) in (3, 4):
            lo, hi, val, *step = spec
            built[name] = slider(name, lo, hi, val, step[0] if step else 1)
        else:
            raise ValueError(f"slider {name!r}: give (min, max, value[, step]), a list of options, an IntSlider "
                             f"or a Dropdown, got {spec!r}")
    if data is None:
        sources: tuple = ()
    elif isinstance(data, (list, tuple)):
        sources = tuple(data)
    else:
        sources = (data,)
    handle = Explorer(
        compute=compute, sliders=built, readout=w.HTML(), title=title, draw=draw,
        image=w.Image(format="png") if draw is not None else None, cache=bool(cache), data=sources,
    )
    for s in built.values():
        s.observe(handle.update, names="value")
    handle.update()
    _freeze_heap()
    return handle
