"""Change streams on the embedded engine, in-process (pymongo's watch()) and over the wire (pymongo against
``serve_in_thread()``): the facts come from MongoDB's manual ("Change Streams", "Change Events",
"$changeStream"), the server's jstests/change_streams/ and src/mongo/db/pipeline/document_source_change_stream*.cpp,
change_stream_event_transform.cpp and change_stream_document_diff_parser.cpp."""
from __future__ import annotations

import threading
import time

import pytest
from bson import Timestamp
from pymongo import MongoClient
from pymongo.errors import OperationFailure

from labkit.engine import EmbeddedClient
from labkit.engine.repl import oplog as oplog_mod
from labkit.engine.transport.wire import serve_in_thread
from recording import change_events


@pytest.fixture(params=["in-process", "wire"])
def client(request):
    engine = EmbeddedClient()
    if request.param == "in-process":
        yield engine
        return
    server = serve_in_thread(client=engine)
    c = MongoClient(server.uri, serverSelectionTimeoutMS=5000)
    try:
        yield c
    finally:
        c.close()
        server.stop()


def test_crud_events_and_their_fields(client):
    coll = client.cs.c
    coll.insert_one({"_id": 0})
    with coll.watch(max_await_time_ms=50) as s:
        coll.insert_one({"_id": 1, "a": 1, "arr": [1, 2, 3]})
        coll.update_one({"_id": 1}, {"$set": {"a": 2}, "$unset": {"zz": 1}, "$push": {"arr": 4}})
        coll.update_one({"_id": 1}, {"$unset": {"a": 1}})
        coll.replace_one({"_id": 1}, {"x": 1})
        coll.delete_one({"_id": 1})
        ins, upd, unset, rep, dele = change_events(s, 5)
    # field order of change_stream_event_transform.cpp: _id, operationType, clusterTime, wallTime, fullDocument,
    # ns, documentKey, updateDescription
    assert list(ins) == ["_id", "operationType", "clusterTime", "wallTime", "fullDocument", "ns", "documentKey"]
    assert ins["operationType"] == "insert" and ins["fullDocument"] == {"_id": 1, "a": 1, "arr": [1, 2, 3]}
    assert ins["ns"] == {"db": "cs", "coll": "c"} and ins["documentKey"] == {"_id": 1}
    assert isinstance(ins["clusterTime"], Timestamp) and set(ins["_id"]) == {"_data"}
    assert list(upd) == ["_id", "operationType", "clusterTime", "wallTime", "ns", "documentKey",
                         "updateDescription"]
    # a $push logs each appended element by its index (v2 oplog diff), a no-op $unset logs nothing
    assert upd["updateDescription"] == {"updatedFields": {"a": 2, "arr.3": 4}, "removedFields": [],
                                        "truncatedArrays": []}
    assert unset["updateDescription"]["removedFields"] == ["a"]
    assert rep["operationType"] == "replace" and rep["fullDocument"] == {"_id": 1, "x": 1}
    assert dele["operationType"] == "delete" and "fullDocument" not in dele
    # resume tokens are ordered by cluster time
    toks = [e["_id"]["_data"] for e in (ins, upd, unset, rep, dele)]
    assert toks == sorted(toks) and len(set(toks)) == 5


def test_pipeline_update_diff_truncated_arrays_and_disambiguated_paths(client):
    coll = client.cs.p
    coll.insert_one({"_id": 1, "arr": [1, 2, 3], "o": {"1": "x", "k": 1}})
    with coll.watch(show_expanded_events=True, max_await_time_ms=50) as s:
        coll.update_one({"_id": 1}, [{"$set": {"arr": [1, 2], "o": {"1": "y", "k": 1}}}])
        coll.update_one({"_id": 1}, {"$set": {"arr.0": 9}})
        a, b = change_events(s, 2)
    d = a["updateDescription"]
    assert d["truncatedArrays"] == [{"field": "arr", "newSize": 2}]
    assert d["updatedFields"] == {"o.1": "y"}
    # a numeric field name below the top level is ambiguous: disambiguatedPaths says it is a field name
    assert d["disambiguatedPaths"] == {"o.1": ["o", "1"]}
    assert "collectionUUID" in a
    assert b["updateDescription"]["updatedFields"] == {"arr.0": 9}
    assert b["updateDescription"]["disambiguatedPaths"] == {}


def test_pipeline_update_diff_compares_values_bit_for_bit(client):
    # document_diff_calculator.cpp keeps an element out of the diff when it is binaryEqual to the old one: a
    # NaN rewritten as the same NaN is not an update, while 1 -> 1.0 (int32 -> double) is
    coll = client.cs.nan
    coll.insert_one({"_id": 1, "l": [float("nan"), 1], "n": 1})
    with coll.watch(max_await_time_ms=50) as s:
        coll.update_one({"_id": 1}, [{"$set": {"l": [float("nan"), 2], "n": 1.0}}])
        (ev,) = change_events(s, 1)
    assert ev["updateDescription"]["updatedFields"] == {"l.1": 2, "n": 1.0}
    assert type(ev["updateDescription"]["updatedFields"]["n"]) is float


def test_drop_rename_and_invalidate(client):
    db = client.cs
    db.a.insert_one({"_id": 1})
    s = db.a.watch(max_await_time_ms=50)
    dbs = db.watch(max_await_time_ms=50)
    db.a.rename("b")
    evs = change_events(s, 2)
    assert [e["operationType"] for e in evs] == ["rename", "invalidate"]
    assert evs[0]["to"] == {"db": "cs", "coll": "b"} and evs[0]["ns"] == {"db": "cs", "coll": "a"}
    assert list(evs[1]) == ["_id", "operationType", "clusterTime", "wallTime"]
    assert s.try_next() is None if s.alive else not s.alive
    assert not s.alive
    db.b.drop()
    evs = change_events(dbs, 2)
    assert [e["operationType"] for e in evs] == ["rename", "drop"]  # a database stream is not invalidated
    # startAfter an invalidate starts a new stream on the collection; resumeAfter refuses it (260)
    inv_token = s.resume_token
    with pytest.raises(OperationFailure) as e:
        db.a.watch(resume_after=inv_token)
    assert e.value.code == 260
    s2 = db.a.watch(start_after=inv_token, max_await_time_ms=50)
    db.a.insert_one({"_id": 7})
    assert change_events(s2, 1)[0]["documentKey"] == {"_id": 7}
    s2.close()
    dbs.close()


def test_drop_database_events(client):
    client.csx.a.insert_one({"_id": 1})
    s = client.csx.watch(max_await_time_ms=50)
    cs = client.csx.a.watch(max_await_time_ms=50)
    client.drop_database("csx")
    assert [e["operationType"] for e in change_events(s, 3)] == ["drop", "dropDatabase", "invalidate"]
    assert [e["operationType"] for e in change_events(cs, 2)] == ["drop", "invalidate"]


def test_resume_after_and_start_at_operation_time(client):
    coll = client.cs.r
    s = coll.watch(max_await_time_ms=50)
    coll.insert_many([{"_id": i} for i in range(4)])
    first = change_events(s, 1)[0]
    s.close()
    with coll.watch(resume_after=first["_id"], max_await_time_ms=50) as r:
        assert [e["documentKey"]["_id"] for e in change_events(r, 3)] == [1, 2, 3]
    with coll.watch(start_at_operation_time=first["clusterTime"], max_await_time_ms=50) as r:
        assert [e["documentKey"]["_id"] for e in change_events(r, 4)] == [0, 1, 2, 3]


def test_full_document_modes_and_pre_images(client):
    db = client.cs
    db.create_collection("img", changeStreamPreAndPostImages={"enabled": True})
    db.img.insert_one({"_id": 1, "v": 1})
    db.plain.insert_one({"_id": 1, "v": 1})
    with db.img.watch(full_document="whenAvailable", full_document_before_change="required",
                      max_await_time_ms=50) as s:
        db.img.update_one({"_id": 1}, {"$inc": {"v": 1}})
        db.img.update_one({"_id": 1}, {"$inc": {"v": 1}})
        a, b = change_events(s, 2)
    assert a["fullDocument"] == {"_id": 1, "v": 2} and a["fullDocumentBeforeChange"] == {"_id": 1, "v": 1}
    assert list(a)[-1] == "fullDocumentBeforeChange"
    with db.plain.watch(full_document="updateLookup", max_await_time_ms=50) as s:
        db.plain.update_one({"_id": 1}, {"$inc": {"v": 1}})
        db.plain.update_one({"_id": 1}, {"$inc": {"v": 1}})
        a, b = change_events(s, 2)
    assert a["fullDocument"] == {"_id": 1, "v": 3}  # the current version at lookup time
    # deleted before the update event was read: the lookup finds nothing, fullDocument is null (manual: Change
    # Streams, "Lookup Full Document for Update Operations")
    db.plain.insert_one({"_id": 2, "v": 1})
    with db.plain.watch(full_document="updateLookup", max_await_time_ms=50) as s:
        db.plain.update_one({"_id": 2}, {"$inc": {"v": 1}})
        db.plain.delete_one({"_id": 2})
        upd, dele = change_events(s, 2)
    assert upd["operationType"] == "update" and upd["fullDocument"] is None
    assert dele["operationType"] == "delete" and "fullDocument" not in dele
    # images required but the collection does not record them: NoMatchingDocument (47)
    with db.plain.watch(full_document_before_change="required", max_await_time_ms=50) as s:
        db.plain.delete_one({"_id": 1})
        with pytest.raises(OperationFailure) as e:
            change_events(s, 1)
        assert e.value.code == 47


def test_user_pipeline_and_its_limits(client):
    coll = client.cs.u
    with coll.watch([{"$match": {"operationType": "insert"}}, {"$project": {"fullDocument.a": 1}}],
                    max_await_time_ms=50) as s:
        coll.insert_one({"_id": 1, "a": 1, "b": 2})
        coll.delete_one({"_id": 1})
        coll.insert_one({"_id": 2, "a": 5})
        evs = change_events(s, 2)
    assert [e["fullDocument"] for e in evs] == [{"a": 1}, {"a": 5}]
    with pytest.raises(OperationFailure) as e:
        coll.watch([{"$group": {"_id": None}}])
    assert e.value.code == 20
    with pytest.raises(OperationFailure) as e:
        coll.aggregate([{"$match": {}}, {"$changeStream": {}}])
    assert e.value.code == 40602
    with coll.watch([{"$project": {"_id": 0}}], max_await_time_ms=50) as s:
        coll.insert_one({"_id": 3})
        with pytest.raises(OperationFailure) as e:
            change_events(s, 1)
        assert e.value.code == 280


def test_bad_input_gets_the_servers_errors(client):
    db = client.cs
    db.v0.insert_one({"_id": 1})
    db.create_collection("view", viewOn="v0", pipeline=[])
    cases = [
        (lambda: db.v0.aggregate([{"$changeStream": {"bogus": 1}}]), 40415),
        (lambda: db.v0.watch(full_document="sometimes"), 2),
        (lambda: db.view.watch(), 166),
        (lambda: db["system.views"].watch(), 73),
        (lambda: client.admin.watch(), 73),
        (lambda: db.v0.watch(resume_after={"_data": "zz"}), 40649),
    ]
    for call, code in cases:
        with pytest.raises(OperationFailure) as e:
            call()
        assert e.value.code == code, (code, e.value)
    # a token from another collection: the event is not in this stream (ChangeStreamFatalError 280)
    keep = db.watch()  # a stream stays open, so the history keeps every write
    with db.other.watch(max_await_time_ms=50) as s:
        db.other.insert_one({"_id": 1})
        tok = change_events(s, 1)[0]["_id"]
    db.v0.insert_one({"_id": 2})
    with pytest.raises(OperationFailure) as e:
        with db.v0.watch(resume_after=tok, max_await_time_ms=50) as s:
            change_events(s, 1, wait=1)
    assert e.value.code == 280 and "NonResumableChangeStreamError" in e.value.details["errorLabels"]
    keep.close()
    # a resume point older than the history: ChangeStreamHistoryLost (286)
    with pytest.raises(OperationFailure) as e:
        db.v0.watch(start_at_operation_time=Timestamp(1, 1))
    assert e.value.code == 286
    assert db.v0.count_documents({}) == 2  # nothing changed


def test_transaction_events_appear_at_commit_in_order(client):
    coll = client.cs.t
    coll.insert_one({"_id": 0})
    with coll.watch(max_await_time_ms=50) as s:
        with client.start_session() as sess:
            lsid = sess.session_id
            with sess.start_transaction():
                coll.insert_one({"_id": 1}, session=sess)
                coll.update_one({"_id": 0}, {"$set": {"a": 1}}, session=sess)
                assert s.try_next() is None  # nothing before the commit
        evs = change_events(s, 2)
    assert [e["operationType"] for e in evs] == ["insert", "update"]
    assert evs[0]["clusterTime"] == evs[1]["clusterTime"]
    assert list(evs[0])[:2] == ["txnNumber", "lsid"] and evs[0]["lsid"]["id"] == lsid["id"]


def test_client_stream_and_an_event_from_another_thread(client):
    with client.watch(max_await_time_ms=2000) as s:
        t = threading.Thread(target=lambda: (time.sleep(0.2), client.other_db.c.insert_one({"_id": "x"})))
        t.start()
        ev = s.next()  # blocks until the other thread's write arrives
        t.join()
    assert ev["ns"] == {"db": "other_db", "coll": "c"}


def test_no_stream_open_records_nothing():
    engine = EmbeddedClient()
    engine.db.c.insert_many([{"_id": i} for i in range(10)])
    log = engine.db.c._db_store.oplog
    assert log.entries == [] and log.streams == 0
    with engine.db.c.watch() as s:
        engine.db.c.insert_one({"_id": 10})
        assert len(log.entries) == 1
    assert log.streams == 0


def test_expanded_ddl_events(client):
    db = client.csddl
    with db.watch(show_expanded_events=True, max_await_time_ms=50) as s, db.watch(max_await_time_ms=50) as plain:
        db.create_collection("e")
        db.e.create_index("a")
        db.command("collMod", "e", index={"name": "a_1", "hidden": True})
        db.e.drop_index("a_1")
        db.f.insert_one({"_id": 1})  # creates f implicitly
        evs = change_events(s, 6)
        classic = change_events(plain, 1)
    assert [e["operationType"] for e in evs] == ["create", "createIndexes", "modify", "dropIndexes", "create",
                                                 "insert"]
    create, cix, mod, dix = evs[:4]
    assert create["operationDescription"] == {"idIndex": {"v": 2, "key": {"_id": 1}, "name": "_id_"}}
    assert create["nsType"] == "collection" and "collectionUUID" in create
    assert cix["operationDescription"] == {"indexes": [{"v": 2, "key": {"a": 1}, "name": "a_1"}]}
    assert mod["operationDescription"] == {"index": {"name": "a_1", "hidden": True}}
    assert mod["stateBeforeChange"]["indexOptions"] == {"hidden": False}
    assert dix["operationDescription"]["indexes"][0]["name"] == "a_1"
    assert [e["operationType"] for e in classic] == ["insert"]  # without showExpandedEvents: no DDL events


def test_writes_made_while_no_stream_is_open_reach_a_resumed_stream(client, monkeypatch):
    """A worker saves its token, stops, and resumes: the writes made meanwhile are delivered, as a server delivers
    what its oplog still holds (manual "Change Streams: Resume a Change Stream"); past the log's cap the resume
    point is history lost (286, as a point that fell off the oplog)."""
    from labkit.engine.repl import oplog as oplog_mod
    db = client.cs_resume
    with db.c.watch(max_await_time_ms=50) as s:
        empty_token = s.resume_token  # the first (empty) batch's postBatchResumeToken
    db.c.insert_one({"_id": 1})  # no stream open now
    with db.c.watch(resume_after=empty_token, max_await_time_ms=50) as s:
        assert [e["documentKey"] for e in change_events(s, 1)] == [{"_id": 1}]
    with db.d.watch(max_await_time_ms=50) as s:
        db.d.insert_one({"_id": 1})
        event_token = change_events(s, 1)[0]["_id"]
    db.d.insert_one({"_id": 2})
    db.d.update_one({"_id": 2}, {"$set": {"x": 1}})
    with db.d.watch(resume_after=event_token, max_await_time_ms=50) as s:
        assert [(e["operationType"], e["documentKey"]) for e in change_events(s, 2)] == \
            [("insert", {"_id": 2}), ("update", {"_id": 2})]
    monkeypatch.setattr(oplog_mod, "MAX_ENTRIES", 3)
    for i in range(3, 8):
        db.d.insert_one({"_id": i})  # the entry after event_token is trimmed
    with pytest.raises(OperationFailure) as e:
        db.d.watch(resume_after=event_token)
    assert e.value.code == 286


def test_trimmed_oplog_keeps_the_newest_entries_when_dropped_ones_are_removed_in_bulk(monkeypatch):
    """The capped log keeps exactly MAX_ENTRIES entries, by sequence number, whether or not the dropped ones have
    been removed from its list yet (they are removed in runs of _COMPACT_AT, one move of the list per run)."""
    monkeypatch.setattr(oplog_mod, "MAX_ENTRIES", 4)
    monkeypatch.setattr(oplog_mod, "_COMPACT_AT", 3)
    log = oplog_mod.Oplog()
    seen = []
    for i in range(11):
        e = oplog_mod.Entry("i", "db", "c", None)
        log.append([e])
        seen.append(e)
        kept = log.since(0)
        assert kept == seen[-4:], i                  # the newest four, oldest first
        assert log.first_seq == max(0, i + 1 - 4)
        assert log.seq_at(kept[0].ts) == log.first_seq
        assert log.since(i) == [e]
    assert len(log.entries) - log.head == 4 and log.head < 3
    log.truncate(9)                                   # undo the last two writes
    assert log.since(0) == seen[7:9] and log.next_seq == 9
