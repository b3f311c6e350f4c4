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


def _device_key(args: Any) -> str:
    from labkit import sharding
    client, key = _client_and(args, "key", "ex.check(client, {\"deviceId\": 1, \"ts\": 1})")
    fields = _key_fields(key, _EVENT_FIELDS)
    db = _fresh(client, "40_check")
    events = db.events
    _shard(client, events, key)
    old = [{"_id": ObjectId.from_datetime(_T0 + dt.timedelta(minutes=m, seconds=d)), "deviceId": f"dev:{d:02d}", "ts": _T0 + dt.timedelta(minutes=m), "temperature": 20 + (d * m) % 7}
           for m in range(60) for d in range(50)]
    events.insert_many(old, ordered=False)
    _spread_on_first(events, key, [e[fields[0]] for e in old])
    new = [{"_id": ObjectId.from_datetime(_T0 + dt.timedelta(minutes=60 + m, seconds=d)), "deviceId": f"dev:{d:02d}",
            "ts": _T0 + dt.timedelta(minutes=60 + m), "temperature": 21}
           for m in range(10) for d in range(50)]
    landed = sharding.inserts_per_shard(events, new)
    busiest = max(landed.values()) / max(1, sum(landed.values()))
    read = sharding.targeting(events.find({"deviceId": "dev:07", "ts": {"$gte": _T0 + dt.timedelta(minutes=10),
                                                                       "$lt": _T0 + dt.timedelta(minutes=40)}})
                              .explain())
    distinct = len({tuple(e.get(f) for f in fields) for e in old + new})
    if key[fields[0]] == 1 and sum(landed.values()) and max(landed.values()) == sum(landed.values()):
        raise NotYet(f"`{fields[0]}` first is a monotonically increasing key (every new event's value is larger): "
                     f"all {sum(landed.values())} new events landed on one shard, in the range after the last "
                     "split point. Lead with a field whose new values are spread.")
    if distinct <= 50:
        raise NotYet(f"this key has only {distinct} distinct values (one per device): at most {distinct} ranges, "
                     "and all of one device's events stay in one range that can never be split, however large it "
                     "grows (a jumbo range). Add a second field that keeps changing.")
    if read["shards contacted"] > 1:
        raise NotYet(f"the hot read (one device, a time range) contacted {read['shards contacted']} shards "
                     f"({read['stage']}): the key does not let the router target it. Lead with the field the read "
                     "filters on by equality.")
    if busiest > 0.7:
        raise NotYet(f"{busiest:.0%} of the new events landed on one shard: the inserts are not spread.")
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


__all__: list[str] = []
