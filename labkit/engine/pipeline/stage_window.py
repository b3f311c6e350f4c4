"""``$setWindowFields`` (MongoDB 8.0 manual "$setWindowFields" and the window operator pages;
src/mongo/db/pipeline/document_source_set_window_fields.cpp, window_function/*; jstests/aggregation/sources/
setWindowFields/*).

Partitions (``partitionBy``, ordered by the partition value) are sorted by ``sortBy``; each output field is a
window function:

* accumulators over a window (``$sum $avg $min $max $count $push $addToSet $first $last $stdDevPop $stdDevSamp
  $firstN $lastN $minN $maxN $top $bottom $topN $bottomN $median $percentile $covariancePop $covarianceSamp``)
  with ``documents: [lo, hi]`` (positions relative to the current document, ``"current"``, ``"unbounded"``) or
  ``range: [lo, hi]`` (sortBy values, optional ``unit`` for dates); no window = the whole partition;
* ``$rank`` ``$denseRank`` ``$documentNumber`` ``$shift`` ``$locf`` ``$linearFill`` ``$expMovingAvg`` (no window);
* ``$derivative`` and ``$integral`` (``unit`` for dates) over a window.

Expressions are compiled with the caller's ``compile_expr`` (aggregation.py's ``_compile_expr``).
"""
from __future__ import annotations

import calendar
import datetime as dt
import math
from typing import Any, Callable

from bson import Decimal128
from pymongo.errors import OperationFailure

from ..bson import keys as K
from .accumulators import ACCUMULATORS, is_num, to_float
from ..bson.values import MISSING, type_name

WINDOW_ACCUMULATORS = frozenset(("$sum", "$avg", "$min", "$max", "$count", "$push", "$addToSet", "$first",
                                 "$last", "$stdDevPop", "$stdDevSamp", "$firstN", "$lastN", "$minN", "$maxN",
                                 "$top", "$bottom", "$topN", "$bottomN", "$median", "$percentile"))
RANK_OPS = ("$rank", "$denseRank", "$documentNumber")
NO_WINDOW_OPS = RANK_OPS + ("$shift", "$locf", "$linearFill", "$expMovingAvg")
OTHER_OPS = ("$derivative", "$integral", "$covariancePop", "$covarianceSamp")
UNITS_MS = {"week": 604_800_000, "day": 86_400_000, "hour": 3_600_000, "minute": 60_000, "second": 1000,
            "millisecond": 1}
UNITS_MONTHS = {"year": 12, "quarter": 3, "month": 1}


def _fail(msg: str, code: int) -> OperationFailure:
    return OperationFailure(msg, code, {"ok": 0.0, "errmsg": msg, "code": code})


def _epoch_ms(d: dt.datetime) -> int:
    if d.tzinfo is not None:
        d = d.astimezone(dt.timezone.utc).replace(tzinfo=None)
    return (d - dt.datetime(1970, 1, 1)) // dt.timedelta(milliseconds=1)


def _add_units(d: dt.datetime, n: int, unit: str) -> dt.datetime:
    """``d`` plus ``n`` units (months clamp to the month's last day, as $dateAdd)."""
    if unit in UNITS_MS:
        return d + dt.timedelta(milliseconds=n * UNITS_MS[unit])
    months = d.month - 1 + n * UNITS_MONTHS[unit]
    y, m = d.year + months // 12, months % 12 + 1
    return d.replace(year=y, month=m, day=min(d.day, calendar.monthrange(y, m)[1]))


class _Window:
    """A parsed window: kind ``documents`` or ``range``, bounds, optional unit."""

    def __init__(self, kind: str = "documents", lo: Any = "unbounded", hi: Any = "unbounded",
                 unit: str | None = None) -> None:
        self.kind, self.lo, self.hi, self.unit = kind, lo, hi, unit

    @property
    def whole(self) -> bool:
        return self.lo == "unbounded" and self.hi == "unbounded"


def _parse_bound(b: Any, kind: str) -> Any:
    if b in ("unbounded", "current"):
        return b
    if kind == "documents":
        if not is_num(b) or to_float(b) != int(to_float(b)):
            raise _fail("Numeric document-based bounds must be an integer", 5661800)
        return int(to_float(b))
    if not is_num(b):
        raise _fail("Range-based bounds expression must be a number", 5661801)
    return b.to_decimal() if isinstance(b, Decimal128) else b


def _parse_window(spec: Any, field: str) -> _Window:
    if not isinstance(spec, dict):
        raise _fail("'window' field must be an object", 5371605)
    unknown = set(spec) - {"documents", "range", "unit"}
    if unknown:
        raise _fail("'window' has an unexpected field: %s" % sorted(unknown)[0], 5371604)
    kinds = [k for k in ("documents", "range") if k in spec]
    if len(kinds) != 1:
        raise _fail("Window bounds must use either 'documents' or 'range', not both" if kinds else
                    "'window' field must specify 'documents' or 'range'", 5339800)
    kind = kinds[0]
    if "unit" in spec and kind != "range":
        raise _fail("Window bounds can only specify 'unit' with range-based bounds.", 5339801)
    bounds = spec[kind]
    if not isinstance(bounds, list) or len(bounds) != 2:
        raise _fail("Window bounds must be a 2-element array: %s" % (bounds,), 5339802)
    lo, hi = (_parse_bound(b, kind) for b in bounds)
    unit = spec.get("unit")
    if unit is not None and unit not in UNITS_MS and unit not in UNITS_MONTHS:
        raise _fail("unknown time unit value: %s" % unit, 2)
    if lo != "unbounded" and hi != "unbounded":
        lov = 0 if lo == "current" else lo
        hiv = 0 if hi == "current" else hi
        if lov > hiv:
            raise _fail("Lower bound must not exceed upper bound: %s" % bounds, 5339900)
    return _Window(kind, lo, hi, unit)


def set_window_fields_stage(arg: Any, docs: list[dict], compile_expr: Callable) -> list[dict]:
    """Run ``{$setWindowFields: arg}`` over ``docs`` (documents come out partition by partition, sorted)."""
    if not isinstance(arg, dict):
        raise _fail("the $setWindowFields stage specification must be an object, found %s" % type_name(arg), 14)
    if "output" not in arg:
        raise _fail("BSON field '$setWindowFields.output' is missing but a required field", 40414)
    unknown = set(arg) - {"partitionBy", "sortBy", "output"}
    if unknown:
        raise _fail("BSON field '$setWindowFields.%s' is an unknown field." % sorted(unknown)[0], 40415)
    sort_spec = arg.get("sortBy")
    if sort_spec is not None and not isinstance(sort_spec, dict):
        raise _fail("BSON field '$setWindowFields.sortBy' is the wrong type '%s', expected type 'object'"
                    % type_name(sort_spec), 14)
    sort_by = list((sort_spec or {}).items())
    for _f, d in sort_by:
        if isinstance(d, bool) or d not in (1, -1):
            raise _fail("$sort key ordering must be 1 (for ascending) or -1 (for descending)", 15975)
    if not isinstance(arg["output"], dict):
        raise _fail("BSON field '$setWindowFields.output' is the wrong type '%s', expected type 'object'"
                    % type_name(arg["output"]), 14)
    outputs = [_parse_output(field, spec, sort_by, compile_expr) for field, spec in arg["output"].items()]
    if isinstance(arg.get("partitionBy"), list):
        raise _fail("An expression used to partition cannot evaluate to value of type array", 14)
    part = compile_expr(arg["partitionBy"]) if "partitionBy" in arg else None
    sort_parts = [(f.split("."), d < 0) for f, d in sort_by]

    groups: dict[bytes, list[dict]] = {}
    for d in docs:
        try:
            pk = part(d) if part else None
        except KeyError:
            pk = None
        if isinstance(pk, list) and part is not None:
            raise _fail("An expression used to partition cannot evaluate to value of type array", 14)
        groups.setdefault(K.encode(pk), []).append(d)
    order = sorted(groups) if part is not None else list(groups)
    out: list[dict] = []
    for ek in order:
        rows = groups[ek]
        if sort_by:
            keyed = sorted(((K.doc_sort_keys(r, sort_parts), i, r) for i, r in enumerate(rows)),
                           key=lambda t: (t[0], t[1]))
            rows = [r for _, _, r in keyed]
            sort_keys = [k for k, _, _ in keyed]
        else:
            sort_keys = [()] * len(rows)
        results = [dict(r) for r in rows]
        for o in outputs:
            values = o.run(rows, sort_keys, sort_by)
            for res, v in zip(results, values):
                _set_field(res, o.field, v)
        out.extend(results)
    return out


def _set_field(doc: dict, path: str, v: Any) -> None:
    parts = path.split(".")
    cur = doc
    for p in parts[:-1]:
        nxt = cur.get(p)
        if not isinstance(nxt, dict):
            nxt = {}
        else:
            nxt = dict(nxt)
        cur[p] = nxt
        cur = nxt
    cur[parts[-1]] = v


class _Output:
    """One output field: its window function, argument and window."""

    def __init__(self, field: str, op: str, arg: Any, window: _Window | None, compile_expr: Callable,
                 sort_by: list) -> None:
        self.field, self.op, self.arg, self.window = field, op, arg, window
        self.compile = compile_expr
        self.sort_by = sort_by

    # -- helpers
    def _values(self, rows: list[dict], expr: Any) -> list[Any]:
        f = self.compile(expr)
        out = []
        for r in rows:
            try:
                out.append(f(r))
            except KeyError:
                out.append(MISSING)
        return out

    def _sort_values(self, rows: list[dict]) -> list[Any]:
        f = self.sort_by[0][0]
        vals = []
        for r in rows:
            pv = K.path_values(r, f.split("."))
            vals.append(pv[0] if len(pv) == 1 else MISSING)
        return vals

    def _bounds(self, rows: list[dict], svals: list | None) -> list[tuple[int, int]]:
        """Per row: the [a, b] positions of its window (b < a: empty)."""
        n = len(rows)
        w = self.window or _Window()
        if w.kind == "documents":
            out = []
            for j in range(n):
                a = 0 if w.lo == "unbounded" else j if w.lo == "current" else max(j + w.lo, 0)
                b = n - 1 if w.hi == "unbounded" else j if w.hi == "current" else min(j + w.hi, n - 1)
                out.append((a, b))
            return out
        assert svals is not None
        keyed = []
        for v in svals:
            if w.unit is not None:
                if not isinstance(v, dt.datetime):
                    raise _fail("Invalid range: Expected the sortBy field to be a Date, but it was %s"
                                % type_name(None if v is MISSING else v), 5429513)
                keyed.append(v)
            else:
                if not is_num(v):
                    raise _fail("Invalid range: Expected the sortBy field to be a number, but it was %s"
                                % type_name(None if v is MISSING else v), 5429414)
                keyed.append(to_float(v) if isinstance(v, Decimal128) else v)
        desc = self.sort_by[0][1] < 0
        out = []
        for j in range(n):
            cur = keyed[j]

            def shift(b: Any) -> Any:
                if b == "current":
                    return cur
                if w.unit is not None:
                    return _add_units(cur, int(b) * (-1 if desc else 1), w.unit)
                return cur + (-b if desc else b)
            lo = None if w.lo == "unbounded" else shift(w.lo)
            hi = None if w.hi == "unbounded" else shift(w.hi)
            if desc:
                lo, hi = hi, lo
            idx = [k for k in range(n) if (lo is None or keyed[k] >= lo) and (hi is None or keyed[k] <= hi)]
            out.append((idx[0], idx[-1]) if idx else (1, 0))
        return out

    # -- the functions
    def run(self, rows: list[dict], sort_keys: list[tuple], sort_by: list) -> list[Any]:
        n = len(rows)
        op, arg = self.op, self.arg
        if op in RANK_OPS:
            out = []
            rank = dense = 0
            for j in range(n):
                if j == 0 or sort_keys[j] != sort_keys[j - 1]:
                    rank, dense = j + 1, dense + 1
                out.append({"$rank": rank, "$denseRank": dense, "$documentNumber": j + 1}[op])
            return out
        if op == "$shift":
            values = self._values(rows, arg["output"])
            by = int(to_float(arg["by"]))
            default = arg.get("default")
            return [(None if values[j + by] is MISSING else values[j + by]) if 0 <= j + by < n else default
                    for j in range(n)]
        if op == "$locf":
            values = self._values(rows, arg)
            out, last = [], None
            for v in values:
                if v is not MISSING and v is not None:
                    last = v
                out.append(last)
            return out
        if op == "$linearFill":
            return self._linear_fill(rows)
        if op == "$expMovingAvg":
            return self._exp_moving_avg(rows)
        svals = self._sort_values(rows) if (self.window and self.window.kind == "range") or \
            op in ("$derivative", "$integral") else None
        bounds = self._bounds(rows, svals)
        if op in ("$derivative", "$integral"):
            return self._calculus(rows, svals, bounds)
        if op in ("$covariancePop", "$covarianceSamp"):
            xs = self._values(rows, arg[0])
            ys = self._values(rows, arg[1])
            out = []
            for a, b in bounds:
                pairs = [(to_float(xs[k]), to_float(ys[k])) for k in range(a, b + 1)
                         if is_num(xs[k]) and is_num(ys[k])]
                m = len(pairs)
                if m == 0 or (op == "$covarianceSamp" and m < 2):
                    out.append(None)
                    continue
                mx = math.fsum(p[0] for p in pairs) / m
                my = math.fsum(p[1] for p in pairs) / m
                c = math.fsum((p[0] - mx) * (p[1] - my) for p in pairs)
                out.append(c / (m - 1 if op == "$covarianceSamp" else m))
            return out
        # accumulators over a window
        from .accumulators import Statement
        st = Statement(self.field, op, arg, self.compile)
        values = [st.value(r) for r in rows]
        out = []
        cache: dict[tuple[int, int], Any] = {}
        for a, b in bounds:
            if (a, b) in cache:
                out.append(cache[(a, b)])
                continue
            acc = st.make(None)
            for k in range(a, b + 1):
                acc.process(values[k])
            res = acc.result()
            if b < a and op in ("$sum", "$count"):
                res = 0
            cache[(a, b)] = res
            out.append(res)
        return out

    def _linear_fill(self, rows: list[dict]) -> list[Any]:
        values = self._values(rows, self.arg)
        xs = self._sort_values(rows)
        n = len(rows)
        out: list[Any] = [None if v is MISSING else v for v in values]
        known = [j for j in range(n) if out[j] is not None]
        for j in known:
            if not is_num(out[j]):
                raise _fail("There can be no non-numeric values in the input for $linearFill", 605001)
        for x in xs:
            if not (is_num(x) or isinstance(x, dt.datetime)):
                raise _fail("The sortBy field for $linearFill must be a number or a date", 605001)

        def num(x: Any) -> float:
            return float(_epoch_ms(x)) if isinstance(x, dt.datetime) else to_float(x)
        for a, b in zip(known, known[1:]):
            if b - a < 2:
                continue
            x0, x1 = num(xs[a]), num(xs[b])
            y0, y1 = to_float(out[a]), to_float(out[b])
            for j in range(a + 1, b):
                out[j] = y0 + (y1 - y0) * (num(xs[j]) - x0) / (x1 - x0) if x1 != x0 else y0
        return out

    def _exp_moving_avg(self, rows: list[dict]) -> list[Any]:
        arg = self.arg
        values = self._values(rows, arg["input"])
        if "N" in arg:
            alpha = 2.0 / (int(to_float(arg["N"])) + 1)
        else:
            alpha = to_float(arg["alpha"])
        out: list[Any] = []
        cur: Any = None
        for v in values:
            if is_num(v):
                x = to_float(v) if not isinstance(v, Decimal128) else v.to_decimal()
                if cur is None:
                    cur = x
                elif isinstance(x, type(cur)) or not isinstance(cur, float):
                    cur = x * type(x)(alpha) + cur * (type(x)(1) - type(x)(alpha))  # type: ignore[operator]
                else:
                    cur = x * alpha + cur * (1 - alpha)
            out.append(Decimal128(cur) if not isinstance(cur, (float, type(None))) else cur)
        return out

    def _calculus(self, rows: list[dict], svals: list | None, bounds: list[tuple[int, int]]) -> list[Any]:
        arg = self.arg
        ys = self._values(rows, arg["input"])
        unit = arg.get("unit")
        assert svals is not None
        xs: list[Any] = []
        deriv = self.op == "$derivative"
        for x in svals:
            if isinstance(x, dt.datetime):
                if unit is None:
                    raise _fail("%s where the sortBy is a Date requires an 'unit'" % self.op,
                                5624901 if deriv else 5423902)
                xs.append(_epoch_ms(x) / UNITS_MS[unit])
            elif is_num(x):
                if unit is not None:
                    raise _fail("%s with unit expects the sortBy field to be a Date" % self.op,
                                5624900 if deriv else 5423901)
                xs.append(to_float(x))
            else:
                raise _fail("%s requires the sortBy field to be a number or a date, found %s"
                            % (self.op, type_name(None if x is MISSING else x)), 5423900)
        out: list[Any] = []
        for a, b in bounds:
            if self.op == "$derivative":
                if b <= a or not (is_num(ys[a]) and is_num(ys[b])):
                    out.append(None)
                    continue
                dx = xs[b] - xs[a]
                out.append((to_float(ys[b]) - to_float(ys[a])) / dx if dx else None)
            else:
                pts = [(xs[k], to_float(ys[k])) for k in range(a, b + 1) if is_num(ys[k])]
                if b < a:
                    out.append(None)
                    continue
                total = 0.0
                for (x0, y0), (x1, y1) in zip(pts, pts[1:]):
                    total += (x1 - x0) * (y0 + y1) / 2.0
                out.append(total)
        return out


def _parse_output(field: str, spec: Any, sort_by: list, compile_expr: Callable) -> _Output:
    if not isinstance(spec, dict):
        raise _fail("The field '%s' must be an object" % field, 40414)
    ops = [k for k in spec if k != "window"]
    if len(ops) != 1:
        raise _fail("Expected exactly one function for output field '%s'" % field if ops else
                    "Expected a window function for output field '%s'" % field, 5371603)
    op = ops[0]
    arg = spec[op]
    window = _parse_window(spec["window"], field) if "window" in spec else None
    # static parse errors in the server's order (jstests/aggregation/sources/setWindowFields/
    # comprehensive_parse.js): the function's own rules, then document/range window rules
    if op in NO_WINDOW_OPS:
        if op in RANK_OPS:
            if window is not None:
                raise _fail("Rank style window functions take no other arguments", 5371601)
            if arg != {}:
                raise _fail("%s must be specified with '{}' as the value" % op, 5371603)
            if len(sort_by) != 1:
                raise _fail("%s must be specified with a top level sortBy expression with exactly one element"
                            % op, 5371602)
        elif op in ("$shift", "$expMovingAvg"):
            if window is not None:
                raise _fail("%s does not accept a 'window' field" % op, 9)
            if not sort_by:
                raise _fail("%s requires a sortBy" % op, 9)
        elif op == "$linearFill" and len(sort_by) != 1:
            raise _fail("$linearFill must be specified with a top level sortBy expression with exactly one "
                        "element", 5371602)
        elif window is not None:
            raise _fail("%s does not accept a 'window' field" % op, 9)
        if op == "$shift":
            if not isinstance(arg, dict) or "output" not in arg or "by" not in arg:
                raise _fail("$shift requires an 'output' expression and a 'by' value", 5433001 if not
                            isinstance(arg, dict) else 5433002)
            extra = set(arg) - {"output", "by", "default"}
            if extra:
                raise _fail("Unknown argument in $shift: %s" % sorted(extra)[0], 5433003)
            by = arg["by"]
            if not is_num(by) or to_float(by) != int(to_float(by)):
                raise _fail("'$shift:by' field must be an integer, but found  by: %s" % (by,), 5433003)
        if op == "$expMovingAvg":
            if not isinstance(arg, dict) or "input" not in arg:
                raise _fail("$expMovingAvg sub object must have exactly two fields: An 'input' field, and "
                            "either an 'N' field or an 'alpha' field", 5433600)
            if ("N" in arg) == ("alpha" in arg) or len(arg) != 2:
                raise _fail("$expMovingAvg sub object must have exactly two fields: An 'input' field, and "
                            "either an 'N' field or an 'alpha' field", 5433602)
            if "N" in arg:
                nv = arg["N"]
                if not is_num(nv) or to_float(nv) != int(to_float(nv)) or to_float(nv) <= 0:
                    raise _fail("'N' field must be an integer, but found type %s" % type_name(nv)
                                if not is_num(nv) else "'N' must be greater than zero. Got %s" % (nv,), 5433603)
            else:
                av = arg["alpha"]
                if not is_num(av) or not 0 < to_float(av) < 1:
                    raise _fail("'alpha' must be between 0 and 1 (exclusive), found alpha: %s" % (av,), 5433605)
        return _Output(field, op, arg, None, compile_expr, sort_by)
    if op in ("$derivative", "$integral"):
        if op == "$derivative" and (not sort_by or window is None):
            raise _fail("$derivative requires a sortBy and an explicit window", 9)
        if len(sort_by) != 1:
            raise _fail("%s requires a sortBy on exactly one field" % op, 9)
        if not isinstance(arg, dict) or "input" not in arg or set(arg) - {"input", "unit"}:
            raise _fail("%s accepts an object with 'input' and an optional 'unit'" % op, 9)
        if "unit" in arg and arg["unit"] not in UNITS_MS:
            raise _fail("unknown time unit value: %s" % arg["unit"], 2)
    elif op in ("$covariancePop", "$covarianceSamp"):
        if not isinstance(arg, list) or len(arg) != 2:
            raise _fail("%s requires an array of two expressions" % op, 5424002)
    elif op in WINDOW_ACCUMULATORS:
        ACCUMULATORS[op].parse(arg, compile_expr)  # argument errors now
    elif op in ("$mergeObjects", "$accumulator"):
        raise _fail("'%s' is not a valid window function" % op, 5371603) if op == "$mergeObjects" else \
            _fail("The $accumulator window function (server-side JavaScript) is not supported by the embedded "
                  "engine", 115)
    else:
        raise _fail("Unrecognized window function, %s" % op, 5371603)
    if window is not None:
        if window.kind == "range" and len(sort_by) != 1:
            raise _fail("Range-based window requires sortBy a single field", 5339902)
        if window.kind == "documents" and not window.whole and not sort_by:
            raise _fail("Document-based bounds require a sortBy", 5339901)
    return _Output(field, op, arg, window, compile_expr, sort_by)
