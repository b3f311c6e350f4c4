"""``insert_one`` of a flat document (``EmbeddedCollection._insert_flat``) has exactly the effects and errors of
the general insert path: same stored documents, same index entries, same exceptions, nothing half-written.

The general path is taken for anything that is not a plain ``dict`` (a ``bson.SON`` here), so the same
documents can be sent down both paths and the collections compared afterwards.
"""
from __future__ import annotations

import datetime
import os
import time

import bson
import pytest
from bson import SON, ObjectId
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import DocumentTooLarge, DuplicateKeyError, WriteError

from labkit.engine import EmbeddedClient
from labkit.engine.catalog.collection import new_object_id

scalar = st.one_of(st.integers(-3, 3), st.sampled_from([1.0, 2.5, -0.5]), st.sampled_from(["x", "y", "Y", ""]),
                   st.none(), st.booleans(), st.just(ObjectId("5f0000000000000000000001")), st.just(b"\x00\x01"),
                   st.sampled_from([datetime.datetime(2024, 1, 1, 12, 0, 0, 123456),
                                    datetime.datetime(2024, 1, 1, 12, 0, 0, 123999),
                                    datetime.datetime(2024, 1, 1, 13, 0, tzinfo=datetime.timezone(datetime.timedelta(hours=1)))]))

INDEX_CHOICES = [
    ([("a", 1)], {}),
    ([("a", -1)], {"unique": True}),
    ([("b", -1)], {"unique": True, "sparse": True}),
    ([("a", 1), ("b", 1)], {"unique": True}),
    ([("b", 1), ("a", -1)], {}),
    ([("a", 1)], {"partialFilterExpression": {"b": {"$gt": 0}}, "unique": True, "name": "a_partial"}),
    ([("c.d", 1)], {}),
    ([("a", 1)], {"collation": {"locale": "en", "strength": 2}, "unique": True, "name": "a_ci"}),
    ([("b", 1)], {"hidden": True, "name": "b_hidden"}),
]


@st.composite
def flat_docs(draw):
    docs = []
    for _ in range(draw(st.integers(1, 20))):
        d = {"_id": draw(st.one_of(st.integers(0, 12), st.sampled_from(["k1", "k2"]), scalar))}
        for f in ("a", "b"):
            if draw(st.booleans()):
                d[f] = draw(scalar)
        docs.append(d)
    return docs


def snapshot(coll):
    st_ = coll._store
    return ([(rid, repr(d)) for rid, d in st_.docs.items()], {n: list(ix.entries) for n, ix in st_.ix.items()},
            st_.next_rid, {n: ix.multikey for n, ix in st_.ix.items()})


def outcome(coll, doc):
    try:
        return ("ok", coll.insert_one(doc).inserted_id)
    except Exception as e:  # compared between the two paths, whatever it is
        return (type(e).__name__, str(e), getattr(e, "details", None))


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(docs=flat_docs(), idx=st.lists(st.sampled_from(range(len(INDEX_CHOICES))), max_size=3, unique=True))
def test_flat_path_matches_general_path(docs, idx):
    flat, general = EmbeddedClient().d.c, EmbeddedClient().d.c
    for i in idx:
        key, opts = INDEX_CHOICES[i]
        for c in (flat, general):
            c.create_index(key, **opts)
    for d in docs:
        assert outcome(flat, dict(d)) == outcome(general, SON(d))
    assert snapshot(flat) == snapshot(general)
    assert flat.find_one({}, sort=[("_id", -1)]) == general.find_one({}, sort=[("_id", -1)])


def test_flat_duplicate_on_second_index_changes_nothing():
    c = EmbeddedClient().d.follows
    c.create_index([("followerId", 1), ("followeeId", 1)], unique=True)
    c.create_index("followeeId")
    c.insert_one({"_id": 1, "followerId": "u1", "followeeId": "u2"})
    before = snapshot(c)
    with pytest.raises(DuplicateKeyError) as err:
        c.insert_one({"_id": 2, "followerId": "u1", "followeeId": "u2"})
    assert err.value.details["keyPattern"] == {"followerId": 1, "followeeId": 1}
    assert err.value.details["keyValue"] == {"followerId": "u1", "followeeId": "u2"}
    assert "index: followerId_1_followeeId_1 dup key" in str(err.value)
    assert snapshot(c) == before
    with pytest.raises(DuplicateKeyError) as err:
        c.insert_one({"_id": 1.0, "followerId": "u3"})  # 1 and 1.0 are the same _id
    assert err.value.details["keyPattern"] == {"_id": 1}
    assert snapshot(c) == before


def test_flat_path_errors_are_the_general_paths():
    c = EmbeddedClient().d.c
    # ("$"-prefixed top-level names are stored since 5.0: jstests/core/field_name_validation.js, and
    # tests/test_engine_client_features.py; both paths take them, see the end of this test.)
    cases = [{1: "x"}, {"a\x00b": 1}, {"big": "x" * (16 * 1024 * 1024)}]
    for d in cases:
        got = []
        for doc in (dict(d), SON(d)):
            try:
                c.insert_one(doc)
                got.append("inserted")
            except Exception as e:
                got.append((type(e).__name__, str(e)[:80]))
        assert got[0] == got[1] != "inserted", d
    assert c.count_documents({}) == 0
    with pytest.raises(DocumentTooLarge):
        c.insert_one({"big": "x" * (16 * 1024 * 1024)})
    c.insert_one({"_id": 1, "$ok": 1})
    c.insert_one(SON([("_id", 2), ("$ok", 1)]))
    assert [d for d in c.find({}, {"_id": 0})] == [{"$ok": 1}, {"$ok": 1}]


def test_documents_needing_the_general_path_still_take_it():
    c = EmbeddedClient().d.c
    when = datetime.datetime(2024, 1, 1, 12, 0, 0, 123456)
    c.insert_one({"_id": 1, "at": when, "tags": ["a"], "sub": {"x": 1}})
    stored = c.find_one({"_id": 1})
    assert stored["at"] == datetime.datetime(2024, 1, 1, 12, 0, 0, 123000)  # milliseconds, as the server stores
    db = EmbeddedClient().v
    db.create_collection("c", validator={"$jsonSchema": {"required": ["name"]}})
    with pytest.raises(WriteError) as err:
        db.c.insert_one({"_id": 1})  # flat, but the collection has a validator
    assert err.value.code == 121


def test_new_object_id_layout():
    ids = [new_object_id() for _ in range(1000)]
    assert len(set(ids)) == 1000
    now = time.time()
    assert all(abs(o.generation_time.timestamp() - now) < 5 for o in ids)
    assert len({o.binary[4:9] for o in ids}) == 1  # one random value per process
    counters = [int.from_bytes(o.binary[9:], "big") for o in ids]
    assert all((b - a) % (1 << 24) == 1 for a, b in zip(counters, counters[1:]))
    assert ObjectId(str(ids[0])) == ids[0] and bson.decode(bson.encode({"_id": ids[0]}))["_id"] == ids[0]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_new_object_id_random_part_changes_after_fork():
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        os.write(w, new_object_id().binary)
        os._exit(0)
    os.close(w)
    child = os.read(r, 12)
    os.waitpid(pid, 0)
    os.close(r)
    assert child[4:9] != new_object_id().binary[4:9]


def test_boolean_and_numeric_ids_are_different_documents():
    """BSON true and 1 are different _id values (different types in the _id index); Python's True == 1 must
    not make them one document. 1 and 1.0 are the same value."""
    c = EmbeddedClient().d.c
    c.insert_one({"_id": True, "x": "bool"})
    c.insert_one({"_id": 1, "x": "int"})
    c.insert_many([{"_id": False}, {"_id": 0}])
    assert [d["_id"] for d in c.find({}, sort=[("_id", 1)])] == [0, 1, False, True]
    with pytest.raises(DuplicateKeyError):
        c.insert_one({"_id": 1.0})
    c.update_one({"_id": True}, {"$set": {"y": 1}})
    c.delete_one({"_id": 1})
    assert c.find_one({"_id": True}) == {"_id": True, "x": "bool", "y": 1}
    assert c.count_documents({}) == 3
