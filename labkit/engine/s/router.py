"""The router (``mongos``): commands as a driver sends them, routed to the shards that own the data.

Mirrors ``src/mongo/s/commands/`` (cluster_find, cluster_write, cluster_aggregate, cluster_explain, the
sharding admin commands) and ``src/mongo/s/query/`` (merging the shards' results). ``Mongos.route_command`` takes
one decoded command and returns the reply a MongoDB 8.0 ``mongos`` sends (never raises); ``Mongos.command`` is the
same in-process, raising OperationFailure as pymongo does.

Routing: a collection that is not sharded lives on its database's primary shard and every command on it is
forwarded there. On a sharded collection an insert goes to the shard owning its document's key; a query whose
filter bounds the shard key to ranges on some shards goes to those shards only (targeted), otherwise to every
shard owning a chunk (broadcast); the shards' results are merged here (merge-sorted when the query sorts). The
``config`` database is the config server's; ``admin`` sharding commands change the metadata (cluster.py).
"""
from __future__ import annotations

import datetime
import time
from collections.abc import Mapping
from typing import Any, Callable

import bson
from bson import Int64, ObjectId
from bson.raw_bson import RawBSONDocument
from pymongo.errors import OperationFailure

from ..bson import values as V
from ..base.errors import not_modelled
from ..commands import dispatch as D
from .catalog import RoutingTable
from .cluster import ILLEGAL_OPERATION, INVALID_OPTIONS, ShardedCluster
from .shard_key import SHARD_KEY_NOT_FOUND, encode_key, fail, show
from . import cluster_explain as X
from .agg_plan import AggPlan, foreign as _foreign, plan_aggregate, split_pipeline

_TXN_FIELDS = ("lsid", "txnNumber", "autocommit")
_PASS = ("lsid", "txnNumber", "autocommit", "readConcern", "writeConcern", "comment", "maxTimeMS", "let",
         "bypassDocumentValidation", "$readPreference")
LOOKUP_IN_TXN = {"$lookup": 3904800, "$graphLookup": 3904801}
#: engine commands on documents that the router does not place (its handlers route everything else that does)
_NOT_ROUTED = frozenset({"bulkWrite", "convertToCapped", "cloneCollectionAsCapped", "validate"})


def _doc(d: Any) -> dict:
    return bson.decode(d.raw) if isinstance(d, RawBSONDocument) else d


class Mongos(ShardedCluster):
    """A ShardedCluster with its router: ``route_command`` (the wire server's entry) and ``command``."""

    # -- entry points -----------------------------------------------------------------------------------
    def route_command(self, db: str, cmd: dict, ctx: D.ServerContext, codec: Any = None,
                      connection_id: int = 0) -> dict:
        """One command, as a mongos answers it: the reply document (errors as ``{ok: 0, ...}``)."""
        codec = codec or bson.CodecOptions()
        if not cmd:
            return D.CommandError("no command specified", 59).reply()
        name = next(iter(cmd))
        try:
            if name in ("hello", "isMaster", "ismaster"):
                return self.hello(ctx, connection_id, legacy=name != "hello")
            handler = _HANDLERS.get(name)
            with self.lock:
                if handler is not None:
                    return handler(self, _Op(self, db, cmd, ctx, codec))
                return self._server_command(db, cmd, ctx, codec, connection_id)
        except (OperationFailure, D.CommandError) as e:
            return D.error_reply(e)
        except Exception as e:  # noqa: BLE001 - every failure becomes an error reply, as on the server
            return D.error_reply(e)

    def command(self, db: str, cmd: dict) -> dict:
        """In-process: run ``cmd`` on database ``db`` through the router; OperationFailure on an error reply."""
        reply = self.route_command(db, {**cmd, "$db": db}, self.ctx)
        if not reply.get("ok"):
            raise OperationFailure(reply.get("errmsg", ""), reply.get("code"), reply)
        return _decoded(reply)

    def hello(self, ctx: D.ServerContext, connection_id: int, legacy: bool = False) -> dict:
        """A mongos's hello: ``msg: "isdbgrid"``, no replica set fields."""
        from .._version import __version__ as labkit_version
        out: dict[str, Any] = {("ismaster" if legacy else "isWritablePrimary"): True, "msg": "isdbgrid",
                               "topologyVersion": {"processId": ctx.process_id, "counter": Int64(0)},
                               "maxBsonObjectSize": D.MAX_BSON, "maxMessageSizeBytes": D.MAX_MESSAGE,
                               "maxWriteBatchSize": D.MAX_WRITE_BATCH,
                               "localTime": datetime.datetime.now(datetime.timezone.utc),
                               "logicalSessionTimeoutMinutes": D.SESSION_TIMEOUT_MIN,
                               "connectionId": connection_id, "maxWireVersion": D.MAX_WIRE_VERSION,
                               "minWireVersion": 0, "readOnly": False,
                               "labkit": {"engine": "embedded-served", "version": labkit_version,
                                          "shards": len(self.shard_names)},
                               "ok": 1.0}
        return out

    def _server_command(self, db: str, cmd: dict, ctx: D.ServerContext, codec: Any, connection_id: int) -> dict:
        """Commands about the server itself (ping, buildInfo, getParameter ...) answered as the engine answers
        them; replica-set commands are not a mongos's."""
        name = next(iter(cmd))
        if name.startswith("replSet") or name in ("labkitTtlPass",):
            return D.CommandError("no such cmd: %s" % name, 59).reply()
        if name not in D.HANDLERS:
            return D.not_found(name).reply()
        if name in _NOT_ROUTED:  # they read or write a collection's documents, which the router would have to place
            return D.error_reply(fail(not_modelled("the %s command through the simulated mongos" % name), 115))
        reply = D.run_command(self.shards[self.shard_names[0]], db, cmd, ctx, codec, connection_id)
        if name == "serverStatus" and reply.get("ok"):
            reply["process"] = "mongos"
            reply.pop("repl", None)
        if name == "getCmdLineOpts" and reply.get("ok"):
            reply["parsed"] = {"sharding": {"configDB": "config/labkit-config.in-process:27099"}}
        return reply

    # -- routing helpers --------------------------------------------------------------------------------
    def table(self, ns: str) -> RoutingTable | None:
        return self.tables.get(ns)

    def owners(self, ns: str) -> list[str]:
        """Shards that hold the collection: its chunks' shards, or its database's primary shard."""
        t = self.tables.get(ns)
        return t.shards() if t is not None else [self.primary_of(ns.split(".", 1)[0])]

    def targets(self, ns: str, flt: Any, collation: Any = None) -> list[str]:
        t = self.tables.get(ns)
        if t is None:
            return [self.primary_of(ns.split(".", 1)[0])]
        simple = not collation or (isinstance(collation, Mapping) and collation.get("locale") == "simple")
        ranges = t.key.ranges_for_filter(flt if isinstance(flt, Mapping) else None, simple)
        shards = t.shards_for_ranges(ranges)
        return shards or [t.chunks[0].shard]


class _Op:
    """One command on its way through the router."""

    def __init__(self, router: Mongos, db: str, cmd: dict, ctx: D.ServerContext, codec: Any) -> None:
        self.r = router
        self.db = db
        self.cmd = cmd
        self.ctx = ctx
        self.codec = codec
        self.name = next(iter(cmd))
        self.in_txn = cmd.get("autocommit") is False
        self.txn_key = None
        if self.in_txn:
            lsid = cmd.get("lsid")
            self.txn_key = (bytes(lsid["id"]) if isinstance(lsid, Mapping) and "id" in lsid else None,
                            cmd.get("txnNumber"))
            if cmd.get("startTransaction"):
                stale = [k for k in router.txns if k[0] == self.txn_key[0]]
                for k in stale:
                    router.txns.pop(k, None)
                router.txns[self.txn_key] = set()

    @property
    def coll(self) -> str:
        v = self.cmd.get(self.name)
        if not isinstance(v, str) or not v:
            raise D.CommandError("collection name has invalid type %s" % V.type_name(v), 73)
        return v

    @property
    def ns(self) -> str:
        return "%s.%s" % (self.db, self.coll)

    def passthrough(self) -> dict:
        return {k: self.cmd[k] for k in _PASS if k in self.cmd}

    def send(self, shard: str, body: dict, db: str | None = None) -> dict:
        """Run ``body`` on ``shard`` with this command's session and transaction fields."""
        extra = self.passthrough()
        if self.in_txn:
            parts = self.r.txns.setdefault(self.txn_key, set())
            if shard not in parts:
                parts.add(shard)
                extra["startTransaction"] = True
                if "readConcern" in self.cmd:
                    extra["readConcern"] = self.cmd["readConcern"]
            else:
                extra.pop("readConcern", None)
        else:
            extra.pop("txnNumber", None)
        full = {**body, **{k: v for k, v in extra.items() if k not in body}}
        return self.r.on_shard(shard, db or self.db, full, self.codec)

    def send_ok(self, shard: str, body: dict, db: str | None = None) -> dict:
        reply = self.send(shard, body, db)
        if not reply.get("ok"):
            raise OperationFailure(reply.get("errmsg", ""), reply.get("code"), reply)
        return reply

    def exhaust(self, shard: str, reply: dict, db: str | None = None) -> list:
        """Every document of a cursor reply (getMore until the shard's cursor is done)."""
        cur = reply["cursor"]
        docs = list(cur.get("firstBatch") or [])
        cid = int(cur.get("id") or 0)
        coll = cur["ns"].split(".", 1)[1]
        while cid:
            more = self.send_ok(shard, {"getMore": Int64(cid), "collection": coll}, db)
            docs.extend(more["cursor"]["nextBatch"])
            cid = int(more["cursor"]["id"])
        return docs

    def cursor_reply(self, ns: str, docs: list, first: Any, single: bool = False) -> dict:
        return D._cursor_reply(self.ctx, ns, docs, D._batch_size(first, self.name), single, D._session_key(self.cmd),
                               self.codec)


def _decoded(v: Any) -> Any:
    if isinstance(v, RawBSONDocument):
        return bson.decode(v.raw)
    if isinstance(v, dict):
        return {k: _decoded(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_decoded(x) for x in v]
    return v


def _sort_key(sort: Mapping) -> Callable[[Any], Any]:
    """A key function giving MongoDB's sort order over ``sort`` (for merging the shards' sorted results)."""
    from functools import cmp_to_key
    spec = [(k, v) for k, v in sort.items()]

    def cmp(a: Any, b: Any) -> int:
        da, db_ = _doc(a), _doc(b)
        for field, direction in spec:
            if isinstance(direction, Mapping):
                continue
            va = V.sort_values(da, field.split("."))
            vb = V.sort_values(db_, field.split("."))
            pa = (min if direction > 0 else max)(va, key=cmp_to_key(V.compare)) if va else None
            pb = (min if direction > 0 else max)(vb, key=cmp_to_key(V.compare)) if vb else None
            c = V.compare(pa, pb)
            if c:
                return c if direction > 0 else -c
        return 0
    return cmp_to_key(cmp)


def _body(op: _Op, *drop: str) -> dict:
    """The command for a shard: without the fields ``send`` adds back and without ``drop``."""
    return {k: v for k, v in op.cmd.items() if k not in _PASS and k not in ("$db", "startTransaction") + drop}


# ---------------------------------------------------------------------------------------------- reads
def _forward(r: Mongos, op: _Op, shard: str | None = None, create: bool = False) -> dict:
    """Send the command unchanged to one shard (the primary shard of an unsharded collection's database); a
    cursor is re-opened here so getMore comes back to the router."""
    if op.name in ("find", "aggregate", "count", "distinct") and isinstance(op.cmd.get(op.name), str):
        base = r.view_over_sharded(op.db, op.cmd[op.name])
        if base is not None and base != op.cmd[op.name]:
            raise fail(not_modelled("Reading a view over a sharded collection (%s)" % base,
                                    "query %s itself" % base), 115)
    shard = shard or r.primary_of(op.db, create=create)
    body = _body(op)
    reply = op.send(shard, body)
    if reply.get("ok") and isinstance(reply.get("cursor"), Mapping) and "firstBatch" in reply["cursor"]:
        ns = reply["cursor"]["ns"]
        docs = op.exhaust(shard, reply)
        first = (op.cmd.get("cursor") or {}).get("batchSize") if isinstance(op.cmd.get("cursor"), Mapping) \
            else op.cmd.get("batchSize")
        out = op.cursor_reply(ns, docs, first, bool(op.cmd.get("singleBatch")))
        for k, v in reply.items():
            if k not in out:
                out[k] = v
        return out
    return reply


def _find(r: Mongos, op: _Op) -> dict:
    if op.db == "config" or r.table(op.ns) is None:
        return _forward_config(r, op) if op.db == "config" else _forward(r, op)
    cmd = op.cmd
    targets = r.targets(op.ns, cmd.get("filter"), cmd.get("collation"))
    docs = _find_docs(r, op, targets)
    return op.cursor_reply(op.ns, docs, cmd.get("batchSize"), bool(cmd.get("singleBatch")))


def _find_docs(r: Mongos, op: _Op, targets: list[str]) -> list:
    cmd = op.cmd
    skip = int(cmd.get("skip") or 0)
    limit = int(cmd.get("limit") or 0)
    sort = cmd.get("sort") or {}
    proj = cmd.get("projection")
    body = _body(op, "skip", "limit", "batchSize", "singleBatch")
    if limit:
        body["limit"] = skip + limit
    late_projection = bool(proj) and bool(sort) and len(targets) > 1
    if late_projection:
        body.pop("projection", None)
    docs: list = []
    for s in targets:
        reply = op.send_ok(s, body)
        docs.extend(op.exhaust(s, reply))
    if sort and len(targets) > 1:
        docs.sort(key=_sort_key(sort))
    docs = docs[skip:] if skip else docs
    if limit:
        docs = docs[:limit]
    if late_projection:
        docs = _project(r, [_doc(d) for d in docs], proj)
    return docs


def _project(r: Mongos, docs: list[dict], proj: Any) -> list:
    """Apply a find projection after a merge sort (the shards sent whole documents so the router could sort)."""
    coll = r.merger["merge"]["project"]
    coll.drop()
    if not docs:
        return []
    coll.insert_many(docs)
    out = list(coll.find({}, proj))  # natural order: the merged order
    coll.drop()
    return out


def _count(r: Mongos, op: _Op) -> dict:
    if r.table(op.ns) is None:
        return _forward(r, op)
    cmd = op.cmd
    targets = r.targets(op.ns, cmd.get("query"), cmd.get("collation"))
    skip = int(cmd.get("skip") or 0)
    limit = int(cmd.get("limit") or 0)
    body = _body(op, "skip", "limit")
    n = 0
    for s in targets:
        n += int(op.send_ok(s, body)["n"])
    n = max(n - skip, 0)
    if limit:
        n = min(n, abs(limit))
    return {"n": n, "ok": 1.0}


def _distinct(r: Mongos, op: _Op) -> dict:
    if r.table(op.ns) is None:
        return _forward(r, op)
    if op.in_txn:
        raise D.CommandError("Cannot run 'distinct' on a sharded collection in a multi-document transaction. "
                             "Please see http://dochub.mongodb.org/core/transaction-distinct for a recommended "
                             "alternative.", 263)
    from ..bson import keys as K
    cmd = op.cmd
    targets = r.targets(op.ns, cmd.get("query"), cmd.get("collation"))
    body = _body(op)
    seen: dict[bytes, Any] = {}
    for s in targets:
        for v in op.send_ok(s, body)["values"]:
            seen.setdefault(K.encode(v), v)
    return {"values": [seen[k] for k in sorted(seen)], "ok": 1.0}


def _get_more(r: Mongos, op: _Op) -> dict:
    return D._get_more(D._Call(r.shards[r.shard_names[0]], op.db, op.cmd, op.ctx, None, op.codec))


def _kill_cursors(r: Mongos, op: _Op) -> dict:
    return D._kill_cursors(D._Call(r.shards[r.shard_names[0]], op.db, op.cmd, op.ctx, None, op.codec))


# ---------------------------------------------------------------------------------------------- aggregate
def _aggregate(r: Mongos, op: _Op) -> dict:
    cmd = op.cmd
    target = cmd.get("aggregate")
    pipeline = cmd.get("pipeline")
    if not isinstance(pipeline, list):
        raise D.CommandError("'pipeline' option must be specified as an array", 14)
    if any(isinstance(st, Mapping) and "$changeStream" in st for st in pipeline):
        # a mongos merges the shards' streams by cluster time; the simulated one does not (each shard's oplog
        # has its own clock), so it says so instead of holding the connection on one shard's stream
        raise fail(not_modelled("change streams through the simulated mongos (watch() works on the embedded "
                                "engine)"), 115)
    if op.db == "config":
        return _forward_config(r, op)
    if target == 1:
        return _db_aggregate(r, op, pipeline)
    ns = op.ns
    first_stage = next(iter(pipeline[0]), None) if pipeline and isinstance(pipeline[0], Mapping) else None
    if first_stage == "$collStats":
        return _coll_stats_stage(r, op, pipeline)
    sharded_foreign = [(st, c) for st, c in _foreign(pipeline) if r.table("%s.%s" % (op.db, c)) is not None]
    if op.in_txn:
        for st, _c in sharded_foreign:
            if st in LOOKUP_IN_TXN:
                raise fail("Cannot run %s with a sharded foreign collection in a transaction" % st,
                           LOOKUP_IN_TXN[st])
    for st in pipeline:
        if isinstance(st, Mapping) and ("$out" in st or "$merge" in st) and (r.table(ns) is not None or
                                                                             sharded_foreign):
            raise fail(not_modelled("$out or $merge from a sharded collection"), 115)
    table = r.table(ns)
    if table is None and not sharded_foreign:
        return _forward(r, op, create=any(isinstance(s, Mapping) and ("$out" in s or "$merge" in s)
                                          for s in pipeline))
    if cmd.get("explain"):
        return X.explain_aggregate(r, op, pipeline, "queryPlanner")
    plan = plan_aggregate(r, op, pipeline)
    docs = run_plan(r, op, plan)
    first = (cmd.get("cursor") or {}).get("batchSize") if isinstance(cmd.get("cursor"), Mapping) else None
    return op.cursor_reply(ns, docs, first)


def run_plan(r: Mongos, op: _Op, plan: AggPlan) -> list:
    body_base = _body(op, "cursor", "explain")
    docs: list = []
    for s in plan.targets:
        docs.extend(_on_shard_part(r, op, s, plan.shards_part, body_base))
    if not plan.split:
        return docs
    if plan.sort:
        docs.sort(key=_sort_key(plan.sort))
    if not plan.merger_part:
        return docs
    return merge_on_router(r, op, [_doc(d) for d in docs], plan.merger_part)


def _on_shard_part(r: Mongos, op: _Op, shard: str, stages: list, body: dict) -> list:
    """What ``shard`` returns for its part of a pipeline. A real shard runs a join of a sharded collection itself,
    reading that collection through the router; here the stages up to that join run on the shard's engine and
    the rest over its output on the router's scratch engine, which sees the whole joined collection."""
    cut = next((i for i, st in enumerate(stages)
                if any(r.table("%s.%s" % (op.db, c)) is not None for _n, c in _foreign([st]))), len(stages))
    reply = op.send_ok(shard, {**body, "pipeline": stages[:cut], "cursor": {}})
    docs = op.exhaust(shard, reply)
    if cut == len(stages):
        return docs
    return merge_on_router(r, op, [_doc(d) for d in docs], stages[cut:])


def merge_on_router(r: Mongos, op: _Op, docs: list[dict], stages: list) -> list:
    """Run ``stages`` over ``docs`` on the router's scratch engine; foreign collections are read whole from their
    shards."""
    mdb = r.merger["m_" + op.db]
    for name in mdb.list_collection_names():
        mdb.drop_collection(name)
    for c in {c for _s, c in _foreign(stages)}:
        fns = "%s.%s" % (op.db, c)
        for s in r.owners(fns):
            if not r.exists_on(s, fns):
                continue
            rows = op.exhaust(s, op.send_ok(s, {"find": c, "filter": {}}))
            if rows:
                mdb[c].insert_many([_doc(x) for x in rows])
        specs = [] if not r.owners(fns) or not r.exists_on(r.owners(fns)[0], fns) else \
            r._index_specs(r.owners(fns)[0], fns)
        for spec in specs:
            if spec.get("name") != "_id_":
                mdb[c].create_index(list(spec["key"].items()), name=spec["name"],
                                    **({"unique": True} if spec.get("unique") else {}))
    src = mdb["lk_merge_input"]
    if docs:  # wrapped, so a document without _id (projected away on the shards) gets none, and the order stays
        src.insert_many([{"_id": i, "d": d} for i, d in enumerate(docs)])
    out = list(src.aggregate([{"$sort": {"_id": 1}}, {"$replaceRoot": {"newRoot": "$d"}}, *stages]))
    for name in mdb.list_collection_names():
        mdb.drop_collection(name)
    return out


def _db_aggregate(r: Mongos, op: _Op, pipeline: list) -> dict:
    first = next(iter(pipeline[0]), None) if pipeline and isinstance(pipeline[0], Mapping) else None
    if first == "$shardedDataDistribution":
        if op.db != "admin":
            raise D.CommandError("$shardedDataDistribution must be run against the 'admin' database with "
                                 "{aggregate: 1}", 6789100)
        rows = sharded_data_distribution(r)
        rest = pipeline[1:]
        if rest:
            coll = r.merger["m_admin"]["sdd"]
            coll.drop()
            if rows:
                coll.insert_many(rows)
            rows = list(coll.aggregate([{"$project": {"_id": 0, "ns": 1, "shards": 1}}] + rest))
            coll.drop()
        return op.cursor_reply("admin.$cmd.aggregate", rows, (op.cmd.get("cursor") or {}).get("batchSize"))
    return _forward(r, op)


def sharded_data_distribution(r: Mongos) -> list[dict]:
    """``$shardedDataDistribution`` (8.0 manual): per sharded collection, per shard owning data, the owned
    documents and bytes (no orphans here)."""
    rows = []
    for ns, t in sorted(r.tables.items()):
        db, _, coll = ns.partition(".")
        shards = []
        for s in r.shard_names:
            if not r.exists_on(s, ns):
                continue
            n = r.collection(s, ns).estimated_document_count()
            if n == 0 and s not in t.shards():
                continue
            shards.append({"shardName": s, "numOrphanedDocs": 0, "numOwnedDocuments": n,
                           "ownedSizeBytes": r.data_size(s, db, coll), "orphanedSizeBytes": 0})
        rows.append({"ns": ns, "shards": shards})
    return rows


def _coll_stats_stage(r: Mongos, op: _Op, pipeline: list) -> dict:
    """``$collStats`` through a mongos: one document per shard holding the collection, with ``shard``."""
    spec = pipeline[0]["$collStats"]
    out = []
    for s in r.owners(op.ns):
        if not r.exists_on(s, op.ns):
            continue
        reply = op.send_ok(s, {"aggregate": op.coll, "pipeline": [{"$collStats": spec}], "cursor": {}})
        for d in op.exhaust(s, reply):
            d = dict(_doc(d))
            d = {"shard": s, **d}
            d["host"] = r.shard_host(s)
            out.append(d)
    if len(pipeline) > 1:
        coll = r.merger["m_stats"]["cs"]
        coll.drop()
        if out:
            coll.insert_many([{**d, "_lk": i} for i, d in enumerate(out)])
        out = list(coll.aggregate([{"$sort": {"_lk": 1}}, {"$project": {"_id": 0, "_lk": 0}}] + pipeline[1:]))
        coll.drop()
    return op.cursor_reply(op.ns, out, (op.cmd.get("cursor") or {}).get("batchSize"))


def _forward_config(r: Mongos, op: _Op) -> dict:
    """The ``config`` database lives on the config server."""
    r._ping()
    body = {k: v for k, v in op.cmd.items() if k not in ("lsid", "txnNumber", "autocommit", "startTransaction")}
    reply = D.run_command(r.config, "config", body, r.ctx, op.codec)
    if reply.get("ok") and isinstance(reply.get("cursor"), Mapping) and "firstBatch" in reply["cursor"]:
        docs = list(reply["cursor"]["firstBatch"])
        cid = int(reply["cursor"]["id"])
        coll = reply["cursor"]["ns"].split(".", 1)[1]
        while cid:
            more = D.run_command(r.config, "config", {"getMore": Int64(cid), "collection": coll, "$db": "config"},
                                 r.ctx, op.codec)
            docs.extend(more["cursor"]["nextBatch"])
            cid = int(more["cursor"]["id"])
        first = (op.cmd.get("cursor") or {}).get("batchSize") if isinstance(op.cmd.get("cursor"), Mapping) \
            else op.cmd.get("batchSize")
        return op.cursor_reply(reply["cursor"]["ns"], docs, first, bool(op.cmd.get("singleBatch")))
    return reply


# ---------------------------------------------------------------------------------------------- writes
def _write_result(n: int, errors: list[dict], extra: dict | None = None) -> dict:
    out: dict[str, Any] = {"n": n}
    if extra:
        out.update(extra)
    if errors:
        out["writeErrors"] = sorted(errors, key=lambda e: e["index"])
    out["ok"] = 1.0
    return out


def _table_or_reply(r: Mongos, op: _Op, create: bool) -> RoutingTable | dict:
    """The routing table of a write's sharded collection, or the reply of the command forwarded where it lives
    (the config server for ``config``, the primary shard for an unsharded collection)."""
    if op.db == "config":
        return _forward_config(r, op)
    table = r.table(op.ns)
    if table is None:
        return _forward(r, op, create=create)
    return table


def _write_setup(r: Mongos, op: _Op, cname: str, field: str,
                 create: bool) -> tuple[RoutingTable, list, bool, dict] | dict:
    """What insert, update and delete share before routing their statements: the routing table, the
    statements of ``field``, ``ordered`` and the command body each shard is sent; or the forwarded reply
    (``_table_or_reply``)."""
    table = _table_or_reply(r, op, create)
    if isinstance(table, dict):
        return table
    stmts = D._statements(op.cmd, cname, field)
    return table, stmts, op.cmd.get("ordered", True) is not False, _body(op, field)


def _statement_error(i: int, e: OperationFailure) -> dict:
    """The write error of statement ``i`` that the router itself refused (targeting, shard key)."""
    return {"index": i, "code": e.code, "errmsg": (e.details or {}).get("errmsg", str(e))}


def _insert(r: Mongos, op: _Op) -> dict:
    setup = _write_setup(r, op, "insert", "documents", create=True)
    if isinstance(setup, dict):
        return setup
    table, docs, ordered, body = setup
    errors: list[dict] = []
    routed: list[tuple[int, str, dict]] = []
    for i, d in enumerate(docs):
        d = _doc(d)
        if "_id" not in d:
            d = {"_id": ObjectId(), **d}
        try:
            shard = table.chunk_for(table.key.key_bytes(d)).shard
        except OperationFailure as e:
            errors.append(_statement_error(i, e))
            if ordered:
                break
            continue
        routed.append((i, shard, d))
    stop_at = errors[0]["index"] if (ordered and errors) else None
    n = 0
    batches: list[tuple[str, list[tuple[int, dict]]]] = []
    if ordered:
        for i, shard, d in routed:
            if stop_at is not None and i > stop_at:
                break
            if batches and batches[-1][0] == shard:
                batches[-1][1].append((i, d))
            else:
                batches.append((shard, [(i, d)]))
    else:
        by: dict[str, list] = {}
        for i, shard, d in routed:
            by.setdefault(shard, []).append((i, d))
        batches = [(s, by[s]) for s in r.shard_names if s in by]
    for shard, items in batches:
        r.ensure_collection(shard, op.ns)
        reply = op.send(shard, {**body, "documents": [d for _i, d in items]})
        if not reply.get("ok"):
            raise OperationFailure(reply.get("errmsg", ""), reply.get("code"), reply)
        n += int(reply.get("n", 0))
        for e in reply.get("writeErrors") or []:
            e = dict(_doc(e))
            e["index"] = items[int(e["index"])][0]
            errors.append(e)
        if ordered and reply.get("writeErrors"):
            break
    return _write_result(n, errors)


def _single_target(r: Mongos, op: _Op, flt: Any, sort: Any, collation: Any) -> tuple[str | None, Any]:
    """The shard a single-document write goes to, and the matched document's _id (None when none matches):
    targeted when the filter fixes one shard, else the first shard whose first match (in ``sort`` order) wins."""
    targets = r.targets(op.ns, flt, collation)
    best = None
    best_shard = None
    for s in targets:
        body: dict = {"find": op.coll, "filter": flt or {}, "limit": 1}
        if sort:
            body["sort"] = sort
        if collation:
            body["collation"] = collation
        rows = op.exhaust(s, op.send_ok(s, body))
        if not rows:
            continue
        d = _doc(rows[0])
        if best is None or (sort and _sort_key(sort)(d) < _sort_key(sort)(best)):
            best, best_shard = d, s
        if not sort:
            break
    if best is None:
        return (targets[0] if len(targets) == 1 else None), None
    return best_shard, best.get("_id")


def _upsert_shard(r: Mongos, op: _Op, table: RoutingTable, flt: Any) -> str:
    """An upsert that matched nothing must name one full shard key value by equality."""
    ranges = table.key.ranges_for_filter(flt if isinstance(flt, Mapping) else None)
    if ranges is None or len(ranges) != 1 or ranges[0][0] != ranges[0][1]:
        raise fail("Failed to target upsert by query :: could not extract exact shard key", SHARD_KEY_NOT_FOUND)
    return table.chunk_for(ranges[0][0]).shard


def _touches_key(table: RoutingTable, u: Any) -> bool:
    if not isinstance(u, Mapping):
        return True  # a pipeline update may set anything
    if u and not any(str(k).startswith("$") for k in u):
        return True  # a replacement
    for opname, spec in u.items():
        if isinstance(spec, Mapping):
            for path in spec:
                for f in table.key.fields:
                    if path == f or path.startswith(f + ".") or f.startswith(path + "."):
                        return True
    return False


def _update(r: Mongos, op: _Op) -> dict:
    setup = _write_setup(r, op, "update", "updates", create=True)
    if isinstance(setup, dict):
        return setup
    table, stmts, ordered, body = setup
    n = n_mod = 0
    upserted: list[dict] = []
    errors: list[dict] = []
    for i, st in enumerate(stmts):
        st = dict(_doc(st))
        try:
            if st.get("multi"):
                touches = _touches_key(table, st.get("u"))
                for s in r.targets(op.ns, st.get("q"), st.get("collation")):
                    before = _matching(r, op, s, st) if touches else None
                    reply = op.send_ok(s, {**body, "updates": [st]})
                    if before is not None:
                        _multi_kept_keys(r, op, table, s, before)
                    _collect(reply, i, errors)
                    n += int(reply.get("n", 0))
                    n_mod += int(reply.get("nModified", 0))
                continue
            rn, rmod, up = _update_one(r, op, table, st, body, errors, i)
            n += rn
            n_mod += rmod
            if up is not None:
                upserted.append({"index": i, "_id": up})
        except OperationFailure as e:
            errors.append(_statement_error(i, e))
        if ordered and errors:
            break
    extra = {"nModified": n_mod}
    if upserted:
        extra["upserted"] = upserted
        n += 0
    return _write_result(n, errors, extra)


def _collect(reply: dict, i: int, errors: list[dict]) -> None:
    for e in reply.get("writeErrors") or []:
        e = dict(_doc(e))
        e["index"] = i
        errors.append(e)


def _matching(r: Mongos, op: _Op, shard: str, st: dict) -> list[dict]:
    """The documents of ``shard`` a multi-update statement matches, before it runs."""
    if not r.exists_on(shard, op.ns):
        return []
    kw = {"collation": st["collation"]} if isinstance(st.get("collation"), Mapping) else {}
    return list(r.collection(shard, op.ns).find(st.get("q") or {}, **kw))


def _multi_kept_keys(r: Mongos, op: _Op, table: RoutingTable, shard: str, before: list[dict]) -> None:
    """A multi-update may not change a document's shard key (the shard's update stage refuses it with
    InvalidOptions, SERVER-46811); one that did is undone on this shard and refused. Setting a key field to the
    value it already has is allowed, as on the server."""
    coll = r.collection(shard, op.ns)
    changed = False
    for doc in before:
        after = coll.find_one({"_id": doc["_id"]})
        if after is not None and table.key.key_bytes(after) != table.key.key_bytes(doc):
            changed = True
            break
    if changed:
        for doc in before:
            coll.replace_one({"_id": doc["_id"]}, doc)
        raise fail("Multi-update operations are not allowed when updating the shard key field.", INVALID_OPTIONS)


def _update_one(r: Mongos, op: _Op, table: RoutingTable, st: dict, body: dict, errors: list[dict],
                i: int) -> tuple[int, int, Any]:
    shard, _id = _single_target(r, op, st.get("q"), st.get("sort"), st.get("collation"))
    if _id is None:
        if not st.get("upsert"):
            return 0, 0, None
        shard = _upsert_shard(r, op, table, st.get("q"))
        r.ensure_collection(shard, op.ns)
        reply = op.send_ok(shard, {**body, "updates": [st]})
        _collect(reply, i, errors)
        ups = reply.get("upserted") or []
        return int(reply.get("n", 0)), int(reply.get("nModified", 0)), (_doc(ups[0])["_id"] if ups else None)
    assert shard is not None
    before = r.collection(shard, op.ns).find_one({"_id": _id})
    target_stmt = {**st, "q": {"$and": [st.get("q") or {}, {"_id": _id}]}}
    target_stmt.pop("sort", None)
    reply = op.send_ok(shard, {**body, "updates": [target_stmt]})
    _collect(reply, i, errors)
    if reply.get("writeErrors"):
        return 0, 0, None
    _after_single_write(r, op, table, shard, _id, before)
    return int(reply.get("n", 0)), int(reply.get("nModified", 0)), None


def _after_single_write(r: Mongos, op: _Op, table: RoutingTable, shard: str, _id: Any, before: dict | None) -> None:
    """A write that changed the document's shard key: refused (and undone) outside a transaction or retryable
    write; otherwise the document moves to the shard owning its new key (WouldChangeOwningShard)."""
    if before is None:
        return
    coll = r.collection(shard, op.ns)
    after = coll.find_one({"_id": _id})
    if after is None:
        return
    old_key, new_key = table.key.key_bytes(before), table.key.key_bytes(after)
    if old_key == new_key:
        return
    if not isinstance(op.cmd.get("txnNumber"), int):
        coll.replace_one({"_id": _id}, before)
        raise fail("Must run update to shard key field in a multi-statement transaction or with retryWrites: true.",
                   ILLEGAL_OPERATION)
    owner = table.chunk_for(new_key).shard
    if owner != shard:
        coll.delete_one({"_id": _id})
        r.ensure_collection(owner, op.ns, like=shard)
        r.collection(owner, op.ns).insert_one(after)


def _delete(r: Mongos, op: _Op) -> dict:
    setup = _write_setup(r, op, "delete", "deletes", create=False)
    if isinstance(setup, dict):
        return setup
    _table, stmts, ordered, body = setup
    n = 0
    errors: list[dict] = []
    for i, st in enumerate(stmts):
        st = dict(_doc(st))
        if st.get("limit") in (1, 1.0):
            shard, _id = _single_target(r, op, st.get("q"), None, st.get("collation"))
            if _id is not None:
                reply = op.send_ok(shard, {**body, "deletes": [{**st, "q": {"$and": [st.get("q") or {},
                                                                                     {"_id": _id}]}}]})
                _collect(reply, i, errors)
                n += int(reply.get("n", 0))
        else:
            for s in r.targets(op.ns, st.get("q"), st.get("collation")):
                reply = op.send_ok(s, {**body, "deletes": [st]})
                _collect(reply, i, errors)
                n += int(reply.get("n", 0))
        if ordered and errors:
            break
    return _write_result(n, errors)


def _find_and_modify(r: Mongos, op: _Op) -> dict:
    table = _table_or_reply(r, op, create=True)
    if isinstance(table, dict):
        return table
    cmd = op.cmd
    body = _body(op)
    shard, _id = _single_target(r, op, cmd.get("query"), cmd.get("sort"), cmd.get("collation"))
    if _id is None:
        if cmd.get("upsert") and not cmd.get("remove"):
            shard = _upsert_shard(r, op, table, cmd.get("query"))
            r.ensure_collection(shard, op.ns)
        return op.send(shard or table.chunks[0].shard, body)
    assert shard is not None
    before = r.collection(shard, op.ns).find_one({"_id": _id})
    body["query"] = {"$and": [cmd.get("query") or {}, {"_id": _id}]}
    body.pop("sort", None)
    reply = op.send(shard, body)
    if reply.get("ok") and not cmd.get("remove"):
        _after_single_write(r, op, table, shard, _id, before)
    return reply


# ---------------------------------------------------------------------------------------------- DDL
def _ddl_all(r: Mongos, op: _Op) -> dict:
    """createIndexes / dropIndexes / collMod on a sharded collection: every shard holding it (first reply)."""
    if r.table(op.ns) is None:
        return _forward(r, op, create=op.name in ("createIndexes", "create"))
    table = r.table(op.ns)
    if op.name == "createIndexes":
        for spec in op.cmd.get("indexes") or []:
            if isinstance(spec, Mapping) and spec.get("unique") and isinstance(spec.get("key"), Mapping) \
                    and not table.key.is_unique_index_compatible(spec["key"]):
                raise fail("cannot create unique index over %s with shard key pattern %s"
                           % (show(spec["key"]), show(table.key.spec)), 67)
    body = _body(op)
    first: dict | None = None
    raw: dict = {}
    for s in r.shard_names:
        if not r.exists_on(s, op.ns):
            continue
        reply = op.send(s, body)
        if not reply.get("ok"):
            return reply
        raw[r.shard_host(s)] = {k: v for k, v in reply.items() if k not in ("$clusterTime", "operationTime")}
        first = first or reply
    out = dict(first or {"ok": 1.0})
    if op.name == "createIndexes":
        out = {"raw": raw, "ok": 1.0}
    return out


def _list_indexes(r: Mongos, op: _Op) -> dict:
    t = r.table(op.ns)
    shard = t.chunks[0].shard if t is not None else None
    return _forward(r, op, shard)


def _drop(r: Mongos, op: _Op) -> dict:
    if op.db == "config":
        return _forward_config(r, op)
    ns = op.ns
    first = None
    for s in r.shard_names:
        if r.exists_on(s, ns):
            reply = op.send(s, {"drop": op.coll})
            first = first or reply
    r.forget_collection(ns)
    if first is None:  # as the engine answers a drop of a collection that does not exist
        return op.send(r.primary_of(op.db), {"drop": op.coll})
    return first


def _drop_database(r: Mongos, op: _Op) -> dict:
    if op.db in ("admin", "config", "local"):
        raise D.CommandError("Cannot drop '%s' database through mongos" % op.db, ILLEGAL_OPERATION)
    for s in r.shard_names:
        if op.db in r.shards[s].list_database_names():
            op.send(s, {"dropDatabase": 1})
    r.forget_database(op.db)
    return {"dropped": op.db, "ok": 1.0}


def _list_databases(r: Mongos, op: _Op) -> dict:
    sizes: dict[str, int] = {}
    for s in r.shard_names:
        reply = op.send_ok(s, {"listDatabases": 1})
        for d in reply["databases"]:
            d = _doc(d)
            sizes[d["name"]] = sizes.get(d["name"], 0) + int(d.get("sizeOnDisk", 0))
    sizes.setdefault("config", 4096 * 10)
    sizes.setdefault("admin", 4096)
    rows = [{"name": n, "sizeOnDisk": Int64(sizes[n]), "empty": False} for n in sorted(sizes)]
    flt = op.cmd.get("filter")
    if op.cmd.get("nameOnly"):
        rows = [{"name": x["name"]} for x in rows]
    if flt:
        from ..matcher.match import fast_matcher
        m = fast_matcher(dict(flt))
        rows = [x for x in rows if m(x)]
    return {"databases": rows, "totalSize": Int64(sum(sizes.values())), "totalSizeMb": Int64(sum(sizes.values())
                                                                                            // (1024 * 1024)),
            "ok": 1.0}


def _list_collections(r: Mongos, op: _Op) -> dict:
    if op.db == "config":
        return _forward_config(r, op)
    return _forward(r, op)


def _coll_stats_cmd(r: Mongos, op: _Op) -> dict:
    t = r.table(op.ns)
    if t is None:
        return _forward(r, op)
    body = _body(op)
    per: dict = {}
    total = {"count": 0, "size": 0, "storageSize": 0, "totalIndexSize": 0, "nindexes": 0}
    for s in t.shards():
        reply = op.send_ok(s, body)
        per[s] = {k: v for k, v in reply.items() if k not in ("$clusterTime", "operationTime")}
        for k in ("count", "size", "storageSize", "totalIndexSize"):
            total[k] += int(reply.get(k, 0))
        total["nindexes"] = int(reply.get("nindexes", 0))
    out: dict[str, Any] = {"sharded": True, "ns": op.ns, **total,
                           "avgObjSize": (total["size"] // total["count"]) if total["count"] else 0,
                           "nchunks": len(t.chunks), "shards": per, "ok": 1.0}
    return out


def _db_stats(r: Mongos, op: _Op) -> dict:
    """dbStats through a mongos: every shard's dbStats under ``raw`` (keyed by the shard's connection string),
    then their sums (cluster_db_stats_cmd.cpp ``aggregateResults``; jstests/sharding/stats.js): collections,
    views, objects, the sizes and index counts added up, ``avgObjSize`` over the unscaled data size."""
    scale = op.cmd.get("scale", 1)
    if isinstance(scale, bool) or not isinstance(scale, (int, float)) or scale <= 0:
        raise D.CommandError("Scale must be greater than zero", 2)
    body = _body(op)
    hosts = {d["_id"]: d.get("host", d["_id"]) for d in r.config["config"]["shards"].find({})}
    raw: dict[str, dict] = {}
    sums = dict.fromkeys(("collections", "views", "objects", "dataSize", "storageSize", "totalSize", "indexes",
                          "indexSize", "fsUsedSize", "fsTotalSize"), 0)
    unscaled = 0.0
    for s in r.shard_names:
        reply = op.send_ok(s, body)
        raw[hosts.get(s, s)] = {k: v for k, v in reply.items() if k not in ("$clusterTime", "operationTime")}
        for k in sums:
            sums[k] += reply.get(k, 0) or 0
        unscaled += float(reply.get("avgObjSize", 0) or 0) * int(reply.get("objects", 0) or 0)
    out: dict[str, Any] = {"raw": raw, "db": op.db}
    out.update({k: sums[k] for k in ("collections", "views", "objects")})
    out["avgObjSize"] = unscaled / sums["objects"] if sums["objects"] else 0
    out.update({k: sums[k] for k in ("dataSize", "storageSize", "totalSize", "indexes", "indexSize")})
    out.update({"scaleFactor": scale, "fsUsedSize": sums["fsUsedSize"], "fsTotalSize": sums["fsTotalSize"],
                "ok": 1.0})
    return out


# ---------------------------------------------------------------------------------------------- transactions
def _txn_end(r: Mongos, op: _Op) -> dict:
    commit = op.name == "commitTransaction"
    lsid = op.cmd.get("lsid")
    key = (bytes(lsid["id"]) if isinstance(lsid, Mapping) and "id" in lsid else None, op.cmd.get("txnNumber"))
    parts = r.txns.pop(key, None)
    if parts is None:
        if commit:
            return {"ok": 1.0}
        raise D.CommandError("Given transaction number %s does not match any in-progress transactions."
                             % op.cmd.get("txnNumber"), 251, errorLabels=["TransientTransactionError"])
    out = {"ok": 1.0}
    for s in sorted(parts):
        body = {op.name: 1, "lsid": lsid, "txnNumber": op.cmd.get("txnNumber"), "autocommit": False}
        if "writeConcern" in op.cmd:
            body["writeConcern"] = op.cmd["writeConcern"]
        reply = r.on_shard(s, "admin", body, op.codec)
        if not reply.get("ok"):
            out = reply
    return out


# ---------------------------------------------------------------------------------------------- sharding admin
#: the fields each sharding admin command takes (besides its own name and the generic fields drivers add)
_ADMIN_FIELDS = {
    "shardCollection": {"key", "unique", "numInitialChunks", "presplitHashedZones", "collation", "timeseries"},
    "reshardCollection": {"key", "unique", "numInitialChunks", "collation", "zones", "forceRedistribution"},
    "refineCollectionShardKey": {"key"},
    "split": {"middle", "find", "bounds"},
    "moveChunk": {"find", "bounds", "to", "_secondaryThrottle", "_waitForDelete", "writeConcern",
                  "forceJumbo"},
    "moveRange": {"min", "max", "toShard", "forceJumbo", "_secondaryThrottle", "_waitForDelete", "writeConcern"},
    "balancerCollectionStatus": set(), "configureCollectionBalancing": {"chunkSize", "defragmentCollection",
                                                                        "enableAutoMerger"},
}


def _admin_only(op: _Op) -> None:
    if op.db != "admin":
        raise D.CommandError("%s may only be run against the admin database." % op.name, 13)
    allowed = _ADMIN_FIELDS.get(op.name)
    if allowed is not None:
        for k in op.cmd:
            if k != op.name and k not in allowed and k not in D._GENERIC:
                raise D.CommandError("BSON field '%s.%s' is an unknown field." % (op.name, k), 40415)
    for k in ("forceJumbo", "defragmentCollection", "enableAutoMerger"):
        if op.cmd.get(k):  # migrations here are synchronous: _secondaryThrottle/_waitForDelete change nothing
            raise fail(not_modelled("%s's %s option (jumbo migrations, defragmentation, the auto-merger)"
                                    % (op.name, k)), 115)


def _ns_arg(op: _Op) -> str:
    ns = op.cmd.get(op.name)
    if not isinstance(ns, str) or "." not in ns or ns.startswith(".") or ns.endswith("."):
        raise D.CommandError("Invalid namespace specified '%s'" % (ns,), 73)
    return ns


def _need_table(r: Mongos, ns: str) -> RoutingTable:
    t = r.table(ns)
    if t is None:
        raise fail("Collection %s is not sharded." % ns, 118)  # NamespaceNotSharded
    return t


def _enable_sharding(r: Mongos, op: _Op) -> dict:
    _admin_only(op)
    db = op.cmd.get(op.name)
    if not isinstance(db, str) or not db or "." in db:
        raise D.CommandError("Invalid db name specified: %s" % (db,), 73)
    primary = op.cmd.get("primaryShard")
    if primary is not None:
        if primary not in r.shards:
            raise fail("Shard %s not found" % primary, 70)
        if db not in r.primaries:
            r.primaries[db] = primary
    r.primary_of(db, create=True)
    return {"ok": 1.0}


def _shard_collection(r: Mongos, op: _Op) -> dict:
    _admin_only(op)
    ns = _ns_arg(op)
    for k in op.cmd:
        # numInitialChunks is accepted and has no effect since 7.2 (removed: SERVER-74747; kept in the command's
        # fields for compatibility: SERVER-83005), as on an 8.0 server
        if k in ("presplitHashedZones", "timeseries"):
            raise fail(not_modelled("shardCollection's %s option" % k), 115)
    if "key" not in op.cmd:
        raise D.CommandError("BSON field 'shardCollection.key' is missing but a required field", 40414)
    return r.shard_collection(ns, op.cmd.get("key"), bool(op.cmd.get("unique")), op.cmd.get("collation"))


def _reshard(r: Mongos, op: _Op) -> dict:
    """reshardCollection: the documents are redistributed by the new key at once (8.0 clones them to recipient
    shards and switches over); the new key needs the same supporting index rules, built if missing."""
    _admin_only(op)
    ns = _ns_arg(op)
    t = _need_table(r, ns)
    from .shard_key import ShardKeyPattern
    for k in ("zones", "collation", "forceRedistribution"):
        if k in op.cmd:
            raise fail(not_modelled("reshardCollection's %s option" % k), 115)
    new = ShardKeyPattern(op.cmd.get("key"))
    unique = bool(op.cmd.get("unique"))
    if unique:
        raise fail("reshardCollection with unique: true is not supported", INVALID_OPTIONS)
    for s in t.shards():
        for spec in r._index_specs(s, ns):
            if spec.get("unique") and not new.is_unique_index_compatible(spec["key"]):
                raise fail("can't shard collection '%s' with unique index on %s and proposed shard key %s. "
                           "Uniqueness can't be maintained unless shard key is a prefix"
                           % (ns, show(spec["key"]), show(new.spec)), INVALID_OPTIONS)
        break
    docs: list[dict] = []
    for s in r.shard_names:
        if r.exists_on(s, ns):
            docs.extend(r.collection(s, ns).find({}))
    for d in docs:
        new.values(d)  # an array in the new key: ShardKeyNotFound, before anything changes
    like = t.chunks[0].shard
    all_specs = r._index_specs(like, ns)
    specs = [s for s in all_specs if s.get("name") != "_id_"]
    if not any(new.is_prefix_of(s["key"]) for s in all_specs):
        name = "_".join("%s_%s" % (f, v if v == "hashed" else int(v)) for f, v in new.spec.items())
        specs.append({"key": dict(new.spec), "name": name})
    db, _, coll = ns.partition(".")
    for s in r.shard_names:
        if r.exists_on(s, ns):
            r.collection(s, ns).delete_many({})
    from .catalog import RoutingTable as RT, first_chunks
    n = len(r.shard_names)
    chunks = first_chunks(new, r.shard_names, r.primary_of(db), empty=True) if new.is_hashed else None
    if chunks is None:
        chunks = _even_ranges(new, docs, r.shard_names)
    table = RT(ns, new, unique, chunks)
    r.config["config"]["chunks"].delete_many({"uuid": t.uuid})
    r.tables[ns] = table
    for s in r.shard_names:
        r.ensure_collection(s, ns, like=like)
        have = {x["name"] for x in r._index_specs(s, ns)}
        for spec in specs:
            if spec["name"] not in have:
                r.checked(s, db, {"createIndexes": coll, "indexes": [{k: v for k, v in spec.items()
                                                                       if k not in ("v", "ns")}]})
    by: dict[str, list] = {}
    for d in docs:
        by.setdefault(table.chunk_for(new.key_bytes(d)).shard, []).append(d)
    for s, rows in by.items():
        r.collection(s, ns).insert_many(rows, ordered=False)
    r.write_metadata(table)
    r.log_change("resharding.coordinator.end", ns, {"reshardingUUID": table.uuid, "newShardKey": new.spec,
                                                      "n": n})
    return {"ok": 1.0}


def _even_ranges(key: Any, docs: list[dict], shards: list[str]) -> list:
    """Ranges of about equal document counts, one per shard (resharding's initial split of the new key)."""
    from .catalog import Chunk
    vals = sorted({key.key_bytes(d): key.routing_values(key.values(d)) for d in docs}.items())
    lo, hi = key.global_min(), key.global_max()
    if len(vals) < 2:
        return [Chunk(lo, hi, shards[0])]
    k = min(len(shards), len(vals))
    bounds = [lo] + [key.key_doc(vals[len(vals) * i // k][1]) for i in range(1, k)] + [hi]
    return [Chunk(bounds[i], bounds[i + 1], shards[i]) for i in range(k)]


def _refine(r: Mongos, op: _Op) -> dict:
    """refineCollectionShardKey: the new key must start with the current one (suffix fields only); a supporting
    index must already exist."""
    _admin_only(op)
    ns = _ns_arg(op)
    t = _need_table(r, ns)
    from .shard_key import ShardKeyPattern
    new = ShardKeyPattern(op.cmd.get("key"))
    if list(new.spec.items())[:len(t.key.fields)] != list(t.key.spec.items()):
        raise fail("refineCollectionShardKey must use the current shard key %s as a prefix of the new key %s"
                   % (show(t.key.spec), show(new.spec)), INVALID_OPTIONS)
    if new.is_hashed and not t.key.is_hashed:
        raise fail("refineCollectionShardKey cannot add a hashed field to the shard key", INVALID_OPTIONS)
    shard = t.chunks[0].shard
    r._validate_index(shard, ns, new, t.unique, r._index_specs(shard, ns), refine=True)
    from .catalog import Chunk
    from bson.min_key import MinKey
    from bson.max_key import MaxKey
    chunks = []
    for c in t.chunks:
        def ext(b: dict, fill: Any) -> dict:
            out = dict(b)
            for f in new.fields[len(t.key.fields):]:
                out[f] = fill
            return out
        lo_fill = MaxKey() if all(isinstance(v, MaxKey) for v in c.min.values()) else MinKey()
        hi_fill = MaxKey() if all(isinstance(v, MaxKey) for v in c.max.values()) else MinKey()
        nc = Chunk(ext(c.min, lo_fill), ext(c.max, hi_fill), c.shard, c.major + 1, 0)
        nc.jumbo = False
        chunks.append(nc)
    t.key = new
    t.set_chunks(chunks)
    r.write_metadata(t)
    return {"ok": 1.0}


def _split(r: Mongos, op: _Op) -> dict:
    _admin_only(op)
    ns = _ns_arg(op)
    t = _need_table(r, ns)
    middle = op.cmd.get("middle")
    find = op.cmd.get("find")
    if isinstance(middle, Mapping):
        if list(middle) != t.key.fields:
            raise fail("split point %s does not match the shard key %s" % (show(middle), show(t.key.spec)), 2)
        r.split_at(t, dict(middle))
        return {"ok": 1.0}
    if isinstance(find, Mapping):
        ranges = t.key.ranges_for_filter(find)
        if not ranges or len(ranges) != 1 or ranges[0][0] != ranges[0][1]:
            raise fail("no chunk found for the query %s: give the full shard key" % show(find), 2)
        chunk = t.chunk_for(ranges[0][0])
        point = _median(r, t, chunk)
        if point is None:
            raise fail("Cannot split chunk %s: it holds a single shard key value" % show(chunk.min), 2)
        r.split_at(t, point)
        return {"ok": 1.0}
    raise fail("need to specify find or middle", 2)


def _median(r: Mongos, t: RoutingTable, chunk: Any) -> dict | None:
    rows = r.chunk_rows(t, chunk)
    keys = sorted({x[0] for x in rows})
    if len(keys) < 2:
        return None
    mid = keys[len(keys) // 2]
    _id = next(x[2] for x in rows if x[0] == mid)
    return r._key_doc_of(t, chunk.shard, _id)


def _move_args(r: Mongos, op: _Op, cname: str, to_field: str) -> tuple[RoutingTable, str]:
    """moveChunk's and moveRange's common arguments: run on admin, the sharded collection's routing table and
    the shard the data moves to (``to_field``)."""
    _admin_only(op)
    t = _need_table(r, _ns_arg(op))
    to = op.cmd.get(to_field)
    if not isinstance(to, str):
        raise D.CommandError("BSON field '%s.%s' is missing but a required field" % (cname, to_field), 40414)
    return t, to


def _move_chunk(r: Mongos, op: _Op) -> dict:
    t, to = _move_args(r, op, "moveChunk", "to")
    if isinstance(op.cmd.get("bounds"), list) and len(op.cmd["bounds"]) == 2:
        lo = dict(op.cmd["bounds"][0])  # bounds are chunk bounds: hashed values already
        chunk = t.chunk_for(encode_key([lo.get(f) for f in t.key.fields]))
    elif isinstance(op.cmd.get("find"), Mapping):
        ranges = t.key.ranges_for_filter(op.cmd["find"])
        if not ranges or ranges[0][0] != ranges[0][1]:
            raise fail("no chunk found for the query %s: give the full shard key" % show(op.cmd["find"]), 2)
        chunk = t.chunk_for(ranges[0][0])
    else:
        raise fail("need to specify either a find query, or both lower and upper bounds.", 2)
    _check_not_jumbo(r, t, chunk)
    r.move_range(t, chunk.min, chunk.max, to)
    return {"millis": 0, "ok": 1.0}


def _check_not_jumbo(r: Mongos, t: RoutingTable, chunk: Any) -> None:
    limit = r.chunk_size_bytes(t)
    if r.too_big_to_move(t, chunk):  # more documents than a migration takes: ChunkTooBig, whatever the key values
        chunk.jumbo = True
        r.write_metadata(t)
        raise fail("Cannot move chunk: the amount of data in the chunk exceeds the max chunk size (%d bytes) and it "
                   "cannot be split (jumbo)" % limit, 13)  # ChunkTooBig's text; code: the server's 13 is not used


def _move_range(r: Mongos, op: _Op) -> dict:
    t, to = _move_args(r, op, "moveRange", "toShard")
    lo, hi = op.cmd.get("min"), op.cmd.get("max")
    if lo is None and hi is None:
        raise fail("Either min or max must be specified", 2)
    r.move_range(t, dict(lo) if isinstance(lo, Mapping) else None, dict(hi) if isinstance(hi, Mapping) else None,
                 to)
    return {"ok": 1.0}


def _list_shards(r: Mongos, op: _Op) -> dict:
    _admin_only(op)
    shards = [{k: v for k, v in d.items()} for d in r.config["config"]["shards"].find({}, sort=[("_id", 1)])]
    return {"shards": shards, "ok": 1.0}


def _balancer_status(r: Mongos, op: _Op) -> dict:
    mode = "full" if r.balancer_enabled else "off"
    return {"mode": mode, "inBalancerRound": False, "numBalancerRounds": Int64(r.balancer_rounds), "ok": 1.0}


def _balancer_start(r: Mongos, op: _Op) -> dict:
    r.balancer_enabled = True
    r.config["config"]["settings"].update_one({"_id": "balancer"}, {"$set": {"stopped": False, "mode": "full"}},
                                              upsert=True)
    r.balance()
    return {"ok": 1.0}


def _balancer_stop(r: Mongos, op: _Op) -> dict:
    r.balancer_enabled = False
    r.config["config"]["settings"].update_one({"_id": "balancer"}, {"$set": {"stopped": True, "mode": "off"}},
                                              upsert=True)
    return {"ok": 1.0}


def _balancer_round(r: Mongos, op: _Op) -> dict:
    """labkit's own command (a real server has none): run one balancing round now."""
    ns = op.cmd.get("ns")
    moved = r.balancer_round(ns if isinstance(ns, str) else None)
    return {"migrations": moved, "ok": 1.0}


def _balancer_collection_status(r: Mongos, op: _Op) -> dict:
    _admin_only(op)
    ns = _ns_arg(op)
    t = _need_table(r, ns)
    ok = r.collection_balanced(t)
    out: dict[str, Any] = {"chunkSize": round(r.chunk_size_bytes(t) / (1024 * 1024), 6), "balancerCompliant": ok,
                           "ok": 1.0}
    if not ok:
        out["firstComplianceViolation"] = "chunksImbalance"
    return out


def _configure_balancing(r: Mongos, op: _Op) -> dict:
    _admin_only(op)
    ns = _ns_arg(op)
    t = _need_table(r, ns)
    size = op.cmd.get("chunkSize")
    if size is not None:
        if isinstance(size, bool) or not isinstance(size, (int, float)) or size < 0 or size > 1024:
            raise fail("Chunk size must be between 1 and 1024 MB (0 resets it to the cluster default)", 2)
        coll = r.config["config"]["collections"]
        if size == 0:
            coll.update_one({"_id": ns}, {"$unset": {"maxChunkSizeBytes": 1}})
        else:
            coll.update_one({"_id": ns}, {"$set": {"maxChunkSizeBytes": int(size * 1024 * 1024)}})
    return {"ok": 1.0}


def _get_shard_version(r: Mongos, op: _Op) -> dict:
    ns = _ns_arg(op)
    t = _need_table(r, ns)
    major, minor = t.version
    return {"version": bson.Timestamp(major, minor), "versionEpoch": t.epoch, "versionTimestamp": t.timestamp,
            "ok": 1.0}


def _not_modelled(r: Mongos, op: _Op) -> dict:
    raise fail(not_modelled("The '%s' command (the simulated cluster's shards are fixed when it starts)"
                            % op.name), 115)


def _rename(r: Mongos, op: _Op) -> dict:
    """renameCollection of an unsharded collection runs on its database's primary shard; renaming a sharded
    collection is not modelled."""
    src, dst = op.cmd.get("renameCollection"), op.cmd.get("to")
    if isinstance(src, str) and isinstance(dst, str):
        if r.table(src) is not None or r.table(dst) is not None:
            raise fail(not_modelled("renameCollection of a sharded collection"), 115)
        if src.split(".", 1)[0] != dst.split(".", 1)[0]:
            raise fail(not_modelled("renameCollection across databases"), 115)
        body = _body(op)
        return op.send(r.primary_of(src.split(".", 1)[0]), body, "admin")
    return D.CommandError("renameCollection and to must be namespace strings", 2).reply()


def _explain(r: Mongos, op: _Op) -> dict:
    return X.explain(r, op, _Op)


_HANDLERS: dict[str, Callable[[Mongos, _Op], dict]] = {
    "find": _find, "count": _count, "distinct": _distinct, "aggregate": _aggregate,
    "getMore": _get_more, "killCursors": _kill_cursors,
    "insert": _insert, "update": _update, "delete": _delete,
    "findAndModify": _find_and_modify, "findandmodify": _find_and_modify,
    "createIndexes": _ddl_all, "dropIndexes": _ddl_all, "deleteIndexes": _ddl_all, "collMod": _ddl_all,
    "listIndexes": _list_indexes, "create": lambda r, op: _forward(r, op, create=True),
    "drop": _drop, "dropDatabase": _drop_database, "listDatabases": _list_databases,
    "listCollections": _list_collections, "collStats": _coll_stats_cmd,
    "dbStats": _db_stats, "dbstats": _db_stats,
    "explain": _explain,
    "commitTransaction": _txn_end, "abortTransaction": _txn_end,
    "enableSharding": _enable_sharding, "enablesharding": _enable_sharding,
    "shardCollection": _shard_collection, "shardcollection": _shard_collection,
    "reshardCollection": _reshard, "refineCollectionShardKey": _refine,
    "split": _split, "moveChunk": _move_chunk, "movechunk": _move_chunk, "moveRange": _move_range,
    "listShards": _list_shards, "listshards": _list_shards,
    "balancerStatus": _balancer_status, "balancerStart": _balancer_start, "balancerStop": _balancer_stop,
    "balancerRound": _balancer_round, "balancerCollectionStatus": _balancer_collection_status,
    "configureCollectionBalancing": _configure_balancing, "getShardVersion": _get_shard_version,
    "flushRouterConfig": lambda r, op: {"flushed": True, "ok": 1.0},
    "addShard": _not_modelled, "removeShard": _not_modelled, "movePrimary": _not_modelled,
    "moveCollection": _not_modelled, "unshardCollection": _not_modelled, "renameCollection": _rename,
}

__all__ = ["Mongos", "split_pipeline", "sharded_data_distribution", "LOOKUP_IN_TXN"]
