"""Lesson 32 (Anti-pattern: unbounded arrays): its exercises and their checkers.

Notebook: ``notebooks/32_unbounded_arrays.ipynb``.
"""
from __future__ import annotations

from typing import Any, Callable

from labkit.exercises import steps
from labkit.exercises.kinds import BehaviourCheck, Lab, Prediction
from labkit.exercises.outcomes import NotYet
from labkit.exercises.registry import Lesson

LESSON = Lesson(__file__)


@LESSON.exercise(BehaviourCheck, "32-capped-subset", takes=steps.function("record_event"))
def _check_capped_subset(lab: Lab, record_event: Callable) -> str:
    import datetime as dt

    from labkit.connection import connect

    events = [{"_id": f"evt:{i:03d}", "at": dt.datetime(2026, 7, 1) + dt.timedelta(minutes=i), "type": "heartbeat",
               "value": i} for i in range(25)]
    with lab.sandbox(connect()) as box:  # the learner's kind of engine, pristine data
        db = box.db
        db.devices.insert_one({"_id": "device:900", "site": "site:01", "recentEvents": []})
        for ev in events:
            lab.call(record_event, db, "device:900", dict(ev), raises={TypeError: lambda exc: (
                f"calling `record_event(db, device_id, event)` failed: {exc}. Keep that signature.")})
        device_writes = _device_write_statements(box.recorder)
        stored = list(db.events.find({"deviceId": "device:900"}))
        parent = db.devices.find_one({"_id": "device:900"}) or {}
        # two events at once: the second runs right after the first one's first read
        db.devices.insert_one({"_id": "device:901", "site": "site:01", "recentEvents": []})
        late = dt.datetime(2026, 7, 2)
        lab.interleaved(
            lambda: record_event(db, "device:901", {"_id": "evt:race:a", "at": late, "type": "alarm", "value": 1}),
            lambda: record_event(db, "device:901", {"_id": "evt:race:b", "at": late + dt.timedelta(seconds=1),
                                                    "type": "alarm", "value": 2}), box.recorder)
        raced = [e.get("_id") for e in (db.devices.find_one({"_id": "device:901"}) or {}).get("recentEvents") or []
                 if isinstance(e, dict)]
    if len(stored) != 25:
        raise NotYet(f"db.events holds {len(stored)} events for the device after 25 calls; insert each event, with "
                     "its `deviceId`, into the child collection.")
    recent = steps.capped_array(parent, "recentEvents", 10,
                                missing="the device has no `recentEvents` array; `$push` each event into it.",
                                too_long="`recentEvents` holds {n} events: the push is not capped. Add `$each` and "
                                         "`$slice` to the `$push`.")
    values = [e.get("value") for e in recent if isinstance(e, dict)]
    if values == list(range(9, -1, -1)):
        raise NotYet("`recentEvents` kept the 10 *oldest* events: with `$sort: {at: -1}` the newest come first, so "
                     "`$slice: -10` keeps the oldest ones at the end. Newest last is `$slice: -10` with no `$sort` "
                     "(or `$sort: {at: 1}`).")
    if values == list(range(24, 14, -1)):
        raise NotYet("`recentEvents` holds the 10 newest events but newest first; the task keeps them newest last "
                     "(the order they arrive in): `$slice: -10`, with no `$sort` or `$sort: {at: 1}`.")
    if sorted(values) == list(range(10)):
        raise NotYet("`recentEvents` kept the 10 *oldest* events: `$slice: 10` keeps the first elements; "
                     "use `$slice: -10` to keep the last ones.")
    if values != list(range(15, 25)):
        raise NotYet(f"`recentEvents` should hold the 10 newest events, newest last; it holds values {values}.")
    if device_writes > len(events):
        raise NotYet(f"25 events took {device_writes} write statements on the device: between the push and the trim "
                     "the array holds more than 10 events, and a crash there leaves it so. One `$push` with `$each` "
                     "and `$slice: -10` appends and trims in one atomic write.")
    big = [k for k, v in parent.items() if isinstance(v, list) and len(v) > 10]
    if big:
        raise NotYet(f"the device also keeps {big} with more than 10 elements; keep the full history only in db.events.")
    if sorted(raced) != ["evt:race:a", "evt:race:b"]:
        raise NotYet(f"two events arrived at once on another device: its recentEvents holds {raced}, not both. "
                     "Reading the device, building the list in Python and writing it back loses the other call's "
                     "event; let one `$push` with `$each` and `$slice: -10` change it on the server.")
    return ("25 events in the child collection, the 10 newest in the parent, nothing unbounded left, and two "
            "events at once both kept.")


def _device_write_statements(recorder: Any) -> int:
    """Update statements sent to the ``devices`` collection (update and findAndModify commands)."""
    n = 0
    for c in recorder.writes():
        name = next(iter(c))
        if c.get(name) == "devices" and name == "update":
            n += len(c.get("updates") or [])
        elif c.get(name) == "devices" and name == "findAndModify":
            n += 1
    return n


LESSON.add(Prediction, "32-predict-history-docs")
