"""Explain figures of the embedded engine checked against MongoDB's own jstests and hand-worked rules.

Sources are the classic-engine counting rules in /work/shared/reference/mongodb-explain-rules.md §4 and the
mongodb/mongo jstests quoted per test.
"""
from __future__ import annotations

import datetime

import pytest
from pymongo import ASCENDING, DESCENDING

from labkit.engine import EmbeddedClient


from plan_helpers import find_stage, stages  # noqa: E402


@pytest.fixture()
def db():
    return EmbeddedClient().labtest


@pytest.fixture()
def check6(db):
    """index_check6.js dataset: {age: 10..49} x {rating: 0..9} with index {age: 1, rating: 1}."""
    t = db.check6
    t.create_index([("age", 1), ("rating", 1)])
    t.insert_many([{"age": a, "rating": r} for a in range(10, 50) for r in range(10)])
    return t


HINT = [("age", 1), ("rating", 1)]


@pytest.mark.parametrize("query,hint,keys", [
    ({"age": 30}, None, 10),                                                  # A
    ({"age": {"$gte": 29, "$lte": 30}}, None, 20),                             # B
    ({"age": {"$gte": 25, "$lte": 30}, "rating": {"$in": [0, 9]}}, HINT, 19),  # C1
    ({"age": {"$gte": 25, "$lte": 30}, "rating": {"$in": [0, 8]}}, HINT, 24),  # C2
    ({"age": {"$gte": 25, "$lte": 30}, "rating": {"$in": [1, 8]}}, HINT, 29),  # C3
    ({"age": {"$gte": 29, "$lte": 30}, "rating": 5}, HINT, 5),                 # C (SERVER-371)
    ({"age": {"$gte": 29, "$lte": 30}, "rating": {"$gte": 4, "$lte": 5}}, HINT, 7),  # D
    ({"age": 30, "rating": {"$gte": 4, "$lte": 5}}, None, 2),                  # single interval
])
def test_index_check6_keys_examined(check6, query, hint, keys):
    """mongodb/mongo jstests/core/index/index_check6.js: exact totalKeysExamined values (classic engine)."""
    cur = check6.find(query)
    if hint:
        cur = cur.hint(hint)
    e = cur.explain()
    assert e["executionStats"]["totalKeysExamined"] == keys
    expected = len([d for d in check6.find(query)])
    assert e["executionStats"]["nReturned"] == expected


def test_range_then_equality_returns_two_docs(check6):
    """index_check6.js C: {age:[29,30], rating:5} examines 5 keys for 2 documents."""
    e = check6.find({"age": {"$gte": 29, "$lte": 30}, "rating": 5}).hint(HINT).explain()
    assert e["executionStats"]["nReturned"] == 2
    assert e["executionStats"]["totalDocsExamined"] == 2
    ix = find_stage(e["queryPlanner"]["winningPlan"], "IXSCAN")
    assert ix["indexBounds"] == {"age": ["[29, 30]"], "rating": ["[5, 5]"]}


def test_regex3_prefix_regex(db):
    """mongodb/mongo jstests/core/query/regex/regex3.js: /^aa*/ over aa,ab,ac,c -> 4 keys, 3 results;
    /^e.*/ over eliot,emily,bob,aaron -> 2 keys; without an index 4 docs examined."""
    t = db.regex3
    for n in ["eliot", "emily", "bob", "aaron"]:
        t.insert_one({"name": n})
    e = t.find({"name": {"$regex": "^e.*"}}).explain()
    assert e["executionStats"]["totalDocsExamined"] == 4
    assert stages(e["queryPlanner"]["winningPlan"]) == ["COLLSCAN"]
    t.create_index("name")
    e = t.find({"name": {"$regex": "^e.*"}}).explain()
    assert e["executionStats"]["totalKeysExamined"] == 2
    assert e["executionStats"]["nReturned"] == 2
    t.drop()
    for n in ["aa", "ab", "ac", "c"]:
        t.insert_one({"name": n})
    t.create_index("name")
    e = t.find({"name": {"$regex": "^aa*"}}).explain()
    assert e["executionStats"]["totalKeysExamined"] == 4
    assert e["executionStats"]["nReturned"] == 3
    ix = find_stage(e["queryPlanner"]["winningPlan"], "IXSCAN")
    assert ix["indexBounds"]["name"] == ['["a", "b")', "[/^aa*/, /^aa*/]"]
    assert len(list(t.find({"name": {"$regex": "^a[ab]"}}))) == 2
    assert len(list(t.find({"name": {"$regex": "^a[bc]"}}))) == 2


def test_indexj_multi_interval_zero_results(db):
    """mongodb/mongo jstests/core/index/indexj.js (classic): {a:{$in:[1,2]}, b:{$gt:1,$lt:2}} over
    (1,1),(1,2),(2,1),(2,2) examines 3 keys and returns nothing; 4 keys once (1,1.5) is added;
    {a:{$in:[1,1.9]}} examines 2."""
    t = db.indexj
    t.create_index([("a", 1), ("b", 1)])
    t.insert_one({"a": 5})
    t2 = db.indexj_single
    t2.create_index("a")
    t2.insert_many([{"a": 4}, {"a": 5}, {"a": 4}, {"a": 5}])
    assert t2.find({"a": {"$gt": 4, "$lt": 5}}).explain()["executionStats"]["totalKeysExamined"] == 0
    t.drop()
    t.create_index([("a", 1), ("b", 1)])
    t.insert_many([{"a": 1, "b": 1}, {"a": 1, "b": 2}, {"a": 2, "b": 1}, {"a": 2, "b": 2}])
    q = {"a": {"$in": [1, 2]}, "b": {"$gt": 1, "$lt": 2}}
    e = t.find(q).hint([("a", 1), ("b", 1)]).explain()
    assert e["executionStats"]["totalKeysExamined"] == 3
    assert e["executionStats"]["totalDocsExamined"] == 0
    assert e["executionStats"]["nReturned"] == 0
    e = t.find(q).sort([("a", -1), ("b", -1)]).hint([("a", 1), ("b", 1)]).explain()
    assert e["executionStats"]["totalKeysExamined"] == 3
    t.insert_many([{"a": 1, "b": 1}, {"a": 1, "b": 1}])
    assert t.find(q).hint([("a", 1), ("b", 1)]).explain()["executionStats"]["totalKeysExamined"] == 3
    e = t.find({"a": {"$in": [1, 1.9]}, "b": {"$gt": 1, "$lt": 2}}).hint([("a", 1), ("b", 1)]).explain()
    assert e["executionStats"]["totalKeysExamined"] == 2
    t.insert_one({"a": 1, "b": 1.5})
    assert t.find(q).hint([("a", 1), ("b", 1)]).explain()["executionStats"]["totalKeysExamined"] == 4


@pytest.fixture()
def feed(db):
    """The source material's feed: posts by 50 authors, newest first."""
    posts = db.posts
    base = datetime.datetime(2024, 1, 1)
    docs = []
    for i in range(2000):
        docs.append({"_id": i, "authorId": "user:%d" % (i % 50 + 100), "createdAt": base + datetime.timedelta(minutes=i),
                     "body": "post %d" % i})
    posts.insert_many(docs)
    return posts


def test_feed_query_without_index_is_collscan_plus_sort(feed):
    e = feed.find({"authorId": "user:112"}).sort([("createdAt", -1), ("_id", -1)]).limit(20).explain()
    chain = stages(e["queryPlanner"]["winningPlan"])
    assert chain == ["SORT", "COLLSCAN"]
    sort = e["queryPlanner"]["winningPlan"]
    assert sort["limitAmount"] == 20 and sort["sortPattern"] == {"createdAt": -1, "_id": -1}
    assert e["executionStats"]["totalDocsExamined"] == 2000
    assert e["executionStats"]["nReturned"] == 20


def test_feed_query_with_esr_index(feed):
    feed.create_index([("authorId", 1), ("createdAt", -1), ("_id", -1)])
    cur = feed.find({"authorId": "user:112"}).sort([("createdAt", -1), ("_id", -1)]).limit(20)
    e = cur.explain()
    assert stages(e["queryPlanner"]["winningPlan"]) == ["LIMIT", "FETCH", "IXSCAN"]
    ix = find_stage(e["queryPlanner"]["winningPlan"], "IXSCAN")
    assert ix["indexName"] == "authorId_1_createdAt_-1__id_-1"
    assert ix["indexBounds"] == {"authorId": ['["user:112", "user:112"]'], "createdAt": ["[MaxKey, MinKey]"],
                                 "_id": ["[MaxKey, MinKey]"]}
    assert ix["direction"] == "forward"
    assert e["executionStats"]["totalKeysExamined"] == 20
    assert e["executionStats"]["totalDocsExamined"] == 20
    got = list(feed.find({"authorId": "user:112"}).sort([("createdAt", -1), ("_id", -1)]).limit(20))
    assert [d["_id"] for d in got] == sorted([i for i in range(2000) if i % 50 == 12], reverse=True)[:20]
    # an author with fewer posts than the limit: keys = number of posts
    feed.insert_many([{"authorId": "user:9", "createdAt": datetime.datetime(2024, 2, 1), "_id": 10000 + i}
                      for i in range(3)])
    e = feed.find({"authorId": "user:9"}).sort([("createdAt", -1), ("_id", -1)]).limit(20).explain()
    assert e["executionStats"]["totalKeysExamined"] == 3
    # ascending sort uses the same index backward
    e = feed.find({"authorId": "user:112"}).sort([("createdAt", 1), ("_id", 1)]).limit(5).explain()
    ix = find_stage(e["queryPlanner"]["winningPlan"], "IXSCAN")
    assert ix["direction"] == "backward"
    assert ix["indexBounds"]["createdAt"] == ["[MinKey, MaxKey]"]
    assert find_stage(e["queryPlanner"]["winningPlan"], "SORT") is None


def test_follows_unique_compound(db):
    from pymongo.errors import DuplicateKeyError
    f = db.follows
    f.create_index([("followerId", 1), ("followeeId", 1)], unique=True)
    f.insert_one({"followerId": "u1", "followeeId": "u2"})
    with pytest.raises(DuplicateKeyError) as ei:
        f.insert_one({"followerId": "u1", "followeeId": "u2"})
    err = ei.value
    assert err.code == 11000
    assert err.details["keyPattern"] == {"followerId": 1, "followeeId": 1}
    assert err.details["keyValue"] == {"followerId": "u1", "followeeId": "u2"}
    assert str(err).startswith('E11000 duplicate key error collection: labtest.follows index: '
                               'followerId_1_followeeId_1 dup key: { followerId: "u1", followeeId: "u2" }')
    assert f.count_documents({}) == 1
    e = f.find({"followerId": "u1", "followeeId": "u2"}).explain()
    ix = find_stage(e["queryPlanner"]["winningPlan"], "IXSCAN")
    assert ix["isUnique"] is True
    assert e["executionStats"]["totalKeysExamined"] == 1


def test_explain_document_structure(check6):
    e = check6.find({"age": 30}).explain()
    assert e["explainVersion"] == "1"
    assert e["ok"] == 1.0
    assert e["labkit"] == {"engine": "embedded", "models": "MongoDB 8.0 classic engine"}
    qp = e["queryPlanner"]
    for k in ("namespace", "parsedQuery", "indexFilterSet", "winningPlan", "rejectedPlans",
              "maxIndexedOrSolutionsReached"):
        assert k in qp
    assert qp["namespace"] == "labtest.check6"
    assert qp["parsedQuery"] == {"age": {"$eq": 30}}
    es = e["executionStats"]
    for k in ("executionSuccess", "nReturned", "executionTimeMillis", "totalKeysExamined", "totalDocsExamined",
              "executionStages"):
        assert k in es
    ix = find_stage(es["executionStages"], "IXSCAN")
    for k in ("keyPattern", "indexName", "isMultiKey", "multiKeyPaths", "isUnique", "isSparse", "isPartial",
              "indexVersion", "direction", "indexBounds", "keysExamined", "works", "advanced", "needTime", "isEOF"):
        assert k in ix
    assert ix["indexVersion"] == 2
    assert "serverInfo" in e and "command" in e


def test_bounds_formats(db):
    t = db.fmt
    t.create_index("x")
    t.insert_many([{"x": i * 1.5} for i in range(100)])
    ix = find_stage(t.find({"x": {"$gt": 50.0}}).explain()["queryPlanner"]["winningPlan"], "IXSCAN")
    assert ix["indexBounds"]["x"] == ["(50.0, inf.0]"]
    ix = find_stage(t.find({"x": {"$lt": 40.0}}).explain()["queryPlanner"]["winningPlan"], "IXSCAN")
    assert ix["indexBounds"]["x"] == ["[-inf.0, 40.0)"]
    ix = find_stage(t.find({"x": {"$in": [3, 1, 2]}}).explain()["queryPlanner"]["winningPlan"], "IXSCAN")
    assert ix["indexBounds"]["x"] == ["[1, 1]", "[2, 2]", "[3, 3]"]
    e = t.find({"x": None}).explain()
    ix = find_stage(e["queryPlanner"]["winningPlan"], "IXSCAN")
    assert ix["indexBounds"]["x"] == ["[null, null]"]
    # 8.0: the key null is exactly "null or missing", so no FETCH filter (jstests/core/query/cover_null_queries.js)
    assert "filter" not in find_stage(e["queryPlanner"]["winningPlan"], "FETCH")
    ix = find_stage(t.find({"x": {"$ne": None}}).explain()["queryPlanner"]["winningPlan"], "IXSCAN")
    assert ix["indexBounds"]["x"] == ["[MinKey, null)", "(null, MaxKey]"]
    ix = find_stage(t.find({"x": {"$regex": "c"}}).explain()["queryPlanner"]["winningPlan"], "IXSCAN")
    assert ix["indexBounds"]["x"] == ['["", {})', "[/c/, /c/]"]
    ix = find_stage(t.find({"x": {"$gte": 5, "$lte": 25, "$gt": 10, "$lt": 30}}).explain()
                    ["queryPlanner"]["winningPlan"], "IXSCAN")
    assert ix["indexBounds"]["x"] == ["(10, 25]"]


def test_trivially_false_and_missing_collection(db):
    db.t.insert_one({"a": 1})
    e = db.t.find({"a": {"$in": []}}).explain()
    assert e["queryPlanner"]["winningPlan"]["stage"] == "EOF"
    assert e["queryPlanner"]["winningPlan"]["type"] == "predicateEvalsToFalse"
    e = db.nothere.find({"a": 1}).explain()
    assert e["queryPlanner"]["winningPlan"] == {"stage": "EOF", "type": "nonExistentNamespace"}


def test_express_id_and_unique(db):
    t = db.ex
    t.insert_many([{"_id": i, "email": "u%d@x" % i, "n": i % 3} for i in range(50)])
    e = t.find({"_id": 7}).explain()
    wp = e["queryPlanner"]["winningPlan"]
    assert wp["stage"] == "EXPRESS_IXSCAN" and wp["indexName"] == "_id_"
    assert e["executionStats"]["totalKeysExamined"] == 1 and e["executionStats"]["totalDocsExamined"] == 1
    assert e["executionStats"]["nReturned"] == 1
    t.create_index("email", unique=True)
    wp = t.find({"email": "u3@x"}).explain()["queryPlanner"]["winningPlan"]
    assert wp["stage"] == "EXPRESS_IXSCAN" and wp["indexName"] == "email_1"
    t.create_index("n")
    assert t.find({"n": 1}).explain()["queryPlanner"]["winningPlan"]["stage"] == "FETCH"
    assert t.find({"n": 1}).limit(1).explain()["queryPlanner"]["winningPlan"]["stage"] == "EXPRESS_IXSCAN"
    # skip or hint disable express
    assert t.find({"_id": 7}).skip(1).explain()["queryPlanner"]["winningPlan"]["stage"] != "EXPRESS_IXSCAN"


def test_collscan_only_without_usable_index(db):
    """Rules §3.8: find({b:2}).sort({a:1}) with only {a:1} full-scans a_1 instead of COLLSCAN+SORT."""
    t = db.cs
    t.insert_many([{"a": i, "b": i % 5} for i in range(100)])
    t.create_index("a")
    e = t.find({"b": 2}).sort("a", 1).explain()
    assert stages(e["queryPlanner"]["winningPlan"]) == ["FETCH", "IXSCAN"]
    ix = find_stage(e["queryPlanner"]["winningPlan"], "IXSCAN")
    assert ix["indexBounds"]["a"] == ["[MinKey, MaxKey]"]
    assert e["executionStats"]["totalKeysExamined"] == 100
    assert stages(t.find({"b": 2}).explain()["queryPlanner"]["winningPlan"]) == ["COLLSCAN"]


def test_covered_projection(db):
    t = db.cov
    t.insert_many([{"a": i, "b": i * 2, "c": "x"} for i in range(30)])
    t.create_index([("a", 1), ("b", 1)])
    e = t.find({"a": {"$gte": 10, "$lt": 20}}, {"_id": 0, "a": 1, "b": 1}).explain()
    assert stages(e["queryPlanner"]["winningPlan"]) == ["PROJECTION_COVERED", "IXSCAN"]
    assert e["executionStats"]["totalDocsExamined"] == 0
    assert e["executionStats"]["totalKeysExamined"] == 10
    got = list(t.find({"a": {"$gte": 10, "$lt": 12}}, {"_id": 0, "a": 1, "b": 1}))
    assert got == [{"a": 10, "b": 20}, {"a": 11, "b": 22}]
    # including _id needs the document
    e = t.find({"a": 5}, {"a": 1}).explain()
    assert "FETCH" in stages(e["queryPlanner"]["winningPlan"])


def test_multi_planner_rejected_plans_and_scores(db):
    """Rules §5: score = 1 + advanced/works + EOF bonus + tie-breakers; both candidates are index plans."""
    t = db.mp
    t.insert_many([{"a": i % 10, "b": i % 7} for i in range(1000)])
    t.create_index("a")
    t.create_index("b")
    e = t.find({"a": 3, "b": 4}).explain()
    assert len(e["queryPlanner"]["rejectedPlans"]) == 1
    allp = e["executionStats"]["allPlansExecution"]
    assert len(allp) == 2
    for p in allp:
        assert 1.0 < p["score"] < 3.0
    # {a:3} has 100 matching keys, {b:4} 143 -> a_1 reaches 101 results... neither; a_1 hits EOF first
    assert find_stage(e["queryPlanner"]["winningPlan"], "IXSCAN")["indexName"] == "a_1"
    assert e["executionStats"]["nReturned"] == len([i for i in range(1000) if i % 10 == 3 and i % 7 == 4])


def test_explode_for_sort(db):
    t = db.efs
    t.insert_many([{"a": i % 4, "b": i} for i in range(40)])
    t.create_index([("a", 1), ("b", 1)])
    e = t.find({"a": {"$in": [1, 2]}}).sort("b", 1).explain()
    assert "SORT_MERGE" in stages(e["queryPlanner"]["winningPlan"])
    assert find_stage(e["queryPlanner"]["winningPlan"], "SORT") is None
    got = [d["b"] for d in t.find({"a": {"$in": [1, 2]}}).sort("b", 1)]
    assert got == sorted(b for b in range(40) if b % 4 in (1, 2))


def test_rooted_or_subplan(db):
    t = db.orq
    t.insert_many([{"a": i, "b": i % 10} for i in range(100)])
    t.create_index("a")
    t.create_index("b")
    e = t.find({"$or": [{"a": 5}, {"b": 7}]}).explain()
    wp = e["queryPlanner"]["winningPlan"]
    assert stages(wp)[:3] == ["SUBPLAN", "FETCH", "OR"]
    assert e["queryPlanner"]["rejectedPlans"] == []
    assert e["executionStats"]["nReturned"] == 11
    # one branch not indexed -> COLLSCAN
    e = t.find({"$or": [{"a": 5}, {"c": 7}]}).explain()
    assert stages(e["queryPlanner"]["winningPlan"]) == ["COLLSCAN"]


def test_count_and_distinct_explain(db):
    t = db.cd
    t.insert_many([{"a": i % 5, "b": i} for i in range(20)])
    e = db.command("explain", {"count": "cd", "query": {}}, verbosity="executionStats")
    assert e["queryPlanner"]["winningPlan"]["stage"] == "RECORD_STORE_FAST_COUNT"
    t.create_index([("a", 1), ("_id", 1)])
    e = db.command("explain", {"count": "cd", "query": {"a": 1}}, verbosity="executionStats")
    wp = e["queryPlanner"]["winningPlan"]
    assert stages(wp) == ["COUNT", "COUNT_SCAN"]
    assert wp["inputStage"]["indexBounds"]["startKey"]["a"] == 1
    assert e["executionStats"]["executionStages"]["nCounted"] == 4
    assert e["executionStats"]["totalDocsExamined"] == 0
    # distinct via COLLSCAN reports nReturned = documents scanned (rules §8.6)
    db.dd.insert_many([{"x": 1} for _ in range(20)])
    e = db.command("explain", {"distinct": "dd", "key": "x"}, verbosity="executionStats")
    assert e["executionStats"]["nReturned"] == 20
    db.dd.create_index("x")
    e = db.command("explain", {"distinct": "dd", "key": "x"}, verbosity="executionStats")
    assert find_stage(e["queryPlanner"]["winningPlan"], "DISTINCT_SCAN") is not None
    assert db.dd.distinct("x") == [1]


def test_explain_command_find_and_verbosity(db):
    t = db.cmd
    t.insert_many([{"a": i} for i in range(10)])
    t.create_index("a")
    e = db.command("explain", {"find": "cmd", "filter": {"a": {"$gte": 3}}, "sort": {"a": -1}, "limit": 2,
                               "projection": {"_id": 0, "a": 1}}, verbosity="queryPlanner")
    assert "executionStats" not in e
    assert e["queryPlanner"]["winningPlan"]["stage"] == "LIMIT"
    e = db.command("explain", {"find": "cmd", "filter": {"a": {"$gte": 3}}, "hint": "a_1", "skip": 1},
                   verbosity="executionStats")
    assert "SKIP" in stages(e["queryPlanner"]["winningPlan"])
    assert e["executionStats"]["nReturned"] == 6


def test_hint_errors_and_hidden(db):
    from pymongo.errors import OperationFailure
    t = db.h
    t.insert_many([{"a": i} for i in range(10)])
    t.create_index("a", hidden=True)
    assert stages(t.find({"a": 3}).explain()["queryPlanner"]["winningPlan"]) == ["COLLSCAN"]
    with pytest.raises(OperationFailure) as ei:
        list(t.find({"a": 3}).hint("a_1"))
    assert ei.value.code == 2
    with pytest.raises(OperationFailure) as ei:
        list(t.find({"a": 3}).hint("nope"))
    assert "hint provided does not correspond to an existing index" in str(ei.value)
    db.command("collMod", "h", index={"name": "a_1", "hidden": False})
    assert "IXSCAN" in stages(t.find({"a": 3}).explain()["queryPlanner"]["winningPlan"])
    res = db.command("collMod", "h", index={"name": "a_1", "hidden": True})
    assert res["hidden_old"] is False and res["hidden_new"] is True
    assert t.index_information()["a_1"]["hidden"] is True


def test_hint_unrelated_index_full_scan(db):
    """explain5.js style: a hinted index that cannot bound the predicate scans fully with a FETCH filter."""
    t = db.h5
    t.insert_many([{"a": i, "b": i % 3} for i in range(300)])
    t.create_index("a")
    e = t.find({"b": 1}).hint("a_1").explain()
    assert e["executionStats"]["totalKeysExamined"] == 300
    assert e["executionStats"]["nReturned"] == 100
    assert find_stage(e["queryPlanner"]["winningPlan"], "FETCH")["filter"] == {"b": 1}


def test_multikey_explain(db):
    """explain_multikey.js / DOCS: multiKeyPaths per index field."""
    t = db.mk
    t.create_index([("a", 1), ("b.c", 1), ("b.d", 1)])
    t.insert_one({"a": 1, "b": [{"c": ["w", "x"], "d": 3}, {"c": ["y", "z"], "d": 4}]})
    e = t.find({"a": 1}).explain()
    ix = find_stage(e["queryPlanner"]["winningPlan"], "IXSCAN")
    assert ix["isMultiKey"] is True
    assert ix["multiKeyPaths"] == {"a": [], "b.c": ["b", "b.c"], "b.d": ["b"]}
    assert e["executionStats"]["totalKeysExamined"] == 4
    assert e["executionStats"]["nReturned"] == 1


def test_partial_index_needs_implication(db):
    """mongodb/mongo jstests/core/index/index_partial_read_ops.js: {x:6, a:1} uses {x:1} partial on
    a <= 1.5; {x:6, a:{$lt:1.6}} and {x:6} do not."""
    t = db.partial
    t.create_index("x", partialFilterExpression={"a": {"$lte": 1.5}})
    t.insert_many([{"x": 5, "a": 2}, {"x": 6, "a": 1}])
    e = t.find({"x": 6, "a": 1}).explain()
    assert find_stage(e["queryPlanner"]["winningPlan"], "IXSCAN")["isPartial"] is True
    assert e["executionStats"]["nReturned"] == 1
    assert stages(t.find({"x": 6, "a": {"$lt": 1.6}}).explain()["queryPlanner"]["winningPlan"]) == ["COLLSCAN"]
    assert stages(t.find({"x": 6}).explain()["queryPlanner"]["winningPlan"]) == ["COLLSCAN"]


def test_sparse_index_not_used_for_null(db):
    """Rules §3.2: sparse indexes miss documents without the field, so {f: null} must not use them."""
    t = db.sparse
    t.create_index("f", sparse=True)
    t.insert_many([{"f": 1}, {"g": 1}, {"f": None}])
    e = t.find({"f": None}).explain()
    assert stages(e["queryPlanner"]["winningPlan"]) == ["COLLSCAN"]
    assert e["executionStats"]["nReturned"] == 2
    assert "IXSCAN" in stages(t.find({"f": 1}).explain()["queryPlanner"]["winningPlan"])


def test_limit_stops_collscan_early(db):
    """Rules §8.4: COLLSCAN + limit stops at the N-th match; an index-ordered scan + limit touches N keys."""
    t = db.lim
    t.insert_many([{"i": i, "m": i % 10 == 0} for i in range(100)])
    e = t.find({"m": True}).limit(5).explain()
    assert e["executionStats"]["totalDocsExamined"] == 41
    t.create_index("i")
    e = t.find({}).sort("i", 1).limit(5).explain()
    assert e["executionStats"]["totalKeysExamined"] == 5
    assert e["executionStats"]["totalDocsExamined"] == 5


def test_allplans_trial_stops_at_101_results(db):
    """mongodb/mongo explain_winning_plan.js: two index candidates, trial ends when one has 101 results."""
    t = db.win
    t.insert_many([{"a": 1, "b": 1, "i": i} for i in range(300)])
    t.create_index("a")
    t.create_index("b")
    e = t.find({"a": 1, "b": 1}).explain()
    allp = e["executionStats"]["allPlansExecution"]
    assert len(allp) == 2 and len(e["queryPlanner"]["rejectedPlans"]) == 1
    assert max(p["nReturned"] for p in allp) == 101
    assert e["executionStats"]["nReturned"] == 300
    assert all(find_stage(p["executionStages"], "IXSCAN") for p in allp)


def test_regex_filters_on_index_keys_avoid_fetches(db):
    """Rules §4 (explain6.js / explain_execution_stats_counters.js): both regexes on a compound index are
    evaluated on the keys: keys 2, docs 1; and a regex query can be covered."""
    t = db.rx
    t.create_index([("a", 1), ("b", 1)])
    t.insert_many([{"a": "a1", "b": "bx"}, {"a": "a2", "b": "cx"}])
    e = t.find({"a": {"$regex": "a"}, "b": {"$regex": "b"}}).explain()
    assert e["executionStats"]["totalKeysExamined"] == 2
    assert e["executionStats"]["totalDocsExamined"] == 1
    assert e["executionStats"]["nReturned"] == 1
    ix = find_stage(e["queryPlanner"]["winningPlan"], "IXSCAN")
    assert ix["filter"] == {"$and": [{"a": {"$regex": "a"}}, {"b": {"$regex": "b"}}]}
    e = t.find({"a": {"$regex": "^a"}}, {"_id": 0, "a": 1}).explain()
    assert stages(e["queryPlanner"]["winningPlan"]) == ["PROJECTION_COVERED", "IXSCAN"]
    assert list(t.find({"a": {"$regex": "2$"}}, {"_id": 0, "a": 1})) == [{"a": "a2"}]


def test_collscan_counters_one_work_per_document(db):
    """Classic COLLSCAN: one work() per document plus the final EOF call, with or without a filter
    (the engine's bulk paths must give the one-at-a-time counters)."""
    t = db.works
    t.insert_many([{"i": i} for i in range(7)])
    for filt, n in (({}, 7), ({"i": {"$gte": 4}}, 3)):
        st = t.find(filt).explain()["executionStats"]["executionStages"]
        assert (st["works"], st["advanced"], st["needTime"], st["docsExamined"], st["isEOF"]) == (8, n, 7 - n, 7, 1)
    st = t.find({"i": {"$gte": 4}}).sort("i", -1).explain()["executionStats"]["executionStages"]
    assert st["stage"] == "SORT" and st["inputStage"]["works"] == 8 and st["works"] >= 8


def test_skip_below_fetch_stage_fields(db):
    # jstests/core/query/explain/explain_skip.js asserts SKIP's skipAmount; add_skip_stage_before_fetch.js
    # (SERVER-13946) puts it between FETCH and IXSCAN when the index answers the filter: the FETCH examines
    # only the returned documents, the SKIP reads index keys
    c = db.skipf
    c.create_index("a")
    c.insert_many([{"a": i % 3, "b": i} for i in range(90)])
    e = c.find({"a": 1}).skip(25).limit(3).explain()
    plan = e["executionStats"]["executionStages"]
    assert stages(plan) == ["LIMIT", "FETCH", "SKIP", "IXSCAN"]
    assert find_stage(plan, "SKIP")["skipAmount"] == 25
    assert find_stage(plan, "FETCH")["docsExamined"] == 3
    assert find_stage(plan, "IXSCAN")["keysExamined"] == 28


def test_sbe_explain_numbers_plan_nodes(db):
    # SBE explain (explainVersion "2"): every queryPlan node has a planNodeId, children numbered first
    # (jstests/libs/query/analyze_plan.js reads queryPlan / planNodeId); serverParameters are still present
    db.l.insert_many([{"_id": i, "g": i % 2} for i in range(6)])
    db.f.insert_many([{"k": i % 6} for i in range(12)])
    e = db.command("explain", {"aggregate": "l", "pipeline": [
        {"$match": {"_id": {"$gte": 0}}},
        {"$lookup": {"from": "f", "localField": "_id", "foreignField": "k", "as": "m"}},
        {"$group": {"_id": "$g", "n": {"$sum": 1}}}], "cursor": {}}, verbosity="executionStats")
    q = e["queryPlanner"]["winningPlan"]["queryPlan"]
    assert [q["stage"], q["inputStage"]["stage"]] == ["GROUP", "EQ_LOOKUP"]
    ids = []
    node = q
    while node:
        ids.append(node["planNodeId"])
        node = node.get("inputStage")
    assert ids == sorted(ids, reverse=True) and ids[-1] == 1
    assert e["executionStats"]["nReturned"] == 2
    # 6 local documents (through the _id index) + the 12 foreign documents read once by the hash join
    assert e["executionStats"]["totalDocsExamined"] == 6 + 12
    assert "serverParameters" in e
