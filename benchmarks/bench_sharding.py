"""Benchmark: the simulated sharded cluster (labkit/engine/s/) at the size issue 27 names.

Usage:  .venv/bin/python benchmarks/bench_sharding.py [--docs 250000] [--shards 4] [--repeat 20]

Workloads (each line prints wall-clock seconds; no timed assertions anywhere):
  1. load: ``labkit.connect(shards=N)`` (pymongo over a loopback socket to the served mongos, the path lessons
     take), ``shardCollection`` of an empty ``posts`` on ``{authorId: "hashed"}`` (one chunk per shard), then
     ``insert_many(ordered=False)`` of ``--docs`` small posts ``{_id, authorId, createdAt, likes, body}`` in
     batches of 10,000, then an index on ``{authorId: 1, createdAt: -1}``;
  2. a targeted explain (``find({authorId: <one author>}).explain()``, executionStats): best and worst of
     ``--repeat`` runs;
  3. a broadcast explain (``find({likes: {$gte: 990}}).explain()``, every shard scans its documents);
  4. the same load in-process (``Mongos.command``, no socket), to show what the wire costs.
Every run checks the document count and that the targeted explain reached one shard and the broadcast all.
"""
from __future__ import annotations

import argparse
import datetime
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))


def _posts(n: int, start: int = 0) -> list[dict]:
    base = datetime.datetime(2024, 1, 1)
    return [{"_id": i, "authorId": "user:%d" % (i % 5_000), "createdAt": base + datetime.timedelta(seconds=i),
             "likes": (i * 7919) % 1_000, "body": "post %d" % i} for i in range(start, start + n)]


def _timed(fn, repeat: int) -> tuple[float, float, float]:
    """(best wall, worst wall, worst CPU) seconds of ``repeat`` runs; CPU time counts the served cluster too (it
    runs in this process), and on a shared machine it is the steadier figure."""
    times, cpu = [], []
    for _ in range(repeat):
        t, c = time.perf_counter(), time.process_time()
        fn()
        times.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    return min(times), max(times), max(cpu)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=250_000)
    ap.add_argument("--shards", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=20)
    args = ap.parse_args()
    import labkit
    from labkit.engine.s.router import Mongos

    t0, c0 = time.perf_counter(), time.process_time()
    client = labkit.connect("embedded", shards=args.shards)
    db = client["bench_sharding"]
    db.posts.drop()
    client.admin.command("shardCollection", "bench_sharding.posts", key={"authorId": "hashed"})
    for start in range(0, args.docs, 10_000):
        db.posts.insert_many(_posts(min(10_000, args.docs - start), start), ordered=False)
    load, load_cpu = time.perf_counter() - t0, time.process_time() - c0
    db.posts.create_index([("authorId", 1), ("createdAt", -1)])
    total = time.perf_counter() - t0
    assert db.posts.estimated_document_count() == args.docs
    print("load %d posts into %d shards over the wire: %.2f s wall, %.2f s CPU (client and served cluster are "
          "this process) (+ index: %.2f s wall total)" % (args.docs, args.shards, load, load_cpu, total))

    def targeted() -> None:
        e = db.posts.find({"authorId": "user:42"}).explain()
        assert e["queryPlanner"]["winningPlan"]["stage"] == "SINGLE_SHARD"

    def broadcast() -> None:
        e = db.posts.find({"likes": {"$gte": 990}}).explain()
        assert len(e["queryPlanner"]["winningPlan"]["shards"]) == args.shards

    lo, hi, cpu = _timed(targeted, args.repeat)
    print("targeted explain: best %.1f ms, worst %.1f ms wall, worst %.1f ms CPU (%d runs)"
          % (lo * 1000, hi * 1000, cpu * 1000, args.repeat))
    n = max(3, args.repeat // 4)
    lo, hi, cpu = _timed(broadcast, n)
    print("broadcast explain: best %.0f ms, worst %.0f ms wall, worst %.0f ms CPU (%d runs)"
          % (lo * 1000, hi * 1000, cpu * 1000, n))

    db.posts.drop()  # the in-process load starts from an empty heap, as the first one did
    t0 = time.perf_counter()
    m = Mongos(args.shards)
    m.command("admin", {"shardCollection": "b.posts", "key": {"authorId": "hashed"}})
    for start in range(0, args.docs, 10_000):
        m.command("b", {"insert": "posts", "documents": _posts(min(10_000, args.docs - start), start),
                        "ordered": False})
    print("load %d posts in-process (no socket): %.2f s" % (args.docs, time.perf_counter() - t0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
