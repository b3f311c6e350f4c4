"""Transactions, snapshot reads and write concerns of the served engine seen by the Node.js driver (the ``mongodb``
npm package installed with mongosh by tools/install_mongosh.sh) and by mongosh: what a replica-set member answers
them (manual "Transactions", "Production Considerations: In-progress Transactions and Write Conflicts", "Read
Concern "snapshot"", "Write Concern"; the driver specification transactions-convenient-api: withTransaction
retries a TransientTransactionError). Locally skipped when they are missing; under CI=true a failure."""
from __future__ import annotations

import json
import subprocess

from served_helpers import mongosh_path, node_modules, serve_in_thread, unavailable


def _node(js: str, uri: str) -> dict:
    out = subprocess.run(["node", "-e", js, uri], capture_output=True, text=True, timeout=120,
                         env={"NODE_PATH": str(node_modules()), "PATH": "/usr/bin:/bin:/usr/local/bin"})
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_node_driver_transactions_conflicts_and_snapshot_reads():
    js = r'''
    const { MongoClient } = require("mongodb");
    (async () => {
      const client = new MongoClient(process.argv[1]);
      const c = client.db("nodetxn").collection("c");
      await c.insertOne({_id: 1, n: 0});
      const s1 = client.startSession(), s2 = client.startSession();
      s1.startTransaction(); s2.startTransaction();
      await c.updateOne({_id: 1}, {$inc: {n: 1}}, {session: s1});
      let conflict = null;
      try { await c.updateOne({_id: 1}, {$inc: {n: 1}}, {session: s2}); }
      catch (e) { conflict = {code: e.code, transient: e.hasErrorLabel("TransientTransactionError")}; }
      await s2.abortTransaction();
      await s1.commitTransaction();
      let attempts = 0;
      await s2.withTransaction(async () => {
        attempts++;
        await c.findOne({_id: 1}, {session: s2});
        if (attempts === 1) await c.updateOne({_id: 1}, {$inc: {n: 100}});
        await c.updateOne({_id: 1}, {$inc: {n: 1}}, {session: s2});
      });
      const snap = client.startSession({snapshot: true});
      const before = await c.find({}, {session: snap}).toArray();
      await c.insertOne({_id: 2});
      const after = await c.find({}, {session: snap}).toArray();
      let wce = null;
      try { await c.insertOne({_id: 3}, {writeConcern: {w: 2}}); }
      catch (e) { wce = {code: e.code, name: e.name}; }
      const n = (await c.findOne({_id: 1})).n;
      const ids = (await c.find({}).toArray()).map(d => d._id);
      console.log(JSON.stringify({conflict, attempts, n, before: before.length, after: after.length, wce, ids}));
      await client.close();
    })().catch(e => { console.error(e); process.exit(1); });
    '''
    with serve_in_thread() as server:
        got = _node(js, server.direct_uri)
    assert got["conflict"] == {"code": 112, "transient": True}
    assert got["attempts"] == 2 and got["n"] == 102
    assert got["before"] == 1 and got["after"] == 1
    assert got["wce"]["code"] == 100 and got["ids"] == [1, 2, 3]


def test_mongosh_transaction_with_a_collection_created_in_it():
    """mongosh's session API: a collection created inside the transaction exists after the commit only."""
    path = mongosh_path()
    if path is None:
        unavailable("mongosh is not installed (tools/install_mongosh.sh)")
    js = r'''
    const s = db.getMongo().startSession();
    const sdb = s.getDatabase("shtxn");
    s.startTransaction();
    sdb.createCollection("made");
    sdb.made.insertOne({_id: 1});
    const inside = db.getSiblingDB("shtxn").getCollectionNames().includes("made");
    s.commitTransaction();
    print(EJSON.stringify({inside, after: db.getSiblingDB("shtxn").made.countDocuments({})}));
    '''
    with serve_in_thread() as server:
        out = subprocess.run([path, server.direct_uri, "--quiet", "--eval", js], capture_output=True, text=True,
                             timeout=120)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got == {"inside": False, "after": 1}
