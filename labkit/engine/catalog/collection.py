"""EmbeddedCollection: mongomock's Collection with maintained indexes, atomic writes and a planner-driven Cursor."""
from __future__ import annotations

import copy
import decimal
import functools
import time
from collections.abc import Mapping
from typing import Any, Callable, Iterable

import bson
from bson import Int64, ObjectId, SON
from mongomock import (BulkWriteError, DuplicateKeyError, OperationFailure, WriteError, helpers)
from mongomock import collection as mm_collection
from mongomock.results import (BulkWriteResult, DeleteResult, InsertManyResult, InsertOneResult, UpdateResult)
from pymongo import ReturnDocument
from pymongo.operations import IndexModel

from ..bson import keys as K
from ..exec.stages import ExpressExec
from ..service.boundary import check_deadline, current_op, note, note_execution, note_fact
from ..update import update_ops as U
from ..matcher.match import fast_matcher
from ..bson.values import client_value
from ..query.projection import Projection
from ..index.indexes import Index, IndexSpec, _no_fast_keys, gen_index_name
from ..query.planner import (Candidate, Execution, Express, Planner, Query, express_eligible, express_first,
                             express_index, express_value, note_access, plan_and_run, projection_kind, totals,
                             unsupported)
from ..query.collate import current as _collation
from ..session.sessions import binding as _binding, current as _active_txn, resolve_store as _txn_store
from .store import store_key
from .capped import after_insert
from ..update.update_fast import FALLBACK, apply_scalar, run_lean, scalar_plan
# moved to docutil.py (lowest layer) so aggregation, collate and extra_stages need not import this module
from ..base.docutil import CursorProtocol, check_sort as _check_sort, fast_copy, no_gc, sort_list as _sort_list  # noqa: F401
from ..base.docutil import new_object_id  # noqa: F401 - moved to docutil.py so the profiler need not import this module
from ..base import hooks
from ..base.errors import errmsg_of
from ..repl.oplog import Entry as OplogEntry

MAX_BSON = 16 * 1024 * 1024
MAX_INDEXES = 64          # manual "Limits": a collection has at most 64 indexes (the _id index included)
MAX_COMPOUND_FIELDS = 32  # manual "Limits": a compound index has at most 32 fields
_ASC_DESC = (1, -1)


def _num(d: Any) -> Any:
    """A key pattern direction as BSON compares it (1 and 1.0 are one value)."""
    return float(d) if isinstance(d, (int, float)) and not isinstance(d, bool) else d


def _key_pattern_str(key: list) -> str:
    """A key pattern as the server prints a BSONObj in messages: ``{ a: 1, b: -1 }``."""
    return "{ %s }" % ", ".join("%s: %s" % (f, d) for f, d in key)


def _write_error(message: str, code: int) -> WriteError:
    """A WriteError carrying the server's write-error document, as pymongo raises it."""
    return WriteError(message, code, {"index": 0, "code": code, "errmsg": message})


# Value types with nothing inside them and nothing for ``internalize`` to convert: a document holding only
# these (and datetimes) takes the flat insert path; rules.py's depth check skips them.
FLAT_TYPES = frozenset({str, int, float, bool, type(None), ObjectId, bytes})
NOT_FLAT = object()  # ``_insert_flat``'s answer when a document needs the general path


_MISSING = object()
_FLAT_ARG_OPS = frozenset({"$inc", "$mul", "$min", "$max", "$set", "$unset", "$currentDate"})


def _update_reach(compiled: Any) -> tuple[frozenset | None, bool]:
    """For a parsed operator update without positional paths: the top-level fields it can change, and
    whether it only writes scalars at shallow paths (so the result cannot nest deeper than the document it
    updates, which already passed the depth check). ``(None, False)`` for any other update."""
    plain = getattr(compiled, "_plain", None)
    if plain is None:
        return None, False
    tops = set()
    shallow = True
    for parts, o, to_parts in plain:
        tops.add(parts[0])
        if to_parts:
            tops.add(to_parts[0])
        if o.op not in _FLAT_ARG_OPS or len(parts) > 20 or (
                o.op not in ("$unset", "$currentDate") and type(o.arg) not in FLAT_TYPES and type(o.arg) is not _DT):
            shallow = False
    return frozenset(tops), shallow


_DT = __import__("datetime").datetime
_RE_TYPE = type(__import__("re").compile(""))


def internalize(v: Any) -> Any:
    """Deep copy for storage; datetimes become naive UTC with millisecond precision (like the server)."""
    t = type(v)
    if t is dict:
        out = {}
        for k, x in v.items():
            tx = type(x)
            if tx is dict or tx is list or tx is _DT:
                x = internalize(x)
            elif tx is not str and tx is not int and tx is not float and tx is not bool and x is not None:
                x = internalize(x)
            out[k] = x
        return out
    if t is list:
        return [internalize(x) for x in v]
    if isinstance(v, _DT):
        return helpers.patch_datetime_awareness_in_document(v)
    if isinstance(v, dict):
        return {k: internalize(x) for k, x in v.items()}
    if isinstance(v, tuple):
        return [internalize(x) for x in v]
    return v


_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1
_FIXED_FLAT = frozenset({float, bool, type(None), ObjectId})  # at most 12 bytes of BSON each, always encodable
# A bound on one BSON element beyond its name and its string/binary payload: type byte, the name's NUL, and
# the largest fixed part (a 12-byte ObjectId; a string's int32 length + NUL, a binary's length + subtype: 5).
_ELEMENT_BOUND = 1 + 1 + 12 + 5
_ID_BOUND = _ELEMENT_BOUND + 3  # a generated ``_id`` element


def _name_bound(k: Any) -> int | None:
    """``_ELEMENT_BOUND`` plus the UTF-8 length of the field name ``k``, or None when ``k`` is not a plain,
    encodable, non-``$`` name without NUL bytes (such a document takes the general path, which refuses it or
    stores it exactly)."""
    if type(k) is not str or k[:1] == "$" or "\x00" in k:
        return None
    if k.isascii():
        return len(k) + _ELEMENT_BOUND
    try:
        return len(k.encode("utf-8")) + _ELEMENT_BOUND
    except UnicodeEncodeError:
        return None


def flat_insert_doc(data: dict, names: dict) -> dict | None:
    """The document ``_prepare_insert`` would store for the plain dict ``data`` when every value is a str, an
    int64-range int, a float, a bool, None, an ObjectId, bytes or a datetime: ``_id`` generated when absent
    (set in ``data`` too, as the general path does) and first, datetimes naive UTC with millisecond precision,
    a shallow copy (nothing inside to copy). No ``bson.encode``: a bound on the encoded size PROVES the
    document is below 16 MiB. None (``data`` unchanged) when the document needs the general path: other value
    types, unusual names, a non-encodable string, or a bound that does not prove the limit. ``names``: the
    batch's memo of name -> bound."""
    size = 5 if "_id" in data else 5 + _ID_BOUND
    dates = False
    for k, v in data.items():
        nb = names.get(k)
        if nb is None:
            nb = _name_bound(k)
            if nb is None:
                return None
            names[k] = nb
        size += nb
        t = type(v)
        if t is str:
            if v.isascii():
                size += len(v)
            else:
                try:
                    size += len(v.encode("utf-8"))
                except UnicodeEncodeError:
                    return None
        elif t is int:
            if v < _INT64_MIN or v > _INT64_MAX:
                return None
        elif t is _DT:
            dates = True
        elif t is bytes:
            size += len(v)
        elif t not in _FIXED_FLAT:
            return None
    if size > MAX_BSON:
        return None  # not proven below the limit: the general path encodes it exactly
    if "_id" in data:
        doc = dict(data) if next(iter(data)) == "_id" else {"_id": data["_id"], **data}
    else:
        _id = data["_id"] = new_object_id()
        doc = {"_id": _id, **data}
    if dates:  # exactly what internalize stores (mongomock's patch: naive UTC, milliseconds)
        for k, v in doc.items():
            if type(v) is _DT and (v.microsecond % 1000 or v.tzinfo is not None):
                doc[k] = helpers.patch_datetime_awareness_in_document(v)
            # else: a naive datetime already at millisecond precision, which the patch returns unchanged
    return doc


def _natural(sort: list | None, hint: Any) -> tuple[list | None, Any]:
    """A ``{$natural: 1|-1}`` sort is a collection scan in that direction (manual "Capped Collections": natural
    order; cursor.sort()): the planner gets it as a ``$natural`` hint."""
    if sort and sort[0][0] == "$natural":
        return None, {"$natural": sort[0][1]} if hint is None else hint
    return sort, hint


_UNSET = object()  # count_documents: skip/limit not given (pymongo then sends no stage)


class EmbeddedCollection(mm_collection.Collection):
    """A collection whose reads go through the planner and whose writes keep indexes consistent."""

    # ------------------------------------------------------------------------------ store helpers
    @property
    def _store(self):
        st = self._db_store[self._name]
        if _binding() is None:
            return st
        return _txn_store(self._db_store, self._name, st)  # a transaction's or a snapshot read's copy (sessions.py)

    def _ns(self) -> str:
        return "%s.%s" % (self.database.name, self._name)

    # ------------------------------------------------------------------------------ the oplog (change streams)
    def _oplog(self):
        """The engine's oplog while a change stream is open (writes are then recorded), else None: with no
        stream open a write costs this one check (repl/oplog.py)."""
        log = self._db_store.oplog
        return log if log is not None and log.recording() else None

    def _record(self, log, op: str, pre: Any = None, post: Any = None, kind: str | None = None,
                paths: Any = None, o: Any = None, many: list | None = None) -> None:
        """Record one write for change streams (the server's OpObserver writing the oplog entry); ``many``: the
        documents of a batch of inserts, one entry each. Inside a transaction the transaction keeps them until
        it commits; the commit's own replay is not recorded again."""
        txn = _active_txn()
        if txn is not None and txn.override is not None:
            return
        if self._name.startswith("system."):
            return
        st = self._db_store[self._name]
        images = bool(((st.options or {}).get("changeStreamPreAndPostImages") or {}).get("enabled"))
        db, name, uuid = self.database.name, self._name, st.uuid
        if many is None:
            log.record(OplogEntry(op, db, name, uuid, pre, post, kind, paths, images, o), txn)
            return
        entries = [OplogEntry("i", db, name, uuid, None, d, None, None, images) for d in many]
        if txn is not None:
            for e in entries:
                log.record(e, txn)
        else:
            log.append_each(entries)

    def _record_create(self, log) -> None:
        """The ``create`` entry of a collection a write creates implicitly (its event with showExpandedEvents)."""
        self._record(log, "c", o={"create": self._name, "idIndex": {"v": 2, "key": {"_id": 1}, "name": "_id_"}})

    def with_options(self, codec_options=None, read_preference=None, write_concern=None, read_concern=None):
        c = super().with_options(codec_options, read_preference, write_concern, read_concern)
        if c is self and read_concern is not None and read_concern != self._read_concern:
            c = mm_collection.Collection(self.database, self.name, write_concern=self._write_concern,
                                         read_concern=read_concern, read_preference=self._read_preference,
                                         codec_options=self._codec_options, _db_store=self._db_store)
            # (mongomock compares every option but the read concern: a new read concern alone was dropped)
        if type(c) is mm_collection.Collection:
            return type(self)(self.database, self.name, write_concern=c.write_concern,
                                      read_concern=c.read_concern, read_preference=c.read_preference,
                                      codec_options=c.codec_options, _db_store=self._db_store)
        return c

    # ------------------------------------------------------------------------------ key checks
    def _dup_error(self, ix: Index, doc: dict, key: tuple, bulk: bool = False) -> DuplicateKeyError:
        kv = self._key_value(ix, doc, key)
        shown = ", ".join("%s: %s" % (f, K.fmt_value(v)) for f, v in kv.items())
        msg = "E11000 duplicate key error collection: %s index: %s dup key: { %s }" % (self._ns(), ix.spec.name, shown)
        details = {"index": 0, "code": 11000, "errmsg": msg, "keyPattern": dict(ix.spec.key), "keyValue": kv}
        err = DuplicateKeyError(msg, 11000, details)
        return err

    def _key_value(self, ix: Index, doc: dict, key: tuple) -> dict:
        out = {}
        for f, parts, desc, kb in zip(ix.spec.fields, ix.spec.parts, ix.spec.desc, key):
            val: Any = None
            for v in K.path_values(doc, parts) or [None]:
                e = ix.keyfunc(v)
                if (K.invert(e) if desc else e) == kb:
                    val = v
                    break
            out[f] = val
        return out

    def _compute_keys(self, doc: dict, rid: int, pending: dict | None = None,
                      st: Any = None) -> dict[str, tuple[list, dict]]:
        """Index keys for ``doc`` on every index; raises on parallel arrays or unique conflicts.
        ``st``: the store, when the caller (a batch) already has it."""
        if st is None:
            st = self._store
        out = {}
        uniq = None
        for name, ix in st.ix.items():
            try:
                keys, arrays = ix.keys_for(doc)
            except K.ParallelArrays as e:
                raise WriteError(str(e), 171, {"code": 171, "errmsg": str(e)}) from None
            if ix.spec.checks_dups:
                if keys and name != "_id_":
                    for k in keys:
                        other = ix.place(k, rid)[1]
                        if other is not None:
                            raise self._dup_error(ix, doc, k)
                        if pending is not None:
                            p = pending.setdefault(name, {})
                            o = p.get(k)
                            if o is not None and o != rid:
                                raise self._dup_error(ix, doc, k)
                if pending is not None:
                    if uniq is None:
                        uniq = []
                    uniq.append((name, keys))
            out[name] = (keys, arrays)
        if uniq is not None:
            for name, keys in uniq:
                p = pending.setdefault(name, {})
                for k in keys:
                    p[k] = rid
        return out

    def _prepare_insert(self, data: Any) -> dict:
        if type(data) is not dict and not isinstance(data, Mapping):
            raise TypeError("document must be an instance of dict, bson.son.SON, or any other type that "
                            "inherits from collections.MutableMapping")
        for k in data:
            if type(k) is not str:
                raise ValueError("Document keys must be strings")
        # Since 5.0 "$"-prefixed and dotted field names are stored as they are, at any level; only an _id
        # object may not hold "$"-prefixed names (jstests/core/field_name_validation.js; manual "Field Names").
        _id = data.get("_id")
        if isinstance(_id, Mapping):
            for k in _id:
                if isinstance(k, str) and k[:1] == "$":
                    raise _write_error("_id fields may not contain '$'-prefixed fields: %s is not valid for "
                                       "storage." % k, 52)
        # NUL bytes in field names are rejected by bson.encode below (InvalidDocument)
        if "_id" not in data:
            data["_id"] = new_object_id()
        _id = data["_id"]
        # ops/insert.cpp fixDocumentForInsert (BadValue; 5.0+ wording, as mongosh shows it)
        if isinstance(_id, (list, tuple)):
            raise _write_error("The '_id' value cannot be of type array", 2)
        if isinstance(_id, (bson.Regex, _RE_TYPE)):
            raise _write_error("The '_id' value cannot be of type regex", 2)
        size = len(bson.encode(data))
        if size > MAX_BSON:
            raise _write_error("object to insert too large. size in bytes: %d, max size: %d" % (size, MAX_BSON), 10334)
        doc = internalize(data)
        if next(iter(doc)) != "_id":  # the server stores _id as the first field
            doc = U.id_first(doc)
        return doc

    def _commit_insert(self, doc: dict, rid: int, keys: dict) -> None:
        st = self._store
        log = self._oplog()
        if log is not None and not st.is_created:
            self._record_create(log)
        st.put(rid, store_key(doc["_id"]), doc)
        for name, (ks, arrays) in keys.items():
            ix = st.ix[name]
            ix.note_arrays(arrays)
            ix.add(ks, rid)
        st.version += 1
        if log is not None:
            self._record(log, "i", post=doc)
        if st.options:
            after_insert(st)  # capped: trim the oldest documents; clustered: keep _id order (capped.py)

    def _insert_one_doc(self, data: Any, fill_timestamps: bool = True) -> Any:
        doc = self._prepare_insert(data)
        if fill_timestamps:  # top-level Timestamp(0, 0) (ops/insert.cpp); not for operator/pipeline upserts
            U.fill_empty_timestamps(doc)
        st = self._store
        if store_key(doc["_id"]) in st.rid_by_key:
            raise self._dup_error(st.ix["_id_"], doc, ((K.encode(doc["_id"]),)))
        rid = st.next_rid
        keys = self._compute_keys(doc, rid)
        st.next_rid += 1
        self._commit_insert(doc, rid, keys)
        return doc["_id"]

    def _insert_flat(self, st: Any, data: dict) -> Any:
        """``insert_one`` of a plain dict whose values are all ``FLAT_TYPES`` or datetimes into the live store ``st``, with the same checks and effects as the general path (``$``-prefixed
        names, ``_id``, BSON encoding and size, duplicate ``_id``, every index's keys, unique indexes) in fewer
        steps: no depth walk or deep copy is needed for such a document, and no collection can have parallel
        arrays from it. Returns the ``_id``, or ``NOT_FLAT`` (having changed nothing but a generated ``_id``)
        when the document needs the general path."""
        dates = False
        for k, v in data.items():
            if type(k) is not str or k[:1] == "$":
                return NOT_FLAT
            if type(v) not in FLAT_TYPES:
                if type(v) is not _DT:
                    return NOT_FLAT
                dates = True
        if "_id" in data:
            _id = data["_id"]
        else:
            _id = data["_id"] = new_object_id()
        if len(bson.encode(data)) > MAX_BSON:  # also refuses NUL bytes in names (InvalidDocument)
            return NOT_FLAT  # the general path raises the server's error
        doc = dict(data) if next(iter(data)) == "_id" else {"_id": _id, **data}  # _id first, as stored
        if dates:  # stored as the server does: naive UTC, millisecond precision
            for k, v in data.items():
                if type(v) is _DT:
                    doc[k] = helpers.patch_datetime_awareness_in_document(v)
            _id = doc["_id"]
        sk = store_key(_id)
        if sk in st.rid_by_key:
            raise self._dup_error(st.ix["_id_"], doc, ((K.encode(_id),)))
        rid = st.next_rid
        staged = []
        for ix in st.ix.values():
            for k in ix.flat_keys(doc):  # no arrays: at most one key per index
                pos, other = ix.place(k, rid)
                if other is not None:
                    raise self._dup_error(ix, doc, k)
                staged.append((ix, pos, k))
        st.next_rid = rid + 1
        log = self._oplog()
        if log is not None and not st.is_created:
            self._record_create(log)
        st.put(rid, sk, doc)
        for ix, pos, k in staged:
            ix.insert_at(pos, k, rid)
        st.version += 1
        if log is not None:
            self._record(log, "i", post=doc)
        if st.options:
            after_insert(st)
        return _id

    def _insert(self, data, session=None, ordered=True):
        if session:
            raise unsupported("Sessions")
        if isinstance(data, Mapping):
            return self._insert_one_doc(data)
        return self._insert_many_docs(list(data), ordered)

    def _insert_many_docs(self, docs: list, ordered: bool) -> list:
        with no_gc():
            return self._insert_many_docs_inner(docs, ordered)

    def _insert_many_docs_inner(self, docs: list, ordered: bool) -> list:
        """Stage every document of the batch (checks in order; ``ordered`` stops at the first error), then
        commit the staged ones in one step. A plain dict of scalar fields (``flat_insert_doc``) takes a
        shorter route with the same checks and effects: no depth walk, deep copy or validation call (the
        caller saw no validator), a size bound instead of ``bson.encode`` when the bound proves the limit is
        not reached, unique keys checked per document and every other index's keys computed in one pass per
        index after the loop (no error can come from them for such a document)."""
        st = self._store
        opts = st.options
        flat_ok = not (opts and (opts.get("validator") or opts.get("capped")))
        pending: dict = {}
        staged: list[tuple[dict, int, Any, dict | None]] = []
        ids: list = []
        errors: list[dict] = []
        seen_ids: set = set()
        rid_by_key = st.rid_by_key
        uniq = [(name, ix) for name, ix in st.ix.items() if ix.spec.checks_dups and name != "_id_"]
        flat_staged: list[tuple[dict, int]] = []
        flat_uniq: dict[str, list] = {name: [] for name, _ in uniq}
        names: dict = {}
        for i, data in enumerate(docs):
            doc = flat_insert_doc(data, names) if flat_ok and type(data) is dict else None
            try:
                if doc is None:
                    doc = U.fill_empty_timestamps(self._prepare_insert(data))
                    sk = store_key(doc["_id"])
                    if sk in rid_by_key or sk in seen_ids:
                        raise self._dup_error(st.ix["_id_"], doc, ((K.encode(doc["_id"]),)))
                    rid = st.next_rid
                    st.next_rid += 1
                    keys = self._compute_keys(doc, rid, pending, st)
                    staged.append((doc, rid, sk, keys))
                else:
                    _id = doc["_id"]
                    sk = _id if type(_id) is not bool else store_key(_id)  # no documents among flat values
                    if sk in rid_by_key or sk in seen_ids:
                        raise self._dup_error(st.ix["_id_"], doc, ((K.encode(_id),)))
                    rid = st.next_rid
                    st.next_rid += 1
                    if uniq:
                        self._check_unique_flat(uniq, doc, rid, pending, flat_uniq)
                    staged.append((doc, rid, sk, None))
                    flat_staged.append((doc, rid))
            except (WriteError, DuplicateKeyError) as e:
                det = dict(e.details or {})
                # the server's errmsg (pymongo's str(e) appends ", full error: {...}")
                det.update({"index": i, "code": e.code, "errmsg": errmsg_of(e), "op": data})
                errors.append(det)
                if ordered:
                    break
                continue
            seen_ids.add(sk)
            ids.append(doc["_id"])
        self._commit_bulk(staged, flat_staged, flat_uniq)
        if errors:
            raise BulkWriteError({"writeErrors": errors, "writeConcernErrors": [], "nInserted": len(staged),
                                  "nUpserted": 0, "nMatched": 0, "nModified": 0, "nRemoved": 0, "upserted": []})
        return ids

    def _check_unique_flat(self, uniq: list, doc: dict, rid: int, pending: dict, out: dict) -> None:
        """``_compute_keys``'s unique checks for a flat document, on the unique indexes ``uniq`` (not ``_id_``),
        in index order: against the stored entries and the batch's ``pending`` keys; on success the keys are
        recorded in ``pending`` and appended to ``out[name]`` as entries."""
        found = []
        for name, ix in uniq:
            keys = ix.flat_keys(doc)
            if keys:
                p = pending.get(name)
                for k in keys:
                    if ix.place(k, rid)[1] is not None:
                        raise self._dup_error(ix, doc, k)
                    if p is not None:
                        o = p.get(k)
                        if o is not None and o != rid:
                            raise self._dup_error(ix, doc, k)
            found.append((name, keys))
        for name, keys in found:
            p = pending.setdefault(name, {})
            lst = out[name]
            for k in keys:
                p[k] = rid
                lst.append((k, rid))

    def _commit_bulk(self, staged: list, flat: list | None = None, flat_uniq: dict | None = None) -> None:
        """Record the staged documents ``(doc, rid, store key, keys)`` and their index entries: ``keys`` per index from
        ``_compute_keys``, or None for a flat document (``flat``: its ``(doc, rid)``; its keys on the unique
        indexes are in ``flat_uniq``, the other indexes' keys are computed here, one pass per index)."""
        if not staged:
            return
        st = self._store
        if st.held:  # an open transaction holds some of these keys: wait before storing any (history.py)
            st.rec.check_held_batch(st, [d for d, _, _, _ in staged])
        log = self._oplog()
        if log is not None and not st.is_created:
            self._record_create(log)
        per_index: dict[str, list] = {n: [] for n in st.ix}
        put = st.put
        for doc, rid, sk, keys in staged:
            put(rid, sk, doc)
            if keys is None:
                continue
            for name, (ks, arrays) in keys.items():
                if arrays:
                    st.ix[name].note_arrays(arrays)
                lst = per_index[name]
                for k in ks:
                    lst.append((k, rid))
        if flat:
            for name, ix in st.ix.items():
                lst = per_index[name]
                if flat_uniq and name in flat_uniq:
                    lst.extend(flat_uniq[name])
                    continue
                # the specialised key function answers None (hashed, dotted fields) or [] (sparse) where
                # ``flat_keys`` decides; a partial index's keys depend on its filter
                fast = ix._fast_fn() if ix.spec.partial is None else _no_fast_keys
                fk = ix.flat_keys
                lst.extend([(k, rid) for doc, rid in flat for k in (fast(doc) or fk(doc))])
        for name, items in per_index.items():
            st.ix[name].add_bulk(items)
        st.version += 1
        if log is not None:
            self._record(log, "i", many=[doc for doc, *_ in staged])
        if st.options:
            after_insert(st)  # capped: trim the oldest documents; clustered: keep _id order (capped.py)

    def insert_one(self, document, bypass_document_validation=False, session=None, comment=None):
        if not bypass_document_validation:
            mm_collection.validate_is_mutable_mapping("document", document)
        return InsertOneResult(self._insert(document, session), acknowledged=True)

    def insert_many(self, documents, ordered=True, bypass_document_validation=False, session=None, comment=None):
        if not isinstance(documents, Iterable) or isinstance(documents, Mapping):
            raise TypeError("documents must be a non-empty list")
        documents = list(documents)
        if not documents:
            raise TypeError("documents must be a non-empty list")
        for d in documents:
            if type(d) is not dict:  # a dict is a MutableMapping: only other types need the (slower) check
                mm_collection.validate_is_mutable_mapping("document", d)
        return InsertManyResult(self._insert(documents, session, ordered=ordered), acknowledged=True)

    # ------------------------------------------------------------------------------ read helpers
    def _matching_rids(self, filter_: dict, multi: bool, sort=None, hint=None, let: dict | None = None) -> list[int]:
        sort, hint = _natural(_check_sort(_sort_list(sort)) if sort else None, hint)
        q = Query(filter_, sort=sort, hint=hint,
                  limit=0 if multi else 1, let=let)
        q.rids_only = True  # plan_and_run then collects record ids only (same counters)
        ex = self._run(q, stop_after=None if multi else 1)
        if getattr(ex, "rids", False):
            return ex.results
        return [m[0] for m in ex.results]

    def _run(self, q: Query, stop_after: int | None = None, explain: bool = False):
        st = self._store
        if st.options and "clusteredIndex" in st.options:
            from .clustered import run as run_clustered  # CLUSTERED_IXSCAN plans (clustered.py)
            ex = run_clustered(st, q, stop_after, explain)
            if not explain:
                note_execution(ex)
            check_deadline()
            return ex
        ix = express_eligible(st, q)
        if ix is not None:
            ex = _run_express(st, ix, q)
        else:
            if q.limit:
                n = q.limit
                stop_after = n if stop_after is None else min(stop_after, n)
            ex = plan_and_run(st, q, stop_after=stop_after, explain_trial_snapshot=explain)
        if not explain:
            note_execution(ex)  # the profiler's keysExamined/docsExamined come from this run (boundary.py)
        check_deadline()
        return ex

    # ------------------------------------------------------------------------------ updates
    def _update(self, spec, document, upsert=False, manipulate=False, multi=False, check_keys=False,
                hint=None, session=None, collation=None, let=None, array_filters=None, sort=None,
                positional_query=None, **kwargs):
        """One update/replace statement with the server's rules (update_ops.py): operator updates, replacement
        documents and update pipelines; ``positional_query``: the filter whose matched array element the
        positional ``$`` uses (find_one_and_update re-targets the document by ``_id``)."""
        if session:
            raise unsupported("Sessions")
        if collation:
            raise unsupported("collation on updates")
        if kwargs:
            raise OperationFailure("BSON field 'update.%s' is an unknown field." % next(iter(kwargs)), 40415)
        from ..pipeline.expression.match_expr import let_variables
        variables = let_variables(let)  # $$name for $expr in the filter and array filters, and in pipelines
        spec = client_value(spec)
        document = client_value(document)
        mm_collection.validate_is_mapping("spec", spec)
        mm_collection.validate_list_or_mapping("document", document)
        pipeline = isinstance(document, list)
        compiled = None
        if pipeline:
            _check_update_pipeline(document)
            from ..pipeline.expression.variables import bind_pipeline
            document = bind_pipeline(document, variables)  # let values in; undefined $$names fail (17276)
            if array_filters is not None:
                raise _write_error("arrayFilters may not be specified for pipeline-style updates", 72)
        elif U.is_operator_update(document):
            norm = _collation()
            mk = fast_matcher if norm is None and not variables else (lambda f: fast_matcher(f, norm, variables))
            compiled = U.Update(document, array_filters, mk)  # parse errors come first, as on the server
        else:  # a replacement's top-level $-prefixed names fail when it replaces a document (U.replace)
            document = U.fill_empty_timestamps(dict(document))  # top-level Timestamp(0, 0), as the server
            if array_filters:
                U.parse_array_filters(array_filters)
                ident = next(iter(U.parse_array_filters(array_filters)))
                raise _write_error("The array filter for identifier '%s' was not used in the update %s"
                                   % (ident, U.fmt(document)), 9)
        query = spec if positional_query is None else positional_query
        st = self._store
        rids = self._matching_rids(spec, multi, sort=sort, hint=hint, let=variables)
        n_matched = n_modified = 0
        upserted_id = None
        touched, shallow = _update_reach(compiled)
        # top-level scalar updates that cannot grow a document: made directly (update_fast.py)
        scalar = scalar_plan(compiled, array_filters) if shallow and touched is not None else None
        # ... and when no index reads those fields and no validator checks the result, replacing a document
        # is only storing it (what _replace_doc does then, without its per-index loop)
        lean = scalar is not None and not st.held and not self._validates_updates(st) and all(
            ix.spec.partial is None and touched.isdisjoint(ix.spec.tops) for ix in st.ix.values())
        log = self._oplog()
        if log is not None:  # each change is recorded for change streams (so none is made by the batch loop)
            lean = False
            cs_kind = "pipeline" if pipeline else "replace" if compiled is None else "update"
            cs_paths = _update_paths(compiled)
        docs = st.docs
        rec = st.rec
        i, nr = 0, len(rids)
        while i < nr:
            if lean:  # the documents the batch loop can do, in order, up to one that needs this general loop
                changed: list | None = [] if rec is not None else None
                j, m, mod = run_lean(scalar, rids, i, docs, changed)
                if changed:
                    for rid, old in changed:  # told after the fact: nothing is held here (lean excludes it)
                        rec.note(st, rid, old, docs[rid])
                n_matched += m
                n_modified += mod
                st.version += mod
                if j >= nr:
                    break
                todo, i = rids[j:j + 1], j + 1
            else:
                todo, i = rids, nr
            for rid in todo:
                old = docs.get(rid)
                if old is None:
                    continue
                n_matched += 1
                if scalar is not None and type(old) is dict:
                    new = apply_scalar(scalar, old)
                    if new is None:
                        continue  # a no-op update is matched, not modified
                    if new is not FALLBACK:
                        if lean:
                            if rec is not None:
                                rec.note(st, rid, old, new)
                            docs[rid] = new  # the _id map (st._documents) is a view of docs
                            st.version += 1
                        else:
                            self._replace_doc(rid, old, new, touched, shallow)
                            if log is not None:
                                self._record(log, "u", old, new, cs_kind, cs_paths)
                        n_modified += 1
                        continue
                if pipeline:
                    new = self._pipeline_result(old, document)
                elif compiled is not None:
                    if touched is not None and type(old) is dict:
                        # copy on write: only the top-level values the update can reach are copied; the rest
                        # is shared with the old version, which is never changed in place
                        new = dict(old)
                        for f in touched:
                            v = new.get(f)
                            if type(v) is dict or type(v) is list:
                                new[f] = fast_copy(v)
                    else:
                        new = fast_copy(old)
                    compiled.apply(new, query)
                    U.check_id_unchanged(old, new, document)
                else:
                    new = U.replace(old, document)
                if touched is not None and len(new) == len(old):
                    # untouched values are the same objects: a change, if any, is in one of the touched fields
                    for f in touched:
                        a = new.get(f, _MISSING)
                        b = old.get(f, _MISSING)
                        if a is not b and (a is _MISSING or b is _MISSING or not U.same(a, b)):
                            break
                    else:
                        if U.same(new, old):
                            continue  # a no-op update is matched, not modified
                elif U.same(new, old):
                    continue  # a no-op update is matched, not modified
                size = len(bson.encode(new))
                if size > MAX_BSON:
                    raise _write_error("Resulting document after update is larger than %d" % MAX_BSON, 17419)
                if touched is None:
                    self._replace_doc(rid, old, new)
                else:
                    self._replace_doc(rid, old, new, touched, shallow)
                if log is not None:
                    self._record(log, "u", old, new, cs_kind, cs_paths)
                n_modified += 1
        if upsert and not n_matched:
            to_insert = U.upsert_document(spec, document, array_filters,
                                          pipeline=(lambda d: self._pipeline_result(d, document)) if pipeline
                                          else None, compiled=compiled)
            upserted_id = self._insert_one_doc(to_insert, fill_timestamps=False)  # a replacement is filled above
        return {"connectionId": self.database.client._id, "err": None, "n": n_matched or (1 if upsert and not n_matched else 0),
                "nModified": n_modified, "ok": 1, "upserted": upserted_id if upsert and not n_matched else None,
                "updatedExisting": bool(n_matched)}

    def _pipeline_result(self, old: dict, pipeline: list) -> dict:
        """The document an update pipeline makes of ``old`` (manual "Updates with Aggregation Pipeline"): the
        stages run through the engine's aggregation; the ``_id`` is kept when the output drops it and may not
        change (66); ``_id`` stays the first field."""
        from ..pipeline.aggregation import Ctx, run_stages
        out = run_stages(self, list(pipeline), Ctx(), input_docs=[fast_copy(old)])
        if len(out) != 1 or not isinstance(out[0], dict):  # pragma: no cover - the stages are 1:1
            raise unsupported("Update pipeline %s" % (pipeline,))
        new = dict(out[0])
        if "_id" in old:
            if "_id" not in new:
                new = {"_id": old["_id"], **new}
            elif not U.same(old["_id"], new["_id"]):
                raise _write_error("After applying the update, the (immutable) field '_id' was found to have "
                                   "been altered to %s" % U.fmt_elem("_id", new["_id"]), 66)
        # $-prefixed names are stored at every level (pipeline_executor.cpp allows top-level ones; manual
        # "Updates Using Aggregation Pipelines"); the _id cannot change here, so it stays valid
        return U.id_first(new)

    def _validates_updates(self, st) -> bool:
        """Whether ``_replace_doc`` checks more than the indexes (rules.py: a collection validator)."""
        return False

    def _replace_doc(self, rid: int, old: dict, new: dict, touched: frozenset | None = None,
                     shallow: bool = False) -> None:
        """Validate every index for ``new`` first; then swap document and index entries together.

        ``touched``: the top-level fields the update could change (None: any); an index on none of them
        (and without a partial filter) keeps its keys, so they are not recomputed. ``shallow`` (for
        rules.py): the update cannot nest the document deeper and its size was already checked."""
        st = self._store
        if st.rec is not None:
            st.rec.note(st, rid, old, new)  # before anything changes (it may have to wait: history.py)
        plans = []
        for name, ix in st.ix.items():
            if touched is not None and ix.spec.partial is None and touched.isdisjoint(ix.spec.tops):
                continue  # same keys before and after: nothing to check or move
            try:
                new_keys, arrays = ix.keys_for(new)
            except K.ParallelArrays as e:
                raise WriteError(str(e), 171, {"code": 171, "errmsg": str(e)}) from None
            old_keys, _ = ix.keys_for(old)
            if ix.spec.checks_dups:
                # a key the document already had is no new duplicate (prepareUnique keeps the old ones)
                for k in (new_keys if ix.spec.unique else [k for k in new_keys if k not in old_keys]):
                    if ix.place(k, rid)[1] is not None:
                        raise self._dup_error(ix, new, k)
            plans.append((ix, old_keys, new_keys, arrays))
        for ix, old_keys, new_keys, arrays in plans:
            if old_keys != new_keys:
                os_, ns_ = set(old_keys), set(new_keys)
                gone = [k for k in old_keys if k not in ns_]
                added = [k for k in new_keys if k not in os_]
                ix.remove(gone, rid)
                ix.add(added, rid)
                note("keysDeleted", len(gone))
                note("keysInserted", len(added))
            ix.note_arrays(arrays)
        st.docs[rid] = new
        st.version += 1

    def update_one(self, filter, update, upsert=False, bypass_document_validation=False, collation=None,
                   array_filters=None, hint=None, session=None, let=None, sort=None, comment=None):
        if not bypass_document_validation:
            mm_collection.validate_ok_for_update(update)
        return UpdateResult(self._update(filter, update, upsert=upsert, hint=hint, session=session,
                                         collation=collation, array_filters=array_filters, let=let, sort=sort),
                            acknowledged=True)

    def update_many(self, filter, update, upsert=False, array_filters=None, bypass_document_validation=False,
                    collation=None, hint=None, session=None, let=None, comment=None):
        if not bypass_document_validation:
            mm_collection.validate_ok_for_update(update)
        return UpdateResult(self._update(filter, update, upsert=upsert, multi=True, hint=hint, session=session,
                                         collation=collation, array_filters=array_filters, let=let),
                            acknowledged=True)

    def replace_one(self, filter, replacement, upsert=False, bypass_document_validation=False, collation=None,
                    hint=None, session=None, let=None, sort=None, comment=None):
        if not bypass_document_validation:
            mm_collection.validate_ok_for_replace(replacement)
        return UpdateResult(self._update(filter, replacement, upsert=upsert, hint=hint, session=session,
                                         collation=collation, let=let, sort=sort), acknowledged=True)

    # ------------------------------------------------------------------------------ deletes
    def _delete(self, filter, collation=None, hint=None, multi=False, session=None, let=None):
        if collation:
            raise unsupported("collation on deletes")
        if session:
            raise unsupported("Sessions")
        filter = client_value(filter)
        if filter is None:
            filter = {}
        if not isinstance(filter, Mapping):
            filter = {"_id": filter}
        from ..pipeline.expression.match_expr import let_variables
        rids = self._matching_rids(filter, multi, hint=hint, let=let_variables(let))
        n = 0
        for rid in rids:
            if self._remove_rid(rid):
                n += 1
        return {"connectionId": self.database.client._id, "n": n, "ok": 1.0, "err": None}

    def _remove_rid(self, rid: int) -> bool:
        st = self._store
        doc = st.docs.get(rid)
        if doc is None:
            return False
        if st.rec is not None:
            st.rec.note(st, rid, doc, None)
        del st.docs[rid]
        sk = store_key(doc["_id"])
        st.rid_by_key.pop(sk, None)
        n = 0
        for ix in st.ix.values():
            keys, _ = ix.keys_for(doc)
            ix.remove(keys, rid)
            n += len(keys)
        note("keysDeleted", n)
        st.version += 1
        log = self._oplog()
        if log is not None:
            self._record(log, "d", pre=doc)
        return True

    def delete_one(self, filter, collation=None, hint=None, session=None, let=None, comment=None):
        mm_collection.validate_is_mapping("filter", filter)
        return DeleteResult(self._delete(filter, collation=collation, hint=hint, session=session, let=let), True)

    def delete_many(self, filter, collation=None, hint=None, session=None, let=None, comment=None):
        mm_collection.validate_is_mapping("filter", filter)
        return DeleteResult(self._delete(filter, collation=collation, hint=hint, multi=True, session=session,
                                         let=let), True)

    # ------------------------------------------------------------------------------ find & friends
    def find(self, filter=None, projection=None, skip=0, limit=0, no_cursor_timeout=False, cursor_type=None,
             sort=None, allow_partial_results=False, oplog_replay=False, batch_size=0, collation=None,
             hint=None, max_scan=None, max_time_ms=None, max=None, min=None, return_key=None,
             show_record_id=None, snapshot=False, comment=None, session=None, allow_disk_use=None, let=None,
             **kwargs):
        if kwargs:
            raise TypeError("find() got an unexpected keyword argument '%s'" % next(iter(kwargs)))
        if not isinstance(batch_size, int) or isinstance(batch_size, bool):
            raise TypeError("batch_size must be an integer, not %s" % type(batch_size))
        if batch_size < 0:
            raise ValueError("batch_size must be >= 0")
        # pymongo sends these as the find command's maxScan / snapshot, fields MongoDB 4.2 / 4.0 removed
        for name, field, val in (("max_scan", "maxScan", max_scan), ("snapshot", "snapshot", snapshot)):
            if val:
                raise OperationFailure("BSON field 'FindCommandRequest.%s' is an unknown field." % field, 40415)
        if cursor_type not in (None, 0, 2, 34, 64):  # pymongo's CursorType values
            raise ValueError("not a valid value for cursor_type")
        for name, val in (("collation", collation), ("session", session), ("cursor_type", cursor_type == 64)):
            if val:
                raise unsupported("find(%s=...)" % name)
        check_find_flags(return_key, show_record_id)
        if filter is None:
            filter = {}
        mm_collection.validate_is_mapping("filter", filter)
        if isinstance(projection, (list, tuple)):
            projection = {f: 1 for f in projection}
        c = Cursor(self, filter, projection, skip, limit, _sort_list(sort) if sort is not None else None,
                   batch_size=batch_size, hint=hint, let=let)
        if comment is not None:  # sent with the find and its getMores (command monitoring, the profiler)
            c._comment = comment
        if return_key is not None or show_record_id is not None:  # pymongo sends an explicit False too
            c._lab_flags = (return_key, show_record_id)
        if max:  # pymongo sends them as given (the find command's ``min`` / ``max`` documents)
            c._lab_max = max
        if min:
            c._lab_min = min
        if let is not None:
            c._lab_let_doc = let
        if allow_disk_use is not None:
            c.allow_disk_use(allow_disk_use)
        if max_time_ms is not None:
            c.max_time_ms(max_time_ms)
        if cursor_type:
            c._query_flags = cursor_type  # tailable (2) / tailable await (34): capped.Tail when it runs
        return c

    def find_one(self, filter=None, *args, **kwargs):
        if filter is None:
            filter = {}
        if not isinstance(filter, Mapping):
            filter = {"_id": filter}
        if not args and not kwargs and type(filter) is dict and len(filter) == 1 \
                and "_lab_express_find_one" in type(self).__dict__:
            found = self._find_one_express(filter)
            if found is not _NOT_EXPRESS:
                return found
        kwargs["limit"] = -1
        for doc in self.find(filter, *args, **kwargs):
            return doc
        return None

    _lab_express_find_one = True  # this class's find is the plain one (views and time series are not)

    def _find_one_express(self, filter_: dict) -> Any:
        """``find_one(filter)`` answered by an EXPRESS plan without a cursor: what ``find(filter, limit=-1)``
        would do for an express-eligible query (same plan, counters, index accesses, profiler run, deadline
        check and result copy). ``_NOT_EXPRESS`` when the query is not eligible (the caller takes the cursor)."""
        if _collation() is not None:
            return _NOT_EXPRESS
        st = self._store
        if st.options and "clusteredIndex" in st.options:
            return _NOT_EXPRESS
        for v in filter_.values():
            if type(v) not in _PLAIN_VALUES:  # a datetime (to millisecond precision, UTC) or a nested value
                filter_ = client_value(filter_)
                break
        ix = express_index(st, filter_, 1)
        if ix is None:
            return _NOT_EXPRESS
        op = current_op()
        if op is not None and op.recording:  # the profiler reads this run's stages and counters
            ex = _run_express(st, ix, Query(filter_, limit=1))
            note_execution(ex)
            hit = ex.results[0][:2] if ex.results else None
        else:  # no one reads the stage counters: the same lookup without the plan objects
            (cond,) = filter_.values()
            hit = express_first(st, ix, express_value(cond))
            note_access(ix)
        check_deadline()
        if hit is None:
            return None
        if self.codec_options.tz_aware:
            return helpers.make_datetime_timezone_aware_in_document(fast_copy(hit[1]))
        return fast_copy(hit[1])

    def _find_and_modify(self, query, projection=None, update=None, upsert=False, sort=None,
                         return_document=ReturnDocument.BEFORE, session=None, hint=None, let=None,
                         array_filters=None, collation=None, **kwargs):
        remove = kwargs.pop("remove", False)
        kwargs.pop("comment", None)
        for k in ("maxTimeMS", "max_time_ms"):
            if k in kwargs:
                op = current_op()
                ms = kwargs.pop(k)
                if op is not None:
                    op.set_max_time(ms)
        if kwargs:  # pymongo sends extra keyword arguments as fields of the findAndModify command
            raise OperationFailure("BSON field 'findAndModify.%s' is an unknown field." % next(iter(kwargs)), 40415)
        for name, val in (("session", session), ("collation", collation)):
            if val:
                raise unsupported("find_one_and_*(%s=...)" % name)
        from ..pipeline.expression.match_expr import let_variables
        st = self._store
        rids = self._matching_rids(query, False, sort=sort, hint=hint, let=let_variables(let))
        if not rids:
            if remove or not upsert:
                note_fact("fam", {"n": 0} if remove else {"n": 0, "updatedExisting": False})
                return None
            res = self._update(query, update, upsert=True, array_filters=array_filters, let=let)
            note_fact("fam", {"n": 1, "updatedExisting": False, "upserted": res["upserted"]})
            if return_document is ReturnDocument.AFTER:
                return self.find_one({"_id": res["upserted"]}, projection)
            return None
        rid = rids[0]
        old = st.docs[rid]
        before = self._project(old, projection, query)
        note_fact("fam", {"n": 1} if remove else {"n": 1, "updatedExisting": True})
        if remove:
            self._remove_rid(rid)
            return before
        self._update({"_id": old["_id"]}, update, array_filters=array_filters, positional_query=query, let=let)
        if return_document is ReturnDocument.AFTER:
            return self._project(st.docs[rid], projection, query)
        return before

    def find_one_and_delete(self, filter, projection=None, sort=None, hint=None, session=None, let=None,
                            comment=None, **kwargs):
        mm_collection.validate_is_mapping("filter", filter)
        return self._find_and_modify(filter, projection, sort=sort, remove=True, hint=hint, session=session,
                                     let=let, **kwargs)

    def find_one_and_replace(self, filter, replacement, projection=None, sort=None, upsert=False,
                             return_document=ReturnDocument.BEFORE, hint=None, session=None, let=None,
                             comment=None, **kwargs):
        mm_collection.validate_is_mapping("filter", filter)
        mm_collection.validate_ok_for_replace(replacement)
        return self._find_and_modify(filter, projection, replacement, upsert, sort, return_document, hint=hint,
                                     session=session, let=let, **kwargs)

    def find_one_and_update(self, filter, update, projection=None, sort=None, upsert=False,
                            return_document=ReturnDocument.BEFORE, array_filters=None, hint=None, session=None,
                            let=None, comment=None, **kwargs):
        mm_collection.validate_is_mapping("filter", filter)
        mm_collection.validate_ok_for_update(update)
        return self._find_and_modify(filter, projection, update, upsert, sort, return_document, hint=hint,
                                     session=session, let=let, array_filters=array_filters, **kwargs)

    def _projector(self, projection: Any, query: Any = None) -> Callable[[dict], dict]:
        """A function projecting stored documents with the server's find rules (projection.py), parsed once
        (so projection errors come before any document is read); ``query``: for the positional ``$``."""
        tz = self.codec_options.tz_aware
        if projection is None:
            if not tz:
                return fast_copy
            return lambda doc: helpers.make_datetime_timezone_aware_in_document(fast_copy(doc))
        if isinstance(projection, (list, tuple)):
            projection = {f: 1 for f in projection}
        if not isinstance(projection, Mapping):
            raise TypeError("projection must be an instance of dict, list or tuple")
        from ..pipeline.aggregation import _compile_expr
        p = Projection(dict(projection), query, _compile_expr)
        if not tz:
            return p.apply
        return lambda doc: helpers.make_datetime_timezone_aware_in_document(p.apply(doc))

    def _project(self, doc: dict, projection: Any, query: Any = None) -> dict:
        return self._projector(projection, query)(doc)

    def count_documents(self, filter, session=None, collation=None, hint=None, skip=_UNSET, limit=_UNSET,
                        maxTimeMS=None, comment=None, **kwargs):
        if kwargs:  # pymongo copies unknown options into the aggregate command
            raise OperationFailure("BSON field 'aggregate.%s' is an unknown field." % next(iter(kwargs)), 40415)
        if session:
            raise unsupported("Sessions")
        if collation:
            raise unsupported("count_documents(collation=...)")
        if not isinstance(filter, Mapping):  # pymongo sends {$match: filter}; the server wants an object
            raise OperationFailure("the match filter must be an expression in an object", 15959)
        # pymongo sends {$skip: skip} and {$limit: limit} when they are given, even as None
        skip = None if skip is _UNSET else _check_count_stage("$skip", skip, 5107200)
        limit = None if limit is _UNSET else _check_count_stage("$limit", limit, 5107201)
        if limit is not None:
            if limit == 0:
                raise OperationFailure("the limit must be positive", 15958)
        _arm_max_time(maxTimeMS)
        from ..pipeline.aggregation import count_documents
        return count_documents(self, client_value(filter), skip, limit, hint)

    def _count_command(self, filter: Mapping, skip: int = 0, limit: int = 0, hint: Any = None) -> int:
        """The ``count`` command (count.cpp, get_executor.cpp ``getExecutorCount``): an empty filter without a
        hint is the record store's count; otherwise a COUNT stage over the plan of the filter (a COUNT_SCAN
        when the planner can make one), applying ``skip`` and stopping at ``limit`` itself."""
        if "viewOn" in (self._store.options or {}):  # a view's count is an aggregation over its pipeline
            kw = dict({"skip": skip} if skip else {}, **({"limit": limit} if limit else {}))
            return self.count_documents(filter or {}, hint=hint, **kw)
        filter = client_value(filter or {})
        if not filter and hint is None:
            return self._fast_count(skip, limit)
        ex = self._run(Query(filter, hint=hint, kind="count"), stop_after=(skip + limit) if limit else None)
        n = max(len(ex.results) - skip, 0)
        return min(n, limit) if limit else n

    def estimated_document_count(self, **kwargs):
        for k in kwargs:
            if k not in ("maxTimeMS", "comment"):
                raise OperationFailure("BSON field 'count.%s' is an unknown field." % k, 40415)
        _arm_max_time(kwargs.get("maxTimeMS"))
        return self._fast_count()  # pymongo sends {count: <collection>}: the record store's count

    def _fast_count(self, skip: int = 0, limit: int = 0) -> int:
        """A ``count`` without filter or hint: RECORD_STORE_FAST_COUNT, which the profiler reports as the plan."""
        from ..exec.stages import RecordStoreFastCount
        stage = RecordStoreFastCount()
        stage.work()
        cand = Candidate(lambda: stage, None, False, desc=stage.name)
        cand.root = stage
        note_execution(Execution(cand, [cand], {}, [], 0))
        n = max(len(self._store.docs) - skip, 0)
        return min(n, limit) if limit else n

    def distinct(self, key, filter=None, session=None, comment=None, hint=None, **kwargs):
        if kwargs.get("collation"):
            raise unsupported("distinct(collation=...)")
        _arm_max_time(kwargs.pop("maxTimeMS", None))
        kwargs.pop("collation", None)
        if kwargs:
            raise OperationFailure("BSON field 'distinct.%s' is an unknown field." % next(iter(kwargs)), 40415)
        if session:
            raise unsupported("Sessions")
        if not isinstance(key, str):
            raise TypeError("key must be an instance of str")
        if filter is not None and not isinstance(filter, Mapping):
            raise OperationFailure("BSON field 'distinct.query' is the wrong type '%s', expected type 'object'"
                                   % _type_name(filter), 14)
        filter = client_value(filter or {})
        ex = self._run(Query(filter, hint=hint, kind="distinct", distinct_key=key))
        st = self._store
        return distinct_values((m[1] if m[1] is not None else st.docs[m[0]] for m in ex.results), key)

    # ------------------------------------------------------------------------------ indexes
    def create_index(self, keys, session=None, comment=None, **kwargs):
        if session:
            raise unsupported("Sessions")
        kwargs.pop("cache_for", None)
        _arm_max_time(kwargs.pop("maxTimeMS", None))  # pymongo sends it as the createIndexes command's option
        if isinstance(keys, Mapping):  # pymongo accepts {"a": 1, "b": -1} (ordered) as well as [("a", 1), ...]
            keys = list(keys.items())
        key = helpers.create_index_list(keys)
        if not key:
            raise ValueError("key_or_list must not be empty")
        return self._create_index(key, kwargs)

    def _create_index(self, key: list, opts: dict) -> str:
        opts = dict(opts)
        name = opts.pop("name", None) or gen_index_name(key)
        unique = opts.pop("unique", False)
        sparse = opts.pop("sparse", False)
        partial = opts.pop("partialFilterExpression", None)
        hidden = opts.pop("hidden", False)
        expire = opts.pop("expireAfterSeconds", None)
        prepare_unique = opts.pop("prepareUnique", False)
        if prepare_unique and unique:  # index_key_validate.cpp; jstests/core/ddl/index_prepareUnique.js
            raise OperationFailure("Invalid index specification %s; cannot create an index with the 'unique' option "
                                   "and the 'prepareUnique' option" % K.fmt_value(
                                       {"key": dict(key), "name": name, "unique": unique,
                                        "prepareUnique": prepare_unique}), 67)
        if not isinstance(name, str):  # index_key_validate.cpp: the index spec's name must be a string
            raise OperationFailure("The field 'name' must be a string, but got %s" % _type_name(name), 14)
        if expire is not None:  # index_key_validate.cpp validateExpireAfterSeconds: CannotCreateIndex 67
            if isinstance(expire, bool) or not isinstance(expire, (int, float)):
                raise OperationFailure("TTL index 'expireAfterSeconds' option must be numeric, but received a type "
                                       "of '%s'" % _type_name(expire), 67)
            if expire != expire:
                raise OperationFailure("TTL index 'expireAfterSeconds' option must not be NaN", 67)
        collation = opts.pop("collation", None)
        opts.pop("background", None)  # accepted and ignored by the server since 4.2
        version = opts.pop("v", 2)
        if version != 2:
            if version in (0, 1) and not isinstance(version, bool):
                raise unsupported("Index version v: %s" % version)
            raise OperationFailure("Invalid index specification %s; cannot create an index with v=%s"
                                   % ({"key": dict(key), "name": name, "v": version}, version), 67)
        from ..query.collate import index_keyfunc, normalize
        collation = normalize(collation)  # full server document, or None for simple (collate.py)
        extra = {}
        for k in list(opts):
            if k in ("weights", "default_language", "language_override", "textIndexVersion", "2dsphereIndexVersion",
                     "bits", "min", "max", "wildcardProjection", "storageEngine", "clustered"):
                raise unsupported("Index option '%s'" % k)
            raise OperationFailure("The field '%s' is not valid for an index specification." % k, 197)
        for f, d in key:
            if not (isinstance(d, (int, float)) and not isinstance(d, bool) and d != 0) and d not in ("hashed", "text", "2d", "2dsphere"):
                raise OperationFailure("Values in the index key pattern can only be numbers or strings", 67)
        spec = IndexSpec(name, key, unique=unique, sparse=sparse, partial=partial, hidden=hidden, expire=expire,
                         collation=collation, prepare_unique=prepare_unique)
        st = self._store
        if self._existing_index(spec):
            return name
        txn = _active_txn()
        if txn is not None:  # a new index in a transaction: only on a new, empty collection (sessions.py)
            txn.check_new_index(st, self._ns())
        if len(st.ix) >= MAX_INDEXES:
            # index_catalog_impl.cpp: numIndexesTotal (the _id index included) >= 64 -> CannotCreateIndex
            raise OperationFailure("add index fails, too many indexes for %s key:%s"
                                   % (self._ns(), _key_pattern_str(key)), 67)
        if len(key) > MAX_COMPOUND_FIELDS:
            # jstests/core/index/compound_index_max_fields.js: 32 fields build, 33 fail with 13103
            raise OperationFailure("Index build failed: Collection %s :: caused by :: too many compound keys"
                                   % self._ns(), 13103)
        from ..index.hashed import check_hashed_spec, new_index
        check_hashed_spec(spec)
        ix = new_index(spec, keyfunc=index_keyfunc(collation))
        items = []
        seen: dict = {}
        # the keys of a document without arrays on the indexed fields come from the index's specialised key
        # function (what ``keys_for`` calls first); it answers None for the others, which take ``keys_for``
        fast = ix._fast_fn() if spec.partial is None else _no_fast_keys
        append = items.append
        for rid, doc in st.docs.items():
            keys = fast(doc)
            if keys is None:
                try:
                    keys, arrays = ix.keys_for(doc)
                except K.ParallelArrays as e:
                    raise OperationFailure("Index build failed: %s" % e, 171) from None
                ix.note_arrays(arrays)
            if not spec.unique:
                for k in keys:
                    append((k, rid))
                continue
            for k in keys:
                if spec.unique:
                    o = seen.get(k)
                    if o is not None and o != rid:
                        err = self._dup_error(ix, doc, k)
                        raise DuplicateKeyError("Index build failed: " + str(err), 11000, err.details)
                    seen[k] = rid
                items.append((k, rid))
        ix.sort_entries(items)
        ix.entries = items
        log = self._oplog()
        if log is not None and not st.is_created:
            self._record_create(log)
        st.ix[name] = ix
        st.indexes[name] = {"key": key}
        st._is_force_created = True
        st.version += 1
        if log is not None:  # the commitIndexBuild entry: createIndexes with showExpandedEvents
            self._record(log, "c", o={"createIndexes": self._name, "indexes": [ix.spec.info()]})
        return name

    def _existing_index(self, spec: IndexSpec) -> bool:
        """True when an identical index of that name exists (creating it again is a no-op: the server's
        "all indexes already exist"); raises when the request conflicts with an existing index, as
        ``IndexCatalogImpl::_doesSpecConflictWithExisting`` (index_catalog_impl.cpp) does: the same name with
        another key pattern or signature is 86 IndexKeySpecsConflict; the same name and signature with other
        options, or the same signature under another name, is 85 IndexOptionsConflict. Since 5.0 an index on
        the same key pattern with another ``unique``, ``sparse``, collation or partial filter is a new index
        (jstests/core/index/index_signature.js)."""
        st = self._store
        same_name = st.ix.get(spec.name)
        if same_name is not None:
            how = spec.compare(same_name.spec)
            if how == "identical":
                return True
            if how == "different":
                raise OperationFailure(
                    "An existing index has the same name as the requested index. When index names are not "
                    "specified, they are auto generated and can cause conflicts. Please refer to our "
                    "documentation. Requested index: %s, existing index: %s"
                    % (K.fmt_value(spec.info()), K.fmt_value(same_name.spec.info())), 86)
            raise OperationFailure("An equivalent index already exists with the same name but different options. "
                                   "Requested index: %s, existing index: %s"
                                   % (K.fmt_value(spec.info()), K.fmt_value(same_name.spec.info())), 85)
        for existing in st.ix.values():
            how = spec.compare(existing.spec)
            if how == "equivalent":
                raise OperationFailure("An equivalent index already exists with a different name and options. "
                                       "Requested index: %s, existing index: %s"
                                       % (K.fmt_value(spec.info()), K.fmt_value(existing.spec.info())), 85)
            if how == "identical":
                raise OperationFailure("Index already exists with a different name: %s" % existing.spec.name, 85)
        return False

    def create_indexes(self, indexes, session=None, comment=None, **kwargs):
        _command_options("createIndexes", kwargs, ("maxTimeMS", "commitQuorum"))
        _arm_max_time(kwargs.get("maxTimeMS"))
        names = []
        for m in indexes:
            if not isinstance(m, IndexModel):
                raise TypeError("%s is not an instance of pymongo.operations.IndexModel" % (m,))
            doc = dict(m.document)
            key = list(doc.pop("key").items())
            names.append(self._create_index(key, doc))
        return names

    def drop_index(self, index_or_name, session=None, comment=None, **kwargs):
        _command_options("dropIndexes", kwargs, ("maxTimeMS",))
        _arm_max_time(kwargs.get("maxTimeMS"))
        if isinstance(index_or_name, (list, tuple)):
            name = gen_index_name(helpers.create_index_list(index_or_name))
        elif isinstance(index_or_name, Mapping):
            name = gen_index_name(list(index_or_name.items()))
        else:
            name = index_or_name
        if not isinstance(name, str):
            raise TypeError("index_or_name must be an instance of str or list")
        if name == "*":
            return self.drop_indexes()
        st = self._store
        if name == "_id_":
            raise OperationFailure("cannot drop _id index", 72)
        if name not in st.ix:
            raise OperationFailure("index not found with name [%s]" % name, 27)
        gone = st.ix.pop(name)
        st.indexes.pop(name, None)
        st.version += 1
        log = self._oplog()
        if log is not None:  # dropIndexes with showExpandedEvents
            self._record(log, "c", o={"dropIndexes": self._name, "indexes": [gone.spec.info()]})

    def _indexes_with_key(self, key: Any) -> list:
        """The indexes whose key pattern is ``key`` (a mapping), in catalog order: since 5.0 there can be
        several (``findIndexesByKeyPattern``); the callers refuse to guess (AmbiguousIndexKeyPattern 181)."""
        want = [(f, _num(d)) for f, d in dict(key).items()]
        return [ix for ix in self._store.ix.values() if [(f, _num(d)) for f, d in ix.spec.key] == want]

    def _drop_index_by_key(self, key: Any) -> None:
        """dropIndexes with a key pattern (what mongosh's ``dropIndex({a: 1})`` sends), as
        src/mongo/db/catalog/drop_indexes.cpp ``getDescriptorByKeyPattern`` answers it."""
        found = self._indexes_with_key(key)
        shown = K.fmt_value(dict(key))
        if not found:
            raise OperationFailure("can't find index with key: %s" % shown, 27)
        if len(found) > 1:
            raise OperationFailure("%d indexes found for key: %s, identify by name instead. Conflicting indexes: "
                                   "%s, %s" % (len(found), shown, K.fmt_value(found[0].spec.info()),
                                               K.fmt_value(found[1].spec.info())), 181)
        if found[0].spec.name == "_id_":
            raise OperationFailure("cannot drop _id index", 72)
        self.drop_index(found[0].spec.name)

    def drop_indexes(self, session=None, comment=None, **kwargs):
        _command_options("dropIndexes", kwargs, ("maxTimeMS",))
        _arm_max_time(kwargs.get("maxTimeMS"))
        st = self._store
        log = self._oplog()
        for name in [n for n in st.ix if n != "_id_"]:
            gone = st.ix.pop(name)
            st.indexes.pop(name, None)
            if log is not None:  # one dropIndexes entry per index, as the server logs them
                self._record(log, "c", o={"dropIndexes": self._name, "indexes": [gone.spec.info()]})
        st.version += 1

    def list_indexes(self, session=None, comment=None):
        st = self._store
        if not st.is_created:
            return CommandCursor([], session)
        return CommandCursor(_index_infos(st), session)

    def index_information(self, session=None, comment=None):
        st = self._store
        if not st.is_created:
            return {}
        out = {}
        for info in _index_infos(st):
            name = info.pop("name")
            info["key"] = list(info["key"].items())
            out[name] = info
        return out

    def _set_hidden(self, name: str, hidden: bool) -> bool:
        st = self._store
        if name not in st.ix:
            raise OperationFailure("cannot find index %s for ns %s" % (name, self._ns()), 27)
        if name == "_id_":
            raise OperationFailure("can't hide _id index", 72)
        old = st.ix[name].spec.hidden
        st.ix[name].spec.hidden = bool(hidden)
        if old != bool(hidden):  # manual hideIndex/unhideIndex: "Index Modifications Reset Statistics"
            import datetime
            st.ix[name].accesses = 0
            st.ix[name].since = datetime.datetime.utcnow()
        st.version += 1
        return old

    # ------------------------------------------------------------------------------ misc
    def drop(self, session=None, comment=None, **kwargs):
        self.database.drop_collection(self.name)

    def aggregate(self, pipeline, session=None, **kwargs):
        from ..pipeline.aggregation import run_pipeline
        from ..pipeline.change_stream import split_pipeline
        cs = split_pipeline(pipeline)  # a change stream: pymongo's tailable cursor (change_streams.py)
        if cs is not None:
            return hooks.get("watch")(self, "collection", (cs[1],), {
                "_spec": cs[0], "batch_size": kwargs.get("batchSize"), "session": session,
                "max_await_time_ms": kwargs.get("maxAwaitTimeMS"), "collation": kwargs.get("collation")})
        if session:
            raise unsupported("Sessions")
        if kwargs.get("explain"):
            from pymongo.errors import ConfigurationError
            raise ConfigurationError("The explain option is not supported. Use Database.command instead.")
        _arm_max_time(kwargs.get("maxTimeMS", kwargs.get("max_time_ms")))
        for k, v in kwargs.items():
            if k in ("allowDiskUse", "allow_disk_use", "maxTimeMS", "batchSize", "comment", "max_time_ms", "hint"):
                continue
            if k == "collation" and v is None:
                continue
            if k == "let":
                continue
            if k in ("cursor", "pipeline", "explain", "bypassDocumentValidation", "readConcern", "writeConcern"):
                raise unsupported("aggregate(%s=...)" % k)
            # pymongo sends other keyword arguments as fields of the aggregate command
            raise OperationFailure("BSON field 'aggregate.%s' is an unknown field." % k, 40415)
        allow = kwargs.get("allowDiskUse", kwargs.get("allow_disk_use"))
        docs = run_pipeline(self, list(pipeline), hint=kwargs.get("hint"), allow_disk_use=allow,
                            let=kwargs.get("let"))
        op = current_op()
        if op is not None and op.recording:  # someone watches: getMore batches as the driver sees them
            from ..stats.monitoring import MonitoredCommandCursor
            return MonitoredCommandCursor(docs, self, kwargs.get("session"), kwargs.get("batchSize") or 0,
                                          kwargs.get("comment"))
        return CommandCursor(docs, session, kwargs.get("batchSize") or 0)

    def bulk_write(self, requests, ordered=True, bypass_document_validation=False, session=None, comment=None,
                   let=None, **kwargs):
        from .bulk import run_bulk
        if session:
            raise unsupported("Sessions")
        return run_bulk(self, list(requests), ordered, let=let)

    def __next__(self):
        raise TypeError("'Collection' object is not iterable")

    next = __next__

    def explain_find(self, q: Query, verbosity: str = "allPlansExecution", command: dict | None = None) -> dict:
        from ..query.explain_doc import explain_query
        return explain_query(self, q, verbosity, command)


def _update_paths(compiled: Any) -> list[str] | None:
    """The paths an operator update names (a $rename's source and target), for its change event."""
    if compiled is None:
        return None
    out = []
    for o in compiled.ops:
        out.append(o.path)
        if o.op == "$rename" and o.to_parts:
            out.append(".".join(o.to_parts))
    return out


def _index_infos(st: Any) -> list[dict]:
    """listIndexes documents; a clustered collection shows its cluster key instead of an ``_id`` index."""
    infos = [ix.spec.info() for ix in st.ix.values()]
    if st.options and "clusteredIndex" in st.options:
        from .clustered import index_info
        infos[0] = index_info(st)
    return infos


def _type_name(v: Any) -> str:
    """The server's BSON type name of ``v`` (values.type_name)."""
    from ..bson.values import type_name
    return type_name(v)


def _command_options(command: str, kwargs: dict, allowed: tuple) -> None:
    """pymongo sends extra keyword arguments as fields of ``command``: one the command does not have fails as on
    the server (IDL unknown field, 40415)."""
    for k in kwargs:
        if k not in allowed:
            raise OperationFailure("BSON field '%s.%s' is an unknown field." % (command, k), 40415)


def _arm_max_time(ms: Any) -> None:
    """Give the current operation its maxTimeMS (validated; MaxTimeMSExpired 50 once passed)."""
    if ms is not None:
        op = current_op()
        if op is not None:
            op.set_max_time(ms)


def _check_count_stage(stage: str, v: Any, code: int) -> int | None:
    """``count_documents`` skip/limit as the server checks its ``$skip``/``$limit`` stages; the value as an int."""
    n = v.to_decimal() if isinstance(v, bson.Decimal128) else v
    if isinstance(n, bool) or not isinstance(n, (int, float, decimal.Decimal)):
        shown = "null" if v is None else '"%s"' % v if isinstance(v, str) else repr(v)
        raise OperationFailure("invalid argument to %s stage: Expected a number in: %s: %s" % (stage, stage, shown),
                               code)
    finite = n.is_finite() if isinstance(n, decimal.Decimal) else n == n and n not in (float("inf"), float("-inf"))
    if not finite or n != int(n) or not -2 ** 63 <= n < 2 ** 63:
        raise OperationFailure("invalid argument to %s stage: Cannot represent as a 64-bit integer: %s: %r"
                               % (stage, stage, v), code)
    if n < 0:
        raise OperationFailure("invalid argument to %s stage: Expected a non-negative number in: %s: %d"
                               % (stage, stage, n), code)
    return int(n)


_UPDATE_STAGES = ("$addFields", "$set", "$project", "$unset", "$replaceRoot", "$replaceWith")


def _check_update_pipeline(pipeline: list) -> None:
    """The stages an update pipeline may hold (manual "Updates with Aggregation Pipeline"): others fail with
    InvalidOptions (72), unknown names with 40324, malformed stages with 40323."""
    from ..pipeline.stage_names import STAGE_NAMES
    for stage in pipeline:
        if not isinstance(stage, dict) or len(stage) != 1:
            raise _write_error("A pipeline stage specification object must contain exactly one field.", 40323)
        name = next(iter(stage))
        if name in _UPDATE_STAGES:
            continue
        if name not in STAGE_NAMES:
            raise _write_error("Unrecognized pipeline stage name: '%s'" % name, 40324)
        raise _write_error("%s is not allowed to be used within an update" % name, 72)


def distinct_values(docs: Iterable[dict], key: str) -> list:
    seen: dict[bytes, Any] = {}
    parts = key.split(".")
    for doc in docs:
        vals = K.path_values(doc, parts)
        for v in vals:
            if isinstance(v, K.Undefined):
                continue
            e = K.encode(v)
            if e not in seen:
                seen[e] = v
    return [fast_copy(seen[e]) for e in sorted(seen)]


_NOT_EXPRESS = object()  # _find_one_express: the query needs the general path
_PLAIN_VALUES = frozenset({str, int, float, bool, type(None), ObjectId})  # unchanged by the datetime patch


def _run_express(st, ix, q: Query):
    t0 = time.perf_counter()
    (cond,) = q.filter.values()
    stage = Express(ix, st, express_value(cond))
    results = []
    lim = q.limit or None
    while True:
        s = stage.work()
        if s == 0:
            results.append(stage.out)
            if lim and len(results) >= lim:
                break
        elif s == 2:
            break
    note_access(ix)
    cand = Candidate(lambda: stage, ix, True, False, desc="EXPRESS")
    cand.root = stage
    return ExpressExec(cand, results, int((time.perf_counter() - t0) * 1000))


def set_min_max(q: Query, min_: Any, max_: Any) -> None:
    """Give query ``q`` a find's ``min`` / ``max`` (planner.py plans them), checked as the server parses them."""
    if not (min_ or max_):
        return
    q.min_bound, q.max_bound = _bound_doc(min_, "min"), _bound_doc(max_, "max")
    if q.min_bound and q.max_bound and list(q.min_bound) != list(q.max_bound):
        # query_request_helper.cpp validateFindCommandRequest, when the find command is parsed
        raise OperationFailure("min and max must have the same field names", 51176)


def check_find_flags(return_key: Any, show_record_id: Any) -> None:
    """The find command's ``returnKey`` / ``showRecordId`` are IDL ``optionalBool``s: anything but a boolean is
    TypeMismatch (14) (idl/basic_types.h ``OptionalBool::parseFromBSON``)."""
    for field, val in (("returnKey", return_key), ("showRecordId", show_record_id)):
        if val is not None and not isinstance(val, bool):
            raise OperationFailure("Field '%s' should be a boolean value, but found: %s" % (field, _type_name(val)), 14)


def set_find_flags(q: Query, st: Any, return_key: Any, show_record_id: Any, projector: Any = None) -> None:
    """Give query ``q`` a find's ``returnKey`` / ``showRecordId`` (planner.py: RETURN_KEY, the ``$recordId``
    projection). With ``returnKey`` the projection is parsed (its errors are the server's) and ignored but for its
    ``{$meta: "sortKey"}`` fields (``projector``: the collection's projection parser), which need a sort
    (BadValue 2, canonical_query.cpp). On a clustered collection the record id is the ``_id``'s key string, not
    modelled: 115."""
    if not (return_key or show_record_id):
        return
    if st.options and "clusteredIndex" in st.options:
        raise unsupported("find returnKey/showRecordId on a clustered collection",
                          "a projection of _id (a clustered collection's record id is its _id)")
    q.return_key, q.show_record_id = bool(return_key), bool(show_record_id)
    proj = q.projection
    if return_key and isinstance(proj, Mapping) and proj:
        meta = [f for f, v in proj.items() if isinstance(v, Mapping) and dict(v) == {"$meta": "sortKey"}]
        rest = {f: v for f, v in proj.items() if f not in meta}
        if rest and projector is not None:
            projector(rest)  # parsed for its errors only
        if meta and not q.sort:
            raise OperationFailure("cannot use sortKey $meta projection without a sort", 2)
        q.sort_key_fields = meta


def refuse_min_max_as_aggregation(min_: Any, max_: Any, return_key: Any = None, show_record_id: Any = None) -> None:
    """A find the server runs as an aggregation (on a view, or a time-series collection) cannot take ``min`` /
    ``max`` / ``returnKey`` / ``showRecordId`` (checked in that order): InvalidPipelineOperator (168)
    (query_request_helper.cpp ``asAggregationCommand``)."""
    for name, value in (("min", min_), ("max", max_), ("returnKey", return_key), ("showRecordId", show_record_id)):
        if value:
            raise OperationFailure("Option %s not supported in aggregation." % name, 168)


def _bound_doc(value: Any, name: str) -> dict | None:
    """A find's ``min`` / ``max`` as the server parses it: a document (pymongo sends ``find(min=[...])``'s list
    as it is, an array, which the server refuses with its IDL error)."""
    if not value:
        return None
    if not isinstance(value, Mapping):
        raise OperationFailure("BSON field 'FindCommandRequest.%s' is the wrong type '%s', expected type 'object'"
                               % (name, "array" if isinstance(value, (list, tuple)) else type(value).__name__), 14)
    return dict(value)


_TAILABLE_FLAGS = 2 | 32  # tailable, awaitData (pymongo's CursorType.TAILABLE_AWAIT); awaitData alone is an error
# getMore errors after which pymongo stops a tailable cursor without raising (pymongo's cursor_shared.py
# _CURSOR_CLOSED_ERRORS: CursorNotFound, QueryPlanKilled, CursorKilled, older servers' roll-over codes,
# CappedPositionLost)
_CURSOR_CLOSED_ERRORS = frozenset({43, 175, 237, 28617, 17406, 96, 136})


class Cursor(CursorProtocol):
    """A pymongo-like cursor; the query runs through the planner on first iteration."""

    def __init__(self, collection: EmbeddedCollection, filter_: dict, projection: Any, skip: int, limit: int,
                 sort: list | None, batch_size: int = 0, hint: Any = None, let: dict | None = None) -> None:
        self.collection = self._collection = collection
        from ..pipeline.expression.match_expr import let_variables
        self._let = let_variables(let)  # $$name variables for $expr in the filter (match.py)
        self._filter = client_value(filter_)
        self._projection = projection
        if not isinstance(skip, int) or isinstance(skip, bool):
            raise TypeError("skip must be an instance of int")
        if not isinstance(limit, int) or isinstance(limit, bool):
            raise TypeError("limit must be an instance of int")
        if skip < 0:
            raise ValueError("skip must be >= 0")
        self._skip = skip
        self._limit = limit
        self._sort = _check_sort(sort) if sort else None
        self._hint = hint
        self._batch_size = batch_size
        self._results: list | None = None
        self._i = 0
        self._killed = False
        self._max_time_ms = None

    def _check_okay_to_chain(self) -> None:
        if self._results is not None:
            from pymongo.errors import InvalidOperation
            raise InvalidOperation("cannot set options after executing query")

    def _query(self, bounds: bool = True) -> Query:
        """The query this cursor runs; ``bounds``: with its ``min`` / ``max`` / ``returnKey`` / ``showRecordId``
        (pymongo's ``Cursor.distinct`` sends none of them)."""
        lim = self._limit
        sort, hint = _natural(self._sort, self._hint)
        q = Query(self._filter, sort, self._projection, self._skip, abs(lim) if lim else 0, hint,
                  self._batch_size, let=self._let,
                  allow_disk_use=getattr(self, "_allow_disk_use", None))
        return_key, show_record_id = self.__dict__.get("_lab_flags", (None, None))
        if bounds and (self._lab_min or self._lab_max or return_key or show_record_id):
            ts = getattr(self.collection, "_ts_state", None)
            if ts is not None and ts() is not None:  # a time-series find runs as an aggregation
                refuse_min_max_as_aggregation(self._lab_min, self._lab_max, return_key, show_record_id)
            set_min_max(q, self._lab_min, self._lab_max)
        if bounds:
            coll = self.collection
            set_find_flags(q, coll._store, return_key, show_record_id, lambda p: coll._projector(p, self._filter))
        return q

    _lab_min: Any = None  # find's ``min`` / ``max`` as given (find(min=...), Cursor.min())
    _lab_max: Any = None
    _lab_served = False   # a cursor the served engine runs for a find command (no driver-side checks)

    def _driver_checks(self) -> None:
        """What pymongo refuses before it sends the find (no command, no event): min/max without a hint."""
        if (self._lab_min or self._lab_max) and not self._hint and not self._lab_served:
            from pymongo.errors import InvalidOperation
            raise InvalidOperation("Passing a 'hint' is required when using the min/max query option to ensure "
                                   "the query utilizes the correct index")

    def _execute(self) -> None:
        if self._query_flags & _TAILABLE_FLAGS:
            return self._open_tail()
        coll = self.collection
        op = current_op()
        if op is not None and self._max_time_ms:
            op.set_max_time(self._max_time_ms)
        with no_gc():
            q = self._query()
            project = None if q.return_key else coll._projector(self._projection, self._filter)
            ex = coll._run(q)
            docs = []
            st = coll._store
            if q.return_key:  # RETURN_KEY made each result (its key document): no projection
                plain = coll._projector(None)
                docs = [plain(doc) for _, doc, _ in ex.results]
            for rid, doc, key in () if q.return_key else ex.results:
                if doc is None:
                    doc = st.docs.get(rid)
                    if doc is None:
                        continue
                out = project(doc)
                if q.show_record_id and "$recordId" not in (self._projection or ()):
                    out["$recordId"] = Int64(rid)  # the {$meta: "recordId"} field the server appends
                docs.append(out)
                if not len(docs) & 1023:
                    check_deadline()
        self._results = docs
        self._i = 0

    # iteration ----------------------------------------------------------------------------------
    def __iter__(self):
        return self

    _lab_more = -1  # where the next getMore batch starts (monitoring.py sets it when someone listens)

    def __next__(self) -> dict:
        if self._results is None:
            self._driver_checks()
            self._execute()
        if self._killed:
            raise StopIteration
        if self._i >= len(self._results):
            if self._tail is None or not self._tail_refresh():
                raise StopIteration
        if self._i == self._lab_more:
            from ..stats.monitoring import get_more
            get_more(self)
        d = self._results[self._i]
        self._i += 1
        return d

    next = __next__

    def close(self) -> None:
        if self._lab_more != -1 and not self._killed:  # an open server cursor: the driver sends killCursors
            from ..stats.monitoring import kill_cursor
            kill_cursor(self)
        elif self._tail is not None and not self._killed:  # an open tailable cursor, the same when listened to
            from ..service.boundary import client_of
            if client_of(self).__dict__.get("_lab_listeners"):
                from ..stats.monitoring import kill_cursor
                self._lab_cursor_id = self.cursor_id
                kill_cursor(self)
        self._killed = True
        self._tail = None

    @property
    def alive(self) -> bool:
        if self._killed:
            return False
        if self._results is not None and self._i < len(self._results):
            return True
        return self._results is None or self._tail is not None  # a tailable cursor stays alive while open

    # tailable cursors (capped.py ``Tail``) -----------------------------------------------------------
    _tail = None          # the open tailable scan; None before the query ran and once the cursor closed
    _tail_first = None    # the find command's batchSize when it came over the wire (0: an empty first batch)
    _tail_seen = 0        # documents returned by earlier batches (``retrieved``)
    _max_await_ms = None

    def _open_tail(self) -> None:
        """Run a tailable find: the options' checks, the first batch, and the cursor kept open unless the
        collection is empty or missing (capped.py)."""
        from .capped import AWAIT_DATA, TAILABLE, Tail, check_tailable_options, is_capped
        flags = self._query_flags
        lim = self._limit
        check_tailable_options(bool(flags & TAILABLE), bool(flags & AWAIT_DATA), self._sort, lim < 0)
        coll = self.collection
        st = coll._db_store._collections.get(coll.name)  # a view's cursor is a ViewCursor (views.py: 168)
        if st is not None and st.is_created and not is_capped(st):
            raise OperationFailure("error processing query: tailable cursor requested on non capped collection", 2)
        let = self._let
        match = fast_matcher(self._filter, _collation(), let)
        tail = Tail(coll._db_store, coll.name, coll._ns(), match, coll._projector(self._projection, self._filter),
                    self._skip, abs(lim))
        first = self._tail_first
        if first is None:
            first = self._batch_size or 101
        docs = tail.next_batch(first, getmore=False) if first else []
        self._results = docs
        self._i = 0
        self._tail = tail if tail.keep_open() else None

    def _tail_fetch(self, n: int) -> tuple[list, Any]:
        """The new documents of the tailable cursor (under the engine's lock), and when there are none on an
        awaitData cursor the mark to wait past (``Oplog.wait_pulse``), else None. A lost position or a dropped
        collection kills the cursor and raises the server's error."""
        tail = self._tail
        if tail is None:  # killed while a getMore waited
            return [], None
        try:
            docs = tail.next_batch(n or self._batch_size)
        except OperationFailure:
            self._tail = None
            self._killed = True
            raise
        mark = None
        if not docs and self._query_flags & 32 and tail.log is not None:
            mark = tail.mark()
        return docs, mark

    def _tail_get_more(self, n: int = 0, wait: bool = False) -> tuple[list, Any]:
        """One getMore on the tailable cursor (an operation of the boundary: monitoring and the profiler see
        one getMore). ``wait`` (in-process iteration): an awaitData getMore with nothing new waits up to
        ``max_await_time_ms`` (the server's 1 second when not given) for an insert its filter matches, with the
        engine's lock released meanwhile (the served engine waits in the wire server instead: ``wait`` False
        returns the mark)."""
        docs, mark = self._tail_fetch(n)
        if not wait or docs or mark is None:
            return docs, mark
        from ..pipeline.change_stream import DEFAULT_AWAIT_S
        from ..repl.oplog import wait_for
        from ..service.boundary import lock_for_store, unlocked
        log = self._tail.log
        lock = lock_for_store(self.collection.database.client._store)

        def attempt() -> Any:
            nonlocal docs
            with lock:
                docs, again = self._tail_fetch(n)
            return None if docs or again is None else functools.partial(log.wait_pulse, again)

        ms = self._max_await_ms
        with unlocked(lock):
            wait_for(functools.partial(log.wait_pulse, mark), DEFAULT_AWAIT_S if ms is None else ms / 1000.0,
                     attempt)
        return docs, None

    def _tail_refresh(self) -> bool:
        """pymongo's ``_refresh`` for a tailable cursor: one getMore (waiting on an awaitData cursor). pymongo
        ends a tailable cursor quietly when the getMore reports it closed (CappedPositionLost, QueryPlanKilled
        ...: "the capped collection rolled over"); ``alive`` is then False."""
        self._tail_seen += len(self._results)
        self._results, self._i = [], 0
        try:
            docs, _ = self._tail_get_more(0, True)
        except OperationFailure as e:
            if e.code in _CURSOR_CLOSED_ERRORS:
                return False
            raise
        self._results = docs
        return bool(docs)

    def rewind(self) -> "Cursor":
        self._lab_more = -1
        self._results = None
        self._i = 0
        self._killed = False
        self._tail = None
        self._tail_seen = 0
        return self

    def clone(self) -> "Cursor":
        c = Cursor(self.collection, self._filter, self._projection, self._skip, self._limit, self._sort,
                   self._batch_size, self._hint)
        c._let = self._let
        c._max_time_ms = self._max_time_ms
        for attr in ("_comment", "_lab_let_doc", "_allow_disk_use", "_lab_min", "_lab_max", "_lab_served",
                     "_lab_flags"):
            if attr in self.__dict__:
                setattr(c, attr, self.__dict__[attr])
        c._query_flags = self._query_flags
        c._max_await_ms = self._max_await_ms
        return c

    __copy__ = clone

    # modifiers ----------------------------------------------------------------------------------
    def sort(self, key_or_list, direction=None) -> "Cursor":
        self._check_okay_to_chain()
        s = _sort_list(key_or_list, direction)
        if not s:
            raise ValueError("key_or_list must not be the empty list")
        self._sort = _check_sort(s)
        return self

    def skip(self, skip: int) -> "Cursor":
        self._check_okay_to_chain()
        if not isinstance(skip, int) or isinstance(skip, bool):
            raise TypeError("skip must be an instance of int")
        if skip < 0:
            raise ValueError("skip must be >= 0")
        self._skip = skip
        return self

    def limit(self, limit: int) -> "Cursor":
        self._check_okay_to_chain()
        if not isinstance(limit, int) or isinstance(limit, bool):
            raise TypeError("limit must be an instance of int")
        self._limit = limit
        return self

    def hint(self, index) -> "Cursor":
        self._check_okay_to_chain()
        if isinstance(index, (list, tuple)):
            index = _sort_list(index)
        self._hint = index
        return self

    def batch_size(self, n: int) -> "Cursor":
        if not isinstance(n, int) or isinstance(n, bool):
            raise TypeError("batch_size must be an integer")
        if n < 0:
            raise ValueError("batch_size must be >= 0")
        self._check_okay_to_chain()
        self._batch_size = n
        return self

    def max_time_ms(self, ms) -> "Cursor":
        """maxTimeMS for this query: MaxTimeMSExpired (50) when the run takes longer (boundary.py)."""
        if ms is not None and (not isinstance(ms, int) or isinstance(ms, bool)):
            raise TypeError("max_time_ms must be an integer or None")
        self._check_okay_to_chain()
        self._max_time_ms = ms
        return self

    def allow_disk_use(self, allow: bool) -> "Cursor":
        if not isinstance(allow, bool):
            raise TypeError("allow_disk_use must be a bool")
        self._allow_disk_use = allow  # blocking SORT memory rule (stages.SortMemory)
        return self

    def comment(self, comment) -> "Cursor":
        self._check_okay_to_chain()
        self._comment = comment
        return self

    _query_flags = 0
    _comment = None

    def add_option(self, mask: int) -> "Cursor":
        """pymongo's query flags: no-timeout (16), partial (128), oplog-replay (8) and secondary-ok (4) change
        nothing on a one-member replica set; tailable (2) and await-data (32) make a tailable cursor (capped.py);
        exhaust (64) is not modelled."""
        if not isinstance(mask, int):
            raise TypeError("mask must be an int, not %s" % type(mask))
        self._check_okay_to_chain()
        if mask & 64:
            raise unsupported("Exhaust cursors (Cursor.add_option(%d))" % mask)
        self._query_flags |= mask
        return self

    def remove_option(self, mask: int) -> "Cursor":
        """Unset query flags (see ``add_option``)."""
        if not isinstance(mask, int):
            raise TypeError("mask must be an int, not %s" % type(mask))
        self._check_okay_to_chain()
        self._query_flags &= ~mask
        return self

    def max_scan(self, max_scan) -> "Cursor":
        """pymongo sends it as the find command's ``maxScan``, which MongoDB 4.2 removed: the server refuses the
        unknown field when the query runs (40415)."""
        self._check_okay_to_chain()
        raise OperationFailure("BSON field 'FindCommandRequest.maxScan' is an unknown field.", 40415)

    def max_await_time_ms(self, ms) -> "Cursor":
        """How long an awaitData getMore waits for an insert; pymongo keeps it for tailable cursors only and
        ignores it otherwise."""
        if not isinstance(ms, int) and ms is not None:
            raise TypeError("max_await_time_ms must be an integer or None, not %s" % type(ms))
        self._check_okay_to_chain()
        if self._query_flags & 34:
            self._max_await_ms = ms
        return self

    @property
    def retrieved(self) -> int:
        """Documents received in the batches so far: the first batch holds ``batch_size`` documents (101 by
        default), each later one ``batch_size`` (all the rest by default), as the server sends them."""
        if self._results is None:
            return 0
        if self._query_flags & _TAILABLE_FLAGS:
            return self._tail_seen + len(self._results)
        total, i, bs = len(self._results), self._i, self._batch_size
        first = min(total, bs or 101)
        if i <= first or total == first:
            return first
        if not bs:
            return total
        return min(total, first + -(-(i - first) // bs) * bs)

    @property
    def cursor_id(self) -> int | None:
        """None before the query ran; 0 once the server would have closed the cursor (every document sent
        or the cursor closed); otherwise a cursor id."""
        if self._results is None:
            return None
        if self._query_flags & _TAILABLE_FLAGS:
            return (id(self) & 0x7FFFFFFFFFFF) or 1 if self._tail is not None and not self._killed else 0
        if self._killed or self.retrieved >= len(self._results) or self._limit < 0:
            return 0
        return (id(self) & 0x7FFFFFFFFFFF) or 1

    @property
    def session(self):
        """The explicit session the cursor runs in (``find(session=...)``), else None."""
        return getattr(self, "_session", None)

    def collation(self, collation) -> "Cursor":
        if collation:
            raise unsupported("Cursor.collation()")
        return self

    def where(self, code) -> "Cursor":
        raise unsupported("$where / Cursor.where()", "$expr with aggregation expressions")

    def max(self, spec) -> "Cursor":
        """The exclusive upper bound of the hinted index's keys (pymongo: a list of (field, value) pairs)."""
        return self._index_bound("_lab_max", spec)

    def min(self, spec) -> "Cursor":
        """The inclusive lower bound of the hinted index's keys (pymongo: a list of (field, value) pairs)."""
        return self._index_bound("_lab_min", spec)

    def _index_bound(self, attr: str, spec: Any) -> "Cursor":
        """Cursor.min / Cursor.max: pymongo's type check, then the bound kept as a document."""
        if not isinstance(spec, (list, tuple)):
            raise TypeError("spec must be an instance of list or tuple, not %s" % type(spec))
        self._check_okay_to_chain()
        setattr(self, attr, dict(spec))
        return self

    def distinct(self, key: str) -> list:
        q = self._query(bounds=False)  # pymongo's Cursor.distinct sends no min/max
        ex = self.collection._run(q)
        st = self.collection._store
        return distinct_values((m[1] if m[1] is not None else st.docs[m[0]] for m in ex.results), key)

    def explain(self, verbosity: str = "allPlansExecution") -> dict:
        cmd: dict[str, Any] = {"find": self.collection.name, "filter": self._filter}
        if self._sort:
            cmd["sort"] = dict(self._sort)
        if self._projection:
            cmd["projection"] = self._projection
        if self._skip:
            cmd["skip"] = self._skip
        if self._limit:
            cmd["limit"] = abs(self._limit)
            if self._limit < 0:
                cmd["singleBatch"] = True
        if self._hint is not None:
            cmd["hint"] = dict(self._hint) if isinstance(self._hint, list) else self._hint
        for key in ("min", "max"):
            if self.__dict__.get("_lab_" + key):
                cmd[key] = self.__dict__["_lab_" + key]
        for key, flag in zip(("returnKey", "showRecordId"), self.__dict__.get("_lab_flags", (None, None))):
            if flag is not None:
                cmd[key] = flag
        return self.collection.explain_find(self._query(), verbosity, cmd)

    def __getitem__(self, index):
        if isinstance(index, slice):
            if index.step is not None:
                raise IndexError("Cursor instances do not support slice steps")
            start = index.start or 0
            c = self.clone()
            c._skip = self._skip + start
            if index.stop is not None:
                if index.stop - start <= 0:
                    c._results = []  # an empty slice: nothing to run
                    return c
                c._limit = index.stop - start
            return c
        c = self.clone()
        c._skip = self._skip + index
        c._limit = -1
        for d in c:
            return d
        raise IndexError("no such item for Cursor instance")

    @property
    def address(self):
        return ("embedded", 0)


class CommandCursor(CursorProtocol):
    """pymongo's ``CommandCursor`` over a command's computed result (aggregate, listIndexes, listCollections,
    listDatabases): the first batch holds ``batchSize`` documents (101 by default), the server cursor is
    closed (``cursor_id`` 0, ``alive`` false) once every document was handed out."""

    def __init__(self, docs: Iterable, session: Any = None, batch_size: int = 0) -> None:
        self._docs = list(docs)
        self._i = 0
        self._killed = False
        self._session = session
        self._batch_size = batch_size

    @property
    def address(self):
        return ("embedded", 0)

    @property
    def session(self):
        """The explicit session the command ran in, else None."""
        return self._session

    @property
    def alive(self) -> bool:
        return not self._killed and self._i < len(self._docs)

    @property
    def cursor_id(self) -> int:
        if self._killed or self._i >= len(self._docs) or len(self._docs) <= (self._batch_size or 101):
            return 0
        return (id(self) & 0x7FFFFFFFFFFF) or 1

    def batch_size(self, batch_size: int) -> "CommandCursor":
        """The size of later batches (pymongo's argument checks)."""
        if not isinstance(batch_size, int) or isinstance(batch_size, bool):
            raise TypeError("batch_size must be an integer, not %s" % type(batch_size))
        if batch_size < 0:
            raise ValueError("batch_size must be >= 0")
        self._batch_size = batch_size
        return self

    def close(self) -> None:
        self._killed = True

    def __iter__(self):
        return self

    def __next__(self) -> Any:
        if self._killed or self._i >= len(self._docs):
            raise StopIteration
        d = self._docs[self._i]
        self._i += 1
        return d

    next = __next__

    def try_next(self) -> Any:
        """The next document, or None when there is none (the cursor is not tailable)."""
        try:
            return self.__next__()
        except StopIteration:
            return None


# transactions (sessions.py) and the profiler (profiler.py) write through the plain collection's storage
# primitives; they sit below this module and find the class in the engine's registry (hooks.py)
hooks.register("collection_class", EmbeddedCollection)
