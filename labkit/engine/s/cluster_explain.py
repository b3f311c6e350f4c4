"""Explain through the router, in the shape a MongoDB 8.0 ``mongos`` returns (``src/mongo/s/query/
cluster_explain.cpp``, ``cluster_aggregation_planner.cpp``; manual "Explain Results", sharded collections).

find / count / distinct / update / delete / findAndModify: ``queryPlanner.winningPlan`` is ``{stage, shards: [...]}``
with ``stage`` ``SINGLE_SHARD`` (one shard targeted), ``SHARD_MERGE`` (several, results concatenated),
``SHARD_MERGE_SORT`` (several, merged in sort order) or ``SHARD_WRITE`` (a write sent to several shards); each
``shards`` entry is that shard's own queryPlanner with ``shardName``, ``connectionString`` and ``serverInfo``.
``executionStats.executionStages`` carries the same stage over per-shard ``shards`` entries with each shard's
``nReturned``, ``executionTimeMillis``, ``totalKeysExamined``, ``totalDocsExamined`` and ``executionStages``;
the top level sums them. On a sharded collection each shard's plan has a ``SHARDING_FILTER`` stage (the filter
that drops orphaned documents): above the ``FETCH``, or between ``FETCH`` and ``IXSCAN`` when the index holds
every shard key field.

aggregate: ``splitPipeline`` (``null`` when one shard runs it whole, else ``{shardsPart, mergerPart}`` with
``$mergeCursors`` first in the merging half), ``mergeType`` when split, and ``shards``: ``{<shard>: {host, ...its
explain}}``.
"""
from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import bson
from pymongo.errors import OperationFailure

from ..commands import dispatch as D
from ..base.errors import not_modelled
from .agg_plan import foreign, plan_aggregate

_LEAVES = {"COLLSCAN", "IXSCAN", "IDHACK", "EXPRESS_IXSCAN", "EXPRESS_CLUSTERED_IXSCAN", "CLUSTERED_IXSCAN",
           "COUNT_SCAN", "DISTINCT_SCAN", "EXPRESS_DELETE", "EXPRESS_UPDATE"}
_KEEP = ("stage", "nReturned", "executionTimeMillisEstimate", "works", "advanced", "needTime", "needYield",
         "saveState", "restoreState", "isEOF")


def _dec(d: Any) -> Any:
    return bson.decode(d.raw) if hasattr(d, "raw") else d


def add_sharding_filter(node: Any, key_fields: list[str], with_stats: bool) -> Any:
    """``node``'s plan tree with a SHARDING_FILTER stage where the classic planner puts one."""
    if not isinstance(node, Mapping) or "stage" not in node:
        return node
    node = dict(node)
    stage = node["stage"]
    if stage == "FETCH" and isinstance(node.get("inputStage"), Mapping) and \
            node["inputStage"].get("stage") == "IXSCAN" and \
            all(f in (node["inputStage"].get("keyPattern") or {}) for f in key_fields):
        node["inputStage"] = _wrap(node["inputStage"], with_stats)
        return node
    if stage in ("FETCH", "COLLSCAN") or stage in _LEAVES:
        return _wrap(node, with_stats)
    if isinstance(node.get("inputStage"), Mapping):
        node["inputStage"] = add_sharding_filter(node["inputStage"], key_fields, with_stats)
        return node
    if isinstance(node.get("inputStages"), list):
        return _wrap(node, with_stats)
    return node


def _wrap(child: Mapping, with_stats: bool) -> dict:
    out: dict[str, Any] = {"stage": "SHARDING_FILTER"}
    if with_stats:
        for k in _KEEP[1:]:
            if k in child:
                out[k] = child[k]
        out["chunkSkips"] = 0
    out["inputStage"] = dict(child)
    return out


def _shard_qp(r: Any, shard: str, reply: dict, sharded: bool, key_fields: list[str]) -> dict:
    qp = dict(_dec(reply.get("queryPlanner") or {}))
    entry: dict[str, Any] = {"shardName": shard, "connectionString": r.shard_host(shard),
                             "serverInfo": dict(reply.get("serverInfo") or {}, host=r.shard_host(shard).split(":")[0],
                                                port=int(r.shard_host(shard).split(":")[1]))}
    for k, v in qp.items():
        if k == "winningPlan" and sharded:
            v = dict(v)
            if "queryPlan" in v:
                v["queryPlan"] = add_sharding_filter(v["queryPlan"], key_fields, False)
            else:
                v = add_sharding_filter(v, key_fields, False)
        entry[k] = v
    return entry


def _shard_es(shard: str, reply: dict, sharded: bool, key_fields: list[str]) -> dict:
    es = dict(_dec(reply.get("executionStats") or {}))
    stages = es.get("executionStages")
    if sharded and isinstance(stages, Mapping) and str(stages.get("stage", "")).isupper():
        stages = add_sharding_filter(stages, key_fields, True)
    out = {"shardName": shard, "executionSuccess": es.get("executionSuccess", True),
           "nReturned": es.get("nReturned", 0), "executionTimeMillis": es.get("executionTimeMillis", 0),
           "totalKeysExamined": es.get("totalKeysExamined", 0), "totalDocsExamined": es.get("totalDocsExamined", 0),
           "executionStages": stages}
    if "allPlansExecution" in es:
        out["allPlansExecution"] = es["allPlansExecution"]
    return out


def explain(r: Any, op: Any, make_op: Any) -> dict:
    """The explain command on the router."""
    cmd = op.cmd
    inner = cmd.get("explain")
    if not isinstance(inner, Mapping) or not inner:
        raise D.CommandError("explain command requires a nested object", 2)
    verbosity = cmd.get("verbosity", "allPlansExecution")
    if verbosity not in ("queryPlanner", "executionStats", "allPlansExecution"):
        raise D.CommandError("verbosity string must be one of {'queryPlanner', 'executionStats', "
                             "'allPlansExecution'}", 9)
    inner = {k: v for k, v in inner.items() if k not in D._GENERIC or k in ("comment", "maxTimeMS", "let")}
    name = next(iter(inner))
    sub = make_op(r, op.db, {**inner, **{k: v for k, v in cmd.items() if k in ("lsid",)}}, op.ctx, op.codec)
    if name == "aggregate":
        inner.pop("cursor", None)
        return explain_aggregate(r, sub, inner.get("pipeline") or [], verbosity)
    if name not in ("find", "count", "distinct", "update", "delete", "findAndModify", "findandmodify"):
        raise D.CommandError("Explain failed due to unknown command: %s" % name, 59)
    ns = "%s.%s" % (op.db, inner[name])
    table = r.table(ns)
    base = r.view_over_sharded(op.db, inner[name]) if table is None else None
    if base is not None:
        raise D.CommandError(not_modelled("Explaining a read of a view over a sharded collection (%s)" % base,
                                          "explain the query on %s itself" % base), 115)
    if name == "find":
        flt, collation = inner.get("filter"), inner.get("collation")
    elif name in ("count", "distinct"):
        flt, collation = inner.get("query"), inner.get("collation")
    elif name in ("findAndModify", "findandmodify"):
        flt, collation = inner.get("query"), inner.get("collation")
    else:
        stmts = inner.get("updates" if name == "update" else "deletes") or [{}]
        flt, collation = _dec(stmts[0]).get("q"), _dec(stmts[0]).get("collation")
    targets = r.targets(ns, flt, collation)
    body = dict(inner)
    skip = int(inner.get("skip") or 0) if name == "find" else 0
    if name == "find" and inner.get("limit") and len(targets) > 1:
        body["limit"] = skip + int(inner["limit"])
        body.pop("skip", None)
    t0 = time.perf_counter()
    replies = []
    for s in targets:
        reply = r.on_shard(s, op.db, {"explain": body, "verbosity": verbosity}, op.codec)
        if not reply.get("ok"):
            raise OperationFailure(reply.get("errmsg", ""), reply.get("code"), reply)
        replies.append((s, reply))
    millis = int((time.perf_counter() - t0) * 1000)
    sharded = table is not None
    key_fields = table.key.fields if sharded else []
    if len(targets) == 1:
        stage = "SINGLE_SHARD"
    elif name in ("update", "delete", "findAndModify", "findandmodify"):
        stage = "SHARD_WRITE"
    elif name == "find" and inner.get("sort"):
        stage = "SHARD_MERGE_SORT"
    else:
        stage = "SHARD_MERGE"
    out: dict[str, Any] = {}
    if replies and "explainVersion" in replies[0][1]:
        out["explainVersion"] = replies[0][1]["explainVersion"]
    out["queryPlanner"] = {"mongosPlannerVersion": 1,
                           "winningPlan": {"stage": stage,
                                           "shards": [_shard_qp(r, s, rep, sharded, key_fields)
                                                      for s, rep in replies]}}
    if verbosity != "queryPlanner":
        shards = [_shard_es(s, rep, sharded, key_fields) for s, rep in replies]
        n = sum(int(x["nReturned"]) for x in shards)
        if name == "find":
            n = max(n - skip, 0) if len(targets) > 1 else n
            if inner.get("limit"):
                n = min(n, abs(int(inner["limit"])))
        keys = sum(int(x["totalKeysExamined"]) for x in shards)
        docs = sum(int(x["totalDocsExamined"]) for x in shards)
        out["executionStats"] = {
            "nReturned": n, "executionTimeMillis": millis, "totalKeysExamined": keys, "totalDocsExamined": docs,
            "executionStages": {"stage": stage, "nReturned": n, "executionTimeMillis": millis,
                                "totalKeysExamined": keys, "totalDocsExamined": docs,
                                "totalChildMillis": bson.Int64(sum(int(x["executionTimeMillis"]) for x in shards)),
                                "shards": shards}}
    out.update(_tail(r, cmd))
    return out


def _tail(r: Any, cmd: dict) -> dict:
    return {"serverInfo": {"host": r.host, "port": r.port, "version": D.SERVED_VERSION,
                           "gitVersion": "labkit-embedded"},
            "serverParameters": {"internalQueryFacetBufferSizeBytes": 104857600,
                                 "internalQueryFacetMaxOutputDocSizeBytes": 104857600,
                                 "internalLookupStageIntermediateDocumentMaxSizeBytes": 104857600,
                                 "internalDocumentSourceGroupMaxMemoryBytes": 104857600,
                                 "internalQueryMaxBlockingSortMemoryUsageBytes": 104857600,
                                 "internalQueryProhibitBlockingMergeOnMongoS": 0,
                                 "internalQueryMaxAddToSetBytes": 104857600,
                                 "internalDocumentSourceSetWindowFieldsMaxMemoryBytes": 104857600,
                                 "internalQueryFrameworkControl": "trySbeRestricted"},
            "command": {k: v for k, v in (cmd.get("explain") or {}).items()} if isinstance(cmd.get("explain"),
                                                                                         Mapping) else cmd,
            "ok": 1.0}


def explain_aggregate(r: Any, op: Any, pipeline: list, verbosity: str) -> dict:
    """An aggregation's explain through the router."""
    ns = op.ns
    table = r.table(ns)
    sharded_foreign = [c for _s, c in foreign(pipeline) if r.table("%s.%s" % (op.db, c)) is not None]
    body = {k: v for k, v in op.cmd.items() if k not in ("explain", "cursor", "$db", "lsid", "txnNumber",
                                                         "autocommit", "startTransaction")}
    if table is None and not sharded_foreign:
        shard = r.primary_of(op.db)
        plan_targets, split, shards_part, merger_part, merge_type = [shard], False, pipeline, [], None
    else:
        plan = plan_aggregate(r, op, pipeline)
        plan_targets, split = plan.targets, plan.split
        shards_part, merger_part, merge_type = plan.shards_part, plan.merger_part, plan.merge_type
    key_fields = table.key.fields if table is not None else []
    out: dict[str, Any] = {}
    if split:
        out["mergeType"] = merge_type
        if merge_type == "specificShard":
            out["mergeShard"] = r.primary_of(op.db)
        merge_spec: dict[str, Any] = {}
        merge_spec.update({"compareWholeSortKey": False, "tailableMode": "normal", "nss": ns,
                           "allowPartialResults": False, "recordRemoteOpWaitTime": False,
                           "requestQueryStatsFromRemotes": False})
        sort = shards_part[-1]["$sort"] if shards_part and "$sort" in shards_part[-1] else None
        if sort:
            merge_spec["sort"] = sort
        out["splitPipeline"] = {"shardsPart": list(shards_part),
                                "mergerPart": [{"$mergeCursors": merge_spec}] + list(merger_part)}
    else:
        out["splitPipeline"] = None
    shards: dict[str, Any] = {}
    for s in plan_targets:
        reply = r.on_shard(s, op.db, {"explain": {**body, "pipeline": shards_part if split else pipeline},
                                      "verbosity": verbosity}, op.codec)
        if not reply.get("ok"):
            raise OperationFailure(reply.get("errmsg", ""), reply.get("code"), reply)
        entry: dict[str, Any] = {"host": r.shard_host(s)}
        for k, v in reply.items():
            if k in ("ok", "$clusterTime", "operationTime", "serverInfo", "serverParameters", "command"):
                continue
            if k == "queryPlanner" and table is not None:
                v = dict(_dec(v))
                wp = dict(v.get("winningPlan") or {})
                if "queryPlan" in wp:
                    wp["queryPlan"] = add_sharding_filter(wp["queryPlan"], key_fields, False)
                else:
                    wp = add_sharding_filter(wp, key_fields, False)
                v["winningPlan"] = wp
            if k == "executionStats" and table is not None:
                v = dict(_dec(v))
                stages = v.get("executionStages")
                if isinstance(stages, Mapping) and str(stages.get("stage", "")).isupper():
                    v["executionStages"] = add_sharding_filter(stages, key_fields, True)
            entry[k] = v
        shards[s] = entry
    out["shards"] = shards
    tail = _tail(r, {"explain": {**body, "pipeline": pipeline}})
    out.update(tail)
    return out


__all__ = ["explain", "explain_aggregate", "add_sharding_filter"]
