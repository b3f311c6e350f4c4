"""Array, set and accumulator-style expression operators (manual "Array Expression Operators", "Set Expression
Operators", "$sum"/"$avg"/"$min"/"$max"/"$stdDevPop"/"$median"/"$percentile" in expressions; src/mongo/db/pipeline/
expression.cpp; jstests/aggregation/expressions/{arrayElemAt,concat_arrays,filter,map,reduce,indexof_array,range,
reverse_array,size,slice,zip,sort_array,n_expressions,set,median_percentile,expression_first_last}.js).

``$filter`` / ``$map`` bind ``as`` (default ``this``), ``$reduce`` binds ``this`` and ``value``: sub-expressions
see them through ``ev.scoped``. Set operators treat arrays as sets under BSON equality (the result keeps the first
occurrence of each value, in input order; the server documents the order as unspecified).
"""
from __future__ import annotations

import math
from typing import Any

from ...bson import values as V
from .expr_base import (DEC_CTX, INT32_MAX, INT32_MIN, agg_compare, dec128, decimal_total, eval_args, fail,
                        field_path, int32_arg, int_value, is_array, is_document, make_int, named_args, nullish,
                        num_kind, num_str, tname, to_dec, to_float, truthy, typed_operands)
from ...bson.values import MISSING


def _scope_name(op: str, arg: dict, default: str) -> str:
    name = arg.get("as", default)
    if not isinstance(name, str) or not name:
        raise fail("empty variable names are not allowed", 16866)
    if not (name[0].islower() or ord(name[0]) > 127 or name[0] == "_"):
        raise fail("'%s' starts with an invalid character for a user variable name" % name, 16870)
    return name


def op_array_elem_at(ev: Any, op: str, arg: Any, doc: Any) -> Any:
    arr, idx = eval_args(ev, op, arg, doc, 2)
    if nullish(arr) or nullish(idx):
        return None
    if type(arr) is not list:
        raise fail("$arrayElemAt's first argument must be an array, but is %s" % tname(arr), 28689)
    if num_kind(idx) < 0:
        raise fail("$arrayElemAt's second argument must be a numeric value, but is %s" % tname(idx), 28690)
    i = int32_arg(idx)
    if i is None:
        raise fail("$arrayElemAt's second argument must be representable as a 32-bit integer: %s"
                   % num_str(idx), 28691)
    if i < 0:
        i += len(arr)
    return arr[i] if 0 <= i < len(arr) else MISSING


def op_first_last(ev: Any, op: str, arg: Any, doc: Any) -> Any:
    (arr,) = eval_args(ev, op, arg, doc, 1)
    if nullish(arr):
        return None
    if type(arr) is not list:
        raise fail("%s's argument must be an array, but is %s" % (op, tname(arr)), 28689)
    if not arr:
        return MISSING
    return arr[0] if op == "$first" else arr[-1]


def op_concat_arrays(ev: Any, op: str, arg: Any, doc: Any) -> Any:
    vals = typed_operands(ev, op, arg, doc, is_array, "$concatArrays only supports arrays, not %(type)s", 28664)
    return None if vals is None else [x for v in vals for x in v]


def op_filter(ev: Any, op: str, arg: Any, doc: Any) -> Any:
    """``$filter: {input, as, cond, limit}``."""
    missing = "Missing '%(key)s' parameter to $filter"
    named_args(arg, ("input", "as", "cond", "limit"), ("$filter only supports an object as its argument", 28646),
               ("Unrecognized parameter to $filter: %(key)s", 28647),
               {"input": (missing, 28648), "cond": (missing, 28650)})
    name = _scope_name(op, arg, "this")
    arr = ev.ev(arg["input"], doc)
    limit = None
    if "limit" in arg:
        lv = ev.ev(arg["limit"], doc)
        if not nullish(lv):
            limit = int32_arg(lv) if num_kind(lv) >= 0 else None
            if limit is None:
                raise fail("$filter: limit must be represented as a 32-bit integral value: %s"
                           % (num_str(lv) if num_kind(lv) >= 0 else tname(lv)), 327391)
            if limit < 1:
                raise fail("$filter: limit must be greater than 0: %d" % limit, 327392)
    if nullish(arr):
        return None
    if type(arr) is not list:
        raise fail("input to $filter must be an array not %s" % tname(arr), 28651)
    out = []
    inner = ev.scoped({name: None})
    cond = arg["cond"]
    for x in arr:
        inner.vars[name] = x
        if truthy(inner.ev(cond, doc)):
            out.append(x)
            if limit is not None and len(out) >= limit:
                break
    return out


def op_map(ev: Any, op: str, arg: Any, doc: Any) -> Any:
    """``$map: {input, as, in}``."""
    missing = ("Missing '%(key)s' parameter to $map", 16882)  # the server uses 16882 for both
    named_args(arg, ("input", "as", "in"), ("$map only supports an object as its argument", 16878),
               ("Unrecognized parameter to $map: %(key)s", 16879), {"input": missing, "in": missing})
    name = _scope_name(op, arg, "this")
    arr = ev.ev(arg["input"], doc)
    if nullish(arr):
        return None
    if type(arr) is not list:
        raise fail("input to $map must be an array not %s" % tname(arr), 16883)
    inner = ev.scoped({name: None})
    body = arg["in"]
    out = []
    for x in arr:
        inner.vars[name] = x
        v = inner.ev(body, doc)
        out.append(None if v is MISSING else v)
    return out


def op_reduce(ev: Any, op: str, arg: Any, doc: Any) -> Any:
    """``$reduce: {input, initialValue, in}`` with ``$$value`` and ``$$this``."""
    missing = "$reduce requires '%(key)s' to be specified"
    named_args(arg, ("input", "initialValue", "in"),
               ("$reduce requires an object as an argument, found: %(type)s", 40075),
               ("$reduce found an unknown argument: %(key)s", 40076),
               {"input": (missing, 40077), "initialValue": (missing, 40078), "in": (missing, 40079)})
    arr = ev.ev(arg["input"], doc)
    if nullish(arr):
        return None
    if type(arr) is not list:
        raise fail("input to $reduce must be an array not %s" % tname(arr), 40080)
    value = ev.ev(arg["initialValue"], doc)
    inner = ev.scoped({"this": None, "value": None})
    for x in arr:
        inner.vars["this"] = x
        inner.vars["value"] = None if value is MISSING else value
        value = inner.ev(arg["in"], doc)
    return value


def op_index_of_array(ev: Any, op: str, arg: Any, doc: Any) -> Any:
    vals = eval_args(ev, op, arg, doc, 2, 4)
    arr, x = vals[0], vals[1]
    if nullish(arr):
        return None
    if type(arr) is not list:
        raise fail("$indexOfArray requires an array as a first argument, found: %s" % tname(arr), 40090)
    bounds = []
    for which, v in zip(("starting", "ending"), vals[2:]):
        i = int_value(v) if num_kind(v) >= 0 else None
        if i is None or not INT32_MIN <= i <= INT32_MAX:
            raise fail("$indexOfArray requires an integral %s index, found a value of type: %s, with value: %s"
                       % (which, tname(v), num_str(v) if num_kind(v) >= 0 else repr(v)), 40096)
        if i < 0:
            raise fail("$indexOfArray requires a nonnegative %s index, found: %d" % (which, i), 40097)
        bounds.append(i)
    start = bounds[0] if bounds else 0
    end = min(bounds[1], len(arr)) if len(bounds) > 1 else len(arr)
    key = ev.str_key
    for i in range(start, end):
        if agg_compare(arr[i], x, key) == 0:
            return i
    return -1


def op_is_array(ev: Any, op: str, arg: Any, doc: Any) -> bool:
    (v,) = eval_args(ev, op, arg, doc, 1)
    return type(v) is list


def op_range(ev: Any, op: str, arg: Any, doc: Any) -> list:
    vals = eval_args(ev, op, arg, doc, 2, 3)
    names = (("starting value", 34443, 34444), ("ending value", 34445, 34446), ("step value", 34447, 34448))
    nums = []
    for v, (what, c_num, c_32) in zip(vals, names):
        if num_kind(v) < 0:
            raise fail("$range requires a numeric %s, found value of type: %s" % (what, tname(v)), c_num)
        i = int32_arg(v)
        if i is None:
            raise fail("$range requires a %s that can be represented as a 32-bit integer, found value: %s"
                       % (what, num_str(v)), c_32)
        nums.append(i)
    step = nums[2] if len(nums) > 2 else 1
    if step == 0:
        raise fail("$range requires a non-zero step value", 34449)
    return list(range(nums[0], nums[1], step))


def op_reverse_array(ev: Any, op: str, arg: Any, doc: Any) -> Any:
    vals = typed_operands(ev, op, arg, doc, is_array, "The argument to $reverseArray must be an array, but was of type: "
                          "%(type)s", 34435, 1, -1)
    return None if vals is None else vals[0][::-1]


def op_size(ev: Any, op: str, arg: Any, doc: Any) -> int:
    (v,) = eval_args(ev, op, arg, doc, 1)
    if type(v) is not list:
        raise fail("The argument to $size must be an array. Type of argument: %s" % tname(v), 17124)
    return len(v)


def _slice_int32(v: Any, which: str, numeric: str, codes: tuple[int, int]) -> int:
    """``$slice``'s second or third argument as a 32-bit integer; ``codes``: (not a number, out of range)."""
    if num_kind(v) < 0:
        raise fail("%s argument to $slice must be %s, but is of type: %s" % (which, numeric, tname(v)), codes[0])
    n = int32_arg(v)
    if n is None:
        raise fail("%s argument to $slice can't be represented as a 32-bit integer: %s" % (which, num_str(v)),
                   codes[1])
    return n


def op_slice(ev: Any, op: str, arg: Any, doc: Any) -> Any:
    vals = eval_args(ev, op, arg, doc, 2, 3)
    if any(nullish(v) for v in vals):
        return None
    arr = vals[0]
    if type(arr) is not list:
        raise fail("First argument to $slice must be an array, but is of type: %s" % tname(arr), 28724)
    a = _slice_int32(vals[1], "Second", "a numeric value", (28725, 28726))
    if len(vals) == 2:
        return arr[a:] if a < 0 else arr[:a]
    n = _slice_int32(vals[2], "Third", "numeric", (28727, 28728))
    if n <= 0:
        raise fail("Third argument to $slice must be positive: %d" % n, 28729)
    start = a if a >= 0 else max(0, len(arr) + a)
    return arr[start:start + n]


def op_zip(ev: Any, op: str, arg: Any, doc: Any) -> Any:
    """``$zip: {inputs, useLongestLength, defaults}``."""
    named_args(arg, ("inputs", "useLongestLength", "defaults"),
               ("$zip only supports an object as an argument, found %(type)s", 34460),
               ("$zip found an unknown argument: %(key)s", 34464),
               {"inputs": ("$zip requires at least one input array", 34465)})
    if type(arg["inputs"]) is not list:
        raise fail("inputs must be an array of expressions, found %s" % tname(arg["inputs"]), 34461)
    longest = arg.get("useLongestLength", False)
    if not isinstance(longest, bool):
        raise fail("useLongestLength must be a bool, found %s" % tname(longest), 34463)
    defaults_spec = arg.get("defaults")
    if defaults_spec is not None and type(defaults_spec) is not list:
        raise fail("defaults must be an array of expressions, found %s" % tname(defaults_spec), 34462)
    if defaults_spec is not None and not longest:
        raise fail("cannot specify defaults unless useLongestLength is true", 34466)
    if defaults_spec is not None and len(defaults_spec) != len(arg["inputs"]):
        raise fail("defaults and inputs must be the same length", 34467)
    inputs = []
    for e in arg["inputs"]:
        v = ev.ev(e, doc)
        if nullish(v):
            return None
        if type(v) is not list:
            raise fail("$zip found a non-array expression in input: %s" % tname(v), 34468)
        inputs.append(v)
    defaults = [None if (x := ev.ev(e, doc)) is MISSING else x for e in defaults_spec] if defaults_spec \
        else [None] * len(inputs)
    if not inputs:
        return []
    n = max(len(a) for a in inputs) if longest else min(len(a) for a in inputs)
    return [[a[i] if i < len(a) else defaults[j] for j, a in enumerate(inputs)] for i in range(n)]


def op_array_to_object(ev: Any, op: str, arg: Any, doc: Any) -> Any:
    (arr,) = eval_args(ev, op, arg, doc, 1)
    if nullish(arr):
        return None
    if type(arr) is not list:
        raise fail("$arrayToObject requires an array input, found: %s" % tname(arr), 40386)
    out: dict = {}
    if not arr:
        return out
    first_is_array = type(arr[0]) is list
    for e in arr:
        if type(e) is list:
            if not first_is_array:
                raise fail("$arrayToObject requires a consistent input format. Elements must all be arrays or "
                           "all be objects. Object was detected, now found: array", 40391)
            if len(e) != 2:
                raise fail("$arrayToObject requires an array of size 2 arrays,found array of size: %d" % len(e),
                           40397)
            k, v = e
            if not isinstance(k, str):
                raise fail("$arrayToObject requires an array of key-value pairs, where the key must be of type "
                           "string. Found key type: %s" % tname(k), 40395)
        elif isinstance(e, dict):
            if first_is_array:
                raise fail("$arrayToObject requires a consistent input format. Elements must all be arrays or "
                           "all be objects. Array was detected, now found: object", 40391)
            if len(e) != 2:
                raise fail("$arrayToObject requires an object keys of 'k' and 'v'. Found incorrect number of "
                           "keys:%d" % len(e), 40392)
            if "k" not in e or "v" not in e:
                raise fail("$arrayToObject requires an object with keys 'k' and 'v'. Missing either or both "
                           "keys from: %s" % e, 40393)
            k, v = e["k"], e["v"]
            if not isinstance(k, str):
                raise fail("$arrayToObject requires an object with keys 'k' and 'v', where the value of 'k' "
                           "must be of type string. Found type: %s" % tname(k), 40394)
        else:
            raise fail("Unrecognised input type format for $arrayToObject: %s" % tname(e), 40398)
        if "\x00" in k:
            raise fail("Key field cannot contain an embedded null byte", 4940400)
        out[k] = v
    return out


def op_object_to_array(ev: Any, op: str, arg: Any, doc: Any) -> Any:
    vals = typed_operands(ev, op, arg, doc, is_document, "$objectToArray requires a document input, found: %(type)s",
                          40390, 1, -1)
    return None if vals is None else [{"k": k, "v": x} for k, x in vals[0].items()]


# ------------------------------------------------------------------------------------------ $sortArray
def _sort_key_value(v: Any, path: str | None, direction: int) -> Any:
    x = v if path is None else (field_path(v, path) if isinstance(v, dict) else MISSING)
    if type(x) is list and path is not None:
        if not x:
            return MISSING
        best = x[0]
        for y in x[1:]:
            c = agg_compare(y, best)
            if (c < 0 and direction == 1) or (c > 0 and direction == -1):
                best = y
        return best
    return None if x is MISSING else x


def op_sort_array(ev: Any, op: str, arg: Any, doc: Any) -> Any:
    """``$sortArray: {input, sortBy}``: sortBy 1 / -1 (whole values) or a sort document."""
    import functools
    missing = "$sortArray requires '%(key)s' to be specified"
    named_args(arg, ("input", "sortBy"), ("$sortArray requires an object as an argument, found: %(type)s", 2942500),
               ("$sortArray found an unknown argument: %(key)s", 2942501),
               {"input": (missing, 2942502), "sortBy": (missing, 2942503)})
    spec = arg["sortBy"]
    if isinstance(spec, dict):
        if not spec:
            raise fail("$sortArray sortBy must not be empty", 2942505)
        keys = []
        for p, d in spec.items():
            if num_kind(d) < 0 or int_value(d) not in (1, -1):
                raise fail("$sortArray sortBy values must be 1 or -1, found: %s" % d, 2942505)
            keys.append((p, int_value(d)))
    elif num_kind(spec) >= 0 and int_value(spec) in (1, -1):
        keys = [(None, int_value(spec))]
    else:
        raise fail("$sortArray sortBy must be 1, -1 or a sort document, found: %s" % tname(spec), 2942505)
    arr = ev.ev(arg["input"], doc)
    if nullish(arr):
        return None
    if type(arr) is not list:
        raise fail("The input argument to $sortArray must be an array, but was of type: %s" % tname(arr), 2942504)
    str_key = ev.str_key

    def cmp(a: Any, b: Any) -> int:
        for p, d in keys:
            c = V.compare(_sort_key_value(a, p, d), _sort_key_value(b, p, d), str_key)
            if c:
                return c * d
        return 0
    return sorted(arr, key=functools.cmp_to_key(cmp))


def op_n_array(ev: Any, op: str, arg: Any, doc: Any) -> Any:
    """``$firstN`` / ``$lastN`` / ``$maxN`` / ``$minN`` on an array: ``{input, n}``."""
    named_args(arg, ("input", "n"), ("specification must be an object; found %(type)s", 5787801),
               ("Unknown argument for 'n' operator: %(key)s", 5787901),
               {"n": ("Missing value for 'n'", 5787906), "input": ("Missing value for 'input'", 5787907)})
    nv = ev.ev(arg["n"], doc)
    n = int_value(nv) if num_kind(nv) >= 0 else None
    if n is None:
        raise fail("Value for 'n' must be of integral type, but found %s" % repr(nv), 5787902)
    if n <= 0:
        raise fail("'n' must be greater than 0, found %d" % n, 5787908)
    arr = ev.ev(arg["input"], doc)
    if type(arr) is not list:
        raise fail("Input to %s must be an array, found: %s" % (op, tname(arr)), 5788200)
    if op == "$firstN":
        return arr[:n]
    if op == "$lastN":
        return arr[-n:]
    import functools
    vals = [x for x in arr if not nullish(x)]
    sign = -1 if op == "$maxN" else 1
    vals.sort(key=functools.cmp_to_key(lambda a, b: sign * agg_compare(a, b, ev.str_key)))
    return vals[:n]


# ------------------------------------------------------------------------------------------ sets
def _unique(vals: list, key: Any) -> list:
    out: list = []
    for v in vals:
        if not any(V.compare(v, w, key) == 0 for w in out):
            out.append(v)
    return out


def _contains(vals: list, x: Any, key: Any) -> bool:
    return any(V.compare(x, w, key) == 0 for w in vals)


def op_set(ev: Any, op: str, arg: Any, doc: Any) -> Any:
    key = ev.str_key
    if op == "$setUnion":
        vals = typed_operands(ev, op, arg, doc, is_array,
                              "All operands of $setUnion must be arrays. One argument is of type: %(type)s", 17043)
        return None if vals is None else _unique([x for v in vals for x in v], key)
    if op == "$setIntersection":
        vals = typed_operands(ev, op, arg, doc, is_array,
                              "All operands of $setIntersection must be arrays. One argument is of type: %(type)s", 17047)
        if vals is None:
            return None
        if not vals:
            return []
        out = _unique(vals[0], key)
        for v in vals[1:]:
            out = [x for x in out if _contains(v, x, key)]
        return out
    if op == "$setDifference":
        a, b = eval_args(ev, op, arg, doc, 2)
        if nullish(a) or nullish(b):
            return None
        if type(a) is not list:
            raise fail("both operands of $setDifference must be arrays. First argument is of type: %s"
                       % tname(a), 17048)
        if type(b) is not list:
            raise fail("both operands of $setDifference must be arrays. Second argument is of type: %s"
                       % tname(b), 17049)
        return [x for x in _unique(a, key) if not _contains(b, x, key)]
    if op == "$setEquals":
        raw = arg if type(arg) is list else [arg]
        if len(raw) < 2:
            raise fail("$setEquals needs at least two arguments had: %d" % len(raw), 17045)
        vals = [ev.ev(x, doc) for x in raw]
        sets = []
        for v in vals:
            if type(v) is not list:
                raise fail("All operands of $setEquals must be arrays. One argument is of type: %s"
                           % tname(v), 17044)
            sets.append(_unique(v, key))
        first = sets[0]
        return all(len(s) == len(first) and all(_contains(first, x, key) for x in s) for s in sets[1:])
    if op == "$setIsSubset":
        a, b = eval_args(ev, op, arg, doc, 2)
        if type(a) is not list:
            raise fail("both operands of $setIsSubset must be arrays. First argument is of type: %s" % tname(a),
                       17046)
        if type(b) is not list:
            raise fail("both operands of $setIsSubset must be arrays. Second argument is of type: %s" % tname(b),
                       17042)
        return all(_contains(b, x, key) for x in a)
    (v,) = eval_args(ev, op, arg, doc, 1)
    if type(v) is not list:
        raise fail("%s's argument must be an array, but is %s" % (op, tname(v)),
                   17041 if op == "$anyElementTrue" else 17040)
    return any(truthy(x) for x in v) if op == "$anyElementTrue" else all(truthy(x) for x in v)


# ------------------------------------------------------------------------------------------ accumulators
def _acc_inputs(ev: Any, op: str, arg: Any, doc: Any) -> list:
    """One operand: its elements when it is an array, else itself; several operands: each of them."""
    if type(arg) is list and len(arg) != 1:
        return [ev.ev(x, doc) for x in arg]
    v = ev.ev(arg[0] if type(arg) is list else arg, doc)
    return v if type(v) is list else [v]


def sum_values(vals: list) -> Any:
    """``$sum`` of the numeric values (others ignored): int, long, double or decimal as the server widens."""
    nums = [v for v in vals if num_kind(v) >= 0]
    kind = max((num_kind(v) for v in nums), default=0)
    if kind <= 1:
        return make_int(sum(int(v) for v in nums), kind)
    if kind == 2:
        xs = [to_float(v) for v in nums]
        return math.fsum(xs) if all(math.isfinite(x) for x in xs) else sum(xs)
    return dec128(decimal_total(nums))  # accumulator_sum.cpp: the doubles join the decimals with 34 digits


def op_accumulator(ev: Any, op: str, arg: Any, doc: Any) -> Any:
    vals = _acc_inputs(ev, op, arg, doc)
    if op == "$sum":
        return sum_values(vals)
    if op in ("$min", "$max"):
        best = MISSING
        for v in vals:
            if nullish(v):
                continue
            if best is MISSING or (agg_compare(v, best, ev.str_key) < 0) == (op == "$min") \
                    and agg_compare(v, best, ev.str_key) != 0:
                best = v
        return None if best is MISSING else best
    nums = [v for v in vals if num_kind(v) >= 0]
    if op == "$avg":
        if not nums:
            return None
        if any(num_kind(v) == 3 for v in nums):
            return dec128(DEC_CTX.divide(decimal_total(nums), to_dec(len(nums))))
        return math.fsum(to_float(v) for v in nums) / len(nums)
    xs = [to_float(v) for v in nums]
    if op in ("$stdDevPop", "$stdDevSamp"):
        n = len(xs)
        if n == 0 or (op == "$stdDevSamp" and n < 2):
            return None
        mean = math.fsum(xs) / n
        var = math.fsum((x - mean) ** 2 for x in xs) / (n if op == "$stdDevPop" else n - 1)
        return math.sqrt(var)
    raise fail("unknown accumulator expression %s" % op, 2)


def _percentiles(op: str, arg: Any, ev: Any, doc: Any) -> Any:
    """``$median: {input, method}`` / ``$percentile: {input, p, method}`` (discrete percentiles)."""
    allowed = ("input", "method") if op == "$median" else ("input", "p", "method")
    named_args(arg, allowed, ("specification must be an object; found %(type)s", 7436100),
               (op + " found an unknown argument: %(key)s", 40415),
               {k: (op + " requires '%(key)s' to be specified", 40414) for k in allowed})
    if arg["method"] not in ("approximate", "discrete", "continuous"):
        raise fail("Currently only 'approximate', 'discrete' and 'continuous' can be used as percentile "
                   "'method'", 7766600)
    ps: list
    if op == "$median":
        ps = [0.5]
    else:
        pv = ev.ev(arg["p"], doc)
        if type(pv) is not list or not pv:
            raise fail("The 'p' field for $percentile must be a non-empty array of numbers, found: %s"
                       % tname(pv), 7750301)
        for p in pv:
            if num_kind(p) < 0 or not 0 <= to_float(p) <= 1:
                raise fail("The 'p' field for $percentile must be an array of numbers from [0.0, 1.0], but "
                           "found: %s" % repr(p), 7750302)
        ps = [to_float(p) for p in pv]
    v = ev.ev(arg["input"], doc)
    vals = v if type(v) is list else [v]
    xs = sorted(to_float(x) for x in vals if num_kind(x) >= 0 and not (to_float(x) != to_float(x)))
    out = []
    for p in ps:
        if not xs:
            out.append(None)
        elif arg["method"] == "continuous":
            pos = p * (len(xs) - 1)
            lo = math.floor(pos)
            hi = math.ceil(pos)
            out.append(xs[lo] + (xs[hi] - xs[lo]) * (pos - lo))
        else:
            out.append(xs[max(0, math.ceil(p * len(xs)) - 1)])
    return out[0] if op == "$median" else (None if not xs else out)


def op_percentile(ev: Any, op: str, arg: Any, doc: Any) -> Any:
    return _percentiles(op, arg, ev, doc)


OPS = {
    "$arrayElemAt": op_array_elem_at,
    "$first": op_first_last,
    "$last": op_first_last,
    "$concatArrays": op_concat_arrays,
    "$filter": op_filter,
    "$map": op_map,
    "$reduce": op_reduce,
    "$indexOfArray": op_index_of_array,
    "$isArray": op_is_array,
    "$range": op_range,
    "$reverseArray": op_reverse_array,
    "$size": op_size,
    "$slice": op_slice,
    "$zip": op_zip,
    "$arrayToObject": op_array_to_object,
    "$objectToArray": op_object_to_array,
    "$sortArray": op_sort_array,
    "$firstN": op_n_array,
    "$lastN": op_n_array,
    "$maxN": op_n_array,
    "$minN": op_n_array,
    "$setUnion": op_set,
    "$setIntersection": op_set,
    "$setDifference": op_set,
    "$setEquals": op_set,
    "$setIsSubset": op_set,
    "$anyElementTrue": op_set,
    "$allElementsTrue": op_set,
    "$sum": op_accumulator,
    "$avg": op_accumulator,
    "$min": op_accumulator,
    "$max": op_accumulator,
    "$stdDevPop": op_accumulator,
    "$stdDevSamp": op_accumulator,
    "$median": op_percentile,
    "$percentile": op_percentile,
}
