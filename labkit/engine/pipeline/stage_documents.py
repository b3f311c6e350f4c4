"""``$documents`` (MongoDB 8.0 manual "$documents"): the first stage of a database-level aggregate, of a
``$unionWith`` without ``coll`` and of a ``$lookup`` without ``from``; its argument is an expression that must
resolve to an array of objects (5858203). In a collection's pipeline it is the server's InvalidNamespace (73).
"""
from __future__ import annotations

from typing import Any, Callable

from pymongo.errors import OperationFailure

from ..bson.values import type_name


def _fail(msg: str, code: int) -> OperationFailure:
    return OperationFailure(msg, code, {"ok": 0.0, "errmsg": msg, "code": code})


def documents(spec: Any, compile_expr: Callable) -> list[dict]:
    """Evaluate a ``$documents`` argument into its documents (each a copy)."""
    try:
        value = compile_expr(spec)({})
    except KeyError:
        value = None
    if not isinstance(value, list):
        raise _fail("error in $documents stage :: caused by :: $documents must evaluate to an array of objects, "
                    "got %s" % type_name(value), 5858203)
    out = []
    for item in value:
        if not isinstance(item, dict):
            raise _fail("error in $documents stage :: caused by :: every element of $documents must be an object, "
                        "got %s" % type_name(item), 5858203)
        out.append(dict(item))
    return out


def not_in_collection_pipeline() -> OperationFailure:
    """``$documents`` first in a collection's aggregate."""
    return _fail("'$documents' can only be run with {aggregate: 1}", 73)


def not_first() -> OperationFailure:
    return _fail("$documents is only valid as the first stage in a pipeline", 40602)
