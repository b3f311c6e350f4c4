"""The engine's speed paths give exactly what the general paths give (issue 19).

* ``count_documents`` planned as a COUNT_SCAN (a filter-free FETCH > IXSCAN on one interval, which the server
  answers reading no document: src/mongo/db/exec/classic/count_scan.cpp; manual "Explain Results", COUNT_SCAN)
  counts the rest of the range from two binary searches (``planner._count_forward``) instead of walking it: the
  count and every stage counter (what explain and the profiler report) must equal a walked run's.
* ``update_many`` / ``update_one`` with an operator update copy only the top-level values the update can reach
  and leave the keys of indexes on other fields alone (``collection._update_reach``): stored documents (field
  order and BSON types), index entries, matched/modified counts, write counters and errors must equal the
  general path's (full deep copy, every index recomputed), and the previous version of a document is never
  changed in place.
"""
from __future__ import annotations

import copy
import datetime
from unittest import mock

import bson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import PyMongoError

from labkit.engine import EmbeddedClient
from labkit.engine.catalog import collection as C
from labkit.engine.query import planner as P
from labkit.engine.query.planner import Query

from store_checks import PROFILE_FIELDS, update_and_profile

# ------------------------------------------------------------------------------------------ counts

count_docs = st.lists(st.fixed_dictionaries({"a": st.integers(0, 9), "b": st.sampled_from(["x", "y", "z"])},
                                            optional={"c": st.one_of(st.integers(0, 3), st.lists(st.integers(0, 3),
                                                                                                max_size=2))}),
                      max_size=60)
ranges = st.fixed_dictionaries({}, optional={"$gte": st.integers(-1, 10), "$lt": st.integers(-1, 11),
                                             "$gt": st.integers(-1, 10), "$lte": st.integers(-1, 10)})
count_filters = st.one_of(
    ranges.map(lambda r: {"a": r}),
    st.tuples(st.sampled_from(["x", "y", "q"]), ranges).map(lambda t: {"b": t[0], "a": t[1]}),
    st.integers(0, 3).map(lambda v: {"c": v}),                          # multikey: distinct records
    st.integers(0, 9).map(lambda v: {"a": v, "c": {"$exists": True}}),  # FETCH with a filter: walked
    st.just({}),
)


def _count_run(coll, flt, hint):
    ex = coll._run(Query(flt, hint=hint, kind="count"))
    return len(ex.results), ex.winner.root.exec_doc(), [c.root.exec_doc() for c in ex.cands if c.root is not None]


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(docs=count_docs, flt=count_filters, desc=st.booleans(), use_hint=st.booleans())
def test_count_forward_equals_walked_scan(docs, flt, desc, use_hint):
    coll = EmbeddedClient().db.c
    if docs:
        coll.insert_many([dict(d) for d in docs])
    coll.create_index([("a", -1 if desc else 1)], name="a")
    coll.create_index([("b", 1), ("a", 1)], name="ba")
    coll.create_index("c", name="c")
    hint = None
    if use_hint:
        hint = "a" if "a" in flt else "c" if "c" in flt else "ba"
    fast = _count_run(coll, flt, hint)
    with mock.patch.object(P, "_count_forward", lambda root, results: False):
        slow = _count_run(coll, flt, hint)
    assert fast == slow
    expected = sum(1 for d in docs if all(_holds(d, k, v) for k, v in flt.items()))
    assert coll.count_documents(flt, **({"hint": hint} if hint else {})) == expected == fast[0]
    # explain reads the same run: the forwarded count explains as the walked one
    cmd = {"count": "c", "query": flt}
    if hint:
        cmd["hint"] = hint
    db = coll.database
    fast_e = db.command("explain", cmd, verbosity="executionStats")["executionStats"]
    with mock.patch.object(P, "_count_forward", lambda root, results: False):
        slow_e = db.command("explain", cmd, verbosity="executionStats")["executionStats"]
    for e in (fast_e, slow_e):
        e.pop("executionTimeMillis", None)
    assert fast_e == slow_e


def _holds(doc, k, v):
    x = doc.get(k)
    if isinstance(v, dict) and any(op.startswith("$") for op in v):
        if "$exists" in v:
            return (k in doc) == v["$exists"]
        if x is None:
            return False
        vals = x if isinstance(x, list) else [x]
        return any(all(_cmp(y, op, b) for op, b in v.items()) for y in vals) if v else True
    return x == v or (isinstance(x, list) and v in x)


def _cmp(a, op, b):
    return {"$gte": a >= b, "$gt": a > b, "$lt": a < b, "$lte": a <= b}[op]


def test_count_forward_is_taken_for_an_indexed_range():
    """The shortcut must actually run for the plain case (else the test above compares a path with itself)."""
    coll = EmbeddedClient().db.c
    coll.insert_many([{"a": i} for i in range(1000)])
    coll.create_index("a")
    calls = []
    real = P._count_forward

    def spy(root, results):
        calls.append(real(root, results))
        return calls[-1]
    with mock.patch.object(P, "_count_forward", spy):
        assert coll.count_documents({"a": {"$gte": 100, "$lt": 110}}) == 10
    assert calls == [True]


# ------------------------------------------------------------------------------------------ updates

leaf = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from([1.5, "p", "q"]))
value = st.one_of(leaf, st.lists(leaf, max_size=3), st.fixed_dictionaries({}, optional={"x": leaf, "y": leaf}))
upd_docs = st.lists(st.fixed_dictionaries({"k": st.integers(0, 2)}, optional={"a": value, "b": value,
                                                                               "d": value}),
                    min_size=1, max_size=12)
PATHS = ["a", "b", "d", "d.x", "d.y", "e", "a.0", "d.x.z"]
OPS = ["$set", "$unset", "$inc", "$mul", "$min", "$max", "$push", "$rename", "$currentDate"]


@st.composite
def updates(draw):
    out: dict = {}
    for _ in range(draw(st.integers(1, 3))):
        op = draw(st.sampled_from(OPS))
        if op == "$rename":
            out.setdefault(op, {})[draw(st.sampled_from(["a", "b", "d"]))] = draw(st.sampled_from(["a", "b", "e"]))
            continue
        path = draw(st.sampled_from(PATHS))
        if op in ("$inc", "$mul"):
            arg = draw(st.sampled_from([1, -2, 0.5]))
        elif op == "$unset":
            arg = ""
        elif op == "$currentDate":
            arg = True
        else:
            arg = draw(st.one_of(leaf, st.fixed_dictionaries({"x": leaf})))
        out.setdefault(op, {})[path] = arg
    return out


def _state(coll):
    st_ = coll._store
    docs = [bson.encode(d) for _, d in sorted(st_.docs.items())]
    ents = {name: list(ix.entries) for name, ix in st_.ix.items()}
    multikey = {name: (ix.multikey, {k: sorted(v) for k, v in ix.multikey_paths.items()}) for name, ix in st_.ix.items()}
    return docs, ents, multikey


def _apply(docs, upd, flt, many):
    client = EmbeddedClient()
    coll = client.db.c
    coll.create_index("k")
    coll.create_index([("d.x", 1), ("k", 1)], name="dx")
    coll.create_index("b", unique=True, partialFilterExpression={"k": {"$gte": 2}}, name="b_partial")
    coll.create_index("e", sparse=True)
    try:
        coll.insert_many([dict(d, _id=i) for i, d in enumerate(docs)], ordered=False)
    except PyMongoError:
        pass
    held = dict(coll._store.docs)
    before = copy.deepcopy(held)
    out, prof = update_and_profile(client.db, coll, flt, upd, many, PROFILE_FIELDS[:-1])
    for rid, d in held.items():  # the previous versions were not changed in place
        assert bson.encode(d) == bson.encode(before[rid])
    return out, prof, _state(coll)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(docs=upd_docs, upd=updates(), k=st.one_of(st.none(), st.integers(0, 2)), many=st.booleans())
def test_copy_on_write_update_equals_general_path(docs, upd, k, many):
    flt = {} if k is None else {"k": k}
    # both runs read one fixed clock for $currentDate: with the real clock, two dates written in one run may
    # fall in one millisecond and collide in the unique index on "b" while the other run's do not
    from labkit.engine.update import update_ops
    with mock.patch.object(update_ops, "_now", lambda: datetime.datetime(2026, 11, 20, 12, 0)):
        fast = _apply(docs, upd, flt, many)
        with mock.patch.object(C, "_update_reach", lambda compiled: (None, False)):
            slow = _apply(docs, upd, flt, many)
    assert fast == slow


def test_update_reach():
    from labkit.engine.update import update_ops as U
    from labkit.engine.matcher.match import fast_matcher

    def reach(u):
        return C._update_reach(U.Update(u, None, fast_matcher))
    assert reach({"$inc": {"likes": 1}, "$set": {"s.t": "x"}}) == (frozenset({"likes", "s"}), True)
    assert reach({"$rename": {"a": "b.c"}}) == (frozenset({"a", "b"}), False)
    assert reach({"$set": {"a": {"deep": 1}}}) == (frozenset({"a"}), False)
    assert reach({"$push": {"a": 1}}) == (frozenset({"a"}), False)
    assert reach({"$set": {"a.$": 1}}) == (None, False)  # positional: the general path
    assert C._update_reach(None) == (None, False)


def test_untouched_index_keys_are_not_recomputed():
    coll = EmbeddedClient().db.c
    coll.create_index("authorId")
    coll.insert_many([{"_id": i, "authorId": "u%d" % (i % 3), "likes": i} for i in range(50)])
    calls = []
    ix = coll._store.ix["authorId_1"]
    real = ix.keys_for
    with mock.patch.object(ix, "keys_for", lambda doc: calls.append(1) or real(doc)):
        r = coll.update_many({}, {"$inc": {"likes": 1}})
        assert (r.matched_count, r.modified_count) == (50, 50)
        assert calls == []
        coll.update_many({"_id": {"$lt": 5}}, {"$set": {"authorId": "u9"}})
        assert len(calls) == 10  # old and new keys of 5 documents
    assert coll.count_documents({"authorId": "u9"}) == 5
    assert [d["likes"] for d in coll.find({}, {"likes": 1}).sort("_id", 1).limit(3)] == [1, 2, 3]


# ------------------------------------------------------------------------------------------ $lookup join condition

expr_values = st.one_of(st.none(), st.booleans(), st.integers(-2, 2), st.sampled_from([1.0, 0.0, 2.5, "u1", "u2", ""]),
                        st.lists(st.sampled_from([1, "u1"]), max_size=2), st.just({"x": 1}),
                        st.sampled_from([bson.Int64(1), bson.Decimal128("1")]))


@settings(max_examples=300, deadline=None)
@given(x=st.one_of(st.just("missing"), expr_values), const=st.sampled_from([1, 0, 2, "u1", "", True, 1.0]),
       literal=st.booleans(), swap=st.booleans())
def test_expr_field_eq_shortcut_equals_the_evaluator(x, const, literal, swap):
    """``$expr: {$eq: ["$f", c]}`` answers as the general evaluator for every stored value type (manual
    "$eq (aggregation)": BSON comparison order, numbers compared by value, arrays not traversed)."""
    from labkit.engine.pipeline.expression import match_expr as ME
    b = {"$literal": const} if literal else const
    expr = {"$eq": [b, "$f"] if swap else ["$f", b]}
    doc = {} if x == "missing" else {"f": x}
    fast = ME.compile_expr_predicate(expr, None, None)
    with mock.patch.object(ME, "_field_eq_const", lambda e, slow: slow):
        slow = ME.compile_expr_predicate(expr, None, None)
    assert fast(doc) == slow(doc)


def test_lookup_sub_pipeline_top_k():
    """``$lookup`` with ``let`` + ``$match: {$expr: {$eq}}`` + ``$sort`` + ``$limit`` returns each user's newest
    posts, as a sort of every match would (manual "$lookup": correlated subqueries)."""
    db = EmbeddedClient().db
    db.users.insert_many([{"_id": "u%d" % i} for i in range(5)])
    db.posts.insert_many([{"_id": i, "a": "u%d" % (i % 5), "t": (i * 37) % 101} for i in range(200)])
    db.posts.create_index("a")
    pipe = [{"$lookup": {"from": "posts", "let": {"u": "$_id"},
                         "pipeline": [{"$match": {"$expr": {"$eq": ["$a", "$$u"]}}}, {"$sort": {"t": -1}},
                                      {"$limit": 3}], "as": "top"}}]
    got = {d["_id"]: [p["_id"] for p in d["top"]] for d in db.users.aggregate(pipe)}
    posts = [{"_id": i, "a": "u%d" % (i % 5), "t": (i * 37) % 101} for i in range(200)]
    want = {u: [p["_id"] for p in sorted((p for p in posts if p["a"] == u), key=lambda p: (-p["t"], p["_id"]))[:3]]
            for u in got}
    assert got == want
