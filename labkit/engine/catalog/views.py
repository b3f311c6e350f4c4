"""Read-only views on the embedded engine (MongoDB 8.0 rules).

Sources: manual "Views" (create, behaviour, supported operations, collation), ``create``/``collMod``; server
``src/mongo/db/views/view_catalog*.cpp`` (``GraphContainsCycle`` 93 "View cycle detected", depth limit 20,
``ViewDepthLimitExceeded`` 149), ``src/mongo/db/catalog_raii.cpp`` (``CommandNotSupportedOnView`` 166 "Namespace
<ns> is a view, not a collection"), ``create_collection.cpp`` (``option not supported on a view``);
jstests/core/views/ (views_basic.js, views_find.js, views_count.js, views_distinct.js, views_aggregation.js,
invalid_system_views.js, views_creation.js, views_collation.js, views_drop.js, views_validation.js).

A view stores ``viewOn``, ``pipeline`` (and ``collation``) in its catalog entry and in ``<db>.system.views``
(``{_id: "<db>.<view>", viewOn, pipeline}``). Reads run on the backing collection as the server resolves them:
``find(filter, projection, sort, skip, limit)`` becomes ``aggregate(view pipeline + [$match, $sort, $skip,
$limit, $project])``; ``count_documents``/``distinct``/``aggregate`` likewise; explain of a read on a view is the
explain of that resolved aggregation on the backing collection (as the server's is). Writes, index builds,
``listIndexes`` and ``collStats`` on a view fail with 166. Views on views resolve recursively; cycles are refused.
Not modelled: ``$lookup``/``$graphLookup``/``$unionWith`` reading *from* a view (refused with 115).
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mongomock import BulkWriteError, OperationFailure, WriteError

MAX_VIEW_DEPTH = 20
VIEW_KEYS = ("viewOn", "pipeline")
NOT_ON_VIEW = ("capped", "size", "max", "validator", "validationLevel", "validationAction", "clusteredIndex",
               "expireAfterSeconds", "timeseries", "changeStreamPreAndPostImages", "encryptedFields",
               "storageEngine", "indexOptionDefaults", "idIndex")


def view_def(st: Any) -> dict | None:
    """The view definition of a collection store, or None for a collection."""
    o = st.options
    return o if o and "viewOn" in o else None


def not_on_view(ns: str) -> OperationFailure:
    return OperationFailure("Namespace %s is a view, not a collection" % ns, 166)


def _write_error(ns: str) -> WriteError:
    msg = "Namespace %s is a view, not a collection" % ns
    return WriteError(msg, 166, {"index": 0, "code": 166, "codeName": "CommandNotSupportedOnView", "errmsg": msg})


# ---------------------------------------------------------------------------------------------- create
def parse_create(db: Any, name: str, opts: dict) -> dict | None:
    """Pop ``viewOn``/``pipeline`` (and the view's ``collation``) from ``create`` options; the view definition
    or None. Checks the server's rules before anything is created."""
    if "viewOn" not in opts:
        if "pipeline" in opts:
            raise OperationFailure("'pipeline' requires 'viewOn' to also be specified", 72)
        return None
    view_on = opts.pop("viewOn")
    pipeline = opts.pop("pipeline", [])
    collation = opts.pop("collation", None)
    for k in list(opts):
        if k in NOT_ON_VIEW:
            raise OperationFailure("option not supported on a view: %s" % k, 72)
    if not isinstance(view_on, str):
        raise OperationFailure("BSON field 'create.viewOn' is the wrong type '%s', expected type 'string'"
                               % type(view_on).__name__, 14)
    if not view_on:
        raise OperationFailure("'viewOn' cannot be empty", 2)
    if name.startswith("system.") or name == "system.views":
        raise OperationFailure("Cannot create a view called '%s': this is a reserved system namespace" % name, 73)
    _check_pipeline(pipeline)
    out: dict[str, Any] = {"viewOn": view_on, "pipeline": [dict(s) for s in pipeline]}
    if collation is not None:
        from ..query.collate import normalize
        norm = normalize(collation)
        if norm is not None:
            out["collation"] = dict(norm)
    check_graph(db, name, out)
    return out


def _check_pipeline(pipeline: Any) -> None:
    if not isinstance(pipeline, list):
        raise OperationFailure("BSON field 'create.pipeline' is the wrong type, expected type 'array'", 14)
    for stage in pipeline:
        if not isinstance(stage, Mapping) or len(stage) != 1:
            raise OperationFailure("A pipeline stage specification object must contain exactly one field.", 40323)
        name = next(iter(stage))
        if name in ("$out", "$merge"):
            raise OperationFailure("%s cannot be used in a view definition" % name, 40600)
        if name in ("$changeStream",):
            raise OperationFailure("$changeStream cannot be used in a view definition", 40600)


def check_graph(db: Any, name: str, definition: dict) -> None:
    """Refuse a definition that would make ``name`` part of a cycle (93) or nest deeper than 20 views (149)."""
    chain = [name]
    target = definition["viewOn"]
    depth = 1
    while True:
        if target in chain:
            chain.append(target)
            raise OperationFailure("View cycle detected: [%s]" % " -> ".join("%s.%s" % (db.name, c) for c in chain), 93)
        chain.append(target)
        st = db._store._collections.get(target)
        d = view_def(st) if st is not None else None
        if d is None:
            return
        depth += 1
        if depth > MAX_VIEW_DEPTH:
            raise OperationFailure("View depth too deep or view cycle detected; maximum depth is %d"
                                   % MAX_VIEW_DEPTH, 149)
        target = d["viewOn"]


def create(db: Any, name: str, definition: dict) -> None:
    """Record a new view (catalog entry plus its ``system.views`` document)."""
    st = db._store[name]
    st.options.update(definition)
    st._is_force_created = True
    _sync_system_views(db, name, definition)


def _sync_system_views(db: Any, name: str, definition: dict | None) -> None:
    sv = db._store["system.views"]
    from .store import store_key
    _id = "%s.%s" % (db.name, name)
    sk = store_key(_id)
    rid = sv.rid_by_key.get(sk)
    if rid is not None:
        from .capped import remove_record
        remove_record(sv, rid)
    sv._is_force_created = True
    if definition is None:
        return
    doc: dict[str, Any] = {"_id": _id, "viewOn": definition["viewOn"], "pipeline": definition["pipeline"]}
    if "collation" in definition:
        doc["collation"] = definition["collation"]
    coll = db.get_collection("system.views")
    from .collection import EmbeddedCollection
    EmbeddedCollection._insert_one_doc(coll, doc)


def on_drop(db: Any, name: str) -> None:
    """Before a view (or collection) is dropped: remove its ``system.views`` document."""
    st = db._store._collections.get(name)
    if st is not None and view_def(st) is not None:
        _sync_system_views(db, name, None)


def collmod(db: Any, name: str, cmd: dict) -> dict:
    """``collMod`` of a view: ``viewOn`` and ``pipeline`` replace the definition (both required together,
    manual "collMod: Views")."""
    st = db._store[name]
    d = view_def(st)
    extra = [k for k in cmd if k not in ("collMod", "viewOn", "pipeline", "$db", "comment")]
    if d is None:
        if "viewOn" in cmd or "pipeline" in cmd:
            raise OperationFailure("collMod: cannot set viewOn or pipeline on a collection that is not a view", 72)
        return {}
    if extra:
        raise OperationFailure("option not supported on a view: %s" % extra[0], 72)
    view_on = cmd.get("viewOn", d["viewOn"])
    pipeline = cmd.get("pipeline", d["pipeline"])
    if not isinstance(view_on, str) or not view_on:
        raise OperationFailure("'viewOn' has to be a non-empty string", 2)
    _check_pipeline(pipeline)
    new = {"viewOn": view_on, "pipeline": [dict(s) for s in pipeline]}
    if "collation" in d:
        new["collation"] = d["collation"]
    check_graph(db, name, new)
    st.options.clear()
    st.options.update(new)
    _sync_system_views(db, name, new)
    return {}


# ---------------------------------------------------------------------------------------------- resolve
def resolve(db: Any, name: str) -> tuple[str, list, dict | None]:
    """(backing collection, full pipeline, view collation) of view ``name``."""
    pipeline: list = []
    collation = None
    seen = 0
    while True:
        st = db._store._collections.get(name)
        d = view_def(st) if st is not None else None
        if d is None:
            return name, pipeline, collation
        if collation is None:
            collation = d.get("collation")
        pipeline = [dict(s) for s in d["pipeline"]] + pipeline
        name = d["viewOn"]
        seen += 1
        if seen > MAX_VIEW_DEPTH:
            raise OperationFailure("View depth too deep or view cycle detected; maximum depth is %d"
                                   % MAX_VIEW_DEPTH, 149)


def _check_collation(view_coll: Any, requested: Any) -> dict | None:
    """A read on a view uses the view's collation; a different one fails (manual "Views: Collation")."""
    _, _, vcoll = resolve(view_coll.database, view_coll.name)
    if requested is None:
        return vcoll
    from ..query.collate import normalize
    req = normalize(requested)
    if (dict(req) if req else None) != (dict(vcoll) if vcoll else None):
        raise OperationFailure("Cannot override a view's default collation", 167)
    return vcoll


def find_pipeline(filter_: dict | None, sort: list | None, skip: int, limit: int, projection: Any) -> list:
    """The stages a find on a view appends to the view pipeline (the server's find-to-aggregate translation)."""
    out: list = []
    if filter_:
        out.append({"$match": filter_})
    if sort:
        out.append({"$sort": dict(sort)})
    if skip:
        out.append({"$skip": skip})
    if limit:
        out.append({"$limit": abs(limit)})
    if projection:
        if isinstance(projection, (list, tuple)):
            projection = {f: 1 for f in projection}
        out.append({"$project": dict(projection)})
    return out


def run_on_base(view_coll: Any, stages: list, collation: Any = None, **kwargs) -> list:
    """Run ``view pipeline + stages`` on the backing collection; the documents."""
    db = view_coll.database
    base_name, pipeline, _ = resolve(db, view_coll.name)
    coll = _check_collation(view_coll, collation)
    base = db.get_collection(base_name)
    if coll is not None:
        kwargs["collation"] = coll
    from .rules import LabCollection
    return list(LabCollection.aggregate(base, pipeline + list(stages), **kwargs))


def explain_on_base(view_coll: Any, stages: list, verbosity: str, command: dict | None,
                    collation: Any = None) -> dict:
    """The explain of a read on a view: the resolved aggregation's explain on the backing collection."""
    db = view_coll.database
    base_name, pipeline, _ = resolve(db, view_coll.name)
    coll = _check_collation(view_coll, collation)
    base = db.get_collection(base_name)
    from ..pipeline.aggregation import explain_pipeline
    from ..query.collate import normalize, using
    cmd = {"aggregate": base_name, "pipeline": pipeline + list(stages)}  # the resolved command the server runs
    with using(normalize(coll)):
        return explain_pipeline(base, pipeline + list(stages), verbosity, cmd)


def list_entry(entry: dict, st: Any) -> dict:
    """A ``listCollections`` entry for a view (type "view", readOnly, no idIndex) or a clustered collection
    (no idIndex); others unchanged."""
    d = view_def(st)
    if d is not None:
        entry["type"] = "view"
        if "options" in entry:
            opts: dict[str, Any] = {"viewOn": d["viewOn"], "pipeline": d["pipeline"]}
            if "collation" in d:
                opts["collation"] = d["collation"]
            entry["options"] = opts
            entry["info"] = {"readOnly": True}
            entry.pop("idIndex", None)
    elif "clusteredIndex" in st.options:
        entry.pop("idIndex", None)
    return entry


def check_source(db: Any, name: str) -> None:
    """Stages that read another collection (``$lookup``/``$graphLookup``/``$unionWith``) from a view are not
    modelled: refuse them clearly."""
    st = db._store._collections.get(name)
    if st is not None and view_def(st) is not None:
        from ..base.errors import unsupported
        raise unsupported("Reading a view (%s.%s) from $lookup/$graphLookup/$unionWith" % (db.name, name),
                          "read the view's base collection and repeat the view's pipeline in the sub-pipeline")


# ---------------------------------------------------------------------------------------------- classes
from ..service.boundary import COLLECTION_OPERATIONS, CURSOR_OPERATIONS, guard  # noqa: E402
from .rules import LabCollection, LabCursor  # noqa: E402
from .collection import refuse_min_max_as_aggregation  # noqa: E402


def _view_of(coll: Any) -> dict | None:
    st = coll._db_store._collections.get(coll._name)
    return view_def(st) if st is not None else None


def _check_kwargs(cmd: str, kwargs: dict) -> None:
    """maxTimeMS is armed and comment accepted; any other option is the server's unknown-field error."""
    for k in kwargs:
        if k not in ("maxTimeMS", "comment"):
            raise OperationFailure("BSON field '%s.%s' is an unknown field." % (cmd, k), 40415)
    ms = kwargs.get("maxTimeMS")
    if ms is not None:
        from ..service.boundary import current_op
        op = current_op()
        if op is not None:
            op.set_max_time(ms)


def _refused(kind: str):
    """A write/DDL method of a view: the server's 166 (a write error for write commands)."""
    base = getattr(LabCollection, kind)

    def method(self, *args, **kwargs):
        if _view_of(self) is None:
            return base(self, *args, **kwargs)
        ns = self._ns()
        if kind == "insert_many":
            raise BulkWriteError({"writeErrors": [{"index": 0, "code": 166, "codeName": "CommandNotSupportedOnView",
                                                   "errmsg": "Namespace %s is a view, not a collection" % ns}],
                                  "writeConcernErrors": [], "nInserted": 0, "nUpserted": 0, "nMatched": 0,
                                  "nModified": 0, "nRemoved": 0, "upserted": []})
        if kind in ("insert_one", "update_one", "update_many", "replace_one", "delete_one", "delete_many"):
            raise _write_error(ns)
        raise not_on_view(ns)
    method.__name__ = kind
    method.__doc__ = "``%s`` on a view fails with CommandNotSupportedOnView (166)." % kind
    return method


@guard(COLLECTION_OPERATIONS)
class ViewCollection(LabCollection):
    """A collection handle whose name is a view: reads run the view pipeline on the backing collection, writes
    and index DDL fail with 166. When the name stops being a view (dropped, recreated as a collection) every
    method behaves as ``LabCollection``."""

    for _k in ("insert_one", "insert_many", "update_one", "update_many", "replace_one", "delete_one",
               "delete_many", "bulk_write", "find_one_and_delete", "find_one_and_update", "find_one_and_replace",
               "create_index", "create_indexes", "drop_index", "drop_indexes", "list_indexes", "index_information",
               "rename"):
        locals()[_k] = _refused(_k)
    del _k

    def find(self, *args, **kwargs):
        if _view_of(self) is None:
            return LabCollection.find(self, *args, **kwargs)
        refuse_min_max_as_aggregation(kwargs.get("min"), kwargs.get("max"), kwargs.get("return_key"),
                                      kwargs.get("show_record_id"))  # before anything else, as the server
        for k in ("hint", "cursor_type", "let"):
            if kwargs.get(k) and not (k == "cursor_type" and kwargs[k] in (2, 34)):  # tailable: 168 when run
                from ..query.planner import unsupported
                raise unsupported("find(%s=...) on a view" % k)
        cur = LabCollection.find(self, *args, **kwargs)
        cur.__class__ = ViewCursor
        return cur

    def aggregate(self, pipeline, session=None, **kwargs):
        if _view_of(self) is None:
            return LabCollection.aggregate(self, pipeline, session=session, **kwargs)
        from .collection import CommandCursor
        from ..session.sessions import bind
        collation = kwargs.pop("collation", None)
        batch = kwargs.get("batchSize") or 0
        with bind(session, self, command="aggregate"):
            return CommandCursor(run_on_base(self, list(pipeline), collation, **kwargs), session, batch)

    def count_documents(self, filter, session=None, collation=None, hint=None, **kwargs):
        if _view_of(self) is None:
            return LabCollection.count_documents(self, filter, session=session, collation=collation, hint=hint,
                                                 **kwargs)
        from .collection import _check_count_stage
        # as pymongo does, a given skip/limit (even None) becomes a $skip/$limit stage the server checks
        skip = _check_count_stage("$skip", kwargs.pop("skip"), 5107200) if "skip" in kwargs else 0
        limit = _check_count_stage("$limit", kwargs.pop("limit"), 5107201) if "limit" in kwargs else None
        if limit == 0:
            raise OperationFailure("the limit must be positive", 15958)
        if hint is not None:
            from ..query.planner import unsupported
            raise unsupported("count_documents(hint=...) on a view")
        _check_kwargs("count", kwargs)
        stages = find_pipeline(filter, None, skip or 0, limit or 0, None) + [{"$count": "n"}]
        from ..session.sessions import bind
        with bind(session, self, command="aggregate"):
            out = run_on_base(self, stages, collation)
        return out[0]["n"] if out else 0

    def estimated_document_count(self, **kwargs):
        if _view_of(self) is None:
            return LabCollection.estimated_document_count(self, **kwargs)
        _check_kwargs("count", kwargs)
        out = run_on_base(self, [{"$count": "n"}])
        return out[0]["n"] if out else 0

    def distinct(self, key, filter=None, session=None, comment=None, hint=None, **kwargs):
        if _view_of(self) is None:
            return LabCollection.distinct(self, key, filter, session=session, comment=comment, hint=hint, **kwargs)
        if not isinstance(key, str):
            raise TypeError("key must be an instance of str")
        if hint is not None:
            from ..query.planner import unsupported
            raise unsupported("distinct(hint=...) on a view")
        _check_kwargs("distinct", {k: v for k, v in kwargs.items() if k != "collation"})
        from .collection import distinct_values
        from ..session.sessions import bind
        with bind(session, self, command="distinct"):
            docs = run_on_base(self, find_pipeline(filter, None, 0, 0, None), kwargs.get("collation"))
        return distinct_values(docs, key)

    def explain_find(self, q, verbosity="allPlansExecution", command=None):
        if _view_of(self) is None:
            return LabCollection.explain_find(self, q, verbosity, command)
        if q.kind == "count":
            stages = find_pipeline(q.filter, None, q.skip, q.limit, None) + [{"$count": "count"}]
        elif q.kind == "distinct":
            stages = find_pipeline(q.filter, None, 0, 0, None) + [{"$group": {"_id": None, "distinct": {
                "$addToSet": "$" + q.distinct_key}}}]
        else:
            stages = find_pipeline(q.filter, q.sort, q.skip, q.limit, q.projection)
        return explain_on_base(self, stages, verbosity, command)

    def options(self, session=None, comment=None) -> dict:
        d = _view_of(self)
        if d is None:
            return LabCollection.options(self, session=session, comment=comment)
        return {k: d[k] for k in ("viewOn", "pipeline", "collation") if k in d}


@guard(CURSOR_OPERATIONS)
class ViewCursor(LabCursor):
    """A find cursor on a view: the view pipeline then the query's stages, run on the backing collection."""

    def _stages(self) -> list:
        return find_pipeline(self._filter, self._sort, self._skip, self._limit, self._projection)

    def _execute(self) -> None:
        refuse_min_max_as_aggregation(self._lab_min, self._lab_max)
        flags = self._query_flags
        if flags & 34:  # the find's own checks first, then it runs as an aggregation, which has no tailable
            from .capped import check_tailable_options  # cursors (query_request_helper.cpp asAggregationCommand)
            check_tailable_options(bool(flags & 2), bool(flags & 32), self._sort, self._limit < 0)
            raise OperationFailure("Tailable cursors are not supported in aggregation.", 168)
        if self._max_time_ms:
            _check_kwargs("find", {"maxTimeMS": self._max_time_ms})
        docs = run_on_base(self.collection, self._stages(), self._lab_collation)
        self._results = docs
        self._i = 0

    def distinct(self, key: str) -> list:
        from .collection import distinct_values
        return distinct_values(run_on_base(self.collection, find_pipeline(self._filter, None, 0, 0, None),
                                           self._lab_collation), key)

    def explain(self, verbosity: str = "allPlansExecution") -> dict:
        refuse_min_max_as_aggregation(self._lab_min, self._lab_max)
        return explain_on_base(self.collection, self._stages(), verbosity, None, self._lab_collation)

    def clone(self) -> "ViewCursor":
        c = super().clone()
        c.__class__ = ViewCursor
        return c

    __copy__ = clone


def collection_class(st: Any) -> type | None:
    """The handle class for a store: ``ViewCollection`` for a view, else None (keep the default)."""
    return ViewCollection if view_def(st) is not None else None


# aggregation.py, extra_stages.py (view sources) and rules.py (create, listCollections) sit below this module:
# they call these through the engine's registry (hooks.py)
from ..base import hooks  # noqa: E402

hooks.register("view_check_source", check_source)
hooks.register("view_def", view_def)
hooks.register("view_run_on_base", run_on_base)
hooks.register("view_list_entry", list_entry)
hooks.register("view_parse_create", parse_create)
hooks.register("view_create", create)

__all__ = ["ViewCollection", "ViewCursor", "collection_class", "view_def", "parse_create", "create", "collmod",
           "resolve", "run_on_base", "explain_on_base", "find_pipeline", "list_entry", "on_drop", "not_on_view",
           "check_source"]
