"""MongoDB 8.0's ``bulkWrite`` command and the findAndModify / count details a driver relies on, in-process and over
the wire (tests/both_paths.py).

Sources: the server's ``src/mongo/db/commands/query_cmd/bulk_write.idl`` (the command's fields, the reply's cursor
and counts), ``bulk_write_parser.cpp`` (a reply item: ``ok``, ``idx``, ``code``/``errmsg`` and the error's extra
fields, ``n``, ``nModified``, ``upserted``), ``bulk_write_common.cpp`` (``validateRequest``: batch size 16, nsInfo
index 2, namespaces 73); the manual's "bulkWrite" command page (admin only, ``errorsOnly``, ``let``); the driver
specification crud/bulk-write.md (what a driver sends and builds from the reply); pymongo's
``find_one_and_*`` (extra keyword arguments are findAndModify fields).
"""
from __future__ import annotations

import pytest
from pymongo import DeleteMany, InsertOne, ReplaceOne, ReturnDocument, UpdateMany, UpdateOne
from pymongo.errors import ClientBulkWriteException, OperationFailure
from pymongo.write_concern import WriteConcern

from both_paths import client, server  # noqa: F401  (fixtures: every test runs in-process and over TCP)


def _bulk(client, ops, ns=("t.a",), **kw):  # noqa: F811
    return client.admin.command({"bulkWrite": 1, "ops": ops, "nsInfo": [{"ns": n} for n in ns], **kw})


def test_bulk_write_command_reply_items_and_counts(client):  # noqa: F811
    client.drop_database("t")
    out = _bulk(client, [{"insert": 0, "document": {"_id": 1}},
                         {"update": 0, "filter": {"_id": 1}, "updateMods": {"$set": {"x": 1}}},
                         {"update": 1, "filter": {"_id": 7}, "updateMods": {"y": 1}, "upsert": True},
                         {"delete": 0, "filter": {}, "multi": True},
                         {"insert": 0, "document": {"_id": 2}}], ns=("t.a", "t.b"))
    cur = out["cursor"]
    assert cur["id"] == 0 and cur["ns"] == "admin.$cmd.bulkWrite"
    assert cur["firstBatch"] == [{"ok": 1.0, "idx": 0, "n": 1},
                                 {"ok": 1.0, "idx": 1, "n": 1, "nModified": 1},
                                 {"ok": 1.0, "idx": 2, "n": 1, "nModified": 0, "upserted": {"_id": 7}},
                                 {"ok": 1.0, "idx": 3, "n": 1},
                                 {"ok": 1.0, "idx": 4, "n": 1}]
    counts = {k: out[k] for k in ("nErrors", "nInserted", "nMatched", "nModified", "nUpserted", "nDeleted")}
    assert counts == {"nErrors": 0, "nInserted": 2, "nMatched": 1, "nModified": 1, "nUpserted": 1, "nDeleted": 1}
    assert list(client.t.a.find()) == [{"_id": 2}] and list(client.t.b.find()) == [{"_id": 7, "y": 1}]


def test_bulk_write_command_errors_ordered_unordered_errors_only(client):  # noqa: F811
    client.drop_database("t")
    ops = [{"insert": 0, "document": {"_id": 1}}, {"insert": 0, "document": {"_id": 1}},
           {"insert": 0, "document": {"_id": 2}}]
    out = _bulk(client, ops)  # ordered: stops at the duplicate
    err = out["cursor"]["firstBatch"][1]
    assert (err["ok"], err["idx"], err["code"], err["n"]) == (0.0, 1, 11000, 0)
    assert err["keyPattern"] == {"_id": 1} and err["keyValue"] == {"_id": 1} and "codeName" not in err
    assert len(out["cursor"]["firstBatch"]) == 2 and (out["nErrors"], out["nInserted"]) == (1, 1)
    client.drop_database("t")
    out = _bulk(client, ops, ordered=False, errorsOnly=True)  # unordered goes on; only the error is reported
    assert [i["idx"] for i in out["cursor"]["firstBatch"]] == [1]
    assert (out["nErrors"], out["nInserted"]) == (1, 2)


def test_bulk_write_command_let_and_batch_size(client):  # noqa: F811
    client.drop_database("t")
    client.t.a.insert_many([{"_id": i} for i in range(3)])
    out = _bulk(client, [{"update": 0, "filter": {"$expr": {"$eq": ["$_id", "$$k"]}},
                          "updateMods": [{"$set": {"v": "$$k"}}]}], let={"k": 2})
    assert out["nModified"] == 1 and client.t.a.find_one({"_id": 2}) == {"_id": 2, "v": 2}
    out = _bulk(client, [{"insert": 0, "document": {"_id": 10 + i}} for i in range(5)], cursor={"batchSize": 2})
    assert len(out["cursor"]["firstBatch"]) == 2 and out["cursor"]["id"] != 0
    more = client.admin.command("getMore", out["cursor"]["id"], collection="$cmd.bulkWrite")
    assert [i["idx"] for i in more["cursor"]["nextBatch"]] == [2, 3, 4]


@pytest.mark.parametrize("cmd, code", [
    ({"ops": [], "nsInfo": [{"ns": "t.a"}]}, 16),                                   # InvalidLength
    ({"ops": [{"insert": 1, "document": {}}], "nsInfo": [{"ns": "t.a"}]}, 2),       # nsInfo index out of range
    ({"ops": [{"insert": 0, "document": {}}], "nsInfo": [{"ns": "nodot"}]}, 73),    # InvalidNamespace
    ({"ops": [{"insert": 0, "document": {}, "x": 1}], "nsInfo": [{"ns": "t.a"}]}, 40415),
    ({"ops": [{"update": 0, "filter": {}, "updateMods": {"$set": {"a": 1}}, "multi": True, "sort": {"a": 1}}],
      "nsInfo": [{"ns": "t.a"}]}, 9),
    ({"ops": [{"insert": 0, "document": {}}], "nsInfo": [{"ns": "t.a"}], "nope": 1}, 40415),
])
def test_bulk_write_command_is_checked_before_anything_runs(client, cmd, code):  # noqa: F811
    client.drop_database("t")
    with pytest.raises(OperationFailure) as err:
        client.admin.command({"bulkWrite": 1, **cmd})
    assert err.value.code == code
    assert client.t.a.count_documents({}) == 0


def test_bulk_write_command_runs_on_admin_only(client):  # noqa: F811
    with pytest.raises(OperationFailure) as err:
        client.t.command({"bulkWrite": 1, "ops": [{"insert": 0, "document": {}}], "nsInfo": [{"ns": "t.a"}]})
    assert err.value.code == 13 and "admin database" in str(err.value)


def test_client_bulk_write_through_the_driver(client):  # noqa: F811
    client.drop_database("t")
    res = client.bulk_write([InsertOne({"_id": 1}, namespace="t.a"),
                             UpdateMany({}, {"$inc": {"n": 1}}, namespace="t.a"),
                             ReplaceOne({"_id": 5}, {"r": 1}, upsert=True, namespace="t.b"),
                             DeleteMany({"r": 1}, namespace="t.b")], verbose_results=True)
    assert (res.inserted_count, res.matched_count, res.modified_count, res.upserted_count, res.deleted_count) == \
        (1, 1, 1, 1, 1)
    assert res.update_results[2].upserted_id == 5 and res.delete_results[3].deleted_count == 1
    with pytest.raises(ClientBulkWriteException) as err:
        client.bulk_write([InsertOne({"_id": 1}, namespace="t.a"), UpdateOne({"_id": 1}, {"$set": {"z": 1}},
                                                                             namespace="t.a")], ordered=False)
    (w,) = err.value.write_errors
    assert w["idx"] == 0 and w["code"] == 11000 and w["op"] == {"insert": 0, "document": {"_id": 1}}
    assert err.value.partial_result.modified_count == 1


def test_client_bulk_write_in_a_transaction(client):  # noqa: F811
    client.drop_database("t")
    client.t.a.insert_one({"_id": 0})
    with client.start_session() as s:
        with s.start_transaction():
            client.bulk_write([InsertOne({"_id": 1}, namespace="t.a")], session=s)
            assert client.t.a.count_documents({}) == 1  # outside the transaction: not yet visible
    assert client.t.a.count_documents({}) == 2


def test_unacknowledged_client_bulk_write_is_applied(client):  # noqa: F811
    client.drop_database("t")
    res = client.bulk_write([InsertOne({"_id": 1}, namespace="t.a")], ordered=False,
                            write_concern=WriteConcern(w=0))
    assert res.acknowledged is False
    assert client.t.a.find_one({"_id": 1}) == {"_id": 1}  # the next command on this client sees it


def test_find_and_modify_keeps_let_and_bypasses_validation(client):  # noqa: F811
    client.drop_database("t")
    client.t.create_collection("v", validator={"n": {"$type": "int"}})
    client.t.v.insert_one({"_id": 1, "n": 1})
    got = client.t.v.find_one_and_update({"$expr": {"$eq": ["$_id", "$$k"]}}, [{"$set": {"n": "$$k"}}],
                                         let={"k": 1}, return_document=ReturnDocument.AFTER)
    assert got == {"_id": 1, "n": 1}
    with pytest.raises(OperationFailure) as err:
        client.t.v.find_one_and_update({"_id": 1}, {"$set": {"n": "text"}})
    assert err.value.code == 121
    # pymongo sends extra keyword arguments as command fields: bypassDocumentValidation is the field's name
    assert client.t.v.find_one_and_update({"_id": 1}, {"$set": {"n": "text"}}, bypassDocumentValidation=True,
                                          return_document=ReturnDocument.AFTER) == {"_id": 1, "n": "text"}
    with pytest.raises(OperationFailure) as err:
        client.t.v.find_one_and_update({"_id": 1}, {"$set": {"n": 2}}, bypass_document_validation=True)
    assert err.value.code == 40415


def test_unacknowledged_find_and_modify(client):  # noqa: F811
    """pymongo sends findAndModify with w: 0 as an OP_MSG with moreToCome and returns None (no reply)."""
    client.drop_database("t")
    client.t.a.insert_one({"_id": 1})
    coll = client.t.get_collection("a", write_concern=WriteConcern(w=0))
    assert coll.find_one_and_update({"_id": 1}, {"$set": {"x": 1}}) is None
    assert coll.find_one_and_delete({"_id": 2}) is None
    assert client.t.a.find_one({"_id": 1}) == {"_id": 1, "x": 1}


def test_count_documents_with_a_collation(client):  # noqa: F811
    client.drop_database("t")
    client.t.a.insert_many([{"s": "ab"}, {"s": "AB"}, {"s": "b"}])
    ci = {"locale": "en", "strength": 2}
    assert client.t.a.count_documents({"s": "ab"}, collation=ci) == 2
    assert client.t.a.count_documents({"s": "ab"}) == 1


def test_validate_and_capped_conversion_commands(client):  # noqa: F811
    client.drop_database("t")
    client.t.a.insert_many([{"_id": i} for i in range(3)])
    out = client.t.command("validate", "a")
    assert out["valid"] is True and out["nrecords"] == 3 and out["keysPerIndex"] == {"_id_": 3}
    client.t.command("cloneCollectionAsCapped", "a", toCollection="b", size=4096)
    client.t.command("convertToCapped", "a", size=4096)
    assert client.t.a.options()["capped"] is True and client.t.b.options()["capped"] is True
    assert client.t.b.count_documents({}) == 3
    with pytest.raises(OperationFailure) as err:
        client.t.command("validate", "missing")
    assert err.value.code == 26
