"""Aggregations pushed down to the slot-based engine (SBE), as MongoDB 8.0 explains them.

Which pipelines (8.0 default ``internalQueryFrameworkControl: "trySbeRestricted"``): the stages the find layer
absorbs ($match / $sort / $skip / $limit at the front), then a run of ``$group`` and ``$lookup`` stages that SBE
can execute. A pipeline whose first stage after that front is not an eligible ``$group``/``$lookup`` stays in
the classic engine (``$cursor`` shape, explainVersion "1"). Not pushed down (rules file §7, MM
``jstests/noPassthrough/query/lookup/lookup_pushdown.js``): ``$lookup`` with ``let``/``pipeline``, from another
database, a ``$lookup`` followed by an ``$unwind`` of its ``as`` field (the classic engine absorbs it), a
``$group`` with an accumulator SBE does not implement (``$accumulator``, ``$function`` expressions); and
(checked by the caller, aggregation.py) a ``$cursor`` query the planner answers with a COUNT_SCAN
(``isQueryPlanSbeCompatible``) or one eligible for IDHACK, a simple ``_id`` equality without hint or skip
(query_utils.cpp ``isQuerySbeCompatible``; 8.0 runs it on the express path, get_executor.cpp
``getExecutorFind``).

The join strategy (src/mongo/db/query/planner_analysis.cpp ``determineLookupStrategy``):
* the foreign collection does not exist -> ``NonExistentForeignCollection``;
* a B-tree or hashed index whose first field is ``foreignField``, not partial, not sparse, with the query's
  collation -> ``IndexedLoopJoin`` (fewest key fields first, B-tree before hashed, then key pattern order);
* else ``allowDiskUse`` (default true) and the foreign collection within the hash-join limits
  (``internalQueryCollectionMaxNoOfDocumentsToChooseHashJoin`` 10,000 documents,
  ``...MaxDataSizeBytesToChooseHashJoin`` and ``...MaxStorageSizeBytesToChooseHashJoin`` 100 MB)
  -> ``HashJoin``;
* else ``NestedLoopJoin``.

Cost figures in executionStats: the local side's own keys/documents, plus per strategy: HashJoin reads the
foreign collection once (its document count); NestedLoopJoin scans it once per local document
(local x foreign); IndexedLoopJoin seeks the index per local document (keys = matching index entries,
documents = matched foreign documents; SBE counts no end-of-range key). Exact: the explain layout
(explainVersion "2", ``queryPlanner.winningPlan.queryPlan`` QSN nodes with ``planNodeId``, EQ_LOOKUP fields,
strategy, totals). Approximate: ``slotBasedPlan`` text and the SBE ``executionStages`` tree (stage names as
the server's, per-stage counters simplified).
"""
from __future__ import annotations

from typing import Any

import bson

HASH_JOIN_MAX_DOCS = 10_000               # internalQueryCollectionMaxNoOfDocumentsToChooseHashJoin
HASH_JOIN_MAX_BYTES = 100 * 1024 * 1024   # internalQueryCollectionMaxDataSizeBytesToChooseHashJoin
HASH_JOIN_MAX_STORAGE = 100 * 1024 * 1024  # internalQueryCollectionMaxStorageSizeBytesToChooseHashJoin

# $percentile / $median mark the group SBE-incompatible (accumulator_percentile.cpp parseArgs)
_NO_SBE_ACCUMULATORS = {"$accumulator", "$function", "$percentile", "$median"}
_FIND_STAGES = ("$match", "$sort", "$skip", "$limit")


def _uses(obj: Any, names: set[str]) -> bool:
    if isinstance(obj, dict):
        return any(k in names or _uses(v, names) for k, v in obj.items())
    if isinstance(obj, list):
        return any(_uses(x, names) for x in obj)
    return False


def _eligible(stage: dict, nxt: dict | None) -> bool:
    if not isinstance(stage, dict) or len(stage) != 1:
        return False
    (name, arg), = stage.items()
    if name == "$group":
        return isinstance(arg, dict) and not _uses(arg, _NO_SBE_ACCUMULATORS)
    if name == "$lookup":
        if not isinstance(arg, dict) or "pipeline" in arg or "let" in arg or not isinstance(arg.get("from"), str):
            return False
        if "localField" not in arg or "foreignField" not in arg:
            return False
        if isinstance(nxt, dict) and "$unwind" in nxt:
            u = nxt["$unwind"]
            path = u if isinstance(u, str) else (u.get("path") if isinstance(u, dict) else None)
            if path == "$" + str(arg.get("as")):
                return False  # $lookup absorbs the $unwind: classic (EQ_LOOKUP_UNWIND is behind a flag)
        return True
    return False


def pushdown_split(pipeline: list, n_find: int) -> int:
    """How many stages (from the start) run in SBE: the find-layer front plus the eligible $group/$lookup
    run that follows it; 0 when the pipeline stays classic."""
    i = n_find
    while i < len(pipeline):
        nxt = pipeline[i + 1] if i + 1 < len(pipeline) else None
        if not _eligible(pipeline[i], nxt):
            break
        i += 1
    return i if i > n_find else 0


def _coll_bytes(coll) -> int:
    return sum(len(bson.encode(d)) for d in coll._store.docs.values())


def lookup_strategy(foreign_coll, foreign_field: str, allow_disk_use: bool,
                    collation: dict | None = None) -> tuple[str, Any]:
    """(strategy, index or None) as ``determineLookupStrategy``."""
    st = foreign_coll._store
    if not st.is_created:
        return "NonExistentForeignCollection", None
    cands = []
    for ix in st.ix.values():
        s = ix.spec
        if s.hidden or s.partial is not None or s.sparse or s.fields[0] != foreign_field:
            continue
        if any(isinstance(d, str) and d != "hashed" for _, d in s.key):
            continue
        if s.collation != collation:
            continue
        cands.append(ix)
    if cands:
        cands.sort(key=lambda ix: (len(ix.spec.fields), 1 if ix.spec.hashed else 0,
                                   bson.encode(dict(ix.spec.key))))
        return "IndexedLoopJoin", cands[0]
    if allow_disk_use and len(st.docs) <= HASH_JOIN_MAX_DOCS:
        size = _coll_bytes(foreign_coll)
        if size <= HASH_JOIN_MAX_BYTES and size <= HASH_JOIN_MAX_STORAGE:
            return "HashJoin", None
    return "NestedLoopJoin", None


def _number(node: dict, counter: list[int]) -> dict:
    """QSN tree with planNodeId numbered from the leaves up (the server numbers children first)."""
    out = {}
    kids = []
    if "inputStage" in node:
        kids = [_number(node["inputStage"], counter)]
    elif "inputStages" in node:
        kids = [_number(c, counter) for c in node["inputStages"]]
    counter[0] += 1
    out["stage"] = node["stage"]
    out["planNodeId"] = counter[0]
    for k, v in node.items():
        if k in ("stage", "inputStage", "inputStages", "isCached"):
            continue
        out[k] = v
    if len(kids) == 1:
        out["inputStage"] = kids[0]
    elif kids:
        out["inputStages"] = kids
    return out


def _leaf_stage(plan: dict) -> str:
    while "inputStage" in plan:
        plan = plan["inputStage"]
    return plan["stage"]


def _sbe_exec(name: str, node_id: int, n: int, child: dict | None = None, **extra: Any) -> dict:
    d: dict[str, Any] = {"stage": name, "planNodeId": node_id, "nReturned": n, "executionTimeMillisEstimate": 0,
                         "opens": 1, "closes": 1, "saveState": 0, "restoreState": 0, "isEOF": 1}
    d.update(extra)
    if child is not None:
        d["inputStage"] = child
    return d


def explain_pushdown(coll, pipeline: list, n_find: int, n_sbe: int, local: dict, infos: list[dict],
                     n_out: int, allow_disk_use: bool, verbosity: str, millis: int) -> tuple[dict, dict | None,
                                                                                            int, int]:
    """The SBE part of an aggregate explain: (queryPlanner, executionStats or None, keys, docs).

    ``local``: the find layer's classic plan ({"winning", "keys", "docs", "nret", "filter"}); ``infos``: one
    dict per pushed-down stage ({"inputDocs", "matchedDocs", "matchedKeys"} for $lookup, {"inputDocs",
    "groups"} for $group)."""
    from .explain_doc import _query_planner
    db = coll.database
    counter = [0]
    winning = local["winning"]
    if winning["stage"] in ("PROJECTION_SIMPLE", "PROJECTION_DEFAULT"):
        # the stages SBE runs read the fields from the documents themselves: no projection node above a
        # FETCH or COLLSCAN (SERVER-60101, 5.1: "eliminate this stage" under GROUP); a PROJECTION_COVERED stays,
        # it is what makes the values from the index keys
        winning = winning["inputStage"]
    qsn = _number(winning, counter)
    keys, docs = local["keys"], local["docs"]
    # the dependency projection pushed down with the query (pipeline_d.cpp) is an SBE project over the scan
    proj = qsn if qsn["stage"] == "PROJECTION_COVERED" else None
    leaf = qsn["inputStage"] if proj is not None else qsn
    sbe: dict = {"stage": "scan" if _leaf_stage(winning) == "COLLSCAN" else "ixseek",
                 "planNodeId": leaf["planNodeId"], "nReturned": local["nret"], "executionTimeMillisEstimate": 0,
                 "opens": 1, "closes": 1, "saveState": 0, "restoreState": 0, "isEOF": 1,
                 "numReads": local["docs"] + local["keys"]}
    if proj is not None:
        sbe = _sbe_exec("project", proj["planNodeId"], local["nret"], sbe)
    slots = []
    it = iter(infos)
    for stage in pipeline[n_find:n_sbe]:
        (name, arg), = stage.items()
        info = next(it)
        counter[0] += 1
        nid = counter[0]
        if name == "$group":
            qsn = {"stage": "GROUP", "planNodeId": nid, "inputStage": qsn}
            sbe = _sbe_exec("group", nid, info["groups"], sbe, groupBySlots=[], expressions={},
                            usedDisk=False, spills=0, spilledRecords=0, spilledDataStorageSize=0)
            slots.append("[%d] group [s%d] []" % (nid, nid))
            continue
        foreign = db.get_collection(arg["from"])
        strategy, ix = lookup_strategy(foreign, arg["foreignField"], allow_disk_use)
        node: dict[str, Any] = {"stage": "EQ_LOOKUP", "planNodeId": nid,
                                "foreignCollection": "%s.%s" % (db.name, arg["from"]),
                                "localField": arg["localField"], "foreignField": arg["foreignField"],
                                "asField": arg["as"], "strategy": strategy}
        nfor = len(foreign._store.docs) if foreign._store.is_created else 0
        n_in = info["inputDocs"]
        if strategy == "IndexedLoopJoin":
            node["indexName"] = ix.spec.name
            node["indexKeyPattern"] = dict(ix.spec.key)
            k, d = info["matchedKeys"], info["matchedDocs"]
            inner = {"stage": "ixseek", "indexName": ix.spec.name, "keysExamined": k, "seeks": n_in}
            sbe = _sbe_exec("nlj", nid, n_in, sbe, innerStage=dict(inner, nReturned=d))
        elif strategy == "HashJoin":
            k, d = 0, nfor
            sbe = _sbe_exec("hash_lookup", nid, n_in, sbe, innerStage={"stage": "scan", "numReads": nfor},
                            usedDisk=False, spilledRecords=0, spilledBytes=0)
        elif strategy == "NestedLoopJoin":
            k, d = 0, n_in * nfor
            sbe = _sbe_exec("nlj", nid, n_in, sbe, innerStage={"stage": "scan", "numReads": n_in * nfor})
        else:
            k, d = 0, 0
            sbe = _sbe_exec("project", nid, n_in, sbe)
        keys += k
        docs += d
        node["inputStage"] = qsn
        qsn = node
        slots.append("[%d] %s [%s]" % (nid, {"HashJoin": "hash_lookup", "IndexedLoopJoin": "nlj ixseek",
                                               "NestedLoopJoin": "nlj scan"}.get(strategy, "project"),
                                         arg["from"]))
    winning = {"isCached": False, "queryPlan": qsn,
               "slotBasedPlan": {"slots": "$$RESULT=s%d env: { }" % counter[0],
                                 "stages": "\n".join(reversed(slots)),
                                 "labkit": "approximate: the server prints its compiled SBE stage tree here"}}
    ns = "%s.%s" % (db.name, coll.name)
    qp = _query_planner(ns, local["filter"] or {}, winning, [], coll=coll)
    qp["queryHash"] = qp["planCacheShapeHash"]
    if verbosity == "queryPlanner":
        return qp, None, keys, docs
    es = {"executionSuccess": True, "nReturned": n_out, "executionTimeMillis": millis,
          "totalKeysExamined": keys, "totalDocsExamined": docs, "executionStages": sbe}
    if verbosity == "allPlansExecution":
        es["allPlansExecution"] = []
    return qp, es, keys, docs
