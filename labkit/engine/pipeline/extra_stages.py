"""Aggregation stages the lessons need beyond the core ones: ``$out``, ``$merge``, ``$graphLookup``,
``$unionWith``; and clear errors for valid server stages a standalone embedded server does not have
(``$search``, ``$changeStream``...). The grouping and window stages are in stage_bucket.py, stage_window.py,
stage_densify.py and stage_redact.py.

Server behaviour modelled (manual pages of the same names, MongoDB 8.0):

* ``$out`` must be the last stage; it replaces the target collection *atomically*: the results are
  written to a temporary collection carrying the target's indexes and validation options, and swapped in
  only if every document went in (a duplicate key or validation failure leaves the old collection as it
  was). The target keeps its indexes. The aggregation returns no documents.
* ``$merge`` must be the last stage; ``into`` (same database), ``on`` (default ``_id``; other fields need a
  unique index on exactly them, error 51183), ``whenMatched`` (``merge`` default, ``replace``,
  ``keepExisting``, ``fail``, or an update pipeline using ``$$new``) and ``whenNotMatched`` (``insert``
  default, ``discard``, ``fail``). Documents are written one by one, so a failure part-way leaves the
  earlier writes (as on the server). Merging into the collection being aggregated is allowed.
* ``$graphLookup`` walks ``connectFromField`` -> ``connectToField`` level by level (through the planner, so
  an index on ``connectToField`` is used), with ``maxDepth``, ``depthField`` (a long) and
  ``restrictSearchWithMatch``; a document whose ``startWith`` is missing gets an empty array.
* Writes from ``$out``/``$merge`` honour the target's validator unless ``bypassDocumentValidation``.
  Neither is allowed inside a transaction (code 263, as on the server).
"""
from __future__ import annotations

import uuid
from typing import Any

from bson import Int64, ObjectId
from mongomock import OperationFailure, WriteError
from pymongo.errors import BulkWriteError, DuplicateKeyError

from ..base import hooks
from ..session import sessions
from ..query.planner import Query, unsupported


def _target_name(coll, spec: Any, stage: str) -> str:
    if isinstance(spec, str):
        return spec
    if isinstance(spec, dict) and isinstance(spec.get("coll"), str):
        if spec.get("db", coll.database.name) != coll.database.name:
            raise unsupported("%s into another database" % stage)
        return spec["coll"]
    raise OperationFailure("%s target must be a collection name or {db, coll}" % stage, 16990)


def _last_stage(stage: str, pipeline: list, i: int) -> None:
    if i != len(pipeline) - 1:
        raise OperationFailure("%s can only be the final stage in the pipeline" % stage, 40601)


def _no_transaction(stage: str) -> None:
    if sessions.current() is not None:
        raise OperationFailure("%s cannot be used in a transaction" % stage, sessions.NOT_SUPPORTED_IN_TRANSACTION)


def _as_write_failure(stage: str, e: Exception) -> OperationFailure:
    if isinstance(e, BulkWriteError):
        err = e.details["writeErrors"][0]
        code, msg, det = err.get("code"), err.get("errmsg", str(e)), err
    else:
        det = dict(getattr(e, "details", None) or {})
        code, msg = getattr(e, "code", None), det.get("errmsg") or str(e)
    det = dict(det)
    det.pop("op", None)
    message = "%s failed: %s" % (stage, msg)
    det.update({"ok": 0.0, "errmsg": message, "code": code})
    if code == 11000:
        return DuplicateKeyError(message, code, det)
    return OperationFailure(message, code, det)


# ---------------------------------------------------------------------------------------------- $out
def _out_timeseries(coll, docs: list[dict], name: str, spec: Any) -> bool:
    """``$out`` into a time-series collection (manual $out, 7.0.3+; document_source_out.cpp validateTimeseries):
    an existing time-series target is replaced by a time-series collection with its options and indexes; a
    ``timeseries`` spec must match an existing one (7406103) and cannot replace an ordinary collection (7268700)
    or a view (7268703). The documents go first into a scratch time-series collection, so a document without
    its time field fails the stage before the target is touched. Returns False for ordinary targets."""
    view_def = hooks.get("view_def")  # views.py (hooks.py)
    db = coll.database
    st = db._store._collections.get(name)
    exists = name in db.list_collection_names()
    state = getattr(st, "ts", None) if st is not None and exists else None  # timeseries.TsState
    if spec is None and state is None:
        return False
    if spec is not None and state is None and exists:
        if view_def(st) is not None:
            raise OperationFailure("Cannot create a time-series collection from a non time-series view.", 7268703)
        raise OperationFailure("Cannot create a time-series collection from a non time-series collection.", 7268700)
    if state is not None:
        opts = state.options
        base = {k: opts[k] for k in ("timeField", "metaField", "granularity") if k in opts}
        if "granularity" not in opts:
            base.update(bucketMaxSpanSeconds=opts["bucketMaxSpanSeconds"],
                        bucketRoundingSeconds=opts["bucketRoundingSeconds"])
    kwargs: dict = {"timeseries": spec if spec is not None else base}
    scratch_name = "tmp.agg_out_ts.%s" % uuid.uuid4().hex[:12]
    scratch = db.create_collection(scratch_name, **kwargs)  # the create command's option errors
    try:
        wanted = getattr(scratch._store, "ts").options
        if state is not None and wanted != state.options:
            raise OperationFailure("Time-series options inputted must match the existing time-series collection. "
                                   "Received: %s Found: %s" % (dict(wanted), dict(state.options)), 7406103)
        if docs:
            try:
                scratch.insert_many([dict(d) for d in docs])
            except (WriteError, BulkWriteError, OperationFailure) as e:
                err = _as_write_failure("$out", e)
                msg = str(err.details.get("errmsg", err)).split(", full error:")[0]
                raise OperationFailure(msg, err.code, dict(err.details, errmsg=msg)) from None
    finally:
        db.drop_collection(scratch_name)
    indexes: list = []
    if state is not None:
        if state.expire is not None:
            kwargs["expireAfterSeconds"] = state.expire
        indexes = list(state.user_indexes.items())
        db.drop_collection(name)
    target = db.create_collection(name, **kwargs)
    have = {ix["name"] for ix in target.list_indexes()}
    for ix_name, (key, ix_opts) in indexes:
        if ix_name not in have:
            target.create_index(key, name=ix_name, **ix_opts)
    if docs:
        target.insert_many(docs)
    return True


def out_stage(coll, docs: list[dict], arg: Any, pipeline: list, i: int) -> list[dict]:
    _last_stage("$out", pipeline, i)
    _no_transaction("$out")
    if isinstance(arg, dict):
        extra = set(arg) - {"db", "coll", "timeseries"}
        if extra:
            raise OperationFailure("BSON field '$out.%s' is an unknown field." % sorted(extra)[0], 40415)
    name = _target_name(coll, arg, "$out")
    if _out_timeseries(coll, docs, name, arg.get("timeseries") if isinstance(arg, dict) else None):
        return []
    db = coll.database
    dbst = db._store
    target_st = dbst[name]
    tmp_name = "tmp.agg_out.%s" % uuid.uuid4().hex[:12]
    tmp = db.get_collection(tmp_name)
    try:
        for ix in target_st.user_indexes():
            info = ix.spec.info()
            key = list(info.pop("key").items())
            info.pop("v", None)
            tmp._create_index(key, info)
        tmp._store.options.update(target_st.options)
        tmp._store._is_force_created = True
        if docs:
            tmp.insert_many(docs)
    except (WriteError, BulkWriteError, OperationFailure) as e:
        dbst._collections.pop(tmp_name, None)
        db._collection_accesses.pop(tmp_name, None)
        raise _as_write_failure("$out", e) from None
    new_st = dbst._collections.pop(tmp_name)
    db._collection_accesses.pop(tmp_name, None)
    new_st.name = name
    new_st.version = target_st.version + 1
    dbst._collections[name] = new_st
    return []


# ---------------------------------------------------------------------------------------------- $merge
_WHEN_MATCHED = ("replace", "keepExisting", "merge", "fail")
_WHEN_NOT_MATCHED = ("insert", "discard", "fail")


def _subst_new(obj: Any, new: dict) -> Any:
    """Replace ``$$new`` / ``$$new.path`` in a whenMatched pipeline with literals of the incoming document."""
    if isinstance(obj, str) and obj.startswith("$$new"):
        if obj == "$$new":
            return {"$literal": new}
        cur: Any = new
        for p in obj[len("$$new."):].split("."):
            if not isinstance(cur, dict) or p not in cur:
                return "$$REMOVE"
            cur = cur[p]
        return {"$literal": cur}
    if isinstance(obj, dict):
        return {k: _subst_new(v, new) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_subst_new(v, new) for v in obj]
    return obj


def merge_stage(coll, docs: list[dict], arg: Any, pipeline: list, i: int) -> list[dict]:
    _last_stage("$merge", pipeline, i)
    _no_transaction("$merge")
    if isinstance(arg, str):
        arg = {"into": arg}
    if not isinstance(arg, dict) or "into" not in arg:
        raise OperationFailure("$merge requires an 'into' field", 40414)
    unknown = set(arg) - {"into", "on", "let", "whenMatched", "whenNotMatched"}
    if unknown:
        raise OperationFailure("BSON field '$merge.%s' is an unknown field." % sorted(unknown)[0], 40415)
    if arg.get("let"):
        raise unsupported("$merge with let")
    target = coll.database.get_collection(_target_name(coll, arg["into"], "$merge"))
    if getattr(target._store, "ts", None) is not None and target.name in coll.database.list_collection_names():
        # manual "Time Series Collection Limitations" > Aggregation $merge; on 8.0 the namespace is a view over
        # system.buckets, so $merge fails as for a view (SERVER-107433): CommandNotSupportedOnView
        raise OperationFailure("$merge failed: Namespace %s.%s is a view, not a collection (a time-series "
                               "collection: write into it with $out)" % (coll.database.name, target.name), 166)
    on = arg.get("on", "_id")
    on_fields = [on] if isinstance(on, str) else list(on)
    when_matched = arg.get("whenMatched", "merge")
    when_not = arg.get("whenNotMatched", "insert")
    if not (isinstance(when_matched, list) or when_matched in _WHEN_MATCHED):
        raise OperationFailure("Enumeration value '%s' for field 'whenMatched' is not a valid value." % when_matched,
                               2)
    if when_not not in _WHEN_NOT_MATCHED:
        raise OperationFailure("Enumeration value '%s' for field 'whenNotMatched' is not a valid value." % when_not, 2)
    if on_fields != ["_id"]:
        ok = any(ix.spec.unique and sorted(ix.spec.fields) == sorted(on_fields) and ix.spec.partial is None
                 for ix in target._store.ix.values())
        if not ok:
            raise OperationFailure("Cannot find index to verify that join fields will be unique", 51183)
    for doc in docs:
        if "_id" not in doc and "_id" in on_fields:
            doc = dict(doc, _id=ObjectId())  # the server generates a missing _id
        key = {}
        for f in on_fields:
            v: Any = doc
            for p in f.split("."):
                v = v.get(p) if isinstance(v, dict) else None
            if v is None or isinstance(v, list):
                raise OperationFailure("$merge write error: 'on' field '%s' cannot be missing, null, undefined or "
                                       "an array" % f, 51132)
            key[f] = v
        try:
            existing = target.find_one(key)
            if existing is None:
                if when_not == "insert":
                    target.insert_one(dict(doc))
                elif when_not == "fail":
                    raise OperationFailure("$merge could not find a matching document in the target collection "
                                           "for at least one document in the source collection", 13113)
                continue
            if when_matched == "keepExisting":
                continue
            if when_matched == "fail":
                target.insert_one(dict(doc, _id=existing["_id"]))  # raises the server's duplicate key error
                continue
            if when_matched == "replace":
                new = dict(doc)
                if "_id" in new and new["_id"] != existing["_id"]:
                    raise WriteError("$merge failed: Performing an update on the path '_id' would modify the "
                                     "immutable field '_id'", 66)
                new.pop("_id", None)
                target.replace_one({"_id": existing["_id"]}, new)
            elif when_matched == "merge":
                fields = {k: v for k, v in doc.items() if k != "_id" or v != existing["_id"]}
                if "_id" in fields:
                    raise WriteError("$merge failed: Performing an update on the path '_id' would modify the "
                                     "immutable field '_id'", 66)
                if fields:
                    target.update_one({"_id": existing["_id"]}, {"$set": fields})
            else:  # an update pipeline with $$new
                target.update_one({"_id": existing["_id"]}, _subst_new(when_matched, doc))
        except DuplicateKeyError as e:
            raise _as_write_failure("$merge", e) from None
        except WriteError as e:
            raise _as_write_failure("$merge", e) from None
    return []


# ---------------------------------------------------------------------------------------------- $graphLookup
def graph_lookup_stage(coll, docs: list[dict], arg: Any, pipeline: list, i: int) -> list[dict]:
    from .aggregation import _compile_expr
    if not isinstance(arg, dict):
        raise OperationFailure("the $graphLookup stage specification must be an object", 40327)
    for f in ("from", "startWith", "connectFromField", "connectToField", "as"):
        if f not in arg:
            raise OperationFailure("$graphLookup requires '%s' to be specified" % f, 40105)
    unknown = set(arg) - {"from", "startWith", "connectFromField", "connectToField", "as", "maxDepth", "depthField",
                          "restrictSearchWithMatch"}
    if unknown:
        raise OperationFailure("Unknown argument to $graphLookup: %s" % sorted(unknown)[0], 40104)
    frm = arg["from"]
    if not isinstance(frm, str):
        raise unsupported("$graphLookup from another database")
    hooks.get("view_check_source")(coll.database, frm)  # $graphLookup from a view: clear error (views.py)
    foreign = coll.database.get_collection(frm)
    start = _compile_expr(arg["startWith"])
    from_field, to_field, as_ = arg["connectFromField"], arg["connectToField"], arg["as"]
    max_depth = arg.get("maxDepth")
    if max_depth is not None and (not isinstance(max_depth, (int, float)) or isinstance(max_depth, bool)
                                  or max_depth < 0 or max_depth != int(max_depth)):
        raise OperationFailure("maxDepth requires a nonnegative argument, found: %r" % (max_depth,), 40101)
    depth_field = arg.get("depthField")
    restrict = arg.get("restrictSearchWithMatch") or {}
    from_parts = from_field.split(".")
    fst = foreign._store
    out = []
    for doc in docs:
        try:
            sv = start(doc)
            values = sv if isinstance(sv, list) else [sv]
        except KeyError:
            values = []
        found: dict = {}
        order: list = []
        frontier = _dedupe(values)
        depth = 0
        while frontier and (max_depth is None or depth <= max_depth):
            cond: dict = {to_field: {"$in": frontier}}
            if restrict:
                cond = {"$and": [cond, restrict]}
            ex = foreign._run(Query(cond))
            nxt: list = []
            for m in ex.results:
                d = m[1] if m[1] is not None else fst.docs[m[0]]
                k = repr(d.get("_id"))
                if k in found:
                    continue
                found[k] = (d, depth)
                order.append(k)
                cur: list = [d]
                for p in from_parts:
                    nxt_cur = []
                    for c in cur:
                        if isinstance(c, dict) and p in c:
                            v = c[p]
                            nxt_cur.extend(v if isinstance(v, list) else [v])
                    cur = nxt_cur
                nxt.extend(cur)
            frontier = _dedupe(nxt)
            depth += 1
        res = []
        for k in order:
            d, dep = found[k]
            from ..base.docutil import fast_copy
            d = fast_copy(d)
            if depth_field:
                d[depth_field] = Int64(dep)
            res.append(d)
        nd = dict(doc)
        nd[as_] = res
        out.append(nd)
    return out


def _dedupe(values: list) -> list:
    from ..bson import keys as K
    seen = set()
    out = []
    for v in values:
        try:
            e = K.encode(v)
        except TypeError:
            e = repr(v).encode()
        if e not in seen:
            seen.add(e)
            out.append(v)
    return out


# ---------------------------------------------------------------------------------------------- not modelled
def _not_modelled(name: str):
    def handler(coll, docs, arg, pipeline, i):
        raise unsupported("The %s aggregation stage" % name)
    return handler


def replace_with_stage(coll, docs: list[dict], arg: Any, pipeline: list, i: int) -> list[dict]:
    """``{$replaceWith: expr}`` is ``{$replaceRoot: {newRoot: expr}}`` (manual, $replaceWith; add_fields.py)."""
    from .add_fields import replace_root_stage
    from .aggregation import _compile_expr
    return replace_root_stage("$replaceWith", arg, docs, _compile_expr)


EXTRA_STAGES = hooks.EXTRA_STAGES  # the table aggregation.py's stage loop reads (hooks.py)
EXTRA_STAGES.update({
    "$out": out_stage,
    "$replaceWith": replace_with_stage,
    "$merge": merge_stage,
    "$graphLookup": graph_lookup_stage,
})
for _name in ("$geoNear", "$search", "$searchMeta", "$vectorSearch", "$changeStream", "$currentOp",
              "$listSessions", "$planCacheStats", "$listSearchIndexes", "$listCatalog",
              "$listClusterCatalog", "$querySettings", "$queryStats", "$listLocalSessions",
              "$listSampledQueries", "$shardedDataDistribution", "$changeStreamSplitLargeEvent"):
    EXTRA_STAGES.setdefault(_name, _not_modelled(_name))




def union_with_stage(coll, docs: list[dict], arg: Any, pipeline: list, i: int) -> list[dict]:
    """``{$unionWith: "coll"}`` / ``{$unionWith: {coll, pipeline}}`` (manual $unionWith): the documents so
    far, then the other collection's documents passed through its pipeline."""
    from .aggregation import Ctx, run_stages
    if isinstance(arg, str):
        name, sub = arg, []
    elif isinstance(arg, dict):
        extra = set(arg) - {"coll", "pipeline"}
        if extra:
            raise OperationFailure("BSON field '$unionWith.%s' is an unknown field." % sorted(extra)[0], 40415)
        name, sub = arg.get("coll"), arg.get("pipeline", [])
        if not isinstance(sub, list):
            raise OperationFailure("BSON field '$unionWith.pipeline' is the wrong type '%s', expected type "
                                   "'array'" % type(sub).__name__, 14)
    else:
        raise OperationFailure("the $unionWith stage specification must be an object or string, but found %s"
                               % type(arg).__name__, 40413)
    for st in sub:
        if isinstance(st, dict) and next(iter(st), None) in ("$out", "$merge"):
            raise OperationFailure("%s is not allowed within a $unionWith's sub-pipeline" % next(iter(st)), 31441)
    if name is None:
        # manual $unionWith: without "coll" the pipeline must start with $documents
        if not (sub and isinstance(sub[0], dict) and "$documents" in sub[0]):
            raise OperationFailure("$unionWith stage without explicit collection must have a pipeline with "
                                   "$documents as first stage", 9)
        ctx = Ctx()
        ctx.documents_ok = True
        return list(docs) + run_stages(coll, list(sub), ctx)
    if not isinstance(name, str):
        raise OperationFailure("BSON field '$unionWith.coll' is the wrong type, expected type 'string'", 14)
    other = coll.database.get_collection(name)
    run_on_base, view_def = hooks.get("view_run_on_base"), hooks.get("view_def")  # views.py (hooks.py)
    if view_def(other._store):  # $unionWith a view: its pipeline, then the sub-pipeline (views.py)
        return list(docs) + run_on_base(other, list(sub))
    return list(docs) + run_stages(other, list(sub), Ctx())


EXTRA_STAGES["$unionWith"] = union_with_stage
