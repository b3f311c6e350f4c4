"""Server-shaped explain documents (explainVersion "1", classic engine) for find / count / distinct."""
from __future__ import annotations

import time
from typing import Any

from mongomock import OperationFailure

from .planner import (Planner, Query, explaining, express_eligible, note_access, plan_and_run, totals)
from ..exec.stages import IndexScan, index_fields

VERBOSITIES = ("queryPlanner", "executionStats", "allPlansExecution")
LABKIT_MARKER = {"engine": "embedded", "models": "MongoDB 8.0 classic engine"}


def server_info() -> dict:
    return {"host": "labkit-embedded", "port": 0, "version": "8.0.0", "gitVersion": "labkit-embedded"}


def _check_verbosity(v: str) -> str:
    if v not in VERBOSITIES:
        raise OperationFailure("verbosity string must be one of {'queryPlanner', 'executionStats', "
                               "'allPlansExecution'}", 2)
    return v


def _parsed_query(filter_: dict) -> dict:
    if not filter_:
        return {}
    items = []
    for k, v in filter_.items():
        if k.startswith("$"):
            items.append({k: v})
        elif isinstance(v, dict) and v and all(str(x).startswith("$") for x in v):
            for op, arg in v.items():
                items.append({k: {op: arg}})
        else:
            items.append({k: {"$eq": v}})
    return items[0] if len(items) == 1 else {"$and": items}


def _query_planner(ns: str, filter_: dict, winning: dict, rejected: list, extra: dict | None = None) -> dict:
    qp = {"namespace": ns, "parsedQuery": _parsed_query(filter_), "indexFilterSet": False,
          "planCacheShapeHash": "0" * 8, "planCacheKey": "0" * 8, "optimizationTimeMillis": 0,
          "maxIndexedOrSolutionsReached": False, "maxIndexedAndSolutionsReached": False,
          "maxScansToExplodeReached": False, "prunedSimilarIndexes": False,
          "winningPlan": winning, "rejectedPlans": rejected}
    if extra:
        qp.update(extra)
    return qp


def _wrap(doc: dict, command: dict | None, verbosity: str) -> dict:
    if command is not None:
        doc["command"] = command
    doc["serverInfo"] = server_info()
    doc["serverParameters"] = {"internalQueryFrameworkControl": "trySbeRestricted",
                               "internalQueryPlanEvaluationMaxResults": 101,
                               "internalQueryMaxScansToExplode": 200}
    doc["labkit"] = dict(LABKIT_MARKER)
    doc["ok"] = 1.0
    return doc


def explain_query(coll, q: Query, verbosity: str = "allPlansExecution", command: dict | None = None) -> dict:
    """The explain document of a find / count / distinct, as an 8.0 server shapes it."""
    _check_verbosity(verbosity)
    with explaining():
        return _explain_query(coll, q, verbosity, command)


def _explain_query(coll, q: Query, verbosity: str, command: dict | None) -> dict:
    st = coll._store
    ns = "%s.%s" % (coll.database.name, coll.name)
    exists = st.is_created
    if not exists:
        plan = {"stage": "EOF", "type": "nonExistentNamespace"}
        doc: dict[str, Any] = {"explainVersion": "1", "queryPlanner": _query_planner(ns, q.filter, plan, [])}
        if verbosity != "queryPlanner":
            doc["executionStats"] = {"executionSuccess": True, "nReturned": 0, "executionTimeMillis": 0,
                                     "totalKeysExamined": 0, "totalDocsExamined": 0,
                                     "executionStages": {"stage": "EOF", "type": "nonExistentNamespace",
                                                         "nReturned": 0, "executionTimeMillisEstimate": 0,
                                                         "works": 1, "advanced": 0, "needTime": 0,
                                                         "needYield": 0, "saveState": 0, "restoreState": 0,
                                                         "isEOF": 1}}
            if verbosity == "allPlansExecution":
                doc["executionStats"]["allPlansExecution"] = []
        return _wrap(doc, command, verbosity)
    if q.kind == "count" and not q.filter and q.hint is None:
        return _explain_fast_count(coll, q, ns, verbosity, command)
    if q.kind == "distinct":
        d = _explain_distinct_scan(coll, q, ns, verbosity, command)
        if d is not None:
            return d
    count_skip = count_limit = 0
    if q.kind == "count":
        # the COUNT stage applies skip and limit itself (count.cpp: nSkipped, stops at nCounted == limit);
        # the plan below it is planned without them
        count_skip, count_limit = q.skip, q.limit
        q = Query(q.filter, hint=q.hint, kind="count")
    try:
        ex = coll._run(q, explain=True, stop_after=(count_skip + count_limit) if count_limit else None)
    except OperationFailure as err:
        if err.code != 292 or verbosity == "queryPlanner":
            raise
        return _explain_failed(coll, q, ns, verbosity, command, err)
    root = ex.winner.root
    express = ex.notes.get("express")
    winning = root.plan_doc()
    winning["isCached"] = False
    rejected = []
    for c in ex.cands:
        if c is not ex.winner:
            p = c.root.plan_doc()
            p["isCached"] = False
            rejected.append(p)
    keys, docs = totals(root)
    n = len(ex.results)
    exec_root = root.exec_doc()
    if q.kind == "count":
        n_skipped = min(n, count_skip)
        n_counted = n - n_skipped
        stopped = bool(count_limit) and n_counted >= count_limit  # COUNT is EOF at its limit
        if stopped:
            n_counted = count_limit
        # count.cpp: each COUNT work() is one work() of its child, and the executor stops as soon as COUNT is
        # EOF (its child at EOF, or nCounted at the limit: then the child is not asked again)
        works = root.works
        winning = {"stage": "COUNT", "inputStage": {k: v for k, v in winning.items() if k != "isCached"},
                   "isCached": False}
        exec_root = {"stage": "COUNT", "nReturned": 0, "executionTimeMillisEstimate": 0,
                     "works": works, "advanced": 0, "needTime": works - (0 if stopped else 1), "needYield": 0,
                     "saveState": 0, "restoreState": 0, "isEOF": 1, "nCounted": n_counted,
                     "nSkipped": n_skipped, "inputStage": exec_root}
        n_ret = 0
    else:
        n_ret = n
    if express:
        winning.pop("isCached", None)
        winning = dict({"isCached": False}, **winning)
    qp = _query_planner(ns, q.filter, winning, rejected)
    doc = {"explainVersion": "1", "queryPlanner": qp}
    if verbosity != "queryPlanner":
        es: dict[str, Any] = {"executionSuccess": True, "nReturned": n_ret, "executionTimeMillis": ex.millis,
                              "totalKeysExamined": keys, "totalDocsExamined": docs, "executionStages": exec_root}
        if verbosity == "allPlansExecution":
            es["allPlansExecution"] = ex.notes.get("trial") or _trial_docs(ex) if len(ex.cands) > 1 else []
        doc["executionStats"] = es
    return _wrap(doc, command, verbosity)


def _explain_failed(coll, q: Query, ns: str, verbosity: str, command: dict | None, err) -> dict:
    """An executionStats explain whose execution failed (e.g. 292, a sort over 100 MB without disk use): the
    server still answers, with ``executionSuccess: false`` and the error in ``executionStats``."""
    planner = Planner(coll._store, q)
    cands, _ = planner.candidates()
    root = cands[0].build()
    winning = dict(root.plan_doc(), isCached=False)
    doc: dict[str, Any] = {"explainVersion": "1", "queryPlanner": _query_planner(ns, q.filter, winning, [])}
    es: dict[str, Any] = {"executionSuccess": False, "errorMessage": str(err).split(", full error")[0],
                          "errorCode": err.code, "nReturned": 0, "executionTimeMillis": 0,
                          "totalKeysExamined": 0, "totalDocsExamined": 0, "executionStages": root.exec_doc()}
    if verbosity == "allPlansExecution":
        es["allPlansExecution"] = []
    doc["executionStats"] = es
    return _wrap(doc, command, verbosity)


def _trial_docs(ex) -> list:
    out = []
    for c in ex.cands:
        k, d = totals(c.root)
        out.append({"nReturned": c.root.advanced, "executionTimeMillisEstimate": 0, "totalKeysExamined": k,
                    "totalDocsExamined": d, "score": round(c.score, 4), "executionStages": c.root.exec_doc()})
    return out


def _explain_fast_count(coll, q, ns, verbosity, command) -> dict:
    total = len(coll._store.docs)
    skipped = min(total, q.skip)
    n = total - skipped if not q.limit else min(total - skipped, q.limit)
    plan = {"stage": "RECORD_STORE_FAST_COUNT", "isCached": False}
    doc: dict[str, Any] = {"explainVersion": "1", "queryPlanner": _query_planner(ns, {}, plan, [])}
    if verbosity != "queryPlanner":
        doc["executionStats"] = {"executionSuccess": True, "nReturned": 0, "executionTimeMillis": 0,
                                 "totalKeysExamined": 0, "totalDocsExamined": 0,
                                 "executionStages": {"stage": "RECORD_STORE_FAST_COUNT", "nReturned": 0,
                                                     "executionTimeMillisEstimate": 0, "works": 1, "advanced": 0,
                                                     "needTime": 0, "needYield": 0, "saveState": 0,
                                                     "restoreState": 0, "isEOF": 1, "nCounted": n,
                                                     "nSkipped": skipped}}
        if verbosity == "allPlansExecution":
            doc["executionStats"]["allPlansExecution"] = []
    return _wrap(doc, command, verbosity)


def _explain_distinct_scan(coll, q, ns, verbosity, command) -> dict | None:
    """DISTINCT_SCAN when an index leads with the key, is not multikey and the filter is empty or exactly
    answered by that index's bounds."""
    from ..bson import keys as K
    from ..index.bounds import full
    st = coll._store
    key = q.distinct_key
    planner = Planner(st, q)
    if planner.parsed.false or planner.parsed.ors or planner.parsed.others:
        return None
    by_path = planner.parsed.by_path()
    best = None
    for ix in st.ix.values():
        if ix.spec.hidden or ix.spec.fields[0] != key or ix.multikey or ix.spec.sparse or ix.spec.partial \
                or ix.spec.hashed:
            continue
        if q.hint is not None and planner.hinted_index() is not ix:
            continue
        bounds, exact, lead = planner.assign(ix, by_path)
        if len(exact) != len(planner.parsed.preds):
            continue
        if any(p not in exact for p in planner.parsed.preds):
            continue
        if best is None or len(ix.spec.fields) < len(best[0].spec.fields):
            best = (ix, bounds)
    if best is None:
        return None
    ix, bounds = best
    t0 = time.perf_counter()
    scan = IndexScan(ix, bounds, 1)
    # distinct scan: one key per distinct value of the first field (skips the rest)
    keys_examined = 0
    n = 0
    last = None
    while True:
        s = scan.work()
        if s == 2:
            break
        if s == 0:
            k = scan.out[2][0]
            if k != last:
                n += 1
                last = k
    keys_examined = n + (1 if n and len(st.docs) else 0)
    note_access(ix)
    plan = {"stage": "PROJECTION_COVERED", "transformBy": {key: 1, "_id": 0},
            "inputStage": dict({"stage": "DISTINCT_SCAN"}, **index_fields(ix), direction="forward",
                               indexBounds=scan.bounds_doc())}
    winning = dict(plan, isCached=False)
    doc: dict[str, Any] = {"explainVersion": "1", "queryPlanner": _query_planner(ns, q.filter, winning, [])}
    if verbosity != "queryPlanner":
        inner = dict(plan["inputStage"])
        inner.update({"nReturned": n, "executionTimeMillisEstimate": 0, "works": keys_examined + 1,
                      "advanced": n, "needTime": keys_examined - n if keys_examined > n else 0, "needYield": 0,
                      "saveState": 0, "restoreState": 0, "isEOF": 1, "keysExamined": keys_examined})
        outer = {"stage": "PROJECTION_COVERED", "nReturned": n, "executionTimeMillisEstimate": 0,
                 "works": keys_examined + 1, "advanced": n, "needTime": inner["needTime"], "needYield": 0,
                 "saveState": 0, "restoreState": 0, "isEOF": 1, "transformBy": {key: 1, "_id": 0},
                 "inputStage": inner}
        doc["executionStats"] = {"executionSuccess": True, "nReturned": n,
                                 "executionTimeMillis": int((time.perf_counter() - t0) * 1000),
                                 "totalKeysExamined": keys_examined, "totalDocsExamined": 0,
                                 "executionStages": outer}
        if verbosity == "allPlansExecution":
            doc["executionStats"]["allPlansExecution"] = []
    return _wrap(doc, command, verbosity)
