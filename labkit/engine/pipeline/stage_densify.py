"""``$densify`` and ``$fill`` (MongoDB 8.0 manual pages of the same names; src/mongo/db/pipeline/
document_source_densify.cpp, document_source_fill.cpp; jstests/aggregation/sources/densify/*, fill/*).

``$densify {field, partitionByFields, range: {step, unit, bounds}}`` adds documents holding only ``field`` (and
the partition fields) at ``lower + k * step`` where no document has that value: ``bounds`` ``"full"`` (the
minimum to the maximum over all documents), ``"partition"`` (per partition) or ``[lower, upper)``. Documents
whose field is null or missing pass through unchanged; the output is sorted by partition then field.

``$fill {partitionBy | partitionByFields, sortBy, output: {f: {value: <expr>} | {method: "locf" | "linear"}}}``
is the server's rewrite: ``$setWindowFields`` with ``$locf`` / ``$linearFill`` for the method outputs, then the
value outputs set where the field is null or missing.
"""
from __future__ import annotations

import datetime as dt
from typing import Any, Callable

from bson import Decimal128
from pymongo.errors import OperationFailure

from ..bson import keys as K
from .accumulators import is_num, to_float
from .stage_window import UNITS_MONTHS, UNITS_MS, _add_units, set_window_fields_stage
from ..bson.values import MISSING, type_name, with_path
from .expression.expr_base import idl_fields


def _fail(msg: str, code: int) -> OperationFailure:
    return OperationFailure(msg, code, {"ok": 0.0, "errmsg": msg, "code": code})


def _get(doc: Any, parts: list[str]) -> Any:
    cur = doc
    for p in parts:
        if not isinstance(cur, dict) or p not in cur:
            return MISSING
        cur = cur[p]
    return cur


def _num(v: Any) -> Any:
    return v.to_decimal() if isinstance(v, Decimal128) else v


def densify_stage(arg: Any, docs: list[dict]) -> list[dict]:
    """Run ``{$densify: arg}`` over ``docs``."""
    idl_fields(arg, "$densify", ("field", "partitionByFields", "range"), ("field", "range"),
               ("the $densify stage specification must be an object, found %(type)s", 14))
    field = arg["field"]
    if not isinstance(field, str):
        raise _fail("BSON field '$densify.field' is the wrong type '%s', expected type 'string'"
                    % type_name(field), 14)
    if field.startswith("$"):
        raise _fail("Cannot densify field starting with '$'", 5733306)
    parts_f = field.split(".")
    pfields = arg.get("partitionByFields", [])
    if not isinstance(pfields, list) or not all(isinstance(p, str) for p in pfields):
        raise _fail("BSON field '$densify.partitionByFields' is the wrong type, expected type 'array'", 14)
    for p in pfields:
        if p == field or p.startswith(field + ".") or field.startswith(p + "."):
            raise _fail("Cannot densify and partition on the same field '%s'" % p, 8993000)
    rng = arg["range"]
    if not isinstance(rng, dict):
        raise _fail("BSON field '$densify.range' is the wrong type '%s', expected type 'object'"
                    % type_name(rng), 14)
    for k in rng:
        if k not in ("step", "unit", "bounds"):
            raise _fail("BSON field '$densify.range.%s' is an unknown field." % k, 40415)
    for k in ("step", "bounds"):
        if k not in rng:
            raise _fail("BSON field '$densify.range.%s' is missing but a required field" % k, 40414)
    step, unit, bounds = rng["step"], rng.get("unit"), rng["bounds"]
    if not is_num(step) or to_float(step) <= 0:
        raise _fail("The step parameter in a range statement must be a strictly positive numeric value", 5733401)
    if unit is not None:
        if unit not in UNITS_MS and unit not in UNITS_MONTHS:
            raise _fail("unknown time unit value: %s" % unit, 9)
        if to_float(step) != int(to_float(step)):
            raise _fail("The step parameter in a range statement must be a whole number when densifying a date "
                        "range", 5733402)
    explicit = None
    if isinstance(bounds, list):
        ok = len(bounds) == 2 and (
            (all(is_num(b) for b in bounds) and unit is None) or
            (all(isinstance(b, dt.datetime) for b in bounds) and unit is not None))
        if not ok:
            raise _fail("Explicit bounds must be an array of two numbers, or two dates with a unit", 5733403)
        if K.encode(bounds[0]) > K.encode(bounds[1]):
            raise _fail("A bounding array in a range statement must have the lower bound be less than or equal "
                        "to the upper bound", 5733402)
        explicit = bounds
    elif bounds not in ("full", "partition"):
        raise _fail("Bounds string must either be 'full' or 'partition'", 5946802)

    def check(v: Any) -> None:
        if unit is None and not is_num(v):
            if isinstance(v, dt.datetime):
                raise _fail("Encountered date densify value in collection when step does not have a date unit.",
                            6053600)
            raise _fail("Densify field type must be numeric or a date", 5733201)
        if unit is not None and not isinstance(v, dt.datetime):
            if is_num(v):
                raise _fail("Encountered numeric densify value in collection when step has a date unit.",
                            6053600)
            raise _fail("Densify field type must be numeric or a date", 5733201)

    ppaths = [p.split(".") for p in pfields]
    partitions: dict[bytes, tuple[list, list[dict], list[dict]]] = {}
    for d in docs:
        pvals = [_get(d, pp) for pp in ppaths]
        pk = K.encode([None if v is MISSING else v for v in pvals])
        ent = partitions.get(pk)
        if ent is None:
            ent = partitions[pk] = (pvals, [], [])
        v = _get(d, parts_f)
        if v is MISSING or v is None:
            ent[1].append(d)
        else:
            check(v)
            ent[2].append(d)
    all_vals = [_get(d, parts_f) for ent in partitions.values() for d in ent[2]]
    if bounds == "full" or (bounds == "partition" and not pfields):
        glo = min(all_vals, key=K.encode) if all_vals else None
        ghi = max(all_vals, key=K.encode) if all_vals else None
    out: list[dict] = []
    for pk in sorted(partitions):
        pvals, nulls, present = partitions[pk]
        present = sorted(present, key=lambda d: K.encode(_get(d, parts_f)))
        if explicit is not None:
            lo, hi, inclusive = explicit[0], explicit[1], False
        elif bounds == "partition" and pfields:
            if not present:
                out.extend(nulls)
                continue
            lo, hi, inclusive = _get(present[0], parts_f), _get(present[-1], parts_f), True
        else:
            if glo is None:
                out.extend(nulls)
                continue
            lo, hi, inclusive = glo, ghi, True
        existing = {K.encode(_get(d, parts_f)) for d in present}
        generated = []
        k = 0
        while True:
            v = _add_units(lo, k * int(to_float(step)), unit) if unit is not None else \
                _step_value(lo, step, k)
            if K.encode(v) > K.encode(hi) or (not inclusive and K.encode(v) >= K.encode(hi)):
                break
            k += 1
            if K.encode(v) in existing:
                continue
            g: dict = {}
            for pp, pv in zip(ppaths, pvals):
                if pv is not MISSING:
                    g = with_path(g, pp, pv)
            g = with_path(g, parts_f, v)
            generated.append(g)
            if len(generated) > 500_000:
                raise _fail("$densify would generate more than 500000 documents", 5897900)
        merged = sorted(present + generated, key=lambda d: K.encode(_get(d, parts_f)))
        out.extend(nulls)
        out.extend(merged)
    return out


def _step_value(lo: Any, step: Any, k: int) -> Any:
    if isinstance(lo, Decimal128) or isinstance(step, Decimal128):
        return Decimal128(_num(lo) + _num(step) * k)
    if isinstance(lo, float) or isinstance(step, float):
        return lo + step * k
    return lo + step * k


def fill_stage(arg: Any, docs: list[dict], compile_expr: Callable) -> list[dict]:
    """Run ``{$fill: arg}`` over ``docs``."""
    idl_fields(arg, "$fill", ("partitionBy", "partitionByFields", "sortBy", "output"), ("output",),
               ("the $fill stage specification must be an object, found %(type)s", 14))
    if "partitionBy" in arg and "partitionByFields" in arg:
        raise _fail("Only one of 'partitionBy' and 'partitionByFields' can be specified in $fill", 6050204)
    output = arg["output"]
    if not isinstance(output, dict):
        raise _fail("BSON field '$fill.output' is the wrong type '%s', expected type 'object'"
                    % type_name(output), 14)
    methods: dict = {}
    values: dict = {}
    for f, spec in output.items():
        if not isinstance(spec, dict) or len(spec) != 1 or next(iter(spec)) not in ("value", "method"):
            raise _fail("Exactly one of 'value' and 'method' must be specified in a $fill output field", 6050203)
        if "value" in spec:
            values[f] = compile_expr(spec["value"])
        else:
            m = spec["method"]
            if m == "locf":
                methods[f] = {"$locf": "$" + f}
            elif m == "linear":
                methods[f] = {"$linearFill": "$" + f}
            else:
                raise _fail("Method must be either locf or linear", 6050202)
    sort_by = arg.get("sortBy")
    if any("$linearFill" in v for v in methods.values()) and not sort_by:
        raise _fail("$linearFill must be specified with a top level sortBy expression with exactly one element",
                    5371602)
    if "partitionByFields" in arg:
        pf = arg["partitionByFields"]
        if not isinstance(pf, list):
            raise _fail("BSON field '$fill.partitionByFields' is the wrong type, expected type 'array'", 14)
        partition: Any = {p: "$" + p for p in pf} if pf else None
    else:
        partition = arg.get("partitionBy")
    if methods:
        swf: dict = {"output": methods}
        if sort_by:
            swf["sortBy"] = sort_by
        if partition is not None:
            swf["partitionBy"] = partition
        docs = set_window_fields_stage(swf, docs, compile_expr)
    elif sort_by:
        parts = [(f.split("."), d < 0) for f, d in sort_by.items()]
        docs = sorted(docs, key=lambda d: K.doc_sort_keys(d, parts))
    if not values:
        return docs
    out = []
    for d in docs:
        nd = dict(d)
        for f, ev in values.items():
            pp = f.split(".")
            cur = _get(nd, pp)
            if cur is MISSING or cur is None:
                try:
                    v = ev(d)
                except KeyError:
                    v = None
                nd = with_path(nd, pp, v)
        out.append(nd)
    return out
