"""``insert_one``'s outermost layer (``rules._insert_one_entry``, issue 19: per-call cost) goes straight to
``_insert_flat`` under the store's lock only when nothing could tell the difference; every outcome (result,
stored documents, index entries, errors, command monitoring events, profiler entries, transactions, write
concern) equals the full chain's (write concern > operation boundary > ``LabCollection.insert_one``).

Facts from the manual: "db.collection.insertOne()" (the ``_id`` is generated when missing; duplicate key
E11000 errors, code 11000), "Write Concern" (w: 0 is unacknowledged; w greater than the members of a
one-member set gives a writeConcernError after the write), "Database Profiler" (level 2 records every
insert), "Schema Validation" (validator errors 121), "Capped Collections"; jstests/core/write/insert/
insert_id_undefined.js and jstests/core/field_name_validation.js for the names the general path refuses.
"""
from __future__ import annotations

import datetime
from unittest import mock

import bson
import pytest
from bson import SON
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import PyMongoError
from pymongo.write_concern import WriteConcern

from labkit.engine import EmbeddedClient
from labkit.engine.catalog import collection as C
from labkit.engine.catalog import rules as R
from recording import EventRecorder

FULL = R.LabCollection.insert_one.__wrapped__  # the chain the entry falls back to


_Rec = EventRecorder  # tests/recording.py


values = st.one_of(st.integers(-3, 3), st.just(2 ** 70), st.sampled_from(["x", "", "\ud800"]), st.none(),
                   st.booleans(), st.just(b"\x01"), st.just({"n": 1}), st.just([1, 2]),
                   st.just(datetime.datetime(2024, 1, 1, 12, 0, 0, 123456)),
                   st.just(datetime.datetime(2024, 1, 1, 13, 0, tzinfo=datetime.timezone.utc)))
names = st.sampled_from(["a", "b", "$x", "a.b", "_id", "n\x00ul"])
docs = st.lists(st.dictionaries(names, values, max_size=3), min_size=1, max_size=6)


def _run(rows, setup, use_entry):
    ids = iter(range(1, 10 ** 6))
    oid = lambda: bson.ObjectId(b"%012d" % next(ids))  # noqa: E731 - the same generated _ids on both paths
    from labkit.engine.base import docutil
    with mock.patch.object(C, "new_object_id", oid), mock.patch.object(docutil, "new_object_id", oid):
        return _run_inner(rows, setup, use_entry)


def _run_inner(rows, setup, use_entry):
    rec = _Rec()
    client = EmbeddedClient(event_listeners=[rec] if setup == "listener" else [])
    db = client.db
    if setup == "validator":
        db.create_collection("c", validator={"$jsonSchema": {"required": ["a"]}})
    elif setup == "capped":
        db.create_collection("c", capped=True, size=4096, max=3)
    coll = db.c
    coll.create_index("a", unique=True)
    if setup == "profile":
        db.command("profile", 2)
    target = coll
    if setup == "w0":
        target = coll.with_options(write_concern=WriteConcern(w=0))
    elif setup == "w2":
        target = coll.with_options(write_concern=WriteConcern(w=2))
    insert = R.LabCollection.insert_one if use_entry else FULL
    out = []
    for d in rows:
        d = SON(d) if setup == "son" else dict(d)
        try:
            if setup == "txn":
                with client.start_session() as s:
                    with s.start_transaction():
                        r = insert(target, d, session=s)
            else:
                r = insert(target, d)
            out.append(("ok", repr(r.inserted_id) if r.acknowledged else None, r.acknowledged))
        except (PyMongoError, bson.errors.BSONError, TypeError, ValueError, OverflowError) as e:
            out.append(("error", type(e).__name__, getattr(e, "code", None), str(e)))
    stored = [bson.encode(x) for _, x in sorted(coll._store.docs.items())]
    entries = {n: list(ix.entries) for n, ix in coll._store.ix.items()}
    prof = [{k: v for k, v in p.items() if k in ("op", "ns", "ninserted", "keysInserted", "errCode", "errMsg")}
            for p in db.system.profile.find({"op": "insert"})] if setup == "profile" else []
    events = [e for e in rec.events if e[1] == "insert"]
    return out, stored, entries, prof, repr(events)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=docs, setup=st.sampled_from(["plain", "plain", "listener", "profile", "txn", "w0", "w2",
                                         "validator", "capped", "son"]))
def test_entry_equals_full_chain(rows, setup):
    # an int beyond 64 bits: pymongo's OverflowError on every path (the driver's encoder fails before sending)
    assert repr(_run(rows, setup, True)) == repr(_run(rows, setup, False))


def test_entry_is_taken_for_a_plain_insert_and_not_when_watched():
    coll = EmbeddedClient().db.c
    with mock.patch.object(R.boundary, "Op", side_effect=AssertionError("boundary")):
        assert coll.insert_one({"_id": 1, "a": 1}).inserted_id == 1  # the entry: no boundary operation
    rec = _Rec()
    coll = EmbeddedClient(event_listeners=[rec]).db.c
    coll.insert_one({"_id": 1})
    assert [e[0] for e in rec.events] == ["started", "succeeded"]  # watched: through the boundary


def test_entry_translates_errors_as_the_boundary():
    """A duplicate key is the server's E11000 DuplicateKeyError (code 11000) on both paths; an internal
    failure of the flat path is the boundary's InternalError, not a raw Python exception."""
    coll = EmbeddedClient().db.c
    coll.insert_one({"_id": 1})
    with pytest.raises(PyMongoError) as ei:
        coll.insert_one({"_id": 1})
    assert ei.value.code == 11000 and "E11000 duplicate key error collection: db.c index: _id_" in str(ei.value)
    with mock.patch.object(C.EmbeddedCollection, "_insert_flat", side_effect=KeyError("boom")):
        with pytest.raises(PyMongoError) as ei:
            coll.insert_one({"_id": 2})
    assert "internal error in insert_one" in str(ei.value)
