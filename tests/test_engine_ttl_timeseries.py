"""Time-series TTL (``expireAfterSeconds`` on a time-series collection) as a MongoDB 8.0 server applies it, in
process and over the wire (labkit.ttl_pass runs one TTL-monitor pass at a chosen time; over ``labkit serve`` it
sends the served engine's ``labkitTtlPass`` command).

Facts:

* src/mongo/db/ttl/ttl.cpp ``safeExpirationDate``: "On time-series collections, the _id (and thus RecordId) is the
  minimum time value of a bucket. A bucket may have newer data, so we cannot safely delete the entire bucket yet
  until the maximum bucket range has passed, even if the minimum value can be expired": the pass deletes the
  buckets whose ``_id`` time is at or before ``now - expireAfterSeconds - bucketMaxSpanSeconds`` (inclusive,
  ``kIncludeBothStartAndEndRecords``, whole seconds as in an ObjectId).
* ttl.cpp ``_deleteExpiredWithCollscanForTimeseriesExtendedRange``: with dates before 1970 or after 2038 the pass
  also requires ``control.max.<timeField>`` at or before ``now - expireAfterSeconds``; pre-1970 buckets sort at the
  end of the ``_id`` index and are scanned there.
* jstests/noPassthrough/timeseries/timeseries_ttl.js: two measurements 5 minutes apart in one bucket, both older
  than expireAfterSeconds (5 s), stay until the bucket minimum is past expiry plus the maximum range (3,600 s);
  with 1969-12-31T23:59:59, 2038-01-19T03:15:00, 2106-02-07T06:29:00, now - 5 min and now - 1 h 5 min, three
  buckets remain.
"""
from __future__ import annotations

import datetime as dt

import labkit

from both_paths import client, server  # noqa: F401 - fixtures

NOW = dt.datetime(2026, 11, 20, 12, 0, 0)
SPAN = 3600  # granularity "seconds": bucketMaxSpanSeconds


def _ts(client, name, expire=5):  # noqa: F811
    db = client["ttl_ts_" + name]
    db.drop_collection("ts")
    return db.create_collection("ts", timeseries={"timeField": "time", "metaField": "host"},
                                expireAfterSeconds=expire)


def _buckets(coll):
    return coll.database["system.buckets.ts"].count_documents({})


def test_bucket_waits_for_its_maximum_span(client):  # noqa: F811
    coll = _ts(client, "span")
    newest = NOW - dt.timedelta(seconds=5)            # both measurements older than expireAfterSeconds
    coll.insert_many([{"time": newest - dt.timedelta(minutes=5), "host": "h"}, {"time": newest, "host": "h"}])
    assert _buckets(coll) == 1
    labkit.ttl_pass(coll.database, now=NOW)
    assert coll.count_documents({}) == 2 and _buckets(coll) == 1
    # the bucket's _id time (its minimum, rounded down to the minute) + 5 s + 3,600 s
    start = (newest - dt.timedelta(minutes=5)).replace(second=0)
    due = start + dt.timedelta(seconds=5 + SPAN)
    labkit.ttl_pass(coll.database, now=due - dt.timedelta(seconds=1))
    assert _buckets(coll) == 1
    r = labkit.ttl_pass(coll.database, now=due)       # inclusive bound
    assert r["deleted"] == 1 and coll.count_documents({}) == 0


def test_bucket_past_expiry_and_span_goes(client):  # noqa: F811
    coll = _ts(client, "old")
    newest = NOW - dt.timedelta(seconds=SPAN)
    coll.insert_many([{"time": newest - dt.timedelta(minutes=5), "host": "h"}, {"time": newest, "host": "h"}])
    labkit.ttl_pass(coll.database, now=NOW)
    assert coll.count_documents({}) == 0 and _buckets(coll) == 0


def test_extended_range_dates(client):  # noqa: F811
    coll = _ts(client, "extended")
    coll.insert_many([{"time": dt.datetime(1969, 12, 31, 23, 59, 59), "host": "h"},
                      {"time": dt.datetime(2038, 1, 19, 3, 15), "host": "h"},
                      {"time": dt.datetime(2106, 2, 7, 6, 29), "host": "h"},
                      {"time": NOW - dt.timedelta(minutes=5), "host": "h"},
                      {"time": NOW - dt.timedelta(seconds=SPAN, minutes=5), "host": "h"}])
    assert _buckets(coll) == 5
    labkit.ttl_pass(coll.database, now=NOW)
    left = sorted(d["time"] for d in coll.find({}, {"_id": 0, "time": 1}))
    assert left == [NOW - dt.timedelta(minutes=5), dt.datetime(2038, 1, 19, 3, 15), dt.datetime(2106, 2, 7, 6, 29)]
    assert _buckets(coll) == 3
