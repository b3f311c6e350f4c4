"""Lesson 41 (Scale out: query targeting): its exercises and their checkers.

Notebook: ``notebooks/41_query_targeting.ipynb``. The checker shards a fresh copy of a multi-tenant invoices
collection (with its unique index) on the learner's key, on the learner's cluster, and measures the hot read.
"""
from __future__ import annotations

import datetime as dt
from typing import Any

from labkit.exercises import steps
from labkit.exercises.kinds import DesignQuestion, Prediction
from labkit.exercises.registry import Lesson

LESSON = Lesson(__file__)

_INVOICE_FIELDS = ("_id", "tenantId", "number", "issuedAt", "total")
_T0 = dt.datetime(2026, 3, 1)
_TENANTS = 20


@LESSON.exercise(DesignQuestion, "41-tenant-shard-key",
                 takes=steps.client_and("key", 'ex.check(client, {"tenantId": 1, "number": 1})'))
def _check_tenant_key(client: Any, key: Any) -> str:
    with steps.key_sandbox("41-tenant-shard-key", client, key, _INVOICE_FIELDS) as box:
        invoices = box.db.invoices
        invoices.create_index([("tenantId", 1), ("number", 1)], unique=True)
        refused = ('the cluster refused it: "{errmsg}". Each shard can only check uniqueness among its own '
                   "invoices, so the unique index {{tenantId: 1, number: 1}} must start with the shard key.")
        if next(iter(key)) != "tenantId":  # e.g. the hashed-_id habit: also the hot read would be broadcast
            refused += (f" And even without that index, a key led by {next(iter(key))!r} would make the hot read "
                        "(one tenant's newest invoices, filtered on tenantId) a broadcast to every shard.")
        docs = [{"tenantId": f"t{t:02d}", "number": n, "issuedAt": _T0 + dt.timedelta(hours=n * 20 + t),
                 "total": (t * n) % 500} for t in range(_TENANTS) for n in range(100)]
        m = steps.measure_key(invoices, key, docs,
                              lambda: invoices.find({"tenantId": "t07"}).sort("issuedAt", -1).limit(10),
                              refusals={"unique index": refused})
    steps.shard_key_mistakes(m, docs="invoices", series="tenant", series_count=_TENANTS, lead="tenantId",
                             then="the invoice number", read="one tenant's newest invoices")
    return (f"the cluster accepted it next to the unique index, the hot read contacted one shard "
            f"({m.read['stage']}), and the key has {m.distinct:,} distinct values.")


def _explain_shards(measured: Any) -> str:
    if measured == 3:
        return ("The filter does not name followerId, the key's first field, so the router cannot target it: every "
                "shard owning a range is asked.")
    return ""


LESSON.add(Prediction, "41-predict-follower-shards", choices=(1, 2, 3), explain=_explain_shards)
