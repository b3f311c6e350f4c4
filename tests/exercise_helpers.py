"""Shared checks for exercise tests (imported by the test_exercises_* files)."""
from __future__ import annotations

from typing import Any

import labkit


def assert_prediction_round_trip(ex_id: str, right: Any, wrong: Any) -> None:
    """A Prediction says "not attempted" before any prediction, rejects a wrong one with the measurement,
    accepts the right one, and explains it."""
    ex = labkit.exercises.get(ex_id)
    assert ex.check(right).outcome == "not-attempted"  # no prediction yet
    ex.predict(wrong)
    r = ex.check(right)
    assert not r.correct and "the measurement says" in r.message
    ex.predict(right)
    assert ex.check(right).correct
    assert ex.explain(right)


def solved(ex_id: str) -> dict[str, Any]:
    """What the exercise's own solution (``ex.solution()``) defines: the functions and values a test checks, so a
    test never keeps a second copy of the solution. Each top-level statement runs on its own; one that needs the
    notebook (``practice``, ``ex``) is left out. ``re`` is there, as in the notebooks."""
    import ast
    import re

    text = labkit.exercises.get(ex_id).solution()
    names: dict[str, Any] = {"re": re}
    for node in ast.parse(text).body:
        code = compile(ast.Module([node], type_ignores=[]), f"<solution of {ex_id}>", "exec")
        try:
            exec(code, names)  # noqa: S102 - labkit's own solution text
        except NameError:
            continue
    return names
