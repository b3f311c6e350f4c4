"""Server rules for the embedded engine: schema validation, document limits, and the collection class that
routes ``session=``, ``collation=`` and ``bypass_document_validation=`` to them.

The rules themselves live in engine-free modules and are only *used* here:

* ``labkit.validation`` -- validator checks (``check_validator``/``validation_options``), write-time
  enforcement (``check_write``: levels strict/moderate/off, actions error/warn, WriteError 121 with
  ``errInfo``) and the ``$jsonSchema`` query operator (``make_filter_applies``);
* ``labkit.limits`` -- 16 MiB documents (``check_insert_size`` raises pymongo's ``DocumentTooLarge`` as
  the driver does; ``check_update_size`` raises WriteError 17419) and nesting depth (``check_depth``,
  WriteError 15, computed without recursion);
* ``labkit.collation`` via ``collate.py``; sessions and transactions via ``sessions.py``.

``LabCollection`` subclasses ``EmbeddedCollection`` and overrides only the public entry points (to bind
the per-call context: session/transaction, collation, bypass flag) and three internal hooks
(``_prepare_insert``, ``_replace_doc``, ``_run``) so that every write path -- insert_one/insert_many,
update_*/replace_one, upserts, bulk_write, find_one_and_* -- checks the *resulting* document before
anything (document or index entry) is changed.
"""
from __future__ import annotations

import contextlib
import contextvars
import functools
from collections.abc import Mapping
from typing import Any

from mongomock import OperationFailure, WriteError
from mongomock.results import InsertOneResult

from ..bson.values import client_value as _client_value, type_name as _type_name
from ..bson import limits
from ..matcher import validation

from ..pipeline import aggregation as _aggregation  # noqa: F401  installs $bsonSize for $expr validators too
from ..query import collate  # extra_stages: clear errors for unmodelled expressions
from ..pipeline import extra_stages
from ..session import sessions
from ..base import hooks  # the kinds built on collections (views.py, timeseries.py) register their DDL parts there
from .collection import FLAT_TYPES, NOT_FLAT, CommandCursor, Cursor, EmbeddedCollection, distinct_values
from ..query.planner import express_eligible, unsupported
from ..service.boundary import COLLECTION_OPERATIONS, CURSOR_OPERATIONS, guard
from ..service import boundary

_BYPASS: contextvars.ContextVar[bool] = contextvars.ContextVar("labkit_bypass_validation", default=False)

# The depth limit the engine enforces: the manual's documented limit (100 levels, labkit.limits).
MAX_DEPTH = limits.SERVER_MAX_USER_STORAGE_DEPTH  # what an 8.0 server enforces on stored documents (limits.py)

VALIDATION_KEYS = ("validator", "validationLevel", "validationAction")


@contextlib.contextmanager
def bypassing(flag: bool):
    token = _BYPASS.set(bool(flag))
    try:
        yield
    finally:
        _BYPASS.reset(token)


# ---------------------------------------------------------------------------------------------- options
def set_validation(store, validator: Any = None, level: Any = None, action: Any = None) -> dict:
    """Check and store a collection's validation options (createCollection/collMod).

    Unspecified parts keep their current value (collMod semantics); bad rules raise OperationFailure before
    anything is changed. Existing documents are not re-checked (the server does not either)."""
    cur = store.options
    if validator is None:
        validator = cur.get("validator") or {}
    if level is None:
        level = cur.get("validationLevel", "strict")
    if action is None:
        action = cur.get("validationAction", "error")
    opts = validation.validation_options(validator, level, action)
    for k in VALIDATION_KEYS:
        store.options[k] = opts[k]
    return opts


def collection_options(store) -> dict:
    """What ``listCollections`` shows as ``options`` for a collection."""
    return {k: v for k, v in store.options.items()}


def list_collections(db, filter=None, session=None, nameOnly=False, authorizedCollections=None, comment=None,
                     **kwargs) -> CommandCursor:
    """``listCollections`` for the embedded engine (name, type, options, info, idIndex)."""
    for k in kwargs:  # pymongo sends extra keyword arguments as command fields (IDL: unknown field 40415)
        if k not in ("cursor", "maxTimeMS", "includePendingDrops"):
            raise OperationFailure("BSON field 'listCollections.%s' is an unknown field." % k, 40415)
    from ..matcher.match import fast_matcher
    list_entry = hooks.get("view_list_entry")  # views.py and timeseries.py register these (hooks.py)
    ts_list_entry = hooks.get("timeseries_list_entry")
    match = fast_matcher(filter) if filter else None
    with sessions.bind(session, db, command="listCollections"):
        out = []
        for name in sorted(db.list_collection_names()):
            st = db._store[name]
            ts_entries = ts_list_entry(db, name, st, nameOnly)  # a time-series namespace and its buckets
            if ts_entries is not None:
                out.extend(e for e in ts_entries if match is None or match(e))
                continue
            if nameOnly:
                entry: dict = {"name": name, "type": "collection"}
            else:
                entry = {"name": name, "type": "collection", "options": collection_options(st),
                         "info": {"readOnly": False, "uuid": st.uuid},  # list_collections.cpp buildCollectionBson
                         "idIndex": {"v": 2, "key": {"_id": 1}, "name": "_id_"}}
            entry = list_entry(entry, st)  # views: type "view"; clustered: no idIndex (views.py)
            if match is not None and not match(entry):
                continue
            out.append(entry)
    return CommandCursor(out)


# ---------------------------------------------------------------------------------------------- checks


def _within_depth(doc: Any, max_depth: int) -> bool:
    """Fast check that ``doc`` nests at most ``max_depth`` levels (plain dicts/lists; anything unusual
    answers False so that ``limits.check_depth`` decides)."""
    stack = [(doc, 1)]
    while stack:
        v, d = stack.pop()
        for x in (v.values() if type(v) is dict else v):
            t = type(x)
            if t is dict or t is list:
                if x:
                    if d >= max_depth:
                        return False
                    stack.append((x, d + 1))
            elif t not in FLAT_TYPES and isinstance(x, (Mapping, list, tuple)):
                return False
    return True


def check_depth(doc: Any, update: bool = False) -> None:
    if type(doc) is not dict or not _within_depth(doc, MAX_DEPTH):
        limits.check_depth(doc, MAX_DEPTH, update=update)


def check_validation(coll, doc: Mapping, old: Mapping | None = None) -> None:
    opts = coll._store.options
    if opts.get("validator"):
        validation.check_write(opts, doc, old, bypass=_BYPASS.get(), namespace=coll._ns())


def check_insert_doc(coll, doc: Mapping) -> None:
    """Depth, size and validation for a document about to be inserted (``_id`` already set)."""
    check_depth(doc)
    limits.check_insert_size(doc)
    check_validation(coll, doc)


def check_update_doc(coll, old: Mapping, new: Mapping) -> None:
    """Depth, size (17419) and validation for the result of an update (``old`` is the stored document)."""
    check_depth(new, update=True)
    limits.check_update_size(new)
    check_validation(coll, new, old)


def _check_update_spec_depth(update: Any) -> None:
    """Refuse absurdly deep update documents before the update machinery recurses into them."""
    if isinstance(update, (Mapping, list)) and limits.nesting_depth(update, stop_after=MAX_DEPTH + 2) > MAX_DEPTH + 1:
        msg = "Document exceeds maximum nesting depth of %d" % MAX_DEPTH  # the result would be deeper still
        raise WriteError(msg, limits.ERR_OVERFLOW, {"index": 0, "code": limits.ERR_OVERFLOW, "codeName": "Overflow",
                                                    "errmsg": msg})


# ---------------------------------------------------------------------------------------------- pymongo's checks
def _arg(args: tuple, kwargs: dict, pos: int, name: str, default: Any = None) -> Any:
    """Argument ``name`` of a call (positional index ``pos`` after ``self``, or keyword)."""
    return args[pos] if len(args) > pos else kwargs.get(name, default)


def _check_index_spec(value: Any) -> None:
    """pymongo turns ``hint`` / ``sort`` into an index document client-side (``helpers_shared._index_document``):
    its TypeError / ValueError for anything else, as against a server."""
    if value is not None and not isinstance(value, str):
        from pymongo.helpers_shared import _index_document
        _index_document(value)


def _check_write_args(name: str, args: tuple, kwargs: dict) -> None:
    """pymongo's client-side checks of a write method's arguments (pymongo/synchronous/collection.py):
    ``upsert`` must be a bool, ``hint`` an index name or spec, ``bulk_write`` needs requests."""
    if name == "bulk_write":
        requests = _arg(args, kwargs, 0, "requests")
        if isinstance(requests, list) and not requests:
            from pymongo.errors import InvalidOperation
            raise InvalidOperation("No operations to execute")
        return
    if name in ("update_one", "update_many", "replace_one"):
        upsert = _arg(args, kwargs, 2, "upsert", False)
        if not isinstance(upsert, bool):
            from pymongo.common import validate_boolean
            validate_boolean("upsert", upsert)
    _check_index_spec(kwargs.get("hint"))


def _check_fam_args(args: tuple, kwargs: dict, sort_pos: int) -> None:
    """pymongo's checks in ``_find_and_modify``: ``return_document`` a bool, ``sort`` / ``hint`` index specs,
    ``upsert`` a bool."""
    rd = kwargs.get("return_document")
    if rd is not None and not isinstance(rd, bool):
        raise TypeError("return_document must be ReturnDocument.BEFORE or ReturnDocument.AFTER, not %s" % type(rd))
    _check_index_spec(_arg(args, kwargs, sort_pos, "sort"))
    _check_index_spec(kwargs.get("hint"))
    upsert = kwargs.get("upsert", False)
    if not isinstance(upsert, bool):
        from pymongo.common import validate_boolean
        validate_boolean("upsert", upsert)


_READ_CONCERN_LEVELS = ("local", "majority", "linearizable", "available", "snapshot")


def _check_read_settings(coll) -> None:
    """Reads as on a one-member replica set: read preference ``secondary`` (or ``nearest`` with tag sets the
    primary does not have) selects no member - pymongo's ServerSelectionTimeoutError, raised at once instead of
    after serverSelectionTimeoutMS; an unknown read concern level is the server's BadValue (2).
    Manual "Read Preference" (modes, tag sets), "Read Concern" (levels)."""
    rp = coll._read_preference
    mode = getattr(rp, "mode", 0)
    if mode == 2 or (mode == 4 and any(t for t in (getattr(rp, "tag_sets", None) or []))):
        from pymongo.errors import ServerSelectionTimeoutError
        raise ServerSelectionTimeoutError("No replica set members match selector \"%r\" (the embedded engine is a "
                                          "one-member replica set: its only member is the primary)" % (rp,))
    rc = coll._read_concern
    level = getattr(rc, "level", None)
    if level is not None and level not in _READ_CONCERN_LEVELS:
        msg = "Enumeration value '%s' for field 'readConcern.level' is not a valid value." % level
        raise OperationFailure(msg, 2, {"ok": 0.0, "errmsg": msg, "code": 2, "codeName": "BadValue"})


_READS = frozenset(("count_documents", "estimated_document_count"))


_WRITE_CHECKED = frozenset(("update_one", "update_many", "replace_one", "delete_one", "delete_many", "bulk_write"))

# The command pymongo sends for each collection method (a transaction or a snapshot read judges it by name).
_COMMAND_OF = {"insert_one": "insert", "insert_many": "insert", "update_one": "update", "update_many": "update",
               "replace_one": "update", "delete_one": "delete", "delete_many": "delete",
               "count_documents": "aggregate", "estimated_document_count": "count"}


def _bulk_command(args: tuple, kwargs: dict) -> str:
    """The first command pymongo sends for ``bulk_write(requests)``: that of its first request."""
    from pymongo.operations import DeleteMany, DeleteOne, InsertOne
    reqs = args[0] if args else kwargs.get("requests")
    first = next(iter(reqs), None) if isinstance(reqs, (list, tuple)) else None
    if isinstance(first, InsertOne):
        return "insert"
    if isinstance(first, (DeleteOne, DeleteMany)):
        return "delete"
    return "update"


def _snapshot(coll: Any) -> bool:
    """Whether reads of ``coll`` carry readConcern "snapshot" (its read concern; pymongo sends it on reads)."""
    return getattr(coll._read_concern, "level", None) == "snapshot"


# ---------------------------------------------------------------------------------------------- wrappers
def _bound(name: str, bypass: bool = False, collation: bool = False, update_arg: int | None = None):
    """An override of ``EmbeddedCollection.<name>`` that accepts ``session=`` (and ``collation=`` /
    ``bypass_document_validation=``) and runs the base method inside that context."""
    base = getattr(EmbeddedCollection, name)

    @functools.wraps(base)
    def method(self, *args, **kwargs):
        if name == "estimated_document_count" and "session" in kwargs:  # pymongo refuses it before sending
            from pymongo.errors import ConfigurationError
            raise ConfigurationError("estimated_document_count does not support sessions")
        if name in _WRITE_CHECKED:
            _check_write_args(name, args, kwargs)
        elif name in _READS and (self._read_preference.mode or self._read_concern.level):
            _check_read_settings(self)
        session = kwargs.pop("session", None)
        coll_spec = kwargs.pop("collation", None) if collation else None
        norm = collate.normalize(coll_spec)
        flag = (kwargs.get("bypass_document_validation", False) if bypass else False) or _BYPASS.get()
        if update_arg is not None:
            upd = args[update_arg] if len(args) > update_arg else kwargs.get("update", kwargs.get("replacement"))
            _check_update_spec_depth(upd)
        snap = name in _READS and _snapshot(self)
        if session is None and norm is None and not flag and not snap and collate.current() is None:
            return base(self, *args, **kwargs)  # nothing to bind (the common case: keep it cheap)
        command = _bulk_command(args, kwargs) if name == "bulk_write" else _COMMAND_OF.get(name)
        with sessions.bind(session, self, command=command, snapshot=snap), bypassing(flag), collate.using(norm):
            return base(self, *args, **kwargs)
    return method


def _check_snapshot_pipeline(pipeline: Any) -> None:
    """$out / $merge read with readConcern "local" only (lite_parsed_document_source.h,
    onlyReadConcernLocalSupported): a snapshot read refuses them (InvalidOptions 72)."""
    if isinstance(pipeline, list) and pipeline and isinstance(pipeline[-1], Mapping):
        stage = next(iter(pipeline[-1]), None)
        if stage in ("$out", "$merge"):
            msg = ("Aggregation stage %s cannot run with a readConcern other than 'local'. Current readConcern: "
                   "snapshot" % stage)
            raise OperationFailure(msg, 72, {"ok": 0.0, "errmsg": msg, "code": 72, "codeName": "InvalidOptions"})


def _write_concern_failure(coll, session) -> Any:
    """What the collection's write concern means on the one-member replica set the engine models: ``None``
    (acknowledged, nothing to add), ``0`` (unacknowledged: pymongo returns results with ``acknowledged`` false
    and no error reaches the caller), or the server's ``writeConcernError`` document (the write is applied,
    then reported: w greater than the set's one member is UnsatisfiableWriteConcern 100, an unknown tag is
    UnknownReplWriteConcern 79). Manual: "Write Concern" (w: <number>, w: <custom write concern name>).
    Inside a transaction pymongo uses the transaction's write concern, so the collection's does not apply."""
    doc = coll._write_concern.document
    if not doc or (session is not None and getattr(session, "in_transaction", False)):
        return None
    w = doc.get("w", 1)
    if w == 0:
        if session is not None:
            from pymongo.errors import ConfigurationError
            raise ConfigurationError("Explicit sessions are incompatible with unacknowledged write concern")
        return 0
    return sessions.write_concern_error(doc)


def _unacknowledged(name: str, args: tuple, kwargs: dict) -> Any:
    """pymongo's result of an unacknowledged write ``name`` (ids are the client's; counts are not known)."""
    from pymongo.results import BulkWriteResult, DeleteResult, InsertManyResult, UpdateResult
    if name == "insert_one":
        doc = args[0] if args else kwargs.get("document")
        return InsertOneResult(doc.get("_id") if isinstance(doc, Mapping) else None, acknowledged=False)
    if name == "insert_many":
        docs = args[0] if args else kwargs.get("documents")
        return InsertManyResult([d.get("_id") for d in docs if isinstance(d, Mapping)], acknowledged=False)
    if name in ("update_one", "update_many", "replace_one"):
        return UpdateResult(None, acknowledged=False)
    if name in ("delete_one", "delete_many"):
        return DeleteResult(None, acknowledged=False)
    if name.startswith("find_one_and_"):  # pymongo gets no reply (moreToCome), so no document
        return None
    return BulkWriteResult({}, acknowledged=False)


def _with_write_concern(name: str, method):
    """Wrap a public write method with the collection's write concern (``_write_concern_failure``)."""

    @functools.wraps(method)
    def wrapped(self, *args, **kwargs):
        if self._write_concern.is_server_default:  # the default write concern: nothing to do (kept cheap)
            return method(self, *args, **kwargs)
        outcome = _write_concern_failure(self, kwargs.get("session"))
        if outcome is None:
            return method(self, *args, **kwargs)
        from pymongo.errors import BulkWriteError, PyMongoError, WriteConcernError
        if outcome == 0:
            if kwargs.get("bypass_document_validation"):
                raise OperationFailure("Cannot set bypass_document_validation with unacknowledged write concern")
            if name in ("insert_one", "insert_many"):  # pymongo gives the documents their _id before sending
                from ..base.docutil import new_object_id
                docs = [args[0] if args else kwargs.get("document")] if name == "insert_one" else \
                    list(args[0] if args else kwargs.get("documents", []))
                for d in docs:
                    if isinstance(d, dict) and "_id" not in d:
                        d["_id"] = new_object_id()
                if name == "insert_many":
                    args = (docs,) + tuple(args[1:]) if args else args
                    if not args:
                        kwargs["documents"] = docs
            try:
                method(self, *args, **kwargs)
            except PyMongoError:
                pass  # the server does not report the outcome of an unacknowledged write
            return _unacknowledged(name, args, kwargs)
        result = method(self, *args, **kwargs)
        if name in ("insert_many", "bulk_write"):
            details = dict(getattr(result, "bulk_api_result", None) or {})
            if name == "insert_many":
                details = {"writeErrors": [], "nInserted": len(result.inserted_ids), "nUpserted": 0,
                           "nMatched": 0, "nModified": 0, "nRemoved": 0, "upserted": []}
            details["writeConcernErrors"] = [outcome]
            raise BulkWriteError(details)
        raise WriteConcernError(outcome["errmsg"], outcome["code"], outcome)
    return wrapped


@guard(COLLECTION_OPERATIONS)  # the operation boundary: lock, server errors, monitoring (boundary.py)
class LabCollection(EmbeddedCollection):
    """``EmbeddedCollection`` plus validation, limits, sessions/transactions and collation."""

    # -- internal hooks -----------------------------------------------------------------------------
    def _prepare_insert(self, data: Any) -> dict:
        if isinstance(data, Mapping):
            check_depth(data)  # before anything walks the document recursively
        try:
            doc = super()._prepare_insert(data)  # sets _id; refuses > 16 MiB (code 10334)
        except WriteError as e:
            if e.code == 10334:
                limits.check_insert_size(data)  # pymongo refuses it first: DocumentTooLarge
            raise
        check_validation(self, doc)
        opts = self._store.options
        if opts and opts.get("capped"):
            from .capped import check_insert
            check_insert(self._store, doc)  # one document larger than the cap (capped.py)
        return doc

    def _validates_updates(self, st) -> bool:
        return bool(st.options.get("validator"))  # what check_validation tests (collection.py's lean update)

    def _replace_doc(self, rid: int, old: dict, new: dict, touched: frozenset | None = None,
                     shallow: bool = False) -> None:
        if shallow:  # a scalar-only update of a stored document: no deeper, size checked by the caller
            check_validation(self, new, old)
        else:
            check_update_doc(self, old, new)
        super()._replace_doc(rid, old, new, touched)

    def _update(self, *args, collation=None, **kwargs):
        if collation is None:  # the public methods bind their collation themselves
            return super()._update(*args, **kwargs)
        with collate.using(collate.normalize(collation)):  # bulk_write operations carry their own
            return super()._update(*args, **kwargs)

    def _delete(self, *args, collation=None, **kwargs):
        if collation is None:
            return super()._delete(*args, **kwargs)
        with collate.using(collate.normalize(collation)):
            return super()._delete(*args, **kwargs)

    def _run(self, q, stop_after=None, **kwargs):
        c = collate.current()
        if c is None and (not collate.has_collation_index(self._store) or
                          express_eligible(self._store, q) is not None):
            return super()._run(q, stop_after, **kwargs)
        # a collation was given, or collation indexes exist that a simple-collation query must not use
        return collate.run_query(self, q, c, stop_after, **kwargs)

    # -- writes -------------------------------------------------------------------------------------
    _insert_one_general = _bound("insert_one", bypass=True)

    def insert_one(self, document, bypass_document_validation=None, session=None, comment=None):
        """pymongo's ``insert_one``. A plain dict of scalar fields, outside a session, into a collection without
        a validator takes ``_insert_flat`` (the same checks and effects in fewer steps); anything else takes
        the general path (depth, deep copy, validation, sessions)."""
        if session is None and type(document) is dict and sessions.binding() is None:
            st = self._db_store[self._name]
            if not st.options.get("validator") and not st.options.get("capped"):
                _id = self._insert_flat(st, document)
                if _id is not NOT_FLAT:
                    return InsertOneResult(_id, acknowledged=True)
        return self._insert_one_general(document, bypass_document_validation=bypass_document_validation,
                                        session=session, comment=comment)

    insert_many = _bound("insert_many", bypass=True)
    update_one = _bound("update_one", bypass=True, collation=True, update_arg=1)
    update_many = _bound("update_many", bypass=True, collation=True, update_arg=1)
    replace_one = _bound("replace_one", bypass=True, collation=True, update_arg=1)
    delete_one = _bound("delete_one", collation=True)
    delete_many = _bound("delete_many", collation=True)
    bulk_write = _bound("bulk_write", bypass=True)

    def _find_and_modify(self, query, projection=None, update=None, upsert=False, sort=None, *args, **kwargs):
        # Resolve the target under the collation first, then modify it by _id with the simple collation (an
        # _id lookup under a case-insensitive collation could pick a different document).
        norm = collate.current()
        if norm is not None:
            rids = self._matching_rids(query, False, sort=sort, hint=kwargs.get("hint"))
            if rids:
                query = {"_id": self._store.docs[rids[0]]["_id"]}
                sort = None
        with collate.using(None):
            return super()._find_and_modify(query, projection, update, upsert, sort, *args, **kwargs)

    def find_one_and_delete(self, filter, *args, **kwargs):
        _check_fam_args(args, kwargs, 1)
        return self._fam("find_one_and_delete", filter, None, args, kwargs)

    def find_one_and_update(self, filter, update, *args, **kwargs):
        _check_fam_args(args, kwargs, 1)
        _check_update_spec_depth(update)
        return self._fam("find_one_and_update", filter, update, args, kwargs)

    def find_one_and_replace(self, filter, replacement, *args, **kwargs):
        _check_fam_args(args, kwargs, 1)
        _check_update_spec_depth(replacement)
        return self._fam("find_one_and_replace", filter, replacement, args, kwargs)

    def _fam(self, name, filter, doc, args, kwargs):
        session = kwargs.pop("session", None)
        norm = collate.normalize(kwargs.pop("collation", None))
        # pymongo has no bypass_document_validation argument here: extra keyword arguments are fields of the
        # findAndModify command, so the flag is ``bypassDocumentValidation=True`` (any other name is 40415)
        flag = bool(kwargs.pop("bypassDocumentValidation", False)) or _BYPASS.get()
        base = getattr(EmbeddedCollection, name)
        with sessions.bind(session, self, command="findAndModify"), bypassing(flag), collate.using(norm):
            if doc is None:
                return base(self, filter, *args, **kwargs)
            return base(self, filter, doc, *args, **kwargs)

    # -- reads --------------------------------------------------------------------------------------
    def find(self, *args, **kwargs):
        if self._read_preference.mode or self._read_concern.level:
            _check_read_settings(self)
        _check_index_spec(_arg(args, kwargs, 6, "sort"))
        _check_index_spec(kwargs.get("hint"))
        session = kwargs.pop("session", None)
        given = kwargs.pop("collation", None)
        norm = collate.normalize(given)
        sessions.check_session(session, self)
        cur = super().find(*args, **kwargs)
        cur.__class__ = LabCursor
        cur._session = session
        cur._lab_collation = norm
        cur._lab_collation_doc = given  # as the caller gave it (what pymongo sends)
        return cur

    _lab_express_find_one = True  # find is EmbeddedCollection's plus sessions/collation (collection.py)

    def find_one(self, filter=None, *args, **kwargs):
        session = kwargs.pop("session", None)
        snap = _snapshot(self)
        if session is None and not snap:  # sessions.bind(None) binds nothing
            return super().find_one(filter, *args, **kwargs)
        with sessions.bind(session, self, command="find", snapshot=snap):
            return super().find_one(filter, *args, **kwargs)

    count_documents = _bound("count_documents", collation=True)
    _count_command = _bound("_count_command", collation=True)
    estimated_document_count = _bound("estimated_document_count")

    def distinct(self, key, filter=None, session=None, comment=None, hint=None, **kwargs):
        if self._read_preference.mode or self._read_concern.level:
            _check_read_settings(self)
        norm = collate.normalize(kwargs.pop("collation", None))
        with sessions.bind(session, self, command="distinct", snapshot=_snapshot(self)), collate.using(norm):
            if norm is None:
                return super().distinct(key, filter, comment=comment, hint=hint, **kwargs)
            if not isinstance(key, str):
                raise TypeError("key must be an instance of str")
            from mongomock import helpers
            from ..query.planner import Query
            filter = _client_value(filter or {})
            ex = self._run(Query(filter, hint=hint, kind="distinct", distinct_key=key))
            st = self._store
            return collate.distinct_values(
                (m[1] if m[1] is not None else st.docs[m[0]] for m in ex.results), key, norm)

    def aggregate(self, pipeline, session=None, **kwargs):
        if self._read_preference.mode or self._read_concern.level:
            _check_read_settings(self)
        if "batchSize" in kwargs:
            from pymongo.common import validate_non_negative_integer_or_none
            validate_non_negative_integer_or_none("batchSize", kwargs["batchSize"])
        norm = collate.normalize(kwargs.pop("collation", None))
        flag = bool(kwargs.pop("bypassDocumentValidation", False) or kwargs.pop("bypass_document_validation", False))
        snap = _snapshot(self)
        if snap or (session is not None and session.options.snapshot and not session.in_transaction):
            _check_snapshot_pipeline(pipeline)
        with sessions.bind(session, self, command="aggregate", snapshot=snap), collate.using(norm), bypassing(flag):
            if norm is not None:
                collate.check_pipeline(pipeline)
            result = super().aggregate(pipeline, **kwargs)
        return result

    # -- indexes & DDL ------------------------------------------------------------------------------
    def create_index(self, keys, session=None, comment=None, **kwargs):
        from pymongo.helpers_shared import _index_list
        _index_list(keys)  # pymongo's TypeError / ValueError for a bad key specification
        with sessions.bind(session, self, ddl="createIndexes"):
            return super().create_index(keys, comment=comment, **kwargs)

    def create_indexes(self, indexes, session=None, comment=None, **kwargs):
        with sessions.bind(session, self, ddl="createIndexes"):
            return super().create_indexes(indexes, comment=comment, **kwargs)

    def drop_index(self, index_or_name, session=None, comment=None, **kwargs):
        with sessions.bind(session, self, ddl="dropIndexes"):
            return super().drop_index(index_or_name, comment=comment, **kwargs)

    def drop_indexes(self, session=None, comment=None, **kwargs):
        with sessions.bind(session, self, ddl="dropIndexes"):
            return super().drop_indexes(comment=comment, **kwargs)

    def list_indexes(self, session=None, comment=None):
        with sessions.bind(session, self, command="listIndexes"):
            return super().list_indexes(comment=comment)

    def index_information(self, session=None, comment=None):
        with sessions.bind(session, self, command="listIndexes"):
            return super().index_information(comment=comment)

    def drop(self, session=None, comment=None, **kwargs):
        with sessions.bind(session, self, ddl="drop"):
            return super().drop(comment=comment, **kwargs)

    # -- surface: the remaining pymongo Collection methods (refused clearly where not modelled) -----------
    def rename(self, new_name, session=None, comment=None, **kwargs):
        """pymongo's ``rename`` (``dropTarget=True`` replaces an existing target)."""
        for k in kwargs:
            if k != "dropTarget":
                raise OperationFailure("BSON field 'renameCollection.%s' is an unknown field." % k, 40415)
        if not isinstance(new_name, str):
            raise TypeError("new_name must be an instance of str")
        with sessions.bind(session, self, ddl="renameCollection"):
            dbs = self.database._store
            # manual "renameCollection" / rename_collection.cpp: NamespaceNotFound 26, NamespaceExists 48
            if not dbs[self.name].is_created:
                msg = "Source collection %s.%s does not exist" % (self.database.name, self.name)
                raise OperationFailure(msg, 26, {"ok": 0.0, "errmsg": msg, "code": 26,
                                                 "codeName": "NamespaceNotFound"})
            if new_name == self.name:
                raise OperationFailure("Can't rename a collection to itself", 20,
                                       {"ok": 0.0, "errmsg": "Can't rename a collection to itself", "code": 20,
                                        "codeName": "IllegalOperation"})
            if new_name in dbs and dbs[new_name].is_created and not kwargs.get("dropTarget"):
                raise OperationFailure("target namespace exists", 48,
                                       {"ok": 0.0, "errmsg": "target namespace exists", "code": 48,
                                        "codeName": "NamespaceExists"})
            from ..repl.oplog import record_command
            target = dbs._collections.get(new_name)
            dbs[self.name].wait_for_writers()  # both collections' exclusive locks (rename_collection.cpp)
            if kwargs.get("dropTarget") and target is not None:
                target.wait_for_writers()
            o = {"renameCollection": "%s.%s" % (self.database.name, self.name),
                 "to": "%s.%s" % (self.database.name, new_name), "stayTemp": False}
            if kwargs.get("dropTarget") and target is not None and target.is_created:
                o["dropTarget"] = target.uuid
            out = super().rename(new_name, **kwargs)
            record_command(dbs, self.database.name, new_name, o)  # the change streams' rename event
            return out

    def watch(self, *args, **kwargs):
        """pymongo's ``Collection.watch``: a change stream on this collection (labkit/engine/change_streams.py)."""
        return hooks.get("watch")(self, "collection", args, kwargs)

    def find_raw_batches(self, *args, **kwargs):
        """Raw BSON batches are not modelled."""
        raise unsupported("find_raw_batches()")

    def aggregate_raw_batches(self, *args, **kwargs):
        """Raw BSON batches are not modelled."""
        raise unsupported("aggregate_raw_batches()")

    def _search_index(self, *args, **kwargs):
        """Atlas Search indexes: a MongoDB 8.0 Community server without mongot refuses them (SearchNotEnabled)."""
        msg = ("Using Atlas Search Database Commands and the '$listSearchIndexes' aggregation stage requires "
               "additional configuration. Please connect to Atlas or an AtlasCLI local deployment to enable.")
        raise OperationFailure(msg, 31082, {"ok": 0.0, "errmsg": msg, "code": 31082, "codeName": "SearchNotEnabled"})

    list_search_indexes = create_search_index = create_search_indexes = _search_index
    drop_search_index = update_search_index = _search_index

    def options(self, session=None, comment=None) -> dict:
        """The collection's options as ``listCollections`` shows them (``{}`` when none were set)."""
        with sessions.bind(session, self, command="listCollections"):
            return collection_options(self._store)


for _name in ("insert_one", "insert_many", "update_one", "update_many", "replace_one", "delete_one",
              "delete_many", "bulk_write", "find_one_and_delete", "find_one_and_update", "find_one_and_replace"):
    setattr(LabCollection, _name, _with_write_concern(_name, getattr(LabCollection, _name)))


def _insert_one_entry(full):
    """``insert_one``'s outermost layer (issue 19: the per-call cost). When nothing could make the call
    differ from ``_insert_flat`` under the store's lock (a plain dict, no session or transaction, the default
    write concern, no command listener, no profiler, no operation already in progress, no validator, not
    capped), it takes that lock and calls ``_insert_flat`` directly, translating errors as the boundary does;
    anything else, or a document ``_insert_flat`` declines, goes through ``full`` (write concern > boundary >
    ``LabCollection.insert_one``). tests/test_engine_insert_one_entry.py compares both."""
    tls = boundary._TLS

    @functools.wraps(full)
    def insert_one(self, document, bypass_document_validation=None, session=None, comment=None):
        if session is None and type(document) is dict and getattr(tls, "op", None) is None \
                and self._write_concern.is_server_default:
            cd = boundary.client_of(self).__dict__
            store = cd["_store"]
            sd = store.__dict__
            hist = sd.get("_lab_history")
            if not cd.get("_lab_listeners") and not sd.get("_lab_profiling") and sessions.binding() is None \
                    and (hist is None or not hist.holds):  # a held key may make the insert wait (boundary.py)
                _id = NOT_FLAT
                with sd.get("_lab_lock") or boundary.lock_for_store(store):
                    st = self._db_store[self._name]  # under the lock: the first insert creates the store
                    opts = st.options
                    if not opts or not (opts.get("validator") or opts.get("capped")):
                        t0 = boundary._clock()
                        try:
                            _id = self._insert_flat(st, document)
                        except BaseException as exc:
                            err = boundary.translate(exc, "insert_one")
                            if err is exc:
                                raise
                            raise err from exc
                        if _id is not NOT_FLAT:  # the top command's insert counter, as the boundary keeps it
                            boundary.record_top(store, self._ns(), "insert", boundary._clock() - t0, True)
                if _id is not NOT_FLAT:
                    return InsertOneResult(_id, acknowledged=True)
        return full(self, document, bypass_document_validation=bypass_document_validation, session=session,
                    comment=comment)
    return insert_one


LabCollection.insert_one = _insert_one_entry(LabCollection.insert_one)


@guard(CURSOR_OPERATIONS)
class LabCursor(Cursor):
    """The engine Cursor, run inside its session (transaction snapshot) and collation."""

    _session = None
    _lab_collation = None

    @contextlib.contextmanager
    def _ctx(self, command: str = "find"):
        with sessions.bind(self._session, self.collection, command=command, snapshot=_snapshot(self.collection)), \
                collate.using(self._lab_collation):
            yield

    def _execute(self) -> None:
        with self._ctx():
            super()._execute()

    def distinct(self, key: str) -> list:
        with self._ctx("distinct"):
            if self._lab_collation is None:
                return super().distinct(key)
            ex = self.collection._run(self._query(bounds=False))  # Cursor.distinct sends no min/max
            st = self.collection._store
            return collate.distinct_values((m[1] if m[1] is not None else st.docs[m[0]] for m in ex.results), key,
                                           self._lab_collation)

    def explain(self, verbosity: str = "allPlansExecution") -> dict:
        with self._ctx("explain"):
            out = super().explain(verbosity)
        if self._lab_collation is not None:
            cmd = out.get("command")
            if isinstance(cmd, dict):
                cmd["collation"] = dict(self._lab_collation)
        return out

    def clone(self) -> "LabCursor":
        c = super().clone()
        c.__class__ = LabCursor
        c._session = self._session
        c._lab_collation = self._lab_collation
        c._lab_collation_doc = getattr(self, "_lab_collation_doc", None)
        return c

    __copy__ = clone

    def collation(self, collation) -> "LabCursor":
        self._check_okay_to_chain()
        self._lab_collation = collate.normalize(collation)
        self._lab_collation_doc = collation
        return self


__all__ = ["LabCollection", "LabCursor", "set_validation", "list_collections", "collection_options",
           "check_insert_doc", "check_update_doc", "bypassing"]

# Names kept importable for callers that use them through this module.
_ = (OperationFailure, unsupported, distinct_values)


# ---------------------------------------------------------------------------------------------- DDL
_CREATE_UNSUPPORTED = {
    "timeseries": "Time-series collections (create_collection(timeseries=...))",
    "capped": "Capped collections (create_collection(capped=True))",
    "size": "Capped collections (create_collection(size=...))",
    "max": "Capped collections (create_collection(max=...))",
    "expireAfterSeconds": "create_collection(expireAfterSeconds=...) (time-series/clustered collections)",
    "clusteredIndex": "Clustered collections (create_collection(clusteredIndex=...))",
    "viewOn": "Views (create_collection(viewOn=...))",
    "pipeline": "Views (create_collection(pipeline=...))",
    "collation": "A collection default collation (create_collection(collation=...)); pass collation= to each "
                 "query or index instead",
    "encryptedFields": "Queryable encryption (create_collection(encryptedFields=...))",
}


def create_collection(db, name: str, kwargs: dict):
    """``Database.create_collection`` with validation options; other server options raise clearly."""
    from mongomock import database as mm_database
    kwargs = dict(kwargs)
    session = kwargs.pop("session", None)
    check_exists = kwargs.pop("check_exists", True)
    kwargs.pop("comment", None)
    if "timeseries" in kwargs:  # time-series collections (timeseries.py)
        with sessions.bind(session, db, ddl="create"):
            if sessions.current() is not None:  # create_collection.cpp
                raise sessions.not_in_transaction("Cannot create a time-series collection in a multi-document "
                                                  "transaction.")
            return hooks.get("timeseries_create")(db, name, dict(kwargs, check_exists=check_exists))
    from . import capped, clustered
    view = hooks.get("view_parse_create")(db, name, kwargs)  # viewOn/pipeline (+ the view's collation)
    extra_opts = capped.parse_create(kwargs) or {}  # capped/size/max
    extra_opts.update(clustered.parse_create(kwargs) or {})  # clusteredIndex (+ expireAfterSeconds)
    vopts = {k: kwargs.pop(k) for k in VALIDATION_KEYS if k in kwargs}
    if "changeStreamPreAndPostImages" in kwargs:  # change streams' pre- and post-images
        extra_opts.update(pre_and_post_images("create", kwargs.pop("changeStreamPreAndPostImages")))
    for k in kwargs:
        if k in _CREATE_UNSUPPORTED:
            if k == "capped" and not kwargs[k]:
                continue
            raise unsupported(_CREATE_UNSUPPORTED[k])
        raise unsupported("create_collection(%s=...)" % k)
    opts = None
    if vopts:
        opts = validation.validation_options(vopts.get("validator") or {}, vopts.get("validationLevel", "strict"),
                                             vopts.get("validationAction", "error"))
    with sessions.bind(session, db, ddl="create"):
        if sessions.current() is not None:
            return _create_in_transaction(db, name, view, opts, extra_opts)
        if check_exists and name in db.list_collection_names():
            mm_database.Database.create_collection(db, name)  # CollectionInvalid, as before
        if view is not None:
            db._ensure_valid_collection_name(name)
            hooks.get("view_create")(db, name, view)
            return db.get_collection(name)
        if check_exists:
            coll = mm_database.Database.create_collection(db, name)
        else:
            db._ensure_valid_collection_name(name)
            db._store.create_collection(name)
            coll = db.get_collection(name)
        if opts is not None:
            coll._store.options.update(opts)
        if extra_opts:
            coll._store.options.update(extra_opts)
        _record_create(coll, name)
    return coll


def _record_create(coll: Any, name: str) -> None:
    """The create entry while a change stream is open: a create event with showExpandedEvents (inside a
    transaction the transaction keeps it until it commits)."""
    log = coll._oplog()
    if log is not None:
        o = {"create": name, **collection_options(coll._store)}
        if "clusteredIndex" not in o:
            o["idIndex"] = {"v": 2, "key": {"_id": 1}, "name": "_id_"}
        coll._record(log, "c", o=o)


def _create_in_transaction(db, name: str, view: Any, opts: dict | None, extra_opts: dict) -> Any:
    """``create`` inside a transaction (4.4+): the collection is created in the transaction's copy and appears
    at commit; an existing one (in the transaction's snapshot) is NamespaceExists (48); a view or a system
    collection is refused (263). Manual "Create Collections and Indexes in a Transaction";
    jstests/core/txns/create_collection.js; create_collection.cpp."""
    if view is not None:
        raise sessions.not_in_transaction("Cannot create a view in a multi-document transaction.")
    db._ensure_valid_collection_name(name)
    if name.startswith("system."):
        raise sessions.not_in_transaction("Cannot create system collection %s.%s within a transaction."
                                          % (db.name, name))
    coll = db.get_collection(name)
    st = coll._store  # the transaction's copy
    if st.is_created:
        msg = "Collection %s.%s already exists." % (db.name, name)
        raise OperationFailure(msg, 48, {"ok": 0.0, "errmsg": msg, "code": 48, "codeName": "NamespaceExists"})
    st._is_force_created = True
    if opts is not None:
        st.options.update(opts)
    if extra_opts:
        st.options.update(extra_opts)
    _record_create(coll, name)
    return coll


def pre_and_post_images(command: str, value: Any) -> dict:
    """The ``changeStreamPreAndPostImages: {enabled: <bool>}`` option of create / collMod, as stored options
    (shown by listCollections only when enabled); the server's IDL errors for a wrong shape."""
    field = "%s.changeStreamPreAndPostImages" % command
    if not isinstance(value, Mapping):
        raise OperationFailure("BSON field '%s' is the wrong type '%s', expected type 'object'"
                               % (field, _type_name(value)), 14)
    for k in value:
        if k != "enabled":
            raise OperationFailure("BSON field '%s.%s' is an unknown field." % (field, k), 40415)
    if "enabled" not in value:
        raise OperationFailure("BSON field '%s.enabled' is missing but a required field" % field, 40414)
    if not isinstance(value["enabled"], bool):
        raise OperationFailure("BSON field '%s.enabled' is the wrong type '%s', expected type 'bool'"
                               % (field, _type_name(value["enabled"])), 14)
    return {"changeStreamPreAndPostImages": {"enabled": True}} if value["enabled"] else {}


def collmod_validation(coll, cmd: dict) -> dict:
    """The validation part of ``collMod`` (validator / validationLevel / validationAction)."""
    if not any(k in cmd for k in VALIDATION_KEYS):
        return {}
    set_validation(coll._store, cmd.get("validator"), cmd.get("validationLevel"), cmd.get("validationAction"))
    return {}


# ---------------------------------------------------------------------------------------------- commands
def cmd_list_collections(db, cmd: dict) -> dict:
    """``db.command("listCollections", filter=..., nameOnly=...)``."""
    docs = list(list_collections(db, cmd.get("filter"), None, bool(cmd.get("nameOnly", False))))
    return {"cursor": {"id": 0, "ns": "%s.$cmd.listCollections" % db.name, "firstBatch": docs}, "ok": 1.0}


def cmd_create(db, cmd: dict) -> dict:
    """``db.command("create", name, validator=..., ...)`` (createCollection)."""
    from pymongo.errors import CollectionInvalid
    opts = {k: v for k, v in cmd.items() if k not in ("create", "$db")}
    try:
        create_collection(db, cmd["create"], opts)
    except CollectionInvalid:
        raise OperationFailure("Collection %s.%s already exists." % (db.name, cmd["create"]), 48) from None
    return {"ok": 1.0}


COMMANDS = {"listCollections": cmd_list_collections, "listcollections": cmd_list_collections,
            "create": cmd_create}
