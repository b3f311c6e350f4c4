# ---
# jupyter:
#   jupytext:
#     formats: ipynb,src//py:percent
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
#   labkit:
#     minutes: 35
#     exercise_minutes: 10
#     title: "Bucket: group time-series readings per sensor and hour"
#     section: Patterns
#     demo: "Move the reading-interval slider to 1 s and compare 86,400 documents per sensor per day with 24 hourly buckets."
#     mistakes: ["a unique {sensorId, start} index together with a per-bucket cap (the second bucket of an hour then collides)", "forgetting $min/$max so the bucket summary drifts from its readings", "bucketing by hand inside a time-series collection"]
# ---

# %% [markdown]
# # 10 · Bucket: group time-series readings per sensor and hour
#
# **You will learn**
# - why one document per reading makes the collection and its indexes grow with every sample;
# - to group readings into one document per sensor and hour, written with a single upsert
#   (`$push`, `$inc`, `$min`, `$max`, `$setOnInsert`) and capped at N readings per bucket;
# - to compare both layouts with `collStats` (documents, bytes, index size) and `explain()` (keys and
#   documents examined for a day of one sensor);
# - what time-series collections do for you, and why you do not bucket by hand on top of them.
#
# **Time:** about 35 minutes.

# %%
import datetime as dt
import math

import bson
import pandas as pd

import labkit

db = labkit.fresh_db("10_bucket")
summary = labkit.seed.sensors(db, sensors=10, hours=24, interval_s=60, bucket_span_s=3600)
summary

# %% [markdown]
# The seeder wrote the same 24 hours of temperatures twice: one document per reading in `readings`, and one
# document per sensor and clock hour in `reading_buckets`. Ten sensors report once a minute.
#
# ## The workload
#
# | operation | type | rate | needs |
# |---|---|---|---|
# | store a reading | write | every sensor, every interval | must stay cheap as history grows |
# | chart one sensor's day | read | frequent | that sensor's readings for 24 hours, in time order |
# | show an hour's min / max | read | frequent | a summary, not every sample |
# | drop data older than N days | write | daily | delete whole hours at once |
#
# The source material's sensor reports **every second**: that is 86,400 documents per sensor per day if each
# reading is a document, and 24 if each hour is a document. Our generated sensors report every minute, so the
# numbers below are smaller, but the ratio is the point.

# %% [markdown]
# ## The naive design: one document per reading

# %%
db.readings.find_one({"_id": "sensor:3:2026-10-01T10:00:00Z"})


# %%
def stats(name):
    s = db.command("collStats", name)
    return {k: s[k] for k in ("count", "size", "avgObjSize", "nindexes", "totalIndexSize")}


def stages(plan):
    """Stage names of a winning plan, top to bottom."""
    plan = plan.get("queryPlan", plan)
    names = [plan["stage"]]
    while "inputStage" in plan:
        plan = plan["inputStage"]
        names.append(plan["stage"])
    return " <- ".join(names)


def day_cost(cursor):
    explain = cursor.explain()
    s = explain["executionStats"]
    return {"plan": stages(explain["queryPlanner"]["winningPlan"]), "keys examined": s["totalKeysExamined"],
            "docs examined": s["totalDocsExamined"], "docs returned": s["nReturned"]}


day = {"$gte": dt.datetime(2026, 10, 1), "$lt": dt.datetime(2026, 10, 2)}
pd.DataFrame({"readings": stats("readings")})

# %% [markdown]
# Charting sensor 3's day with the seeder's `{sensorId: 1, ts: 1}` index:

# %%
naive_day = db.readings.find({"sensorId": "sensor:3", "ts": day}).sort("ts", 1)
pd.Series(day_cost(naive_day), name="readings")

# %% [markdown]
# The index keeps the query from scanning the whole collection, yet one index key and one document are still read
# per reading: 1,440 of each for one day of one sensor at one reading a minute.
#
# ## The better design: one document per sensor and hour
#
# A bucket holds the hour's readings in an array, plus a summary kept up to date on every write
# (`count`, `sum`, `min`, `max`). The first two readings of one bucket:

# %%
bucket = db.reading_buckets.find_one({"_id": "sensor:3:2026-10-01T10:00:00Z"})
dict(bucket, readings=bucket["readings"][:2])

# %% [markdown]
# Its index is `{sensorId: 1, start: 1}`: equality on the sensor, then a range on the hour. The same day:

# %%
bucket_day = db.reading_buckets.find({"sensorId": "sensor:3", "start": day}).sort("start", 1)
pd.DataFrame({"one doc per reading": day_cost(naive_day), "hourly buckets": day_cost(bucket_day)})

# %% [markdown]
# Same readings, same information, 60 times fewer index keys and documents to read. Storage and indexes side
# by side:

# %%
side = pd.DataFrame({"one doc per reading": stats("readings"), "hourly buckets": stats("reading_buckets")})
side.loc["index entries"] = [db.readings.count_documents({}) * side.loc["nindexes", "one doc per reading"],
                             db.reading_buckets.count_documents({}) * side.loc["nindexes", "hourly buckets"]]
side

# %% [markdown]
# The bucket documents are bigger (about 60 readings each) but there are 60 times fewer of them, so the data is
# smaller overall (field names such as `sensorId` are stored once per hour instead of once per reading) and the
# indexes shrink by the same factor as the document count. Index size matters most: indexes should fit in RAM.
#
# An hour's min and max need no scan of the readings at all; they are stored on the bucket:

# %%
db.reading_buckets.find_one({"sensorId": "sensor:3", "start": dt.datetime(2026, 10, 1, 10)},
                            {"_id": 0, "start": 1, "count": 1, "min": 1, "max": 1})

# %% [markdown]
# ## Writing into buckets: one upsert per reading
#
# A new reading finds the open bucket of its sensor and hour and appends to it; the first reading of an hour
# creates the bucket. All of that is **one** `update_one(..., upsert=True)`:
#
# - the filter names the bucket: sensor, hour start, and `count < N` so a full bucket is not chosen;
# - `$push` appends the reading, `$inc` counts it and adds it to the sum, `$min` / `$max` keep the extremes;
# - `$setOnInsert` fills fields only when the upsert creates a new bucket (its `_id` and `end`).
#
# With a cap, one hour can need several buckets, so the index on `{sensorId, start}` must **not** be unique
# (the seeder's uncapped buckets could use a unique one). We name each bucket after its first reading.

# %%
CAP = 60


def add_reading(coll, sensor_id, ts, value, cap=CAP):
    start = ts.replace(minute=0, second=0, microsecond=0)
    coll.update_one(
        {"sensorId": sensor_id, "start": start, "count": {"$lt": cap}},
        {"$push": {"readings": {"ts": ts, "temperature": value}},
         "$inc": {"count": 1, "sum": value},
         "$min": {"min": value},
         "$max": {"max": value},
         "$setOnInsert": {"_id": f"{sensor_id}:{ts.isoformat()}Z", "end": start + dt.timedelta(hours=1)}},
        upsert=True,
    )


live = db.live_buckets
live.create_index([("sensorId", 1), ("start", 1)])
source = list(db.readings.find({"sensorId": "sensor:3", "ts": {"$gte": dt.datetime(2026, 10, 1, 10),
                                                              "$lt": dt.datetime(2026, 10, 1, 12)}}).sort("ts", 1))
for r in source:
    add_reading(live, r["sensorId"], r["ts"], r["temperature"], cap=25)
print("readings written:", len(source), "| update_one calls:", len(source), "| bucket documents:",
      live.count_documents({}))
pd.DataFrame(live.find({}, {"readings": 0}).sort("_id", 1))[["_id", "start", "end", "count", "min", "max"]]

# %% [markdown]
# With a cap of 25, each hour of 60 readings needs three buckets (25 + 25 + 10). The cap keeps a bucket's
# size bounded even if a sensor suddenly reports much faster. The summary fields agree with the readings:

# %%
def summary_matches(b):
    values = [r["temperature"] for r in b["readings"]]
    return b["count"] == len(values) and b["min"] == min(values) and b["max"] == max(values)


print("buckets whose summary matches their readings:",
      sum(summary_matches(b) for b in live.find()), "of", live.count_documents({}))

# %% [markdown]
# ## Explore: interval, bucket span and cap
#
# Pick a reading interval and a bucket span (both divide a day evenly), and a cap per bucket.
# Exact arithmetic, per sensor per day: how many documents each layout stores, how many index entries that costs
# (two indexes each: `_id` and the compound one) and how many BSON bytes the documents take. The sizes are
# `bson.encode` sizes of documents shaped like the ones above.

# %%
from labkit.plots import bars_against_limit
from labkit.sizes import doc_size_with_array
from labkit.widgets import explorer

reading_doc = db.readings.find_one({"_id": "sensor:3:2026-10-01T10:00:00Z"})
empty_bucket = {k: v for k, v in bucket.items() if k != "readings"}
item = bucket["readings"][0]


def per_day(interval_s, bucket_span_min, cap):
    readings = math.ceil(86_400 / interval_s)
    span_s = bucket_span_min * 60
    per_span = math.ceil(span_s / interval_s)
    spans = math.ceil(86_400 / span_s)
    buckets_per_span = math.ceil(per_span / cap)
    buckets = spans * buckets_per_span
    full = min(per_span, cap)
    rest = per_span - (buckets_per_span - 1) * full
    bucket_bytes = doc_size_with_array(empty_bucket, "readings", full, lambda i: item)
    last_bytes = doc_size_with_array(empty_bucket, "readings", rest, lambda i: item)
    return {
        "readings per sensor per day": readings,
        "docs per sensor per day: one per reading": readings,
        "docs per sensor per day: buckets": buckets,
        "index entries: one per reading": 2 * readings,
        "index entries: buckets": 2 * buckets,
        "bytes per day: one per reading": readings * len(bson.encode(reading_doc)),
        "bytes per day: buckets": spans * ((buckets_per_span - 1) * bucket_bytes + last_bytes),
        "bytes of one full bucket": bucket_bytes,
        "bucket under 16 MiB": bucket_bytes <= 16 * 1024 * 1024,
    }


def draw(ax, values, r):
    ax.barh(["one per reading", "buckets"], [r["index entries: one per reading"], r["index entries: buckets"]])
    ax.set_xlabel("index entries per sensor per day")


bucketing = explorer(per_day, sliders={"interval_s": (1, 300, 60),
                                       "bucket_span_min": [60, 10, 15, 30, 120, 360, 720, 1440],
                                       "cap": (10, 100_000, 100_000, 10)},
                     title="Bucket sizing", draw=draw)
bucketing

# %% [markdown]
# At the source's one reading per second and hourly buckets with no effective cap, the readout shows 86,400
# documents against 24:

# %%
pd.Series(per_day(interval_s=1, bucket_span_min=60, cap=100_000))

# %% [markdown]
# A cap of 60 at one reading a second brings the bucket count to 1,440 a day: still 60 times fewer documents,
# and each bucket stays small. Pick the span from the queries (an hour chart reads one bucket) and the cap from
# the worst-case reporting rate.

# %%
pd.Series(per_day(interval_s=1, bucket_span_min=60, cap=60))

# %% [markdown]
# ## Time-series collections: bucketing done by the server
#
# MongoDB 5.0+ has **time-series collections**. You insert one document per measurement; the server groups
# them into buckets per `metaField` value and time span, stored in an internal collection
# `system.buckets.<name>`: each bucket keeps the measurements in columns plus `control.min` / `control.max` of
# every field, and queries on the time field are rewritten to those bounds. Clients read and write
# measurements; the buckets are the server's business.
#
# So if a time-series collection fits, insert plain readings into it and let the server bucket. Do not push
# arrays of readings into it yourself: each "reading" would then be a bucket the server buckets again, its
# per-measurement compression and time-range optimizations stop working, and the `timeField` no longer
# describes the samples. Hand-made buckets (the first part of this lesson) are for workloads where the
# built-in kind does not fit, e.g. when the bucket itself carries business fields you update later.
#
# The server's bucketing rules (manual "Time Series", granularity): with `granularity: "minutes"` a bucket
# spans at most 24 hours (`bucketMaxSpanSeconds` 86,400), its start is rounded down to the hour, and a bucket
# holds at most 1,000 measurements; buckets never mix meta values.
#
# **Predict first.** The same 14,400 readings (10 sensors, one a minute for a day) go into a time-series
# collection with `metaField: "sensorId"`, `granularity: "minutes"`. How many buckets will the server make?

# %%
ex_ts = labkit.exercises.get("10-predict-ts-buckets")
ex_ts

# %% tags=["solution"]
ex_ts.predict(20)

# %% tags=["reveal"]
ts_coll = db.create_collection(
    "readings_ts", timeseries={"timeField": "ts", "metaField": "sensorId", "granularity": "minutes"})
ts_coll.insert_many([{k: v for k, v in r.items() if k != "_id"} for r in db.readings.find().sort("_id", 1)])
ts_stats = db.command("collStats", "readings_ts")["timeseries"]
buckets = db[ts_stats["bucketsNs"].split(".", 1)[1]]


def bucket_figures():
    """Readings per bucket, counted from the buckets themselves (control.count), next to the server's counters."""
    s = db.command("collStats", "readings_ts")["timeseries"]
    n = buckets.count_documents({})
    readings_in_buckets = sum(b["control"]["count"] for b in buckets.find({}, {"control.count": 1}))
    return {"documents seen by clients": ts_coll.count_documents({}), "buckets": n,
            "readings per bucket (from the buckets)": round(readings_in_buckets / n, 1),
            "writes to buckets (numCommits)": s["numCommits"],
            "measurements per commit (avgNumMeasurementsPerCommit)": s["avgNumMeasurementsPerCommit"]}


pd.Series(bucket_figures(), name="readings_ts")

# %% tags=["reveal"]
ex_ts.check(ts_stats["bucketCount"])

# %% [markdown]
# One bucket, as the server stores it: an ObjectId `_id` whose timestamp is the bucket's start, `control`
# with the count and the min / max of every field (the time minimum rounded down to the hour; the `_id` min /
# max left out here), `meta` the sensor once, `data` one column per field.

# %%
one = buckets.find_one({"meta": "sensor:3"}, sort=[("control.min.ts", 1)])
no_ids = {part: {f: v for f, v in one["control"][part].items() if f != "_id"} for part in ("min", "max")}
{"_id (an ObjectId) starts at": one["_id"].generation_time.replace(tzinfo=None),
 "control": {"version": one["control"]["version"], "count": one["control"]["count"], **no_ids},
 "meta": one["meta"], "data": {field: f"{len(column)} values" for field, column in one["data"].items()}}

# %% [markdown]
# `avgNumMeasurementsPerCommit` is **not** readings per bucket: it is how many measurements each write to a
# bucket carried. One `insert_many` of the whole day wrote each bucket once, so here the two happen to agree.
# A live feed that inserts one reading per call writes every reading separately. Feed sensor 3's next hour
# that way and compare:

# %%
before_feed = bucket_figures()
next_hour = dt.datetime(2026, 10, 2)
for minute in range(60):
    ts_coll.insert_one({"sensorId": "sensor:3", "ts": next_hour + dt.timedelta(minutes=minute), "temperature": 20.5})
pd.DataFrame({"after one insert_many": before_feed, "after 60 more insert_one calls": bucket_figures()})

# %% [markdown]
# Sixty more readings barely move readings per bucket (they join sensor 3's open bucket: it started at 16:00 on
# 1 October, rounded down to the hour, so its 24-hour span still covers them), but measurements per commit
# drops sharply: 60 more commits of one measurement each.
#
# Reading sensor 3's day from the time-series collection: the query is rewritten to `control.min.ts` /
# `control.max.ts` of the buckets, through the default `{sensorId: 1, ts: 1}` index (created with the
# collection, 6.3+), and the matching buckets are unpacked (`$_internalUnpackBucket`):

# %%
def ts_day_cost(cursor):
    """Keys and buckets examined, readings returned, from either explain shape (classic stages or SBE)."""
    explain = cursor.explain()
    if "stages" in explain:
        inner = explain["stages"][0]["$cursor"]["executionStats"]
        returned = next(s.get("nReturned") for s in explain["stages"] if "$_internalUnpackBucket" in s)
    else:
        inner = explain["executionStats"]
        returned = inner["nReturned"]
    return {"plan": "buckets, then $_internalUnpackBucket", "keys examined": inner["totalKeysExamined"],
            "docs examined": inner["totalDocsExamined"], "docs returned": returned}


ts_day = ts_coll.find({"sensorId": "sensor:3", "ts": day}).sort("ts", 1)
pd.DataFrame({"one doc per reading": day_cost(naive_day), "hourly buckets": day_cost(bucket_day),
              "time-series collection": ts_day_cost(ts_day)})

# %% [markdown]
# The time-series collection reads two buckets (a day of one sensor is 1,000 + 440 readings) and returns the
# same 1,440 readings: the bucket pattern's saving without writing a single upsert. (The embedded engine shows
# the classic explain shape; a server may run the same query in the slot-based engine and show it as one
# `queryPlan`, which `ts_day_cost` also reads.)

# %% [markdown]
# ## Exercise
#
# Write `add_reading(coll, sensor_id, ts, value)` that stores one reading with **one** upsert into hourly
# buckets of at most **60** readings, keeping `count`, `min` and `max` on each bucket (fields `sensorId`, `start`,
# `readings` as above). `ex.check(db, add_reading)` feeds 75 minutes of readings for two sensors into a scratch
# collection and inspects the buckets it gets.

# %%
ex = labkit.exercises.get("10-bucket-upsert")
ex


# %% tags=["solution"]
def add_reading(coll, sensor_id, ts, value):
    start = ts.replace(minute=0, second=0, microsecond=0)
    coll.update_one(
        {"sensorId": sensor_id, "start": start, "count": {"$lt": 60}},
        {"$push": {"readings": {"ts": ts, "temperature": value}},
         "$inc": {"count": 1},
         "$min": {"min": value},
         "$max": {"max": value},
         "$setOnInsert": {"_id": f"{sensor_id}:{ts.isoformat()}Z"}},
        upsert=True,
    )


ex.check(db, add_reading)

# %% [markdown]
# ## Exercise: a new series in a time-series collection
#
# Electricity meters in two buildings report every **15 seconds**: `{meterId, building, ts, kwh}`. Write
# `setup_meters(db)`, which creates the time-series collection `meter_readings`, and `store_batch(coll, batch)`,
# which stores a list of readings as they arrive. The check creates a private database, calls your setup, feeds
# four meters' two hours of readings in batches of 40 through `store_batch`, watches the commands it sends and
# counts readings per bucket from the buckets.

# %%
ex_meters = labkit.exercises.get("10-ts-meters")
ex_meters


# %% tags=["solution"]
def setup_meters(db):
    db.create_collection("meter_readings", timeseries={"timeField": "ts", "metaField": "meterId",
                                                       "granularity": "seconds"})


def store_batch(coll, batch):
    coll.insert_many(batch)


ex_meters.check(db, setup_meters, store_batch)

# %% [markdown]
# ## Summary
#
# - One document per reading makes documents and index entries grow with every sample; an hourly bucket cuts
#   both by the number of readings per hour (86,400 vs 24 per sensor per day at one reading a second).
# - One upsert per reading maintains the bucket: `$push` + `$inc` + `$min`/`$max`, `$setOnInsert` for
#   creation-only fields, `count < N` in the filter as the cap (so no unique index on `{sensorId, start}`).
# - Index `{sensorId: 1, start: 1}`: a day of one sensor reads 24 keys instead of one per reading.
# - Prefer a time-series collection when you can: it buckets on the server (per meta value, at most 1,000
#   measurements and one span each); never bucket by hand inside one. Readings per bucket come from the buckets;
#   `avgNumMeasurementsPerCommit` measures write batching.
#
# **Next:** 11 · the outlier pattern.

# %% [markdown] tags=["navigation"]
# [← 08 · Capstone: a real-world profile page](08_capstone_profile.ipynb) · [Contents](../CONTENTS.md) · [11 · Outlier: embed for the common case, overflow for the viral post →](11_outlier.ipynb)
