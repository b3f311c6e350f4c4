"""Plans and statistics as a MongoDB 8.0 server reports them (issue 14): one test per rule, each naming the
jstest / server source or manual page the expected figures come from. Facts carry over, code does not."""
from __future__ import annotations

import pytest

from labkit.engine import EmbeddedClient

from both_paths import client, server  # noqa: F401  (pymongo in-process and over TCP to serve_in_thread)
from plan_helpers import find_stage, stages  # noqa: E402


@pytest.fixture()
def db():
    return EmbeddedClient().plans80


def _explain(db, cmd: dict, verbosity: str = "executionStats") -> dict:
    return db.command("explain", cmd, verbosity=verbosity)


# ---------------------------------------------------------------------------------------- SKIP below FETCH

@pytest.fixture()
def skipcoll(db):
    """add_skip_stage_before_fetch.js dataset: 10,000 docs {a: i % 2, b: i % 4, c, d}, index {a, b, c}.
    c and d are deterministic here (the jstest uses random values; its assertions do not depend on them)."""
    c = db.skip_before_fetch
    c.create_index([("a", 1), ("b", 1), ("c", 1)])
    c.insert_many([{"a": i % 2, "b": i % 4, "c": (i * 7919) % 1000, "d": (i * 104729) % 1000}
                   for i in range(10000)])
    return c


HINT_ABC = {"a": 1, "b": 1, "c": 1}


def test_skip_below_fetch_index_answers_filter(db, skipcoll):
    # jstests/core/query/add_skip_stage_before_fetch.js (SERVER-13946): find({a: 0, b: 2}).hint(index)
    # .skip(2400): totalKeysExamined >= 2500, totalDocsExamined == 100
    e = _explain(db, {"find": "skip_before_fetch", "filter": {"a": 0, "b": 2}, "hint": HINT_ABC, "skip": 2400})
    es = e["executionStats"]
    assert es["totalKeysExamined"] >= 2500
    assert es["totalDocsExamined"] == 100
    assert es["nReturned"] == 100
    assert stages(e["queryPlanner"]["winningPlan"]) == ["FETCH", "SKIP", "IXSCAN"]


def test_skip_below_fetch_with_index_sort(db, skipcoll):
    # add_skip_stage_before_fetch.js: .sort({c: 1}) is provided by the index: docs examined still 100
    e = _explain(db, {"find": "skip_before_fetch", "filter": {"a": 0, "b": 2}, "hint": HINT_ABC,
                      "sort": {"c": 1}, "skip": 2400})
    assert e["executionStats"]["totalKeysExamined"] >= 2500
    assert e["executionStats"]["totalDocsExamined"] == 100


def test_skip_covered_no_fetch(db, skipcoll):
    # add_skip_stage_before_fetch.js: projection {_id: 0, a: 1} is covered: 0 documents, isIndexOnly
    e = _explain(db, {"find": "skip_before_fetch", "filter": {"a": 0, "b": 2}, "hint": HINT_ABC,
                      "sort": {"c": 1}, "projection": {"_id": 0, "a": 1}, "skip": 2400})
    assert e["executionStats"]["totalDocsExamined"] == 0
    assert find_stage(e["queryPlanner"]["winningPlan"], "FETCH") is None


def test_skip_above_blocking_sort_fetches_all(db, skipcoll):
    # add_skip_stage_before_fetch.js: .sort({d: 1}) needs a field outside the index: all 2500 fetched
    e = _explain(db, {"find": "skip_before_fetch", "filter": {"a": 0, "b": 2}, "hint": HINT_ABC,
                      "sort": {"d": 1}, "skip": 2400})
    assert e["executionStats"]["totalDocsExamined"] == 2500
    assert stages(e["queryPlanner"]["winningPlan"])[:3] == ["SKIP", "SORT", "FETCH"]


def test_skip_stays_above_fetch_with_residual_filter(db, skipcoll):
    # the rule applies only when the FETCH has no filter (SERVER-13946: a FETCH filter decides which
    # documents count towards the skip, so they must be fetched): d is not in the index
    e = _explain(db, {"find": "skip_before_fetch", "filter": {"a": 0, "b": 2, "d": {"$gte": 0}},
                      "hint": HINT_ABC, "skip": 2400})
    assert e["executionStats"]["totalDocsExamined"] == 2500
    assert stages(e["queryPlanner"]["winningPlan"])[:2] == ["SKIP", "FETCH"]


def test_skip_results_unchanged(skipcoll):
    # the placement changes statistics, never results: same documents as skipping after the fetch
    got = [d["_id"] for d in skipcoll.find({"a": 0, "b": 2}).hint(list(HINT_ABC.items())).skip(2400)]
    ref = [d["_id"] for d in skipcoll.find({"a": 0, "b": 2, "d": {"$gte": 0}})
           .hint(list(HINT_ABC.items())).skip(2400)]
    assert got == ref and len(got) == 100


# ---------------------------------------------------------------------------------------- COUNT_SCAN

@pytest.fixture()
def countcoll(db):
    c = db.countscan
    c.create_index("a")
    c.insert_many([{"a": i % 5, "b": i} for i in range(100)])
    return c


def test_count_scan_examines_n_plus_one(db, countcoll):
    # src/mongo/db/exec/classic/count_scan.cpp doWork: ++keysExamined happens before the
    # "if (!entry) -> IS_EOF" check, so 20 matching keys report 21 keys examined
    e = _explain(db, {"count": "countscan", "query": {"a": 2}})
    cs = find_stage(e["executionStats"]["executionStages"], "COUNT_SCAN")
    assert cs["keysExamined"] == 21
    assert e["executionStats"]["totalKeysExamined"] == 21
    assert e["executionStats"]["executionStages"]["nCounted"] == 20
    assert e["executionStats"]["totalDocsExamined"] == 0


def test_count_scan_with_skip(db, countcoll):
    # src/mongo/db/exec/classic/count.cpp: the COUNT stage skips (nSkipped) and counts the rest; the scan
    # below it still reaches its end (n + 1 keys)
    e = _explain(db, {"count": "countscan", "query": {"a": 2}, "skip": 5})
    st = e["executionStats"]["executionStages"]
    assert (st["nCounted"], st["nSkipped"]) == (15, 5)
    assert st["inputStage"]["stage"] == "COUNT_SCAN"
    assert st["inputStage"]["keysExamined"] == 21
    assert countcoll.count_documents({"a": 2}, skip=5) == 15


def test_count_scan_with_skip_and_limit_stops_early(db, countcoll):
    # count.cpp: COUNT is EOF once nCounted reaches the limit; COUNT_SCAN is not asked for another key
    e = _explain(db, {"count": "countscan", "query": {"a": 2}, "skip": 5, "limit": 3})
    st = e["executionStats"]["executionStages"]
    assert (st["nCounted"], st["nSkipped"]) == (3, 5)
    assert st["inputStage"]["keysExamined"] == 8


def test_fast_count_skip(db, countcoll):
    # src/mongo/db/exec/classic/record_store_fast_count.cpp applies skip and limit to the record count
    e = _explain(db, {"count": "countscan", "skip": 30})
    st = e["executionStats"]["executionStages"]
    assert st["stage"] == "RECORD_STORE_FAST_COUNT"
    assert (st["nCounted"], st["nSkipped"]) == (70, 30)


# ---------------------------------------------------------------------------------------- $indexStats

def _ops(coll, name: str) -> int:
    return next(d for d in coll.aggregate([{"$indexStats": {}}]) if d["name"] == name)["accesses"]["ops"]


def _since(coll, name: str):
    return next(d for d in coll.aggregate([{"$indexStats": {}}]) if d["name"] == name)["accesses"]["since"]


def test_index_stats_explain_does_not_count(db):
    # jstests/core/index/index_stats.js: "index access counters are not incremented for explain execution"
    c = db.ixstats
    c.create_index("a")
    c.insert_many([{"a": i} for i in range(10)])
    assert _ops(c, "a_1") == 0
    c.find({"a": {"$gte": 3}}).explain()
    db.command("explain", {"count": "ixstats", "query": {"a": 3}})
    db.command("explain", {"aggregate": "ixstats", "pipeline": [{"$match": {"a": 3}}], "cursor": {}})
    assert _ops(c, "a_1") == 0
    list(c.find({"a": {"$gte": 3}}))
    assert _ops(c, "a_1") == 1
    list(c.find({"a": 4}).limit(1))  # EXPRESS path counts too
    assert _ops(c, "a_1") == 2


def test_index_stats_hide_unhide_resets(db):
    # manual db.collection.hideIndex / unhideIndex, "Index Modifications Reset Statistics": hiding or
    # unhiding an index resets its $indexStats (ops back to 0, since moved forward)
    c = db.ixhide
    c.create_index("a")
    c.insert_many([{"a": i} for i in range(10)])
    list(c.find({"a": {"$gte": 3}}))
    list(c.find({"a": {"$gte": 5}}))
    assert _ops(c, "a_1") == 2
    since0 = _since(c, "a_1")
    db.command("collMod", "ixhide", index={"name": "a_1", "hidden": True})
    assert _ops(c, "a_1") == 0
    assert _since(c, "a_1") >= since0
    list(c.find({"a": {"$gte": 3}}))  # hidden: not used, not counted
    assert _ops(c, "a_1") == 0
    db.command("collMod", "ixhide", index={"name": "a_1", "hidden": False})
    list(c.find({"a": {"$gte": 3}}))
    assert _ops(c, "a_1") == 1


# ---------------------------------------------------------------------------------------- regex + collation

@pytest.fixture()
def accounts(db):
    c = db.accounts
    c.insert_many([{"username": "user%04d" % i, "n": i} for i in range(200)]
                  + [{"username": u, "n": -1} for u in ("sam", "Sam", "SAM")])
    c.create_index("username")
    c.create_index("username", collation={"locale": "en", "strength": 2}, name="username_ci")
    return c


CI = {"locale": "en", "strength": 2}


def _winner_ix(e: dict):
    return find_stage(e["queryPlanner"]["winningPlan"], "IXSCAN")


def test_regex_under_collation_uses_simple_index(db, accounts):
    # src/mongo/db/query/planner_ixselect.cpp (_compatible): a REGEX predicate is incompatible only with an
    # index that has a non-simple collator; the manual (collation, "Collation and Index Use") restricts only
    # string comparisons to same-collation indexes. So /^sam$/i under a strength-2 query collation scans the
    # simple username_1 index whole: many keys, 3 documents.
    e = _explain(db, {"find": "accounts", "filter": {"username": {"$regex": "^sam$", "$options": "i"}},
                      "collation": CI})
    ix = _winner_ix(e)
    assert ix is not None and ix["indexName"] == "username_1"
    es = e["executionStats"]
    assert es["totalKeysExamined"] == 203 and es["totalDocsExamined"] == 3 and es["nReturned"] == 3


def test_regex_never_uses_collation_index(db):
    # planner_ixselect.cpp: with only the collation index the $regex is a COLLSCAN, even with the same collation
    c = db.only_ci
    c.insert_many([{"username": u} for u in ("sam", "Sam", "bob")])
    c.create_index("username", collation=CI, name="username_ci")
    e = _explain(db, {"find": "only_ci", "filter": {"username": {"$regex": "^sam"}}, "collation": CI})
    assert e["queryPlanner"]["winningPlan"]["stage"] == "COLLSCAN"
    assert e["executionStats"]["nReturned"] == 1


def test_string_equality_needs_same_collation(db, accounts):
    # manual core/index-case-insensitive: the strength-2 query uses the strength-2 index (3 results);
    # the simple index is not eligible for a string comparison under another collation
    e = _explain(db, {"find": "accounts", "filter": {"username": "sam"}, "collation": CI})
    assert _winner_ix(e)["indexName"] == "username_ci"
    assert e["executionStats"]["nReturned"] == 3
    assert e["queryPlanner"]["rejectedPlans"] == []


def test_numeric_predicate_uses_index_of_other_collation(db):
    # planner_ixselect.cpp: only comparisons to strings/objects/arrays require matching collators; a number
    # range may use an index with another collation (same keys for numbers)
    c = db.numci
    c.insert_many([{"n": i, "s": "x%d" % i} for i in range(50)])
    c.create_index("n", collation=CI, name="n_ci")
    e = _explain(db, {"find": "numci", "filter": {"n": {"$gte": 45}}})
    assert _winner_ix(e)["indexName"] == "n_ci"
    assert e["executionStats"]["totalKeysExamined"] == 5 and e["executionStats"]["nReturned"] == 5


# ---------------------------------------------------------------------------------------- plan ranking ties

def test_tie_prefers_index_answering_more_of_the_predicate(db):
    # src/mongo/db/query/plan_ranker.cpp getIndexBoundsScore + plan_ranker.h addTieBreakingHeuristicsBonuses
    # (internalQueryPlanTieBreakingWithIndexHeuristics): equal productivity, same plan shape -> the index
    # with the longer single-point prefix wins, whatever the index creation order
    for name, order in (("tie1", [[("a", 1)], [("a", 1), ("b", 1)]]), ("tie2", [[("a", 1), ("b", 1)], [("a", 1)]])):
        c = db[name]
        for k in order:
            c.create_index(k)
        c.insert_many([{"a": 1, "b": 1, "i": i} for i in range(300)])
        e = _explain(db, {"find": name, "filter": {"a": 1, "b": 1}}, "allPlansExecution")
        assert find_stage(e["queryPlanner"]["winningPlan"], "IXSCAN")["indexName"] == "a_1_b_1"
        assert len(e["queryPlanner"]["rejectedPlans"]) == 1


def test_tie_prefers_shorter_key_pattern(db):
    # plan_ranker.cpp getIndexBoundsScore: "IndexBounds with shortest index key pattern wins" when the
    # bounded prefixes are equal ({a: 1} on a_1 vs a_1_b_1)
    c = db.tie3
    c.create_index([("a", 1), ("b", 1)])
    c.create_index("a")
    c.insert_many([{"a": 1, "b": i} for i in range(300)])
    e = _explain(db, {"find": "tie3", "filter": {"a": 1}}, "allPlansExecution")
    assert find_stage(e["queryPlanner"]["winningPlan"], "IXSCAN")["indexName"] == "a_1"


# ---------------------------------------------------------------------------------------- hashed indexes

def test_hash64_matches_server_unit_test():
    # src/mongo/db/hasher_test.cpp expected values (BSONElementHasher::hash64, seed 0)
    import datetime
    from bson import Int64, ObjectId
    from labkit.engine.index.hashed import hash64
    assert hash64(1) == hash64(1.987) == hash64(Int64(1)) == 5902408780260971510
    assert hash64(0) == hash64(float("nan")) == 4854801880128277513
    assert hash64(-1) == 1140205862565771219
    assert hash64("abc") == 8478485326885698097
    assert hash64("") == 2049396243249673340
    assert hash64({"a": "abc", "b": Int64(123)}) == 4771603801758380216
    assert hash64({}) == 7980500913326740417
    assert hash64(["bar", "baz", "qux"]) == -2938911267422831539
    assert hash64([]) == 8849948234993459283
    assert hash64(ObjectId("010203040506070809101112")) == -5588663249627035708
    assert hash64(True) == 6405873908747105701 and hash64(False) == 6289544573401934092
    assert hash64(datetime.datetime(1970, 1, 1)) == -1178696894582842035
    assert hash64(1.7976931348623157e308) == 921523596458303250


@pytest.fixture()
def hashed(db):
    c = db.hashed
    c.insert_many([{"a": i % 10, "b": i} for i in range(100)])
    c.create_index([("a", "hashed")])
    return c


def test_hashed_equality_point_bounds(db, hashed):
    # manual core/indexes/index-types/index-hashed: equality uses the index; bounds are the hash
    # (convertShardKeyToHashed(1) == hasher_test.cpp's 5902408780260971510); never exact -> FETCH filter
    e = _explain(db, {"find": "hashed", "filter": {"a": 1}})
    ix = find_stage(e["queryPlanner"]["winningPlan"], "IXSCAN")
    assert ix["keyPattern"] == {"a": "hashed"}
    assert ix["indexBounds"] == {"a": ["[5902408780260971510, 5902408780260971510]"]}
    assert find_stage(e["queryPlanner"]["winningPlan"], "FETCH")["filter"] == {"a": 1}
    assert (e["executionStats"]["totalKeysExamined"], e["executionStats"]["nReturned"]) == (10, 10)
    assert sorted(d["b"] for d in hashed.find({"a": 1})) == list(range(1, 100, 10))


def test_hashed_no_range(db, hashed):
    # manual (hashed indexes): "Hashed indexes ... do not support range queries": COLLSCAN
    e = _explain(db, {"find": "hashed", "filter": {"a": {"$gt": 5}}})
    assert e["queryPlanner"]["winningPlan"]["stage"] == "COLLSCAN"
    assert e["executionStats"]["nReturned"] == 40


def test_hashed_arrays_refused(db, hashed):
    # manual: "MongoDB does not support creating compound/hashed indexes ... on fields containing arrays";
    # the server error is 16766 "hashed indexes do not currently support array values"
    from pymongo.errors import OperationFailure
    with pytest.raises(OperationFailure) as ei:
        hashed.insert_one({"a": [1, 2]})
    assert ei.value.code == 16766
    c = db.hashed_build
    c.insert_one({"x": [1]})
    with pytest.raises(OperationFailure) as ei:
        c.create_index([("x", "hashed")])
    assert ei.value.code == 16766


def test_hashed_not_unique_one_field(db):
    # hash_access_method / index key validation: unique hashed -> 16764; two hashed fields -> 31303
    from pymongo.errors import OperationFailure
    c = db.hashed_rules
    with pytest.raises(OperationFailure) as ei:
        c.create_index([("a", "hashed")], unique=True)
    assert ei.value.code == 16764
    with pytest.raises(OperationFailure) as ei:
        c.create_index([("a", "hashed"), ("b", "hashed")])
    assert ei.value.code == 31303


def test_compound_hashed(db):
    # manual (compound hashed index, 4.4+): a range on the non-hashed prefix plus equality on the hashed field
    c = db.chashed
    c.insert_many([{"a": i % 10, "b": i} for i in range(100)])
    c.create_index([("b", 1), ("a", "hashed")])
    e = _explain(db, {"find": "chashed", "filter": {"b": {"$gte": 90}, "a": 3}})
    ix = find_stage(e["queryPlanner"]["winningPlan"], "IXSCAN")
    assert ix["indexBounds"]["b"] == ["[90, inf.0]"]
    from labkit.engine.index.hashed import hash64
    h = int(hash64(3))
    assert ix["indexBounds"]["a"] == ["[%d, %d]" % (h, h)]
    assert e["executionStats"]["nReturned"] == 1


# ---------------------------------------------------------------------------------------- IDHACK / OR+sort

@pytest.fixture()
def idcoll(db):
    c = db.idcoll
    c.insert_many([{"_id": i, "a": {"x": i}, "b": i} for i in range(50)])
    return c


def test_id_equality_express_then_idhack(db, idcoll):
    # jstests/core/index/express_id_eq.js (8.0): {_id: v} with a simple projection is EXPRESS_IXSCAN;
    # get_executor.cpp isIdHackEligibleQuery: with a projection express does not take (dotted path) the
    # query is still IDHACK, 1 key and 1 document - never a multi-planned IXSCAN
    e = _explain(db, {"find": "idcoll", "filter": {"_id": 7}, "projection": {"b": 1}})
    assert e["queryPlanner"]["winningPlan"]["stage"] == "EXPRESS_IXSCAN"
    e = _explain(db, {"find": "idcoll", "filter": {"_id": 7}, "projection": {"a.x": 1}})
    assert stages(e["queryPlanner"]["winningPlan"]) == ["PROJECTION_DEFAULT", "IDHACK"]
    assert (e["executionStats"]["totalKeysExamined"], e["executionStats"]["totalDocsExamined"]) == (1, 1)
    assert list(idcoll.find({"_id": 7}, {"a.x": 1})) == [{"_id": 7, "a": {"x": 7}}]


def test_idhack_not_with_skip_or_hint(db, idcoll):
    # get_executor.cpp isIdHackEligibleQuery: skip or hint -> ordinary planning (IXSCAN on _id_)
    e = _explain(db, {"find": "idcoll", "filter": {"_id": 7}, "projection": {"a.x": 1}, "skip": 0,
                      "hint": {"_id": 1}})
    assert find_stage(e["queryPlanner"]["winningPlan"], "IDHACK") is None
    assert find_stage(e["queryPlanner"]["winningPlan"], "IXSCAN")["indexName"] == "_id_"


def test_or_with_sort_uses_sort_merge(db):
    # src/mongo/db/query/planner_access.cpp buildIndexedOr: every branch scan provides the sort -> MERGE_SORT
    # (explain SORT_MERGE) instead of OR + blocking SORT (manual explain-results: SORT_MERGE stage)
    c = db.orsort
    c.insert_many([{"a": i % 5, "b": i % 7, "c": i} for i in range(200)])
    c.create_index([("a", 1), ("c", 1)])
    c.create_index([("b", 1), ("c", 1)])
    e = _explain(db, {"find": "orsort", "filter": {"$or": [{"a": 1}, {"b": 2}]}, "sort": {"c": -1}})
    plan = e["queryPlanner"]["winningPlan"]
    assert find_stage(plan, "SORT") is None
    sm = find_stage(plan, "SORT_MERGE")
    assert sm is not None and [s["indexName"] for s in sm["inputStages"]] == ["a_1_c_1", "b_1_c_1"]
    got = [d["c"] for d in c.find({"$or": [{"a": 1}, {"b": 2}]}).sort("c", -1)]
    assert got == sorted({i for i in range(200) if i % 5 == 1 or i % 7 == 2}, reverse=True)


def test_or_with_sort_blocking_when_a_branch_cannot(db):
    # buildIndexedOr: one branch's index does not provide {c: 1} -> OR under a blocking SORT
    c = db.orsort2
    c.insert_many([{"a": i % 5, "b": i % 7, "c": i} for i in range(200)])
    c.create_index([("a", 1), ("c", 1)])
    c.create_index("b")
    e = _explain(db, {"find": "orsort2", "filter": {"$or": [{"a": 1}, {"b": 2}]}, "sort": {"c": 1}})
    plan = e["queryPlanner"]["winningPlan"]
    assert find_stage(plan, "SORT") is not None and find_stage(plan, "OR") is not None


# ---------------------------------------------------------------------------------------- SBE pushdown

@pytest.fixture()
def joins(db):
    db.orders.insert_many([{"_id": i, "cust": i % 20, "amt": i} for i in range(1000)])
    db.cust.insert_many([{"_id": i, "name": "c%d" % i} for i in range(20)])
    return db


LOOKUP = [{"$lookup": {"from": "orders", "localField": "_id", "foreignField": "cust", "as": "o"}}]


def _agg(db, coll, pipeline, **kw):
    return _explain(db, dict({"aggregate": coll, "pipeline": pipeline, "cursor": {}}, **kw))


def test_lookup_pushdown_hash_join(db, joins):
    # planner_analysis.cpp determineLookupStrategy: no index on foreignField, allowDiskUse (default true),
    # foreign collection within internalQueryCollectionMaxNoOfDocumentsToChooseHashJoin (10,000) -> HashJoin;
    # explain shape as lookup_pushdown.js reads it (explainVersion "2", winningPlan.queryPlan EQ_LOOKUP)
    e = _agg(db, "cust", LOOKUP)
    assert e["explainVersion"] == "2" and "stages" not in e
    w = e["queryPlanner"]["winningPlan"]
    assert "slotBasedPlan" in w
    q = w["queryPlan"]
    assert (q["stage"], q["strategy"], q["foreignCollection"], q["localField"], q["foreignField"], q["asField"]) \
        == ("EQ_LOOKUP", "HashJoin", "plans80.orders", "_id", "cust", "o")
    assert q["inputStage"]["stage"] == "COLLSCAN" and q["planNodeId"] == 2 and q["inputStage"]["planNodeId"] == 1
    # the hash join reads the foreign collection once: 20 local + 1,000 foreign documents
    assert e["executionStats"]["totalDocsExamined"] == 1020
    assert e["executionStats"]["nReturned"] == 20


def test_lookup_pushdown_nested_loop_without_disk_use(db, joins):
    # determineLookupStrategy: allowDiskUse false -> NestedLoopJoin (lookup_pushdown.js); the foreign
    # collection is scanned once per local document: 20 + 20 x 1,000
    e = _agg(db, "cust", LOOKUP, allowDiskUse=False)
    assert e["queryPlanner"]["winningPlan"]["queryPlan"]["strategy"] == "NestedLoopJoin"
    assert e["executionStats"]["totalDocsExamined"] == 20020


def test_lookup_pushdown_nested_loop_over_hash_join_limit(db):
    # isEligibleForHashJoin: more than 10,000 foreign documents -> NestedLoopJoin even with allowDiskUse
    db.big.insert_many([{"k": i % 3} for i in range(10001)])
    db.small.insert_many([{"_id": i} for i in range(2)])
    e = _agg(db, "small", [{"$lookup": {"from": "big", "localField": "_id", "foreignField": "k", "as": "b"}}])
    assert e["queryPlanner"]["winningPlan"]["queryPlan"]["strategy"] == "NestedLoopJoin"


def test_lookup_pushdown_indexed_loop_join(db, joins):
    # determineLookupStrategy: an index led by foreignField (not partial/sparse, same collation) ->
    # IndexedLoopJoin with the index; the fewest-fields index first
    db.orders.create_index([("cust", 1), ("amt", 1)])
    db.orders.create_index("cust")
    db.orders.create_index("cust", name="cust_partial", partialFilterExpression={"amt": {"$gt": 5}})
    e = _agg(db, "cust", LOOKUP)
    q = e["queryPlanner"]["winningPlan"]["queryPlan"]
    assert (q["strategy"], q["indexName"]) == ("IndexedLoopJoin", "cust_1")
    # 20 local documents + 1,000 matched orders, one index key each
    assert (e["executionStats"]["totalDocsExamined"], e["executionStats"]["totalKeysExamined"]) == (1020, 1000)


def test_lookup_pushdown_nonexistent_foreign(db, joins):
    # determineLookupStrategy: missing foreign collection -> NonExistentForeignCollection
    e = _agg(db, "cust", [{"$lookup": {"from": "nope", "localField": "_id", "foreignField": "x", "as": "n"}}])
    assert e["queryPlanner"]["winningPlan"]["queryPlan"]["strategy"] == "NonExistentForeignCollection"


def test_group_pushdown_and_rest_classic(db, joins):
    # 8.0 trySbeRestricted: a $group after the find layer runs in SBE (GROUP node); a later $project stays in
    # the classic pipeline, so the explain has stages [$cursor (SBE), $project] with explainVersion "2"
    e = _agg(db, "orders", [{"$match": {"amt": {"$gte": 500}}}, {"$group": {"_id": "$cust", "t": {"$sum": "$amt"}}},
                            {"$project": {"t": 1}}])
    assert e["explainVersion"] == "2"
    cur = e["stages"][0]["$cursor"]
    q = cur["queryPlanner"]["winningPlan"]["queryPlan"]
    assert q["stage"] == "GROUP" and q["inputStage"]["stage"] == "COLLSCAN"
    assert cur["executionStats"]["nReturned"] == 20 and cur["executionStats"]["totalDocsExamined"] == 1000
    assert "$project" in e["stages"][1]


def test_classic_when_not_pushed_down(db, joins):
    # lookup_pushdown.js: $lookup with let/pipeline is not pushed down; a pipeline whose first stage after the
    # find layer is not $group/$lookup stays classic (explainVersion "1", $cursor + stages)
    e = _agg(db, "cust", [{"$lookup": {"from": "orders", "let": {"c": "$_id"}, "pipeline": [
        {"$match": {"$expr": {"$eq": ["$cust", "$$c"]}}}], "as": "o"}}])
    assert e["explainVersion"] == "1" and "$lookup" in e["stages"][1]
    e = _agg(db, "orders", [{"$project": {"cust": 1}}, {"$group": {"_id": "$cust"}}])
    assert e["explainVersion"] == "1"
    # a $lookup whose as-field is unwound next is absorbed by the classic $lookup
    e = _agg(db, "cust", LOOKUP + [{"$unwind": "$o"}])
    assert e["explainVersion"] == "1"


# src/mongo/db/query/query_utils.cpp (v8.0) isQuerySbeCompatible: "If we don't support all expressions used or
# the query is eligible for IDHack, don't use SBE" (isIdHackEligibleQuery, query_utils.h: no hint, skip,
# min/max, showRecordId or tailable, isSimpleIdQuery on the filter, the collection's collation); and
# get_executor.cpp getExecutorFind tries the express path (isExpressEligible) before any SBE pushdown. So an
# aggregate whose $match is a simple _id equality runs its $lookup / $group stages in the classic engine.
ID_LOOKUPS = [{"$match": {"_id": 7}},
              {"$lookup": {"from": "orders", "localField": "_id", "foreignField": "cust", "as": "o"}},
              {"$lookup": {"from": "cust", "localField": "_id", "foreignField": "_id", "as": "self"}}]


def _id_joins(db):
    db.orders.insert_many([{"_id": i, "cust": i % 20, "amt": i} for i in range(1000)])
    db.cust.insert_many([{"_id": i, "name": "c%d" % i} for i in range(20)])
    return db


def test_idhack_query_keeps_lookup_classic(client, request):
    db = _id_joins(client.get_database("idhack_%s" % request.node.callspec.id.replace("-", "_")))
    e = _agg(db, "cust", ID_LOOKUPS)
    assert e["explainVersion"] == "1"
    cur, first, second = e["stages"]
    # the $cursor stage: the express _id point lookup, one key and one document
    assert cur["$cursor"]["queryPlanner"]["winningPlan"]["stage"] == "EXPRESS_IXSCAN"
    st = cur["$cursor"]["executionStats"]
    assert (st["nReturned"], st["totalKeysExamined"], st["totalDocsExamined"]) == (1, 1, 1)
    # the classic $lookup reports its own foreign-side statistics: no index on orders.cust -> a collection
    # scan of the 1,000 orders for the one local document
    assert first["$lookup"]["from"] == "orders"
    assert (first["totalDocsExamined"], first["totalKeysExamined"], first["collectionScans"],
            first["indexesUsed"]) == (1000, 0, 1, [])
    # foreignField _id: the foreign query is itself an _id point lookup through the _id index
    assert (second["totalDocsExamined"], second["totalKeysExamined"], second["collectionScans"],
            second["indexesUsed"]) == (1, 1, 0, ["_id_"])
    # with an index on the foreign field, the 50 matching orders are read through it
    db.orders.create_index("cust")
    e = _agg(db, "cust", ID_LOOKUPS)
    first = e["stages"][1]
    # (one index interval: its 50 keys, as the same equality's find examines)
    assert (first["totalDocsExamined"], first["totalKeysExamined"], first["collectionScans"],
            first["indexesUsed"]) == (50, 50, 0, ["cust_1"])
    # the documents are the same whichever engine runs the join
    (doc,) = db.cust.aggregate(ID_LOOKUPS)
    assert len(doc["o"]) == 50 and doc["self"] == [{"_id": 7, "name": "c7"}]


@pytest.mark.parametrize("pipeline, command", [
    # not a simple _id equality (isSimpleIdQuery): a range, another field, an operator other than $eq
    ([{"$match": {"_id": {"$gte": 7}}}] + LOOKUP, {}),
    ([{"$match": {"_id": 7, "name": "c7"}}] + LOOKUP, {}),
    ([{"$match": {"_id": {"$in": [7, 8]}}}] + LOOKUP, {}),
    # a hint or a skip makes the query ineligible for IDHACK
    ([{"$match": {"_id": 7}}] + LOOKUP, {"hint": {"_id": 1}}),
    ([{"$match": {"_id": 7}}, {"$skip": 1}] + LOOKUP, {}),
    # a query collation other than the collection's (simple) default (collatorsMatch)
    ([{"$match": {"_id": 7}}] + LOOKUP, {"collation": {"locale": "en"}}),
])
def test_not_idhack_eligible_pushes_down(db, joins, pipeline, command):
    e = _agg(db, "cust", pipeline, **command)
    assert e["explainVersion"] == "2"


def test_idhack_query_keeps_group_classic(db, joins):
    e = _agg(db, "orders", [{"$match": {"_id": {"$eq": 7}}}, {"$group": {"_id": "$cust", "n": {"$sum": 1}}}])
    assert e["explainVersion"] == "1" and "$group" in e["stages"][1]


def test_show_plan_reads_sbe(db, joins):
    # labkit.show_plan / plan_summary read both shapes
    from labkit.explain import plan_summary, show_plan
    e = _agg(db, "cust", LOOKUP)
    s = plan_summary(e)
    assert s["stages"].startswith("EQ_LOOKUP") and s["lookups"][0]["strategy"] == "HashJoin"
    df = show_plan(e)
    assert list(df["stages"])[1] == "HashJoin" and df.iloc[0]["docsExamined"] == 1020


# ---------------------------------------------------------------------------------------- limits

MB_STR = "x" * (1024 * 1024)  # one shared string: the documents are large in BSON, small in memory here


@pytest.fixture()
def bigsort(db):
    c = db.bigsort
    c.insert_many([{"i": i, "s": MB_STR} for i in range(110)])  # about 115 MB of BSON
    return c


def _sort_stage(e: dict) -> dict:
    return find_stage(e["executionStats"]["executionStages"], "SORT")


def test_blocking_sort_spills_by_default(db, bigsort):
    # manual cursor.allowDiskUse / allowDiskUseByDefault (6.0+ default true): a blocking sort over the
    # 100 MB internalQueryMaxBlockingSortMemoryUsageBytes spills: usedDisk true, spills >= 1, and
    # totalDataSizeSorted reports the bytes sorted (explain-results "executionStats.executionStages" SORT)
    e = bigsort.find({}).sort("i", -1).explain()
    st = _sort_stage(e)
    assert st["memLimit"] == 104857600
    assert st["usedDisk"] is True and st["spills"] == 1
    assert st["totalDataSizeSorted"] > 104857600
    assert [d["i"] for d in bigsort.find({}, {"s": 0}).sort("i", -1).limit(3)] == [109, 108, 107]


def test_blocking_sort_without_disk_use_fails_292(db, bigsort):
    # manual cursor.allowDiskUse: with allowDiskUse false a sort over 100 MB fails with
    # QueryExceededMemoryLimitNoDiskUseAllowed (292)
    from pymongo.errors import OperationFailure
    with pytest.raises(OperationFailure) as ei:
        list(bigsort.find({}).sort("i", -1).allow_disk_use(False))
    assert ei.value.code == 292 and "Sort exceeded memory limit of 104857600 bytes" in str(ei.value)
    with pytest.raises(OperationFailure) as ei:
        list(bigsort.aggregate([{"$project": {"i": 1, "s": 1}}, {"$sort": {"i": 1}}], allowDiskUse=False))
    assert ei.value.code == 292


def test_top_k_sort_stays_in_memory(db, bigsort):
    # a sort with a limit keeps only k documents (SORT limitAmount): no spill, allowed without disk use
    assert len(list(bigsort.find({}).sort("i", -1).limit(5).allow_disk_use(False))) == 5
    st = _sort_stage(bigsort.find({}).sort("i", -1).limit(5).explain())
    assert st["usedDisk"] is False and st["spills"] == 0 and 0 < st["totalDataSizeSorted"] < 104857600


def test_small_sort_honest_size(db):
    # totalDataSizeSorted is computed from the data: the BSON bytes of the sorted documents
    import bson
    c = db.smallsort
    c.insert_many([{"i": i} for i in range(10)])
    st = _sort_stage(c.find({}).sort("i", -1).explain())
    assert st["totalDataSizeSorted"] == sum(len(bson.encode(d)) for d in c.find({}))
    assert st["usedDisk"] is False


@pytest.fixture()
def bigjoin(db):
    db.bo.insert_many([{"k": 1, "s": MB_STR} for _ in range(18)])
    db.bl.insert_one({"_id": 1})
    return db


def test_lookup_result_over_16mb_is_bson_object_too_large(db, bigjoin):
    # src/mongo/bson/bsonobj.cpp: a result document over BSONObjMaxInternalSize (16793600) is
    # BSONObjectTooLarge (10334); the $lookup's own limit is 100 MB
    # (internalLookupStageIntermediateDocumentMaxSizeBytes, document_source_lookup.cpp code 4568), so a
    # later stage that shrinks the document succeeds
    from pymongo.errors import OperationFailure
    p = [{"$lookup": {"from": "bo", "localField": "_id", "foreignField": "k", "as": "m"}}]
    with pytest.raises(OperationFailure) as ei:
        list(db.bl.aggregate(p))
    assert ei.value.code == 10334 and "Size must be between 0 and 16793600(16MB)" in str(ei.value)
    assert list(db.bl.aggregate(p + [{"$project": {"n": {"$size": "$m"}}}])) == [{"_id": 1, "n": 18}]


def test_lookup_over_100mb_4568(db, bigjoin):
    # document_source_lookup.cpp: uassert 4568 "Total size of documents in <from> matching pipeline's
    # $lookup stage exceeds 104857600 bytes"
    from pymongo.errors import OperationFailure
    db.bo.insert_many([{"k": 1, "s": MB_STR} for _ in range(90)])
    with pytest.raises(OperationFailure) as ei:
        list(db.bl.aggregate([{"$lookup": {"from": "bo", "localField": "_id", "foreignField": "k", "as": "m"}},
                              {"$project": {"n": {"$size": "$m"}}}]))
    assert ei.value.code == 4568
    assert "Total size of documents in bo matching pipeline's $lookup stage exceeds 104857600 bytes" in str(ei.value)


def test_group_push_over_16mb(db, bigjoin):
    # a $group + $push result over 16 MB fails when the reply is built (BSONObjectTooLarge 10334)
    from pymongo.errors import OperationFailure
    with pytest.raises(OperationFailure) as ei:
        list(db.bo.aggregate([{"$group": {"_id": "$k", "a": {"$push": "$$ROOT"}}}]))
    assert ei.value.code == 10334


def test_facet_limits(db, bigjoin):
    # document_source_facet.cpp: 4031700 "document constructed by $facet is N bytes, which exceeds the limit
    # of 104857600 bytes" (internalQueryFacetMaxOutputDocSizeBytes); under that, a 16 MB+ result is 10334
    from pymongo.errors import OperationFailure
    with pytest.raises(OperationFailure) as ei:
        list(db.bo.aggregate([{"$facet": {"a": [{"$match": {}}]}}]))
    assert ei.value.code == 10334
    db.bo.insert_many([{"k": 2, "s": MB_STR} for _ in range(90)])
    with pytest.raises(OperationFailure) as ei:
        list(db.bo.aggregate([{"$facet": {"a": [{"$match": {}}]}}, {"$project": {"n": {"$size": "$a"}}}]))
    assert ei.value.code == 4031700


def test_explain_of_failing_sort_reports_it(db, bigsort):
    # explain-results (executionStats): an execution error is reported as executionSuccess false with the
    # error; the explain command itself succeeds
    e = _explain(db, {"find": "bigsort", "sort": {"i": 1}, "allowDiskUse": False})
    es = e["executionStats"]
    assert es["executionSuccess"] is False and es["errorCode"] == 292
    assert "Sort exceeded memory limit" in es["errorMessage"]
    assert e["queryPlanner"]["winningPlan"]["stage"] == "SORT"


def test_express_not_with_batch_size_then_idhack(db, idcoll):
    # jstests/core/index/express_id_eq.js / the 8.0 express eligibility: batchSize disables EXPRESS; the _id
    # equality is then IDHACK (isIdHackEligibleQuery has no batchSize condition)
    e = _explain(db, {"find": "idcoll", "filter": {"_id": 7}, "batchSize": 5})
    assert e["queryPlanner"]["winningPlan"]["stage"] == "IDHACK"
    assert list(idcoll.find({"_id": 7}).batch_size(5)) == [{"_id": 7, "a": {"x": 7}, "b": 7}]


def test_express_index_choice_fewest_fields(db):
    # plan_executor_express.cpp getIndexForExpressEquality: a unique single-field index, or any index with
    # limit 1; among the eligible ones the fewest fields, the first in catalog order on a tie
    c = db.expr_choice
    c.insert_many([{"a": i, "b": i} for i in range(20)])
    c.create_index([("a", 1), ("b", 1)])
    c.create_index("a")
    e = c.find({"a": 3}).limit(1).explain()
    w = e["queryPlanner"]["winningPlan"]
    assert (w["stage"], w["indexName"]) == ("EXPRESS_IXSCAN", "a_1")
    e = c.find({"a": 3}).explain()  # no limit, no unique index: ordinary planning
    assert e["queryPlanner"]["winningPlan"]["stage"] != "EXPRESS_IXSCAN"
