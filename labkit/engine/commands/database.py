"""EmbeddedDatabase: collections of the embedded engine plus the commands a teaching lab needs."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import bson
from mongomock import OperationFailure, helpers
from mongomock import database as mm_database
from mongomock import read_preferences

from ..bson.values import client_value as _client_value, type_name as _type_name
from ..service.boundary import DATABASE_OPERATIONS, guard
from ..catalog.collection import (CommandCursor, EmbeddedCollection, _check_sort, _sort_list, check_find_flags,
                                  refuse_min_max_as_aggregation, set_find_flags, set_min_max)
from ..catalog.views import view_def
from ..catalog.rules import COMMANDS as _RULES_COMMANDS, LabCollection
from ..query.planner import Query, unsupported
from ..stats import storage_stats as stats


def _as_view(db, name: str, coll):
    """A handle on a view is a ``ViewCollection`` (labkit/engine/catalog/views.py)."""
    st = db._store._collections.get(name)
    if st is not None and st.options and "viewOn" in st.options:
        from ..catalog.views import ViewCollection
        coll.__class__ = ViewCollection
    return coll


@guard(DATABASE_OPERATIONS)
class EmbeddedDatabase(mm_database.Database):
    def get_collection(self, name, codec_options=None, read_preference=None, write_concern=None,
                       read_concern=None):
        if codec_options is None and read_preference is None and write_concern is None and read_concern is None:
            cached = self._collection_accesses.get(name)  # the common case (every command on the wire): the
            # handle already made with this database's options is the one with_options would return
            if cached is not None and cached._codec_options is self._codec_options \
                    and cached._read_preference is self._read_preference \
                    and (self._lab_write_concern is None or cached._write_concern is self._lab_write_concern):
                return _as_view(self, name, cached)
        write_concern = write_concern or self._lab_write_concern
        if read_preference is not None:
            read_preferences.ensure_read_preference_type("read_preference", read_preference)
        try:
            return _as_view(self, name, self._collection_accesses[name].with_options(
                codec_options=codec_options or self._codec_options,
                read_preference=read_preference or self.read_preference,
                read_concern=read_concern, write_concern=write_concern))
        except KeyError:
            self._ensure_valid_collection_name(name)
            from ..catalog.timeseries import collection_class  # TimeseriesCollection for a time-series namespace
            coll = self._collection_accesses[name] = collection_class(self._store, name)(
                self, name=name, read_concern=read_concern, write_concern=write_concern,
                read_preference=read_preference or self.read_preference,
                codec_options=codec_options or self._codec_options, _db_store=self._store)
            return _as_view(self, name, coll)

    def create_collection(self, name, **kwargs):
        if not isinstance(name, str):
            raise TypeError("name must be an instance of str")
        from ..catalog.rules import create_collection  # validator options; clear errors for the rest
        return create_collection(self, name, kwargs)

    def list_collections(self, filter=None, session=None, nameOnly=False, **kwargs):
        from ..catalog.rules import list_collections
        return list_collections(self, filter, session, nameOnly, **kwargs)

    def drop_collection(self, name_or_collection, session=None, **kwargs):
        if not isinstance(getattr(name_or_collection, "name", name_or_collection), str):
            raise TypeError("name_or_collection must be an instance of str")
        from ..session.sessions import bind
        with bind(session, self, ddl="drop"):
            from ..catalog.timeseries import on_drop  # a time-series collection's buckets go with it
            from ..catalog.views import on_drop as on_drop_view
            on_drop_view(self, name_or_collection if isinstance(name_or_collection, str) else name_or_collection.name)
            name = name_or_collection if isinstance(name_or_collection, str) else name_or_collection.name
            on_drop(self, name)
            from ..repl.oplog import record_command
            st = self._store._collections.get(name)
            if st is not None and st.is_created and not name.startswith("system."):
                record_command(self._store, self.name, name, {"drop": name})  # the change streams' drop event
            return super().drop_collection(name_or_collection)

    def aggregate(self, pipeline, session=None, **kwargs):
        """Database-level aggregation ({aggregate: 1}): ``$documents`` first (labkit/engine/commands/db_aggregate.py)."""
        from ..pipeline.change_stream import split_pipeline
        cs = split_pipeline(pipeline)  # a change stream on the database or the cluster (change_streams.py)
        if cs is not None:
            from ..base import hooks
            kind = "cluster" if self.name == "admin" else "database"
            return hooks.get("watch")(self.client if kind == "cluster" else self, kind, (cs[1],), {
                "_spec": cs[0], "batch_size": kwargs.get("batchSize"), "session": session,
                "max_await_time_ms": kwargs.get("maxAwaitTimeMS"), "collation": kwargs.get("collation")})
        from .db_aggregate import run_database_pipeline
        from ..session.sessions import bind
        for k, v in kwargs.items():
            if k in ("allowDiskUse", "allow_disk_use", "maxTimeMS", "max_time_ms", "batchSize", "comment"):
                continue
            if k == "let" or (k == "collation" and not v):
                continue
            if k == "explain" and v:
                from pymongo.errors import ConfigurationError
                raise ConfigurationError("The explain option is not supported. Use Database.command instead.")
            raise unsupported("Database.aggregate(%s=...)" % k)
        with bind(session, self, command="aggregate"):
            return CommandCursor(run_database_pipeline(self, list(pipeline) if isinstance(pipeline, (list, tuple))
                                                       else pipeline, let=kwargs.get("let")))

    _lab_write_concern = None  # pymongo's Database.write_concern (mongomock's Database has none)

    @property
    def write_concern(self):
        """The write concern new collections of this database inherit (pymongo's ``Database.write_concern``)."""
        from pymongo.write_concern import WriteConcern
        return self._lab_write_concern or WriteConcern()

    def with_options(self, codec_options=None, read_preference=None, write_concern=None, read_concern=None):
        db = EmbeddedDatabase(self._client, self.name, self._store,
                              read_preference=read_preference or self._read_preference,
                              codec_options=codec_options or self._codec_options,
                              read_concern=read_concern or self._read_concern)
        db._lab_write_concern = write_concern or self._lab_write_concern
        return db

    def watch(self, *args, **kwargs):
        """pymongo's ``Database.watch``: a change stream on this database (labkit/engine/change_streams.py)."""
        from ..base import hooks
        return hooks.get("watch")(self, "database", args, kwargs)

    def list_collection_names(self, session=None, filter=None, comment=None, **kwargs) -> list:
        """pymongo's ``list_collection_names`` (``listCollections`` with ``nameOnly``; extra keyword arguments
        are command fields: unknown ones fail as on the server, 40415)."""
        _check_list_collections_fields(kwargs)
        if filter is None:  # in the listCollections command's order (rules.list_collections: by name)
            return sorted(super().list_collection_names(session=session))
        from ..catalog.rules import list_collections
        return [d["name"] for d in list_collections(self, filter, session, nameOnly=True)]

    def validate_collection(self, name_or_collection, scandata=False, full=False, session=None,
                            background=None, comment=None) -> dict:
        """pymongo's ``validate_collection``: the ``validate`` command (manual "validate")."""
        name = getattr(name_or_collection, "name", name_or_collection)
        if not isinstance(name, str):
            raise TypeError("name_or_collection must be an instance of str or Collection")
        cmd: dict = {"validate": name, "scandata": scandata, "full": full}
        if background is not None:
            cmd["background"] = background
        result = _cmd_validate(self, cmd)
        if not result.get("valid"):
            from pymongo.errors import CollectionInvalid
            raise CollectionInvalid("%s invalid: %r" % (name, result))
        return result

    def cursor_command(self, command, value=1, read_preference=None, codec_options=None, session=None,
                       comment=None, max_await_time_ms=None, **kwargs):
        """pymongo's ``cursor_command``: run a command that returns a cursor and iterate that cursor."""
        reply = self.command(command, value, session=session, **kwargs)
        cur = reply.get("cursor") if isinstance(reply, dict) else None
        if not isinstance(cur, dict):
            from pymongo.errors import InvalidOperation
            raise InvalidOperation("Command does not return a cursor.")
        docs = list(cur.get("firstBatch", []))
        if cur.get("id"):  # the rest of the batches (the command layer keeps an open cursor)
            coll = str(cur.get("ns", "")).split(".", 1)[-1]
            while cur.get("id"):
                reply = self.command("getMore", cur["id"], collection=coll, session=session)
                cur = reply["cursor"]
                docs.extend(cur.get("nextBatch", []))
        return CommandCursor(docs)

    def __next__(self):
        raise TypeError("'Database' object is not iterable")

    next = __next__

    # ------------------------------------------------------------------------------ profiler
    def set_profiling_level(self, level: int, slow_ms: int | None = None, session=None, sample_rate=None,
                            filter=None) -> None:
        """pymongo 3's ``set_profiling_level`` (removed in pymongo 4; portable code runs the ``profile``
        command): level 0/1/2, ``slow_ms``, ``sample_rate``, ``filter``."""
        cmd: dict[str, Any] = {"profile": level}
        if slow_ms is not None:
            cmd["slowms"] = slow_ms
        if sample_rate is not None:
            cmd["sampleRate"] = sample_rate
        if filter is not None:
            cmd["filter"] = filter
        self.command(cmd)

    def profiling_level(self, session=None) -> int:
        """pymongo 3's ``profiling_level`` (the ``profile: -1`` command's ``was``)."""
        return int(self.command({"profile": -1})["was"])

    def profiling_info(self, session=None) -> list:
        """pymongo 3's ``profiling_info``: the ``system.profile`` entries."""
        return list(self["system.profile"].find())

    # ------------------------------------------------------------------------------ commands
    def command(self, command, value=1, check=True, allowable_errors=None, read_preference=None,
                codec_options=None, session=None, comment=None, **kwargs):
        if isinstance(command, str):
            cmd = {command: value}
            cmd.update(kwargs)
        elif not isinstance(command, Mapping):  # pymongo cannot encode it (bson's TypeError)
            raise TypeError("encoder expected a mapping type but got: %r" % type(command))
        else:
            cmd = dict(command)
            cmd.update(kwargs)
        name = next(iter(cmd))
        handler = _COMMANDS.get(name) or _COMMANDS.get(name.lower())
        if handler is not None and ("readConcern" in cmd or "writeConcern" in cmd):
            from .dispatch import HANDLERS, run_in_process  # read/write concerns as the server applies them
            if name in HANDLERS:
                return run_in_process(self, cmd, session)
        if handler is None:
            from .dispatch import HANDLERS, not_found, run_in_process  # find, insert, getMore ... (the command layer)
            if name in HANDLERS:
                return run_in_process(self, cmd, session)
            err = not_found(name)  # a MongoDB 8.0 command: 115 "not modelled"; an unknown name: 59
            raise OperationFailure(str(err), err.code, err.reply())
        if session is not None:  # the command runs in the session (a transaction refuses most commands: 263)
            from ..session.sessions import bind
            with bind(session, self, command=name):
                return handler(self, cmd)
        return handler(self, cmd)


_LIST_COLLECTIONS_FIELDS = {"nameOnly", "authorizedCollections", "cursor", "maxTimeMS", "includePendingDrops"}


def _check_list_collections_fields(kwargs: dict) -> None:
    """Refuse a field the ``listCollections`` command does not have (IDL: 40415), as pymongo sends them."""
    for k in kwargs:
        if k not in _LIST_COLLECTIONS_FIELDS:
            raise OperationFailure("BSON field 'listCollections.%s' is an unknown field." % k, 40415)


def _cmd_validate(db, cmd):
    """The ``validate`` command (manual "validate"): the engine's indexes are maintained with every write, so a
    collection is valid; the reply reports records and index keys as the server's does."""
    name = cmd.get("validate")
    for k in cmd:
        if k not in ("validate", "full", "scandata", "background", "repair", "metadata", "checkBSONConformance",
                     "comment", "maxTimeMS", "$db", "lsid"):
            raise OperationFailure("BSON field 'validate.%s' is an unknown field." % k, 40415)
    if cmd.get("repair") or cmd.get("metadata"):
        raise unsupported("validate with repair/metadata")
    if not isinstance(name, str):
        raise OperationFailure("collection name has invalid type %s" % type(name).__name__, 2)
    ns = "%s.%s" % (db.name, name)
    st = db._store._collections.get(name)
    if st is None or not st.is_created:
        raise OperationFailure("Collection '%s' does not exist to validate." % ns, 26,
                               {"ok": 0.0, "errmsg": "Collection '%s' does not exist to validate." % ns,
                                "code": 26, "codeName": "NamespaceNotFound"})
    if st.options and "viewOn" in st.options:
        raise OperationFailure("Cannot validate a view", 166, {"ok": 0.0, "errmsg": "Cannot validate a view",
                                                                "code": 166, "codeName": "CommandNotSupportedOnView"})
    coll = db.get_collection(name)
    cst = coll._store
    keys = {ix.spec.name: len(ix.entries) for ix in cst.ix.values()}
    return {"ns": ns, "nInvalidDocuments": 0, "nNonCompliantDocuments": 0, "nrecords": len(cst.docs),
            "nIndexes": len(keys), "keysPerIndex": keys,
            "indexDetails": {n: {"valid": True} for n in keys}, "valid": True, "repaired": False,
            "warnings": [], "errors": [], "extraIndexEntries": [], "missingIndexEntries": [],
            "corruptRecords": [], "ok": 1.0}


def _cmd_ping(db, cmd):
    return {"ok": 1.0}


def _cmd_buildinfo(db, cmd):
    return {"version": "8.0.0", "versionArray": [8, 0, 0, 0], "gitVersion": "labkit-embedded",
            "labkit": {"engine": "embedded", "models": "MongoDB 8.0 classic engine"}, "ok": 1.0}


def _cmd_explain(db, cmd):
    inner = cmd["explain"]
    verbosity = cmd.get("verbosity", "allPlansExecution")
    if not isinstance(inner, dict) or not inner:
        raise OperationFailure("explain command requires a nested object", 2)
    op = next(iter(inner))
    coll = db.get_collection(inner[op]) if isinstance(inner[op], str) else None
    if coll is None:
        raise OperationFailure("collection name has invalid type", 73)
    if op == "find":
        allowed = {"find", "filter", "sort", "projection", "limit", "skip", "hint", "batchSize", "singleBatch",
                   "comment", "maxTimeMS", "$db", "collation", "allowDiskUse", "min", "max", "returnKey",
                   "showRecordId"}
        extra = set(inner) - allowed
        if extra:
            raise unsupported("explain find option '%s'" % sorted(extra)[0])
        sort = _check_sort(_sort_list(inner.get("sort"))) if inner.get("sort") else None
        q = Query(_client_value(inner.get("filter") or {}), sort, inner.get("projection"), inner.get("skip", 0),
                  inner.get("limit", 0), inner.get("hint"), inner.get("batchSize", 0),
                  allow_disk_use=inner.get("allowDiskUse"))
        check_find_flags(inner.get("returnKey"), inner.get("showRecordId"))  # the IDL parse comes first
        set_min_max(q, inner.get("min"), inner.get("max"))
        if getattr(coll._db_store._collections.get(coll.name), "ts", None) is not None or view_def(coll._store):
            refuse_min_max_as_aggregation(None, None, inner.get("returnKey"), inner.get("showRecordId"))
        set_find_flags(q, coll._store, inner.get("returnKey"), inner.get("showRecordId"),
                       lambda p: coll._projector(p, q.filter))
        from ..query.collate import normalize, using
        with using(normalize(inner.get("collation"))):  # collation-aware planning (collate.py)
            return coll.explain_find(q, verbosity, inner)
    if op == "count":
        extra = set(inner) - {"count", "query", "limit", "skip", "hint", "maxTimeMS", "comment", "$db"}
        if extra:
            raise unsupported("explain count option '%s'" % sorted(extra)[0])
        q = Query(_client_value(inner.get("query") or {}), hint=inner.get("hint"),
                  kind="count", skip=inner.get("skip", 0), limit=inner.get("limit", 0))
        return coll.explain_find(q, verbosity, inner)
    if op == "distinct":
        extra = set(inner) - {"distinct", "key", "query", "hint", "maxTimeMS", "comment", "$db"}
        if extra:
            raise unsupported("explain distinct option '%s'" % sorted(extra)[0])
        q = Query(_client_value(inner.get("query") or {}), hint=inner.get("hint"),
                  kind="distinct", distinct_key=inner["key"])
        return coll.explain_find(q, verbosity, inner)
    if op == "aggregate":
        from ..query.explain_doc import outermost_explain, record_plan
        with outermost_explain() as outer:
            doc = _explain_aggregate(coll, inner, verbosity)
        if outer:
            record_plan("explain", coll._store, coll._db_store, coll._ns(), inner, doc)
        return doc
    raise unsupported("explain of '%s'" % op)


def _explain_aggregate(coll, inner, verbosity):
    if getattr(coll._db_store._collections.get(coll.name), "ts", None) is not None:
        from ..catalog.timeseries import explain_aggregate  # $cursor over the buckets + $_internalUnpackBucket
        return explain_aggregate(coll, inner.get("pipeline", []), verbosity, inner)
    from ..pipeline.aggregation import explain_pipeline
    from ..catalog.views import explain_on_base
    if view_def(coll._store):  # the resolved aggregation on the backing collection (views.py)
        return explain_on_base(coll, inner.get("pipeline", []), verbosity, inner, inner.get("collation"))
    return explain_pipeline(coll, inner.get("pipeline", []), verbosity, inner)


def _index_by_key_pattern(coll, key: Any) -> str:
    """The index a collMod names by ``keyPattern``, as src/mongo/db/catalog/coll_mod.cpp finds it: none is
    IndexNotFound 27, several (since 5.0 indexes may share a key pattern) AmbiguousIndexKeyPattern 181."""
    from ..bson.keys import fmt_value
    found = coll._indexes_with_key(key)
    if not found:
        raise OperationFailure("cannot find index %s for ns %s" % (fmt_value(dict(key)), coll._ns()), 27)
    if len(found) > 1:
        raise OperationFailure("index keyPattern %s matches %d indexes, must use index name. Conflicting indexes:"
                               "%s, %s" % (fmt_value(dict(key)), len(found), fmt_value(found[0].spec.info()),
                                           fmt_value(found[1].spec.info())), 181)
    return found[0].spec.name


# collMod's modifications (src/mongo/db/catalog/coll_mod.cpp parseCollModRequest counts them): a prepareUnique
# change and a dry run may not be combined with another one
_COLLMOD_TOP = ("validator", "validationLevel", "validationAction", "pipeline", "viewOn", "recordPreImages",
                "changeStreamPreAndPostImages", "expireAfterSeconds", "timeseries")
_COLLMOD_INDEX = ("expireAfterSeconds", "hidden", "unique", "prepareUnique", "forceNonUnique")


def _collmod_failure(msg: str, code: int, **extra: Any) -> OperationFailure:
    from .dispatch import code_name
    return OperationFailure(msg, code, {"ok": 0.0, "errmsg": msg, "code": code, "codeName": code_name(code),
                                        **extra})


def _unique_violations(coll, iname: str) -> list[dict]:
    """The documents a unique index would refuse, as ``scanIndexForDuplicates`` (coll_mod_index.cpp) reports
    them: the index entries in key order, each run of equal keys one ``{ids: [...]}`` (the ``_id`` of each
    document, in record order); jstests/core/ddl/collmod_convert_to_unique_violations.js."""
    st = coll._store
    out: list[dict] = []
    run: list = []
    prev = None
    for key, rid in st.ix[iname].entries:
        if run and key == prev:
            run.append(rid)
            continue
        if len(run) > 1:
            out.append(run)
        run, prev = [rid], key
    if len(run) > 1:
        out.append(run)
    return [{"ids": [st.docs[rid]["_id"] for rid in group]} for group in out]


def _cannot_convert(violations: list[dict]) -> OperationFailure:
    """CannotConvertIndexToUnique (359) with ``violations``; past 8 MB of ``_id`` values the list is cut and the
    message says so (coll_mod_index.cpp buildConvertUniqueErrorStatus)."""
    size, kept = 0, []
    for group in violations:
        ids = []
        for _id in group["ids"]:
            size += len(bson.encode({"": _id})) - 6  # the element's value bytes
            if size > 8 * 1024 * 1024:
                if not kept and not ids:
                    ids.append(_id)
                if ids:
                    kept.append({"ids": ids})
                return _collmod_failure("Cannot convert the index to unique. Too many conflicting documents were "
                                        "detected. Please resolve them and rerun collMod.", 359, violations=kept)
            ids.append(_id)
        kept.append({"ids": ids})
    return _collmod_failure("Cannot convert the index to unique. Please resolve conflicting documents before "
                            "running collMod again.", 359, violations=kept)


def _parse_index_mod(coll, v: Any, cmd: dict) -> tuple[str, dict]:
    """collMod's ``index`` document checked as parseCollModRequest does (coll_mod.cpp): the index it names and the
    changes that are not no-ops (``unique`` / ``prepareUnique`` / ``forceNonUnique`` among them)."""
    if not isinstance(v, Mapping):
        raise _collmod_failure("BSON field 'collMod.index' is the wrong type '%s', expected type 'object'"
                               % _type_name(v), 14)
    for opt in v:  # jstests/core/ddl/collMod_index_invalid_option.js: IDLUnknownField
        if opt not in ("name", "keyPattern") + _COLLMOD_INDEX:
            raise _collmod_failure("BSON field 'collMod.index.%s' is an unknown field." % opt, 40415)
    for f in ("unique", "prepareUnique", "forceNonUnique", "hidden"):
        if f in v and not isinstance(v[f], bool):
            raise _collmod_failure("BSON field 'collMod.index.%s' is the wrong type '%s', expected type 'bool'"
                                   % (f, _type_name(v[f])), 14)
    if not any(f in v for f in _COLLMOD_INDEX):
        raise _collmod_failure("no expireAfterSeconds, hidden, unique, or prepareUnique field", 72)
    if "unique" in v and "forceNonUnique" in v:
        raise _collmod_failure("collMod does not support 'unique' and 'forceNonUnique' options at the same time",
                               72)
    iname = v.get("name")
    if iname is None and "keyPattern" in v:
        iname = _index_by_key_pattern(coll, v["keyPattern"])
    if iname is None:
        raise OperationFailure("no index specified", 2)
    if iname not in coll._store.ix:
        raise OperationFailure("cannot find index %s for ns %s" % (iname, coll._ns()), 27)
    spec = coll._store.ix[iname].spec
    changes: dict = {}
    if "unique" in v:
        if not v["unique"]:
            raise _collmod_failure("Cannot make index non-unique", 2)
        if not spec.unique:  # making a unique index unique is a no-op
            if not spec.prepare_unique:
                raise _collmod_failure("Cannot make index unique with 'prepareUnique=false'. Run collMod to set it "
                                       "first.", 72)
            changes["unique"] = True
    if "prepareUnique" in v and v["prepareUnique"] != spec.prepare_unique and not spec.unique:
        changes["prepareUnique"] = v["prepareUnique"]
    if "forceNonUnique" in v:
        if not v["forceNonUnique"]:
            raise _collmod_failure("'forceNonUnique: false' is not supported", 2)
        if spec.unique and iname != "_id_":
            changes["forceNonUnique"] = True
    mods = sum(f in v for f in _COLLMOD_INDEX) + sum(f in cmd for f in _COLLMOD_TOP) + \
        ("cappedSize" in cmd or "cappedMax" in cmd)
    if "prepareUnique" in changes and mods > 1:
        raise _collmod_failure("prepareUnique cannot be combined with any other modification.", 72)
    if cmd.get("dryRun") and mods > 1:
        raise _collmod_failure("unique: true cannot be combined with any other modification in dry run mode.", 72)
    return iname, changes


def _cmd_collmod(db, cmd):
    name = cmd["collMod"]
    coll = db.get_collection(name)
    index = cmd.get("index")
    converts = isinstance(index, Mapping) and index.get("unique") is True
    if cmd.get("dryRun"):  # coll_mod.cpp _processCollModDryRunMode: only the unique conversion's check
        if not isinstance(index, Mapping):
            raise _collmod_failure("dry run mode requires an valid index modification.", 72)
        if not converts:
            raise _collmod_failure("dry run mode requires an index modification with unique: true.", 72)
    if not coll._store.is_created:
        if converts:
            raise OperationFailure("ns does not exist for unique index conversion: %s" % coll._ns(), 26)
        raise OperationFailure("ns does not exist", 26)
    if cmd.get("dryRun"):
        iname, changes = _parse_index_mod(coll, index, cmd)
        violations = _unique_violations(coll, iname)
        if violations:
            raise _cannot_convert(violations)
        return {"ok": 1.0}
    index_mod = None
    if isinstance(index, Mapping) or index is not None:
        index_mod = _parse_index_mod(coll, index, cmd)  # every check before anything changes
        if "unique" in index_mod[1]:
            violations = _unique_violations(coll, index_mod[0])
            if violations:
                raise _cannot_convert(violations)
    out: dict[str, Any] = {"ok": 1.0}
    from ..catalog.views import collmod as view_collmod, view_def
    if view_def(coll._store) or "viewOn" in cmd or "pipeline" in cmd:
        out.update(view_collmod(db, name, cmd))  # views.py
        return out
    from ..catalog.rules import VALIDATION_KEYS, collmod_validation, collection_options
    before = {"uuid": coll._store.uuid, **collection_options(coll._store)}  # the modify event's stateBeforeChange
    out.update(collmod_validation(coll, cmd))  # validator/validationLevel/validationAction (rules.py)
    if "cappedSize" in cmd or "cappedMax" in cmd:
        from ..catalog.capped import collmod as capped_collmod
        out.update(capped_collmod(coll, cmd))
    for k, v in cmd.items():
        if k in ("collMod", "cappedSize", "cappedMax") or k in VALIDATION_KEYS:
            continue
        if k == "dryRun":
            continue
        if k == "index":
            iname, changes = index_mod
            if changes:  # coll_mod_index.cpp: unique resets prepareUnique; forceNonUnique makes it plain
                spec = coll._store.ix[iname].spec
                old_prepare = spec.prepare_unique
                if "unique" in changes:
                    spec.set_unique(True, False)
                    out["unique_new"] = True
                if "prepareUnique" in changes:
                    spec.set_unique(spec.unique, changes["prepareUnique"])
                    out["prepareUnique_old"] = old_prepare
                    out["prepareUnique_new"] = changes["prepareUnique"]
                if "forceNonUnique" in changes:
                    spec.set_unique(False, False)
                    out["forceNonUnique_new"] = True
                coll._store.version += 1
            if "hidden" in v:
                old = coll._set_hidden(iname, v["hidden"])
                out["hidden_old"] = old
                out["hidden_new"] = bool(v["hidden"])
            if "expireAfterSeconds" in v:
                ix = coll._store.ix[iname]
                out["expireAfterSeconds_old"] = ix.spec.expire
                ix.spec.expire = v["expireAfterSeconds"]
                out["expireAfterSeconds_new"] = v["expireAfterSeconds"]
        elif k == "changeStreamPreAndPostImages":
            from ..catalog.rules import pre_and_post_images
            opts = coll._store.options
            opts.pop("changeStreamPreAndPostImages", None)
            opts.update(pre_and_post_images("collMod", v))
        elif k == "expireAfterSeconds":
            from ..catalog.timeseries import collmod_expire  # time-series collections (timeseries.py)
            out.update(collmod_expire(coll, v))
        else:
            raise unsupported("collMod option '%s'" % k)
    log = coll._oplog()
    if log is not None:  # the collMod entry: a modify event with showExpandedEvents
        state = {"collectionOptions": before}
        if "hidden_old" in out:
            state["indexOptions"] = {"hidden": out["hidden_old"]}
        coll._record(log, "c", o={"collMod": name, **{k: v for k, v in cmd.items() if k not in ("collMod", "$db")},
                                  "_before": state})
    return out


def _cmd_collstats(db, cmd):
    coll = db.get_collection(cmd[next(iter(cmd))])
    if "viewOn" in coll._store.options:
        from ..catalog.views import not_on_view
        raise not_on_view(coll._ns())
    return stats.coll_stats(coll, scale=cmd.get("scale", 1))


def _cmd_dbstats(db, cmd):
    return stats.db_stats(db, scale=cmd.get("scale", 1), free_storage=bool(cmd.get("freeStorage")))


def _cmd_compact(db, cmd):
    """``compact`` (manual "compact"): the collection's and its indexes' files give back the space deleted
    data left for reuse; the reply's ``bytesFreed`` says how much (the engine's file-size model,
    stats/wiredtiger_sizes.py)."""
    name = cmd["compact"]
    if not isinstance(name, str):
        raise OperationFailure("collection name has invalid type %s" % _type_name(name), 73)
    coll = db.get_collection(name)
    if "viewOn" in coll._store.options:
        from ..catalog.views import not_on_view
        raise not_on_view(coll._ns())
    if not coll._store.is_created:
        raise OperationFailure("collection does not exist", 26)
    return {"bytesFreed": stats.compact(coll), "ok": 1.0}


def _cmd_listindexes(db, cmd):
    coll = db.get_collection(cmd["listIndexes"])
    if not coll._store.is_created:
        raise OperationFailure("ns does not exist: %s.%s" % (db.name, coll.name), 26)
    return {"cursor": {"id": 0, "ns": "%s.%s" % (db.name, coll.name),
                       "firstBatch": list(coll.list_indexes())}, "ok": 1.0}


def _cmd_count(db, cmd):
    coll = db.get_collection(cmd["count"])
    n = coll._count_command(cmd.get("query") or {}, int(cmd.get("skip") or 0), abs(int(cmd.get("limit") or 0)),
                            cmd.get("hint"), collation=cmd.get("collation"))
    return {"n": n, "ok": 1.0}


def _cmd_distinct(db, cmd):
    coll = db.get_collection(cmd["distinct"])
    return {"values": coll.distinct(cmd["key"], cmd.get("query") or {}, collation=cmd.get("collation")), "ok": 1.0}


def _cmd_hello(db, cmd):
    return {"isWritablePrimary": True, "ismaster": True, "maxBsonObjectSize": 16 * 1024 * 1024,
            "maxWireVersion": 25, "minWireVersion": 0, "ok": 1.0}


def _cmd_server_status(db, cmd):
    from ..catalog.ttl import metrics as ttl_metrics  # metrics.ttl: passes, deletedDocuments (ttl.py)
    return {"host": "labkit-embedded", "version": "8.0.0", "process": "labkit",
            "metrics": {"ttl": ttl_metrics(db)}, "ok": 1.0}


def _cmd_convert_to_capped(db, cmd):
    from ..catalog.capped import convert_to_capped
    convert_to_capped(db, cmd["convertToCapped"], cmd.get("size"))
    return {"ok": 1.0}


def _cmd_clone_as_capped(db, cmd):
    from ..catalog.capped import convert_to_capped
    convert_to_capped(db, cmd["cloneCollectionAsCapped"], cmd.get("size"), cmd.get("toCollection"))
    return {"ok": 1.0}


def _cmd_profile(db, cmd):
    from ..stats.profiler import cmd_profile
    return cmd_profile(db, cmd)


_COMMANDS = {
    "ping": _cmd_ping,
    "convertToCapped": _cmd_convert_to_capped, "cloneCollectionAsCapped": _cmd_clone_as_capped,
    "profile": _cmd_profile,
    **_RULES_COMMANDS,  # listCollections, create (rules.py)
    "buildinfo": _cmd_buildinfo, "buildInfo": _cmd_buildinfo,
    "explain": _cmd_explain,
    "collMod": _cmd_collmod, "collmod": _cmd_collmod,
    "collStats": _cmd_collstats, "collstats": _cmd_collstats,
    "dbStats": _cmd_dbstats, "dbstats": _cmd_dbstats,
    "compact": _cmd_compact,
    "validate": _cmd_validate,
    "listIndexes": _cmd_listindexes, "listindexes": _cmd_listindexes,
    "count": _cmd_count,
    "distinct": _cmd_distinct,
    # createIndexes / dropIndexes: the command layer's (dispatch.py), as a served engine answers them
    "hello": _cmd_hello, "isMaster": _cmd_hello, "ismaster": _cmd_hello,
    "serverStatus": _cmd_server_status, "serverstatus": _cmd_server_status,
}
