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
