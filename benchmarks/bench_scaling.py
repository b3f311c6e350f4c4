"""Benchmark: growth of insert costs with collection size (issue 19: index maintenance O(log n) per document).

Usage:  .venv/bin/python benchmarks/bench_scaling.py [--sizes 10000,100000,300000]

Prints, for each size n, the time of ``insert_many`` of n small posts into a collection with one secondary index,
the per-document cost of ``insert_one`` into a collection already holding n documents (unique index on a
random key, so every insertion lands in the middle of the index), and the ratio of each per-document cost to the
smallest size's (1.0 = linear growth). Nothing is written.
"""
from __future__ import annotations

import argparse
import datetime
import gc
import os
import random
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from labkit.engine import EmbeddedClient  # noqa: E402

BASE = datetime.datetime(2024, 1, 1)


def posts(n: int, start: int = 0) -> list[dict]:
    """Small posts with an author id (indexed), a random rank (indexed unique) and a timestamp."""
    rnd = random.Random(start)
    return [{"_id": i, "authorId": "user:%d" % (i % 100), "rank": rnd.random() + i,
             "createdAt": BASE + datetime.timedelta(seconds=37 * i), "likes": i % 100}
            for i in range(start, start + n)]


def insert_many_time(n: int, repeat: int = 3) -> float:
    """Seconds for ``insert_many`` of ``n`` posts into a fresh collection with an index on authorId (best of
    ``repeat`` runs: the small sizes take milliseconds, where one run on a shared machine is mostly noise)."""
    best = None
    for _ in range(repeat):
        coll = EmbeddedClient()["bench"]["posts"]
        coll.create_index("authorId")
        docs = posts(n)
        gc.collect()
        t0 = time.perf_counter()
        coll.insert_many(docs)
        t = time.perf_counter() - t0
        best = t if best is None else min(best, t)
        del coll, docs
    return best


def insert_one_cost(n: int, k: int = 2000) -> float:
    """Seconds per document of ``k`` ``insert_one`` calls into a collection already holding ``n`` posts,
    with a unique index on a random-ish key (each insertion lands inside the index, not at its end)."""
    coll = EmbeddedClient()["bench"]["posts"]
    coll.create_index("authorId")
    coll.create_index("rank", unique=True)
    coll.insert_many(posts(n))
    rnd = random.Random(7)
    extra = [{"_id": n + i, "authorId": "user:%d" % (i % 100), "rank": rnd.random() * n + 0.5,
              "likes": i % 100} for i in range(k)]
    gc.collect()
    t0 = time.perf_counter()
    for d in extra:
        coll.insert_one(d)
    return (time.perf_counter() - t0) / k


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="10000,100000,300000")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    base_many = base_one = None
    print("%10s  %14s  %10s  %8s  %16s  %8s" % ("n", "insert_many s", "us/doc", "ratio", "insert_one us/doc",
                                                 "ratio"))
    for n in sizes:
        t = insert_many_time(n)
        per = t / n
        one = insert_one_cost(n)
        base_many = base_many or per
        base_one = base_one or one
        print("%10d  %14.2f  %10.1f  %8.2f  %16.1f  %8.2f" % (n, t, per * 1e6, per / base_many, one * 1e6,
                                                              one / base_one))


if __name__ == "__main__":
    main()
