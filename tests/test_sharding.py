"""The simulated sharded cluster in-process (labkit/engine/s/): MongoDB 8.0's sharding rules, each with its source.

Sources (facts only; no test text copied):
- manual "shardCollection" (8.0): the key needs a supporting index unless the collection is empty, where it is
  created; ``unique`` is refused for hashed keys; src/mongo/db/s/shard_key_util.cpp (the InvalidOptions 72 texts:
  "Please create an index that starts with the proposed shard key ...", "can't shard collection ... with unique
  index on ... Uniqueness can't be maintained unless shard key is a prefix"), src/mongo/db/s/
  shard_key_index_util.cpp ("couldn't find valid index for shard key", "Index key is multikey.");
  create_collection_coordinator.cpp (AlreadyInitialized 23 "sharding already enabled for collection <ns>", the
  hashed-unique text);
- src/mongo/s/shard_key_pattern.cpp (ShardKeyNotFound 61 "Shard key cannot contain array values or array
  descendants."); manual "Missing Shard Key Fields" (documents missing key fields are routed as null);
- SERVER-76405 (7.2+): an empty collection with a hashed key gets one chunk per shard; InitialSplitPolicy's
  hashed split points;
- manual "Explain Results" (sharded: ``SINGLE_SHARD``, ``SHARD_MERGE``, ``SHARD_MERGE_SORT``, ``SHARDING_FILTER``,
  the ``shards`` array), src/mongo/s/query/cluster_aggregation_planner.cpp (``splitPipeline`` null or
  ``{shardsPart, mergerPart}``, ``mergeType``, ``$mergeCursors``);
- manual "Change a Document's Shard Key Value" and jstests/sharding/ (IllegalOperation 20 "Must run update to
  shard key field in a multi-statement transaction or with retryWrites: true."); SERVER-46811 (a multi-update
  that changes a shard key: InvalidOptions 72);
- jstests/sharding/query/sharded_lookup_in_txn.js (3904800 / 3904801), jstests/sharding/
  transactions_distinct_not_allowed_on_sharded_collections.js (263);
- manual "Balancer" (8.0: balanced when shards differ by less than three range sizes), "Jumbo Chunks", "Modify
  Range Size" (config.settings chunksize), "$shardedDataDistribution", "refineCollectionShardKey",
  "reshardCollection".
"""
from __future__ import annotations

import pytest
from bson import Int64
from bson.max_key import MaxKey
from bson.min_key import MinKey
from pymongo.errors import OperationFailure

from labkit.engine.s.cluster import check_shard_count
from labkit.engine.s.router import Mongos
from labkit.engine.s.shard_key import ShardKeyPattern, hashed_split_points


@pytest.fixture
def m() -> Mongos:
    return Mongos(3)


def _err(fn, code: int) -> OperationFailure:
    with pytest.raises(OperationFailure) as info:
        fn()
    assert info.value.code == code, info.value.details
    return info.value


def _shard(m: Mongos, ns: str, key: dict, **kw) -> dict:
    return m.command("admin", {"shardCollection": ns, "key": key, **kw})


def _insert(m: Mongos, coll: str, docs: list, ordered: bool = False, db: str = "lab") -> dict:
    return m.command(db, {"insert": coll, "documents": docs, "ordered": ordered})


def _find(m: Mongos, coll: str, flt: dict, **kw) -> list:
    return m.command("lab", {"find": coll, "filter": flt, "batchSize": 10_000, **kw})["cursor"]["firstBatch"]


def _explain(m: Mongos, inner: dict, verbosity: str = "executionStats") -> dict:
    return m.command("lab", {"explain": inner, "verbosity": verbosity})


def _counts(m: Mongos, ns: str) -> dict:
    rows = m.command("admin", {"aggregate": 1, "pipeline": [{"$shardedDataDistribution": {}}, {"$match": {"ns": ns}}],
                               "cursor": {}})["cursor"]["firstBatch"]
    return {s["shardName"]: s["numOwnedDocuments"] for s in rows[0]["shards"]} if rows else {}


# ---------------------------------------------------------------------------------------------- shard count
@pytest.mark.parametrize("bad", [0, -1, 17, 2.0, "3", True, None])
def test_a_shard_count_must_be_a_small_positive_integer(bad):
    with pytest.raises(ValueError, match="integer from 1 to 16"):
        check_shard_count(bad)


def test_config_server_metadata_is_readable(m):
    shards = list(m.config["config"]["shards"].find({}, sort=[("_id", 1)]))
    assert [s["_id"] for s in shards] == ["shard0", "shard1", "shard2"]
    assert m.command("admin", {"listShards": 1})["shards"][0]["_id"] == "shard0"
    _shard(m, "lab.posts", {"authorId": 1})
    coll = m.command("config", {"find": "collections", "filter": {"_id": "lab.posts"}})["cursor"]["firstBatch"][0]
    assert coll["key"] == {"authorId": 1} and coll["unique"] is False
    chunks = m.command("config", {"find": "chunks", "filter": {"uuid": coll["uuid"]}})["cursor"]["firstBatch"]
    assert len(chunks) == 1 and chunks[0]["min"] == {"authorId": MinKey()} and chunks[0]["max"] == {"authorId": MaxKey()}
    db = m.command("config", {"find": "databases", "filter": {"_id": "lab"}})["cursor"]["firstBatch"][0]
    assert db["primary"] == chunks[0]["shard"]


# ---------------------------------------------------------------------------------------------- shardCollection
def test_empty_collection_gets_its_supporting_index(m):
    assert _shard(m, "lab.posts", {"authorId": 1, "createdAt": 1})["collectionsharded"] == "lab.posts"
    names = [i["name"] for i in m.command("lab", {"listIndexes": "posts"})["cursor"]["firstBatch"]]
    assert "authorId_1_createdAt_1" in names


def test_non_empty_collection_without_an_index_is_refused_and_nothing_changes(m):
    _insert(m, "posts", [{"authorId": "a"}])
    e = _err(lambda: _shard(m, "lab.posts", {"authorId": 1}), 72)
    assert "Please create an index that starts with the proposed shard key" in str(e)
    assert m.config["config"]["collections"].count_documents({}) == 0
    assert [i["name"] for i in m.command("lab", {"listIndexes": "posts"})["cursor"]["firstBatch"]] == ["_id_"]


def test_sharding_again_with_another_key_is_already_initialized(m):
    _shard(m, "lab.posts", {"authorId": 1})
    assert _shard(m, "lab.posts", {"authorId": 1})["ok"] == 1.0  # same key: nothing to do
    e = _err(lambda: _shard(m, "lab.posts", {"createdAt": 1}), 23)
    assert str(e).startswith("sharding already enabled for collection lab.posts")
    assert m.config["config"]["collections"].find_one({"_id": "lab.posts"})["key"] == {"authorId": 1}


def test_hashed_keys_cannot_be_unique(m):
    e = _err(lambda: _shard(m, "lab.users", {"email": "hashed"}, unique=True), 72)
    assert str(e).startswith("Hashed shard keys cannot be declared unique.")


def test_a_unique_index_must_start_with_the_shard_key(m):
    _insert(m, "users", [{"email": "a@x", "tenantId": 1}])
    m.command("lab", {"createIndexes": "users", "indexes": [{"key": {"email": 1}, "name": "email_1", "unique": True},
                                                            {"key": {"tenantId": 1}, "name": "tenantId_1"}]})
    e = _err(lambda: _shard(m, "lab.users", {"tenantId": 1}), 72)
    assert "with unique index on { email: 1 } and proposed shard key { tenantId: 1 }" in str(e)
    assert "Uniqueness can't be maintained unless shard key is a prefix" in str(e)
    # after sharding, a new unique index must start with the key too (CannotCreateIndex 67)
    _shard(m, "lab.orders", {"tenantId": 1})
    e = _err(lambda: m.command("lab", {"createIndexes": "orders", "indexes": [
        {"key": {"orderNo": 1}, "name": "orderNo_1", "unique": True}]}), 67)
    assert "cannot create unique index over { orderNo: 1 } with shard key pattern { tenantId: 1 }" in str(e)
    m.command("lab", {"createIndexes": "orders", "indexes": [{"key": {"tenantId": 1, "orderNo": 1},
                                                              "name": "t_o", "unique": True}]})


def test_a_multikey_index_cannot_support_the_key(m):
    _insert(m, "posts", [{"tags": ["a", "b"]}])
    m.command("lab", {"createIndexes": "posts", "indexes": [{"key": {"tags": 1}, "name": "tags_1"}]})
    e = _err(lambda: _shard(m, "lab.posts", {"tags": 1}), 72)
    assert "couldn't find valid index for shard key" in str(e) and "Index key is multikey." in str(e)


@pytest.mark.parametrize("key", [{"a": -1}, {"a": "hashed", "b": "hashed"}, {"a": "text"}, {}])
def test_unsupported_key_patterns_are_bad_value(m, key):
    _err(lambda: _shard(m, "lab.c", key), 2)
    assert m.config["config"]["collections"].count_documents({}) == 0


@pytest.mark.parametrize("key, message", [
    ({"a": -1}, "Shard key { a: -1 } can contain at most one 'hashed' field, and/or multiple numerical fields set "
                "to a value of 1. Failed to parse field a"),
    ({"a": "hashed", "b": "hashed"}, "Failed to parse field b"),
    ({"a..b": 1}, "Field a..b contains empty parts"),
    ({"a.$x": 1}, "Field a.$x contains parts that start with '$'"),
])
def test_key_pattern_errors_read_as_the_servers(m, key, message):
    # parseShardKeyPattern in src/mongo/db/s/shard_key_pattern.cpp (BadValue 2, the message naming the field)
    e = _err(lambda: _shard(m, "lab.c", key), 2)
    assert message in str(e)


def test_hashed_empty_collection_gets_one_chunk_per_shard(m):
    _shard(m, "lab.posts", {"authorId": "hashed"})
    chunks = list(m.config["config"]["chunks"].find({}, sort=[("min", 1)]))
    assert [c["shard"] for c in chunks] == ["shard0", "shard1", "shard2"]
    points = hashed_split_points(3)
    assert [c["max"]["authorId"] for c in chunks[:-1]] == points
    assert points == [Int64(-3074457345618258602), Int64(3074457345618258602)]
    assert hashed_split_points(4) == [Int64(-4611686018427387902), Int64(0), Int64(4611686018427387902)]


def test_ranged_key_starts_with_one_chunk_on_the_primary(m):
    _shard(m, "lab.posts", {"createdAt": 1})
    assert m.config["config"]["chunks"].count_documents({}) == 1


# ---------------------------------------------------------------------------------------------- writes
def test_an_array_in_the_key_is_refused_and_missing_fields_route_as_null(m):
    _shard(m, "lab.posts", {"authorId": 1})
    r = _insert(m, "posts", [{"_id": 1, "authorId": ["a", "b"]}, {"_id": 2}, {"_id": 3, "authorId": None}])
    assert r["n"] == 2 and r["writeErrors"][0]["index"] == 0 and r["writeErrors"][0]["code"] == 61
    assert r["writeErrors"][0]["errmsg"] == "Shard key cannot contain array values or array descendants."
    t = m.table("lab.posts")
    assert t.key.key_bytes({"_id": 2}) == t.key.key_bytes({"authorId": None})
    assert sorted(d["_id"] for d in _find(m, "posts", {"authorId": None})) == [2, 3]


def test_inserts_land_on_the_shard_owning_their_range(m):
    _shard(m, "lab.posts", {"createdAt": 1})
    m.command("admin", {"split": "lab.posts", "middle": {"createdAt": 100}})
    m.command("admin", {"split": "lab.posts", "middle": {"createdAt": 200}})
    m.command("admin", {"moveChunk": "lab.posts", "find": {"createdAt": 150}, "to": "shard1"})
    m.command("admin", {"moveRange": "lab.posts", "min": {"createdAt": 200}, "max": {"createdAt": MaxKey()},
                        "toShard": "shard2"})
    before = _counts(m, "lab.posts")
    _insert(m, "posts", [{"createdAt": i} for i in range(300, 400)])  # monotonic: all past the last split
    after = _counts(m, "lab.posts")
    assert {s: after.get(s, 0) - before.get(s, 0) for s in after} == {"shard0": 0, "shard1": 0, "shard2": 100}
    _insert(m, "posts", [{"createdAt": i} for i in range(0, 300)])
    assert _counts(m, "lab.posts") == {"shard0": 100, "shard1": 100, "shard2": 200}


def test_ordered_inserts_stop_at_the_first_error_with_its_batch_index(m):
    _shard(m, "lab.posts", {"k": "hashed"})
    r = _insert(m, "posts", [{"_id": 1, "k": 1}, {"_id": 2, "k": 2}, {"_id": 1, "k": 1}, {"_id": 4, "k": 4}],
                ordered=True)
    assert r["n"] == 2 and [(e["index"], e["code"]) for e in r["writeErrors"]] == [(2, 11000)]


def test_changing_the_key_needs_a_transaction_or_retryable_write(m):
    _shard(m, "lab.posts", {"authorId": 1})
    m.command("admin", {"split": "lab.posts", "middle": {"authorId": "m"}})
    m.command("admin", {"moveChunk": "lab.posts", "find": {"authorId": "z"}, "to": "shard1"})
    _insert(m, "posts", [{"_id": 1, "authorId": "a"}])
    r = m.command("lab", {"update": "posts", "updates": [{"q": {"_id": 1}, "u": {"$set": {"authorId": "z"}}}]})
    assert r["writeErrors"][0]["code"] == 20
    assert r["writeErrors"][0]["errmsg"] == ("Must run update to shard key field in a multi-statement transaction or "
                                             "with retryWrites: true.")
    assert _find(m, "posts", {"_id": 1})[0]["authorId"] == "a" and _counts(m, "lab.posts")["shard0"] == 1
    # as a retryable write (lsid + txnNumber) the document moves to the shard owning its new key
    lsid = {"id": __import__("bson").Binary(b"\x01" * 16, 4)}
    r = m.command("lab", {"update": "posts", "updates": [{"q": {"_id": 1}, "u": {"$set": {"authorId": "z"}}}],
                          "lsid": lsid, "txnNumber": Int64(1)})
    assert r["nModified"] == 1
    assert _counts(m, "lab.posts") == {"shard0": 0, "shard1": 1}


def test_a_multi_update_may_not_change_a_documents_shard_key(m):
    # SERVER-46811 (the shard's update stage: InvalidOptions "Multi-update operations are not allowed when updating
    # the shard key field."); setting a key field to the value it has changes no key and is allowed
    _shard(m, "lab.posts", {"authorId": 1})
    _insert(m, "posts", [{"_id": i, "authorId": "a", "n": i} for i in range(3)])
    r = m.command("lab", {"update": "posts", "updates": [{"q": {"n": {"$gte": 0}}, "u": {"$set": {"authorId": "b"}},
                                                          "multi": True}]})
    assert [(e["code"], e["errmsg"]) for e in r["writeErrors"]] == [
        (72, "Multi-update operations are not allowed when updating the shard key field.")]
    assert {d["authorId"] for d in _find(m, "posts", {})} == {"a"}  # nothing changed
    r = m.command("lab", {"update": "posts", "updates": [{"q": {}, "u": {"$set": {"authorId": "a", "seen": True}},
                                                          "multi": True}]})
    assert r["nModified"] == 3 and "writeErrors" not in r


def test_upsert_without_the_full_key_cannot_be_targeted(m):
    _shard(m, "lab.posts", {"authorId": 1, "createdAt": 1})
    r = m.command("lab", {"update": "posts", "updates": [{"q": {"authorId": "a"}, "u": {"$set": {"x": 1}},
                                                          "upsert": True}]})
    assert r["writeErrors"][0]["code"] == 61
    r = m.command("lab", {"update": "posts", "updates": [{"q": {"authorId": "a", "createdAt": 1},
                                                          "u": {"$set": {"x": 1}}, "upsert": True}]})
    assert r["n"] == 1 and len(r["upserted"]) == 1


# ---------------------------------------------------------------------------------------------- targeting
def _spread(m: Mongos) -> None:
    _shard(m, "lab.posts", {"authorId": 1, "createdAt": 1})
    _insert(m, "posts", [{"_id": i, "authorId": "u%02d" % (i % 30), "createdAt": i, "likes": i % 7}
                         for i in range(600)])
    m.command("admin", {"split": "lab.posts", "middle": {"authorId": "u10", "createdAt": MaxKey()}})
    m.command("admin", {"split": "lab.posts", "middle": {"authorId": "u20", "createdAt": MaxKey()}})
    m.command("admin", {"moveChunk": "lab.posts", "find": {"authorId": "u15", "createdAt": 1}, "to": "shard1"})
    m.command("admin", {"moveChunk": "lab.posts", "find": {"authorId": "u25", "createdAt": 1}, "to": "shard2"})


def test_a_query_on_the_key_prefix_is_targeted_and_others_are_broadcast(m):
    _spread(m)
    e = _explain(m, {"find": "posts", "filter": {"authorId": "u15"}, "sort": {"createdAt": -1}})
    wp = e["queryPlanner"]["winningPlan"]
    assert wp["stage"] == "SINGLE_SHARD" and [s["shardName"] for s in wp["shards"]] == ["shard1"]
    assert e["executionStats"]["nReturned"] == 20
    e = _explain(m, {"find": "posts", "filter": {"likes": 3}})
    assert e["queryPlanner"]["winningPlan"]["stage"] == "SHARD_MERGE"
    assert len(e["executionStats"]["executionStages"]["shards"]) == 3
    assert e["executionStats"]["totalDocsExamined"] == 600  # every shard scanned all its documents
    e = _explain(m, {"find": "posts", "filter": {"likes": 3}, "sort": {"createdAt": 1}})
    assert e["queryPlanner"]["winningPlan"]["stage"] == "SHARD_MERGE_SORT"
    e = _explain(m, {"find": "posts", "filter": {"authorId": {"$in": ["u01", "u25"]}}})
    assert [s["shardName"] for s in e["queryPlanner"]["winningPlan"]["shards"]] == ["shard0", "shard2"]
    e = _explain(m, {"find": "posts", "filter": {"authorId": {"$gte": "u12", "$lt": "u18"}}})
    assert [s["shardName"] for s in e["queryPlanner"]["winningPlan"]["shards"]] == ["shard1"]
    e = _explain(m, {"find": "posts", "filter": {"createdAt": 5}})  # not a prefix of the key
    assert len(e["queryPlanner"]["winningPlan"]["shards"]) == 3


def test_merged_results_are_in_sort_order_with_skip_and_limit(m):
    _spread(m)
    rows = _find(m, "posts", {"likes": 3}, sort={"createdAt": -1}, skip=2, limit=5, projection={"_id": 0,
                                                                                                "likes": 1})
    expected = sorted((i for i in range(600) if i % 7 == 3), reverse=True)[2:7]
    assert rows == [{"likes": 3}] * 5
    ids = [d["_id"] for d in _find(m, "posts", {"likes": 3}, sort={"createdAt": -1}, skip=2, limit=5)]
    assert ids == expected
    assert m.command("lab", {"count": "posts", "query": {"likes": 3}})["n"] == len([i for i in range(600) if i % 7 == 3])
    assert len(m.command("lab", {"distinct": "posts", "key": "authorId"})["values"]) == 30


def test_every_shard_plan_has_a_sharding_filter(m):
    _spread(m)
    e = _explain(m, {"find": "posts", "filter": {"authorId": "u15"}})
    plan = e["queryPlanner"]["winningPlan"]["shards"][0]["winningPlan"]
    # the index holds every key field: the filter sits between FETCH and IXSCAN
    assert plan["stage"] == "FETCH" and plan["inputStage"]["stage"] == "SHARDING_FILTER"
    assert plan["inputStage"]["inputStage"]["stage"] == "IXSCAN"
    stages = e["executionStats"]["executionStages"]["shards"][0]["executionStages"]
    assert stages["inputStage"]["stage"] == "SHARDING_FILTER" and stages["inputStage"]["nReturned"] == 20
    e = _explain(m, {"find": "posts", "filter": {"likes": 3}})
    for s in e["queryPlanner"]["winningPlan"]["shards"]:
        assert s["winningPlan"]["stage"] == "SHARDING_FILTER" and s["winningPlan"]["inputStage"]["stage"] == "COLLSCAN"


def test_aggregate_explain_shows_the_split(m):
    _spread(m)
    e = _explain(m, {"aggregate": "posts", "pipeline": [{"$match": {"authorId": "u15"}},
                                                        {"$group": {"_id": None, "n": {"$sum": 1}}}]},
                 "queryPlanner")
    assert e["splitPipeline"] is None and list(e["shards"]) == ["shard1"] and "mergeType" not in e
    e = _explain(m, {"aggregate": "posts", "pipeline": [{"$match": {"likes": 3}}, {"$sort": {"createdAt": -1}},
                                                        {"$group": {"_id": "$authorId", "n": {"$sum": 1}}}]},
                 "queryPlanner")
    assert e["mergeType"] == "mongos"
    assert e["splitPipeline"]["shardsPart"] == [{"$match": {"likes": 3}}, {"$sort": {"createdAt": -1}}]
    merger = e["splitPipeline"]["mergerPart"]
    assert "$mergeCursors" in merger[0] and merger[0]["$mergeCursors"]["sort"] == {"createdAt": -1}
    assert merger[1] == {"$group": {"_id": "$authorId", "n": {"$sum": 1}}}
    assert sorted(e["shards"]) == ["shard0", "shard1", "shard2"]
    rows = m.command("lab", {"aggregate": "posts", "pipeline": [{"$group": {"_id": "$authorId", "n": {"$sum": 1}}},
                                                                {"$sort": {"_id": 1}}], "cursor": {}})
    assert [(d["_id"], d["n"]) for d in rows["cursor"]["firstBatch"]][:2] == [("u00", 20), ("u01", 20)]


# ---------------------------------------------------------------------------------------------- lookups, txns
def test_lookup_from_a_sharded_collection_and_not_in_a_transaction(m):
    _spread(m)
    _insert(m, "users", [{"_id": "u15", "name": "Sam"}, {"_id": "u25", "name": "Fred"}])
    m.command("lab", {"createIndexes": "users", "indexes": [{"key": {"_id": "hashed"}, "name": "_id_hashed"}]})
    _shard(m, "lab.users", {"_id": "hashed"})
    pipe = [{"$match": {"_id": {"$in": [15, 25]}}},
            {"$lookup": {"from": "users", "localField": "authorId", "foreignField": "_id", "as": "author"}},
            {"$sort": {"_id": 1}}]
    rows = m.command("lab", {"aggregate": "posts", "pipeline": pipe, "cursor": {}})["cursor"]["firstBatch"]
    assert [r["author"][0]["name"] for r in rows] == ["Sam", "Fred"]
    lsid = {"id": __import__("bson").Binary(b"\x02" * 16, 4)}
    e = _err(lambda: m.command("lab", {"aggregate": "posts", "pipeline": pipe, "cursor": {}, "lsid": lsid,
                                       "txnNumber": Int64(1), "autocommit": False, "startTransaction": True}),
             3904800)
    assert "$lookup" in str(e)
    gl = [{"$graphLookup": {"from": "users", "startWith": "$authorId", "connectFromField": "_id",
                            "connectToField": "_id", "as": "g"}}]
    _err(lambda: m.command("lab", {"aggregate": "posts", "pipeline": gl, "cursor": {}, "lsid": lsid,
                                   "txnNumber": Int64(2), "autocommit": False, "startTransaction": True}), 3904801)


def test_a_transaction_across_shards_commits_or_aborts_everywhere(m):
    _spread(m)
    bson = __import__("bson")
    lsid = {"id": bson.Binary(b"\x03" * 16, 4)}
    txn = {"lsid": lsid, "txnNumber": Int64(1), "autocommit": False}
    m.command("lab", {"insert": "posts", "documents": [{"_id": 1000, "authorId": "u01"}], **txn,
                      "startTransaction": True})
    m.command("lab", {"insert": "posts", "documents": [{"_id": 1001, "authorId": "u25"}], **txn})
    assert sorted(m.txns[(b"\x03" * 16, 1)]) == ["shard0", "shard2"]
    assert _find(m, "posts", {"_id": {"$in": [1000, 1001]}}) == []  # not visible before the commit
    m.command("admin", {"commitTransaction": 1, **txn})
    assert len(_find(m, "posts", {"_id": {"$in": [1000, 1001]}})) == 2
    txn2 = {"lsid": lsid, "txnNumber": Int64(2), "autocommit": False}
    m.command("lab", {"insert": "posts", "documents": [{"_id": 2000, "authorId": "u01"},
                                                       {"_id": 2001, "authorId": "u15"}], **txn2,
                      "startTransaction": True})
    m.command("admin", {"abortTransaction": 1, **txn2})
    assert _find(m, "posts", {"_id": {"$in": [2000, 2001]}}) == []
    txn3 = {"lsid": lsid, "txnNumber": Int64(3), "autocommit": False, "startTransaction": True}
    _err(lambda: m.command("lab", {"distinct": "posts", "key": "authorId", **txn3}), 263)


# ---------------------------------------------------------------------------------------------- balancing
def test_the_balancer_moves_ranges_by_data_size_with_a_small_range_size(m):
    m.command("config", {"update": "settings", "updates": [{"q": {"_id": "chunksize"}, "u": {"$set": {"value": 1}},
                                                            "upsert": True}]})
    _shard(m, "lab.readings", {"sensorId": 1, "date": 1})
    _insert(m, "readings", [{"sensorId": i % 200, "date": i, "pad": "x" * 400} for i in range(20_000)])
    assert _counts(m, "lab.readings") == {"shard0": 20_000}
    assert m.command("admin", {"balancerCollectionStatus": "lab.readings"})["balancerCompliant"] is False
    m.command("admin", {"balancerStart": 1})
    sizes = m.shard_sizes(m.table("lab.readings"))
    assert max(sizes.values()) - min(sizes.values()) < 3 * 1024 * 1024
    assert sum(_counts(m, "lab.readings").values()) == 20_000 and min(_counts(m, "lab.readings").values()) > 0
    assert m.command("admin", {"balancerCollectionStatus": "lab.readings"})["balancerCompliant"] is True
    assert m.config["config"]["changelog"].count_documents({"what": "moveChunk.from"}) >= 2


def test_a_range_of_one_key_value_is_jumbo_and_stays(m):
    m.config["config"]["settings"].insert_one({"_id": "chunksize", "value": 1})
    _shard(m, "lab.events", {"status": 1})
    _insert(m, "events", [{"status": "open", "pad": "x" * 500} for _ in range(10_000)])
    _insert(m, "events", [{"status": "closed"} for _ in range(10)])
    m.command("admin", {"balancerStart": 1})
    jumbo = list(m.config["config"]["chunks"].find({"jumbo": True}))
    assert len(jumbo) == 1 and jumbo[0]["shard"] == "shard0"
    assert _counts(m, "lab.events")["shard0"] >= 10_000


@pytest.mark.parametrize("per_site, jumbo", [(300, True), (160, False)])
def test_a_collections_range_size_stays_through_balancing(m, per_site, jumbo):
    # manual "configureCollectionBalancing": chunkSize (MB) for one collection; it stays in config.collections
    # (maxChunkSizeBytes) while the balancer splits, moves and marks ranges. One site per range, documents of
    # ~8 KB: src/mongo/db/s/migration_chunk_cloner_source.cpp refuses a migration (ChunkTooBig, so jumbo) above
    # maxRecsWhenFull = 2 x (range size / the donor's average document size) = 2 x (1 MB / 8 KB) = 260 documents:
    # 300 per site never move; 160 (1.3 MB, over the range size in bytes) still move.
    _shard(m, "lab.sites", {"site": 1})
    m.command("admin", {"configureCollectionBalancing": "lab.sites", "chunkSize": 1})
    _insert(m, "sites", [{"site": s, "pad": "x" * 8000} for s in range(6) for _ in range(per_site)])
    m.command("admin", {"balancerStart": 1})
    doc = m.config["config"]["collections"].find_one({"_id": "lab.sites"})
    assert doc["maxChunkSizeBytes"] == 1024 * 1024
    chunks = list(m.config["config"]["chunks"].find({"uuid": doc["uuid"]}))
    assert [bool(c.get("jumbo")) for c in chunks] == [jumbo] * len(chunks) and (len(chunks) == 6 or not jumbo)
    assert (len(_counts(m, "lab.sites")) > 1) is not jumbo  # the movable ranges spread over the shards
    assert m.command("admin", {"balancerCollectionStatus": "lab.sites"})["chunkSize"] == 1


# ---------------------------------------------------------------------------------------------- repairing a key
def test_reshard_collection_redistributes_by_the_new_key(m):
    _shard(m, "lab.posts", {"createdAt": 1})
    _insert(m, "posts", [{"_id": i, "authorId": "u%d" % (i % 40), "createdAt": i} for i in range(400)])
    m.command("admin", {"reshardCollection": "lab.posts", "key": {"authorId": "hashed"}})
    assert m.config["config"]["collections"].find_one({"_id": "lab.posts"})["key"] == {"authorId": "hashed"}
    counts = _counts(m, "lab.posts")
    assert sum(counts.values()) == 400 and len([v for v in counts.values() if v]) == 3
    e = _explain(m, {"find": "posts", "filter": {"authorId": "u7"}})
    assert e["queryPlanner"]["winningPlan"]["stage"] == "SINGLE_SHARD" and e["executionStats"]["nReturned"] == 10


def test_refine_collection_shard_key_needs_an_index_and_keeps_the_prefix(m):
    _shard(m, "lab.posts", {"authorId": 1})
    _insert(m, "posts", [{"authorId": "a", "createdAt": 1}])
    e = _err(lambda: m.command("admin", {"refineCollectionShardKey": "lab.posts",
                                         "key": {"authorId": 1, "createdAt": 1}}), 72)
    assert "Please create an index that starts with the proposed shard key before refining" in str(e)
    _err(lambda: m.command("admin", {"refineCollectionShardKey": "lab.posts", "key": {"createdAt": 1}}), 72)
    m.command("lab", {"createIndexes": "posts", "indexes": [{"key": {"authorId": 1, "createdAt": 1}, "name": "ac"}]})
    m.command("admin", {"refineCollectionShardKey": "lab.posts", "key": {"authorId": 1, "createdAt": 1}})
    chunk = m.config["config"]["chunks"].find_one({})
    assert chunk["min"] == {"authorId": MinKey(), "createdAt": MinKey()}


def test_shard_key_pattern_targets_compound_prefixes():
    k = ShardKeyPattern({"tenantId": 1, "_id": 1})
    assert k.ranges_for_filter({"_id": 5}) is None  # no prefix: broadcast
    (lo, hi), = k.ranges_for_filter({"tenantId": 7})
    assert lo < hi and lo.startswith(k.key_bytes({"tenantId": 7, "_id": MinKey()})[:3])
    (lo, hi), = k.ranges_for_filter({"tenantId": 7, "_id": 5})
    assert lo == hi == k.key_bytes({"tenantId": 7, "_id": 5})
    assert len(k.ranges_for_filter({"$or": [{"tenantId": 1}, {"tenantId": 2}]})) == 2


def test_views_over_sharded_collections_are_refused_not_read_from_one_shard(m):
    _spread(m)
    m.command("lab", {"create": "busy", "viewOn": "posts", "pipeline": [{"$match": {"likes": 3}}]})
    e = _err(lambda: m.command("lab", {"find": "busy", "filter": {}}), 115)
    assert "view over a sharded collection" in str(e)
    _err(lambda: _explain(m, {"find": "busy", "filter": {}}), 115)
    # a view over an unsharded collection is read on the primary shard, as before
    _insert(m, "notes", [{"_id": 1, "t": "a"}])
    m.command("lab", {"create": "notes_view", "viewOn": "notes", "pipeline": []})
    assert _find(m, "notes_view", {}) == [{"_id": 1, "t": "a"}]


def test_rename_collection_of_an_unsharded_collection(m):
    _insert(m, "drafts", [{"_id": 1}])
    m.command("admin", {"renameCollection": "lab.drafts", "to": "lab.published"})
    assert _find(m, "published", {}) == [{"_id": 1}]
    _shard(m, "lab.posts", {"a": 1})
    _err(lambda: m.command("admin", {"renameCollection": "lab.posts", "to": "lab.old"}), 115)


def test_lookup_into_an_unsharded_collection_from_any_shard(m):
    # the manual ("Aggregation Pipeline and Sharded Collections"): a $lookup of an unsharded collection merges on
    # the shard holding it; the join must see it whichever shard the $match targets
    _spread(m)
    _insert(m, "users", [{"_id": "u15", "name": "Sam"}])  # unsharded: on the database's primary shard
    pipe = [{"$match": {"authorId": "u15"}}, {"$limit": 1},
            {"$lookup": {"from": "users", "localField": "authorId", "foreignField": "_id", "as": "author"}}]
    rows = m.command("lab", {"aggregate": "posts", "pipeline": pipe, "cursor": {}})["cursor"]["firstBatch"]
    assert rows[0]["author"] == [{"_id": "u15", "name": "Sam"}]
    e = _explain(m, {"aggregate": "posts", "pipeline": pipe}, "queryPlanner")
    assert e["mergeType"] == "specificShard" and e["mergeShard"] == m.primary_of("lab")
    assert list(e["shards"]) == ["shard1"] and e["splitPipeline"]["shardsPart"] == [{"$match": {"authorId": "u15"}}]


def test_unknown_or_unmodelled_options_of_sharding_commands_are_refused(m):
    e = _err(lambda: m.command("admin", {"shardCollection": "lab.c", "key": {"a": 1}, "uniqe": True}), 40415)
    assert str(e).startswith("BSON field 'shardCollection.uniqe' is an unknown field.")
    assert m.config["config"]["collections"].count_documents({}) == 0
    _shard(m, "lab.c", {"a": 1}, numInitialChunks=4)  # accepted without effect since 7.2 (SERVER-83005)
    _err(lambda: m.command("admin", {"moveChunk": "lab.c", "find": {"a": 1}, "to": "shard1", "forceJumbo": True}),
         115)
    _err(lambda: m.command("admin", {"configureCollectionBalancing": "lab.c", "defragmentCollection": True}), 115)
    _err(lambda: m.command("admin", {"reshardCollection": "lab.c", "key": {"b": 1}, "zones": []}), 115)
    _err(lambda: m.command("lab", {"shardCollection": "lab.d", "key": {"a": 1}}), 13)  # admin only


def test_db_stats_through_the_router_sums_every_shard(m):
    # cluster_db_stats_cmd.cpp (aggregateResults) and jstests/sharding/stats.js: every shard's dbStats under
    # ``raw`` (by its connection string), the totals their sums, avgObjSize over the unscaled data size
    _spread(m)
    _insert(m, "users", [{"_id": i} for i in range(7)])  # unsharded: on the primary shard only
    total = m.command("lab", {"dbStats": 1})
    hosts = {s["_id"]: s["host"] for s in m.command("admin", {"listShards": 1})["shards"]}
    assert sorted(total["raw"]) == sorted(hosts.values())
    for field in ("collections", "views", "objects", "dataSize", "storageSize", "totalSize", "indexes", "indexSize"):
        assert total[field] == sum(r[field] for r in total["raw"].values()), field
    assert total["objects"] == 607 and total["collections"] == 3 + 1  # posts on three shards, users on one
    by_shard = {s: m.shards[s]["lab"].command("dbStats")["dataSize"] for s in m.shard_names}
    assert {s: total["raw"][hosts[s]]["dataSize"] for s in m.shard_names} == by_shard
    assert total["avgObjSize"] == pytest.approx(total["dataSize"] / total["objects"])
    _err(lambda: m.command("lab", {"dbStats": 1, "scale": 0}), 2)


def test_a_lookup_of_a_sharded_collection_runs_on_the_shards(m):
    # document_source_lookup.cpp distributedPlanLogic (a top-level $lookup whose `from` is sharded returns none:
    # it streams on the shards) and jstests/sharding/query/sharded_lookup_execution.js ("sharded_to_sharded": the
    # $lookup executes on every shard holding the local collection; after a $group it runs on the merger)
    _spread(m)
    _insert(m, "users", [{"_id": "u%02d" % i, "name": "user %d" % i} for i in range(30)])
    m.command("lab", {"createIndexes": "users", "indexes": [{"key": {"_id": "hashed"}, "name": "_id_hashed"}]})
    _shard(m, "lab.users", {"_id": "hashed"})
    join = {"$lookup": {"from": "users", "localField": "authorId", "foreignField": "_id", "as": "author"}}
    pipe = [{"$match": {"likes": 3}}, join, {"$sort": {"_id": 1}}, {"$limit": 2}]
    e = _explain(m, {"aggregate": "posts", "pipeline": pipe}, "queryPlanner")
    assert e["splitPipeline"]["shardsPart"] == pipe and e["mergeType"] == "mongos"
    assert [next(iter(st)) for st in e["splitPipeline"]["mergerPart"]] == ["$mergeCursors", "$limit"]
    rows = m.command("lab", {"aggregate": "posts", "pipeline": pipe, "cursor": {}})["cursor"]["firstBatch"]
    assert [(r["_id"], r["author"][0]["name"]) for r in rows] == [(3, "user 3"), (10, "user 10")]
    # targeted at one shard: with a $lookup it is still split (the manual: only a pipeline without $lookup runs
    # whole on the matching shard), the join on that one shard
    one = [{"$match": {"authorId": "u15"}}, join, {"$limit": 1}]
    e = _explain(m, {"aggregate": "posts", "pipeline": one}, "queryPlanner")
    assert e["splitPipeline"]["shardsPart"] == one[:2] and list(e["shards"]) == ["shard1"]
    rows = m.command("lab", {"aggregate": "posts", "pipeline": one, "cursor": {}})["cursor"]["firstBatch"]
    assert rows[0]["author"] == [{"_id": "u15", "name": "user 15"}]
    # after a $group the join runs on the merged stream
    grouped = [{"$group": {"_id": "$authorId", "n": {"$sum": 1}}}, {"$lookup": {**join["$lookup"],
                                                                               "localField": "_id"}}]
    e = _explain(m, {"aggregate": "posts", "pipeline": grouped}, "queryPlanner")
    assert e["splitPipeline"]["shardsPart"] == [] and "$lookup" in e["splitPipeline"]["mergerPart"][-1]


def test_the_merging_part_keeps_what_the_shards_part_projected(m):
    # a document whose _id the shards' part projected away reaches the merging part without one
    _spread(m)
    rows = m.command("lab", {"aggregate": "posts", "pipeline": [{"$match": {"likes": 3}}, {"$project": {"_id": 0,
                             "authorId": 1}}, {"$skip": 1}, {"$limit": 2}], "cursor": {}})["cursor"]["firstBatch"]
    assert len(rows) == 2 and all(set(r) == {"authorId"} for r in rows)


def test_commands_the_router_does_not_place_are_refused_not_run_on_one_shard(m):
    # a change stream would hold the router on one shard's stream; the engine's bulkWrite, convertToCapped,
    # cloneCollectionAsCapped and validate would act on the first shard's documents only: each is 115, and the
    # collection is unchanged
    _shard(m, "lab.posts", {"authorId": "hashed"})
    _insert(m, "posts", [{"authorId": i} for i in range(30)])
    before = m.command("lab", {"count": "posts"})["n"]
    e = _err(lambda: m.command("lab", {"aggregate": "posts", "pipeline": [{"$changeStream": {}}], "cursor": {}}),
             115)
    assert "change streams" in str(e)
    _err(lambda: m.command("admin", {"aggregate": 1, "pipeline": [{"$changeStream": {"allChangesForCluster": True}}],
                                     "cursor": {}}), 115)
    _err(lambda: m.command("admin", {"bulkWrite": 1, "ops": [{"insert": 0, "document": {"authorId": 99}}],
                                     "nsInfo": [{"ns": "lab.posts"}]}), 115)
    _err(lambda: m.command("lab", {"convertToCapped": "posts", "size": 4096}), 115)
    _err(lambda: m.command("lab", {"validate": "posts"}), 115)
    assert m.command("lab", {"count": "posts"})["n"] == before == 30
