"""Command monitoring for the embedded engine: pymongo's CommandStarted/Succeeded/FailedEvent, built in one place.

Each public operation is described as the command pymongo 4 would send to a server for the same call (command
name first, ``lsid``, ``$db``, transaction fields), its reply as the server's (``{"n": 1, "ok": 1.0}``, cursor
replies with ``firstBatch``/``nextBatch``), and failures as the server's error document. Cursors follow the
server's batching: the first batch holds ``batchSize`` (default 101) documents, later ``getMore`` batches hold
``batchSize`` documents or, without one, up to 16 MiB; ``getMore`` events are published when iteration
reaches the end of a batch, as the driver would send them. Listeners come from ``EmbeddedClient(
event_listeners=[...])`` / ``labkit.connect(event_listeners=[...])`` and from ``pymongo.monitoring.register``
(copied when the client is created, as pymongo does). The profiler (``profiler.py``) records from the same
descriptions.
"""
from __future__ import annotations

import datetime
import inspect
import itertools
import random
from collections.abc import Mapping
from typing import Any

import bson
from bson.int64 import Int64
from pymongo import monitoring as pm
from pymongo.errors import BulkWriteError, OperationFailure, PyMongoError

from ..service import boundary
from ..base.docutil import CursorProtocol

ADDRESS = ("embedded", 27017)
FIRST_BATCH = 101                 # the server's default first batch for find/aggregate
MAX_BATCH_BYTES = 16 * 1024 * 1024
MAX_WRITE_BATCH = 100_000         # hello's maxWriteBatchSize: pymongo splits bigger writes
_REQUEST_IDS = itertools.count(random.randint(1, 1 << 20))


def listeners_of(client: Any) -> list:
    return client.__dict__.get("_lab_listeners") or []


def init_client(client: Any, event_listeners: Any) -> None:
    """Give ``client`` its command listeners: ``event_listeners`` plus pymongo's globally registered ones."""
    ls = list(pm._LISTENERS.command_listeners)
    for x in event_listeners or ():
        if not isinstance(x, pm._EventListener):
            raise TypeError("Listeners for %s must be either a CommandListener, ServerHeartbeatListener, "
                            "ServerListener, TopologyListener, or ConnectionPoolListener." % (x,))
        if isinstance(x, pm.CommandListener):
            ls.append(x)
    client._lab_listeners = ls
    client._lab_implicit_lsid = {"id": bson.Binary(random.randbytes(16), 4)}


# ---------------------------------------------------------------------------------------------- signatures
_SIGS: dict[tuple[str, str], inspect.Signature | None] = {}


def _bind(kind: str, name: str, args: tuple, kwargs: dict) -> dict:
    """The call's arguments by name, bound against pymongo's own method signature."""
    key = (kind, name)
    if key not in _SIGS:
        from pymongo.synchronous import collection as pc, database as pd
        cls = {"collection": pc.Collection, "database": pd.Database}[kind]
        fn = getattr(cls, name, None)
        _SIGS[key] = inspect.signature(fn) if fn is not None else None
    sig = _SIGS[key]
    if sig is None:
        return {}
    try:
        b = sig.bind(None, *args, **kwargs)
    except TypeError:
        return dict(kwargs)
    out = dict(b.arguments)
    out.pop("self", None)
    extra = out.pop("kwargs", None)
    if extra:
        out.update(extra)
    return out


def _hint(h: Any) -> Any:
    if isinstance(h, list):
        return dict((x[0], x[1]) if isinstance(x, (list, tuple)) else (x, 1) for x in h)
    return h


def _sort(s: Any) -> Any:
    if s is None:
        return None
    if isinstance(s, str):
        return {s: 1}
    if isinstance(s, Mapping):
        return dict(s)
    return dict((x[0], x[1]) if isinstance(x, (list, tuple)) else (x, 1) for x in s)


def _session_fields(op: boundary.Op, cmd: dict, session: Any) -> None:
    client = op.client
    if session is not None and getattr(session, "_id", None) is not None:
        cmd["lsid"] = session._id
        txn = getattr(session, "_txn", None)
        if txn is not None and session.in_transaction:
            cmd["txnNumber"] = Int64(txn.number)
            if not getattr(txn, "_lab_started_sent", False):
                cmd["startTransaction"] = True
                txn._lab_started_sent = True
            cmd["autocommit"] = False
    else:
        cmd["lsid"] = client.__dict__.get("_lab_implicit_lsid") or {"id": bson.Binary(b"\0" * 16, 4)}


# ---------------------------------------------------------------------------------------------- commands
def _coll_commands(op: boundary.Op) -> list[dict]:
    coll = op.target
    name = op.name
    a = _bind("collection", name if name != "cursor_distinct" else "distinct", op.args, op.kwargs)
    cn = coll.name
    ordered = a.get("ordered", True)

    def extras(cmd: dict, pairs: tuple = ()) -> dict:
        for src, dst in pairs:
            v = a.get(src)
            if v is not None and v is not False:
                cmd[dst] = v
        if a.get("comment") is not None:
            cmd["comment"] = a["comment"]
        return cmd

    if name == "insert_one":
        return [extras({"insert": cn, "ordered": True, "documents": [a.get("document")]},
                       (("bypass_document_validation", "bypassDocumentValidation"),))]
    if name == "insert_many":
        docs = list(a.get("documents") or [])
        return [extras({"insert": cn, "ordered": ordered, "documents": docs[i:i + MAX_WRITE_BATCH]},
                       (("bypass_document_validation", "bypassDocumentValidation"),))
                for i in range(0, max(len(docs), 1), MAX_WRITE_BATCH)]
    if name in ("update_one", "update_many", "replace_one"):
        u = {"q": a.get("filter"), "u": a.get("update", a.get("replacement")), "multi": name == "update_many",
             "upsert": bool(a.get("upsert", False))}
        for src, dst in (("collation", "collation"), ("array_filters", "arrayFilters"), ("hint", "hint"),
                         ("sort", "sort")):
            if a.get(src) is not None:
                u[dst] = _hint(a[src]) if src == "hint" else (_sort(a[src]) if src == "sort" else a[src])
        return [extras({"update": cn, "ordered": True, "updates": [u]},
                       (("let", "let"), ("bypass_document_validation", "bypassDocumentValidation")))]
    if name in ("delete_one", "delete_many"):
        d = {"q": a.get("filter"), "limit": 1 if name == "delete_one" else 0}
        for src in ("collation", "hint"):
            if a.get(src) is not None:
                d[src] = _hint(a[src])
        return [extras({"delete": cn, "ordered": True, "deletes": [d]}, (("let", "let"),))]
    if name == "bulk_write":
        return _bulk_commands(cn, list(a.get("requests") or []), ordered, a)
    if name in ("find_one_and_delete", "find_one_and_update", "find_one_and_replace"):
        from pymongo import ReturnDocument
        cmd = {"findAndModify": cn, "query": a.get("filter") or {},
               "new": bool(a.get("return_document", ReturnDocument.BEFORE))}
        if name == "find_one_and_delete":
            cmd["remove"] = True
        else:
            cmd["update"] = a.get("update", a.get("replacement"))
        if a.get("projection") is not None:
            p = a["projection"]
            cmd["fields"] = p if isinstance(p, Mapping) else {k: 1 for k in p}
        if a.get("sort") is not None:
            cmd["sort"] = _sort(a["sort"])
        if name != "find_one_and_delete":
            cmd["upsert"] = bool(a.get("upsert", False))
        for src, dst in (("array_filters", "arrayFilters"), ("hint", "hint"), ("collation", "collation"),
                         ("let", "let"), ("maxTimeMS", "maxTimeMS"), ("max_time_ms", "maxTimeMS")):
            if a.get(src) is not None:
                cmd[dst] = _hint(a[src])
        return [extras(cmd)]
    if name == "find_one":
        f = a.get("filter")
        if f is not None and not isinstance(f, Mapping):
            f = {"_id": f}
        cmd = {"find": cn, "filter": f or {}}
        rest = a.get("args") or ()
        if rest and "projection" not in a:
            a["projection"] = rest[0]
        _find_options(cmd, a)
        cmd["limit"] = 1
        cmd["singleBatch"] = True
        return [cmd]
    if name == "count_documents":
        pipeline: list = [{"$match": a.get("filter") or {}}]
        if "skip" in a:
            pipeline.append({"$skip": a["skip"]})
        if "limit" in a:
            pipeline.append({"$limit": a["limit"]})
        pipeline.append({"$group": {"_id": 1, "n": {"$sum": 1}}})
        cmd = {"aggregate": cn, "pipeline": pipeline, "cursor": {}}
        for k in ("hint", "collation", "maxTimeMS"):
            if a.get(k) is not None:
                cmd[k] = _hint(a[k])
        return [extras(cmd)]
    if name == "estimated_document_count":
        return [extras({"count": cn})]
    if name in ("distinct", "cursor_distinct"):
        if name == "cursor_distinct":
            return [{"distinct": cn, "key": op.args[0] if op.args else op.kwargs.get("key"),
                     "query": coll._filter}]
        cmd = {"distinct": cn, "key": a.get("key"), "query": a.get("filter") or {}}
        for k in ("hint", "collation", "maxTimeMS"):
            if a.get(k) is not None:
                cmd[k] = _hint(a[k])
        return [extras(cmd)]
    if name == "aggregate":
        cmd = {"aggregate": cn, "pipeline": list(a.get("pipeline") or []), "cursor": {}}
        for k, v in (a.items()):
            if k in ("pipeline", "session", "comment", "args"):
                continue
            key = {"allow_disk_use": "allowDiskUse", "max_time_ms": "maxTimeMS", "batch_size": "batchSize"}.get(k, k)
            if key == "batchSize":
                cmd["cursor"] = {"batchSize": v}
            elif v is not None:
                cmd[key] = _hint(v)
        return [extras(cmd)]
    if name in ("create_index", "create_indexes"):
        return [extras({"createIndexes": cn, "indexes": _index_models(name, a)})]
    if name == "drop_index":
        v = a.get("index_or_name")
        return [extras({"dropIndexes": cn, "index": v if isinstance(v, str) else _hint(v)})]
    if name == "drop_indexes":
        return [extras({"dropIndexes": cn, "index": "*"})]
    if name in ("list_indexes", "index_information"):
        return [extras({"listIndexes": cn, "cursor": {}})]
    if name == "drop":
        return [extras({"drop": cn})]
    if name == "rename":
        return [{"renameCollection": "%s.%s" % (coll.database.name, cn),
                 "to": "%s.%s" % (coll.database.name, a.get("new_name"))}]
    if name == "options":
        return [{"listCollections": 1, "filter": {"name": cn}, "cursor": {}}]
    return []


def _index_models(name: str, a: dict) -> list[dict]:
    """The ``indexes`` array pymongo sends: each IndexModel's document (key, name, options)."""
    from pymongo.operations import IndexModel
    try:
        if name == "create_index":
            opts = {k: v for k, v in a.items() if k not in ("keys", "session", "comment", "args")}
            return [dict(IndexModel(a.get("keys"), **opts).document)]
        return [dict(m.document) for m in a.get("indexes") or [] if isinstance(m, IndexModel)]
    except Exception:  # an invalid spec fails in the operation itself with the proper error
        return []


def _find_options(cmd: dict, a: dict) -> None:
    p = a.get("projection")
    if p:
        cmd["projection"] = p if isinstance(p, Mapping) else {k: 1 for k in p}
    for src, dst in (("sort", "sort"), ("skip", "skip"), ("hint", "hint"), ("max_time_ms", "maxTimeMS"),
                     ("collation", "collation"), ("comment", "comment"), ("allow_disk_use", "allowDiskUse"),
                     ("let", "let")):
        v = a.get(src)
        if v:
            cmd[dst] = _sort(v) if src == "sort" else _hint(v)


def _bulk_commands(cn: str, requests: list, ordered: bool, a: dict) -> list[dict]:
    """pymongo's batching of bulk_write: ordered -> one command per run of one kind, unordered -> one per kind."""
    from pymongo.operations import DeleteMany, DeleteOne, InsertOne, ReplaceOne, UpdateMany, UpdateOne

    def kind_and_item(r: Any) -> tuple[str, Any]:
        if isinstance(r, InsertOne):
            return "insert", r._doc
        if isinstance(r, (UpdateOne, UpdateMany, ReplaceOne)):
            u = {"q": r._filter, "u": r._doc, "multi": isinstance(r, UpdateMany), "upsert": bool(r._upsert)}
            for attr, dst in (("_collation", "collation"), ("_array_filters", "arrayFilters"), ("_hint", "hint"),
                              ("_sort", "sort")):
                if getattr(r, attr, None) is not None:
                    u[dst] = getattr(r, attr)
            return "update", u
        if isinstance(r, (DeleteOne, DeleteMany)):
            d = {"q": r._filter, "limit": 1 if isinstance(r, DeleteOne) else 0}
            if getattr(r, "_collation", None) is not None:
                d["collation"] = r._collation
            if getattr(r, "_hint", None) is not None:
                d["hint"] = r._hint
            return "delete", d
        return "", None

    items = [kind_and_item(r) for r in requests]
    runs: list[tuple[str, list]] = []
    if ordered:
        for k, it in items:
            if runs and runs[-1][0] == k and len(runs[-1][1]) < MAX_WRITE_BATCH:
                runs[-1][1].append(it)
            else:
                runs.append((k, [it]))
    else:
        for kind in ("insert", "update", "delete"):
            lst = [it for k, it in items if k == kind]
            for i in range(0, len(lst), MAX_WRITE_BATCH):
                runs.append((kind, lst[i:i + MAX_WRITE_BATCH]))
    field = {"insert": "documents", "update": "updates", "delete": "deletes"}
    out = []
    for kind, lst in runs:
        if not kind:
            continue
        cmd = {kind: cn, "ordered": ordered, field[kind]: lst}
        if a.get("let") is not None:
            cmd["let"] = a["let"]
        if a.get("comment") is not None:
            cmd["comment"] = a["comment"]
        if a.get("bypass_document_validation"):
            cmd["bypassDocumentValidation"] = True
        out.append(cmd)
    return out


def _cursor_command(cur: Any) -> dict:
    cmd: dict = {"find": cur.collection.name, "filter": cur._filter}
    if cur._projection:
        p = cur._projection
        cmd["projection"] = p if isinstance(p, Mapping) else {k: 1 for k in p}
    if cur._sort:
        cmd["sort"] = dict(cur._sort)
    if cur._skip:
        cmd["skip"] = cur._skip
    lim = cur._limit
    if lim:
        cmd["limit"] = abs(lim)
        if lim < 0:
            cmd["singleBatch"] = True
    if cur._batch_size:
        cmd["batchSize"] = cur._batch_size + 1 if cur._batch_size == lim else cur._batch_size
    if cur._hint is not None:
        cmd["hint"] = _hint(cur._hint)
    if cur._max_time_ms:
        cmd["maxTimeMS"] = cur._max_time_ms
    if getattr(cur, "_lab_collation", None):
        cmd["collation"] = dict(cur._lab_collation)
    flags = getattr(cur, "_query_flags", 0)
    if flags & 2:  # pymongo appends the query flags last (message._gen_find_command)
        cmd["tailable"] = True
    if flags & 32:
        cmd["awaitData"] = True
    return cmd


def _tail_get_more_command(cur: Any) -> dict:
    """The getMore pymongo sends for a tailable cursor (``maxTimeMS`` from ``max_await_time_ms`` on an awaitData
    one)."""
    cmd: dict = {"getMore": Int64(cur.cursor_id or 0), "collection": cur.collection.name}
    if cur._batch_size:
        cmd["batchSize"] = cur._batch_size
    if cur._query_flags & 32 and cur._max_await_ms is not None:
        cmd["maxTimeMS"] = cur._max_await_ms
    return cmd


def _db_commands(op: boundary.Op) -> list[dict]:
    db = op.target
    name = op.name
    if name == "command":
        a = _bind("database", "command", op.args, op.kwargs)
        c = a.get("command")
        if isinstance(c, str):
            cmd = {c: a.get("value", 1)}
            for k, v in a.items():
                if k not in ("command", "value", "check", "allowable_errors", "read_preference", "codec_options",
                             "session", "args"):
                    cmd[k] = v
            return [cmd]
        return [dict(c or {})]
    if name == "drop_collection":
        a = _bind("database", "drop_collection", op.args, op.kwargs)
        n = a.get("name_or_collection")
        return [{"drop": getattr(n, "name", n)}]
    if name == "create_collection":
        a = _bind("database", "create_collection", op.args, op.kwargs)
        cmd = {"create": a.get("name")}
        for k, v in a.items():
            if k not in ("name", "codec_options", "read_preference", "write_concern", "read_concern", "session",
                         "check_exists"):
                cmd[k] = v
        return [cmd]
    if name in ("list_collections", "list_collection_names"):
        cmd = {"listCollections": 1, "cursor": {}}
        if name == "list_collection_names":
            cmd["nameOnly"] = True
            cmd["authorizedCollections"] = True
        f = (op.args[0] if op.args else op.kwargs.get("filter"))
        if f:
            cmd["filter"] = f
        return [cmd]
    if name == "aggregate":
        return [{"aggregate": 1, "pipeline": list(op.args[0] if op.args else op.kwargs.get("pipeline") or []),
                 "cursor": {}}]
    return []


def _session_of(op: boundary.Op) -> Any:
    s = op.kwargs.get("session")
    if s is None:
        s = op.target.__dict__.get("_session")
    return s


def describe(op: boundary.Op) -> tuple[str, list[dict]]:
    """(database name, [command documents]) for the operation, as pymongo would send them."""
    from mongomock.collection import Collection
    from mongomock.database import Database
    t = op.target
    if op.name == "find" and "_filter" in t.__dict__:
        return t.collection.database.name, [_cursor_command(t)]
    if op.name == "tail_get_more":
        return t.collection.database.name, [_tail_get_more_command(t)]
    if op.name == "explain" and "_filter" in t.__dict__:  # Cursor.explain(): pymongo sends the explain command
        verbosity = op.args[0] if op.args else op.kwargs.get("verbosity", "allPlansExecution")
        return t.collection.database.name, [{"explain": _cursor_command(t), "verbosity": verbosity}]
    if isinstance(t, Collection):
        return t.database.name, _coll_commands(op)
    if isinstance(t, Database):
        return t.name, _db_commands(op)
    if op.name in ("commit_transaction", "abort_transaction"):
        txn = getattr(t, "_txn", None)
        if txn is None or not getattr(txn, "_lab_started_sent", False):
            return "admin", []  # nothing was sent in the transaction: the driver sends no commit/abort
        cmd = {"commitTransaction" if op.name == "commit_transaction" else "abortTransaction": 1,
               "lsid": t._id, "txnNumber": Int64(txn.number), "autocommit": False}
        return "admin", [cmd]
    if op.name == "drop_database":
        n = op.args[0] if op.args else op.kwargs.get("name_or_database")
        return getattr(n, "name", n), [{"dropDatabase": 1}]
    if op.name in ("list_database_names", "list_databases"):
        cmd = {"listDatabases": 1}
        if op.name == "list_database_names":
            cmd["nameOnly"] = True
        return "admin", [cmd]
    return "admin", []


# ---------------------------------------------------------------------------------------------- replies
def _cursor_reply(ns: str, docs: list, first: bool, cursor_id: int = 0) -> dict:
    return {"cursor": {"firstBatch" if first else "nextBatch": docs, "id": Int64(cursor_id), "ns": ns}, "ok": 1.0}


def _batches(docs: list, batch_size: int, limit: int, first: int) -> list[int]:
    """End offsets of the batches a server returns for ``docs`` (first batch ``first`` documents)."""
    n = len(docs)
    ends = [min(first, n)]
    while ends[-1] < n:
        start = ends[-1]
        if batch_size:
            size = batch_size
        else:
            size, total, i = 0, 0, start
            while i < n:
                total += len(bson.encode(docs[i]))
                if total > MAX_BATCH_BYTES and size:
                    break
                size += 1
                i += 1
        ends.append(min(start + size, n))
    return ends


def _reply_for(op: boundary.Op, cmd: dict, result: Any, index: int) -> dict:
    name = next(iter(cmd))
    t = op.target
    if name == "find":
        if op.name == "find_one":
            docs = [] if result is None else [result]
            ns = "%s.%s" % (t.database.name, t.name)
            return _cursor_reply(ns, docs, True)
        cur = t
        docs = cur._results or []
        ns = "%s.%s" % (cur.collection.database.name, cur.collection.name)
        if cur._query_flags & 2:  # a tailable cursor: one first batch, the cursor open while its tail is
            return _cursor_reply(ns, docs, True, cur.cursor_id or 0)
        lim = abs(cur._limit or 0)
        first = cur._batch_size or FIRST_BATCH
        if lim:
            first = min(first, lim)
        if cur._limit and cur._limit < 0:
            first = len(docs)
        ends = _batches(docs, cur._batch_size, lim, first)
        cid = 0
        if len(ends) > 1:
            cid = random.randint(1, (1 << 62))
            cur._lab_batches = ends
            cur._lab_more = ends[0]
            cur._lab_cursor_id = cid
            cur._lab_ns = ns
        return _cursor_reply(ns, docs[:ends[0]], True, cid)
    if name == "getMore" and op.name == "tail_get_more":
        ns = "%s.%s" % (t.collection.database.name, t.collection.name)
        return _cursor_reply(ns, list(result[0]), False, t.cursor_id or 0)
    if name == "insert":
        return {"n": len(cmd["documents"]), "ok": 1.0}
    if name in ("update", "delete"):
        if op.name == "bulk_write":
            return {"n": len(cmd["updates" if name == "update" else "deletes"]), "ok": 1.0}
        n = getattr(result, "deleted_count", None) if name == "delete" else getattr(result, "matched_count", None)
        if name == "update":
            out: dict = {"n": (n or 0) + (1 if getattr(result, "upserted_id", None) is not None else 0),
                         "nModified": getattr(result, "modified_count", 0) or 0}
            if getattr(result, "upserted_id", None) is not None:
                out["upserted"] = [{"index": 0, "_id": result.upserted_id}]
            out["ok"] = 1.0
            return out
        return {"n": n or 0, "ok": 1.0}
    if name == "findAndModify":
        leo: dict = {"n": 0 if result is None else 1}
        if "update" in cmd:
            leo["updatedExisting"] = result is not None
        return {"lastErrorObject": leo, "value": result, "ok": 1.0}
    if name == "aggregate" and op.name == "count_documents":
        return _cursor_reply("%s.%s" % (t.database.name, t.name), [{"_id": 1, "n": result}] if result else [], True)
    if name == "aggregate":
        docs = getattr(result, "_lab_docs", None)
        ns = "%s.%s" % (t.database.name, t.name) if "database" in t.__dict__ else "%s.$cmd.aggregate" % t.name
        if docs is None:
            return _cursor_reply(ns, [], True)
        return _cursor_reply(ns, list(docs[:result._ends[0]]), True, result._cid)
    if name == "count":
        return {"n": result, "ok": 1.0}
    if name == "distinct":
        return {"values": result, "ok": 1.0}
    if name == "explain" and isinstance(result, Mapping):
        return dict(result)
    if op.name == "command" and isinstance(result, Mapping):
        return dict(result)
    return {"ok": 1.0}


def _failure_doc(err: BaseException) -> dict:
    if isinstance(err, BulkWriteError):
        d = dict(err.details or {})
        return {"ok": 1.0, "n": d.get("nInserted", 0), "writeErrors": d.get("writeErrors", [])}
    if isinstance(err, OperationFailure):
        det = dict(err.details or {})
        if "index" in det:  # a write error: the server answers ok: 1 with writeErrors
            return {"n": 0, "writeErrors": [det], "ok": 1.0}
        det.setdefault("ok", 0.0)
        det.setdefault("errmsg", str(err))
        det.setdefault("code", err.code)
        return det
    return {"ok": 0.0, "errmsg": str(err), "code": 1, "codeName": "InternalError"}


# ---------------------------------------------------------------------------------------------- publishing
def begin(op: boundary.Op) -> None:
    """Start recording ``op``: describe it and publish CommandStartedEvent for its first command."""
    op.start_recording()
    if op.name == "find" and "_filter" not in op.target.__dict__:
        return  # Collection.find only builds a cursor; the cursor's first batch is the command
    try:
        db_name, cmds = describe(op)
    except Exception:  # describing must never break the operation itself
        db_name, cmds = "", []
    op.db_name = db_name
    op.command = {"_cmds": cmds, "_t": []}  # type: ignore[assignment]
    session = _session_of(op)
    for c in cmds:
        if op.name not in ("commit_transaction", "abort_transaction"):
            _session_fields(op, c, session)
        c["$db"] = db_name
    if cmds and listeners_of(op.client):
        rid = next(_REQUEST_IDS)
        op.command["_t"].append((rid, boundary._clock()))
        _publish_started(op.client, cmds[0], db_name, rid, rid)


def _publish_started(client: Any, cmd: dict, db_name: str, rid: int, opid: int) -> None:
    ev = pm.CommandStartedEvent(cmd, db_name, rid, ADDRESS, opid)
    for lst in listeners_of(client):
        try:
            lst.started(ev)
        except Exception:  # a listener's error never breaks the operation (pymongo logs it)
            pass


def _publish(client: Any, kind: str, payload: dict, cmd_name: str, db_name: str, rid: int, opid: int,
             t0: float) -> None:
    dur = datetime.timedelta(seconds=max(boundary._clock() - t0, 0.0))
    cls = pm.CommandSucceededEvent if kind == "ok" else pm.CommandFailedEvent
    ev = cls(dur, payload, cmd_name, rid, ADDRESS, opid, database_name=db_name)
    for lst in listeners_of(client):
        try:
            (lst.succeeded if kind == "ok" else lst.failed)(ev)
        except Exception:
            pass


def _finish(op: boundary.Op, result: Any, err: BaseException | None) -> None:
    from . import profiler
    info = op.command
    if not isinstance(info, dict):
        return
    cmds = info["_cmds"]
    has_listeners = bool(listeners_of(op.client))
    opid = None
    for i, cmd in enumerate(cmds):
        last = i == len(cmds) - 1
        if has_listeners:
            if i < len(info["_t"]):
                rid, t0 = info["_t"][i]
            else:
                rid, t0 = next(_REQUEST_IDS), op.t0
                _publish_started(op.client, cmd, op.db_name, rid, opid or rid)
            opid = opid or rid
        if err is not None and last:
            payload = _failure_doc(err)
            if has_listeners:
                if payload.get("ok") == 1.0:
                    _publish(op.client, "ok", payload, next(iter(cmd)), op.db_name, rid, opid, t0)
                else:
                    _publish(op.client, "fail", payload, next(iter(cmd)), op.db_name, rid, opid, t0)
            profiler.record(op, cmd, None, err)
            continue
        try:
            reply = _reply_for(op, cmd, result, i)
        except Exception:
            reply = {"ok": 1.0}
        if has_listeners:
            _publish(op.client, "ok", reply, next(iter(cmd)), op.db_name, rid, opid, t0)
        profiler.record(op, cmd, reply, None)


def succeed(op: boundary.Op, result: Any) -> None:
    _finish(op, result, None)


def fail(op: boundary.Op, err: BaseException) -> None:
    _finish(op, None, err)


def get_more(cur: Any) -> None:
    """Publish the ``getMore`` a driver sends when iteration reaches the end of the current batch."""
    from . import profiler
    ends = cur._lab_batches
    start = cur._lab_more
    k = ends.index(start)
    end = ends[k + 1]
    cur._lab_more = end if k + 2 < len(ends) else -1
    coll = cur.collection
    cmd: dict = {"getMore": Int64(cur._lab_cursor_id), "collection": coll.name}
    lim = abs(cur._limit or 0)
    if lim:
        cmd["batchSize"] = min(lim - start, cur._batch_size) if cur._batch_size else lim - start
    elif cur._batch_size:
        cmd["batchSize"] = cur._batch_size
    client = boundary.client_of(cur)
    op = boundary.Op("getMore", cur, (), {}, client)
    op.start_recording()
    op.db_name = coll.database.name
    _session_fields(op, cmd, cur.__dict__.get("_session") or type(cur).__dict__.get("_session"))
    cmd["$db"] = op.db_name
    docs = cur._results[start:end]
    reply = _cursor_reply(cur._lab_ns, docs, False, 0 if cur._lab_more == -1 else cur._lab_cursor_id)
    if listeners_of(client):
        rid = next(_REQUEST_IDS)
        _publish_started(client, cmd, op.db_name, rid, rid)
        _publish(client, "ok", reply, "getMore", op.db_name, rid, rid, op.t0)
    profiler.record(op, cmd, reply, None)


def kill_cursor(cur: Any) -> None:
    """Publish the ``killCursors`` a driver sends when a cursor with batches left on the server is closed."""
    cid = Int64(cur._lab_cursor_id)
    cur._lab_more = -1
    coll = cur.collection
    client = boundary.client_of(cur)
    cmd: dict = {"killCursors": coll.name, "cursors": [cid]}
    op = boundary.Op("killCursors", cur, (), {}, client)
    op.start_recording()
    op.db_name = coll.database.name
    _session_fields(op, cmd, cur.__dict__.get("_session"))
    cmd["$db"] = op.db_name
    reply = {"cursorsKilled": [cid], "cursorsNotFound": [], "cursorsAlive": [], "cursorsUnknown": [], "ok": 1.0}
    if listeners_of(client):
        rid = next(_REQUEST_IDS)
        _publish_started(client, cmd, op.db_name, rid, rid)
        _publish(client, "ok", reply, "killCursors", op.db_name, rid, rid, op.t0)


class MonitoredCommandCursor(CursorProtocol):
    """An aggregate's result cursor that publishes ``getMore`` as the driver would (first batch 101)."""

    def __init__(self, docs: list, coll: Any, session: Any = None, batch_size: int = 0) -> None:
        self._lab_docs = docs
        self._it = iter(docs)
        self._i = 0
        self._coll = coll
        self._session = session
        self._batch_size = batch_size
        self._ends = _batches(docs, batch_size, 0, batch_size or FIRST_BATCH)
        self._cid = random.randint(1, 1 << 62) if len(self._ends) > 1 else 0
        self._k = 0

    @property
    def address(self):
        return ADDRESS

    @property
    def alive(self) -> bool:
        return self._i < len(self._lab_docs)

    def close(self) -> None:
        self._it = iter(())

    def batch_size(self, n: int) -> "MonitoredCommandCursor":
        return self

    def __iter__(self):
        return self

    def __next__(self) -> Any:
        if self._k + 1 < len(self._ends) and self._i == self._ends[self._k]:
            self._get_more()
        d = next(self._it)
        self._i += 1
        return d

    next = __next__

    def _get_more(self) -> None:
        from . import profiler
        start, end = self._ends[self._k], self._ends[self._k + 1]
        self._k += 1
        coll = self._coll
        client = boundary.client_of(coll)
        dbn = coll.database.name if "database" in coll.__dict__ else coll.name
        cn = coll.name if "database" in coll.__dict__ else "$cmd.aggregate"
        cmd: dict = {"getMore": Int64(self._cid), "collection": cn}
        if self._batch_size:
            cmd["batchSize"] = self._batch_size
        op = boundary.Op("getMore", coll, (), {}, client)
        op.start_recording()
        _session_fields(op, cmd, self._session)
        cmd["$db"] = dbn
        last = self._k + 1 >= len(self._ends)
        reply = _cursor_reply("%s.%s" % (dbn, cn), self._lab_docs[start:end], False, 0 if last else self._cid)
        if listeners_of(client):
            rid = next(_REQUEST_IDS)
            _publish_started(client, cmd, dbn, rid, rid)
            _publish(client, "ok", reply, "getMore", dbn, rid, rid, op.t0)
        profiler.record(op, cmd, reply, None)


# the operation boundary (a lower layer) calls these through the engine's registry (hooks.py)
from ..base import hooks

hooks.register("monitor_begin", begin)
hooks.register("monitor_succeed", succeed)
hooks.register("monitor_fail", fail)

__all__ = ["init_client", "describe", "begin", "succeed", "fail", "get_more", "kill_cursor", "MonitoredCommandCursor",
           "listeners_of", "PyMongoError"]
