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

from bson import ObjectId
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from labkit.engine import EmbeddedClient

MISSING = object()
UNDEF = object()  # the sort key of an empty array

OIDS = [ObjectId("5f0000000000000000000001"), ObjectId("5f0000000000000000000002")]
DATES = [datetime.datetime(2020, 1, 1), datetime.datetime(2021, 6, 1)]
SCALARS = [None, True, False, 0, 1, 2, -1, 1.0, 2.5, "a", "b", "", DATES[0], DATES[1], OIDS[0], OIDS[1]]

scalar = st.sampled_from(SCALARS)
subdoc = st.dictionaries(st.sampled_from(["x", "y"]), scalar, max_size=2)
value = st.one_of(
    scalar, scalar, subdoc,
    st.lists(scalar, max_size=3),
    st.lists(subdoc, max_size=3),
    st.lists(st.one_of(scalar, subdoc), max_size=3),
)
# "c" never holds an array: it shares compound indexes with "a" (parallel arrays cannot be indexed)
document = st.fixed_dictionaries({}, optional={"a": value, "b": value, "c": st.one_of(scalar, subdoc)})
documents = st.lists(document, min_size=1, max_size=8)

FIELDS = ["a", "b", "c", "a.x", "b.x", "a.y", "c.x"]


# ------------------------------------------------------------------------------------------- the model
def rank(v):
    if v is MISSING or v is None:
        return 1
    if v is UNDEF:
        return 0
    if isinstance(v, bool):
        return 8
    if isinstance(v, (int, float)):
        return 2
    if isinstance(v, str):
        return 3
    if isinstance(v, dict):
        return 4
    if isinstance(v, list):
        return 5
    if isinstance(v, ObjectId):
        return 7
    if isinstance(v, datetime.datetime):
        return 9
    raise AssertionError(v)


def cmp(a, b) -> int:
    ra, rb = rank(a), rank(b)
    if ra != rb:
        return (ra > rb) - (ra < rb)
    if ra in (0, 1):
        return 0
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
        c = cmp(v, arg)
        return {"$gt": c > 0, "$gte": c >= 0, "$lt": c < 0, "$lte": c <= 0}[op]
    if op == "$in":
        return any(eq(v, x) for x in arg)
    if op == "$exists":
        return v is not MISSING
    if op == "$regex":  # manual "$regex": matches string values only
        return isinstance(v, str) and re.search(arg, v) is not None
    if op == "$mod":  # manual "$mod": numbers, truncated toward zero, remainder with the dividend's sign
        return isinstance(v, (int, float)) and not isinstance(v, bool) and \
            math.fmod(math.trunc(v), arg[0]) == arg[1]
    if op == "$type":
        names = {"null": lambda x: x is None, "bool": lambda x: isinstance(x, bool),
                 "string": lambda x: isinstance(x, str), "array": lambda x: isinstance(x, list),
                 "object": lambda x: isinstance(x, dict), "date": lambda x: isinstance(x, datetime.datetime),
                 "number": lambda x: isinstance(x, (int, float)) and not isinstance(x, bool),
                 "double": lambda x: isinstance(x, float)}
        return v is not MISSING and names[arg](v)
    raise AssertionError(op)


NEGATED = {"$ne": "$eq", "$nin": "$in"}


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
    st.sampled_from(["null", "bool", "string", "array", "object", "date", "number", "double"]).map(
        lambda t: {"$type": t}),
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


SETTINGS = settings(max_examples=70, deadline=None, suppress_health_check=list(HealthCheck))


@SETTINGS
@given(documents, filters)
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
