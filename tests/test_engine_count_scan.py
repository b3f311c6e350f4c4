"""Counting without reading documents: COUNT_SCAN for ``count_documents`` (an aggregate), count-like pipelines
and the ``count`` command; RECORD_STORE_FAST_COUNT for ``estimated_document_count``. In process and over the wire
(tests/both_paths.py), with explain, the profiler and the result agreeing.

Facts:

* pymongo's ``Collection.count_documents`` sends ``aggregate`` with ``[{$match: filter}, ({$skip}), ({$limit}),
  {$group: {_id: 1, n: {$sum: 1}}}]``; ``estimated_document_count`` sends ``{count: <collection>}``.
* src/mongo/db/pipeline/pipeline_d.cpp: when the stages after the pushed-down query need no document data
  ("the remaining stages in the pipeline don't actually need to read any data produced by the query execution
  layer") the query is planned with ``QueryPlannerParams::IS_COUNT``.
* src/mongo/db/query/get_executor.cpp: with IS_COUNT, "See if one of our solutions is a fast count hack in
  disguise": the first solution ``turnIxscanIntoCount`` can rewrite is used alone (no multi-planning);
  ``turnIxscanIntoCount`` needs a FETCH without a filter over an IXSCAN without a filter whose bounds are one
  interval (``isSingleInterval``), and makes it a COUNT_SCAN ("count scans return no data, they are always
  forward scans").
* src/mongo/db/exec/classic/count_scan.cpp: ``++_specificStats.keysExamined`` before ``if (!entry) return IS_EOF``
  (so a scan run to its end examines one key more than it counts); ``_shouldDedup`` on a multikey index.
* query_utils.cpp ``isQueryPlanSbeCompatible``: "TODO SERVER-52958: Add support in the SBE stage builders for the
  COUNT_SCAN stage" - a COUNT_SCAN plan runs in the classic engine, so 8.0 explains the aggregate with a
  ``$cursor`` stage (explainVersion "1"), while a pipeline whose ``$group`` reads fields is pushed down to SBE.
* jstests/core/index/index_count_scan.js: ``[{$match: {a: 1}}, {$count: "count"}]``,
  ``[{$match: {a: 1}}, {$project: {_id: 0, a: 0}}, {$count: "count"}]`` and ``[{$sort: {a: 1}}, {$count: "count"}]``
  use a COUNT_SCAN, also on a multikey index.
* src/mongo/db/query/get_executor.cpp ``getExecutorCount``: a count with an empty filter and no hint is a
  RECORD_STORE_FAST_COUNT.
"""
from __future__ import annotations

import pytest
from bson import MaxKey, MinKey

from both_paths import client, server  # noqa: F401 - fixtures


@pytest.fixture()
def coll(client):  # noqa: F811
    db = client["cscan"]
    db.drop_collection("c")
    db.drop_collection("system.profile")
    c = db.c
    c.insert_many([{"_id": i, "a": i % 5, "b": i} for i in range(100)])
    c.create_index("a")
    c.create_index([("a", 1), ("b", 1)])
    return c


def _profiled(coll, run):
    db = coll.database
    db.command("profile", 2)
    try:
        run()
    finally:
        db.command("profile", 0)
    entries = list(db["system.profile"].find({"ns": coll.full_name}))
    db.drop_collection("system.profile")
    return entries[-1]


def _explain(coll, pipeline):
    return coll.database.command({"explain": {"aggregate": coll.name, "pipeline": pipeline, "cursor": {}},
                                  "verbosity": "executionStats"})


def test_count_documents_is_a_count_scan(coll):
    assert coll.count_documents({"a": 2}) == 20
    entry = _profiled(coll, lambda: coll.count_documents({"a": 2}))
    assert entry["command"]["pipeline"] == [{"$match": {"a": 2}}, {"$group": {"_id": 1, "n": {"$sum": 1}}}]
    assert entry["planSummary"] == "COUNT_SCAN { a: 1 }"
    assert (entry["keysExamined"], entry["docsExamined"]) == (21, 0)  # 20 keys and the end-of-range probe


def test_count_like_aggregate_explains_the_cursor_stage(coll):
    pipeline = [{"$match": {"a": 2}}, {"$group": {"_id": 1, "n": {"$sum": 1}}}]
    assert list(coll.aggregate(pipeline)) == [{"_id": 1, "n": 20}]
    e = _explain(coll, pipeline)
    assert e["explainVersion"] == "1"
    cursor = e["stages"][0]["$cursor"]
    plan = cursor["queryPlanner"]["winningPlan"]
    assert plan["stage"] == "COUNT_SCAN" and plan["indexName"] == "a_1"
    assert plan["indexBounds"] == {"startKey": {"a": 2}, "startKeyInclusive": True, "endKey": {"a": 2},
                                   "endKeyInclusive": True}
    assert cursor["queryPlanner"]["rejectedPlans"] == []  # the fast count is taken without a trial
    stats = cursor["executionStats"]
    assert (stats["nReturned"], stats["totalKeysExamined"], stats["totalDocsExamined"]) == (20, 21, 0)
    assert list(e["stages"][1]) == ["$group"]
    # the same count, the same cost: the profiler reads the run of count_documents as of this aggregate
    entry = _profiled(coll, lambda: list(coll.aggregate(pipeline)))
    assert (entry["planSummary"], entry["keysExamined"], entry["docsExamined"]) == ("COUNT_SCAN { a: 1 }", 21, 0)


@pytest.mark.parametrize("pipeline, bounds", [
    ([{"$match": {"a": 1}}, {"$count": "count"}], ({"a": 1}, {"a": 1})),
    ([{"$match": {"a": 1}}, {"$project": {"_id": 0, "a": 0}}, {"$count": "count"}], ({"a": 1}, {"a": 1})),
    ([{"$sort": {"a": 1}}, {"$count": "count"}], ({"a": MinKey()}, {"a": MaxKey()})),
    ([{"$match": {"a": {"$gt": 1}}}, {"$group": {"_id": None, "count": {"$sum": 1}}}], ({"a": 1}, {"a": float("inf")})),
])
def test_index_count_scan_jstest_shapes(coll, pipeline, bounds):
    expected = sum(1 for d in coll.find() if all(_keeps(d, st) for st in pipeline[:1]))
    assert list(coll.aggregate(pipeline))[0]["count"] == expected
    cursor = _explain(coll, pipeline)["stages"][0]["$cursor"]
    plan = cursor["queryPlanner"]["winningPlan"]
    assert plan["stage"] == "COUNT_SCAN"
    assert (plan["indexBounds"]["startKey"], plan["indexBounds"]["endKey"]) == bounds
    assert cursor["executionStats"]["totalDocsExamined"] == 0


def _keeps(doc, stage):
    m = stage.get("$match")
    if m is None:
        return True
    (f, cond), = m.items()
    return doc[f] > cond["$gt"] if isinstance(cond, dict) else doc[f] == cond


def test_multikey_count_scan_counts_each_document_once(client):  # noqa: F811
    c = client["cscan"]["mk"]
    c.drop()
    c.insert_many([{"a": 1}, {"a": 1, "b": 1}, {"a": [1, 1, 2]}, {"a": [0, 1]}, {"a": 3}])
    c.create_index("a")
    assert c.count_documents({"a": 1}) == 4
    st = _explain(c, [{"$match": {"a": 1}}, {"$count": "n"}])["stages"][0]["$cursor"]["executionStats"]
    scan = st["executionStages"]
    assert scan["stage"] == "COUNT_SCAN" and scan["isMultiKey"] is True
    # five keys equal to 1 ({a: [1, 1, 2]} is keyed once per distinct value) + the end probe; four documents
    assert (scan["keysExamined"], scan["advanced"], st["totalDocsExamined"]) == (5, 4, 0)


def test_counts_that_need_documents_are_not_count_scans(coll):
    # a predicate the index cannot answer exactly leaves a FETCH filter; a $group reading a field needs documents
    e = _explain(coll, [{"$match": {"a": 2, "b": {"$mod": [2, 0]}}}, {"$group": {"_id": 1, "n": {"$sum": 1}}}])
    assert e["explainVersion"] == "2"  # not a COUNT_SCAN: the $group is pushed down to SBE
    assert "COUNT_SCAN" not in str(e["queryPlanner"]["winningPlan"]["queryPlan"])
    # the $group reads b: not a count; {a: 1, b: 1} holds a and b, so the keys answer it (pipeline_d.cpp
    # pushes the projection {b: 1, _id: 0} down: tests/test_engine_covered_pipeline.py)
    e = _explain(coll, [{"$match": {"a": 2}}, {"$group": {"_id": "$b", "n": {"$sum": 1}}}])
    assert e["explainVersion"] == "2" and e["executionStats"]["totalDocsExamined"] == 0
    assert "COUNT_SCAN" not in str(e["queryPlanner"]["winningPlan"]["queryPlan"])
    # pymongo's $skip lands in the query: a SKIP stage, no COUNT_SCAN (the count is still right); a count
    # needs no document, so the exact IXSCAN is not followed by a FETCH (jstests/core/query/cover_null_queries.js:
    # counts that cannot be a COUNT_SCAN are "IXSCAN": 1, "FETCH": 0)
    assert coll.count_documents({"a": 2}, skip=3) == 17
    entry = _profiled(coll, lambda: coll.count_documents({"a": 2}, skip=3))
    assert entry["planSummary"].startswith("IXSCAN") and entry["docsExamined"] == 0


def test_count_command(coll):
    db = coll.database
    assert db.command("count", "c", query={"a": 2})["n"] == 20
    e = db.command("explain", {"count": "c", "query": {"a": 2}}, verbosity="executionStats")
    assert e["queryPlanner"]["winningPlan"]["stage"] == "COUNT"
    assert e["queryPlanner"]["winningPlan"]["inputStage"]["stage"] == "COUNT_SCAN"
    assert e["queryPlanner"]["rejectedPlans"] == []  # a_1 and a_1_b_1 both could: the first is taken
    assert (e["executionStats"]["totalKeysExamined"], e["executionStats"]["totalDocsExamined"]) == (21, 0)
    entry = _profiled(coll, lambda: db.command("count", "c", query={"a": 2}, skip=2, limit=3))
    assert (entry["planSummary"], entry["keysExamined"], entry["docsExamined"]) == ("COUNT_SCAN { a: 1 }", 5, 0)


def test_estimated_document_count_is_the_record_store_count(coll):
    assert coll.estimated_document_count() == 100
    entry = _profiled(coll, coll.estimated_document_count)
    assert entry["command"]["count"] == "c"
    assert (entry["planSummary"], entry["keysExamined"], entry["docsExamined"]) == ("RECORD_STORE_FAST_COUNT", 0, 0)
