"""Lesson 42 (Scale out: patterns meet sharding): its exercises and their checkers.

Notebook: ``notebooks/42_sharded_patterns.ipynb``. The checker runs the learner's repair on a fleet of its own,
sharded on a monotonic key in a sandbox database of the learner's cluster, then measures new inserts and the hot
read under the key the repair left.
"""
from __future__ import annotations

import datetime as dt
from typing import Any, Callable

from labkit.exercises import steps
from labkit.exercises.kinds import BehaviourCheck, Lab
from labkit.exercises.outcomes import NotYet
from labkit.exercises.registry import Lesson

LESSON = Lesson(__file__)

_T0 = dt.datetime(2026, 3, 1)
_TRUCKS = 40


def _pings(minutes: range, *, moving: bool = True) -> list[dict]:
    return [{"truckId": f"truck:{t:02d}", "ts": _T0 + dt.timedelta(minutes=m, seconds=t),
             "lat": 45 + t / 100 if moving else 45.0, "lon": 4 + m / 1000 if moving else 4.0}
            for m in minutes for t in range(_TRUCKS)]


@LESSON.exercise(BehaviourCheck, "42-repair-key", takes=steps.client_and(
    "function", "ex.check(client, repair)", steps.is_function,
    "pass your function itself (`ex.check(client, repair)`), not the result of calling it."))
def _check_repair(lab: Lab, client: Any, repair: Callable) -> str:
    from labkit import sharding

    with lab.sandbox() as box:
        pings = box.db.pings
        steps.shard(pings, {"ts": 1})
        old = _pings(range(60))
        pings.insert_many(old, ordered=False)
        steps.spread_on_first(pings, {"ts": 1}, [p["ts"] for p in old])
        lab.call(repair, box.client, pings)
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
        m = steps.key_on_cluster(pings, key, old, lambda: pings.find(
            {"truckId": "truck:07", "ts": {"$gte": _T0 + dt.timedelta(minutes=10)}}),
            new=_pings(range(60, 70), moving=False))
    steps.shard_key_mistakes(m, docs="pings", series="truck", series_count=_TRUCKS, lead="truckId", then="ts",
                             read="one truck's last hour")
    return (f"resharded to {key}: all {n} pings kept, new pings spread ({m.landed}), and the hot read contacted "
            f"one shard ({m.read['stage']}).")
