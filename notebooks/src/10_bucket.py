# ---
# jupyter:
#   jupytext:
#     formats: ipynb,src//py:percent
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
#   labkit:
#     minutes: 40
#     exercise_minutes: 10
#     title: "Bucket: group time-series readings per sensor and hour"
#     section: Patterns
#     demo: "Move the reading-interval slider to 1 s and compare 86,400 documents per sensor per day with 24 hourly buckets."
#     mistakes: ["a unique index on the bucket key together with a per-bucket cap (the second bucket of a period then collides)", "forgetting $min/$max so the bucket summary drifts from its readings", "storing an average instead of the sum, so it cannot be kept with $inc", "reading the open bucket first, then inserting or updating (two round trips, two buckets when readings race)", "bucketing by hand inside a time-series collection"]
#     sources:
#     - title: "MongoDB manual: Group Data with the Bucket Pattern"
#       url: https://www.mongodb.com/docs/manual/data-modeling/design-patterns/group-data/bucket-pattern/
#     - title: "MongoDB manual: Group Data (time series collections apply the bucket pattern)"
#       url: https://www.mongodb.com/docs/manual/data-modeling/design-patterns/group-data/
#     - title: "MongoDB manual: $collStats (aggregation stage)"
#       url: https://www.mongodb.com/docs/manual/reference/operator/aggregation/collStats/
#     - title: "MongoDB manual: Ensure Indexes Fit in RAM"
#       url: https://www.mongodb.com/docs/manual/tutorial/ensure-indexes-fit-ram/
#     - title: "MongoDB manual: $setOnInsert"
#       url: https://www.mongodb.com/docs/manual/reference/operator/update/setOnInsert/
#     - title: "MongoDB manual: Time Series"
#       url: https://www.mongodb.com/docs/manual/core/timeseries-collections/
#     - title: "MongoDB manual: About Time Series Data (how bucketing works, bucket closure)"
#       url: https://www.mongodb.com/docs/manual/core/timeseries/timeseries-bucketing/
#     - title: "mongodb/mongo src/mongo/db/timeseries/timeseries.idl (timeseriesBucketMaxCount, timeseriesBucketMaxSize, timeseriesBucketMinCount)"
#       url: https://github.com/mongodb/mongo/blob/v8.0/src/mongo/db/timeseries/timeseries.idl
#     - title: "mongodb/mongo src/mongo/db/timeseries/timeseries_options.cpp (bucketMaxSpanSeconds and rounding per granularity)"
#       url: https://github.com/mongodb/mongo/blob/v8.0/src/mongo/db/timeseries/timeseries_options.cpp
#     - title: "MongoDB manual: Time Series Collection Indexes (the default metaField and timeField index, 6.3+)"
#       url: https://www.mongodb.com/docs/manual/core/timeseries/timeseries-index/
# ---

# %% [markdown]
# # 10 · Bucket: group time-series readings per sensor and hour
#
# **You will learn**
# - why one document per reading makes the collection and its indexes grow with every sample;
# - to group readings into one document per sensor and hour, written with a single upsert
#   (`$push`, `$inc`, `$min`, `$max`, `$setOnInsert`) and capped at N readings per bucket;
# - to compare both layouts with `$collStats` (documents, bytes, index size) and `explain()` (keys and
#   documents examined for a day of one sensor);
# - what time-series collections do for you, and why you do not bucket by hand on top of them.
#
# **Time:** about 40 minutes.

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

# %%
labkit.workload_table([
    ("store a reading", "write", "1 per sensor per minute", "must stay cheap as history grows"),
    ("chart one sensor's day", "read", "20/s", "that sensor's readings for 24 hours, in time order"),
    ("show an hour's min / max / average", "read", "50/s", "a summary, not every sample"),
    ("drop data older than N days", "write", "once a day", "delete whole hours at once"),
], rate="rate (assumed)")

# %% [markdown]
# The source material's sensor reports **every second**: that is 86,400 documents per sensor per day if each
# reading is a document, and 24 if each hour is a document. Our generated sensors report every minute, so the
# numbers below are smaller, but the ratio is the point. (The source's sample bucket says "up to 60 measurements
# per document", which fits one reading a minute; at one a second an hourly bucket holds 3,600. The explorer
# below shows both.)

# %% [markdown]
# ## The naive design: one document per reading

# %%
db.readings.find_one({"_id": "sensor:3:2026-10-01T10:00:00Z"})


# %%
def stats(name):
    """Documents, bytes and index size of a collection, from its `$collStats` storage statistics."""
    s = next(db[name].aggregate([{"$collStats": {"storageStats": {}}}]))["storageStats"]
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
# The figures come from the [`$collStats`](https://www.mongodb.com/docs/manual/reference/operator/aggregation/collStats/)
# stage's `storageStats` (the older `collStats` command is deprecated since MongoDB 6.2). Charting sensor 3's day
# with the seeder's `{sensorId: 1, ts: 1}` index:

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
# (`count`, `sum`, `min`, `max`): the
# [bucket pattern](https://www.mongodb.com/docs/manual/data-modeling/design-patterns/group-data/bucket-pattern/).
# The first two readings of one bucket:

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
# The bucket documents are bigger (60 readings each) but there are 60 times fewer of them, so the data is
# smaller overall (field names such as `sensorId` are stored once per hour instead of once per reading) and the
# index entries shrink by the same factor as the document count. Index size matters most: the indexes a workload
# uses should fit in RAM ([manual: ensure indexes fit in RAM](https://www.mongodb.com/docs/manual/tutorial/ensure-indexes-fit-ram/)).
#
# An hour's summary needs no scan of the readings at all; it is stored on the bucket. The source's bucket shows
# `minTemp`, `maxTemp` and `avgTemp` (this seeder names them `min`, `max` and stores `sum`). Its upsert keeps
# `count`, `minTemp` and `maxTemp` up to date but never `avgTemp`: an average cannot be maintained by adding to
# it. Keeping the `sum` can (`$inc`), and the average is then `sum / count`, computed when the bucket is read.
# A find projection may hold that expression:

# %%
db.reading_buckets.find_one({"sensorId": "sensor:3", "start": dt.datetime(2026, 10, 1, 10)},
                            {"_id": 0, "start": 1, "count": 1, "min": 1, "max": 1,
                             "avgTemp": {"$round": [{"$divide": ["$sum", "$count"]}, 2]}})

# %% [markdown]
# ## Writing into buckets: one upsert per reading
#
# A new reading finds the open bucket of its sensor and hour and appends to it; the first reading of an hour
# creates the bucket. All of that is **one** `update_one(..., upsert=True)`:
#
# - the filter names the bucket: sensor, hour start, and `count < N` so a full bucket is not chosen;
# - `$push` appends the reading, `$inc` counts it and adds it to the sum, `$min` / `$max` keep the extremes;
# - [`$setOnInsert`](https://www.mongodb.com/docs/manual/reference/operator/update/setOnInsert/) fills fields
#   only when the upsert creates a new bucket (its `_id` and `end`).
#
# With a cap, one hour can need several buckets, so the index on `{sensorId, start}` must **not** be unique. The
# source's upsert has no cap and a unique `{sensorId: 1, date: 1}` index, like the seeder's buckets: right as long
# as one hour of readings always fits one document. We name each bucket after its first reading.

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
# Pick a reading interval and a bucket span (both divide a day evenly), and a cap per bucket. The readouts are
# **estimated** by arithmetic, per sensor per day: how many documents each layout stores, how many index entries
# that costs (two indexes each: `_id` and the compound one) and how many BSON bytes the documents take, from the
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
        "readings per full bucket": full,
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
# At the source's one reading per second and hourly buckets with no effective cap, the estimate gives 86,400
# documents against 24, each bucket holding 3,600 readings:

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
# MongoDB 5.0+ has [**time-series collections**](https://www.mongodb.com/docs/manual/core/timeseries-collections/).
# You insert one document per measurement; the server groups them into buckets per `metaField` value and time
# span, stored in an internal collection `system.buckets.<name>`: each bucket keeps the measurements in columns
# plus `control.min` / `control.max` of every field, and queries on the time field are rewritten to those
# bounds. Clients read and write measurements; the buckets are the server's business. The manual puts it
# plainly: time-series collections apply the bucket pattern for you and suit most of its uses
# ([manual: group data](https://www.mongodb.com/docs/manual/data-modeling/design-patterns/group-data/)).
#
# So if a time-series collection fits, insert plain readings into it and let the server bucket. Do not push
# arrays of readings into it yourself: the server would see one measurement with one time per array, so its
# per-field minimum and maximum, its time-range filters and its column compression would describe the arrays,
# not the samples. Hand-made buckets (the first part of this lesson) are for workloads where the built-in kind
# does not fit, e.g. when the bucket itself carries business fields you update later.
#
# **The server's bucket limits.** A bucket holds one `metaField` value and closes
# ([manual: about time series data](https://www.mongodb.com/docs/manual/core/timeseries/timeseries-bucketing/))
# when the next measurement would break one of these rules:
#
# - **count**: at most 1,000 measurements (server parameter `timeseriesBucketMaxCount`);
# - **size**: at most 125 KiB of measurements (`timeseriesBucketMaxSize: 128000`); a bucket with fewer
#   than 10 measurements (`timeseriesBucketMinCount`) is kept open up to about 12 MiB, for large measurements
#   ([mongo source: timeseries.idl](https://github.com/mongodb/mongo/blob/v8.0/src/mongo/db/timeseries/timeseries.idl));
# - **time span**: a measurement outside the bucket's span opens a new one. The span is `bucketMaxSpanSeconds`,
#   set by `granularity`: 1 hour for `"seconds"`, 24 hours for `"minutes"`, 30 days for `"hours"`; a bucket's
#   start is rounded down to the minute, the hour or the day
#   ([mongo source: timeseries_options.cpp](https://github.com/mongodb/mongo/blob/v8.0/src/mongo/db/timeseries/timeseries_options.cpp)).
#
# `$collStats` counts why buckets closed (`numBucketsClosedDueToCount`, `...DueToSize`, `...DueToTimeForward`).
# The documented defaults, in the units the server uses:

# %%
pd.Series({"measurements per bucket, at most (timeseriesBucketMaxCount)": 1_000,
           "bytes of measurements per bucket, at most (timeseriesBucketMaxSize)": 128_000,
           "bucket span in seconds, granularity 'seconds'": 3_600,
           "bucket span in seconds, granularity 'minutes'": 86_400,
           "bucket span in seconds, granularity 'hours'": 2_592_000}, name="documented defaults")

# %% [markdown]
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


def ts_stats(coll):
    """The `timeseries` section of a time-series collection's `$collStats` storage statistics."""
    return next(coll.aggregate([{"$collStats": {"storageStats": {}}}]))["storageStats"]["timeseries"]


buckets = db[ts_stats(ts_coll)["bucketsNs"].split(".", 1)[1]]


def bucket_figures():
    """Readings per bucket, counted from the buckets themselves (control.count), next to the server's counters."""
    s = ts_stats(ts_coll)
    n = buckets.count_documents({})
    readings_in_buckets = sum(b["control"]["count"] for b in buckets.find({}, {"control.count": 1}))
    return {"documents seen by clients": ts_coll.count_documents({}), "buckets": n,
            "readings per bucket (from the buckets)": round(readings_in_buckets / n, 1),
            "buckets closed: count / size / time span": "%d / %d / %d" % (
                s["numBucketsClosedDueToCount"], s["numBucketsClosedDueToSize"], s["numBucketsClosedDueToTimeForward"]),
            "writes to buckets (numCommits)": s["numCommits"],
            "measurements per commit (avgNumMeasurementsPerCommit)": s["avgNumMeasurementsPerCommit"]}


pd.Series(bucket_figures(), name="readings_ts")

# %% tags=["reveal"]
ex_ts.check(ts_stats(ts_coll)["bucketCount"])

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
# The ten buckets that closed (the first of each sensor) closed on the count, at 1,000 readings: small readings
# (a time, a temperature and the `_id` the driver adds to each) stay far below 125 KiB. The ten second buckets,
# 440 readings each, are still open.
#
# `avgNumMeasurementsPerCommit` is **not** readings per bucket: it is how many measurements each write to a
# bucket carried. One `insert_many` delivered the whole day in one command, so each write carried many
# readings. A live feed that inserts one reading per call writes every reading separately. Feed sensor 3's next
# hour that way and compare:

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
# The size cap shows with bigger measurements. A vibration sensor sends a 3,000-byte spectrum once a minute for
# four hours:

# %%
spectra = db.create_collection("spectra_ts", timeseries={"timeField": "ts", "metaField": "sensorId",
                                                         "granularity": "minutes"})
SPECTRUM = bytes(3000)
spectra.insert_many([{"sensorId": "vib:1", "ts": dt.datetime(2026, 10, 1) + dt.timedelta(minutes=m),
                      "spectrum": SPECTRUM} for m in range(240)])
spectra_stats = ts_stats(spectra)
spectra_buckets = db[spectra_stats["bucketsNs"].split(".", 1)[1]]
pd.Series({"bytes per spectrum": len(SPECTRUM), "measurements": spectra.count_documents({}),
           "buckets": spectra_stats["bucketCount"],
           "measurements per bucket": [b["control"]["count"] for b in
                                       spectra_buckets.find({}, {"control.count": 1}).sort("control.min.ts", 1)],
           "buckets closed: count / size / time span": "%d / %d / %d" % (
               spectra_stats["numBucketsClosedDueToCount"], spectra_stats["numBucketsClosedDueToSize"],
               spectra_stats["numBucketsClosedDueToTimeForward"])}, name="spectra_ts")

# %% [markdown]
# Here the buckets closed on their size, after a few dozen spectra each (about 125 KiB), long before 1,000
# measurements or 24 hours; the last one is still open. A hand-made bucket needs the same two caps, a count and
# a size, for the same reason.
#
# Reading sensor 3's day from the time-series collection: the query is rewritten to `control.min.ts` /
# `control.max.ts` of the buckets, through the default `{sensorId: 1, ts: 1}` index (created with the
# collection since MongoDB 6.3: [manual: time series indexes](https://www.mongodb.com/docs/manual/core/timeseries/timeseries-index/)),
# and the matching buckets are unpacked (`$_internalUnpackBucket`):

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
# the classic explain shape; a server may run the same query in its slot-based execution engine, SBE (lesson 03),
# and show it as one `queryPlan`, which `ts_day_cost` also reads.)
#
# Old data leaves either design in whole buckets: a hand-made bucket collection drops a day with
# `delete_many({"start": {"$lt": cutoff}})`, and a time-series collection created with `expireAfterSeconds` deletes
# its expired buckets by itself (lesson 34 measures it).

# %% [markdown]
# ## Exercise 1 · Heart-rate monitors in daily buckets
#
# A ward's monitors send each patient's heart rate every few minutes: `{patientId, at, bpm}`. Store the readings
# in `heart_buckets`, one bucket per patient and **day** (UTC), at most **100** readings per bucket. A bucket has
# `patientId`, `day` (the date at 00:00), `readings: [{at, bpm}]`, and keeps `count`, `sum` (so the average is
# `sum / count`), `min` and `max`. Write `add_beat(coll, patient_id, at, bpm)` with **one** upsert, and create on
# `practice.heart_buckets` the index its filter needs. `ex.check(practice, add_beat)` copies your index into a
# database of its own, feeds two patients' readings for more than a day, and inspects the buckets it gets.

# %%
practice = labkit.fresh_db("10_practice")
ex = labkit.exercises.get("10-bucket-upsert")
ex


# %% tags=["solution"]
def add_beat(coll, patient_id, at, bpm):
    day = at.replace(hour=0, minute=0, second=0, microsecond=0)
    coll.update_one(
        {"patientId": patient_id, "day": day, "count": {"$lt": 100}},
        {"$push": {"readings": {"at": at, "bpm": bpm}}, "$inc": {"count": 1, "sum": bpm},
         "$min": {"min": bpm}, "$max": {"max": bpm}},
        upsert=True)


practice.heart_buckets.create_index([("patientId", 1), ("day", 1)])
ex.check(practice, add_beat)

# %% [markdown]
# ## Exercise 2 · A new series in a time-series collection
#
# Electricity meters in two buildings report every **15 seconds**: `{meterId, building, ts, kwh}`. Write
# `setup_meters(db)`, which creates the time-series collection `meter_readings`, and `store_batch(coll, batch)`,
# which stores a list of readings as they arrive. The check creates a private database, calls your setup, feeds
# four meters' readings in batches through `store_batch`, watches the commands it sends and counts readings per
# bucket from the buckets.

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
#   Keep `sum` and `count`, not an average: the average is `sum / count` when read.
# - Index `{sensorId: 1, start: 1}`: a day of one sensor reads 24 keys instead of one per reading.
# - Prefer a time-series collection when you can: it buckets on the server (per meta value; at most 1,000
#   measurements, 125 KiB and one time span per bucket); never bucket by hand inside one. Readings per bucket
#   come from the buckets; `avgNumMeasurementsPerCommit` measures write batching.
#
# **Next:** 11 · the outlier pattern.

# %% [markdown] tags=["sources"]
# ## Sources
#
# 1. [MongoDB manual: Group Data with the Bucket Pattern](https://www.mongodb.com/docs/manual/data-modeling/design-patterns/group-data/bucket-pattern/)
# 2. [MongoDB manual: Group Data (time series collections apply the bucket pattern)](https://www.mongodb.com/docs/manual/data-modeling/design-patterns/group-data/)
# 3. [MongoDB manual: \$collStats (aggregation stage)](https://www.mongodb.com/docs/manual/reference/operator/aggregation/collStats/)
# 4. [MongoDB manual: Ensure Indexes Fit in RAM](https://www.mongodb.com/docs/manual/tutorial/ensure-indexes-fit-ram/)
# 5. [MongoDB manual: \$setOnInsert](https://www.mongodb.com/docs/manual/reference/operator/update/setOnInsert/)
# 6. [MongoDB manual: Time Series](https://www.mongodb.com/docs/manual/core/timeseries-collections/)
# 7. [MongoDB manual: About Time Series Data (how bucketing works, bucket closure)](https://www.mongodb.com/docs/manual/core/timeseries/timeseries-bucketing/)
# 8. [mongodb/mongo src/mongo/db/timeseries/timeseries.idl (timeseriesBucketMaxCount, timeseriesBucketMaxSize, timeseriesBucketMinCount)](https://github.com/mongodb/mongo/blob/v8.0/src/mongo/db/timeseries/timeseries.idl)
# 9. [mongodb/mongo src/mongo/db/timeseries/timeseries_options.cpp (bucketMaxSpanSeconds and rounding per granularity)](https://github.com/mongodb/mongo/blob/v8.0/src/mongo/db/timeseries/timeseries_options.cpp)
# 10. [MongoDB manual: Time Series Collection Indexes (the default metaField and timeField index, 6.3+)](https://www.mongodb.com/docs/manual/core/timeseries/timeseries-index/)

# %% [markdown] tags=["navigation"]
# [← 08 · Capstone: a real-world profile page](08_capstone_profile.ipynb) · [Contents](../CONTENTS.md) · [11 · Outlier: embed for the common case, overflow for the viral post →](11_outlier.ipynb)
