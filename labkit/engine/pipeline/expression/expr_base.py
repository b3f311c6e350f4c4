"""Shared pieces of the engine's aggregation expression evaluator (layer 1).

Field paths, truthiness, the aggregation comparison order (missing below null), the server's numeric types
(int -> long -> double -> decimal) and the argument-count errors every operator family uses. The operator
families (``expr_arith``, ``expr_string``, ``expr_array``, ``expr_date``, ``expr_type``) import only this module
and ``values``; ``match_expr.Evaluator`` reads their ``OPS`` tables. An operator is ``fn(ev, op, arg, doc)``:
``ev`` the Evaluator (``ev.ev(expr, doc)`` evaluates a sub-expression, ``ev.scoped(names)`` binds variables),
``arg`` the operator's unevaluated argument.
"""
from __future__ import annotations

import datetime
import decimal
import math
from typing import Any, Callable

from bson import Decimal128, Int64
from mongomock import OperationFailure

from ...bson import values as V
from ...bson.values import MISSING

INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
DEC_CTX = decimal.Context(prec=34, rounding=decimal.ROUND_HALF_EVEN, Emax=6144, Emin=-6143, traps=[])
EPOCH = datetime.datetime(1970, 1, 1)
OpFn = Callable[[Any, str, Any, Any], Any]


def fail(msg: str, code: int = 2) -> OperationFailure:
    """The server's error for an expression: ``msg`` with ``code``."""
    return OperationFailure(msg, code, {"ok": 0.0, "errmsg": msg, "code": code})


def nullish(v: Any) -> bool:
    """null, missing or undefined."""
    return v is None or v is MISSING or isinstance(v, V.Undefined)


def string_or_null(v: Any, message: Callable[[Any], str], code: int) -> str | None:
    """A string argument whose null, missing or undefined makes the expression null: None then, the string
    itself, or else the server's error ``message(v)`` with ``code``."""
    if nullish(v):
        return None
    if not isinstance(v, str):
        raise fail(message(v), code)
    return v


def truthy(v: Any) -> bool:
    """Aggregation truthiness: false, null, missing, undefined and numeric zero are false."""
    if v is None or v is MISSING or v is False or isinstance(v, V.Undefined):
        return False
    if V.is_number(v) and not isinstance(v, bool):
        x = V.num_value(v)
        return not (x == 0)
    return True


def field_path(doc: Any, path: str) -> Any:
    """``"$a.b"`` in aggregation: arrays on the way map to arrays of the values found (missing dropped)."""
    cur = doc
    for i, p in enumerate(path.split(".")):
        if type(cur) is dict or isinstance(cur, dict):
            cur = cur.get(p, MISSING)
            if cur is MISSING:
                return MISSING
        elif type(cur) is list:
            rest = ".".join(path.split(".")[i:])
            out = []
            for e in cur:
                if type(e) is dict or type(e) is list:
                    x = field_path(e, rest)
                    if x is not MISSING:
                        out.append(x)
            return out
        else:
            return MISSING
    return cur


def _agg_rank(v: Any) -> int:
    if v is MISSING:
        return V.T_UNDEF
    return V.canonical_type(v)


def agg_compare(a: Any, b: Any, str_key: Callable | None = None) -> int:
    """The aggregation comparison order (BSON order, missing below null)."""
    ra, rb = _agg_rank(a), _agg_rank(b)
    if ra != rb:
        return -1 if ra < rb else 1
    if ra == V.T_UNDEF:
        return 0
    return V.compare(a, b, str_key)


def tname(v: Any) -> str:
    """The server's type name of ``v`` in messages."""
    return V.type_name(v)


def operands(op: str, arg: Any, lo: int, hi: int | None = -1) -> list:
    """The unevaluated operands of ``op``: a list, or one operand; checks the count like the server
    (16020 exactly N; 28667 between lo and hi; 16021? no -- at least lo: 28667 too)."""
    args = arg if type(arg) is list else [arg]
    n = len(args)
    if hi == -1:
        if n != lo:
            raise fail("Expression %s takes exactly %d arguments. %d were passed in." % (op, lo, n), 16020)
    elif hi is None:
        if n < lo:
            raise fail("Expression %s takes at least %d arguments, but %d were passed in." % (op, lo, n), 16020)
    elif not lo <= n <= hi:
        raise fail("Expression %s takes at least %d arguments, and at most %d, but %d were passed in."
                   % (op, lo, hi, n), 28667)
    return args


def eval_args(ev: Any, op: str, arg: Any, doc: Any, lo: int, hi: int | None = -1) -> list:
    """The evaluated operands (missing stays MISSING)."""
    return [ev.ev(x, doc) for x in operands(op, arg, lo, hi)]


def typed_operands(ev: Any, op: str, arg: Any, doc: Any, of_type: Callable[[Any], bool], message: str, code: int,
                   lo: int = 0, hi: int | None = None) -> list | None:
    """The evaluated operands of an operator that takes values of one type (``lo``..``hi`` of them, as
    :func:`operands` counts): None at the first null or missing one (the operator's result is then null), the
    server's error at the first of another type (``message`` shows its type as ``%(type)s``)."""
    vals = eval_args(ev, op, arg, doc, lo, hi)
    for v in vals:
        if nullish(v):
            return None
        if not of_type(v):
            raise fail(message % {"type": tname(v)}, code)
    return vals


def is_array(v: Any) -> bool:
    """An array (the operand type of the array operators)."""
    return type(v) is list


def is_document(v: Any) -> bool:
    """An embedded document."""
    return isinstance(v, dict)


def named_args(arg: Any, allowed: tuple[str, ...], not_object: tuple[str, int] | None, unknown: tuple[str, int],
               missing: dict[str, tuple[str, int]] | None = None) -> dict:
    """An operator's (or a stage's) object of named arguments, checked in the server's order: an object
    (``not_object``; None when the caller has seen it is one), only ``allowed`` names (``unknown``), then each
    name of ``missing`` present, in that order. Each is ``(message, code)`` in the server's own words for that
    operator: ``not_object``'s message may show the argument's type as ``%(type)s`` (or its value,
    ``%(value)s``), the others the name as ``%(key)s``."""
    if not_object is not None and not isinstance(arg, dict):
        raise fail(not_object[0] % {"type": tname(arg), "value": arg}, not_object[1])
    for k in arg:
        if k not in allowed:
            raise fail(unknown[0] % {"key": k}, unknown[1])
    for k, (msg, code) in (missing or {}).items():
        if k not in arg:
            raise fail(msg % {"key": k}, code)
    return arg


def idl_fields(arg: Any, stage: str, allowed: tuple[str, ...], required: tuple[str, ...],
               not_object: tuple[str, int]) -> dict:
    """A stage's (or an accumulator's) object parsed by the server's IDL: an unknown field is 40415 and a
    missing required one 40414, both worded ``BSON field '<stage>.<name>' ...``."""
    return named_args(arg, allowed, not_object, ("BSON field '%s.%%(key)s' is an unknown field." % stage, 40415),
                      {k: ("BSON field '%s.%%(key)s' is missing but a required field" % stage, 40414)
                       for k in required})


# ------------------------------------------------------------------------------------------ numbers
def num_kind(v: Any) -> int:
    """0 int, 1 long, 2 double, 3 decimal; -1 when not a number (bool is not a number)."""
    t = type(v)
    if t is int:
        return 0 if INT32_MIN <= v <= INT32_MAX else 1
    if t is float:
        return 2
    if t is Int64:
        return 1
    if t is Decimal128:
        return 3
    if t is bool:
        return -1
    if isinstance(v, Int64):
        return 1
    if isinstance(v, int):
        return 0 if INT32_MIN <= v <= INT32_MAX else 1
    if isinstance(v, float):
        return 2
    if isinstance(v, Decimal128):
        return 3
    return -1


def is_num(v: Any) -> bool:
    return num_kind(v) >= 0


def to_dec(v: Any) -> decimal.Decimal:
    """A number as a Decimal: doubles rounded to 15 significant digits as the server's Decimal128(double)."""
    if isinstance(v, Decimal128):
        return v.to_decimal()
    if isinstance(v, float):
        if math.isnan(v):
            return decimal.Decimal("NaN")
        if math.isinf(v):
            return decimal.Decimal("Infinity" if v > 0 else "-Infinity")
        return decimal.Context(prec=15).create_decimal(v)
    return decimal.Decimal(int(v))


def non_decimal_total(ints: int, floats: list[float]) -> decimal.Decimal:
    """The ints and doubles of a ``$add`` / ``$sum`` / ``$avg`` with a decimal among its operands, as the server
    adds them to the decimals: summed as a double-double (src/mongo/util/summation.h
    ``DoubleDoubleSummation``), then ``getDecimal()``: each half converted with 34 digits
    (``Decimal128(double, kRoundTo34Digits)``), not the 15 digits a single double converts with (``to_dec``)."""
    special = [f for f in floats if not math.isfinite(f)]
    if special:
        return to_dec(sum(special))
    from fractions import Fraction
    exact = Fraction(ints) + sum((Fraction(f) for f in floats), Fraction(0))
    hi = float(exact)
    lo = float(exact - Fraction(hi))
    return DEC_CTX.add(DEC_CTX.create_decimal(hi), DEC_CTX.create_decimal(lo))


def decimal_total(nums: list) -> decimal.Decimal:
    """``$add`` / ``$sum`` / ``$avg`` of numbers among which a decimal: the decimals added in order, the ints and
    doubles joined at the end with 34 digits (``non_decimal_total``)."""
    acc = decimal.Decimal(0)
    ints = 0
    floats: list[float] = []
    for v in nums:
        k = num_kind(v)
        if k == 3:
            acc = DEC_CTX.add(acc, to_dec(v))
        elif k == 2:
            floats.append(float(v))
        else:
            ints += int(v)
    return DEC_CTX.add(acc, non_decimal_total(ints, floats))


def to_float(v: Any) -> float:
    if isinstance(v, Decimal128):
        return float(v.to_decimal())
    return float(v)


def dec128(d: decimal.Decimal) -> Decimal128:
    return Decimal128(DEC_CTX.create_decimal(d))


def make_int(x: int, kind: int) -> Any:
    """An integer result of kind ``kind`` (0 int, 1 long): int overflows to long, long overflows to double."""
    if kind == 0 and INT32_MIN <= x <= INT32_MAX:
        return x
    if INT64_MIN <= x <= INT64_MAX:
        return Int64(x)
    return float(x)


def as_kind(v: Any, kind: int) -> Any:
    """``v`` converted to the numeric kind ``kind`` (2 double, 3 decimal)."""
    if kind == 3:
        return to_dec(v)
    return to_float(v)


def from_kind(x: Any, kind: int) -> Any:
    if kind == 3:
        return dec128(x)
    if kind == 2:
        return float(x)
    return make_int(int(x), kind)


def int_value(v: Any) -> int | None:
    """``v`` as an exact integer (an integral double or decimal too), or None."""
    k = num_kind(v)
    if k in (0, 1):
        return int(v)
    if k == 2:
        return int(v) if math.isfinite(v) and v == int(v) else None
    if k == 3:
        d = v.to_decimal()
        return int(d) if d.is_finite() and d == d.to_integral_value() else None
    return None


def int32_arg(v: Any) -> int | None:
    """``v`` as an int32 when it is an integral number that fits, else None."""
    i = int_value(v)
    return i if i is not None and INT32_MIN <= i <= INT32_MAX else None


def date_ms(d: datetime.datetime) -> int:
    """Milliseconds since the epoch of a (naive UTC or aware) datetime."""
    if d.tzinfo is not None:
        d = d.astimezone(datetime.timezone.utc).replace(tzinfo=None)
    delta = d - EPOCH
    return (delta.days * 86400 + delta.seconds) * 1000 + delta.microseconds // 1000


def ms_date(ms: int) -> datetime.datetime:
    """The naive UTC datetime of milliseconds since the epoch."""
    return EPOCH + datetime.timedelta(milliseconds=ms)


def is_date(v: Any) -> bool:
    return isinstance(v, datetime.datetime)


def num_str(v: Any) -> str:
    """A number as the server prints it in strings and messages ($toString, coerceToString, error values)."""
    k = num_kind(v)
    if k in (0, 1):
        return str(int(v))
    if k == 3:
        d = v.to_decimal()
        if d.is_nan():
            return "NaN"
        if d.is_infinite():
            return "Infinity" if d > 0 else "-Infinity"
        return str(d)
    x = float(v)
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    # the server streams doubles with printf's "%g" (StringBuilder, performFormatDouble): 6 significant digits
    return "%g" % x


def iso_date(d: datetime.datetime) -> str:
    """``%Y-%m-%dT%H:%M:%S.%LZ`` of a date."""
    if d.tzinfo is not None:
        d = d.astimezone(datetime.timezone.utc).replace(tzinfo=None)
    return "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ" % (d.year, d.month, d.day, d.hour, d.minute, d.second,
                                                   d.microsecond // 1000)
