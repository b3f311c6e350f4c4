"""Fidelity fixes of the embedded engine, each reproducing a MongoDB manual example or jstest.

Sources are quoted per test: the MongoDB manual (https://www.mongodb.com/docs/manual/...), mongodb/mongo
jstests and planner sources, and MongoDB Jira tickets where the server's behaviour is a known, documented
quirk the engine must mirror.
"""
from __future__ import annotations

import pytest
from pymongo.errors import OperationFailure

from labkit.engine import EmbeddedClient


from plan_helpers import find_stage, stages  # noqa: E402


def winning(explain: dict) -> dict:
    return explain["queryPlanner"]["winningPlan"]


@pytest.fixture()
def db():
    return EmbeddedClient().fidelity


@pytest.fixture()
def catalog(db):
    c = db.catalog
    c.insert_many([{"_id": i, "type": ["article", "video", "tool"][i % 3], "stars": i} for i in range(300)])
    c.create_index({"stars": -1}, name="tools", partialFilterExpression={"type": "tool"})
    return c


# ----------------------------------------------------------------------------- 1. partial index implication

def test_partial_index_provides_sort_when_query_implies_filter(catalog):
    """Manual "Partial Indexes" > Query Coverage: "To use the partial index, a query must contain the filter
    expression ... as part of its query condition"; query_planner.cpp adds a sort-providing whole-index scan
    of a partial index when ``expression::isSubsetOf(query, filterExpr)`` (unit test
    PartialIndexProvidingSort in query_planner_partialidx_test.cpp: fetch with filter {f: 1} over an
    unbounded ixscan)."""
    cur = catalog.find({"type": "tool"}).sort("stars", -1).limit(5)
    e = cur.explain()
    assert stages(winning(e)) == ["LIMIT", "FETCH", "IXSCAN"]
    ix = find_stage(winning(e), "IXSCAN")
    assert ix["indexName"] == "tools" and ix["isPartial"] is True
    assert find_stage(winning(e), "FETCH")["filter"] == {"type": "tool"}
    assert e["executionStats"]["totalKeysExamined"] == 5
    assert e["executionStats"]["totalDocsExamined"] == 5
    assert [d["_id"] for d in catalog.find({"type": "tool"}).sort("stars", -1).limit(5)] == [299, 296, 293,
                                                                                              290, 287]
    # not implied: the partial index must not provide the sort
    e = catalog.find({"type": "video"}).sort("stars", -1).limit(5).explain()
    assert stages(winning(e)) == ["SORT", "COLLSCAN"]


def test_index_partial_read_ops_basic():
    """mongodb/mongo jstests/core/index/index_partial_read_ops.js testBasicPartialFilterExpression:
    {x:1} with partialFilterExpression {a: {$lte: 1.5}}; {x:6,a:1}, {x:{$gt:1},a:1}, {x:6,a:{$lte:1}} use
    the index; {x:6,a:{$lt:1.6}} and {x:6} do not; likewise for count and aggregate $match."""
    db = EmbeddedClient().partial_read_ops
    coll = db.index_partial_read_ops
    coll.create_index({"x": 1}, partialFilterExpression={"a": {"$lte": 1.5}})
    coll.insert_one({"x": 5, "a": 2})
    coll.insert_one({"x": 6, "a": 1})
    for q in ({"x": 6, "a": 1}, {"x": {"$gt": 1}, "a": 1}, {"x": 6, "a": {"$lte": 1}}):
        e = coll.find(q).explain()
        assert e["executionStats"]["nReturned"] == 1
        assert find_stage(winning(e), "IXSCAN") is not None, q
    for q in ({"x": 6, "a": {"$lt": 1.6}}, {"x": 6}):
        e = coll.find(q).explain()
        assert e["executionStats"]["nReturned"] == 1
        assert stages(winning(e)) == ["COLLSCAN"], q
    e = db.command("explain", {"count": "index_partial_read_ops", "query": {"x": {"$gt": 1}, "a": 1}})
    assert find_stage(winning(e), "IXSCAN") is not None
    e = db.command("explain", {"count": "index_partial_read_ops", "query": {"x": {"$gt": 1}, "a": 2}})
    assert find_stage(winning(e), "IXSCAN") is None
    e = db.command("explain", {"aggregate": "index_partial_read_ops",
                               "pipeline": [{"$match": {"x": {"$gt": 1}, "a": 1}}], "cursor": {}})
    assert find_stage(winning(e), "IXSCAN") is not None
    e = db.command("explain", {"aggregate": "index_partial_read_ops",
                               "pipeline": [{"$match": {"x": {"$gt": 1}, "a": 2}}], "cursor": {}})
    assert find_stage(winning(e), "IXSCAN") is None


def test_index_partial_read_ops_overlapping_indexes():
    """index_partial_read_ops.js: three partial indexes on {a: 1} (a >= 0, a >= 10, a >= 100); a query
    gets one plan per index whose filter it implies (rejectedPlans 0, 1, 2, 0) and a query outside every
    filter is a COLLSCAN; results equal a $natural scan."""
    coll = EmbeddedClient().partial_read_ops.overlap
    coll.create_index({"a": 1}, name="index1", partialFilterExpression={"a": {"$gte": 0}})
    coll.create_index({"a": 1}, name="index2", partialFilterExpression={"a": {"$gte": 10}})
    coll.create_index({"a": 1}, name="index3", partialFilterExpression={"a": {"$gte": 100}})
    coll.insert_many([{"a": v} for v in (1, 2, 3, 11, 12, 13, 101, 102, 103)])
    for q, rejected, expect in (({"a": {"$gt": 0, "$lt": 10}}, 0, [1, 2, 3]),
                                ({"a": {"$gt": 10, "$lt": 100}}, 1, [11, 12, 13]),
                                ({"a": {"$gt": 100, "$lt": 1000}}, 2, [101, 102, 103]),
                                ({"a": {"$gt": 0}}, 0, [1, 2, 3, 11, 12, 13, 101, 102, 103])):
        e = coll.find(q).explain()
        assert find_stage(winning(e), "IXSCAN") is not None
        assert len(e["queryPlanner"]["rejectedPlans"]) == rejected, q
        got = sorted(d["a"] for d in coll.find(q))
        assert got == expect == sorted(d["a"] for d in coll.find(q).hint({"$natural": 1}))
    assert stages(winning(coll.find({"a": {"$lt": 0}}).explain())) == ["COLLSCAN"]


def test_index_partial_read_ops_in_and_or_filters():
    """index_partial_read_ops.js testFilterWithInExpression ({a: {$in: [3, 5]}}: {x:2,a:3} and
    {x:{$gt:1},a:5} use it, {x:3,a:{$lt:6}} and {x:2} do not) and testFilterWithMultiLevelAndOrExpressions
    ({$or: [{a: 3}, {$and: [{a: 5}, {b: 5}]}]}: {x:4,a:3} and {x:5,a:5,b:5} use it; {x:1,a:1}, {x:2,a:5},
    {x:3,a:5,b:1} do not)."""
    db = EmbeddedClient().partial_read_ops
    coll = db.in_filter
    coll.create_index({"x": 1}, partialFilterExpression={"a": {"$in": [3, 5]}})
    coll.insert_many([{"x": 1, "a": 4}, {"x": 2, "a": 3}, {"x": 3, "a": 5}])
    for q, uses in (({"x": 2, "a": 3}, True), ({"x": {"$gt": 1}, "a": 5}, True),
                    ({"x": 3, "a": {"$lt": 6}}, False), ({"x": 2}, False)):
        e = coll.find(q).explain()
        assert e["executionStats"]["nReturned"] == 1
        assert (stages(winning(e)) != ["COLLSCAN"]) is uses, q
    coll = db.or_filter
    coll.create_index({"x": 1}, partialFilterExpression={"$or": [{"a": 3}, {"$and": [{"a": 5}, {"b": 5}]}]})
    coll.insert_many([{"x": 1, "a": 1}, {"x": 2, "a": 5}, {"x": 3, "a": 5, "b": 1}, {"x": 4, "a": 3},
                      {"x": 5, "a": 5, "b": 5}])
    for q, uses in (({"x": 4, "a": 3}, True), ({"x": 5, "a": 5, "b": 5}, True), ({"x": 1, "a": 1}, False),
                    ({"x": 2, "a": 5}, False), ({"x": 3, "a": 5, "b": 1}, False)):
        e = coll.find(q).explain()
        assert e["executionStats"]["nReturned"] == 1
        assert (stages(winning(e)) != ["COLLSCAN"]) is uses, q


def test_partial_index_manual_query_coverage_examples(db):
    """Manual "Partial Indexes" > Query Coverage: index {cuisine: 1} with {rating: {$gt: 5}} serves
    {cuisine: "Italian", rating: {$gte: 8}} but not {rating: {$lt: 8}} nor {cuisine: "Italian"} alone;
    "Partial Index with Unique Constraint"-style $exists filter ({name: 1} with {email: {$exists: true}}):
    {name: "xyz", email: {$regex: /\\.org$/}} can use it, {name: "xyz", email: {$exists: false}} cannot."""
    r = db.restaurants
    r.create_index({"cuisine": 1}, partialFilterExpression={"rating": {"$gt": 5}})
    r.insert_many([{"cuisine": "Italian", "rating": v} for v in (3, 6, 9)])
    assert find_stage(winning(r.find({"cuisine": "Italian", "rating": {"$gte": 8}}).explain()), "IXSCAN")
    assert stages(winning(r.find({"cuisine": "Italian", "rating": {"$lt": 8}}).explain())) == ["COLLSCAN"]
    assert stages(winning(r.find({"cuisine": "Italian"}).explain())) == ["COLLSCAN"]
    assert len(list(r.find({"cuisine": "Italian"}))) == 3
    c = db.contacts
    c.create_index({"name": 1}, partialFilterExpression={"email": {"$exists": True}})
    c.insert_many([{"name": "xyz", "email": "a@b.org"}, {"name": "xyz"}])
    import re
    e = c.find({"name": "xyz", "email": {"$regex": re.compile(r"\.org$")}}).explain()
    assert find_stage(winning(e), "IXSCAN") and e["executionStats"]["nReturned"] == 1
    e = c.find({"name": "xyz", "email": {"$exists": False}}).explain()
    assert stages(winning(e)) == ["COLLSCAN"] and e["executionStats"]["nReturned"] == 1


def test_subset_rules_of_expression_algo():
    """mongodb/mongo src/mongo/db/matcher/expression_algo.cpp ``isSubsetOf`` (lhs = query, rhs = filter):
    {x: 4} ⊆ {x: {$lte: 5}}, {x: {$gte: 6}} ⊄ {x: 7}; comparisons need the same canonical type; $exists:
    true is implied by non-null comparisons, $type, $ne: null, but not by {x: null}; array equality does not
    imply an element equality."""
    from labkit.engine.matcher.subset import implies
    assert implies({"x": 4}, {"x": {"$lte": 5}})
    assert not implies({"x": {"$gte": 6}}, {"x": 7})
    assert implies({"x": {"$gt": 5, "$lt": 7}}, {"x": {"$gte": 5}})
    assert not implies({"x": {"$lte": 5}}, {"x": {"$lt": 5}})
    assert implies({"x": {"$lt": 5}}, {"x": {"$lte": 5}})
    assert not implies({"x": "5"}, {"x": {"$lte": 5}})
    assert implies({"x": {"$in": [1, 2]}}, {"x": {"$gt": 0}})
    assert not implies({"x": {"$in": [0, 2]}}, {"x": {"$gt": 0}})
    assert implies({"x": 1, "y": 2}, {"$and": [{"x": 1}, {"y": {"$gte": 2}}]})
    assert implies({"$or": [{"x": 1}, {"x": 2}]}, {"x": {"$in": [1, 2, 3]}})
    for q in ({"x": 1}, {"x": {"$type": "string"}}, {"x": {"$ne": None}}, {"x": {"$exists": True}},
              {"x": {"$gt": 3}}, {"x": {"$in": [1, 2]}}):
        assert implies(q, {"x": {"$exists": True}}), q
    for q in ({"x": None}, {"x": {"$in": [1, None]}}, {"x": {"$exists": False}}, {"y": 1}, {"x": {"$ne": 1}}):
        assert not implies(q, {"x": {"$exists": True}}), q
    assert not implies({"tags": ["a", "b"]}, {"tags": "a"})
    assert implies({"a.b": 2}, {"a.b": {"$gt": 0}})
    assert not implies({"a": {"$elemMatch": {"b": 1}}}, {"a.b": {"$gt": 0}})  # PartialIndexElemMatchObj


# ------------------------------------------------------------------------- 2. hinting partial / sparse indexes

def test_hinting_incompatible_partial_index_scans_it_whole(catalog):
    """The 8.0 planner does not reject a hinted partial index whose filter the query does not imply: the
    predicate assignments are stripped and "we scan the entire index" (query_planner.cpp, hinted-index
    branch), so only indexed documents come back. This is the known server behaviour of SERVER-26413
    ("Hinting an incompatible partial index can return incomplete results", unresolved); the engine mirrors
    it rather than inventing an error the server does not raise."""
    cur = catalog.find({"type": "article"}).sort("stars", -1).limit(5).hint("tools")
    assert list(cur) == []
    e = catalog.find({"type": "article"}).sort("stars", -1).limit(5).hint("tools").explain()
    ix = find_stage(winning(e), "IXSCAN")
    assert ix["indexName"] == "tools" and ix["indexBounds"] == {"stars": ["[MaxKey, MinKey]"]}
    assert find_stage(winning(e), "FETCH")["filter"] == {"type": "article"}
    # SERVER-26413's reproducer: {x: 100} hinted onto {x: 1} partial on {y: {$exists: true}} -> nothing
    c = catalog.database.col
    c.insert_one({"x": 100})
    c.create_index({"x": 1}, partialFilterExpression={"y": {"$exists": True}})
    assert len(list(c.find({"x": 100}))) == 1
    assert list(c.find({"x": 100}).hint({"x": 1})) == []
    # a hint that names no index is still BadValue (code 2)
    with pytest.raises(OperationFailure) as ei:
        list(catalog.find({"type": "tool"}).hint("no_such_index"))
    assert ei.value.code == 2 and "hint provided does not correspond to an existing index" in str(ei.value)


def test_hinting_compatible_partial_index_uses_bounds(catalog):
    """index_partial_read_ops.js (3.2 version): ``find({x: 6, a: 1}).hint({x: 1})`` on the partial index
    returns the document; a compatible hinted partial index gets real bounds."""
    e = catalog.find({"type": "tool", "stars": {"$gte": 290}}).hint("tools").explain()
    ix = find_stage(winning(e), "IXSCAN")
    assert ix["indexBounds"] == {"stars": ["[inf.0, 290]"]}
    assert e["executionStats"]["nReturned"] == 4


def test_hinted_sparse_index_returns_incomplete_results(db):
    """Manual "Sparse Indexes" > "Sparse Index On A Collection Cannot Return Complete Results": with a
    sparse index on score, ``find().sort({score: -1})`` returns all three documents (the index is not used),
    while ``find().sort({score: -1}).hint({score: 1})`` "returns only those documents that contain the score
    field". SERVER-18449 (unresolved) keeps that behaviour."""
    s = db.scores
    s.insert_many([{"_id": 1, "userid": "newbie"}, {"_id": 2, "userid": "abby", "score": 82},
                   {"_id": 3, "userid": "nina", "score": 90}])
    s.create_index({"score": 1}, sparse=True)
    assert [d["_id"] for d in s.find().sort("score", -1)] == [3, 2, 1]
    assert stages(winning(s.find().sort("score", -1).explain())) == ["SORT", "COLLSCAN"]
    assert [d["_id"] for d in s.find().sort("score", -1).hint({"score": 1})] == [3, 2]
    # the manual's {x: {$exists: false}} example: not used unless hinted, and then nothing is found
    assert [d["_id"] for d in s.find({"score": {"$exists": False}})] == [1]
    assert list(s.find({"score": {"$exists": False}}).hint({"score": 1})) == []


# ------------------------------------------------------------------------------- 3. array literals in expressions

def test_project_new_array_fields_manual_example(db):
    """Manual $project > "Project New Array Fields": for {x: 1, y: 1}, ``{$project: {myArray: ["$x", "$y"]}}``
    gives [1, 1] and ``["$x", "$y", "$someField"]`` gives [1, 1, null] (a missing field becomes null)."""
    c = db.collection
    c.insert_one({"_id": 1, "x": 1, "y": 1})
    assert list(c.aggregate([{"$project": {"myArray": ["$x", "$y"]}}])) == [{"_id": 1, "myArray": [1, 1]}]
    assert list(c.aggregate([{"$project": {"myArray": ["$x", "$y", "$someField"]}}])) == [
        {"_id": 1, "myArray": [1, 1, None]}]


def test_array_literals_evaluated_in_add_fields_set_group_and_operators(db):
    """Array literals are expressions wherever an expression is allowed (manual "Expressions" > "Expression
    Objects"/literals: only ``$literal`` keeps "$x" as text): $project/$addFields/$set, $group keys and
    accumulators, nested objects, and one-argument operators written in array form
    (``{ $not: [ <expression> ] }`` per the $not manual page)."""
    c = db.arrays
    c.insert_one({"_id": 1, "x": 2, "arr": [1, 3], "s": "AbC", "f": False})
    out = list(c.aggregate([{"$project": {"_id": 0, "a": ["$x", {"$min": "$arr"}], "o": {"k": ["$s"]},
                                          "lit": {"$literal": ["$x"]}}}]))
    assert out == [{"a": [2, 1], "o": {"k": ["AbC"]}, "lit": ["$x"]}]
    assert list(c.aggregate([{"$addFields": {"a": ["$x", {"$min": "$arr"}]}}, {"$project": {"_id": 0, "a": 1}}])
                ) == [{"a": [2, 1]}]
    out = list(c.aggregate([{"$set": {"a": ["$x"]}},
                            {"$project": {"_id": 0, "a": 1, "n": {"$not": ["$f"]}, "l": {"$toLower": ["$s"]},
                                          "sz": {"$size": ["$arr"]}, "in": {"$in": ["$x", ["$x", 5]]}}}]))
    assert out == [{"a": [2], "n": True, "l": "abc", "sz": 2, "in": True}]
    # an accumulator's argument written as an array is refused (40237, "is a unary operator": source
    # accumulation_statement.cpp); the array goes inside an expression object instead
    out = list(c.aggregate([{"$group": {"_id": ["$x", "$s"], "p": {"$push": {"$concatArrays": [["$x", "$nope"]]}}}}]))
    assert out == [{"_id": [2, "AbC"], "p": [[2, None]]}]
    assert [d["_id"] for d in c.find({"$expr": {"$in": ["$x", ["$x"]]}})] == [1]


# ------------------------------------------------------------------------- 5. batched insert speed-ups keep results

def _old_double(f: float) -> bytes:
    import struct
    if f == 0:
        f = 0.0
    (u,) = struct.unpack(">Q", struct.pack(">d", f))
    u = u ^ 0xFFFFFFFFFFFFFFFF if u >> 63 else u | 0x8000000000000000
    return u.to_bytes(8, "big")


def test_fast_encodings_equal_the_reference_encoding():
    """The exact-type fast paths of keys.encode give the bytes of the reference algorithm (IEEE-754 sign
    flip for doubles, integer tie-break suffix beyond 2**53, milliseconds since the epoch for dates)."""
    import datetime
    import random
    from labkit.engine.bson import keys as K
    rnd = random.Random(5)
    for _ in range(3000):
        f = rnd.uniform(-1e300, 1e300) * rnd.choice([1, 1e-300, 1e-9])
        assert K.encode(f) == b"\x1e\x01" + _old_double(f) + b"\x02"
        i = rnd.randint(-2**53, 2**53)
        assert K.encode(i) == b"\x1e\x01" + _old_double(float(i)) + b"\x02"
        assert K.encode(i) == K._enc_number(i)
        big = rnd.choice([1, -1]) * rnd.randint(2**53 + 1, 2**70)
        assert K.encode(big) == K._enc_number(big)
        d = datetime.datetime(1, 1, 1) + datetime.timedelta(microseconds=rnd.randint(0, 315537897599999999))
        ms = int((d - datetime.datetime(1970, 1, 1)) / datetime.timedelta(milliseconds=1))
        assert K.encode(d) == b"\x78" + (ms + (1 << 63)).to_bytes(8, "big")
    assert K.encode(-0.0) == K.encode(0.0) == K.encode(0)
    assert K.encode(float("nan")) == b"\x1e\x00"
    assert K.encode("a\x00b") == b"\x3ca\x00\xffb\x00"


def test_index_fast_keys_and_bulk_merge_match_the_general_path():
    """Index keys from the specialised per-index key functions equal the general key generator's, and
    batched inserts (sorted merge) leave every index equal to a sorted rebuild."""
    import random
    from labkit.engine import EmbeddedClient as _C
    from labkit.engine.index.indexes import Index, IndexSpec
    rnd = random.Random(11)

    def value():
        return rnd.choice([None, rnd.randint(-5, 5), rnd.random(), "s%d" % rnd.randint(0, 9), "é\x00",
                           [rnd.randint(0, 3), "x"], [], {"k": rnd.randint(0, 2)}, True])

    docs = []
    for i in range(1500):
        d = {"_id": i}
        for f in ("a", "b", "c"):
            if rnd.random() < 0.8:
                d[f] = value()
        docs.append(d)
    specs = [[("a", 1)], [("a", -1)], [("a", 1), ("b", -1)], [("b", 1), ("c", 1)], [("a", 1), ("b", 1), ("c", -1)]]
    for key in specs:
        for sparse in (False, True):
            fast = Index(IndexSpec("f", key, sparse=sparse))
            slow = Index(IndexSpec("s", key, sparse=sparse))
            slow._fast = lambda doc: None  # forces the general key generator
            for d in docs:
                try:
                    expect = slow.keys_for(d)
                except Exception as e:  # parallel arrays
                    with pytest.raises(type(e)):
                        fast.keys_for(d)
                    continue
                assert fast.keys_for(d) == expect, (key, d)
    db = _C().bulk
    c = db.c
    c.create_index([("a", 1)])
    c.create_index([("b", -1), ("a", 1)])
    c.create_index([("c", 1)], sparse=True)
    ok = [d for d in docs if not (isinstance(d.get("a"), list) and isinstance(d.get("b"), list))]
    for i in range(0, len(ok), 100):
        c.insert_many([dict(d) for d in ok[i:i + 100]])
    c.insert_one({"_id": "last", "a": 0})
    st = c._store
    for name, ix in st.ix.items():
        assert ix.entries == sorted(ix.entries), name
    rebuilt = db.r
    rebuilt.insert_many([dict(d) for d in ok] + [{"_id": "last", "a": 0}])
    rebuilt.create_index([("a", 1)])
    rebuilt.create_index([("b", -1), ("a", 1)])
    rebuilt.create_index([("c", 1)], sparse=True)
    rst = rebuilt._store
    for name, ix in st.ix.items():
        mine = sorted((k, st.docs[r]["_id"].__repr__()) for k, r in ix.entries)
        theirs = sorted((k, rst.docs[r]["_id"].__repr__()) for k, r in rst.ix[name].entries)
        assert mine == theirs, name


# ------------------------------------------------------------------------------ 4. gaps reported in engine_gaps.md

def test_elem_match_compound_bounds_on_multikey_index(db):
    """Manual "Multikey Index Bounds" > "Compound Bounds for Multikey Index": survey documents with
    ratings [{score, by}] and index {"ratings.score": 1, "ratings.by": 1}: ``{ratings: {$elemMatch: {score:
    {$lte: 5}, by: "anon"}}}`` compounds both bounds ([-inf, 5] and ["anon", "anon"]); without $elemMatch
    (``{"ratings.score": {$lte: 5}, "ratings.by": "anon"}``) the bounds cannot be compounded."""
    s = db.survey
    s.insert_many([{"_id": 1, "item": "ABC", "ratings": [{"score": 2, "by": "mn"}, {"score": 9, "by": "anon"}]},
                   {"_id": 2, "item": "XYZ", "ratings": [{"score": 5, "by": "anon"}, {"score": 7, "by": "wv"}]}])
    s.create_index([("ratings.score", 1), ("ratings.by", 1)])
    q = {"ratings": {"$elemMatch": {"score": {"$lte": 5}, "by": "anon"}}}
    e = s.find(q).explain()
    ix = find_stage(winning(e), "IXSCAN")
    assert ix["indexBounds"] == {"ratings.score": ["[-inf.0, 5]"], "ratings.by": ['["anon", "anon"]']}
    assert ix["isMultiKey"] is True and ix["multiKeyPaths"] == {"ratings.score": ["ratings"],
                                                                "ratings.by": ["ratings"]}
    assert find_stage(winning(e), "FETCH")["filter"] == q
    assert [d["_id"] for d in s.find(q)] == [2]
    q2 = {"ratings.score": {"$lte": 5}, "ratings.by": "anon"}
    ix = find_stage(winning(s.find(q2).explain()), "IXSCAN")
    assert ix["indexBounds"]["ratings.by"] == ["[MinKey, MaxKey]"]
    assert sorted(d["_id"] for d in s.find(q2)) == [1, 2]


def test_index_count_and_compound_field_limits(db):
    """Manual "MongoDB Limits and Thresholds": at most 64 indexes per collection (index_catalog_impl.cpp
    counts the _id index: the 65th fails with CannotCreateIndex 67, "add index fails, too many indexes for
    <ns> key:{ f63: 1 }"); a compound index has at most 32 fields (jstests/core/index/
    compound_index_max_fields.js: 32 fields build, 33 fail with code 13103)."""
    c = db.lim
    c.insert_one({"_id": 0})
    for i in range(63):
        c.create_index([("f%d" % i, 1)])
    assert len(c.index_information()) == 64
    c.create_index([("f0", 1)])  # an existing index is still a no-op at the limit
    with pytest.raises(OperationFailure) as ei:
        c.create_index([("f63", 1)])
    assert ei.value.code == 67
    assert "add index fails, too many indexes for fidelity.lim key:{ f63: 1 }" in str(ei.value)
    assert len(c.index_information()) == 64
    w = db.wide
    spec = [("f%d" % i, 1 if i % 2 == 0 else -1) for i in range(32)]
    w.create_index(spec)
    w.insert_one({"_id": 0, **{"f%d" % i: 1 for i in range(32)}})
    assert len(list(w.find({"f7": 1}).hint(spec))) == 1
    with pytest.raises(OperationFailure) as ei:
        w.create_index(spec + [("f32", -1)])
    assert ei.value.code == 13103 and "too many compound keys" in str(ei.value)


def test_write_errors_carry_the_write_error_document(db):
    """pymongo raises WriteError with ``details`` = the server's writeErrors entry ({index, code, errmsg});
    the 16 MiB update growth (17419, manual "Limits" BSON document size) and the immutable _id (66) alike."""
    from pymongo.errors import WriteError
    c = db.big
    c.insert_one({"_id": 1, "s": "x" * (15 * 1024 * 1024)})
    with pytest.raises(WriteError) as ei:
        c.update_one({"_id": 1}, {"$set": {"t": "y" * (2 * 1024 * 1024)}})
    assert ei.value.code == 17419
    assert ei.value.details["code"] == 17419 and ei.value.details["index"] == 0
    assert "Resulting document after update is larger than 16777216" in ei.value.details["errmsg"]
    with pytest.raises(WriteError) as ei:
        c.update_one({"_id": 1}, {"$set": {"_id": 2}})
    assert ei.value.code == 66 and ei.value.details["code"] == 66


def test_update_pipelines_unset_stage_and_round(db):
    """Manual "Updates with Aggregation Pipeline": $unset is allowed in update pipelines (alias of a
    $project exclusion); manual $round: ``{$round: ["$value", 1]}`` on 19.25 / 28.73 / 34.32 / -45.39 gives
    19.2 / 28.7 / 34.3 / -45.4, and 10.5, 11.5, 12.5, 13.5 round to the even 10, 12, 12, 14; $trunc with a
    place truncates toward zero."""
    c = db.samples
    c.insert_many([{"_id": 1, "value": 19.25, "tmp": 1}, {"_id": 2, "value": 28.73, "tmp": 1},
                   {"_id": 3, "value": 34.32}, {"_id": 4, "value": -45.39}])
    r = c.update_many({}, [{"$unset": "tmp"}, {"$set": {"roundedValue": {"$round": ["$value", 1]}}}])
    assert r.matched_count == 4 and r.modified_count == 4
    assert list(c.find({}, {"_id": 0, "value": 0})) == [{"roundedValue": v} for v in (19.2, 28.7, 34.3, -45.4)]
    e = db.even
    e.insert_many([{"_id": i, "value": v} for i, v in enumerate([10.5, 11.5, 12.5, 13.5])])
    assert [d["r"] for d in e.aggregate([{"$project": {"r": {"$round": ["$value", 0]}}}])] == [10, 12, 12, 14]
    out = list(e.aggregate([{"$limit": 1}, {"$project": {
        "_id": 0, "a": {"$round": [1234.5678, 2]}, "b": {"$round": [1234.5678, -2]}, "c": {"$round": [1234.5678, -4]},
        "d": {"$round": [1234.5678, 0]}, "n": {"$round": ["$missing", 1]}, "t": {"$trunc": [1234.5678, 2]}}}]))
    assert out == [{"a": 1234.57, "b": 1200.0, "c": 0.0, "d": 1235.0, "n": None, "t": 1234.56}]
    with pytest.raises(OperationFailure) as ei:
        list(e.aggregate([{"$project": {"r": {"$round": ["x", 0]}}}]))
    assert ei.value.code == 51081


def test_long_in_lists_scan_in_n_log_k_with_the_same_counters(monkeypatch):
    """A $in of thousands of values (engine_gaps.md #7: 6,552 _ids took ~10 s) locates keys among the
    intervals by binary search; results and totalKeysExamined equal the linear walk's (checked against it
    for ascending/descending fields, forward/backward scans, ranges and points), results equal a $natural
    scan (rules file §4 counting rules unchanged)."""
    import random
    from labkit.engine.exec import stages as S
    rnd = random.Random(3)
    db = EmbeddedClient().inlist
    c = db.c
    c.insert_many([{"_id": i, "a": rnd.randint(0, 300), "b": rnd.randint(0, 50)} for i in range(3000)])
    c.create_index([("a", 1), ("b", -1)])
    queries = [({"a": {"$in": rnd.sample(range(300), 40)}, "b": {"$in": rnd.sample(range(50), 12)}}, None),
               ({"a": {"$in": rnd.sample(range(300), 25)}, "b": {"$gt": 10, "$lt": 30}}, [("a", -1)]),
               ({"a": {"$gte": 20}, "b": {"$in": list(range(0, 50, 3))}}, [("a", -1), ("b", 1)]),
               ({"a": {"$nin": rnd.sample(range(300), 30)}}, [("a", 1)])]
    for q, sort in queries:
        def run():
            cur = c.find(q)
            if sort:
                cur = cur.sort(sort)
            e = c.find(q).sort(sort).explain() if sort else c.find(q).explain()
            return [d["_id"] for d in cur], e["executionStats"]["totalKeysExamined"]
        fast = run()
        monkeypatch.setattr(S, "LOCATE_BISECT_MIN", 10**9)
        slow = run()
        monkeypatch.setattr(S, "LOCATE_BISECT_MIN", 8)
        assert fast == slow, q
        assert sorted(fast[0]) == sorted(d["_id"] for d in c.find(q).hint({"$natural": 1}))
    ids = list(range(0, 3000, 2))
    assert len(list(c.find({"_id": {"$in": ids}}))) == 1500


def test_union_with_manual_suppliers_and_warehouses(db):
    """Manual $unionWith: suppliers (Texas, Colorado, Rhode Island) and warehouses (California, Colorado,
    Florida); projecting state in both and unioning gives the six states with the duplicate Colorado; the
    simple form ``{$unionWith: "warehouses"}`` appends every warehouse; $out/$merge are refused inside."""
    db.suppliers.insert_many([{"_id": 1, "supplier": "Aardvark and Sons", "state": "Texas"},
                              {"_id": 2, "supplier": "Bears Run Amok.", "state": "Colorado"},
                              {"_id": 3, "supplier": "Squid Mark Inc. ", "state": "Rhode Island"}])
    db.warehouses.insert_many([{"_id": 1, "warehouse": "A", "region": "West", "state": "California"},
                               {"_id": 2, "warehouse": "B", "region": "Central", "state": "Colorado"},
                               {"_id": 3, "warehouse": "C", "region": "East", "state": "Florida"}])
    out = list(db.suppliers.aggregate([
        {"$project": {"state": 1, "_id": 0}},
        {"$unionWith": {"coll": "warehouses", "pipeline": [{"$project": {"state": 1, "_id": 0}}]}}]))
    assert sorted(d["state"] for d in out) == sorted(["Texas", "Colorado", "Rhode Island", "California",
                                                      "Colorado", "Florida"])
    assert all(set(d) == {"state"} for d in out)
    assert len(list(db.suppliers.aggregate([{"$unionWith": "warehouses"}]))) == 6
    with pytest.raises(OperationFailure):
        list(db.suppliers.aggregate([{"$unionWith": {"coll": "warehouses", "pipeline": [{"$out": "x"}]}}]))
