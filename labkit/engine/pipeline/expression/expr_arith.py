"""Arithmetic expression operators, as the server evaluates them (manual "Arithmetic Expression Operators";
src/mongo/db/pipeline/expression.cpp; jstests/aggregation/expressions/add.js, arith_overflow.js, round_trunc.js,
expression_mod.js, pow.js, log.js, sqrt.js).

Numeric results take the widest operand type (int -> long -> double -> decimal); an int result that does not fit
32 bits becomes a long, a long result that does not fit 64 bits becomes a double. Null or missing operands give
null. ``$add`` takes at most one date (the result is a date, numbers are milliseconds); ``$subtract`` takes date -
date (milliseconds as a long) and date - number (a date).
"""
from __future__ import annotations

import decimal
import math
from typing import Any, Callable

from bson import Decimal128, Int64

from .expr_base import (DEC_CTX, INT32_MAX, INT32_MIN, INT64_MIN, date_ms, dec128, eval_args, fail, from_kind, is_date,
                        decimal_total, is_num, make_int, ms_date, nullish, num_kind, num_str, tname, to_dec,
                        to_float, typed_operands)


def _round_ms(x: Any) -> int:
    """A numeric amount of milliseconds as an integer (round half away from zero, as llround)."""
    k = num_kind(x)
    if k in (0, 1):
        return int(x)
    d = to_dec(x) if k == 3 else decimal.Decimal(float(x))
    if not d.is_finite():
        raise fail("Overflow: date arithmetic with a non-finite number", 2)
    return int(d.to_integral_value(rounding=decimal.ROUND_HALF_UP))


def _sum_numbers(vals: list) -> Any:
    kind = 0
    for v in vals:
        kind = max(kind, num_kind(v))
    if kind <= 1:
        total = sum(int(v) for v in vals)
        return make_int(total, kind)
    if kind == 2:
        return math.fsum(float(v) for v in vals) if all(math.isfinite(float(v)) for v in vals) \
            else sum(float(v) for v in vals)
    # expression.cpp ExpressionAdd: ``decimalTotal.add(nonDecimalTotal.getDecimal())``
    return dec128(decimal_total(vals))


def op_add(ev: Any, op: str, arg: Any, doc: Any) -> Any:
    """``$add``: numbers, or one date plus numbers (milliseconds)."""
    vals = [ev.ev(x, doc) for x in arg] if type(arg) is list else [ev.ev(arg, doc)]
    kind = 0
    for v in vals:  # the common case: plain Python ints and floats
        t = type(v)
        if t is float:
            kind = 2
        elif t is not int:
            break
        elif kind == 0 and not INT32_MIN <= v <= INT32_MAX:
            kind = 1
    else:
        if kind == 2:
            return math.fsum(vals) if len(vals) > 2 else float(sum(vals))
        return make_int(sum(vals), kind)
    date = None
    nums = []
    for v in vals:
        if nullish(v):
            return None
        if is_date(v):
            if date is not None:
                raise fail("only one date allowed in an $add expression", 16612)
            date = v
        elif num_kind(v) >= 0:
            nums.append(v)
        else:
            raise fail("$add only supports numeric or date types, not %s" % tname(v), 16554)
    if date is not None:
        return ms_date(date_ms(date) + sum(_round_ms(n) for n in nums))
    return _sum_numbers(nums)


def _binary(a: Any, b: Any, fi, ff, fd) -> Any:
    kind = max(num_kind(a), num_kind(b))
    if kind <= 1:
        return make_int(fi(int(a), int(b)), kind)
    if kind == 2:
        return ff(to_float(a), to_float(b))
    return dec128(fd(to_dec(a), to_dec(b)))


def op_subtract(ev: Any, op: str, arg: Any, doc: Any) -> Any:
    """``$subtract``: numbers, date - date (a long of milliseconds), date - number (a date)."""
    a, b = eval_args(ev, op, arg, doc, 2)
    if nullish(a) or nullish(b):
        return None
    if is_date(a):
        if is_date(b):
            return Int64(date_ms(a) - date_ms(b))
        if num_kind(b) >= 0:
            return ms_date(date_ms(a) - _round_ms(b))
    elif num_kind(a) >= 0 and num_kind(b) >= 0:
        return _binary(a, b, lambda x, y: x - y, lambda x, y: x - y, DEC_CTX.subtract)
    raise fail("can't $subtract %s from %s" % (tname(b), tname(a)), 14)


def op_multiply(ev: Any, op: str, arg: Any, doc: Any) -> Any:
    """``$multiply``: the product of numbers (1 for no operands)."""
    vals = typed_operands(ev, op, arg, doc, is_num, "$multiply only supports numeric types, not %(type)s", 16555)
    if vals is None:
        return None
    out: Any = 1
    for v in vals:
        out = _binary(out, v, lambda x, y: x * y, lambda x, y: x * y, DEC_CTX.multiply)
    return out


def _dividend_divisor(ev: Any, op: str, arg: Any, doc: Any, type_code: int, zero_code: int) -> tuple | None:
    """The two operands of ``$divide`` / ``$mod``: None when either is null or missing; the server's errors for
    an operand that is not a number (``type_code``) and for a zero divisor (``zero_code``)."""
    a, b = eval_args(ev, op, arg, doc, 2)
    if nullish(a) or nullish(b):
        return None
    if num_kind(a) < 0 or num_kind(b) < 0:
        raise fail("%s only supports numeric types, not %s and %s" % (op, tname(a), tname(b)), type_code)
    if (to_dec(b) if num_kind(b) == 3 else b) == 0:
        raise fail("can't %s by zero" % op, zero_code)
    return a, b


def op_divide(ev: Any, op: str, arg: Any, doc: Any) -> Any:
    """``$divide``: a double (a decimal when either operand is one); dividing by zero fails (16608)."""
    operands_ = _dividend_divisor(ev, op, arg, doc, 16609, 16608)
    if operands_ is None:
        return None
    a, b = operands_
    if max(num_kind(a), num_kind(b)) == 3:
        return dec128(DEC_CTX.divide(to_dec(a), to_dec(b)))
    return to_float(a) / to_float(b)


def op_mod(ev: Any, op: str, arg: Any, doc: Any) -> Any:
    """``$mod``: the remainder with the dividend's sign; modulo zero fails (16610)."""
    operands_ = _dividend_divisor(ev, op, arg, doc, 16611, 16610)
    if operands_ is None:
        return None
    a, b = operands_

    def imod(x: int, y: int) -> int:
        r = abs(x) % abs(y)
        return -r if x < 0 else r
    return _binary(a, b, imod, math.fmod, lambda x, y: DEC_CTX.remainder(x, y))


def _one_number(ev: Any, op: str, arg: Any, doc: Any) -> Any:
    vals = typed_operands(ev, op, arg, doc, is_num, op + " only supports numeric types, not %(type)s", 28765, 1, -1)
    return None if vals is None else vals[0]


def _by_kind(on_int: Callable[[Any, int], Any], on_dec: Callable[[Decimal128], Any],
             on_float: Callable[[float], Any]) -> Callable[..., Any]:
    """A one-number operator that keeps the number's kind: null for null or missing, else ``on_int(v, kind)``
    (int or long), ``on_dec(v)`` (decimal) or ``on_float(v)`` (double)."""
    def f(ev: Any, op: str, arg: Any, doc: Any) -> Any:
        v = _one_number(ev, op, arg, doc)
        if v is None:
            return None
        k = num_kind(v)
        if k in (0, 1):
            return on_int(v, k)
        if k == 3:
            return on_dec(v)
        return on_float(v)
    return f


def _abs_int(v: Any, kind: int) -> Any:
    if int(v) == INT64_MIN:
        raise fail("can't take $abs of long long min", 28680)
    return make_int(abs(int(v)), kind)


op_abs = _by_kind(_abs_int, lambda v: Decimal128(abs(v.to_decimal())), abs)


def _rounding(mode: str, fmode: Callable[[float], Any]) -> Callable[..., Any]:
    """``$ceil`` / ``$floor``: integers unchanged, a decimal rounded by ``mode``, a finite double by ``fmode``."""
    def on_dec(v: Decimal128) -> Decimal128:
        d = v.to_decimal()
        return v if not d.is_finite() else Decimal128(d.to_integral_value(rounding=mode))
    return _by_kind(lambda v, _k: v, on_dec, lambda v: v if not math.isfinite(v) else float(fmode(v)))


def _float_fn(name: str, fn, check=None, dfn=None):
    def f(ev: Any, op: str, arg: Any, doc: Any) -> Any:
        v = _one_number(ev, op, arg, doc)
        if v is None:
            return None
        k = num_kind(v)
        if check is not None:
            check(v)
        if k == 3:
            d = v.to_decimal()
            if d.is_nan():
                return v
            return dec128(dfn(d))
        x = to_float(v)
        if math.isnan(x):
            return x
        return fn(x)
    return f


def _positive(op: str, code: int):
    def check(v: Any) -> None:
        x = to_dec(v) if num_kind(v) == 3 else to_float(v)
        if not x > 0 and not (x != x):
            raise fail("%s's argument must be a positive number, but is %s" % (op, num_str(v)), code)
    return check


def _non_negative(v: Any) -> None:
    x = to_dec(v) if num_kind(v) == 3 else to_float(v)
    if x < 0:
        raise fail("$sqrt's argument must be greater than or equal to 0", 28714)


def _exp(x: float) -> float:
    try:
        return math.exp(x)
    except OverflowError:
        return math.inf


def _numbers(ev: Any, op: str, arg: Any, doc: Any, first: tuple[str, int],
             second: tuple[str, int]) -> tuple[Any, Any] | None:
    """The two arguments of ``$log`` or ``$pow``: None when either is null or missing, else both numbers (each
    named and coded as the server's error for it, e.g. ``("base", 28757)``)."""
    a, b = eval_args(ev, op, arg, doc, 2)
    if nullish(a) or nullish(b):
        return None
    for v, (what, code) in ((a, first), (b, second)):
        if num_kind(v) < 0:
            raise fail("%s's %s must be numeric, not %s" % (op, what, tname(v)), code)
    return a, b


def op_log(ev: Any, op: str, arg: Any, doc: Any) -> Any:
    """``$log: [number, base]``."""
    args = _numbers(ev, op, arg, doc, ("argument", 28756), ("base", 28757))
    if args is None:
        return None
    v, base = args
    if max(num_kind(v), num_kind(base)) == 3:
        # ExpressionLog::evaluate (src/mongo/db/pipeline/expression.cpp): a Decimal128 result only for a positive
        # argument and a positive base other than 1; anything else (a NaN included) falls through to the double
        # path below, so a Decimal128 NaN gives a double NaN and a bad value the double path's error.
        xd, bd = to_dec(v), to_dec(base)
        if not xd.is_nan() and not bd.is_nan() and xd > 0 and bd > 0 and bd != 1:
            return dec128(DEC_CTX.divide(xd.ln(DEC_CTX), bd.ln(DEC_CTX)))
    x, b = to_float(v), to_float(base)
    if not (x > 0 or math.isnan(x)):
        raise fail("$log's argument must be a positive number, but is %s" % num_str(v), 28758)
    if not (b != 1 and (b > 0 or math.isnan(b))):
        raise fail("$log's base must be a positive number not equal to 1, but is %s" % num_str(base), 28759)
    if math.isnan(x) or math.isnan(b):
        return math.nan
    return math.log(x) / math.log(b)


def op_pow(ev: Any, op: str, arg: Any, doc: Any) -> Any:
    """``$pow``: integer results stay integers when exact (int -> long -> double on overflow)."""
    args = _numbers(ev, op, arg, doc, ("base", 28762), ("exponent", 28763))
    if args is None:
        return None
    b, e = args
    kind = max(num_kind(b), num_kind(e))
    if (to_dec(b) if num_kind(b) == 3 else b) == 0 and (to_dec(e) if num_kind(e) == 3 else e) < 0:
        raise fail("$pow cannot take a base of 0 and a negative exponent", 28764)
    if kind == 3:
        return dec128(DEC_CTX.power(to_dec(b), to_dec(e)))
    if kind <= 1:
        bi, ei = int(b), int(e)
        if ei >= 0:
            if abs(bi) > 1 and ei > 64:  # beyond any long: a double
                return _fpow(float(bi), float(ei))
            return make_int(bi ** ei, kind)
        if bi == 1:
            return make_int(1, kind)
        if bi == -1:
            return make_int(1 if ei % 2 == 0 else -1, kind)
        return float(bi) ** ei
    return _fpow(to_float(b), to_float(e))


def _fpow(b: float, e: float) -> float:
    try:
        return math.pow(b, e)
    except OverflowError:
        return math.inf if b > 0 or e % 2 == 0 else -math.inf
    except ValueError:
        return math.nan


def op_round_trunc(ev: Any, op: str, arg: Any, doc: Any) -> Any:
    """``$round`` / ``$trunc`` (evaluateRoundOrTrunc): place an integral value in [-20, 100]; doubles taken
    at 34 significant digits then quantized (ties to even for $round, toward zero for $trunc); integers kept
    when place >= 0; the input's type kept."""
    vals = eval_args(ev, op, arg, doc, 1, 2)
    v = vals[0]
    if nullish(v):
        return None
    if num_kind(v) < 0:
        raise fail("%s only supports numeric types, not %s" % (op, tname(v)), 51081)
    place = 0
    if len(vals) == 2:
        p = vals[1]
        if nullish(p):
            return None
        pd = to_dec(p) if num_kind(p) >= 0 else None
        if pd is None or not pd.is_finite() or pd != pd.to_integral_value():
            raise fail("precision argument to  %s must be a integral value" % op, 51082)
        place = int(pd)
        if not -20 <= place <= 100:
            raise fail("cannot apply %s with precision value %d value must be in [-20, 100]" % (op, place), 51083)
    mode = decimal.ROUND_HALF_EVEN if op == "$round" else decimal.ROUND_DOWN
    quantum = decimal.Decimal(1).scaleb(-place)
    wide = decimal.Context(prec=200)
    k = num_kind(v)
    if k == 3:
        d = v.to_decimal()
        if not d.is_finite():
            return v
        return dec128(d.quantize(quantum, rounding=mode, context=wide))
    if k == 2:
        if math.isnan(v) or math.isinf(v):
            return v
        d = decimal.Context(prec=34, rounding=decimal.ROUND_HALF_EVEN).create_decimal(v)
        return float(d.quantize(quantum, rounding=mode, context=wide))
    if place >= 0:
        return v
    out = int(decimal.Decimal(int(v)).quantize(quantum, rounding=mode, context=wide))
    return from_kind(out, k)


OPS = {
    "$add": op_add,
    "$subtract": op_subtract,
    "$multiply": op_multiply,
    "$divide": op_divide,
    "$mod": op_mod,
    "$abs": op_abs,
    "$ceil": _rounding(decimal.ROUND_CEILING, math.ceil),
    "$floor": _rounding(decimal.ROUND_FLOOR, math.floor),
    "$exp": _float_fn("$exp", _exp, None, lambda d: d.exp(DEC_CTX)),
    "$ln": _float_fn("$ln", math.log, _positive("$ln", 28766), lambda d: d.ln(DEC_CTX)),
    "$log10": _float_fn("$log10", math.log10, _positive("$log10", 28761), lambda d: d.log10(DEC_CTX)),
    "$sqrt": _float_fn("$sqrt", math.sqrt, _non_negative, lambda d: d.sqrt(DEC_CTX)),
    "$log": op_log,
    "$pow": op_pow,
    "$round": op_round_trunc,
    "$trunc": op_round_trunc,
}
