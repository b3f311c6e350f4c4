"""Index maintenance on every write; failed writes change nothing (documents and indexes)."""
from __future__ import annotations

import datetime

import pytest
from pymongo import DeleteOne, IndexModel, InsertOne, ReplaceOne, UpdateMany, UpdateOne
from pymongo.errors import BulkWriteError, DuplicateKeyError, OperationFailure

from labkit.engine import EmbeddedClient

from store_checks import consistent


@pytest.fixture()
def db():
    return EmbeddedClient().w


def snapshot(coll):
    st = coll._store
    return ({rid: repr(d) for rid, d in st.docs.items()}, {n: list(ix.entries) for n, ix in st.ix.items()})


def test_index_names_and_listing(db):
    c = db.c
    assert c.create_index([("a", 1), ("b", -1)]) == "a_1_b_-1"
    assert c.create_index("x", unique=True, sparse=True) == "x_1"
    names = c.create_indexes([IndexModel([("p", 1)], partialFilterExpression={"q": {"$gt": 5}}),
                              IndexModel([("t", 1)], expireAfterSeconds=3600, name="ttl")])
    assert names == ["p_1", "ttl"]
    info = c.index_information()
    assert set(info) == {"_id_", "a_1_b_-1", "x_1", "p_1", "ttl"}
    assert info["x_1"]["unique"] is True and info["x_1"]["sparse"] is True
    assert info["p_1"]["partialFilterExpression"] == {"q": {"$gt": 5}}
    assert info["ttl"]["expireAfterSeconds"] == 3600
    assert info["a_1_b_-1"]["key"] == [("a", 1), ("b", -1)]
    listed = list(c.list_indexes())
    assert listed[0] == {"v": 2, "key": {"_id": 1}, "name": "_id_"}
    c.drop_index("x_1")
    c.drop_index([("a", 1), ("b", -1)])
    assert set(c.index_information()) == {"_id_", "p_1", "ttl"}
    with pytest.raises(OperationFailure):
        c.drop_index("nope")
    c.drop_indexes()
    assert set(c.index_information()) == {"_id_"}


def test_unique_violation_on_update_changes_nothing(db):
    c = db.u
    c.create_index("email", unique=True)
    c.insert_many([{"_id": 1, "email": "a"}, {"_id": 2, "email": "b"}])
    before = snapshot(c)
    with pytest.raises(DuplicateKeyError) as ei:
        c.update_one({"_id": 2}, {"$set": {"email": "a"}})
    assert ei.value.details["keyValue"] == {"email": "a"}
    assert snapshot(c) == before
    with pytest.raises(DuplicateKeyError):
        c.replace_one({"_id": 2}, {"email": "a"})
    assert snapshot(c) == before
    consistent(c)


def test_insert_many_ordered_and_unordered(db):
    c = db.im
    c.create_index([("f", 1), ("g", 1)], unique=True)
    c.insert_one({"f": 1, "g": 1})
    with pytest.raises(BulkWriteError) as ei:
        c.insert_many([{"f": 2, "g": 2}, {"f": 1, "g": 1}, {"f": 3, "g": 3}])
    det = ei.value.details
    assert det["nInserted"] == 1
    assert det["writeErrors"][0]["index"] == 1 and det["writeErrors"][0]["code"] == 11000
    assert det["writeErrors"][0]["keyPattern"] == {"f": 1, "g": 1}
    assert det["writeErrors"][0]["keyValue"] == {"f": 1, "g": 1}
    assert c.count_documents({}) == 2
    with pytest.raises(BulkWriteError) as ei:
        c.insert_many([{"f": 4, "g": 4}, {"f": 1, "g": 1}, {"f": 5, "g": 5}, {"f": 4, "g": 4}], ordered=False)
    det = ei.value.details
    assert det["nInserted"] == 2
    assert [e["index"] for e in det["writeErrors"]] == [1, 3]
    assert c.count_documents({}) == 4
    consistent(c)


def test_unique_index_build_fails_on_existing_duplicates(db):
    c = db.ub
    c.insert_many([{"k": 1}, {"k": 1}])
    with pytest.raises(DuplicateKeyError):
        c.create_index("k", unique=True)
    assert set(c.index_information()) == {"_id_"}


def test_sparse_and_partial_membership(db):
    c = db.sp
    c.create_index("s", unique=True, sparse=True)
    c.create_index("p", partialFilterExpression={"active": True}, unique=True)
    c.insert_many([{"x": 1}, {"x": 2}])  # missing s: not indexed, no duplicate
    c.insert_many([{"p": 1, "active": False}, {"p": 1, "active": False}])
    c.insert_one({"p": 1, "active": True})
    with pytest.raises(DuplicateKeyError):
        c.insert_one({"p": 1, "active": True})
    assert len(c._store.ix["s_1"].entries) == 0
    assert len(c._store.ix["p_1"].entries) == 1
    consistent(c)


def test_multikey_dotted_paths_maintained(db):
    c = db.mk
    c.create_index("tags.name")
    c.insert_one({"_id": 1, "tags": [{"name": "x"}, {"name": "y"}]})
    c.insert_one({"_id": 2, "tags": [{"name": "y"}]})
    assert sorted(d["_id"] for d in c.find({"tags.name": "y"})) == [1, 2]
    c.update_one({"_id": 1}, {"$pull": {"tags": {"name": "y"}}})
    assert [d["_id"] for d in c.find({"tags.name": "y"})] == [2]
    c.delete_one({"_id": 2})
    assert list(c.find({"tags.name": "y"})) == []
    consistent(c)
    e = c.find({"tags.name": "x"}).explain()
    assert e["queryPlanner"]["winningPlan"]["inputStage"]["isMultiKey"] is True


def test_upsert_and_find_one_and_update(db):
    c = db.ups
    c.create_index("k", unique=True)
    r = c.update_one({"k": 1}, {"$set": {"v": 1}, "$setOnInsert": {"new": True}}, upsert=True)
    assert r.upserted_id is not None
    assert c.find_one({"k": 1}, {"_id": 0}) == {"k": 1, "v": 1, "new": True}
    doc = c.find_one_and_update({"k": 1}, {"$inc": {"v": 5}}, return_document=True)
    assert doc["v"] == 6
    doc = c.find_one_and_update({"k": 2}, {"$set": {"v": 0}}, upsert=True, return_document=True)
    assert doc["k"] == 2
    assert c.find_one_and_delete({"k": 2})["k"] == 2
    assert c.count_documents({}) == 1
    consistent(c)
    with pytest.raises(OperationFailure):
        c.find_one_and_update({"k": 1}, {"$set": {"v": 1}}, array_filters=[{"x": 1}])


def test_bulk_write_mixed(db):
    c = db.bw
    c.create_index("k", unique=True)
    res = c.bulk_write([InsertOne({"k": 1}), InsertOne({"k": 2}), UpdateOne({"k": 1}, {"$set": {"v": 1}}),
                        UpdateMany({}, {"$inc": {"n": 1}}), ReplaceOne({"k": 2}, {"k": 2, "r": True}),
                        DeleteOne({"k": 3}), UpdateOne({"k": 9}, {"$set": {"v": 9}}, upsert=True)])
    assert res.inserted_count == 2 and res.matched_count == 4 and res.upserted_count == 1
    before = snapshot(c)
    with pytest.raises(BulkWriteError) as ei:
        c.bulk_write([UpdateOne({"k": 2}, {"$set": {"k": 1}}), InsertOne({"k": 50})])
    assert ei.value.details["writeErrors"][0]["code"] == 11000
    assert snapshot(c) == before
    consistent(c)


def test_find_kwargs_never_silently_ignored(db):
    c = db.kw
    c.insert_one({"a": 1})
    with pytest.raises(OperationFailure):  # en/simple collations are supported (test_engine_collation.py)
        list(c.find({}, collation={"locale": "fr"}))
    with pytest.raises(OperationFailure):
        c.find({}).where("this.a == 1")
    with pytest.raises(TypeError):
        c.find({}, bogus=1)
    with pytest.raises(OperationFailure):
        c.aggregate([{"$match": {}}], collation={"locale": "fr"})


def test_cursor_api(db):
    c = db.cur
    c.insert_many([{"i": i} for i in range(10)])
    cur = c.find({}, {"_id": 0}).sort("i", -1).skip(2).limit(3)
    assert cur.alive
    assert cur.to_list() == [{"i": 7}, {"i": 6}, {"i": 5}]
    assert not cur.alive
    cur.rewind()
    assert next(cur) == {"i": 7}
    assert [d["i"] for d in cur.clone()] == [7, 6, 5]
    assert c.find().sort("i", 1)[3]["i"] == 3
    assert c.find({}).distinct("i") == list(range(10))
    assert c.find_one({"i": 4}, {"_id": 0}) == {"i": 4}
    d = c.find_one({"i": 4})
    d["i"] = 99  # returned documents are copies
    assert c.count_documents({"i": 99}) == 0
    assert c.estimated_document_count() == 10
    assert c.count_documents({"i": {"$gte": 5}}, skip=1, limit=2) == 2


def test_dates_and_ids(db):
    c = db.dt
    now = datetime.datetime(2024, 5, 1, 12, 0, 0, 123456)
    c.insert_one({"_id": {"x": 1}, "t": now})
    c.create_index("t")
    assert c.find_one({"_id": {"x": 1}})["t"] == now.replace(microsecond=123000)
    assert c.find_one({"t": {"$gte": datetime.datetime(2024, 1, 1)}}) is not None
    with pytest.raises(DuplicateKeyError):
        c.insert_one({"_id": {"x": 1}})
