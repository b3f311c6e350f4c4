#!/usr/bin/env python3
"""How long one slider step takes in every lesson's explorer (goal: about 250 ms at default sizes).

    .venv/bin/python benchmarks/bench_widgets.py              # every notebook
    .venv/bin/python benchmarks/bench_widgets.py 02 04 10     # some of them

Each notebook's code cells run in-process on the embedded engine (cells tagged ``solution`` or
``skip-execution`` are left out), exactly as the lesson runs them; then every ``labkit.widgets.Explorer`` the
notebook created is stepped through values of each control, one ``set()`` per step, as a learner moving a slider
would. A step is the full update: recompute, readout HTML, and the plot's PNG. Times are wall-clock on a
possibly busy machine: compare rows of one run, not runs of different days.
"""
from __future__ import annotations

import contextlib
import io
import os
import statistics
import sys
import time
from pathlib import Path

import jupytext

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
GOAL_MS = 250.0
STEPS_PER_CONTROL = 5


def _sources(names: list[str]) -> list[Path]:
    all_src = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.py")) + sorted(NOTEBOOKS.glob("demo_*.py"))
    if not names:
        return all_src
    return [p for p in all_src if any(p.stem.startswith(n) for n in names)]


def _values(control) -> list:
    options = getattr(control, "options", None)
    if options:
        return [o[1] if isinstance(o, tuple) else o for o in options][:STEPS_PER_CONTROL + 1]
    lo, hi = control.min, control.max
    if hi <= lo:
        return [lo]
    return sorted({round(lo + (hi - lo) * k / STEPS_PER_CONTROL) for k in range(STEPS_PER_CONTROL + 1)})


def run_notebook(src: Path) -> dict:
    """Execute the notebook's code cells; return its namespace."""
    nb = jupytext.read(src)
    namespace: dict = {"__name__": "__lesson__"}
    os.chdir(NOTEBOOKS)
    sink = io.StringIO()
    for cell in nb.cells:
        tags = set(cell.metadata.get("tags", []))
        if cell.cell_type != "code" or tags & {"solution", "skip-execution"}:
            continue
        code = "\n".join(line for line in cell.source.splitlines() if not line.lstrip().startswith(("%", "!")))
        with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
            exec(compile(code, f"{src.name}", "exec"), namespace)
    return namespace


def bench(src: Path) -> list[dict]:
    from labkit.widgets import Explorer

    import labkit.widgets

    created: list = []
    real_explorer = labkit.widgets.explorer

    def recording_explorer(*args, **kwargs):  # notebooks import it by name, so this wraps every handle made
        handle = real_explorer(*args, **kwargs)
        created.append(handle)
        return handle

    labkit.widgets.explorer = recording_explorer
    try:
        start = time.perf_counter()
        ns = run_notebook(src)
        setup_s = time.perf_counter() - start
    finally:
        labkit.widgets.explorer = real_explorer
    rows = []
    explorers = list(created) or [v for v in ns.values() if isinstance(v, Explorer)]
    for handle in explorers:
        times = []
        for name, control in handle.sliders.items():
            for value in _values(control):
                t0 = time.perf_counter()
                handle.set(**{name: value})
                times.append((time.perf_counter() - t0) * 1000)
        rows.append({"notebook": src.stem, "explorer": handle.title or "(untitled)", "steps": len(times),
                     "median ms": statistics.median(times), "max ms": max(times), "setup s": setup_s})
    if not explorers:
        rows.append({"notebook": src.stem, "explorer": "(no explorer)", "steps": 0,
                     "median ms": float("nan"), "max ms": float("nan"), "setup s": setup_s})
    return rows


def main(argv: list[str]) -> int:
    os.environ.pop("MONGODB_URI", None)
    import matplotlib

    matplotlib.use("Agg")
    rows = []
    for src in _sources(argv):
        try:
            rows += bench(src)
        except Exception as exc:  # noqa: BLE001 - report and go on with the other notebooks
            rows.append({"notebook": src.stem, "explorer": f"ERROR {type(exc).__name__}: {exc}"[:70], "steps": 0,
                         "median ms": float("nan"), "max ms": float("nan"), "setup s": float("nan")})
        print(f"  measured {src.stem}", file=sys.stderr, flush=True)
    print(f"| notebook | explorer | steps | median ms | max ms | within {GOAL_MS:.0f} ms (median) |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        ok = "yes" if r["median ms"] <= GOAL_MS else ("no" if r["steps"] else "-")
        print(f"| {r['notebook']} | {r['explorer']} | {r['steps']} | {r['median ms']:.0f} | {r['max ms']:.0f} | {ok} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
