"""Lesson 00 (Start here): its exercises and their checkers.

Notebook: ``notebooks/00_start_here.ipynb``.
"""
from __future__ import annotations

from typing import Any, Callable

from labkit.exercises import steps
from labkit.exercises.kinds import BehaviourCheck, DesignQuestion, Lab, Prediction
from labkit.exercises.outcomes import NotYet
from labkit.exercises.registry import Lesson

LESSON = Lesson(__file__)


#: Exercise 1's workload, a recipe site, keyed by operation as the check looks rows up: operation -> (type, runs
#: per second, what it needs), in the order the notebook's `recipes` table lists them. A ranking must keep every
#: row whole: each rate on its operation's row.
RECIPE_ROWS = {
    "Rate a recipe": ("write", 5, "stars; the average shown on the recipe page"),
    "Show a recipe": ("read", 1500, "recipe, ingredients, steps, rating average"),
    "Daily newsletter": ("read", 1 / 86400, "may be slow; may run on a secondary"),
    "Search recipes by ingredient": ("read", 400, "name, photo, rating average"),
    "Publish a recipe": ("write", 1 / 60, "searchable within a minute"),
    "Save a recipe to favourites": ("write", 20, "one user and recipe pair, once"),
    "Show a cook's profile": ("read", 60, "the cook and their 10 newest recipes"),
}
#: The same table as rows (operation, type, per_second, needs), as the notebook builds `recipes`.
RECIPE_WORKLOAD = tuple((operation, *rest) for operation, rest in RECIPE_ROWS.items())
RECIPE_COLUMNS = ("operation", "type", "per_second", "needs")


def _same_rate(got: Any, want: float) -> bool:
    try:
        return abs(float(got) - want) <= 1e-9 * max(1.0, abs(want))
    except (TypeError, ValueError):
        return False


@LESSON.exercise(DesignQuestion, "00-rank-workload")
def _check_rank_workload(answer: Any) -> str:
    import pandas as pd

    if not isinstance(answer, pd.DataFrame):
        raise NotYet(f"expected a pandas DataFrame (the `recipes` table, re-ordered), got {type(answer).__name__}.")
    if answer.columns.duplicated().any():
        raise NotYet(f"the table has a column twice ({sorted(set(answer.columns[answer.columns.duplicated()]))}); "
                     "keep the columns of `recipes` as they are and reorder the rows.")
    missing = set(RECIPE_COLUMNS) - set(answer.columns)
    if missing:
        raise NotYet(f"the table lost column(s) {sorted(missing)}; keep every column of `recipes`.")
    ops = [str(op) for op in answer["operation"]]
    reference = {op: dict(zip(RECIPE_COLUMNS, (op, *rest))) for op, rest in RECIPE_ROWS.items()}
    unknown = sorted(set(ops) - set(reference))
    if unknown:
        raise NotYet(f"the table has operations the recipe site's workload does not: {unknown[:3]}; rank "
                     "`recipes` (the store's `workload` was the lesson's example).")
    if len(ops) != len(reference) or len(set(ops)) != len(ops):
        raise NotYet(f"the table should still have all {len(reference)} operations, once each; it has {len(ops)} "
                     f"row(s) for {len(set(ops))} operation(s).")
    for op, (_, row) in zip(ops, answer.iterrows()):
        want = reference[op]
        if not _same_rate(row["per_second"], want["per_second"]):
            raise NotYet(f"the rates no longer sit next to their operations ({op!r} now shows "
                         f"{row['per_second']!r}/s, its rate is {want['per_second']!r}/s): the rate column was "
                         "reordered on its own. Sort whole rows: `recipes.sort_values(\"per_second\", "
                         "ascending=False)`.")
        moved = [c for c in ("type", "needs") if row[c] != want[c]]
        if moved:
            raise NotYet(f"the row of {op!r} now holds another operation's {moved[0]!r} ({row[moved[0]]!r}): a "
                         "column was reordered on its own. Sort whole rows with `sort_values`.")
    freq = [reference[op]["per_second"] for op in ops]
    if freq == sorted(freq):
        raise NotYet("it is sorted, but least frequent first: the operations to design for should come first "
                     "(ascending=False).")
    if freq != sorted(freq, reverse=True):
        raise NotYet("the rows are not ordered by `per_second`; sort by that column, most frequent first.")
    return (f"'{ops[0]}' runs most often and '{ops[-1]}' least: the recipe document is shaped around the page "
            "that shows it, and the newsletter may pay more.")


# A message board's workloads, built by the checker itself (the learner's table is never used).
_BOARD_WORKLOADS = [
    [("read a thread", "read", 900.0), ("list a forum", "read", 300.0), ("post a reply", "write", 12.0),
     ("search", "read", 40.0), ("edit a reply", "write", 1.5), ("moderation report", "read", 0.01)],
    [("show inbox", "read", 50.0), ("send message", "write", 45.0), ("open message", "read", 48.0),
     ("delete message", "write", 3.0), ("export archive", "read", 0.001)],
    [("live score", "read", 5000.0), ("post score", "write", 1.0)],
    # the running total reaches exactly 80% with the second row: the third is not needed
    [("view cart", "read", 50.0), ("add to cart", "write", 30.0), ("checkout", "write", 20.0)],
    # the operations above the average rate (40, 30) make only 70%: the rule is the running total
    [("show map", "read", 40.0), ("search places", "read", 30.0), ("save place", "write", 12.0),
     ("share place", "write", 10.0), ("rate place", "write", 8.0)],
]


def _top_share_expected(rows: list[tuple], share: float = 0.8) -> list[str]:
    ranked = sorted(rows, key=lambda r: -r[2])
    total, out, acc = sum(r[2] for r in rows), [], 0.0
    for name, _, rate in ranked:
        out.append(name)
        acc += rate
        if acc >= share * total:
            break
    return out


@LESSON.exercise(BehaviourCheck, "00-top-operations",
                 takes=steps.call("pass your function itself: `ex.check(top_operations)`.", callable))
def _check_top_operations(lab: Lab, fn: Callable) -> str:
    import pandas as pd

    for rows in _BOARD_WORKLOADS:
        table = pd.DataFrame(rows[::-1], columns=["operation", "type", "per_second"])
        expected = _top_share_expected(rows)
        got = lab.call(fn, table.copy())
        if isinstance(got, (pd.Series, pd.Index)):
            got = list(got)
        if isinstance(got, pd.DataFrame):
            got = list(got["operation"]) if "operation" in got.columns else list(got.index)
        if not isinstance(got, (list, tuple)):
            raise NotYet(f"return a list of operation names, most frequent first; got {type(got).__name__}.")
        got = list(got)
        if got == expected:
            continue
        names = ", ".join(f"{n!r}" for n in expected)
        if set(got) == set(expected) and got != expected:
            raise NotYet(f"the right operations, in the wrong order: most frequent first ({names}).")
        if got and got[0] == min(rows, key=lambda r: r[2])[0]:
            raise NotYet("the list starts with the rarest operation: sort by `per_second` with ascending=False.")
        if len(got) == len(rows):
            raise NotYet("you returned every operation; stop as soon as the running total reaches 80% of all "
                         "operations per second.")
        if got == expected[:-1]:
            raise NotYet("one short: include the operation whose rate makes the running total reach 80% "
                         f"(for this workload: {names}).")
        if len(got) > len(expected) and got[:len(expected)] == expected:
            raise NotYet(f"one or more too many: stop at the first operation where the running total reaches 80% "
                         f"({names}).")
        if all(isinstance(g, str) for g in got) and set(got) - {r[0] for r in rows}:
            raise NotYet("return the names from the `operation` column.")
        raise NotYet(f"for a workload of {len(rows)} operations the answer is {names}; yours is {got}. Sort by "
                     "`per_second`, most frequent first, and keep rows until their running total reaches 80% "
                     "of the table's total.")
    return (f"on {len(_BOARD_WORKLOADS)} other workloads your function picked the operations that make up 80% of "
            "the traffic: "
            "those are the rows a schema is designed for.")


LESSON.add(Prediction, "00-predict-page-docs")  # counts are exact (issue 25)
