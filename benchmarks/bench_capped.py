"""Benchmark: the per-insert cost of a capped collection as it holds more documents (capped.py ``CappedDocs``: a
running total of the BSON sizes, so an insert costs the same whether the collection holds 2,000 documents or
20,000; summing every size again on each insert made 20,000 inserts quadratic).

Usage:  .venv/bin/python benchmarks/bench_capped.py [--sizes 2000,5000,20000] [--rounds 3]

For each n: ``n`` ``insert_one`` calls into a capped collection whose ``size`` never trims (all n are held) and
into one of 50,000 bytes (trimmed from the first few hundred on), timed with the process's CPU time, best of
``rounds``. Prints microseconds per insert and the ratio to the smallest n (1.0 = linear). Nothing is written.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def per_insert(n: int, size: int, rounds: int) -> float:
    from labkit.engine import EmbeddedClient
    best = float("inf")
    for r in range(rounds):
        db = EmbeddedClient()["bench_capped"]
        db.create_collection("c%d" % r, capped=True, size=size)
        coll = db["c%d" % r]
        docs = [{"i": i, "msg": "x" * 60} for i in range(n)]
        t0 = time.process_time()
        for d in docs:
            coll.insert_one(d)
        best = min(best, (time.process_time() - t0) / n)
        coll.drop()
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="2000,5000,20000")
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    sizes = [int(s) for s in a.sizes.split(",")]
    print("%8s  %22s  %22s" % ("n", "all held: us (ratio)", "50 KB cap: us (ratio)"))
    base = None
    for n in sizes:
        row = (per_insert(n, 10 ** 12, a.rounds), per_insert(n, 50_000, a.rounds))
        base = base or row
        print("%8d  %13.1f (%5.2f)  %13.1f (%5.2f)" % (n, row[0] * 1e6, row[0] / base[0], row[1] * 1e6,
                                                        row[1] / base[1]))


if __name__ == "__main__":
    main()
