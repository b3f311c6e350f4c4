"""A/B of the issue-19 hot paths: an older labkit (``--before DIR``, e.g. ``git archive <commit> labkit | tar -x -C
DIR``) against the checkout, each workload in a fresh subprocess per side, sides alternated, best of ``--rounds``.

Usage:  .venv/bin/python benchmarks/bench_speed_ab.py --before DIR [--n 100000] [--rounds 2]
Workloads over n small posts (index on authorId, 100 posts per author; createdAt indexed for the counts):
count (1,000 count_documents over ~1 % ranges), update ($inc over every document), update_set ($set of a string
over every document), update_ix ($inc over ~10 % of the documents through the createdAt index), insert_one
(10,000 insert_one into a unique index), lookup (1,000 users -> posts, sub-pipeline $sort + $limit 3), find_one
(1,000 by authorId), explain (a COLLSCAN), load (insert_many with 2 indexes); memory (RSS growth per document of
the load).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

CHILD = r'''
import datetime, gc, json, os, sys, time
sys.path.insert(0, sys.argv[1])
from labkit.engine import EmbeddedClient
n = int(sys.argv[2])
BASE = datetime.datetime(2024, 1, 1)
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
docs = [{"_id": i, "authorId": "user:%d" % (i % 1000), "createdAt": BASE + datetime.timedelta(seconds=37 * i),
         "likes": (i * 7919) % 100, "body": "post body %d" % i} for i in range(n)]
out = {}
db = EmbeddedClient().bench
c = db.posts
c.create_index("authorId"); c.create_index("createdAt")
gc.collect(); r0 = rss(); t = time.perf_counter()
for i in range(0, n, 10000):
    c.insert_many([dict(d) for d in docs[i:i + 10000]])
out["load"] = time.perf_counter() - t
gc.collect(); out["memory"] = (rss() - r0) / n
w = max(1, n // 100); step = max(1, (n - w) // 1000)
rs = [(BASE + datetime.timedelta(seconds=37 * s), BASE + datetime.timedelta(seconds=37 * (s + w))) for s in range(0, step * 1000, step)]
t = time.perf_counter()
cnt = [c.count_documents({"createdAt": {"$gte": a, "$lt": b}}) for a, b in rs]
out["count"] = time.perf_counter() - t
t = time.perf_counter()
f1 = [c.find_one({"authorId": "user:%d" % ((i * 7) % 1000)})["_id"] for i in range(1000)]
out["find_one"] = time.perf_counter() - t
t = time.perf_counter(); c.find({"body": "nope"}).explain(); out["explain"] = time.perf_counter() - t
db.users.insert_many([{"_id": "user:%d" % i} for i in range(1000)])
pipe = [{"$lookup": {"from": "posts", "let": {"uid": "$_id"}, "pipeline": [{"$match": {"$expr": {"$eq": ["$authorId", "$$uid"]}}}, {"$sort": {"createdAt": -1}}, {"$limit": 3}], "as": "r"}}]
t = time.perf_counter(); lk = [[p["_id"] for p in d["r"]] for d in db.users.aggregate(pipe)]; out["lookup"] = time.perf_counter() - t
gc.collect(); t = time.perf_counter(); r = c.update_many({}, {"$inc": {"likes": 1}}); out["update"] = time.perf_counter() - t
gc.collect(); t = time.perf_counter(); r2 = c.update_many({}, {"$set": {"body": "edited"}}); out["update_set"] = time.perf_counter() - t
a, b = rs[len(rs) // 2][0], BASE + datetime.timedelta(seconds=37 * (n // 2 + n // 10))
gc.collect(); t = time.perf_counter(); r3 = c.update_many({"createdAt": {"$gte": a, "$lt": b}}, {"$inc": {"likes": 1}})
out["update_ix"] = time.perf_counter() - t
acc = db.accounts; acc.create_index("email", unique=True)
rows = [{"email": "u%d@example.org" % i, "n": i} for i in range(10000)]
gc.collect(); t = time.perf_counter()
for d in rows:
    acc.insert_one(dict(d))
out["insert_one"] = time.perf_counter() - t
out["check"] = [sum(cnt), sum(f1), len(lk), lk[5], r.modified_count, r2.modified_count, r3.modified_count,
                acc.count_documents({})]
print(json.dumps(out))
'''


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", required=True)
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    sides = {"before": os.path.abspath(args.before), "after": os.path.abspath(here)}
    best: dict = {s: {} for s in sides}
    checks = {}
    for _ in range(args.rounds):
        for side, path in sides.items():
            r = subprocess.run([sys.executable, "-c", CHILD, path, str(args.n)], capture_output=True, text=True,
                               check=True)
            out = json.loads(r.stdout.strip().splitlines()[-1])
            checks[side] = out.pop("check")
            for k, v in out.items():
                best[side][k] = min(v, best[side].get(k, v))
    assert checks["before"] == checks["after"], checks
    print("%-10s %12s %12s %8s" % ("workload", "before", "after", "ratio"))
    for k in best["after"]:
        b, a = best["before"][k], best["after"][k]
        unit = "B/doc" if k == "memory" else "s"
        print("%-10s %10.3f %s %10.3f %s %7.2fx" % (k, b, unit, a, unit, b / a if a else 0))


if __name__ == "__main__":
    main()
