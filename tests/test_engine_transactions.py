"""Transactions as a replica set runs them, snapshot reads and write concerns: in-process and over TCP.

Every test runs twice: on ``labkit.engine.EmbeddedClient`` and with pymongo's real driver over TCP against the
served engine (``labkit.engine.transport.wire.serve_in_thread``). The facts come from MongoDB's manual
("Transactions", "Production Considerations: In-progress Transactions and Write Conflicts", "Create Collections
and Indexes in a Transaction", "Read Concern "snapshot"", "Write Concern") and the server's jstests named in
each test (jstests/core/txns/...), written here from what they check.
"""
from __future__ import annotations

import itertools
import threading
import time

import pytest
from bson import Timestamp
from pymongo import MongoClient
from pymongo.errors import (BulkWriteError, DuplicateKeyError, ExecutionTimeout, OperationFailure,
                            WriteConcernError)
from pymongo.read_concern import ReadConcern
from pymongo.write_concern import WriteConcern

from labkit.engine import EmbeddedClient
from labkit.engine.session.history import history_of
from recording import change_events
from served_helpers import serve_in_thread

_NAMES = itertools.count()


@pytest.fixture(scope="module")
def server():
    with serve_in_thread() as srv:
        yield srv


@pytest.fixture(params=["embedded", "served"])
def env(request, server):
    """(client, engine client, database): the engine client is the one whose history the test may inspect."""
    if request.param == "embedded":
        client = EmbeddedClient()
        engine = client
    else:
        client = MongoClient(server.uri, serverSelectionTimeoutMS=5000)
        engine = server.client
    db = client["txn_%d" % next(_NAMES)]
    try:
        yield client, engine, db
    finally:
        client.admin.command("setParameter", 1, transactionLifetimeLimitSeconds=60)
        if request.param == "served":
            client.drop_database(db.name)
            client.close()


def _wait_until(pred, what: str) -> None:
    deadline = time.monotonic() + 20
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for " + what)
        time.sleep(0.01)


def _waiting(engine) -> int:
    return history_of(engine._store).waiting


def _update_many_waits_for_a_transaction(client, engine, db, before_commit=None):
    """A transaction adds 1 to user "u"; ``update_many`` outside it (+10 to every user) waits for it; then
    ``before_commit()``, the commit, and the waiting update runs. The transaction's session is returned."""
    s = client.start_session()
    s.start_transaction()
    db.users.update_one({"_id": "u"}, {"$inc": {"n": 1}}, session=s)
    t = threading.Thread(target=lambda: db.users.update_many({}, {"$inc": {"n": 10}}))
    t.start()
    _wait_until(lambda: _waiting(engine) == 1, "the outside update to wait")
    if before_commit is not None:
        before_commit()
    s.commit_transaction()
    t.join(20)
    return s


# ---------------------------------------------------------------------------------------------- write conflicts
def test_a_write_to_a_document_another_transaction_wrote_fails_at_that_write(env):
    """Manual, "In-progress Transactions and Write Conflicts": a transaction that writes a document another
    in-progress transaction modified gets a write conflict at that write: WriteConflict (112) labelled
    TransientTransactionError; the server aborts it (commit: NoSuchTransaction 251); the first commits."""
    client, _, db = env
    db.users.insert_one({"_id": "u", "n": 0})
    s1, s2 = client.start_session(), client.start_session()
    s1.start_transaction()
    s2.start_transaction()
    db.users.update_one({"_id": "u"}, {"$inc": {"n": 1}}, session=s1)
    with pytest.raises(OperationFailure) as ei:
        db.users.update_one({"_id": "u"}, {"$inc": {"n": 1}}, session=s2)
    assert ei.value.code == 112 and ei.value.has_error_label("TransientTransactionError")
    with pytest.raises(OperationFailure) as ei:
        s2.commit_transaction()
    assert ei.value.code == 251
    s1.commit_transaction()
    assert db.users.find_one({"_id": "u"})["n"] == 1
    # a transaction inserting an _id another in-progress transaction inserted conflicts the same way
    s1.start_transaction()
    s2.start_transaction()
    db.users.insert_one({"_id": "v"}, session=s1)
    with pytest.raises(OperationFailure) as ei:
        db.users.insert_one({"_id": "v", "second": True}, session=s2)
    assert ei.value.code == 112
    s2.abort_transaction()
    s1.commit_transaction()
    assert db.users.find_one({"_id": "v"}) == {"_id": "v"}


def test_a_write_to_a_document_changed_after_the_snapshot_fails_at_that_write(env):
    """jstests/core/txns/write_conflicts_with_non_txns.js: a transaction that writes a document a
    non-transactional write inserted after the transaction's snapshot fails with WriteConflict; its commit then
    fails with NoSuchTransaction; only the outside document exists."""
    client, _, db = env
    db.create_collection("c")
    with client.start_session() as s:
        s.start_transaction()
        assert db.c.find_one({}, session=s) is None  # the snapshot is taken by the first statement
        db.c.insert_one({"_id": 1, "nonTxn": True})
        with pytest.raises(OperationFailure) as ei:
            db.c.insert_one({"_id": 1}, session=s)
        assert ei.value.code == 112 and ei.value.has_error_label("TransientTransactionError")
        with pytest.raises(OperationFailure) as ei:
            s.commit_transaction()
        assert ei.value.code == 251
    assert list(db.c.find()) == [{"_id": 1, "nonTxn": True}]


def test_the_snapshot_is_taken_at_the_first_statement(env):
    """Manual, "Transactions" (read concern "snapshot"): a transaction reads one snapshot, taken by its first
    statement -- also in a collection it reads only later; writes outside before that first statement are seen
    (jstests/core/txns/create_indexes_parallel.js relies on it)."""
    client, _, db = env
    db.a.insert_one({"_id": 1, "v": "old"})
    db.b.insert_one({"_id": 1, "v": "old"})
    with client.start_session() as s:
        s.start_transaction()
        db.b.update_one({"_id": 1}, {"$set": {"v": "before the first statement"}})
        assert db.a.find_one({}, session=s)["v"] == "old"  # the snapshot
        db.b.update_one({"_id": 1}, {"$set": {"v": "after"}})
        db.b.insert_one({"_id": 2})
        assert list(db.b.find({}, session=s)) == [{"_id": 1, "v": "before the first statement"}]
        assert db.b.count_documents({}, session=s) == 1
        s.commit_transaction()


def test_with_transaction_retries_a_write_conflict(env):
    """Drivers API (with_transaction): a TransientTransactionError from a statement retries the callback; the
    retry runs on a new snapshot and commits."""
    client, _, db = env
    db.stock.insert_one({"_id": "abc", "qty": 500})
    attempts = []

    def callback(s):
        attempts.append(1)
        db.stock.find_one({"_id": "abc"}, session=s)
        if len(attempts) == 1:
            db.stock.update_one({"_id": "abc"}, {"$inc": {"qty": -1}})  # another writer, once
        db.stock.update_one({"_id": "abc"}, {"$inc": {"qty": -100}}, session=s)

    with client.start_session() as s:
        s.with_transaction(callback)
    assert len(attempts) == 2 and db.stock.find_one()["qty"] == 399


def test_a_unique_key_written_by_an_open_transaction_conflicts(env):
    """A unique index key is written by the transaction that inserts it: another transaction inserting the same
    key conflicts at its write (112), not only at commit."""
    client, _, db = env
    db.acc.create_index("email", unique=True)
    s1, s2 = client.start_session(), client.start_session()
    s1.start_transaction()
    s2.start_transaction()
    db.acc.insert_one({"_id": 1, "email": "a@x"}, session=s1)
    with pytest.raises(OperationFailure) as ei:
        db.acc.insert_one({"_id": 2, "email": "a@x"}, session=s2)
    assert ei.value.code == 112
    s2.abort_transaction()
    s1.commit_transaction()
    assert [d["_id"] for d in db.acc.find()] == [1]


# ---------------------------------------------------------------------------------------------- waiting writes
def test_a_write_outside_waits_for_the_transaction_then_applies(env):
    """jstests/core/txns/write_conflicts_with_non_txns.js: a non-transactional insert of an _id an open
    transaction inserted keeps retrying: with maxTimeMS it fails with MaxTimeMSExpired (50); without, it runs
    once the transaction ends -- DuplicateKey after a commit, inserted after an abort."""
    client, engine, db = env
    db.create_collection("w")
    s = client.start_session()
    s.start_transaction()
    db.w.insert_one({"_id": 1}, session=s)
    with pytest.raises(OperationFailure) as ei:
        db.command({"insert": "w", "documents": [{"_id": 1, "nonTxn": True}], "maxTimeMS": 100})
    assert ei.value.code == 50
    assert db.w.find_one({"_id": 1}) is None  # nothing applied, the transaction still open
    out = {}

    def outside():
        try:
            db.w.insert_one({"_id": 1, "nonTxn": True})
            out["result"] = "inserted"
        except DuplicateKeyError:
            out["result"] = "duplicate"

    t = threading.Thread(target=outside)
    t.start()
    _wait_until(lambda: _waiting(engine) == 1, "the outside insert to wait")
    s.commit_transaction()
    t.join(20)
    assert out == {"result": "duplicate"} and list(db.w.find()) == [{"_id": 1}]
    db.w.delete_many({})
    s.start_transaction()
    db.w.insert_one({"_id": 1}, session=s)
    t = threading.Thread(target=outside)
    t.start()
    _wait_until(lambda: _waiting(engine) == 1, "the outside insert to wait")
    s.abort_transaction()
    t.join(20)
    assert out == {"result": "inserted"} and list(db.w.find()) == [{"_id": 1, "nonTxn": True}]
    s.end_session()


def test_a_waiting_update_runs_on_the_committed_document(env):
    """A non-transactional update of a document an open transaction updated waits, then applies to the
    committed version (the server retries the write after the conflict): no update is lost."""
    client, engine, db = env
    db.users.insert_one({"_id": "u", "n": 0})

    def reads_are_not_blocked():
        assert db.users.find_one()["n"] == 0
    s = _update_many_waits_for_a_transaction(client, engine, db, reads_are_not_blocked)
    assert db.users.find_one()["n"] == 11
    s.end_session()


def test_an_expired_transaction_is_aborted_and_the_write_runs(env):
    """jstests/core/txns/abort_expired_transaction.js: the server aborts a transaction older than
    transactionLifetimeLimitSeconds (setParameter); a write waiting for it then runs, and the transaction's
    later statements and commit fail with NoSuchTransaction. One thread waiting on its own transaction waits
    that long, as against a server."""
    client, _, db = env
    assert client.admin.command("setParameter", 1, transactionLifetimeLimitSeconds=1)["was"] == 60
    assert client.admin.command("getParameter", 1, transactionLifetimeLimitSeconds=1)[
        "transactionLifetimeLimitSeconds"] == 1
    db.users.insert_one({"_id": "u", "n": 0})
    s = client.start_session()
    s.start_transaction()
    db.users.update_one({"_id": "u"}, {"$inc": {"n": 1}}, session=s)
    db.users.update_one({"_id": "u"}, {"$inc": {"n": 10}})  # waits until the transaction expires
    assert db.users.find_one()["n"] == 10
    with pytest.raises(OperationFailure) as ei:
        db.users.update_one({"_id": "u"}, {"$inc": {"n": 1}}, session=s)
    assert ei.value.code == 251
    s.end_session()


def test_pymongo_timeout_bounds_the_wait(env):
    """pymongo's client-side operation timeout (``pymongo.timeout``) bounds a write that waits for a transaction:
    over the wire it is sent as maxTimeMS; the write fails with a timeout and applies nothing."""
    import pymongo
    client, _, db = env
    db.users.insert_one({"_id": "u", "n": 0})
    s = client.start_session()
    s.start_transaction()
    db.users.update_one({"_id": "u"}, {"$inc": {"n": 1}}, session=s)
    with pytest.raises((ExecutionTimeout, pymongo.errors.NetworkTimeout, pymongo.errors.WTimeoutError)):
        with pymongo.timeout(0.3):
            db.users.update_one({"_id": "u"}, {"$inc": {"n": 10}})
    s.commit_transaction()
    assert db.users.find_one()["n"] == 1
    s.end_session()


# ---------------------------------------------------------------------------------------------- DDL
@pytest.mark.parametrize("explicit", [True, False])
def test_collections_are_created_in_a_transaction(env, explicit):
    """jstests/core/txns/create_collection.js (4.4+): create (explicit, or by an insert) inside a transaction;
    the collection exists for others only after the commit, and not at all after an abort."""
    client, _, db = env
    with client.start_session() as s:
        s.start_transaction()
        if explicit:
            db.create_collection("made", session=s)
        db.made.insert_one({"_id": 1, "a": 1}, session=s)
        assert db.made.count_documents({}, session=s) == 1
        assert "made" not in db.list_collection_names()
        s.commit_transaction()
        assert "made" in db.list_collection_names() and db.made.count_documents({}) == 1
        s.start_transaction()
        if explicit:
            db.create_collection("gone", session=s)
        db.gone.update_one({"_id": 1}, {"$inc": {"a": 1}}, upsert=True, session=s)
        s.abort_transaction()
        assert "gone" not in db.list_collection_names()


def test_create_of_an_existing_collection_in_a_transaction(env):
    """jstests/core/txns/create_collection.js: create of a collection that exists fails with NamespaceExists
    (48) and aborts the transaction."""
    client, _, db = env
    db.create_collection("here")
    with client.start_session() as s:
        s.start_transaction()
        with pytest.raises(OperationFailure) as ei:
            db.command("create", "here", session=s)
        assert ei.value.code == 48
        with pytest.raises(OperationFailure) as ei:
            s.commit_transaction()
        assert ei.value.code == 251


def test_create_conflicts_with_a_create_outside(env):
    """jstests/core/txns/create_collection_parallel.js: a collection created in a transaction and, meanwhile,
    outside it (or by another transaction that commits first): the outside create succeeds and the
    transaction's commit fails with WriteConflict."""
    client, _, db = env
    s1, s2 = client.start_session(), client.start_session()
    s1.start_transaction()
    db.create_collection("x", session=s1)
    db.create_collection("x")  # outside: not blocked by the transaction
    db.x.insert_one({"a": 1})
    with pytest.raises(OperationFailure) as ei:
        s1.commit_transaction()
    assert ei.value.code == 112
    assert db.x.count_documents({}) == 1
    s1.start_transaction()
    s2.start_transaction()
    db.y.insert_one({"a": 1}, session=s2)
    db.y.insert_one({"a": 2}, session=s1)
    s2.commit_transaction()
    with pytest.raises(OperationFailure) as ei:
        s1.commit_transaction()
    assert ei.value.code == 112
    assert [d["a"] for d in db.y.find()] == [1]


def test_indexes_on_a_new_collection_in_a_transaction(env):
    """jstests/core/txns/create_indexes.js, create_existing_indexes.js: createIndexes in a transaction works on
    a collection that does not exist (it is created) or that the transaction created and left empty; an index
    that already exists is accepted; a new index on an existing collection or on a non-empty new one is
    OperationNotSupportedInTransaction (263); a conflicting spec is IndexKeySpecsConflict (86)."""
    client, _, db = env
    with client.start_session() as s:
        s.start_transaction()
        assert db.fresh.create_index("a", session=s) == "a_1"
        db.fresh.insert_one({"a": [1, 2, 3]}, session=s)  # multikey in the transaction's new index
        assert db.fresh.find_one({"a": 1}, session=s) is not None
        assert "fresh" not in db.list_collection_names()
        s.commit_transaction()
        assert sorted(db.fresh.index_information()) == ["_id_", "a_1"]
        db.create_collection("old")
        db.old.create_index("a")
        s.start_transaction()
        db.command({"createIndexes": "old", "indexes": [{"key": {"a": 1}, "name": "a_1"}]}, session=s)
        with pytest.raises(OperationFailure) as ei:
            db.command({"createIndexes": "old", "indexes": [{"key": {"a": -1}, "name": "a_1"}]}, session=s)
        assert ei.value.code == 86
        s.abort_transaction()
        s.start_transaction()
        with pytest.raises(OperationFailure) as ei:
            db.command({"createIndexes": "old", "indexes": [{"key": {"b": 1}, "name": "b_1"}]}, session=s)
        assert ei.value.code == 263 and "existing collection" in str(ei.value)
        s.abort_transaction()
        s.start_transaction()
        db.command("create", "filled", session=s)
        db.filled.insert_one({"a": 1}, session=s)
        with pytest.raises(OperationFailure) as ei:
            db.command({"createIndexes": "filled", "indexes": [{"key": {"a": 1}, "name": "a_1"}]}, session=s)
        assert ei.value.code == 263 and "non-empty collection" in str(ei.value)
        with pytest.raises(OperationFailure) as ei:
            s.commit_transaction()
        assert ei.value.code == 251
        assert "filled" not in db.list_collection_names()


def test_other_commands_are_refused_in_a_transaction_without_aborting_it(env):
    """Manual "Transactions and Operations"; jstests/core/txns/commands_not_allowed_in_txn.js: a command outside
    the transaction's list (listCollections, drop, count ...) fails with 263 and the transaction goes on."""
    client, _, db = env
    db.t.insert_one({"_id": 1})
    with client.start_session() as s:
        s.start_transaction()
        db.t.insert_one({"_id": 2}, session=s)
        for cmd in ({"listCollections": 1}, {"count": "t"}, {"drop": "t"}, {"dropIndexes": "t", "index": "*"}):
            with pytest.raises(OperationFailure) as ei:
                db.command(cmd, session=s)
            assert ei.value.code == 263, cmd
        s.commit_transaction()
    assert db.t.count_documents({}) == 2


# ---------------------------------------------------------------------------------------------- write concern
def test_w_greater_than_the_members_is_unsatisfiable(env):
    """Manual "Write Concern" (w: <number>): on a one-member replica set w: 2 cannot be satisfied: the write is
    applied, then reported as writeConcernError UnsatisfiableWriteConcern (100, "Not enough data-bearing
    nodes"); an unknown tag is UnknownReplWriteConcern (79); "majority" is met."""
    client, _, db = env
    w2 = db.get_collection("wc", write_concern=WriteConcern(w=2))
    with pytest.raises(WriteConcernError) as ei:
        w2.insert_one({"_id": 1})
    assert ei.value.code == 100 and ei.value.details["codeName"] == "UnsatisfiableWriteConcern"
    assert ei.value.details["errmsg"] == "Not enough data-bearing nodes"
    with pytest.raises(BulkWriteError) as ei:
        w2.insert_many([{"_id": 2}, {"_id": 3}])
    assert ei.value.details["nInserted"] == 2 and ei.value.details["writeConcernErrors"][0]["code"] == 100
    with pytest.raises(WriteConcernError) as ei:
        db.get_collection("wc", write_concern=WriteConcern(w="dc2")).insert_one({"_id": 4})
    assert ei.value.code == 79
    db.get_collection("wc", write_concern=WriteConcern(w="majority")).insert_one({"_id": 5})
    assert [d["_id"] for d in db.wc.find()] == [1, 2, 3, 4, 5]


def test_a_transaction_committed_with_w_2_reports_the_write_concern(env):
    """Drivers API: a transaction's write concern goes with commitTransaction; w: 2 commits on one member and the
    commit reports writeConcernError 100 (pymongo raises WriteConcernError); the writes are applied."""
    client, _, db = env
    with client.start_session() as s:
        s.start_transaction(write_concern=WriteConcern(w=2))
        db.t.insert_one({"_id": 1}, session=s)
        with pytest.raises(WriteConcernError) as ei:
            s.commit_transaction()
        assert ei.value.code == 100
    assert db.t.find_one() == {"_id": 1}


def test_read_and_write_concerns_inside_a_transaction(env):
    """jstests/core/txns/no_read_or_write_concern_inside_txn.js: a readConcern on a statement after the first,
    or a writeConcern on any statement but commit/abort, is InvalidOptions (72); the transaction still
    commits."""
    client, _, db = env
    with client.start_session() as s:
        s.start_transaction()
        db.t.insert_one({"_id": 0}, session=s)
        lsid = s.session_id
        if isinstance(client, MongoClient):
            txn = s._server_session.transaction_id
        else:  # the embedded session's transaction number
            txn = s._txn.number
        from bson import Int64
        base = {"lsid": lsid, "txnNumber": Int64(txn), "autocommit": False}
        for extra in ({"readConcern": {"level": "snapshot"}}, {"writeConcern": {"w": 1}}):
            with pytest.raises(OperationFailure) as ei:
                db.command({"insert": "t", "documents": [{"_id": 1}], **base, **extra})
            assert ei.value.code == 72
        s.commit_transaction()
    assert list(db.t.find()) == [{"_id": 0}]


# ---------------------------------------------------------------------------------------------- snapshot reads
def test_snapshot_session_reads_one_point_in_time(env):
    """pymongo "Snapshot Reads" (MongoDB 5.0+): every read of a snapshot session -- find, find_one, aggregate,
    count_documents, distinct -- reads at the atClusterTime of its first read, whatever was written since."""
    client, _, db = env
    db.orders.insert_many([{"_id": i, "sku": "abc"} for i in range(3)])
    with client.start_session(snapshot=True) as s:
        assert [d["_id"] for d in db.orders.find({}, session=s)] == [0, 1, 2]
        db.orders.insert_one({"_id": 9, "sku": "new"})
        db.orders.delete_one({"_id": 0})
        db.orders.update_one({"_id": 1}, {"$set": {"sku": "changed"}})
        assert [d["_id"] for d in db.orders.find({}, session=s)] == [0, 1, 2]
        assert db.orders.find_one({"_id": 1}, session=s)["sku"] == "abc"
        assert db.orders.count_documents({}, session=s) == 3
        assert db.orders.distinct("sku", session=s) == ["abc"]
        assert list(db.orders.aggregate([{"$group": {"_id": "$sku", "n": {"$sum": 1}}}], session=s)) == \
            [{"_id": "abc", "n": 3}]
        # a snapshot session sends readConcern snapshot with every command: writes refuse it
        with pytest.raises(OperationFailure) as ei:
            db.orders.insert_one({"_id": 10}, session=s)
        assert ei.value.code == 72 and "Command insert does not support" in str(ei.value)
    assert sorted(d["_id"] for d in db.orders.find()) == [1, 2, 9]


def test_at_cluster_time_is_returned_and_honoured(env):
    """Manual "Read Concern "snapshot"" (atClusterTime): a snapshot read returns its atClusterTime in the cursor
    (distinct: in the reply); reading again at that time gives the same data after writes; a later time
    sees them; a future time is InvalidOptions (72); a time before the history is SnapshotTooOld (239)."""
    client, _, db = env
    db.t.insert_many([{"_id": 1}, {"_id": 2}])
    first = db.command({"find": "t", "readConcern": {"level": "snapshot"}})
    at = first["cursor"]["atClusterTime"]
    assert isinstance(at, Timestamp) and [d["_id"] for d in first["cursor"]["firstBatch"]] == [1, 2]
    db.t.insert_one({"_id": 3})
    again = db.command({"find": "t", "readConcern": {"level": "snapshot", "atClusterTime": at}})
    assert [d["_id"] for d in again["cursor"]["firstBatch"]] == [1, 2] and again["cursor"]["atClusterTime"] == at
    dist = db.command({"distinct": "t", "key": "_id", "readConcern": {"level": "snapshot", "atClusterTime": at}})
    assert dist["values"] == [1, 2] and dist["atClusterTime"] == at
    agg = db.command({"aggregate": "t", "pipeline": [{"$count": "n"}], "cursor": {},
                      "readConcern": {"level": "snapshot", "atClusterTime": at}})
    assert agg["cursor"]["firstBatch"] == [{"n": 2}]
    now = db.command({"find": "t", "readConcern": {"level": "snapshot"}})
    assert len(now["cursor"]["firstBatch"]) == 3 and now["cursor"]["atClusterTime"] > at
    with pytest.raises(OperationFailure) as ei:
        db.command({"find": "t", "readConcern": {"level": "snapshot", "atClusterTime": Timestamp(2 ** 32 - 1, 1)}})
    assert ei.value.code == 72 and "must not be greater than the current clusterTime" in str(ei.value)
    with pytest.raises(OperationFailure) as ei:
        db.command({"find": "t", "readConcern": {"level": "snapshot", "atClusterTime": Timestamp(1, 1)}})
    assert ei.value.code == 239
    assert "Read timestamp Timestamp(1, 1) is older than the oldest available timestamp." in str(ei.value)


def test_a_time_no_longer_held_is_snapshot_too_old(env):
    """minSnapshotHistoryWindowInSeconds bounds the history (manual "Read Concern "snapshot"": a snapshot read
    can only be performed within that window): a time older than it, in a collection written since, is
    SnapshotTooOld (239); a collection not written since still answers."""
    client, _, db = env
    db.t.insert_one({"_id": 1})
    db.other.insert_one({"_id": 1})
    at = db.command({"find": "t", "readConcern": {"level": "snapshot"}})["cursor"]["atClusterTime"]
    try:
        client.admin.command("setParameter", 1, minSnapshotHistoryWindowInSeconds=0)
        time.sleep(1.1)
        db.t.insert_one({"_id": 2})
        with pytest.raises(OperationFailure) as ei:
            db.command({"find": "t", "readConcern": {"level": "snapshot", "atClusterTime": at}})
        assert ei.value.code == 239
        out = db.command({"find": "other", "readConcern": {"level": "snapshot", "atClusterTime": at}})
        assert out["cursor"]["firstBatch"] == [{"_id": 1}]
    finally:
        client.admin.command("setParameter", 1, minSnapshotHistoryWindowInSeconds=300)


def test_snapshot_read_concern_is_refused_where_the_server_refuses_it(env):
    """jstests/core/txns/no_snapshot_writes_outside_txn.js: insert, update, delete and findAndModify with
    readConcern snapshot outside a transaction fail with InvalidOptions (72); so does count (not one of
    find/aggregate/distinct); a capped collection refuses snapshot reads (SnapshotUnavailable 246)."""
    client, _, db = env
    db.t.insert_one({"_id": 0})
    rc = {"readConcern": {"level": "snapshot"}}
    for cmd in ({"insert": "t", "documents": [{"_id": 1}]}, {"update": "t", "updates": [{"q": {}, "u": {"$set": {"x": 1}}}]},
                {"delete": "t", "deletes": [{"q": {"_id": 0}, "limit": 1}]},
                {"findAndModify": "t", "query": {"_id": 0}, "remove": True}, {"count": "t"}):
        with pytest.raises(OperationFailure) as ei:
            db.command({**cmd, **rc})
        assert ei.value.code == 72 and "read concern not supported" in str(ei.value), cmd
    assert list(db.t.find()) == [{"_id": 0}]
    snap = db.get_collection("t", read_concern=ReadConcern("snapshot"))
    assert [d["_id"] for d in snap.find()] == [0]
    db.create_collection("cap", capped=True, size=4096)
    with pytest.raises(OperationFailure) as ei:
        list(db.get_collection("cap", read_concern=ReadConcern("snapshot")).find())
    assert ei.value.code == 246


# ---------------------------------------------------------------------------------------------- with change streams
def test_change_events_of_transactions_and_waiting_writes(env):
    """One cluster clock for writes, change events and snapshot reads (a replica set's): a committed
    transaction's events carry its lsid/txnNumber at one clusterTime; a write that waited for the transaction
    (update_many: its first document was already changed when it met the held one) has its events once, after
    the transaction's, as a server that retries the write after the conflict records only the retry; a snapshot
    read at an event's clusterTime sees that write and not the next (manual "Change Events", "Read Concern
    "snapshot""; jstests/core/txns/write_conflicts_with_non_txns.js)."""
    client, engine, db = env
    with db.users.watch(max_await_time_ms=50) as stream:
        db.users.insert_many([{"_id": "a", "n": 0}, {"_id": "u", "n": 0}])
        s = _update_many_waits_for_a_transaction(client, engine, db)
        evs = change_events(stream, 5, wait=10)
        assert stream.try_next() is None
    assert [(e["operationType"], e["documentKey"]["_id"]) for e in evs] == [
        ("insert", "a"), ("insert", "u"), ("update", "u"), ("update", "a"), ("update", "u")]
    txn_ev = evs[2]
    assert txn_ev["lsid"]["id"] == s.session_id["id"] and "txnNumber" in txn_ev
    assert "lsid" not in evs[3] and evs[3]["clusterTime"] > txn_ev["clusterTime"]
    s.end_session()

    def at(ev):
        return {d["_id"]: d["n"] for d in db.command(
            {"find": "users", "readConcern": {"level": "snapshot", "atClusterTime": ev["clusterTime"]}}
        )["cursor"]["firstBatch"]}

    assert at(evs[1]) == {"a": 0, "u": 0}
    assert at(txn_ev) == {"a": 0, "u": 1}
    assert at(evs[3]) == {"a": 10, "u": 1}
    assert at(evs[4]) == {"a": 10, "u": 11}


def test_a_collection_created_in_a_transaction_is_an_event_at_commit(env):
    """showExpandedEvents: a collection created in a transaction (explicitly, then written) gives its create
    event and the insert at the commit, with the transaction's lsid, nothing before (manual "Change Events":
    create; "Create Collections and Indexes in a Transaction")."""
    client, _, db = env
    with db.watch(max_await_time_ms=50, show_expanded_events=True) as stream:
        with client.start_session() as s:
            lsid = s.session_id["id"]
            with s.start_transaction():
                db.create_collection("made", session=s)
                db.made.insert_one({"_id": 1}, session=s)
                assert stream.try_next() is None
            evs = change_events(stream, 2, wait=10)
    assert [e["operationType"] for e in evs] == ["create", "insert"]
    assert all(e["lsid"]["id"] == lsid for e in evs)
    assert evs[0]["clusterTime"] == evs[1]["clusterTime"]


def test_the_history_holds_at_most_max_entries_and_a_read_before_them_is_snapshot_too_old(env, monkeypatch):
    """The history is a memory bound too (session/history.py MAX_ENTRIES): writes trim it in passes, never
    letting it grow more than _EVICT_SLACK past the bound; a read of the past first trims it to the bound, so a
    time whose changes were dropped is SnapshotTooOld (239), as one older than the window is."""
    from labkit.engine.session import history as history_mod

    monkeypatch.setattr(history_mod, "MAX_ENTRIES", 50)
    monkeypatch.setattr(history_mod, "_EVICT_SLACK", 20)
    client, engine, db = env
    history = history_of(engine._store)
    db.t.insert_one({"_id": -1})
    at = db.command({"find": "t", "readConcern": {"level": "snapshot"}})["cursor"]["atClusterTime"]
    most = 0
    for i in range(200):
        db.t.insert_one({"_id": i})
        most = max(most, len(history.entries))
    assert 50 < most <= 70
    with pytest.raises(OperationFailure) as ei:
        db.command({"find": "t", "readConcern": {"level": "snapshot", "atClusterTime": at}})
    assert ei.value.code == 239
    assert len(history.entries) <= 50
