"""Exercises of the "Scale out" lessons (40-42): shard keys, query targeting, sharded patterns.

Each checker measures on the cluster the learner passes (labkit's simulated one or a real mongos): it shards a
fresh copy of the scenario's data on the learner's answer, then reads where documents landed and which shards a
query contacted (``labkit.sharding``), and explains the listed mistake it sees.
"""
from __future__ import annotations

import datetime as dt
from typing import Any

from bson import ObjectId
from bson.min_key import MinKey
from pymongo.errors import OperationFailure

from labkit.exercises import Exercise, NotYet, Prediction, register

_EVENT_FIELDS = ("_id", "deviceId", "ts", "temperature")
_T0 = dt.datetime(2026, 3, 1)


def _client_and(args: Any, what: str, example: str) -> tuple[Any, Any]:
    if not (isinstance(args, tuple) and len(args) == 2):
        raise NotYet(f"call it with the client and your {what}: `{example}`.")
    client, answer = args
    if not hasattr(client, "admin"):
        raise NotYet(f"the first argument must be the client (`client = labkit.connect(shards=3)`), not "
                     f"{type(client).__name__}: `{example}`.")
    return client, answer


def _key_fields(key: Any, allowed: tuple[str, ...]) -> list[str]:
    if not isinstance(key, dict) or not key:
        raise NotYet("give the shard key as a dict of fields, e.g. `{\"field\": 1}` (ranged) or "
                     "`{\"field\": \"hashed\"}`.")
    for f, v in key.items():
        if f not in allowed:
            raise NotYet(f"the documents have the fields {', '.join(allowed)}; {f!r} is not one of them.")
        if v != 1 and v != "hashed":
            raise NotYet(f"a shard key field is 1 (ranged) or \"hashed\", not {v!r} (a shard key has no "
                         "descending fields).")
    return list(key)


def _fresh(client: Any, name: str) -> Any:
    from labkit.databases import fresh_db
    return fresh_db(name, client=client)


def _shard(client: Any, coll: Any, key: dict) -> None:
    try:
        client.admin.command("shardCollection", coll.full_name, key=key)
    except OperationFailure as exc:
        raise NotYet(f"the cluster refused this key: {exc.details.get('errmsg', exc) if exc.details else exc} "
                     f"(code {exc.code}).") from None


def _spread_on_first(coll: Any, key: dict, values: list[Any]) -> None:
    """Spread a ranged key's collection at the thirds of its first field's distinct values."""
    from labkit import sharding
    first = next(iter(key))
    if key[first] == "hashed":
        return  # an empty collection with a hashed prefix already has one range per shard
    distinct = sorted(set(values))
    n = len(sharding.shard_names(coll.database.client))
    if len(distinct) < n:
        return
    points = [distinct[len(distinct) * i // n] for i in range(1, n)]
    sharding.spread(coll, [{f: (p if f == first else MinKey()) for f in key} for p in points])


def _increases(old: list[dict], new: list[dict], field: str) -> bool:
    """Every new document's ``field`` is above every old one's (a monotonically increasing key)."""
    try:
        return min(d[field] for d in new) > max(d[field] for d in old)
    except (KeyError, TypeError, ValueError):
        return False


def _verdict(fields: list[str], key: dict, read: dict, distinct: int, limit: int, what: dict,
             landed: dict | None = None, increases: bool = False) -> None:
    """The shard-key problems every Scale out checker judges, in the order a learner meets them (the problem kind
    these exercises share): new documents all on one shard (a monotonic key, or values in one range), too few
    distinct values (ranges that can never split), the hot read broadcast, inserts not spread. Raises NotYet."""
    docs, series, lead = what["docs"], what["series"], what["lead"]
    if landed is not None and key[fields[0]] == 1 and sum(landed.values()) and \
            max(landed.values()) == sum(landed.values()):
        if increases:
            raise NotYet(f"`{fields[0]}` first is a monotonically increasing key (every new value is larger): all "
                         f"{sum(landed.values())} new {docs} landed on one shard, in the range after the last split "
                         "point. Lead with a field whose new values are spread.")
        raise NotYet(f"all {sum(landed.values())} new {docs} landed on one shard: their `{fields[0]}` values fall "
                     "in one range. Lead with a field whose new values are spread over the ranges.")
    if distinct <= limit:
        raise NotYet(f"the key {key} has only {distinct} distinct values (one per {series}): at most {distinct} "
                     f"ranges, and all of one {series}'s {docs} stay in one range that can never be split, however "
                     f"large it grows (a jumbo range). Add {what['then']} after {lead}.")
    if read["shards contacted"] > 1:
        raise NotYet(f"the hot read ({what['read']}) contacted {read['shards contacted']} shards ({read['stage']}): "
                     f"the router cannot target it. Lead with {lead}, the field it filters on by equality (ranged "
                     "or hashed).")
    if landed is not None:
        busiest = max(landed.values()) / max(1, sum(landed.values()))
        if busiest > 0.7:
            raise NotYet(f"{busiest:.0%} of the new {docs} landed on one shard: the inserts are not spread.")


def _device_key(args: Any) -> str:
    from labkit import sharding
    client, key = _client_and(args, "key", "ex.check(client, {\"deviceId\": 1, \"ts\": 1})")
    fields = _key_fields(key, _EVENT_FIELDS)
    db = _fresh(client, "40_check")
    events = db.events
    _shard(client, events, key)
    old = [{"_id": ObjectId.from_datetime(_T0 + dt.timedelta(minutes=m, seconds=d)), "deviceId": f"dev:{d:02d}",
            "ts": _T0 + dt.timedelta(minutes=m), "temperature": 20 + (d * m) % 7} for m in range(60) for d in range(50)]
    events.insert_many(old, ordered=False)
    _spread_on_first(events, key, [e[fields[0]] for e in old])
    new = [{"_id": ObjectId.from_datetime(_T0 + dt.timedelta(minutes=60 + m, seconds=d)), "deviceId": f"dev:{d:02d}",
            "ts": _T0 + dt.timedelta(minutes=60 + m), "temperature": 21}
           for m in range(10) for d in range(50)]
    landed = sharding.inserts_per_shard(events, new)
    read = sharding.targeting(events.find({"deviceId": "dev:07", "ts": {"$gte": _T0 + dt.timedelta(minutes=10),
                                                                       "$lt": _T0 + dt.timedelta(minutes=40)}})
                              .explain())
    distinct = len({tuple(e.get(f) for f in fields) for e in old + new})
    _verdict(fields, key, read, distinct, 50, {"docs": "events", "series": "device", "lead": "deviceId",
                                               "then": "ts", "read": "one device, a time range"},
             landed, _increases(old, new, fields[0]))
    busiest = max(landed.values()) / max(1, sum(landed.values()))
    return (f"the new events spread over the shards (busiest {busiest:.0%}), the hot read contacted one shard "
            f"({read['stage']}), and the key has {distinct:,} distinct values in the sample.")


@register
def ex_40_device_key() -> Exercise:
    return Exercise(
        id="40-device-shard-key", lesson="40_shard_keys",
        task="Choose a shard key for device events read by device and time range: ex.check(client, key).",
        checker=_device_key,
        hints=["The hot read filters on deviceId by equality and on ts by range.",
               "deviceId alone has 50 values: add ts after it, so each device's events can be split by time."],
        solution_text='key = {"deviceId": 1, "ts": 1}\nex.check(client, key)')


@register
def ex_40_predict_hot() -> Exercise:
    return Prediction(
        id="40-predict-hot-shard", lesson="40_shard_keys",
        task="With the shard key {createdAt: 1}, where do the next 1,000 posts land: \"all on one shard\" or "
             "\"spread over the shards\"? ex.predict(...) before running the insert cell.",
        checker=None, choices=("all on one shard", "spread over the shards"),
        explain=lambda m: ("Every new createdAt is later than the last split point, so every insert falls in the "
                           "last range, owned by one shard." if m == "all on one shard" else ""),
        hints=["Where does a value later than every split point belong?"],
        solution_text='predict_hot.predict("all on one shard")')


_INVOICE_FIELDS = ("_id", "tenantId", "number", "issuedAt", "total")


def _tenant_key(args: Any) -> str:
    from labkit import sharding
    client, key = _client_and(args, "key", "ex.check(client, {\"tenantId\": 1, \"number\": 1})")
    fields = _key_fields(key, _INVOICE_FIELDS)
    db = _fresh(client, "41_check")
    inv = db.invoices
    inv.create_index([("tenantId", 1), ("number", 1)], unique=True)
    try:
        client.admin.command("shardCollection", inv.full_name, key=key)
    except OperationFailure as exc:
        msg = (exc.details or {}).get("errmsg", str(exc))
        if "unique index" in msg:
            raise NotYet(f"the cluster refused it: \"{msg}\". Each shard can only check uniqueness among its own "
                         "invoices, so the unique index {tenantId: 1, number: 1} must start with the shard key.") \
                from None
        raise NotYet(f"the cluster refused this key: {msg} (code {exc.code}).") from None
    docs = [{"tenantId": f"t{t:02d}", "number": n, "issuedAt": _T0 + dt.timedelta(hours=n * 20 + t),
             "total": (t * n) % 500} for t in range(20) for n in range(100)]
    inv.insert_many(docs, ordered=False)
    _spread_on_first(inv, key, [d[fields[0]] for d in docs])
    read = sharding.targeting(inv.find({"tenantId": "t07"}).sort("issuedAt", -1).limit(10).explain())
    distinct = len({tuple(d.get(f) for f in fields) for d in docs})
    _verdict(fields, key, read, distinct, 20, {"docs": "invoices", "series": "tenant", "lead": "tenantId",
                                               "then": "the invoice number", "read": "one tenant's newest invoices"})
    return (f"the cluster accepted it next to the unique index, the hot read contacted one shard ({read['stage']}), "
            f"and the key has {distinct:,} distinct values.")


@register
def ex_41_tenant_key() -> Exercise:
    return Exercise(
        id="41-tenant-shard-key", lesson="41_query_targeting",
        task="Choose the shard key of a multi-tenant invoices collection with a unique {tenantId, number} index: "
             "ex.check(client, key).",
        checker=_tenant_key,
        hints=["A unique index must start with the shard key.",
               "The hot read filters on tenantId; tenantId alone has 20 values."],
        solution_text='key = {"tenantId": 1, "number": 1}\nex.check(client, key)')


@register
def ex_41_predict_shards() -> Exercise:
    return Prediction(
        id="41-predict-follower-shards", lesson="41_query_targeting",
        task="follows is sharded on {followerId: 1, followingId: 1} over 3 shards: how many shards does \"who "
             "follows Sam?\" ({followingId: 'user:112'}) contact? ex.predict(1, 2 or 3).",
        checker=None, choices=(1, 2, 3),
        explain=lambda m: ("The filter does not name followerId, the key's first field, so the router cannot "
                           "target it: every shard owning a range is asked." if m == 3 else ""),
        hints=["Which field does the shard key start with, and does the filter name it?"],
        solution_text="predict_shards.predict(3)")


def _repair(args: Any) -> str:
    from labkit import sharding
    from labkit.exercises.observe import call_learner
    client, repair = _client_and(args, "function", "ex.check(client, repair)")
    if not callable(repair):
        raise NotYet("pass your function itself (`ex.check(client, repair)`), not the result of calling it.")
    db = _fresh(client, "42_check")
    pings = db.pings
    client.admin.command("shardCollection", pings.full_name, key={"ts": 1})
    old = [{"truckId": f"truck:{t:02d}", "ts": _T0 + dt.timedelta(minutes=m, seconds=t), "lat": 45 + t / 100,
            "lon": 4 + m / 1000} for m in range(60) for t in range(40)]
    pings.insert_many(old, ordered=False)
    _spread_on_first(pings, {"ts": 1}, [p["ts"] for p in old])
    call_learner(repair, client, pings)
    n = pings.count_documents({})
    if n != len(old):
        raise NotYet(f"{len(old) - n} of the {len(old)} pings are gone: repair the key in place "
                     "(reshardCollection keeps every document), do not drop or re-create the collection.")
    info = sharding.collection_info(pings)
    if info is None:
        raise NotYet("the pings are no longer sharded: change the key with reshardCollection.")
    key = dict(info["key"])
    if key == {"ts": 1}:
        raise NotYet("the shard key is still {ts: 1}: run reshardCollection with a new key.")
    fields = list(key)
    new = [{"truckId": f"truck:{t:02d}", "ts": _T0 + dt.timedelta(minutes=60 + m, seconds=t), "lat": 45.0,
            "lon": 4.0} for m in range(10) for t in range(40)]
    landed = sharding.inserts_per_shard(pings, new)
    read = sharding.targeting(pings.find({"truckId": "truck:07", "ts": {"$gte": _T0 + dt.timedelta(minutes=10)}})
                              .explain())
    distinct = len({tuple(p.get(f) for f in fields) for p in old + new})
    _verdict(fields, key, read, distinct, 40, {"docs": "pings", "series": "truck", "lead": "truckId", "then": "ts",
                                               "read": "one truck's last hour"},
             landed, _increases(old, new, fields[0]))
    return (f"resharded to {key}: all {n} pings kept, new pings spread ({landed}), and the hot read contacted one "
            f"shard ({read['stage']}).")


@register
def ex_42_repair() -> Exercise:
    return Exercise(
        id="42-repair-key", lesson="42_sharded_patterns",
        task="Write repair(client, coll) that changes a {ts: 1}-keyed pings collection's shard key in place: "
             "ex.check(client, repair).",
        checker=_repair,
        hints=["reshardCollection changes a key in place: client.admin.command('reshardCollection', ns, key=...).",
               "The hot read filters on truckId by equality and on ts by range."],
        solution_text='def repair(client, coll):\n    client.admin.command("reshardCollection", coll.full_name, '
                      'key={"truckId": 1, "ts": 1})\n\nex.check(client, repair)')


__all__: list[str] = []
