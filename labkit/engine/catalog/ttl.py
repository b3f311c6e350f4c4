"""One pass of the TTL monitor, on demand (the server runs one every ``ttlMonitorSleepSecs`` = 60 s).

``ttl_pass(db_or_client, now=None)`` deletes what the server's monitor (src/mongo/db/ttl/ttl.cpp) would:

* every single-field index with ``expireAfterSeconds`` (compound indexes are never TTL indexes): documents
  whose indexed value is a date older than ``now - expireAfterSeconds``; an array of values expires on its
  earliest date; documents whose value is not a date (or an array without dates) never expire;
* a partial TTL index only deletes documents matching its ``partialFilterExpression``;
* the index's current ``expireAfterSeconds`` (as changed by ``collMod``) is used;
* a time-series collection with ``expireAfterSeconds`` deletes whole buckets, and only once a bucket's
  *oldest* possible measurement is safely expired: its ``_id`` (the bucket's rounded ``control.min.<timeField>``,
  in whole seconds) at or before ``now - expireAfterSeconds - bucketMaxSpanSeconds`` (ttl.cpp
  ``safeExpirationDate``: "A bucket may have newer data, so we cannot safely delete the entire bucket yet until
  the maximum bucket range has passed, even if the minimum value can be expired"); a bucket holding data from
  before 1970 or after 2038 (the server's extended range) also needs ``control.max.<timeField>`` at or before
  ``now - expireAfterSeconds`` (``_deleteExpiredWithCollscanForTimeseriesExtendedRange``);
* ``serverStatus().metrics.ttl``: ``passes`` (+1 per pass), ``subPasses`` (+1), ``deletedDocuments``
  (documents, or buckets for time series, removed).

The same pass is the command ``{labkitTtlPass: 1, now: <date>}`` (also over ``labkit serve``, which
``ttl_pass`` uses when it talks to a served engine). On a real server the monitor cannot be triggered:
``ttl_pass`` then waits (polling ``metrics.ttl.passes``,
up to ``timeout`` seconds) for the server's next pass and reports what the server counted; ``now`` cannot be
chosen there.
"""
from __future__ import annotations

import datetime
import time
from typing import Any

_METRICS_ATTR = "_lab_ttl_metrics"


def _metrics(server_store) -> dict:
    m = server_store.__dict__.get(_METRICS_ATTR)
    if m is None:
        m = server_store.__dict__[_METRICS_ATTR] = {"collSubpassIncreasedBudget": 0, "deletedDocuments": 0,
                                                     "invalidTTLIndexSkips": 0, "passes": 0, "subPasses": 0}
    return m


def metrics(db) -> dict:
    """``serverStatus().metrics.ttl`` of the embedded server holding ``db``."""
    return dict(_metrics(db.client._store))


def server_metrics(client) -> dict:
    """``serverStatus().metrics.ttl`` of an EmbeddedClient (the served engine's serverStatus)."""
    return dict(_metrics(client._store))


def cmd_ttl_pass(client, db_name: str, cmd: dict) -> dict:
    """The ``labkitTtlPass`` command of the embedded engine (also served by ``labkit serve``): one pass at
    ``now`` (default: the current time), over database ``db_name`` or, from ``admin``, over every database."""
    from mongomock import OperationFailure
    now = cmd.get("now")
    if now is None:
        now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    if not isinstance(now, datetime.datetime):
        raise OperationFailure("BSON field 'labkitTtlPass.now' is the wrong type, expected type 'date'", 14)
    names = client._store.list_created_database_names() if db_name == "admin" else [db_name]
    out = _embedded_pass(client, [client.get_database(n) for n in names], _naive(now))
    out.pop("engine", None)
    out["ok"] = 1.0
    return out


def _earliest_date(v: Any) -> datetime.datetime | None:
    if isinstance(v, datetime.datetime):
        return v
    if isinstance(v, list):
        dates = [x for x in v if isinstance(x, datetime.datetime)]
        return min(dates, key=_naive) if dates else None
    return None


def _naive(t: datetime.datetime) -> datetime.datetime:
    if t.tzinfo is not None:
        return t.astimezone(datetime.timezone.utc).replace(tzinfo=None)
    return t


def _path_value(doc: dict, path: str) -> Any:
    from ..bson.values import sort_values
    vals = sort_values(doc, path.split("."))
    flat = []
    for v in vals:
        if isinstance(v, list):
            flat.extend(v)
        else:
            flat.append(v)
    if len(flat) == 1:
        return flat[0]
    return flat


def _is_valid_expire(v: Any) -> bool:
    return not isinstance(v, bool) and isinstance(v, (int, float)) and v == v and v >= 0


def _pass_collection(db, name: str, now: datetime.datetime, report: dict) -> int:
    from ..matcher.match import fast_matcher
    from . import timeseries as TS
    st = db._store._collections.get(name)
    if st is None or not st.is_created:
        return 0
    state = getattr(st, "ts", None)
    removed = 0
    if state is not None:
        if state.expire is None:
            return 0
        bcoll = db.get_collection(TS.buckets_name(name))
        removed = TS.delete_buckets(bcoll, state, _expired_bucket(state, now, bcoll._store.docs.values()))
        if removed:
            report.setdefault(name, 0)
            report[name] += removed
        return removed
    if name.startswith("system.buckets."):
        return 0
    coll = db.get_collection(name)
    for ix in list(st.ix.values()):
        spec = ix.spec
        if spec.expire is None or len(spec.key) != 1 or spec.name == "_id_":
            continue
        if not _is_valid_expire(spec.expire):
            _metrics(db.client._store)["invalidTTLIndexSkips"] += 1
            continue
        field = spec.key[0][0]
        limit = now - datetime.timedelta(seconds=float(spec.expire))
        partial = fast_matcher(spec.partial) if getattr(spec, "partial", None) else None
        doomed = []
        for rid, doc in st.docs.items():
            t = _earliest_date(_path_value(doc, field))
            if t is None or _naive(t) >= limit:
                continue
            if partial is not None and not partial(doc):
                continue
            doomed.append(rid)
        for rid in doomed:
            if rid in st.docs and coll._remove_rid(rid):
                removed += 1
        if doomed:
            report.setdefault(name, 0)
            report[name] += len(doomed)
    return removed


_EPOCH = datetime.datetime(1970, 1, 1)
_EXTENDED = 0x80000000  # seconds: the first bucket time an ObjectId's signed 32-bit timestamp cannot hold


def _secs(t: Any) -> int | None:
    """Whole seconds since the epoch of a date (an ObjectId timestamp's precision), or None."""
    if not isinstance(t, datetime.datetime):
        return None
    return int((_naive(t) - _EPOCH) // datetime.timedelta(seconds=1))


def _expired_bucket(state, now: datetime.datetime, buckets) -> Any:
    """The predicate of the server's time-series TTL delete (src/mongo/db/ttl/ttl.cpp) for one pass at
    ``now``: a bucket goes when its ``_id`` time (the rounded ``control.min``, which its ObjectId holds in
    whole seconds) is at or before ``now - expireAfterSeconds - bucketMaxSpanSeconds``. With extended-range
    data (a bucket time outside 1970-2038) the server scans two ``_id`` ranges and also requires
    ``control.max`` at or before ``now - expireAfterSeconds``."""
    tf = state.time_field
    expire = datetime.timedelta(seconds=float(state.expire))
    end = _secs(now - expire - datetime.timedelta(seconds=state.max_span))
    newest = now - expire

    def times(bdoc: dict) -> tuple:
        control = bdoc.get("control") or {}
        return _secs((control.get("min") or {}).get(tf)), (control.get("max") or {}).get(tf)

    extended = any(s is not None and not 0 <= s < _EXTENDED
                   for bdoc in buckets for s in (times(bdoc)[0], _secs(times(bdoc)[1])))

    def expired(bdoc: dict) -> bool:
        lo, hi = times(bdoc)
        if lo is None:
            return False
        if not extended:
            return lo <= end
        if not (isinstance(hi, datetime.datetime) and _naive(hi) <= newest):
            return False
        stamp = lo % (1 << 32)  # the ObjectId's unsigned timestamp: dates before 1970 sort after 2038
        return stamp <= end or stamp >= _EXTENDED - state.max_span
    return expired


def _embedded_pass(client, dbs: list, now: datetime.datetime) -> dict:
    from ..service.boundary import lock_for_store
    store = client._store
    lock = store.__dict__.get("_lab_lock") or lock_for_store(store)
    report: dict[str, int] = {}
    deleted = 0
    with lock:
        for db in dbs:
            for name in list(db._store._collections):
                n = _pass_collection(db, name, now, report)
                deleted += n
        m = _metrics(store)
        m["passes"] += 1
        m["subPasses"] += 1
        m["deletedDocuments"] += deleted
        return {"engine": "embedded", "now": now, "deleted": deleted,
                "byCollection": {k: v for k, v in report.items()}, "metrics": dict(m)}


def ttl_pass(db_or_client: Any, now: datetime.datetime | None = None, timeout: float = 120.0) -> dict:
    """Run one pass of the TTL monitor and return what it deleted.

    Embedded engine: deterministic, at time ``now`` (default: the current UTC time), over every database of
    the client (or one database); returns ``{"engine", "now", "deleted", "byCollection", "metrics"}``. A
    document expires when its indexed date is older than ``now - expireAfterSeconds``; a time-series bucket
    only when its minimum time is at or before ``now - expireAfterSeconds - bucketMaxSpanSeconds`` (the
    server's rule: the bucket may hold measurements up to its maximum span later), so ``deleted`` counts
    buckets there.
    Real server: waits for the server's own next pass (``metrics.ttl.passes`` increments), at most
    ``timeout`` seconds, and returns ``{"engine": "server", "passes", "deletedDocuments"}`` deltas."""
    from ..base import hooks
    import pymongo
    EmbeddedClient = hooks.get("client_class")  # the package's client (labkit/engine/__init__.py, hooks.py)
    is_client = isinstance(db_or_client, (EmbeddedClient, pymongo.MongoClient))
    client = db_or_client if is_client else db_or_client.client
    if isinstance(client, EmbeddedClient):
        if now is None:
            now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
        now = _naive(now)
        dbs = [db_or_client] if not is_client else \
            [client.get_database(n) for n in client._store.list_created_database_names()]
        return _embedded_pass(client, dbs, now)
    if is_served_engine(client):  # labkit serve: the served engine runs the pass on request
        cmd: dict[str, Any] = {"labkitTtlPass": 1}
        if now is not None:
            cmd["now"] = _naive(now)
        target = client.admin if is_client else db_or_client
        out = target.command(cmd)
        out.pop("ok", None)
        return {"engine": "embedded-served", **out}
    if now is not None:
        raise ValueError("ttl_pass(now=...) is only possible on the embedded engine; a server's TTL monitor "
                         "uses the server's clock")
    admin = client.admin
    start = admin.command("serverStatus")["metrics"]["ttl"]
    deadline = time.monotonic() + timeout
    while True:
        cur = admin.command("serverStatus")["metrics"]["ttl"]
        if cur["passes"] > start["passes"]:
            return {"engine": "server", "passes": cur["passes"] - start["passes"],
                    "deletedDocuments": cur["deletedDocuments"] - start["deletedDocuments"], "metrics": cur}
        if time.monotonic() > deadline:
            raise TimeoutError("the server's TTL monitor did not run within %.0f s (ttlMonitorSleepSecs is "
                               "60 s by default)" % timeout)
        time.sleep(1.0)


def is_served_engine(client: Any) -> bool:
    """True when pymongo ``client`` talks to a served embedded engine (``labkit serve``), not a real server:
    its ``buildInfo`` carries ``labkit: {engine: "embedded-served"}``, which a MongoDB server never sends."""
    from pymongo.errors import PyMongoError
    try:
        info = client.admin.command("buildInfo")
    except PyMongoError:
        return False
    lab = info.get("labkit")
    return isinstance(lab, dict) and lab.get("engine") == "embedded-served"
