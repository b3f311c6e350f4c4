"""The Node.js driver (the ``mongodb`` npm package installed with mongosh by tools/install_mongosh.sh) against the
served engine: ``FindCursor.returnKey(true)`` / ``showRecordId(true)`` and ``listCollections``'s ``info.uuid``.

Facts from MongoDB: the cursor.returnKey() / cursor.showRecordId() manual pages and jstests/core/query/return_key.js
(the index keys of the plan's index; ``$recordId`` appended, 1, 2, 3 in insertion order); list_collections.cpp
(``info: {readOnly: false, uuid}``, kept by a rename). Locally skipped when the driver or node is missing; under
CI=true a failure.
"""
from __future__ import annotations

import json
import subprocess

from served_helpers import node_modules, serve_in_thread


def test_node_driver_return_key_show_record_id_and_uuid():
    js = r'''
    const { MongoClient } = require("mongodb");
    (async () => {
      const client = new MongoClient(process.argv[1]);
      const db = client.db("nodeflags");
      const c = db.collection("c");
      await c.insertMany([{a: 3}, {a: 1}, {a: 2}]);
      await c.createIndex({a: 1});
      const keys = await c.find({a: {$gte: 2}}).sort({a: 1}).returnKey(true).toArray();
      const rids = (await c.find({}, {projection: {_id: 0}}).showRecordId(true).toArray()).map(d => d.$recordId);
      const before = (await db.listCollections({name: "c"}).toArray())[0].info;
      await db.renameCollection("c", "d");
      const after = (await db.listCollections({name: "d"}).toArray())[0].info;
      console.log(JSON.stringify({keys, rids: rids.map(r => [typeof r, String(r)]),
                                  readOnly: before.readOnly, uuidKind: before.uuid && before.uuid.constructor.name,
                                  same: before.uuid.toString("hex") === after.uuid.toString("hex")}));
      await client.close();
    })().catch(e => { console.error(e); process.exit(1); });
    '''
    with serve_in_thread() as srv:
        out = subprocess.run(["node", "-e", js, srv.uri], capture_output=True, text=True, timeout=120,
                             env={"NODE_PATH": str(node_modules()), "PATH": "/usr/bin:/bin:/usr/local/bin"})
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["keys"] == [{"a": 2}, {"a": 3}]
    assert got["rids"] == [["number", "1"], ["number", "2"], ["number", "3"]]  # an int64 the driver promotes
    assert got["readOnly"] is False and got["uuidKind"] in ("UUID", "Binary") and got["same"] is True
