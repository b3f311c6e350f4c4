"""Type expression operators: ``$type``, ``$isNumber``, ``$convert`` and the ``$to*`` shorthands (manual "$convert",
"$type (aggregation)", "$toInt" ...; src/mongo/db/pipeline/expression_convert.cpp; jstests/aggregation/expressions/
convert.js, expression_to_*.js).

A conversion that the server refuses fails with ConversionFailure (241) unless ``onError`` is given; a null or
missing ``input`` gives ``onNull`` (null by default). ``$toInt`` and friends are ``$convert`` without ``onError`` /
``onNull``; a list of more than one operand is refused with 50723.
"""
from __future__ import annotations

import datetime
import decimal
import math
import re
from typing import Any

from bson import Decimal128, Int64, ObjectId, Timestamp

from .expr_base import (INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN, date_ms, dec128, fail, is_date, iso_date,
                        ms_date, named_args, nullish, num_kind, num_str, tname, to_dec, to_float)
from ...bson.values import MISSING, type_name

CONVERSION_FAILURE = 241
_TO_NAMES = {1: "double", 2: "string", 7: "objectId", 8: "bool", 9: "date", 16: "int", 18: "long", 19: "decimal",
             10: "null"}
_SHORTHANDS = {"$toInt": "int", "$toLong": "long", "$toDouble": "double", "$toDecimal": "decimal",
               "$toString": "string", "$toBool": "bool", "$toDate": "date", "$toObjectId": "objectId"}


class _ConvError(Exception):
    """A conversion failure (onError applies)."""


def _unsupported(v: Any, to: str) -> _ConvError:
    return _ConvError("Unsupported conversion from %s to %s in $convert with no onError value" % (tname(v), to))


_NUM_RE = re.compile(r"[+-]?(\d+\.?\d*([eE][+-]?\d+)?|\.\d+([eE][+-]?\d+)?|[Ii]nf(inity)?|NaN|nan)\Z")


def _parse_number(s: str, to: str) -> Any:
    if to in ("int", "long"):
        if not re.fullmatch(r"[+-]?\d+", s):
            raise _ConvError("Failed to parse number '%s' in $convert with no onError value: Did not consume "
                             "whole string." % s)
        x = int(s)
        lo, hi = (INT32_MIN, INT32_MAX) if to == "int" else (INT64_MIN, INT64_MAX)
        if not lo <= x <= hi:
            raise _ConvError("Failed to parse number '%s' in $convert with no onError value: Overflow" % s)
        return x if to == "int" else Int64(x)
    if not _NUM_RE.match(s):
        raise _ConvError("Failed to parse number '%s' in $convert with no onError value: Did not consume whole "
                         "string." % s)
    if to == "decimal":
        return dec128(decimal.Decimal(s.replace("Inf", "inf").replace("inity", "") if "nf" in s else s))
    return float(s)


def _to_integer(v: Any, to: str) -> Any:
    lo, hi = (INT32_MIN, INT32_MAX) if to == "int" else (INT64_MIN, INT64_MAX)
    k = num_kind(v)
    if k in (0, 1):
        x = int(v)
    elif k in (2, 3):
        d = to_dec(v) if k == 3 else None
        f = d if d is not None else v
        if (d is not None and d.is_nan()) or (d is None and math.isnan(f)):
            raise _ConvError("Attempt to convert NaN value to integer type in $convert with no onError value")
        if (d is not None and d.is_infinite()) or (d is None and math.isinf(f)):
            raise _ConvError("Attempt to convert infinity value to integer type in $convert with no onError value")
        x = int(f)
    elif isinstance(v, bool):
        x = int(v)
    elif isinstance(v, str):
        return _parse_number(v, to)
    elif is_date(v) and to == "long":
        x = date_ms(v)
    else:
        raise _unsupported(v, to)
    if not lo <= x <= hi:
        raise _ConvError("Conversion would overflow target type in $convert with no onError value: %s"
                         % num_str(v))
    return x if to == "int" else Int64(x)


def convert_value(v: Any, to: str) -> Any:
    """``v`` converted to type ``to`` (a type name); raises _ConvError for a refused conversion."""
    k = num_kind(v)
    if to in ("int", "long"):
        return _to_integer(v, to)
    if to == "double":
        if k == 2:
            return v
        if k in (0, 1):
            return float(v)
        if k == 3:
            d = v.to_decimal()
            f = float(d)
            if d.is_finite() and math.isinf(f):
                raise _ConvError("Conversion would overflow target type in $convert with no onError value")
            return f
        if isinstance(v, bool):
            return 1.0 if v else 0.0
        if isinstance(v, str):
            return _parse_number(v, "double")
        if is_date(v):
            return float(date_ms(v))
        raise _unsupported(v, to)
    if to == "decimal":
        if k >= 0:
            return v if k == 3 else dec128(to_dec(v) if k == 2 else decimal.Decimal(int(v)))
        if isinstance(v, bool):
            return Decimal128("1" if v else "0")
        if isinstance(v, str):
            return _parse_number(v, "decimal")
        if is_date(v):
            return Decimal128(str(date_ms(v)))
        raise _unsupported(v, to)
    if to == "string":
        if isinstance(v, str):
            return v
        if isinstance(v, bool):
            return "true" if v else "false"
        if k >= 0:
            return num_str(v)
        if is_date(v):
            return iso_date(v)
        if isinstance(v, ObjectId):
            return str(v)
        raise _unsupported(v, to)
    if to == "bool":
        if isinstance(v, bool):
            return v
        if k >= 0:
            return (to_dec(v) if k == 3 else v) != 0
        if isinstance(v, (str, ObjectId, datetime.datetime, dict, list, Timestamp)):
            return True
        return True
    if to == "date":
        if is_date(v):
            return v
        if k in (1, 2, 3):
            f = to_dec(v) if k == 3 else v
            if isinstance(f, float) and not math.isfinite(f) or isinstance(f, decimal.Decimal) and not f.is_finite():
                raise _ConvError("Attempt to convert %s value to date in $convert with no onError value" % num_str(v))
            return ms_date(int(f))
        if isinstance(v, str):
            from .expr_date import parse_date_string
            try:
                return parse_date_string(v, None, None)
            except Exception:  # noqa: BLE001 - any parse failure is a conversion failure
                raise _ConvError("Error parsing date string '%s'" % v) from None
        if isinstance(v, ObjectId):
            return v.generation_time.replace(tzinfo=None)
        if isinstance(v, Timestamp):
            return ms_date(v.time * 1000)
        raise _unsupported(v, to)
    if to == "objectId":
        if isinstance(v, ObjectId):
            return v
        if isinstance(v, str):
            if re.fullmatch(r"[0-9a-fA-F]{24}", v):
                return ObjectId(v)
            raise _ConvError("Failed to parse objectId '%s' in $convert with no onError value: Invalid string "
                             "length for parsing to OID, expected 24 but found %d" % (v, len(v)))
        raise _unsupported(v, to)
    if to == "null":
        return None
    raise _unsupported(v, to)


def _target(to: Any) -> str:
    if isinstance(to, str):
        if to in _TO_NAMES.values():
            return to
        raise fail("Unknown type name: %s" % to, 2)
    if num_kind(to) >= 0:
        code = int(to_float(to))
        if code in _TO_NAMES and code == to_float(to):
            return _TO_NAMES[code]
        raise fail("In $convert, numeric value for 'to' does not correspond to a BSON type: %s" % num_str(to), 2)
    raise fail("$convert's 'to' argument must be a string or number, but is %s" % tname(to), 2)


def op_convert(ev: Any, op: str, arg: Any, doc: Any) -> Any:
    """``$convert: {input, to, onError, onNull}``."""
    missing = ("Missing '%(key)s' parameter to $convert", 9)
    named_args(arg, ("input", "to", "onError", "onNull"),
               ("$convert expects an object of named arguments but found: %(type)s", 9),
               ("$convert found an unknown argument: %(key)s", 9), {"input": missing, "to": missing})
    v = ev.ev(arg["input"], doc)
    to_v = ev.ev(arg["to"], doc)
    if nullish(to_v):
        return None
    to = _target(to_v)
    if nullish(v):
        return ev.ev(arg["onNull"], doc) if "onNull" in arg else None
    try:
        return convert_value(v, to)
    except _ConvError as e:
        if "onError" in arg:
            return ev.ev(arg["onError"], doc)
        raise fail(str(e), CONVERSION_FAILURE) from None


def op_to(ev: Any, op: str, arg: Any, doc: Any) -> Any:
    """``$toInt`` / ``$toLong`` / ... : ``$convert`` to one type, null for null or missing."""
    if type(arg) is list:
        if len(arg) != 1:
            raise fail("%s requires a single argument, got %d" % (op, len(arg)), 50723)
        arg = arg[0]
    v = ev.ev(arg, doc)
    if nullish(v):
        return None
    try:
        return convert_value(v, _SHORTHANDS[op])
    except _ConvError as e:
        raise fail(str(e), CONVERSION_FAILURE) from None


def op_type(ev: Any, op: str, arg: Any, doc: Any) -> str:
    if type(arg) is list:
        if len(arg) != 1:
            raise fail("Expression $type takes exactly 1 arguments. %d were passed in." % len(arg), 16020)
        arg = arg[0]
    v = ev.ev(arg, doc)
    return "missing" if v is MISSING else type_name(v)


def op_is_number(ev: Any, op: str, arg: Any, doc: Any) -> bool:
    if type(arg) is list:
        if len(arg) != 1:
            raise fail("Expression $isNumber takes exactly 1 arguments. %d were passed in." % len(arg), 16020)
        arg = arg[0]
    return num_kind(ev.ev(arg, doc)) >= 0


OPS = {"$convert": op_convert, "$type": op_type, "$isNumber": op_is_number}
OPS.update({name: op_to for name in _SHORTHANDS})
