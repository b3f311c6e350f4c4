"""Benchmark: read paths over 100,000 posts (two indexes): 200 feed queries, 1,000 find_one by an indexed field,
100 count_documents and 100 finds over indexed ranges of ~1,000 documents each. Best of 3; nothing is written.

Usage:  .venv/bin/python benchmarks/bench_reads.py
"""
import os
import sys
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import time, datetime, gc  # noqa: E402
from labkit.engine import EmbeddedClient  # noqa: E402
BASE = datetime.datetime(2024, 1, 1)
c = EmbeddedClient()["b"]["posts"]
c.create_index([("authorId", 1), ("createdAt", -1)])
c.create_index("likes")
c.insert_many([{"_id": i, "authorId": "user:%d" % (i % 100), "createdAt": BASE + datetime.timedelta(seconds=37 * i),
                "likes": (i * 7919) % 1000, "body": "x"} for i in range(100000)])
def best(fn, r=3):
    b = 1e9
    for _ in range(r):
        gc.collect(); t = time.perf_counter(); fn(); b = min(b, time.perf_counter() - t)
    return b
print("feed x200   %.3f" % best(lambda: [list(c.find({"authorId": "user:%d" % (q % 100)}).sort("createdAt", -1).limit(20)) for q in range(200)]))
print("find_one x1000 %.3f" % best(lambda: [c.find_one({"likes": q}) for q in range(1000)]))
print("count x100 %.3f" % best(lambda: [c.count_documents({"likes": {"$gte": q, "$lt": q + 10}}) for q in range(100)]))
print("range find x100 %.3f" % best(lambda: [list(c.find({"likes": {"$gte": q, "$lt": q + 10}})) for q in range(100)]))
