"""TTL monitor pass on the embedded engine (labkit.ttl_pass). Sources: manual "TTL Indexes"
(https://www.mongodb.com/docs/manual/core/index-ttl/), src/mongo/db/ttl/ttl.cpp, jstests/noPassthrough/ttl*."""
import datetime as dt

import pytest

import labkit
from labkit.engine import EmbeddedClient

NOW = dt.datetime(2026, 11, 20, 12, 0)


@pytest.fixture()
def db():
    return EmbeddedClient().ttl_test


def test_single_field_date_expires_after_seconds(db):
    # manual "TTL Indexes": a document expires when indexed date + expireAfterSeconds < now
    db.c.insert_many([{"_id": 1, "at": NOW - dt.timedelta(seconds=3601)},
                      {"_id": 2, "at": NOW - dt.timedelta(seconds=3599)}])
    db.c.create_index("at", expireAfterSeconds=3600)
    r = labkit.ttl_pass(db, now=NOW)
    assert r["deleted"] == 1 and r["byCollection"] == {"c": 1}
    assert [d["_id"] for d in db.c.find()] == [2]


def test_array_expires_on_earliest_date_and_non_dates_never(db):
    # manual "TTL Indexes": "If the indexed field in a document is an array with multiple dates, the
    # document expires when the lowest (earliest) date matches the expiration threshold"; non-date values
    # (and documents without the field) never expire
    old, new = NOW - dt.timedelta(days=2), NOW
    db.c.insert_many([{"_id": "arr", "at": [new, old]}, {"_id": "str", "at": "2000-01-01"},
                      {"_id": "missing"}, {"_id": "nums", "at": [1, 2]}])
    db.c.create_index("at", expireAfterSeconds=86400)
    labkit.ttl_pass(db, now=NOW)
    assert sorted(d["_id"] for d in db.c.find()) == ["missing", "nums", "str"]


def test_partial_ttl_index_only_deletes_matching(db):
    # manual "TTL Indexes" / "Partial Indexes": a partial TTL index expires only documents matching its filter
    old = NOW - dt.timedelta(days=10)
    db.c.insert_many([{"_id": 1, "at": old, "kind": "log"}, {"_id": 2, "at": old, "kind": "order"}])
    db.c.create_index("at", expireAfterSeconds=60, partialFilterExpression={"kind": "log"})
    labkit.ttl_pass(db, now=NOW)
    assert [d["_id"] for d in db.c.find()] == [2]


def test_compound_index_is_not_ttl(db):
    # manual "TTL Indexes": "TTL indexes are single-field indexes. Compound indexes do not support TTL"
    db.c.insert_one({"_id": 1, "at": NOW - dt.timedelta(days=10), "k": 1})
    db.c.create_index([("at", 1), ("k", 1)], expireAfterSeconds=60)
    assert labkit.ttl_pass(db, now=NOW)["deleted"] == 0
    assert db.c.count_documents({}) == 1


def test_collmod_changes_expire_after_seconds(db):
    # manual "TTL Indexes" / collMod: changing expireAfterSeconds applies from the next pass
    db.c.insert_one({"_id": 1, "at": NOW - dt.timedelta(hours=2)})
    db.c.create_index("at", expireAfterSeconds=86400)
    assert labkit.ttl_pass(db, now=NOW)["deleted"] == 0
    db.command("collMod", "c", index={"keyPattern": {"at": 1}, "expireAfterSeconds": 3600})
    assert labkit.ttl_pass(db, now=NOW)["deleted"] == 1


def test_server_status_metrics_ttl(db):
    # serverStatus metrics.ttl: passes and deletedDocuments (src/mongo/db/ttl/ttl.cpp counters)
    before = db.command("serverStatus")["metrics"]["ttl"]
    db.c.insert_many([{"at": NOW - dt.timedelta(days=1)} for _ in range(3)])
    db.c.create_index("at", expireAfterSeconds=10)
    labkit.ttl_pass(db.client, now=NOW)
    after = db.command("serverStatus")["metrics"]["ttl"]
    assert after["passes"] == before["passes"] + 1
    assert after["deletedDocuments"] == before["deletedDocuments"] + 3


def test_nothing_expires_before_a_pass(db):
    # the monitor is a background pass: without one, expired documents are still there
    db.c.insert_one({"at": NOW - dt.timedelta(days=1)})
    db.c.create_index("at", expireAfterSeconds=10)
    assert db.c.count_documents({}) == 1


def test_timeseries_expire_deletes_whole_buckets(db):
    # manual "Set up Automatic Removal for Time Series Collections (TTL)": "Once all documents in a bucket are
    # expired, the background task that removes expired buckets removes the bucket during the next run"; the
    # bucket's _id time (its rounded control.min) must be older than expireAfterSeconds + bucketMaxSpanSeconds
    # (src/mongo/db/ttl/ttl.cpp safeExpirationDate); granularity "seconds": one hour per bucket
    ts = db.create_collection("m", timeseries={"timeField": "t", "metaField": "s"}, expireAfterSeconds=86400)
    ts.insert_many([{"t": NOW - dt.timedelta(days=3), "s": "a"}, {"t": NOW - dt.timedelta(hours=1), "s": "b"},
                    {"t": NOW - dt.timedelta(days=3), "s": "c"}, {"t": NOW - dt.timedelta(hours=1), "s": "c"}])
    r = labkit.ttl_pass(db, now=NOW)
    assert r["byCollection"] == {"m": 2}  # the two buckets of 3 days ago; "c" now has a second, recent bucket
    assert sorted(d["s"] for d in ts.find()) == ["b", "c"]
    db.command("collMod", "m", expireAfterSeconds=600)
    labkit.ttl_pass(db, now=NOW)  # the recent buckets began an hour ago: not yet an hour + 10 minutes
    assert ts.count_documents({}) == 2
    labkit.ttl_pass(db, now=NOW + dt.timedelta(minutes=11))
    assert ts.count_documents({}) == 0


def test_ttl_pass_command_and_served_engine():
    # the labkitTtlPass command runs the same pass (in process and over labkit serve); serverStatus of the
    # served engine reports metrics.ttl
    import pymongo

    from labkit.engine.transport.wire import serve_in_thread
    c = EmbeddedClient()
    c.d.c.insert_one({"at": NOW - dt.timedelta(days=2)})
    c.d.c.create_index("at", expireAfterSeconds=60)
    assert c.d.command({"labkitTtlPass": 1, "now": NOW})["deleted"] == 1
    c.d.c.insert_one({"at": NOW - dt.timedelta(days=2)})
    server = serve_in_thread(client=c)
    try:
        remote = pymongo.MongoClient(server.uri, serverSelectionTimeoutMS=5000)
        r = labkit.ttl_pass(remote.d, now=NOW)
        assert r["engine"] == "embedded-served" and r["deleted"] == 1
        assert remote.admin.command("serverStatus")["metrics"]["ttl"]["passes"] == 2
        remote.close()
    finally:
        server.stop()
