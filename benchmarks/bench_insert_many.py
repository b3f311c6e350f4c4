"""Benchmark: batched inserts and index builds, optionally against an older checkout, in one run.

Usage:  .venv/bin/python benchmarks/bench_insert_many.py [--before DIR] [--repeat N]

``--before DIR`` names a directory holding an older ``labkit`` package (e.g. made with
``git archive <commit> labkit | tar -x -C DIR``); each workload then runs in fresh subprocesses,
alternating old and current code, and the best time of each is printed. Workloads:
  1. ``labkit.seed.social(db, users=10_000)`` (160k documents; indexes built after the data, as the seeder does)
  2. ``insert_many`` of 100,000 follows (batches of 1,000) into a collection that already has the unique
     ``{followerId: 1, followingId: 1}`` and ``{followingId: 1, followerId: 1}`` indexes
  3. the same 100,000 follows loaded first, then both indexes built with ``create_index``
  4. ``posts``: bench_peers.py's insert_many row: 100,000 small posts ``{_id, authorId, createdAt, likes, body}``
     in batches of 10,000 into a collection with an index on authorId
  5. ``million``: bench_engine.py --only-million's load: 1,000,000 ``{_id, a, b}`` in batches of 100,000, then
     indexes on a and b built
  6. (reference) workload 1 on plain mongomock
``--workloads a,b`` picks some. Each line shows wall-clock seconds and, in brackets, the child's CPU seconds
(steadier than wall-clock time on a loaded machine).
Every run checks its document and index-entry counts, so old and new code are seen to agree.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def _follows(n: int) -> list[dict]:
    out = []
    for i in range(n):
        out.append({"followerId": "user:%d" % (i % 10_000), "followingId": "user:%d" % ((i * 7919) % 9_973),
                    "since": i})
    return out


def run_one(workload: str) -> dict:
    import gc
    import mongomock
    from labkit.engine import EmbeddedClient
    gc.collect()
    if workload in ("seed", "seed-mongomock"):
        import labkit.seed as S
        db = (mongomock.MongoClient() if workload == "seed-mongomock" else EmbeddedClient()).bench
        t0, c0 = time.perf_counter(), time.process_time()
        S.social(db, users=10_000, progress=False)
        dt, cpu = time.perf_counter() - t0, time.process_time() - c0
        counts = {n: db[n].count_documents({}) for n in ("users", "posts", "follows")}
        return {"seconds": dt, "cpu": cpu, "check": counts}
    if workload == "posts":
        import datetime
        base = datetime.datetime(2024, 1, 1)
        posts = [{"_id": "p%07d" % i, "authorId": "user:%d" % (i % 1000), "createdAt": base + datetime.timedelta(
            seconds=37 * i), "likes": (i * 7919) % 100, "body": "post body %d" % i} for i in range(100_000)]
        c = EmbeddedClient().bench.posts
        c.create_index("authorId")
        batches = [[dict(d) for d in posts[i:i + 10_000]] for i in range(0, len(posts), 10_000)]
        t0, c0 = time.perf_counter(), time.process_time()
        for b in batches:
            c.insert_many(b)
        dt, cpu = time.perf_counter() - t0, time.process_time() - c0
        return {"seconds": dt, "cpu": cpu, "check": {n: len(ix.entries) for n, ix in c._store.ix.items()}}
    if workload == "million":
        c = EmbeddedClient().bench.small
        t0, c0 = time.perf_counter(), time.process_time()
        for start in range(0, 1_000_000, 100_000):
            c.insert_many([{"_id": i, "a": i % 1000, "b": "k%d" % (i % 5000)} for i in range(start, start + 100_000)])
        c.create_index("a")
        c.create_index("b")
        dt, cpu = time.perf_counter() - t0, time.process_time() - c0
        return {"seconds": dt, "cpu": cpu, "check": {n: len(ix.entries) for n, ix in c._store.ix.items()}}
    docs = _follows(100_000)
    db = EmbeddedClient().bench
    c = db.follows
    idx = [([("followerId", 1), ("followingId", 1)], {"unique": False}),
           ([("followingId", 1), ("followerId", 1)], {})]
    c0 = time.process_time()
    if workload == "indexed-insert":
        for key, opts in idx:
            c.create_index(key, **opts)
        c0 = time.process_time()
        t0 = time.perf_counter()
        for i in range(0, len(docs), 1000):
            c.insert_many(docs[i:i + 1000], ordered=True)
        dt = time.perf_counter() - t0
    elif workload == "index-build":
        for i in range(0, len(docs), 1000):
            c.insert_many(docs[i:i + 1000], ordered=True)
        c0 = time.process_time()
        t0 = time.perf_counter()
        for key, opts in idx:
            c.create_index(key, **opts)
        dt = time.perf_counter() - t0
    else:
        raise SystemExit("unknown workload %s" % workload)
    cpu = time.process_time() - c0
    st = c._store
    return {"seconds": dt, "cpu": cpu, "check": {n: len(ix.entries) for n, ix in st.ix.items()}}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", help="directory containing an older labkit package")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--workloads", default="seed,indexed-insert,index-build,posts,million,seed-mongomock")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(run_one(args.child)))
        return
    variants = [("current", ROOT)]
    if args.before:
        variants.insert(0, ("before", os.path.abspath(args.before)))
    results: dict = {}
    for w in args.workloads.split(","):
        vs = variants[-1:] if w == "seed-mongomock" else variants
        for _ in range(args.repeat if w != "seed-mongomock" else 1):
            for label, path in vs:
                env = dict(os.environ, PYTHONPATH=path)
                out = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", w], env=env,
                                     cwd=path, capture_output=True, text=True, check=True)
                r = json.loads(out.stdout.strip().splitlines()[-1])
                key = (w, label if w != "seed-mongomock" else "mongomock")
                prev = results.get(key)
                if prev is not None and prev["check"] != r["check"]:
                    raise SystemExit("inconsistent results for %s: %s vs %s" % (key, prev, r))
                if prev is None or r["seconds"] < prev["seconds"]:
                    results[key] = dict(r, cpu=min(r["cpu"], prev["cpu"]) if prev else r["cpu"])
                else:
                    prev["cpu"] = min(prev["cpu"], r["cpu"])
    checks = {}
    for (w, label), r in results.items():
        checks.setdefault(w, set()).add(json.dumps(r["check"], sort_keys=True))
        print("%-15s %-9s %7.2f s (cpu %6.2f s)  %s" % (w, label, r["seconds"], r["cpu"], r["check"]))
    bad = [w for w, s in checks.items() if len(s) > 1 and w != "seed-mongomock"]
    if bad:
        raise SystemExit("old and new code disagree on %s" % bad)
    print("load average:", os.getloadavg())


if __name__ == "__main__":
    main()
