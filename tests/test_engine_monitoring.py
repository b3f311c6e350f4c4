"""Command monitoring on the embedded engine: the events pymongo would publish for the same calls.

Sources: pymongo 4 source (``pymongo/message.py`` ``_gen_find_command`` / ``_gen_get_more_command``;
``pymongo/synchronous/collection.py`` ``find_one`` (``limit(-1)``), ``insert_one``/``_update``/``_delete``,
``count_documents`` (``$match`` [+ ``$skip``/``$limit``] + ``$group``); ``pymongo/synchronous/bulk.py`` (ordered
bulk writes: one command per run of one kind, unordered: one per kind)); the server's cursor batching
(manual "Cursors" > "Cursor Batches": the first batch of find/aggregate holds 101 documents, later batches up
to 16 MiB); write errors come back in an ``ok: 1`` reply (so pymongo publishes CommandSucceededEvent).
"""
from __future__ import annotations

import datetime

import pytest
from pymongo import monitoring
from pymongo.errors import DuplicateKeyError, OperationFailure
from pymongo.message import _gen_find_command
from pymongo.operations import DeleteOne, InsertOne, UpdateOne
from pymongo.read_concern import ReadConcern

import labkit
from labkit.engine import EmbeddedClient

DRIVER_FIELDS = ("lsid", "$db", "txnNumber", "autocommit", "startTransaction")


class Recorder(monitoring.CommandListener):
    def __init__(self) -> None:
        self.events: list = []

    def started(self, event) -> None:
        self.events.append(event)

    def succeeded(self, event) -> None:
        self.events.append(event)

    def failed(self, event) -> None:
        self.events.append(event)

    def started_cmds(self) -> list[dict]:
        return [e.command for e in self.events if isinstance(e, monitoring.CommandStartedEvent)]

    def names(self) -> list[str]:
        return [e.command_name for e in self.events if isinstance(e, monitoring.CommandStartedEvent)]

    def replies(self) -> list:
        return [e for e in self.events if not isinstance(e, monitoring.CommandStartedEvent)]


def bare(cmd: dict) -> dict:
    return {k: v for k, v in cmd.items() if k not in DRIVER_FIELDS}


@pytest.fixture
def rec():
    return Recorder()


@pytest.fixture
def coll(rec):
    client = EmbeddedClient(event_listeners=[rec])
    c = client.shop.posts
    c.insert_many([{"_id": i, "a": i % 10, "s": "x" * 10} for i in range(250)])
    rec.events.clear()
    return c


@pytest.mark.parametrize("kwargs", [
    {},
    {"projection": {"a": 1}, "skip": 5, "limit": 20},
    {"limit": -3},
    {"batch_size": 30},
    {"limit": 30, "batch_size": 30},  # pymongo sends batchSize 31 (avoids a killCursors)
])
def test_find_command_is_pymongos(coll, rec, kwargs):
    list(coll.find({"a": {"$gt": 2}}, **kwargs))
    first = rec.started_cmds()[0]
    expected = _gen_find_command("posts", {"a": {"$gt": 2}}, kwargs.get("projection"), kwargs.get("skip", 0),
                                 kwargs.get("limit", 0), kwargs.get("batch_size"), None, ReadConcern())
    assert bare(first) == expected
    assert first["$db"] == "shop" and "lsid" in first


def test_find_with_sort_and_hint(coll, rec):
    coll.create_index("a")
    rec.events.clear()
    list(coll.find({}).sort("a", -1).hint([("a", 1)]).limit(5))
    cmd = bare(rec.started_cmds()[0])
    assert cmd == {"find": "posts", "filter": {}, "sort": {"a": -1}, "limit": 5, "hint": {"a": 1}}


def test_find_one_sends_limit_1_single_batch(coll, rec):
    assert coll.find_one({"a": 3})["a"] == 3
    assert rec.names() == ["find"]
    assert bare(rec.started_cmds()[0]) == {"find": "posts", "filter": {"a": 3}, "limit": 1, "singleBatch": True}
    reply = rec.replies()[0].reply
    assert reply["cursor"]["id"] == 0 and len(reply["cursor"]["firstBatch"]) == 1 and reply["ok"] == 1.0


def test_getmore_batches_as_the_server(coll, rec):
    docs = list(coll.find())
    assert len(docs) == 250
    assert rec.names() == ["find", "getMore"]
    find_reply, more_reply = [e.reply for e in rec.replies()]
    assert len(find_reply["cursor"]["firstBatch"]) == 101
    cid = find_reply["cursor"]["id"]
    assert cid != 0
    getmore = rec.started_cmds()[1]
    assert bare(getmore) == {"getMore": cid, "collection": "posts"}
    assert len(more_reply["cursor"]["nextBatch"]) == 149 and more_reply["cursor"]["id"] == 0


def test_getmore_not_sent_before_the_first_batch_is_used(coll, rec):
    cur = coll.find()
    for _ in range(101):
        next(cur)
    assert rec.names() == ["find"]
    next(cur)
    assert rec.names() == ["find", "getMore"]


def test_batch_size_and_limit_batches(coll, rec):
    list(coll.find().batch_size(100))
    assert rec.names() == ["find", "getMore", "getMore"]
    assert [c.get("batchSize") for c in rec.started_cmds()] == [100, 100, 100]
    rec.events.clear()
    list(coll.find().limit(150))
    cmds = rec.started_cmds()
    assert [c.get("batchSize") for c in cmds] == [None, 49]  # pymongo asks for limit - retrieved
    assert len(rec.replies()[1].reply["cursor"]["nextBatch"]) == 49


def test_insert_many_is_one_insert(coll, rec):
    coll.insert_many([{"x": 1}, {"x": 2}, {"x": 3}])
    assert rec.names() == ["insert"]
    cmd = rec.started_cmds()[0]
    assert cmd["ordered"] is True and len(cmd["documents"]) == 3
    assert rec.replies()[0].reply == {"n": 3, "ok": 1.0}


def test_writes_and_replies(coll, rec):
    coll.insert_one({"_id": "n", "v": 1})
    coll.update_one({"_id": "n"}, {"$set": {"v": 2}})
    coll.update_many({"a": 1}, {"$inc": {"v": 1}}, upsert=True)
    coll.replace_one({"_id": "m"}, {"v": 0}, upsert=True)
    coll.delete_many({"a": 2})
    assert rec.names() == ["insert", "update", "update", "update", "delete"]
    cmds = [bare(c) for c in rec.started_cmds()]
    assert cmds[0] == {"insert": "posts", "ordered": True, "documents": [{"_id": "n", "v": 1}]}
    assert cmds[1] == {"update": "posts", "ordered": True,
                       "updates": [{"q": {"_id": "n"}, "u": {"$set": {"v": 2}}, "multi": False, "upsert": False}]}
    assert cmds[2]["updates"][0]["multi"] is True and cmds[2]["updates"][0]["upsert"] is True
    assert cmds[4] == {"delete": "posts", "ordered": True, "deletes": [{"q": {"a": 2}, "limit": 0}]}
    replies = [e.reply for e in rec.replies()]
    assert replies[1] == {"n": 1, "nModified": 1, "ok": 1.0}
    assert replies[2] == {"n": 25, "nModified": 25, "ok": 1.0}
    assert replies[3]["n"] == 1 and replies[3]["upserted"] == [{"index": 0, "_id": "m"}]
    assert replies[4] == {"n": 25, "ok": 1.0}


def test_bulk_write_batches_by_run(coll, rec):
    reqs = [InsertOne({"b": 1}), InsertOne({"b": 2}), UpdateOne({"b": 1}, {"$set": {"c": 1}}),
            InsertOne({"b": 3}), DeleteOne({"b": 2})]
    coll.bulk_write(reqs)
    assert rec.names() == ["insert", "update", "insert", "delete"]
    assert [len(c.get("documents", c.get("updates", c.get("deletes")))) for c in rec.started_cmds()] == [2, 1, 1, 1]
    rec.events.clear()
    coll.bulk_write([InsertOne({"b": 4}), UpdateOne({"b": 4}, {"$set": {"c": 1}}), InsertOne({"b": 5})],
                    ordered=False)
    assert rec.names() == ["insert", "update"]
    assert all(c["ordered"] is False for c in rec.started_cmds())


def test_count_documents_sends_aggregate(coll, rec):
    assert coll.count_documents({"a": 1}, skip=2, limit=10) == 10
    assert rec.names() == ["aggregate"]
    assert bare(rec.started_cmds()[0]) == {
        "aggregate": "posts", "cursor": {},
        "pipeline": [{"$match": {"a": 1}}, {"$skip": 2}, {"$limit": 10}, {"$group": {"_id": 1, "n": {"$sum": 1}}}]}
    assert rec.replies()[0].reply["cursor"]["firstBatch"] == [{"_id": 1, "n": 10}]


def test_other_commands(coll, rec):
    coll.estimated_document_count()
    coll.distinct("a", {"a": {"$lt": 3}})
    coll.create_index([("a", 1), ("s", -1)])
    coll.drop_index("a_1_s_-1")
    list(coll.aggregate([{"$match": {"a": 1}}]))
    coll.database.command("ping")
    coll.find_one_and_update({"_id": 1}, {"$set": {"z": 1}})
    assert rec.names() == ["count", "distinct", "createIndexes", "dropIndexes", "aggregate", "ping",
                           "findAndModify"]
    cmds = [bare(c) for c in rec.started_cmds()]
    assert cmds[1] == {"distinct": "posts", "key": "a", "query": {"a": {"$lt": 3}}}
    assert cmds[2] == {"createIndexes": "posts", "indexes": [{"key": {"a": 1, "s": -1}, "name": "a_1_s_-1"}]}
    assert cmds[3] == {"dropIndexes": "posts", "index": "a_1_s_-1"}
    assert cmds[4] == {"aggregate": "posts", "pipeline": [{"$match": {"a": 1}}], "cursor": {}}
    assert cmds[6] == {"findAndModify": "posts", "query": {"_id": 1}, "new": False, "update": {"$set": {"z": 1}},
                       "upsert": False}
    replies = [e.reply for e in rec.replies()]
    assert replies[0] == {"n": 250, "ok": 1.0}
    assert replies[1] == {"values": [0, 1, 2], "ok": 1.0}
    assert replies[6]["value"]["_id"] == 1 and replies[6]["lastErrorObject"] == {"n": 1, "updatedExisting": True}


def test_event_metadata(coll, rec):
    coll.find_one({})
    started, done = rec.events
    assert started.database_name == "shop" and done.database_name == "shop"
    assert started.request_id == done.request_id and started.operation_id == started.request_id
    assert isinstance(done.duration_micros, int) and done.duration_micros >= 0
    assert started.connection_id == done.connection_id
    coll.find_one({})
    assert rec.events[2].request_id != started.request_id


def test_write_error_is_a_succeeded_reply_with_write_errors(coll, rec):
    with pytest.raises(DuplicateKeyError):
        coll.insert_one({"_id": 1})
    ev = rec.replies()[0]
    assert isinstance(ev, monitoring.CommandSucceededEvent)
    assert ev.reply["ok"] == 1.0 and ev.reply["writeErrors"][0]["code"] == 11000


def test_command_error_is_a_failed_event(coll, rec):
    with pytest.raises(OperationFailure) as ei:
        list(coll.find({"a": {"$bogus": 1}}))
    ev = rec.replies()[0]
    assert isinstance(ev, monitoring.CommandFailedEvent)
    assert ev.command_name == "find" and ev.failure["code"] == ei.value.code and ev.failure["ok"] == 0.0


def test_transaction_fields(rec):
    client = EmbeddedClient(event_listeners=[rec])
    c = client.shop.posts
    c.insert_one({"_id": 0})
    rec.events.clear()
    with client.start_session() as s:
        lsid = s.session_id
        with s.start_transaction():
            c.insert_one({"_id": 1}, session=s)
            c.update_one({"_id": 0}, {"$set": {"x": 1}}, session=s)
    cmds = rec.started_cmds()
    assert [next(iter(c)) for c in cmds] == ["insert", "update", "commitTransaction"]
    assert cmds[0]["startTransaction"] is True and cmds[0]["autocommit"] is False
    assert "startTransaction" not in cmds[1] and cmds[1]["txnNumber"] == cmds[0]["txnNumber"]
    assert cmds[2]["$db"] == "admin" and cmds[0]["lsid"] == cmds[2]["lsid"] == lsid


def test_connect_event_listeners_and_global_register(rec):
    client = labkit.connect("embedded", event_listeners=[rec])
    client.monitoring_test.c.insert_one({"x": 1})
    assert rec.names() == ["insert"]
    assert labkit.connect("embedded").monitoring_test.c.count_documents({}) == 1  # one store
    glob = Recorder()
    monitoring.register(glob)
    try:
        EmbeddedClient().t.c.insert_one({"y": 1})
    finally:
        monitoring._LISTENERS.command_listeners.remove(glob)
    assert glob.names() == ["insert"]
    labkit.connect("embedded").drop_database("monitoring_test")


def test_no_listener_no_events_and_listener_errors_are_contained():
    class Boom(monitoring.CommandListener):
        def started(self, e):
            raise RuntimeError("listener bug")

        def succeeded(self, e):
            raise RuntimeError("listener bug")

        def failed(self, e):
            pass

    c = EmbeddedClient(event_listeners=[Boom()]).t.c
    c.insert_one({"x": 1})  # a listener's error never breaks the operation (as pymongo)
    assert c.count_documents({}) == 1
    with pytest.raises(TypeError):
        EmbeddedClient(event_listeners=[object()])


def test_duration_is_a_timedelta(coll, rec):
    coll.count_documents({})
    assert isinstance(rec.replies()[0].duration_micros, int)
    assert isinstance(datetime.timedelta(microseconds=rec.replies()[0].duration_micros), datetime.timedelta)


def test_closing_an_open_cursor_sends_kill_cursors(coll, rec):
    # pymongo/synchronous/cursor.py: close() of a cursor with a live server id sends killCursors
    cur = coll.find()
    next(cur)
    cid = rec.replies()[0].reply["cursor"]["id"]
    cur.close()
    assert rec.names() == ["find", "killCursors"]
    assert bare(rec.started_cmds()[1]) == {"killCursors": "posts", "cursors": [cid]}
    rec.events.clear()
    with coll.find().limit(3) as c:  # exhausted in the first batch: nothing to kill
        list(c)
    assert rec.names() == ["find"]


def test_cursor_explain_sends_explain_command(coll, rec):
    # pymongo's Cursor.explain(): {"explain": <the find command>, "verbosity": ...}
    coll.find({"a": 1}).limit(2).explain()
    assert rec.names() == ["explain"]
    cmd = rec.started_cmds()[0]
    assert bare(cmd["explain"]) == {"find": "posts", "filter": {"a": 1}, "limit": 2}
    assert rec.replies()[0].reply["queryPlanner"]["namespace"] == "shop.posts"
