"""Measuring a sharded cluster from the outside: the same figures on labkit's simulated cluster and on a real one.

Introduced in ``notebooks/40_shard_keys.ipynb``. Every function reads what a ``mongos`` answers to any driver
(``explain``, ``$shardedDataDistribution``, ``config.chunks``, ``config.collections``), so a lesson that uses them
runs unchanged on labkit's simulated cluster (``labkit.connect(shards=N)``) and on a real sharded cluster
(``MONGODB_URI`` at a mongos):

- :func:`distribution`: documents, bytes and chunks per shard of one sharded collection;
- :func:`targeting`: from an explain, the shards contacted and each one's keys and documents examined;
- :func:`inserts_per_shard`: insert documents and count where they landed (the hot shard);
- :func:`shards_in_explain`: the shards an explain through a mongos contacted (what the ledger counts);
- :func:`spread`: split a ranged collection at given keys and deal the ranges out over the shards;
- :func:`balance`: run the balancer until the collection is balanced (labkit's cluster runs rounds on request;
  a real cluster's balancer is started and waited for);
- :func:`set_range_size`: a collection's range (chunk) size, e.g. 1 MB for teaching (``configureCollectionBalancing``);
- :func:`key_profile`: cardinality, frequency and monotonic change of a candidate shard key in some documents.
"""
from __future__ import annotations

import datetime as dt
import time
from collections import Counter
from typing import Any, Iterable

from bson import ObjectId
from bson.max_key import MaxKey
from bson.min_key import MinKey
from pymongo.errors import OperationFailure


def _client(obj: Any) -> Any:
    """The client of a collection or database (or the client itself)."""
    db = getattr(obj, "database", None)
    if db is not None and hasattr(db, "client"):
        return db.client
    return getattr(obj, "client", obj)


def _ns(coll: Any) -> str:
    if not hasattr(coll, "full_name"):
        raise TypeError(f"pass a collection (db.posts), not {type(coll).__name__}")
    return coll.full_name


def collection_info(coll: Any) -> dict | None:
    """``config.collections`` document of a sharded collection; None when it is not sharded."""
    return _client(coll)["config"]["collections"].find_one({"_id": _ns(coll), "dropped": {"$ne": True}})


def distribution(coll: Any) -> list[dict]:
    """Per shard owning data or chunks of ``coll``: ``{shard, documents, bytes, chunks}`` (measured:
    ``$shardedDataDistribution`` and ``config.chunks``), shards in name order."""
    client = _client(coll)
    ns = _ns(coll)
    info = collection_info(coll)
    if info is None:
        raise ValueError(f"{ns} is not sharded: shard it first (client.admin.command('shardCollection', ...))")
    rows = list(client.admin.aggregate([{"$shardedDataDistribution": {}}, {"$match": {"ns": ns}}]))
    owned = {s["shardName"]: s for s in (rows[0]["shards"] if rows else [])}
    chunks = Counter(c["shard"] for c in client["config"]["chunks"].find({"uuid": info["uuid"]}, {"shard": 1}))
    names = sorted(set(owned) | set(chunks) | {s["_id"] for s in client.admin.command("listShards")["shards"]})
    return [{"shard": s, "documents": int(owned.get(s, {}).get("numOwnedDocuments", 0)),
             "bytes": int(owned.get(s, {}).get("ownedSizeBytes", 0)), "chunks": chunks.get(s, 0)} for s in names]


def targeting(explain: dict) -> dict:
    """From a ``find(...).explain()`` (or the explain command) through a mongos: ``{stage, shards contacted,
    per shard: {keys examined, docs examined, returned}, keys examined, docs examined, returned}``."""
    if "queryPlanner" not in explain or "winningPlan" not in explain["queryPlanner"]:
        raise ValueError("pass the explain of a find/count/distinct run through a mongos "
                         "(cursor.explain() or db.command('explain', ...))")
    wp = explain["queryPlanner"]["winningPlan"]
    if "shards" not in wp:
        raise ValueError("this explain has no 'shards' array: it did not come from a mongos")
    es = explain.get("executionStats") or {}
    per = {}
    for s in (es.get("executionStages") or {}).get("shards", []):
        per[s["shardName"]] = {"keys examined": s.get("totalKeysExamined", 0),
                               "docs examined": s.get("totalDocsExamined", 0), "returned": s.get("nReturned", 0)}
    return {"stage": wp["stage"], "shards contacted": len(wp["shards"]),
            "shards": [s["shardName"] for s in wp["shards"]], "per shard": per,
            "keys examined": es.get("totalKeysExamined"), "docs examined": es.get("totalDocsExamined"),
            "returned": es.get("nReturned")}


def aggregate_targeting(explain: dict) -> dict:
    """From an aggregation's explain through a mongos: ``{shards contacted, shards, split, merger part}``."""
    shards = sorted((explain.get("shards") or {}).keys())
    split = explain.get("splitPipeline")
    return {"shards contacted": len(shards), "shards": shards, "split": split is not None,
            "merge type": explain.get("mergeType"),
            "merger part": [next(iter(s)) for s in (split or {}).get("mergerPart", [])]}


def shards_in_explain(explain: Any) -> list[str] | None:
    """The shards an explain through a mongos says the operation contacted (a find/count/distinct's
    ``queryPlanner.winningPlan.shards``, an aggregation's ``shards``), sorted; None for an explain that did not
    come from a mongos."""
    if not isinstance(explain, dict):
        return None
    wp = (explain.get("queryPlanner") or {}).get("winningPlan") if isinstance(explain.get("queryPlanner"), dict) \
        else None
    if isinstance(wp, dict) and isinstance(wp.get("shards"), list):
        return sorted(s.get("shardName", "") for s in wp["shards"] if isinstance(s, dict))
    if isinstance(explain.get("shards"), dict):
        return sorted(explain["shards"])
    return None


def inserts_per_shard(coll: Any, docs: Iterable[dict], ordered: bool = False) -> dict[str, int]:
    """Insert ``docs`` into ``coll`` and return how many landed on each shard (measured: owned documents per
    shard before and after)."""
    before = {r["shard"]: r["documents"] for r in distribution(coll)}
    docs = list(docs)
    if docs:
        coll.insert_many(docs, ordered=ordered)
    after = {r["shard"]: r["documents"] for r in distribution(coll)}
    return {s: after.get(s, 0) - before.get(s, 0) for s in sorted(set(before) | set(after))}


def shard_names(client: Any) -> list[str]:
    return sorted(s["_id"] for s in _client(client).admin.command("listShards")["shards"])


def spread(coll: Any, points: list[dict], shards: list[str] | None = None) -> None:
    """Split ``coll`` at each key document of ``points`` (ascending, full shard keys, e.g. ``{"createdAt": t}`` or
    ``{"authorId": "user:9", "createdAt": MinKey()}``) and give the ranges to ``shards`` in turn (``split`` and
    ``moveRange``, as an administrator pre-splits a collection)."""
    client = _client(coll)
    ns = _ns(coll)
    info = collection_info(coll)
    if info is None:
        raise ValueError(f"{ns} is not sharded: shard it first")
    fields = list(info["key"])
    shards = shards or shard_names(client)
    for p in points:
        if list(p) != fields:
            raise ValueError(f"spread: each point must name the shard key's fields {fields} in order, got {list(p)}")
        client.admin.command("split", ns, middle=p)
    lows = [{f: MinKey() for f in fields}] + list(points)
    highs = list(points) + [{f: MaxKey() for f in fields}]
    for i, (low, high) in enumerate(zip(lows, highs)):
        target = shards[i % len(shards)]
        owner = client["config"]["chunks"].find_one({"uuid": info["uuid"], "min": low}, {"shard": 1})
        if owner is not None and owner["shard"] == target:
            continue
        client.admin.command({"moveRange": ns, "min": low, "max": high, "toShard": target})


def is_simulated(client: Any) -> bool:
    """True for labkit's simulated cluster (its hello carries ``labkit.shards``)."""
    hello = _client(client).admin.command("hello")
    return hello.get("msg") == "isdbgrid" and "shards" in (hello.get("labkit") or {})


def balance(coll: Any, timeout_s: float = 300.0) -> int:
    """Balance ``coll``: on labkit's cluster, balancer rounds until none moves a range (the number of
    migrations); on a real cluster, start the balancer and wait until ``balancerCollectionStatus`` says the
    collection is balanced (returns -1: the count is not known)."""
    client = _client(coll)
    ns = _ns(coll)
    if is_simulated(client):
        moved = 0
        for _ in range(100):
            n = client.admin.command("balancerRound", 1, ns=ns)["migrations"]
            moved += n
            if not n:
                break
        return moved
    client.admin.command("balancerStart", 1)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if client.admin.command("balancerCollectionStatus", ns).get("balancerCompliant"):
            return -1
        time.sleep(2)
    raise TimeoutError(f"{ns} was not balanced within {timeout_s:.0f} s; check sh.status()")


def set_range_size(coll: Any, megabytes: int) -> None:
    """Set a sharded collection's range (chunk) size, 1 to 1024 MB: ``configureCollectionBalancing`` with
    ``chunkSize`` (manual "configureCollectionBalancing": supported on every Atlas cluster, unlike writing
    ``config.settings``, which sets the cluster's default)."""
    if isinstance(megabytes, bool) or not isinstance(megabytes, int) or not 1 <= megabytes <= 1024:
        raise ValueError(f"set_range_size(megabytes={megabytes!r}): an integer from 1 to 1024")
    _client(coll).admin.command("configureCollectionBalancing", _ns(coll), chunkSize=megabytes)


def _monotonic(values: list[Any]) -> float:
    """Share of consecutive pairs (in insertion order) where the value increases."""
    pairs = [(a, b) for a, b in zip(values, values[1:]) if a is not None and b is not None]
    if not pairs:
        return 0.0
    up = 0
    for a, b in pairs:
        try:
            up += b > a
        except TypeError:
            pass
    return up / len(pairs)


def key_profile(docs: Iterable[dict], field: str) -> dict:
    """Cardinality (distinct values), frequency (share of the most common value) and monotonic change (share of
    consecutive documents whose value increases) of ``field`` over ``docs`` in insertion order."""
    values = []
    for d in docs:
        cur: Any = d
        for part in field.split("."):
            cur = cur.get(part) if isinstance(cur, dict) else None
        values.append(cur if not isinstance(cur, (list, dict)) else repr(cur))
    if not values:
        return {"field": field, "documents": 0, "distinct values": 0, "top value share": 0.0, "increasing share": 0.0}
    counts = Counter(values)
    top, n = counts.most_common(1)[0]
    return {"field": field, "documents": len(values), "distinct values": len(counts),
            "top value": top, "top value share": round(n / len(values), 3),
            "increasing share": round(_monotonic(values), 3),
            "monotonic kind": isinstance(values[0], (dt.datetime, ObjectId))}


__all__ = ["distribution", "targeting", "aggregate_targeting", "inserts_per_shard", "spread", "balance",
           "set_range_size", "key_profile", "collection_info", "is_simulated", "shard_names", "shards_in_explain"]
