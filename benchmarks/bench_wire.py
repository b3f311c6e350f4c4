"""Benchmark: what one operation costs over the wire (pymongo -> ``serve_in_thread()`` on loopback) against the
same operation on the embedded engine in-process.

Usage:  .venv/bin/python benchmarks/bench_wire.py [--n N] [--rounds R] [--profile FILE]

Workloads, each on a fresh collection with one secondary index, N operations each:
  insert_one   N insert_one of a small document
  find_one     N find_one by _id
  update_one   N update_one ($inc by _id)
  find_many    N/10 find of 10 documents by the indexed field (one batch)
Both sides run in this one process (the server is a thread of it), so ``time.process_time()`` counts the client,
the server thread and the engine alike: the figures are CPU microseconds per operation, best of R rounds, the
two sides alternated. "wire - in-process" is what the wire adds per operation (pymongo's encoding and socket
work plus the server's parsing, dispatch and reply).

``--profile FILE`` writes a cProfile of the served insert_one and find_one workloads (client and server threads
together, via ``threading.setprofile``) to FILE for ``python -m pstats``.
"""
from __future__ import annotations

import argparse
import gc
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from pymongo import MongoClient  # noqa: E402

from labkit.engine import EmbeddedClient  # noqa: E402
from labkit.engine.transport.wire import serve_in_thread  # noqa: E402

WORKLOADS = ("insert_one", "find_one", "update_one", "find_many")


def _run(coll, n: int) -> dict[str, float]:
    """CPU seconds per workload on ``coll`` (a pymongo or embedded collection, empty)."""
    coll.create_index("g")
    out = {}
    gc.collect()
    t = time.process_time()
    for i in range(n):
        coll.insert_one({"_id": i, "g": i % (n // 10 or 1), "name": "user %d" % i, "n": i})
    out["insert_one"] = time.process_time() - t
    t = time.process_time()
    for i in range(n):
        coll.find_one({"_id": i})
    out["find_one"] = time.process_time() - t
    t = time.process_time()
    for i in range(n):
        coll.update_one({"_id": i}, {"$inc": {"n": 1}})
    out["update_one"] = time.process_time() - t
    t = time.process_time()
    for i in range(n // 10):
        list(coll.find({"g": i}))
    out["find_many"] = time.process_time() - t
    return out


def _side(wire: bool, n: int, r: int) -> dict[str, float]:
    if wire:
        with serve_in_thread() as srv, MongoClient(srv.uri, serverSelectionTimeoutMS=5000) as client:
            return _run(client["bench"]["c%d" % r], n)
    return _run(EmbeddedClient()["bench"]["c%d" % r], n)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--profile", help="write a cProfile of the served workloads to this file")
    args = ap.parse_args(argv)
    if args.profile:
        import cProfile
        import threading
        prof = cProfile.Profile()
        threading.setprofile(lambda *a: prof.enable())  # server threads started from now on are profiled
        prof.enable()
        _side(True, args.n, 0)
        prof.disable()
        threading.setprofile(None)
        prof.dump_stats(args.profile)
        print("profile written to %s" % args.profile)
        return 0
    best = {True: {}, False: {}}
    for r in range(args.rounds):
        for wire in (False, True):
            for k, v in _side(wire, args.n, r).items():
                best[wire][k] = min(v, best[wire].get(k, v))
    print("%-12s %14s %14s %14s   (CPU us per operation, best of %d, n=%d)"
          % ("workload", "in-process", "wire", "wire - in-proc", args.rounds, args.n))
    for k in WORKLOADS:
        ops = args.n // 10 if k == "find_many" else args.n
        a, b = best[False][k] / ops * 1e6, best[True][k] / ops * 1e6
        print("%-12s %14.0f %14.0f %14.0f" % (k, a, b, b - a))
    return 0


if __name__ == "__main__":
    sys.exit(main())
