"""The database profiler: the ``profile`` command and ``system.profile`` entries with the server's fields.

Sources: MongoDB manual "profile" (command reference: the reply holds the *previous* level as ``was`` plus
``slowms`` and ``sampleRate``; ``profile: -1`` reads the settings; a ``filter`` replaces slowms/sampleRate),
"Database Profiler" (levels 0, 1, 2; ``system.profile`` is a capped collection) and "Database Profiler
Output" (``op`` query/getmore/insert/update/remove/command, ``ns``, ``command``, ``keysExamined``,
``docsExamined``, ``nreturned``, ``planSummary``, ``hasSortStage``, ``ninserted``, ``nMatched``, ``nModified``,
``ndeleted``, ``keysInserted``, ``millis``, ``ts``, ``responseLength``, ``numYield``, ``client``, ``appName``,
``user``). The figures are compared with explain("executionStats") of the same queries.
"""
from __future__ import annotations

import datetime

import pytest
from pymongo.errors import OperationFailure

from labkit.engine import EmbeddedClient
from labkit.engine.stats import profiler


@pytest.fixture
def db():
    d = EmbeddedClient(appname="lesson-38").blog
    d.posts.insert_many([{"_id": i, "authorId": i % 20, "createdAt": i, "tags": ["t%d" % (i % 3)]}
                         for i in range(400)])
    d.posts.create_index([("authorId", 1), ("createdAt", -1)])
    return d


def entries(db, **flt):
    return list(db["system.profile"].find(flt))


def test_profile_command_replies_previous_settings(db):
    assert db.command("profile", -1) == {"was": 0, "slowms": 100, "sampleRate": 1.0, "ok": 1.0}
    assert db.command("profile", 1, slowms=0) == {"was": 0, "slowms": 100, "sampleRate": 1.0, "ok": 1.0}
    assert db.command({"profile": -1}) == {"was": 1, "slowms": 0, "sampleRate": 1.0, "ok": 1.0}
    out = db.command("profile", 1, filter={"op": "query"})
    assert out["was"] == 1
    after = db.command("profile", 0)
    assert after["filter"] == {"op": "query"} and "note" in after
    assert db.command("profile", -1)["was"] == 0


@pytest.mark.parametrize("bad", [3, "2", True])
def test_profile_level_must_be_valid(db, bad):
    with pytest.raises(OperationFailure) as ei:
        db.command("profile", bad)
    assert ei.value.code == 2


def test_sample_rate_range(db):
    with pytest.raises(OperationFailure):
        db.command("profile", 1, sampleRate=1.5)


def test_level_0_records_nothing(db):
    list(db.posts.find({"authorId": 3}))
    assert entries(db) == []


def test_query_entry_matches_explain(db):
    db.command("profile", 2)
    q = {"authorId": 7, "createdAt": {"$gte": 100}}
    docs = list(db.posts.find(q).sort("createdAt", -1))
    db.command("profile", 0)
    e, = entries(db, op="query")
    ex = db.posts.find(q).sort("createdAt", -1).explain()["executionStats"]
    assert e["ns"] == "blog.posts"
    assert e["command"]["find"] == "posts" and e["command"]["filter"] == q
    assert e["command"]["sort"] == {"createdAt": -1}
    assert e["keysExamined"] == ex["totalKeysExamined"]
    assert e["docsExamined"] == ex["totalDocsExamined"]
    assert e["nreturned"] == ex["nReturned"] == len(docs)
    assert e["planSummary"] == "IXSCAN { authorId: 1, createdAt: -1 }"
    assert "hasSortStage" not in e  # the index gives the order
    assert e["cursorExhausted"] is True
    assert isinstance(e["millis"], int) and isinstance(e["ts"], datetime.datetime)
    assert e["appName"] == "lesson-38" and e["user"] == "" and e["numYield"] == 0
    assert e["responseLength"] > 0


def test_collscan_with_blocking_sort(db):
    db.command("profile", 2)
    list(db.posts.find({"tags": "t1"}).sort("createdAt", 1).limit(5))
    db.command("profile", 0)
    e, = entries(db, op="query")
    ex = db.posts.find({"tags": "t1"}).sort("createdAt", 1).limit(5).explain()["executionStats"]
    assert e["planSummary"] == "COLLSCAN"
    assert e["hasSortStage"] is True
    assert e["docsExamined"] == ex["totalDocsExamined"] == 400
    assert e["keysExamined"] == 0 and e["nreturned"] == 5


def test_getmore_entries(db):
    db.command("profile", 2)
    assert len(list(db.posts.find())) == 400
    db.command("profile", 0)
    ops = [(e["op"], e.get("nreturned")) for e in entries(db) if e["op"] in ("query", "getmore")]
    assert ops == [("query", 101), ("getmore", 299)]
    q = entries(db, op="query")[0]
    assert q["cursorid"] != 0 and "cursorExhausted" not in q


def test_write_entries(db):
    db.command("profile", 2)
    db.posts.insert_one({"_id": 1000, "authorId": 1, "createdAt": 5})
    db.posts.update_many({"authorId": 1}, {"$set": {"createdAt": -1}})
    db.posts.delete_one({"_id": 1000})
    db.command("profile", 0)
    ins, = entries(db, op="insert")
    assert ins["ninserted"] == 1 and ins["command"]["documents"][0]["_id"] == 1000
    assert ins["keysInserted"] == 2  # _id_ and authorId_1_createdAt_-1
    upd, = entries(db, op="update")
    assert upd["command"] == {"q": {"authorId": 1}, "u": {"$set": {"createdAt": -1}}, "multi": True, "upsert": False}
    assert upd["nMatched"] == 21 and upd["nModified"] == 21
    assert upd["keysInserted"] == 21 and upd["keysDeleted"] == 21  # one key of authorId_1_createdAt_-1 each
    assert upd["planSummary"] == "IXSCAN { authorId: 1, createdAt: -1 }"
    assert upd["keysExamined"] == 21 and upd["docsExamined"] == 21
    rem, = entries(db, op="remove")
    assert rem["ndeleted"] == 1 and rem["command"] == {"q": {"_id": 1000}, "limit": 1}
    assert rem["keysDeleted"] == 2


def test_level_1_slowms_and_filter(db):
    db.command("profile", 1)  # slowms 100: nothing on this engine is that slow
    list(db.posts.find({"authorId": 2}))
    assert entries(db) == []
    db.command("profile", 1, slowms=0)
    list(db.posts.find({"authorId": 2}))
    assert [e["op"] for e in entries(db) if e["op"] != "command"] == ["query"]
    db["system.profile"].drop()
    db.command("profile", 1, filter={"op": "update"})
    list(db.posts.find({"authorId": 2}))
    db.posts.update_one({"_id": 3}, {"$set": {"x": 1}})
    db.command("profile", 0)
    assert [e["op"] for e in entries(db)] == ["update"]


def test_failed_operation_entry(db):
    db.command("profile", 2)
    with pytest.raises(OperationFailure):
        list(db.posts.find({"a": {"$bogus": 1}}))
    db.command("profile", 0)
    e, = entries(db, op="query")
    assert e["ok"] == 0.0 and e["errCode"] == 2 and "errMsg" in e


def test_profile_is_bounded(db, monkeypatch):
    monkeypatch.setattr(profiler, "CAP_BYTES", 20_000)
    db.command("profile", 2)
    for i in range(200):
        db.posts.find_one({"_id": i})
    db.command("profile", 0)
    es = entries(db)
    assert 0 < len(es) < 200
    assert es[-1]["command"]["filter"] == {"_id": 199} or es[-1]["op"] == "command"
    assert sum(len(__import__("bson").encode(e)) for e in es) <= 20_000 + 2_000


def test_profile_readable_by_aggregate_and_other_databases_untouched(db):
    db.command("profile", 2)
    list(db.posts.find({"authorId": 1}))
    list(db.client.other.c.find({}))
    db.command("profile", 0)
    by_op = {d["_id"]: d["n"] for d in db["system.profile"].aggregate([{"$group": {"_id": "$op", "n": {"$sum": 1}}}])}
    assert by_op["query"] == 1
    assert list(db.client.other["system.profile"].find()) == []


def test_pymongo3_helpers(db):
    db.set_profiling_level(2, slow_ms=5)
    assert db.profiling_level() == 2
    db.posts.find_one({"_id": 2})
    db.set_profiling_level(0)
    assert any(e["op"] == "query" for e in db.profiling_info())


def test_aggregate_without_a_leading_match_profiles_its_collection_scan():
    """manual "Database Profiler Output": docsExamined/keysExamined cover the whole operation and planSummary
    names the plan of the aggregated collection (here a COLLSCAN), not the plan of a $lookup's inner lookups.
    The figures must agree with the aggregate's own explain (found with lesson 38)."""
    client = EmbeddedClient()
    d = client.prof_agg
    d.customers.insert_many([{"_id": c, "tier": c % 3} for c in range(30)])
    d.orders.insert_many([{"_id": o, "customerId": o % 30, "total": o} for o in range(200)])
    pipeline = [{"$lookup": {"from": "customers", "localField": "customerId", "foreignField": "_id",
                             "as": "c"}},
                {"$group": {"_id": {"$first": "$c.tier"}, "revenue": {"$sum": "$total"}}}]
    d.command("profile", 2)
    list(d.orders.aggregate(pipeline, comment="report"))
    d.command("profile", 0)
    entry = d["system.profile"].find_one({"command.comment": "report"})
    plan = d.command("explain", {"aggregate": "orders", "pipeline": pipeline, "cursor": {}},
                     verbosity="executionStats")
    stats = plan.get("executionStats") or plan["stages"][0]["$cursor"]["executionStats"]
    assert entry["planSummary"] == "COLLSCAN"
    assert (entry["keysExamined"], entry["docsExamined"]) == (stats["totalKeysExamined"], stats["totalDocsExamined"])
    assert entry["docsExamined"] == 200 + 200  # every order, and the customer each one joins


def test_find_comment_in_the_query_and_getmore_entries(db):
    """manual "Database Profiler Output" (``command``) and pymongo, which sends a find's comment with the find
    and with each getMore: ``find(comment=)`` and ``Cursor.comment()`` both reach the profile entries."""
    db.command("profile", 2)
    assert len(list(db.posts.find({}, comment="by kwarg"))) == 400
    assert len(list(db.posts.find({}).comment("by cursor"))) == 400
    db.command("profile", 0)
    got = [(e["op"], e["command"].get("comment")) for e in entries(db) if e["op"] in ("query", "getmore")]
    assert got == [("query", "by kwarg"), ("getmore", "by kwarg"), ("query", "by cursor"), ("getmore", "by cursor")]
