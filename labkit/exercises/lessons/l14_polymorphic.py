"""Lesson 14 (Polymorphic: articles, videos and tools in one feed collection): its exercises and their checkers.

Notebook: ``notebooks/14_polymorphic.ipynb``.
"""
from __future__ import annotations

from typing import Any

from labkit.exercises import steps
from labkit.exercises.kinds import DesignQuestion, Prediction
from labkit.exercises.outcomes import NotYet
from labkit.exercises.registry import Lesson

LESSON = Lesson(__file__)


@LESSON.exercise(DesignQuestion, "14-polymorphic-validator",
                 takes=steps.one("call it with your validator only: `ex.check(validator)`.", steps.VALIDATOR))
def _check_polymorphic_validator(validator: Any) -> str:
    import datetime as dt

    from bson.decimal128 import Decimal128
    from pymongo.errors import WriteError

    events = steps.validated_collection(validator, "exercise_14", "events")
    at = dt.datetime(2026, 11, 2, 9, 30)
    good = [
        ({"type": "click", "element": "buy-button", "x": 10, "y": 20, "at": at}, "a click"),
        ({"type": "click", "element": "logo", "x": 0, "y": 0, "at": at, "sessionId": "s1"},
         "a click with an extra field"),
        ({"type": "purchase", "orderId": "order:1", "amount": 19.99, "at": at}, "a purchase with a double amount"),
        ({"type": "purchase", "orderId": "order:2", "amount": 20, "at": at}, "a purchase with an int amount"),
        ({"type": "purchase", "orderId": "order:3", "amount": Decimal128("5.10"), "at": at},
         "a purchase with a decimal amount"),
    ]
    bad = [
        ({"type": "click", "element": "logo", "x": 1, "at": at}, "a click without y"),
        ({"type": "click", "element": "logo", "x": 1.5, "y": 2, "at": at}, "a click with a fractional x"),
        ({"type": "purchase", "orderId": "order:4", "at": at}, "a purchase without amount"),
        ({"type": "purchase", "orderId": "order:5", "amount": "19.99", "at": at}, "a purchase with amount as text"),
        ({"type": "purchase", "element": "logo", "x": 1, "y": 2, "at": at}, "a click's fields labelled purchase"),
        ({"type": "click", "orderId": "order:6", "amount": 3, "at": at}, "a purchase's fields labelled click"),
        ({"type": "refund", "orderId": "order:7", "amount": 3, "at": at}, "an unknown type 'refund'"),
        ({"element": "logo", "x": 1, "y": 2, "at": at}, "an event without type"),
        ({"type": "click", "element": "logo", "x": 1, "y": 2}, "an event without `at`"),
        ({"type": "click", "element": "logo", "x": 1, "y": 2, "at": "2026-11-02"}, "`at` given as text"),
    ]
    for i, (doc, what) in enumerate(good):
        try:
            events.insert_one(dict(doc, _id=f"good:{i}"))
        except WriteError:
            raise NotYet(f"{what} was rejected; it is valid (extra fields stay allowed).") from None
    steps.refuses_each(events, [(dict(doc, _id=f"bad:{i}"), what) for i, (doc, what) in enumerate(bad)],
                       "tighten the rules (one branch per type, each pinning `type` with enum).")
    return "both types pass, and each of the ten malformed events is rejected with code 121."


LESSON.add(Prediction, "14-predict-sparse-or-partial", choices=("stars_sparse", "stars_tools_only", "none"))
