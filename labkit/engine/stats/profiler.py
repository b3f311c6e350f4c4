"""The database profiler of the embedded engine: the ``profile`` command and ``<db>.system.profile``.

Modelled on the manual's "Database Profiler" and "Database Profiler Output" pages:

* ``db.command("profile", level, slowms=..., sampleRate=..., filter=...)`` sets the level (0 off, 1 slow
  operations, 2 all) and answers the *previous* settings ``{was, slowms, sampleRate, ok}`` (plus ``filter``
  and ``note`` when a filter was set); ``{"profile": -1}`` only reads them. At level 1 an operation is
  recorded when it took at least ``slowms`` milliseconds (sampled with ``sampleRate``), or, when a
  ``filter`` is set, when its profile document matches the filter (the filter replaces slowms/sampleRate).
  Nearly everything takes under 1 ms on the embedded engine: use ``slowms=0`` or level 2 to see queries.
* Each entry has the server's fields: ``op`` (query, getmore, insert, update, remove, command), ``ns``,
  ``command``, ``keysExamined``, ``docsExamined``, ``nreturned``, ``planSummary`` (``IXSCAN { a: 1 }``,
  ``COLLSCAN`` ...), ``hasSortStage``, ``usedDisk``, ``cursorExhausted``, write counters (``ninserted``,
  ``nMatched``, ``nModified``, ``nUpserted``, ``ndeleted``, ``keysInserted``, ``keysDeleted``),
  ``numYield``, ``responseLength``, ``millis``, ``ts``, ``client``, ``appName``, ``allUsers``, ``user``,
  and ``ok``/``errCode``/``errName``/``errMsg`` for failures. Figures come from the run itself (the planner's
  stage counters, the same ones explain reports), not from a re-run.
* ``system.profile`` is a capped collection of 1 MiB on the server; here it keeps the newest entries within
  1 MiB of BSON. Entries carry an ``_id`` (the embedded store needs one); the server's have none.
"""
from __future__ import annotations

import collections
import datetime
import random
from typing import Any

import bson
from pymongo.errors import OperationFailure

from ..service import boundary

PROFILE_COLL = "system.profile"
CAP_BYTES = 1024 * 1024
DEFAULTS = {"level": 0, "slowms": 100, "sampleRate": 1.0, "filter": None}
_OP_KIND = {"find": "query", "getMore": "getmore", "insert": "insert", "update": "update", "delete": "remove"}


def _settings(db_store: Any) -> dict:
    s = getattr(db_store, "_lab_profile", None)
    if s is None:
        s = db_store._lab_profile = dict(DEFAULTS, sizes=collections.deque(), total=0)
    return s


def any_enabled(client: Any) -> bool:
    """Whether some database of ``client``'s store profiles (cheap: one attribute read)."""
    return bool(client.__dict__["_store"].__dict__.get("_lab_profiling"))


def cmd_profile(db: Any, cmd: dict) -> dict:
    """The ``profile`` command: set/read the level, slowms, sampleRate and filter; answer the old settings."""
    level = cmd.get("profile")
    if isinstance(level, bool) or not isinstance(level, (int, float)) or level not in (-1, 0, 1, 2):
        raise OperationFailure("Invalid profiling level: %r (the level must be -1, 0, 1 or 2)" % (level,), 2)
    for k in cmd:
        if k not in ("profile", "slowms", "sampleRate", "filter", "$db", "lsid", "comment"):
            raise OperationFailure("BSON field 'profile.%s' is an unknown field." % k, 40415)
    st = _settings(db._store)
    out: dict = {"was": st["level"], "slowms": st["slowms"], "sampleRate": st["sampleRate"]}
    if st["filter"] is not None:
        out["filter"] = st["filter"]
        out["note"] = "When a filter expression is set, slowms and sampleRate are not used for profiling and slow-query log lines."
    if "slowms" in cmd:
        v = cmd["slowms"]
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise OperationFailure("BSON field 'profile.slowms' is the wrong type '%s', expected types '[long, int, "
                                   "decimal, double]'" % type(v).__name__, 14)
    if "sampleRate" in cmd:
        v = cmd["sampleRate"]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 1:
            raise OperationFailure("'sampleRate' must be between 0.0 and 1.0 inclusive", 2)
    if "filter" in cmd and cmd["filter"] != "unset" and not isinstance(cmd["filter"], dict):
        raise OperationFailure("Expected an object, or the string 'unset'.", 14)
    if "filter" in cmd and isinstance(cmd["filter"], dict):
        from ..matcher.match import fast_matcher
        fast_matcher(cmd["filter"])  # an invalid filter fails now, as the server parses it now
    if "slowms" in cmd:
        st["slowms"] = int(cmd["slowms"])
    if "sampleRate" in cmd:
        st["sampleRate"] = float(cmd["sampleRate"])
    if "filter" in cmd:
        st["filter"] = None if cmd["filter"] == "unset" else dict(cmd["filter"])
    if level != -1:
        server = db.client._store
        was_on = st["level"] > 0
        st["level"] = int(level)
        server._lab_profiling = getattr(server, "_lab_profiling", 0) + (int(level > 0) - int(was_on))
        if level > 0 and not db._store[PROFILE_COLL].is_created:
            db._store[PROFILE_COLL]._is_force_created = True
    out["ok"] = 1.0
    return out


# ---------------------------------------------------------------------------------------------- entries
def _stage_key(stage: Any) -> str:
    ix = getattr(stage, "index", None)
    if ix is None:
        return stage.name
    return "%s { %s }" % (stage.name, ", ".join("%s: %s" % (f, d) for f, d in ix.spec.key))


def plan_summary(root: Any) -> str:
    """The server's ``planSummary``: the leaf stages of the winning plan, e.g. ``IXSCAN { a: 1, b: -1 }``."""
    leaves = [s for s in root.walk() if not getattr(s, "children", None)]
    return ", ".join(_stage_key(s) for s in leaves) if leaves else root.name


def _figures(op: boundary.Op) -> dict:
    from ..query.planner import totals
    keys = docs = 0
    summary = None
    sort = False
    for ex in op.runs:
        root = getattr(ex.winner, "root", None)
        if root is None:
            continue
        k, d = totals(root)
        keys += k
        docs += d
        if summary is None:
            summary = plan_summary(root)
        sort = sort or any(s.name == "SORT" for s in root.walk())
    out: dict = {}
    if op.runs:
        out = {"keysExamined": keys, "docsExamined": docs}
        if sort:
            out["hasSortStage"] = True
        out["usedDisk"] = False
        out["planSummary"] = summary or "EOF"
    return out


def record(op: boundary.Op, cmd: dict, reply: dict | None, err: BaseException | None) -> None:
    """Record one command of ``op`` in ``<db>.system.profile`` when that database's profiler wants it."""
    client = op.client
    if not any_enabled(client):
        return
    db_name = op.db_name or cmd.get("$db") or ""
    if not db_name:
        return
    server = client._store
    db_store = server[db_name]
    st = _settings(db_store)
    if st["level"] <= 0:
        return
    name = next(iter(cmd))
    coll_name = cmd.get(name) if isinstance(cmd.get(name), str) else cmd.get("collection")
    if coll_name == PROFILE_COLL:
        return  # reading the profile is not profiled (it would feed itself)
    millis = int((boundary._clock() - op.t0) * 1000)
    kind = _OP_KIND.get(name, "command")
    ns = "%s.%s" % (db_name, coll_name if isinstance(coll_name, str) else "$cmd")
    entry: dict = {"op": kind, "ns": ns}
    body = {k: v for k, v in cmd.items()}
    if kind in ("update", "remove") and len(cmd.get("updates", cmd.get("deletes", []))) == 1:
        stmt = (cmd.get("updates") or cmd.get("deletes"))[0]
        entry["command"] = dict(stmt)
    else:
        entry["command"] = body
    entry.update(_figures(op) if name != "getMore" else {})
    if name in ("find", "count", "distinct", "aggregate", "findAndModify") and "planSummary" in entry:
        from ..query.explain_doc import plan_cache_hashes  # the same hashes explain shows for this shape
        cst = db_store._collections.get(coll_name) if isinstance(coll_name, str) else None
        indexes = sorted((n, repr(ix.spec.key)) for n, ix in cst.ix.items()) \
            if cst is not None and cst.is_created else ()
        flt = cmd.get("filter", cmd.get("query"))
        shape_kind = {"find": "find", "count": "count", "distinct": "distinct"}.get(name, "aggregate")
        if name == "aggregate":
            first = (cmd.get("pipeline") or [{}])[0]
            flt = first.get("$match") if isinstance(first, dict) else None
        shape_hash, key = plan_cache_hashes(shape_kind, flt, cmd.get("sort") if name == "find" else None,
                                            cmd.get("projection") if name == "find" else None, indexes)
        entry["queryHash"] = entry["planCacheShapeHash"] = shape_hash
        entry["planCacheKey"] = key
    if kind in ("query", "getmore") and reply is not None:
        c = reply.get("cursor", {})
        entry["nreturned"] = len(c.get("firstBatch", c.get("nextBatch", [])))
        if c.get("id"):
            entry["cursorid"] = c["id"]
        else:
            entry["cursorExhausted"] = True
    elif kind == "command" and reply is not None and "cursor" in reply:
        entry["nreturned"] = len(reply["cursor"].get("firstBatch", []))
        if not reply["cursor"].get("id"):
            entry["cursorExhausted"] = True
    elif kind == "command" and reply is not None and name == "findAndModify":
        entry["nreturned"] = 1 if reply.get("value") is not None else 0
    if reply is not None:
        if kind == "insert":
            entry["ninserted"] = reply.get("n", 0)
        elif kind == "update":
            entry["nMatched"] = reply.get("n", 0) - len(reply.get("upserted", []))
            entry["nModified"] = reply.get("nModified", 0)
            if reply.get("upserted"):
                entry["nUpserted"] = len(reply["upserted"])
        elif kind == "remove":
            entry["ndeleted"] = reply.get("n", 0)
    if kind == "insert" and reply is not None and err is None:
        _count_inserted_keys(op, db_store, coll_name, cmd)
    for k in ("keysInserted", "keysDeleted"):
        if op.counters.get(k):
            entry[k] = op.counters[k]
    entry["numYield"] = 0
    entry["locks"] = {}
    entry["flowControl"] = {}
    if err is not None:
        entry["ok"] = 0.0
        entry["errMsg"] = str(err)
        code = getattr(err, "code", None)
        entry["errCode"] = code if code is not None else 1
        det = getattr(err, "details", None) or {}
        if isinstance(det, dict) and det.get("codeName"):
            entry["errName"] = det["codeName"]
    entry["responseLength"] = len(bson.encode(reply)) if reply is not None else 0
    entry["protocol"] = "op_msg"
    entry["millis"] = millis
    now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    entry["ts"] = now.replace(microsecond=now.microsecond // 1000 * 1000)  # BSON dates hold milliseconds
    entry["client"] = "127.0.0.1"
    entry["appName"] = client.__dict__.get("_lab_appname") or "labkit-embedded"
    entry["allUsers"] = []
    entry["user"] = ""
    if not _wanted(st, entry):
        return
    _store_entry(client, db_name, db_store, st, entry)
    if "keysExamined" in entry and isinstance(coll_name, str):  # the plan record (explain_doc.record_plan)
        from ..query.explain_doc import record_plan
        record_plan("profiler", db_store[coll_name], db_store, ns, entry["command"], {}, {
            "keys": entry["keysExamined"], "docs": entry["docsExamined"], "returned": entry.get("nreturned"),
            "counted": None, "plan": entry.get("planSummary", ""), "op": kind,
            "complete": kind not in ("query", "getmore") or bool(entry.get("cursorExhausted"))})


def _count_inserted_keys(op: boundary.Op, db_store: Any, coll_name: Any, cmd: dict) -> None:
    """``keysInserted`` of an insert: the index keys of the inserted documents (computed only when profiling)."""
    if not isinstance(coll_name, str):
        return
    ixs = list(db_store[coll_name].ix.values())
    n = 0
    for d in cmd.get("documents") or ():
        if isinstance(d, dict) and "_id" in d:
            for ix in ixs:
                try:
                    n += len(ix.keys_for(d)[0])
                except Exception:  # a document the insert refused has no keys
                    pass
    op.counters["keysInserted"] = n


def _wanted(st: dict, entry: dict) -> bool:
    if st["level"] >= 2:
        return True
    if st["filter"] is not None:
        from ..matcher.match import fast_matcher
        try:
            return bool(fast_matcher(st["filter"])(entry))
        except Exception:
            return False
    if entry["millis"] < st["slowms"]:
        return False
    return st["sampleRate"] >= 1.0 or random.random() < st["sampleRate"]


def _store_entry(client: Any, db_name: str, db_store: Any, st: dict, entry: dict) -> None:
    coll = client.get_database(db_name).get_collection(PROFILE_COLL)
    from ..base import hooks
    from ..base.docutil import new_object_id
    EmbeddedCollection = hooks.get("collection_class")  # registered by collection.py (hooks.py)
    entry = dict(entry)
    entry["_id"] = new_object_id()
    size = len(bson.encode(entry))
    lock = boundary.lock_for_store(client._store)
    with lock:
        saved = getattr(boundary._TLS, "op", None)
        boundary._TLS.op = boundary.Op("profile", coll, (), {}, client)  # writing the profile is not observed
        try:
            from ..session import sessions
            with sessions.outside():
                live = db_store[PROFILE_COLL]
                rid = live.next_rid
                keys = EmbeddedCollection._compute_keys(coll, entry, rid, None, live)
                live.next_rid += 1
                EmbeddedCollection._commit_insert(coll, entry, rid, keys)
                st["sizes"].append((rid, size))
                st["total"] += size
                while st["total"] > CAP_BYTES and len(st["sizes"]) > 1:
                    old, sz = st["sizes"].popleft()
                    st["total"] -= sz
                    EmbeddedCollection._remove_rid(coll, old)
        finally:
            boundary._TLS.op = saved
