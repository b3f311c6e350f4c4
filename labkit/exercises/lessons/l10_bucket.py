"""Lesson 10 (Bucket: group time-series readings per sensor and hour): its exercises and their checkers.

Notebook: ``notebooks/10_bucket.ipynb``.
"""
from __future__ import annotations

from typing import Any, Callable

from labkit.exercises import steps
from labkit.exercises.kinds import BehaviourCheck, Lab, Prediction
from labkit.exercises.outcomes import NotYet
from labkit.exercises.registry import Lesson

LESSON = Lesson(__file__)


def _reading_value(reading: dict) -> Any:
    """The numeric value of one stored reading (``temperature``, ``v``, ``value`` ...: the first number)."""
    for key in ("temperature", "value", "v"):
        if isinstance(reading.get(key), (int, float)) and not isinstance(reading.get(key), bool):
            return reading[key]
    return next((v for k, v in reading.items() if k != "ts" and isinstance(v, (int, float))
                 and not isinstance(v, bool)), None)


def _fresh_buckets(db: Any) -> None:
    db["buckets"].create_index([("sensorId", 1), ("start", 1)])


@LESSON.exercise(BehaviourCheck, "10-bucket-upsert",
                 takes=steps.db_and_function("add_reading"), fresh=_fresh_buckets)
def _check_bucket_upsert(lab: Lab, db: Any, add_reading: Callable) -> str:
    import datetime as dt

    box = lab.sandbox()
    coll = box.db["buckets"]
    start = dt.datetime(2026, 10, 2, 10, 0)
    fed: dict[str, list[tuple[dt.datetime, float]]] = {"sensor:a": [], "sensor:b": []}
    try:
        for i in range(150):  # 75 minutes, one reading per sensor every 30 s
            ts = start + dt.timedelta(seconds=30 * i)
            for k, sid in enumerate(fed):
                value = round(20.0 + ((i * 7 + k * 3) % 23) / 10, 2)
                fed[sid].append((ts, value))
                add_reading(coll, sid, ts, value)
        names = box.recorder.names()
        writes = box.recorder.write_statements()
        docs = list(coll.find().sort([("sensorId", 1), ("start", 1), ("_id", 1)]))
    finally:
        box.close()
    reads = sum(n in ("find", "aggregate", "count", "distinct") for n in names)
    if reads and "insert" in names:
        raise NotYet(f"your function reads first ({reads} reads for 300 readings) and then inserts or updates: two "
                     "round trips per reading, and two readings arriving together can both find no open bucket and "
                     "create two. One `update_one(filter, update, upsert=True)` finds-or-creates atomically.")
    if reads:
        raise NotYet(f"your function sent {reads} reads for 300 readings: the upsert's filter already finds the "
                     "open bucket, so no read is needed (one round trip per reading).")
    if writes > 300:
        raise NotYet(f"{writes} writes for 300 readings: put `$push`, `$inc`, `$min` and `$max` in ONE update.")
    if not docs:
        raise NotYet("the scratch collection is empty after 300 calls: pass `upsert=True` to update_one.")
    missing = [f for f in ("sensorId", "start", "readings", "count", "min", "max") if any(f not in d for d in docs)]
    if missing:
        raise NotYet(f"some buckets lack field(s) {missing}; each bucket needs sensorId, start, readings, count, "
                     "min and max.")
    stored = sum(len(d["readings"]) for d in docs if isinstance(d["readings"], list))
    if stored != 300:
        raise NotYet(f"the buckets hold {stored} readings, but 300 were written; `$push` each reading once.")
    if len(docs) >= 150:
        raise NotYet(f"{len(docs)} documents for 300 readings: almost one per reading. The filter must name the "
                     "bucket (sensor and hour start), not the reading's exact timestamp.")
    for d in docs:
        shapeless = [r for r in d["readings"] if not isinstance(r, dict) or not isinstance(r.get("ts"), dt.datetime)
                     or _reading_value(r) is None]
        if shapeless:
            raise NotYet(f"bucket {d.get('_id')} holds a reading {shapeless[0]!r}: each reading is a subdocument "
                         "with its `ts` (a datetime) and its numeric value, e.g. {ts, temperature}.")
        hours = {r["ts"].replace(minute=0, second=0, microsecond=0) for r in d["readings"]}
        if len(hours) != 1 or d["start"] not in hours:
            raise NotYet(f"bucket {d.get('_id')} mixes hours or has a `start` ({d['start']}) that is not the hour of "
                         "its readings: truncate ts to the hour with `ts.replace(minute=0, second=0, microsecond=0)`.")
        if d["count"] != len(d["readings"]):
            raise NotYet(f"bucket {d.get('_id')} says count={d['count']} but holds {len(d['readings'])} readings: "
                         "use `$inc: {count: 1}` in the same update as the `$push`.")
        if len(d["readings"]) > 60:
            raise NotYet(f"a bucket holds {len(d['readings'])} readings; cap it at 60 with `\"count\": {{\"$lt\": 60}}` "
                         "in the upsert filter (and no unique index that would forbid a second bucket per hour).")
        values = [_reading_value(r) for r in d["readings"]]
        if d["min"] != min(values) or d["max"] != max(values):
            raise NotYet(f"bucket {d.get('_id')} stores min={d['min']}, max={d['max']} but its readings range "
                         f"{min(values)}..{max(values)}: use `$min` and `$max`, not `$set`.")
    if len(docs) != 6:
        raise NotYet(f"{len(docs)} buckets; expected 6 (per sensor: two full buckets of 60 for 10:00-10:59 and "
                     "one of 30 for 11:00-11:14).")
    return "6 buckets for 300 readings, each within one hour, at most 60 readings, with a correct summary."


LESSON.add(Prediction, "10-predict-ts-buckets")


METERS_10 = ["meter:%02d" % i for i in range(4)]


def _meter_batches() -> list[list[dict]]:
    """Two hours of readings every 15 s from four meters of two buildings, in arrival batches of 40."""
    import datetime as dt
    start = dt.datetime(2026, 10, 2, 10, 0)
    rows = []
    for i in range(480):
        ts = start + dt.timedelta(seconds=15 * i)
        for k, m in enumerate(METERS_10):
            rows.append({"meterId": m, "building": "B%d" % (k // 2), "ts": ts,
                         "kwh": round(0.01 * ((i * 7 + k * 5) % 40), 3)})
    return [rows[j:j + 40] for j in range(0, len(rows), 40)]


def _meta_holds_meter(meta: Any, meter: str) -> bool:
    if meta == meter:
        return True
    return isinstance(meta, dict) and meta.get("meterId") == meter


@LESSON.exercise(BehaviourCheck, "10-ts-meters",
                 takes=steps.call("call it with the database and your two functions: "
                                  "`ex.check(db, setup_meters, store_batch)`.", None, callable, callable))
def _check_meter_ts(lab: Lab, db: Any, setup_meters: Callable, store_batch: Callable) -> str:
    box = lab.sandbox()
    try:
        setup_meters(box.db)
        entry = next((e for e in box.db.list_collections() if e["name"] == "meter_readings"), None)
        if entry is None:
            raise NotYet("setup_meters(db) did not create `meter_readings`: "
                         "`db.create_collection(\"meter_readings\", timeseries={...})`.")
        if entry.get("type") != "timeseries":
            raise NotYet("`meter_readings` is an ordinary collection: create it with "
                         "`timeseries={\"timeField\": ..., \"metaField\": ..., \"granularity\": ...}` so the server "
                         "buckets the readings for you.")
        opts = entry["options"]["timeseries"]
        if opts.get("timeField") != "ts":
            raise NotYet(f"timeField is {opts.get('timeField')!r}: it must be the reading's own time, `ts` "
                         "(bucketing, control.min/max and time-range queries all use it).")
        mf = opts.get("metaField")
        if mf is None:
            raise NotYet("no metaField: the readings of all meters share buckets, so one meter's day unpacks "
                         "every meter's readings. Use the meter id (what identifies a series) as metaField.")
        if mf in ("kwh",):
            raise NotYet("metaField 'kwh' is the measured value: it changes with every reading, so almost every "
                         "reading opens its own bucket. The metaField names the series (the meter), not the value.")
        if mf == "building":
            raise NotYet("metaField 'building' groups two meters into one series: a query for one meter then "
                         "unpacks its neighbour's readings too. The series is the meter: use `meterId` (or a "
                         "sub-document holding meterId and building).")
        span = opts.get("bucketMaxSpanSeconds", 0)
        if opts.get("granularity") in ("minutes", "hours") or span > 3600:
            raise NotYet(f"granularity {opts.get('granularity') or span!r} for readings 15 s apart: the manual's "
                         "rule is to pick the granularity closest to the interval between readings of one series, "
                         "here 'seconds' (buckets up to one hour, times rounded to the minute).")
        coll = box.db["meter_readings"]
        box.recorder.clear()
        batches = _meter_batches()
        for batch in batches:
            store_batch(coll, [dict(r) for r in batch])
        names = box.recorder.names()
        n_read = sum(len(b) for b in batches)
        inserts = names.count("insert")
        others = [n for n in names if n in ("update", "findAndModify", "delete")]
        if others:
            raise NotYet(f"store_batch sent {others[0]} commands: measurements are inserted as they are, never "
                         "pushed into existing documents (that is bucketing by hand inside a time-series "
                         "collection; the server already buckets).")
        stored = coll.count_documents({})
        if stored < n_read:
            raise NotYet(f"{stored} documents for {n_read} readings: each document holds several readings. "
                         "Insert one document per reading and let the server bucket them; hand-made arrays inside "
                         "a time-series collection defeat its compression and time-range rewrites.")
        if stored > n_read:
            raise NotYet(f"{stored} documents for {n_read} readings: some readings were stored twice.")
        if inserts >= n_read:
            raise NotYet(f"{inserts} insert commands for {len(batches)} batches: one round trip per reading. "
                         "`coll.insert_many(batch)` stores a batch in one round trip (and one commit per bucket).")
        bucket_ns = box.db.command("collStats", "meter_readings")["timeseries"]["bucketsNs"].split(".", 1)[1]
        buckets = list(box.db[bucket_ns].find({}, {"meta": 1, "control.count": 1}))
        for m in METERS_10:
            if not any(_meta_holds_meter(b.get("meta"), m) for b in buckets):
                raise NotYet(f"no bucket's meta holds {m!r}: keep the meter id in the metaField value.")
        per_bucket = sum(b["control"]["count"] for b in buckets) / len(buckets)
        span = opts.get("bucketMaxSpanSeconds")
    finally:
        box.close()
    if per_bucket < 60:
        raise NotYet(f"{len(buckets)} buckets of {per_bucket:.0f} readings each"
                     + (f" (bucketMaxSpanSeconds={span})" if span else "") + ": buckets that small store one "
                     "control block per handful of readings and a day's query opens hundreds of them. Let "
                     "`granularity: \"seconds\"` choose the span (up to one hour per bucket).")
    return (f"a time-series collection on ts with one series per meter: {n_read} readings in {inserts} inserts "
            f"became {len(buckets)} buckets, {per_bucket:.0f} readings per bucket (counted from the buckets).")


