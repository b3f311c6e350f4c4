"""Aggregation on the embedded engine.

A leading ``$match`` / ``$sort`` / ``$skip`` / ``$limit`` prefix is pushed down to the planner (it shows up as
the ``$cursor`` stage in explain). Every stage is the engine's own (no mongomock stage handler): the common ones
here, work on read-only document lists and never copy inside the loop; ``$group`` accumulators in accumulators.py,
$bucket/$bucketAuto/$count/$sortByCount in stage_bucket.py, $setWindowFields in stage_window.py, $densify/$fill
in stage_densify.py, $redact in stage_redact.py, $out/$merge/$graphLookup/$unionWith in extra_stages.py. An
unknown stage name is the server's 40324. Output documents are copied once at the end.
"""
from __future__ import annotations

import heapq
import time
from decimal import Decimal
from typing import Any, Callable

import bson
from mongomock import OperationFailure

from ..bson.values import client_value as _client_value
from ..bson import keys as K
from ..base.docutil import check_sort as _check_sort, fast_copy, sort_list as _sort_list
from ..query.collate import current as _collation, index_keyfunc as _collation_encoder, make_matcher as _collation_matcher
from ..base.hooks import EXTRA_STAGES  # filled by extra_stages.py (a higher layer) when the engine is imported
from ..base import hooks
from ..query.planner import IS_EOF, Query, make_matcher, totals, unsupported
from ..query.projection import project_stage
from ..exec.stages import IndexScan
from ..pipeline.expression.expr_base import DEC_CTX
from ..pipeline.expression.match_expr import Evaluator, field_path, let_variables
from ..bson.values import MISSING
from ..pipeline.expression.variables import bind_pipeline
from .add_fields import add_fields_stage, replace_root_stage
from .dependencies import projection_for_pushdown
from . import accumulators as _acc
from .stage_bucket import bucket_auto_stage, bucket_stage, count_stage, sort_by_count_stage, stage_count_arg
from .stage_densify import densify_stage, fill_stage
from . import stage_documents as _documents
from .stage_redact import redact_stage
from .stage_window import set_window_fields_stage



# ---------------------------------------------------------------------------------- helpers

class Ctx:
    """Per-run statistics used by explain."""

    def __init__(self) -> None:
        self.cursor_exec = None
        self.cursor_query: Query | None = None
        self.lookups: list[dict] = []
        self.stage_times: list[float] = []
        self.stage_info: list[dict] = []  # per $group / $lookup: documents in and out (sbe_explain.py)
        self.allow_disk_use: bool | None = None  # aggregate(allowDiskUse=...): $sort memory rule
        self.documents_ok = False  # a leading $documents is allowed ($unionWith / $lookup sub-pipelines)
        self.hint: Any = None  # aggregate(hint=...): the index the leading $cursor stage's query must use


def _get_path(doc: Any, path: str) -> Any:
    """Value at a dotted path like an aggregation field path ($a.b): arrays are mapped; missing -> KeyError."""
    v = field_path(doc, path)  # the server's field-path rules (match_expr.py), not mongomock's
    if v is MISSING:
        raise KeyError(path)
    return v


def _compile_expr(expr: Any) -> Callable[[dict], Any]:
    """An evaluator of an aggregation expression (a missing result raises KeyError): field paths, constants and
    plain objects of them take fast paths, everything else the engine's Evaluator (match_expr.py)."""
    if isinstance(expr, str) and expr.startswith("$") and not expr.startswith("$$"):
        path = expr[1:]
        if "." not in path:
            def get(doc: dict, _p=path):
                if _p in doc:
                    return doc[_p]
                raise KeyError(_p)
            return get
        return lambda doc, _p=path: _get_path(doc, _p)
    if not isinstance(expr, (dict, list, str)):
        return lambda doc, _v=expr: _v
    if isinstance(expr, dict) and expr and not any(str(k).startswith("$") for k in expr):
        subs = {k: _compile_expr(v) for k, v in expr.items()}

        def obj(doc: dict):
            out = {}
            for k, f in subs.items():
                try:
                    out[k] = f(doc)
                except KeyError:
                    pass
            return out
        return obj

    collation = _collation()  # the call's collation compares strings in expressions too ($eq, $in, $cmp...)
    str_key = None
    if collation is not None:
        from ..collation.collator import collation_key

        def str_key(text: str, _c=collation) -> Any:
            return collation_key(text, _c)
    ev = Evaluator(None, str_key)  # the engine's expression evaluator (match_expr.py); one $$NOW per compile

    def general(doc: dict, _e=expr, _ev=ev.ev):
        v = _ev(_e, doc)
        if v is MISSING:
            raise KeyError("missing")
        return v
    return general


def _is_number(v: Any) -> bool:
    t = type(v)
    if t is int or t is float:
        return True
    return isinstance(v, (int, float, bson.Decimal128, bson.Int64)) and not isinstance(v, bool)


class _Acc:
    __slots__ = ("op", "f", "state", "seen")


def _make_acc(op: str, arg: Any):
    if op not in ("$sum", "$avg", "$min", "$max", "$first", "$last", "$push", "$addToSet", "$count"):
        return None
    f = _compile_expr(arg) if op != "$count" else None
    return op, f


def _group(docs: list[dict], spec: dict) -> list[dict]:
    """``$group``: the server's parse errors (accumulators.parse_statement); a fast path for $sum/$avg/$min/$max/
    $first/$last/$push/$addToSet/$count, every other accumulator through accumulators.group."""
    if not isinstance(spec, dict):
        raise OperationFailure("a group's fields must be specified in an object", 15947)
    if "_id" not in spec:
        raise OperationFailure("a group specification must include an _id", 15955)
    parsed = [(field,) + _acc.parse_statement(field, acc) for field, acc in spec.items() if field != "_id"]
    if any(op not in _acc.FAST for _, op, _ in parsed):
        return _acc.group(docs, spec, _compile_expr)
    key_f = _compile_expr(spec["_id"])
    accs = []
    for field, op, arg in parsed:
        if op == "$count":
            _acc.Count.parse(arg, _compile_expr)
        made = _make_acc(op, arg)
        accs.append((field, made[0], made[1]))
    groups: dict[Any, list] = {}
    order: list[Any] = []
    simple_types = _GROUP_KEY_TYPES
    count_only = [i for i, (field, op, f) in enumerate(accs, start=1)
                  if op == "$count" or (op == "$sum" and spec[field]["$sum"] == 1 and type(spec[field]["$sum"]) is int)]
    rest = [(i, field, op, f) for i, (field, op, f) in enumerate(accs, start=1) if i not in count_only]
    for doc in docs:
        try:
            kv = key_f(doc)
        except KeyError:
            kv = None
        tk = type(kv)
        if tk in simple_types and not (tk is float and kv != kv):
            kb = (simple_types[tk], kv)
        else:
            kb = _acc.group_key(kv)
        g = groups.get(kb)
        if g is None:
            g = [kv] + [_init(op) for _, op, _ in accs]
            groups[kb] = g
            order.append(kb)
        for i in count_only:
            g[i] += 1
        for i, field, op, f in rest:
            if op == "$count":
                g[i] += 1
                continue
            if op == "$sum" or op == "$avg":
                try:
                    v = f(doc)
                except KeyError:
                    continue
                tv = type(v)
                if tv is int or tv is float:
                    if op == "$sum":
                        cur = g[i]
                        g[i] = cur + v if type(cur) is not _acc.Sum else _add(cur, v)
                    else:
                        s_, n_ = g[i]
                        g[i] = (s_ + v if type(s_) is not _acc.Sum else _add(s_, v), n_ + 1)
                    continue
                if tv is list and op == "$sum" and not isinstance(spec[field]["$sum"], list):
                    continue
                if _is_number(v):
                    if op == "$sum":
                        g[i] = _add(g[i], v)
                    else:
                        s_, n_ = g[i]
                        g[i] = (_add(s_, v), n_ + 1)
                continue
            try:
                v = f(doc)
                present = True
            except KeyError:
                v, present = None, False
            if op == "$sum":
                if isinstance(v, list) and not isinstance(spec[field]["$sum"], list):
                    continue
                if _is_number(v):
                    g[i] = _add(g[i], v)
            elif op == "$avg":
                if _is_number(v):
                    s, n = g[i]
                    g[i] = (_add(s, v), n + 1)
            elif op == "$min" or op == "$max":
                if present and v is not None:
                    e = K.encode(v)
                    cur = g[i]
                    if cur is None or (e < cur[0] if op == "$min" else e > cur[0]):
                        g[i] = (e, v)
            elif op == "$first":
                if g[i] is _UNSET:
                    g[i] = v
            elif op == "$last":
                g[i] = v
            elif op == "$push":
                if present:
                    g[i].append(v)
            elif op == "$addToSet":
                if present:
                    e = K.encode(v)
                    if e not in g[i][0]:
                        g[i][0].add(e)
                        g[i][1].append(v)
    out = []
    for kb in order:
        g = groups[kb]
        d = {"_id": g[0]}
        for i, (field, op, f) in enumerate(accs, start=1):
            val = g[i]
            if type(val) is _acc.Sum:
                d[field] = val.result()
            elif op == "$avg":
                s, n = val
                if type(s) is _acc.Sum:  # a decimal was seen: the decimal total divided with 34 digits
                    d[field] = bson.Decimal128(DEC_CTX.divide(s.result().to_decimal(), Decimal(n)))
                else:
                    d[field] = (s / n) if n else None
            elif op in ("$min", "$max"):
                d[field] = val[1] if val is not None else None
            elif op == "$first":
                d[field] = None if val is _UNSET else val
            elif op == "$addToSet":
                d[field] = val[1]
            else:
                d[field] = val
        out.append(d)
    return out


_UNSET = object()
_GROUP_KEY_TYPES = {str: 2, int: 1, float: 1, bson.Int64: 1, bool: 4, type(None): 0, bson.ObjectId: 5}


def _init(op: str):
    if op in ("$sum", "$count"):
        return 0
    if op == "$avg":
        return (0, 0)
    if op in ("$min", "$max"):
        return None
    if op == "$first":
        return _UNSET
    if op == "$last":
        return None
    if op == "$push":
        return []
    if op == "$addToSet":
        return (set(), [])
    return None


def _add(total: Any, v: Any) -> Any:
    """Add ``v`` to a fast-path ``$sum`` / ``$avg`` total. Once a decimal is seen the total becomes an
    ``accumulators.Sum``, which joins the decimals and the ints and doubles as the server does
    (accumulator_sum.cpp: ``decimalTotal.add(nonDecimalTotal.getDecimal())``)."""
    if type(total) is _acc.Sum:
        total.process(v)
        return total
    if type(v) is bson.Decimal128:
        acc = _acc.Sum()
        acc.process(total)
        acc.process(v)
        return acc
    return total + v


def _sort_docs(docs: list[dict], sort: list[tuple[str, int]], limit: int = 0) -> list[dict]:
    parts = [(f.split("."), d < 0) for f, d in sort]

    def key(doc: dict) -> tuple:
        return K.doc_sort_keys(doc, parts)
    coll = _collation()
    if coll is not None:  # aggregate(collation=...): strings compare by collation key (collate.py)
        def key(doc: dict) -> tuple:  # noqa: F811
            return K.doc_sort_keys(doc, parts, _collation_encoder(coll))
    if limit:
        return [d for _, _, d in heapq.nsmallest(limit, ((key(d), i, d) for i, d in enumerate(docs)))]
    return sorted(docs, key=key)


def _unwind(docs: list[dict], opts: Any) -> list[dict]:
    """``$unwind`` with its options and the server's parse errors (document_source_unwind.cpp)."""
    from ..bson.values import type_name
    if isinstance(opts, str):
        if not opts.startswith("$"):
            raise OperationFailure("path option to $unwind stage should be prefixed with a '$': %s" % opts, 28818)
        opts = {"path": opts}
    elif not isinstance(opts, dict):
        raise OperationFailure("expected either a string or an object as specification for $unwind stage, got %s"
                               % type_name(opts), 15981)
    for k, v in opts.items():
        if k == "path":
            if not isinstance(v, str):
                raise OperationFailure("expected a string as the path for $unwind stage, got %s" % type_name(v),
                                       28808)
        elif k == "includeArrayIndex":
            if not isinstance(v, str) or not v:
                raise OperationFailure("expected a non-empty string for the includeArrayIndex option to $unwind "
                                       "stage", 28810)
            if v.startswith("$"):
                raise OperationFailure("includeArrayIndex option to $unwind stage should not be prefixed with a "
                                       "'$': %s" % v, 28822)
        elif k == "preserveNullAndEmptyArrays":
            if not isinstance(v, bool):
                raise OperationFailure("expected a boolean for the preserveNullAndEmptyArrays option to $unwind "
                                       "stage, got %s" % type_name(v), 28809)
        else:
            raise OperationFailure("unrecognized option to $unwind stage: %s" % k, 28811)
    path = opts.get("path")
    if path is None:
        raise OperationFailure("no path specified to $unwind stage", 28812)
    if not path.startswith("$"):
        raise OperationFailure("path option to $unwind stage should be prefixed with a '$': %s" % path, 28818)
    field = path[1:]
    parts = field.split(".")
    idx_field = opts.get("includeArrayIndex")
    preserve = opts.get("preserveNullAndEmptyArrays", False)
    out = []
    for doc in docs:
        cur: Any = doc
        ok = True
        for p in parts:
            if isinstance(cur, dict) and p in cur:
                cur = cur[p]
            else:
                ok = False
                break
        if not ok or cur is None or (isinstance(cur, list) and not cur):
            if preserve:
                d = dict(doc)
                if ok and isinstance(cur, list):
                    # the server drops an empty array field (docs: $unwind preserveNullAndEmptyArrays)
                    d = _drop_path(doc, parts)
                if idx_field:
                    d[idx_field] = None
                out.append(d)
            continue
        if not isinstance(cur, list):
            d = dict(doc)
            if idx_field:
                d[idx_field] = None
            out.append(d)
            continue
        for i, v in enumerate(cur):
            d = _set_path(doc, parts, v)
            if idx_field:
                d[idx_field] = i
            out.append(d)
    return out


def _drop_path(doc: dict, parts: list[str]) -> dict:
    d = dict(doc)
    if len(parts) == 1:
        d.pop(parts[0], None)
    else:
        d[parts[0]] = _drop_path(doc[parts[0]], parts[1:])
    return d


def _set_path(doc: dict, parts: list[str], v: Any) -> dict:
    d = dict(doc)
    if len(parts) == 1:
        d[parts[0]] = v
        return d
    d[parts[0]] = _set_path(doc[parts[0]], parts[1:], v)
    return d


def _indexable_expr_eq(pipeline: list) -> list:
    """``{$match: {$expr: {$eq: ["$f", <literal>]}}}`` gets an extra ``{f: <literal>}`` conjunct so the planner
    can use an index on ``f`` (as servers since 5.0 do); the ``$expr`` stays as the exact filter."""
    if not pipeline or not isinstance(pipeline[0], dict) or "$match" not in pipeline[0]:
        return pipeline
    m = pipeline[0]["$match"]
    if not isinstance(m, dict) or set(m) != {"$expr"}:
        return pipeline
    e = m["$expr"]
    if not isinstance(e, dict) or set(e) != {"$eq"} or not isinstance(e["$eq"], list) or len(e["$eq"]) != 2:
        return pipeline
    a, b = e["$eq"]
    if isinstance(b, str) and b.startswith("$") and not b.startswith("$$"):
        a, b = b, a
    if not (isinstance(a, str) and a.startswith("$") and not a.startswith("$$")):
        return pipeline
    if isinstance(b, dict) and set(b) == {"$literal"}:
        v = b["$literal"]
    elif isinstance(b, (str, int, float, bool)) and not (isinstance(b, str) and b.startswith("$")):
        v = b
    else:
        return pipeline
    if isinstance(v, (list, dict)) or v is None:
        return pipeline
    return [{"$match": {"$and": [{a[1:]: v}, m]}}] + list(pipeline[1:])


def _lookup(coll, docs: list[dict], opts: dict, ctx: Ctx) -> list[dict]:
    unknown = set(opts) - {"from", "localField", "foreignField", "as", "let", "pipeline"}
    if unknown:
        raise OperationFailure("unknown argument to $lookup: %s" % unknown.pop(), 9)
    frm = opts.get("from")
    if isinstance(frm, dict):
        raise unsupported("$lookup from another database")
    as_ = opts["as"]
    pipe = opts.get("pipeline")
    if frm is None:
        # manual $lookup: without "from", the pipeline must start with $documents (6.0+)
        if not (isinstance(pipe, list) and pipe and isinstance(pipe[0], dict) and "$documents" in pipe[0]):
            raise OperationFailure("$lookup requires either 'from' or a pipeline starting with $documents", 9)
        if opts.get("localField") is not None:
            raise unsupported("$lookup with localField/foreignField and a $documents pipeline")
    else:
        hooks.get("view_check_source")(coll.database, frm)  # $lookup from a view: clear error (views.py)
    foreign = coll.database.get_collection(frm) if frm is not None else coll
    lf, ff = opts.get("localField"), opts.get("foreignField")
    pipeline = opts.get("pipeline")
    let = opts.get("let") or {}
    if (lf is None) != (ff is None):
        raise OperationFailure("$lookup requires both or neither of 'localField' and 'foreignField' to be specified",
                               4570)
    stats = {"from": frm, "as": as_, "localField": lf, "foreignField": ff, "totalDocsExamined": 0,
             "totalKeysExamined": 0, "collectionScans": 0, "indexesUsed": [], "millis": 0.0}
    if pipeline is not None:
        stats["let"] = let
        stats["pipeline"] = pipeline
    t0 = time.perf_counter()
    let_fs = {k: _compile_expr(v) for k, v in let.items()}
    out = []
    fst = foreign._store
    for doc in docs:
        if lf is not None:
            try:
                lv = _get_path(doc, lf)
            except (KeyError, TypeError):
                lv = None
            if isinstance(lv, list):
                cond = {ff: {"$in": [v for v in lv]}} if lv else {ff: {"$in": []}}
            else:
                cond = {ff: lv}
            if pipeline is None:
                ex = foreign._run(Query(cond))
                _note(ex, stats)
                matched = [m[1] if m[1] is not None else fst.docs[m[0]] for m in ex.results]
            else:
                # Concise form: the server prepends the equality $match to the sub-pipeline and plans them
                # together, so a leading $sort/$limit is served by an index on foreignField (bounded reads).
                matched = None
        else:
            matched = None
            cond = None
        if pipeline is not None:
            vars_ = {}
            for k, f in let_fs.items():
                try:
                    vars_[k] = f(doc)
                except KeyError:
                    vars_[k] = None
            sub = bind_pipeline(pipeline, vars_, check=False) if vars_ else pipeline
            sub = _indexable_expr_eq(sub)
            if cond is not None:
                sub = [{"$match": cond}, *sub]
            sub_ctx = Ctx()
            sub_ctx.documents_ok = frm is None
            res = run_stages(foreign, sub, sub_ctx, input_docs=matched)
            if sub_ctx.cursor_exec is not None:
                _note(sub_ctx.cursor_exec, stats)
            elif matched is None:
                stats["collectionScans"] += 1
                stats["totalDocsExamined"] += len(fst.docs)
            matched = res
        if len(matched) * BSON_MAX_INTERNAL > LOOKUP_MAX_BYTES and \
                len(matched) * _sampled_max_size(fst) * 2 > LOOKUP_MAX_BYTES:
            _check_lookup_size(frm, matched)
        d = dict(doc)
        d[as_] = matched
        out.append(d)
    stats["millis"] += (time.perf_counter() - t0) * 1000
    ctx.lookups.append(stats)
    matched_n = sum(len(d[as_]) for d in out)
    ctx.stage_info.append({"inputDocs": len(docs), "matchedDocs": matched_n, "matchedKeys": matched_n})
    return out


def _sampled_max_size(store) -> int:
    """The largest BSON size among up to 32 documents spread over the collection, cached per store version: the
    exact 100 MB $lookup check runs when the matches could come within a factor 2 of the limit at that size
    (an estimate that keeps ordinary joins from encoding every matched document)."""
    cached = getattr(store, "_lk_sample", None)
    if cached is not None and cached[0] == store.version and cached[1] == len(store.docs):
        return cached[2]
    import bson
    docs = list(store.docs.values())
    step = max(1, len(docs) // 32)
    biggest = max((len(bson.encode(d)) for d in docs[::step]), default=0)
    store._lk_sample = (store.version, len(store.docs), biggest)
    return biggest


def _check_lookup_size(frm: str, matched: list[dict]) -> None:
    """DocumentSourceLookUp: the matched documents of one input document may total 100 MB (4568)."""
    import bson
    total = 0
    for m in matched:
        total += len(bson.encode(m))
        if total > LOOKUP_MAX_BYTES:
            raise OperationFailure("Total size of documents in %s matching pipeline's $lookup stage exceeds %d "
                                   "bytes" % (frm, LOOKUP_MAX_BYTES), 4568)


def _check_sort_memory(docs: list[dict]) -> None:
    """A blocking $sort over more than 100 MB fails with 292 when allowDiskUse is false (stages.SortMemory)."""
    import bson
    from ..exec.stages import SortMemory
    mem = SortMemory(False)
    for d in docs:
        mem.add(len(bson.encode(d)), what="aggregate")


def _note(ex, stats: dict) -> None:
    root = ex.winner.root
    k, d = totals(root)
    stats["totalKeysExamined"] += k
    stats["totalDocsExamined"] += d
    names = []
    collscan = False
    for s in root.walk():
        if s.name == "COLLSCAN":
            collscan = True
        idx = getattr(s, "index", None)
        if idx is not None and idx.spec.name not in names:
            names.append(idx.spec.name)
    if collscan:
        stats["collectionScans"] += 1
    for n in names:
        if n not in stats["indexesUsed"]:
            stats["indexesUsed"].append(n)


# ---------------------------------------------------------------------------------- driver

PUSHABLE = ("$match", "$sort", "$skip", "$limit")


def _split_prefix(pipeline: list[dict]) -> tuple[dict | None, list | None, int, int, int]:
    """Leading $match (merged) / $sort / $skip / $limit that the query layer can run."""
    filt: dict | None = None
    sort = None
    skip = limit = 0
    i = 0
    while i < len(pipeline):
        st = pipeline[i]
        if not isinstance(st, dict) or len(st) != 1:
            raise OperationFailure("A pipeline stage specification object must contain exactly one field.", 40323)
        (name, arg), = st.items()
        if name == "$match" and sort is None and not skip and not limit:
            if not isinstance(arg, dict):
                raise OperationFailure("the match filter must be an expression in an object", 15959)
            if any(k in ("$text", "$where", "$near", "$nearSphere") for k in arg):
                break
            filt = arg if filt is None else {"$and": [filt, arg]}
        elif name == "$sort" and sort is None and not skip and not limit:
            sort = _check_sort(_sort_list(arg))
        elif name == "$skip" and not limit:
            skip += stage_count_arg(name, arg)
        elif name == "$limit":
            n = stage_count_arg(name, arg)
            limit = n if not limit else min(limit, n)
        else:
            break
        i += 1
    return filt, sort, skip, limit, i


def _cursor_query(pipeline: list, ctx: Ctx) -> tuple[Query | None, int]:
    """The query of the pipeline's leading ``$cursor`` stage (its pushed-down ``$match`` / ``$sort`` / ``$skip``
    / ``$limit``), or None when there is nothing for the query layer to plan; and the index of the first
    stage left. The query is ``count_like`` when the stages left need no document field (pipeline_d.cpp:
    "the remaining stages in the pipeline don't actually need to read any data produced by the query
    execution layer", ``QueryPlannerParams::IS_COUNT``), so the planner may answer it with a COUNT_SCAN."""
    filt, sort, skip, limit, i = _split_prefix(pipeline)
    if filt is None and sort is None and ctx.hint is None:
        return None, i
    q = Query(_client_value(filt or {}), sort, None, skip, limit, hint=ctx.hint, allow_disk_use=ctx.allow_disk_use)
    q.origin = "aggregate"
    q.count_like = needs_no_fields(pipeline[i:])
    if not q.count_like:
        push = projection_for_pushdown(pipeline[i:], allow_expressions=sort is None and not skip and not limit)
        if push is not None:  # the planner plans with it (a covered plan when the index holds every field)
            q.projection = _client_value(push.spec)
            q.projection_shown = push.shown
            q.absorbs_project = push.absorbs
    return q, i


COUNT_GROUP = {"$group": {"_id": 1, "n": {"$sum": 1}}}  # what pymongo's count_documents ends its pipeline with


def count_documents(coll, filter_: dict, skip: int | None, limit: int | None, hint: Any) -> int:
    """``Collection.count_documents`` as the server runs what pymongo sends: ``aggregate`` of ``[{$match:
    filter}, {$skip}, {$limit}, {$group: {_id: 1, n: {$sum: 1}}}]`` (``$skip`` / ``$limit`` only when given).
    The ``$cursor`` query is the same as that aggregate's (a COUNT_SCAN when the planner can make one: the
    ``$group`` needs no field), so its plan, counters and profiler entry are the aggregate's; the ``$group``
    of a constant is the number of results, counted directly."""
    pipeline: list = [{"$match": filter_}]
    if skip is not None:
        pipeline.append({"$skip": skip})
    if limit is not None:
        pipeline.append({"$limit": limit})
    pipeline.append(COUNT_GROUP)
    ctx = Ctx()
    ctx.hint = hint
    q, _ = _cursor_query(pipeline, ctx)
    q.rids_only = True  # only the number of results matters (the counters are the same)
    return len(coll._run(q).results)


def needs_no_fields(stages: list) -> bool:
    """Whether ``stages`` read no field (nor the whole document) of their input: the server's
    ``DepsTracker::hasNoRequirements`` for what follows the ``$cursor`` stage. ``$group`` / ``$count`` end
    the analysis (their output is new documents); an exclusion ``$project``, ``$skip`` and ``$limit`` pass it on;
    any other stage, or an expression naming a field or ``$$ROOT`` / ``$$CURRENT``, needs the documents."""
    for st in stages:
        if not isinstance(st, dict) or len(st) != 1:
            return False
        (name, arg), = st.items()
        if name == "$count":
            return True
        if name == "$group":
            return isinstance(arg, dict) and not _reads_fields(arg)
        if name in ("$skip", "$limit"):
            continue
        if name == "$project" and isinstance(arg, dict) and arg and all(
                v in (0, False) and not isinstance(v, dict) for v in arg.values()):
            continue
        return False
    return False


def _reads_fields(expr: Any) -> bool:
    """Whether an expression refers to a document field (``"$a"``) or the whole document (``$$ROOT``,
    ``$$CURRENT``); ``$literal`` values are constants."""
    if isinstance(expr, str):
        if expr.startswith("$$"):
            return expr.split(".")[0] in ("$$ROOT", "$$CURRENT")
        return expr.startswith("$")
    if isinstance(expr, dict):
        return any(k != "$literal" and _reads_fields(v) for k, v in expr.items())
    if isinstance(expr, list):
        return any(_reads_fields(x) for x in expr)
    return False


def run_stages(coll, pipeline: list, ctx: Ctx, input_docs: list[dict] | None = None) -> list[dict]:
    st = coll._store
    i = 0
    if input_docs is None:
        if pipeline and isinstance(pipeline[0], dict) and "$indexStats" in pipeline[0]:
            from ..stats.storage_stats import index_stats
            docs = index_stats(coll)
            i = 1
        elif pipeline and isinstance(pipeline[0], dict) and "$collStats" in pipeline[0]:
            from ..stats.storage_stats import coll_stats_stage
            docs = [coll_stats_stage(coll, pipeline[0]["$collStats"])]
            i = 1
        elif pipeline and isinstance(pipeline[0], dict) and "$documents" in pipeline[0]:
            if not ctx.documents_ok:
                raise _documents.not_in_collection_pipeline()
            docs = _documents.documents(pipeline[0]["$documents"], _compile_expr)
            i = 1
        else:
            q, i = _cursor_query(pipeline, ctx)
            if q is not None:
                ex = coll._run(q)
                ctx.cursor_exec = ex
                ctx.cursor_query = q
                if q.count_like:  # the stages after need no field: the query layer hands empty documents
                    docs = [{}] * len(ex.results)
                else:
                    docs = [m[1] if m[1] is not None else st.docs[m[0]] for m in ex.results]
            else:
                _, _, skip, limit, _ = _split_prefix(pipeline)
                docs = list(st.docs.values())
                scanned = min(len(docs), skip + limit) if limit else len(docs)
                if skip:
                    docs = docs[skip:]
                if limit:
                    docs = docs[:limit]
                ctx.cursor_query = Query({}, None, None, skip, limit)
                from ..service.boundary import note_execution
                note_execution(_FullScan(scanned))  # the profiler's planSummary and docsExamined (COLLSCAN)
    else:
        docs = input_docs
    while i < len(pipeline):
        stage = pipeline[i]
        if not isinstance(stage, dict) or len(stage) != 1:
            raise OperationFailure("A pipeline stage specification object must contain exactly one field.", 40323)
        (name, arg), = stage.items()
        nxt = pipeline[i + 1] if i + 1 < len(pipeline) else None
        if name == "$match":
            m = _collation_matcher(_client_value(arg), _collation())
            docs = [d for d in docs if m(d)]
        elif name == "$sort":
            sort = _check_sort(_sort_list(arg))
            lim = 0
            if nxt and "$limit" in nxt:
                lim = stage_count_arg("$limit", nxt["$limit"])
                i += 1
            if ctx.allow_disk_use is False and not lim:
                _check_sort_memory(docs)
            docs = _sort_docs(docs, sort, lim)
        elif name == "$sample":  # picks before copying (mongomock shuffles a copy of every document)
            docs = _sample(docs, arg)
        elif name == "$limit":
            docs = docs[:stage_count_arg(name, arg)]
        elif name == "$skip":
            docs = docs[stage_count_arg(name, arg):]
        elif name == "$unwind":
            docs = _unwind(docs, arg)
        elif name == "$group":
            n_in = len(docs)
            docs = _group(docs, arg)
            ctx.stage_info.append({"inputDocs": n_in, "groups": len(docs)})
        elif name == "$count":
            docs = count_stage(arg, docs)
        elif name == "$sortByCount":
            docs = sort_by_count_stage(arg, docs, _compile_expr)
        elif name in ("$addFields", "$set"):  # the engine's own stage (add_fields.py)
            docs = add_fields_stage(name, arg, docs, _compile_expr)
        elif name in ("$replaceRoot", "$replaceWith"):
            docs = replace_root_stage(name, arg, docs, _compile_expr)
        elif name in ("$unset", "$project"):  # the server's projection rules (projection.py)
            docs = project_stage(name, arg, docs, _compile_expr)
        elif name == "$lookup":
            docs = _lookup(coll, docs, arg, ctx)
        elif name == "$facet":
            out = {}
            used = 0
            import bson
            for title, sub in arg.items():
                out[title] = run_stages(coll, sub, Ctx(), input_docs=docs)
                if out[title]:
                    used += sum(len(bson.encode(x)) for x in out[title])
                    if used > FACET_MAX_BYTES:  # document_source_facet.cpp
                        raise OperationFailure("document constructed by $facet is %d bytes, which exceeds the "
                                               "limit of %d bytes" % (used, FACET_MAX_BYTES), 4031700)
            docs = [out]
        elif name == "$bucket":
            docs = bucket_stage(arg, docs, _compile_expr)
        elif name == "$bucketAuto":
            docs = bucket_auto_stage(arg, docs, _compile_expr)
        elif name == "$setWindowFields":
            docs = set_window_fields_stage(arg, docs, _compile_expr)
        elif name == "$densify":
            docs = densify_stage(arg, docs)
        elif name == "$fill":
            docs = fill_stage(arg, docs, _compile_expr)
        elif name == "$redact":
            docs = redact_stage(arg, docs, _compile_expr)
        elif name in ("$indexStats", "$collStats"):
            raise OperationFailure("%s is only valid as the first stage in a pipeline" % name, 40602)
        elif name == "$documents":
            raise _documents.not_first()
        elif name in EXTRA_STAGES:  # $out, $merge, $graphLookup, $unionWith; clear errors (extra_stages.py)
            docs = EXTRA_STAGES[name](coll, [fast_copy(d) for d in docs], arg, pipeline, i)
        else:
            raise OperationFailure("Unrecognized pipeline stage name: '%s'" % name, 40324)
        i += 1
    return docs


def _sample(docs: list[dict], arg: Any) -> list[dict]:
    """$sample {size: N}: N documents in random order (all of them when there are fewer); server's errors."""
    import random
    if not isinstance(arg, dict):
        raise OperationFailure("the $sample stage specification must be an object", 28745)
    size = None
    for k, v in arg.items():
        if k != "size":
            raise OperationFailure("unrecognized option to $sample: %s" % k, 28748)
        if isinstance(v, bool) or not isinstance(v, (int, float, bson.Int64, bson.Decimal128)):
            raise OperationFailure("size argument to $sample must be a number", 28746)
        v = float(v.to_decimal()) if isinstance(v, bson.Decimal128) else v
        if v != v:  # NaN converts to 0 (safeNumberLong)
            size = 0
        elif v in (float("inf"), float("-inf")):
            size = len(docs) if v > 0 else -1
        else:
            size = int(v)
        if size < 0:
            raise OperationFailure("size argument to $sample must not be negative", 28747)
    if size is None:
        raise OperationFailure("$sample stage must specify a size", 28749)
    return random.sample(docs, min(size, len(docs)))


# Size limits (src/mongo/db/query/query_knobs.idl defaults; src/mongo/bson/bsonobj.cpp): a stage's
# intermediate results may reach 100 MB ($lookup 4568, $facet 4031700); a document leaving the pipeline is
# BSON and must fit BSONObjMaxInternalSize (16 MB + 16 KB) -> BSONObjectTooLarge 10334.
LOOKUP_MAX_BYTES = 104857600        # internalLookupStageIntermediateDocumentMaxSizeBytes
FACET_MAX_BYTES = 104857600         # internalQueryFacetMaxOutputDocSizeBytes
BSON_MAX_INTERNAL = 16 * 1024 * 1024 + 16 * 1024  # 16793600
REPLY_MAX = 16 * 1024 * 1024 + 32 * 1024          # 16809984, a reply message's document limit
_GROWING = {"$lookup", "$group", "$facet", "$graphLookup", "$bucket", "$bucketAuto", "$setWindowFields",
            "$addFields", "$set", "$project", "$replaceRoot", "$replaceWith"}


def check_output_sizes(pipeline: list, docs: list[dict]) -> None:
    """Every document a pipeline hands back must be a valid BSON object (<= 16793600 bytes); only pipelines
    with a stage that can grow documents are checked (others return stored documents, already <= 16 MB)."""
    names = [next(iter(st)) for st in pipeline if isinstance(st, dict) and st]
    if not _GROWING.intersection(names):
        return
    import bson
    last = names[-1] if names else ""
    for d in docs:
        n = len(bson.encode(d))
        if last == "$group" and n > BSON_MAX_INTERNAL:
            # measured on 8.0: a $group result is written straight into the reply message
            raise OperationFailure("BSON size limit hit while building Message. Size: %d (0x%X) maxSize: "
                                   "%d(16MB)" % (n, n, REPLY_MAX), 10334)
        if n > BSON_MAX_INTERNAL:
            first = next(iter(d.items()), ("", None))
            raise OperationFailure("BSONObj size: %d (0x%X) is invalid. Size must be between 0 and %d(16MB) "
                                   "First element: %s: %s" % (n, n, BSON_MAX_INTERNAL, first[0],
                                                               repr(first[1])[:80]), 10334)


class _FullScan:
    """A pipeline's leading full collection scan, described for the profiler as the server reports it (a
    COLLSCAN leaf examining every document it read) without going through the planner."""

    def __init__(self, scanned: int) -> None:
        stage = type("CollScanRecord", (), {"name": "COLLSCAN", "keys_examined": 0, "docs_examined": scanned,
                                             "children": (), "index": None})()
        stage.walk = lambda: [stage]
        self.winner = type("Winner", (), {"root": stage})()


def run_pipeline(coll, pipeline: list, hint=None, allow_disk_use: bool | None = None, let: Any = None) -> list:
    """Run an aggregate; ``let``: the command's variables (``$$name``, undefined ones fail with 17276); its
    result documents are checked against the 16 MB BSON limit."""
    from ..base.docutil import no_gc
    pipeline = bind_pipeline(pipeline, let_variables(let))
    ctx = Ctx()
    ctx.allow_disk_use = allow_disk_use
    ctx.hint = hint  # the $cursor stage's query takes it, as the server's aggregate passes it to the planner
    with no_gc():
        docs = run_stages(coll, pipeline, ctx)
        check_output_sizes(pipeline, docs)
        return [fast_copy(d) for d in docs]


# ---------------------------------------------------------------------------------- explain

def explain_pipeline(coll, pipeline: list, verbosity: str, command: dict) -> dict:
    """The explain document of an aggregate (classic ``$cursor`` shape or SBE pushdown)."""
    from ..query.explain_doc import _check_verbosity, _query_planner, _wrap
    from ..query.planner import explaining
    from ..query.sbe_explain import explain_pushdown, pushdown_split
    _check_verbosity(verbosity)
    pipeline = bind_pipeline(list(pipeline), let_variables(command.get("let") if isinstance(command, dict)
                                                           else None))
    t0 = time.perf_counter()
    ctx = Ctx()
    ctx.hint = command.get("hint") if isinstance(command, dict) else None
    filt, sort, skip, limit, n_pushed = _split_prefix(pipeline) if pipeline and not any(
        k in pipeline[0] for k in ("$indexStats", "$collStats")) else (None, None, 0, 0, 1)
    if n_pushed < len(pipeline) and not any(k in pipeline[0] for k in ("$indexStats", "$collStats", "$documents")):
        q0, _ = _cursor_query(pipeline, ctx)
        if q0 is not None and q0.absorbs_project:
            n_pushed += 1  # the $project went into the query layer (pipeline_d.cpp buildProjectionForPushdown)
    n_sbe = pushdown_split(pipeline, n_pushed) if pipeline and n_pushed < len(pipeline) and not any(
        k in pipeline[0] for k in ("$indexStats", "$collStats")) else 0
    if n_sbe and _count_scan_planned(coll, pipeline, ctx):
        n_sbe = 0  # COUNT_SCAN plans run in the classic engine (query_utils.cpp isQueryPlanSbeCompatible)
    if n_sbe and _idhack_query(coll, pipeline, ctx, command):
        n_sbe = 0  # an IDHACK-eligible query stays out of SBE (query_utils.cpp isQuerySbeCompatible)
    rest_ctx = Ctx()
    with explaining():
        if n_sbe:
            mid = run_stages(coll, pipeline[:n_sbe], ctx)
            n_mid = len(mid)
            docs = run_stages(coll, pipeline[n_sbe:], rest_ctx, input_docs=mid) if n_sbe < len(pipeline) \
                else mid
        else:
            docs = run_stages(coll, pipeline, ctx)
    millis = int((time.perf_counter() - t0) * 1000)
    ns = "%s.%s" % (coll.database.name, coll.name)
    ex = ctx.cursor_exec
    if ex is not None:
        root = ex.winner.root
        winning = dict(root.plan_doc(), isCached=False)
        rejected = [dict(c.root.plan_doc(), isCached=False) for c in ex.cands if c is not ex.winner]
        keys, ndocs = totals(root)
        exec_stages = root.exec_doc()
        nret = len(ex.results)
    else:
        winning = {"stage": "COLLSCAN", "direction": "forward", "isCached": False}
        if limit:
            winning = {"stage": "LIMIT", "limitAmount": limit, "inputStage": winning}
        rejected = []
        n = len(coll._store.docs)
        nret = max(0, min(n - skip, limit) if limit else n - skip)
        keys, ndocs = 0, min(n, skip + limit) if limit else n
        exec_stages = {"stage": "COLLSCAN", "filter": {}, "nReturned": nret, "executionTimeMillisEstimate": 0,
                       "works": ndocs + 1, "advanced": nret, "needTime": ndocs - nret, "needYield": 0,
                       "saveState": 0, "restoreState": 0, "isEOF": 1, "direction": "forward",
                       "docsExamined": ndocs}
    if n_sbe:
        local = {"winning": {k: v for k, v in winning.items() if k != "isCached"}, "keys": keys, "docs": ndocs,
                 "nret": nret, "filter": filt}
        allow = command.get("allowDiskUse", True) if isinstance(command, dict) else True
        qp, es, _, _ = explain_pushdown(coll, pipeline, n_pushed, n_sbe, local, ctx.stage_info, n_mid,
                                        allow is not False, verbosity, millis)
        if n_sbe == len(pipeline):
            doc = {"explainVersion": "2", "queryPlanner": qp}
            if es is not None:
                doc["executionStats"] = es
            return _wrap(doc, command, verbosity)
        cursor = {"queryPlanner": qp}
        if es is not None:
            cursor["executionStats"] = es
        stages_out = [{"$cursor": cursor, "nReturned": n_mid, "executionTimeMillisEstimate": millis}]
        stages_out += _classic_rest(pipeline[n_sbe:], rest_ctx, verbosity, coll)
        return _wrap({"explainVersion": "2", "stages": stages_out}, command, verbosity)
    qp = _query_planner(ns, filt or {}, winning, rejected, coll=coll)
    rest = list(pipeline)[n_pushed:]
    stats: dict[str, Any] = {}
    if verbosity != "queryPlanner":
        stats["executionStats"] = {"executionSuccess": True, "nReturned": nret, "executionTimeMillis": millis,
                                   "totalKeysExamined": keys, "totalDocsExamined": ndocs,
                                   "executionStages": exec_stages}
        if verbosity == "allPlansExecution":
            stats["executionStats"]["allPlansExecution"] = []
    if not rest:
        doc: dict[str, Any] = {"explainVersion": "1", "queryPlanner": dict(qp, optimizedPipeline=True), **stats}
        return _wrap(doc, command, verbosity)
    cursor: dict[str, Any] = {"queryPlanner": qp, **stats}
    stages_out: list[dict] = [{"$cursor": cursor, "nReturned": nret, "executionTimeMillisEstimate": millis}]
    stages_out += _classic_rest(rest, ctx, verbosity, coll)
    doc = {"explainVersion": "1", "stages": stages_out}
    return _wrap(doc, command, verbosity)


def _count_scan_planned(coll, pipeline: list, ctx: Ctx) -> bool:
    """Whether the pipeline's ``$cursor`` query is a count the planner answers with a COUNT_SCAN: such a plan
    stays in the classic engine, ``$group`` included ("TODO SERVER-52958: Add support in the SBE stage builders
    for the COUNT_SCAN stage"), so 8.0 explains it in the ``$cursor`` shape (explainVersion "1")."""
    from ..exec.stages import CountScan
    from ..query.planner import explaining
    q, _ = _cursor_query(pipeline, ctx)
    if q is None or not q.count_like:
        return False
    with explaining():
        ex = coll._run(q, explain=True)
    return isinstance(ex.winner.root, CountScan)


def _idhack_query(coll, pipeline: list, ctx: Ctx, command: Any) -> bool:
    """Whether the pipeline's ``$cursor`` query is IDHACK-eligible (a simple ``_id`` equality, no hint or
    ``$skip``, the collection's collation): 8.0 runs it on the express path (get_executor.cpp
    ``getExecutorFind`` tries ``isExpressEligible`` first) and ``isQuerySbeCompatible`` refuses SBE for it, so
    the stages after it run in the classic engine (``$cursor`` shape, explainVersion "1")."""
    from ..query.collate import normalize
    from ..query.planner import idhack_eligible
    q, _ = _cursor_query(pipeline, ctx)
    given = command.get("collation") if isinstance(command, dict) else None
    collation = normalize(given) if given is not None else _collation()
    return q is not None and idhack_eligible(coll._store, q, collation)


def _classic_rest(rest: list, ctx: Ctx, verbosity: str, coll=None) -> list[dict]:
    """Explain entries of the stages after ``$cursor`` (classic ``$lookup`` with its statistics, ``$unionWith``
    with its sub-pipeline's own explain)."""
    stages_out: list[dict] = []
    lookups = iter(ctx.lookups)
    for st in rest:
        name = next(iter(st))
        entry: dict[str, Any] = {name: st[name]}
        if name == "$unionWith" and coll is not None:
            entry = _union_with_explain(coll, st[name], verbosity)
        if name == "$lookup":
            info = next(lookups, None)
            if info is not None:
                spec = {"from": info["from"], "as": info["as"]}
                if info["localField"] is not None:
                    spec["localField"] = info["localField"]
                    spec["foreignField"] = info["foreignField"]
                if "let" in info:
                    spec["let"] = info["let"]
                    spec["pipeline"] = info["pipeline"]
                entry = {"$lookup": spec}
                if verbosity != "queryPlanner":
                    entry.update({"totalDocsExamined": info["totalDocsExamined"],
                                  "totalKeysExamined": info["totalKeysExamined"],
                                  "collectionScans": info["collectionScans"],
                                  "indexesUsed": info["indexesUsed"],
                                  "executionTimeMillisEstimate": int(info["millis"])})
        stages_out.append(entry)
    return stages_out


def _union_with_explain(coll, arg: Any, verbosity: str) -> dict:
    """``{$unionWith: {coll, pipeline: <the sub-pipeline's explain>}}``: DocumentSourceUnionWith::serialize
    explains its sub-pipeline with the same verbosity (``preparePipelineAndExplain``), so the other
    collection's ``$cursor`` plan and, from executionStats on, its keys and documents examined appear. A
    sub-pipeline without a collection (``$documents``) or over a view is shown as written."""
    name, sub = (arg, []) if isinstance(arg, str) else (arg.get("coll"), list(arg.get("pipeline", [])))
    if not isinstance(name, str):
        return {"$unionWith": arg}
    other = coll.database.get_collection(name)
    view_def = hooks.get("view_def")
    if view_def is not None and view_def(other._store):
        return {"$unionWith": arg}
    doc = explain_pipeline(other, sub, verbosity, {"aggregate": name, "pipeline": sub, "cursor": {}})
    if "stages" in doc:
        stages = doc["stages"]
    else:  # the sub-pipeline is all query: one $cursor stage (only the outer pipeline is optimized away)
        qp = {k: v for k, v in doc["queryPlanner"].items() if k != "optimizedPipeline"}
        cursor: dict[str, Any] = {"queryPlanner": qp}
        entry: dict[str, Any] = {"$cursor": cursor}
        if "executionStats" in doc:
            cursor["executionStats"] = doc["executionStats"]
            entry.update(nReturned=doc["executionStats"]["nReturned"],
                         executionTimeMillisEstimate=doc["executionStats"]["executionTimeMillis"])
        stages = [entry]
    return {"$unionWith": {"coll": name, "pipeline": stages}}
