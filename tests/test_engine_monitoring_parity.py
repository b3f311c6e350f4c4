"""Command monitoring parity: the events ``labkit.connect(event_listeners=[...])`` publishes in-process are the
events pymongo publishes over the wire for the same calls.

The same pymongo calls run twice: on the embedded client, and with pymongo's real driver over TCP against the
served engine (``serve_in_thread``), each with a ``CommandListener``; the two event streams are compared event by
event: command name, database, the command document (field order included) and the reply or failure.

What is not comparable is only what a socket adds, as pymongo's own code shows:
* ``$clusterTime`` (``Connection.send_cluster_time`` gossips the last one seen; replies carry ``$clusterTime``
  and ``operationTime``): dropped from both;
* explain's measured times (``executionTimeMillis``, ``executionTimeMillisEstimate``, ``optimizationTimeMillis``):
  compared as present, since a loaded machine makes either run slower;
* session and cursor identities: pymongo takes the server session of every operation, implicit or explicit,
  from a pool (``_ServerSessionPool``) and numbers retryable writes and transactions on it
  (``_ServerSession.inc_transaction_id``), so an ``lsid`` is compared by its order of appearance in the call and
  a ``txnNumber`` as present; cursor ids by order of appearance; cluster times (``Timestamp``) as present.
Everything else -- ``writeConcern`` on unacknowledged writes, ``comment`` on getMore, ``let``, ``allowDiskUse``,
``readConcern`` (``afterClusterTime`` in causally consistent sessions), ``maxTimeMS``, ``startTransaction`` /
``autocommit``, the placement of the document sequences after ``$db`` -- must be equal; a call pymongo refuses
before sending must publish nothing.
"""
from __future__ import annotations

import copy
import re
from typing import Any, Callable

import pytest
from bson import Int64, Timestamp
from pymongo import (DeleteMany, DeleteOne, IndexModel, InsertOne, MongoClient, ReplaceOne, ReturnDocument,
                     UpdateMany, UpdateOne, monitoring)
from pymongo.read_concern import ReadConcern
from pymongo.write_concern import WriteConcern

from labkit.engine import EmbeddedClient
from served_helpers import serve_in_thread


class Recorder(monitoring.CommandListener):
    def __init__(self) -> None:
        self.events: list = []

    # copies as published: pymongo goes on using some of these documents (the client bulk write adds ``error``
    # and ``writeErrors`` to the reply it published)
    def started(self, e) -> None:
        self.events.append(("started", e.command_name, e.database_name, copy.deepcopy(e.command)))

    def succeeded(self, e) -> None:
        self.events.append(("succeeded", e.command_name, e.database_name, copy.deepcopy(e.reply)))

    def failed(self, e) -> None:
        self.events.append(("failed", e.command_name, e.database_name, e.failure))


# ---------------------------------------------------------------------------------------------- the calls
def _steps(client: Any, explicit: dict) -> list[tuple[str, Callable[[], Any]]]:
    """(name, call) pairs: one pymongo call each (some several commands), over a fresh database."""
    db = client.parity
    c = db.things

    def with_session(fn):
        def run():
            with client.start_session() as s:
                explicit["ids"].append(s.session_id["id"])
                fn(s)
        return run

    def with_snapshot(fn):
        def run():
            with client.start_session(snapshot=True) as s:
                fn(s)
        return run

    def in_txn(s):
        with s.start_transaction():
            c.insert_one({"_id": 100, "k": "t"}, session=s)
            c.find_one({"_id": 100}, session=s)
            c.update_one({"_id": 100}, {"$set": {"x": 1}}, session=s)

    def aborted_txn(s):
        s.start_transaction(read_concern=ReadConcern("majority"))
        c.insert_one({"_id": 101}, session=s)
        s.abort_transaction()

    def causal(s):
        c.insert_one({"_id": 102}, session=s)
        c.find_one({"_id": 102}, session=s)
        list(c.aggregate([{"$match": {"_id": 102}}], session=s))

    def with_txn(s):
        s.with_transaction(lambda ss: c.delete_one({"_id": 102}, session=ss))

    def snapshot(s):
        c.find_one({"_id": 1}, session=s)
        list(c.find({}, session=s, batch_size=3))
        c.distinct("k", session=s)
        c.count_documents({}, session=s)

    def snapshot_write(s):
        c.find_one({}, session=s)
        c.insert_one({"_id": 103}, session=s)

    def conflict(s):
        s.start_transaction()
        c.find_one({"_id": 1}, session=s)
        c.update_one({"_id": 1}, {"$inc": {"n": 1}})  # outside: the document changes after the snapshot
        try:
            c.update_one({"_id": 1}, {"$inc": {"n": 1}}, session=s)
        finally:
            s.abort_transaction()

    def explicit_writes(s):
        c.insert_many([{"_id": 104}, {"_id": 105}], session=s)
        c.update_many({"_id": {"$in": [104, 105]}}, {"$set": {"e": 1}}, session=s)
        c.delete_many({"_id": {"$in": [104, 105]}}, session=s)

    def early_close():
        cur = c.find({}, batch_size=2)
        next(cur)
        cur.close()

    return [
        ("insert_one", lambda: c.insert_one({"_id": 1, "k": "a", "n": 1})),
        ("insert_one comment bypass", lambda: c.insert_one({"_id": 2, "k": "b", "n": 2}, comment="c1",
                                                           bypass_document_validation=True)),
        ("insert_many", lambda: c.insert_many([{"_id": i, "k": "x", "n": i} for i in range(3, 9)])),
        ("insert_many unordered", lambda: c.insert_many([{"_id": 9, "k": "y", "n": 9}], ordered=False)),
        ("find options", lambda: list(c.find({"n": {"$gt": 1}}, {"k": 1}, sort=[("n", -1)], skip=1, limit=5,
                                             comment="by n", max_time_ms=5000, allow_disk_use=True,
                                             let={"v": 1}))),
        ("find hint", lambda: list(c.find({}, hint=[("_id", 1)]))),
        ("cursor chain", lambda: list(c.find({}).comment("cc").batch_size(3).sort("n", 1).max_time_ms(2000))),
        ("cursor getMore", lambda: list(c.find({}, batch_size=4, comment="gm"))),
        ("cursor limit", lambda: list(c.find({}).limit(3).batch_size(2))),
        ("cursor close early", early_close),
        ("find_one", lambda: c.find_one({"_id": 1})),
        ("find_one by id", lambda: c.find_one(2)),
        ("count_documents", lambda: c.count_documents({"n": {"$gte": 2}}, skip=1, limit=10)),
        ("estimated_document_count", lambda: c.estimated_document_count(comment="est")),
        ("distinct", lambda: c.distinct("k")),
        ("distinct filter", lambda: c.distinct("k", {"n": {"$gt": 3}}, comment="dk")),
        ("aggregate options", lambda: list(c.aggregate([{"$match": {"n": {"$gt": 0}}}, {"$sort": {"_id": 1}}],
                                                       allowDiskUse=True, maxTimeMS=3000, comment="ag",
                                                       let={"t": 2}, batchSize=3))),
        ("update_one let", lambda: c.update_one({"_id": 1}, {"$set": {"u": 1}}, let={"v": 1}, comment="u1")),
        ("update_one upsert", lambda: c.update_one({"_id": 50}, {"$set": {"n": 50}}, upsert=True)),
        ("update_many", lambda: c.update_many({"k": "x"}, {"$inc": {"n": 1}})),
        ("replace_one", lambda: c.replace_one({"_id": 2}, {"k": "b", "n": 20})),
        ("delete_one", lambda: c.delete_one({"_id": 50})),
        ("delete_many", lambda: c.delete_many({"k": "y"}, comment="dm")),
        ("find_one_and_update", lambda: c.find_one_and_update({"_id": 1}, {"$inc": {"n": 1}},
                                                              return_document=ReturnDocument.AFTER,
                                                              projection={"n": 1}, sort=[("_id", 1)])),
        ("find_one_and_replace", lambda: c.find_one_and_replace({"_id": 3}, {"k": "z", "n": 3}, upsert=True)),
        ("find_one_and_delete", lambda: c.find_one_and_delete({"_id": 4})),
        ("bulk ordered", lambda: c.bulk_write([InsertOne({"_id": 60}), UpdateOne({"_id": 60}, {"$set": {"z": 1}}),
                                                ReplaceOne({"_id": 60}, {"z": 2}), DeleteOne({"_id": 60})])),
        ("bulk unordered multi", lambda: c.bulk_write([UpdateMany({}, {"$set": {"w": 1}}), DeleteMany({"_id": 999}),
                                                       InsertOne({"_id": 61})], ordered=False, comment="bk",
                                                      let={"a": 1})),
        ("unacknowledged insert", lambda: c.with_options(write_concern=WriteConcern(w=0)).insert_one({"_id": 70})),
        ("unacknowledged update", lambda: c.with_options(write_concern=WriteConcern(w=0)).update_one(
            {"_id": 70}, {"$set": {"q": 1}})),
        ("write concern w2", lambda: c.with_options(write_concern=WriteConcern(w=2)).insert_one({"_id": 71})),
        ("majority read", lambda: c.with_options(read_concern=ReadConcern("majority")).find_one({"_id": 1})),
        ("duplicate key", lambda: c.insert_one({"_id": 1})),
        ("bad operator", lambda: c.update_one({"_id": 1}, {"$nope": {"a": 1}})),
        ("refused client side: document", lambda: c.insert_one(5)),
        ("refused client side: update", lambda: c.update_one({"_id": 1}, {"a": 1})),
        ("refused client side: batch size", lambda: c.find({}, batch_size=-1)),
        ("create_index", lambda: c.create_index([("n", 1)], name="n_1")),
        ("create_indexes", lambda: c.create_indexes([IndexModel([("k", 1)]), IndexModel([("k", 1), ("n", -1)])])),
        ("list_indexes", lambda: list(c.list_indexes())),
        ("drop_index", lambda: c.drop_index("n_1")),
        ("explicit session causal", with_session(causal)),
        ("transaction", with_session(in_txn)),
        ("aborted transaction", with_session(aborted_txn)),
        ("with_transaction", with_session(with_txn)),
        ("snapshot session", with_snapshot(snapshot)),
        ("snapshot session write", lambda: with_snapshot(snapshot_write)()),
        ("write conflict in a transaction", with_session(conflict)),
        ("explicit session writes", with_session(explicit_writes)),
        ("insert_many duplicate", lambda: c.insert_many([{"_id": 110}, {"_id": 1}, {"_id": 111}])),
        ("insert_many unordered duplicate", lambda: c.insert_many([{"_id": 112}, {"_id": 1}, {"_id": 113}],
                                                                  ordered=False)),
        ("bulk ordered error", lambda: c.bulk_write([InsertOne({"_id": 120}), InsertOne({"_id": 1}),
                                                     DeleteOne({"_id": 120})])),
        ("bulk unordered error", lambda: c.bulk_write([DeleteOne({"_id": 999}), InsertOne({"_id": 1}),
                                                       UpdateOne({"_id": 2}, {"$set": {"b": 2}})], ordered=False)),
        ("update array filters hint", lambda: c.update_one({"_id": 1}, {"$set": {"arr.$[e]": 0}},
                                                           array_filters=[{"e": {"$gt": 5}}], hint="_id_")),
        ("find collation", lambda: list(c.find({"k": "A"}, collation={"locale": "en", "strength": 2}))),
        ("count_documents hint", lambda: c.count_documents({"k": "a"}, hint=[("_id", 1)], maxTimeMS=1000)),
        ("find projection list", lambda: list(c.find({}, ["k"]).limit(2))),
        ("aggregate $out", lambda: list(c.aggregate([{"$match": {"k": "a"}}, {"$out": "copy"}]))),
        ("index_information", lambda: c.index_information()),
        ("explain", lambda: c.find({"k": "a"}).explain()),
        ("create_collection", lambda: db.create_collection("made", validator={"a": {"$exists": True}})),
        ("create_collection exists", lambda: db.create_collection("made")),
        ("validation error", lambda: db.made.insert_one({"_id": 1})),
        ("list_collection_names", lambda: db.list_collection_names()),
        ("rename", lambda: db.copy.rename("copy2")),
        ("drop_indexes", lambda: c.drop_indexes()),
        ("drop", lambda: db.other.drop()),
        ("drop missing", lambda: db.nothing.drop()),
        ("client bulk_write", lambda: client.bulk_write([InsertOne({"_id": 80}, namespace="parity.things"),
                                                          UpdateOne({"_id": 80}, {"$set": {"y": 1}},
                                                                    namespace="parity.other")])),
    ]


def _record(client: Any) -> tuple[list, dict, dict]:
    rec = client._parity_recorder
    client.drop_database("parity")
    explicit: dict = {"ids": []}
    per_step: dict[str, list] = {}
    outcome: dict[str, str] = {}
    for name, call in _steps(client, explicit):
        rec.events.clear()
        try:
            call()
            outcome[name] = "ok"
        except Exception as exc:  # noqa: BLE001 - the error type is part of what is compared
            outcome[name] = type(exc).__name__
        per_step[name] = list(rec.events)
    return per_step, outcome, explicit


# ---------------------------------------------------------------------------------------------- normalizing
_TS_TEXT = re.compile(r"Timestamp\(\d+, \d+\)")


def _normalize(value: Any, ctx: dict, path: str = "") -> Any:
    if isinstance(value, Timestamp):
        return "<Timestamp>"
    if isinstance(value, str):
        return _TS_TEXT.sub("Timestamp(<t>)", value)  # a cluster time quoted in an error message
    if isinstance(value, dict) or hasattr(value, "items") and not isinstance(value, (str, bytes)):
        out = []
        for k, v in value.items():
            if k in ("$clusterTime", "operationTime"):
                continue
            if k in ("executionTimeMillis", "executionTimeMillisEstimate", "optimizationTimeMillis") \
                    and isinstance(v, int):
                out.append((k, "<ms>"))  # explain's measured times (the explain page): the clock's, not the engine's
                continue
            if k == "lsid":
                ids = ctx.setdefault("lsids", {})
                out.append((k, "<lsid %d>" % ids.setdefault(bytes(v["id"]), len(ids) + 1)))
                continue
            if k == "txnNumber":
                out.append((k, "<txnNumber>"))
                continue
            if k in ("getMore", "id") and isinstance(v, int) and path in ("", "cursor"):
                out.append((k, _cursor(v, ctx)))
                continue
            if k in ("cursors", "cursorsKilled", "cursorsNotFound", "cursorsAlive", "cursorsUnknown") \
                    and isinstance(v, list):
                out.append((k, [_cursor(x, ctx) for x in v]))
                continue
            out.append((k, _normalize(v, ctx, k)))
        return out
    if isinstance(value, list):
        return [_normalize(v, ctx, path) for v in value]
    if isinstance(value, Int64):
        return ("long", int(value))
    return value


def _cursor(cid: int, ctx: dict) -> Any:
    if not cid:
        return 0
    ids = ctx.setdefault("cursors", {})
    return "<cursor %d>" % ids.setdefault(int(cid), len(ids) + 1)


def _stream(events: list) -> list:
    ctx: dict = {}
    return [(kind, name, db, _normalize(doc, ctx)) for kind, name, db, doc in events]


@pytest.fixture(scope="module")
def recorded():
    with serve_in_thread() as srv:
        wire_rec = Recorder()
        wire = MongoClient(srv.uri, event_listeners=[wire_rec], serverSelectionTimeoutMS=5000)
        wire._parity_recorder = wire_rec
        served = _record(wire)
        wire.close()
    emb_rec = Recorder()
    emb = EmbeddedClient(event_listeners=[emb_rec])
    emb._parity_recorder = emb_rec
    embedded = _record(emb)
    return embedded, served


_NAMES = [name for name, _ in _steps(EmbeddedClient(), {"ids": []})]

# The served engine answers the 8.0 bulkWrite command once the wire server has it (issue 26, its own part); until
# then only the command pymongo sends is compared for the client-level bulk write.
_CLIENT_BULK = "client bulk_write"


@pytest.mark.parametrize("step", _NAMES)
def test_same_events_in_process_and_over_the_wire(recorded, step):
    (emb_steps, emb_out, emb_ex), (wire_steps, wire_out, wire_ex) = recorded
    emb = _stream(emb_steps[step])
    wire = _stream(wire_steps[step])
    if step == _CLIENT_BULK and any(e[0] == "failed" and dict(e[3]).get("code") in (59, 115) for e in wire):
        emb = [e for e in emb if e[0] == "started"]
        wire = [e for e in wire if e[0] == "started"]
    else:
        assert emb_out[step] == wire_out[step], (emb_out[step], wire_out[step])
    assert len(emb) == len(wire), "\nembedded: %s\nwire:     %s" % ([e[:2] for e in emb], [e[:2] for e in wire])
    for a, b in zip(emb, wire):
        assert a == b, "\nembedded: %r\nwire:     %r" % (a, b)


def test_refused_arguments_publish_nothing(recorded):
    """pymongo validates these arguments before building a command: no event at all, in-process too."""
    (emb_steps, emb_out, _), _ = recorded
    for step in ("refused client side: document", "refused client side: update", "refused client side: batch size"):
        assert emb_steps[step] == [] and emb_out[step] in ("TypeError", "ValueError"), step
