"""Aggregation fast paths give mongomock's answers; $lookup uses the foreign index and reports it in explain;
statistics commands and $bsonSize."""
from __future__ import annotations

import bson
import mongomock
import pytest
from pymongo.errors import OperationFailure

from labkit.engine import EmbeddedClient


def make(client_cls):
    db = client_cls().db
    db.users.insert_many([{"_id": i, "name": "u%d" % i, "tier": i % 2} for i in range(6)])
    db.posts.insert_many([{"_id": i, "authorId": i % 5, "likes": (i * 7) % 11, "tags": ["a", "b", "c"][: i % 4],
                           "meta": {"lang": ["en", "fr"][i % 2]}} for i in range(40)])
    return db


PIPELINES = [
    [{"$group": {"_id": "$authorId", "n": {"$sum": 1}, "likes": {"$sum": "$likes"}, "avg": {"$avg": "$likes"},
                 "mn": {"$min": "$likes"}, "mx": {"$max": "$likes"}, "first": {"$first": "$likes"},
                 "last": {"$last": "$likes"}, "all": {"$push": "$likes"}}}, {"$sort": {"_id": 1}}],
    [{"$match": {"likes": {"$gte": 5}}}, {"$sort": {"likes": -1, "_id": 1}}, {"$limit": 7}],
    [{"$unwind": "$tags"}, {"$group": {"_id": "$tags", "c": {"$sum": 1}}}, {"$sort": {"_id": 1}}],
    [{"$unwind": {"path": "$tags", "includeArrayIndex": "i"}}, {"$sort": {"_id": 1, "i": 1}}],
    [{"$project": {"likes": 1, "double": {"$multiply": ["$likes", 2]}}}, {"$sort": {"_id": 1}}],
    [{"$addFields": {"x": {"$add": ["$likes", 1]}, "meta.flag": True}}, {"$sort": {"_id": -1}}, {"$limit": 3}],
    [{"$match": {"authorId": 2}}, {"$count": "n"}],
    [{"$group": {"_id": "$meta.lang", "s": {"$sum": "$likes"}}}, {"$sort": {"s": -1}}],
    [{"$group": {"_id": None, "total": {"$sum": "$likes"}}}],
    [{"$group": {"_id": {"a": "$authorId", "l": "$meta.lang"}, "n": {"$sum": 1}}}, {"$sort": {"_id.a": 1, "_id.l": 1}}],
    [{"$facet": {"top": [{"$sort": {"likes": -1, "_id": 1}}, {"$limit": 2}], "n": [{"$count": "c"}]}}],
    [{"$bucket": {"groupBy": "$likes", "boundaries": [0, 5, 11], "output": {"n": {"$sum": 1}}}}],
    [{"$sort": {"_id": 1}}, {"$skip": 5}, {"$limit": 3}, {"$project": {"_id": 1}}],
    [{"$replaceRoot": {"newRoot": "$meta"}}, {"$group": {"_id": "$lang", "n": {"$sum": 1}}}, {"$sort": {"_id": 1}}],
]


@pytest.mark.parametrize("pipeline", PIPELINES)
@pytest.mark.parametrize("indexed", [False, True])
def test_pipelines_match_mongomock(pipeline, indexed):
    eng, ref = make(EmbeddedClient), make(mongomock.MongoClient)
    if indexed:
        eng.posts.create_index("authorId")
        eng.posts.create_index([("likes", -1)])
    assert list(eng.posts.aggregate(pipeline)) == list(ref.posts.aggregate(pipeline))
    # the store is not modified by the pipeline
    assert list(eng.posts.find()) == list(ref.posts.find())


def test_lookup_forms_match_mongomock_and_use_index():
    eng, ref = make(EmbeddedClient), make(mongomock.MongoClient)
    eng.posts.create_index("authorId")
    p = [{"$lookup": {"from": "posts", "localField": "_id", "foreignField": "authorId", "as": "p"}},
         {"$project": {"n": {"$size": "$p"}, "name": 1}}]
    assert list(eng.users.aggregate(p)) == list(ref.users.aggregate(p))
    e = eng.command("explain", {"aggregate": "users", "pipeline": p, "cursor": {}}, verbosity="executionStats")
    # 8.0 pushes the $lookup down to SBE (tests/test_engine_plans_80.py has the rules): EQ_LOOKUP in the
    # $cursor's queryPlan, the $project stays classic
    assert e["explainVersion"] == "2"
    cur = e["stages"][0]["$cursor"]
    lk = cur["queryPlanner"]["winningPlan"]["queryPlan"]
    assert (lk["stage"], lk["foreignCollection"], lk["localField"], lk["foreignField"], lk["asField"]) == \
        ("EQ_LOOKUP", "%s.posts" % eng.name, "_id", "authorId", "p")
    assert (lk["strategy"], lk["indexName"]) == ("IndexedLoopJoin", "authorId_1")
    # 6 local documents + 40 matched posts through 40 index keys
    assert cur["executionStats"]["totalKeysExamined"] == 40 and cur["executionStats"]["totalDocsExamined"] == 46
    assert "$project" in e["stages"][1]
    assert e["labkit"]["engine"] == "embedded"
    # without the index: a hash join reads the 40 posts once
    eng.posts.drop_index("authorId_1")
    e = eng.command("explain", {"aggregate": "users", "pipeline": p, "cursor": {}}, verbosity="executionStats")
    cur = e["stages"][0]["$cursor"]
    assert cur["queryPlanner"]["winningPlan"]["queryPlan"]["strategy"] == "HashJoin"
    assert cur["executionStats"]["totalDocsExamined"] == 6 + 40
    # let/pipeline and concise forms
    eng.posts.create_index("authorId")
    lp = [{"$lookup": {"from": "posts", "let": {"uid": "$_id"},
                       "pipeline": [{"$match": {"$expr": {"$eq": ["$authorId", "$$uid"]}}}, {"$count": "n"}],
                       "as": "c"}}]
    got = list(eng.users.aggregate(lp))
    assert [d["c"] for d in got] == [[{"n": 8}]] * 5 + [[]]
    e = eng.command("explain", {"aggregate": "users", "pipeline": lp, "cursor": {}}, verbosity="executionStats")
    assert e["stages"][1]["indexesUsed"] == ["authorId_1"]  # $expr $eq on a let variable uses the index
    assert e["stages"][1]["collectionScans"] == 0 and e["stages"][1]["totalDocsExamined"] == 40
    concise = [{"$lookup": {"from": "posts", "localField": "_id", "foreignField": "authorId",
                            "pipeline": [{"$match": {"likes": {"$gt": 5}}}, {"$project": {"_id": 1}}], "as": "c"}}]
    got = list(eng.users.aggregate(concise))
    assert [len(d["c"]) for d in got] == [len([i for i in range(40) if i % 5 == u and (i * 7) % 11 > 5])
                                          for u in range(5)] + [0]
    e = eng.command("explain", {"aggregate": "users", "pipeline": concise, "cursor": {}}, verbosity="executionStats")
    assert e["stages"][1]["indexesUsed"] == ["authorId_1"]


def test_index_stats_counts_plan_use():
    db = make(EmbeddedClient)
    db.posts.create_index("authorId")
    list(db.posts.find({"authorId": 1}))
    list(db.posts.find({"authorId": 2}))
    list(db.users.aggregate([{"$lookup": {"from": "posts", "localField": "_id", "foreignField": "authorId",
                                          "as": "p"}}]))
    stats = {s["name"]: s["accesses"]["ops"] for s in db.posts.aggregate([{"$indexStats": {}}])}
    assert stats["authorId_1"] == 2 + 6
    assert stats["_id_"] == 0


def test_coll_stats_and_db_stats():
    db = make(EmbeddedClient)
    s = db.command("collStats", "posts")
    size = sum(len(bson.encode(d)) for d in db.posts.find())
    assert s["count"] == 40 and s["size"] == size and s["avgObjSize"] == size // 40
    assert s["nindexes"] == 1 and s["totalIndexSize"] == sum(s["indexSizes"].values()) > 0
    cs = list(db.posts.aggregate([{"$collStats": {"storageStats": {}}}]))[0]["storageStats"]
    assert cs["count"] == 40 and cs["size"] == size
    d = db.command("dbStats")
    assert d["collections"] == 2 and d["objects"] == 46


def test_bson_size_expression():
    db = make(EmbeddedClient)
    got = list(db.users.aggregate([{"$project": {"s": {"$bsonSize": "$$ROOT"}}}, {"$limit": 1}]))
    assert got[0]["s"] == len(bson.encode({"_id": 0, "name": "u0", "tier": 0}))
    big = list(db.users.aggregate([{"$match": {"$expr": {"$gt": [{"$bsonSize": "$$ROOT"}, 10]}}}]))
    assert len(big) == 6


def test_aggregate_explain_pushdown_only():
    db = make(EmbeddedClient)
    db.posts.create_index("authorId")
    e = db.command("explain", {"aggregate": "posts", "pipeline": [{"$match": {"authorId": 3}}], "cursor": {}},
                   verbosity="executionStats")
    assert e["queryPlanner"]["optimizedPipeline"] is True
    assert e["executionStats"]["totalKeysExamined"] == 8


def test_unsupported_things_raise_clearly():
    db = make(EmbeddedClient)
    with pytest.raises(OperationFailure) as ei:
        list(db.posts.aggregate([{"$search": {"text": {"query": "x", "path": "body"}}}]))  # Atlas Search only
    assert "embedded engine" in str(ei.value) and "MONGODB_URI" in str(ei.value)
    with pytest.raises(OperationFailure):
        list(db.posts.aggregate([{"$nosuchstage": {}}]))
    from pymongo.errors import ConfigurationError
    with pytest.raises(ConfigurationError):
        db.posts.aggregate([], explain=True)


def test_unwind_preserve_follows_server_docs():
    """DOCS reference/operator/aggregation/unwind: an empty array field is dropped, null kept, index null."""
    db = EmbeddedClient().db
    db.inv.insert_many([{"_id": 1, "sizes": ["S", "M"]}, {"_id": 2, "sizes": []}, {"_id": 3, "sizes": None},
                        {"_id": 4}])
    got = list(db.inv.aggregate([{"$unwind": {"path": "$sizes", "includeArrayIndex": "i",
                                               "preserveNullAndEmptyArrays": True}}]))
    assert got == [{"_id": 1, "sizes": "S", "i": 0}, {"_id": 1, "sizes": "M", "i": 1}, {"_id": 2, "i": None},
                   {"_id": 3, "sizes": None, "i": None}, {"_id": 4, "i": None}]


def test_count_of_nothing_is_no_document():
    """Server semantics (mongomock differs): $count over an empty input returns no document."""
    db = make(EmbeddedClient)
    assert list(db.posts.aggregate([{"$match": {"authorId": 99}}, {"$count": "n"}])) == []
