"""Lesson 14 (Polymorphic: articles, videos and tools in one feed collection): its exercises and their checkers.

Notebook: ``notebooks/14_polymorphic.ipynb``.
"""
from __future__ import annotations

from typing import Any

from labkit.exercises.kinds import Prediction
from labkit.exercises.outcomes import NotYet
from labkit.exercises.problem import Exercise
from labkit.exercises.registry import register


def _check_polymorphic_validator(validator: Any) -> str:
    import datetime as dt

    from bson.decimal128 import Decimal128
    from pymongo.errors import OperationFailure, WriteError

    from labkit.engine import EmbeddedClient

    if isinstance(validator, tuple):
        raise NotYet("call it with your validator only: `ex.check(validator)`.")
    if not isinstance(validator, dict) or not validator:
        raise NotYet("`validator` must be a dict such as {\"$jsonSchema\": {...}}.")
    scratch = EmbeddedClient()["exercise_14"]
    try:
        events = scratch.create_collection("events", validator=validator)
    except OperationFailure as exc:
        raise NotYet(f"the server refuses these rules: {exc}") from None
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
    for i, (doc, what) in enumerate(bad):
        try:
            events.insert_one(dict(doc, _id=f"bad:{i}"))
        except WriteError as exc:
            if exc.code != 121:
                raise NotYet(f"{what} failed with code {exc.code}, not validation (121).") from None
            continue
        raise NotYet(f"{what} was accepted; tighten the rules (one branch per type, each pinning `type` with enum).")
    return "both types pass, and each of the ten malformed events is rejected with code 121."


@register
def _ex14() -> Exercise:
    return Exercise(
        id="14-polymorphic-validator",
        lesson="14_polymorphic",
        task="Write a $jsonSchema validator for events of type 'click' (element, x, y) and 'purchase' "
             "(orderId, amount), each with a date `at`.",
        checker=_check_polymorphic_validator,
        hints=["Top level: `required: [\"type\", \"at\"]`; then `oneOf` with one sub-schema per type.",
               "Pin each branch with `\"type\": {\"enum\": [\"click\"]}` and list that type's fields in `required`."],
        solution_text=(
            'number = {"bsonType": ["int", "double", "decimal"]}\n'
            'validator = {"$jsonSchema": {\n    "bsonType": "object",\n    "required": ["type", "at"],\n'
            '    "properties": {"type": {"enum": ["click", "purchase"]}, "at": {"bsonType": "date"}},\n'
            '    "oneOf": [\n'
            '        {"properties": {"type": {"enum": ["click"]}, "element": {"bsonType": "string"},\n'
            '                        "x": {"bsonType": "int"}, "y": {"bsonType": "int"}},\n'
            '         "required": ["element", "x", "y"]},\n'
            '        {"properties": {"type": {"enum": ["purchase"]}, "orderId": {"bsonType": "string"}, "amount": number},\n'
            '         "required": ["orderId", "amount"]},\n    ],\n}}\nex.check(validator)'
        ),
    )


@register
def _ex14_predict() -> Exercise:
    return Prediction(
        id="14-predict-sparse-or-partial",
        lesson="14_polymorphic",
        task="Which index does the planner choose for {stars: {$gt: 5000}} sorted by stars: the sparse index, the "
             "partial index on type: 'tool', or none?",
        checker=None,
        choices=("stars_sparse", "stars_tools_only", "none"),
        explain=lambda name: (f"Measured: {name}. The filter has a condition on stars, so no document without "
                              "stars can match and the sparse index is complete for it; it does not say "
                              "type: 'tool', so an article with stars could match and the partial index, which "
                              "holds tools only, may not answer it. For {type: 'tool'} sorted by stars it is the "
                              "other way round."),
        hints=["Which documents is each index missing, and could this query return one of them?"],
        solution_text='predict_index.predict("stars_sparse")',
    )
