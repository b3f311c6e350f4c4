"""What a server reports about itself while it runs: ``$currentOp`` (and the ``currentOp`` command), ``top`` and
``$listLocalSessions``, as MongoDB 8.0 answers them (manual pages "$currentOp (aggregation)", "currentOp", "top",
"$listLocalSessions"; the server's ``src/mongo/db/pipeline/document_source_current_op.cpp``,
``src/mongo/db/commands/query_cmd/current_op_common.cpp``, ``src/mongo/db/stats/top.cpp``,
``src/mongo/db/pipeline/document_source_list_local_sessions.cpp``).

What is modelled: the operations in progress are the command running now and, on a served engine, the commands
of other connections waiting for the engine (which runs one command at a time: they show ``waitingForLock:
true``); idle connections (``idleConnections``), open cursors (``idleCursors``) and sessions holding a
transaction (``idleSessions``). Times are measured. Not modelled (no such work exists in the engine): lock
statistics (empty documents), flow control, index build progress, operations of other users (there is no
authentication: every operation belongs to the one unauthenticated user). ``top``'s counters are kept by the
operation boundary (``service/boundary.py``). Sessions: every logical session id a client sent (the served
engine) or every session started and not ended (in-process); ``uid`` is the SHA-256 of the empty string, the
server's digest when authentication is off (``logical_session_id_helpers.cpp`` kNoAuthDigest).
"""
from __future__ import annotations

import datetime
import hashlib
import time
from collections.abc import Mapping
from typing import Any

from bson import Int64
from bson.binary import Binary
from pymongo.errors import OperationFailure

SESSION_TIMEOUT_S = 30 * 60  # logicalSessionTimeoutMinutes: an unused session leaves the cache
NO_AUTH_DIGEST = hashlib.sha256(b"").digest()  # BinData subtype 0, as a driver decodes it
_CURRENT_OP_OPTIONS = ("allUsers", "idleConnections", "idleCursors", "idleSessions", "localOps", "backtrace",
                       "truncateOps", "targetAllNodes")
# the logical op of a command (curop.cpp / the command's setLogicalOp): what currentOp's ``op`` says
_LOGICAL_OPS = {"find": "query", "getMore": "getmore", "insert": "insert", "update": "update", "delete": "remove"}


def _fail(msg: str, code: int) -> OperationFailure:
    names = {9: "FailedToParse", 73: "InvalidNamespace", 13: "Unauthorized", 14: "TypeMismatch"}
    return OperationFailure(msg, code, {"ok": 0.0, "errmsg": msg, "code": code,
                                        "codeName": names.get(code, "Location%d" % code)})


def _iso(ts: float) -> str:
    """currentOpTime's format: an ISO-8601 string with milliseconds and the UTC offset."""
    dt = datetime.datetime.fromtimestamp(ts, datetime.timezone.utc)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + "%03d+00:00" % (dt.microsecond // 1000)


def _check_options(spec: Any) -> dict:
    if not isinstance(spec, Mapping):
        raise _fail("$currentOp options must be specified in an object, but found: %s" % type(spec).__name__, 14)
    for key, value in spec.items():
        if key not in _CURRENT_OP_OPTIONS:
            raise _fail("Unrecognized option '%s' in $currentOp stage." % key, 9)
        if not isinstance(value, bool):
            raise _fail("The '%s' parameter of the $currentOp stage must be a boolean value, but found: %s"
                        % (key, type(value).__name__), 9)
    return dict(spec)


def _op_namespace(db_name: str, cmd: Mapping) -> str:
    name = next(iter(cmd), "")
    target = cmd.get(name)
    if isinstance(target, str) and name not in ("renameCollection", "getMore"):
        return "%s.%s" % (db_name, target)
    if name == "getMore" and isinstance(cmd.get("collection"), str):
        return "%s.%s" % (db_name, cmd["collection"])
    if name == "aggregate":
        return "%s.$cmd.aggregate" % db_name
    return "%s.$cmd" % db_name


def _command_shown(cmd: Mapping, db_name: str) -> dict:
    """The command as currentOp shows it: the client's fields (the driver's bookkeeping and ``$db`` kept)."""
    out = {k: v for k, v in cmd.items() if k not in ("$clusterTime",)}
    out.setdefault("$db", db_name)
    return out


def _connection_fields(ctx: Any, conn_id: int) -> dict:
    info = ctx.clients.get(conn_id) if ctx is not None else None
    out: dict[str, Any] = {}
    if info is None:
        return out
    out["desc"] = "conn%d" % conn_id
    out["connectionId"] = conn_id
    out["client"] = info.get("client", "")
    meta = info.get("metadata")
    if isinstance(meta, Mapping):
        app = meta.get("application")
        if isinstance(app, Mapping) and isinstance(app.get("name"), str):
            out["appName"] = app["name"]
        out["clientMetadata"] = dict(meta)
    return out


def _active_doc(ctx: Any, host: str, conn_id: int, run: dict, now: float, waiting: bool) -> dict:
    cmd = run["cmd"]
    doc: dict[str, Any] = {"type": "op", "host": host}
    doc.update(_connection_fields(ctx, conn_id))
    doc.update({"active": True, "currentOpTime": _iso(now), "effectiveUsers": [], "threaded": True,
                "opid": run["opid"]})
    lsid = cmd.get("lsid")
    if isinstance(lsid, Mapping) and "id" in lsid:
        doc["lsid"] = {"id": lsid["id"], "uid": NO_AUTH_DIGEST}
    if cmd.get("txnNumber") is not None:
        doc["transaction"] = {"parameters": {"txnNumber": Int64(cmd["txnNumber"]),
                                             "autocommit": bool(cmd.get("autocommit", True))}}
    elapsed = max(0.0, now - run["t0"])
    name = next(iter(cmd), "")
    doc.update({"secs_running": Int64(int(elapsed)), "microsecs_running": Int64(int(elapsed * 1_000_000)),
                "op": _LOGICAL_OPS.get(name, "command"), "ns": _op_namespace(run["db"], cmd), "redacted": False,
                "command": _command_shown(cmd, run["db"]), "numYields": 0, "locks": {},
                "waitingForLock": waiting, "lockStats": {}, "waitingForFlowControl": False,
                "flowControlStats": {}})
    return doc


def current_op_documents(ctx: Any, spec: Any, me: dict) -> list[dict]:
    """The documents of ``{$currentOp: spec}``. ``ctx``: the command layer's ServerContext (None in-process
    before any command ran); ``me``: the operation asking (``conn``, ``cmd``, ``db``, ``opid``, ``t0``)."""
    opts = _check_options(spec)
    now = time.time()
    host = ctx.address if ctx is not None and ctx.port else "labkit-embedded:0"
    out = [_active_doc(ctx, host, me["conn"], me, now, False)]
    active = dict(getattr(ctx, "active", {}) or {}) if ctx is not None else {}
    for conn_id, run in sorted(active.items()):
        if conn_id != me["conn"]:
            out.append(_active_doc(ctx, host, conn_id, run, now, True))
    if ctx is None:
        return out
    if opts.get("idleConnections"):
        for conn_id in sorted(list(ctx.clients)):  # a copy: connections open and close on other threads
            if conn_id == me["conn"] or conn_id in active:
                continue
            doc = {"type": "op", "host": host, **_connection_fields(ctx, conn_id), "active": False,
                   "currentOpTime": _iso(now), "effectiveUsers": [], "threaded": True}
            out.append(doc)
    if opts.get("idleCursors"):
        for cur in ctx.cursors.values():
            out.append(_idle_cursor_doc(host, cur, now))
    if opts.get("idleSessions", True):
        for key, s in ctx.sessions.items():
            if getattr(s.session, "in_transaction", False):
                out.append({"type": "idleSession", "host": host, "active": False, "currentOpTime": _iso(now),
                            "lsid": {"id": Binary(key, 4), "uid": NO_AUTH_DIGEST},
                            "transaction": {"parameters": {"txnNumber": Int64(s.txn_number or 0),
                                                           "autocommit": False}},
                            "waitingForLock": False})
    return out


def _idle_cursor_doc(host: str, cur: Any, now: float) -> dict:
    idle = max(0.0, time.monotonic() - cur.last_used)
    last = datetime.datetime.fromtimestamp(now - idle, datetime.timezone.utc)
    cursor: dict[str, Any] = {"cursorId": Int64(cur.id), "lastAccessDate": last,
                              "nDocsReturned": Int64(cur.pos), "tailable": bool(getattr(cur, "tailable", False)),
                              "awaitData": bool(getattr(cur, "await_data", False)), "noCursorTimeout": False}
    return {"type": "idleCursor", "host": host, "ns": cur.ns, "cursor": cursor}


def current_op_command(ctx: Any, cmd: Mapping, me: dict) -> dict:
    """The ``currentOp`` command (current_op_common.cpp): ``$all`` / ``$ownOps`` and the other fields as a
    filter on the operations; ``{inprog: [...], ok: 1}``."""
    from ..matcher.match import fast_matcher
    spec = {"allUsers": not bool(cmd.get("$ownOps")), "idleConnections": bool(cmd.get("$all"))}
    flt = {k: v for k, v in cmd.items() if k not in ("currentOp", "$all", "$ownOps", "$truncateOps", "$db",
                                                     "lsid", "$clusterTime", "$readPreference", "comment",
                                                     "maxTimeMS", "apiVersion", "apiStrict",
                                                     "apiDeprecationErrors")}
    docs = current_op_documents(ctx, spec, me)
    if flt:
        m = fast_matcher(flt)
        docs = [d for d in docs if m(d)]
    return {"inprog": docs, "ok": 1.0}


def list_local_sessions(ctx: Any, spec: Any, local: list | None = None) -> list[dict]:
    """The documents of ``{$listLocalSessions: spec}``: ``{_id: {id, uid}, lastUse}`` per session in the
    server's cache (``ctx.session_uses`` on a served engine, ``local`` sessions in-process)."""
    if not isinstance(spec, Mapping):
        raise _fail("$listLocalSessions options must be specified in an object, but found: %s"
                    % type(spec).__name__, 14)
    for key in spec:
        if key not in ("allUsers", "users"):
            raise _fail("BSON field '$listLocalSessions.%s' is an unknown field." % key, 40415)
    if spec.get("allUsers") and "users" in spec:
        raise _fail("The 'allUsers' and 'users' parameters of the $listLocalSessions stage may not be "
                    "specified together", 9)
    users = spec.get("users")
    if users is not None and not spec.get("allUsers"):
        return []  # no authentication: the sessions belong to no named user
    rows = []
    if ctx is not None:
        horizon = time.time() - SESSION_TIMEOUT_S
        for key in [k for k, (_sid, last) in list(ctx.session_uses.items()) if last < horizon]:
            ctx.session_uses.pop(key, None)  # expired from the cache (logicalSessionTimeoutMinutes)
        for key, (sid, last) in list(ctx.session_uses.items()):
            rows.append((last, {"_id": {"id": sid, "uid": NO_AUTH_DIGEST},
                                "lastUse": datetime.datetime.fromtimestamp(last, datetime.timezone.utc)}))
    for s in local or []:
        if not s.has_ended:
            last = getattr(s, "_lab_last_use", time.time())
            rows.append((last, {"_id": {"id": s._id["id"], "uid": NO_AUTH_DIGEST},
                                "lastUse": datetime.datetime.fromtimestamp(last, datetime.timezone.utc)}))
    return [d for _t, d in rows]


def top_reply(client: Any, db_name: str) -> dict:
    """The ``top`` command (admin only): per namespace, the count and microseconds of each kind of operation."""
    from ..service.boundary import top_totals
    if db_name != "admin":
        raise _fail("top may only be run against the admin database.", 13)
    return {"totals": top_totals(client._store), "ok": 1.0}
