"""Change streams of the served engine seen by real clients: mongosh's ``db.coll.watch()`` and the Node.js driver's
``collection.watch()`` (both installed by tools/install_mongosh.sh into .tools/: the Node.js driver is mongosh's own
``mongodb`` package). They send ``aggregate`` with ``$changeStream`` and awaitData ``getMore``s
(the driver specification change-streams/change-streams.md); the events' shape is the manual's "Change Events".
Locally skipped when mongosh is missing; under CI=true a missing mongosh fails (served_helpers.unavailable)."""
from __future__ import annotations

import json
import os
import subprocess

from served_helpers import mongosh_path, node_modules, serve_in_thread, unavailable


def _mongosh() -> str:
    path = mongosh_path()
    if path is None:
        unavailable("mongosh is not installed (tools/install_mongosh.sh)")
    return path


def test_mongosh_watch_sees_inserts_and_updates():
    js = r'''
    const cs = db.c.watch([{$match: {operationType: {$in: ["insert", "update"]}}}], {maxAwaitTimeMS: 100});
    db.c.insertOne({_id: 1, a: 1});
    db.c.updateOne({_id: 1}, {$set: {a: 2}});
    db.c.deleteOne({_id: 1});
    const a = cs.next(); const b = cs.next();
    print(EJSON.stringify({a: [a.operationType, a.fullDocument, a.ns], b: [b.operationType, b.updateDescription],
                           more: cs.tryNext(), token: typeof cs.getResumeToken()._data}));
    cs.close();
    '''
    with serve_in_thread() as server:
        out = subprocess.run([_mongosh(), server.direct_uri + "&appName=cs", "--quiet", "--eval", js],
                             capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["a"] == ["insert", {"_id": 1, "a": 1}, {"db": "test", "coll": "c"}]
    assert got["b"] == ["update", {"updatedFields": {"a": 2}, "removedFields": [], "truncatedArrays": []}]
    assert got["more"] is None and got["token"] == "string"


def test_node_driver_watch_gets_an_event_written_by_another_connection():
    js = r'''
    const { MongoClient } = require("mongodb");
    (async () => {
      const client = new MongoClient(process.argv[1]);
      const other = new MongoClient(process.argv[1]);
      await client.connect(); await other.connect();
      const coll = client.db("nd").collection("c");
      const cs = coll.watch([], { fullDocument: "updateLookup", maxAwaitTimeMS: 100 });
      const got = [];
      cs.on("change", (ev) => got.push(ev));
      await new Promise((r) => setTimeout(r, 300));
      await coll.insertOne({ _id: 1, a: 1 });
      await other.db("nd").collection("c").updateOne({ _id: 1 }, { $set: { a: 2 } });
      // updateLookup reads the document when the event is returned, not when it was written (manual: Change
      // Streams, "Lookup Full Document for Update Operations"): delete it only once the update event is here,
      // else its fullDocument is null, as on any server
      const until = async (n) => {
        const t0 = Date.now();
        while (got.length < n && Date.now() - t0 < 10000) await new Promise((r) => setTimeout(r, 20));
      };
      await until(2);
      await other.db("nd").collection("c").deleteOne({ _id: 1 });
      await until(3);
      console.log(JSON.stringify({ events: got.map((e) => [e.operationType, e.fullDocument ?? "absent"]),
                                   token: typeof cs.resumeToken._data }));
      await cs.close(); await other.close(); await client.close();
    })().catch((e) => { console.error(e); process.exit(1); });
    '''
    env = dict(os.environ, NODE_PATH=str(node_modules()))
    with serve_in_thread() as server:
        out = subprocess.run(["node", "-e", js, server.uri], capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["events"] == [["insert", {"_id": 1, "a": 1}], ["update", {"_id": 1, "a": 2}], ["delete", "absent"]]
    assert got["token"] == "string"
