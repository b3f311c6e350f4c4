"""Tailable cursors on capped collections, in-process (pymongo's API on the embedded client, and the find/getMore
commands through ``Database.command``) and over the wire (pymongo against ``serve_in_thread()``).

The facts, each test naming its own: manual "Tailable Cursors" (a tailable cursor stays open after the last
document and later returns documents inserted after it, in insertion order; it dies when the document it would
resume after is deleted); jstests/core/tailable_skip_limit.js, jstests/core/tailable_cursor_invalidation.js,
jstests/core/captrunc_cursor_invalidation.js (CappedPositionLost 136, then CursorNotFound 43),
jstests/core/awaitdata_getmore_cmd.js (awaitData getMores wait for a matching insert, a non-matching one does not
end the wait; the cursor stays open after an empty batch); src/mongo/db/query/tailable_mode.cpp and
query_request_helper.cpp (option errors), src/mongo/db/query/find.cpp ``shouldSaveCursor`` (no cursor on an
empty collection), src/mongo/db/exec/requires_collection_stage.cpp (QueryPlanKilled 175 after a drop),
src/mongo/db/commands/getmore_cmd.cpp (maxTimeMS only on awaitData getMores; 1 second default wait).
Waits are checked by what comes back (an insert made by another thread during the wait), never by timing."""
from __future__ import annotations

import json
import re
import subprocess
import threading
import time

import pytest
from pymongo import CursorType
from pymongo.errors import OperationFailure

from labkit.engine import EmbeddedClient

from both_paths import client, server  # noqa: F401 - the fixtures: every test below runs both ways


@pytest.fixture
def cl(client):
    """``client`` (both_paths: in-process, and pymongo on the served engine shared by this module) with the
    test database emptied."""
    client.drop_database("t")
    return client


def _capped(db, name="cap", n=0, **opts):
    db.create_collection(name, capped=True, size=opts.pop("size", 100_000), **opts)
    if n:
        db[name].insert_many([{"_id": i} for i in range(n)])
    return db[name]


def _ids(docs):
    return [d["_id"] for d in docs]


def _insert_later(coll, docs, delay=0.2):
    def run():
        time.sleep(delay)
        for d in docs:
            coll.insert_one(d)
    t = threading.Thread(target=run)
    t.start()
    return t


# ---------------------------------------------------------------------------------------------- pymongo's API
def test_tailable_cursor_returns_later_inserts_in_insertion_order(cl):
    # manual "Tailable Cursors": iteration stops at the end, the cursor stays alive, later inserts come next
    coll = _capped(cl.t, n=3)
    cur = coll.find(cursor_type=CursorType.TAILABLE)
    assert _ids(cur) == [0, 1, 2]
    assert cur.alive and cur.cursor_id
    assert _ids(cur) == []  # an empty getMore keeps the cursor open
    assert cur.alive
    coll.insert_many([{"_id": 5}, {"_id": 3}, {"_id": 4}])
    assert _ids(cur) == [5, 3, 4]  # insertion (natural) order, not _id order
    assert cur.alive
    cur.close()
    assert not cur.alive


def test_tailable_await_cursor_is_woken_by_an_insert_from_another_thread(cl):
    # awaitdata_getmore_cmd.js: the waiting getMore returns the inserted document (no change stream is open)
    coll = _capped(cl.t, n=2)
    cur = coll.find(cursor_type=CursorType.TAILABLE_AWAIT).max_await_time_ms(30_000)
    assert _ids([next(cur), next(cur)]) == [0, 1]
    t = _insert_later(coll, [{"_id": 2}])
    assert next(cur)["_id"] == 2  # not a StopIteration after 30 s: the insert woke the getMore
    t.join()
    assert cur.alive


def test_tailable_cursor_filter_projection_skip_and_limit(cl):
    # tailable_skip_limit.js: skip and limit apply to the cursor as a whole
    coll = _capped(cl.t, n=5)
    cur = coll.find({}, cursor_type=CursorType.TAILABLE).skip(4)
    assert _ids(cur) == [4]
    coll.insert_one({"_id": 5})
    assert _ids(cur) == [5]
    cur = coll.find({}, cursor_type=CursorType.TAILABLE).limit(100)
    assert _ids(cur) == [0, 1, 2, 3, 4, 5]
    coll.insert_one({"_id": 6})
    assert _ids(cur) == [6]
    cur = coll.find({"x": 1}, {"_id": 0, "y": 1}, cursor_type=CursorType.TAILABLE)
    assert list(cur) == [] and cur.alive  # the collection has records: the cursor is kept (find.cpp)
    coll.insert_many([{"_id": 7, "x": 0, "y": "no"}, {"_id": 8, "x": 1, "y": "yes"}])
    assert list(cur) == [{"y": "yes"}]
    # a negative limit is a single batch, which a tailable cursor refuses (query_request_helper.cpp)
    with pytest.raises(OperationFailure) as e:
        list(coll.find(cursor_type=CursorType.TAILABLE).limit(-1))
    assert e.value.code == 2 and "singleBatch" in str(e.value)


def test_no_cursor_on_an_empty_or_missing_collection(cl):
    # find.cpp shouldSaveCursor; tailable_cursor_invalidation.js: cursor id 0 on a missing collection
    _capped(cl.t, "empty")
    for name in ("empty", "missing"):
        cur = cl.t[name].find(cursor_type=CursorType.TAILABLE_AWAIT)
        assert list(cur) == []
        assert not cur.alive and cur.cursor_id == 0
        reply = cl.t.command({"find": name, "tailable": True, "awaitData": True})
        assert reply["cursor"]["id"] == 0 and reply["cursor"]["firstBatch"] == []


def test_tailable_option_errors(cl):
    db = cl.t
    db.plain.insert_many([{"a": i} for i in range(3)])
    _capped(db, n=2)
    # awaitdata_getmore_cmd.js / tailable_mode.cpp / query_request_helper.cpp
    cases = [({"find": "plain", "tailable": True}, 2, "non capped"),
             ({"find": "plain", "tailable": True, "awaitData": True}, 2, "non capped"),
             ({"find": "cap", "awaitData": True}, 9, "Cannot set 'awaitData' without also setting 'tailable'"),
             ({"find": "cap", "tailable": True, "sort": {"_id": 1}}, 2, "sort other than {$natural: 1}"),
             ({"find": "cap", "tailable": True, "singleBatch": True}, 2, "'singleBatch' option")]
    for cmd, code, words in cases:
        with pytest.raises(OperationFailure) as e:
            db.command(cmd)
        assert e.value.code == code and words in str(e.value), cmd
    # a view: the find runs as an aggregation (query_request_helper.cpp asAggregationCommand), after the find's checks
    db.create_collection("v", viewOn="cap", pipeline=[])
    _fails_with = [({"find": "v", "tailable": True}, 168), ({"find": "v", "awaitData": True}, 9)]
    for cmd, code in _fails_with:
        with pytest.raises(OperationFailure) as e:
            db.command(cmd)
        assert e.value.code == code, cmd
    with pytest.raises(OperationFailure) as e:
        list(db.v.find(cursor_type=CursorType.TAILABLE))
    assert e.value.code == 168
    # {$natural: 1} is the one sort allowed
    assert _ids(db.command({"find": "cap", "tailable": True, "sort": {"$natural": 1}})["cursor"]["firstBatch"]) \
        == [0, 1]
    with pytest.raises(OperationFailure) as e:
        list(db.plain.find(cursor_type=CursorType.TAILABLE))
    assert e.value.code == 2
    with pytest.raises(ValueError):
        db.cap.find(cursor_type=99)  # pymongo's own check, before anything is sent


# ---------------------------------------------------------------------------------------------- the commands
def test_getmore_returns_new_documents_and_keeps_the_cursor_open(cl):
    db = cl.t
    _capped(db, n=4)
    r = db.command({"find": "cap", "tailable": True, "batchSize": 3})
    cid = r["cursor"]["id"]
    assert _ids(r["cursor"]["firstBatch"]) == [0, 1, 2] and cid != 0 and r["cursor"]["ns"] == "t.cap"
    r = db.command({"getMore": cid, "collection": "cap"})
    assert _ids(r["cursor"]["nextBatch"]) == [3] and r["cursor"]["id"] == cid
    r = db.command({"getMore": cid, "collection": "cap"})
    assert r["cursor"]["nextBatch"] == [] and r["cursor"]["id"] == cid  # empty batch, still open
    db.cap.insert_many([{"_id": 10}, {"_id": 11}, {"_id": 12}])
    r = db.command({"getMore": cid, "collection": "cap", "batchSize": 2})
    assert _ids(r["cursor"]["nextBatch"]) == [10, 11]
    r = db.command({"getMore": cid, "collection": "cap"})
    assert _ids(r["cursor"]["nextBatch"]) == [12]
    # getmore_cmd.cpp: maxTimeMS belongs to awaitData getMores only
    with pytest.raises(OperationFailure) as e:
        db.command({"getMore": cid, "collection": "cap", "maxTimeMS": 100})
    assert e.value.code == 2 and "non-awaitData" in str(e.value)


def test_await_data_getmore_waits_for_a_matching_insert(cl):
    # awaitdata_getmore_cmd.js: a non-matching insert does not end the wait, a matching one does
    db = cl.t
    coll = _capped(db, n=3)
    r = db.command({"find": "cap", "filter": {"x": 1}, "tailable": True, "awaitData": True})
    cid = r["cursor"]["id"]
    assert r["cursor"]["firstBatch"] == [] and cid != 0
    t = _insert_later(coll, [{"_id": "no match", "x": 0}, {"_id": "match", "x": 1}])
    r = db.command({"getMore": cid, "collection": "cap", "maxTimeMS": 30_000})
    t.join()
    assert r["cursor"]["nextBatch"] == [{"_id": "match", "x": 1}] and r["cursor"]["id"] == cid
    # with nothing inserted the awaitData getMore ends with an empty batch and the cursor open
    r = db.command({"getMore": cid, "collection": "cap", "maxTimeMS": 50})
    assert r["cursor"]["nextBatch"] == [] and r["cursor"]["id"] == cid


def test_capped_position_lost_when_the_last_document_is_overwritten(cl):
    # captrunc_cursor_invalidation.js and the manual: the cursor dies with CappedPositionLost, then is gone (43)
    db = cl.t
    _capped(db, n=4, max=4)
    r = db.command({"find": "cap", "tailable": True})
    cid = r["cursor"]["id"]
    assert len(r["cursor"]["firstBatch"]) == 4
    db.cap.insert_many([{"_id": i} for i in range(4, 8)])  # max 4: every document read so far goes
    with pytest.raises(OperationFailure) as e:
        db.command({"getMore": cid, "collection": "cap"})
    assert e.value.code == 136 and "position in capped collection being deleted" in str(e.value)
    with pytest.raises(OperationFailure) as e:
        db.command({"getMore": cid, "collection": "cap"})
    assert e.value.code == 43
    # pymongo's cursor ends quietly on CappedPositionLost ("the capped collection rolled over", pymongo's
    # cursor_shared.py _CURSOR_CLOSED_ERRORS): iteration stops and alive turns False
    cur = db.cap.find(cursor_type=CursorType.TAILABLE)
    assert _ids(cur) == [4, 5, 6, 7] and cur.alive
    db.cap.delete_one({"_id": 7})  # deletes are allowed on capped collections (5.0+): the position is gone too
    db.cap.insert_one({"_id": 8})
    assert list(cur) == []
    assert not cur.alive


def test_an_overwrite_that_keeps_the_last_document_is_no_loss(cl):
    db = cl.t
    _capped(db, n=4, max=4)
    cur = db.cap.find(cursor_type=CursorType.TAILABLE)
    assert _ids(cur) == [0, 1, 2, 3]
    db.cap.insert_many([{"_id": 4}, {"_id": 5}])  # 0 and 1 go; 3, the cursor's position, stays
    assert _ids(cur) == [4, 5]


def test_drop_kills_the_tailable_cursor(cl):
    # tailable_cursor_invalidation.js: getMore after a drop (and re-create) is QueryPlanKilled (175)
    db = cl.t
    for await_data in (False, True):
        _capped(db, n=4)
        r = db.command({"find": "cap", "tailable": True, "awaitData": await_data})
        cid = r["cursor"]["id"]
        db.drop_collection("cap")
        _capped(db, n=4)
        with pytest.raises(OperationFailure) as e:
            db.command({"getMore": cid, "collection": "cap"})
        # requires_collection_stage.cpp: "collection dropped. UUID <the dropped collection's UUID>"
        assert e.value.code == 175
        assert re.search(r"collection dropped\. UUID [0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$",
                         e.value.details["errmsg"]), e.value.details["errmsg"]
        db.drop_collection("cap")


def test_tailable_cursor_shows_in_current_op(cl):
    # currentop_cursors.js: idle cursors report tailable / awaitData
    db = cl.t
    _capped(db, n=2)
    r = db.command({"find": "cap", "tailable": True, "awaitData": True, "batchSize": 1})
    ops = list(cl.admin.aggregate([{"$currentOp": {"idleCursors": True}},
                                       {"$match": {"type": "idleCursor"}}]))
    mine = [o for o in ops if o["cursor"]["cursorId"] == r["cursor"]["id"]]
    if not isinstance(cl, EmbeddedClient):  # served: the cursor is in the server's registry
        assert mine
    for op in mine:
        assert op["cursor"]["tailable"] is True and op["cursor"]["awaitData"] is True


# ---------------------------------------------------------------------------------------------- mongosh
def test_mongosh_tailable_cursor_over_the_wire(server):
    from served_helpers import mongosh_path, unavailable
    path = mongosh_path()
    if path is None:
        unavailable("mongosh is not installed (tools/install_mongosh.sh)")
    js = r'''
    db.dropDatabase();
    db.createCollection("cap", {capped: true, size: 100000});
    db.cap.insertMany([{_id: 0}, {_id: 1}]);
    const cur = db.cap.find().tailable({awaitData: true}).maxAwaitTimeMS(50);
    const first = [cur.next()._id, cur.next()._id];
    const more = cur.tryNext();
    db.cap.insertOne({_id: 2});
    const after = cur.tryNext();
    print(EJSON.stringify({first, more, after, closed: cur.isClosed()}));
    '''
    out = subprocess.run([path, server.direct_uri, "--quiet", "--eval", js], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got == {"first": [0, 1], "more": None, "after": {"_id": 2}, "closed": False}


def test_in_process_command_monitoring_of_a_tailable_cursor():
    # the events pymongo publishes for a tailable cursor against a server: find with tailable/awaitData and an
    # open cursor id, one getMore per refresh (maxTimeMS from max_await_time_ms, the await inside it), then
    # killCursors on close (pymongo's message._gen_find_command / _GetMore; the driver's command monitoring)
    from pymongo import monitoring

    class Events(monitoring.CommandListener):
        def __init__(self):
            self.started_events, self.replies = [], []

        def started(self, e):
            self.started_events.append(e.command)

        def succeeded(self, e):
            self.replies.append((e.command_name, e.reply))

        def failed(self, e):
            self.replies.append((e.command_name, e.failure))

    ev = Events()
    engine = EmbeddedClient(event_listeners=[ev])
    coll = _capped(engine.t, n=2)
    cur = coll.find(cursor_type=CursorType.TAILABLE_AWAIT).max_await_time_ms(20)
    assert _ids(cur) == [0, 1]
    find = next(c for c in ev.started_events if "find" in c)
    assert find["tailable"] is True and find["awaitData"] is True
    find_reply = next(r for n, r in ev.replies if n == "find")
    cid = find_reply["cursor"]["id"]
    assert cid != 0 and cid == cur.cursor_id
    more = [c for c in ev.started_events if "getMore" in c]
    assert len(more) == 1 and more[0]["getMore"] == cid and more[0]["maxTimeMS"] == 20
    assert [r["cursor"]["nextBatch"] for n, r in ev.replies if n == "getMore"] == [[]]
    cur.close()
    kill = [c for c in ev.started_events if "killCursors" in c]
    assert kill and kill[0]["cursors"] == [cid]


def test_node_driver_tailable_await_cursor_over_the_wire(server):
    # the Node.js driver's find({}, {tailable: true, awaitData: true}) (mongosh's own `mongodb` package): it
    # reads the collection, waits in awaitData getMores, and gets the document another connection inserts
    import os
    import shutil
    from pathlib import Path

    from served_helpers import mongosh_path, unavailable
    path = mongosh_path()
    if path is None or shutil.which("node") is None:
        unavailable("mongosh (and with it the Node.js driver) or node is not installed (tools/install_mongosh.sh)")
    modules = Path(path).parent.parent
    if not (modules / "mongodb" / "package.json").is_file():
        unavailable("the Node.js driver (npm package mongodb) is not next to mongosh in %s" % modules)
    js = r'''
    const { MongoClient } = require("mongodb");
    (async () => {
      const client = new MongoClient(process.argv[1]);
      const other = new MongoClient(process.argv[1]);
      await client.connect(); await other.connect();
      const db = client.db("nt");
      await db.dropDatabase();
      await db.createCollection("cap", { capped: true, size: 100000 });
      await db.collection("cap").insertMany([{ _id: 0 }, { _id: 1 }]);
      const cur = db.collection("cap").find({}, { tailable: true, awaitData: true, maxAwaitTimeMS: 5000 });
      const got = [(await cur.next())._id, (await cur.next())._id];
      // the insert's own reply may come after the cursor's getMore (the insert wakes it): awaited before closing
      const inserted = new Promise((r) => setTimeout(r, 300)).then(
        () => other.db("nt").collection("cap").insertOne({ _id: 2 }));
      got.push((await cur.next())._id);
      await inserted;
      console.log(JSON.stringify({ got, closed: cur.closed, id: cur.id ? "open" : "none" }));
      await cur.close(); await other.close(); await client.close();
    })().catch((e) => { console.error(e); process.exit(1); });
    '''
    env = dict(os.environ, NODE_PATH=str(modules))
    out = subprocess.run(["node", "-e", js, server.uri], capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.strip().splitlines()[-1]) == {"got": [0, 1, 2], "closed": False, "id": "open"}
