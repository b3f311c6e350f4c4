"""Grouping stages built on the accumulators: ``$count``, ``$sortByCount``, ``$bucket``, ``$bucketAuto``, and the
argument rules of ``$limit`` / ``$skip`` (MongoDB 8.0 manual pages of the same names;
src/mongo/db/pipeline/document_source_{count,sort_by_count,bucket,bucket_auto,limit,skip}.cpp;
jstests/aggregation/sources/bucket/*, bucketauto/*, count/*, sortByCount/*).

Expressions are compiled with the ``compile_expr`` function the caller passes (aggregation.py's ``_compile_expr``).
"""
from __future__ import annotations

import math
from typing import Any, Callable

from bson import Decimal128
from pymongo.errors import OperationFailure

from ..bson import keys as K
from .accumulators import group, group_documents, is_num, parse_statements, to_float
from ..bson.values import MISSING, canonical_type, type_name


def _fail(msg: str, code: int) -> OperationFailure:
    return OperationFailure(msg, code, {"ok": 0.0, "errmsg": msg, "code": code})


def _show(v: Any) -> str:
    if isinstance(v, str):
        return '"%s"' % v
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return "null"
    return repr(v) if isinstance(v, float) else str(v)


# ------------------------------------------------------------------------------------------- $limit / $skip
def stage_count_arg(name: str, arg: Any) -> int:
    """The non-negative integer of ``{$limit: n}`` / ``{$skip: n}`` (5107201 / 5107200; a zero limit 15958).
    Whole doubles and decimals are accepted."""
    code = 5107201 if name == "$limit" else 5107200
    stage = name[1:]
    if not is_num(arg):
        raise _fail("invalid argument to %s stage: Expected a number in: %s: %s" % (name, name, _show(arg)), code)
    f = arg.to_decimal() if isinstance(arg, Decimal128) else arg
    if isinstance(f, float) and (f != f or f in (math.inf, -math.inf)) or f != int(f):
        raise _fail("invalid argument to %s stage: Expected an integer: %s: %s" % (name, name, _show(arg)), code)
    n = int(f)
    if n < 0:
        raise _fail("invalid argument to %s stage: Expected a non-negative number in: %s: %s"
                    % (name, name, _show(arg)), code)
    if n == 0 and stage == "limit":
        raise _fail("the limit must be positive", 15958)
    return n


# ------------------------------------------------------------------------------------------- $count
def count_stage(arg: Any, docs: list[dict]) -> list[dict]:
    """``{$count: "name"}``: one document ``{name: <number of documents>}``, none for no input."""
    if not isinstance(arg, str):
        raise _fail("the count field must be a non-empty string", 40156)
    if not arg:
        raise _fail("the count field must be a non-empty string", 40157)
    if arg.startswith("$"):
        raise _fail("the count field cannot be a $-prefixed path", 40158)
    if "\x00" in arg:
        raise _fail("the count field cannot contain a null byte", 40159)
    if "." in arg:
        raise _fail("the count field cannot contain '.'", 40160)
    if arg == "_id":
        raise _fail("the count field cannot be '_id'", 9039800)
    return [{arg: len(docs)}] if docs else []


# ------------------------------------------------------------------------------------------- $sortByCount
def sort_by_count_stage(arg: Any, docs: list[dict], compile_expr: Callable) -> list[dict]:
    """``{$sortByCount: <expr>}``: ``$group`` on the expression counting documents, then sort by count descending."""
    if isinstance(arg, str):
        if not arg.startswith("$"):
            raise _fail("the sortByCount field must be defined as a $-prefixed path or an expression", 40148)
    elif isinstance(arg, dict):
        if not arg or not str(next(iter(arg))).startswith("$"):
            raise _fail("the sortByCount field must be defined as a $-prefixed path or an expression", 40147)
    else:
        raise _fail("the sortByCount field must be specified as a string or as an object", 40149)
    out = group(docs, {"_id": arg, "count": {"$sum": 1}}, compile_expr)
    return sorted(out, key=lambda d: -d["count"])


# ------------------------------------------------------------------------------------------- $bucket
def _group_by(arg: Any, stage: str, code: int) -> Any:
    if isinstance(arg, str) and len(arg) > 1 and arg.startswith("$"):
        return arg
    if isinstance(arg, dict) and arg and str(next(iter(arg))).startswith("$"):
        return arg
    raise _fail("The %s 'groupBy' field must be defined as a $-prefixed path or an expression%s, but found: %s"
                % (stage, " object" if stage == "$bucketAuto" else "", _show(arg)), code)


def _value_of(f: Callable, doc: dict) -> Any:
    try:
        v = f(doc)
    except KeyError:
        return None
    return None if v is MISSING else v


def bucket_stage(arg: Any, docs: list[dict], compile_expr: Callable) -> list[dict]:
    """``$bucket {groupBy, boundaries, default, output}``: a document per non-empty bucket ``[lower, upper)`` with
    ``_id`` the lower boundary (or ``default``), sorted by ``_id``; output defaults to ``{count: {$sum: 1}}``."""
    if not isinstance(arg, dict):
        raise _fail("Argument to $bucket stage must be an object, but found type: %s." % type_name(arg), 40201)
    for k in arg:
        if k not in ("groupBy", "boundaries", "default", "output"):
            raise _fail("Unrecognized option to $bucket: %s." % k, 40197)
    if "groupBy" not in arg or "boundaries" not in arg:
        raise _fail("$bucket requires 'groupBy' and 'boundaries' to be specified.", 40198)
    bounds = arg["boundaries"]
    if not isinstance(bounds, list):
        raise _fail("The $bucket 'boundaries' field must be an array, but found type: %s." % type_name(bounds),
                    40200)
    if len(bounds) < 2:
        raise _fail("The $bucket 'boundaries' field must have at least 2 values, but found %d value(s)."
                    % len(bounds), 40192)
    for i in range(1, len(bounds)):
        a, b = bounds[i - 1], bounds[i]
        if canonical_type(a) != canonical_type(b):
            raise _fail("All values in the the 'boundaries' option to $bucket must have the same type. Found "
                        "conflicting types %s and %s." % (type_name(a), type_name(b)), 40193)
        if not K.encode(a) < K.encode(b):
            raise _fail("The 'boundaries' option to $bucket must be sorted, but elements %d and %d are not in "
                        "ascending order (%s is not less than %s)." % (i - 1, i, _show(a), _show(b)), 40194)
    has_default = "default" in arg
    default = arg.get("default")
    if has_default:
        dk = K.encode(default)
        if K.encode(bounds[0]) <= dk < K.encode(bounds[-1]):
            raise _fail("The $bucket 'default' field must be less than the lowest boundary or greater than or "
                        "equal to the highest boundary.", 40199)
    output = arg.get("output", {"count": {"$sum": 1}})
    if not isinstance(output, dict):
        raise _fail("The $bucket 'output' field must be an object, but found type: %s." % type_name(output), 40196)
    statements = parse_statements(output, compile_expr)
    gb = compile_expr(_group_by(arg["groupBy"], "$bucket", 40202))
    enc = [K.encode(b) for b in bounds]
    buckets: dict[int, list] = {}
    for doc in docs:
        v = _value_of(gb, doc)
        e = K.encode(v)
        idx = -1
        if enc[0] <= e < enc[-1]:
            lo, hi = 0, len(enc) - 1
            while hi - lo > 1:  # the bucket whose [lower, upper) holds e
                mid = (lo + hi) // 2
                if enc[mid] <= e:
                    lo = mid
                else:
                    hi = mid
            idx = lo
        elif not has_default:
            raise _fail("$switch could not find a matching branch for an input, and no default was specified.",
                        40066)
        accs = buckets.get(idx)
        if accs is None:
            key = bounds[idx] if idx >= 0 else default
            accs = buckets[idx] = [key, [s.make(key) for s in statements]]
        for s, acc in zip(statements, accs[1]):
            acc.process(s.value(doc))
    out = group_documents(buckets.values(), statements)
    out.sort(key=lambda d: K.encode(d["_id"]))
    return out


# ------------------------------------------------------------------------------------------- $bucketAuto
# Preferred-number series (manual $bucketAuto > granularity; granularity_rounder_preferred_numbers.cpp)
_SERIES = {
    "R5": (10, 16, 25, 40, 63),
    "R10": (100, 125, 160, 200, 250, 315, 400, 500, 630, 800),
    "R20": (100, 112, 125, 140, 160, 180, 200, 224, 250, 280, 315, 355, 400, 450, 500, 560, 630, 710, 800, 900),
    "R40": (100, 106, 112, 118, 125, 132, 140, 150, 160, 170, 180, 190, 200, 212, 224, 236, 250, 265, 280, 300,
            315, 335, 355, 375, 400, 425, 450, 475, 500, 530, 560, 600, 630, 670, 710, 750, 800, 850, 900, 950),
    "1-2-5": (1, 2, 5),
    "E6": (10, 15, 22, 33, 47, 68),
    "E12": (10, 12, 15, 18, 22, 27, 33, 39, 47, 56, 68, 82),
    "E24": (10, 11, 12, 13, 15, 16, 18, 20, 22, 24, 27, 30, 33, 36, 39, 43, 47, 51, 56, 62, 68, 75, 82, 91),
    "E48": (100, 105, 110, 115, 121, 127, 133, 140, 147, 154, 162, 169, 178, 187, 196, 205, 215, 226, 237, 249,
            261, 274, 287, 301, 316, 332, 348, 365, 383, 402, 422, 442, 464, 487, 511, 536, 562, 590, 619, 649,
            681, 715, 750, 787, 825, 866, 909, 953),
}
_NOT_MODELLED_SERIES = ("R80", "E96", "E192")


def _pow2(exp: int) -> Any:
    """``{$pow: [2, exp]}``: an integer for exp >= 0, a double below."""
    return 2 ** exp if exp >= 0 else 2.0 ** exp


def _round_up(name: str, value: Any) -> Any:
    """The smallest series value greater than ``value`` (0 stays as it is): the series is scaled by powers of ten
    until it brackets the value (granularity_rounder_preferred_numbers.cpp); POWERSOF2: the next power of two,
    an integer for integers and for doubles >= 1 (granularity_rounder_powers_of_two.cpp)."""
    v = to_float(value)
    if v == 0:
        return value
    if name == "POWERSOF2":
        if isinstance(value, (float, Decimal128)):
            return _pow2(int(math.floor(math.log2(v))) + 1)
        return _pow2(int(value).bit_length())
    base = _SERIES[name]
    mult = 1.0
    while v < base[0] * mult:
        mult /= 10.0
    while v >= base[-1] * mult:
        mult *= 10.0
    return next(b * mult for b in base if b * mult > v)


def _round_down(name: str, value: Any) -> Any:
    """The largest series value smaller than ``value`` (0 stays as it is)."""
    v = to_float(value)
    if v == 0:
        return value
    if name == "POWERSOF2":
        if isinstance(value, (float, Decimal128)):
            return _pow2(int(math.ceil(math.log2(v))) - 1)
        n = int(value)
        return _pow2(n.bit_length() - 2 if n & (n - 1) == 0 else n.bit_length() - 1)
    base = _SERIES[name]
    mult = 1.0
    while v <= base[0] * mult:
        mult /= 10.0
    while v > base[-1] * mult:
        mult *= 10.0
    return [b * mult for b in base if b * mult < v][-1]


def bucket_auto_stage(arg: Any, docs: list[dict], compile_expr: Callable) -> list[dict]:
    """``$bucketAuto {groupBy, buckets, output, granularity}``: documents sorted by the groupBy value, cut into
    ``buckets`` runs of round(n / buckets) documents; equal values never straddle two buckets, a bucket's max is
    the next bucket's min (the last one's its largest value); with ``granularity`` the boundaries are rounded to
    the series (document_source_bucket_auto.cpp)."""
    if not isinstance(arg, dict):
        raise _fail("The argument to $bucketAuto must be an object, but found type: %s" % type_name(arg), 40240)
    group_by = n_buckets = gran = None
    output: dict = {}
    for k, v in arg.items():
        if k == "groupBy":
            group_by = _group_by(v, "$bucketAuto", 40239)
        elif k == "buckets":
            if not is_num(v):
                raise _fail("The $bucketAuto 'buckets' field must be a numeric value, but found type: %s"
                            % type_name(v), 40241)
            f = to_float(v)
            if f != int(f) or not -2 ** 31 <= f < 2 ** 31:
                raise _fail("The $bucketAuto 'buckets' field must be representable as a 32-bit integer, but "
                            "found %s" % _show(f), 40242)
            n_buckets = int(f)
        elif k == "output":
            if not isinstance(v, dict):
                raise _fail("The $bucketAuto 'output' field must be an object, but found type: %s" % type_name(v),
                            40244)
            output = v
        elif k == "granularity":
            if not isinstance(v, str):
                raise _fail("The $bucketAuto 'granularity' field must be a string, but found type: %s"
                            % type_name(v), 40261)
            if v in _NOT_MODELLED_SERIES:
                raise _fail("$bucketAuto granularity '%s' is not modelled by the embedded engine" % v, 115)
            if v not in _SERIES and v != "POWERSOF2":
                raise _fail("Unknown rounding granularity '%s'" % v, 40257)
            gran = v
        else:
            raise _fail("Unrecognized option to $bucketAuto: %s" % k, 40245)
    if group_by is None or n_buckets is None:
        raise _fail("$bucketAuto requires 'groupBy' and 'buckets' to be specified", 40246)
    if n_buckets <= 0:
        raise _fail("The $bucketAuto 'buckets' field must be greater than 0, but found: %d" % n_buckets, 40243)
    statements = parse_statements(output or {"count": {"$sum": 1}}, compile_expr)
    gb = compile_expr(group_by)
    keyed = []
    for i, doc in enumerate(docs):
        v = _value_of(gb, doc)
        if gran is not None:
            if not is_num(v):
                raise _fail("$bucketAuto can specify a 'granularity' with numeric boundaries only, but found a "
                            "value with type: %s" % type_name(v), 40258)
            if to_float(v) != to_float(v):
                raise _fail("$bucketAuto can specify a 'granularity' with numeric boundaries only, but found a NaN",
                            40259)
            if to_float(v) < 0:
                raise _fail("$bucketAuto can specify a 'granularity' with non-negative numbers only, but found a "
                            "negative number", 40260)
        keyed.append((K.encode(v), i, v, doc))
    keyed.sort(key=lambda t: (t[0], t[1]))
    n = len(keyed)
    approx = max(1, int(math.floor(n / n_buckets + 0.5))) if n else 1
    out: list[dict] = []
    pos = 0
    prev_max: Any = MISSING
    for b in range(1, n_buckets + 1):
        if pos >= n:
            break
        first = keyed[pos]
        bmin: Any = first[2]
        if gran is not None:
            bmin = prev_max if prev_max is not MISSING else _round_down(gran, first[2])
        accs = [s.make(None) for s in statements]
        members = [first]
        pos += 1
        last_bucket = b == n_buckets
        while pos < n and (len(members) < approx or last_bucket):
            members.append(keyed[pos])
            pos += 1
        bmax_e, bmax = members[-1][0], members[-1][2]
        if gran is not None:
            boundary = _round_up(gran, bmax)
            be = K.encode(boundary)
            while pos < n and (be > keyed[pos][0] or bmax_e == keyed[pos][0]):
                members.append(keyed[pos])
                bmax_e, bmax = keyed[pos][0], keyed[pos][2]
                pos += 1
            if to_float(boundary) == 0.0 and pos < n:
                bmax = _round_down(gran, keyed[pos][2])
            else:
                bmax = boundary
        else:
            while pos < n and keyed[pos][0] == bmax_e:
                members.append(keyed[pos])
                pos += 1
            if pos < n:
                bmax = keyed[pos][2]
        for _, _, _, doc in members:
            for s, acc in zip(statements, accs):
                acc.process(s.value(doc))
        d: dict = {"_id": {"min": bmin, "max": bmax}}
        for s, acc in zip(statements, accs):
            d[s.field] = acc.result()
        out.append(d)
        prev_max = bmax
    return out


