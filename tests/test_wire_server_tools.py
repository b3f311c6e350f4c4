"""What the tools around a server ask it about itself (Compass's performance tab and data service, mongosh's
``db.currentOp()``, ``show dbs``), in-process and over the wire (tests/both_paths.py).

Sources: manual pages "$currentOp (aggregation)" (run on admin with ``{aggregate: 1}``, 73 otherwise; the options
``allUsers``, ``idleConnections``, ``idleCursors``, ``idleSessions``, ``localOps``; the output fields ``type``,
``opid``, ``active``, ``op``, ``ns``, ``command``, ``secs_running``, ``microsecs_running``, ``client``,
``appName``), "currentOp" (the ``{inprog: [...]}`` reply and its filter), "top" (admin only; per namespace
``total``/``readLock``/``writeLock``/``queries``/``getmore``/``insert``/``update``/``remove``/``commands`` with
``time`` in microseconds and ``count``), "$listLocalSessions" (``_id: {id, uid}``, ``lastUse``), "listDatabases"
(a replica-set member lists ``admin``, ``config`` and ``local``), "dropDatabase"; the server's
``src/mongo/db/pipeline/document_source_current_op.cpp`` and ``src/mongo/db/stats/top.cpp``;
``src/mongo/db/logical_session_id_helpers.cpp`` (the uid of an unauthenticated session: SHA-256 of "").
"""
from __future__ import annotations

import hashlib

import pytest
from pymongo.errors import OperationFailure

from both_paths import client, server  # noqa: F401

NO_AUTH_UID = hashlib.sha256(b"").digest()


def test_current_op_shows_the_running_aggregate(client):  # noqa: F811
    ops = list(client.admin.aggregate([{"$currentOp": {"allUsers": True, "idleConnections": False}},
                                       {"$match": {"active": True}}]))
    me = [o for o in ops if o.get("command", {}).get("aggregate") == 1]
    assert len(me) == 1
    op = me[0]
    assert (op["type"], op["op"], op["ns"]) == ("op", "command", "admin.$cmd.aggregate")
    assert op["command"]["pipeline"][0]["$currentOp"]["allUsers"] is True and op["command"]["$db"] == "admin"
    assert isinstance(op["opid"], int) and op["secs_running"] >= 0 and op["microsecs_running"] >= 0
    assert op["waitingForLock"] is False


def test_current_op_errors(client):  # noqa: F811
    with pytest.raises(OperationFailure) as err:
        list(client.t.aggregate([{"$currentOp": {}}]))
    assert err.value.code == 73
    with pytest.raises(OperationFailure) as err:
        list(client.admin.aggregate([{"$currentOp": {"nope": True}}]))
    assert err.value.code == 9
    with pytest.raises(OperationFailure) as err:
        list(client.admin.aggregate([{"$currentOp": {"idleConnections": 1}}]))
    assert err.value.code == 9


def test_current_op_command_filters(client):  # noqa: F811
    out = client.admin.command({"currentOp": 1, "active": True})
    assert out["ok"] == 1.0 and any("currentOp" in o["command"] for o in out["inprog"])
    assert client.admin.command({"currentOp": 1, "op": "no-such-op"})["inprog"] == []


def test_current_op_on_the_wire_names_the_connection(server):  # noqa: F811
    from pymongo import MongoClient
    with MongoClient(server.uri, appname="compass-like") as c:
        c.t.a.insert_many([{"i": i} for i in range(5)])
        cur = c.t.a.find().batch_size(2)
        next(cur)  # an open server cursor
        ops = list(c.admin.aggregate([{"$currentOp": {"idleCursors": True, "idleConnections": True}}]))
        me = next(o for o in ops if o.get("active") and "aggregate" in o.get("command", {}))
        assert me["appName"] == "compass-like" and me["desc"] == "conn%d" % me["connectionId"]
        assert me["client"].startswith("127.0.0.1:") and me["clientMetadata"]["driver"]["name"].startswith("PyMongo")
        assert me["lsid"]["uid"] == NO_AUTH_UID
        idle = [o for o in ops if o["type"] == "idleCursor"]
        assert any(o["ns"] == "t.a" and o["cursor"]["nDocsReturned"] == 2 for o in idle)
        assert any(o["type"] == "op" and o["active"] is False for o in ops)  # the monitor's idle connection
        cur.close()


def test_top_counts_operations_per_namespace(client):  # noqa: F811
    client.drop_database("tp")
    with pytest.raises(OperationFailure) as err:
        client.tp.command("top")
    assert err.value.code == 13
    before = client.admin.command("top")["totals"]
    assert before["note"] == "all times in microseconds" and "tp.a" not in before
    client.tp.a.insert_one({"x": 1})
    client.tp.a.insert_many([{"x": 2}, {"x": 3}])
    list(client.tp.a.find({"x": {"$gt": 1}}))
    client.tp.a.update_one({"x": 1}, {"$set": {"y": 1}})
    client.tp.a.delete_one({"x": 3})
    row = client.admin.command("top")["totals"]["tp.a"]
    assert [row[k]["count"] for k in ("insert", "queries", "update", "remove")] == [2, 1, 1, 1]
    assert row["total"]["count"] == row["readLock"]["count"] + row["writeLock"]["count"] >= 5
    assert row["writeLock"]["count"] == 4 and all(row[k]["time"] >= 0 for k in row)
    client.tp.a.drop()
    assert "tp.a" not in client.admin.command("top")["totals"]


def test_list_local_sessions(client):  # noqa: F811
    s = client.start_session()
    client.t.a.insert_one({}, session=s)
    rows = list(client.admin.aggregate([{"$listLocalSessions": {"allUsers": True}}]))
    ids = [r["_id"]["id"] for r in rows]
    assert s.session_id["id"] in ids
    row = rows[ids.index(s.session_id["id"])]
    assert row["_id"]["uid"] == NO_AUTH_UID and row["lastUse"] is not None
    assert list(client.admin.aggregate([{"$listLocalSessions": {"users": [{"user": "u", "db": "admin"}]}}])) == []
    s.end_session()


def test_list_databases_shows_the_replica_set_databases(client):  # noqa: F811
    client.mine.a.insert_one({})
    names = client.list_database_names()
    assert {"admin", "config", "local", "mine"} <= set(names)
    rows = {r["name"]: r for r in client.admin.command("listDatabases")["databases"]}
    assert rows["local"]["empty"] is False and rows["local"]["sizeOnDisk"] > 0
    assert client.admin["system.version"].find_one({"_id": "featureCompatibilityVersion"})["version"] == "8.0"
    assert "lsidTTLIndex" in client.config["system.sessions"].index_information()
    assert client.local.startup_log.options()["capped"] is True
    for name in ("admin", "local"):
        with pytest.raises(OperationFailure) as err:
            client.drop_database(name)
        assert err.value.code == 20


def test_plan_cache_hashes_follow_the_query_shape(client):  # noqa: F811
    """Manual "Explain Results" (queryPlanner.planCacheShapeHash, planCacheKey) and "Database Profiler Output":
    the hash identifies the query shape (operators, paths, sort, projection; not the values), the key also the
    indexes; the profiler's entry carries the explain's figures (server: canonical_query_encoder.cpp)."""
    client.drop_database("qh")
    db = client.qh
    db.a.insert_many([{"a": i, "b": i} for i in range(10)])
    db.a.create_index("a")

    def hashes(flt, **kw):
        qp = db.a.find(flt, **kw).explain()["queryPlanner"]
        return qp["planCacheShapeHash"], qp["planCacheKey"]

    same = hashes({"a": 1})
    assert same == hashes({"a": 7}) and len(same[0]) == 8 and same[0] != "0" * 8
    assert hashes({"a": {"$gt": 1}})[0] != same[0] and hashes({"b": 1})[0] != same[0]
    assert hashes({"a": 1}, sort=[("b", 1)])[0] != same[0]
    db.a.create_index("b")
    after = hashes({"a": 2})
    assert after[0] == same[0] and after[1] != same[1]  # a new index changes the key, not the shape
    db.command("profile", 2)
    list(db.a.find({"a": 3}))
    db.command("profile", 0)
    entry = db["system.profile"].find_one({"op": "query", "ns": "qh.a"})
    assert (entry["planCacheShapeHash"], entry["planCacheKey"]) == after and entry["queryHash"] == after[0]
