"""Benchmark: batched inserts and index builds, optionally against an older checkout, in one run.

Usage:  .venv/bin/python benchmarks/bench_insert_many.py [--before DIR] [--repeat N]

``--before DIR`` names a directory holding an older ``labkit`` package (e.g. made with
``git archive <commit> labkit | tar -x -C DIR``); each workload then runs in fresh subprocesses,
alternating old and current code, and the best time of each is printed. Workloads:
  1. ``labkit.seed.social(db, users=10_000)`` (160k documents; indexes built after the data, as the seeder does)
  2. ``insert_many`` of 100,000 follows (batches of 1,000) into a collection that already has the unique
     ``{followerId: 1, followingId: 1}`` and ``{followingId: 1, followerId: 1}`` indexes
  3. the same 100,000 follows loaded first, then both indexes built with ``create_index``
  4. (reference) workload 1 on plain mongomock
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
        t0 = time.perf_counter()
        S.social(db, users=10_000, progress=False)
        dt = time.perf_counter() - t0
        counts = {n: db[n].count_documents({}) for n in ("users", "posts", "follows")}
        return {"seconds": dt, "check": counts}
    docs = _follows(100_000)
    db = EmbeddedClient().bench
    c = db.follows
    idx = [([("followerId", 1), ("followingId", 1)], {"unique": False}),
           ([("followingId", 1), ("followerId", 1)], {})]
    if workload == "indexed-insert":
        for key, opts in idx:
            c.create_index(key, **opts)
        t0 = time.perf_counter()
        for i in range(0, len(docs), 1000):
            c.insert_many(docs[i:i + 1000], ordered=True)
        dt = time.perf_counter() - t0
    elif workload == "index-build":
        for i in range(0, len(docs), 1000):
            c.insert_many(docs[i:i + 1000], ordered=True)
        t0 = time.perf_counter()
        for key, opts in idx:
            c.create_index(key, **opts)
        dt = time.perf_counter() - t0
    else:
        raise SystemExit("unknown workload %s" % workload)
    st = c._store
    return {"seconds": dt, "check": {n: len(ix.entries) for n, ix in st.ix.items()}}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", help="directory containing an older labkit package")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(run_one(args.child)))
        return
    variants = [("current", ROOT)]
    if args.before:
        variants.insert(0, ("before", os.path.abspath(args.before)))
    workloads = ["seed", "indexed-insert", "index-build"]
    results: dict = {}
    for w in workloads + ["seed-mongomock"]:
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
                    results[key] = r
    checks = {}
    for (w, label), r in results.items():
        checks.setdefault(w, set()).add(json.dumps(r["check"], sort_keys=True))
        print("%-15s %-9s %7.2f s  %s" % (w, label, r["seconds"], r["check"]))
    bad = [w for w, s in checks.items() if len(s) > 1 and w != "seed-mongomock"]
    if bad:
        raise SystemExit("old and new code disagree on %s" % bad)
    print("load average:", os.getloadavg())


if __name__ == "__main__":
    main()
