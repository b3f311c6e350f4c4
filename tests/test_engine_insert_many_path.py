"""``insert_many``'s flat-document route (``collection.flat_insert_doc`` and the batched key passes of
``_insert_many_docs_inner`` / ``_commit_bulk``) has exactly the effects and errors of the general route
(``_prepare_insert`` + ``_compute_keys`` per document): same stored documents (BSON bytes and field order),
same record ids and index entries, same inserted ids, same ``BulkWriteError.details``, same command-monitoring
events and profiler entries.

Each batch runs twice on fresh clients: once as it is, once with ``flat_insert_doc`` disabled (every document
then takes the general route), with the same deterministic ObjectIds. Semantics come from the manual
("db.collection.insertMany()": ordered/unordered, writeErrors with index/code/errmsg, nInserted; "BSON Types":
dates are UTC milliseconds; "Limits": 16 MiB documents; "Field Names") and jstests/core/write/insert/
(insert_id_undefined.js, batch_write_command_insert.js: duplicate keys inside a batch, ordered stops at the
first error, unordered continues).
"""
from __future__ import annotations

import contextlib
import datetime
import itertools
from unittest import mock

import bson
import pytest
from bson import Decimal128, ObjectId, Regex, Timestamp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo import monitoring

from labkit.engine import EmbeddedClient
from labkit.engine.catalog import collection as coll_mod
from labkit.engine.base import docutil

MAX_BSON = 16 * 1024 * 1024
UTC1 = datetime.timezone(datetime.timedelta(hours=1))
UTCM5 = datetime.timezone(datetime.timedelta(hours=-5, minutes=-30))

flat_value = st.one_of(
    st.integers(-3, 3), st.sampled_from([2 ** 31, -2 ** 31 - 1, 2 ** 63 - 1, -2 ** 63]),
    st.sampled_from([1.0, 2.5, -0.0, float("inf")]), st.sampled_from(["x", "y", "", "é", "日本", "\U0001F600"]),
    st.none(), st.booleans(), st.just(ObjectId("5f0000000000000000000001")), st.just(b"\x00\x01"),
    st.sampled_from([datetime.datetime(2024, 1, 1, 12, 0, 0, 123000),
                     datetime.datetime(2024, 1, 1, 12, 0, 0, 123456),
                     datetime.datetime(2024, 1, 1, 12, 0, 0, 999999),
                     datetime.datetime(2024, 1, 1, 13, 0, 0, 500, tzinfo=UTC1),
                     datetime.datetime(2024, 1, 1, 13, 0, tzinfo=UTCM5),
                     datetime.datetime(2024, 1, 1, 13, 0, tzinfo=datetime.timezone.utc)]))
# values that send a document down the general route (or make both routes refuse it)
general_value = st.one_of(
    st.sampled_from([2 ** 63, -2 ** 63 - 1, "\ud800", Decimal128("1.5"), Timestamp(5, 1), Regex("^a"), (1, 2)]),
    st.lists(st.integers(0, 3), max_size=3), st.fixed_dictionaries({"x": st.integers(0, 2)}),
    st.fixed_dictionaries({"a": st.integers(0, 2)}))
value = st.one_of(flat_value, flat_value, flat_value, general_value)
ids = st.one_of(st.integers(0, 8), st.just(1.0), st.just(True), st.sampled_from(["k1", "k2", "é"]),
                st.just(datetime.datetime(2024, 1, 1, 1, 0, tzinfo=UTC1)), st.just(datetime.datetime(2024, 1, 1)),
                st.none(), st.just(ObjectId("5f0000000000000000000002")), st.lists(st.integers(0, 1), max_size=1),
                st.just({"x": 1}), st.just({"$bad": 1}))
names = st.sampled_from(["a", "b", "c", "é", "$d", "a.b", "a\x00b"])

INDEX_CHOICES = [
    ([("a", 1)], {}),
    ([("a", -1)], {"unique": True}),
    ([("b", 1)], {"unique": True}),
    ([("b", -1)], {"unique": True, "sparse": True}),
    ([("a", 1), ("b", 1)], {"unique": True}),
    ([("b", 1), ("a", -1)], {}),
    ([("a", 1)], {"partialFilterExpression": {"b": {"$gt": 0}}, "unique": True, "name": "a_partial"}),
    ([("c.d", 1)], {}),
    ([("a", 1), ("c", 1), ("b", -1)], {}),
    ([("a", 1)], {"collation": {"locale": "en", "strength": 2}, "unique": True, "name": "a_ci"}),
    ([("c", 1)], {"sparse": True}),
    ([("b", 1)], {"partialFilterExpression": {"a": {"$gte": 1}}, "name": "b_partial"}),
    ([("a", "hashed")], {}),
    ([("b", 1), ("a", "hashed")], {"sparse": True, "name": "b_a_hashed"}),
]
VALIDATOR = {"$jsonSchema": {"properties": {"a": {"bsonType": ["int", "long", "string"]}}}}


@st.composite
def batches(draw, size=12):
    docs = []
    for _ in range(draw(st.integers(1, size))):
        d = {}
        if draw(st.integers(0, 3)):
            d["_id"] = draw(ids)
        for f in draw(st.lists(names, max_size=4, unique=True)):
            d[f] = draw(value)
        if draw(st.booleans()) and "_id" in d and draw(st.booleans()):
            d = dict(reversed(list(d.items())))  # _id not first: stored first
        docs.append(d)
    return docs


class Recorder(monitoring.CommandListener):
    def __init__(self):
        self.events = []

    def started(self, e):
        self.events.append(("started", e.command_name,
                            repr({k: v for k, v in e.command.items() if k not in ("lsid", "$db")})))

    def succeeded(self, e):
        self.events.append(("succeeded", e.command_name, repr(e.reply)))

    def failed(self, e):
        self.events.append(("failed", e.command_name, repr(e.failure)))


@contextlib.contextmanager
def route(general: bool):
    """Deterministic ObjectIds (both runs generate the same ones); ``general``: no flat route."""
    counter = itertools.count(1)
    def gen():
        return ObjectId(b"\x00" * 4 + next(counter).to_bytes(8, "big"))

    oid = mock.patch.object(coll_mod, "new_object_id", gen)
    # with a command listener the _id is generated where pymongo generates it, as the command is built
    oid_monitored = mock.patch.object(docutil, "new_object_id", gen)
    flat = mock.patch.object(coll_mod, "flat_insert_doc", lambda data, names: None) if general else \
        contextlib.nullcontext()
    with oid, oid_monitored, flat:
        yield


def outcome(call):
    try:
        return ("ok", repr(call()))
    except Exception as e:  # compared between the two routes, whatever it is
        return (type(e).__name__, str(e), repr(getattr(e, "details", None)))


def snapshot(coll):
    st_ = coll._store
    return ([(rid, bson.encode(d), repr(d)) for rid, d in st_.docs.items()],
            {n: list(ix.entries) for n, ix in st_.ix.items()}, sorted(map(repr, st_.rid_by_key)), st_.next_rid,
            {n: (ix.multikey, ix.multikey_paths_doc()) for n, ix in st_.ix.items()})


def run(general: bool, setup: list, stored: list, batch_list: list, ordered: bool, profile: bool):
    rec = Recorder()
    client = EmbeddedClient(event_listeners=[rec])
    db = client.d
    with route(general):
        if profile:
            db.command("profile", 2)
        kind, spec = setup
        if kind == "validator":
            db.create_collection("c", validator=VALIDATOR)
        for key, opts in spec:
            db.c.create_index(key, **opts)
        for d in stored:
            outcome(lambda: db.c.insert_one(bson.SON(d)))  # the general path, both runs
        results = [outcome(lambda b=b: db.c.insert_many([dict(d) for d in b], ordered=ordered))
                   for b in batch_list]
        events = list(rec.events)
        prof = []
        if profile:
            db.command("profile", 0)
            prof = [repr({k: v for k, v in e.items() if k not in ("ts", "millis", "_id", "command")})
                    for e in db["system.profile"].find()]
    return results, snapshot(db.c), events, prof


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(batch_list=st.lists(batches(), min_size=1, max_size=3), stored=batches(6),
       idx=st.lists(st.sampled_from(range(len(INDEX_CHOICES))), max_size=3, unique=True),
       validator=st.booleans(), ordered=st.booleans(), profile=st.booleans())
def test_flat_route_matches_general_route(batch_list, stored, idx, validator, ordered, profile):
    setup = ("validator" if validator else "plain", [INDEX_CHOICES[i] for i in idx])
    fast = run(False, setup, stored, batch_list, ordered, profile)
    general = run(True, setup, stored, batch_list, ordered, profile)
    assert fast[0] == general[0]  # results and errors
    assert fast[1] == general[1]  # documents, record ids, index entries, multikey state
    assert fast[2] == general[2]  # command monitoring
    assert fast[3] == general[3]  # profiler entries


def _one(general: bool, doc: dict, ordered: bool = True):
    client = EmbeddedClient()
    with route(general):
        out = outcome(lambda: client.d.c.insert_many([dict(doc), {"_id": "after"}], ordered=ordered))
    return out, snapshot(client.d.c)


@pytest.mark.parametrize("delta", [-40, -20, -19, -18, -17, -1, 0, 1, 2])
def test_documents_near_16_mib(delta):
    # manual "Limits": BSON documents at most 16 MiB; the driver refuses a larger one (DocumentTooLarge) before
    # sending, so the batch is not applied. The size bound must never let a document past the exact check.
    base = len(bson.encode({"_id": 1, "s": ""}))
    doc = {"_id": 1, "s": "x" * (MAX_BSON - base + delta)}
    assert len(bson.encode(doc)) == MAX_BSON + delta
    for ordered in (True, False):
        assert _one(False, doc, ordered) == _one(True, doc, ordered)
    fast = _one(False, doc)
    if delta <= 0:
        assert fast[0][0] == "ok"
    else:
        assert fast[0][0] == "DocumentTooLarge" and fast[1][0] == []


def test_non_ascii_payload_near_16_mib():
    base = len(bson.encode({"_id": 1, "s": ""}))
    for n_bytes in (MAX_BSON - base, MAX_BSON - base + 2):
        doc = {"_id": 1, "s": "é" * (n_bytes // 2)}  # two UTF-8 bytes per character
        assert _one(False, doc) == _one(True, doc)


def test_flat_documents_skip_the_general_preparation():
    # the speed route must really be taken for the seeders' shape (and not for nested documents or arrays)
    c = EmbeddedClient().d.c
    c.create_index("a")
    calls = []
    real = type(c)._prepare_insert
    with mock.patch.object(type(c), "_prepare_insert", lambda self, d: calls.append(d) or real(self, d)):
        c.insert_many([{"a": i, "s": "t", "at": datetime.datetime(2024, 1, 1)} for i in range(50)])
        assert calls == []
        c.insert_many([{"a": 1, "tags": ["x"]}, {"a": 2, "sub": {"y": 1}}, {"a": 3}])
        assert len(calls) == 2
    assert c.count_documents({}) == 53


def test_stored_values_are_the_servers():
    # manual "BSON Types" (Date): UTC milliseconds; "Document" (_id first)
    c = EmbeddedClient().d.c
    aware = datetime.datetime(2024, 1, 1, 13, 0, 0, 456789, tzinfo=UTC1)
    data = [{"x": 1, "_id": 7, "at": aware}, {"at": datetime.datetime(2024, 1, 1, 0, 0, 0, 1999)}]
    res = c.insert_many(data)
    assert res.inserted_ids[0] == 7 and "_id" in data[1]  # the client's document gets its _id
    docs = list(c.find())
    assert list(docs[0]) == ["_id", "x", "at"]
    assert docs[0]["at"] == datetime.datetime(2024, 1, 1, 12, 0, 0, 456000) and docs[0]["at"].tzinfo is None
    assert docs[1]["at"] == datetime.datetime(2024, 1, 1, 0, 0, 0, 1000)


def test_write_errors_carry_the_servers_errmsg():
    # jstests/core/write/insert/batch_write_command_insert.js: writeErrors[].errmsg is the server's message
    c = EmbeddedClient().d.c
    c.create_index("email", unique=True)
    with pytest.raises(Exception) as err:
        c.insert_many([{"_id": 1, "email": "a"}, {"_id": 2, "email": "a"}, {"_id": 1}, {"_id": 3}], ordered=False)
    det = err.value.details
    assert det["nInserted"] == 2
    assert [(e["index"], e["code"]) for e in det["writeErrors"]] == [(1, 11000), (2, 11000)]
    assert det["writeErrors"][0]["errmsg"] == \
        "E11000 duplicate key error collection: d.c index: email_1 dup key: { email: \"a\" }"
    assert det["writeErrors"][0]["keyPattern"] == {"email": 1}
    assert det["writeErrors"][0]["keyValue"] == {"email": "a"}
    assert det["writeErrors"][1]["errmsg"] == "E11000 duplicate key error collection: d.c index: _id_ dup key: { _id: 1 }"


EDGE_DOCS = [
    {"_id": 1, "a": 2 ** 63}, {"_id": 1, "a": -2 ** 63 - 1}, {"_id": 1, "a": 2 ** 63 - 1}, {"_id": 1, "a": -2 ** 63},
    {"_id": 1, "a": "\ud800"}, {"_id": 1, "\udc00": 1}, {"_id": 1, "a\x00b": 1}, {"_id": 1, "$a": 1},
    {"_id": 1, "é": "日本"}, {"_id": 1, "": 1}, {"_id": 1, "a.b": 1}, {"_id": 2 ** 63}, {"_id": "\ud800"},
    {"_id": [1]}, {"_id": Regex("^a")}, {"_id": {"$x": 1}}, {"_id": {"x": 1}}, {"_id": True}, {"_id": None},
    {"_id": 1.5, "a": Decimal128("2")}, {"_id": datetime.datetime(2024, 5, 1, 1, 2, 3, 4567, tzinfo=UTCM5)},
    {"a": datetime.datetime(1, 1, 1, 0, 0, 0, 999)}, {"a": datetime.datetime(9999, 12, 31, 23, 59, 59, 999999)},
    {"a": float("nan")}, {"a": b""}, {"a": (1, 2)}, {1: 1}, {"a": 1, "_id": 1},
]


@pytest.mark.parametrize("doc", EDGE_DOCS, ids=repr)
def test_edge_documents_take_a_route_with_the_general_outcome(doc):
    # manual "Field Names", "BSON Types" (64-bit integers, UTF-8 strings, millisecond dates), "_id Field"
    # (not an array or a regex); values the driver cannot encode are refused before the write
    for ordered in (True, False):
        assert _one(False, doc, ordered) == _one(True, doc, ordered)
    for key in ("a", "_id"):
        outs = []
        for general in (False, True):
            client = EmbeddedClient()
            if key != "_id":
                client.d.c.create_index(key, unique=True)
            with route(general):
                outs.append((outcome(lambda: client.d.c.insert_many([{"_id": 0, "a": 5}, dict(doc)])),
                             snapshot(client.d.c)))
        assert outs[0] == outs[1]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(docs=batches(15), i=st.sampled_from(range(len(INDEX_CHOICES))))
def test_index_build_matches_maintained_index(docs, i):
    # manual "createIndexes": an index built over existing documents holds the keys the same index would
    # have got from inserting them (multikey state included); a failing build (duplicates, parallel
    # arrays) leaves no index behind
    key, opts = INDEX_CHOICES[i]
    built, maintained = EmbeddedClient().d.c, EmbeddedClient().d.c
    outs = []
    with route(False):
        maintained.create_index(key, **opts)
        for d in docs:
            outs.append(outcome(lambda d=d: maintained.insert_one(bson.SON(d))))
    with route(False):
        for d, o in zip(docs, outs):
            outcome(lambda d=d: built.insert_one(bson.SON(d)))
    name = opts.get("name") or "_".join("%s_%s" % kd for kd in key)
    # only compare when the maintained side accepted every document the built side holds
    if len(built._store.docs) == len(maintained._store.docs):
        res = outcome(lambda: built.create_index(key, **opts))
        if res[0] == "ok":
            assert snapshot(built) == snapshot(maintained)
        else:
            assert name not in built.index_information()
