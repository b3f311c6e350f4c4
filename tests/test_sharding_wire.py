"""The simulated sharded cluster over the wire: pymongo over TCP against the served mongos, mongosh's ``sh.*``
helpers, ``python -m labkit serve --shards N`` and ``labkit.connect(shards=N)``.

What the clients rely on (read in their sources, facts only): pymongo treats a server whose hello says
``msg: "isdbgrid"`` as a mongos (topology "Sharded"; driver spec "Server Discovery and Monitoring"); mongosh's
``sh.status()`` reads ``config.version``, ``config.shards``, ``config.mongos``, ``config.settings``,
``config.databases``, ``config.collections`` (``dropped``/``unsplittable`` not true), ``config.chunks`` by
``uuid``, ``balancerStatus`` and ``$shardedDataDistribution``; ``db.coll.getShardDistribution()`` runs
``$collStats: {storageStats: {}}`` (one document per shard, with ``shard``) and counts ``config.chunks`` per
shard (mongodb-js/mongosh packages/shell-api src/helpers.ts, collection.ts, shard.ts). The server's rules are
tested in tests/test_sharding.py; here the same rules are seen through real clients.
"""
from __future__ import annotations

import subprocess
import sys

import pytest
from bson import json_util
from pymongo import MongoClient
from pymongo.errors import OperationFailure, WriteError

import labkit
from labkit.engine.transport.wire import serve_in_thread
from served_helpers import ROOT, mongosh_path, unavailable


@pytest.fixture
def server():
    s = serve_in_thread("127.0.0.1", 0, shards=3)
    yield s
    s.stop()


@pytest.fixture
def client(server):
    c = MongoClient(server.uri, serverSelectionTimeoutMS=5000)
    yield c
    c.close()


def test_hello_says_mongos_and_pymongo_sees_a_sharded_topology(client):
    hello = client.admin.command("hello")
    assert hello["msg"] == "isdbgrid" and "setName" not in hello and hello["isWritablePrimary"] is True
    client.admin.command("ping")
    assert client.topology_description.topology_type_name == "Sharded"


def _setup(client) -> None:
    client.admin.command("shardCollection", "lab.posts", key={"authorId": 1})
    client.lab.posts.insert_many([{"_id": i, "authorId": "u%02d" % (i % 20), "createdAt": i} for i in range(200)])
    client.admin.command("split", "lab.posts", middle={"authorId": "u10"})
    client.admin.command("moveChunk", "lab.posts", find={"authorId": "u15"}, to="shard1")


def test_pymongo_crud_and_explain_through_the_mongos(client):
    _setup(client)
    posts = client.lab.posts
    assert posts.count_documents({}) == 200
    assert [d["_id"] for d in posts.find({"authorId": "u15"}).sort("createdAt", -1).limit(2)] == [195, 175]
    e = posts.find({"authorId": "u15"}).explain()
    assert e["queryPlanner"]["winningPlan"]["stage"] == "SINGLE_SHARD"
    assert e["executionStats"]["executionStages"]["shards"][0]["shardName"] == "shard1"
    e = posts.find({"createdAt": {"$gt": 100}}).sort("createdAt", 1).explain()
    assert e["queryPlanner"]["winningPlan"]["stage"] == "SHARD_MERGE_SORT"
    rows = list(client.admin.aggregate([{"$shardedDataDistribution": {}}]))
    assert {s["shardName"]: s["numOwnedDocuments"] for s in rows[0]["shards"]} == {"shard0": 100, "shard1": 100}
    stats = list(posts.aggregate([{"$collStats": {"storageStats": {}}}]))
    assert sorted(s["shard"] for s in stats) == ["shard0", "shard1"]
    assert [c["shard"] for c in client.config.chunks.find({}, sort=[("min", 1)])] == ["shard0", "shard1"]


def test_changing_a_shard_key_value_over_the_wire(server, client):
    _setup(client)
    # pymongo's default retryable writes carry a txnNumber: the document moves to the shard of its new key
    client.lab.posts.update_one({"_id": 1}, {"$set": {"authorId": "u19"}})
    assert client.lab.posts.find_one({"_id": 1})["authorId"] == "u19"
    plain = MongoClient(server.uri, retryWrites=False)
    with pytest.raises(WriteError) as info:
        plain.lab.posts.update_one({"_id": 2}, {"$set": {"authorId": "u19"}})
    assert info.value.code == 20 and "retryWrites: true" in str(info.value)
    assert client.lab.posts.find_one({"_id": 2})["authorId"] == "u02"
    plain.close()


def test_a_transaction_across_two_shards_with_pymongo(client):
    _setup(client)
    with client.start_session() as s:
        with s.start_transaction():
            client.lab.posts.insert_one({"_id": 1000, "authorId": "u01"}, session=s)
            client.lab.posts.insert_one({"_id": 1001, "authorId": "u18"}, session=s)
    assert client.lab.posts.count_documents({"_id": {"$in": [1000, 1001]}}) == 2
    with pytest.raises(OperationFailure) as info:
        with client.start_session() as s:
            with s.start_transaction():
                client.lab.posts.insert_one({"_id": 2000, "authorId": "u01"}, session=s)
                client.lab.posts.distinct("authorId", session=s)
    assert info.value.code == 263
    assert client.lab.posts.count_documents({"_id": 2000}) == 0


def test_bad_input_gets_the_servers_error(client):
    client.lab.users.insert_one({"email": "a@x"})
    with pytest.raises(OperationFailure) as info:
        client.admin.command("shardCollection", "lab.users", key={"email": 1})
    assert info.value.code == 72
    with pytest.raises(OperationFailure) as info:
        client.admin.command("shardCollection", "lab.other", key={"email": "hashed"}, unique=True)
    assert info.value.code == 72
    assert client.config.collections.count_documents({}) == 0


def test_connect_with_shards(monkeypatch):
    monkeypatch.delenv("MONGODB_URI", raising=False)
    c = labkit.connect(shards=2)
    assert c.admin.command("hello")["msg"] == "isdbgrid"
    assert c is labkit.connect(shards=2)
    assert "simulated sharded cluster (2 shards" in labkit.describe(c)
    for bad in (0, 17, "2", True):
        with pytest.raises(ValueError, match="number of shards"):
            labkit.connect(shards=bad)


def test_watch_through_the_mongos_is_refused_at_once_and_the_server_keeps_serving(client):
    # main's served change streams wait in getMore; the router does not merge shards' streams, so watch() is
    # 115 (not a connection held on one shard's stream), and the next command is answered
    _setup(client)
    with pytest.raises(OperationFailure) as info:
        client.lab.posts.watch(max_await_time_ms=100)
    assert info.value.code == 115 and "change streams" in str(info.value)
    assert client.lab.posts.count_documents({}) == 200


def test_connect_with_shards_falls_back_from_a_replica_set(monkeypatch):
    rs = serve_in_thread("127.0.0.1", 0)  # the plain served engine: a replica set member, no mongos
    try:
        monkeypatch.setenv("MONGODB_URI", rs.uri)
        with pytest.warns(UserWarning, match="needs a sharded cluster"):
            c = labkit.connect(shards=2)
        assert c.admin.command("hello")["msg"] == "isdbgrid"
    finally:
        rs.stop()


def test_cli_refuses_a_bad_shard_count():
    proc = subprocess.run([sys.executable, "-m", "labkit", "serve", "--shards", "0", "--port", "0"],
                          capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert proc.returncode == 2 and "argument --shards: 0 is out of range; allowed: 1 to 16" in proc.stderr


# ---------------------------------------------------------------------------------------------- mongosh
@pytest.fixture
def mongosh():
    exe = mongosh_path()
    if not exe:
        unavailable("mongosh is not installed (tools/install_mongosh.sh or SCHEMA_LAB_MONGOSH)")
    return exe


def _mongosh(exe: str, uri: str, script: str, tmp_path) -> list:
    path = tmp_path / "script.js"
    path.write_text(script, encoding="utf-8")
    proc = subprocess.run([exe, "--quiet", "--norc", uri, str(path)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    return [json_util.loads(line) for line in proc.stdout.splitlines() if line.startswith(("{", "["))]


def test_mongosh_sh_helpers(mongosh, server, tmp_path):
    script = """
const out = (x) => print(EJSON.stringify(x));
sh.enableSharding("lab");
out(sh.shardCollection("lab.posts", {authorId: "hashed"}));
db = db.getSiblingDB("lab");
db.posts.insertMany(Array.from({length: 300}, (_, i) => ({authorId: "u" + (i % 30), createdAt: i})));
const st = sh.status();
out({shards: st.value.shards.map(s => s._id), dbs: st.value.databases.map(d => d.database._id),
     key: st.value.databases.find(d => d.database._id === "lab").collections["lab.posts"].shardKey,
     chunks: st.value.databases.find(d => d.database._id === "lab").collections["lab.posts"].chunkMetadata});
const dist = db.posts.getShardDistribution();
out({totals: dist.value.Totals.docs, shards: Object.keys(dist.value).filter(k => k.startsWith("Shard ")).length});
out({stage: db.posts.find({authorId: "u3"}).explain().queryPlanner.winningPlan.stage});
out({stage: db.posts.find({createdAt: 3}).explain().queryPlanner.winningPlan.stage});
out(sh.getShardedDataDistribution().toArray().map(d => d.ns));
try { sh.shardCollection("lab.posts", {createdAt: 1}); } catch (e) { out({code: e.code, msg: e.message}); }
"""
    rows = _mongosh(mongosh, server.uri, script, tmp_path)
    assert rows[0]["collectionsharded"] == "lab.posts"
    assert rows[1]["shards"] == ["shard0", "shard1", "shard2"] and "lab" in rows[1]["dbs"]
    assert rows[1]["key"] == {"authorId": "hashed"}
    assert [c["nChunks"] for c in rows[1]["chunks"]] == [1, 1, 1]
    assert rows[2] == {"totals": 300, "shards": 3}
    assert rows[3] == {"stage": "SINGLE_SHARD"} and rows[4] == {"stage": "SHARD_MERGE"}
    assert rows[5] == ["lab.posts"]
    assert rows[6]["code"] == 23 and "sharding already enabled for collection lab.posts" in rows[6]["msg"]


def test_served_cli_announces_a_mongos(tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "labkit", "serve", "--shards", "2", "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        line = proc.stdout.readline()
        assert "simulated sharded cluster (2 shards" in line
        uri = proc.stdout.readline().split()[-1]
        c = MongoClient(uri, serverSelectionTimeoutMS=5000)
        assert c.admin.command("listShards")["shards"][1]["_id"] == "shard1"
        c.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
