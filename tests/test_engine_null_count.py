"""Equality to null on an indexed field, as MongoDB 8.0 plans it, in process and over the wire.

Facts (MongoDB's jstests/core/query/cover_null_queries.js at v8.0, tagged ``requires_fcv_80``: "In 8.0, we changed
behavior for equality to null"; read for this test, the test is written from its facts):

* ``{a: null}`` matches a null or a missing ``a`` (not undefined since 8.0), which is exactly the index key null:
  with an index ``{a: 1, _id: 1}`` the ``count`` command and an aggregate ``[{$match: {a: null}}, {$count}]``
  are one COUNT_SCAN, no IXSCAN, no FETCH; ``find({a: null}, {_id: 1})`` is covered (PROJECTION_COVERED).
* The index key cannot tell null from missing, so projecting ``a`` itself still fetches the documents.
* ``{a: {$in: [null, 2]}}`` is covered too, but is two intervals: no COUNT_SCAN (IXSCAN, no FETCH).
* ``{a: {$in: [null, []]}}`` is not covered (FETCH).
* Even when the index is multikey on ``a`` (``a: []``, ``[[]]``, ``[null, []]``), a count of ``{a: null}`` is a
  COUNT_SCAN and ``find({a: null}, {_id: 1})`` is covered; ``{a: null, _id: 3}`` on the multikey index is an
  IXSCAN with a FETCH (SERVER-85856).
"""
from __future__ import annotations

import pytest

from both_paths import client, server  # noqa: F401 - fixtures


@pytest.fixture()
def coll(client):  # noqa: F811
    db = client["nullcount"]
    db.drop_collection("c")
    c = db.c
    c.insert_many([{"_id": 1, "a": 1, "b": 1}, {"_id": 2, "a": 1, "b": None}, {"_id": 3, "a": None, "b": 1},
                   {"_id": 4, "a": None, "b": None}, {"_id": 5, "a": 2}, {"_id": 6, "b": 2}, {"_id": 7}])
    c.create_index([("a", 1), ("_id", 1)])
    return c


def _stages(plan):
    out = []
    todo = [plan]
    while todo:
        p = todo.pop()
        out.append(p["stage"])
        todo += [p["inputStage"]] if "inputStage" in p else p.get("inputStages", [])
    return out


def _count_plan(coll, query):
    e = coll.database.command({"explain": {"count": coll.name, "query": query}, "verbosity": "executionStats"})
    return _stages(e["queryPlanner"]["winningPlan"]), e["executionStats"]


def _agg_count_plan(coll, query):
    e = coll.database.command({"explain": {"aggregate": coll.name, "cursor": {},
                                           "pipeline": [{"$match": query}, {"$count": "count"}]},
                               "verbosity": "executionStats"})
    cursor = e["stages"][0]["$cursor"]
    plan = cursor["queryPlanner"]["winningPlan"]
    return _stages(plan.get("queryPlan", plan)), cursor["executionStats"]


def _find_plan(coll, query, projection):
    e = coll.database.command({"explain": {"find": coll.name, "filter": query, "projection": projection},
                               "verbosity": "executionStats"})
    return _stages(e["queryPlanner"]["winningPlan"])


def _agg_count(coll, query):
    return list(coll.aggregate([{"$match": query}, {"$count": "count"}]))[0]["count"]


def test_count_of_null_is_one_count_scan(coll):
    assert coll.count_documents({"a": None}) == 4
    assert coll.database.command({"count": coll.name, "query": {"a": None}})["n"] == 4
    assert _agg_count(coll, {"a": None}) == 4
    stages, st = _count_plan(coll, {"a": None})
    assert "COUNT_SCAN" in stages and "IXSCAN" not in stages and "FETCH" not in stages
    assert st["totalDocsExamined"] == 0
    stages, st = _agg_count_plan(coll, {"a": None})
    assert stages == ["COUNT_SCAN"] and st["totalDocsExamined"] == 0


def test_find_of_null_is_covered_unless_it_projects_the_null_field(coll):
    assert sorted(d["_id"] for d in coll.find({"a": None}, {"_id": 1})) == [3, 4, 6, 7]
    assert _find_plan(coll, {"a": None}, {"_id": 1}) == ["PROJECTION_COVERED", "IXSCAN"]
    assert sorted(coll.find({"a": None}, {"a": 1}), key=lambda d: d["_id"]) == \
        [{"_id": 3, "a": None}, {"_id": 4, "a": None}, {"_id": 6}, {"_id": 7}]
    assert "FETCH" in _find_plan(coll, {"a": None}, {"a": 1})


def test_in_with_null_is_covered_but_not_a_count_scan(coll):
    assert coll.count_documents({"a": {"$in": [None, 2]}}) == 5
    stages, st = _count_plan(coll, {"a": {"$in": [None, 2]}})
    assert "IXSCAN" in stages and "FETCH" not in stages and "COUNT_SCAN" not in stages
    assert _find_plan(coll, {"a": {"$in": [2, None]}}, {"_id": 1}) == ["PROJECTION_COVERED", "IXSCAN"]
    stages, _ = _count_plan(coll, {"a": {"$in": [None, []]}})
    assert "FETCH" in stages
    assert coll.count_documents({"a": {"$in": [None, []]}}) == 4


def test_multikey_index_still_counts_null_with_a_count_scan(coll):
    coll.insert_many([{"_id": 8, "a": []}, {"_id": 9, "a": [[]]}, {"_id": 10, "a": [None, []]}])
    assert coll.count_documents({"a": None}) == 5
    assert _agg_count(coll, {"a": None}) == 5
    stages, st = _agg_count_plan(coll, {"a": None})
    assert stages == ["COUNT_SCAN"] and st["totalDocsExamined"] == 0
    assert sorted(d["_id"] for d in coll.find({"a": None}, {"_id": 1})) == [3, 4, 6, 7, 10]
    stages, _ = _count_plan(coll, {"a": None, "_id": 3})
    assert "IXSCAN" in stages and "FETCH" in stages and "COUNT_SCAN" not in stages
    assert coll.count_documents({"a": None, "_id": 3}) == 1


def test_null_below_an_array_is_not_answered_from_the_keys(coll):
    """{"a.b": null} over ``a`` holding arrays: the engine keeps the documents' word (no exact null bounds)."""
    coll.drop()
    coll.insert_many([{"_id": 1, "a": [1, {"b": 2}]}, {"_id": 2, "a": [{"b": None}]}, {"_id": 3, "a": {"c": 1}},
                      {"_id": 4}])
    expected = coll.count_documents({"a.b": None})
    coll.create_index("a.b")
    assert coll.count_documents({"a.b": None}) == expected
    stages, _ = _agg_count_plan(coll, {"a.b": None})
    assert "COUNT_SCAN" not in stages
