#!/usr/bin/env python3
"""How long one slider step takes in every lesson's explorer (goal: every step under 250 ms at default sizes).

    .venv/bin/python benchmarks/bench_widgets.py              # every notebook
    .venv/bin/python benchmarks/bench_widgets.py 02 04 10     # some of them
    .venv/bin/python benchmarks/bench_widgets.py --same-process 02 04   # all in this process (heap accumulates)

Each notebook runs in its own Python process (as in its own kernel: one lesson's data on the heap, not every
lesson's). Its code cells run on the embedded engine (cells tagged ``solution`` or ``skip-execution`` are left
out), exactly as the lesson runs them; then every ``labkit.widgets.Explorer`` the notebook created is stepped
through values of each control, one ``set()`` per step, as a learner moving a slider would: first a sequential
sweep (min to max), then the values in between in a random order from a fixed seed (big jumps to values not
visited yet), then every control together at random values. A step is the full update: recompute, readout HTML
and the plot's PNG. The table gives the median and the p100 (the slowest step, first visits included) per
explorer and whether p100 is within the goal.

Step times are the process's CPU time (``time.process_time``): on a shared machine wall-clock mostly measures
waiting for a core, while one kernel's CPU time is what the step takes on an idle machine (the engine and
matplotlib are single-threaded). The wall-clock p100 is shown beside it. Compare rows of one run.
"""
from __future__ import annotations

import contextlib
import gc
import io
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

import jupytext

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
GOAL_MS = 250.0
STEPS_PER_CONTROL = 8
SEED = 19


def _sources(names: list[str]) -> list[Path]:
    src = NOTEBOOKS / "src"  # lesson sources live in notebooks/src/ (jupytext pairs)
    all_src = sorted(src.glob("[0-9][0-9]_*.py")) + sorted(src.glob("demo_*.py"))
    if not names:
        return all_src
    return [p for p in all_src if any(p.stem.startswith(n) for n in names)]


def _values(control, offset: float = 0.0) -> list:
    """Values to visit: every dropdown option, or ``STEPS_PER_CONTROL + 1`` evenly spaced slider values (shifted
    by ``offset`` of a spacing, so a second pass visits values the first did not), snapped to the slider's step."""
    options = getattr(control, "options", None)
    if options:
        return [o[1] if isinstance(o, tuple) else o for o in options][:STEPS_PER_CONTROL + 1]
    lo, hi, step = control.min, control.max, control.step or 1
    if hi <= lo:
        return [lo]
    raw = (lo + (hi - lo) * (k + offset) / STEPS_PER_CONTROL for k in range(STEPS_PER_CONTROL + 1))
    return sorted({min(hi, lo + round((v - lo) / step) * step) for v in raw if v <= hi})


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
    gc_ms, started = [0.0], [0.0]

    def on_gc(phase: str, info: dict) -> None:  # time the cyclic collector takes inside a step
        if phase == "start":
            started[0] = time.process_time()
        else:
            gc_ms[0] += (time.process_time() - started[0]) * 1000

    gc.callbacks.append(on_gc)
    rows = []
    explorers = list(created) or [v for v in ns.values() if isinstance(v, Explorer)]
    for handle in explorers:
        rng = random.Random(SEED)
        plan: list[dict] = []
        per_control = {name: _values(control) for name, control in handle.sliders.items()}
        for name, values in per_control.items():  # sequential sweep: neighbouring steps
            plan += [{name: v} for v in values]
        for name, control in handle.sliders.items():  # values in between, shuffled: big jumps to new values
            shuffled = _values(control, 0.5)
            rng.shuffle(shuffled)
            plan += [{name: v} for v in shuffled]
        for _ in range(STEPS_PER_CONTROL):  # every control at once, random values
            plan.append({name: rng.choice(values) for name, values in per_control.items()})
        times, walls, slowest, gc_in_slowest = [], [], ("", 0.0), 0.0
        for step in plan:
            gc_ms[0] = 0.0
            t0, c0 = time.perf_counter(), time.process_time()
            handle.set(**step)
            ms = (time.process_time() - c0) * 1000
            walls.append((time.perf_counter() - t0) * 1000)
            times.append(ms)
            if ms > slowest[1]:
                slowest, gc_in_slowest = (", ".join(f"{k}={v}" for k, v in step.items()), ms), gc_ms[0]
        rows.append({"notebook": src.stem, "explorer": handle.title or "(untitled)", "steps": len(times),
                     "median ms": statistics.median(times), "max ms": max(times), "slowest": slowest[0],
                     "wall max ms": max(walls), "gc ms": gc_in_slowest, "setup s": setup_s})
    if not explorers:
        rows.append({"notebook": src.stem, "explorer": "(no explorer)", "steps": 0,
                     "median ms": float("nan"), "max ms": float("nan"), "slowest": "", "wall max ms": float("nan"),
                     "setup s": setup_s})
    gc.callbacks.remove(on_gc)
    return rows


def _bench_in_subprocess(src: Path) -> list[dict]:
    """Run :func:`bench` for one notebook in a fresh interpreter and return its rows."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT)] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--json", src.stem], capture_output=True,
                          text=True, env=env, cwd=str(ROOT))
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"exit {proc.returncode}: {tail}")
    return [json.loads(ln) for ln in lines]


def main(argv: list[str]) -> int:
    os.environ.pop("MONGODB_URI", None)
    import matplotlib

    matplotlib.use("Agg")
    as_json = "--json" in argv
    same_process = as_json or "--same-process" in argv
    names = [a for a in argv if not a.startswith("--")]
    rows = []
    for src in _sources(names):
        try:
            rows += bench(src) if same_process else _bench_in_subprocess(src)
        except Exception as exc:  # noqa: BLE001 - report and go on with the other notebooks
            rows.append({"notebook": src.stem, "explorer": f"ERROR {type(exc).__name__}: {exc}"[:70], "steps": 0,
                         "median ms": float("nan"), "max ms": float("nan"), "slowest": "",
                         "wall max ms": float("nan"), "setup s": float("nan")})
        if not as_json:
            print(f"  measured {src.stem}", file=sys.stderr, flush=True)
    if as_json:
        for r in rows:
            print(json.dumps(r))
        return 0
    print(f"| notebook | explorer | steps | median ms | p100 ms | slowest step | p100 within {GOAL_MS:.0f} ms "
          f"| p100 wall ms | GC ms in p100 step |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        ok = "yes" if r["max ms"] <= GOAL_MS else ("no" if r["steps"] else "-")
        print(f"| {r['notebook']} | {r['explorer']} | {r['steps']} | {r['median ms']:.0f} | {r['max ms']:.0f} "
              f"| {r['slowest']} | {ok} | {r['wall max ms']:.0f} | {r.get('gc ms', float('nan')):.0f} |")
    measured = [r for r in rows if r["steps"]]
    failing = [r for r in measured if r["max ms"] > GOAL_MS]
    print(f"\ngoal (every step under {GOAL_MS:.0f} ms): {len(measured) - len(failing)} of {len(measured)} explorers"
          + (f"; over: {', '.join(r['notebook'] for r in failing)}" if failing else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
