"""Capped collections on the embedded engine (labkit/engine/catalog/capped.py), checked against MongoDB 8.0's rules.

Sources are named per test: the manual's "Capped Collections" and ``create`` pages, the server's
src/mongo/db/commands/create.cpp and src/mongo/db/catalog/collection_options.cpp, and jstests/core/capped/.
"""
from __future__ import annotations

import pytest
from pymongo.errors import BulkWriteError, OperationFailure, WriteError

from labkit.engine import EmbeddedClient


@pytest.fixture
def db():
    return EmbeddedClient()["capped_test"]


def test_create_validation(db):
    # create.cpp: size required with capped (InvalidOptions 72); size/max need capped (72)
    with pytest.raises(OperationFailure) as e:
        db.create_collection("a", capped=True)
    assert e.value.code == 72 and "the 'size' field is required when 'capped' is true" in str(e.value)
    with pytest.raises(OperationFailure) as e:
        db.create_collection("a", capped=True, max=10)
    assert e.value.code == 72 and "'size' field is required" in str(e.value)
    with pytest.raises(OperationFailure) as e:
        db.create_collection("a", size=4096)
    assert e.value.code == 72 and "the 'capped' field needs to be true" in str(e.value)
    with pytest.raises(OperationFailure) as e:
        db.create_collection("a", capped=False, max=5)
    assert e.value.code == 72
    # create IDL: size >= 1; wrong type 14
    with pytest.raises(OperationFailure) as e:
        db.create_collection("a", capped=True, size=-1)
    assert e.value.code == 51024
    with pytest.raises(OperationFailure) as e:
        db.create_collection("a", capped=True, size="big")
    assert e.value.code == 14
    # collection_options.cpp checkAndAdjustCappedMaxDocs: max >= 2^31 is BadValue
    with pytest.raises(OperationFailure) as e:
        db.create_collection("a", capped=True, size=4096, max=2 ** 31)
    assert e.value.code == 2
    assert db.list_collection_names() == []


def test_options_and_stats(db):
    # collection_options.cpp: 8.0 keeps the size as given (featureFlagCappedCollectionsRelaxedSize, SERVER-67246);
    # jstests/core/capped/capped_max1.js: stats().max, stats().maxSize, scaled maxSize
    c = db.create_collection("log", capped=True, size=64 * 1024 + 1, max=10)
    assert c.options() == {"capped": True, "size": 64 * 1024 + 1, "max": 10}
    s = db.command("collStats", "log")
    assert s["capped"] is True and s["max"] == 10 and s["maxSize"] == 64 * 1024 + 1
    assert db.command("collStats", "log", scale=1000)["maxSize"] == 65
    entry = next(db.list_collections(filter={"name": "log"}))
    assert entry["options"] == {"capped": True, "size": 64 * 1024 + 1, "max": 10}
    db.create_collection("plain")
    assert db.command("collStats", "plain")["capped"] is False


def test_max_documents_keeps_newest_in_insertion_order(db):
    # jstests/core/capped/capped_max1.js: max 10, 20 inserts -> 10 documents, the newest
    c = db.create_collection("log", capped=True, size=64 * 1024, max=10)
    for i in range(20):
        c.insert_one({"x": i})
    assert c.count_documents({}) == 10
    assert [d["x"] for d in c.find()] == list(range(10, 20))
    c.insert_many([{"x": 100 + i} for i in range(5)])
    assert [d["x"] for d in c.find()] == list(range(15, 20)) + list(range(100, 105))


def test_size_limit_removes_oldest(db):
    # jstests/core/capped/capped_large_docs.js: 25 MB cap, five 10 MB documents -> 2 remain, size <= cap
    # (scaled down: 25 KB cap, 10 KB documents)
    c = db.create_collection("big", capped=True, size=25 * 1024)
    for i in range(5):
        c.insert_one({"i": i, "key": "a" * (10 * 1024)})
    s = db.command("collStats", "big")
    assert s["count"] == 2 and s["size"] <= 25 * 1024
    assert [d["i"] for d in c.find()] == [3, 4]


def test_document_larger_than_cap_is_refused(db):
    # WiredTiger record store: "object to insert exceeds cappedMaxSize" (BadValue)
    c = db.create_collection("small", capped=True, size=100)
    with pytest.raises(WriteError) as e:
        c.insert_one({"k": "x" * 200})
    assert e.value.code == 2 and "exceeds cappedMaxSize" in str(e.value)
    assert c.count_documents({}) == 0


def test_natural_order_sort_and_explain(db):
    # manual "Capped Collections: Query a Capped Collection": find().sort({$natural: -1}) returns newest first
    c = db.create_collection("log", capped=True, size=4096)
    c.insert_many([{"i": i} for i in range(5)])
    assert [d["i"] for d in c.find().sort("$natural", -1)] == [4, 3, 2, 1, 0]
    assert [d["i"] for d in c.find().sort([("$natural", 1)]).limit(2)] == [0, 1]
    plan = c.find().sort("$natural", -1).explain()["queryPlanner"]["winningPlan"]
    assert plan["stage"] == "COLLSCAN" and plan["direction"] == "backward"
    assert [d["i"] for d in c.find().hint([("$natural", -1)])] == [4, 3, 2, 1, 0]


def test_updates_may_change_size_and_deletes_are_allowed(db):
    # jstests/core/capped/capped_update.js (SERVER-58865: updates may change the document size);
    # SERVER-63201 (5.0.7+): deletes on capped collections are allowed
    c = db.create_collection("log", capped=True, size=1024)
    c.insert_many([{"_id": j, "s": "Hello, World!"} for j in range(1, 11)])
    c.update_one({"_id": 3}, {"$set": {"s": "Hello!"}})
    c.replace_one({"_id": 10}, {"s": "Hello, World!!!"})
    assert c.find_one({"_id": 3})["s"] == "Hello!" and c.find_one({"_id": 10})["s"] == "Hello, World!!!"
    assert c.delete_one({"_id": 1}).deleted_count == 1
    assert c.count_documents({}) == 9


def test_collmod_capped_size_trims_on_next_insert(db):
    # manual "Change the Size of a Capped Collection" (6.0+): collMod cappedSize / cappedMax; excess removed on the
    # next insert
    c = db.create_collection("log", capped=True, size=4096, max=10)
    c.insert_many([{"i": i} for i in range(10)])
    db.command("collMod", "log", cappedMax=3)
    assert c.count_documents({}) == 10
    c.insert_one({"i": 10})
    assert [d["i"] for d in c.find()] == [8, 9, 10]
    assert db.command("collStats", "log")["max"] == 3
    db.create_collection("plain")
    with pytest.raises(OperationFailure) as e:
        db.command("collMod", "plain", cappedSize=4096)
    assert e.value.code == 72


def test_convert_and_clone_as_capped(db):
    # manual "convertToCapped" / "cloneCollectionAsCapped": documents in natural order, oldest dropped to fit
    db.src.insert_many([{"i": i, "pad": "x" * 100} for i in range(50)])
    db.command("cloneCollectionAsCapped", "src", toCollection="copy", size=1200)
    copy = db.copy
    assert copy.options()["capped"] is True
    kept = [d["i"] for d in copy.find()]
    assert kept and kept == list(range(50 - len(kept), 50)) and len(kept) < 50
    assert db.src.count_documents({}) == 50
    db.command("convertToCapped", "src", size=100000)
    assert db.src.options()["capped"] is True and db.src.count_documents({}) == 50


def test_bulk_insert_into_capped(db):
    c = db.create_collection("log", capped=True, size=4096, max=3)
    with pytest.raises(BulkWriteError):
        c.insert_many([{"_id": 1}, {"_id": 1}])
    c.insert_many([{"_id": i} for i in range(2, 8)])
    assert [d["_id"] for d in c.find()] == [5, 6, 7]


def test_tailable_cursors_work_and_exhaust_cursors_are_refused_clearly(db):
    # tailable cursors are modelled (tests/test_engine_tailable.py); exhaust cursors are not: a clear 115,
    # never a silent ordinary cursor
    from pymongo import CursorType
    c = db.create_collection("log", capped=True, size=4096)
    c.insert_one({"_id": 1})
    cur = c.find(cursor_type=CursorType.TAILABLE)
    assert list(cur) == [{"_id": 1}] and cur.alive
    with pytest.raises(OperationFailure) as e:
        c.find(cursor_type=CursorType.EXHAUST)
    assert e.value.code == 115
