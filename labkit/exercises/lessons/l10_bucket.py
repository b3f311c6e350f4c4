"""Lesson 10 (Bucket: group time-series readings per sensor and hour): its exercises and their checkers.

Notebook: ``notebooks/10_bucket.ipynb``.
"""
from __future__ import annotations

from typing import Any, Callable

from labkit.exercises import observe, steps
from labkit.exercises.kinds import BehaviourCheck, Lab, Prediction
from labkit.exercises.outcomes import NotYet
from labkit.exercises.registry import Lesson

LESSON = Lesson(__file__)


PATIENTS_10 = ("patient:a", "patient:b")
CAP_10 = 100


def _beats() -> list[tuple[str, Any, int]]:
    """Two patients, one reading every 5 minutes from 00:00 on one day to 02:00 the next (26 hours)."""
    import datetime as dt
    start = dt.datetime(2026, 10, 2)
    out = []
    for i in range(26 * 12):
        at = start + dt.timedelta(minutes=5 * i)
        for k, pid in enumerate(PATIENTS_10):
            out.append((pid, at, 60 + (i * 7 + k * 11) % 41))
    return out


def _beat_value(reading: Any) -> Any:
    value = reading.get("bpm") if isinstance(reading, dict) else None
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


@LESSON.exercise(BehaviourCheck, "10-bucket-upsert", takes=steps.db_and_function("add_beat", "practice"))
def _check_bucket_upsert(lab: Lab, db: Any, add_beat: Callable) -> str:
    """Daily buckets of at most 100 heart-rate readings per patient, written with one upsert each (a transfer
    of the lesson's hourly sensor buckets). The learner's index on practice.heart_buckets is copied into the
    checker's sandbox, so a unique index that forbids a second bucket per day shows up."""
    import datetime as dt

    from pymongo.errors import DuplicateKeyError

    learners = {"heart_buckets": db["heart_buckets"]} if hasattr(db, "list_collection_names") else None
    beats = _beats()
    unique = ("a second bucket for the same patient and day was refused by a unique index: with a cap of 100 a "
              "day needs several buckets, so the index on {patientId, day} must not be unique (the source's "
              "unique index fits only uncapped buckets).")
    with lab.sandbox(indexes=learners) as box:
        coll = box.db["heart_buckets"]
        for pid, at, bpm in beats:
            lab.call(add_beat, coll, pid, at, bpm, raises={DuplicateKeyError: unique})
        names = box.recorder.names()
        writes = box.recorder.write_statements()
        docs = list(coll.find().sort([("patientId", 1), ("day", 1), ("_id", 1)]))
        keys = [tuple(ix["key"]) for ix in coll.list_indexes()]
        plan = observe.plan_figures(coll.find({"patientId": PATIENTS_10[0], "day": dt.datetime(2026, 10, 2),
                                               "count": {"$lt": CAP_10}}).explain())
    n = len(beats)
    reads = sum(x in ("find", "aggregate", "count", "distinct") for x in names)
    if reads and "insert" in names:
        raise NotYet(f"your function reads first ({reads} reads for {n} readings) and then inserts or updates: two "
                     "round trips per reading, and two readings arriving together can both find no open bucket and "
                     "create two. One `update_one(filter, update, upsert=True)` finds-or-creates atomically.")
    if reads:
        raise NotYet(f"your function sent {reads} reads for {n} readings: the upsert's filter already finds the "
                     "open bucket, so no read is needed (one round trip per reading).")
    if writes > n:
        raise NotYet(f"{writes} writes for {n} readings: put `$push`, `$inc`, `$min` and `$max` in ONE update.")
    if not docs:
        raise NotYet(f"the scratch collection is empty after {n} calls: pass `upsert=True` to update_one.")
    fields = ("patientId", "day", "readings", "count", "sum", "min", "max")
    missing = [f for f in fields if any(f not in d for d in docs)]
    if missing:
        raise NotYet(f"some buckets lack field(s) {missing}; each bucket needs {', '.join(fields)}.")
    stored = sum(len(d["readings"]) for d in docs if isinstance(d["readings"], list))
    if stored != n:
        raise NotYet(f"the buckets hold {stored} readings, but {n} were written; `$push` each reading once.")
    if len(docs) >= n // 2:
        raise NotYet(f"{len(docs)} documents for {n} readings: almost one per reading. The filter must name the "
                     "bucket (patient and day), not the reading's exact time.")
    for d in docs:
        shapeless = [r for r in d["readings"] if not isinstance(r, dict) or not isinstance(r.get("at"), dt.datetime)
                     or _beat_value(r) is None]
        if shapeless:
            raise NotYet(f"bucket {d.get('_id')} holds a reading {shapeless[0]!r}: each reading is a subdocument "
                         "{at, bpm}.")
        days = {r["at"].replace(hour=0, minute=0, second=0, microsecond=0) for r in d["readings"]}
        if len(days) != 1 or d["day"] not in days:
            raise NotYet(f"bucket {d.get('_id')} mixes days or has a `day` ({d['day']}) that is not the day of its "
                         "readings: truncate `at` to the day, `at.replace(hour=0, minute=0, second=0, "
                         "microsecond=0)`.")
        if d["count"] != len(d["readings"]):
            raise NotYet(f"bucket {d.get('_id')} says count={d['count']} but holds {len(d['readings'])} readings: "
                         "use `$inc: {count: 1}` in the same update as the `$push`.")
        if len(d["readings"]) > CAP_10:
            raise NotYet(f"a bucket holds {len(d['readings'])} readings; cap it at {CAP_10} with "
                         f"`\"count\": {{\"$lt\": {CAP_10}}}` in the upsert filter.")
        values = [_beat_value(r) for r in d["readings"]]
        if d["min"] != min(values) or d["max"] != max(values):
            raise NotYet(f"bucket {d.get('_id')} stores min={d['min']}, max={d['max']} but its readings range "
                         f"{min(values)}..{max(values)}: use `$min` and `$max`, not `$set`.")
        if d["sum"] != sum(values):
            raise NotYet(f"bucket {d.get('_id')} stores sum={d['sum']} but its readings add up to {sum(values)}: "
                         "`$inc` the sum by the reading's bpm in the same update (the average is sum / count).")
    expected = 8  # per patient: 288 readings on the first day (100 + 100 + 88), 24 on the second
    if len(docs) != expected:
        raise NotYet(f"{len(docs)} buckets; expected {expected} (per patient: 100 + 100 + 88 readings on the first "
                     "day, 24 on the second).")
    if not any(k[:2] in (("patientId", "day"), ("day", "patientId")) for k in keys) or plan.collscan:
        raise NotYet("every upsert looks for its open bucket by patient and day, and without an index on them "
                     "each reading scans the whole collection: create `[(\"patientId\", 1), (\"day\", 1)]` on "
                     "practice.heart_buckets (not unique).")
    return (f"{len(docs)} daily buckets for {n} readings, at most {CAP_10} each, with count, sum, min and max right, "
            "written with one upsert per reading through the {patientId, day} index.")


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


