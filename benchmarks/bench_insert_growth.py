"""Benchmark: what grows in the per-document cost of ``insert_one`` with collection size (issue 19, goal: within
1.3x of linear from 10,000 to 300,000 documents).

Usage:  .venv/bin/python benchmarks/bench_insert_growth.py [--sizes 10000,100000,300000] [--k 2000] [--rounds 3]

For each size n, in a fresh process per size (so one size's heap does not burden the next), a collection holding
n posts with an index on ``authorId`` and a unique index on a random ``rank`` (as ``bench_scaling.py``), then
``k`` ``insert_one`` calls, timed with the process's CPU time, best of ``rounds``:

* ``gc on``: as a learner runs it; ``gc off``: the same with the garbage collector disabled during the calls
  (what the collector's passes over a bigger heap add); the ``k`` calls alternate between the two in chunks of
  ``k / 10`` on one collection, so both see the same heap and the same load;
* ``index only``: the unique index's ``place`` + ``insert_at`` for the same keys, nothing else (the index
  structure's own growth);
* ``plain dicts``: plain Python's bookkeeping without an ordered index: a dict by ``_id`` and a dict by rank for
  the unique check (CPython's own growth: a bigger heap, cache misses);
* ``plain insort``: the same plus ``bisect.insort`` into two sorted lists of ``(key, id)`` (a flat sorted list:
  every insertion moves the later pointers, O(n)).

Prints microseconds per document and the ratio to the smallest size (1.0 = linear). Nothing is written.
"""
from __future__ import annotations

import argparse
import bisect
import gc
import json
import os
import random
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from bench_scaling import posts  # noqa: E402  (same documents as bench_scaling.py)


def _extra(n: int, k: int) -> list[dict]:
    rnd = random.Random(7)
    return [{"_id": n + i, "authorId": "user:%d" % (i % 100), "rank": rnd.random() * n + 0.5, "likes": i % 100}
            for i in range(k)]


def _best(fn, rounds: int) -> float:
    best = float("inf")
    for r in range(rounds):
        best = min(best, fn(r))
    return best


def measure(n: int, k: int, rounds: int) -> dict:
    """The four per-document costs (seconds) at size ``n`` in this process."""
    from labkit.engine import EmbeddedClient
    out = {}

    def engine(r: int) -> tuple[float, float]:
        # one collection per round; its k insertions alternate in chunks between the collector on and off,
        # so both modes see the same heap and the same machine load
        coll = EmbeddedClient()["bench"]["posts%d" % r]
        coll.create_index("authorId")
        coll.create_index("rank", unique=True)
        coll.insert_many(posts(n))
        extra = _extra(n, k)
        gc.collect()
        times = [0.0, 0.0]
        chunk = max(1, k // 10)
        for c, s in enumerate(range(0, k, chunk)):
            off = c % 2
            if off:
                gc.disable()
            t0 = time.process_time()
            for d in extra[s:s + chunk]:
                coll.insert_one(d)
            times[off] += time.process_time() - t0
            gc.enable()
        coll.drop()
        half = k / 2
        return times[0] / half, times[1] / half

    runs = [engine(r) for r in range(rounds)]
    out["gc on"] = min(t[0] for t in runs)
    out["gc off"] = min(t[1] for t in runs)

    def index_only(r: int) -> float:
        coll = EmbeddedClient()["bench"]["ix%d" % r]
        coll.create_index("rank", unique=True)
        coll.insert_many(posts(n))
        ix = coll._store.ix["rank_1"]
        keys = [(ix.flat_keys(d)[0], d["_id"]) for d in _extra(n, k)]
        gc.collect()
        t0 = time.process_time()
        for key, rid in keys:
            pos, other = ix.place(key, rid)
            ix.insert_at(pos, key, rid)
        t = time.process_time() - t0
        coll.drop()
        return t / k
    out["index only"] = _best(index_only, rounds)

    def plain(sorted_lists: bool):
        def one(r: int) -> float:
            docs = posts(n)
            by_id = {d["_id"]: d for d in docs}
            by_rank = {d["rank"]: d["_id"] for d in docs}
            ix_rank = sorted((d["rank"], d["_id"]) for d in docs)
            ix_author = sorted((d["authorId"], d["_id"]) for d in docs)
            extra = _extra(n, k)
            gc.collect()
            t0 = time.process_time()
            for d in extra:
                if d["_id"] in by_id or d["rank"] in by_rank:
                    raise ValueError("duplicate")
                d = dict(d)
                by_id[d["_id"]] = d
                by_rank[d["rank"]] = d["_id"]
                if sorted_lists:
                    bisect.insort(ix_rank, (d["rank"], d["_id"]))
                    bisect.insort(ix_author, (d["authorId"], d["_id"]))
            return (time.process_time() - t0) / k
        return one
    out["plain dicts"] = _best(plain(False), rounds)
    out["plain insort"] = _best(plain(True), rounds)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="10000,100000,300000")
    ap.add_argument("--k", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--one", type=int, help=argparse.SUPPRESS)  # child: measure one size, print JSON
    args = ap.parse_args()
    if args.one:
        print(json.dumps(measure(args.one, args.k, args.rounds)))
        return
    rows = []
    for n in (int(s) for s in args.sizes.split(",")):
        res = subprocess.run([sys.executable, __file__, "--one", str(n), "--k", str(args.k), "--rounds",
                              str(args.rounds)], capture_output=True, text=True, check=True)
        rows.append((n, json.loads(res.stdout.strip().splitlines()[-1])))
    cols = list(rows[0][1])
    print("%10s  " % "n" + "  ".join("%18s" % c for c in cols))
    base = rows[0][1]
    for n, r in rows:
        print("%10d  " % n + "  ".join("%9.2f us %5.2fx" % (r[c] * 1e6, r[c] / base[c]) for c in cols))


if __name__ == "__main__":
    main()
