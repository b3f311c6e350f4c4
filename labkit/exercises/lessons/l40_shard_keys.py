"""Lesson 40 (Scale out: choosing a shard key): its exercises and their checkers.

Notebook: ``notebooks/40_shard_keys.ipynb``. The checker measures on the cluster the learner passes (labkit's
simulated one or a real mongos): it shards a fresh copy of the scenario's data on the learner's key in a sandbox
database, then reads where new documents landed and which shards the hot read contacted (``labkit.sharding``).
"""
from __future__ import annotations

import datetime as dt
from typing import Any

from labkit.exercises import steps
from labkit.exercises.kinds import DesignQuestion, Prediction
from labkit.exercises.registry import Lesson

LESSON = Lesson(__file__)

_EVENT_FIELDS = ("_id", "deviceId", "ts", "temperature")
_T0 = dt.datetime(2026, 3, 1)
_DEVICES = 50


def _events(minutes: range, temperature: int | None = None) -> list[dict]:
    """One event per device per minute; ``_id`` is an ObjectId of the event's time (it increases too). The
    temperature varies, or is ``temperature`` for every event (a warm minute: new values in one range)."""
    from bson import ObjectId

    return [{"_id": ObjectId.from_datetime(_T0 + dt.timedelta(minutes=m, seconds=d)), "deviceId": f"dev:{d:02d}",
             "ts": _T0 + dt.timedelta(minutes=m),
             "temperature": 20 + (d * m) % 7 if temperature is None else temperature}
            for m in minutes for d in range(_DEVICES)]


@LESSON.exercise(DesignQuestion, "40-device-shard-key",
                 takes=steps.client_and("key", 'ex.check(client, {"deviceId": 1, "ts": 1})'))
def _check_device_key(client: Any, key: Any) -> str:
    with steps.key_sandbox("40-device-shard-key", client, key, _EVENT_FIELDS) as box:
        events = box.db.events
        window = {"$gte": _T0 + dt.timedelta(minutes=10), "$lt": _T0 + dt.timedelta(minutes=40)}
        m = steps.measure_key(events, key, _events(range(60)),
                              lambda: events.find({"deviceId": "dev:07", "ts": window}),
                              new=_events(range(60, 70), temperature=21))
    steps.shard_key_mistakes(m, docs="events", series="device", series_count=_DEVICES, lead="deviceId", then="ts",
                             read="one device, a time range")
    return (f"the new events spread over the shards (busiest {m.busiest:.0%}), the hot read contacted one shard "
            f"({m.read['stage']}), and the key has {m.distinct:,} distinct values in the sample.")


def _explain_hot(measured: Any) -> str:
    if measured == "all on one shard":
        return ("Every new createdAt is later than the last split point, so every insert falls in the last range, "
                "owned by one shard.")
    return ""


LESSON.add(Prediction, "40-predict-hot-shard", choices=("all on one shard", "spread over the shards"),
           explain=_explain_hot)
