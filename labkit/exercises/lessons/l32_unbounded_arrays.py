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


_KEEP = 5  # a chat room list shows its 5 newest messages


@LESSON.exercise(BehaviourCheck, "32-capped-subset", takes=steps.function("post_message"))
def _check_capped_subset(lab: Lab, post_message: Callable) -> str:
    """A chat app, lesson 32's capped subset on a changed scenario: every message in ``db.messages`` with its
    ``roomId``; the room's ``latest`` keeps the 5 newest, newest first, in one atomic ``$push`` (manual: "$push"
    with "$each", "$position" and "$slice": a positive $slice keeps the first elements, a negative one the last)."""
    import datetime as dt

    from labkit.connection import connect

    messages = [{"_id": f"msg:{i:03d}", "at": dt.datetime(2026, 7, 1) + dt.timedelta(minutes=i),
                 "by": f"user:{i % 4}", "text": f"message {i}", "n": i} for i in range(25)]
    with lab.sandbox(connect()) as box:  # the learner's kind of engine, pristine data
        db = box.db
        db.rooms.insert_one({"_id": "room:900", "name": "general", "latest": []})
        for m in messages:
            lab.call(post_message, db, "room:900", dict(m), raises={TypeError: lambda exc: (
                f"calling `post_message(db, room_id, message)` failed: {exc}. Keep that signature.")})
        room_writes = _room_write_statements(box.recorder)
        stored = list(db.messages.find({"roomId": "room:900"}))
        room = db.rooms.find_one({"_id": "room:900"}) or {}
        # two messages at once: the second runs right after the first one's first command
        db.rooms.insert_one({"_id": "room:901", "name": "random", "latest": []})
        late = dt.datetime(2026, 7, 2)
        lab.interleaved(
            lambda: post_message(db, "room:901", {"_id": "msg:race:a", "at": late, "by": "user:1", "text": "a", "n": 1}),
            lambda: post_message(db, "room:901", {"_id": "msg:race:b", "at": late + dt.timedelta(seconds=1),
                                                  "by": "user:2", "text": "b", "n": 2}), box.recorder)
        raced = [m.get("_id") for m in (db.rooms.find_one({"_id": "room:901"}) or {}).get("latest") or []
                 if isinstance(m, dict)]
    if len(stored) != len(messages):
        raise NotYet(f"db.messages holds {len(stored)} messages for the room after {len(messages)} calls; insert each "
                     "message, with its `roomId`, into the messages collection: it keeps the full history.")
    latest = steps.capped_array(room, "latest", _KEEP,
                                missing="the room has no `latest` array; `$push` each message into it.",
                                too_long="`latest` holds {n} messages: the push is not capped. Add `$each` and "
                                         "`$slice` to the `$push`, so the room document stays small.")
    values = [m.get("n") for m in latest if isinstance(m, dict)]
    last = len(messages) - 1
    newest_first = list(range(last, last - _KEEP, -1))
    if values == list(range(_KEEP)):
        raise NotYet("`latest` kept the 5 *oldest* messages: `$slice: 5` keeps the first elements, and a plain "
                     "`$push` appends at the end. Put each new message first with `$position: 0` (or sort by "
                     "`at` descending), then `$slice: 5`.")
    if values == list(range(_KEEP - 1, -1, -1)):
        raise NotYet("`latest` kept the 5 *oldest* messages, newest first: `$slice: -5` keeps the last elements, "
                     "and with the new message placed first those are the oldest. Use `$slice: 5`.")
    if values == list(range(last - _KEEP + 1, last + 1)):
        raise NotYet("`latest` holds the 5 newest messages but newest last; the room list shows them newest first: "
                     "`$position: 0` (or `$sort: {at: -1}`) with `$slice: 5`.")
    if values != newest_first:
        raise NotYet(f"`latest` should hold the 5 newest messages, newest first (n = {newest_first}); it holds "
                     f"{values}.")
    if room_writes > len(messages):
        raise NotYet(f"{len(messages)} messages took {room_writes} write statements on the room: between the push and "
                     "the trim the array holds more than 5 messages, and a crash there leaves it so. One `$push` "
                     "with `$each`, `$position: 0` and `$slice: 5` adds and trims in one atomic write.")
    big = [k for k, v in room.items() if isinstance(v, list) and len(v) > _KEEP]
    if big:
        raise NotYet(f"the room also keeps {big} with more than 5 elements; keep the full history only in db.messages.")
    if sorted(raced) != ["msg:race:a", "msg:race:b"]:
        raise NotYet(f"two messages arrived at once in another room: its `latest` holds {raced}, not both. Reading "
                     "the room, building the list in Python and writing it back loses the other call's message; let "
                     "one `$push` with `$each`, `$position` and `$slice` change it on the server.")
    return (f"{len(messages)} messages in the messages collection, the 5 newest first in the room, nothing unbounded "
            "left, and two messages at once both kept.")


def _room_write_statements(recorder: Any) -> int:
    """Update statements sent to the ``rooms`` collection (update and findAndModify commands)."""
    n = 0
    for c in recorder.writes():
        name = next(iter(c))
        if c.get(name) == "rooms" and name == "update":
            n += len(c.get("updates") or [])
        elif c.get(name) == "rooms" and name == "findAndModify":
            n += 1
    return n


LESSON.add(Prediction, "32-predict-history-docs")
