"""Benchmark: the embedded engine vs plain mongomock vs hand-written Python, same answers, one process.

Usage:  .venv/bin/python benchmarks/bench_engine.py [--quick] [--million] [--no-peers] [--n N] [--budget S]

The first table (the issue-19 workloads, benchmarks/bench_peers.py) compares labkit with the embedded MongoDB
look-alikes a Python user could pick instead, when they are installed (``pip install -e .[bench]``: mongita,
montydb in memory, mongomock-ng, tinymongo in memory, and mongomock itself), and with plain Python computing the
same answer; a peer that is not installed, or lacks a feature, is reported as such.

Prints a table (nothing is written). Workloads:
  1. insert 2,000 follows one by one into a unique compound index (engine and hand-written runs interleaved,
     best of 5; the hand-written version also gives each document an ObjectId _id, as pymongo does)
  2. 20 feed queries find({authorId}).sort(createdAt -1).limit(20) over 20,000 posts (index {authorId:1, createdAt:-1})
  3. $group over 10,000 posts (count and average likes per author)
  4. $lookup from 100 users into 20,000 posts with an index on posts.authorId
plus explain() time at 10k and 100k documents, a time-series insert and query explain, the explain of a
$lookup pushed down to SBE (indexed loop join and hash join) and (with --million) memory for 1M small documents with two indexes.
mongomock is slow on some workloads; with --quick it runs a sample of the operations and scales per operation.
"""
from __future__ import annotations

import argparse
import datetime
import gc
import heapq
import os
import platform
import statistics
import sys
import time
import tracemalloc
from collections import defaultdict

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import mongomock  # noqa: E402
from bson import ObjectId  # noqa: E402
from pymongo import DESCENDING  # noqa: E402

from labkit.engine import EmbeddedClient  # noqa: E402

BASE = datetime.datetime(2024, 1, 1)


def timed(fn, repeat: int = 1) -> float:
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def follows_docs(n: int = 2000) -> list[dict]:
    return [{"followerId": "user:%d" % (i % 97), "followeeId": "user:%d" % (i // 97 + 1000)} for i in range(n)]


def posts_docs(n: int, authors: int = 100) -> list[dict]:
    return [{"_id": i, "authorId": "user:%d" % (i % authors), "createdAt": BASE + datetime.timedelta(seconds=37 * i),
             "likes": (i * 7919) % 100, "body": "post body %d" % i} for i in range(n)]


# ------------------------------------------------------------------------------------------ workloads

def w_follows(client_cls, sample: int | None = None):
    """One timed run: a fresh collection with the unique index, then ``insert_one`` per follow. Returns the
    time scaled to 2,000 documents and the collection."""
    docs = follows_docs()
    if sample:
        docs = docs[:sample]
    coll = client_cls().bench.follows
    coll.create_index([("followerId", 1), ("followeeId", 1)], unique=True)

    def run():
        for d in docs:
            coll.insert_one(dict(d))
    t = timed(run)
    assert coll.count_documents({}) == len(docs)
    return t / len(docs) * 2000, coll


def h_follows(with_ids: bool = True):
    """Hand-written Python for the same answer: the 2,000 documents stored, each with the ``_id`` pymongo's
    ``insert_one`` gives it (``bson.ObjectId()``, generated client-side by the driver), and a duplicate
    (followerId, followeeId) pair refused. ``with_ids=False`` is the bare minimum (a dict and a set, no
    ``_id``s), reported alongside for comparison. Returns (seconds, stored documents)."""
    docs = follows_docs()
    out: dict = {}

    def run():
        store = {}
        seen = set()
        for i, d in enumerate(docs):
            doc = dict(d)
            key = (doc["followerId"], doc["followeeId"])
            if key in seen:
                raise ValueError("dup")
            seen.add(key)
            if with_ids:
                doc["_id"] = ObjectId()
                store[doc["_id"]] = doc
            else:
                store[i] = doc
        out["store"] = store
    return timed(run), out["store"]


def follows_round(rounds: int = 5) -> tuple[float, float, float]:
    """Best of ``rounds`` for the engine and both hand-written versions, run interleaved so that a change in
    machine speed during the run affects all three alike."""
    e = h = h0 = float("inf")
    for _ in range(rounds):
        t, coll = w_follows(EmbeddedClient)
        e = min(e, t)
        t, store = h_follows()
        h = min(h, t)
        h0 = min(h0, h_follows(with_ids=False)[0])
    stored = list(coll.find({}, {"_id": 0}).sort([("followerId", 1), ("followeeId", 1)]))
    assert stored == sorted(({k: v for k, v in d.items() if k != "_id"} for d in store.values()),
                            key=lambda d: (d["followerId"], d["followeeId"]))
    assert all(type(d["_id"]) is ObjectId for d in coll.find({}, {"_id": 1}))
    return e, h, h0


def feed_setup(client_cls, n: int = 20000):
    coll = client_cls().bench.posts
    coll.insert_many(posts_docs(n))
    coll.create_index([("authorId", 1), ("createdAt", DESCENDING)])
    return coll


def w_feed(coll, queries: int = 20):
    authors = ["user:%d" % (i * 5) for i in range(queries)]
    out = []

    def run():
        out.clear()
        for a in authors:
            out.append(list(coll.find({"authorId": a}).sort("createdAt", DESCENDING).limit(20)))
    t = timed(run, 3 if queries >= 20 else 1)
    assert all(len(r) == 20 for r in out)
    return t / queries * 20, out


def h_feed(n: int = 20000):
    docs = posts_docs(n)
    by_author = defaultdict(list)  # the "index", built outside the timing like the engine's
    for d in docs:
        by_author[d["authorId"]].append(d)
    authors = ["user:%d" % (i * 5) for i in range(20)]
    out = []

    def run():
        out.clear()
        for a in authors:
            top = heapq.nlargest(20, by_author[a], key=lambda d: d["createdAt"])
            out.append([dict(d) for d in top])
    return timed(run, 3), out


def w_group(coll):
    pipe = [{"$group": {"_id": "$authorId", "n": {"$sum": 1}, "avgLikes": {"$avg": "$likes"}}}]
    res = []

    def run():
        res[:] = list(coll.aggregate(pipe))
    return timed(run, 3 if not isinstance(coll, mongomock.Collection) or type(coll).__module__ != "mongomock.collection" else 1), res


def h_group(docs):
    res = []

    def run():
        acc = {}
        for d in docs:
            a = acc.get(d["authorId"])
            if a is None:
                a = acc[d["authorId"]] = [0, 0]
            a[0] += 1
            a[1] += d["likes"]
        res[:] = [{"_id": k, "n": v[0], "avgLikes": v[1] / v[0]} for k, v in acc.items()]
    return timed(run, 3), res


def lookup_setup(client_cls, n: int = 20000):
    db = client_cls().bench
    db.users.insert_many([{"_id": "user:%d" % i, "name": "User %d" % i} for i in range(100)])
    db.posts.insert_many(posts_docs(n))
    db.posts.create_index("authorId")
    return db


LOOKUP = [{"$lookup": {"from": "posts", "localField": "_id", "foreignField": "authorId", "as": "posts"}},
          {"$project": {"name": 1, "nPosts": {"$size": "$posts"}}}]


def w_lookup(db):
    res = []

    def run():
        res[:] = list(db.users.aggregate(LOOKUP))
    return timed(run, 1), res


def h_lookup(n: int = 20000):
    users = [{"_id": "user:%d" % i, "name": "User %d" % i} for i in range(100)]
    posts = posts_docs(n)
    by_author = defaultdict(list)
    for p in posts:
        by_author[p["authorId"]].append(p)
    res = []

    def run():
        res[:] = [{"_id": u["_id"], "name": u["name"], "nPosts": len([dict(p) for p in by_author[u["_id"]]])}
                  for u in users]
    return timed(run, 3), res


# ------------------------------------------------------------------------------------------ main

def fmt(t: float) -> str:
    return "%.1f ms" % (t * 1000) if t < 10 else "%.1f s" % t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="sample mongomock's slow workloads and scale per op")
    ap.add_argument("--million", action="store_true", help="also measure memory for 1M docs with two indexes")
    ap.add_argument("--tracemalloc", action="store_true", help="with --million: also trace allocations (slow)")
    ap.add_argument("--only-million", action="store_true", help="skip the comparison workloads")
    ap.add_argument("--no-peers", action="store_true", help="skip the table against the embedded peers")
    ap.add_argument("--n", type=int, default=100_000, help="documents in the peer workloads (default 100,000)")
    ap.add_argument("--budget", type=float, default=20.0,
                    help="seconds a peer may spend on one workload before the rest is projected (default 20)")
    ap.add_argument("--peers", default="", help="comma-separated subset of peers (default: every installed one)")
    args = ap.parse_args()
    rows = []
    if not args.only_million and not args.no_peers:
        import bench_peers
        bench_peers.main_table(args.n, args.budget, [p for p in args.peers.split(",") if p] or None)
        print()
    if args.only_million:
        args.million = True
        _million(args)
        return

    # 1. follows
    e, h, h_bare = follows_round()
    m = w_follows(mongomock.MongoClient, sample=400 if args.quick else None)[0]
    rows.append(("insert 2,000 follows (unique compound)", e, m, h))

    # 2. feed
    ce = feed_setup(EmbeddedClient)
    cm = feed_setup(mongomock.MongoClient)
    e, re_ = w_feed(ce)
    m, rm = w_feed(cm, queries=2 if args.quick else 20)
    h, rh = h_feed()
    assert [[d["_id"] for d in r] for r in re_[: len(rm)]] == [[d["_id"] for d in r] for r in rm]
    assert [[d["_id"] for d in r] for r in re_] == [[d["_id"] for d in r] for r in rh]
    rows.append(("20 feed queries over 20,000 posts", e, m, h))

    # 3. group
    ge = EmbeddedClient().bench.posts
    gm = mongomock.MongoClient().bench.posts
    docs = posts_docs(10000)
    ge.insert_many([dict(d) for d in docs])
    gm.insert_many([dict(d) for d in docs])
    e, rge = w_group(ge)
    m, rgm = w_group(gm)
    h, rgh = h_group(docs)
    key = lambda r: sorted((d["_id"], d["n"], round(d["avgLikes"], 9)) for d in r)  # noqa: E731
    assert key(rge) == key(rgm) == key(rgh)
    rows.append(("$group over 10,000 posts", e, m, h))

    # 4. lookup
    le = lookup_setup(EmbeddedClient)
    lm = lookup_setup(mongomock.MongoClient)
    e, rle = w_lookup(le)
    m, rlm = w_lookup(lm)
    h, rlh = h_lookup()
    assert sorted(map(repr, rle)) == sorted(map(repr, rlm))
    assert sorted((d["_id"], d["nPosts"]) for d in rle) == sorted((d["_id"], d["nPosts"]) for d in rlh)
    rows.append(("$lookup 100 users -> 20,000 posts", e, m, h))

    print("labkit embedded engine benchmark  %s  Python %s  %s, %d cores" % (
        datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M UTC"), platform.python_version(), platform.machine(),
        os.cpu_count() or 0))
    print("%-42s %12s %12s %12s %12s %12s" % ("workload", "embedded", "mongomock", "hand-written", "vs mongomock",
                                              "vs hand"))
    for name, e, m, h in rows:
        print("%-42s %12s %12s %12s %11.0fx %11.1fx" % (name, fmt(e), fmt(m), fmt(h), m / e, e / h))
    print("(1: the hand-written version gives each document its _id with bson.ObjectId(), as the driver does;"
          " without _ids, a bare dict + set, it takes %s: the engine is %.0fx that)" % (fmt(h_bare), rows[0][1] / h_bare))
    if args.quick:
        print("(--quick: mongomock timings for 1 and 2 are scaled from a sample)")

    # explain timings
    print()
    print("%-58s %10s" % ("explain('executionStats') time", "seconds"))
    for n in (10000, 100000):
        c = EmbeddedClient().bench.posts
        c.insert_many(posts_docs(n, authors=max(100, n // 200)))
        c.create_index([("authorId", 1), ("createdAt", -1)])
        c.create_index("likes")
        for label, cur in (
            ("feed query, indexed (n=%d)" % n, lambda: c.find({"authorId": "user:7"}).sort("createdAt", -1).limit(20)),
            ("range on likes + sort, 2 candidate plans (n=%d)" % n,
             lambda: c.find({"likes": {"$gte": 90}, "authorId": {"$gte": "user:5"}}).sort("createdAt", -1)),
            ("unindexed filter, COLLSCAN (n=%d)" % n, lambda: c.find({"body": "post body 17"})),
        ):
            t = timed(lambda: cur().explain(), 1)
            print("%-58s %10.3f" % (label, t))
    # an aggregate whose $lookup 8.0 pushes down to SBE (EQ_LOOKUP): with the foreign index, and without it
    # over a foreign collection within the hash-join limits
    hj = EmbeddedClient().bench
    hj.users.insert_many([{"_id": "user:%d" % i, "name": "User %d" % i} for i in range(100)])
    hj.posts.insert_many(posts_docs(5000))
    for label, db_ in (("$lookup pushed down, 100 -> 20,000 posts (indexed)", le),
                       ("$lookup pushed down, 100 -> 5,000 posts (no index)", hj)):
        out: list = []

        def run_explain(db_=db_, out=out):
            out[:] = [db_.command("explain", {"aggregate": "users", "pipeline": LOOKUP[:1], "cursor": {}},
                                  verbosity="executionStats")]
        t = timed(run_explain, 1)
        strategy = out[0]["queryPlanner"]["winningPlan"]["queryPlan"]["strategy"]
        print("%-58s %10.3f  (%s)" % (label, t, strategy))
    # a time-series query: 10 sensors x 1,440 readings, one sensor's day through the buckets
    # ($_internalUnpackBucket over system.buckets.<name>, labkit/engine/catalog/timeseries.py)
    import datetime as _dt
    tsdb = EmbeddedClient().bench
    tsc = tsdb.create_collection("readings", timeseries={"timeField": "ts", "metaField": "sensorId",
                                                         "granularity": "minutes"})
    t0 = _dt.datetime(2026, 10, 1)
    t_ins = timed(lambda: tsc.insert_many([{"sensorId": "s%d" % k, "ts": t0 + _dt.timedelta(minutes=m), "v": 1.0}
                                           for k in range(10) for m in range(1440)]), 1)
    print("%-58s %10.3f" % ("time-series insert_many, 14,400 readings", t_ins))
    day = {"$gte": t0, "$lt": t0 + _dt.timedelta(days=1)}
    t = timed(lambda: tsc.find({"sensorId": "s3", "ts": day}).explain(), 1)
    print("%-58s %10.3f" % ("time-series explain, one sensor's day (2 of 20 buckets)", t))

    if args.million:
        _million(args)


def _million(args) -> None:
    """Memory and load time for 1M small documents with two secondary indexes."""
    print()
    gc.collect()
    use_tm = args.tracemalloc
    if use_tm:
        tracemalloc.start()
    rss0 = _rss_mib()
    c = EmbeddedClient().bench.small
    t0 = time.perf_counter()
    batch = 100000
    for start in range(0, 1000000, batch):
        c.insert_many([{"_id": i, "a": i % 1000, "b": "k%d" % (i % 5000)} for i in range(start, start + batch)])
    c.create_index("a")
    c.create_index("b")
    t = time.perf_counter() - t0
    gc.collect()
    rss1 = _rss_mib()
    line = "1M small documents + 2 indexes: load %.1f s, RSS growth %.0f MiB (%.0f B/doc)" % (
        t, rss1 - rss0, (rss1 - rss0) * 2 ** 20 / 1e6)
    if use_tm:
        cur, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        line += ", traced %.0f MiB (peak %.0f MiB)" % (cur / 2 ** 20, peak / 2 ** 20)
    print(line)
    t = timed(lambda: c.find({"a": 7}).sort("b", 1).limit(10).explain(), 1)
    print("explain of an indexed query at 1M: %.3f s" % t)
    t = timed(lambda: c.find({"c": 1}).explain(), 1)  # no index on c: a COLLSCAN over every document
    print("explain of a COLLSCAN at 1M: %.3f s" % t)
    del c
    gc.collect()

    def plain() -> None:
        store: dict = {}
        ia: dict = defaultdict(list)
        ib: dict = defaultdict(list)
        for start in range(0, 1000000, batch):
            for d in [{"_id": i, "a": i % 1000, "b": "k%d" % (i % 5000)} for i in range(start, start + batch)]:
                store[d["_id"]] = dict(d)
                ia[d["a"]].append(d["_id"])
                ib[d["b"]].append(d["_id"])
    print("plain Python, the same 1M documents into a dict and two dict-of-lists indexes: %.1f s" % timed(plain, 1))


def _rss_mib() -> float:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2 ** 20
    except OSError:  # pragma: no cover - non-Linux
        import resource
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


if __name__ == "__main__":
    main()
