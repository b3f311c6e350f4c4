"""Time-series collections on the embedded engine. Sources: manual "Time Series" pages
(core/timeseries-collections, timeseries-limitations, timeseries-granularity), src/mongo/db/timeseries/
(timeseries_options.cpp, bucket_catalog/*), src/mongo/db/commands/create_command.cpp, jstests/core/timeseries/."""
import datetime as dt

import pytest
from pymongo.errors import OperationFailure, WriteError

from labkit.engine import EmbeddedClient

T0 = dt.datetime(2026, 10, 1)


@pytest.fixture()
def db():
    return EmbeddedClient().ts_test


def make(db, name="m", **ts):
    ts.setdefault("timeField", "t")
    return db.create_collection(name, timeseries=ts)


def readings(sensor, n, step_s=60, start=T0, **extra):
    return [{"t": start + dt.timedelta(seconds=i * step_s), "s": sensor, "v": float(i % 9), **extra}
            for i in range(n)]


# ------------------------------------------------------------------------------------------------ options
@pytest.mark.parametrize("ts, code, fragment", [
    ({}, 40414, "timeField' is missing"),                                   # IDL required field
    ({"timeField": "t", "metaField": "t"}, 72, "cannot be the same as 'timeField'"),  # create_command.cpp
    ({"timeField": "t", "metaField": "_id"}, 72, "cannot be \"_id\""),     # create_command.cpp
    ({"timeField": "a.b"}, 72, "must be a top-level field"),               # create_command.cpp
    ({"timeField": "t", "granularity": "days"}, 2, "not a valid value"),   # IDL enum
    ({"timeField": "t", "granularity": "hours", "bucketRoundingSeconds": 60}, 72,
     "cannot be set alongside the granularity"),                           # timeseries_options.cpp
    ({"timeField": "t", "granularity": "minutes", "bucketMaxSpanSeconds": 60}, 72,
     "other than the default of 86400"),                                   # timeseries_options.cpp
    ({"timeField": "t", "bucketMaxSpanSeconds": 100, "bucketRoundingSeconds": 60}, 72,
     "must be equal to 'bucketMaxSpanSeconds'"),                           # timeseries_options.cpp
])
def test_option_validation(db, ts, code, fragment):
    with pytest.raises(OperationFailure) as e:
        db.create_collection("bad", timeseries=ts)
    assert e.value.code == code and fragment in str(e.value)


def test_not_allowed_with_capped(db):
    # create_command.cpp: "'timeseries' is not allowed with 'capped'" (InvalidOptions)
    with pytest.raises(OperationFailure) as e:
        db.create_collection("bad", timeseries={"timeField": "t"}, capped=True, size=100)
    assert e.value.code == 72


def test_listed_options_fill_defaults(db):
    # timeseries_options.cpp: granularity defaults to seconds, bucketMaxSpanSeconds from the granularity;
    # listCollections shows type "timeseries" and the buckets collection system.buckets.<name>
    make(db, metaField="s")
    make(db, "custom", bucketMaxSpanSeconds=600, bucketRoundingSeconds=600)
    entries = {e["name"]: e for e in db.list_collections()}
    assert entries["m"]["type"] == "timeseries"
    assert entries["m"]["options"]["timeseries"] == {"timeField": "t", "metaField": "s", "granularity": "seconds",
                                                    "bucketMaxSpanSeconds": 3600}
    assert entries["custom"]["options"]["timeseries"] == {"timeField": "t", "bucketRoundingSeconds": 600,
                                                         "bucketMaxSpanSeconds": 600}
    assert entries["system.buckets.m"]["type"] == "collection"
    assert entries["system.buckets.m"]["options"]["clusteredIndex"] is True


# ------------------------------------------------------------------------------------------------ buckets
def test_bucket_document_shape_and_rounding(db):
    # bucket_catalog: control.min.<time> is the first time rounded down to bucketRoundingSeconds (minutes
    # granularity: 3600 s); control.max holds the newest; meta stored once; data columns keyed "0", "1", ...
    ts = make(db, metaField="s", granularity="minutes")
    ts.insert_many(readings("a", 3, start=T0 + dt.timedelta(minutes=17, seconds=5)))
    b = db["system.buckets.m"].find_one()
    assert set(b) == {"_id", "control", "meta", "data"}
    assert b["meta"] == "a" and b["control"]["version"] == 2 and b["control"]["count"] == 3
    assert b["control"]["min"]["t"] == T0
    assert b["control"]["max"]["t"] == T0 + dt.timedelta(minutes=19, seconds=5)
    assert list(b["data"]["v"]) == ["0", "1", "2"]
    assert b["_id"].generation_time.replace(tzinfo=None) == T0  # ObjectId timestamp = rounded min time


def test_buckets_per_meta_value(db):
    # one bucket per distinct meta value (numBucketsOpenedDueToMetadata)
    ts = make(db, metaField="s", granularity="minutes")
    ts.insert_many(readings("a", 5) + readings("b", 5) + readings("c", 5))
    s = db.command("collStats", "m")["timeseries"]
    assert s["bucketCount"] == 3 and s["numBucketsOpenedDueToMetadata"] == 3


def test_meta_subdocument_field_order_is_one_bucket(db):
    # bucket_metadata.cpp normalizes meta sub-documents: {a, b} and {b, a} share a bucket
    ts = make(db, metaField="s")
    ts.insert_one({"t": T0, "s": {"a": 1, "b": 2}})
    ts.insert_one({"t": T0, "s": {"b": 2, "a": 1}})
    assert db.command("collStats", "m")["timeseries"]["bucketCount"] == 1


def test_max_1000_measurements(db):
    # timeseriesBucketMaxCount = 1000: numBucketsClosedDueToCount
    ts = make(db, metaField="s", granularity="minutes")
    ts.insert_many(readings("a", 1440))
    s = db.command("collStats", "m")["timeseries"]
    counts = sorted(b["control"]["count"] for b in db["system.buckets.m"].find())
    assert counts == [440, 1000] and s["numBucketsClosedDueToCount"] == 1


def test_max_span_closes_time_forward(db):
    # granularity seconds: bucketMaxSpanSeconds 3600; a measurement at min + 3600 s opens a new bucket
    ts = make(db, metaField="s")
    ts.insert_many([{"t": T0, "s": "a"}, {"t": T0 + dt.timedelta(seconds=3599), "s": "a"},
                    {"t": T0 + dt.timedelta(seconds=3600), "s": "a"}])
    s = db.command("collStats", "m")["timeseries"]
    assert s["bucketCount"] == 2 and s["numBucketsClosedDueToTimeForward"] == 1


def test_time_backward_archives_and_reopens(db):
    # 8.0 archives a bucket on a measurement older than its min (numBucketsArchivedDueToTimeBackward); a later
    # measurement that fits the archived bucket reopens it (numBucketsReopened)
    ts = make(db, metaField="s")
    ts.insert_one({"t": T0 + dt.timedelta(hours=5), "s": "a"})
    ts.insert_one({"t": T0, "s": "a"})
    ts.insert_one({"t": T0 + dt.timedelta(hours=5, minutes=1), "s": "a"})
    s = db.command("collStats", "m")["timeseries"]
    assert s["numBucketsArchivedDueToTimeBackward"] >= 1 and s["numBucketsReopened"] == 1
    assert s["bucketCount"] == 2


def test_size_limit_125_kib(db):
    # timeseriesBucketMaxSize = 125 KiB: numBucketsClosedDueToSize
    ts = make(db, metaField="s")
    ts.insert_many([{"t": T0 + dt.timedelta(seconds=i), "s": "a", "blob": "x" * 2000} for i in range(200)])
    s = db.command("collStats", "m")["timeseries"]
    assert s["numBucketsClosedDueToSize"] >= 2
    assert all(b["control"]["count"] < 70 for b in db["system.buckets.m"].find())


def test_commits_and_avg_measurements_per_commit(db):
    # execution_stats.cpp: avgNumMeasurementsPerCommit = numMeasurementsCommitted / numCommits: with one
    # insert per measurement every commit holds one measurement, however full the buckets are
    ts = make(db, metaField="s", granularity="minutes")
    for d in readings("a", 120):
        ts.insert_one(d)
    s = db.command("collStats", "m")["timeseries"]
    assert s["bucketCount"] == 1 and s["numCommits"] == 120 and s["avgNumMeasurementsPerCommit"] == 1
    assert s["numBucketInserts"] == 1 and s["numBucketUpdates"] == 119
    ts2 = make(db, "m2", metaField="s", granularity="minutes")
    ts2.insert_many(readings("a", 120) + readings("b", 60))
    s2 = db.command("collStats", "m2")["timeseries"]
    assert s2["numCommits"] == 2 and s2["avgNumMeasurementsPerCommit"] == 90


def test_missing_time_field_is_refused(db):
    # the time field must be a BSON date (BadValue, code 2)
    ts = make(db, metaField="s")
    with pytest.raises(WriteError) as e:
        ts.insert_one({"s": "a", "v": 1})
    assert e.value.code == 2 and "'t' must be present" in str(e.value)
    with pytest.raises(WriteError):
        ts.insert_one({"t": "2026-10-01", "s": "a"})


# ------------------------------------------------------------------------------------------------ reads
def test_reads_return_measurements_with_meta(db):
    ts = make(db, metaField="s", granularity="minutes")
    ts.insert_many(readings("a", 30) + readings("b", 30))
    assert ts.count_documents({}) == 60 and ts.estimated_document_count() == 60
    doc = ts.find_one({"s": "b", "v": 3.0})
    assert doc["s"] == "b" and doc["t"] == T0 + dt.timedelta(minutes=3) and "_id" in doc
    assert list(doc)[:2] == ["t", "s"]  # time field first, then the meta field (manual example output)
    rows = list(ts.aggregate([{"$group": {"_id": "$s", "n": {"$sum": 1}}}, {"$sort": {"_id": 1}}]))
    assert rows == [{"_id": "a", "n": 30}, {"_id": "b", "n": 30}]
    assert sorted(ts.distinct("s")) == ["a", "b"]


def test_deletes_arbitrary_filter(db):
    # manual timeseries-limitations "Deletes": 7.0+ removes most limitations (arbitrary filters)
    ts = make(db, metaField="s", granularity="minutes")
    ts.insert_many(readings("a", 30) + readings("b", 30))
    assert ts.delete_many({"v": {"$gte": 8}}).deleted_count == 6
    assert ts.delete_many({"s": "b"}).deleted_count == 27
    assert ts.count_documents({}) == 27
    assert db.command("collStats", "m")["timeseries"]["bucketCount"] == 1


def test_updates_refused_clearly(db):
    ts = make(db, metaField="s")
    ts.insert_one({"t": T0, "s": "a"})
    with pytest.raises(OperationFailure) as e:
        ts.update_many({"s": "a"}, {"$set": {"s": "b"}})
    assert "time-series" in str(e.value)


def test_drop_drops_buckets(db):
    make(db, metaField="s").insert_one({"t": T0, "s": "a"})
    db.drop_collection("m")
    assert [e["name"] for e in db.list_collections()] == []
    db.m.insert_one({"x": 1})  # the name is an ordinary collection again
    assert db.m.find_one({}, {"_id": 0}) == {"x": 1}


# ------------------------------------------------------------------------------------------------ indexes
def test_default_and_secondary_indexes_translate_to_bucket_indexes(db):
    # 6.3+: a metaField collection gets {meta: 1, time: 1}; secondary indexes on the time field become
    # control.min/max (descending: max first), on the meta field become meta (manual "Time Series Indexes")
    ts = make(db, metaField="s")
    ts.create_index([("t", -1)])
    ts.create_index([("v", 1)])
    assert set(ts.index_information()) == {"s_1_t_1", "t_-1", "v_1"}
    bix = {n: i["key"] for n, i in db["system.buckets.m"].index_information().items()}
    assert bix["s_1_t_1"] == [("meta", 1), ("control.min.t", 1), ("control.max.t", 1)]
    assert bix["t_-1"] == [("control.max.t", -1), ("control.min.t", -1)]
    assert bix["v_1"] == [("control.min.v", 1), ("control.max.v", 1)]


# ------------------------------------------------------------------------------------------------ explain
def test_explain_unpack_bucket_with_control_predicates(db):
    # jstests/core/timeseries/ explain tests: the plan runs over system.buckets.<name> with predicates
    # rewritten to meta and control.min/max (time bounds widened by bucketMaxSpanSeconds), followed by
    # $_internalUnpackBucket carrying the measurement-level eventFilter
    ts = make(db, metaField="s", granularity="minutes")
    ts.insert_many(readings("a", 1440) + readings("b", 1440))
    lo, hi = T0 + dt.timedelta(hours=20), T0 + dt.timedelta(hours=21)
    ex = ts.find({"s": "a", "t": {"$gte": lo, "$lt": hi}}).explain()
    cursor, unpack = ex["stages"][0]["$cursor"], ex["stages"][1]["$_internalUnpackBucket"]
    assert cursor["queryPlanner"]["namespace"] == "ts_test.system.buckets.m"
    parsed = str(cursor["queryPlanner"]["parsedQuery"])
    assert "'meta': 'a'" in parsed and "control.max.t" in parsed and "control.min.t" in parsed
    assert cursor["queryPlanner"]["winningPlan"]["inputStage"]["indexName"] == "s_1_t_1"
    assert cursor["executionStats"]["nReturned"] == 1  # one bucket of 1000 holds hours 0-16, the other 16-24
    assert unpack["timeField"] == "t" and unpack["metaField"] == "s" and unpack["bucketMaxSpanSeconds"] == 86400
    assert unpack["eventFilter"] == {"t": {"$gte": lo, "$lt": hi}}
    assert ex["stages"][1]["nReturned"] == 60


def test_explain_aggregate_pushes_leading_match(db):
    ts = make(db, metaField="s")
    ts.insert_many(readings("a", 10))
    ex = db.command("explain", {"aggregate": "m", "pipeline": [{"$match": {"s": "a"}}, {"$count": "n"}],
                                "cursor": {}}, verbosity="queryPlanner")
    assert "$_internalUnpackBucket" in ex["stages"][1] and ex["stages"][2] == {"$count": "n"}


def test_coll_stats_stage_has_timeseries_section(db):
    # $collStats {storageStats: {}} on a time-series collection carries the same 'timeseries' section
    # (manual "$collStats": storageStats.timeseries for time-series collections)
    ts = make(db, metaField="s", granularity="minutes")
    ts.insert_many(readings("a", 10))
    out = list(ts.aggregate([{"$collStats": {"storageStats": {}}}]))[0]["storageStats"]
    assert out["timeseries"]["bucketsNs"] == "ts_test.system.buckets.m"
    assert out["timeseries"]["bucketCount"] == 1 and out["timeseries"]["numMeasurementsCommitted"] == 10
    assert db.command("dbStats")["objects"] == 1  # the one bucket document


def test_over_the_command_layer(db):
    # the create / insert / find commands as a driver sends them (labkit serve) reach the same collection
    db.command({"create": "w", "timeseries": {"timeField": "t", "metaField": "s"}})
    db.command({"insert": "w", "documents": [{"t": T0, "s": "a", "v": 1}, {"t": T0, "s": "b", "v": 2}]})
    got = db.command({"find": "w", "filter": {"s": "b"}})["cursor"]["firstBatch"]
    assert [d["v"] for d in got] == [2]


def test_bucket_control_min_max_follow_bson_order_for_every_type():
    """A bucket's control.min/max are the BSON-order extremes of each field (src/mongo/db/timeseries/
    bucket_catalog: MinMax uses the BSON comparison). The engine takes Python's order where it is BSON's
    (one type among numbers, naive dates, ObjectIds, booleans, strings) and the BSON comparison elsewhere: both
    must give the extremes a plain BSON sort gives, mixed types, NaN, aware dates and non-ASCII strings included."""
    import random

    from bson import ObjectId

    from labkit.engine.bson import values as V
    from labkit.engine.catalog import timeseries as ts

    rng = random.Random(7)
    pool = [1, -3, 2.5, float("nan"), float("-inf"), True, False, None, "b", "é", "a\u00ff", "ab", "",
            ObjectId("0" * 24), ObjectId("f" * 24), ObjectId("6" * 24), T0, T0 + dt.timedelta(hours=1),
            dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc), [1, 2], {"x": 1}]
    state = ts.TsState({"timeField": "t", "metaField": "m", "bucketMaxSpanSeconds": 3600, "granularity": "seconds"},
                       None)
    for _ in range(200):
        values = [rng.choice(pool) for _ in range(rng.randint(1, 12))]
        b = ts.Bucket(ObjectId(), None, False, None, T0)
        b.measurements = [{"t": T0, "v": v} for v in values]
        doc = ts.bucket_document(b, state)
        lo = hi = values[0]
        for v in values[1:]:
            if V.compare(v, lo) < 0:
                lo = v
            if V.compare(v, hi) > 0:
                hi = v
        assert V.compare(doc["control"]["min"]["v"], lo) == 0, values
        assert V.compare(doc["control"]["max"]["v"], hi) == 0, values


def test_a_bucket_built_one_write_at_a_time_equals_one_built_at_once_and_old_versions_stay():
    """bucket_document folds only the measurements appended since its last call: each version equals the
    document built from scratch, and a version already handed out (stored, kept in the history) never changes."""
    import copy
    import random

    from bson import ObjectId

    from labkit.engine.catalog import timeseries as ts

    rng = random.Random(3)
    state = ts.TsState({"timeField": "t", "metaField": "m", "bucketMaxSpanSeconds": 3600, "granularity": "seconds"},
                       None)
    b = ts.Bucket(ObjectId("6" * 24), {"s": 1}, True, None, T0)
    versions = []
    for i in range(60):
        m = {"t": T0 + dt.timedelta(seconds=rng.randint(0, 3000)), "m": {"s": 1}, "v": rng.choice([1, 2.5, "x", None])}
        if i % 7 == 0:
            m["extra"] = i
        b.measurements.append(m)
        doc = ts.bucket_document(b, state)
        fresh = ts.Bucket(b.id, b.meta, True, None, T0)
        fresh.measurements = list(b.measurements)
        assert doc == ts.bucket_document(fresh, state)
        versions.append((doc, copy.deepcopy(doc)))
    for handed_out, as_it_was in versions:
        assert handed_out == as_it_was
    b.measurements = b.measurements[10:]   # a delete replaces the list: folded again from the start
    fresh = ts.Bucket(b.id, b.meta, True, None, T0)
    fresh.measurements = list(b.measurements)
    assert ts.bucket_document(b, state) == ts.bucket_document(fresh, state)
