"""labkit.recommend's and labkit.review's sharding checks (lessons 40-41): a monotonic key, a key of one value per
parent (low cardinality), a hot shard, and hot reads the router must broadcast. The rules they apply are the
manual's "Choose a Shard Key" (cardinality, frequency, monotonic change) and "Targeted Operations vs. Broadcast
Operations"; the figures come from the simulated cluster through the same commands a real mongos answers."""
from __future__ import annotations

import datetime as dt

import pytest

import labkit

APS = [{"operation": "profile feed", "type": "read", "per_second": 2000, "entities": ["users", "posts"],
        "fields": ["name", "posts.title"], "sort": {"createdAt": -1}, "limit": 20}]
RELS = [{"parent": "users", "child": "posts", "cardinality": [0, 50, None], "child_queried_alone": True,
         "changes_with_parent": False, "child_doc_bytes": 400, "reference_field": "authorId"}]


def _advice(key):
    return labkit.recommend(APS, RELS, shard_keys={"posts": key}).patterns[-1]


def test_recommend_flags_a_monotonic_key_and_the_broadcast_feed():
    a = _advice({"createdAt": 1})
    assert a.name == "shard key: review"
    assert any("only increases" in r for r in a.reasons)
    assert any("broadcasts" in r and "2,000/s" in r for r in a.reasons)


def test_recommend_flags_one_value_per_parent():
    a = _advice({"authorId": 1})
    assert any("can never split" in r for r in a.reasons) and any("targeted" in r for r in a.reasons)


def test_recommend_accepts_the_compound_key():
    a = _advice({"authorId": 1, "createdAt": 1})
    assert a.name == "shard key: fits" and a.lessons == ("40_shard_keys", "41_query_targeting")


@pytest.mark.parametrize("bad", [{"authorId": -1}, [], {"a": "text"}])
def test_recommend_refuses_a_bad_key(bad):
    with pytest.raises(ValueError, match="shard_keys"):
        labkit.recommend(APS, RELS, shard_keys={"posts": bad})


@pytest.fixture(scope="module")
def cluster_db():
    client = labkit.connect("embedded", shards=3)
    db = labkit.fresh_db("advice_sharding", client=client)
    client.admin.command("shardCollection", f"{db.name}.posts", key={"createdAt": 1})
    db.posts.insert_many([{"createdAt": dt.datetime(2026, 1, 1) + dt.timedelta(minutes=i), "authorId": f"u{i % 50}"}
                          for i in range(500)])
    client.admin.command("shardCollection", f"{db.name}.events", key={"kind": 1})
    db.events.insert_many([{"kind": ["a", "b", "c"][i % 3]} for i in range(300)])
    return db


def test_review_finds_the_sharding_problems(cluster_db):
    db = cluster_db
    log = [{"op": "query", "ns": f"{db.name}.posts", "command": {"find": "posts", "filter": {"authorId": "u1"}},
            "docsExamined": 500, "nreturned": 10, "ts": dt.datetime(2026, 1, 1)}] * 9 + \
          [{"op": "query", "ns": f"{db.name}.posts", "command": {"find": "posts", "filter": {
              "createdAt": {"$gte": dt.datetime(2026, 1, 1)}}}, "docsExamined": 10, "nreturned": 10,
            "ts": dt.datetime(2026, 1, 1)}]
    r = labkit.review(db, query_log=log)
    kinds = {(f.kind, f.where) for f in r.findings}
    primary = db.client.config.databases.find_one({"_id": db.name})["primary"]  # the shard holding one range
    assert ("shard-key-monotonic", "posts.createdAt") in kinds
    assert ("hot-shard", f"posts.{primary}") in kinds
    assert ("broadcast-query", "posts.createdAt") in kinds
    assert ("shard-key-low-cardinality", "events.kind") in kinds
    broadcast = next(f for f in r.findings if f.kind == "broadcast-query")
    assert broadcast.evidence["broadcast reads"] == 9 and broadcast.evidence["reads"] == 10
    assert broadcast.lesson == "41_query_targeting"


def test_review_of_an_unsharded_database_has_no_sharding_findings():
    db = labkit.fresh_db("advice_plain")
    db.posts.insert_many([{"createdAt": dt.datetime(2026, 1, 1), "i": i} for i in range(200)])
    assert not [f for f in labkit.review(db).findings if f.lesson.startswith(("40_", "41_"))]


def test_the_ledger_counts_the_shards_each_operation_contacted():
    """Through a mongos the ledger's costs carry ``shards contacted`` (the router's explain of each read, where an
    insert's documents went); elsewhere they have none and the ledger shows no such column."""
    from labkit import sharding
    from labkit.ledger import SHARDS, Ledger, compare, estimate

    client = labkit.connect(shards=3)
    db = labkit.fresh_db("ledger_shards", client=client)
    client.admin.command("shardCollection", db.posts.full_name, key={"authorId": 1})
    db.posts.insert_many([{"_id": i, "authorId": f"u{i % 30:02d}"} for i in range(300)])
    sharding.spread(db.posts, [{"authorId": "u10"}, {"authorId": "u20"}])
    ledger = Ledger({"feed": 100, "post": 10})
    by_author = ledger.measure("by author", "feed", db, lambda d: list(d.posts.find({"authorId": "u03"})))
    by_id = ledger.measure("by _id", "feed", db, lambda d: list(d.posts.find({"_id": 5})))
    one = ledger.measure("by author", "post", db, lambda d: d.posts.insert_one({"_id": 1000, "authorId": "u25"}))
    two = ledger.measure("by _id", "post", db, lambda d: d.posts.insert_many(
        [{"_id": 1001, "authorId": "u05"}, {"_id": 1002, "authorId": "u15"}]))
    assert (by_author.shards_contacted, by_id.shards_contacted, one.shards_contacted, two.shards_contacted) == (
        1, 3, 1, 2)
    assert ledger.metrics[-1] == SHARDS and ledger.per_operation()[SHARDS].tolist() == [1, 3, 1, 2]
    assert ledger.totals()[SHARDS + " /s"].to_dict() == {"by author": 110.0, "by _id": 320.0}
    assert ledger.best(SHARDS) == "by author"
    assert compare({"a": by_author, "b": by_id}).loc[SHARDS].tolist() == [1, 3]
    # an estimate without the figure, or a cost on one server, has no such metric
    assert SHARDS not in compare({"a": by_author, "e": estimate("a guess", docs_examined=1)}).index
    plain = Ledger({"x": 1})
    cost = plain.measure("a", "x", labkit.connect("embedded")["ledger_plain"], lambda d: d.c.find_one())
    assert cost.shards_contacted is None and SHARDS not in plain.per_operation().columns
    labkit.reset_db("ledger_shards", client=client)
