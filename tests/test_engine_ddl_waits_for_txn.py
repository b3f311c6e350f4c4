"""``drop``, ``renameCollection`` and ``dropDatabase`` outside a transaction wait for an open transaction that has
written to the collection, in-process and over TCP.

Facts from MongoDB: the manual's "Production Considerations" for transactions ("Pending DDL Operations and
Transactions": a DDL operation on a collection an in-progress transaction uses waits behind the transaction;
"Runtime Limit": a transaction older than ``transactionLifetimeLimitSeconds`` is aborted by a periodic cleanup);
the server takes an exclusive collection lock for drop and rename (drop_collection.cpp, rename_collection.cpp) and
the transaction keeps its collection lock until it commits or aborts, so the DDL runs once it has ended, and a
``maxTimeMS`` passing first fails it with MaxTimeMSExpired (50) with nothing changed;
jstests/core/txns/drop_collection_not_blocked_by_txn.js and rename_collection_not_blocked_by_txn.js: a drop or
rename of *another* collection is not blocked.
"""
from __future__ import annotations

import itertools
import threading
import time

import pytest
from pymongo.errors import OperationFailure

from both_paths import client, server  # noqa: F401 - fixtures

_NAMES = itertools.count()


def _open_txn(client, db):
    db.c.insert_one({"_id": 0})
    db.other.insert_one({"_id": 0})
    db.third.insert_one({"_id": 0})
    s = client.start_session()
    s.start_transaction()
    db.c.insert_one({"_id": 1}, session=s)
    return s


def test_ddl_on_the_collection_waits_until_max_time(client):
    db = client["ddlw_%d" % next(_NAMES)]
    s = _open_txn(client, db)
    try:
        for cmd, on in (({"drop": "c", "maxTimeMS": 100}, db),
                        ({"renameCollection": db.name + ".c", "to": db.name + ".d", "maxTimeMS": 100}, client.admin),
                        ({"renameCollection": db.name + ".other", "to": db.name + ".c", "dropTarget": True,
                          "maxTimeMS": 100}, client.admin),
                        ({"dropDatabase": 1, "maxTimeMS": 100}, db)):
            with pytest.raises(OperationFailure) as e:
                on.command(cmd)
            assert e.value.code == 50, cmd
        assert sorted(db.list_collection_names()) == ["c", "other", "third"]  # nothing changed
        # another collection's DDL is not blocked
        db.drop_collection("third")
        client.admin.command({"renameCollection": db.name + ".other", "to": db.name + ".other2"})
        s.commit_transaction()  # the transaction was not aborted by the waits
        assert sorted(d["_id"] for d in db.c.find()) == [0, 1]
        db.drop_collection("c")  # nothing holds it now
        assert db.list_collection_names() == ["other2"]
    finally:
        s.end_session()


def test_a_waiting_drop_runs_once_the_transaction_commits(client):
    db = client["ddlw_%d" % next(_NAMES)]
    s = _open_txn(client, db)
    done: dict = {}

    def drop() -> None:
        db.drop_collection("c")
        done["at"] = time.monotonic()
    t = threading.Thread(target=drop)
    t.start()
    try:
        time.sleep(0.3)
        assert "at" not in done and "c" in db.list_collection_names()  # still waiting
        committed = time.monotonic()
        s.commit_transaction()
        t.join(10)
        assert done["at"] >= committed and "c" not in db.list_collection_names()
    finally:
        t.join(10)
        s.end_session()


def test_an_expired_transaction_lets_the_drop_run(client):
    db = client["ddlw_%d" % next(_NAMES)]
    client.admin.command("setParameter", 1, transactionLifetimeLimitSeconds=1)
    try:
        s = _open_txn(client, db)
        db.drop_collection("c")  # waits until the server aborts the transaction at its lifetime limit
        assert "c" not in db.list_collection_names()
        with pytest.raises(OperationFailure) as e:
            s.commit_transaction()
        assert e.value.code == 251  # NoSuchTransaction: the server aborted it (the drop did not run before)
        s.end_session()
    finally:
        client.admin.command("setParameter", 1, transactionLifetimeLimitSeconds=60)
