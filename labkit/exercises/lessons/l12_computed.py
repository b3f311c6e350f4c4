"""Lesson 12 (Computed: maintain rating statistics on write): its exercises and their checkers.

Notebook: ``notebooks/12_computed.ipynb``.
"""
from __future__ import annotations

from typing import Any, Callable

from labkit.exercises import steps
from labkit.exercises.kinds import BehaviourCheck, Lab, Prediction
from labkit.exercises.outcomes import NotYet
from labkit.exercises.registry import Lesson

LESSON = Lesson(__file__)


def _fresh_products(db: Any) -> None:
    db.products.insert_many([{"_id": "prod:a", "name": "A"}, {"_id": "prod:b", "name": "B"},
                             {"_id": "prod:c", "name": "C"}])


@LESSON.exercise(BehaviourCheck, "12-computed-stats", takes=steps.only_function("add_review"),
                 fresh=_fresh_products)
def _check_computed_stats(lab: Lab, add_review: Callable) -> str:
    with lab.sandbox() as box:
        return _judge_stats(box.db, box.recorder, add_review)


def _judge_stats(db: Any, rec: Any, add_review: Callable) -> str:
    import datetime as dt

    ratings = [("prod:a", 5), ("prod:b", 3), ("prod:a", 4), ("prod:a", 5), ("prod:b", 1), ("prod:a", 2),
               ("prod:b", 5), ("prod:a", 5), ("prod:a", 3), ("prod:b", 3), ("prod:a", 4), ("prod:a", 1)]
    for i, (pid, r) in enumerate(ratings):
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


LESSON.add(Prediction, "12-predict-aggregate-keys")


def _fresh_threads(db: Any) -> None:
    db.threads.insert_many([{"_id": t, "title": t.split(":")[1], "replyCount": 0}
                            for t in ("thread:a", "thread:b", "thread:c")])


@LESSON.exercise(BehaviourCheck, "12-thread-stats",
                 takes=steps.only_function("add_reply", ex="ex2"))
def _check_thread_stats(lab: Lab, add_reply: Callable) -> str:
    import datetime as dt

    t0 = dt.datetime(2026, 11, 2, 9, 0)
    # minutes after t0; reply 4 arrives late (written at minute 1, delivered after minute 30)
    arrivals = [("thread:a", 0), ("thread:b", 5), ("thread:a", 12), ("thread:a", 30), ("thread:a", 1),
                ("thread:b", 7), ("thread:a", 31), ("thread:b", 2)]
    with lab.sandbox(fresh=_fresh_threads) as box:
        for i, (tid, minute) in enumerate(arrivals):
            lab.call(add_reply, box.db, {"_id": f"reply:{i}", "threadId": tid, "userId": f"user:{i}",
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
    with lab.sandbox() as box:
        box.db.threads.insert_one({"_id": "thread:a", "title": "a", "replyCount": 0})
        lab.interleaved(
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


