"""Server-shaped explain documents (explainVersion "1", classic engine) for find / count / distinct."""
from __future__ import annotations

import contextlib
import contextvars
import itertools
import linecache
import os
import re
import sys
import time
from typing import Any, Iterator

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


def _shape_value(v: Any) -> Any:
    """A value as a query shape keeps it: its kind, not the value (query_shape/, canonical_query_encoder.cpp)."""
    if isinstance(v, dict):
        if v and all(isinstance(k, str) and k.startswith("$") for k in v):
            return {k: (_shape_filter(x) if k in ("$elemMatch", "$not") and isinstance(x, dict) else
                        [_shape_filter(c) if isinstance(c, dict) else _shape_value(c) for c in x]
                        if k in ("$and", "$or", "$nor") and isinstance(x, list) else _shape_value(x))
                    for k, x in v.items()}
        return "?object"
    if isinstance(v, list):
        return "?array"
    if v is None:
        return "?null"
    if hasattr(v, "pattern") and hasattr(v, "flags"):
        return "?regex"
    return "?"


def _shape_filter(filter_: Any) -> Any:
    if not isinstance(filter_, dict):
        return _shape_value(filter_)
    out = {}
    for k, v in filter_.items():
        if k in ("$and", "$or", "$nor") and isinstance(v, list):
            out[k] = [_shape_filter(c) for c in v]
        elif k == "$expr":
            out[k] = "?expr"
        elif isinstance(k, str) and k.startswith("$"):
            out[k] = _shape_value(v)
        elif isinstance(v, dict) and v and all(isinstance(x, str) and x.startswith("$") for x in v):
            out[k] = _shape_value(v)
        else:
            out[k] = {"$eq": _shape_value(v)}
    return out


def plan_cache_hashes(kind: str, filter_: Any, sort: Any = None, projection: Any = None,
                      indexes: Any = None) -> tuple[str, str]:
    """``(planCacheShapeHash, planCacheKey)``: 8 hex digits computed from the query's shape, as the server's
    are (src/mongo/db/query/canonical_query_encoder.cpp: the match expression's operators and paths, the sort and
    the projection, not the values), so equal shapes hash equal and different shapes differ; the key also covers
    the collection's indexes (name and key pattern), as the server's adds the indexes' discriminators. The hash
    function is CRC-32 (the server's is its own): the figures are equal to themselves, not to a server's."""
    import zlib
    sort = [tuple(x) for x in (sort.items() if isinstance(sort, dict) else sort or ())]
    projection = sorted(projection.items(), key=repr) if isinstance(projection, dict) else list(projection or ())
    shape = repr((kind, _shape_filter(filter_ or {}), sort, projection))
    shape_hash = "%08X" % zlib.crc32(shape.encode())
    key = "%08X" % zlib.crc32((shape_hash + repr(indexes or ())).encode())
    return shape_hash, key


def _query_planner(ns: str, filter_: dict, winning: dict, rejected: list, extra: dict | None = None,
                   q: Any = None, coll: Any = None) -> dict:
    kind = getattr(q, "kind", "find") if q is not None else "aggregate"
    indexes = sorted((n, repr(ix.spec.key)) for n, ix in coll._store.ix.items()) if coll is not None and \
        coll._store.is_created else ()
    shape_hash, key = plan_cache_hashes(kind, filter_, getattr(q, "sort", None), getattr(q, "projection", None),
                                        indexes)
    qp = {"namespace": ns, "parsedQuery": _parsed_query(filter_), "indexFilterSet": False,
          "planCacheShapeHash": shape_hash, "planCacheKey": key, "optimizationTimeMillis": 0,
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
    with explaining(), outermost_explain() as outer:
        doc = _explain_query(coll, q, verbosity, command)
    if outer and os.environ.get(PLAN_RECORD_ENV):
        from .collate import current
        cmd = dict(command) if command is not None else _command_of(coll.name, q)
        if current() is not None and "collation" not in cmd:  # a cursor's collation, applied around the explain
            cmd["collation"] = current()
        record_plan("explain", coll._store, getattr(coll, "_db_store", None), "%s.%s" % (coll.database.name, coll.name),
                    cmd, doc)
    return doc


# --- the plan record (tests/test_one_cost.py: one query, one cost) -------------------------------------------
#: a file name: every explain with execution statistics (and every profiled operation) is appended to it as one
#: JSON line, with the namespace, the command, the collection's data version and index set, and the figures
PLAN_RECORD_ENV = "LABKIT_PLAN_RECORD"
_NESTED: contextvars.ContextVar[bool] = contextvars.ContextVar("labkit_explain_nested", default=False)
_SERIALS = itertools.count(1)
_CELL_FILE = re.compile(r"ipykernel_\d+[/\\]")


@contextlib.contextmanager
def outermost_explain() -> Iterator[bool]:
    """True for the outermost explain only (a time-series or view explain runs another one inside)."""
    outer = not _NESTED.get()
    token = _NESTED.set(True)
    try:
        yield outer
    finally:
        _NESTED.reset(token)


def explain_totals(doc: Any) -> tuple[int, int]:
    """Keys and documents examined over every ``executionStats`` of an explain document (an aggregate's carry
    one per part) and the classic ``$lookup`` stages' totals."""
    keys = docs = 0
    todo = [doc]
    while todo:
        node = todo.pop()
        if isinstance(node, dict):
            stats = node.get("executionStats")
            if isinstance(stats, dict) and "totalKeysExamined" in stats:
                keys += int(stats.get("totalKeysExamined", 0))
                docs += int(stats.get("totalDocsExamined", 0))
                continue
            if "totalDocsExamined" in node and "$lookup" in node:
                docs += int(node.get("totalDocsExamined", 0))
                keys += int(node.get("totalKeysExamined", 0))
            todo.extend(node.values())
        elif isinstance(node, list):
            todo.extend(node)
    return keys, docs


def _command_of(name: str, q: Query) -> dict:
    """The command a Query answers, for the record when the caller passed none."""
    if q.kind == "count":
        return {"count": name, "query": q.filter, **({"skip": q.skip} if q.skip else {}),
                **({"limit": q.limit} if q.limit else {}), **({"hint": q.hint} if q.hint is not None else {})}
    if q.kind == "distinct":
        return {"distinct": name, "key": q.distinct_key, "query": q.filter}
    cmd: dict[str, Any] = {"find": name, "filter": q.filter}
    for key, value in (("sort", dict(q.sort) if q.sort else None), ("projection", q.projection),
                       ("skip", q.skip or None), ("limit", q.limit or None), ("hint", q.hint)):
        if value is not None:
            cmd[key] = value
    return cmd


def _serial(store: Any) -> int:
    serial = store.__dict__.get("_plan_record_serial")
    if serial is None:
        serial = store._plan_record_serial = next(_SERIALS)
    return serial


def _collection_state(st: Any) -> tuple[list, list]:
    """(data version, index set) of a collection store: what a plan's cost depends on."""
    data = [_serial(st), st.incarnation, st.version, len(st.docs)]
    return data, sorted((ix.spec.info() for ix in st.ix.values()), key=lambda i: i["name"])


def _stage_chain(doc: dict) -> str:
    stats = doc.get("executionStats") or {}
    stage = stats.get("executionStages")
    if not isinstance(stage, dict):
        cursor = next((s["$cursor"] for s in doc.get("stages") or [] if "$cursor" in s), {})
        stage = (cursor.get("executionStats") or {}).get("executionStages")
    names = []
    while isinstance(stage, dict):
        names.append(str(stage.get("stage", "?")))
        stage = stage.get("inputStage") or next(iter(stage.get("inputStages") or []), None)
    later = [next(iter(s)) for s in doc.get("stages") or [] if "$cursor" not in s]
    return " > ".join(names + later)


def _cell_line() -> str | None:
    """The notebook line that led here: the outermost frame of code a kernel ran from a cell (ipykernel names
    those files ``.../ipykernel_<pid>/<hash>.py``), or None outside a notebook."""
    frame, found = sys._getframe(1), None
    while frame is not None:
        name = frame.f_code.co_filename
        if _CELL_FILE.search(name) or name.startswith("<ipython-input"):
            found = linecache.getline(name, frame.f_lineno).strip() or found
        frame = frame.f_back
    return found


def record_plan(origin: str, st: Any, db_store: Any, ns: str, command: dict, doc: dict,
                figures: dict | None = None) -> None:
    """Append one plan to the file named by ``LABKIT_PLAN_RECORD`` (nothing when it is unset or the explain
    has no execution statistics). ``st`` is the collection's store; an aggregate's data version and index set
    cover every collection of the database (``db_store``), since ``$lookup`` reads others."""
    path = os.environ.get(PLAN_RECORD_ENV)
    if not path:
        return
    if figures is None:
        stats = doc.get("executionStats")
        if not isinstance(stats, dict):
            cursor = next((s["$cursor"] for s in doc.get("stages") or [] if "$cursor" in s), {})
            stats = cursor.get("executionStats")
        if not isinstance(stats, dict):
            return  # queryPlanner verbosity: no cost to record
        keys, docs = explain_totals(doc)
        root = stats.get("executionStages") or {}
        figures = {"keys": keys, "docs": docs, "returned": int(stats.get("nReturned", 0)),
                   "counted": root.get("nCounted") if isinstance(root, dict) else None, "plan": _stage_chain(doc)}
    name = next(iter(command), "")
    if name == "aggregate" and db_store is not None:
        states = {n: _collection_state(c) for n, c in sorted(getattr(db_store, "_collections", {}).items())
                  if hasattr(c, "ix")}
        data = [[n, d] for n, (d, _) in states.items()]
        indexes = [[n, i] for n, (_, i) in states.items()]
    else:
        data, indexes = _collection_state(st)
    from bson import json_util
    line = {"origin": origin, "ns": ns, "command": {k: v for k, v in command.items() if k not in _NOT_SHAPE},
            "data": data, "indexes": indexes, "cell": _cell_line(), **figures}
    with open(path, "a", encoding="utf-8") as out:
        out.write(json_util.dumps(line, json_options=json_util.RELAXED_JSON_OPTIONS) + "\n")


_NOT_SHAPE = ("lsid", "$db", "$clusterTime", "txnNumber", "autocommit", "startTransaction", "$readPreference",
              "readConcern", "writeConcern", "cursor", "batchSize", "singleBatch", "comment", "maxTimeMS")


def _explain_query(coll, q: Query, verbosity: str, command: dict | None) -> dict:
    st = coll._store
    ns = "%s.%s" % (coll.database.name, coll.name)
    exists = st.is_created
    if not exists:
        plan = {"stage": "EOF", "type": "nonExistentNamespace"}
        doc: dict[str, Any] = {"explainVersion": "1",
                           "queryPlanner": _query_planner(ns, q.filter, plan, [], q=q, coll=coll)}
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
    qp = _query_planner(ns, q.filter, winning, rejected, q=q, coll=coll)
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
    doc: dict[str, Any] = {"explainVersion": "1",
                           "queryPlanner": _query_planner(ns, q.filter, winning, [], q=q, coll=coll)}
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
    doc: dict[str, Any] = {"explainVersion": "1",
                           "queryPlanner": _query_planner(ns, q.filter, winning, [], q=q, coll=coll)}
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
