"""labkit.explain summaries on embedded-engine output and on real-server-shaped documents (classic, SBE,
aggregate with $cursor/$lookup)."""
from __future__ import annotations

from labkit.engine import EmbeddedClient
from labkit.explain import plan_summary, plan_tree, show_plan


def _db():
    db = EmbeddedClient().sp
    db.posts.insert_many([{"_id": i, "authorId": "user:%d" % (i % 10), "createdAt": i} for i in range(200)])
    return db


def test_summary_feed_query_with_and_without_index():
    db = _db()
    e = db.posts.find({"authorId": "user:3"}).sort("createdAt", -1).limit(5).explain()
    s = plan_summary(e)
    assert s["stages"] == "SORT > COLLSCAN" and s["blockingSort"] is True and s["collscan"] is True
    assert s["docsExamined"] == 200 and s["nReturned"] == 5 and s["engine"] == "embedded"
    db.posts.create_index([("authorId", 1), ("createdAt", -1)])
    e = db.posts.find({"authorId": "user:3"}).sort("createdAt", -1).limit(5).explain()
    s = plan_summary(e)
    assert s["stages"] == "LIMIT > FETCH > IXSCAN"
    assert s["index"] == "authorId_1_createdAt_-1"
    assert (s["keysExamined"], s["docsExamined"], s["nReturned"]) == (5, 5, 5)
    assert s["blockingSort"] is False and s["covered"] is False
    df = show_plan(e)
    assert list(df.columns) == ["part", "stages", "index", "keysExamined", "docsExamined", "nReturned",
                                "blocking sort", "covered"]
    assert df.iloc[0]["stages"] == "LIMIT > FETCH > IXSCAN"
    tree = plan_tree(e)
    assert "IXSCAN" in tree and "indexName=authorId_1_createdAt_-1" in tree and "keysExamined=5" in tree


def test_covered_and_lookup_rows():
    db = _db()
    db.posts.create_index([("authorId", 1), ("createdAt", 1)])
    e = db.posts.find({"authorId": "user:1"}, {"_id": 0, "authorId": 1, "createdAt": 1}).explain()
    assert plan_summary(e)["covered"] is True
    db.users.insert_many([{"_id": "user:%d" % i} for i in range(3)])
    e = db.command("explain", {"aggregate": "users", "pipeline": [
        {"$lookup": {"from": "posts", "localField": "_id", "foreignField": "authorId", "as": "p"}}], "cursor": {}},
        verbosity="executionStats")
    df = show_plan(e)
    assert len(df) == 2
    # 8.0: the $lookup runs in SBE as EQ_LOOKUP with an indexed loop join over the compound index
    assert df.iloc[0]["part"] == "pipeline (SBE)"
    assert df.iloc[1]["part"].startswith("EQ_LOOKUP ")
    assert df.iloc[1]["stages"] == "IndexedLoopJoin" and df.iloc[1]["index"] == "authorId_1_createdAt_1"
    assert "strategy=IndexedLoopJoin" in plan_tree(e)
    # a pipeline SBE does not take (let/pipeline form) keeps the classic $lookup row
    e = db.command("explain", {"aggregate": "users", "pipeline": [
        {"$lookup": {"from": "posts", "let": {"u": "$_id"}, "pipeline": [
            {"$match": {"$expr": {"$eq": ["$authorId", "$$u"]}}}], "as": "p"}}], "cursor": {}},
        verbosity="executionStats")
    df = show_plan(e)
    assert df.iloc[1]["part"] == "$lookup posts"
    assert "$lookup from posts" in plan_tree(e)


REAL_SBE = {
    "explainVersion": "2",
    "queryPlanner": {"namespace": "test.c", "winningPlan": {"queryPlan": {
        "stage": "FETCH", "planNodeId": 2, "inputStage": {"stage": "IXSCAN", "planNodeId": 1, "indexName": "a_1",
                                                          "keyPattern": {"a": 1}, "indexBounds": {"a": ["[1, 1]"]}}},
        "slotBasedPlan": {"slots": "...", "stages": "..."}}, "rejectedPlans": []},
    "executionStats": {"executionSuccess": True, "nReturned": 3, "executionTimeMillis": 0, "totalKeysExamined": 3,
                       "totalDocsExamined": 3, "executionStages": {"stage": "nlj", "nReturned": 3}},
    "ok": 1,
}

REAL_CLASSIC_AGG = {
    "explainVersion": "1",
    "stages": [
        {"$cursor": {"queryPlanner": {"namespace": "test.users", "winningPlan": {"stage": "COLLSCAN",
                                                                                 "direction": "forward"},
                                      "rejectedPlans": []},
                     "executionStats": {"nReturned": 100, "totalKeysExamined": 0, "totalDocsExamined": 100,
                                        "executionTimeMillis": 3, "executionStages": {"stage": "COLLSCAN"}}}},
        {"$lookup": {"from": "posts", "as": "p", "localField": "_id", "foreignField": "authorId"},
         "totalDocsExamined": 2000, "totalKeysExamined": 2000, "collectionScans": 0, "indexesUsed": ["authorId_1"]},
    ],
    "ok": 1,
}


def test_real_server_shapes():
    s = plan_summary(REAL_SBE)
    assert s["stages"] == "FETCH > IXSCAN" and s["index"] == "a_1" and s["keysExamined"] == 3
    assert "IXSCAN" in plan_tree(REAL_SBE)
    df = show_plan(REAL_CLASSIC_AGG)
    assert df.iloc[0]["stages"] == "COLLSCAN" and df.iloc[1]["index"] == "authorId_1"
    assert plan_summary(REAL_CLASSIC_AGG)["lookups"][0]["totalKeysExamined"] == 2000
