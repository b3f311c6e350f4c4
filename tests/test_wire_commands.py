"""The command layer (labkit/engine/commands/dispatch.py) called in-process: EmbeddedDatabase.command falls back to it for
the commands a driver sends (find, getMore, insert ...), with the server's reply shapes and error codes.

Facts from the MongoDB manual command pages "find", "getMore", "insert", "update", "delete", "findAndModify" and
"Transactions"; codeNames from src/mongo/base/error_codes.yml.
"""
from __future__ import annotations

import pytest
from pymongo.errors import OperationFailure

from labkit.engine import EmbeddedClient
from labkit.engine.commands.dispatch import ServerContext, code_name, run_command


@pytest.fixture()
def db():
    return EmbeddedClient().cmds


def test_find_get_more_in_process(db):
    db.command({"insert": "x", "documents": [{"_id": i} for i in range(5)]})
    r = db.command({"find": "x", "batchSize": 2, "sort": {"_id": -1}})
    assert [d["_id"] for d in r["cursor"]["firstBatch"]] == [4, 3] and r["cursor"]["ns"] == "cmds.x"
    more = db.command({"getMore": r["cursor"]["id"], "collection": "x"})
    assert [d["_id"] for d in more["cursor"]["nextBatch"]] == [2, 1, 0] and more["cursor"]["id"] == 0
    assert type(more["cursor"]["nextBatch"][0]) is dict


def test_write_commands_report_write_errors(db):
    # manual "insert": a duplicate is reported in writeErrors (ok: 1), not as a command failure
    db.command({"insert": "x", "documents": [{"_id": 1}]})
    r = db.command({"insert": "x", "documents": [{"_id": 2}, {"_id": 1}, {"_id": 3}], "ordered": False})
    assert r["n"] == 2 and r["writeErrors"][0]["index"] == 1 and r["writeErrors"][0]["code"] == 11000
    assert r["writeErrors"][0]["keyValue"] == {"_id": 1}
    r = db.command({"update": "x", "updates": [{"q": {"_id": 9}, "u": {"$set": {"a": 1}}, "upsert": True},
                                               {"q": {}, "u": {"$set": {"b": 1}}, "multi": True}]})
    assert r["n"] == 5 and r["nModified"] == 4 and r["upserted"] == [{"index": 0, "_id": 9}]
    r = db.command({"delete": "x", "deletes": [{"q": {"_id": {"$gt": 2}}, "limit": 0}]})
    assert r["n"] == 2
    # statements are parsed before any runs: a malformed one fails the whole command
    with pytest.raises(OperationFailure) as info:
        db.command({"delete": "x", "deletes": [{"q": {}, "limit": 0}, {"q": {}}]})
    assert info.value.code == 40414 and db.x.count_documents({}) == 2
    with pytest.raises(OperationFailure) as info:
        db.command({"update": "x", "updates": [{"q": {}, "u": {"$set": {"c": 1}}, "bogus": 1}]})
    assert info.value.code == 40415 and db.x.count_documents({"c": 1}) == 0


def test_errors_raise_with_server_codes(db):
    with pytest.raises(OperationFailure) as info:
        db.command({"find": "x", "bogus": 1})
    assert info.value.code == 40415 and info.value.details["codeName"] == "Location40415"
    with pytest.raises(OperationFailure) as info:
        db.command({"getMore": 1234, "collection": "x"})
    assert info.value.code == 43 and info.value.details["codeName"] == "CursorNotFound"
    with pytest.raises(OperationFailure) as info:
        db.command({"surelyNotACommand": 1})
    assert info.value.code == 59


def test_command_in_a_transaction_in_process(db):
    client = db.client
    db.x.insert_one({"_id": 0})
    with client.start_session() as s:
        s.start_transaction()
        db.command({"insert": "x", "documents": [{"_id": 1}]}, session=s)
        assert db.x.count_documents({}) == 1 and db.x.count_documents({}, session=s) == 2
        s.commit_transaction()
    assert db.x.count_documents({}) == 2


def test_run_command_never_raises():
    client = EmbeddedClient()
    ctx = ServerContext()
    assert run_command(client, "d", {}, ctx)["code"] == 59
    run_command(client, "d", {"insert": "x", "documents": [{"a": 1}]}, ctx)
    r = run_command(client, "d", {"find": "x", "filter": {"a": {"$in": 5}}}, ctx)
    assert r["ok"] == 0.0 and isinstance(r["code"], int) and r["codeName"]
    r = run_command(client, "d", {"insert": "x", "documents": []}, ctx)
    assert r["ok"] == 0.0 and r["code"] == 16


def test_transaction_fields_map_onto_engine_sessions():
    # manual "Transactions" / drivers: lsid + txnNumber + startTransaction + autocommit:false on the first
    # command, the same lsid/txnNumber + autocommit:false after, then commitTransaction on admin
    client = EmbeddedClient()
    ctx = ServerContext()
    from bson.binary import Binary
    lsid = {"id": Binary(b"0123456789abcdef", 4)}
    t = {"lsid": lsid, "txnNumber": 1, "autocommit": False}
    r = run_command(client, "d", {"insert": "x", "documents": [{"_id": 1}], "startTransaction": True, **t}, ctx)
    assert r == {"n": 1, "ok": 1.0}
    assert client.d.x.count_documents({}) == 0
    r = run_command(client, "d", {"find": "x", **t}, ctx)
    assert [d["_id"] for d in r["cursor"]["firstBatch"]] == [1]  # the transaction sees its own write
    assert run_command(client, "admin", {"commitTransaction": 1, **t}, ctx)["ok"] == 1.0
    assert run_command(client, "admin", {"commitTransaction": 1, **t}, ctx)["ok"] == 1.0  # retry is fine
    assert client.d.x.count_documents({}) == 1
    # a command in a finished transaction number: NoSuchTransaction
    r = run_command(client, "d", {"find": "x", **t}, ctx)
    assert r["code"] == 251 and r["errorLabels"] == ["TransientTransactionError"]
    # abort
    t2 = {"lsid": lsid, "txnNumber": 2, "autocommit": False}
    run_command(client, "d", {"insert": "x", "documents": [{"_id": 2}], "startTransaction": True, **t2}, ctx)
    assert run_command(client, "admin", {"abortTransaction": 1, **t2}, ctx)["ok"] == 1.0
    assert client.d.x.count_documents({}) == 1
    r = run_command(client, "admin", {"commitTransaction": 1, **t2}, ctx)
    assert r["code"] == 251
    # commit/abort run on admin only
    assert run_command(client, "d", {"commitTransaction": 1, **t2}, ctx)["code"] == 13


def test_code_names():
    assert code_name(11000) == "DuplicateKey" and code_name(121) == "DocumentValidationFailure"
    assert code_name(40415) == "Location40415"
