"""The "Scale out" exercises (lessons 40-42): every listed mistake gets its own message, right answers pass, and
no learner input makes a checker raise. Each checker measures on the cluster it is given (here labkit's simulated
cluster of three shards)."""
from __future__ import annotations

import pytest

import labkit
from exercise_helpers import assert_verdict


@pytest.fixture(scope="module")
def client():
    return labkit.connect("embedded", shards=3)


def _check(exercise_id, *args):
    return labkit.exercises.get(exercise_id).check(*args)


@pytest.mark.parametrize("key, expected", [
    ({"deviceId": 1, "ts": 1}, None),
    ({"deviceId": "hashed", "ts": 1}, None),
    ({"ts": 1}, "monotonically increasing"),              # mistake 1: a timestamp first
    ({"_id": 1}, "monotonically increasing"),             # ... or an ObjectId first
    ({"ts": 1, "deviceId": 1}, "monotonically increasing"),
    ({"deviceId": 1}, "only 50 distinct values"),          # mistake 2: low cardinality
    ({"deviceId": "hashed"}, "only 50 distinct values"),
    ({"ts": "hashed"}, "contacted 3 shards"),              # mistake 3: hashed key for range reads
    ({"_id": "hashed"}, "contacted 3 shards"),
    ({"temperature": 1, "ts": 1}, "fall in one range"),
    ({"deviceId": 1, "temperature": 1}, "share each value"),   # mistake 2 again: a suffix that repeats
    ({"deviceId": "hashed", "temperature": 1}, "share each value"),
    ({"deviceId": -1}, "no descending fields"),
    ({"device": 1}, "is not one of them"),
    ("deviceId", "as a dict"),
    ({}, "as a dict"),
])
def test_40_device_shard_key(client, key, expected):
    assert_verdict(_check("40-device-shard-key", client, key), expected)


def test_40_wrong_call_shapes(client):
    ex = labkit.exercises.get("40-device-shard-key")
    assert ex.check(None).outcome == "not-attempted"
    assert "client and your key" in ex.check({"deviceId": 1}).message
    assert "must be the client" in ex.check("client", {"deviceId": 1, "ts": 1}).message
    assert "must be the client" in ex.check(client["db"], {"deviceId": 1, "ts": 1}).message  # a database
    # the embedded engine is not a sharded cluster: said so, and how to get one
    r = ex.check(labkit.connect("embedded"), {"deviceId": 1, "ts": 1})
    assert r.outcome == "incorrect" and "not connected to a sharded cluster" in r.message


def test_checks_leave_no_database_behind(client):
    before = set(client.list_database_names())
    assert _check("40-device-shard-key", client, {"deviceId": 1, "ts": 1}).correct
    assert not _check("42-repair-key", client, _nothing).correct
    assert set(client.list_database_names()) == before  # the sandboxes are dropped after each check


def test_40_prediction():
    p = labkit.exercises.get("40-predict-hot-shard")
    assert "Choose one of" in p.predict("somewhere")
    p.predict("spread over the shards")
    r = p.check("all on one shard")
    assert not r.correct and "last range" in r.message
    p = labkit.exercises.get("40-predict-hot-shard")
    assert p.check("all on one shard").outcome == "not-attempted"


@pytest.mark.parametrize("key, expected", [
    ({"tenantId": 1, "number": 1}, None),
    ({"tenantId": "hashed", "number": 1}, None),
    ({"_id": "hashed"}, "must start with the shard key"),   # the hashed-_id habit meets the unique index
    ({"_id": "hashed"}, "a broadcast to every shard"),      # ... and its own mistake: the hot read is broadcast
    ({"number": 1}, "led by 'number'"),
    ({"tenantId": 1, "_id": 1}, "must start with the shard key"),  # leads with tenantId: no broadcast sentence
    ({"number": 1}, "must start with the shard key"),
    ({"tenantId": 1}, "only 20 distinct values"),
    ({"tenantId": 1, "number": -1}, "no descending fields"),
])
def test_41_tenant_shard_key(client, key, expected):
    assert_verdict(_check("41-tenant-shard-key", client, key), expected)


def test_41_prediction():
    p = labkit.exercises.get("41-predict-follower-shards")
    p.predict(1)
    r = p.check(3)
    assert not r.correct and "cannot target" in r.message
    p = labkit.exercises.get("41-predict-follower-shards")
    p.predict(3)
    assert p.check(3).correct


def _reshard(key):
    def repair(client, coll):
        client.admin.command("reshardCollection", coll.full_name, key=key)
    return repair


def _refine_ts_first(client, coll):
    coll.create_index([("ts", 1), ("truckId", 1)])
    client.admin.command("refineCollectionShardKey", coll.full_name, key={"ts": 1, "truckId": 1})


def _drop_and_recreate(client, coll):
    coll.drop()
    coll.insert_one({"truckId": "truck:00"})


def _nothing(client, coll):
    return None


def _raises(client, coll):
    raise RuntimeError("boom")


@pytest.mark.parametrize("repair, expected", [
    (_reshard({"truckId": 1, "ts": 1}), None),
    (_reshard({"truckId": "hashed", "ts": 1}), None),
    (_reshard({"truckId": 1}), "only 40 distinct values"),          # a low-cardinality key: jumbo ranges
    (_reshard({"truckId": 1, "lat": 1}), "share each value"),       # ... or a suffix that hardly changes
    (_refine_ts_first, "monotonically increasing"),                  # refining keeps ts first
    (_reshard({"ts": "hashed"}), "contacted 3 shards"),              # hashed for range reads
    (_reshard({"_id": "hashed"}), "contacted 3 shards"),
    (_reshard({"_id": 1}), "monotonically increasing"),              # still monotonic
    (_drop_and_recreate, "are gone"),
    (_nothing, "still {ts: 1}"),
])
def test_42_repair_key(client, repair, expected):
    assert_verdict(_check("42-repair-key", client, repair), expected)


def test_42_repair_key_names_the_learners_exception(client):
    r = _check("42-repair-key", client, _raises)
    assert r.outcome == "error" and "RuntimeError" in r.message, (r.outcome, r.message)


def test_42_wrong_call_shapes(client):
    ex = labkit.exercises.get("42-repair-key")
    assert "not the result of calling it" in ex.check(client, 42).message


def test_41_a_key_led_by_tenant_id_is_not_told_it_broadcasts(client):
    r = _check("41-tenant-shard-key", client, {"tenantId": 1, "_id": 1})
    assert not r.correct and "must start with the shard key" in r.message and "broadcast" not in r.message, r


@pytest.mark.parametrize("key", [{"deviceId": {"$gt": 1}}, {"deviceId": None}, {"deviceId": 1, "ts": "hashed",
                                                                                  "temperature": "hashed"},
                                 {"": 1}, {"deviceId.x": 1}, [("deviceId", 1)], 42, None])
def test_40_odd_keys_never_raise(client, key):
    r = labkit.exercises.get("40-device-shard-key").check(client, key)
    assert r.outcome in ("incorrect", "not-attempted", "correct"), r
