"""The embedded engine served over MongoDB's wire protocol, driven by a real pymongo MongoClient over TCP.

Sources of the expected behaviour (facts, not code): MongoDB manual pages "MongoDB Wire Protocol", "hello",
"find", "getMore", "killCursors", "insert", "update", "delete", "findAndModify", "explain", "collMod",
"Schema Validation", "Transactions", "Server Sessions"; jstests/core/query/kill_cursors.js and
jstests/core/query/getmore_cmd_maxtimems.js (cursor ids and batches), jstests/core/txns/*.js (transactions).
"""
from __future__ import annotations

import socket
import struct
import threading

import bson
import pymongo
import pytest
from pymongo import MongoClient
from pymongo.errors import DuplicateKeyError, OperationFailure, WriteError

from labkit.engine.transport.wire import is_served_engine, serve_in_thread


@pytest.fixture(scope="module")
def server():
    with serve_in_thread() as srv:
        yield srv


@pytest.fixture(scope="module")
def client(server):
    c = MongoClient(server.uri, serverSelectionTimeoutMS=5000)
    yield c
    c.close()


@pytest.fixture()
def db(client, request):
    name = "w_" + request.node.name.replace("[", "_").replace("]", "")[:50]
    client.drop_database(name)
    yield client[name]
    client.drop_database(name)


class _Recorder(pymongo.monitoring.CommandListener):
    def __init__(self) -> None:
        self.events: list = []

    def started(self, event):
        self.events.append(("started", event.command_name, event.command))

    def succeeded(self, event):
        self.events.append(("succeeded", event.command_name, event.reply))

    def failed(self, event):
        self.events.append(("failed", event.command_name, event.failure))


# ---------------------------------------------------------------------------------------------- handshake
def test_hello_announces_a_single_member_replica_set(server, client):
    # manual "hello": a replica-set primary reports setName, hosts, primary, me and isWritablePrimary;
    # 8.0 is maxWireVersion 25; limits as on the manual page "MongoDB Limits and Thresholds".
    h = client.admin.command("hello")
    addr = "127.0.0.1:%d" % server.port
    assert h["isWritablePrimary"] is True and h["setName"] and h["hosts"] == [addr]
    assert h["primary"] == addr and h["me"] == addr
    assert h["maxWireVersion"] == 25 and h["minWireVersion"] == 0
    assert h["maxBsonObjectSize"] == 16777216 and h["maxMessageSizeBytes"] == 48000000
    assert h["maxWriteBatchSize"] == 100000 and h["logicalSessionTimeoutMinutes"] == 30
    assert "topologyVersion" in h and "localTime" in h and isinstance(h["connectionId"], int)
    assert h["labkit"]["engine"] == "embedded-served"
    assert "$clusterTime" in h and "operationTime" in h
    # the driver discovered a replica set (so it allows transactions)
    assert client.topology_description.topology_type_name == "ReplicaSetWithPrimary"


def test_build_info_and_probes(server, client):
    bi = client.admin.command("buildInfo")
    assert bi["version"].startswith("8.0.") and bi["versionArray"][:2] == [8, 0]
    assert bi["labkit"]["engine"] == "embedded-served"
    assert client.admin.command("ping")["ok"] == 1.0
    fcv = client.admin.command({"getParameter": 1, "featureCompatibilityVersion": 1})
    assert fcv["featureCompatibilityVersion"]["version"] == "8.0"
    assert client.admin.command("connectionStatus")["authInfo"]["authenticatedUsers"] == []
    assert "parsed" in client.admin.command("getCmdLineOpts")
    assert "system" in client.admin.command("hostInfo")
    assert client.admin.command("serverStatus")["process"] == "mongod"
    assert client.admin.command("getLog", "startupWarnings")["log"] == []
    assert client.admin.command("replSetGetStatus")["members"][0]["stateStr"] == "PRIMARY"
    assert client.admin.command("replSetGetConfig")["config"]["members"][0]["host"] == "127.0.0.1:%d" % server.port
    assert isinstance(client.admin.command("listDatabases", nameOnly=True)["databases"], list)
    # a command the server does not know: CommandNotFound 59 (manual "Database Commands"; atlasVersion only
    # exists on Atlas)
    with pytest.raises(OperationFailure) as info:
        client.admin.command("atlasVersion")
    assert info.value.code == 59 and info.value.details["codeName"] == "CommandNotFound"


def test_legacy_op_query_handshake(server):
    # manual "MongoDB Wire Protocol" (legacy opcodes): OP_QUERY on admin.$cmd with isMaster, answered by
    # OP_REPLY (opCode 1) holding one document; header and fields are little-endian int32/int64.
    query = bson.encode({"isMaster": 1, "helloOk": True})
    body = struct.pack("<i", 0) + b"admin.$cmd\0" + struct.pack("<ii", 0, -1) + query
    msg = struct.pack("<iiii", 16 + len(body), 77, 0, 2004) + body
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as s:
        s.sendall(msg)
        header = _recv(s, 16)
        length, _req, response_to, opcode = struct.unpack("<iiii", header)
        rest = _recv(s, length - 16)
        # a second, OP_MSG hello on the same connection still works
        s.sendall(_op_msg({"hello": 1, "$db": "admin"}, 78))
        reply2 = _read_op_msg(s)
    assert opcode == 1 and response_to == 77
    flags, cursor_id, start, n = struct.unpack_from("<iqii", rest)
    assert (cursor_id, start, n) == (0, 0, 1)
    doc = bson.decode(rest[20:])
    assert doc["ismaster"] is True and doc["maxWireVersion"] == 25 and doc["helloOk"] is True
    assert reply2["isWritablePrimary"] is True


def test_op_query_other_commands_are_refused(server):
    # MongoDB 5.1+ removed OP_QUERY except for the hello/isMaster handshake (manual "Legacy Opcodes"): error 352
    query = bson.encode({"ping": 1})
    body = struct.pack("<i", 0) + b"admin.$cmd\0" + struct.pack("<ii", 0, -1) + query
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as s:
        s.sendall(struct.pack("<iiii", 16 + len(body), 5, 0, 2004) + body)
        length = struct.unpack("<i", _recv(s, 4))[0]
        rest = _recv(s, length - 4)
    doc = bson.decode(rest[32:])
    assert doc["ok"] == 0 and doc["code"] == 352


def test_op_msg_document_sequence_and_more_to_come(server, client):
    # manual "MongoDB Wire Protocol" OP_MSG: kind-1 sections carry document sequences; flag bit 1 (moreToCome)
    # means the sender expects no reply; bit 0 (checksumPresent) appends a 4-byte CRC-32C.
    docs = b"".join(bson.encode({"_id": i}) for i in range(3))
    seq = struct.pack("<i", 4 + len(b"documents\0") + len(docs)) + b"documents\0" + docs
    body_doc = bson.encode({"insert": "seq", "$db": "w_rawseq", "ordered": True})
    payload = struct.pack("<I", 0) + b"\0" + body_doc + b"\1" + seq
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as s:
        s.sendall(struct.pack("<iiii", 16 + len(payload), 9, 0, 2013) + payload)
        reply = _read_op_msg(s)
        assert reply["ok"] == 1.0 and reply["n"] == 3
        # unacknowledged insert (moreToCome), then an acknowledged count on the same connection
        b2 = bson.encode({"insert": "seq", "$db": "w_rawseq", "documents": [{"_id": 10}]})
        p2 = struct.pack("<I", 2) + b"\0" + b2
        s.sendall(struct.pack("<iiii", 16 + len(p2), 10, 0, 2013) + p2)
        # checksumPresent: four trailing bytes (not verified by the engine, but skipped)
        b3 = bson.encode({"count": "seq", "$db": "w_rawseq"})
        p3 = struct.pack("<I", 1) + b"\0" + b3 + b"\0\0\0\0"
        s.sendall(struct.pack("<iiii", 16 + len(p3), 11, 0, 2013) + p3)
        reply3 = _read_op_msg(s)
    assert reply3["n"] == 4
    client.drop_database("w_rawseq")


def test_unacknowledged_writes_from_pymongo(client, db):
    coll = db.get_collection("u", write_concern=pymongo.WriteConcern(w=0))
    r = coll.insert_one({"_id": 1})
    assert r.acknowledged is False
    assert db.u.find_one({"_id": 1}) == {"_id": 1}  # same connection pool, command order kept


# ---------------------------------------------------------------------------------------------- CRUD
def test_crud_round_trip(db):
    db.people.insert_many([{"_id": i, "name": "p%d" % i, "age": 20 + i} for i in range(10)])
    assert db.people.count_documents({"age": {"$gte": 25}}) == 5
    assert db.people.estimated_document_count() == 10
    assert db.people.find_one({"_id": 3}, {"name": 1, "_id": 0}) == {"name": "p3"}
    assert [d["_id"] for d in db.people.find({}, sort=[("age", -1)], skip=2, limit=3)] == [7, 6, 5]
    r = db.people.update_many({"age": {"$lt": 23}}, {"$inc": {"age": 100}})
    assert (r.matched_count, r.modified_count) == (3, 3)
    r = db.people.update_one({"_id": 99}, {"$set": {"name": "new"}}, upsert=True)
    assert r.upserted_id == 99 and r.matched_count == 0
    r = db.people.replace_one({"_id": 4}, {"name": "four"})
    assert r.modified_count == 1 and db.people.find_one({"_id": 4}) == {"_id": 4, "name": "four"}
    assert db.people.delete_many({"age": {"$gte": 100}}).deleted_count == 3
    assert db.people.delete_one({"_id": 99}).deleted_count == 1
    assert sorted(db.people.distinct("name"))[:2] == ["four", "p3"]
    assert db.people.count_documents({}) == 7


def test_find_and_modify(db):
    # manual "findAndModify": lastErrorObject {n, updatedExisting, upserted}; new returns the modified document
    db.c.insert_one({"_id": 1, "n": 1})
    assert db.c.find_one_and_update({"_id": 1}, {"$inc": {"n": 1}}) == {"_id": 1, "n": 1}
    after = db.c.find_one_and_update({"_id": 1}, {"$inc": {"n": 1}}, return_document=pymongo.ReturnDocument.AFTER)
    assert after == {"_id": 1, "n": 3}
    raw = db.command({"findAndModify": "c", "query": {"_id": 2}, "update": {"$set": {"n": 0}}, "upsert": True,
                      "new": True})
    assert raw["lastErrorObject"] == {"n": 1, "updatedExisting": False, "upserted": 2}
    assert raw["value"] == {"_id": 2, "n": 0}
    raw = db.command({"findAndModify": "c", "query": {"_id": 1}, "remove": True})
    assert raw["lastErrorObject"]["n"] == 1 and raw["value"] == {"_id": 1, "n": 3}
    assert db.c.find_one_and_delete({"_id": 42}) is None
    assert db.c.find_one_and_replace({"_id": 2}, {"r": 1}, projection={"_id": 0},
                                     return_document=pymongo.ReturnDocument.AFTER) == {"r": 1}


def test_ordered_and_unordered_write_errors(db):
    # manual "insert": ordered stops at the first error; unordered continues; writeErrors carry index/code/errmsg
    db.k.insert_one({"_id": 1})
    with pytest.raises(pymongo.errors.BulkWriteError) as info:
        db.k.insert_many([{"_id": 2}, {"_id": 1}, {"_id": 3}])
    det = info.value.details
    assert det["nInserted"] == 1 and det["writeErrors"][0]["index"] == 1
    assert det["writeErrors"][0]["code"] == 11000
    with pytest.raises(pymongo.errors.BulkWriteError) as info:
        db.k.insert_many([{"_id": 1}, {"_id": 4}, {"_id": 2}], ordered=False)
    det = info.value.details
    assert det["nInserted"] == 1 and [e["index"] for e in det["writeErrors"]] == [0, 2]
    assert sorted(d["_id"] for d in db.k.find()) == [1, 2, 4]


def test_duplicate_key_error_details(db):
    # E11000 with keyPattern/keyValue (manual "Unique Indexes"; jstests/core/index/index_unique... error shape)
    db.u.create_index("email", unique=True)
    db.u.insert_one({"email": "a@x"})
    with pytest.raises(DuplicateKeyError) as info:
        db.u.insert_one({"email": "a@x"})
    e = info.value
    assert e.code == 11000 and e.details["keyPattern"] == {"email": 1}
    assert e.details["keyValue"] == {"email": "a@x"}
    assert e.details["errmsg"] == ("E11000 duplicate key error collection: %s.u index: email_1 dup key: "
                                   "{ email: \"a@x\" }" % db.name)
    with pytest.raises(DuplicateKeyError):
        db.u.update_one({"email": {"$exists": False}}, {"$set": {"email": "a@x"}}, upsert=True)


def test_validation_error_with_errinfo(db):
    # manual "Schema Validation": a rejected insert fails with 121 DocumentValidationFailure and errInfo
    # {failingDocumentId, details}
    db.create_collection("v", validator={"$jsonSchema": {"required": ["name"]}})
    with pytest.raises(WriteError) as info:
        db.v.insert_one({"_id": 1, "x": 1})
    e = info.value
    assert e.code == 121 and e.details["errInfo"]["failingDocumentId"] == 1
    assert "details" in e.details["errInfo"]
    db.command("collMod", "v", validator={"$jsonSchema": {"required": ["x"]}})
    db.v.insert_one({"_id": 2, "x": 1})
    opts = db.v.options()
    assert opts["validator"] == {"$jsonSchema": {"required": ["x"]}}


# ---------------------------------------------------------------------------------------------- cursors
def test_cursor_batches_across_get_more(server, db):
    # manual "find"/"getMore": firstBatch then nextBatch of batchSize documents; the cursor id is 0 at the end
    db.b.insert_many([{"_id": i} for i in range(25)])
    rec = _Recorder()
    c = MongoClient(server.uri, event_listeners=[rec])
    try:
        got = [d["_id"] for d in c[db.name].b.find({}, batch_size=7).sort("_id", 1)]
        assert got == list(range(25))
        batches = [(n, r["cursor"].get("firstBatch", r["cursor"].get("nextBatch")), r["cursor"]["id"])
                   for kind, n, r in rec.events if kind == "succeeded" and n in ("find", "getMore")]
        assert [len(b) for _, b, _ in batches] == [7, 7, 7, 4]
        assert batches[0][2] != 0 and batches[-1][2] == 0
        # default first batch is 101 documents
        db.big.insert_many([{"_id": i} for i in range(150)])
        rec.events.clear()
        assert len(list(c[db.name].big.find())) == 150
        first = [r for kind, n, r in rec.events if kind == "succeeded" and n == "find"][0]
        assert len(first["cursor"]["firstBatch"]) == 101
    finally:
        c.close()


def test_kill_cursors_and_unknown_cursor(db):
    # jstests/core/query/kill_cursors.js (facts): killCursors reports cursorsKilled / cursorsNotFound; a
    # getMore on a killed cursor fails with CursorNotFound (43)
    db.k.insert_many([{"_id": i} for i in range(10)])
    first = db.command({"find": "k", "batchSize": 2})
    cid = first["cursor"]["id"]
    assert cid != 0 and len(first["cursor"]["firstBatch"]) == 2
    more = db.command({"getMore": cid, "collection": "k", "batchSize": 3})
    assert [d["_id"] for d in more["cursor"]["nextBatch"]] == [2, 3, 4]
    killed = db.command({"killCursors": "k", "cursors": [cid, bson.Int64(12345)]})
    assert killed["cursorsKilled"] == [cid] and killed["cursorsNotFound"] == [12345]
    with pytest.raises(OperationFailure) as info:
        db.command({"getMore": cid, "collection": "k"})
    assert info.value.code == 43
    # singleBatch and limit close the cursor
    r = db.command({"find": "k", "batchSize": 2, "singleBatch": True})
    assert r["cursor"]["id"] == 0
    r = db.command({"find": "k", "limit": 3})
    assert r["cursor"]["id"] == 0 and len(r["cursor"]["firstBatch"]) == 3
    # early close from pymongo sends killCursors
    cur = db.k.find(batch_size=2)
    next(cur)
    cur.close()


def test_aggregate_cursor_and_stats_stages(db):
    db.o.insert_many([{"_id": i, "g": i % 3, "v": i} for i in range(30)])
    out = list(db.o.aggregate([{"$group": {"_id": "$g", "s": {"$sum": "$v"}}}, {"$sort": {"_id": 1}}],
                              batchSize=1))
    assert out == [{"_id": 0, "s": 135}, {"_id": 1, "s": 145}, {"_id": 2, "s": 155}]
    db.o.create_index("g")
    db.o.find_one({"g": 1})
    ix = {d["name"]: d for d in db.o.aggregate([{"$indexStats": {}}])}
    assert set(ix) == {"_id_", "g_1"} and ix["g_1"]["accesses"]["ops"] >= 1
    cs = list(db.o.aggregate([{"$collStats": {"storageStats": {}}}]))[0]
    assert cs["storageStats"]["count"] == 30
    stats = db.command("collStats", "o")
    assert stats["count"] == 30 and stats["nindexes"] == 2
    assert db.command("dbStats")["objects"] == 30


# ---------------------------------------------------------------------------------------------- indexes
def test_indexes(db):
    assert db.i.create_index([("a", 1), ("b", -1)], name="ab") == "ab"
    names = [d["name"] for d in db.i.list_indexes()]
    assert names == ["_id_", "ab"]
    raw = db.command({"createIndexes": "i", "indexes": [{"key": {"a": 1, "b": -1}, "name": "ab"}]})
    assert raw["numIndexesBefore"] == raw["numIndexesAfter"] == 2 and raw["note"] == "all indexes already exist"
    db.i.drop_index("ab")
    assert list(db.i.index_information()) == ["_id_"]
    with pytest.raises(OperationFailure) as info:
        db.i.drop_index("nope")
    assert info.value.code == 27
    with pytest.raises(OperationFailure) as info:
        db.command({"listIndexes": "missing"})
    assert info.value.code == 26


# ---------------------------------------------------------------------------------------------- explain
@pytest.mark.parametrize("verbosity", ["queryPlanner", "executionStats", "allPlansExecution"])
def test_explain_each_verbosity(db, verbosity):
    # manual "explain": queryPlanner always; executionStats adds executionStats; allPlansExecution adds
    # allPlansExecution inside executionStats
    db.e.insert_many([{"_id": i, "a": i % 5} for i in range(50)])
    db.e.create_index("a")
    out = db.command({"explain": {"find": "e", "filter": {"a": 2}}, "verbosity": verbosity})
    assert out["queryPlanner"]["winningPlan"] and out["labkit"]
    if verbosity == "queryPlanner":
        assert "executionStats" not in out
    else:
        assert out["executionStats"]["nReturned"] == 10
        assert ("allPlansExecution" in out["executionStats"]) == (verbosity == "allPlansExecution")
    agg = db.command({"explain": {"aggregate": "e", "pipeline": [{"$match": {"a": 1}}], "cursor": {}},
                      "verbosity": verbosity})
    assert agg["ok"] == 1.0
    cur = db.e.find({"a": 3}).explain()
    assert cur["executionStats"]["nReturned"] == 10


# ---------------------------------------------------------------------------------------------- transactions
def test_transaction_commit_and_abort(client, db):
    # manual "Transactions": writes in a transaction are invisible outside until commit; abort discards them
    db.t.insert_one({"_id": 0})
    with client.start_session() as s:
        with s.start_transaction():
            db.t.insert_one({"_id": 1}, session=s)
            db.t.update_one({"_id": 0}, {"$set": {"x": 1}}, session=s)
            assert db.t.count_documents({}, session=s) == 2
            assert db.t.count_documents({}) == 1
            assert db.t.find_one({"_id": 0}) == {"_id": 0}
        assert db.t.count_documents({}) == 2 and db.t.find_one({"_id": 0}) == {"_id": 0, "x": 1}
        s.start_transaction()
        db.t.insert_one({"_id": 2}, session=s)
        s.abort_transaction()
    assert db.t.count_documents({}) == 2

    def cb(session):
        db.t.insert_one({"_id": 3}, session=session)
        return "done"

    with client.start_session() as s:
        assert s.with_transaction(cb) == "done"
    assert db.t.find_one({"_id": 3}) == {"_id": 3}


def test_error_in_transaction_aborts_it(client, db):
    # manual "Transactions" (error handling): a failed operation aborts the transaction; commit then fails
    # with NoSuchTransaction (251) labelled TransientTransactionError
    db.t.insert_one({"_id": 1})
    with client.start_session() as s:
        s.start_transaction()
        db.t.insert_one({"_id": 2}, session=s)
        with pytest.raises(DuplicateKeyError):
            db.t.insert_one({"_id": 1}, session=s)
        with pytest.raises(OperationFailure) as info:
            s.commit_transaction()
        assert info.value.code == 251 and info.value.has_error_label("TransientTransactionError")
    assert db.t.count_documents({}) == 1


def test_count_command_is_refused_in_a_transaction(client, db):
    # manual "Transactions and Operations": the count command cannot run in a transaction (263);
    # count_documents (an aggregate) can
    db.t.insert_one({"_id": 1})
    with client.start_session() as s:
        s.start_transaction()
        assert db.t.count_documents({}, session=s) == 1
        with pytest.raises(OperationFailure) as info:
            db.command("count", "t", session=s)
        assert info.value.code == 263
        s.abort_transaction()


def test_sessions_commands(client):
    sid = client.admin.command("startSession")["id"]
    assert client.admin.command("endSessions", [sid])["ok"] == 1.0
    assert client.admin.command("killAllSessions", [])["ok"] == 1.0


# ---------------------------------------------------------------------------------------------- DDL
def test_create_drop_rename_list(client, db):
    db.create_collection("a")
    with pytest.raises(OperationFailure) as info:
        db.command("create", "a")
    assert info.value.code == 48
    # capped collections over the wire (manual "Capped Collections"; labkit/engine/catalog/capped.py)
    db.create_collection("cap", capped=True, size=1000, max=2)
    db.cap.insert_many([{"_id": i} for i in range(3)])
    assert [d["_id"] for d in db.cap.find()] == [1, 2] and db.cap.options()["capped"] is True
    db.drop_collection("cap")
    db.a.insert_one({"_id": 1})
    db.a.rename("b")
    assert db.list_collection_names() == ["b"] and db.b.find_one() == {"_id": 1}
    assert db.name in client.list_database_names()
    info_ = client.admin.command("listDatabases")
    row = [d for d in info_["databases"] if d["name"] == db.name][0]
    assert row["sizeOnDisk"] > 0 and row["empty"] is False
    db.drop_collection("b")
    db.drop_collection("never_existed")
    assert db.list_collection_names() == []


def test_unknown_fields_and_bad_commands(db):
    # manual: unknown fields fail IDL parsing with 40415 "BSON field 'find.X' is an unknown field."
    with pytest.raises(OperationFailure) as info:
        db.command({"find": "x", "bogus": 1})
    assert info.value.code == 40415 and "find.bogus" in str(info.value)
    with pytest.raises(OperationFailure) as info:
        db.command({"noSuchCommand": 1})
    assert info.value.code == 59


def test_concurrent_writers_lose_nothing(server, db):
    # many connections at once, several clients and threads: every insert and $inc lands
    db.cnt.insert_one({"_id": "c", "n": 0})
    clients = [MongoClient(server.uri, serverSelectionTimeoutMS=5000, maxPoolSize=4) for _ in range(3)]
    errors: list = []

    def work(k: int) -> None:
        try:
            coll = clients[k % 3][db.name].cnt
            for i in range(40):
                coll.insert_one({"_id": "%d-%d" % (k, i)})
                coll.update_one({"_id": "c"}, {"$inc": {"n": 1}})
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for c in clients:
        c.close()
    assert not errors
    assert db.cnt.count_documents({}) == 8 * 40 + 1
    assert db.cnt.find_one({"_id": "c"})["n"] == 8 * 40


def test_is_served_engine(client):
    assert is_served_engine(client) is True
    from labkit.engine import EmbeddedClient
    assert is_served_engine(EmbeddedClient()) is False  # in-process: buildInfo says "embedded"


def test_remote_host_needs_allow_remote():
    with pytest.raises(ValueError, match="allow-remote"):
        serve_in_thread(host="0.0.0.0")


# ---------------------------------------------------------------------------------------------- helpers
def _recv(s: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("closed")
        buf += chunk
    return buf


def _op_msg(doc: dict, request_id: int) -> bytes:
    payload = struct.pack("<I", 0) + b"\0" + bson.encode(doc)
    return struct.pack("<iiii", 16 + len(payload), request_id, 0, 2013) + payload


def _read_op_msg(s: socket.socket) -> dict:
    length, _rid, _rto, opcode = struct.unpack("<iiii", _recv(s, 16))
    assert opcode == 2013
    rest = _recv(s, length - 16)
    assert rest[4] == 0
    return bson.decode(rest[5:])


def test_batches_stop_at_16_mib(db):
    # manual "Cursors" (cursor batches): a batch holds at most 16 MiB; find/aggregate start with 101 documents
    # and a getMore without batchSize is bounded only by that size
    blob = "x" * (7 * 1024 * 1024)
    db.fat.insert_many([{"_id": i, "blob": blob} for i in range(3)])
    first = db.command({"find": "fat", "projection": {"_id": 1, "blob": 1}})
    assert len(first["cursor"]["firstBatch"]) == 2 and first["cursor"]["id"] != 0
    more = db.command({"getMore": first["cursor"]["id"], "collection": "fat"})
    assert [d["_id"] for d in more["cursor"]["nextBatch"]] == [2] and more["cursor"]["id"] == 0
    assert len(list(db.fat.find({}, {"_id": 1}))) == 3


def test_bulk_write_and_types_round_trip(client, db):
    import datetime
    import re
    from bson import Decimal128, Int64, Regex
    db.m.bulk_write([pymongo.InsertOne({"_id": 1, "s": "pear"}), pymongo.InsertOne({"_id": 2, "s": "apple"}),
                     pymongo.UpdateOne({"_id": 1}, {"$set": {"n": Int64(5)}}),
                     pymongo.ReplaceOne({"_id": 2}, {"s": "Apple", "d": Decimal128("1.5")}),
                     pymongo.DeleteMany({"_id": {"$gt": 5}}),
                     pymongo.UpdateOne({"_id": 3}, {"$set": {"t": datetime.datetime(2024, 1, 1, 0, 0, 0, 123000)}},
                                       upsert=True)])
    one = db.m.find_one({"_id": 1})
    assert one == {"_id": 1, "s": "pear", "n": 5} and type(one["n"]) is Int64
    assert db.m.find_one({"_id": 2})["d"] == Decimal128("1.5")
    assert db.m.find_one({"_id": 3})["t"] == datetime.datetime(2024, 1, 1, 0, 0, 0, 123000)
    # BSON regular expressions in filters (decoded on the server side as bson Regex)
    assert [d["_id"] for d in db.m.find({"s": re.compile("^p")})] == [1]
    assert [d["_id"] for d in db.m.find({"s": Regex("^a", "i")})] == [2]


def test_awaitable_hello_streams_with_more_to_come(server):
    # the streaming monitoring protocol (manual "hello": topologyVersion, maxAwaitTimeMS): an awaitable hello
    # with the server's current topologyVersion is answered after maxAwaitTimeMS; with OP_MSG exhaustAllowed
    # (flag bit 16) the replies keep coming, each flagged moreToCome (bit 1)
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as s:
        s.sendall(_op_msg({"hello": 1, "$db": "admin"}, 1))
        tv = _read_op_msg(s)["topologyVersion"]
        doc = {"hello": 1, "$db": "admin", "topologyVersion": tv, "maxAwaitTimeMS": 50}
        payload = struct.pack("<I", 1 << 16) + b"\0" + bson.encode(doc)
        s.sendall(struct.pack("<iiii", 16 + len(payload), 2, 0, 2013) + payload)
        flags = []
        for _ in range(2):
            length, _rid, _rto, _op = struct.unpack("<iiii", _recv(s, 16))
            rest = _recv(s, length - 16)
            flags.append(struct.unpack_from("<I", rest)[0])
            assert bson.decode(rest[5:])["isWritablePrimary"] is True
    assert all(f & 2 for f in flags)


def test_malformed_messages_close_only_that_connection(server, client):
    # a message whose header is impossible (length below the 16-byte header) or an unknown opCode ends the
    # connection, as the server does; other connections go on
    for raw in (struct.pack("<iiii", 5, 1, 0, 2013), struct.pack("<iiii", 20, 1, 0, 9999) + b"\0\0\0\0"):
        with socket.create_connection(("127.0.0.1", server.port), timeout=5) as s:
            s.sendall(raw)
            assert s.recv(10) == b""  # closed without a reply
    # a body that is not BSON gets an error reply on a connection that stays usable
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as s:
        payload = struct.pack("<I", 0) + b"\0" + b"\x07\0\0\0\0\0\0"
        s.sendall(struct.pack("<iiii", 16 + len(payload), 3, 0, 2013) + payload)
        bad = _read_op_msg(s)
        s.sendall(_op_msg({"ping": 1, "$db": "admin"}, 4))
        good = _read_op_msg(s)
    assert bad["ok"] == 0.0 and good["ok"] == 1.0
    assert client.admin.command("ping")["ok"] == 1.0


def test_hints_over_the_wire(db):
    # manual "cursor.hint()" / "db.collection.countDocuments()": pymongo sends count_documents as an
    # aggregate ($match, $skip, $limit, $group) carrying the hint; find carries it in the find command
    db.h.insert_many([{"k": i, "j": i % 3} for i in range(30)])
    db.h.create_index("k")
    db.h.create_index([("j", 1), ("k", -1)])
    assert len(list(db.h.find({"k": {"$gt": 3}}).hint([("k", 1)]))) == 26
    plan = db.h.find({"k": 5}).hint([("j", 1), ("k", -1)]).explain()["queryPlanner"]["winningPlan"]
    assert "j_1_k_-1" in str(plan)
    assert db.h.count_documents({"k": {"$gt": 3}}, hint="k_1") == 26
    assert db.h.count_documents({"k": {"$gt": 3}}, hint=[("k", 1)], skip=5, limit=10) == 10
    assert db.h.count_documents({"k": 100}, hint="k_1") == 0
    with pytest.raises(OperationFailure) as info:
        db.h.count_documents({}, hint="nope_1")
    assert info.value.code == 2 and "hint provided does not correspond to an existing index" in str(info.value)


def test_write_conflict_at_the_write_is_transient(client, db):
    # manual "Transactions" / "Drivers API" (retry); jstests/core/txns/write_conflicts_with_non_txns.js: a
    # transaction that writes a document another client changed since its snapshot fails at that write with
    # WriteConflict (112), labelled TransientTransactionError, and is aborted (commit: NoSuchTransaction);
    # with_transaction retries the callback and the second attempt commits
    db.w.insert_one({"_id": 1, "n": 0})
    with client.start_session() as s:
        s.start_transaction()
        db.w.find_one({"_id": 1}, session=s)  # the snapshot
        db.w.update_one({"_id": 1}, {"$inc": {"n": 10}})  # outside the transaction
        with pytest.raises(OperationFailure) as info:
            db.w.update_one({"_id": 1}, {"$inc": {"n": 1}}, session=s)
        assert info.value.code == 112 and info.value.has_error_label("TransientTransactionError")
        with pytest.raises(OperationFailure) as info:
            s.commit_transaction()
        assert info.value.code == 251
    assert db.w.find_one({"_id": 1})["n"] == 10
    attempts = []

    def cb(session):
        attempts.append(1)
        db.w.find_one({"_id": 1}, session=session)
        if len(attempts) == 1:
            db.w.update_one({"_id": 1}, {"$inc": {"n": 100}})
        db.w.update_one({"_id": 1}, {"$inc": {"n": 1}}, session=session)

    with client.start_session() as s:
        s.with_transaction(cb)
    assert len(attempts) == 2 and db.w.find_one({"_id": 1})["n"] == 111


def test_batch_size_zero_opens_the_cursor(db):
    # manual "find" (batchSize): 0 establishes a cursor without returning documents
    db.z.insert_many([{"_id": i} for i in range(3)])
    r = db.command({"find": "z", "batchSize": 0})
    assert r["cursor"]["firstBatch"] == [] and r["cursor"]["id"] != 0
    more = db.command({"getMore": r["cursor"]["id"], "collection": "z"})
    assert [d["_id"] for d in more["cursor"]["nextBatch"]] == [0, 1, 2]


def test_handshakes_are_answered_while_a_long_command_runs():
    """Found by running lesson 08 over the wire under load: while one command held the server for more than the
    driver's connect timeout, the monitor's hello and a new connection's handshake waited behind it, pymongo
    marked the server unknown and cancelled the running operation. Handshakes never wait for the engine."""
    import threading

    import pymongo

    from labkit.engine.transport.wire import serve_in_thread

    with serve_in_thread() as server:
        held, release = threading.Event(), threading.Event()

        def long_command():
            with server._lock:  # what a long aggregation does to every other command
                held.set()
                release.wait(10)

        t = threading.Thread(target=long_command)
        t.start()
        held.wait(5)
        try:
            client = pymongo.MongoClient(server.uri, serverSelectionTimeoutMS=2000, connectTimeoutMS=2000)
            assert client.admin.command("hello")["isWritablePrimary"] is True
        finally:
            release.set()
            t.join()
        assert client.admin.command("ping")["ok"] == 1.0
        client.close()


def test_requests_sent_together_or_in_pieces_are_each_answered(server):
    # The server reads a connection's bytes in large pieces (wire.py _Reader): two requests in one segment are
    # two replies, in order; a request that arrives a few bytes at a time is answered once it is whole.
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s.sendall(_op_msg({"ping": 1, "$db": "admin"}, 11) + _op_msg({"hello": 1, "$db": "admin"}, 12))
        first, second = _read_op_msg(s), _read_op_msg(s)
        assert first["ok"] == 1.0 and "isWritablePrimary" not in first
        assert second["isWritablePrimary"] is True
        msg = _op_msg({"ping": 1, "$db": "admin"}, 13)
        for i in range(0, len(msg), 7):
            s.sendall(msg[i:i + 7])
        assert _read_op_msg(s)["ok"] == 1.0
