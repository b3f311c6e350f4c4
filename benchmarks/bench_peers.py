"""The issue-19 workloads: labkit's embedded engine against the embedded MongoDB look-alikes and plain Python.

Usage:  .venv/bin/python benchmarks/bench_peers.py [--n 100000] [--budget 20] [--peers mongita,montydb]
        (also the first table of benchmarks/bench_engine.py)

Peers (optional benchmark dependencies, ``pip install -e .[bench]``; one that does not import is skipped and
named as such): mongomock 4.3, mongomock-ng (imported as ``mongomock_ng``), montydb with its in-memory storage,
mongita's in-memory client, tinymongo with its in-memory backend. Every engine runs the same pymongo calls in
one process, one engine after the other; plain Python computes the same answers with dicts, lists and bisect.
Answers are checked against plain Python: labkit must agree (an assertion), a peer that disagrees is marked
``!=``. A peer that raises (an unsupported operator or option) is reported ``n/a``. A peer still running after
``--budget`` seconds on a workload of many operations stops there and the time is projected from the
operations done (marked ``~``). Memory per document is measured in a fresh subprocess per engine (RSS growth,
after ``gc.collect()``), so the engines do not share freed memory.

Workloads (N = --n documents, small posts ``{_id, authorId, createdAt, likes, body}`` with string ``_id``s (mongita
accepts no other), 1,000 authors; labkit always runs every operation, the budget applies to the peers):
  insert_many N, one secondary index     batches of 10,000 into a collection with an index on authorId
  10k insert_one, unique index           one by one into a fresh collection, unique index on ``email``
  1,000 find_one by an indexed field     find_one({authorId}) on the loaded collection
  update_many $inc over N                update_many({}, {$inc: {likes: 1}})
  1,000 count_documents, indexed ~1%     count_documents({createdAt: {$gte, $lt}}), 1% of N each, index on createdAt
  $lookup 1,000 users -> N posts         let + $match $expr $eq + $sort createdAt -1 + $limit 3, index on authorId
  memory per doc, 3 N docs + 2 indexes   RSS growth / document (subprocess)
"""
from __future__ import annotations

import argparse
import bisect
import datetime
import gc
import heapq
import json
import os
import platform
import subprocess
import sys
import time
from collections import defaultdict
from typing import Any, Callable

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

BASE = datetime.datetime(2024, 1, 1)
USERS = 1000


# ------------------------------------------------------------------------------------------ engines

def _labkit():
    from labkit.engine import EmbeddedClient
    return EmbeddedClient().bench


def _mongomock():
    import mongomock
    return mongomock.MongoClient().bench


def _mongomock_ng():
    import mongomock_ng
    return mongomock_ng.MongoClient().bench


_MONTY: list = []


def _montydb():
    from montydb import MontyClient  # one client per process: montydb configures its BSON mode once
    if not _MONTY:
        _MONTY.append(MontyClient(":memory:"))
    _MONTY.append(None)
    return _MONTY[0]["bench%d" % len(_MONTY)]


def _mongita():
    from mongita import MongitaClientMemory
    return MongitaClientMemory().bench


_TINY = [0]


def _tinymongo():
    import tinymongo
    _TINY[0] += 1  # the memory backend shares a namespace per folder name: a fresh one per database
    return tinymongo.TinyMongoClient("bench%d" % _TINY[0], backend="memory").bench


ENGINES: dict[str, Callable[[], Any]] = {"labkit": _labkit, "mongomock": _mongomock, "mongomock-ng": _mongomock_ng,
                                         "montydb": _montydb, "mongita": _mongita, "tinymongo": _tinymongo}
PEERS = [e for e in ENGINES if e != "labkit"]


def available(names: list[str] | None = None) -> tuple[list[str], dict[str, str]]:
    """The peers that import and open a database, and why the others were skipped."""
    ok, skipped = [], {}
    for name in names or PEERS:
        try:
            ENGINES[name]()
            ok.append(name)
        except Exception as e:  # noqa: BLE001 - any failure to import or open means "not available"
            skipped[name] = "%s: %s" % (type(e).__name__, str(e).splitlines()[0][:80] if str(e) else "")
    return ok, skipped


# ------------------------------------------------------------------------------------------ data

def posts(n: int) -> list[dict]:
    return [{"_id": "p%07d" % i, "authorId": "user:%d" % (i % USERS), "createdAt": BASE + datetime.timedelta(seconds=37 * i),
             "likes": (i * 7919) % 100, "body": "post body %d" % i} for i in range(n)]


def users() -> list[dict]:
    return [{"_id": "user:%d" % i, "name": "User %d" % i} for i in range(USERS)]


def count_ranges(n: int, q: int = 1000) -> list[tuple[datetime.datetime, datetime.datetime]]:
    width = max(1, n // 100)
    step = max(1, (n - width) // q)
    return [(BASE + datetime.timedelta(seconds=37 * s), BASE + datetime.timedelta(seconds=37 * (s + width)))
            for s in range(0, step * q, step)][:q]


LOOKUP_PIPE = [{"$lookup": {"from": "posts", "let": {"uid": "$_id"},
                            "pipeline": [{"$match": {"$expr": {"$eq": ["$authorId", "$$uid"]}}},
                                         {"$sort": {"createdAt": -1}}, {"$limit": 3}], "as": "recent"}},
               {"$project": {"recent._id": 1}}]


# ------------------------------------------------------------------------------------------ timing helpers

class Timed:
    """A workload's time (seconds), ``projected`` when a budget cut it short, ``error`` when unsupported."""

    def __init__(self, seconds: float | None = None, projected: bool = False, error: str | None = None,
                 wrong: bool = False) -> None:
        self.seconds, self.projected, self.error, self.wrong = seconds, projected, error, wrong

    def __str__(self) -> str:
        if self.error:
            return "n/a"
        t = self.seconds
        s = ("%.0f us" % (t * 1e6)) if t < 1e-3 else ("%.1f ms" % (t * 1e3)) if t < 1 else ("%.2f s" % t)
        return ("~" if self.projected else "") + s + (" !=" if self.wrong else "")


def per_op(ops: list, fn: Callable[[Any], Any], budget: float) -> tuple[float, bool, list]:
    """Run ``fn`` on each op until all are done or ``budget`` seconds have passed: (time scaled to all ops,
    projected?, results)."""
    gc.collect()
    out = []
    t0 = time.perf_counter()
    for i, op in enumerate(ops):
        out.append(fn(op))
        if time.perf_counter() - t0 > budget and i + 1 < len(ops):
            t = time.perf_counter() - t0
            return t / (i + 1) * len(ops), True, out
    return time.perf_counter() - t0, False, out


def once(fn: Callable[[], Any]) -> tuple[float, Any]:
    gc.collect()
    t0 = time.perf_counter()
    r = fn()
    return time.perf_counter() - t0, r


# ------------------------------------------------------------------------------------------ one engine

def run_engine(name: str, n: int, budget: float, expect: dict) -> dict[str, Timed]:
    """Every workload on one engine; ``expect``: plain Python's answers."""
    res: dict[str, Timed] = {}
    print("  running %s ..." % name, file=sys.stderr, flush=True)
    if name == "labkit":
        budget = float("inf")  # the engine under test always runs every operation
    db = ENGINES[name]()
    coll = db.posts
    docs = posts(n)

    # 1. insert_many in batches of 10,000 with an index on authorId
    try:
        coll.create_index("authorId")
        batches = [docs[i:i + 10000] for i in range(0, n, 10000)]
        # the other workloads need the whole collection: a longer budget here
        t, proj, _ = per_op(batches, lambda b: coll.insert_many([dict(d) for d in b]), budget * 4)
        res["insert_many"] = Timed(t, proj)
        loaded = not proj
    except Exception as e:  # noqa: BLE001
        res["insert_many"] = Timed(error=repr(e)[:100])
        loaded = False
    if loaded and coll.count_documents({}) != n:
        res["insert_many"].wrong = True

    # 2. 10k insert_one into a unique index
    try:
        uc = db.accounts
        uc.create_index("email", unique=True)
        accts = [{"email": "u%d@example.org" % i, "n": i} for i in range(10000)]
        t, proj, _ = per_op(accts, lambda d: uc.insert_one(dict(d)), budget)
        res["insert_one"] = Timed(t, proj)
        try:
            uc.insert_one({"email": "u7@example.org"})
            res["insert_one"].wrong = True  # the unique index did not refuse a duplicate
        except Exception:  # noqa: BLE001
            pass
    except Exception as e:  # noqa: BLE001
        res["insert_one"] = Timed(error=repr(e)[:100])

    if not loaded:
        for k in ("find_one", "update_many", "count", "lookup"):
            res[k] = Timed(error="collection not loaded within the budget")
        return res

    # 3. 1,000 find_one by an indexed field
    try:
        authors = ["user:%d" % ((i * 7) % USERS) for i in range(1000)]
        t, proj, out = per_op(authors, lambda a: coll.find_one({"authorId": a}), budget)
        res["find_one"] = Timed(t, proj, wrong=[d["_id"] for d in out] != expect["find_one"][:len(out)])
    except Exception as e:  # noqa: BLE001
        res["find_one"] = Timed(error=repr(e)[:100])

    # 4. update_many $inc over every document
    try:
        t, r = once(lambda: coll.update_many({}, {"$inc": {"likes": 1}}))
        res["update_many"] = Timed(t, wrong=r.modified_count != n)
    except Exception as e:  # noqa: BLE001
        res["update_many"] = Timed(error=repr(e)[:100])

    # 5. 1,000 count_documents over an indexed ~1% range
    try:
        coll.create_index("createdAt")
        rs = count_ranges(n)
        t, proj, out = per_op(rs, lambda r: coll.count_documents({"createdAt": {"$gte": r[0], "$lt": r[1]}}), budget)
        res["count"] = Timed(t, proj, wrong=out != expect["count"][:len(out)])
    except Exception as e:  # noqa: BLE001
        res["count"] = Timed(error=repr(e)[:100])

    # 6. $lookup 1,000 users -> n posts, sub-pipeline $sort + $limit 3 (10 aggregates over 100 users each, so
    # that a slow peer can stop within the budget)
    try:
        us = users()
        chunks = [us[i:i + 100] for i in range(0, USERS, 100)]
        colls = [_with_users(db, c) for c in chunks]
        t, proj, outs = per_op(colls, lambda u: list(u.aggregate(LOOKUP_PIPE)), budget)
        out = [d for o in outs for d in o]
        got = {d["_id"]: [p["_id"] for p in d["recent"]] for d in out}
        res["lookup"] = Timed(t, proj, wrong=any(got[u] != expect["lookup"][u] for u in got))
    except Exception as e:  # noqa: BLE001
        res["lookup"] = Timed(error=repr(e)[:100])
    return res


def _with_users(db: Any, chunk: list[dict]) -> Any:
    """A users collection holding ``chunk`` in ``db`` (one per chunk: ``users0``, ``users1`` ...)."""
    coll = db["users_%s" % chunk[0]["_id"].replace(":", "_")]
    coll.insert_many([dict(u) for u in chunk])
    return coll


# ------------------------------------------------------------------------------------------ plain Python

def run_plain(n: int) -> tuple[dict[str, Timed], dict]:
    """The same answers with dicts, lists and bisect (indexes built inside the timing where the engines build
    them too)."""
    res: dict[str, Timed] = {}
    expect: dict = {}
    docs = posts(n)
    store: dict = {}
    by_author: dict = defaultdict(list)

    def load():
        for d in docs:
            d = dict(d)
            store[d["_id"]] = d
            by_author[d["authorId"]].append(d["_id"])
    res["insert_many"] = Timed(once(load)[0])

    def ins():
        seen, out = set(), {}
        for i in range(10000):
            d = {"email": "u%d@example.org" % i, "n": i}
            if d["email"] in seen:
                raise ValueError("duplicate")
            seen.add(d["email"])
            out[i] = d
    res["insert_one"] = Timed(once(ins)[0])

    authors = ["user:%d" % ((i * 7) % USERS) for i in range(1000)]
    t, out = once(lambda: [dict(store[by_author[a][0]]) for a in authors])
    res["find_one"] = Timed(t)
    expect["find_one"] = [d["_id"] for d in out]

    def inc():
        for d in store.values():
            d["likes"] += 1
    res["update_many"] = Timed(once(inc)[0])

    created = sorted(d["createdAt"] for d in docs)  # the "index", built outside the timing like the engines'
    rs = count_ranges(n)
    t, out = once(lambda: [bisect.bisect_left(created, b) - bisect.bisect_left(created, a) for a, b in rs])
    res["count"] = Timed(t)
    expect["count"] = out

    us = users()

    def join():
        return {u["_id"]: [p["_id"] for p in heapq.nlargest(3, (store[i] for i in by_author[u["_id"]]),
                                                             key=lambda p: p["createdAt"])] for u in us}
    t, out = once(join)
    res["lookup"] = Timed(t)
    expect["lookup"] = out
    return res, expect


# ------------------------------------------------------------------------------------------ memory (subprocess)

def memory_child(name: str, n: int) -> float:
    """Bytes of RSS growth per document for ``n`` small documents with two secondary indexes.

    The engine is imported and its database opened BEFORE the baseline is read: the row is the growth per
    document, not the one-off cost of importing a library (labkit with pymongo and mongomock: ~37 MiB, which
    would add ~125 B to every one of 300,000 documents); that cost is printed to stderr as ``startup``. The
    input documents are made before the baseline and kept alive to the end (shared values are not counted)."""
    r_start = _rss()
    db = None if name == "plain" else ENGINES[name]()
    startup = _rss() - r_start
    docs = [{"_id": "d%07d" % i, "a": i % 1000, "b": "k%d" % (i % 5000)} for i in range(n)]
    gc.collect()
    r0 = _rss()
    if name == "plain":
        store: dict = {}
        ia: dict = defaultdict(list)
        ib: dict = defaultdict(list)
        for d in docs:
            d = dict(d)
            store[d["_id"]] = d
            ia[d["a"]].append(d["_id"])
            ib[d["b"]].append(d["_id"])
        keep: Any = (store, ia, ib)
    else:
        c = db.small
        c.create_index("a")
        c.create_index("b")
        for i in range(0, n, 10000):
            c.insert_many([dict(d) for d in docs[i:i + 10000]])
        keep = db
    gc.collect()
    grown = _rss() - r0
    # the input documents stay alive until now: freeing them inside the window gave back memory counted in
    # the baseline (an engine keeping encoded copies, as montydb does, then showed a negative growth)
    del docs
    assert keep is not None
    print("%s startup (import, client): %.1f MiB" % (name, startup / 2 ** 20), file=sys.stderr)
    return grown / n


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def memory(name: str, n: int, timeout: float) -> Timed:
    """``memory_child`` in a fresh interpreter (B/doc in ``seconds``), or n/a after ``timeout`` seconds."""
    try:
        out = subprocess.run([sys.executable, os.path.abspath(__file__), "--memory-child", name, "--n", str(n)],
                             capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return Timed(error="over %d s" % timeout)
    if out.returncode != 0:
        return Timed(error=out.stderr.strip().splitlines()[-1][:100] if out.stderr.strip() else "failed")
    return Timed(json.loads(out.stdout.strip().splitlines()[-1])["bytes_per_doc"])


# ------------------------------------------------------------------------------------------ table

LABELS = [("insert_many", "insert_many %s docs, one secondary index"),
          ("insert_one", "10k insert_one, unique index"),
          ("find_one", "1,000 find_one by an indexed field"),
          ("update_many", "update_many $inc over %s"),
          ("count", "1,000 count_documents, indexed ~1% range"),
          ("lookup", "$lookup 1,000 users -> %s posts, $sort+$limit 3"),
          ("memory", "memory, %s docs + 2 indexes (B/doc)")]


def main_table(n: int = 100_000, budget: float = 20.0, peers: list[str] | None = None,
               memory_n: int | None = None) -> dict:
    """Run every workload on labkit, each available peer and plain Python; print the table; return the rows."""
    peers_ok, skipped = available(peers)
    plain, expect = run_plain(n)
    results = {"plain": plain, "labkit": run_engine("labkit", n, budget, expect)}
    for p in ("find_one", "count", "lookup"):
        assert not results["labkit"][p].wrong, "labkit's %s answer differs from plain Python's" % p
    for name in peers_ok:
        results[name] = run_engine(name, n, budget, expect)
    mem_n = memory_n or 3 * n
    for name in ["plain", "labkit"] + peers_ok:
        results[name]["memory"] = memory(name, mem_n, timeout=max(60.0, budget * 6))

    print("embedded engines, %s documents  %s  Python %s  %s, %d cores" % (
        "{:,}".format(n), datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        platform.python_version(), platform.machine(), os.cpu_count() or 0))
    if skipped:
        for name, why in skipped.items():
            print("  skipped %s (not available: %s)" % (name, why))
    cols = ["labkit"] + peers_ok + ["plain"]
    print("%-50s" % "workload" + "".join("%13s" % c for c in cols) + "%16s%12s%12s" % ("best peer", "vs peer",
                                                                                    "vs plain"))
    rows = {}
    for key, label in LABELS:
        size = mem_n if key == "memory" else n
        label = label % "{:,}".format(size) if "%s" in label else label
        line = "%-50s" % label
        for c in cols:
            line += "%13s" % (("%.0f" % results[c][key].seconds if results[c][key].seconds is not None and
                                not results[c][key].error else "n/a") if key == "memory" else results[c][key])
        best = None
        for c in peers_ok:
            r = results[c][key]
            if r.error or r.wrong:
                continue
            if best is None or r.seconds < results[best][key].seconds:
                best = c
        lab = results["labkit"][key]
        pl = results["plain"][key]
        line += "%16s" % (best or "-")
        line += "%11.2fx" % (lab.seconds / results[best][key].seconds) if best else "%12s" % "-"
        line += "%11.1fx" % (lab.seconds / pl.seconds) if pl.seconds else "%12s" % "-"
        print(line)
        rows[key] = {c: (results[c][key].seconds, results[c][key].projected, results[c][key].error,
                         results[c][key].wrong) for c in cols}
    print("(~ projected from the operations done within --budget %g s; n/a: the peer lacks the feature or did not"
          " load the data in time; != its answer differs from plain Python's; ratios: labkit / best peer and"
          " labkit / plain Python, below 1 is faster)" % budget)
    errors = {c: {k: r.error for k, r in results[c].items() if r.error} for c in peers_ok}
    for c, errs in errors.items():
        for k, e in errs.items():
            print("  %s %s: %s" % (c, k, e))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--budget", type=float, default=20.0)
    ap.add_argument("--peers", default="")
    ap.add_argument("--memory-child", default=None)
    args = ap.parse_args()
    if args.memory_child:
        print(json.dumps({"bytes_per_doc": memory_child(args.memory_child, args.n)}))
        return
    main_table(args.n, args.budget, [p for p in args.peers.split(",") if p] or None)


if __name__ == "__main__":
    main()
