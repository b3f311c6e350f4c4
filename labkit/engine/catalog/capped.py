"""Capped collections on the embedded engine (MongoDB 8.0 rules).

Sources: manual "Capped Collections" and ``create``; server ``src/mongo/db/commands/create.cpp`` (the size/capped
checks), ``src/mongo/db/catalog/collection_options.cpp`` (``checkAndAdjustCappedSize`` /
``checkAndAdjustCappedMaxDocs``), the WiredTiger record store ("object to insert exceeds cappedMaxSize");
jstests/core/capped/ (capped_max1.js, capped_large_docs.js, capped_update.js, capped_resize.js).

* ``create_collection(name, capped=True, size=N[, max=M])``: ``size`` is required (InvalidOptions 72), ``size``/``max``
  need ``capped`` (72), ``size`` must be >= 1 and at most 1 PB (51024); since 6.2 the size is no longer rounded up to
  a multiple of 256 (featureFlagCappedCollectionsRelaxedSize, SERVER-67246); ``max`` <= 0 means "no document limit"
  (stored as 2^31-1), ``max`` >= 2^31 is BadValue.
* After every insert the oldest documents (natural order = insertion order) are removed until the collection's
  BSON data size is at most ``size`` and its count at most ``max``; one document larger than ``size`` is refused
  (BadValue 2, "object to insert exceeds cappedMaxSize").
* Updates may change a document's size (SERVER-58865, 5.0+) and deletes are allowed (SERVER-63201, 5.0.7+); the
  next insert trims the collection again, as on the server.
* ``collStats``: ``capped: true``, ``max``, ``maxSize``; ``options()``/``listCollections``: ``capped``, ``size``,
  ``max``; ``collMod`` ``cappedSize``/``cappedMax`` (6.0+); ``convertToCapped`` and ``cloneCollectionAsCapped``.
* Tailable cursors (manual "Tailable Cursors"; jstests/core/tailable_skip_limit.js, tailable_cursor_invalidation.js,
  captrunc_cursor_invalidation.js, awaitdata_getmore_cmd.js; src/mongo/db/query/query_request_helper.cpp,
  tailable_mode.cpp, find.cpp ``shouldSaveCursor``, requires_collection_stage.cpp, collection_scan.cpp): ``Tail``
  below is the collection scan that stays open at the end of the collection. It returns the matching documents in
  natural order, remembers the last record it scanned and later returns only records inserted after it; the
  cursor stays open after the first batch unless the collection is empty or does not exist; when that last record
  is gone (trimmed or deleted) the next getMore fails with CappedPositionLost (136), when the collection was
  dropped or renamed with QueryPlanKilled (175). An insert into the collection wakes an awaitData getMore
  (``Oplog.pulse``, repl/oplog.py). Not modelled: capped writes in transactions are not refused.
"""
from __future__ import annotations

from typing import Any

import bson
from mongomock import OperationFailure, WriteError

KB = 1024
PB = KB ** 5
MAX_DOCS_UNLIMITED = 0x7FFFFFFF
CAPPED_KEYS = ("capped", "size", "max")


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float, bson.Int64, bson.Decimal128)) and not isinstance(v, bool)


def _num(v: Any) -> int:
    return int(v.to_decimal()) if isinstance(v, bson.Decimal128) else int(v)


def _type_check(field: str, v: Any) -> None:
    if v is not None and not _is_number(v):
        from ..update.update_ops import type_name
        raise OperationFailure("BSON field 'create.%s' is the wrong type '%s', expected types '[long, int, decimal, "
                               "double]'" % (field, type_name(v)), 14)


def parse_create(opts: dict) -> dict | None:
    """Pop ``capped``/``size``/``max`` from ``create`` options and return the stored options (None when the
    collection is not capped). Raises the server's errors (create.cpp, collection_options.cpp)."""
    capped = opts.pop("capped", None)
    size = opts.pop("size", None)
    mx = opts.pop("max", None)
    if capped is not None and not isinstance(capped, bool) and not _is_number(capped):
        from ..update.update_ops import type_name
        raise OperationFailure("BSON field 'create.capped' is the wrong type '%s', expected types '[bool, long, int, "
                               "decimal, double]'" % type_name(capped), 14)
    _type_check("size", size)
    _type_check("max", mx)
    is_capped = bool(capped)
    clustered = "clusteredIndex" in opts
    if not clustered:
        if is_capped and not size:
            raise OperationFailure("the 'size' field is required when 'capped' is true", 72)
        if (size or mx) and not is_capped:
            raise OperationFailure("the 'capped' field needs to be true when either the 'size' or 'max' fields are "
                                   "present", 72)
    if not is_capped:
        return None
    if clustered:
        from ..base.errors import unsupported
        raise unsupported("A clustered capped collection")
    n = _num(size)
    if n < 1:
        raise OperationFailure("BSON field 'size' value must be >= 1, actual value '%d'" % n, 51024)
    if n > PB:
        raise OperationFailure("BSON field 'size' value must be <= %d, actual value '%d'" % (PB, n), 51024)
    out: dict[str, Any] = {"capped": True, "size": n}
    if mx is not None and mx != 0:
        out["max"] = check_max(_num(mx))
    return out


def check_max(m: int) -> int:
    """``checkAndAdjustCappedMaxDocs``: >= 2^31 is BadValue; <= 0 means no document limit (2^31-1)."""
    if m >= 1 << 31:
        raise OperationFailure("max in a capped collection has to be < 2^31 or not set", 2)
    return MAX_DOCS_UNLIMITED if m <= 0 else m


def is_capped(st: Any) -> bool:
    return bool(st.options.get("capped"))


def check_insert(st: Any, doc: dict) -> None:
    """Refuse a document larger than the collection's ``size`` (WiredTiger: BadValue)."""
    if len(bson.encode(doc)) > st.options["size"]:
        msg = "object to insert exceeds cappedMaxSize"
        raise WriteError(msg, 2, {"index": 0, "code": 2, "codeName": "BadValue", "errmsg": msg})


class CappedDocs(dict):
    """A capped collection's record store (record id -> document) that keeps the documents' total BSON size as
    they are stored, replaced and removed, so trimming after an insert costs the documents it removes, not a pass
    over all of them (the server keeps the record store's data size the same way: ``dataSize`` in
    ``cappedDeleteUntilBelowConfiguredMaximum``). Documents are never changed in place (the engine replaces
    them), so a size is computed once per stored version."""

    __slots__ = ("sizes", "total")

    def __init__(self, items: Any = ()) -> None:
        super().__init__(items)
        self.sizes = {rid: len(bson.encode(d)) for rid, d in dict.items(self)}
        self.total = sum(self.sizes.values())

    def __setitem__(self, rid: int, doc: dict) -> None:
        n = len(bson.encode(doc))
        self.total += n - self.sizes.get(rid, 0)
        self.sizes[rid] = n
        dict.__setitem__(self, rid, doc)

    def __delitem__(self, rid: int) -> None:
        dict.__delitem__(self, rid)
        self.total -= self.sizes.pop(rid)

    def pop(self, rid: int, *default: Any) -> Any:  # type: ignore[override]
        if rid in self:
            self.total -= self.sizes.pop(rid)
        return dict.pop(self, rid, *default)

    def popitem(self) -> tuple:
        rid, doc = dict.popitem(self)
        self.total -= self.sizes.pop(rid)
        return rid, doc

    def setdefault(self, rid: int, doc: Any = None) -> Any:
        if rid not in self:
            self[rid] = doc
        return dict.__getitem__(self, rid)

    def update(self, *args: Any, **kwargs: Any) -> None:  # type: ignore[override]
        for rid, doc in dict(*args, **kwargs).items():
            self[rid] = doc

    def clear(self) -> None:
        dict.clear(self)
        self.sizes.clear()
        self.total = 0


def capped_docs(st: Any) -> CappedDocs:
    """The store's documents as a ``CappedDocs`` (made once, and again after something replaced the map: a drop, a
    rollback of the history)."""
    docs = st.docs
    if type(docs) is not CappedDocs:
        docs = st.docs = CappedDocs(docs)
    return docs


def trim(st: Any) -> int:
    """Remove the oldest documents until the data size is <= ``size`` and the count <= ``max`` (the server's
    ``cappedDeleteUntilBelowConfiguredMaximum``); returns how many were removed."""
    opts = st.options
    limit = opts["size"]
    max_docs = opts.get("max", MAX_DOCS_UNLIMITED)
    docs = capped_docs(st)
    removed = 0
    while docs and (docs.total > limit or len(docs) > max_docs):
        remove_record(st, next(iter(docs)))
        removed += 1
    return removed


def remove_record(st: Any, rid: int) -> None:
    """Remove one record and its index entries from the store (capped deletes, TTL-style passes)."""
    from .store import store_key
    if st.rec is not None:
        st.rec.note(st, rid, st.docs[rid], None)
    doc = st.docs.pop(rid)
    sk = store_key(doc["_id"])
    st.rid_by_key.pop(sk, None)
    for ix in st.ix.values():
        keys, _ = ix.keys_for(doc)
        ix.remove(keys, rid)
    st.version += 1


def after_insert(st: Any) -> None:
    """Hook for the engine's insert paths: trim a capped collection (and wake the awaitData getMores of its
    tailable cursors); keep a clustered one in ``_id`` order."""
    opts = st.options
    if opts.get("capped"):
        trim(st)
        log = st.__dict__.get("_lab_tail_log")  # set once a tailable cursor was opened on this collection
        if log is not None:
            log.pulse()
    elif "clusteredIndex" in opts:
        from .clustered import after_insert as keep_order
        keep_order(st)


def stats_fields(st: Any, scale: int = 1) -> dict:
    """collStats fields of a capped collection (jstests/core/capped/capped_max1.js: ``max``, ``maxSize``
    scaled)."""
    opts = st.options
    if not opts.get("capped"):
        return {"capped": False}
    out: dict[str, Any] = {"capped": True, "max": opts.get("max", 0), "maxSize": opts["size"] // scale}
    return out


def collmod(coll: Any, cmd: dict) -> dict:
    """``collMod`` ``cappedSize`` / ``cappedMax`` (manual "Change the Size of a Capped Collection", 6.0+):
    a smaller limit removes the excess on the next insert."""
    st = coll._store
    if not is_capped(st):
        raise OperationFailure("Collection '%s' must be capped." % coll._ns(), 72)
    if "cappedSize" in cmd:
        n = cmd["cappedSize"]
        if not _is_number(n) or _num(n) <= 0 or _num(n) > PB:
            raise OperationFailure("BSON field 'cappedSize' value must be > 0 and <= 1 PB", 51024)
        st.options["size"] = _num(n)
    if "cappedMax" in cmd:
        m = cmd["cappedMax"]
        if not _is_number(m):
            raise OperationFailure("BSON field 'collMod.cappedMax' is the wrong type", 14)
        m = check_max(_num(m))
        st.options["max"] = m
    return {}


def convert_to_capped(db: Any, name: str, size: Any, target: str | None = None) -> None:
    """``convertToCapped`` (target None: the collection itself) / ``cloneCollectionAsCapped`` (into ``target``):
    the documents in natural order are copied into a capped collection of ``size`` bytes, oldest trimmed."""
    src = db.get_collection(name)
    if not src._store.is_created:
        raise OperationFailure("source collection %s.%s does not exist" % (db.name, name), 26)
    if src._store.options.get("viewOn"):
        raise OperationFailure("Namespace %s.%s is a view, not a collection" % (db.name, name), 166)
    if not _is_number(size):
        raise OperationFailure("BSON field 'size' is missing or not a number", 14)
    opts = parse_create({"capped": True, "size": size})
    docs = [dict(d) for d in src._store.docs.values()]
    if target is None:
        src.drop()
        dst = db.create_collection(name, **opts)
    else:
        if db.get_collection(target)._store.is_created:
            raise OperationFailure("Collection %s.%s already exists." % (db.name, target), 48)
        dst = db.create_collection(target, **opts)
    # convertToCapped keeps only the _id index (manual "convertToCapped"); documents larger than the cap are
    # left out, the rest trimmed oldest-first as they arrive
    for d in docs:
        if len(bson.encode(d)) <= opts["size"]:
            dst._insert_one_doc(d)


# ---------------------------------------------------------------------------------------------- tailable cursors
TAILABLE, AWAIT_DATA = 2, 32  # the query flags (pymongo's CursorType.TAILABLE / TAILABLE_AWAIT = 2 | 32)
BATCH_BYTES = 16 * 1024 * 1024  # a batch stops once it passes the 16 MiB reply size (as the find layer's batches)
QUERY_PLAN_KILLED = 175
CAPPED_POSITION_LOST = 136


def check_tailable_options(tailable: bool, await_data: bool, sort: Any, single_batch: bool) -> None:
    """The find command's checks of ``tailable`` / ``awaitData`` (tailable_mode.cpp,
    query_request_helper.cpp ``validateFindCommandRequest``), made before the collection is looked at."""
    if await_data and not tailable:
        raise OperationFailure("Cannot set 'awaitData' without also setting 'tailable'", 9)
    if not tailable:
        return
    if sort and list(sort) != [("$natural", 1)]:
        raise OperationFailure("cannot use tailable option with a sort other than {$natural: 1}", 2)
    if single_batch:
        raise OperationFailure("cannot use tailable option with the 'singleBatch' option", 2)


class Tail:
    """A tailable cursor's collection scan over a capped collection (the server's CollectionScan with
    ``tailable``): it stays open at the end of the collection and later returns only the records inserted after
    the last one it scanned, in natural (insertion) order. Record ids grow with insertion order, so the records
    after ``last`` are found from the end of the collection without scanning what was already read.

    ``match``/``project``: the compiled filter and projection; ``skip``/``limit`` apply to the whole cursor, as
    on the server (jstests/core/tailable_skip_limit.js): a reached limit ends the results for good."""

    def __init__(self, db_store: Any, name: str, ns: str, match: Any, project: Any, skip: int, limit: int) -> None:
        st = db_store[name]
        self.db_store = db_store
        self.name = name
        self.ns = ns
        self.st = st
        self.incarnation = st.incarnation
        self.uuid = st.uuid  # a drop gives the store a new UUID: the error names the dropped one
        self.match = match
        self.project = project
        self.skip = skip
        self.left = limit or -1  # documents the limit still allows (-1: no limit)
        self.last = 0            # record id of the last record scanned (0: none yet)
        self.log = db_store.oplog
        if self.log is not None:
            st.__dict__["_lab_tail_log"] = self.log  # inserts into this collection now wake waiting getMores

    def keep_open(self) -> bool:
        """Whether the cursor is kept after its first batch: only when the collection has records (find.cpp
        ``shouldSaveCursor``: "we do not keep a cursor if the collection has zero records", SERVER-13955)."""
        return bool(self.st.docs) and self.st.is_created

    def mark(self) -> int:
        """The capped-insert count now (read under the engine's lock): ``Oplog.wait_pulse`` waits past it."""
        return self.log.pulses if self.log is not None else 0

    def _check(self) -> None:
        st = self.st
        if self.db_store._collections.get(self.name) is not st or st.incarnation != self.incarnation:
            if st.name != self.name and self.db_store._collections.get(st.name) is st:
                msg = "collection renamed from '%s' to '%s.%s'. UUID %s" % (
                    self.ns, self.ns.split(".", 1)[0], st.name, _uuid_text(self.uuid))
            else:
                msg = "collection dropped. UUID %s" % _uuid_text(self.uuid)
            raise OperationFailure("Executor error during getMore :: caused by :: " + msg, QUERY_PLAN_KILLED)
        if self.last and self.last not in st.docs:
            raise OperationFailure("Executor error during getMore :: caused by :: CollectionScan died due to "
                                   "position in capped collection being deleted. Last seen record id: "
                                   "RecordId(%d)" % self.last, CAPPED_POSITION_LOST)

    def next_batch(self, n: int, getmore: bool = True) -> list:
        """Up to ``n`` matching documents (0: no count limit) after the last record scanned, stopping once
        the batch passes 16 MiB. A getMore first checks that the cursor's position still exists."""
        if getmore:
            self._check()
        docs = self.st.docs
        if not docs:
            return []
        after = []
        last = self.last
        for rid in reversed(docs):
            if rid <= last:
                break
            after.append(rid)
        out: list = []
        size = 0
        for rid in reversed(after):
            if (n and len(out) >= n) or self.left == 0:
                break
            doc = docs[rid]
            if not self.match(doc):
                self.last = rid
                continue
            if self.skip:
                self.skip -= 1
                self.last = rid
                continue
            d = self.project(doc)
            ln = len(bson.encode(d))
            if out and size + ln > BATCH_BYTES:
                break
            self.last = rid
            size += ln
            out.append(d)
            if self.left > 0:
                self.left -= 1
        return out


def _uuid_text(u: Any) -> str:
    import uuid as _uuid
    try:
        return str(_uuid.UUID(bytes=bytes(u)))
    except (TypeError, ValueError):
        return str(u)


from ..base import hooks  # noqa: E402

hooks.register("capped_stats_fields", stats_fields)  # collStats (stats.py, a lower layer) asks through hooks.py
