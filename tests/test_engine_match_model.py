"""Property test: the engine against a small, independent reference model of MongoDB's query rules.

The model below is written from the manual's rules, not from the engine's code and not from mongomock:
  * "Comparison/Sort Order": MinKey < null < numbers < string < object < array < BinData < ObjectId < bool
    < date < ... ; comparison operators only match values of the same type ("type bracketing").
  * "Query an Array" / "Query on Embedded Documents": a path into an array of documents looks into each
    document; a document without the field counts as missing; at the end of a path an array matches through
    any element or as a whole; ``$size`` / ``$elemMatch`` look at the array itself.
  * "Query for Null or Missing Fields": ``null`` matches null and missing; ``$ne``, ``$nin``, ``$not`` and
    ``$exists: false`` are the complements of the positive predicates over the whole document.
  * "$all", "$type", "$elemMatch": conjunction of equalities, BSON type names, one element satisfies all.
  * Numbers (manual "Comparison/Sort Order", jstests/core/query/decimal/*, nan.js): int, long, double and
    Decimal128 compare by exact value (Decimal 0.1 is not the double 0.1); NaN equals NaN (double or decimal),
    sorts below every number and satisfies no $gt/$lt (only $gte/$lte/$eq against NaN).
  * Stored regexes match ``$regex`` with the same pattern and flags (expression_leaf.cpp RegexMatchExpression);
    MinKey/MaxKey sort below/above everything; arrays of arrays are elements, not traversed (path.cpp).
  * Bit tests (jstests/core/query/bittest.js): integral numbers representable in 64 bits (two's complement,
    sign-extended past bit 63), BinData bytes little-endian; non-integral doubles and NaN never match.
  * Sort (jstests/core/query/sort/sort_dotted_paths.js): ascending sorts by the smallest candidate value,
    descending by the largest; arrays give their elements, an empty array "undefined" (below null), a
    subdocument of an array without the field and a missing field give null.
Checked: the same documents through every hinted index and through ``$natural`` (plan independence), the
model's answer, sorts, and index consistency after update_many / delete_many.
"""
from __future__ import annotations

import datetime
import functools
import math
import re

from decimal import Decimal

from bson import Binary, Decimal128, Int64, ObjectId, Regex
from bson.max_key import MaxKey
from bson.min_key import MinKey
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from labkit.engine import EmbeddedClient

MISSING = object()
UNDEF = object()  # the sort key of an empty array

OIDS = [ObjectId("5f0000000000000000000001"), ObjectId("5f0000000000000000000002")]
DATES = [datetime.datetime(2020, 1, 1), datetime.datetime(2021, 6, 1)]
SCALARS = [None, True, False, 0, 1, 2, -1, 1.0, 2.5, "a", "b", "", DATES[0], DATES[1], OIDS[0], OIDS[1],
           Decimal128("1"), Decimal128("2.5"), Decimal128("0.1"), 0.1, Int64(2), Int64(-5), float("nan"),
           Decimal128("NaN"), 6, 5.0]
# values only stored (queries with them have other rules: regex matching, MinKey/MaxKey across types)
STORED_ONLY = [Regex("^a"), Regex("^a", "i"), MinKey(), MaxKey(), Binary(b"\x05"), Binary(b"\x02\x01")]

scalar = st.sampled_from(SCALARS)
stored_scalar = st.one_of(scalar, scalar, scalar, st.sampled_from(STORED_ONLY))
subdoc = st.dictionaries(st.sampled_from(["x", "y"]), stored_scalar, max_size=2)
value = st.one_of(
    stored_scalar, stored_scalar, subdoc,
    st.lists(stored_scalar, max_size=3),
    st.lists(subdoc, max_size=3),
    st.lists(st.one_of(stored_scalar, subdoc), max_size=3),
    st.lists(st.lists(stored_scalar, max_size=2), max_size=2),  # arrays of arrays
    st.lists(st.dictionaries(st.sampled_from(["x", "y"]), st.lists(stored_scalar, max_size=2), max_size=1),
             max_size=2),  # documents holding arrays inside an array
)
# "c" never holds an array: it shares compound indexes with "a" (parallel arrays cannot be indexed)
document = st.fixed_dictionaries({}, optional={"a": value, "b": value, "c": st.one_of(stored_scalar, subdoc)})
documents = st.lists(document, min_size=1, max_size=8)

FIELDS = ["a", "b", "c", "a.x", "b.x", "a.y", "c.x"]


# ------------------------------------------------------------------------------------------- the model
# the model's own BSON order of the types it generates (checked in this order: bool before the numbers)
_RANKS = ((MinKey, -1), (MaxKey, 99), (bool, 8), ((int, float, Decimal128), 2), (Regex, 11), (bytes, 6), (str, 3),
          (dict, 4), (list, 5), (ObjectId, 7), (datetime.datetime, 9))


def rank(v):
    if v is MISSING or v is None:
        return 1
    if v is UNDEF:
        return 0
    for types, r in _RANKS:
        if isinstance(v, types):
            return r
    raise AssertionError(v)


def cmp(a, b) -> int:
    ra, rb = rank(a), rank(b)
    if ra != rb:
        return (ra > rb) - (ra < rb)
    if ra in (-1, 0, 1, 99):
        return 0
    if ra == 2:
        x, y = num(a), num(b)
        if x != x or y != y:  # NaN: equal to NaN, below every other number
            return (y != y) - (x != x)
        return (x > y) - (x < y)
    if ra == 6:  # BinData: length, subtype, then bytes
        return cmp_tuple((len(a), getattr(a, "subtype", 0), bytes(a)), (len(b), getattr(b, "subtype", 0), bytes(b)))
    if ra == 11:
        return cmp_tuple((a.pattern, a.flags), (b.pattern, b.flags))
    if ra == 4:
        for (ka, va), (kb, vb) in zip(a.items(), b.items()):
            c = (rank(va) > rank(vb)) - (rank(va) < rank(vb)) or (ka > kb) - (ka < kb) or cmp(va, vb)
            if c:
                return c
        return (len(a) > len(b)) - (len(a) < len(b))
    if ra == 5:
        for x, y in zip(a, b):
            c = cmp(x, y)
            if c:
                return c
        return (len(a) > len(b)) - (len(a) < len(b))
    if ra == 7:
        a, b = str(a), str(b)
    return (a > b) - (a < b)


def num(v):
    """A number as an exact value: Decimal128 as a Decimal (Python compares Decimal and float exactly)."""
    if isinstance(v, Decimal128):
        return v.to_decimal()
    return v


def is_nan(v) -> bool:
    return isinstance(v, (float, Decimal128)) and num(v) != num(v)


def cmp_tuple(a, b) -> int:
    return (a > b) - (a < b)


def elements(doc, path: str, whole_array_only: bool = False) -> list:
    """What a path yields: leaf arrays as their elements and then as a whole (or only as a whole)."""
    out: list = []

    def walk(cur, parts):
        if not parts:
            if isinstance(cur, list) and not whole_array_only:
                out.extend(cur)
            out.append(cur)
        elif isinstance(cur, dict):
            if parts[0] in cur:
                walk(cur[parts[0]], parts[1:])
            else:
                out.append(MISSING)
        elif isinstance(cur, list):  # an array on the way: look into each of its documents
            for e in cur:
                if isinstance(e, dict):
                    walk(e, parts)
        else:
            out.append(MISSING)
    walk(doc, path.split("."))
    return out


def eq(v, q) -> bool:
    if q is None:
        return v is None or v is MISSING
    return v is not MISSING and rank(v) == rank(q) and cmp(v, q) == 0


def op_holds(op: str, arg, v) -> bool:
    if op == "$eq":
        return eq(v, arg)
    if op == "$ne":
        return not eq(v, arg)
    if op in ("$gt", "$gte", "$lt", "$lte"):
        if arg is None:
            return op in ("$gte", "$lte") and (v is None or v is MISSING)
        if v is MISSING or rank(v) != rank(arg):
            return False
        if is_nan(v) or is_nan(arg):  # NaN satisfies only $gte/$lte NaN
            return op in ("$gte", "$lte") and is_nan(v) and is_nan(arg)
        c = cmp(v, arg)
        return {"$gt": c > 0, "$gte": c >= 0, "$lt": c < 0, "$lte": c <= 0}[op]
    if op == "$in":
        return any(eq(v, x) for x in arg)
    if op == "$exists":
        return v is not MISSING
    if op == "$regex":  # manual "$regex": strings; a stored regex matches the same pattern and flags
        if isinstance(v, Regex):
            return v.pattern == arg and not v.flags
        return isinstance(v, str) and re.search(arg, v) is not None
    if op == "$mod":  # manual "$mod": numbers, truncated toward zero, remainder with the dividend's sign
        if not isinstance(v, (int, float, Decimal128)) or isinstance(v, bool) or is_nan(v):
            return False
        q = int(num(v))  # truncation toward zero
        return math.copysign(abs(q) % arg[0], q) == arg[1] if q else arg[1] == 0
    if op in BIT_OPS:
        return bits_hold(op, arg, v)
    if op == "$type":
        names = {"null": lambda x: x is None, "bool": lambda x: isinstance(x, bool),
                 "string": lambda x: isinstance(x, str), "array": lambda x: isinstance(x, list),
                 "object": lambda x: isinstance(x, dict), "date": lambda x: isinstance(x, datetime.datetime),
                 "number": lambda x: isinstance(x, (int, float, Decimal128)) and not isinstance(x, bool),
                 "double": lambda x: isinstance(x, float), "decimal": lambda x: isinstance(x, Decimal128),
                 "long": lambda x: isinstance(x, Int64), "regex": lambda x: isinstance(x, Regex),
                 "int": lambda x: type(x) is int and -2 ** 31 <= x < 2 ** 31,
                 "minKey": lambda x: isinstance(x, MinKey), "binData": lambda x: isinstance(x, bytes)}
        return v is not MISSING and names[arg](v)
    raise AssertionError(op)


NEGATED = {"$ne": "$eq", "$nin": "$in"}
BIT_OPS = ("$bitsAllSet", "$bitsAnySet", "$bitsAllClear", "$bitsAnyClear")


def bits_hold(op: str, positions: list, v) -> bool:
    if isinstance(v, bytes):
        data = bytes(v)
        bits = [p < len(data) * 8 and bool(data[p // 8] >> (p % 8) & 1) for p in positions]
    else:
        if not isinstance(v, (int, float, Decimal128)) or isinstance(v, bool) or isinstance(v, float) and v != v:
            return False
        x = num(v)
        if isinstance(x, Decimal):  # bsonelement.h numberLong(): Decimal128::toLong (ties to even); invalid
            x = int(x.to_integral_value(rounding="ROUND_HALF_EVEN")) if x.is_finite() else -2 ** 63
            x = x if -2 ** 63 <= x < 2 ** 63 else -2 ** 63  # values give LLONG_MIN
        elif isinstance(x, float):
            if x != int(x) or not -2 ** 63 <= x < 2 ** 63:
                return False
            x = int(x)
        bits = [bool(x >> min(p, 63) & 1) for p in positions]  # sign-extended past bit 63
    want = op in ("$bitsAllSet", "$bitsAnySet")
    hits = [b == want for b in bits]
    return all(hits) if "All" in op else any(hits)



def path_matches(doc, path: str, cond) -> bool:
    if isinstance(cond, dict) and cond and next(iter(cond)).startswith("$"):
        return all(one_op(doc, path, op, arg) for op, arg in cond.items())
    return any(eq(v, cond) for v in elements(doc, path))


def one_op(doc, path, op, arg) -> bool:
    if op in NEGATED:
        return not one_op(doc, path, NEGATED[op], arg)
    if op == "$not":
        return not path_matches(doc, path, arg)
    if op == "$exists" and not arg:
        return not one_op(doc, path, "$exists", True)
    if op == "$size":
        return any(isinstance(v, list) and len(v) == arg for v in elements(doc, path, True))
    if op == "$all":
        return bool(arg) and all(any(eq(v, x) for v in elements(doc, path)) for x in arg)
    if op == "$elemMatch":
        arrays = [v for v in elements(doc, path, True) if isinstance(v, list)]
        if next(iter(arg)).startswith("$"):
            return any(all(op_holds(o, a, e) for o, a in arg.items()) for arr in arrays for e in arr)
        return any(model_match(e, arg) for arr in arrays for e in arr if isinstance(e, dict))
    return any(op_holds(op, arg, v) for v in elements(doc, path))


def model_match(doc, f: dict) -> bool:
    for k, v in f.items():
        if k == "$and":
            ok = all(model_match(doc, x) for x in v)
        elif k == "$or":
            ok = any(model_match(doc, x) for x in v)
        elif k == "$nor":
            ok = not any(model_match(doc, x) for x in v)
        else:
            ok = path_matches(doc, k, v)
        if not ok:
            return False
    return True


def sort_candidates(doc, path: str) -> list:
    out: list = []

    def walk(cur, parts):
        if not parts:
            if isinstance(cur, list):
                out.extend(cur if cur else [UNDEF])
            else:
                out.append(cur)
            return
        if isinstance(cur, dict):
            if parts[0] in cur:
                walk(cur[parts[0]], parts[1:])
            else:
                out.append(None)
        elif isinstance(cur, list):
            if not cur:
                out.append(None)
            for e in cur:
                walk(e, parts) if isinstance(e, dict) else out.append(None)
        else:
            out.append(None)
    walk(doc, path.split("."))
    return out


def model_sorted(docs: list[dict], path: str, direction: int) -> list:
    def key_cmp(d1, d2):
        k1 = sort_candidates(d1, path)
        k2 = sort_candidates(d2, path)
        pick = (lambda ks: functools.reduce(lambda m, x: x if cmp(x, m) < 0 else m, ks)) if direction > 0 else \
            (lambda ks: functools.reduce(lambda m, x: x if cmp(x, m) > 0 else m, ks))
        c = cmp(pick(k1), pick(k2)) * direction
        return c or (d1["_id"] > d2["_id"]) - (d1["_id"] < d2["_id"])
    return [d["_id"] for d in sorted(docs, key=functools.cmp_to_key(key_cmp))]


# ------------------------------------------------------------------------------------------- filters
leaf_value = st.sampled_from(SCALARS + [[1, 2], {"x": 1}, [], {}])
comparison = st.tuples(st.sampled_from(["$eq", "$ne", "$gt", "$gte", "$lt", "$lte"]), scalar)
operator = st.one_of(
    comparison.map(lambda t: {t[0]: t[1]}),
    st.lists(scalar, max_size=3).map(lambda xs: {"$in": xs}),
    st.lists(scalar, max_size=3).map(lambda xs: {"$nin": xs}),
    st.booleans().map(lambda b: {"$exists": b}),
    st.sampled_from(["null", "bool", "string", "array", "object", "date", "number", "double", "decimal", "long",
                     "int", "regex", "minKey", "binData"]).map(lambda t: {"$type": t}),
    st.tuples(st.sampled_from(BIT_OPS), st.lists(st.sampled_from([0, 1, 2, 3, 8, 63, 70]), min_size=1, max_size=2)
              ).map(lambda t: {t[0]: t[1]}),
    st.integers(0, 2).map(lambda n: {"$size": n}),
    st.lists(scalar, max_size=2).map(lambda xs: {"$all": xs}),
    st.tuples(comparison, comparison).map(lambda t: {"$elemMatch": {t[0][0]: t[0][1], t[1][0]: t[1][1]}}
                                          if t[0][0] != t[1][0] else {"$elemMatch": {t[0][0]: t[0][1]}}),
    st.tuples(st.sampled_from(["x", "y"]), scalar).map(lambda t: {"$elemMatch": {t[0]: t[1]}}),
    comparison.map(lambda t: {"$not": {t[0]: t[1]}}),
    st.sampled_from(["^a", "b", "^$", "a|b"]).map(lambda r: {"$regex": r}),
    st.sampled_from(["^a", "b"]).map(lambda r: {"$not": {"$regex": r}}),
    st.tuples(st.sampled_from([2, 3]), st.sampled_from([0, 1, -1])).map(lambda t: {"$mod": [t[0], t[1]]}),
    st.tuples(comparison, comparison).map(lambda t: {t[0][0]: t[0][1], t[1][0]: t[1][1]}
                                          if t[0][0] != t[1][0] else {t[0][0]: t[0][1]}),
)
clause = st.tuples(st.sampled_from(FIELDS), st.one_of(leaf_value, operator)).map(lambda t: {t[0]: t[1]})
filters = st.recursive(
    st.lists(clause, min_size=1, max_size=2).map(lambda cs: {k: v for c in cs for k, v in c.items()}),
    lambda sub: st.tuples(st.sampled_from(["$and", "$or", "$nor"]), st.lists(sub, min_size=1, max_size=2)).map(
        lambda t: {t[0]: t[1]}),
    max_leaves=4,
)

INDEXES = [[("a", 1)], [("b", -1)], [("a.x", 1)], [("a", 1), ("c", 1)], [("c.x", 1), ("a", -1)]]


def _collection(docs: list[dict]):
    c = EmbeddedClient().model.c
    for spec in INDEXES:
        c.create_index(spec)
    c.create_index([("b", 1)], sparse=True, name="b_sparse")
    c.insert_many([dict(d, _id=i) for i, d in enumerate(docs)])
    return c


def _check_plans(c, f: dict, expected: set) -> None:
    natural = {d["_id"] for d in c.find(f).hint([("$natural", 1)])}
    assert natural == expected, ("$natural", f, natural, expected)
    assert {d["_id"] for d in c.find(f)} == expected, ("planner", f)
    for spec in INDEXES:
        got = {d["_id"] for d in c.find(f).hint(spec)}
        assert got == expected, (spec, f, got, expected)
    assert c.count_documents(f) == len(expected)


SETTINGS = settings(max_examples=int(__import__("os").environ.get("MODEL_EXAMPLES", 70)), deadline=None, suppress_health_check=list(HealthCheck))


@SETTINGS
@given(documents, filters)
@example([{"a": Decimal128("0.1")}, {"a": 0.1}, {"a": Decimal128("NaN")}], {"a": 0.1})
@example([{"a": Regex("^a")}, {"a": "ab"}, {"a": [[1, 2]]}, {"a": [1, 2]}], {"a": {"$regex": "^a"}})
@example([{"a": Binary(b"\x05")}, {"a": 5}, {"a": 5.5}, {"a": -1}], {"a": {"$bitsAllSet": [0, 2]}})
@example([{"a": {"x": Decimal128("2.5")}}, {"a": Decimal128("NaN")}, {"a": Decimal128("3.5")}], {"a.x": {"$bitsAllSet": [1]}})
@example([{"a": Decimal128("NaN")}, {"a": Decimal128("3.5")}, {"a": float("nan")}], {"a": {"$bitsAllSet": [63]}})
@example([{"c": 1}, {"c": True}, {"c": 1.0}], {"c": True})
@example([{"a": 4}, {"a": [{"x": 1}, {}]}, {"a": [1, 2]}, {}], {"a.x": None})
@example([{"a": [1, 2]}, {"a": [2, 3]}, {}], {"a": {"$ne": 1}})
@example([{"b": 1}, {}, {"b": 5}], {"b": {"$nin": [5]}})
@example([{"a": [[2]]}, {"a": [2]}], {"a": {"$elemMatch": {"$gt": 1, "$lt": 3}}})
def test_find_matches_the_model_through_every_plan(docs, f):
    c = _collection(docs)
    stored = list(c.find().hint([("$natural", 1)]))
    expected = {d["_id"] for d in stored if model_match(d, f)}
    _check_plans(c, f, expected)


NUMBERS = [0, 1, -1, 2 ** 53, 2 ** 53 + 1, Int64(2 ** 63 - 1), Int64(-2 ** 63), 0.1, -0.0, 1.5, 2.0 ** 63,
           float("inf"), float("-inf"), float("nan"), 5e-324, Decimal128("0.1"), Decimal128("-0.1"),
           Decimal128("1.5"), Decimal128("1.50"), Decimal128("9007199254740993"), Decimal128("9007199254740992.5"),
           Decimal128("1E-6176"), Decimal128("-0"), Decimal128("NaN"), Decimal128("Infinity"), Decimal128("1E400"),
           Decimal128("0.1000000000000000055511151231257827")]
number = st.sampled_from(NUMBERS)
number_filter = st.one_of(
    number, st.tuples(st.sampled_from(["$eq", "$ne", "$gt", "$gte", "$lt", "$lte"]), number).map(
        lambda t: {t[0]: t[1]}),
    st.tuples(number, number).map(lambda t: {"$gt": t[0], "$lte": t[1]}),
    st.lists(number, max_size=3).map(lambda xs: {"$in": xs}),
)


@settings(max_examples=int(__import__("os").environ.get("MODEL_EXAMPLES", 60)), deadline=None,
          suppress_health_check=list(HealthCheck))
@given(st.lists(st.one_of(number, st.lists(number, max_size=2)), min_size=1, max_size=8), number_filter,
       st.sampled_from([1, -1]))
@example([Decimal128("0.1"), 0.1, 2 ** 53 + 1, Decimal128("9007199254740993")], 0.1, 1)
@example([0], {"$gt": Decimal128("NaN")}, 1)
@example([Decimal128("Infinity"), Decimal128("1")], {"$in": [float("inf"), 1]}, 1)
def test_numbers_compare_exactly_through_every_plan(values, f, direction):
    # manual "Comparison/Sort Order" (numbers by exact value across types); index keys must keep that order
    # (key_string.cpp), or an index bound drops or adds documents the collection scan does not
    c = _collection([{"a": v} for v in values])
    stored = list(c.find().hint([("$natural", 1)]))
    _check_plans(c, {"a": f}, {d["_id"] for d in stored if model_match(d, {"a": f})})
    want = model_sorted(stored, "a", direction)
    assert [d["_id"] for d in c.find().sort([("a", direction), ("_id", 1)]).hint([("a", 1)])] == want
    assert [d["_id"] for d in c.find().sort([("a", direction), ("_id", 1)])] == want


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(documents, st.sampled_from(FIELDS), st.sampled_from([1, -1]))
@example([{"a": [1, {"x": 5}]}, {"a": {"x": 3}}], "a.x", 1)
@example([{"a": [{"y": 1}, {"x": 5}]}, {"a": {"x": 3}}], "a.x", 1)
@example([{"a": []}, {"a": None}, {}, {"a": [[]]}], "a", 1)
def test_sort_matches_the_model(docs, path, direction):
    c = _collection(docs)
    stored = list(c.find().hint([("$natural", 1)]))
    want = model_sorted(stored, path, direction)
    assert [d["_id"] for d in c.find().sort([(path, direction), ("_id", 1)])] == want
    assert [d["_id"] for d in c.aggregate([{"$sort": {path: direction, "_id": 1}}])] == want


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(documents, filters, st.sampled_from(["a", "b"]), value, filters, filters)
@example([{}], {"a": None}, "a", Decimal128("NaN"), {"a": None}, {"a": {"$lt": 0}})
def test_indexes_stay_consistent_after_writes(docs, upd_filter, field, new_value, del_filter, probe):
    c = _collection(docs)
    model = {d["_id"]: d for d in c.find().hint([("$natural", 1)])}
    res = c.update_many(upd_filter, {"$set": {field: new_value}})
    hit = [i for i, d in model.items() if model_match(d, upd_filter)]
    assert res.matched_count == len(hit)
    for i in hit:
        model[i] = dict(model[i], **{field: new_value})
    res = c.delete_many(del_filter)
    gone = [i for i, d in model.items() if model_match(d, del_filter)]
    assert res.deleted_count == len(gone)
    for i in gone:
        del model[i]
    stored = {d["_id"]: d for d in c.find().hint([("$natural", 1)])}
    assert stored == model
    _check_plans(c, {}, set(model))
    _check_plans(c, probe, {i for i, d in model.items() if model_match(d, probe)})


# ------------------------------------------------------------------------------------------- projections
# Inclusion and exclusion of (dotted) paths (manual "Project Fields to Return from Query";
# jstests/core/query/project/projection_semantics.js): an inclusion keeps the document's own field order,
# goes into every subdocument of an array (and into arrays inside arrays), drops scalars met on the way and
# keeps an empty subdocument where the field is missing; an exclusion removes the field wherever the path
# reaches and leaves everything else (scalars on the way included) alone; _id is kept unless excluded.
PROJ_PATHS = ["a", "b", "c", "a.x", "a.y", "b.x", "c.x"]


def _include(v, parts: list[list[str]]):
    if isinstance(v, list):
        return [_include(e, parts) for e in v if isinstance(e, (list, dict))]
    if not isinstance(v, dict):
        return MISSING
    out = {}
    for k, x in v.items():
        subs = [p[1:] for p in parts if p[0] == k]
        if not subs:
            continue
        if any(not s for s in subs):
            out[k] = x
            continue
        y = _include(x, subs)
        if y is not MISSING:
            out[k] = y
    return out


def _exclude(v, parts: list[list[str]]):
    if isinstance(v, list):
        return [_exclude(e, parts) for e in v]
    if not isinstance(v, dict):
        return v
    out = {}
    for k, x in v.items():
        subs = [p[1:] for p in parts if p[0] == k]
        if any(not s for s in subs):
            continue
        out[k] = _exclude(x, subs) if subs else x
    return out


def model_project(doc: dict, proj: dict) -> dict:
    paths = [p.split(".") for p, v in proj.items() if p != "_id"]
    keep_id = proj.get("_id", 1)
    inclusion = any(v for p, v in proj.items() if p != "_id") or (not paths and keep_id)  # {_id: 1} includes
    if inclusion:
        out = _include(doc, paths + ([["_id"]] if keep_id else []))
    else:
        out = _exclude(doc, paths + ([] if keep_id else [["_id"]]))
    return out


@st.composite
def projections(draw):
    chosen: list[str] = []
    for p in draw(st.lists(st.sampled_from(PROJ_PATHS), max_size=3, unique=True)):
        if not any(p == q or p.startswith(q + ".") or q.startswith(p + ".") for q in chosen):
            chosen.append(p)
    flag = draw(st.sampled_from([0, 1]))
    proj = {p: flag for p in chosen}
    if draw(st.booleans()):
        proj["_id"] = draw(st.sampled_from([0, 1]))
    if not proj:
        proj = {"_id": 1}
    return proj


@settings(max_examples=int(__import__("os").environ.get("MODEL_EXAMPLES", 80)), deadline=None,
          suppress_health_check=list(HealthCheck))
@given(documents, projections())
@example([{"a": 5}, {"a": [1, {"x": 2}, [{"x": 3, "y": 1}, 4]]}, {"a": {"y": 1}}], {"a.x": 1})
@example([{"a": 5}, {"a": [1, {"x": 2}, [{"x": 3, "y": 1}, 4]]}, {"a": {"y": 1}}], {"a.x": 0})
def test_projection_matches_the_model(docs, proj):
    c = _collection(docs)
    stored = list(c.find().hint([("$natural", 1)]))
    want = [model_project(d, proj) for d in stored]
    assert list(c.find({}, proj).hint([("$natural", 1)])) == want, proj
    assert sorted(map(repr, c.find({}, proj).hint([("a", 1)]))) == sorted(map(repr, want)), proj  # index order
    assert [d for d in c.aggregate([{"$project": proj}])] == want, proj
    for got, w in zip(c.find({}, proj).hint([("$natural", 1)]), want):
        assert list(got) == list(w)  # field order
