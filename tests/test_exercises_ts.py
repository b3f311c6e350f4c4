"""Exercises of lessons 10 and 34 added by helper "ts": predictions and build tasks on a changed scenario.
Each listed mistake must fail with its own message; each solution must pass. Facts: manual "Time Series"
(granularity, metaField), "TTL Indexes" (single-field, seconds, non-date values ignored)."""
import datetime as dt

import pytest

import labkit
from exercise_helpers import assert_prediction_round_trip
from labkit.engine import EmbeddedClient


@pytest.fixture()
def db():
    return EmbeddedClient().ex_ts


# ------------------------------------------------------------------------------------------------ 10
def _ts_setup(**ts):
    def setup_meters(db):
        db.create_collection("meter_readings", timeseries=ts)
    return setup_meters


GOOD_TS = {"timeField": "ts", "metaField": "meterId", "granularity": "seconds"}


def store_many(coll, batch):
    coll.insert_many(batch)


def test_10_meters_solution_passes(db):
    r = labkit.exercises.get("10-ts-meters").check(db, _ts_setup(**GOOD_TS), store_many)
    assert r.correct, r.message
    assert "8 buckets" in r.message and "240 readings per bucket" in r.message


def test_10_meters_meta_subdocument_passes(db):
    def store(coll, batch):
        coll.insert_many([{"ts": r["ts"], "kwh": r["kwh"], "meta": {"meterId": r["meterId"],
                                                                    "building": r["building"]}} for r in batch])
    r = labkit.exercises.get("10-ts-meters").check(db, _ts_setup(timeField="ts", metaField="meta",
                                                                 granularity="seconds"), store)
    assert r.correct, r.message


@pytest.mark.parametrize("setup, store, fragment", [
    (lambda db: db.create_collection("meter_readings"), store_many, "ordinary collection"),
    (lambda db: None, store_many, "did not create"),
    (_ts_setup(timeField="ts", granularity="seconds"), store_many, "no metaField"),
    (_ts_setup(timeField="ts", metaField="building", granularity="seconds"), store_many, "groups two meters"),
    (_ts_setup(timeField="ts", metaField="kwh", granularity="seconds"), store_many, "measured value"),
    (_ts_setup(timeField="ts", metaField="meterId", granularity="hours"), store_many, "closest to the interval"),
    (_ts_setup(timeField="ts", metaField="meterId", granularity="minutes"), store_many, "closest to the interval"),
    (_ts_setup(**GOOD_TS), lambda coll, batch: [coll.insert_one(r) for r in batch], "one round trip per reading"),
    (_ts_setup(**GOOD_TS), lambda coll, batch: coll.insert_one(
        {"ts": batch[0]["ts"], "meterId": batch[0]["meterId"], "readings": batch}), "holds several readings"),
    (_ts_setup(**GOOD_TS), lambda coll, batch: (coll.insert_many(batch), coll.insert_many([dict(r, _id=None)
                                                                                          for r in batch[:1]])),
     "stored twice"),
])
def test_10_meters_mistakes(db, setup, store, fragment):
    r = labkit.exercises.get("10-ts-meters").check(db, setup, store)
    assert not r.correct and fragment in r.message, r.message


def test_10_meters_hand_bucketing_updates_rejected(db):
    def store(coll, batch):
        coll.update_one({"meterId": batch[0]["meterId"]}, {"$push": {"readings": {"$each": batch}}}, upsert=True)
    r = labkit.exercises.get("10-ts-meters").check(db, _ts_setup(**GOOD_TS), store)
    assert not r.correct  # the engine refuses updates on time series; the learner gets a message, not a traceback


def test_10_predict_buckets():
    assert_prediction_round_trip("10-predict-ts-buckets", 20, 10)
    ex = labkit.exercises.get("10-predict-ts-buckets")
    ex.predict(10)
    assert "1,000" in ex.check(20).message


# ------------------------------------------------------------------------------------------------ 34
def setup_good(db):
    db.sessions.create_index("lastSeen", expireAfterSeconds=30 * 60)


def touch_good(coll, session_id, now):
    coll.update_one({"_id": session_id}, {"$set": {"lastSeen": now}})


def test_34_sessions_solution_passes():
    r = labkit.exercises.get("34-ttl-sessions").check(setup_good, touch_good)
    assert r.correct, r.message


def _touch_read_first(coll, session_id, now):
    doc = coll.find_one({"_id": session_id})
    if doc:
        coll.update_one({"_id": session_id}, {"$set": {"lastSeen": now}})


@pytest.mark.parametrize("setup, touch, fragment", [
    (lambda db: db.sessions.create_index("createdAt", expireAfterSeconds=1800), touch_good, "on createdAt"),
    (lambda db: db.sessions.create_index("lastSeen", expireAfterSeconds=30), touch_good, "counts seconds"),
    (lambda db: db.sessions.create_index([("userId", 1), ("lastSeen", 1)], expireAfterSeconds=1800), touch_good,
     "compound"),
    (lambda db: db.sessions.create_index("lastSeen"), touch_good, "no index has expireAfterSeconds"),
    (setup_good, lambda coll, sid, now: coll.update_one({"_id": sid}, {"$set": {"lastSeen": now.isoformat()}}),
     "never expire"),
    (setup_good, _touch_read_first, "read(s) before writing"),
    (setup_good, lambda coll, sid, now: coll.update_one({"_id": sid}, {"$set": {"lastSeen": now}}, upsert=True),
     "unknown id"),
    (setup_good, lambda coll, sid, now: coll.replace_one({"_id": sid}, {"lastSeen": now}), "lost fields"),
    (lambda db: db.sessions.create_index("lastSeen", expireAfterSeconds=3600), touch_good, "expected"),
])
def test_34_sessions_mistakes(setup, touch, fragment):
    r = labkit.exercises.get("34-ttl-sessions").check(setup, touch)
    assert not r.correct and fragment in r.message, r.message


def test_34_predict_ttl():
    assert_prediction_round_trip("34-predict-ttl", 960, 1020)
