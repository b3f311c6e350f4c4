"""``$group`` accumulators as the server computes them (MongoDB 8.0, manual "$group" > accumulator operators,
src/mongo/db/pipeline/accumulator_*.cpp, jstests/aggregation/accumulators/*).

Each accumulator is a small state object: ``process(value)`` takes the value of its argument for one document
(``MISSING`` when the expression evaluates to nothing), ``result()`` the field of the group's output document.
The stages (``$group``, ``$bucket``, ``$bucketAuto``, ``$setWindowFields``) evaluate expressions with the
``compile_expr`` function they are given (aggregation.py's ``_compile_expr``); this module imports only the value
layer. Null/missing rules: ``$sum``/``$avg``/``$stdDev*``/``$median``/``$percentile`` take numbers only (``$sum``
of nothing is 0, the others null); ``$min``/``$max``/``$minN``/``$maxN`` skip null and missing;
``$first``/``$last``/``$firstN``/``$lastN``/``$top*``/``$bottom*`` keep null and turn missing into null;
``$push``/``$addToSet`` skip missing; ``$mergeObjects`` skips null and missing and fails on other non-objects.
"""
from __future__ import annotations

import math
from decimal import Decimal
from typing import Any, Callable, Iterable

from bson import Decimal128, Int64
from pymongo.errors import OperationFailure

from ..bson import keys as K
from ..bson.values import MISSING, type_name
from .expression.expr_base import DEC_CTX, idl_fields, non_decimal_total

INT32_MAX = 2 ** 31 - 1
INT64_MAX = 2 ** 63 - 1

# accumulator name -> class (filled below)
ACCUMULATORS: dict[str, type] = {}
# accumulators the $group fast path in aggregation.py handles itself
FAST = frozenset(("$sum", "$avg", "$min", "$max", "$first", "$last", "$push", "$addToSet", "$count"))


def _fail(msg: str, code: int) -> OperationFailure:
    return OperationFailure(msg, code, {"ok": 0.0, "errmsg": msg, "code": code})


def is_num(v: Any) -> bool:
    """A BSON number (int, long, double, decimal; not bool)."""
    t = type(v)
    return t is int or t is float or t is Int64 or t is Decimal128 or (
        t is not bool and isinstance(v, (int, float, Decimal128)))


def to_float(v: Any) -> float:
    return float(v.to_decimal()) if isinstance(v, Decimal128) else float(v)


def _show(v: Any) -> str:
    if isinstance(v, str):
        return '"%s"' % v
    if v is None:
        return "null"
    if v is True or v is False:
        return "true" if v else "false"
    return str(v)


# ------------------------------------------------------------------------------------------- parsing
def parse_statement(field: str, acc: Any) -> tuple[str, Any]:
    """Validate one ``field: {<accumulator>: <arg>}`` entry of ``$group`` (or ``output`` of $bucket /
    $bucketAuto) as AccumulationStatement::parseAccumulationStatement does; returns (operator, argument)."""
    if not isinstance(acc, dict) or not acc or not str(next(iter(acc))).startswith("$"):
        raise _fail("The field '%s' must be an accumulator object" % field, 40234)
    if "." in field:
        raise _fail("The field name '%s' cannot contain '.'" % field, 40235)
    if field.startswith("$"):
        raise _fail("The field name '%s' cannot be an operator name" % field, 40236)
    if len(acc) != 1:
        raise _fail("The field '%s' must specify one accumulator" % field, 40238)
    (op, arg), = acc.items()
    if isinstance(arg, list):
        raise _fail("The %s accumulator is a unary operator" % op, 40237)
    if op not in ACCUMULATORS:
        raise _fail("unknown group operator '%s'" % op, 15952)
    return op, arg


class Statement:
    """One parsed output field: ``make(key)`` builds a fresh accumulator for a group (``key`` is the group's
    ``_id``, which ``n`` may refer to), ``value(doc)`` is what the accumulator is fed for a document."""

    def __init__(self, field: str, op: str, arg: Any, compile_expr: Callable[[Any], Callable[[dict], Any]]):
        self.field, self.op = field, op
        cls = ACCUMULATORS[op]
        self.cls = cls
        self.options = cls.parse(arg, compile_expr)
        getter = self.options.pop("input")
        self.n_expr = self.options.pop("n", None)
        self._compile = compile_expr

        if getter is None:
            self.value = lambda doc: 1
        else:
            def value(doc: dict, _g=getter) -> Any:
                try:
                    return _g(doc)
                except KeyError:
                    return MISSING
            self.value = value

    def make(self, key: Any = None) -> "Accumulator":
        acc = self.cls(**self.options)
        if self.n_expr is not None:
            acc.n = _eval_n(self.n_expr, key, self._compile)
        return acc


def parse_statements(spec: dict, compile_expr: Callable, skip: tuple = ()) -> list[Statement]:
    """Every accumulator field of a ``$group`` spec (``skip``: fields that are not accumulators, e.g. ``_id``)."""
    out = []
    for field, acc in spec.items():
        if field in skip:
            continue
        op, arg = parse_statement(field, acc)
        out.append(Statement(field, op, arg, compile_expr))
    return out


def _eval_n(expr: Any, key: Any, compile_expr: Callable) -> int:
    try:
        v = compile_expr(expr)({"_id": key})
    except KeyError:
        v = MISSING
    if not is_num(v):
        raise _fail("Value for 'n' must be of integral type, but found %s" % _show(None if v is MISSING else v),
                    5787902)
    f = to_float(v)
    if f != f or f != int(f):
        raise _fail("Value for 'n' must be of integral type, but found %s" % _show(v), 5787903)
    n = int(f)
    if n <= 0:
        raise _fail("'n' must be greater than 0, found %d" % n, 5787908)
    return n


# ------------------------------------------------------------------------------------------- base
class Accumulator:
    """State of one accumulator over one group."""

    n: int = 1

    @classmethod
    def parse(cls, arg: Any, compile_expr: Callable) -> dict:
        """Options of the accumulator from its argument; ``input``: the compiled argument (None: constant 1)."""
        return {"input": compile_expr(arg)}

    def process(self, v: Any) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def result(self) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError


class Sum(Accumulator):
    """$sum: numbers only; int stays int, overflowing to long, long to double; any double -> double; any
    decimal -> decimal (accumulator_sum.cpp)."""

    def __init__(self) -> None:
        self.ints = 0
        self.floats: list[float] = []
        self.dec: Decimal | None = None
        self.long = False

    def process(self, v: Any) -> None:
        t = type(v)
        if t is int:
            self.ints += v
        elif t is float:
            self.floats.append(v)
        elif t is Int64:
            self.ints += int(v)
            self.long = True
        elif t is Decimal128:
            d = v.to_decimal()
            self.dec = d if self.dec is None else DEC_CTX.add(self.dec, d)
        elif is_num(v):
            self.ints += int(v)

    def result(self) -> Any:
        if self.dec is not None:  # accumulator_sum.cpp: decimalTotal.add(nonDecimalTotal.getDecimal())
            return Decimal128(DEC_CTX.add(self.dec, non_decimal_total(self.ints, self.floats)))
        if self.floats:
            return math.fsum(self.floats + [float(self.ints)]) if self.ints else math.fsum(self.floats)
        s = self.ints
        if abs(s) > INT64_MAX:
            return float(s)
        if self.long or abs(s) > INT32_MAX:
            return Int64(s)
        return s


class Count(Sum):
    """$count: {} (the number of documents; same result types as $sum: 1)."""

    @classmethod
    def parse(cls, arg: Any, compile_expr: Callable) -> dict:
        if not isinstance(arg, dict) or arg:
            raise _fail("$count takes no arguments, i.e. $count:{}", 14)
        return {"input": None}


class Avg(Accumulator):
    """$avg: numbers only, null when there are none; a double (decimal when a decimal was seen)."""

    def __init__(self) -> None:
        self.sum = Sum()
        self.count = 0

    def process(self, v: Any) -> None:
        if is_num(v):
            self.sum.process(v)
            self.count += 1

    def result(self) -> Any:
        if not self.count:
            return None
        s = self.sum.result()
        if isinstance(s, Decimal128):
            return Decimal128(DEC_CTX.divide(s.to_decimal(), Decimal(self.count)))
        return float(s) / self.count


class Min(Accumulator):
    """$min / $max: BSON order, null and missing ignored (null when nothing else was seen)."""

    sense = 1

    def __init__(self) -> None:
        self.best: Any = None
        self.key: bytes | None = None

    def process(self, v: Any) -> None:
        if v is MISSING or v is None:
            return
        k = K.encode(v)
        if self.key is None or (k < self.key if self.sense > 0 else k > self.key):
            self.best, self.key = v, k

    def result(self) -> Any:
        return self.best


class Max(Min):
    sense = -1


class First(Accumulator):
    """$first: the first document's value (missing -> null)."""

    def __init__(self) -> None:
        self.value: Any = MISSING
        self.seen = False

    def process(self, v: Any) -> None:
        if not self.seen:
            self.value, self.seen = v, True

    def result(self) -> Any:
        return None if self.value is MISSING else self.value


class Last(First):
    def process(self, v: Any) -> None:
        self.value, self.seen = v, True


class Push(Accumulator):
    """$push: every present value, in input order."""

    def __init__(self) -> None:
        self.values: list = []

    def process(self, v: Any) -> None:
        if v is not MISSING:
            self.values.append(v)

    def result(self) -> Any:
        return self.values


class AddToSet(Push):
    """$addToSet: distinct present values by BSON value (the server's order is unspecified; first-seen here)."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: set[bytes] = set()

    def process(self, v: Any) -> None:
        if v is MISSING:
            return
        k = K.encode(v)
        if k not in self.seen:
            self.seen.add(k)
            self.values.append(v)


class MergeObjects(Accumulator):
    """$mergeObjects: later fields win; null/missing skipped; other non-objects fail with 40400."""

    def __init__(self) -> None:
        self.out: dict = {}

    def process(self, v: Any) -> None:
        if v is MISSING or v is None:
            return
        if not isinstance(v, dict):
            raise _fail("$mergeObjects requires object inputs, but input %s is of type %s"
                        % (_show(v), type_name(v)), 40400)
        for k, x in v.items():
            self.out[k] = x

    def result(self) -> Any:
        return self.out


class StdDevPop(Accumulator):
    """$stdDevPop / $stdDevSamp: numbers only (as doubles); null without values (sample: fewer than 2)."""

    sample = False

    def __init__(self) -> None:
        self.values: list[float] = []

    def process(self, v: Any) -> None:
        if is_num(v):
            f = to_float(v)
            self.values.append(f)

    def result(self) -> Any:
        n = len(self.values)
        if n == 0 or (self.sample and n < 2):
            return None
        mean = math.fsum(self.values) / n
        ss = math.fsum((x - mean) ** 2 for x in self.values)
        return math.sqrt(ss / (n - 1 if self.sample else n))


class StdDevSamp(StdDevPop):
    sample = True


def _n_args(arg: Any, name: str, compile_expr: Callable, spec_code: int) -> dict:
    if not isinstance(arg, dict):
        raise _fail("specification must be an object; found %s" % _show(arg), spec_code)
    n = inp = MISSING
    for k, v in arg.items():
        if k == "input":
            inp = v
        elif k == "n":
            n = v
        else:
            raise _fail("Unknown argument for 'n' operator: %s" % k, 5787901)
    if n is MISSING:
        raise _fail("Missing value for 'n'", 5787906)
    if inp is MISSING:
        raise _fail("Missing value for 'input'", 5787907)
    return {"input": compile_expr(inp), "n": n}


class FirstN(Accumulator):
    """$firstN / $lastN {input, n}: missing becomes null (accumulator_multi.cpp)."""

    def __init__(self) -> None:
        self.values: list = []

    @classmethod
    def parse(cls, arg: Any, compile_expr: Callable) -> dict:
        return _n_args(arg, "$firstN", compile_expr, 5787801)

    def process(self, v: Any) -> None:
        if len(self.values) < self.n:
            self.values.append(None if v is MISSING else v)

    def result(self) -> Any:
        return self.values


class LastN(FirstN):
    def process(self, v: Any) -> None:
        self.values.append(None if v is MISSING else v)
        if len(self.values) > self.n:
            del self.values[0]


class MinN(Accumulator):
    """$minN / $maxN {input, n}: null and missing skipped; ascending for $minN, descending for $maxN."""

    sense = 1

    def __init__(self) -> None:
        self.items: list[tuple[bytes, int, Any]] = []

    @classmethod
    def parse(cls, arg: Any, compile_expr: Callable) -> dict:
        return _n_args(arg, "$minN", compile_expr, 5787900)

    def process(self, v: Any) -> None:
        if v is MISSING or v is None:
            return
        self.items.append((K.encode(v), len(self.items), v))

    def result(self) -> Any:
        if self.sense > 0:
            ordered = sorted(self.items, key=lambda t: (t[0], t[1]))
        else:
            ordered = sorted(self.items, key=lambda t: (K.invert(t[0]), t[1]))
        return [v for _, _, v in ordered[:self.n]]


class MaxN(MinN):
    sense = -1


def _sort_spec(sort_by: Any) -> list[tuple[list[str], bool]]:
    if not isinstance(sort_by, dict) or not sort_by:
        raise _fail("$sort key specification must be an object" if not isinstance(sort_by, dict)
                    else "$sort stage must have at least one sort key", 15976 if sort_by == {} else 15973)
    out = []
    for f, d in sort_by.items():
        if isinstance(d, dict):
            raise _fail("$meta sort keys are not supported by the embedded engine's %s" % "$top/$bottom", 115)
        if d not in (1, -1) or isinstance(d, bool):
            raise _fail("$sort key ordering must be 1 (for ascending) or -1 (for descending)", 15975)
        out.append((f.split("."), d < 0))
    return out


class TopN(Accumulator):
    """$topN / $bottomN / $top / $bottom {n, sortBy, output}: by the sort order, ties keep the first document
    seen; missing output becomes null; $top/$bottom give one value, the N forms an array."""

    single = False
    bottom = False
    name = "$topN"

    def __init__(self, sort: list) -> None:
        self.sort = sort
        self.items: list[tuple[tuple, int, Any]] = []

    @classmethod
    def parse(cls, arg: Any, compile_expr: Callable) -> dict:
        if not isinstance(arg, dict):
            raise _fail("specification must be an object; found %s" % _show(arg), 5788001)
        n = output = sort_by = MISSING
        for k, v in arg.items():
            if k == "n" and not cls.single:
                n = v
            elif k == "output":
                output = v
            elif k == "sortBy":
                sort_by = v
            else:
                raise _fail("Unknown argument to %s '%s'" % (cls.name, k), 5788002)
        if not cls.single and n is MISSING:
            raise _fail("Missing value for 'n'", 5788003)
        if output is MISSING:
            raise _fail("Missing value for 'output'", 5788004)
        if sort_by is MISSING:
            raise _fail("Missing value for 'sortBy'", 5788005)
        sort = _sort_spec(sort_by)
        out_f = compile_expr(output)

        def value(doc: dict) -> Any:
            try:
                o = out_f(doc)
            except KeyError:
                o = None
            return (K.doc_sort_keys(doc, sort), o)
        opts = {"input": value, "sort": sort}
        if not cls.single:
            opts["n"] = n
        return opts

    def process(self, v: Any) -> None:
        key, out = v
        self.items.append((key, len(self.items), out))

    def result(self) -> Any:
        if self.bottom:
            # the n largest keys, earlier documents winning ties, listed in sort order
            chosen = sorted(self.items, key=lambda t: (t[0], -t[1]))[-self.n:]
            chosen.sort(key=lambda t: (t[0], t[1]))
        else:
            chosen = sorted(self.items, key=lambda t: (t[0], t[1]))[:self.n]
        values = [o for _, _, o in chosen]
        if self.single:
            return values[0] if values else None
        return values


class BottomN(TopN):
    bottom = True
    name = "$bottomN"


class Top(TopN):
    single = True
    name = "$top"


class Bottom(TopN):
    single = True
    bottom = True
    name = "$bottom"


def _check_method(arg: dict, name: str) -> None:
    if "method" not in arg:
        raise _fail("BSON field '%s.method' is missing but a required field" % name, 40414)
    m = arg["method"]
    if not isinstance(m, str):
        raise _fail("BSON field '%s.method' is the wrong type '%s', expected type 'string'"
                    % (name, type_name(m)), 14)
    if m != "approximate":
        raise _fail("Currently only 'approximate' can be used as percentile 'method'.", 2)


def discrete_rank(n: int, p: float) -> int:
    """The server's rank of percentile ``p`` among ``n`` sorted values (percentile_algo_discrete.cpp):
    ``n - 1`` for p >= 1, else max(0, ceil(n*p) - 1)."""
    if p >= 1.0:
        return n - 1
    return max(0, math.ceil(n * p) - 1)


class Percentile(Accumulator):
    """$percentile {input, p, method: 'approximate'}: an array of doubles, one per p (nulls without numeric
    input). For the data sizes of the lessons the server's t-digest holds every value, so its answer is the
    exact rank-based one, which is what is computed here."""

    def __init__(self, ps: list[float]) -> None:
        self.ps = ps
        self.values: list[float] = []

    @classmethod
    def parse(cls, arg: Any, compile_expr: Callable) -> dict:
        if not isinstance(arg, dict):
            raise _fail("specification must be an object; found %s" % _show(arg), 7429703)
        idl_fields(arg, "$percentile", ("input", "p", "method"), ("input", "p"), None)
        _check_method(arg, "$percentile")
        p = arg["p"]
        if isinstance(p, str) and p.startswith("$"):
            raise _fail("The $percentile 'p' field must be an array of constant values, but found value: "
                        "p: \"%s\"." % p, 7750300)
        msg = "The $percentile 'p' field must be an array of numbers from [0.0, 1.0], but found: "
        if not isinstance(p, list) or not p:
            raise _fail(msg + _show(p), 7750301)
        ps = []
        for x in p:
            if not is_num(x):
                raise _fail(msg + _show(x), 7750302)
            f = to_float(x)
            if f < 0 or f > 1:
                raise _fail(msg + _show(f), 7750303)
            ps.append(f)
        return {"input": compile_expr(arg["input"]), "ps": ps}

    def process(self, v: Any) -> None:
        if is_num(v):
            self.values.append(to_float(v))

    def _at(self, p: float, ordered: list[float]) -> Any:
        return ordered[discrete_rank(len(ordered), p)]

    def result(self) -> Any:
        if not self.values:
            return [None] * len(self.ps)
        ordered = sorted(self.values)
        return [self._at(p, ordered) for p in self.ps]


class Median(Percentile):
    """$median {input, method: 'approximate'}: the 0.5 percentile as a double, null without numbers."""

    @classmethod
    def parse(cls, arg: Any, compile_expr: Callable) -> dict:
        if not isinstance(arg, dict):
            raise _fail("specification must be an object; found %s" % _show(arg), 7436100)
        idl_fields(arg, "$median", ("input", "method"), ("input",), None)
        _check_method(arg, "$median")
        return {"input": compile_expr(arg["input"]), "ps": [0.5]}

    def result(self) -> Any:
        return super().result()[0]


class Unsupported(Accumulator):
    """A valid server accumulator the embedded engine does not run ($accumulator needs JavaScript)."""

    @classmethod
    def parse(cls, arg: Any, compile_expr: Callable) -> dict:
        raise _fail("The $accumulator accumulator (server-side JavaScript) is not supported by the embedded "
                    "engine", 115)


ACCUMULATORS.update({
    "$sum": Sum, "$count": Count, "$avg": Avg, "$min": Min, "$max": Max, "$first": First, "$last": Last,
    "$push": Push, "$addToSet": AddToSet, "$mergeObjects": MergeObjects, "$stdDevPop": StdDevPop,
    "$stdDevSamp": StdDevSamp, "$firstN": FirstN, "$lastN": LastN, "$minN": MinN, "$maxN": MaxN,
    "$topN": TopN, "$bottomN": BottomN, "$top": Top, "$bottom": Bottom, "$percentile": Percentile,
    "$median": Median, "$accumulator": Unsupported,
})


# ------------------------------------------------------------------------------------------- grouping
def group_key(v: Any) -> Any:
    """A hashable key equal for BSON-equal values (1, 1.0 and 1L are one group; field order matters)."""
    t = type(v)
    if t is str:
        return (2, v)
    if (t is int or t is float or t is Int64) and v == v:
        return (1, v)
    if t is Decimal128:
        d = v.to_decimal()
        if d.is_finite() and Decimal(float(d)) == d:
            return (1, float(d))
    if v is None or v is MISSING:
        return (0, None)
    if t is bool:
        return (4, v)
    return K.encode(v)


def group(docs: list[dict], spec: dict, compile_expr: Callable) -> list[dict]:
    """``$group`` with any accumulators: one output document per distinct ``_id`` value (in first-seen order),
    fields in the spec's order."""
    if "_id" not in spec:
        raise _fail("a group specification must include an _id", 15955)
    statements = parse_statements(spec, compile_expr, skip=("_id",))
    key_f = compile_expr(spec["_id"])
    groups: dict[Any, tuple[Any, list]] = {}
    for doc in docs:
        kv = key_value(key_f, doc)
        gk = group_key(kv)
        g = groups.get(gk)
        if g is None:
            g = (kv, [s.make(kv) for s in statements])
            groups[gk] = g
        for s, acc in zip(statements, g[1]):
            acc.process(s.value(doc))
    return group_documents(groups.values(), statements)


def key_value(key_f: Callable[[dict], Any], doc: dict) -> Any:
    """The group key's value for ``doc``: null where the key expression finds nothing."""
    try:
        return key_f(doc)
    except KeyError:
        return None


def group_documents(groups: Iterable[tuple[Any, list]], statements: list) -> list[dict]:
    """One output document per ``(key, accumulators)`` group: ``_id`` the key, then each statement's field with
    its accumulator's result, in the spec's order."""
    return [{"_id": key, **{s.field: acc.result() for s, acc in zip(statements, accs)}} for key, accs in groups]
