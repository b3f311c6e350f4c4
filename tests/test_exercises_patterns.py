"""Checkers of the pattern lessons (notebooks 10-20) accept good answers and reject typical wrong ones."""
import datetime as dt

import pytest

import labkit
from labkit.engine import EmbeddedClient


@pytest.fixture
def db():
    return labkit.fresh_db("patterns_test", client=EmbeddedClient())


# --- 10 bucket upsert ----------------------------------------------------------------------------------------

def _bucket_writer(cap=60, truncate=True, inc=True, minmax=True, upsert=True):
    def add_reading(coll, sensor_id, ts, value):
        start = ts.replace(minute=0, second=0, microsecond=0) if truncate else ts
        filt = {"sensorId": sensor_id, "start": start}
        if cap:
            filt["count"] = {"$lt": cap}
        update = {"$push": {"readings": {"ts": ts, "temperature": value}}}
        update["$inc"] = {"count": 1} if inc else {}
        if not inc:
            update["$set"] = {"count": 1}
            del update["$inc"]
        if minmax:
            update["$min"], update["$max"] = {"min": value}, {"max": value}
        else:
            update.setdefault("$set", {}).update({"min": value, "max": value})
        coll.update_one(filt, update, upsert=upsert)
    return add_reading


def test_bucket_upsert_good(db):
    ex = labkit.exercises.get("10-bucket-upsert")
    result = ex.check(db, _bucket_writer())
    assert result.correct, result.message
    assert "exercise_10_buckets" not in db.list_collection_names() or db.exercise_10_buckets.count_documents({}) == 0


@pytest.mark.parametrize("kwargs, why", [
    ({"cap": None}, "cap it at 60"),
    ({"truncate": False}, "one per reading"),
    ({"inc": False}, "$inc"),
    ({"minmax": False}, "$min"),
    ({"upsert": False}, "upsert=True"),
])
def test_bucket_upsert_wrong(db, kwargs, why):
    ex = labkit.exercises.get("10-bucket-upsert")
    result = ex.check(db, _bucket_writer(**kwargs))
    assert not result.correct and why in result.message, result.message


def test_bucket_upsert_call_shape(db):
    ex = labkit.exercises.get("10-bucket-upsert")
    assert "ex.check(db, add_reading)" in ex.check(_bucket_writer()).message
