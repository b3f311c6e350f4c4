"""Benchmark: ``labkit.review`` of a 100,000-document database on the embedded engine (target: under 5 s).

Usage:  .venv/bin/python benchmarks/bench_review.py [--docs N] [--sample N] [--repeat N]

The database: ``events`` (70% of the documents, an array of sub-documents, three secondary indexes),
``users`` (20%, with a validator), ``posts`` (10%, a nested ``meta.comments`` array), and a 5,000-entry
profiler-shaped query log. Loading is not timed; the review (sampling, $collStats, $indexStats, every check)
is, best of ``--repeat`` runs. It prints the findings so a run is seen to have done the work.
"""
from __future__ import annotations

import argparse
import datetime as dt
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def build(db, n: int) -> list[dict]:
    """Load the database and return a query log for it."""
    t0 = dt.datetime(2026, 1, 1)
    n_events, n_users = int(n * 0.7), int(n * 0.2)
    n_posts = n - n_events - n_users
    db.create_collection("users", validator={"$jsonSchema": {"bsonType": "object", "required": ["email"]}})
    db.users.insert_many([{"_id": f"u{i}", "email": f"U{i}@example.com", "name": f"user {i}",
                           "createdAt": t0 + dt.timedelta(minutes=i)} for i in range(n_users)])
    db.users.create_index("email")
    events = []
    for i in range(n_events):
        events.append({"userId": f"u{i % max(n_users, 1)}", "type": ("view", "click", "buy")[i % 3],
                       "at": t0 + dt.timedelta(seconds=i), "tags": [{"k": "src", "v": "web"}] * (i % 4)})
    for start in range(0, len(events), 10_000):
        db.events.insert_many(events[start:start + 10_000])
    db.events.create_index("userId")
    db.events.create_index([("userId", 1), ("at", -1)])
    db.events.create_index("type")
    db.posts.insert_many([{"_id": i, "title": f"post {i}", "createdAt": t0 + dt.timedelta(hours=i),
                           "meta": {"comments": [{"by": "u1"}] * (i % 60)}} for i in range(n_posts)])
    log = []
    for i in range(5000):
        ts = t0 + dt.timedelta(milliseconds=100 * i)
        if i % 5 == 0:
            log.append({"op": "command", "ns": f"{db.name}.events", "ts": ts, "command": {
                "aggregate": "events", "pipeline": [{"$match": {"userId": f"u{i}"}}, {"$lookup": {
                    "from": "users", "localField": "userId", "foreignField": "_id", "as": "u"}}]}})
        else:
            log.append({"op": "query", "ns": f"{db.name}.users", "ts": ts,
                        "command": {"find": "users", "filter": {"_id": f"u{i}"}, "projection": {"name": 1}}})
    return log


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--docs", type=int, default=100_000)
    p.add_argument("--sample", type=int, default=1000)
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()

    import labkit
    from labkit.engine import EmbeddedClient

    db = labkit.fresh_db("bench_review", client=EmbeddedClient())
    t = time.perf_counter()
    log = build(db, args.docs)
    load = time.perf_counter() - t
    times = []
    for _ in range(args.repeat):
        t = time.perf_counter()
        r = labkit.review(db, sample=args.sample, query_log=log)
        times.append(time.perf_counter() - t)
    t = time.perf_counter()
    labkit.review(db, sample=args.sample)
    no_log = time.perf_counter() - t
    docs = sum(s["documents"] for s in r.sampled)
    print(f"database: {docs:,} documents in {len(r.sampled)} collections (loaded in {load:.1f} s, not timed)")
    print(f"review with a {len(log):,}-entry query log, sample {args.sample}: best {min(times):.2f} s "
          f"of {args.repeat} (all: {', '.join(f'{x:.2f}' for x in times)})")
    print(f"review without query data: {no_log:.2f} s")
    print(f"findings: {sorted(r.kinds())}")


if __name__ == "__main__":
    main()
