"""find's ``returnKey`` and ``showRecordId``, in-process and over TCP against the served engine.

Facts from MongoDB:
- jstests/core/query/return_key.js: the documents are the index keys of the plan's index (``[{a: 1}, {a: 2},
  {a: 3}]``), a projection is ignored, the plan is covered when the index gives the order and not covered with an
  in-memory sort on another field;
- src/mongo/db/query/planner_analysis.cpp ``analyzeDataAccess``: SKIP, then RETURN_KEY (no projection stage),
  then LIMIT unless a blocking SORT applies it; src/mongo/db/exec/return_key.cpp: the key's fields, ``{}`` when no
  index key (a collection scan: also the cursor.returnKey() manual page);
- jstests/core/query/show_record_id.js and the cursor.showRecordId() manual page: each document gains
  ``$recordId: Long(<n>)`` at its end (1, 2, 3 for the first three inserts), also on a covered plan and an
  ``_id`` query; query_request_helper.cpp ``addShowRecordIdMetaProj``: the projection gains
  ``$recordId: {$meta: "recordId"}`` (what explain's projection stage shows);
- query_utils.h: ``isIdHackEligibleQuery`` excludes showRecordId (not returnKey); ``isExpressEligible`` excludes
  both;
- query_request_helper.cpp ``asAggregationCommand``: on a view (a find run as an aggregation) InvalidPipelineOperator
  168 "Option returnKey not supported in aggregation." (showRecordId likewise);
- idl/basic_types.h ``OptionalBool::parseFromBSON``: a non-boolean is TypeMismatch 14 "Field 'returnKey' should
  be a boolean value, but found: int".
"""
from __future__ import annotations

import itertools

import pytest
from bson import Int64
from pymongo.errors import OperationFailure

from both_paths import client, server  # noqa: F401 - fixtures

_NAMES = itertools.count()


def _chain(plan: dict) -> list[str]:
    out = []
    while plan:
        out.append(plan["stage"])
        plan = plan.get("inputStage")
    return out


def _msg(e) -> str:
    return (e.value.details or {}).get("errmsg", str(e.value))


def _three(client):
    coll = client["rk_%d" % next(_NAMES)].c
    coll.insert_many([{"_id": 1, "a": 1, "b": 3}, {"_id": 2, "a": 2, "b": 2}, {"_id": 3, "a": 3, "b": 1}])
    coll.create_index([("a", 1)])
    coll.create_index([("b", 1)])
    return coll


def test_return_key_gives_the_index_keys(client):
    coll = _three(client)
    h = [("a", 1)]
    assert list(coll.find(return_key=True).hint(h).sort("a", 1)) == [{"a": 1}, {"a": 2}, {"a": 3}]
    assert list(coll.find(return_key=True).hint(h).sort("a", -1)) == [{"a": 3}, {"a": 2}, {"a": 1}]
    # an in-memory sort on another field: still the hinted index's keys
    assert list(coll.find(return_key=True).hint(h).sort("b", 1)) == [{"a": 3}, {"a": 2}, {"a": 1}]
    assert list(coll.find(return_key=True).hint(h).sort("b", -1)) == [{"a": 1}, {"a": 2}, {"a": 3}]
    # the projection is ignored, inclusion or exclusion
    assert list(coll.find({}, {"b": 1}, return_key=True).hint(h).sort("a", -1)) == [{"a": 3}, {"a": 2}, {"a": 1}]
    assert list(coll.find({}, {"a": 0}, return_key=True).hint(h).sort("a", -1)) == [{"a": 3}, {"a": 2}, {"a": 1}]
    # a collection scan has no index key: empty documents
    assert list(coll.find({"b": {"$exists": True}}, return_key=True).hint([("$natural", 1)])) == [{}, {}, {}]
    # the planner's own index choice, and an _id equality (IDHACK reads the _id index)
    assert list(coll.find({"b": {"$gte": 2}}, return_key=True).sort("b", 1)) == [{"b": 2}, {"b": 3}]
    assert list(coll.find({"_id": 2}, return_key=True)) == [{"_id": 2}]


def test_return_key_plans(client):
    coll = _three(client)
    h = [("a", 1)]
    covered = coll.find(return_key=True).hint(h).sort("a", 1).explain()["queryPlanner"]["winningPlan"]
    assert _chain(covered) == ["RETURN_KEY", "IXSCAN"]
    sorted_ = coll.find(return_key=True).hint(h).sort("b", 1).explain()["queryPlanner"]["winningPlan"]
    assert _chain(sorted_) == ["RETURN_KEY", "SORT", "FETCH", "IXSCAN"]
    paged = coll.find({"a": {"$gte": 1}}, {"b": 1}, return_key=True, skip=1, limit=1).explain()
    assert _chain(paged["queryPlanner"]["winningPlan"]) == ["LIMIT", "RETURN_KEY", "SKIP", "IXSCAN"]
    assert paged["executionStats"]["nReturned"] == 1 and paged["executionStats"]["totalDocsExamined"] == 0
    by_id = coll.find({"_id": 2}, return_key=True).explain()["queryPlanner"]["winningPlan"]
    assert _chain(by_id) == ["RETURN_KEY", "IDHACK"]
    assert list(coll.find({"a": {"$gte": 2}}, return_key=True, skip=1, limit=1)) == [{"a": 3}]


def test_return_key_of_compound_dotted_multikey_and_missing_fields(client):
    coll = client["rk_%d" % next(_NAMES)].c
    coll.insert_many([{"_id": 1, "x": {"y": 5}, "t": [7, 2]}, {"_id": 2, "t": 1}])
    coll.create_index([("x.y", 1), ("t", -1)])
    keys = list(coll.find({"t": {"$gte": 2}}, return_key=True).hint([("x.y", 1), ("t", -1)]))
    assert keys == [{"x.y": 5, "t": 7}]  # a dotted field is one field name; the multikey entry it was found by
    missing = list(coll.find({"_id": 2}, return_key=True).hint([("x.y", 1), ("t", -1)]))
    assert missing == [{"x.y": None, "t": 1}]  # a missing field is null in the key
    assert type(list(coll.find({"_id": 2}, return_key=True).hint([("x.y", 1), ("t", -1)]))[0]["t"]) is int


def test_show_record_id_appends_the_record_id(client):
    coll = client["rk_%d" % next(_NAMES)].c
    coll.insert_many([{"type": "pepperoni", "price": 4}, {"type": "cheese", "price": 7},
                      {"type": "vegan", "price": 8}])
    docs = list(coll.find({}, {"_id": 0}, show_record_id=True))
    assert docs == [{"type": "pepperoni", "price": 4, "$recordId": 1}, {"type": "cheese", "price": 7, "$recordId": 2},
                    {"type": "vegan", "price": 8, "$recordId": 3}]
    assert all(type(d["$recordId"]) is Int64 for d in docs)
    assert list(docs[0]) == ["type", "price", "$recordId"]  # appended at the end
    # record ids stay with their documents: an update keeps it, a new document gets the next one
    coll.update_one({"type": "cheese"}, {"$set": {"price": 9}})
    coll.delete_one({"type": "pepperoni"})
    coll.insert_one({"type": "plain", "price": 3})
    rids = {d["type"]: d["$recordId"] for d in coll.find(show_record_id=True)}
    assert rids == {"cheese": 2, "vegan": 3, "plain": 4}
    # covered, by _id, with batches (getMore)
    coll.create_index([("price", 1)])
    assert list(coll.find({"price": {"$gte": 8}}, {"_id": 0, "price": 1}, show_record_id=True).hint([("price", 1)])) \
        == [{"price": 8, "$recordId": 3}, {"price": 9, "$recordId": 2}]
    one = coll.find_one({"type": "vegan"})
    assert coll.find_one({"_id": one["_id"]}, show_record_id=True)["$recordId"] == 3
    assert [d["$recordId"] for d in coll.find(show_record_id=True, batch_size=1)] == [2, 3, 4]


def test_show_record_id_plans(client):
    coll = client["rk_%d" % next(_NAMES)].c
    coll.insert_many([{"_id": i, "a": i} for i in range(3)])
    coll.create_index([("a", 1)])
    by_id = coll.find({"_id": 1}, show_record_id=True).explain()["queryPlanner"]["winningPlan"]
    assert _chain(by_id) == ["PROJECTION_DEFAULT", "FETCH", "IXSCAN"]  # no IDHACK, no EXPRESS
    assert by_id["transformBy"] == {"$recordId": {"$meta": "recordId"}}
    cov = coll.find({"a": 1}, {"_id": 0, "a": 1}, show_record_id=True).explain()["queryPlanner"]["winningPlan"]
    assert _chain(cov) == ["PROJECTION_COVERED", "IXSCAN"]
    assert cov["transformBy"] == {"_id": 0, "a": 1, "$recordId": {"$meta": "recordId"}}


def test_errors(client):
    coll = _three(client)
    db = coll.database
    db.command({"create": "v", "viewOn": coll.name, "pipeline": []})
    for field, kw in (("returnKey", {"return_key": True}), ("showRecordId", {"show_record_id": True})):
        with pytest.raises(OperationFailure) as e:
            list(db.v.find({}, **kw))
        assert e.value.code == 168 and _msg(e) == "Option %s not supported in aggregation." % field
    with pytest.raises(OperationFailure) as e:
        db.command({"find": coll.name, "returnKey": 1})
    assert e.value.code == 14
    assert _msg(e) == "Field 'returnKey' should be a boolean value, but found: int"
    assert db.command({"find": coll.name, "returnKey": False, "showRecordId": False})["cursor"]["firstBatch"] \
        == list(coll.find())


def test_time_series_hashed_and_clustered(client):
    import datetime
    db = client["rk_%d" % next(_NAMES)]
    db.create_collection("ts", timeseries={"timeField": "t"})
    db.ts.insert_one({"t": datetime.datetime(2024, 1, 1), "v": 1})
    for field, kw in (("returnKey", {"return_key": True}), ("showRecordId", {"show_record_id": True})):
        with pytest.raises(OperationFailure) as e:  # a time-series find runs as an aggregation
            list(db.ts.find({}, **kw))
        assert e.value.code == 168 and _msg(e) == "Option %s not supported in aggregation." % field
    # a hashed index's key is the hash (hasher_test.cpp: the hash of 1 is 5902408780260971510)
    db.h.insert_many([{"a": 1}, {"a": 2}])
    db.h.create_index([("a", "hashed")])
    assert list(db.h.find({"a": 1}, return_key=True)) == [{"a": Int64(5902408780260971510)}]
    db.create_collection("cl", clusteredIndex={"key": {"_id": 1}, "unique": True})
    db.cl.insert_one({"_id": 1})
    with pytest.raises(OperationFailure) as e:
        list(db.cl.find(show_record_id=True))
    assert e.value.code == 115 and "not modelled" in _msg(e)


def test_sort_key_meta_beside_return_key(client):
    # jstests/core/query/return_key.js: {$meta: "sortKey"} fields are kept (an array of the sort key's values),
    # nested for a dotted name; the rest of the projection is ignored
    coll = _three(client)
    h = [("a", 1)]
    assert list(coll.find({}, {"c": {"$meta": "sortKey"}}, return_key=True).hint(h).sort("a", -1)) == \
        [{"a": 3, "c": [3]}, {"a": 2, "c": [2]}, {"a": 1, "c": [1]}]
    assert list(coll.find({}, {"c": {"$meta": "sortKey"}}, return_key=True).hint(h).sort("b", 1)) == \
        [{"a": 3, "c": [1]}, {"a": 2, "c": [2]}, {"a": 1, "c": [3]}]
    two = {"c": {"$meta": "sortKey"}, "d": {"$meta": "sortKey"}}
    assert list(coll.find({}, two, return_key=True).hint(h).sort("b", 1)) == \
        [{"a": 3, "c": [1], "d": [1]}, {"a": 2, "c": [2], "d": [2]}, {"a": 1, "c": [3], "d": [3]}]
    assert list(coll.find({}, {"c.d": {"$meta": "sortKey"}}, return_key=True).hint(h).sort("b", 1)) == \
        [{"a": 3, "c": {"d": [1]}}, {"a": 2, "c": {"d": [2]}}, {"a": 1, "c": {"d": [3]}}]
    plan = coll.find({}, {"c": {"$meta": "sortKey"}}, return_key=True).hint(h).sort("a", -1).explain()
    assert _chain(plan["queryPlanner"]["winningPlan"]) == ["RETURN_KEY", "SORT_KEY_GENERATOR", "IXSCAN"]
    # canonical_query.cpp: a sortKey $meta projection needs a sort (BadValue 2)
    with pytest.raises(OperationFailure) as e:
        list(coll.find({}, {"c": {"$meta": "sortKey"}}, return_key=True).hint(h))
    assert e.value.code == 2 and _msg(e) == "cannot use sortKey $meta projection without a sort"
