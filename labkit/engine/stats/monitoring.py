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
from ..base import docutil
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


# ---------------------------------------------------------------------------------------------- sessions
# pymongo's operations.py _WRITES_WITH_CLUSTER_TIME: a causally consistent session sends afterClusterTime on them
_WRITES_WITH_CLUSTER_TIME = frozenset({"insert", "update", "findAndModify", "delete", "bulkWrite", "create",
                                       "createIndexes", "drop", "dropDatabase", "dropIndexes"})
# the document sequences of OP_MSG: pymongo's CommandStartedEvent lists them after $db (message._op_msg)
_SEQUENCES = {"insert": ("documents",), "update": ("updates",), "delete": ("deletes",),
              "bulkWrite": ("ops", "nsInfo")}


def _net(read_concern: Any = None, write_concern: Any = None, collation: Any = None,
         retryable: bool = False) -> dict:
    """How pymongo finishes a command it built: the read concern, collation and write concern its network
    layer adds (command_runner.command), and whether it is a retryable write (a txnNumber)."""
    return {"rc": read_concern, "wc": write_concern, "collation": collation, "retryable": retryable}


def _update_read_concern(cmd: dict, session: Any) -> None:
    """pymongo's ``ClientSession._update_read_concern``: afterClusterTime (causal consistency) or the snapshot."""
    opts = session.options
    if opts.causal_consistency and session.operation_time is not None:
        cmd.setdefault("readConcern", {})["afterClusterTime"] = session.operation_time
    if opts.snapshot:
        rc = cmd.setdefault("readConcern", {})
        rc["level"] = "snapshot"
        if getattr(session, "_snapshot_time", None) is not None:
            rc["atClusterTime"] = session._snapshot_time


def _apply_session(op: boundary.Op, cmd: dict, session: Any, retryable: bool) -> None:
    """pymongo's ``ClientSession._apply_to``: lsid, then a retryable write's txnNumber, or a transaction's
    startTransaction / readConcern / txnNumber / autocommit. An operation without an explicit session uses the
    client's implicit one (pymongo takes one from its pool)."""
    name = next(iter(cmd))
    client = op.client
    if session is None:
        cd = client.__dict__
        cmd["lsid"] = cd.get("_lab_implicit_lsid") or {"id": bson.Binary(b"\0" * 16, 4)}
        if retryable:
            cd["_lab_implicit_txn"] = n = cd.get("_lab_implicit_txn", 0) + 1
            cmd["txnNumber"] = Int64(n)
        return
    in_txn = session.in_transaction
    opts = session.options
    if opts.snapshot or (opts.causal_consistency and not in_txn and name in _WRITES_WITH_CLUSTER_TIME):
        _update_read_concern(cmd, session)
    cmd["lsid"] = session._id
    if retryable and not in_txn:
        session._txn_number += 1
        cmd["txnNumber"] = Int64(session._txn_number)
        return
    txn = getattr(session, "_txn", None)
    if txn is not None and in_txn:
        if not getattr(txn, "_lab_started_sent", False):
            cmd["startTransaction"] = True
            rc = (txn.options or {}).get("read_concern")
            if rc is not None and rc.document:
                cmd["readConcern"] = rc.document
            _update_read_concern(cmd, session)
            txn._lab_started_sent = True
        cmd["txnNumber"] = Int64(txn.number)
        cmd["autocommit"] = False


def _finalize(op: boundary.Op, cmd: dict, net: dict, session: Any, db_name: str) -> dict:
    """The command document of the event, as pymongo completes it: session fields (none for an unacknowledged
    write), then readConcern, collation and writeConcern (network layer), ``$db``, then the document sequences."""
    name = next(iter(cmd))
    seqs = [(f, cmd.pop(f)) for f in _SEQUENCES.get(name, ()) if f in cmd]
    wc = net.get("wc")
    in_txn = session is not None and session.in_transaction
    if wc is None or wc.acknowledged:
        _apply_session(op, cmd, session, bool(net.get("retryable")))
    rc = net.get("rc")
    if rc is not None and not in_txn:
        if rc.level:
            cmd["readConcern"] = rc.document
        if session is not None:
            _update_read_concern(cmd, session)
    if net.get("collation") is not None:
        cmd["collation"] = net["collation"]
    if wc is not None and (not in_txn or name in ("commitTransaction", "abortTransaction")) and wc.document:
        cmd["writeConcern"] = wc.document
    cmd["$db"] = db_name
    for f, v in seqs:
        cmd[f] = v
    return cmd


# ---------------------------------------------------------------------------------------------- commands
def _wc(coll: Any, session: Any) -> Any:
    """The write concern pymongo sends with a write: the collection's (or database's), none in a transaction."""
    if session is not None and session.in_transaction:
        return None
    return coll.write_concern


def _coll_commands(op: boundary.Op) -> list[tuple[dict, dict]]:
    """(command, finishing) pairs for a collection method, built in pymongo's own order
    (pymongo/synchronous/collection.py, bulk.py, aggregation.py, message.py)."""
    coll = op.target
    name = op.name
    a = _bind("collection", name if name != "cursor_distinct" else "distinct", op.args, op.kwargs)
    cn = coll.name
    session = a.get("session")
    rc = coll._read_concern
    wc = _wc(coll, session)

    if name == "insert_one":
        cmd = {"insert": cn, "ordered": True, "documents": [a.get("document")]}
        if a.get("comment") is not None:
            cmd["comment"] = a["comment"]
        if a.get("bypass_document_validation") is not None:
            cmd["bypassDocumentValidation"] = a["bypass_document_validation"]
        return [(cmd, _net(write_concern=wc, retryable=True))]
    if name == "insert_many":
        return _bulk_commands(cn, [], a.get("ordered", True), a, wc, documents=list(a.get("documents") or []))
    if name in ("update_one", "update_many", "replace_one"):
        u = {"q": a.get("filter"), "u": a.get("update", a.get("replacement")), "multi": name == "update_many",
             "upsert": bool(a.get("upsert", False))}
        if a.get("collation") is not None:
            u["collation"] = a["collation"]
        if a.get("array_filters") is not None:
            u["arrayFilters"] = a["array_filters"]
        if a.get("hint") is not None:
            u["hint"] = _hint(a["hint"])
        if a.get("sort") is not None:
            u["sort"] = _sort(a["sort"])
        cmd = {"update": cn, "ordered": True, "updates": [u]}
        for src, dst in (("let", "let"), ("comment", "comment"), ("bypass_document_validation",
                                                                  "bypassDocumentValidation")):
            if a.get(src) is not None:
                cmd[dst] = a[src]
        return [(cmd, _net(write_concern=wc, retryable=name != "update_many"))]
    if name in ("delete_one", "delete_many"):
        d = {"q": a.get("filter"), "limit": 1 if name == "delete_one" else 0}
        for src in ("collation", "hint"):
            if a.get(src) is not None:
                d[src] = _hint(a[src])
        cmd = {"delete": cn, "ordered": True, "deletes": [d]}
        for src in ("let", "comment"):
            if a.get(src) is not None:
                cmd[src] = a[src]
        return [(cmd, _net(write_concern=wc, retryable=name == "delete_one"))]
    if name == "bulk_write":
        return _bulk_commands(cn, list(a.get("requests") or []), a.get("ordered", True), a, wc)
    if name in ("find_one_and_delete", "find_one_and_update", "find_one_and_replace"):
        from pymongo import ReturnDocument
        kw = {k: v for k, v in a.items() if k not in (
            "filter", "projection", "sort", "upsert", "return_document", "array_filters", "hint", "session",
            "let", "comment", "update", "replacement")}
        cmd = {"findAndModify": cn, "query": a.get("filter"),
               "new": bool(a.get("return_document", ReturnDocument.BEFORE))}
        if a.get("let") is not None:
            cmd["let"] = a["let"]
        if name == "find_one_and_delete":
            cmd["remove"] = True
        else:
            cmd["update"] = a.get("update", a.get("replacement"))
        if a.get("comment") is not None:
            cmd["comment"] = a["comment"]
        collation = kw.pop("collation", None)
        cmd.update(kw)
        if a.get("projection") is not None:
            p = a["projection"]
            cmd["fields"] = p if isinstance(p, Mapping) else {k: 1 for k in p}
        if a.get("sort") is not None:
            cmd["sort"] = _sort(a["sort"])
        if name != "find_one_and_delete":
            cmd["upsert"] = bool(a.get("upsert", False))
        if a.get("array_filters") is not None:
            cmd["arrayFilters"] = list(a["array_filters"])
        if a.get("hint") is not None:
            cmd["hint"] = _hint(a["hint"])
        return [(cmd, _net(write_concern=wc, collation=collation, retryable=True))]
    if name == "find_one":
        f = a.get("filter")
        if f is not None and not isinstance(f, Mapping):
            f = {"_id": f}
        rest = a.get("args") or ()
        if rest and "projection" not in a:
            a["projection"] = rest[0]
        spec = dict(a)
        spec["limit"] = -1
        return [(_find_command(coll, f or {}, spec), _net(read_concern=rc))]
    if name == "count_documents":
        pipeline: list = [{"$match": a.get("filter")}]
        if "skip" in a:
            pipeline.append({"$skip": a["skip"]})
        if "limit" in a:
            pipeline.append({"$limit": a["limit"]})
        pipeline.append({"$group": {"_id": 1, "n": {"$sum": 1}}})
        cmd = {"aggregate": cn, "pipeline": pipeline, "cursor": {}}
        collation = None
        for k, v in a.items():
            if k in ("filter", "skip", "limit", "session"):
                continue
            if k == "collation":
                collation = v
                continue
            cmd[k] = _hint(v) if k == "hint" else v
        return [(cmd, _net(read_concern=rc, collation=collation))]
    if name == "estimated_document_count":
        return [(_with_options({"count": cn}, a), _net(read_concern=rc))]
    if name in ("distinct", "cursor_distinct"):
        if name == "cursor_distinct":
            return [({"distinct": cn, "key": op.args[0] if op.args else op.kwargs.get("key"),
                      "query": coll._filter}, _net(read_concern=rc))]
        cmd = {"distinct": cn, "key": a.get("key")}
        collation = None
        if a.get("filter") is not None:
            cmd["query"] = a["filter"]
        for k, v in a.items():
            if k in ("key", "filter", "session", "comment", "hint"):
                continue
            if k == "collation":
                collation = v
                continue
            cmd[k] = v
        if a.get("comment") is not None:
            cmd["comment"] = a["comment"]
        if a.get("hint") is not None:
            cmd["hint"] = _hint(a["hint"])
        return [(cmd, _net(read_concern=rc, collation=collation))]
    if name == "aggregate":
        pipeline = list(a.get("pipeline") or [])
        options = {}
        batch = None
        collation = None
        for k, v in op.kwargs.items():  # pymongo sends the keyword arguments in their order
            if k in ("pipeline", "session", "let", "comment"):
                continue
            key = {"allow_disk_use": "allowDiskUse", "max_time_ms": "maxTimeMS"}.get(k, k)
            if key == "batchSize":
                batch = v
            elif key == "collation":
                collation = v
            elif key != "maxAwaitTimeMS":
                options[key] = v
        if a.get("comment") is not None:
            options["comment"] = a["comment"]
        if a.get("let") is not None:
            options["let"] = a["let"]
        writes = bool(pipeline) and isinstance(pipeline[-1], Mapping) and \
            next(iter(pipeline[-1]), None) in ("$out", "$merge")
        options.setdefault("cursor", {})
        if batch is not None and not writes:
            options["cursor"]["batchSize"] = batch
        cmd = {"aggregate": cn, "pipeline": pipeline, **options}
        return [(cmd, _net(read_concern=None if "readConcern" in cmd else rc,
                           write_concern=wc if writes and "writeConcern" not in cmd else None, collation=collation))]
    if name in ("create_index", "create_indexes"):
        cmd = {"createIndexes": cn, "indexes": _index_models(name, a)}
        if name == "create_indexes":
            for k, v in a.items():
                if k not in ("indexes", "session", "comment"):
                    cmd[k] = v
        elif a.get("maxTimeMS") is not None:
            cmd["maxTimeMS"] = a["maxTimeMS"]
        return [(_with_comment(cmd, a), _net(write_concern=wc))]
    if name in ("drop_index", "drop_indexes"):
        v = "*" if name == "drop_indexes" else a.get("index_or_name")
        cmd = {"dropIndexes": cn, "index": v if isinstance(v, str) else _index_name(v)}
        return [(_with_options(cmd, a, ("index_or_name",)), _net(write_concern=wc))]
    if name in ("list_indexes", "index_information"):
        return [(_with_comment({"listIndexes": cn, "cursor": {}}, a), _net())]
    if name == "drop":
        return [(_with_comment({"drop": cn}, a), _net(write_concern=wc))]
    if name == "rename":
        cmd = {"renameCollection": "%s.%s" % (coll.database.name, cn),
               "to": "%s.%s" % (coll.database.name, a.get("new_name"))}
        return [(_with_options(cmd, a, ("new_name",)), _net(write_concern=wc))]
    if name == "options":
        return [({"listCollections": 1, "cursor": {}, "filter": {"name": cn}}, _net())]
    return []


def _with_comment(cmd: dict, a: dict) -> dict:
    """``cmd`` with the call's ``comment`` appended when it was given."""
    if a.get("comment") is not None:
        cmd["comment"] = a["comment"]
    return cmd


def _with_options(cmd: dict, a: dict, skip: tuple = ()) -> dict:
    """``cmd`` with the call's other arguments as given (all but ``skip``, ``session`` and ``comment``), then
    its comment."""
    for k, v in a.items():
        if k not in skip and k != "session" and k != "comment":
            cmd[k] = v
    return _with_comment(cmd, a)


def _index_name(keys: Any) -> str:
    from pymongo.helpers_shared import _gen_index_name, _index_list
    return _gen_index_name(_index_list(keys))


def _index_models(name: str, a: dict) -> list[dict]:
    """The ``indexes`` array pymongo sends: each IndexModel's document (key, name, options)."""
    from pymongo.operations import IndexModel
    try:
        if name == "create_index":
            opts = {k: v for k, v in a.items() if k not in ("keys", "session", "comment", "args", "maxTimeMS")}
            return [dict(IndexModel(a.get("keys"), **opts).document)]
        return [dict(m.document) for m in a.get("indexes") or [] if isinstance(m, IndexModel)]
    except Exception:  # an invalid spec fails in the operation itself with the proper error
        return []


def _find_command(coll: Any, filter_: Any, o: dict, cursor: Any = None) -> dict:
    """pymongo's find command for a query with options ``o`` (find()'s names): the ``$query`` spec of
    ``Cursor._query_spec`` turned into the command by ``message._gen_find_command``."""
    from pymongo.message import _gen_find_command
    from pymongo.read_concern import ReadConcern
    operators: dict = {}
    if o.get("sort"):
        operators["$orderby"] = _sort(o["sort"])
    if o.get("hint"):
        operators["$hint"] = _hint(o["hint"])
    if o.get("let"):
        operators["let"] = o["let"]
    if o.get("comment"):
        operators["$comment"] = o["comment"]
    if o.get("max_time_ms") is not None:
        operators["$maxTimeMS"] = o["max_time_ms"]
    for src, dst in (("max", "$max"), ("min", "$min")):
        if o.get(src):
            operators[dst] = o[src]
    for src, dst in (("return_key", "$returnKey"), ("show_record_id", "$showDiskLoc")):
        if o.get(src) is not None:  # pymongo: ``is not None`` (an explicit False is sent)
            operators[dst] = o[src]
    spec = filter_
    if operators:
        spec = {"$query": dict(filter_), **operators}
    elif "query" in filter_ and (len(filter_) == 1 or next(iter(filter_)) == "query"):
        spec = {"$query": filter_}
    p = o.get("projection")
    if p is not None and not isinstance(p, Mapping):
        p = {k: 1 for k in p}
    session = o.get("session")
    rc = coll._read_concern if coll._read_concern is not None else ReadConcern()
    return _gen_find_command(coll.name, spec, p, o.get("skip") or 0, o.get("limit") or 0, o.get("batch_size") or 0,
                             o.get("query_flags") or None, rc, o.get("collation"), session, o.get("allow_disk_use"))


class _BulkOps:
    """Receives pymongo's write models (``model._add_to_bulk``) as pymongo's ``_Bulk`` does
    (pymongo/bulk_shared.py add_insert / add_update / add_replace / add_delete)."""

    def __init__(self) -> None:
        self.ops: list[tuple[str, dict]] = []
        self.retryable = True

    def add_insert(self, document: Any) -> None:
        from bson.raw_bson import RawBSONDocument
        from pymongo.common import validate_is_document_type
        validate_is_document_type("document", document)
        if not (isinstance(document, RawBSONDocument) or "_id" in document):
            document["_id"] = docutil.new_object_id()  # generated client side, as pymongo does
        self.ops.append(("insert", document))

    def add_update(self, selector: Any, update: Any, multi: bool, upsert: Any = None, collation: Any = None,
                   array_filters: Any = None, hint: Any = None, sort: Any = None) -> None:
        from pymongo.common import validate_ok_for_update
        validate_ok_for_update(update)
        cmd: dict = {"q": selector, "u": update, "multi": multi}
        for key, value in (("upsert", upsert), ("collation", collation), ("arrayFilters", array_filters),
                           ("hint", hint), ("sort", sort)):
            if value is not None:
                cmd[key] = value
        if multi:
            self.retryable = False
        self.ops.append(("update", cmd))

    def add_replace(self, selector: Any, replacement: Any, upsert: Any = None, collation: Any = None,
                    hint: Any = None, sort: Any = None) -> None:
        from pymongo.common import validate_ok_for_replace
        validate_ok_for_replace(replacement)
        cmd: dict = {"q": selector, "u": replacement}
        for key, value in (("upsert", upsert), ("collation", collation), ("hint", hint), ("sort", sort)):
            if value is not None:
                cmd[key] = value
        self.ops.append(("update", cmd))

    def add_delete(self, selector: Any, limit: int, collation: Any = None, hint: Any = None) -> None:
        cmd: dict = {"q": selector, "limit": limit}
        if collation is not None:
            cmd["collation"] = collation
        if hint is not None:
            cmd["hint"] = hint
        if limit == 0:
            self.retryable = False
        self.ops.append(("delete", cmd))


def _bulk_commands(cn: str, requests: list, ordered: bool, a: dict, wc: Any,
                   documents: list | None = None) -> list[tuple[dict, dict]]:
    """pymongo's ``_Bulk``: ordered -> one command per run of one kind, unordered -> inserts, updates, deletes;
    each command ``{kind, ordered, comment, writeConcern, bypassDocumentValidation, let}`` (bulk.py
    _execute_command). Retryable unless it has a multi write. ``documents``: insert_many's documents."""
    bulk = _BulkOps()
    if documents is not None:
        for d in documents:
            bulk.add_insert(d)
    for r in requests:
        r._add_to_bulk(bulk)
    items = bulk.ops
    runs: list[tuple[str, list, list]] = []  # (kind, documents, request indexes)
    if ordered:
        for i, (k, it) in enumerate(items):
            if runs and runs[-1][0] == k and len(runs[-1][1]) < MAX_WRITE_BATCH:
                runs[-1][1].append(it)
                runs[-1][2].append(i)
            else:
                runs.append((k, [it], [i]))
    else:
        for kind in ("insert", "update", "delete"):
            idx = [i for i, (k, _) in enumerate(items) if k == kind]
            for j in range(0, len(idx), MAX_WRITE_BATCH):
                part = idx[j:j + MAX_WRITE_BATCH]
                runs.append((kind, [items[i][1] for i in part], part))
    field = {"insert": "documents", "update": "updates", "delete": "deletes"}
    unack = wc is not None and not wc.acknowledged
    out = []
    for kind, lst, idx in runs:
        cmd: dict = {kind: cn, "ordered": ordered}
        if a.get("comment"):
            cmd["comment"] = a["comment"]
        if wc is not None and wc.document:
            cmd["writeConcern"] = wc.document
        if a.get("bypass_document_validation") is not None:
            cmd["bypassDocumentValidation"] = a["bypass_document_validation"]
        if a.get("let") is not None and kind in ("update", "delete"):
            cmd["let"] = a["let"]
        cmd[field[kind]] = lst
        net = _net(retryable=bulk.retryable and not unack, write_concern=wc if unack else None)
        net["idx"] = idx
        out.append((cmd, net))
    return out


def _cursor_command(cur: Any) -> dict:
    """The find command of an engine cursor, as pymongo's Cursor sends it."""
    o = {"sort": cur._sort, "hint": cur._hint, "let": getattr(cur, "_lab_let_doc", None),
         "comment": cur._comment, "max_time_ms": cur._max_time_ms, "projection": cur._projection or None,
         "skip": cur._skip, "limit": cur._limit, "batch_size": cur._batch_size,
         "collation": getattr(cur, "_lab_collation_doc", None),
         "allow_disk_use": getattr(cur, "_allow_disk_use", None), "session": getattr(cur, "_session", None),
         "min": getattr(cur, "_lab_min", None), "max": getattr(cur, "_lab_max", None)}
    o["return_key"], o["show_record_id"] = cur.__dict__.get("_lab_flags", (None, None))
    o["query_flags"] = getattr(cur, "_query_flags", 0)  # tailable / awaitData, appended last by pymongo
    return _find_command(cur.collection, cur._filter, o)


def _tail_get_more_command(cur: Any) -> dict:
    """The getMore pymongo sends for a tailable cursor (``maxTimeMS`` from ``max_await_time_ms`` on an awaitData
    one)."""
    cmd: dict = {"getMore": Int64(cur.cursor_id or 0), "collection": cur.collection.name}
    if cur._batch_size:
        cmd["batchSize"] = cur._batch_size
    if cur._query_flags & 32 and cur._max_await_ms is not None:
        cmd["maxTimeMS"] = cur._max_await_ms
    return cmd


def _db_commands(op: boundary.Op) -> list[tuple[dict, dict]]:
    db = op.target
    name = op.name
    a = _bind("database", name, op.args, op.kwargs) if name != "command" else {}
    session = op.kwargs.get("session")
    if name == "command":
        a = _bind("database", "command", op.args, op.kwargs)
        c = a.get("command")
        if isinstance(c, str):
            cmd = {c: a.get("value", 1)}
            for k, v in a.items():
                if k not in ("command", "value", "check", "allowable_errors", "read_preference", "codec_options",
                             "session", "args"):
                    cmd[k] = v
        else:
            cmd = dict(c or {})
            for k, v in a.items():
                if k not in ("command", "value", "check", "allowable_errors", "read_preference", "codec_options",
                             "session", "args"):
                    cmd[k] = v
        return [(cmd, _net())]
    if name == "drop_collection":
        n = a.get("name_or_collection")
        return [(_with_comment({"drop": getattr(n, "name", n)}, a), _net(write_concern=_wc(db, session)))]
    if name == "create_collection":
        opts = {k: v for k, v in a.items() if k not in ("name", "codec_options", "read_preference", "write_concern",
                                                        "read_concern", "session", "check_exists", "comment",
                                                        "collation")}
        cmd = {"create": a.get("name")}
        if a.get("comment") is not None:
            cmd["comment"] = a["comment"]
        cmd.update(opts)
        out = []
        if a.get("check_exists", True) and not (session is not None and session.in_transaction):
            out.append(({"listCollections": 1, "cursor": {}, "nameOnly": True, "filter": {"name": a.get("name")}},
                        _net()))
            st = db._store._collections.get(a.get("name"))
            if st is not None and st.is_created:  # pymongo raises CollectionInvalid: no create is sent
                return out
        out.append((cmd, _net(write_concern=_wc(db, session), collation=a.get("collation"))))
        return out
    if name in ("list_collections", "list_collection_names"):
        cmd = {"listCollections": 1, "cursor": {}}
        f = a.get("filter")
        if name == "list_collection_names":  # pymongo: nameOnly, then the filter
            cmd["nameOnly"] = True
            if f is not None:
                cmd["filter"] = f
            return [(_with_comment(cmd, a), _net())]
        if f is not None:
            cmd["filter"] = f
        return [(_with_options(cmd, a, ("filter",)), _net())]
    if name == "aggregate":
        cmd = {"aggregate": 1, "pipeline": list(op.args[0] if op.args else op.kwargs.get("pipeline") or []),
               "cursor": {}}
        return [(cmd, _net(read_concern=db._read_concern))]
    return []


class ClientBulkOps:
    """Collects pymongo's write models the way pymongo's ``_ClientBulk`` does (``model._add_to_client_bulk``)."""

    def __init__(self) -> None:
        self.ops: list[tuple[str, dict]] = []
        self.namespaces: list[str] = []
        self._ns_index: dict[str, int] = {}

    def _add(self, kind: str, namespace: str, cmd: dict) -> None:
        # pymongo numbers the namespaces in the order they first appear (its nsInfo) and writes that index
        # into the operation (``{"insert": 0, ...}``), which a write error's ``op`` shows
        cmd[next(iter(cmd))] = self._ns_index.setdefault(namespace, len(self._ns_index))
        self.ops.append((kind, cmd))
        self.namespaces.append(namespace)

    def add_insert(self, namespace: str, document: Any) -> None:
        from bson.raw_bson import RawBSONDocument
        from pymongo import common
        common.validate_is_document_type("document", document)
        if not (isinstance(document, RawBSONDocument) or "_id" in document):
            document["_id"] = docutil.new_object_id()  # generated client side, as pymongo does
        self._add("insert", namespace, {"insert": -1, "document": document})

    def add_update(self, namespace: str, selector: Mapping, update: Any, multi: bool, upsert: bool | None = None,
                   collation: Mapping | None = None, array_filters: list | None = None, hint: Any = None,
                   sort: Mapping | None = None) -> None:
        from pymongo.common import validate_ok_for_update
        validate_ok_for_update(update)
        cmd = {"update": -1, "filter": selector, "updateMods": update, "multi": multi}
        for key, value in (("upsert", upsert), ("arrayFilters", array_filters), ("hint", hint),
                           ("collation", collation), ("sort", sort)):
            if value is not None:
                cmd[key] = value
        self._add("update", namespace, cmd)

    def add_replace(self, namespace: str, selector: Mapping, replacement: Mapping, upsert: bool | None = None,
                    collation: Mapping | None = None, hint: Any = None, sort: Mapping | None = None) -> None:
        from pymongo.common import validate_ok_for_replace
        validate_ok_for_replace(replacement)
        cmd = {"update": -1, "filter": selector, "updateMods": replacement, "multi": False}
        for key, value in (("upsert", upsert), ("hint", hint), ("collation", collation), ("sort", sort)):
            if value is not None:
                cmd[key] = value
        self._add("replace", namespace, cmd)

    def add_delete(self, namespace: str, selector: Mapping, multi: bool, collation: Mapping | None = None,
                   hint: Any = None) -> None:
        cmd = {"delete": -1, "filter": selector, "multi": multi}
        for key, value in (("hint", hint), ("collation", collation)):
            if value is not None:
                cmd[key] = value
        self._add("delete", namespace, cmd)


def _client_bulk_command(op: boundary.Op) -> list[tuple[dict, dict]]:
    """pymongo's ``_ClientBulk`` command: ``{bulkWrite: 1, errorsOnly, ordered, bypassDocumentValidation,
    comment, let}`` on admin, then the ``ops`` and ``nsInfo`` sequences (pymongo/synchronous/client_bulk.py)."""
    a = op.kwargs
    models = op.args[0] if op.args else a.get("models")
    collected = ClientBulkOps()
    for m in models or []:
        m._add_to_client_bulk(collected)
    namespaces: list[str] = []
    ops = []
    retryable = True
    for (kind, doc), ns in zip(collected.ops, collected.namespaces):
        if ns not in namespaces:
            namespaces.append(ns)
        doc = dict(doc)
        doc[next(iter(doc))] = namespaces.index(ns)
        if doc.get("multi"):
            retryable = False
        ops.append(doc)
    cmd: dict = {"bulkWrite": 1, "errorsOnly": not a.get("verbose_results", False),
                 "ordered": a.get("ordered", True)}
    if a.get("bypass_document_validation") is not None:
        cmd["bypassDocumentValidation"] = a["bypass_document_validation"]
    if a.get("comment"):
        cmd["comment"] = a["comment"]
    if a.get("let"):
        cmd["let"] = a["let"]
    wc = a.get("write_concern")
    session = a.get("session")
    if wc is None and not (session is not None and session.in_transaction):
        wc = op.client.write_concern
    cmd["ops"] = ops
    cmd["nsInfo"] = [{"ns": ns} for ns in namespaces]
    return [(cmd, _net(write_concern=wc, retryable=retryable))]


def _session_of(op: boundary.Op) -> Any:
    if op.name in ("commit_transaction", "abort_transaction"):
        return op.target  # the session itself
    s = op.kwargs.get("session")
    if s is None:
        s = op.target.__dict__.get("_session")
    return s


def describe(op: boundary.Op) -> tuple[str, list[tuple[dict, dict]]]:
    """(database name, [(command document, finishing)]) for the operation, as pymongo builds them (finished by
    ``_finalize``: session fields, read/write concerns, ``$db``, document sequences)."""
    from mongomock.collection import Collection
    from mongomock.database import Database
    t = op.target
    if op.name == "find" and "_filter" in t.__dict__:
        return t.collection.database.name, [(_cursor_command(t), _net(read_concern=t.collection._read_concern))]
    if op.name == "tail_get_more":
        return t.collection.database.name, [(_tail_get_more_command(t), _net())]
    if op.name == "explain" and "_filter" in t.__dict__:  # Cursor.explain(): pymongo sends the explain command
        cmd = {"explain": _cursor_command(t)}  # pymongo's Cursor.explain() has no verbosity (the server's default)
        verbosity = op.args[0] if op.args else op.kwargs.get("verbosity")
        if verbosity is not None:
            cmd["verbosity"] = verbosity
        return t.collection.database.name, [(cmd, _net())]
    if op.name == "rename" and isinstance(t, Collection):
        return "admin", _coll_commands(op)
    if isinstance(t, Collection):
        return t.database.name, _coll_commands(op)
    if isinstance(t, Database):
        return t.name, _db_commands(op)
    if op.name in ("commit_transaction", "abort_transaction"):
        txn = getattr(t, "_txn", None)
        if txn is None or not getattr(txn, "_lab_started_sent", False):
            return "admin", []  # nothing was sent in the transaction: the driver sends no commit/abort
        cmd: dict = {"commitTransaction" if op.name == "commit_transaction" else "abortTransaction": 1}
        mct = (txn.options or {}).get("max_commit_time_ms")
        if op.name == "commit_transaction" and mct:
            cmd["maxTimeMS"] = mct
        return "admin", [(cmd, _net(write_concern=(txn.options or {}).get("write_concern")))]
    if op.name == "drop_database":
        n = op.args[0] if op.args else op.kwargs.get("name_or_database")
        return getattr(n, "name", n), [({"dropDatabase": 1}, _net(write_concern=op.client.write_concern))]
    if op.name in ("list_database_names", "list_databases"):
        cmd = {"listDatabases": 1}
        if op.name == "list_database_names":
            cmd["nameOnly"] = True
        return "admin", [(cmd, _net())]
    if op.name == "bulk_write":
        return "admin", _client_bulk_command(op)
    return "admin", []


# ---------------------------------------------------------------------------------------------- replies
def _cursor_reply(ns: str, docs: list, first: bool, cursor_id: int = 0, at: Any = None) -> dict:
    cur = {"firstBatch" if first else "nextBatch": docs, "id": Int64(cursor_id), "ns": ns}
    if at is not None:  # a snapshot read's time (read concern "snapshot")
        cur["atClusterTime"] = at
    return {"cursor": cur, "ok": 1.0}


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


def _before(op: boundary.Op) -> dict:
    """What a reply needs from before the operation ran: index counts, whether the collection existed."""
    if op.name not in ("create_index", "create_indexes", "drop_index", "drop_indexes", "drop", "create_collection",
                       "drop_collection"):
        return {}
    t = op.target
    if op.name in ("create_collection", "drop_collection"):
        n = _bind("database", op.name, op.args, op.kwargs).get("name" if op.name == "create_collection"
                                                                else "name_or_collection")
        st = t._store._collections.get(getattr(n, "name", n))
    else:
        st = t._store
    created = bool(st is not None and st.is_created)
    return {"created": created, "ix": len(st.ix) if created else 0}


def _ok(out: dict, cmd: dict) -> dict:
    """``ok: 1`` last, after a ``writeConcernError`` the write concern cannot meet (session/sessions.py)."""
    wc = cmd.get("writeConcern")
    if wc is not None and (name := next(iter(cmd))) not in ("find", "aggregate", "count", "distinct"):
        from ..session.sessions import write_concern_error
        wce = write_concern_error(wc)
        if wce is not None and name != "aggregate":
            out["writeConcernError"] = wce
    out["ok"] = 1.0
    return out


def _write_error(det: dict, index: int) -> dict:
    """A write error as the server writes it: index, code, errmsg, and errInfo / keyPattern / keyValue."""
    out = {"index": index, "code": det.get("code"), "errmsg": det.get("errmsg")}
    for k in ("errInfo", "keyPattern", "keyValue"):
        if k in det:
            out[k] = det[k]
    return out


def _run_reply(cmd: dict, net: dict, facts: dict) -> tuple[dict, bool]:
    """The reply to one command of a bulk write (insert / update / delete), from the per-request outcomes
    (catalog/bulk.py): (reply, whether it had a write error)."""
    name = next(iter(cmd))
    outcomes = facts.get("bulk") or {}
    n = n_mod = 0
    upserted, errors = [], []
    for j, i in enumerate(net.get("idx") or []):
        o = outcomes.get(i)
        if o is None:
            continue
        if isinstance(o, dict):
            errors.append(_write_error(o, j))
            continue
        n += o[0]
        n_mod += o[1]
        if o[2] is not None:
            upserted.append({"index": j, "_id": o[2]})
    out: dict = {"n": n}
    if name == "update":
        out["nModified"] = n_mod
        if upserted:
            out["upserted"] = upserted
    if errors:
        out["writeErrors"] = errors
    return _ok(out, cmd), bool(errors)


def _reply_for(op: boundary.Op, cmd: dict, result: Any, index: int) -> dict:
    name = next(iter(cmd))
    t = op.target
    wc = cmd.get("writeConcern")
    if isinstance(wc, Mapping) and wc.get("w") == 0:
        return {"ok": 1}  # pymongo's reply for an unacknowledged write (it gets none from the server)
    if name == "find":
        if op.name == "find_one":
            docs = [] if result is None else [result]
            ns = "%s.%s" % (t.database.name, t.name)
            return _cursor_reply(ns, docs, True, at=op.facts.get("atClusterTime"))
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
        return _cursor_reply(ns, docs[:ends[0]], True, cid, op.facts.get("atClusterTime"))
    if name == "getMore" and op.name == "tail_get_more":
        ns = "%s.%s" % (t.collection.database.name, t.collection.name)
        return _cursor_reply(ns, list(result[0]), False, t.cursor_id or 0)
    nets = op.command.get("_nets") or []
    net = nets[index] if index < len(nets) else {}
    if name in ("insert", "update", "delete") and (op.name in ("bulk_write", "insert_many")):
        if op.name == "insert_many":
            return _ok({"n": len(cmd["documents"])}, cmd)
        return _run_reply(cmd, net, op.facts)[0]
    if name == "insert":
        return _ok({"n": len(cmd["documents"])}, cmd)
    if name in ("update", "delete"):
        if name == "update":
            upserted_id = getattr(result, "upserted_id", None)
            out: dict = {"n": (getattr(result, "matched_count", 0) or 0) + (1 if upserted_id is not None else 0),
                         "nModified": getattr(result, "modified_count", 0) or 0}
            if upserted_id is not None:
                out["upserted"] = [{"index": 0, "_id": upserted_id}]
            return _ok(out, cmd)
        return _ok({"n": getattr(result, "deleted_count", 0) or 0}, cmd)
    if name == "findAndModify":
        leo = dict(op.facts.get("fam") or {"n": 0 if result is None else 1})
        return _ok({"lastErrorObject": leo, "value": result}, cmd)
    at = op.facts.get("atClusterTime")
    if name == "aggregate" and op.name == "count_documents":
        return _cursor_reply("%s.%s" % (t.database.name, t.name), [{"_id": 1, "n": result}] if result else [], True,
                             at=at)
    if name == "aggregate":
        docs = getattr(result, "_lab_docs", None)
        ns = "%s.%s" % (t.database.name, t.name) if "database" in t.__dict__ else "%s.$cmd.aggregate" % t.name
        if docs is None:
            return _cursor_reply(ns, [], True, at=at)
        return _cursor_reply(ns, list(docs[:result._ends[0]]), True, result._cid, at)
    if name == "count":
        return {"n": result, "ok": 1.0}
    if name == "distinct":
        out = {"values": result}
        if at is not None:
            out["atClusterTime"] = at
        out["ok"] = 1.0
        return out
    pre = op.command.get("_pre") or {}
    if name == "createIndexes":
        after = len(t._store.ix)
        out = {"numIndexesBefore": pre.get("ix", 0) if pre.get("created") else 1, "numIndexesAfter": after,
               "createdCollectionAutomatically": not pre.get("created")}
        if out["numIndexesBefore"] == after:
            out["note"] = "all indexes already exist"
        return _ok(out, cmd)
    if name == "dropIndexes":
        return _ok({"nIndexesWas": pre.get("ix", 0)}, cmd)
    if name == "listIndexes":
        ns = "%s.%s" % (t.database.name, t.name)
        return _cursor_reply(ns, [ix.spec.info() for ix in t._store.ix.values()], True)
    if name == "drop":
        if not pre.get("created"):
            return _ok({}, cmd)
        return _ok({"nIndexesWas": pre["ix"], "ns": "%s.%s" % (op.db_name, cmd["drop"])}, cmd)
    if name == "listCollections" and op.name == "create_collection":
        docs = [{"name": cmd["filter"]["name"], "type": "collection"}] if pre.get("created") else []
        return _cursor_reply("%s.$cmd.listCollections" % op.db_name, docs, True)
    if name == "listCollections":
        if op.name == "list_collection_names":
            docs = [{"name": n, "type": _collection_type(t, n)} for n in result or []]
        else:
            docs = list(getattr(result, "_docs", []) or [])
        return _cursor_reply("%s.$cmd.listCollections" % op.db_name, docs, True)
    if name == "bulkWrite":
        return _client_bulk_reply(op, cmd, result)
    if name in ("create", "renameCollection", "dropDatabase", "commitTransaction", "abortTransaction"):
        return _ok({}, cmd)
    if name == "explain" and isinstance(result, Mapping):
        return dict(result)
    if op.name == "command" and isinstance(result, Mapping):
        return dict(result)
    return {"ok": 1.0}


def _collection_type(db: Any, name: str) -> str:
    st = db._store._collections.get(name)
    opts = (st.options or {}) if st is not None else {}
    if "viewOn" in opts:
        return "view"
    if getattr(st, "ts", None) is not None:
        return "timeseries"
    return "collection"


def _client_bulk_reply(op: boundary.Op, cmd: dict, result: Any) -> dict:
    """The 8.0 ``bulkWrite`` reply: a cursor of per-operation results (only the errors with errorsOnly), then
    the counts (bulk_write_gen / BulkWriteCommandReply)."""
    details = getattr(result, "bulk_api_result", None) or {}
    out = {"cursor": {"id": Int64(0), "firstBatch": [], "ns": "admin.$cmd.bulkWrite"},
           "nErrors": 0, "nInserted": getattr(result, "inserted_count", 0) or 0,
           "nMatched": getattr(result, "matched_count", 0) or 0,
           "nModified": getattr(result, "modified_count", 0) or 0,
           "nUpserted": getattr(result, "upserted_count", 0) or 0,
           "nDeleted": getattr(result, "deleted_count", 0) or 0}
    del details
    return _ok(out, cmd)


def _failure_doc(err: BaseException, cmd: dict | None = None) -> dict:
    """The server's reply to a command that failed: a write error is ``ok: 1`` with ``writeErrors``; anything
    else ``{ok: 0, errmsg, code, codeName}`` with errInfo / keyPattern / keyValue / errorLabels
    (commands/dispatch.py error_reply, the served engine's)."""
    name = next(iter(cmd)) if cmd else ""
    from pymongo.errors import ClientBulkWriteException
    if isinstance(err, ClientBulkWriteException) and name == "bulkWrite" and err.error is None:
        partial = err.partial_result
        errors = [{"ok": 0.0, "idx": e.get("idx"), "code": e.get("code"), "errmsg": e.get("errmsg"),
                   **{k: e[k] for k in ("errInfo", "keyPattern", "keyValue") if k in e}}
                  for e in (err.write_errors or [])]
        out = {"cursor": {"id": Int64(0), "firstBatch": errors, "ns": "admin.$cmd.bulkWrite"},
               "nErrors": len(errors)}
        for k, attr in (("nInserted", "inserted_count"), ("nMatched", "matched_count"),
                        ("nModified", "modified_count"), ("nUpserted", "upserted_count"),
                        ("nDeleted", "deleted_count")):
            out[k] = (getattr(partial, attr, 0) or 0) if partial is not None and partial.acknowledged else 0
        return _ok(out, cmd or {})
    if isinstance(err, BulkWriteError):
        d = dict(err.details or {})
        out: dict = {"n": d.get("nInserted", 0)}
        out["writeErrors"] = [_write_error(e, e.get("index", 0)) for e in d.get("writeErrors", [])]
        return _ok(out, cmd or {})
    if isinstance(err, OperationFailure):
        det = dict(err.details or {})
        if "index" in det and name in ("insert", "update", "delete"):  # a write error: ok: 1 with writeErrors
            out = {"n": 0}
            if name == "update":
                out["nModified"] = 0
            out["writeErrors"] = [_write_error({**det, "errmsg": det.get("errmsg") or str(err)}, 0)]
            return _ok(out, cmd or {})
        code = err.code if err.code is not None else 2
        msg = str(det.get("errmsg") or err).split(", full error: ", 1)[0]
        out = {"ok": 0.0, "errmsg": msg, "code": code, "codeName": det.get("codeName") or _code_name(code)}
        for k in ("errInfo", "keyPattern", "keyValue", "errorLabels"):
            if k in det:
                out[k] = det[k]
        return out
    return {"ok": 0.0, "errmsg": str(err), "code": 1, "codeName": "InternalError"}


def _code_name(code: int) -> str:
    from pymongo.errors import OperationFailure as _OF  # noqa: F401 - pymongo has no table; the engine's
    names = {2: "BadValue", 11000: "DuplicateKey", 112: "WriteConflict", 251: "NoSuchTransaction",
             263: "OperationNotSupportedInTransaction", 50: "MaxTimeMSExpired", 26: "NamespaceNotFound",
             48: "NamespaceExists", 72: "InvalidOptions", 115: "CommandNotSupported", 121: "DocumentValidationFailure"}
    return names.get(code, "Location%d" % code)


# ---------------------------------------------------------------------------------------------- publishing
def _client_checks(op: boundary.Op) -> None:
    """pymongo's own argument checks, made before it builds a command: a call they refuse publishes nothing
    (pymongo/common.py validate_*; collection.py)."""
    from collections import abc
    from pymongo import common
    name = op.name
    if name not in _CHECKED:
        return
    a = _bind("collection", name, op.args, op.kwargs)
    if name == "insert_one":
        common.validate_is_document_type("document", a.get("document"))
    elif name == "insert_many":
        docs = a.get("documents")
        if not isinstance(docs, abc.Iterable) or isinstance(docs, abc.Mapping) or not docs:
            raise TypeError("documents must be a non-empty list")
        for d in docs:
            common.validate_is_document_type("document", d)
    elif name in ("update_one", "update_many", "find_one_and_update"):
        common.validate_is_mapping("filter", a.get("filter"))
        common.validate_ok_for_update(a.get("update"))
    elif name in ("replace_one", "find_one_and_replace"):
        common.validate_is_mapping("filter", a.get("filter"))
        common.validate_ok_for_replace(a.get("replacement"))
    elif name in ("delete_one", "delete_many", "find_one_and_delete"):
        common.validate_is_mapping("filter", a.get("filter"))
    elif name == "bulk_write":
        common.validate_list("requests", a.get("requests"))


_CHECKED = frozenset({"insert_one", "insert_many", "update_one", "update_many", "replace_one", "delete_one",
                      "delete_many", "find_one_and_update", "find_one_and_replace", "find_one_and_delete",
                      "bulk_write"})


def begin(op: boundary.Op) -> None:
    """Start recording ``op``: describe it and publish CommandStartedEvent for its first command."""
    op.start_recording()
    if op.name == "find" and "_filter" not in op.target.__dict__:
        return  # Collection.find only builds a cursor; the cursor's first batch is the command
    from mongomock.collection import Collection
    if isinstance(op.target, Collection):
        _client_checks(op)  # a refused argument: the operation fails before any command, as in pymongo
    try:
        db_name, described = describe(op)
        session = _session_of(op)
        cmds = [_finalize(op, c, net, session, db_name) for c, net in described]
        nets = [net for _, net in described]
        pre = _before(op)
    except Exception:  # describing must never break the operation itself
        db_name, cmds, nets, pre = "", [], [], {}
    op.db_name = db_name
    op.command = {"_cmds": cmds, "_t": [], "_nets": nets, "_pre": pre}  # type: ignore[assignment]
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
    from pymongo.errors import CollectionInvalid
    from . import profiler
    if isinstance(err, CollectionInvalid):
        err = None  # pymongo raises it itself, after the listCollections that found the collection
    info = op.command
    if not isinstance(info, dict):
        return
    cmds = info["_cmds"]
    has_listeners = bool(listeners_of(op.client))
    opid = None
    bulk = op.name == "bulk_write" and "bulk" in op.facts
    for i, cmd in enumerate(cmds):
        last = i == len(cmds) - 1
        if bulk:  # one reply per run; an ordered bulk write stops after the run with a write error
            nets = info.get("_nets") or []
            reply, failed = _run_reply(cmd, nets[i] if i < len(nets) else {}, op.facts)
            if i == 0 or not (cmd.get("ordered", True) and info.get("_stopped")):
                if has_listeners:
                    rid, t0 = _request(op, info, i, cmd, opid)
                    opid = opid or rid
                    _publish(op.client, "ok", reply, next(iter(cmd)), op.db_name, rid, opid, t0)
                profiler.record(op, cmd, reply, None)
                info["_stopped"] = failed
            continue
        if has_listeners:
            if i < len(info["_t"]):
                rid, t0 = info["_t"][i]
            else:
                rid, t0 = next(_REQUEST_IDS), op.t0
                _publish_started(op.client, cmd, op.db_name, rid, opid or rid)
            opid = opid or rid
        if err is not None and last:
            payload = _failure_doc(err, cmd)
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


def _request(op: boundary.Op, info: dict, i: int, cmd: dict, opid: Any) -> tuple[int, float]:
    """The request id and start time of command ``i`` of the operation (its started event published now if it
    was not yet)."""
    if i < len(info["_t"]):
        return info["_t"][i]
    rid = next(_REQUEST_IDS)
    _publish_started(op.client, cmd, op.db_name, rid, opid or rid)
    return rid, op.t0


def succeed(op: boundary.Op, result: Any) -> None:
    _finish(op, result, None)


def fail(op: boundary.Op, err: BaseException) -> None:
    _finish(op, None, err)


def get_more(cur: Any) -> None:
    """Publish the ``getMore`` a driver sends when iteration reaches the end of the current batch."""
    from pymongo.message import _gen_get_more_command
    from . import profiler
    ends = cur._lab_batches
    start = cur._lab_more
    k = ends.index(start)
    end = ends[k + 1]
    cur._lab_more = end if k + 2 < len(ends) else -1
    coll = cur.collection
    lim = abs(cur._limit or 0)
    if lim:
        size = min(lim - start, cur._batch_size) if cur._batch_size else lim - start
    else:
        size = cur._batch_size
    cmd = _gen_get_more_command(Int64(cur._lab_cursor_id), coll.name, size, None, cur._comment)
    client = boundary.client_of(cur)
    op = boundary.Op("getMore", cur, (), {}, client)
    op.start_recording()
    op.db_name = coll.database.name
    _finalize(op, cmd, _net(), cur.__dict__.get("_session") or type(cur).__dict__.get("_session"), op.db_name)
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
    _finalize(op, cmd, _net(), cur.__dict__.get("_session"), op.db_name)
    reply = {"cursorsKilled": [cid], "cursorsNotFound": [], "cursorsAlive": [], "cursorsUnknown": [], "ok": 1.0}
    if listeners_of(client):
        rid = next(_REQUEST_IDS)
        _publish_started(client, cmd, op.db_name, rid, rid)
        _publish(client, "ok", reply, "killCursors", op.db_name, rid, rid, op.t0)


class MonitoredCommandCursor(CursorProtocol):
    """An aggregate's result cursor that publishes ``getMore`` as the driver would (first batch 101)."""

    def __init__(self, docs: list, coll: Any, session: Any = None, batch_size: int = 0, comment: Any = None) -> None:
        self._comment = comment
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
        from pymongo.message import _gen_get_more_command
        cmd = _gen_get_more_command(Int64(self._cid), cn, self._batch_size, None, self._comment)
        op = boundary.Op("getMore", coll, (), {}, client)
        op.start_recording()
        _finalize(op, cmd, _net(), self._session, dbn)
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
