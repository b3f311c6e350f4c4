"""Real clients against ``labkit serve``: the Node.js driver, Mongoose and MongoDB Compass's libraries (its data
service, explain-plan helper and schema analyser), and mongosh's helpers for the server's own commands.

The Node.js packages come from npm into .tools/node/ (tools/install_node_clients.sh; ``SCHEMA_LAB_NODE_MODULES``
names another node_modules folder); mongosh as for tests/test_mongosh.py. Locally a missing client skips with the
install hint; under CI=true it fails (served_helpers.unavailable). Each script (tests/node/*.js) does what a user
of that client does and prints its observations as one JSON line, checked here against MongoDB's documented
results: the manual's CRUD, index, aggregation, explain, transaction and "bulkWrite" pages, the Node.js driver's
``MongoClient.bulkWrite`` (driver 6.10+, MongoDB 8.0), Mongoose's documentation (schemas, validation, timestamps,
``Model.init`` index builds, sessions), and Compass's source (mongodb-data-service ``instance``,
``collectionStats``, ``currentOp``, ``top``, ``explainFind``, ``sample``; @mongodb-js/explain-plan-helper's
``ExplainPlan``; mongodb-schema's ``parseSchema``).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from served_helpers import ROOT, mongosh_path, serve_in_thread, unavailable

HINT = "install them with tools/install_node_clients.sh (npm into .tools/node/) or set SCHEMA_LAB_NODE_MODULES"
SCRIPTS = ROOT / "tests" / "node"


def node_modules() -> Path | None:
    """The node_modules folder holding the clients: ``$SCHEMA_LAB_NODE_MODULES``, else .tools/node/node_modules."""
    env = os.environ.get("SCHEMA_LAB_NODE_MODULES", "").strip()
    path = Path(env) if env else ROOT / ".tools" / "node" / "node_modules"
    return path if (path / "mongodb" / "package.json").is_file() else None


def _need(*packages: str) -> Path:
    if shutil.which("node") is None:
        unavailable("node (Node.js >= 20.19) is not on PATH; " + HINT)
    modules = node_modules()
    missing = [p for p in packages if modules is None or not (modules / p / "package.json").is_file()]
    if missing:
        unavailable("the npm package(s) %s are not installed; %s" % (", ".join(missing), HINT))
    return modules


def _run_node(script: str, uri: str, modules: Path) -> dict:
    env = dict(os.environ, NODE_PATH=str(modules))
    proc = subprocess.run(["node", str(SCRIPTS / script), uri], capture_output=True, text=True, timeout=180,
                          env=env)
    assert proc.returncode == 0, "%s failed:\n%s\n%s" % (script, proc.stdout[-3000:], proc.stderr[-3000:])
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def server():
    with serve_in_thread() as srv:
        yield srv


def test_node_driver_and_mongoose_user(server):
    modules = _need("mongodb", "mongoose")
    got = _run_node("driver_and_mongoose.js", server.uri, modules)
    assert got["insertedCount"] == 3 and got["update"] == [1, 1] and got["deleted"] == 1
    assert got["findOneAndUpdate"] == {"_id": 3, "name": "cy", "age": 40, "vip": True}
    assert got["count"] == 2 and got["dupCode"] == 11000
    assert got["indexName"] == "age_1" and got["indexes"] == ["_id_", "age_1"]
    assert got["agg"] == [{"_id": None, "total": 57}]
    assert got["explainStage"] == "IXSCAN" and got["explainDocs"] == 2  # ages 31 and 26 are >= 26
    assert got["cursor"] == [250, 249]  # 250 documents in batches of 50: getMore until the cursor is exhausted
    assert got["afterTxn"] == [1, True]
    assert got["bulkWrite"] == [1, 1, 1, 1]  # inserted, upserted, deleted, the upsert's _id
    assert got["bulkWriteError"] == ["MongoClientBulkWriteError", [11000]]
    assert got["mongooseFind"] == [["three", 5, "object"], ["hello", 2, "object"]]  # timestamps are Dates
    assert got["mongooseValidation"] == "ValidationError"
    assert got["mongooseAgg"] == [{"_id": "ann", "votes": 7}, {"_id": "bob", "votes": 3}]
    assert got["mongooseIndexes"] == ["_id_", "author_1"] and got["mongooseCount"] == 4


def test_compass_libraries(server):
    modules = _need("mongodb-data-service", "@mongodb-js/explain-plan-helper", "mongodb-schema")
    got = _run_node("compass_libraries.js", server.direct_uri, modules)
    inst = got["instance"]
    assert inst["version"] == "8.0.0" and inst["isAtlas"] is False and inst["dataLake"] is False
    assert inst["genuine"] is True and inst["fcv"] == "8.0"
    assert {"admin", "config", "local", "compass_user"} <= set(got["listDatabases"])
    st = got["collectionStats"]
    assert st["count"] == 60 and st["indexes"] == 2 and st["size"] > 0 and st["indexSize"] > 0
    assert st["avg"] == st["size"] // 60
    assert got["currentOp"] == ["command"]  # the $currentOp aggregate itself
    assert got["top"] == sorted(["total", "readLock", "writeLock", "queries", "getmore", "insert", "update",
                                 "remove", "commands"])
    assert got["serverStatus"] == [1, "number"]
    assert got["explain"] == {"indexType": "INDEX", "usedIndexes": ["status_1"], "totalDocsExamined": 20,
                              "totalKeysExamined": 20, "nReturned": 20, "isCovered": False, "inMemorySort": False}
    assert got["schema"]["count"] == 20
    assert got["schema"]["fields"] == [["_id", ["Number"]], ["items", ["Array"]], ["status", ["String"]],
                                       ["total", ["Number"]]]
    assert got["indexes"] == [["_id_", "number"], ["status_1", "number"]] and got["dbStats"] == 1


MONGOSH_TOOLS = r'''
db = db.getSiblingDB("shell_user");
db.dropDatabase();
db.orders.insertMany([{_id: 1, s: "a"}, {_id: 2, s: "b"}, {_id: 3, s: "a"}]);
db.orders.createIndex({s: 1});
const v = db.orders.validate({full: true});
const st = db.orders.stats();
const op = db.currentOp();
const mine = op.inprog.filter((o) => o.active && o.command && o.command.aggregate === 1);
const dbs = db.adminCommand({listDatabases: 1}).databases.map((d) => d.name).sort();
db.getSiblingDB("shell_user").createCollection("cap", {capped: true, size: 4096});
const top = db.adminCommand({top: 1}).totals["shell_user.orders"];
const sessions = db.getSiblingDB("admin").aggregate([{$listLocalSessions: {allUsers: true}}]).toArray();
const bw = db.getMongo().bulkWrite([{namespace: "shell_user.orders", name: "insertOne", document: {_id: 4}},
                                    {namespace: "shell_user.orders", name: "deleteOne", filter: {_id: 1}}]);
print(JSON.stringify({valid: v.valid, nrecords: v.nrecords, keys: v.keysPerIndex, count: st.count,
                      nindexes: st.nindexes, ok: op.ok, mine: mine.length, ns: mine.length ? mine[0].ns : null,
                      dbs, topInsert: top.insert.count, sessions: sessions.length > 0,
                      bulk: [Number(bw.insertedCount), Number(bw.deletedCount)]}));
'''


def test_mongosh_helpers_for_server_commands(server, tmp_path):
    exe = mongosh_path()
    if exe is None:
        unavailable("mongosh not found; install it with tools/install_mongosh.sh or set SCHEMA_LAB_MONGOSH")
    env = dict(os.environ, HOME=str(tmp_path), MONGOSH_FORCE_DISABLE_TELEMETRY_FOR_TESTING="1", DO_NOT_TRACK="1")
    script = tmp_path / "tools.js"
    script.write_text(MONGOSH_TOOLS)
    proc = subprocess.run([exe, "--quiet", "--norc", server.direct_uri, str(script)], capture_output=True,
                          text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["valid"] is True and got["nrecords"] == 3 and got["keys"] == {"_id_": 3, "s_1": 3}
    assert got["count"] == 3 and got["nindexes"] == 2
    assert got["ok"] == 1 and got["mine"] == 1 and got["ns"] == "admin.$cmd.aggregate"
    assert {"admin", "config", "local", "shell_user"} <= set(got["dbs"])
    assert got["topInsert"] == 1 and got["sessions"] is True and got["bulk"] == [1, 1]
    # show dbs is listDatabases: the same names (mongosh prints them with their sizes)
    proc = subprocess.run([exe, "--quiet", "--norc", server.direct_uri, "--eval", "show dbs"], capture_output=True,
                          text=True, timeout=120, env=env)
    assert proc.returncode == 0 and all(n in proc.stdout for n in ("admin", "config", "local", "shell_user"))


def test_missing_node_clients_fail_under_ci(monkeypatch, tmp_path):
    monkeypatch.setenv("SCHEMA_LAB_NODE_MODULES", str(tmp_path))
    assert node_modules() is None
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI=true"):
        _need("mongodb")
    monkeypatch.setenv("CI", "")
    with pytest.raises(pytest.skip.Exception, match="install_node_clients"):
        _need("mongodb")
