"""Clustered collections on the embedded engine (labkit/engine/catalog/clustered.py), checked against MongoDB 8.0.

Sources are named per test: the manual's "Clustered Collections" page, the server's
src/mongo/db/catalog/create_collection.cpp and clustered_collection_util.cpp, and jstests/core/clustered/ with
jstests/libs/clustered_collections/clustered_collection_bounded_scan_common.js.
"""
from __future__ import annotations

import datetime

import pytest
from pymongo.errors import DuplicateKeyError, OperationFailure

from labkit.engine import EmbeddedClient
from labkit.engine.catalog import clustered


@pytest.fixture
def db():
    return EmbeddedClient()["clustered_test"]


def _populate(db, n=100):
    # clustered_collection_bounded_scan_common.js initAndPopulate: _id 0..99, a: -i
    c = db.create_collection("coll", clusteredIndex={"key": {"_id": 1}, "unique": True})
    c.insert_many([{"_id": i, "a": -i} for i in range(n)])
    return c


def _explain(db, flt):
    return db.command("explain", {"find": "coll", "filter": flt}, verbosity="executionStats")


def test_create_validation(db):
    # create_collection.cpp validateClusteredIndexSpec / validateCollectionOptions
    with pytest.raises(OperationFailure) as e:
        db.create_collection("a", clusteredIndex={"key": {"_id": 1}, "unique": False})
    assert e.value.code == 5979700
    with pytest.raises(OperationFailure) as e:
        db.create_collection("a", clusteredIndex={"key": {"a": 1}, "unique": True})
    assert e.value.code == 197 and "only supported for key: {_id: 1}" in str(e.value)
    with pytest.raises(OperationFailure) as e:
        db.create_collection("a", clusteredIndex=True)
    assert e.value.code == 5979703
    with pytest.raises(OperationFailure) as e:
        db.create_collection("a", clusteredIndex={"key": {"_id": 1}, "unique": True, "v": 1})
    assert e.value.code == 5979704
    with pytest.raises(OperationFailure) as e:
        db.create_collection("a", expireAfterSeconds=10)
    assert e.value.code == 72 and "only for clustered collections or timeseries" in str(e.value)
    with pytest.raises(OperationFailure) as e:
        db.create_collection("a", clusteredIndex={"key": {"_id": 1}, "unique": True}, expireAfterSeconds=-1)
    assert e.value.code == 72
    assert db.list_collection_names() == []


def test_list_indexes_and_collections(db):
    # clustered_collection_util.cpp formatClusterKeyForListIndexes: the spec plus clustered: true; default name _id_
    c = db.create_collection("coll", clusteredIndex={"key": {"_id": 1}, "unique": True, "name": "by_time"},
                             expireAfterSeconds=3600)
    assert list(c.list_indexes()) == [{"v": 2, "key": {"_id": 1}, "name": "by_time", "unique": True,
                                       "clustered": True}]
    assert c.index_information()["by_time"]["clustered"] is True
    entry = next(db.list_collections(filter={"name": "coll"}))
    assert entry["options"]["clusteredIndex"] == {"v": 2, "key": {"_id": 1}, "name": "by_time", "unique": True}
    assert entry["options"]["expireAfterSeconds"] == 3600 and "idIndex" not in entry
    db.create_collection("c2", clusteredIndex={"key": {"_id": 1}, "unique": True})
    assert next(db.c2.list_indexes())["name"] == "_id_"


def test_natural_order_is_id_order_and_ids_unique(db):
    # manual "Clustered Collections": documents are stored ordered by the clustered index key
    c = db.create_collection("coll", clusteredIndex={"key": {"_id": 1}, "unique": True})
    for i in (5, 1, 9, 3):
        c.insert_one({"_id": i})
    c.insert_many([{"_id": 7}, {"_id": 0}])
    assert [d["_id"] for d in c.find()] == [0, 1, 3, 5, 7, 9]
    with pytest.raises(DuplicateKeyError):
        c.insert_one({"_id": 3})


def test_eq_on_id_is_express_clustered(db):
    # 8.0 express path (plan_executor_express.cpp): {_id: v} on a clustered collection is EXPRESS_CLUSTERED_IXSCAN
    _populate(db)
    e = _explain(db, {"_id": 5})
    assert e["queryPlanner"]["winningPlan"]["stage"] == "EXPRESS_CLUSTERED_IXSCAN"
    assert e["executionStats"]["nReturned"] == 1
    assert db.coll.find_one({"_id": 5}) == {"_id": 5, "a": -5}


@pytest.mark.parametrize("flt,n,examined,has_min,has_max", [
    # clustered_collection_bounded_scan_common.js: docsExamined per bound (inclusive bounds + one read past max)
    ({"_id": {"$lt": 10}}, 10, 12, False, True),
    ({"_id": {"$lte": 10}}, 11, 12, False, True),
    ({"_id": {"$gt": 89}}, 10, 11, True, False),
    ({"_id": {"$gte": 89}}, 11, 11, True, False),
    ({"_id": {"$gt": 20, "$lt": 40}}, 19, 22, True, True),
    ({"_id": {"$gte": 20, "$lt": 40}}, 20, 22, True, True),
    ({"_id": {"$gt": 20, "$lte": 40}}, 20, 22, True, True),
    ({"_id": {"$gte": 20, "$lte": 40}}, 21, 22, True, True),
])
def test_bounded_scans(db, flt, n, examined, has_min, has_max):
    _populate(db)
    e = _explain(db, flt)
    plan = e["queryPlanner"]["winningPlan"]
    assert plan["stage"] == "CLUSTERED_IXSCAN"
    assert ("minRecord" in plan) == has_min and ("maxRecord" in plan) == has_max
    if has_min:
        assert plan["minRecord"] == next(v for k, v in flt["_id"].items() if k in ("$gt", "$gte"))
    if has_max:
        assert plan["maxRecord"] == next(v for k, v in flt["_id"].items() if k in ("$lt", "$lte"))
    assert e["executionStats"]["nReturned"] == n
    assert e["executionStats"]["executionStages"]["docsExamined"] == examined
    assert len(list(db.coll.find(flt))) == n


def test_non_cluster_key_scan_is_collscan(db):
    # clustered_collection_bounded_scan_common.js testNonClusterKeyScan: COLLSCAN without min/maxRecord
    _populate(db)
    e = _explain(db, {"a": {"$gt": -10}})
    plan = e["queryPlanner"]["winningPlan"]
    assert plan["stage"] == "COLLSCAN" and "minRecord" not in plan and "maxRecord" not in plan
    assert e["executionStats"]["nReturned"] == 10


def test_hint_on_cluster_key_and_secondary_index(db):
    # jstests/core/clustered/clustered_collection_hint.js: hint {_id: 1} is a CLUSTERED_IXSCAN; secondary indexes
    # still serve their own predicates
    _populate(db)
    e = db.command("explain", {"find": "coll", "filter": {"a": -3}, "hint": {"_id": 1}}, verbosity="queryPlanner")
    assert e["queryPlanner"]["winningPlan"]["stage"] == "CLUSTERED_IXSCAN"
    db.coll.create_index("a")
    e = db.command("explain", {"find": "coll", "filter": {"a": {"$lt": -95}}}, verbosity="queryPlanner")
    assert "IXSCAN" in str(e["queryPlanner"]["winningPlan"]) and "CLUSTERED" not in str(
        e["queryPlanner"]["winningPlan"])
    assert sorted(d["_id"] for d in db.coll.find({"a": {"$lt": -95}})) == [96, 97, 98, 99]


def test_sort_by_id_uses_scan_order(db):
    _populate(db, 30)
    got = [d["_id"] for d in db.coll.find({"_id": {"$gte": 10, "$lt": 15}}).sort("_id", -1)]
    assert got == [14, 13, 12, 11, 10]
    plan = db.coll.find({"_id": {"$gte": 10}}).sort("_id", -1).explain()["queryPlanner"]["winningPlan"]
    assert plan["stage"] == "CLUSTERED_IXSCAN" and plan["direction"] == "backward"


def test_expired_ids_for_ttl(db):
    # manual "Clustered Collections: TTL": with expireAfterSeconds documents expire by their _id date; ttl.cpp scans
    # the cluster key from the smallest date, so non-date _id values never expire
    c = db.create_collection("coll", clusteredIndex={"key": {"_id": 1}, "unique": True}, expireAfterSeconds=60)
    now = datetime.datetime(2026, 1, 1, 12, 0, 0)
    c.insert_many([{"_id": now - datetime.timedelta(seconds=s)} for s in (10, 61, 3600)] + [{"_id": 5}])
    assert sorted(clustered.expired_ids(c, now)) == [now - datetime.timedelta(seconds=3600),
                                                     now - datetime.timedelta(seconds=61)]
    db.create_collection("plain")
    assert clustered.expired_ids(db.plain, now) == []
