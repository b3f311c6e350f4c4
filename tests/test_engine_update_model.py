"""Property test: the engine's updater against a small, independent reference model of the field operators.

The model below is written from the manual's operator pages and the rules tested in
tests/test_engine_update_rules.py (BSON comparison order for $min/$max, numeric type promotion for
$inc/$mul, new fields appended in path order, PathNotViable 28 through scalars, conflicting paths 40, the error
codes of each operator), for one- and two-component paths. It shares no code with labkit/engine/update/update_ops.py.
Random documents and random update documents go through ``update_one``; the stored document (field order and
BSON types included), ``modified_count`` and the error code must be the model's, and every index must stay
consistent with the documents.
"""
from __future__ import annotations

import copy

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import WriteError

from labkit.engine import EmbeddedClient

from store_checks import consistent

FIELDS = ["a", "b", "c"]
PATHS = ["a", "b", "c", "d.x", "d.y"]
OPS = ["$set", "$unset", "$inc", "$mul", "$min", "$max", "$push", "$addToSet", "$pop", "$pullAll", "$rename"]

scalars = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from([1.5, -2.0, 0.5]),
                    st.sampled_from(["p", "q", ""]))
values = st.one_of(scalars, st.lists(scalars, max_size=3), st.fixed_dictionaries({"x": st.integers(0, 2)}))
numbers = st.one_of(st.integers(-3, 3), st.sampled_from([1.5, -0.5]))

documents = st.fixed_dictionaries({}, optional={"a": values, "b": values, "c": values,
                                                "d": st.one_of(scalars, st.lists(scalars, max_size=2),
                                                               st.fixed_dictionaries({}, optional={"x": values,
                                                                                                   "y": values}))})


def op_arg(op: str):
    if op in ("$inc", "$mul"):
        return numbers
    if op in ("$set", "$min", "$max", "$push", "$addToSet"):
        return scalars
    if op == "$pop":
        return st.sampled_from([1, -1])
    if op == "$pullAll":
        return st.lists(scalars, max_size=2)
    if op == "$unset":
        return st.just("")
    return st.sampled_from(FIELDS + ["e"])  # $rename target


@st.composite
def updates(draw):
    out: dict = {}
    for _ in range(draw(st.integers(1, 3))):
        op = draw(st.sampled_from(OPS))
        path = draw(st.sampled_from(FIELDS if op == "$rename" else PATHS))
        out.setdefault(op, {})[path] = draw(op_arg(op))
    return out


# ----------------------------------------------------------------------------------------- the model
class Fail(Exception):
    def __init__(self, code: int) -> None:
        self.code = code


def rank(v) -> int:
    """BSON comparison order of the types used here (manual "Comparison/Sort Order")."""
    if v is None:
        return 1
    if isinstance(v, bool):
        return 8
    if isinstance(v, (int, float)):
        return 2
    if isinstance(v, str):
        return 3
    if isinstance(v, dict):
        return 4
    return 5


def less(x, y) -> bool:
    if rank(x) != rank(y):
        return rank(x) < rank(y)
    return x < y if rank(x) in (2, 3, 8) else False


def equal(x, y) -> bool:
    if rank(x) != rank(y):
        return False
    if isinstance(x, list):
        return len(x) == len(y) and all(equal(p, q) for p, q in zip(x, y))
    if isinstance(x, dict):
        return list(x) == list(y) and all(equal(x[k], y[k]) for k in x)
    return x == y


def is_num(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


CREATES = {"$set", "$inc", "$mul", "$min", "$max", "$push", "$addToSet"}


def model(doc: dict, update: dict) -> dict:
    flat = []
    for op, spec in update.items():
        for path, arg in spec.items():
            flat.append((op, path, arg))
    seen: list[list[str]] = []
    for op, path, arg in flat:
        if op == "$rename" and arg == path:
            raise Fail(2)
        for p in [path] + ([arg] if op == "$rename" else []):
            parts = p.split(".")
            for q in seen:
                n = min(len(q), len(parts))
                if q[:n] == parts[:n]:
                    raise Fail(40)
            seen.append(parts)
    out = copy.deepcopy(doc)
    jobs = []
    for op, path, arg in flat:
        if op == "$rename":
            jobs.append((path, "$rename-from", arg))
            jobs.append((arg, "$rename-to", path))
        else:
            jobs.append((path, op, arg))
    moved = {}
    for path, op, arg in jobs:
        if op == "$rename-from" and path in out:
            moved[path] = out[path]
    for path, op, arg in sorted(jobs, key=lambda j: j[0].split(".")):
        parts = path.split(".")
        parent = out
        if len(parts) == 2:
            d = out.get("d", KeyError)
            creates = op in CREATES or (op == "$rename-to" and arg in moved)
            if d is KeyError:
                if not creates:
                    continue
                d = out["d"] = {}
            elif not isinstance(d, dict):
                if creates or op in ("$pop", "$pullAll"):
                    raise Fail(28)
                continue
            parent = d
        key = parts[-1]
        have = key in parent
        cur = parent.get(key)
        if op == "$set":
            if not (have and equal(cur, arg) and type(cur) is type(arg)):
                parent[key] = arg
        elif op == "$unset" or op == "$rename-from":
            parent.pop(key, None)
        elif op == "$rename-to":
            if arg in moved:
                parent[key] = moved[arg]
        elif op in ("$inc", "$mul"):
            if not have:
                parent[key] = arg if op == "$inc" else (0.0 if isinstance(arg, float) else 0)
            elif not is_num(cur):
                raise Fail(14)
            else:
                parent[key] = cur + arg if op == "$inc" else cur * arg
        elif op in ("$min", "$max"):
            if not have or (less(arg, cur) if op == "$min" else less(cur, arg)):
                parent[key] = arg
        elif op in ("$push", "$addToSet"):
            if not have:
                parent[key] = [arg]
            elif not isinstance(cur, list):
                raise Fail(2)
            elif op == "$push" or not any(equal(arg, e) or (is_num(arg) and is_num(e) and arg == e) for e in cur):
                cur.append(arg)
        elif op == "$pop":
            if have:
                if not isinstance(cur, list):
                    raise Fail(14)
                if cur:
                    cur.pop() if arg == 1 else cur.pop(0)
        elif op == "$pullAll":
            if have:
                if not isinstance(cur, list):
                    raise Fail(2)
                cur[:] = [e for e in cur if not any(equal(e, v) or (is_num(e) and is_num(v) and e == v)
                                                    for v in arg)]
    return out


def same(a, b) -> bool:
    """Equal with the same BSON types and field order."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents, updates())
def test_updater_matches_the_reference_model(doc, update):
    c = EmbeddedClient().m.c
    c.create_index("a")
    c.create_index("d.x")
    stored = {"_id": 1, **copy.deepcopy(doc)}
    c.insert_one(copy.deepcopy(stored))
    try:
        expected = model(stored, update)
        code = None
    except Fail as f:
        expected, code = stored, f.code
    try:
        res = c.update_one({"_id": 1}, update)
        got_code = None
    except WriteError as e:
        res, got_code = None, e.code
    after = c.find_one({"_id": 1})
    assert got_code == code, (update, got_code, code)
    assert same(after, expected), (update, after, expected)
    if res is not None:
        assert res.modified_count == (0 if same(expected, stored) else 1)
    consistent(c)


# ----------------------------------------------------------------------------------------- no bare exceptions
odd_values = st.one_of(values, st.sampled_from([{"$a": 1}, [[1], [2]], {"$each": [1]}, {"$gt": 1}, {"x": {"y": 2}},
                                                {"$each": 1}, {"$type": "date"}, {"and": 1}]))
odd_paths = st.sampled_from(PATHS + ["a.0", "a.$", "a.$[]", "a.$[i]", "a.$[].x", "_id", "", "a..b", "$x", "a.$x"])


@st.composite
def odd_updates(draw):
    out: dict = {}
    for _ in range(draw(st.integers(1, 3))):
        op = draw(st.sampled_from(OPS + ["$setOnInsert", "$currentDate", "$pull", "$bit", "$foo"]))
        out.setdefault(op, {})[draw(odd_paths)] = draw(st.one_of(odd_values, odd_paths))
    return out


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents, odd_updates(), st.sampled_from([{}, {"a": 1}, {"a.x": 1}, {"a": {"$elemMatch": {"x": 2}}}]),
       st.sampled_from([None, [{"i": 1}], [{"i.x": 2}]]), st.booleans())
def test_odd_updates_raise_only_server_errors(doc, update, query, array_filters, upsert):
    # issue 13: "nothing raises a bare Python exception to a learner": any update either works or fails with
    # a pymongo error carrying a server code; a failed update changes nothing.
    from pymongo.errors import PyMongoError
    c = EmbeddedClient().m.c
    c.create_index("a")
    c.insert_one({"_id": 1, **copy.deepcopy(doc)})
    before = c.find_one()
    try:
        c.update_one(query, update, array_filters=array_filters, upsert=upsert)
    except PyMongoError as e:
        assert isinstance(getattr(e, "code", None), int), e
        assert same(c.find_one({"_id": 1}), before)
        assert c.count_documents({}) == 1
    consistent(c)


# ------------------------------------------------------------------------------ array and positional paths
# The model of the array paths (manual "$[]", "$[<identifier>]", "$ (update)"; jstests/core/write/update/
# update_arrayFilters.js, positional_update*.js): "$[]" reaches every element of the array, "$[e]" the elements
# whose value (or subdocument, for "e.x" filters) satisfies the array filter, "$" the first element the query's
# array clause matched; a missing array is error 2 ("must exist"), a scalar in its place error 2 (array updates
# on a non-array), a field created through a scalar element error 28; an array filter compares like a query.
ELEM_NUMS = st.integers(-2, 3)
num_array = st.lists(ELEM_NUMS, max_size=4)
sub_array = st.lists(st.fixed_dictionaries({}, optional={"x": ELEM_NUMS, "y": ELEM_NUMS,
                                                         "b": st.lists(ELEM_NUMS, max_size=3)}), max_size=4)
ARRAY_OPS = ["$set", "$inc", "$min", "$max", "$unset", "$mul"]


@st.composite
def array_cases(draw):
    """(document, query, update, array_filters) with one or two array paths on distinct leaves."""
    kind = draw(st.sampled_from(["nums", "subs", "missing", "scalar"]))
    doc = {"_id": 1}
    if kind == "nums":
        doc["a"] = draw(num_array)
    elif kind == "subs":
        doc["a"] = draw(sub_array)
    elif kind == "scalar":
        doc["a"] = draw(ELEM_NUMS)
    k = draw(ELEM_NUMS)
    form = draw(st.sampled_from(["all", "filter", "positional", "nested"]))
    leaves = draw(st.sampled_from([[""], [".x"], [".y"], [".x", ".y"]])) if kind != "nums" else [""]
    if form == "nested":
        leaves = [".b.$[f]"]
    query: dict = {}
    filters: list = []
    if form == "all":
        head = "a.$[]"
    elif form == "positional":
        head = "a.$"
        query = {"a": k} if kind != "subs" else {"a.x": k}
    else:
        head = "a.$[e]"
        ecmp = draw(st.sampled_from(["$gt", "$gte", "$lt", "$eq", "$ne"]))
        filters.append({"e": {ecmp: k}} if kind != "subs" else {"e.x": {ecmp: k}})
        if form == "nested":
            filters.append({"f": {"$gte": draw(ELEM_NUMS)}})
    update: dict = {}
    for leaf in leaves:
        op = draw(st.sampled_from(ARRAY_OPS))
        update.setdefault(op, {})[head + leaf] = "" if op == "$unset" else draw(ELEM_NUMS)
    return doc, query, update, filters or None


def _filter_holds(f: dict, elem) -> bool:
    (path, cond), = f.items()
    (op, arg), = cond.items()
    if "." in path:  # e.x: the element's subdocument field (a missing x is null: only $ne holds)
        if not isinstance(elem, dict) or "x" not in elem:
            return op == "$ne"
        elem = elem["x"]
    elif not is_num(elem):
        return op == "$ne"
    return {"$gt": elem > arg, "$gte": elem >= arg, "$lt": elem < arg, "$eq": elem == arg,
            "$ne": elem != arg}[op]


def _apply_leaf(container, key, op: str, arg):
    """One field operator on container[key] (a list index or a document field); returns nothing, raises Fail."""
    if isinstance(container, list):
        have, cur = True, container[key]
    else:
        have, cur = key in container, container.get(key)
    if op == "$unset":
        if isinstance(container, list):
            container[key] = None
        else:
            container.pop(key, None)
        return
    if op == "$set":
        new = arg
    elif op in ("$inc", "$mul"):
        if not have:
            new = arg if op == "$inc" else 0
        elif not is_num(cur):
            raise Fail(14)
        else:
            new = cur + arg if op == "$inc" else cur * arg
    else:  # $min / $max
        if have and not (less(arg, cur) if op == "$min" else less(cur, arg)):
            return
        new = arg
    container[key] = new


def array_model(doc: dict, query: dict, update: dict, filters):
    """The document after the update, None when the query matches nothing, or raises Fail(code)."""
    out = copy.deepcopy(doc)
    a = out.get("a", KeyError)
    pos = None
    if query:
        (qpath, qval), = query.items()
        if not isinstance(a, list):
            if qpath == "a" and a == qval and is_num(a):
                raise Fail(2)  # matched, but not through an array: positional finds no match
            return None
        for i, e in enumerate(a):
            v = e.get("x", KeyError) if qpath == "a.x" and isinstance(e, dict) else (e if qpath == "a" else KeyError)
            if v is not KeyError and is_num(v) and v == qval:
                pos = i
                break
        if pos is None:
            return None
    for op, spec in update.items():
        for path, arg in spec.items():
            parts = path.split(".")
            if a is KeyError:
                raise Fail(2)  # "The path 'a' must exist in the document in order to apply array updates."
            if not isinstance(a, list):
                raise Fail(2)
            if parts[1] == "$":
                targets = [pos]
            elif parts[1] == "$[]":
                targets = list(range(len(a)))
            else:
                targets = [i for i, e in enumerate(doc["a"]) if _filter_holds(filters[0], e)]  # before any change
            for i in targets:
                rest = parts[2:]
                if not rest:
                    _apply_leaf(a, i, op, arg)
                    continue
                elem = a[i]
                nested = rest[0] == "b" and len(rest) == 2  # a.$[e].b.$[f]
                if not isinstance(elem, dict):
                    if nested:
                        raise Fail(2)  # the array b must exist, whatever the operator
                    if op == "$unset":
                        continue
                    raise Fail(28)
                if nested:
                    b = elem.get("b", KeyError)
                    if b is KeyError or not isinstance(b, list):
                        raise Fail(2)
                    for j, be in enumerate(doc["a"][i]["b"]):
                        if _filter_holds({"e": filters[1]["f"]}, be):
                            _apply_leaf(b, j, op, arg)
                    continue
                _apply_leaf(elem, rest[0], op, arg)
    return out


@settings(max_examples=int(__import__("os").environ.get("MODEL_EXAMPLES", 150)), deadline=None,
          suppress_health_check=list(HealthCheck))
@given(array_cases())
def test_array_and_positional_updates_match_the_model(case):
    doc, query, update, filters = case
    c = EmbeddedClient().m.c
    c.create_index("a")
    c.create_index("a.x")
    c.insert_one(copy.deepcopy(doc))
    try:
        expected, code = array_model(doc, query, update, filters), None
    except Fail as f:
        expected, code = doc, f.code
    try:
        res = c.update_one({"_id": 1, **query}, update, array_filters=filters)
        got_code = None
    except WriteError as e:
        res, got_code = None, e.code
    after = c.find_one({"_id": 1})
    assert got_code == code, (doc, query, update, filters, got_code, code)
    if expected is None:  # the query matched nothing
        assert res.matched_count == 0 and same(after, doc)
    else:
        assert same(after, expected), (doc, query, update, filters, after, expected)
        if res is not None:
            assert res.modified_count == (0 if same(expected, doc) else 1)
    consistent(c)
