"""Exercises of the patterns lessons."""
from __future__ import annotations

from typing import Any

from labkit.exercises import Exercise, NotYet, Prediction, _db_and_function, _stages, register  # noqa: F401

# --- notebook 10 -------------------------------------------------------------------------------------------

def _reading_value(reading: dict) -> Any:
    """The numeric value of one stored reading (``temperature``, ``v``, ``value`` ...: the first number)."""
    for key in ("temperature", "value", "v"):
        if isinstance(reading.get(key), (int, float)) and not isinstance(reading.get(key), bool):
            return reading[key]
    return next((v for k, v in reading.items() if k != "ts" and isinstance(v, (int, float))
                 and not isinstance(v, bool)), None)


def _check_bucket_upsert(args: Any) -> str:
    import datetime as dt

    from labkit.exercises import observe

    db, add_reading = _db_and_function(args, "add_reading")
    box = observe.sandbox("10-bucket-upsert", db)
    coll = box.db["buckets"]
    coll.create_index([("sensorId", 1), ("start", 1)])
    box.recorder.clear()
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


@register
def _ex10() -> Exercise:
    return Exercise(
        id="10-bucket-upsert",
        lesson="10_bucket",
        task="Write add_reading(coll, sensor_id, ts, value): one upsert into hourly buckets of at most 60 readings "
             "with count/min/max.",
        checker=_check_bucket_upsert,
        hints=["Filter: `{sensorId, start: <ts truncated to the hour>, count: {$lt: 60}}`, and `upsert=True`.",
               "Update: `$push` the reading, `$inc` count, `$min`/`$max` the value, `$setOnInsert` the _id."],
        solution_text=(
            "def add_reading(coll, sensor_id, ts, value):\n"
            "    start = ts.replace(minute=0, second=0, microsecond=0)\n"
            "    coll.update_one(\n"
            "        {\"sensorId\": sensor_id, \"start\": start, \"count\": {\"$lt\": 60}},\n"
            "        {\"$push\": {\"readings\": {\"ts\": ts, \"temperature\": value}}, \"$inc\": {\"count\": 1},\n"
            "         \"$min\": {\"min\": value}, \"$max\": {\"max\": value},\n"
            "         \"$setOnInsert\": {\"_id\": f\"{sensor_id}:{ts.isoformat()}Z\"}},\n"
            "        upsert=True)\n\nex.check(db, add_reading)"
        ),
    )


def _explain_ts_buckets(measured: Any) -> str:
    return (f"{measured} buckets. With granularity 'minutes' a bucket may span 24 hours (bucketMaxSpanSeconds "
            "86,400), so one sensor's day fits one bucket's time span, but a bucket holds at most 1,000 "
            "measurements: 1,440 readings need two buckets per sensor (1,000 + 440). Buckets never mix meta values, "
            "so 10 sensors make 10 x 2 = 20. (avgNumMeasurementsPerCommit is a different figure: measurements "
            "per write to a bucket, which depends on how you batch inserts, not on bucket size.)")


@register
def _ex10_predict() -> Exercise:
    return Prediction(
        id="10-predict-ts-buckets",
        lesson="10_bucket",
        task="Predict: 10 sensors x 1,440 one-minute readings (one day) go into a time-series collection with "
             "metaField sensorId and granularity 'minutes'. How many buckets does the server make?",
        checker=None,
        hints=["Two limits apply: the time span of a bucket (granularity 'minutes': 24 hours) and at most 1,000 "
               "measurements per bucket. Buckets are per meta value."],
        solution_text="ex_ts.predict(20)",
        explain=_explain_ts_buckets,
    )


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


def _check_meter_ts(args: Any) -> str:
    from labkit.exercises import observe

    if not (isinstance(args, tuple) and len(args) == 3 and callable(args[1]) and callable(args[2])):
        raise NotYet("call it with the database and your two functions: `ex.check(db, setup_meters, store_batch)`.")
    db, setup_meters, store_batch = args
    box = observe.sandbox("10-ts-meters", db)
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


@register
def _ex10_meters() -> Exercise:
    return Exercise(
        id="10-ts-meters",
        lesson="10_bucket",
        task="Electricity meters report every 15 s ({meterId, building, ts, kwh}). Write setup_meters(db) that creates "
             "the time-series collection `meter_readings`, and store_batch(coll, batch) that stores a batch of "
             "readings as they arrive.",
        checker=_check_meter_ts,
        hints=["timeField is the reading's time, metaField what identifies one series (a meter), granularity the "
               "closest match to 15 s.",
               "`create_collection(\"meter_readings\", timeseries={\"timeField\": \"ts\", \"metaField\": \"meterId\", "
               "\"granularity\": \"seconds\"})`; store with one `insert_many(batch)`."],
        solution_text=(
            "def setup_meters(db):\n"
            "    db.create_collection(\"meter_readings\", timeseries={\"timeField\": \"ts\", \"metaField\": \"meterId\",\n"
            "                                                       \"granularity\": \"seconds\"})\n\n\n"
            "def store_batch(coll, batch):\n"
            "    coll.insert_many(batch)\n\n\nex_meters.check(db, setup_meters, store_batch)"),
    )


# --- notebooks 15-19 ---------------------------------------------------------------------------------------

def _index_keys(coll: Any) -> list[list[tuple[str, Any]]]:
    """Key patterns of a collection's secondary indexes, as lists of (field, direction)."""
    return [[(f, d) for f, d in spec["key"]] for name, spec in sorted(coll.index_information().items())
            if name != "_id_"]


def _attribute_against_setup(docs: list[dict]) -> None:
    """Compare the rewritten products with the setup copy kept by ``Exercise.remember`` (when there is one):
    nothing deleted or added, the other fields unchanged, every spec_* value now one {k, v} pair."""
    from labkit.exercises import remembered

    setup = remembered("products")
    if not setup:
        return
    now = {d["_id"]: d for d in docs}
    gone = sorted(set(setup) - set(now), key=str)
    if gone:
        raise NotYet(f"{len(gone)} of the {len(setup)} products of the setup are gone (e.g. {gone[0]!r}): the "
                     "rewrite replaces each document, it must not lose any. Re-run the setup cell and rewrite again.")
    extra = sorted(set(now) - set(setup), key=str)
    if extra:
        raise NotYet(f"{len(extra)} product(s) are not in the setup (e.g. {extra[0]!r}): replace each document in "
                     "place (`replace_one({'_id': ...})`), do not insert copies.")
    for pid in sorted(setup, key=str):
        old, new = setup[pid], now[pid]
        want = sorted((k[len("spec_"):], v) for k, v in old.items() if k.startswith("spec_"))
        got = sorted((e.get("k"), e.get("v")) for e in new.get("specs") or [] if isinstance(e, dict))
        if got != want:
            raise NotYet(f"product {pid!r}: specs {got} are not the setup's spec_* values {want}; every spec "
                         "field becomes exactly one {k, v} pair.")
        for field in sorted(k for k in old if not k.startswith("spec_")):
            if new.get(field) != old[field]:
                raise NotYet(f"product {pid!r}: `{field}` is not the value the setup had ({old[field]!r}); the "
                             "rewrite keeps every other field as it was.")


def _check_attribute(args: Any) -> str:
    if not (isinstance(args, tuple) and len(args) == 2 and callable(args[1])):
        raise NotYet("call it with the collection and your function: `ex.check(practice.products, to_attributes)`.")
    coll, to_attributes = args
    sample = {"_id": "prod:check", "name": "Check", "price": 7, "spec_weight_g": 120, "spec_power_w": 5}
    out = to_attributes(dict(sample))
    if not isinstance(out, dict):
        raise NotYet(f"to_attributes should return the new document (a dict), got {type(out).__name__}.")
    left = sorted(k for k in out if k.startswith("spec_"))
    if left:
        raise NotYet(f"the returned document still has {left}: the spec_* fields move into `specs`, they do not stay.")
    for k in ("_id", "name", "price"):
        if out.get(k) != sample[k]:
            raise NotYet(f"field `{k}` changed or disappeared ({out.get(k)!r}); keep the other fields as they are.")
    specs = out.get("specs")
    if isinstance(specs, dict):
        raise NotYet("`specs` is a subdocument keyed by name; the pattern needs an ARRAY of {k, v} pairs, so that "
                     "one index on specs.k/specs.v serves every name.")
    if not isinstance(specs, list) or not all(isinstance(s, dict) for s in specs):
        raise NotYet("`specs` should be a list of {\"k\": ..., \"v\": ...} subdocuments.")
    pairs = sorted((s.get("k"), s.get("v")) for s in specs if set(s) == {"k", "v"})
    if len(pairs) != len(specs):
        raise NotYet(f"each element should have exactly the fields k and v; got {specs}.")
    if pairs == sorted([("spec_power_w", 5), ("spec_weight_g", 120)]):
        raise NotYet("keep the name without its `spec_` prefix: k should be 'weight_g', not 'spec_weight_g'.")
    if any(isinstance(k, int) for k, _ in pairs):
        raise NotYet("k and v are swapped: k holds the spec's name, v its value.")
    if pairs != [("power_w", 5), ("weight_g", 120)]:
        raise NotYet(f"for {{spec_weight_g: 120, spec_power_w: 5}} expected the pairs weight_g=120 and power_w=5, "
                     f"got {pairs}.")
    docs = list(coll.find())
    if not docs:
        raise NotYet("the collection is empty; re-run the setup cell above the exercise.")
    wide = [d["_id"] for d in docs if any(k.startswith("spec_") for k in d)]
    if wide:
        raise NotYet(f"{len(wide)} document(s) still have spec_* fields (e.g. {wide[0]}); rewrite every document "
                     "with `replace_one({'_id': ...}, to_attributes(doc))`.")
    if any(not isinstance(d.get("specs"), list) or not d["specs"] for d in docs):
        raise NotYet("some documents have no `specs` array; run the rewrite on every document.")
    _attribute_against_setup(docs)
    keys = _index_keys(coll)
    on_specs = [k for k in keys if any(f.startswith("specs.") for f, _ in k)]
    wanted = [("specs.k", 1), ("specs.v", 1)]
    if [[f for f, _ in k] for k in on_specs] == [["specs.v", "specs.k"]]:
        raise NotYet("the index starts with specs.v: put the equality field first, {specs.k: 1, specs.v: 1}.")
    if not any([(f, abs(d)) for f, d in k] == wanted for k in on_specs):
        if on_specs:
            raise NotYet(f"the indexes on specs are {on_specs}; the pattern uses ONE compound index: specs.k, then "
                         "specs.v.")
        raise NotYet("no index on the specs array yet: create the compound index on specs.k, then specs.v.")
    if len(on_specs) > 1:
        raise NotYet(f"{len(on_specs)} indexes on specs ({on_specs}); the compound one serves every name, drop the others.")
    some = docs[0]["specs"][0]
    lo, hi = some["v"] - 100, some["v"] + 100
    query = {"specs": {"$elemMatch": {"k": some["k"], "v": {"$gte": lo, "$lte": hi}}}}
    expect = sum(1 for d in docs if any(s.get("k") == some["k"] and lo <= s.get("v") <= hi for s in d["specs"]))
    got = coll.count_documents(query)
    if got != expect:
        raise NotYet(f"the $elemMatch query for {some['k']} finds {got} products, expected {expect}: check the values.")
    return (f"{len(docs)} products in attribute form and one compound index that serves any spec name "
            f"({got} products with {some['k']} in {lo}..{hi}).")


@register
def _ex15() -> Exercise:
    return Exercise(
        id="15-attribute",
        lesson="15_attribute",
        task="Move every spec_* field into specs: [{k, v}], rewrite the collection, and create the one index it needs.",
        checker=_check_attribute,
        hints=["Build the new document from the fields that do not start with `spec_`, then add the `specs` list.",
               "`k[len(\"spec_\"):]` drops the prefix; the index is `[(\"specs.k\", 1), (\"specs.v\", 1)]`."],
        solution_text=(
            "def to_attributes(doc):\n"
            "    out = {k: v for k, v in doc.items() if not k.startswith(\"spec_\")}\n"
            "    out[\"specs\"] = [{\"k\": k[len(\"spec_\"):], \"v\": v} for k, v in doc.items() if k.startswith(\"spec_\")]\n"
            "    return out\n\n"
            "for product in list(practice.products.find()):\n"
            "    practice.products.replace_one({\"_id\": product[\"_id\"]}, to_attributes(product))\n"
            "practice.products.create_index([(\"specs.k\", 1), (\"specs.v\", 1)])\n"
            "ex.check(practice.products, to_attributes)"
        ),
    )

def _check_subset(args: Any) -> str:
    import datetime as dt

    from labkit.exercises import observe

    db, add_review = _db_and_function(args, "add_review", "practice")
    pid = "prod:subset-check"
    order = [3, 7, 1, 6, 2, 8]  # arrival order; createdAt grows with n

    def review(n: int) -> dict:
        return {"_id": f"rev:check:{n}", "productId": pid, "userId": f"user:{n}", "rating": 1 + n % 5,
                "text": f"review {n}", "createdAt": dt.datetime(2026, 3, n, 12, 0)}

    with observe.sandbox("16-subset", db) as sandbox:
        box = sandbox.db
        box.products.insert_one({"_id": pid, "name": "Subset check", "recentReviews": []})
        box.products.insert_one({"_id": "prod:other", "name": "Another product", "recentReviews": []})
        sandbox.recorder.clear()
        for n in order:
            add_review(box, review(n))
        # two reviews arrive at the same moment: the second runs right after the first one's first read
        observe.interleaved(lambda: add_review(box, review(5)), lambda: add_review(box, review(4)),
                            sandbox.recorder)
        order += [5, 4]
        reads = [n for n in sandbox.recorder.names() if n in ("find", "aggregate")]
        sorts = [m.get("$sort") for spec in sandbox.recorder.update_specs()
                 for m in (((spec.get("u") or {}).get("$push") or {}).get("recentReviews"),)
                 if isinstance(m, dict) and "$sort" in m]
        product = box.products.find_one({"_id": pid})
        other = box.products.find_one({"_id": "prod:other"}) or {}
        stored = box.reviews.count_documents({"productId": pid})
    if other.get("recentReviews"):
        raise NotYet("another product's recentReviews changed too: filter the product update on "
                     "`review[\"productId\"]`.")
    if sorts and all(isinstance(x, dict) and list(x) == ["_id"] for x in sorts):
        raise NotYet("your `$push` sorts the reviews by `_id`: ids say nothing about when a review was written (an "
                     "imported or delayed review carries an older date). Sort by `createdAt: -1`.")
    got_ids = [r.get("_id") for r in (product or {}).get("recentReviews") or [] if isinstance(r, dict)]
    if reads and ("rev:check:5" not in got_ids or "rev:check:4" not in got_ids):
        lost = "rev:check:5" if "rev:check:5" not in got_ids else "rev:check:4"
        raise NotYet(f"when two reviews arrived together, {lost} never reached recentReviews: your function reads "
                     "the product, builds the new list in Python and writes it back, so the later write overwrites "
                     "the earlier one (a lost update). Let the server do it: `$push` with `$each`, `$sort` and "
                     "`$slice` in one update.")
    if stored != len(order):
        raise NotYet(f"db.reviews holds {stored} of the {len(order)} reviews: every review goes into the reviews "
                     "collection too (it is the full history).")
    recent = product.get("recentReviews")
    if not isinstance(recent, list):
        raise NotYet("the product has no `recentReviews` array after the calls; push into that field.")
    if len(recent) > 5:
        raise NotYet(f"recentReviews holds {len(recent)} reviews after {len(order)} calls: add `$slice: 5` so it "
                     "stays bounded.")
    if len(recent) < 5:
        raise NotYet(f"recentReviews holds only {len(recent)} reviews; it should keep five.")
    got = [r.get("_id") for r in recent]
    want = [f"rev:check:{n}" for n in (8, 7, 6, 5, 4)]
    if got == list(reversed(want)):
        raise NotYet("the five newest, but oldest first: sort with `{\"createdAt\": -1}` so the newest comes first.")
    if got != want and sorts and sorts[0] != {"createdAt": -1}:
        raise NotYet(f"expected the five newest by createdAt, newest first ({want}), got {got}: your `$push` sorts by "
                     f"{sorts[0]}; the newest five are the first five of `$sort: {{\"createdAt\": -1}}`.")
    if got != want:
        raise NotYet(f"expected the five newest by createdAt, newest first ({want}), got {got}: reviews arrive out of "
                     "order, so `$position: 0` alone is not enough; use `$sort: {\"createdAt\": -1}` with `$slice: 5`.")
    return "the product keeps exactly the five newest reviews, newest first, and every review is in db.reviews."


@register
def _ex16() -> Exercise:
    return Exercise(
        id="16-subset",
        lesson="16_extended_reference_subset",
        task="Write add_review(db, review): store it in reviews and keep the product's recentReviews to the 5 newest "
             "by createdAt, newest first, even when reviews arrive out of order.",
        checker=_check_subset,
        hints=["Two writes: `insert_one` into db.reviews, then one `update_one` on the product with `$push`.",
               "`{\"$push\": {\"recentReviews\": {\"$each\": [r], \"$sort\": {\"createdAt\": -1}, \"$slice\": 5}}}`"],
        solution_text=(
            "def add_review(db, review):\n"
            "    db.reviews.insert_one(review)\n"
            "    db.products.update_one({\"_id\": review[\"productId\"]}, {\"$push\": {\"recentReviews\": {\n"
            "        \"$each\": [review], \"$sort\": {\"createdAt\": -1}, \"$slice\": 5}}})\n\n"
            "ex.check(practice, add_review)"
        ),
    )


@register
def _ex16_predict() -> Exercise:
    return Prediction(
        id="16-predict-lookup-docs",
        lesson="16_extended_reference_subset",
        task="Design B ($lookup): how many documents does the server examine to build one day's packing list?",
        checker=None,
        tolerance=0.05,
        explain=lambda n: (f"Measured: {n}. The day's orders are read once each through the createdAt index, and "
                           "the join then fetches one customer per order through the customers' _id index (an "
                           "IndexedLoopJoin probes once per order): a customer with two orders that day is read "
                           "twice, and each customer read is the whole profile. The extended reference reads the "
                           "orders only."),
        hints=["Count the orders of the day (printed above), then ask how many customer documents the join fetches "
               "for them."],
        solution_text="predict_lookup.predict(2 * len(day_orders))  # each order, plus its customer",
    )


_AGENT_PROFILE = {"bio": "Support engineer since 2018; speaks three languages. " * 8,
                  "skills": ["billing", "shipping", "returns", "accounts"], "shifts": ["mon", "tue", "wed"]}


def _agents_16() -> list[dict]:
    teams = ["billing", "shipping", "billing", "returns", "shipping"]
    return [{"_id": f"agent:{i}", "name": f"Agent {i}", "team": teams[i - 1], "email": f"agent{i}@example.com",
             **_AGENT_PROFILE} for i in range(1, 6)]


def _check_ticket_reference(args: Any) -> str:
    from labkit.exercises import observe

    if not (isinstance(args, tuple) and len(args) == 3 and callable(args[1]) and callable(args[2])):
        raise NotYet("call it with the practice database and your two functions: "
                     "`ex_tickets.check(practice, open_ticket, rename_agent)`.")
    db, open_ticket, rename_agent = args
    with observe.sandbox("16-extended-reference-tickets", db) as box:
        sdb, rec = box.db, box.recorder
        if hasattr(db, "list_collection_names"):
            observe.copy_indexes(db["tickets"], sdb["tickets"])  # the learner's index definitions, not data
        sdb.agents.insert_many(_agents_16())
        # 1. open 40 tickets: agent 3 gets 12 of them, the others 7 each
        plan = [3] * 12 + [1, 2, 4, 5] * 7
        rec.clear()
        for n, agent in enumerate(plan):
            observe.call_learner(open_ticket, sdb, {"_id": f"ticket:{n:03d}", "subject": f"Question {n}",
                                                    "agentId": f"agent:{agent}"})
        inserts = [c for c in rec.writes() if "insert" in c]
        tickets = list(sdb.tickets.find())
        if len(tickets) != len(plan):
            raise NotYet(f"after {len(plan)} calls of open_ticket, tickets holds {len(tickets)} documents: insert "
                         "each ticket once into db.tickets.")
        if len(rec.writes()) > len(plan) or len(inserts) < len(plan):
            raise NotYet(f"open_ticket sent {len(rec.writes())} writes for {len(plan)} tickets: one insert per "
                         "ticket, with the agent's fields already in it (no second update).")
        sample = next((t for t in tickets if t.get("_id") == "ticket:000"), tickets[0])
        agent = sample.get("agent")
        if not isinstance(agent, dict):
            raise NotYet(f"ticket:000 has no `agent` subdocument (its fields: {sorted(sample)}): copy "
                         "`{_id, name, team}` of the agent into `agent`.")
        extra = sorted(set(agent) - {"_id", "name", "team"})
        if extra:
            raise NotYet(f"the ticket's `agent` copy carries {extra} as well: copy only the fields the ticket list "
                         "shows (`_id`, `name`, `team`), not the whole agent profile; every copy is read with "
                         "every ticket and rewritten on every change.")
        missing = sorted({"_id", "name", "team"} - set(agent))
        if missing:
            raise NotYet(f"the ticket's `agent` copy lacks {missing}: the list shows the agent's name and team, and "
                         "the copy keeps the agent's `_id` as its reference.")
        if agent != {"_id": "agent:3", "name": "Agent 3", "team": _agents_16()[2]["team"]}:
            raise NotYet(f"ticket:000 (agent:3) carries agent={agent}; expected agent:3's own _id, name and team.")
        # 2. agent 3 changes name
        rec.clear()
        observe.call_learner(rename_agent, sdb, "agent:3", "Dana Okafor")
        statements = rec.write_statements()
        renamed = sdb.tickets.count_documents({"agent._id": "agent:3", "agent.name": "Dana Okafor"})
        others = sdb.tickets.count_documents({"agent._id": {"$ne": "agent:3"}, "agent.name": "Dana Okafor"})
        profile = sdb.agents.find_one({"_id": "agent:3"}) or {}
        if profile.get("name") != "Dana Okafor":
            raise NotYet("rename_agent left the agent's own document with the old name: update db.agents too.")
        if others:
            raise NotYet(f"{others} tickets of other agents now show 'Dana Okafor': filter the tickets on the copied "
                         "reference, `{\"agent._id\": agent_id}`.")
        if renamed != 12:
            raise NotYet(f"{renamed} of agent:3's 12 tickets show the new name: update every copy, "
                         "`update_many({\"agent._id\": agent_id}, {\"$set\": {\"agent.name\": new_name}})`.")
        if statements > 2:
            raise NotYet(f"the rename sent {statements} write statements (one per ticket?): two are enough, one "
                         "`update_one` on the agent and one `update_many` on its tickets; the server finds them "
                         "through the index on the copied id.")
        fig = observe.plan_figures(sdb.tickets.find({"agent._id": "agent:3"}).explain())
        if fig.collscan or fig.keys_examined > fig.returned:
            raise NotYet(f"the rename's filter {{'agent._id': 'agent:3'}} examines {fig.docs_examined} tickets "
                         f"({'a collection scan' if fig.collscan else 'an index that does not start with agent._id'})"
                         f" to change {fig.returned}: create the index on the copied reference, "
                         "`practice.tickets.create_index(\"agent._id\")`, before checking.")
    return ("each ticket carries only {_id, name, team} of its agent; a rename is two writes, and the index on "
            f"agent._id finds the 12 copies with {fig.keys_examined} keys examined.")


@register
def _ex16_tickets() -> Exercise:
    return Exercise(
        id="16-extended-reference-tickets",
        lesson="16_extended_reference_subset",
        task="Support tickets show their agent's name and team: write open_ticket(db, ticket) (an extended reference "
             "agent: {_id, name, team}) and rename_agent(db, agent_id, new_name) (two writes), and index what the "
             "rename needs.",
        checker=_check_ticket_reference,
        hints=["open_ticket: `a = db.agents.find_one({\"_id\": ticket[\"agentId\"]}, {\"name\": 1, \"team\": 1})`, "
               "then insert the ticket with `agent=a`.",
               "rename_agent: `update_one` on db.agents, then `update_many({\"agent._id\": agent_id}, "
               "{\"$set\": {\"agent.name\": new_name}})`; `practice.tickets.create_index(\"agent._id\")`."],
        solution_text=(
            "def open_ticket(db, ticket):\n"
            "    agent = db.agents.find_one({\"_id\": ticket[\"agentId\"]}, {\"name\": 1, \"team\": 1})\n"
            "    db.tickets.insert_one(ticket | {\"agent\": agent})\n\n\n"
            "def rename_agent(db, agent_id, new_name):\n"
            "    db.agents.update_one({\"_id\": agent_id}, {\"$set\": {\"name\": new_name}})\n"
            "    db.tickets.update_many({\"agent._id\": agent_id}, {\"$set\": {\"agent.name\": new_name}})\n\n\n"
            "practice.tickets.create_index(\"agent._id\")\n"
            "ex_tickets.check(practice, open_ticket, rename_agent)"
        ),
    )


def _check_materialized_path(coll: Any) -> str:
    import re

    if not hasattr(coll, "find") or not hasattr(coll, "index_information"):
        raise NotYet(f"pass the collection (`practice.categories`), not {type(coll).__name__}.")
    from labkit.exercises import remembered

    docs = {d["_id"]: d for d in coll.find()}
    if not docs:
        raise NotYet("the collection is empty; re-run the setup cell above the exercise.")
    setup = remembered("categories")
    if setup:
        gone = sorted(set(setup) - set(docs), key=str)
        if gone:
            raise NotYet(f"{len(gone)} of the {len(setup)} categories of the setup are gone (e.g. {gone[0]!r}); "
                         "adding a path must not delete nodes. Re-run the setup cell, then add the paths again.")
        extra = sorted(set(docs) - set(setup), key=str)
        if extra:
            raise NotYet(f"{len(extra)} categor(ies) are not in the setup (e.g. {extra[0]!r}); re-run the setup "
                         "cell and only add `path` fields.")
        changed = sorted((n for n in setup if docs[n].get("parent") != setup[n].get("parent")), key=str)
        if changed:
            raise NotYet(f"category {changed[0]!r}: `parent` is not the value the setup had "
                         f"({setup[changed[0]].get('parent')!r}); the paths must follow the setup's tree, so keep "
                         "every parent as it was (re-run the setup cell).")
        docs = {n: {**d, "parent": setup[n].get("parent")} for n, d in docs.items()}
    missing = sorted(n for n, d in docs.items() if "path" not in d)
    if missing:
        raise NotYet(f"{len(missing)} node(s) have no `path` field yet (e.g. {missing[0]!r}); give every node one "
                     "(the root gets null).")
    for name in sorted(docs):
        chain, up = [], docs[name].get("parent")
        while up is not None and up in docs and len(chain) <= len(docs):
            chain.insert(0, up)
            up = docs[up].get("parent")
        want = "," + ",".join(chain) + "," if chain else None
        got = docs[name]["path"]
        if got == want:
            continue
        if not chain:
            raise NotYet(f"the root {name!r} has path {got!r}; a root has no ancestors, so its path is None (null).")
        if isinstance(got, list):
            raise NotYet(f"{name!r} has a list as path; this design stores ONE string (an array would be the "
                         "array-of-ancestors design).")
        if got == "," + ",".join(chain + [name]) + ",":
            raise NotYet(f"{name!r}'s path includes the node itself ({got!r}); the path lists its ancestors only: "
                         f"{want!r}.")
        if got == ",".join(chain) or got == "," + ",".join(chain) or got == ",".join(chain) + ",":
            raise NotYet(f"{name!r} has path {got!r}: put a comma at BOTH ends ({want!r}), so that a prefix such as "
                         "',Books,' cannot match ',Bookshelves,'.")
        raise NotYet(f"{name!r} has path {got!r}, expected {want!r} (its ancestors from the root, in order).")
    keys = _index_keys(coll)
    if not any(k and k[0][0] == "path" for k in keys):
        raise NotYet("no index starts with `path`: the descendants query would scan the whole collection.")
    inner = sorted(n for n, d in docs.items() if d.get("parent") is not None
                   and any(c.get("parent") == n for c in docs.values()))
    probe = inner[0]
    prefix = (docs[probe]["path"] or ",") + probe + ","
    explain = coll.find({"path": {"$regex": "^" + re.escape(prefix)}}).explain()
    stats = explain["executionStats"]
    names = [s.get("stage") for s in _stages(explain["queryPlanner"]["winningPlan"])]
    if "COLLSCAN" in names:
        raise NotYet("the anchored-regex descendants query still scans the collection; create an index on `path`.")
    if stats["totalKeysExamined"] > stats["nReturned"] + 1:
        raise NotYet(f"the descendants of {probe!r} read {stats['totalKeysExamined']} index keys for "
                     f"{stats['nReturned']} results: the index should start with `path` so the prefix is a range.")
    return (f"every path matches its parent chain, and the descendants of {probe!r} ({stats['nReturned']} nodes) come "
            f"from an index range ({stats['totalKeysExamined']} keys).")


@register
def _ex17() -> Exercise:
    return Exercise(
        id="17-materialized-path",
        lesson="17_trees",
        task="Give every category a materialized path (',A,B,' of its ancestors, null for the root) and index it so "
             "the anchored-regex descendants query is an index range.",
        checker=_check_materialized_path,
        hints=["Load {_id: parent} into a dict, then walk up from each node to the root, collecting ancestors.",
               "`\",\" + \",\".join(chain) + \",\"` (or None when the chain is empty), then `create_index(\"path\")`."],
        solution_text=(
            "parent_of = {d[\"_id\"]: d[\"parent\"] for d in practice.categories.find({}, {\"parent\": 1})}\n"
            "for node in sorted(parent_of):\n"
            "    chain, up = [], parent_of[node]\n"
            "    while up is not None:\n"
            "        chain.insert(0, up)\n"
            "        up = parent_of[up]\n"
            "    practice.categories.update_one({\"_id\": node}, {\"$set\": {\"path\": \",\" + \",\".join(chain) + \",\" if chain else None}})\n"
            "practice.categories.create_index(\"path\")\nex.check(practice.categories)"
        ),
    )

def _check_versioning(args: Any) -> str:
    from pymongo.errors import DuplicateKeyError

    from labkit.exercises import observe

    db, save_revision = _db_and_function(args, "save_revision", "practice")
    learner_history = db["documents_history"] if hasattr(db, "list_collection_names") else None
    doc_id = "doc:versioning-check"
    with observe.sandbox("18-versioning", db) as box:
        sdb, rec = box.db, box.recorder
        if learner_history is not None:
            observe.copy_indexes(learner_history, sdb["documents_history"])  # the learner's index definitions
        unique = [spec for name, spec in sdb.documents_history.index_information().items()
                  if name != "_id_" and spec.get("unique")]
        if not any([f for f, _ in spec["key"]] == ["docId", "rev"] for spec in unique):
            if any([f for f, _ in k] == ["docId", "rev"] for k in _index_keys(sdb.documents_history)):
                raise NotYet("the {docId, rev} index exists but is not unique: create it with `unique=True`.")
            raise NotYet("create the unique index on documents_history: `[(\"docId\", 1), (\"rev\", 1)]`, "
                         "`unique=True`.")
        sdb.documents.insert_one({"_id": doc_id, "rev": 1, "title": "Check", "body": "v1"})
        rec.clear()

        def save(target: Any, body: str) -> None:
            try:
                observe.call_learner(save_revision, target, doc_id, {"body": body})
            except DuplicateKeyError as exc:
                key = (exc.details or {}).get("keyValue") or {}
                if "rev" in key:
                    raise NotYet(f"revision {key['rev']} was filed in the history twice: the current document's "
                                 "rev must grow with every save (`$inc` rev by one).") from None
                raise NotYet(f"saving a revision failed with a duplicate key ({key}): give each history copy an "
                             "_id of its own (not the current document's _id).") from None

        # 1. three saves, one at a time; each must be two writes, the history copy first
        document_first = False
        for body in ("v2", "v3", "v4"):
            rec.clear()
            save(sdb, body)
            targets = [(next(iter(c)), c[next(iter(c))]) for c in rec.writes()]
            if len(targets) > 2 or rec.write_statements() > 2:
                raise NotYet(f"one save sent {rec.write_statements()} write statements ({targets}); it takes two: "
                             "file the copy in documents_history, then update the document.")
            document_first = document_first or [c for _, c in targets] == ["documents", "documents_history"]
        current = sdb.documents.find_one({"_id": doc_id}) or {}
        if current and current.get("title") != "Check":
            raise NotYet(f"after saving {{body: ...}} changes the document's title is {current.get('title')!r}, not "
                         "'Check': a save changes only the fields it is given (`$set` the changes), it does not "
                         "replace the document.")
        history = list(sdb.documents_history.find({"docId": doc_id}).sort("rev", 1))
        if not history:
            raise NotYet("no history copy carries `docId`: store the document's id in a `docId` field of each copy.")
        if current.get("body") != "v4":
            raise NotYet(f"after three saves the current body is {current.get('body')!r}, expected 'v4': apply "
                         "`changes` to the document in db.documents.")
        if current.get("rev") != 4:
            raise NotYet(f"after three saves the current rev is {current.get('rev')!r}, expected 4: `$inc` rev by one.")
        got = [(h.get("rev"), h.get("body")) for h in history]
        if got == [(2, "v2"), (3, "v3"), (4, "v4")]:
            raise NotYet("the history holds the NEW revisions; copy the current revision before changing it, so the "
                         "history holds revisions 1-3.")
        if got != [(1, "v1"), (2, "v2"), (3, "v3")]:
            raise NotYet(f"the history should hold (rev, body) (1, 'v1'), (2, 'v2'), (3, 'v3'); it holds {got}.")
        if document_first:
            raise NotYet("your save updates the document first and files the copy second: a crash between the "
                         "two writes loses the old revision for ever. File the copy first.")

        # 2. the process dies between the two writes; the same save is retried
        try:
            save_revision(_CrashingDb(sdb, 1), doc_id, {"body": "v5"})
        except _SimulatedCrash:
            pass
        try:
            observe.call_learner(save_revision, sdb, doc_id, {"body": "v5"})
        except DuplicateKeyError:
            raise NotYet("after a crash between the two writes, the retry fails with a duplicate key: the copy of "
                         "revision 4 is already filed, so every later save of this document fails the same way "
                         "and it is locked for ever. File the copy with an upsert that only inserts "
                         "(`update_one({\"_id\": ...}, {\"$setOnInsert\": copy}, upsert=True)`).") from None
        current = sdb.documents.find_one({"_id": doc_id}) or {}
        got = [(h.get("rev"), h.get("body")) for h in sdb.documents_history.find({"docId": doc_id}).sort("rev", 1)]
        if (current.get("rev"), current.get("body")) != (5, "v5") or got != [(1, "v1"), (2, "v2"), (3, "v3"),
                                                                             (4, "v4")]:
            raise NotYet(f"after a crash between the two writes and a retry, the document is at rev "
                         f"{current.get('rev')!r} ({current.get('body')!r}) and the history holds {got}; expected "
                         "rev 5 and revisions 1-4, each once.")

        # 3. two editors save at the same moment: the second runs right after the first one's read
        observe.interleaved(lambda: save_revision(sdb, doc_id, {"body": "v6"}),
                            lambda: save_revision(sdb, doc_id, {"body": "v7"}), rec)
        current = sdb.documents.find_one({"_id": doc_id}) or {}
        revs = [h.get("rev") for h in sdb.documents_history.find({"docId": doc_id}).sort("rev", 1)]
        if revs != list(range(1, int(current.get("rev") or 1))):
            raise NotYet(f"two editors saved at the same moment: the document is now at rev {current.get('rev')!r} "
                         f"but the history holds revisions {revs}, so a revision was overwritten without a copy. "
                         "Update the document only if it is still at the revision you copied: "
                         "`update_one({\"_id\": doc_id, \"rev\": current[\"rev\"]}, ...)`.")
    return ("two writes per save (the copy first), one copy per revision, unique by {docId, rev}; a crash between "
            "the writes and its retry, and two editors at once, lose no revision.")


@register
def _ex18() -> Exercise:
    return Exercise(
        id="18-versioning",
        lesson="18_archive_versioning",
        task="Write save_revision(db, doc_id, changes): copy the current revision into documents_history, then apply "
             "the changes and increase rev; index {docId, rev} uniquely.",
        checker=_check_versioning,
        hints=["Read the current document first; the history copy is that document with a new _id plus `docId`.",
               "Then `update_one({\"_id\": doc_id, \"rev\": current[\"rev\"]}, {\"$set\": changes, \"$inc\": {\"rev\": 1}})`."],
        solution_text=(
            "def save_revision(db, doc_id, changes):\n"
            "    current = db.documents.find_one({\"_id\": doc_id})\n"
            "    copy = {k: v for k, v in current.items() if k != \"_id\"} | {\"docId\": doc_id}\n"
            "    db.documents_history.update_one({\"_id\": f\"{doc_id}@rev{current['rev']}\"}, {\"$setOnInsert\": copy},\n"
            "                                    upsert=True)\n"
            "    db.documents.update_one({\"_id\": doc_id, \"rev\": current[\"rev\"]}, {\"$set\": changes, \"$inc\": {\"rev\": 1}})\n\n"
            "practice.documents_history.create_index([(\"docId\", 1), (\"rev\", 1)], unique=True)\n"
            "ex.check(practice, save_revision)"
        ),
    )

def _check_single_collection(db: Any) -> str:
    if not hasattr(db, "list_collection_names"):
        raise NotYet(f"pass the practice database (`practice`), not {type(db).__name__}.")
    from labkit.exercises import remembered

    # the setup copy kept by ex.remember(practice, "books", "authors"), else what practice holds now
    books = remembered("books") or {b["_id"]: b for b in db.books.find()}
    authors = remembered("authors") or {a["_id"]: a for a in db.authors.find()}
    if not books or not authors:
        raise NotYet("practice.books or practice.authors is empty; re-run the setup cell above the exercise.")
    library = {d["_id"]: d for d in db.library.find()}
    missing = sorted((set(books) | set(authors)) - set(library))
    if missing:
        raise NotYet(f"{len(missing)} book(s)/author(s) are not in practice.library yet (e.g. {missing[0]!r}); "
                     "copy every book and every author, keeping their _id.")
    wrong_type = sorted([i for i in books if library[i].get("docType") != "book"]
                        + [i for i in authors if library[i].get("docType") != "author"])
    if wrong_type:
        raise NotYet(f"{wrong_type[0]!r} has docType {library[wrong_type[0]].get('docType')!r}: books need "
                     "docType 'book' and authors docType 'author'.")
    # the pages print a book's title and an author's name: the copies must keep them
    for src, field, what in ((books, "title", "book"), (authors, "name", "author")):
        for i in sorted(src):
            if field in src[i] and library[i].get(field) != src[i][field]:
                got = (f"{field} {library[i][field]!r}" if field in library[i] else f"no `{field}`")
                raise NotYet(f"{i!r} in practice.library has {got} (practice has {src[i][field]!r}): the "
                             f"{what} page shows the {field} from this document, so copy the {what}'s fields "
                             f"(at least `{field}`) along with docType and relatedIds.")
    if any(not isinstance(d.get("relatedIds"), list) for d in library.values()):
        raise NotYet("every document needs a `relatedIds` array (its own id plus the ids it is related to).")
    keys = _index_keys(db.library)
    if not any(k and k[0][0] == "relatedIds" for k in keys):
        raise NotYet("no index starts with `relatedIds`: each page would scan the whole collection.")
    books_of: dict = {}
    for b in books.values():
        for a in b["authorIds"]:
            books_of.setdefault(a, set()).add(b["_id"])
    for book_id in sorted(books)[:15] + [max(books, key=lambda i: (len(books[i]["authorIds"]), i))]:
        want = {book_id, *books[book_id]["authorIds"]}
        got = {d["_id"] for d in db.library.find({"relatedIds": book_id}, {"_id": 1})}
        if got == want - {book_id}:
            raise NotYet(f"the page of {book_id!r} returns its authors but not the book itself: put each "
                         "document's own id in its relatedIds.")
        if got != want:
            raise NotYet(f"find({{'relatedIds': {book_id!r}}}) returns {sorted(got)}, expected the book and its "
                         f"authors {sorted(want)}: authors list the ids of their books in relatedIds.")
    for author_id in sorted(authors)[:15]:
        want = {author_id, *books_of.get(author_id, ())}
        got = {d["_id"] for d in db.library.find({"relatedIds": author_id}, {"_id": 1})}
        if got != want:
            raise NotYet(f"find({{'relatedIds': {author_id!r}}}) returns {sorted(got)}, expected the author and "
                         f"their books {sorted(want)}: books list their authors' ids (and their own) in relatedIds.")
    explain = db.library.find({"relatedIds": sorted(books)[0]}).explain()
    names = [s.get("stage") for s in _stages(explain["queryPlanner"]["winningPlan"])]
    if "COLLSCAN" in names:
        raise NotYet("the book page still scans the collection; the planner did not use your index on relatedIds.")
    stats = explain["executionStats"]
    if stats["totalDocsExamined"] > stats["nReturned"]:
        raise NotYet(f"the book page examines {stats['totalDocsExamined']} documents for {stats['nReturned']} "
                     "results; index `relatedIds` on its own so the lookup is exact.")
    return (f"{len(books)} books and {len(authors)} authors in one collection; each page is one IXSCAN on relatedIds "
            "that returns exactly the document and its related documents.")


@register
def _ex19_predict() -> Exercise:
    return Prediction(
        id="19-predict-author-page-docs",
        lesson="19_single_collection",
        task="Single collection: how many documents does find({'relatedIds': 'author:3'}) examine?",
        checker=None,
        explain=lambda n: (f"Measured: {n}. One index key per document that lists author:3 in relatedIds: the "
                           "author itself (its own id is in its list) and each of its books, and one fetch per key. "
                           "The index on the multikey relatedIds answers the page exactly: documents examined equal "
                           "documents returned, with no join stage."),
        hints=["Which documents hold 'author:3' in their relatedIds array?"],
        solution_text="predict_author.predict(1 + db.books.count_documents({\"authorIds\": \"author:3\"}))",
    )


@register
def _ex19() -> Exercise:
    return Exercise(
        id="19-single-collection",
        lesson="19_single_collection",
        task="Build practice.library: books and authors with docType and relatedIds (own id + related ids), indexed "
             "so find({'relatedIds': id}) returns a document and everything related to it.",
        checker=_check_single_collection,
        hints=["First build {authorId: [bookIds]} from practice.books, so each author can list their books.",
               "A book: `relatedIds = [book_id] + authorIds`; an author: `[author_id] + their book ids`; then "
               "`create_index(\"relatedIds\")`."],
        solution_text=(
            "linked = {}\nfor b in practice.books.find():\n    for a in b[\"authorIds\"]:\n"
            "        linked.setdefault(a, []).append(b[\"_id\"])\n"
            "practice.library.insert_many(\n"
            "    [{\"_id\": b[\"_id\"], \"docType\": \"book\", \"title\": b[\"title\"], \"relatedIds\": [b[\"_id\"]] + b[\"authorIds\"]}\n"
            "     for b in practice.books.find()]\n"
            "    + [{\"_id\": a[\"_id\"], \"docType\": \"author\", \"name\": a[\"name\"], \"relatedIds\": [a[\"_id\"]] + linked.get(a[\"_id\"], [])}\n"
            "       for a in practice.authors.find()])\n"
            "practice.library.create_index(\"relatedIds\")\nex.check(practice)"
        ),
    )


def _check_enrol(args: Any) -> str:
    from labkit.exercises import observe

    db, enrol = _db_and_function(args, "enrol", "practice")
    courses = [f"course:{c}" for c in ("db", "ml", "ux", "go")]
    students = [f"student:{i:02d}" for i in range(1, 13)]
    pairs = [(courses[i % 4], s) for i, s in enumerate(students)] + [(courses[0], s) for s in students[:6]]
    pairs.append(pairs[0])  # the same enrolment twice: a retry
    with observe.sandbox("19-enrol", db) as box:
        catalog = box.db["catalog"]
        catalog.insert_many([{"_id": c, "docType": "course", "title": c[7:].upper(), "relatedIds": [c]}
                             for c in courses]
                            + [{"_id": s, "docType": "student", "name": s.title(), "relatedIds": [s]}
                               for s in students])
        catalog.create_index("relatedIds")
        worst, rewrites = 0, False
        for course, student in pairs:
            box.recorder.clear()
            observe.call_learner(enrol, catalog, course, student)
            worst = max(worst, box.recorder.write_statements())
            rewrites = rewrites or any(
                isinstance(spec.get("u"), list) or "relatedIds" in (((spec.get("u") or {}).get("$set")) or {})
                for spec in box.recorder.update_specs())
        docs = {d["_id"]: d for d in catalog.find()}
        pages = {x: {d["_id"] for d in catalog.find({"relatedIds": x}, {"_id": 1})} for x in courses + students}
    want: dict = {x: {x} for x in courses + students}
    for c, s in pairs:
        want[c].add(s)
        want[s].add(c)
    if set(docs) != set(want):
        raise NotYet(f"the catalog holds {len(docs)} documents after the enrolments, expected the "
                     f"{len(want)} courses and students: update the existing documents, do not insert or delete.")
    dupes = sorted(x for x, d in docs.items() if len(d.get("relatedIds") or []) != len(set(map(str, d.get("relatedIds") or []))))
    if dupes:
        raise NotYet(f"{dupes[0]} lists an id twice in relatedIds after the same enrolment ran twice: use "
                     "`$addToSet` (with `$each`), not `$push`, so a retried enrolment changes nothing.")
    lost_self = sorted(x for x, d in docs.items() if x not in (d.get("relatedIds") or []))
    if lost_self:
        raise NotYet(f"{lost_self[0]} no longer lists its own id in relatedIds, so its own page misses it: "
                     "add to the array, do not replace it.")
    for x in courses + students:
        if pages[x] != want[x]:
            other = "students" if x in courses else "courses"
            missing = sorted(want[x] - pages[x])
            if not missing:
                extra = sorted(pages[x] - want[x])
                raise NotYet(f"the page of {x} (find({{'relatedIds': {x!r}}})) also returns {extra[:3]}, which "
                             f"were never enrolled with it: the update must touch only the two documents of the "
                             "enrolment (`{\"_id\": {\"$in\": [course_id, student_id]}}`).")
            raise NotYet(f"the page of {x} (find({{'relatedIds': {x!r}}})) misses {missing[:3]}: an enrolment "
                         f"links both ways, so the course and the student each list the other's id (here its "
                         f"{other}).")
    if rewrites:
        raise NotYet("your enrol writes relatedIds with a value built in Python (read, append, `$set` back): two "
                     "enrolments of one course at once both read the old list and the later write drops the other "
                     "student. `$addToSet` lets the server add the id.")
    if worst > 2:
        raise NotYet(f"one enrolment sent {worst} write statements: one `update_many` on both documents "
                     "(`{\"_id\": {\"$in\": [course_id, student_id]}}`) with `$addToSet` of both ids does it, "
                     "since each document already lists its own id.")
    return (f"{len(pairs)} enrolments (one retried) in at most {worst} write statement(s) each; every course and "
            "student page is one indexed find returning it and everything linked to it.")


@register
def _ex19_enrol() -> Exercise:
    return Exercise(
        id="19-enrol",
        lesson="19_single_collection",
        task="Courses and students in one collection (docType, relatedIds): write enrol(catalog, course_id, "
             "student_id) that links them both ways, idempotently, in at most two write statements.",
        checker=_check_enrol,
        hints=["Both documents already list their own id in relatedIds; the link adds the other's id.",
               "`catalog.update_many({\"_id\": {\"$in\": [course_id, student_id]}}, "
               "{\"$addToSet\": {\"relatedIds\": {\"$each\": [course_id, student_id]}}})`"],
        solution_text=(
            "def enrol(catalog, course_id, student_id):\n"
            "    catalog.update_many({\"_id\": {\"$in\": [course_id, student_id]}},\n"
            "                        {\"$addToSet\": {\"relatedIds\": {\"$each\": [course_id, student_id]}}})\n\n\n"
            "ex_enrol.check(practice, enrol)"
        ),
    )


# --- end notebooks 15-19 -----------------------------------------------------------------------------------


# --- notebook 11 -------------------------------------------------------------------------------------------

def _check_outlier_write(args: Any) -> str:
    import datetime as dt

    from labkit.exercises import observe

    db, add_comment = _db_and_function(args, "add_comment")
    if not hasattr(db, "list_collection_names"):
        raise NotYet(f"pass the lesson's database (`db`) first, not {type(db).__name__}.")
    box = observe.sandbox("11-outlier-write", db)  # pristine posts of the checker's own, never the learner's
    posts, comments = box.db["posts"], box.db["comments"]
    base = dt.datetime(2026, 10, 3, 9, 0)
    posts.insert_many([{"_id": "post:busy", "title": "Busy", "commentCount": 0, "comments": [], "hasOverflow": False},
                       {"_id": "post:quiet", "title": "Quiet", "commentCount": 0, "comments": [],
                        "hasOverflow": False}])
    made = {"post:busy": 25, "post:quiet": 3}
    try:
        for post_id, n in made.items():
            for i in range(n):
                add_comment(posts, comments, post_id,
                            {"userId": f"user:{i}", "text": f"comment {i}", "createdAt": base + dt.timedelta(minutes=i)})
        busy, quiet = posts.find_one({"_id": "post:busy"}), posts.find_one({"_id": "post:quiet"})
        overflow = list(comments.find({}, {"_id": 0}).sort("createdAt", 1))
        # two comments arrive at once on a full post: the second runs right after the first one's first read
        posts.insert_one({"_id": "post:race", "title": "Race", "commentCount": 20, "hasOverflow": False,
                          "comments": [{"userId": f"user:{i}", "text": f"old {i}",
                                        "createdAt": base + dt.timedelta(minutes=i)} for i in reversed(range(20))]})
        late = base + dt.timedelta(hours=1)
        observe.interleaved(
            lambda: add_comment(posts, comments, "post:race", {"userId": "user:a", "text": "race a",
                                                               "createdAt": late}),
            lambda: add_comment(posts, comments, "post:race", {"userId": "user:b", "text": "race b",
                                                               "createdAt": late + dt.timedelta(seconds=1)}),
            box.recorder)
        race = posts.find_one({"_id": "post:race"}) or {}
        raced = {c.get("text") for c in race.get("comments", []) if isinstance(c, dict)}
        raced |= {c.get("text") for c in comments.find({"postId": "post:race"})}
    finally:
        box.close()
    if busy is None or quiet is None:
        raise NotYet("a test post disappeared; update the existing post (filter on `_id`), do not replace or "
                     "delete it.")
    texts = [c.get("text") for c in busy.get("comments", []) if isinstance(c, dict)]
    if len(texts) > 20:
        raise NotYet(f"the busy post embeds {len(texts)} comments after 25 calls; keep at most 20 with "
                     "`$slice` inside the `$push`.")
    newest = {f"comment {i}" for i in range(5, 25)}
    if set(texts) != newest:
        kept = sorted(set(texts) - newest)
        raise NotYet(f"the busy post should embed the 20 newest comments (5..24); it keeps {kept[:3]}... instead. "
                     "Push to the front (`$position: 0`) and `$slice: 20`, so the oldest falls off the end.")
    if busy.get("commentCount") != 25 or quiet.get("commentCount") != 3:
        raise NotYet(f"commentCount is {busy.get('commentCount')} and {quiet.get('commentCount')}; expected 25 and 3: "
                     "`$inc` it on every comment, embedded or not.")
    moved = [c.get("text") for c in overflow if c.get("postId") == "post:busy"]
    if sorted(moved) != [f"comment {i}" for i in range(5)]:
        if not moved and len(overflow) == 5 and all("postId" not in c for c in overflow):
            raise NotYet("the 5 oldest comments were moved to `comments` without a `postId`: nobody can find them "
                         "by post. Insert each one with the post's id (`dict(comment, postId=post_id)`).")
        if not moved:
            raise NotYet("the 5 oldest comments of the busy post were dropped, not moved: insert the comment that "
                         "falls off the array into `comments` (read the document BEFORE the update to see it).")
        raise NotYet(f"the overflow collection holds {sorted(moved)} for the busy post; expected comments 0..4, "
                     "each once, with `postId`.")
    if any(c.get("postId") == "post:quiet" for c in overflow) or len(overflow) != 5:
        raise NotYet("the quiet post (3 comments) must not use the overflow collection at all.")
    if busy.get("hasOverflow") is not True:
        raise NotYet("the busy post does not say `hasOverflow: True`, so readers never look in `comments`.")
    if quiet.get("hasOverflow"):
        raise NotYet("the quiet post says `hasOverflow: True` with only 3 comments; set it only when a comment "
                     "moves to the overflow collection.")
    lost = sorted({"race a", "race b", "old 0", "old 1"} - raced)
    if lost or race.get("commentCount") != 22:
        raise NotYet(f"two comments arrived at once on a full post: afterwards {lost or 'no comment'} is missing "
                     f"and commentCount is {race.get('commentCount')!r} (expected 22). Reading the post, building "
                     "the new array in Python and writing it back loses the other call's comment; let one "
                     "`find_one_and_update` with `$push`/`$slice` and `$inc` change the post atomically.")
    return ("20 newest embedded, 5 oldest moved to the overflow collection, counts and flags right, and two "
            "comments at once on a full post both kept.")


@register
def _ex11_predict() -> Exercise:
    return Prediction(
        id="11-predict-deep-page-keys",
        lesson="11_outlier",
        task="Page 50 of the viral post's comments (20 per page, page 1 embedded): how many index keys does its "
             "query examine?",
        checker=None,
        tolerance=0.02,
        explain=lambda n: (f"Measured: {n}. Page 50 is the 49th page of the overflow collection: `skip(48 * 20)` "
                           "walks the {postId, createdAt} index past the 960 keys of pages 2-49, then reads the 20 "
                           "it returns. The documents fetched stay 20 (SKIP sits below FETCH), but the keys grow "
                           "with the page number; a range on createdAt from the last comment shown avoids that."),
        hints=["Which keys does `skip((page - 2) * 20).limit(20)` have to pass before it returns anything?"],
        solution_text="predict_deep.predict(48 * 20 + 20)",
    )


@register
def _ex11() -> Exercise:
    return Exercise(
        id="11-outlier-write",
        lesson="11_outlier",
        task="Write add_comment(posts, comments, post_id, comment): keep the 20 newest embedded, move the rest to "
             "`comments`, maintain commentCount and hasOverflow.",
        checker=_check_outlier_write,
        hints=["`find_one_and_update` with `$push: {comments: {$each: [c], $position: 0, $slice: 20}}` and "
               "`return_document=ReturnDocument.BEFORE` shows the array before the push.",
               "If that array already had 20 comments, its last one fell off: insert it with `postId` and set "
               "`hasOverflow: True`."],
        solution_text=(
            "from pymongo import ReturnDocument\n\n"
            "def add_comment(posts, comments, post_id, comment):\n"
            "    before = posts.find_one_and_update(\n"
            "        {\"_id\": post_id},\n"
            "        {\"$push\": {\"comments\": {\"$each\": [comment], \"$position\": 0, \"$slice\": 20}},\n"
            "         \"$inc\": {\"commentCount\": 1}},\n"
            "        return_document=ReturnDocument.BEFORE)\n"
            "    if len(before.get(\"comments\", [])) == 20:\n"
            "        comments.insert_one(dict(before[\"comments\"][-1], postId=post_id))\n"
            "        posts.update_one({\"_id\": post_id}, {\"$set\": {\"hasOverflow\": True}})\n"
            "\nex.check(db, add_comment)"
        ),
    )


# --- notebook 12 -------------------------------------------------------------------------------------------

def _check_computed_stats(add_review: Any) -> str:
    import datetime as dt

    from labkit.engine import EmbeddedClient

    if isinstance(add_review, tuple):
        raise NotYet("call it with your function only: `ex.check(add_review)`.")
    if not callable(add_review):
        raise NotYet(f"pass your function `add_review` itself, not {type(add_review).__name__}.")
    from labkit.exercises import observe

    rec = observe.new_recorder()
    db = EmbeddedClient(event_listeners=[rec])["exercise_12"]
    db.products.insert_many([{"_id": "prod:a", "name": "A"}, {"_id": "prod:b", "name": "B"},
                             {"_id": "prod:c", "name": "C"}])
    ratings = [("prod:a", 5), ("prod:b", 3), ("prod:a", 4), ("prod:a", 5), ("prod:b", 1), ("prod:a", 2),
               ("prod:b", 5), ("prod:a", 5), ("prod:a", 3), ("prod:b", 3), ("prod:a", 4), ("prod:a", 1)]
    for i, (pid, r) in enumerate(ratings):
        if i == 0:
            rec.clear()
        add_review(db, {"_id": f"review:{i}", "productId": pid, "userId": f"user:{i}", "rating": r,
                        "createdAt": dt.datetime(2026, 10, 4, 12, i)})
    names = rec.names()
    reads = [n for n in names if n in ("aggregate", "find", "count", "distinct")]
    if "aggregate" in reads or len(reads) >= len(ratings):
        raise NotYet(f"your function read the reviews back on every write ({len(reads)} reads for {len(ratings)} "
                     "reviews: " + ", ".join(sorted(set(reads))) + "): that is re-computing, not the computed "
                     "pattern. Each write already knows its rating: update the statistics with `$inc`, `$min` "
                     "and `$max`, so a write costs the same whether the product has 10 reviews or 10 million.")
    if db.reviews.count_documents({}) != len(ratings):
        raise NotYet(f"db.reviews holds {db.reviews.count_documents({})} reviews after {len(ratings)} calls: the "
                     "review itself must still be inserted (the statistics are a copy, not a replacement).")
    for pid in ("prod:a", "prod:b"):
        mine = [r for p, r in ratings if p == pid]
        want = {"count": len(mine), "sum": sum(mine), "min": min(mine), "max": max(mine),
                "distribution": {str(k): mine.count(k) for k in sorted(set(mine))}}
        got = (db.products.find_one({"_id": pid}) or {}).get("ratingStats")
        if not isinstance(got, dict):
            raise NotYet(f"{pid} has no `ratingStats` sub-document; update the product with "
                         "`ratingStats.<field>` paths.")
        for field in ("count", "sum"):
            if got.get(field) != want[field]:
                raise NotYet(f"{pid}: ratingStats.{field} is {got.get(field)!r}, expected {want[field]} from its "
                             f"reviews; `$inc` it with every review (count by 1, sum by the rating).")
        if got.get("min") != want["min"] or got.get("max") != want["max"]:
            raise NotYet(f"{pid}: min/max stored as {got.get('min')!r}/{got.get('max')!r} but the reviews range "
                         f"{want['min']}..{want['max']}: `$set` keeps the last rating; use `$min` and `$max`.")
        dist = {str(k): v for k, v in (got.get("distribution") or {}).items()}
        if dist != want["distribution"]:
            raise NotYet(f"{pid}: distribution is {dist}, expected {want['distribution']}: `$inc` "
                         "`ratingStats.distribution.<rating>` by 1.")
        for key in ("avg", "average", "mean", "avgRating"):
            if key in got and want["count"] and (not isinstance(got[key], (int, float)) or
                                                 abs(got[key] - want["sum"] / want["count"]) > 0.01):
                raise NotYet(f"{pid}: ratingStats.{key} is {got[key]!r}, but the reviews average "
                             f"{want['sum'] / want['count']:.2f}: a stored average cannot be updated from one new "
                             "rating with `$set`. Keep count and sum and divide on read (or leave it out).")
    if (db.products.find_one({"_id": "prod:c"}) or {}).get("ratingStats"):
        raise NotYet("prod:c got statistics without any review: update only the review's product.")
    return "count, sum, min, max and the distribution match an aggregation over the reviews."


@register
def _ex12() -> Exercise:
    return Exercise(
        id="12-computed-stats",
        lesson="12_computed",
        task="Write add_review(db, review): store the review and maintain ratingStats count, sum, distribution, "
             "min and max on its product.",
        checker=_check_computed_stats,
        hints=["One `update_one` can combine `$inc`, `$min` and `$max` on different fields.",
               "`{\"$inc\": {\"ratingStats.count\": 1, \"ratingStats.sum\": r, f\"ratingStats.distribution.{r}\": 1}, "
               "\"$min\": {\"ratingStats.min\": r}, \"$max\": {\"ratingStats.max\": r}}`"],
        solution_text=(
            "def add_review(db, review):\n"
            "    r = review[\"rating\"]\n"
            "    db.reviews.insert_one(review)\n"
            "    db.products.update_one({\"_id\": review[\"productId\"]},\n"
            "        {\"$inc\": {\"ratingStats.count\": 1, \"ratingStats.sum\": r, f\"ratingStats.distribution.{r}\": 1},\n"
            "         \"$min\": {\"ratingStats.min\": r}, \"$max\": {\"ratingStats.max\": r}})\n"
            "\nex.check(add_review)"
        ),
    )


def _explain_aggregate_keys(measured: Any) -> str:
    return (f"One page view examined {measured:,} index keys: the `$match` walks the {{productId, rating}} index "
            "over every review of the headphones, because `$group` needs all of them to produce an average and a "
            "count. The work grows with each review and is repeated on every view.")


@register
def _ex12_predict() -> Exercise:
    return Prediction(
        id="12-predict-aggregate-keys",
        lesson="12_computed",
        task="Predict: how many index keys does ONE page view of the headphones (prod:1) examine when the "
             "average and count are aggregated from the reviews on every read?",
        checker=None,
        hints=["The setup cell printed how many reviews prod:1 has; which of them can $group skip?"],
        solution_text="ex_keys.predict(10_842)",
        explain=_explain_aggregate_keys,
        tolerance=0.02,
    )


def _check_thread_stats(add_reply: Any) -> str:
    import datetime as dt

    from labkit.exercises import observe

    if isinstance(add_reply, tuple):
        raise NotYet("call it with your function only: `ex2.check(add_reply)`.")
    if not callable(add_reply):
        raise NotYet(f"pass your function `add_reply` itself, not {type(add_reply).__name__}.")
    t0 = dt.datetime(2026, 11, 2, 9, 0)
    # minutes after t0; reply 4 arrives late (written at minute 1, delivered after minute 30)
    arrivals = [("thread:a", 0), ("thread:b", 5), ("thread:a", 12), ("thread:a", 30), ("thread:a", 1),
                ("thread:b", 7), ("thread:a", 31), ("thread:b", 2)]
    with observe.sandbox("12-thread-stats") as box:
        box.db.threads.insert_many([{"_id": t, "title": t.split(":")[1], "replyCount": 0}
                                    for t in ("thread:a", "thread:b", "thread:c")])
        box.recorder.clear()
        for i, (tid, minute) in enumerate(arrivals):
            observe.call_learner(add_reply, box.db, {"_id": f"reply:{i}", "threadId": tid, "userId": f"user:{i}",
                                                     "text": "agreed", "at": t0 + dt.timedelta(minutes=minute)})
        reads = [e for e in box.recorder.commands if next(iter(e), "") in ("aggregate", "count", "find", "distinct")
                 and e.get(next(iter(e))) == "replies"]
        writes = box.recorder.write_statements()
        stored = {d["_id"]: d for d in box.db.threads.find()}
        replies = box.db.replies.count_documents({})
    if reads:
        raise NotYet(f"your function read `replies` back on every write ({len(reads)} reads for {len(arrivals)} "
                     "replies): that is re-computing, not the computed pattern. Each reply already knows its "
                     "thread and time: `$inc` the count and `$max` the time.")
    if replies != len(arrivals):
        raise NotYet(f"db.replies holds {replies} replies after {len(arrivals)} calls: insert the reply itself too.")
    if writes > 2 * len(arrivals):
        raise NotYet(f"{writes} writes for {len(arrivals)} replies; one insert and one thread update each are "
                     "enough (put every operator in one `update_one`).")
    for tid in ("thread:a", "thread:b"):
        mine = [m for t, m in arrivals if t == tid]
        got = stored.get(tid) or {}
        if got.get("replyCount") == len(arrivals) != len(mine):
            raise NotYet(f"{tid}: replyCount is {len(arrivals)}, the replies of every thread: the thread update "
                         "must filter on the reply's own thread (`{\"_id\": reply[\"threadId\"]}`).")
        if got.get("replyCount") != len(mine):
            raise NotYet(f"{tid}: replyCount is {got.get('replyCount')!r}, expected {len(mine)}: `$inc` it by 1 "
                         "with every reply.")
        newest = t0 + dt.timedelta(minutes=max(mine))
        if got.get("lastReplyAt") != newest:
            late = t0 + dt.timedelta(minutes=mine[-1])
            if got.get("lastReplyAt") == late:
                raise NotYet(f"{tid}: lastReplyAt is the time of the reply that arrived last ({late:%H:%M}), not the "
                             f"newest ({newest:%H:%M}): replies can arrive late. `$set` overwrites; `$max` keeps "
                             "the later time.")
            raise NotYet(f"{tid}: lastReplyAt is {got.get('lastReplyAt')!r}, expected {newest}: `$max` it with each "
                         "reply's `at`.")
    untouched = stored.get("thread:c") or {}
    if set(untouched) - {"_id", "title", "replyCount"} or untouched.get("replyCount") != 0:
        raise NotYet("thread:c changed without any reply: update only the reply's thread.")
    # two replies at once: the second runs right after the first one's first read
    with observe.sandbox("12-thread-stats") as box:
        box.db.threads.insert_one({"_id": "thread:a", "title": "a", "replyCount": 0})
        observe.interleaved(
            lambda: add_reply(box.db, {"_id": "reply:x", "threadId": "thread:a", "userId": "u1", "text": "x", "at": t0}),
            lambda: add_reply(box.db, {"_id": "reply:y", "threadId": "thread:a", "userId": "u2", "text": "y",
                                       "at": t0 + dt.timedelta(minutes=1)}), box.recorder)
        raced = box.db.threads.find_one({"_id": "thread:a"}) or {}
    if raced.get("replyCount") != 2:
        raise NotYet(f"two replies at once leave replyCount {raced.get('replyCount')!r} instead of 2: your function "
                     "reads the thread, adds in Python and writes the result back, so the second reply's count is "
                     "overwritten (a lost update). `$inc` lets the server add.")
    return ("each reply costs one insert and one update whatever the thread's size; late replies do not move "
            "lastReplyAt back, and two replies at once both count.")


@register
def _ex12b() -> Exercise:
    return Exercise(
        id="12-thread-stats",
        lesson="12_computed",
        task="Write add_reply(db, reply): store the reply and keep its thread's replyCount and lastReplyAt (the "
             "newest reply's time, even when replies arrive late) without reading the replies back.",
        checker=_check_thread_stats,
        hints=["The same idea as the rating statistics: each write already carries what the stored values need.",
               "`{\"$inc\": {\"replyCount\": 1}, \"$max\": {\"lastReplyAt\": reply[\"at\"]}}` on the reply's thread."],
        solution_text=(
            "def add_reply(db, reply):\n"
            "    db.replies.insert_one(reply)\n"
            "    db.threads.update_one({\"_id\": reply[\"threadId\"]},\n"
            "                          {\"$inc\": {\"replyCount\": 1}, \"$max\": {\"lastReplyAt\": reply[\"at\"]}})\n"
            "\nex2.check(add_reply)"
        ),
    )


# --- notebook 13 -------------------------------------------------------------------------------------------

_MIGRATE_NAMES = ["Alice Smith", "Mary Ann Lee", "Omar van Dijk", "Ben Lee", "Hana Okafor"]


def _migration_users() -> tuple[list[dict], list[dict]]:
    """The checker's pristine users: 237 still v1 (one `name`), 22 already v2."""
    v1 = [{"_id": f"u:{i:04d}", "schemaVersion": 1, "name": _MIGRATE_NAMES[i % len(_MIGRATE_NAMES)],
           "email": f"u{i}@example.com"} for i in range(1, 238)]
    v2 = [{"_id": f"u:{i:04d}", "schemaVersion": 2, "firstName": "Gus", "lastName": "Rossi",
           "email": f"u{i}@example.com"} for i in range(238, 260)]
    return v1, v2


def _half_migrated(docs: Any) -> str | None:
    """A user left between the two shapes (what a crash between two writes of one user leaves behind)."""
    for d in docs:
        v = d.get("schemaVersion")
        if (v == 1 and ("name" not in d or "firstName" in d)) or (v == 2 and "name" in d):
            return d["_id"]
    return None


def _check_migrate_batches(args: Any) -> str:
    from labkit.exercises import observe

    db, migrate_batch = _db_and_function(args, "migrate_batch")
    v1, v2 = _migration_users()
    batch_size, calls, sizes = 50, 0, []
    with observe.sandbox("13-migrate-batches", db) as box:
        coll = box.db["users"]
        coll.insert_many([dict(d) for d in v1 + v2])
        coll.create_index([("schemaVersion", 1), ("_id", 1)])
        rec = box.recorder
        # 1. one call at a time, watching the writes each call sends
        while calls < 20:
            left = coll.count_documents({"schemaVersion": 1})
            rec.clear()
            returned = observe.call_learner(migrate_batch, coll, batch_size)
            statements, writes = rec.write_statements(), len(rec.writes())
            calls += 1
            moved = left - coll.count_documents({"schemaVersion": 1})
            sizes.append(moved)
            if not isinstance(returned, int) or isinstance(returned, bool):
                raise NotYet(f"migrate_batch returned {returned!r}; return the number of users it upgraded (an int).")
            if returned and not moved:
                raise NotYet(f"a call returned {returned} but every user is still v1: set `schemaVersion: 2` in the "
                             "update, or the same documents are found again.")
            if moved > batch_size:
                raise NotYet(f"one call upgraded {moved} users with batch_size={batch_size}: limit the find to "
                             "`batch_size` documents (`.limit(batch_size)`).")
            if returned != moved:
                raise NotYet(f"a call returned {returned} but upgraded {moved} users; return how many it upgraded.")
            if moved and statements > moved:
                raise NotYet(f"a call sent {statements} write statements to upgrade {moved} users: one update per "
                             "user must do the whole change (`$set` firstName, lastName and schemaVersion and "
                             "`$unset` name together). Two writes per user leave a half-migrated user when the "
                             "process stops between them.")
            if returned == 0:
                break
        docs = {d["_id"]: d for d in coll.find()}
        if any(d.get("schemaVersion") == 1 for d in docs.values()):
            raise NotYet(f"after {calls} calls some users are still v1 (upgraded per call: {sizes[:6]}): set "
                         "`schemaVersion: 2` in the update, or the same documents are found again.")
        for orig in v1:
            d = docs[orig["_id"]]
            first, _, last = orig["name"].partition(" ")
            if "name" in d:
                raise NotYet(f"{d['_id']} still has `name`: `$unset` it in the same update.")
            if d.get("schemaVersion") != 2 or isinstance(d.get("schemaVersion"), (bool, str)):
                raise NotYet(f"{d['_id']} has schemaVersion {d.get('schemaVersion')!r}: the readers (and the next "
                             "batch, and the dual query) look for the number 2, not a string.")
            if (d.get("firstName"), d.get("lastName")) != (first, last):
                raise NotYet(f"{orig['name']!r} became firstName={d.get('firstName')!r}, "
                             f"lastName={d.get('lastName')!r}; expected {first!r} and {last!r} (first word, then "
                             "the rest).")
            if d.get("email") != orig["email"]:
                raise NotYet(f"{d['_id']} lost or changed its email: update only the name fields.")
        for orig in v2:
            if docs[orig["_id"]] != orig:
                raise NotYet(f"the v2 user {orig['_id']} was changed; select only `schemaVersion: 1` documents.")

        # 2. resumability: the process dies in the middle of a batch, then the migration is started again
        coll.delete_many({})
        coll.insert_many([dict(d) for d in v1 + v2])
        try:
            migrate_batch(_CrashingDb(box.db, 7)["users"], batch_size)
        except _SimulatedCrash:
            pass
        stuck = _half_migrated(coll.find())
        if stuck:
            raise NotYet(f"the process stopped in the middle of a batch and left {stuck} half-migrated (neither "
                         "the v1 nor the v2 shape): one update per user must make the whole change.")
        resumed = 0
        for _ in range(20):
            n = observe.call_learner(migrate_batch, coll, batch_size)
            resumed += 1
            if not n:
                break
        after = {d["_id"]: d for d in coll.find()}
        wrong = [i for i, d in after.items() if d.get("schemaVersion") != 2 or "name" in d
                 or (i in {o["_id"] for o in v1} and (d.get("firstName"), d.get("lastName")) !=
                     tuple(next(o for o in v1 if o["_id"] == i)["name"].partition(" ")[::2]))]
        if wrong:
            raise NotYet(f"after a crash in the middle of a batch and {resumed} more calls, {len(wrong)} users are "
                         f"not migrated right (e.g. {wrong[0]}): the next run must pick up exactly the users still "
                         "at schemaVersion 1 (find them by their version, not by a position or a counter kept in "
                         "Python).")
    return (f"237 users upgraded in batches of {[s for s in sizes if s]}, one write per user, v2 users untouched, "
            "names split right; after a crash in the middle of a batch the next runs finished the job.")


@register
def _ex18_predict() -> Exercise:
    return Prediction(
        id="18-predict-crash-retry",
        lesson="18_archive_versioning",
        task="After a crash between the two writes, a retry and two more edits in one minute: how many copies of "
             "revision 1 does the history hold?",
        checker=None,
        explain=lambda n: (f"Measured: {n}. The copy's _id is (document, revision), and it is filed with an "
                           "insert-only upsert: the retry finds revision 1 already filed and changes nothing, so "
                           "there is one copy per revision whatever crashed; the edit time is in no key, so edits "
                           "within one minute do not collide."),
        hints=["What does an upsert with only $setOnInsert do when its filter already matches a document?"],
        solution_text="predict_crash.predict(1)",
    )


class _SimulatedCrash(Exception):
    """Raised by the checker's database wrapper to stop a learner's function between two writes."""


_WRITES = ("insert_one", "insert_many", "update_one", "update_many", "replace_one", "delete_one", "delete_many",
           "find_one_and_update", "find_one_and_replace", "find_one_and_delete", "bulk_write")


class _CrashingDb:
    """A database stand-in that lets the first ``allowed`` writes through and then 'crashes'."""

    def __init__(self, db: Any, allowed: int) -> None:
        self._db, self._left = db, allowed

    def __getitem__(self, name: str) -> "_CrashingCollection":
        return _CrashingCollection(self._db[name], self)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return self[name]


class _CrashingCollection:
    def __init__(self, coll: Any, owner: _CrashingDb) -> None:
        self._coll, self._owner = coll, owner

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._coll, name)
        if name not in _WRITES:
            return attr

        def write(*a: Any, **kw: Any) -> Any:
            if self._owner._left <= 0:
                raise _SimulatedCrash("the process died here")
            self._owner._left -= 1
            return attr(*a, **kw)
        return write


def _check_price_history(args: Any) -> str:
    from pymongo.errors import DuplicateKeyError

    from labkit.exercises import observe

    save_price = args[0] if isinstance(args, tuple) and len(args) == 1 else args
    if not callable(save_price):
        raise NotYet("pass your function: `ex_price.check(save_price)`.")
    with observe.sandbox("18-price-history") as box:
        db = box.db
        products, history = db["products"], db["price_history"]
        products.insert_many([{"_id": "sku:1", "rev": 1, "price": 10.0}, {"_id": "sku:2", "rev": 1, "price": 5.0},
                              {"_id": "sku:3", "rev": 1, "price": 7.0}])

        def copies(pid: str) -> list[tuple[Any, Any]]:
            return sorted((h.get("rev"), h.get("price")) for h in history.find({"productId": pid}))

        # 1. three saves in a row (within the same second)
        for price in (11.0, 12.0, 13.0):
            try:
                saved = save_price(db, products.find_one({"_id": "sku:1"}), price)
            except DuplicateKeyError as exc:
                raise NotYet(f"the second of three saves in a row failed with a duplicate key "
                             f"{(exc.details or {}).get('keyValue')}: a history _id made of the time (or of the "
                             "product alone) collides when edits come close together. Key the copy by product and "
                             "revision.") from None
            if saved is not True:
                raise NotYet(f"save_price returned {saved!r} for a save that went through; return True.")
        current = products.find_one({"_id": "sku:1"})
        if (current.get("rev"), current.get("price")) != (4, 13.0):
            raise NotYet(f"after three saves sku:1 is at rev {current.get('rev')!r}, price {current.get('price')!r}; "
                         "expected rev 4, price 13.0 (`$set` the price and `$inc` rev by one).")
        got = copies("sku:1")
        if not got and history.count_documents({}):
            raise NotYet("the history copies carry no `productId`: store the product's _id in `productId`.")
        if got == [(2, 11.0), (3, 12.0), (4, 13.0)]:
            raise NotYet("the history holds the NEW revisions; file the revision being replaced (`seen`) before "
                         "changing the product.")
        if got != [(1, 10.0), (2, 11.0), (3, 12.0)]:
            raise NotYet(f"after three saves the history of sku:1 should hold (rev, price) (1, 10.0), (2, 11.0), "
                         f"(3, 12.0); it holds {got}.")

        # 2. a crash after the first write, then the retry with the same `seen`
        seen = products.find_one({"_id": "sku:2"})
        try:
            save_price(_CrashingDb(db, 1), seen, 6.0)
        except _SimulatedCrash:
            pass
        after_crash = products.find_one({"_id": "sku:2"})
        if after_crash.get("rev") != 1 and not copies("sku:2"):
            raise NotYet("a crash after your first write left sku:2 changed with revision 1 nowhere in the "
                         "history: write the history copy first, then change the product.")
        try:
            retried = save_price(db, seen, 6.0)
        except DuplicateKeyError:
            raise NotYet("after a crash between the two writes, the retry fails with a duplicate key: the copy of "
                         "revision 1 is already filed, so every later save of sku:2 fails the same way and the "
                         "product is locked for ever. File the copy with an upsert that only inserts "
                         "(`update_one(..., {\"$setOnInsert\": copy}, upsert=True)`).") from None
        got = copies("sku:2")
        if len(got) > 1 and len({r for r, _ in got}) < len(got):
            raise NotYet(f"after a crash and a retry the history of sku:2 holds {got}: revision 1 twice. Give the "
                         "copy a key of its own made of product and revision, and file it idempotently.")
        final = products.find_one({"_id": "sku:2"})
        if retried is not True or (final.get("rev"), final.get("price")) != (2, 6.0) or got != [(1, 5.0)]:
            raise NotYet(f"after a crash and a retry sku:2 is at rev {final.get('rev')!r}, price "
                         f"{final.get('price')!r}, history {got}, and the retry returned {retried!r}; expected "
                         "rev 2, price 6.0, history [(1, 5.0)] and True.")

        # 3. two editors load the same revision; the first saves
        ana, ben = products.find_one({"_id": "sku:3"}), products.find_one({"_id": "sku:3"})
        first = save_price(db, ana, 8.0)
        try:
            second = save_price(db, ben, 9.0)
        except DuplicateKeyError:
            second = "DuplicateKeyError"
        final = products.find_one({"_id": "sku:3"})
        if final.get("price") == 9.0 or final.get("rev", 0) > 2:
            raise NotYet("two editors loaded sku:3 at revision 1; the second save overwrote the first (a lost "
                         "update). Filter the product update on the revision you loaded: "
                         "{_id: ..., rev: seen['rev']}.")
        if first is not True or second is not False:
            raise NotYet(f"the first editor's save returned {first!r}, the second's {second!r}: return True when "
                         "saved, False when the update matched nothing (`result.matched_count == 0`).")
    return ("three quick saves, a crash between the two writes and its retry, and two competing editors all end "
            "with one history copy per revision and no lost update.")


@register
def _ex18_price() -> Exercise:
    return Exercise(
        id="18-price-history-crash-safe",
        lesson="18_archive_versioning",
        task="Write save_price(db, seen, new_price): file the replaced revision in price_history, then update the "
             "product conditionally; crash-safe, no time-based keys; True if saved, False on a conflict.",
        checker=_check_price_history,
        hints=["Key the history copy by product and revision, e.g. `_id: f\"{seen['_id']}@rev{seen['rev']}\"`, "
               "and file it with `update_one({\"_id\": ...}, {\"$setOnInsert\": copy}, upsert=True)`.",
               "Then `update_one({\"_id\": seen[\"_id\"], \"rev\": seen[\"rev\"]}, ...)` and return "
               "`result.matched_count == 1`."],
        solution_text=(
            "def save_price(db, seen, new_price):\n"
            "    copy = {k: v for k, v in seen.items() if k != \"_id\"} | {\"productId\": seen[\"_id\"]}\n"
            "    db.price_history.update_one({\"_id\": f\"{seen['_id']}@rev{seen['rev']}\"}, {\"$setOnInsert\": copy},\n"
            "                                upsert=True)\n"
            "    result = db.products.update_one({\"_id\": seen[\"_id\"], \"rev\": seen[\"rev\"]},\n"
            "                                    {\"$set\": {\"price\": new_price}, \"$inc\": {\"rev\": 1}})\n"
            "    return result.matched_count == 1\n\nex_price.check(save_price)"
        ),
    )


@register
def _ex13() -> Exercise:
    return Exercise(
        id="13-migrate-batches",
        lesson="13_schema_versioning",
        task="Write migrate_batch(coll, batch_size): upgrade at most batch_size v1 users to v2 and return how many.",
        checker=_check_migrate_batches,
        hints=["`coll.find({\"schemaVersion\": 1}).sort(\"_id\", 1).limit(batch_size)` finds one batch.",
               "`first, _, last = name.partition(\" \")`; `$set` firstName, lastName, schemaVersion 2 and `$unset` name."],
        solution_text=(
            "def migrate_batch(coll, batch_size):\n"
            "    todo = list(coll.find({\"schemaVersion\": 1}).sort(\"_id\", 1).limit(batch_size))\n"
            "    for d in todo:\n"
            "        first, _, last = d[\"name\"].partition(\" \")\n"
            "        coll.update_one({\"_id\": d[\"_id\"], \"schemaVersion\": 1},\n"
            "                        {\"$set\": {\"firstName\": first, \"lastName\": last, \"schemaVersion\": 2},\n"
            "                         \"$unset\": {\"name\": \"\"}})\n"
            "    return len(todo)\n\nex.check(db, migrate_batch)"
        ),
    )


@register
def _ex13_predict() -> Exercise:
    return Prediction(
        id="13-predict-dual-query-after-migration",
        lesson="13_schema_versioning",
        task="Once the migration has finished, how many index keys does the dual query for 'Smith' examine?",
        checker=None,
        tolerance=0.05,
        explain=lambda n: (f"Measured: {n} keys. The v1 branch is pinned to schemaVersion: 1, so once no v1 document "
                           "is left its range of {schemaVersion: 1, name: 1} is empty (the scan stops at the first "
                           "key, which is already out of range) and the v2 branch examines one key of {lastName: 1} "
                           "per Smith: about one key per match, like the v2-only query. The dual query is free to "
                           "keep until the v1 code is removed."),
        hints=["Which index entries does the v1 branch's range cover when no document has schemaVersion 1?"],
        solution_text="predict_dual.predict(truth)  # about one key per Smith",
    )


# Customers of the changed scenario: v1 keeps the address as one string (city after the last ", "), v2 as a
# subdocument. Cities are chosen so that some are the end of others (York / New York) and some hold regex
# characters (St. Albans, where "." would also match "StX Albans").
_CITY_CUSTOMERS = [
    (1, "1 High Street, York"), (1, "2 Broadway, New York"), (1, "3 Abbey Mill, St. Albans"),
    (1, "4 Main Road, StX Albans"), (1, "5 York Road, Leeds"), (1, "6 Dock Street, Leeds"),
    (2, ("7 Castle Way", "York")), (2, ("8 Fifth Avenue", "New York")), (2, ("9 Market Place", "St. Albans")),
    (2, ("10 Quay Side", "Leeds")), (2, ("11 York Street", "Hull")), (1, "12 Station Road, Hull"),
]


def _city_docs() -> list[dict]:
    out = []
    for i, (version, address) in enumerate(_CITY_CUSTOMERS, start=1):
        if version == 1:
            out.append({"_id": f"customer:{i}", "schemaVersion": 1, "address": address})
        else:
            out.append({"_id": f"customer:{i}", "schemaVersion": 2,
                        "address": {"street": address[0], "city": address[1]}})
    return out


def _city_of(doc: dict) -> str:
    a = doc["address"]
    return a["city"] if isinstance(a, dict) else a.rsplit(", ", 1)[-1]


def _check_city_filter(args: Any) -> str:
    from pymongo.errors import OperationFailure

    from labkit.exercises import observe

    city_filter = args[0] if isinstance(args, tuple) and len(args) == 1 else args
    if isinstance(args, tuple) and len(args) > 1:
        city_filter = next((a for a in args if callable(a)), None)
    if not callable(city_filter):
        raise NotYet("pass your function: `ex.check(city_filter)` (it takes a city and returns one filter dict).")
    docs = _city_docs()
    with observe.sandbox("13-dual-query-city") as box:
        coll = box.db["customers"]
        coll.insert_many(docs)
        for city in ("York", "New York", "St. Albans", "Leeds", "Hull"):
            query = city_filter(city)
            if not isinstance(query, dict):
                raise NotYet(f"city_filter({city!r}) returned {type(query).__name__}; return one filter dict "
                             "such as {\"$or\": [...]}, used by one find().")
            try:
                got = sorted(d["_id"] for d in coll.find(query, {"_id": 1}))
            except OperationFailure as exc:
                raise NotYet(f"the server rejects the filter for {city!r}: {exc}") from None
            want = sorted(d["_id"] for d in docs if _city_of(d) == city)
            extra = [d for d in docs if d["_id"] in set(got) - set(want)]
            missing = [d for d in docs if d["_id"] in set(want) - set(got)]
            if missing and all(d["schemaVersion"] == 1 for d in missing):
                raise NotYet(f"for {city!r} your filter misses the v1 customers {[d['_id'] for d in missing]}: "
                             "during the migration half the data still has the address as one string; add a "
                             "branch for schemaVersion 1 that matches the end of that string.")
            if missing and all(d["schemaVersion"] == 2 for d in missing):
                raise NotYet(f"for {city!r} your filter misses the v2 customers {[d['_id'] for d in missing]}: "
                             "their city is in `address.city`; add a branch for schemaVersion 2.")
            if missing:
                raise NotYet(f"for {city!r} your filter misses {[d['_id'] for d in missing]}.")
            if extra:
                wrong_cities = sorted({_city_of(d) for d in extra})
                if all(d["schemaVersion"] == 2 for d in extra):
                    raise NotYet(f"for {city!r} your filter also finds the v2 customers in {wrong_cities}: in v2 "
                                 "the city is a field of its own, so compare `address.city` by equality (a regex "
                                 "there matches any city containing the name).")
                if any(c.endswith(city) and c != city for c in wrong_cities):
                    raise NotYet(f"for {city!r} your filter also finds customers in {wrong_cities}: the pattern is "
                                 "not anchored at the start of the city. Match ', ' + city at the end of the "
                                 "string (\", York$\").")
                if any(c.replace("X", ".") == city for c in wrong_cities):
                    raise NotYet(f"for {city!r} your filter also finds customers in {wrong_cities}: '.' in a "
                                 "regular expression matches any character; escape the city with `re.escape`.")
                if any(city in d["address"] if isinstance(d["address"], str) else False for d in extra):
                    raise NotYet(f"for {city!r} your filter also finds {[d['_id'] for d in extra]}, whose street "
                                 "contains the name: the city is what follows the LAST ', ', so anchor the "
                                 "pattern at the end ($).")
                raise NotYet(f"for {city!r} your filter also finds {[d['_id'] for d in extra]} (in {wrong_cities}).")
    return ("every city's customers found in both versions with one query, and no customer of a city whose name "
            "merely ends the same way.")


@register
def _ex13_city() -> Exercise:
    return Exercise(
        id="13-dual-query-city",
        lesson="13_schema_versioning",
        task="Write city_filter(city): one filter that finds the customers of a city in v1 (address string) and "
             "v2 (address.city) documents.",
        checker=_check_city_filter,
        hints=["An `$or` with one branch per schemaVersion, as `by_last_name` above.",
               "The v1 branch is a regular expression on `address` that ends the string: ', ' + the escaped city "
               "+ '$'."],
        solution_text=(
            "def city_filter(city):\n"
            "    return {\"$or\": [{\"schemaVersion\": 2, \"address.city\": city},\n"
            "                    {\"schemaVersion\": 1, \"address\": {\"$regex\": f\", {re.escape(city)}$\"}}]}\n\n"
            "ex_city.check(city_filter)"
        ),
    )


# --- notebook 14 -------------------------------------------------------------------------------------------

def _check_polymorphic_validator(validator: Any) -> str:
    import datetime as dt

    from bson.decimal128 import Decimal128
    from pymongo.errors import OperationFailure, WriteError

    from labkit.engine import EmbeddedClient

    if isinstance(validator, tuple):
        raise NotYet("call it with your validator only: `ex.check(validator)`.")
    if not isinstance(validator, dict) or not validator:
        raise NotYet("`validator` must be a dict such as {\"$jsonSchema\": {...}}.")
    scratch = EmbeddedClient()["exercise_14"]
    try:
        events = scratch.create_collection("events", validator=validator)
    except OperationFailure as exc:
        raise NotYet(f"the server refuses these rules: {exc}") from None
    at = dt.datetime(2026, 11, 2, 9, 30)
    good = [
        ({"type": "click", "element": "buy-button", "x": 10, "y": 20, "at": at}, "a click"),
        ({"type": "click", "element": "logo", "x": 0, "y": 0, "at": at, "sessionId": "s1"},
         "a click with an extra field"),
        ({"type": "purchase", "orderId": "order:1", "amount": 19.99, "at": at}, "a purchase with a double amount"),
        ({"type": "purchase", "orderId": "order:2", "amount": 20, "at": at}, "a purchase with an int amount"),
        ({"type": "purchase", "orderId": "order:3", "amount": Decimal128("5.10"), "at": at},
         "a purchase with a decimal amount"),
    ]
    bad = [
        ({"type": "click", "element": "logo", "x": 1, "at": at}, "a click without y"),
        ({"type": "click", "element": "logo", "x": 1.5, "y": 2, "at": at}, "a click with a fractional x"),
        ({"type": "purchase", "orderId": "order:4", "at": at}, "a purchase without amount"),
        ({"type": "purchase", "orderId": "order:5", "amount": "19.99", "at": at}, "a purchase with amount as text"),
        ({"type": "purchase", "element": "logo", "x": 1, "y": 2, "at": at}, "a click's fields labelled purchase"),
        ({"type": "click", "orderId": "order:6", "amount": 3, "at": at}, "a purchase's fields labelled click"),
        ({"type": "refund", "orderId": "order:7", "amount": 3, "at": at}, "an unknown type 'refund'"),
        ({"element": "logo", "x": 1, "y": 2, "at": at}, "an event without type"),
        ({"type": "click", "element": "logo", "x": 1, "y": 2}, "an event without `at`"),
        ({"type": "click", "element": "logo", "x": 1, "y": 2, "at": "2026-11-02"}, "`at` given as text"),
    ]
    for i, (doc, what) in enumerate(good):
        try:
            events.insert_one(dict(doc, _id=f"good:{i}"))
        except WriteError:
            raise NotYet(f"{what} was rejected; it is valid (extra fields stay allowed).") from None
    for i, (doc, what) in enumerate(bad):
        try:
            events.insert_one(dict(doc, _id=f"bad:{i}"))
        except WriteError as exc:
            if exc.code != 121:
                raise NotYet(f"{what} failed with code {exc.code}, not validation (121).") from None
            continue
        raise NotYet(f"{what} was accepted; tighten the rules (one branch per type, each pinning `type` with enum).")
    return "both types pass, and each of the ten malformed events is rejected with code 121."


@register
def _ex14() -> Exercise:
    return Exercise(
        id="14-polymorphic-validator",
        lesson="14_polymorphic",
        task="Write a $jsonSchema validator for events of type 'click' (element, x, y) and 'purchase' "
             "(orderId, amount), each with a date `at`.",
        checker=_check_polymorphic_validator,
        hints=["Top level: `required: [\"type\", \"at\"]`; then `oneOf` with one sub-schema per type.",
               "Pin each branch with `\"type\": {\"enum\": [\"click\"]}` and list that type's fields in `required`."],
        solution_text=(
            'number = {"bsonType": ["int", "double", "decimal"]}\n'
            'validator = {"$jsonSchema": {\n    "bsonType": "object",\n    "required": ["type", "at"],\n'
            '    "properties": {"type": {"enum": ["click", "purchase"]}, "at": {"bsonType": "date"}},\n'
            '    "oneOf": [\n'
            '        {"properties": {"type": {"enum": ["click"]}, "element": {"bsonType": "string"},\n'
            '                        "x": {"bsonType": "int"}, "y": {"bsonType": "int"}},\n'
            '         "required": ["element", "x", "y"]},\n'
            '        {"properties": {"type": {"enum": ["purchase"]}, "orderId": {"bsonType": "string"}, "amount": number},\n'
            '         "required": ["orderId", "amount"]},\n    ],\n}}\nex.check(validator)'
        ),
    )


@register
def _ex14_predict() -> Exercise:
    return Prediction(
        id="14-predict-sparse-or-partial",
        lesson="14_polymorphic",
        task="Which index does the planner choose for {stars: {$gt: 5000}} sorted by stars: the sparse index, the "
             "partial index on type: 'tool', or none?",
        checker=None,
        choices=("stars_sparse", "stars_tools_only", "none"),
        explain=lambda name: (f"Measured: {name}. The filter has a condition on stars, so no document without "
                              "stars can match and the sparse index is complete for it; it does not say "
                              "type: 'tool', so an article with stars could match and the partial index, which "
                              "holds tools only, may not answer it. For {type: 'tool'} sorted by stars it is the "
                              "other way round."),
        hints=["Which documents is each index missing, and could this query return one of them?"],
        solution_text='predict_index.predict("stars_sparse")',
    )


@register
def _ex15_predict() -> Exercise:
    return Prediction(
        id="15-predict-entries-vs-sparse",
        lesson="15_attribute",
        task="Will the attribute pattern's one index hold fewer entries than the 40 sparse country indexes "
             "together, the same number, or more?",
        checker=None,
        choices=("fewer", "the same", "more"),
        explain=lambda verdict: (f"Measured: {verdict}. A sparse index on releaseFR holds one entry per movie "
                                 "released in France; the 40 together hold one per release. The attribute index "
                                 "holds one entry per element of `releases`, which is also one per release. What "
                                 "the attribute pattern saves over sparse indexes is the number of indexes (and "
                                 "the 64-per-collection limit), not entries."),
        hints=["Count the entries of a sparse index on releaseFR, then of all 40; then the elements of all the "
               "`releases` arrays."],
        solution_text='predict_entries.predict("the same")',
    )


@register
def _ex17_predict() -> Exercise:
    return Prediction(
        id="17-predict-unanchored-keys",
        lesson="17_trees",
        task="How many index keys does the unanchored regex {path: {$regex: ',Programming,'}} examine?",
        checker=None,
        tolerance=0.02,
        explain=lambda n: (f"Measured: {n}. Without a leading '^' the match may start anywhere in the string, so no "
                           "prefix bounds the scan: the server tests the regex against every string key of the path "
                           "index (bounds [\"\", {})), one per node of the tree except the root, whose null path "
                           "lies outside the string range, to return a few dozen."),
        hints=["Which keys of the index could hold ',Programming,' somewhere in the middle?"],
        solution_text="predict_keys.predict(len(nodes))  # every key of the index",
    )


# The org chart of the changed scenario: 1 CEO, 4 VPs, 3 directors each, 4 managers each, 5 staff each.
def _org_chart() -> list[dict]:
    docs = [{"_id": "ceo", "managerId": None}]
    for v in range(1, 5):
        docs.append({"_id": f"vp{v}", "managerId": "ceo"})
        for d in range(1, 4):
            docs.append({"_id": f"dir{v}{d}", "managerId": f"vp{v}"})
            for m in range(1, 5):
                docs.append({"_id": f"mgr{v}{d}{m}", "managerId": f"dir{v}{d}"})
                docs += [{"_id": f"staff{v}{d}{m}{s}", "managerId": f"mgr{v}{d}{m}"} for s in range(1, 6)]
    return docs


class _CountingCollection:
    """A collection stand-in that counts the round trips (find/aggregate/...) made through it."""

    _READS = ("find", "find_one", "aggregate", "count_documents", "distinct", "find_raw_batches")

    def __init__(self, coll: Any) -> None:
        self._coll, self.round_trips = coll, 0

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._coll, name)
        if name not in self._READS:
            return attr

        def read(*a: Any, **kw: Any) -> Any:
            self.round_trips += 1
            return attr(*a, **kw)
        return read

    def __getitem__(self, name: str) -> Any:
        return self._coll[name]


def _check_all_reports(args: Any) -> str:
    from labkit.exercises import observe

    if not (isinstance(args, tuple) and len(args) == 2 and all(callable(a) for a in args)):
        raise NotYet("call it with your two functions: `ex_org.check(prepare, all_reports)`.")
    prepare, all_reports = args
    docs = _org_chart()
    below: dict[str, list[str]] = {}
    for d in docs:
        below.setdefault(d["_id"], [])
        if d["managerId"]:
            below.setdefault(d["managerId"], []).append(d["_id"])

    def subtree(node: str) -> list[str]:
        out, todo = [], list(below[node])
        while todo:
            n = todo.pop()
            out.append(n)
            todo += below[n]
        return sorted(out)

    levels_below = {"ceo": 4, "dir11": 2, "mgr232": 1, "staff3241": 0}
    with observe.sandbox("17-org-chart") as box:
        coll = box.db["employees"]
        coll.insert_many(docs)
        prepare(coll)
        indexed = [k for k in observe.index_keys(coll) if k and k[0][0] == "managerId"]
        redundant = observe.redundant_prefixes(coll)
        for node, levels in levels_below.items():
            counting = _CountingCollection(coll)
            box.recorder.clear()
            got = all_reports(counting, node)
            whole = [c for c in box.recorder.commands if next(iter(c), None) == "find" and not c.get("filter")]
            if whole:
                raise NotYet(f"all_reports(coll, {node!r}) reads the whole org chart (a find with no filter) and "
                             "walks it in Python: every call reads all 305 people, however small the team. Ask "
                             "the server for one level at a time (`{\"managerId\": {\"$in\": level}}`) or use "
                             "`$graphLookup`.")
            if got is None or isinstance(got, (str, bytes, dict)) or not hasattr(got, "__iter__"):
                raise NotYet(f"all_reports(coll, {node!r}) returned {got!r}; return the ids of everybody below "
                             "the manager (a list).")
            got = sorted(str(g.get("_id")) if isinstance(g, dict) else str(g) for g in got)
            want = subtree(node)
            if node in got:
                raise NotYet(f"all_reports(coll, {node!r}) includes {node!r} itself; return only the people below.")
            if got == sorted(below[node]) and want != got:
                raise NotYet(f"all_reports(coll, {node!r}) returned the {len(got)} direct reports only; everybody "
                             f"below counts ({len(want)} people), so keep going level after level.")
            if got != want:
                missing, extra = sorted(set(want) - set(got)), sorted(set(got) - set(want))
                raise NotYet(f"all_reports(coll, {node!r}) is wrong: {len(missing)} missing (e.g. {missing[:3]}), "
                             f"{len(extra)} extra (e.g. {extra[:3]}).")
            if counting.round_trips > levels + 2:
                raise NotYet(f"all_reports(coll, {node!r}) made {counting.round_trips} queries for {len(want)} "
                             f"people {levels} level(s) deep: one query per person. Ask for a whole level at once "
                             "(`{\"managerId\": {\"$in\": level}}`), or let `$graphLookup` walk it in one.")
    if not indexed:
        raise NotYet("every level matches `managerId` (a `$graphLookup`'s connectToField, or your `$in`), and no "
                     "index starts with it: each level is a collection scan. Create it in `prepare`.")
    if redundant:
        raise NotYet(f"prepare creates {redundant[0][0]!r}, a prefix of {redundant[0][1]!r}: the longer index already "
                     "serves every lookup on managerId, and each extra index slows every hire and move. One index.")
    return ("everybody below each manager found, with at most one query per level (or one $graphLookup), and "
            "managerId indexed for the lookups.")


@register
def _ex17_org() -> Exercise:
    return Exercise(
        id="17-org-chart-reports",
        lesson="17_trees",
        task="Org chart with parent references {_id, managerId}: write prepare(coll) (its index) and "
             "all_reports(coll, manager_id) returning everybody below, one query per level or one $graphLookup.",
        checker=_check_all_reports,
        hints=["The lookups match `managerId`: index it in `prepare`.",
               "Either loop `level = ids of coll.find({\"managerId\": {\"$in\": level}})` until empty, or one "
               "aggregate with `$graphLookup` (startWith \"$_id\", connectFromField \"_id\", connectToField "
               "\"managerId\")."],
        solution_text=(
            "def prepare(coll):\n"
            "    coll.create_index(\"managerId\")\n\n\n"
            "def all_reports(coll, manager_id):\n"
            "    found, level = [], [manager_id]\n"
            "    while level:\n"
            "        level = [d[\"_id\"] for d in coll.find({\"managerId\": {\"$in\": level}}, {\"_id\": 1})]\n"
            "        found += level\n"
            "    return found\n\n\nex_org.check(prepare, all_reports)"
        ),
    )


# --- notebook 20 -------------------------------------------------------------------------------------------

#: The quiz of notebook 20: scenario id -> what happens in the application.
WHICH_PATTERN_SCENARIOS = {
    "sensor-every-second": "A sensor reports a temperature every second; dashboards chart one sensor an hour at a time.",
    "viral-post": "Most posts have about five comments and show them inline; one post has 50,000 comments.",
    "rating-on-every-view": "Every product page shows the average rating; pages are viewed thousands of times per "
                            "new review.",
    "renamed-fields": "Old user documents store `name`, new ones `firstName` and `lastName`; the change must ship "
                      "without downtime.",
    "mixed-feed": "Articles, videos and tools appear together in one feed, newest first, each rendered its own way.",
    "rough-view-counter": "A page-view counter may be off by a few percent, but its writes must drop tenfold.",
    "many-spec-fields": "Products carry hundreds of different specification fields, and shoppers filter on any of "
                        "them.",
}

_EXPECTED = {
    "sensor-every-second": "bucket",
    "viral-post": "outlier",
    "rating-on-every-view": "computed",
    "renamed-fields": "schema versioning",
    "mixed-feed": "polymorphic",
    "rough-view-counter": "approximation",
    "many-spec-fields": "attribute",
}

_WHY = {
    "sensor-every-second": "group readings per sensor and hour: 24 documents a day instead of 86,400 (lesson 10).",
    "viral-post": "embed up to N comments and send the rest of the exceptional post to an overflow collection, "
                  "flagged with hasOverflow (lesson 11).",
    "rating-on-every-view": "reads vastly outnumber writes, so store the statistics on the product and update them "
                            "with each review (lesson 12).",
    "renamed-fields": "tag documents with schemaVersion, migrate on read and in background batches (lesson 13).",
    "mixed-feed": "one collection with a `type` field gives one query and one index for the mixed feed "
                  "(lesson 14).",
    "rough-view-counter": "add N to the counter on one view in N: N times fewer writes for a small, measurable error "
                          "(lesson 12).",
    "many-spec-fields": "move the varying fields into an array of {k, v} pairs and index that array once "
                        "(lesson 15).",
}

_SYNONYMS = {
    "bucket": "bucket", "bucketing": "bucket", "buckets": "bucket", "time series": "bucket",
    "outlier": "outlier", "outliers": "outlier", "overflow": "outlier",
    "computed": "computed", "computation": "computed", "precomputed": "computed", "pre computed": "computed",
    "schema versioning": "schema versioning", "versioning": "schema versioning", "schema version": "schema versioning",
    "document versioning": "document versioning",
    "polymorphic": "polymorphic", "polymorphism": "polymorphic", "single collection": "single collection",
    "inheritance": "inheritance",
    "approximation": "approximation", "approximate": "approximation",
    "attribute": "attribute", "attributes": "attribute",
    "subset": "subset", "extended reference": "extended reference", "archive": "archive", "tree": "tree",
    "embedding": "embedding", "embed": "embedding", "referencing": "referencing", "reference": "referencing",
}

#: A question per scenario that points at its main cost without naming the pattern (shown for wrong answers,
#: so a learner who guesses is nudged, not told).
_NUDGE = {
    "sensor-every-second": "what does one document per reading cost at 86,400 readings a day per sensor, and what "
                           "do the readings of one sensor have in common?",
    "viral-post": "is the problem every post, or one exceptional post far larger than the rest?",
    "rating-on-every-view": "compare how often the rating is shown with how often it changes.",
    "renamed-fields": "old and new documents must coexist while you migrate without downtime: how does a reader "
                      "tell them apart?",
    "mixed-feed": "articles, videos and tools are read together in one feed: one query on one collection, or "
                  "three?",
    "rough-view-counter": "does this counter need to be exact, and what does a write per view cost?",
    "many-spec-fields": "how many indexes would one index per spec field take, and how many fields are there?",
}

#: Explanations for tempting wrong answers: (scenario, given) -> why not.
_NOT_THAT = {
    ("viral-post", "subset"): "subset keeps a few items embedded for every document; here the problem is one "
                              "exceptional post, handled differently from the rest.",
    ("viral-post", "bucket"): "grouping a regular stream by time does not help here; the issue here is one document far larger "
                              "than all the others.",
    ("rating-on-every-view", "approximation"): "an average rating shown to shoppers should be exact, and reviews are "
                                               "rare writes: nothing to save by skipping updates.",
    ("rough-view-counter", "computed"): "keeping the counter on the document is right, but updating it on every "
                                        "view keeps every write; the hint is that a few percent error is fine and "
                                        "writes must drop.",
    ("renamed-fields", "document versioning"): "document versioning keeps old revisions of the data; here the "
                                               "*shape* of the documents changed, not their content.",
    ("mixed-feed", "inheritance"): "inheritance describes how the shapes share a base; the question is how to "
                                   "store them so one query reads them together.",
    ("mixed-feed", "single collection"): "single collection stores related entities to fetch them together by a "
                                         "shared key; these are similar items of several kinds read as one list.",
    ("many-spec-fields", "polymorphic"): "several document shapes in one collection is not the problem; hundreds "
                                         "of optional fields that all need an index are.",
    ("sensor-every-second", "computed"): "summaries help, but the main cost is 86,400 documents a day per "
                                         "sensor; find the pattern that removes most of them.",
}


def _normalise(answer: Any) -> str | None:
    if not isinstance(answer, str):
        return None
    text = answer.strip().lower().replace("-", " ").replace("_", " ")
    for suffix in (" pattern", " patterns"):
        if text.endswith(suffix):
            text = text[: -len(suffix)]
    text = " ".join(text.split())
    return _SYNONYMS.get(text, text)


def _check_which_pattern(answers: Any) -> str:
    if isinstance(answers, tuple):
        raise NotYet("call it with one dict: `ex.check(answers)`.")
    if not isinstance(answers, dict):
        raise NotYet(f"`answers` should be a dict {{scenario id: pattern name}}, got {type(answers).__name__}.")
    unknown = sorted(set(answers) - set(WHICH_PATTERN_SCENARIOS))
    if unknown:
        raise NotYet(f"unknown scenario id(s) {unknown}; use the ids of the quiz table: "
                     f"{sorted(WHICH_PATTERN_SCENARIOS)}.")
    missing = [s for s in WHICH_PATTERN_SCENARIOS if not _normalise(answers.get(s))]
    if missing:
        raise NotYet(f"{len(missing)} scenario(s) have no answer yet: {missing}.")
    wrong = []
    for scenario, expected in _EXPECTED.items():
        given = _normalise(answers[scenario])
        if given == expected:
            continue
        why_not = _NOT_THAT.get((scenario, given), "")
        wrong.append(f"- {scenario}: you said '{answers[scenario]}'. "
                     + (f"Not quite: {why_not} " if why_not else "Not this one. ")
                     + f"Ask yourself: {_NUDGE[scenario]}")
    right = len(_EXPECTED) - len(wrong)
    if wrong:
        raise NotYet(f"{right} of {len(_EXPECTED)} right (the right answers are shown once all are right).\n"
                     + "\n".join(wrong))
    return (f"{right} of {len(_EXPECTED)} right: each scenario matched to the pattern that removes its main cost.\n"
            + "\n".join(f"- {k}: {v} ({_WHY[k]})" for k, v in _EXPECTED.items()))


@register
def _ex20() -> Exercise:
    return Exercise(
        id="20-which-pattern",
        lesson="20_which_pattern",
        task="Name the pattern for each scenario of the quiz: answers = {scenario id: pattern name}.",
        checker=_check_which_pattern,
        hints=["Ask what grows without bound or what is recomputed too often in each scenario.",
               "No pattern is used twice. The candidates are the patterns of lessons 10-19; the summary table of "
               "each lesson names the problem it removes."],
        solution_text=(
            "answers = {\n" + "".join(f"    {k!r}: {v!r},\n" for k, v in _EXPECTED.items()) + "}\nex.check(answers)"
        ),
    )


def _explain_helper_model(measured: Any) -> str:
    return (f"The helper chose {measured!r}: nothing bounds a channel's messages (the max is open), so neither an "
            "embedded array nor an array of references on the channel stays bounded; each message keeps its "
            "channel's _id instead, with an index on it for the channel page (lesson 02).")


@register
def _ex20_predict() -> Exercise:
    return Prediction(
        id="20-predict-helper-model",
        lesson="20_which_pattern",
        task="Predict: a chat channel's messages: none at first, about 2,000 typically, no upper bound; shown 50 at "
             "a time and searched on their own. Which model does the decision helper recommend for channels -> "
             "messages?",
        checker=None,
        choices=("embed", "array of references", "child reference", "relationship collection"),
        hints=["What does an unbounded 'many' do to any array kept on the parent?"],
        solution_text='ex_model.predict("child reference")',
        explain=_explain_helper_model,
    )


def _check_chat_workload(args: Any) -> str:
    from labkit.decision import recommend

    if not (isinstance(args, tuple) and len(args) == 2):
        raise NotYet("call it with both lists: `ex2.check(access_patterns, relationships)`.")
    access_patterns, relationships = args
    if not isinstance(access_patterns, list) or not isinstance(relationships, list):
        raise NotYet("both arguments are lists of dicts: access patterns first, relationships second.")
    try:
        rec = recommend(access_patterns, relationships)
    except ValueError as exc:
        raise NotYet(f"the helper refuses the input: {exc}") from None
    ops = {r.get("type"): r for r in access_patterns if isinstance(r, dict)}
    rates = sorted((r.get("type"), r.get("per_second")) for r in access_patterns if isinstance(r, dict))
    if ("read", 2000) not in rates or ("write", 200) not in rates:
        raise NotYet(f"the access patterns' (type, per_second) are {rates}; the app opens channels 2,000 times a "
                     "second (a read) and posts 200 messages a second (a write): the rates are what the design "
                     "is for.")
    read = ops.get("read") or {}
    if not {"channels", "messages", "members"} <= set(read.get("entities") or []):
        raise NotYet("opening a channel reads the channel, its members and its newest messages: list all three "
                     "entities in that access pattern.")
    rels = {(str(r.get("parent")), str(r.get("child"))): r for r in relationships if isinstance(r, dict)}
    for pair in (("channels", "members"), ("channels", "messages")):
        if pair not in rels:
            raise NotYet(f"describe the relationship {pair[0]} -> {pair[1]} (parent 'channels', child "
                         f"'{pair[1]}'); have {sorted(rels)}.")
    members, messages = rels["channels", "members"], rels["channels", "messages"]
    card_m = list(members.get("cardinality") or [])
    card_x = list(messages.get("cardinality") or [])
    if len(card_x) == 3 and card_x[2] is not None and card_x[2] != float("inf"):
        raise NotYet(f"channels -> messages has max {card_x[2]}, but nothing bounds a channel's messages: leave the "
                     "max empty (None). A guessed bound is how unbounded arrays get embedded.")
    if card_m != [2, 8, 50]:
        raise NotYet(f"channels -> members is {card_m}; the app says at least 2, typically 8, at most 50: "
                     "[2, 8, 50].")
    if card_x[:2] != [0, 2000]:
        raise NotYet(f"channels -> messages starts {card_x[:2]}; the app says none at first and about 2,000 "
                     "typically: [0, 2000, None].")
    for rel, name, about in ((members, "a member", 60), (messages, "a message", 300)):
        size = rel.get("child_doc_bytes")
        if not isinstance(size, (int, float)) or isinstance(size, bool) or not about / 2 <= size <= about * 2:
            raise NotYet(f"child_doc_bytes of {name} is {size!r}; the app says about {about} bytes: the size decides "
                         "whether the bounded list stays small enough to embed.")
    if messages.get("child_queried_alone") is not True:
        raise NotYet("messages are searched on their own (without their channel): child_queried_alone=True.")
    if members.get("child_queried_alone") is not False:
        raise NotYet("members are only ever shown with their channel: child_queried_alone=False.")
    got = {pair: rec.model_for(*pair).name for pair in (("channels", "members"), ("channels", "messages"))}
    if got != {("channels", "members"): "embed", ("channels", "messages"): "child reference"}:
        raise NotYet(f"with your inputs the helper recommends {got}; check the sizes you gave (child_doc_bytes: "
                     "about 60 bytes a member, 300 a message).")
    return ("members embedded (bounded, small, read with the channel), messages referencing their channel (no "
            "bound, searched alone): the numbers you gave decided it, not the entity names.")


@register
def _ex20b() -> Exercise:
    return Exercise(
        id="20-chat-workload",
        lesson="20_which_pattern",
        task="Describe the chat app to the decision helper: access_patterns (with rates) and relationships (with "
             "[min, likely, max] cardinalities), so that it recommends from the app's numbers.",
        checker=_check_chat_workload,
        hints=["Two access patterns (open a channel: read, 2,000/s; post a message: write, 200/s) and two "
               "relationships (channels -> members, channels -> messages).",
               "An unbounded max is `None`: `\"cardinality\": [0, 2000, None]`."],
        solution_text=(
            "access_patterns = [\n"
            "    {\"operation\": \"Open a channel\", \"type\": \"read\", \"per_second\": 2000,\n"
            "     \"entities\": [\"channels\", \"members\", \"messages\"], \"fields\": [\"name\", \"members.userId\", "
            "\"messages.text\"]},\n"
            "    {\"operation\": \"Post a message\", \"type\": \"write\", \"per_second\": 200, \"entities\": "
            "[\"messages\"], \"fields\": []},\n]\n"
            "relationships = [\n"
            "    {\"parent\": \"channels\", \"child\": \"members\", \"cardinality\": [2, 8, 50],\n"
            "     \"child_queried_alone\": False, \"changes_with_parent\": True, \"child_doc_bytes\": 60},\n"
            "    {\"parent\": \"channels\", \"child\": \"messages\", \"cardinality\": [0, 2000, None],\n"
            "     \"child_queried_alone\": True, \"changes_with_parent\": False, \"child_doc_bytes\": 300},\n]\n"
            "ex2.check(access_patterns, relationships)"
        ),
    )
