"""Lesson 30 (Start from the workload): its exercises and their checkers.

Notebook: ``notebooks/30_workload.ipynb``.
"""
from __future__ import annotations

from typing import Any, Callable

from labkit.exercises import steps
from labkit.exercises.kinds import BehaviourCheck, DesignQuestion, Lab, Prediction
from labkit.exercises.outcomes import NotYet
from labkit.exercises.registry import Lesson

LESSON = Lesson(__file__)


@LESSON.exercise(DesignQuestion, "30-pick-operations",
                 takes=steps.call("call it with two arguments: `ex.check(news, chosen)`.", None, None))
def _check_pick_operations(workload: Any, chosen: Any) -> str:
    """The rows of the news site's operation table to design for, judged against the checker's own copy of the
    table: a first argument that is not that table (`chosen` twice, an edited copy) is refused."""
    import pandas as pd

    if not isinstance(workload, pd.DataFrame) or "per_second" not in getattr(workload, "columns", []):
        raise NotYet("the first argument should be the lesson's `news` DataFrame (with `per_second`).")
    known = {op: f for op, _, f in _NEWS_WORKLOAD}
    given = dict(zip(workload["operation"] if "operation" in workload.columns else [], workload["per_second"]))
    if given != known:
        raise NotYet("the first argument is not the news site's operation table (all 7 operations with their "
                     "rates): pass `news` itself, not `chosen` or an edited copy, so the check can see what was "
                     "left out.")
    if not isinstance(chosen, pd.DataFrame):
        raise NotYet(f"`chosen` should be a DataFrame holding rows of `news`, got {type(chosen).__name__}.")
    if "operation" not in chosen.columns or "per_second" not in chosen.columns:
        raise NotYet("keep the `operation` and `per_second` columns in `chosen` (select rows, not columns).")
    names = list(chosen["operation"])
    strangers = [n for n in names if n not in known]
    if strangers:
        raise NotYet(f"{strangers} are not operations of `news`; pick rows from it.")
    if len(set(names)) != len(names):
        raise NotYet("some operations appear twice; each row once is enough.")
    if not names:
        raise NotYet("`chosen` is empty: pick the operations that carry most of the traffic.")
    rates = dict(zip(chosen["operation"], chosen["per_second"]))
    moved = [n for n in names if rates[n] != known[n]]
    if moved:
        raise NotYet(f"the row of {moved[0]!r} has per_second {rates[moved[0]]!r}, not the table's "
                     f"{known[moved[0]]:g}: select whole rows of `news`, do not detach a column and sort it on "
                     "its own.")
    left_out = {n: f for n, f in known.items() if n not in names}
    rarest_in = min(known[n] for n in names)
    busier_out = sorted((n for n, f in left_out.items() if f > rarest_in), key=lambda n: -known[n])
    if busier_out:
        rare = min(names, key=lambda n: known[n])
        raise NotYet(f"'{rare}' ({known[rare]:g}/s) is in but '{busier_out[0]}' ({known[busier_out[0]]:g}/s) is "
                     "left out: design for the most frequent operations, so rank by `per_second` first.")
    share = sum(known[n] for n in names) / sum(known.values())
    if share < 0.99:
        raise NotYet(f"your operations carry {share:.1%} of the traffic; take enough of the top rows to cover "
                     "at least 99%.")
    if len(names) > 4:
        slow = min(names, key=lambda n: known[n])
        raise NotYet(f"{len(names)} operations is too many: '{slow}' runs {known[slow]:g} times a second and may be "
                     "slow. Design for the top three or four and let rare operations pay more.")
    return (f"{len(names)} operations carrying {share:.2%} of the news site's traffic; everything rarer may cost "
            "more per call without anyone noticing.")


LESSON.add(Prediction, "30-predict-naive-page-docs")  # an exact count: exact (issue 25, kind 4)


# A changed scenario for the per-piece ratio: a news site (other operations, other pieces of data, other rates).
_NEWS_WORKLOAD = [("Show article", "read", 5000.0), ("Front page", "read", 900.0), ("Like article", "write", 300.0),
                  ("Add comment", "write", 20.0), ("Edit article", "write", 0.01), ("Sign up", "write", 1.0),
                  ("Show profile", "read", 50.0)]


_NEWS_TOUCHES = {
    "Show article": {"article": "read", "comments": "read", "likes": "read"},
    "Front page": {"article": "read", "likes": "read", "sections": "read"},  # sections: never written
    "Like article": {"likes": "write"},
    "Add comment": {"comments": "write", "article": "read", "users": "read"},
    "Edit article": {"article": "write"},
    "Sign up": {"users": "write"},
    "Show profile": {"users": "read", "comments": "read"},
}


def _ratios(workload: list, touches: dict, *, kind_of: str = "touch", weighted: bool = True) -> dict:
    rate = {op: (t, f) for op, t, f in workload}
    reads: dict = {}
    writes: dict = {}
    for op, pieces in touches.items():
        typ, f = rate[op]
        for piece, kind in pieces.items():
            k = kind if kind_of == "touch" else typ
            target = reads if k == "read" else writes
            target[piece] = target.get(piece, 0.0) + (f if weighted else 1.0)
            (writes if target is reads else reads).setdefault(piece, 0.0)
    return {p: (reads[p] / writes[p] if writes[p] else float("inf")) for p in reads}


@LESSON.exercise(BehaviourCheck, "30-reads-per-write",
                 takes=steps.call("pass your function: `ex_ratio.check(reads_per_write)`.", steps.is_function))
def _check_reads_per_write(lab: Lab, fn: Callable) -> str:
    import math

    import pandas as pd

    scenarios = [_NEWS_WORKLOAD, [(op, t, f * (3.0 if t == "write" else 0.5)) for op, t, f in _NEWS_WORKLOAD]]
    for workload in scenarios:
        frame = pd.DataFrame(workload, columns=["operation", "type", "per_second"])
        got = lab.call(fn, frame.copy(), {k: dict(v) for k, v in _NEWS_TOUCHES.items()}, raises={ZeroDivisionError: (
            "your function divided by zero: 'sections' is read by the front page and never written, so its reads "
            "per write is `float(\"inf\")`; test for zero writes before dividing.")})
        if isinstance(got, pd.Series):
            got = got.to_dict()
        if not isinstance(got, dict):
            raise NotYet(f"return a dict {{piece of data: reads per write}}, got {type(got).__name__}.")
        want = _ratios(workload, _NEWS_TOUCHES)

        def same(a: dict, b: dict) -> bool:
            if set(a) != set(b):
                return False
            for k in b:
                x, y = a[k], b[k]
                if not isinstance(x, (int, float)) or isinstance(x, bool):
                    return False
                if math.isinf(y) or math.isinf(x):
                    if not (math.isinf(x) and math.isinf(y)):
                        return False
                elif abs(x - y) > 0.01 * max(abs(y), 1e-9):
                    return False
            return True

        if set(got) != set(want):
            raise NotYet(f"your result has the pieces {sorted(got)}; the touches name {sorted(want)}: one entry per "
                         "piece of data.")
        if same(got, want):
            continue
        values = [v for v in got.values() if isinstance(v, (int, float))]
        total_r = sum(f for _, t, f in workload if t == "read")
        total_w = sum(f for _, t, f in workload if t == "write")
        if len(values) == len(got) and all(math.isfinite(v) for v in values) and len({round(v, 6) for v in values}) == 1:
            raise NotYet(f"every piece gets the same ratio ({values[0]:g}): that is the database-wide reads per "
                         f"write ({total_r:g} reads/s over {total_w:g} writes/s), which hides what matters. Sum, "
                         "for each piece, the rates of the operations that read it and of those that write it.")
        if same(got, _ratios(workload, _NEWS_TOUCHES, kind_of="operation")):
            raise NotYet("you used each operation's type for every piece it touches: 'Add comment' is a write "
                         "operation but only *reads* the article and the user. Use the kind given for each piece "
                         "in `touches`.")
        if same(got, _ratios(workload, _NEWS_TOUCHES, weighted=False)):
            raise NotYet("you counted operations, not their rates: weight each read and write by its `per_second` "
                         "(5,000 article views a second are not one read).")
        inverted = {k: (1 / v if v not in (0, float("inf")) else (float("inf") if v == 0 else 0.0))
                    for k, v in want.items()}
        if same(got, inverted):
            raise NotYet("your ratios are upside down (writes per read): divide reads by writes.")
        wrong = sorted(k for k in want if not same({k: got[k]}, {k: want[k]}))
        raise NotYet(f"reads per write of {wrong[0]!r} is {got[wrong[0]]!r}, expected about {want[wrong[0]]:.4g}: "
                     "add up per_second of the operations that read it, divide by those that write it.")
    first = _ratios(_NEWS_WORKLOAD, _NEWS_TOUCHES)
    best = max((k for k, v in first.items() if not math.isinf(v)), key=lambda k: first[k])
    return (f"right on two versions of the news site's workload: at the first one's rates {best!r} is read "
            f"{first[best]:,.0f} times per write, the piece most worth shaping around its reads.")


