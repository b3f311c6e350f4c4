"""Aggregation expressions the engine evaluates itself: ``$getField``, ``$setField``, ``$unsetField``.

They read and write one field whose name is taken literally, so names with ``.`` or a leading ``$`` (allowed in
documents since MongoDB 5.0) can be reached. The rules and error codes are the server's, as its jstests
``jstests/aggregation/expressions/expression_get_field.js`` and ``expression_set_field.js`` state them (manual
pages "$getField", "$setField", "$unsetField"):

- ``field`` is a string constant: a string not starting with ``$``, or ``{$literal: "..."}`` / ``{$const: ...}``;
  a field path (5654600 / 4161108), any other expression (5654601 / 4161106) or a non-string (5654602 /
  4161107) is refused;
- ``$getField: "<name>"`` reads ``$$CURRENT``; ``input`` null gives null, a missing or non-object ``input`` or
  an absent field gives missing;
- ``$setField`` replaces the field in place or appends it; ``value: "$$REMOVE"`` (and ``$unsetField``) removes
  it; ``input`` null or missing gives null, any other non-object is refused (4161105).

The engine's evaluator (``match_expr``) calls ``get_field`` / ``set_field`` with its own ``evaluate``.
"""
from __future__ import annotations

from typing import Any

from typing import Callable

from mongomock import OperationFailure

from ...bson.values import MISSING as _MISSING, type_name
from .expr_base import named_args
_LITERAL_OPS = ("$literal", "$const")


def _fail(msg: str, code: int) -> OperationFailure:
    return OperationFailure(msg, code)


def _field_name(op: str, spec: Any, codes: tuple[int, int, int]) -> str:
    """The constant field name of ``spec``; ``codes`` = (field path, other expression, not a string)."""
    path_code, expr_code, type_code = codes
    if isinstance(spec, dict):
        if len(spec) == 1 and next(iter(spec)) in _LITERAL_OPS:
            value = next(iter(spec.values()))
            if not isinstance(value, str):
                raise _fail("%s requires 'field' to evaluate to type String, but got %s"
                            % (op, type_name(value)), type_code)
            return value
        raise _fail("%s requires 'field' to evaluate to a constant, but got a non-constant argument" % op,
                    expr_code)
    if isinstance(spec, str):
        if spec.startswith("$"):
            raise _fail("%s: 'field' cannot be a field path or variable ('%s'); use {$literal: '%s'} for a "
                        "field name starting with '$'" % (op, spec, spec), path_code)
        return spec
    raise _fail("%s requires 'field' to evaluate to type String, but got %s" % (op, type_name(spec)), type_code)


def get_field(evaluate: Callable[[Any], Any], current: Any, arg: Any) -> Any:
    """``$getField`` (``evaluate`` a sub-expression, ``current`` the ``$$CURRENT`` document); returns
    ``MISSING`` when the result is missing."""
    codes = (5654600, 5654601, 5654602)
    if isinstance(arg, dict) and not any(k.startswith("$") for k in arg):
        missing = "$getField requires '%(key)s' to be specified"
        named_args(arg, ("field", "input"), None, ("$getField found an unknown argument: %(key)s", 3041701),
                   {"field": (missing, 3041702), "input": (missing, 3041703)})
        name = _field_name("$getField", arg["field"], codes)
        source = evaluate(arg["input"])
    else:
        name = _field_name("$getField", arg, codes)
        source = current
    if source is None:
        return None
    if source is _MISSING or not isinstance(source, dict):
        return _MISSING
    return source.get(name, _MISSING)


def set_field(evaluate: Callable[[Any], Any], arg: Any, unset: bool = False) -> Any:
    """``$setField`` (or ``$unsetField`` when ``unset``); returns ``None`` for a nullish input."""
    op = "$unsetField" if unset else "$setField"
    allowed = ("field", "input") if unset else ("field", "input", "value")
    codes = {"field": 4161102, "value": 4161103, "input": 4161109}  # checked in this order
    named_args(arg, allowed, (op + " only supports an object as its argument", 4161100),
               (op + " found an unknown argument: %(key)s", 4161101),
               {k: (op + " requires '%(key)s' to be specified", c) for k, c in codes.items() if k in allowed})
    name = _field_name(op, arg["field"], (4161108, 4161106, 4161107))
    source = evaluate(arg["input"])
    if source is None or source is _MISSING:
        return None
    if not isinstance(source, dict):
        raise _fail("%s requires 'input' to evaluate to type Object" % op, 4161105)
    value = _MISSING if unset else evaluate(arg["value"])
    out = dict(source)
    if value is _MISSING:
        out.pop(name, None)
    else:
        out[name] = value  # replaces in place, or appends a new field at the end
    return out
