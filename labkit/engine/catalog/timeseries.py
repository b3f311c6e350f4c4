"""Time-series collections on the embedded engine (MongoDB 8.0 behaviour, documented in docs/embedded-engine.md).

A time-series collection ``name`` is a view-like namespace over a real buckets collection
``system.buckets.<name>``. Inserts go through a bucket catalog modelled on the server's
(src/mongo/db/timeseries/bucket_catalog/): one open bucket per meta value; a measurement that does not fit
closes (or, when its time goes backward, archives) the open bucket, with the server's reasons and counters:

* time rounding: a bucket's ``control.min.<timeField>`` is the first measurement's time rounded down to
  ``bucketRoundingSeconds`` (granularity seconds/minutes/hours: 60 / 3,600 / 86,400 s);
* max span: a measurement at or after ``min + bucketMaxSpanSeconds`` (3,600 / 86,400 / 2,592,000 s) closes the
  bucket ("time forward"); one before ``min`` archives it ("time backward", 8.0 archives instead of closing);
* at most 1,000 measurements (``timeseriesBucketMaxCount``) and 125 KiB (``timeseriesBucketMaxSize``; a bucket
  with fewer than 10 measurements, ``timeseriesBucketMinCount``, is kept open for large measurements);
* a measurement that fits an archived bucket of its meta value reopens it (``numBucketsReopened``).

Reads (find / aggregate / count / distinct) see the measurements, the meta field folded back in, unpacked from
the buckets (cached per buckets-collection version). Explain shows the server's pipeline shape: a ``$cursor``
over the buckets collection with the predicates rewritten onto ``meta`` and ``control.min/max``, then
``$_internalUnpackBucket``. Approximations: bucket ``data`` columns are stored uncompressed (8.0 stores
BSONColumn binaries), so bucket byte sizes are larger than a server's; classic (not SBE) explain shape.
"""
from __future__ import annotations

import datetime
import os
from typing import Any, Callable, Iterable, Mapping

import bson
from bson import ObjectId
from mongomock import OperationFailure, WriteError
from pymongo.results import DeleteResult, InsertManyResult, InsertOneResult

from ..bson import values as V
from ..bson import keys as K
from ..base.errors import errmsg_of

GRANULARITY = {"seconds": (3600, 60), "minutes": (86400, 3600), "hours": (2592000, 86400)}
MAX_SPAN_LIMIT = 31536000  # timeseries.idl: bucketMaxSpanSeconds / bucketRoundingSeconds in [1, 31536000]
BUCKET_MAX_COUNT = 1000  # timeseriesBucketMaxCount
BUCKET_MAX_SIZE = 125 * 1024  # timeseriesBucketMaxSize
BUCKET_MIN_COUNT = 10  # timeseriesBucketMinCount (kept open for large measurements below it)
INVALID_OPTIONS = 72
ALLOWED_WITH_TIMESERIES = {"timeseries", "expireAfterSeconds", "storageEngine", "indexOptionDefaults",
                           "collation", "validator", "validationLevel", "validationAction", "session",
                           "check_exists", "comment"}

STAT_KEYS = (
    "numBucketInserts", "numBucketUpdates", "numBucketsOpenedDueToMetadata", "numBucketsClosedDueToCount",
    "numBucketsClosedDueToSchemaChange", "numBucketsClosedDueToSize", "numBucketsClosedDueToTimeForward",
    "numBucketsClosedDueToMemoryThreshold", "numCommits", "numWaits", "numMeasurementsCommitted",
    "numBucketsClosedDueToReopening", "numBucketsArchivedDueToMemoryThreshold",
    "numBucketsArchivedDueToTimeBackward", "numBucketsReopened", "numBucketsKeptOpenDueToLargeMeasurements",
    "numBucketsClosedDueToCachePressure", "numBucketsFrozen", "numCompressedBucketsConvertedToUnsorted",
    "numBucketsFetched", "numBucketsQueried", "numBucketFetchesFailed", "numBucketQueriesFailed",
    "numDuplicateBucketsReopened", "numBucketDocumentsTooLargeInsert", "numBucketDocumentsTooLargeUpdate")


def _fail(msg: str, code: int = INVALID_OPTIONS) -> OperationFailure:
    return OperationFailure(msg, code)


# ---------------------------------------------------------------------------------------------- options
def validate_options(db, name: str, ts: Any, kwargs: Mapping) -> dict:
    """The ``timeseries`` options as ``listCollections`` shows them, or the server's error
    (src/mongo/db/commands/create_command.cpp, src/mongo/db/timeseries/timeseries_options.cpp)."""
    ns = "%s.%s" % (db.name, name)
    if not isinstance(ts, Mapping):
        raise _fail("BSON field 'create.timeseries' is the wrong type, expected type 'object'", 14)
    for k in kwargs:
        if k not in ALLOWED_WITH_TIMESERIES:
            raise _fail("%s: 'timeseries' is not allowed with '%s'" % (ns, k))
    known = {"timeField", "metaField", "granularity", "bucketMaxSpanSeconds", "bucketRoundingSeconds"}
    for k in ts:
        if k not in known:
            raise _fail("BSON field 'create.timeseries.%s' is an unknown field." % k, 40415)
    if "timeField" not in ts:
        raise _fail("BSON field 'create.timeseries.timeField' is missing but a required field", 40414)
    tf, mf = ts["timeField"], ts.get("metaField")
    if not isinstance(tf, str):
        raise _fail("BSON field 'create.timeseries.timeField' is the wrong type, expected type 'string'", 14)
    if "." in tf:
        raise _fail("%s: 'timeField' must be a top-level field and not contain a '.'" % ns)
    if mf is not None:
        if not isinstance(mf, str):
            raise _fail("BSON field 'create.timeseries.metaField' is the wrong type, expected type 'string'", 14)
        if mf == "_id":
            raise _fail("'metaField' cannot be \"_id\"")
        if mf == tf:
            raise _fail("'metaField' cannot be the same as 'timeField'")
        if "." in mf:
            raise _fail("%s: 'metaField' must be a top-level field and not contain a '.'" % ns)
    gran = ts.get("granularity")
    if gran is not None and gran not in GRANULARITY:
        raise _fail("Enumeration value '%s' for field 'create.timeseries.granularity' is not a valid value."
                    % gran, 2)
    span, rounding = ts.get("bucketMaxSpanSeconds"), ts.get("bucketRoundingSeconds")
    for field, v in (("bucketMaxSpanSeconds", span), ("bucketRoundingSeconds", rounding)):
        if v is not None:
            if isinstance(v, bool) or not isinstance(v, (int, float)) or int(v) != v:
                raise _fail("BSON field 'create.timeseries.%s' is the wrong type, expected type 'int'" % field, 14)
            if not 1 <= v <= MAX_SPAN_LIMIT:
                raise _fail("BSON field '%s' value must be >= 1 and <= %d, actual value '%s'"
                            % (field, MAX_SPAN_LIMIT, v), 51024)
    out: dict[str, Any] = {"timeField": tf}
    if mf is not None:
        out["metaField"] = mf
    if gran is not None:
        default_span = GRANULARITY[gran][0]
        if span is not None and span != default_span:
            raise _fail("Time-series 'bucketMaxSpanSeconds' cannot be set to a value other than the default "
                        "of %d for the provided granularity" % default_span)
        if rounding is not None:
            raise _fail("Time-series 'bucketRoundingSeconds' cannot be set alongside the granularity parameter")
        out["granularity"] = gran
        out["bucketMaxSpanSeconds"] = default_span
    elif span is not None or rounding is not None:
        if span != rounding:
            raise _fail("Time-series 'bucketRoundingSeconds' must be equal to 'bucketMaxSpanSeconds'")
        out["bucketRoundingSeconds"] = int(rounding)
        out["bucketMaxSpanSeconds"] = int(span)
    else:
        out["granularity"] = "seconds"
        out["bucketMaxSpanSeconds"] = GRANULARITY["seconds"][0]
    return out


def check_expire(v: Any) -> int:
    """``expireAfterSeconds`` of a create (a non-negative whole number; create_command / TTL rules)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise _fail("'expireAfterSeconds' must be a number", 2) from None
    if v != v or v < 0:
        raise _fail("TTL index 'expireAfterSeconds' option must be within an acceptable range, try a lower "
                    "number", 2)
    return int(v)


# ---------------------------------------------------------------------------------------------- state
class Bucket:
    """One bucket of the catalog: its record in ``system.buckets.<name>`` and what the rules need."""

    __slots__ = ("id", "meta", "has_meta", "meta_key", "min_time", "measurements", "size", "closed", "folded")

    def __init__(self, oid: ObjectId, meta: Any, has_meta: bool, meta_key: Any, min_time: datetime.datetime):
        self.id = oid
        self.meta = meta
        self.has_meta = has_meta
        self.meta_key = meta_key
        self.min_time = min_time
        self.measurements: list[dict] = []
        self.size = 0
        self.closed = False
        # bucket_document's running columns and extremes: (the measurements list they fold, how many of its
        # measurements, columns, mins, maxs); refolded from the start when ``measurements`` is replaced
        self.folded: tuple | None = None


class TsState:
    """Options, bucket catalog and execution statistics of one time-series collection."""

    def __init__(self, options: dict, expire: int | None):
        self.options = options
        self.time_field: str = options["timeField"]
        self.meta_field: str | None = options.get("metaField")
        self.max_span: int = options["bucketMaxSpanSeconds"]
        self.rounding: int = options.get("bucketRoundingSeconds") or GRANULARITY[options["granularity"]][1]
        self.expire = expire
        self.stats: dict[str, int] = {k: 0 for k in STAT_KEYS}
        self.open: dict[Any, Bucket] = {}
        self.archived: dict[Any, list[Bucket]] = {}
        self.by_id: dict[Any, Bucket] = {}
        self.synced = -1  # buckets-store version the unpacked view was built from
        self.user_indexes: dict[str, tuple[list, dict]] = {}


def state_of(store) -> TsState | None:
    """The time-series state of a collection store (None for ordinary collections)."""
    return getattr(store, "ts", None)


def buckets_name(name: str) -> str:
    return "system.buckets." + name


# ---------------------------------------------------------------------------------------------- create
def create(db, name: str, kwargs: dict):
    """``create_collection(name, timeseries={...}, expireAfterSeconds=...)``: the view-like namespace, its
    buckets collection and (with a metaField) the default ``{meta: 1, time: 1}`` index (6.3+)."""
    from pymongo.errors import CollectionInvalid
    kwargs = dict(kwargs)
    ts = kwargs.pop("timeseries")
    opts = validate_options(db, name, ts, kwargs)
    expire = check_expire(kwargs["expireAfterSeconds"]) if "expireAfterSeconds" in kwargs else None
    for k in ("validator", "validationLevel", "validationAction", "collation", "storageEngine",
              "indexOptionDefaults"):
        if k in kwargs:
            from ..query.planner import unsupported
            raise unsupported("create_collection(timeseries=..., %s=...)" % k)
    if kwargs.get("check_exists", True) and (name in db.list_collection_names()):
        raise CollectionInvalid("collection %s already exists" % name)
    db._ensure_valid_collection_name(name)
    view = db._store[name]
    view._reset_engine()
    view.create()
    state = TsState(opts, expire)
    view.ts = state
    view.options.update({"timeseries": dict(opts)})
    if expire is not None:
        view.options["expireAfterSeconds"] = expire
    bst = db._store[buckets_name(name)]
    bst._reset_engine()
    bst.create()
    bopts: dict[str, Any] = {"validator": _bucket_validator(opts), "clusteredIndex": True,
                             "timeseries": dict(opts)}
    if expire is not None:
        bopts["expireAfterSeconds"] = expire
    bst.options.update(bopts)
    bst.ts_view = name
    db._collection_accesses.pop(name, None)
    coll = db.get_collection(name)
    if opts.get("metaField"):
        coll.create_index([(opts["metaField"], 1), (opts["timeField"], 1)])
    return coll


def _bucket_validator(opts: dict) -> dict:
    tf = opts["timeField"]
    return {"$jsonSchema": {"bsonType": "object", "required": ["_id", "control", "data"],
                            "properties": {"_id": {"bsonType": "objectId"},
                                           "control": {"bsonType": "object",
                                                       "required": ["version", "min", "max"],
                                                       "properties": {"version": {"bsonType": "number"},
                                                                      "min": {"bsonType": "object",
                                                                              "required": [tf],
                                                                              "properties": {tf: {"bsonType": "date"}}},
                                                                      "max": {"bsonType": "object",
                                                                              "required": [tf],
                                                                              "properties": {tf: {"bsonType": "date"}}},
                                                                      "closed": {"bsonType": "bool"},
                                                                      "count": {"bsonType": "number", "minimum": 1}},
                                                       "additionalProperties": False},
                                           "data": {"bsonType": "object"},
                                           "meta": {}},
                            "additionalProperties": False}}


# ---------------------------------------------------------------------------------------------- helpers
def _norm_meta(v: Any) -> Any:
    """Meta values are compared with sub-document fields in name order (bucket_metadata.cpp normalizes)."""
    if isinstance(v, Mapping):
        return {k: _norm_meta(v[k]) for k in sorted(v)}
    if isinstance(v, list):
        return [_norm_meta(x) for x in v]
    return v


def _meta_key(v: Any, present: bool) -> Any:
    if not present:
        return ("missing",)
    return K.encode(_norm_meta(v))


def _round_down(t: datetime.datetime, seconds: int) -> datetime.datetime:
    epoch = datetime.datetime(1970, 1, 1)
    naive = t.replace(tzinfo=None) if t.tzinfo is not None else t
    secs = int((naive - epoch).total_seconds() // 1)
    secs -= secs % seconds
    return epoch + datetime.timedelta(seconds=secs)


def _to_ms(t: datetime.datetime) -> datetime.datetime:
    """BSON dates hold milliseconds."""
    if t.tzinfo is not None:
        t = t.astimezone(datetime.timezone.utc).replace(tzinfo=None)
    return t.replace(microsecond=t.microsecond // 1000 * 1000)


def _bucket_oid(min_time: datetime.datetime) -> ObjectId:
    """An ObjectId whose timestamp is the bucket's rounded minimum time (the server's bucket ``_id``): a 32-bit
    timestamp, so dates before 1970 and after 2106-02-07 wrap around (the server's extended range)."""
    secs = int((min_time - datetime.datetime(1970, 1, 1)).total_seconds())
    return ObjectId((secs % (1 << 32)).to_bytes(4, "big") + os.urandom(8))


def _measurement_size(doc: dict, meta_field: str | None, index: int) -> int:
    """Bytes one measurement adds to a bucket: per field (not the meta field), a BSON element keyed by its
    position in the column instead of the field name. Computed from one encoding of the document."""
    total = len(bson.encode(doc)) - 5  # the elements (no length prefix, no trailing NUL)
    n = 0
    for k in doc:
        if k == meta_field:
            total -= len(bson.encode({k: doc[k]})) - 5
            continue
        n += 1
        total -= len(k.encode("utf-8"))
    return total + n * len(str(index))


# types whose Python order is BSON order among values of that one type: numbers and naive dates, ObjectIds (their
# 12 bytes), booleans, strings (code point order is UTF-8 byte order, the simple binary comparison)
_PLAIN = frozenset({float, int, datetime.datetime, ObjectId, bool, str})
_DATETIME = datetime.datetime


def bucket_document(b: Bucket, state: TsState) -> dict:
    """The bucket as the buckets collection stores it: ``_id``, ``control`` (version 2, min, max, count),
    ``meta`` when the measurements had one, ``data`` columns keyed "0", "1", ... (uncompressed here).

    Measurements appended since the last call are folded into the bucket's running columns and extremes (a
    bucket written one measurement at a time costs one pass over it in all, not one per write); the document
    gets copies of the columns, as a stored document is never changed afterwards."""
    tf = state.time_field
    ms = b.measurements
    f = b.folded
    if f is not None and f[0] is ms and f[1] <= len(ms):
        _, start, data, mins, maxs = f
    else:
        start, data, mins, maxs = 0, {}, {}, {}
    for i in range(start, len(ms)):
        for k, v in ms[i].items():
            if k == state.meta_field:
                continue
            col = data.get(k)
            if col is None:
                col = data[k] = {}
                mins[k] = maxs[k] = v
            else:
                lo, hi = mins[k], maxs[k]
                tv = type(v)
                if tv is type(lo) is type(hi) and tv in _PLAIN and (
                        v == v and lo == lo and hi == hi if tv is float else
                        v.tzinfo is None and lo.tzinfo is None and hi.tzinfo is None if tv is _DATETIME else True):
                    if v < lo:  # one plain type (no NaN, no time zone): Python order is BSON order
                        mins[k] = v
                    elif v > hi:
                        maxs[k] = v
                else:
                    if V.compare(v, lo) < 0:
                        mins[k] = v
                    if V.compare(v, hi) > 0:
                        maxs[k] = v
            col[str(i)] = v
    b.folded = (ms, len(ms), data, mins, maxs)
    lo_all = dict(mins)
    lo_all[tf] = b.min_time
    order = ["_id", tf] + [k for k in data if k not in ("_id", tf)]
    doc: dict[str, Any] = {"_id": b.id, "control": {"version": 2,
                                                    "min": {k: lo_all[k] for k in order if k in lo_all},
                                                    "max": {k: maxs[k] for k in order if k in maxs},
                                                    "count": len(ms)}}
    if b.has_meta:
        doc["meta"] = b.meta
    doc["data"] = {k: dict(data[k]) for k in order if k in data}
    return doc


def unpack(bucket: Mapping, state: TsState) -> list[dict]:
    """The measurements of a bucket document, the meta field folded back in (time field first, then meta)."""
    data = bucket.get("data") or {}
    ctl = bucket.get("control") or {}
    n = ctl.get("count")
    if n is None:
        tcol = data.get(state.time_field) or {}
        n = len(tcol)
    tf, mf = state.time_field, state.meta_field
    out = []
    has_meta = mf is not None and "meta" in bucket
    cols = [(k, c) for k, c in data.items() if k != tf]
    tcol = data.get(tf) or {}
    for i in range(int(n)):
        key = str(i)
        d: dict[str, Any] = {}
        if key in tcol:
            d[tf] = tcol[key]
        if has_meta:
            d[mf] = bucket["meta"]
        for k, c in cols:
            if key in c:
                d[k] = c[key]
        out.append(d)
    return out


# ---------------------------------------------------------------------------------------------- inserts
def _check_measurement(doc: Any, state: TsState) -> dict:
    if not isinstance(doc, Mapping):
        raise TypeError("document must be an instance of dict, bson.son.SON, or any other type that inherits "
                        "from collections.MutableMapping")
    t = doc.get(state.time_field)
    if not isinstance(t, datetime.datetime):
        # bucket_catalog_helpers / timeseries_write_util: the time field must be a date
        raise WriteError("'%s' must be present and contain a valid BSON UTC datetime value" % state.time_field, 2,
                         {"index": 0, "code": 2,
                          "errmsg": "'%s' must be present and contain a valid BSON UTC datetime value"
                                    % state.time_field})
    size = len(bson.encode(doc))
    if size > 4 * 1024 * 1024:  # manual "Time Series Collection Limitations": 4 MB per measurement
        raise WriteError("Measurement size %d exceeds the 4 MB limit" % size, 10334,
                         {"index": 0, "code": 10334, "errmsg": "measurement too large"})
    d = dict(doc)
    d[state.time_field] = _to_ms(t)
    return d


def _fits(b: Bucket, t: datetime.datetime, msize: int, state: TsState) -> str | None:
    """Why ``b`` cannot take a measurement at ``t`` (a closing reason), or None (bucket_catalog_internal.cpp
    determineRolloverAction: count, then time forward / backward, then size)."""
    if len(b.measurements) >= BUCKET_MAX_COUNT:
        return "Count"
    if t >= b.min_time + datetime.timedelta(seconds=state.max_span):
        return "TimeForward"
    if t < b.min_time:
        return "TimeBackward"
    if b.size + msize > BUCKET_MAX_SIZE:
        if len(b.measurements) < BUCKET_MIN_COUNT:
            return "KeptOpen"
        return "Size"
    return None


def insert_measurements(coll, docs: Iterable[Any], ordered: bool = True) -> list:
    """Insert measurements into the buckets (one commit per bucket touched by this command)."""
    from pymongo.errors import BulkWriteError
    state: TsState = coll._ts_state()
    bcoll = coll._buckets()
    ids: list = []
    staged: list[Bucket] = []  # buckets touched, in first-touch order
    touched: dict[Any, int] = {}  # bucket id -> measurements added by this command
    created: set = set()
    errors: list[dict] = []
    for i, raw in enumerate(docs):
        try:
            d = _check_measurement(raw, state)
        except WriteError as e:
            errors.append({"index": i, "code": e.code, "errmsg": errmsg_of(e), "op": raw})
            if ordered:
                break
            continue
        if "_id" not in d:
            d = {"_id": ObjectId(), **d}
            if isinstance(raw, dict):
                raw["_id"] = d["_id"]
        ids.append(d["_id"])
        mf = state.meta_field
        present = mf is not None and mf in d
        meta = d.get(mf) if present else None
        mkey = _meta_key(meta, present)
        t = d[state.time_field]
        b = state.open.get(mkey)
        first = b
        msize = _measurement_size(d, mf, len(b.measurements) if b is not None else 0)
        reason = _fits(b, t, msize, state) if b is not None else "Metadata"
        if reason == "KeptOpen":
            state.stats["numBucketsKeptOpenDueToLargeMeasurements"] += 1
            reason = None
        if reason is not None:
            if reason == "TimeBackward":
                state.stats["numBucketsArchivedDueToTimeBackward"] += 1
                state.archived.setdefault(mkey, []).append(b)
            elif reason == "Metadata":
                pass
            else:
                state.stats["numBucketsClosedDueTo" + reason] += 1
                b.closed = True
            b = None
            for cand in state.archived.get(mkey, []):
                if _fits(cand, t, msize, state) in (None, "KeptOpen"):
                    b = cand
                    state.archived[mkey].remove(cand)
                    state.stats["numBucketsReopened"] += 1
                    if mkey in state.open and state.open[mkey] is not cand and not state.open[mkey].closed:
                        state.archived[mkey].append(state.open[mkey])
                    break
            if b is None:
                if reason == "Metadata":
                    state.stats["numBucketsOpenedDueToMetadata"] += 1
                mt = _round_down(t, state.rounding)
                b = Bucket(_bucket_oid(mt), meta, present, mkey, mt)
                state.by_id[b.id] = b
                created.add(b.id)
            state.open[mkey] = b
        if b is not first:
            msize = _measurement_size(d, mf, len(b.measurements))
        b.size += msize
        b.measurements.append(d)
        if b.id not in touched:
            touched[b.id] = 0
            staged.append(b)
        touched[b.id] += 1
    for b in staged:
        doc = bucket_document(b, state)
        if b.id in created:
            bcoll._insert_one_doc(doc)
            state.stats["numBucketInserts"] += 1
        else:
            bcoll._replace_doc(bcoll._store.rid_by_key[b.id], bcoll._store.docs[bcoll._store.rid_by_key[b.id]],
                               doc)
            state.stats["numBucketUpdates"] += 1
        state.stats["numCommits"] += 1
        state.stats["numMeasurementsCommitted"] += touched[b.id]
    if errors:
        raise BulkWriteError({"writeErrors": errors, "writeConcernErrors": [], "nInserted": len(ids),
                              "nUpserted": 0, "nMatched": 0, "nModified": 0, "nRemoved": 0, "upserted": []})
    return ids


def forget_bucket(state: TsState, bucket_id: Any) -> None:
    """Drop a deleted bucket from the catalog (TTL, deletes, a write to the buckets collection)."""
    b = state.by_id.pop(bucket_id, None)
    if b is None:
        return
    if state.open.get(b.meta_key) is b:
        del state.open[b.meta_key]
    arch = state.archived.get(b.meta_key)
    if arch and b in arch:
        arch.remove(b)


# ---------------------------------------------------------------------------------------------- the view
def sync_view(view_store, bucket_store, state: TsState) -> None:
    """Rebuild the unpacked measurements of the view from the buckets when the buckets changed."""
    if state.synced == bucket_store.version and state.synced >= 0:
        return
    from ..index.indexes import Index, IndexSpec
    from .store import store_key
    docs: dict[int, dict] = {}
    by_key: dict[Any, int] = {}
    ix = Index(IndexSpec("_id_", [("_id", 1)], unique=True))
    entries = []
    rid = 1
    for bdoc in bucket_store.docs.values():
        for m in unpack(bdoc, state):
            docs[rid] = m
            sk = store_key(m.get("_id"))
            if sk in by_key:
                sk = ("labkit-ts-duplicate-_id", rid)
            by_key[sk] = rid
            ks, _ = ix.keys_for(m)
            entries.extend((k, rid) for k in ks)
            rid += 1
    ix.add_bulk(entries)
    view_store.docs = docs
    view_store.rid_by_key = by_key
    view_store.ix = {"_id_": ix}
    view_store.next_rid = rid
    view_store.version += 1
    state.synced = bucket_store.version
    live = set(bucket_store.rid_by_key)
    for bid in [b for b in state.by_id if b not in live]:
        forget_bucket(state, bid)


# ---------------------------------------------------------------------------------------------- indexes
def bucket_key(key: list[tuple[str, Any]], state: TsState) -> list[tuple[str, Any]]:
    """A time-series index key as the buckets collection's index (timeseries_index_schema_conversion):
    meta fields -> ``meta``; the time field -> control.min/max (descending: max first); other fields ->
    control.min/max of the field (6.0+)."""
    out: list[tuple[str, Any]] = []
    mf, tf = state.meta_field, state.time_field
    for f, d in key:
        if not isinstance(d, (int, float)) or isinstance(d, bool):
            from ..query.planner import unsupported
            raise unsupported("time-series index of type %r" % (d,))
        if mf is not None and (f == mf or f.startswith(mf + ".")):
            out.append(("meta" + f[len(mf):], d))
        elif d > 0:
            out += [("control.min." + f, 1), ("control.max." + f, 1)]
        else:
            out += [("control.max." + f, -1), ("control.min." + f, -1)]
    return out


def create_index(coll, key: list, opts: dict) -> str:
    """Create a time-series index: the bucket-level index under the user's name; listIndexes shows the user's."""
    from ..index.indexes import gen_index_name
    state = coll._ts_state()
    opts = dict(opts)
    name = opts.pop("name", None) or gen_index_name(key)
    for k in opts:
        if k in ("unique",) and opts[k]:
            raise _fail("Unique indexes are not supported on time-series collections", 67)  # CannotCreateIndex
        if k == "expireAfterSeconds":
            from ..query.planner import unsupported
            raise unsupported("TTL secondary indexes on time-series collections")
        if k not in ("background", "unique", "hidden", "sparse"):
            from ..query.planner import unsupported
            raise unsupported("time-series create_index(%s=...)" % k)
    bopts = {k: v for k, v in opts.items() if k in ("hidden",)}
    bopts["name"] = name
    coll._buckets()._create_index(bucket_key(key, state), bopts)
    state.user_indexes[name] = (list(key), {k: v for k, v in opts.items() if k in ("hidden",)})
    return name


def list_indexes(coll) -> list[dict]:
    """The user-facing index specs (the server converts bucket indexes back)."""
    state = coll._ts_state()
    bst = coll._buckets()._store
    out = []
    for name, (key, opts) in state.user_indexes.items():
        if name not in bst.ix:
            continue
        d = {"v": 2, "key": dict(key), "name": name}
        if bst.ix[name].spec.hidden:
            d["hidden"] = True
        out.append(d)
    return out


# ---------------------------------------------------------------------------------------------- deletes
def delete(coll, filter_: Mapping, multi: bool) -> int:
    """deleteOne / deleteMany on a time-series collection (7.0+: arbitrary filters): matching measurements
    leave their buckets; an emptied bucket is deleted."""
    from ..matcher.match import fast_matcher
    state = coll._ts_state()
    bcoll = coll._buckets()
    bst = bcoll._store
    match = fast_matcher(dict(filter_))
    removed = 0
    for rid, bdoc in list(bst.docs.items()):
        ms = unpack(bdoc, state)
        keep = []
        hit = 0
        for m in ms:
            if (multi or removed + hit == 0) and match(m):
                hit += 1
            else:
                keep.append(m)
        if not hit:
            continue
        removed += hit
        b = state.by_id.get(bdoc["_id"])
        if b is None:
            b = Bucket(bdoc["_id"], bdoc.get("meta"), "meta" in bdoc, _meta_key(bdoc.get("meta"), "meta" in bdoc),
                       bdoc["control"]["min"][state.time_field])
            state.by_id[b.id] = b
        if not keep:
            bcoll._remove_rid(rid)
            forget_bucket(state, b.id)
        else:
            mf = state.meta_field
            b.measurements = [({k: v for k, v in m.items() if k != mf}) for m in keep]
            b.size = sum(_measurement_size(m, mf, i) for i, m in enumerate(b.measurements))
            bcoll._replace_doc(rid, bdoc, bucket_document(b, state))
        if not multi:
            break
    return removed


def delete_buckets(coll_or_bcoll, state: TsState, predicate) -> int:
    """Delete whole buckets for which ``predicate(bucket_doc)`` holds; returns buckets deleted."""
    bst = coll_or_bcoll._store
    n = 0
    for rid, bdoc in list(bst.docs.items()):
        if predicate(bdoc):
            coll_or_bcoll._remove_rid(rid)
            forget_bucket(state, bdoc["_id"])
            n += 1
    return n


# ---------------------------------------------------------------------------------------------- stats
def timeseries_stats(coll, scale: int = 1) -> dict:
    """collStats' ``timeseries`` section (src/mongo/db/timeseries/bucket_catalog/execution_stats.cpp;
    avgNumMeasurementsPerCommit is numMeasurementsCommitted / numCommits, integer division, shown once there
    are commits; it is *not* measurements per bucket)."""
    state = coll._ts_state()
    bst = coll._buckets()._store
    n = len(bst.docs)
    size = sum(len(bson.encode(d)) for d in bst.docs.values())
    out: dict[str, Any] = {"bucketsNs": "%s.%s" % (coll.database.name, buckets_name(coll.name)),
                           "bucketCount": n, "avgBucketSize": (size // n) if n else 0,
                           "numActiveBuckets": sum(1 for b in state.open.values() if not b.closed)}
    s = state.stats
    for k in STAT_KEYS:
        out[k] = s[k]
        if k == "numMeasurementsCommitted" and s["numCommits"]:
            out["avgNumMeasurementsPerCommit"] = s["numMeasurementsCommitted"] // s["numCommits"]
    return out


def coll_stats(coll, scale: int = 1) -> dict:
    """collStats of a time-series collection: sizes from the buckets collection, plus ``timeseries``."""
    from ..stats import storage_stats as stats
    b = stats.coll_stats(coll._buckets(), scale)
    b["ns"] = "%s.%s" % (coll.database.name, coll.name)
    b.pop("count", None)  # the server shows no 'count' for a time-series collection (buckets are in bucketCount)
    b["timeseries"] = timeseries_stats(coll, scale)
    b["labkit"] = {"engine": "embedded", "sizeModel": stats.SIZE_MODEL + "; of the buckets collection (zstd "
                                                                       "blocks, as a server's time-series buckets; "
                                                                       "the buckets' BSON is not column-compressed)"}
    return b


# ---------------------------------------------------------------------------------------------- explain
def _rewrite(pred: Mapping, state: TsState) -> tuple[dict, dict]:
    """Split a filter into (bucket-level predicate on meta/control, measurement-level eventFilter)
    as the server's bucket-level rewrite does for meta, time and other-field comparisons."""
    mf, tf, span = state.meta_field, state.time_field, datetime.timedelta(seconds=state.max_span)
    bucket: list[dict] = []
    event: dict[str, Any] = {}
    for f, cond in pred.items():
        if f == "$and" and isinstance(cond, list):
            for c in cond:
                b, e = _rewrite(c, state)
                if b:
                    bucket.append(b)
                for k, v in e.items():
                    event.setdefault("$and", []).append({k: v})
            continue
        if f.startswith("$"):
            event[f] = cond
            continue
        if mf is not None and (f == mf or f.startswith(mf + ".")):
            bucket.append({"meta" + f[len(mf):]: cond})
            continue
        event[f] = cond
        ops = cond if isinstance(cond, Mapping) and cond and all(str(k).startswith("$") for k in cond) \
            else {"$eq": cond}
        for op, v in ops.items():
            lo, hi = "control.min." + f, "control.max." + f
            if op in ("$gt", "$gte"):
                bucket.append({hi: {op: v}})
                if f == tf and isinstance(v, datetime.datetime):
                    bucket.append({lo: {op: v - span}})
            elif op in ("$lt", "$lte"):
                bucket.append({lo: {op: v}})
                if f == tf and isinstance(v, datetime.datetime):
                    bucket.append({hi: {op: v + span}})
            elif op == "$eq" and not isinstance(v, (Mapping, list)):
                bucket += [{lo: {"$lte": v}}, {hi: {"$gte": v}}]
                if f == tf and isinstance(v, datetime.datetime):
                    bucket += [{hi: {"$lte": v + span}}, {lo: {"$gte": v - span}}]
    if not bucket:
        return {}, event
    return (bucket[0] if len(bucket) == 1 else {"$and": bucket}), event


def explain_find(coll, q, verbosity: str, command: dict | None) -> dict:
    """Explain of a find/count on a time-series collection in the server's pipeline shape:
    ``stages: [{$cursor: <plan over system.buckets.<name>>}, {$_internalUnpackBucket: ...}, ...]``."""
    from ..query.planner import Query
    state = coll._ts_state()
    bcoll = coll._buckets()
    bfilter, event = _rewrite(q.filter or {}, state)
    bq = Query(bfilter)
    inner = bcoll.explain_find(bq, verbosity, {"find": buckets_name(coll.name), "filter": bfilter})
    cursor: dict[str, Any] = {"queryPlanner": inner.get("queryPlanner")}
    if "executionStats" in inner:
        cursor["executionStats"] = inner["executionStats"]
    unpack_spec: dict[str, Any] = {"exclude": [], "timeField": state.time_field}
    if state.meta_field is not None:
        unpack_spec["metaField"] = state.meta_field
    unpack_spec["bucketMaxSpanSeconds"] = state.max_span
    unpack_spec["assumeNoMixedSchemaData"] = True
    if event:
        unpack_spec["eventFilter"] = event
    stages: list[dict] = [{"$cursor": cursor}]
    unpack_stage: dict[str, Any] = {"$_internalUnpackBucket": unpack_spec}
    if verbosity != "queryPlanner":
        filt = dict(q.filter or {})
        unpack_stage["nReturned"] = coll.count_documents(filt) if filt else len(coll._store.docs)
        unpack_stage["executionTimeMillisEstimate"] = 0
    stages.append(unpack_stage)
    if q.sort:
        stages.append({"$sort": {"sortKey": dict(q.sort)}})
    if q.skip:
        stages.append({"$skip": q.skip})
    if q.limit:
        stages.append({"$limit": abs(q.limit)})
    if q.projection:
        stages.append({"$project": dict(q.projection)})
    return {"explainVersion": "1", "stages": stages, "command": dict(command or {}),
            "queryShapeHash": None, "serverInfo": {"host": "labkit-embedded", "port": 0, "version": "8.0.0"},
            "labkit": {"engine": "embedded", "model": "classic $_internalUnpackBucket shape (8.0 may run "
                                                        "eligible time-series queries in SBE)"},
            "ok": 1.0}


def explain_aggregate(coll, pipeline: list, verbosity: str, command: dict) -> dict:
    """Explain of an aggregate on a time-series collection: a leading ``$match`` is pushed to the buckets."""
    from ..query.planner import Query
    pipeline = list(pipeline)
    first = pipeline[0].get("$match") if pipeline and isinstance(pipeline[0], Mapping) else None
    rest = pipeline[1:] if first is not None else pipeline
    q = Query(first or {})
    out = explain_find(coll, q, verbosity, dict(command))
    out["stages"].extend(dict(s) for s in rest)
    return out


# ---------------------------------------------------------------------------------------------- collection
def _collection_base():
    from .rules import LabCollection
    return LabCollection


def collection_class(db_store, name: str):
    """The collection class for ``name``: TimeseriesCollection for a time-series namespace, else LabCollection."""
    st = db_store._collections.get(name)
    if st is not None and getattr(st, "ts", None) is not None:
        return _tsc()
    return _collection_base()


def on_drop(db, name: str) -> None:
    """Dropping a time-series collection drops its buckets collection too."""
    st = db._store._collections.get(name)
    if st is not None and getattr(st, "ts", None) is not None:
        st.ts = None
        db._store[buckets_name(name)].drop()
        db._collection_accesses.pop(name, None)
    elif name.startswith("system.buckets."):
        view = db._store._collections.get(name[len("system.buckets."):])
        if view is not None and getattr(view, "ts", None) is not None:
            view.ts = None
            view.drop()
            db._collection_accesses.pop(view.name, None)


def list_entry(db, name: str, st, name_only: bool) -> list[dict] | None:
    """listCollections entries for a time-series namespace (type "timeseries") and its buckets collection."""
    state = getattr(st, "ts", None)
    if state is None:
        return None
    bst = db._store[buckets_name(name)]
    if name_only:
        return [{"name": name, "type": "timeseries"}, {"name": buckets_name(name), "type": "collection"}]
    return [{"name": name, "type": "timeseries", "options": dict(st.options), "info": {"readOnly": False}},
            {"name": buckets_name(name), "type": "collection", "options": dict(bst.options),
             "info": {"readOnly": False, "uuid": bst.uuid}}]  # list_collections.cpp: the view has no uuid


def _unsupported_write(what: str) -> OperationFailure:
    from ..query.planner import unsupported
    return unsupported("%s on a time-series collection" % what,
                       "insert and delete measurements (the engine models those on time-series collections)")


def _refused_write(base: type, name: str) -> Callable:
    """The collection method ``name`` of a time-series collection: ``base``'s (the plain collection's) while the
    collection is a plain one, else the engine's clear refusal."""
    plain = getattr(base, name)

    def method(self, *args, **kwargs):
        if self._ts_state() is None:
            return plain(self, *args, **kwargs)
        raise _unsupported_write(name)
    method.__name__ = method.__qualname__ = name
    return method


def _define():
    from ..service.boundary import COLLECTION_OPERATIONS, guard
    from ..session.sessions import current as _active_txn
    base = _collection_base()

    @guard(COLLECTION_OPERATIONS)
    class TimeseriesCollection(base):  # type: ignore[misc, valid-type]
        """A time-series collection: writes go to buckets, reads see unpacked measurements."""

        @property
        def _store(self):
            st = self._db_store[self._name]
            state = getattr(st, "ts", None)
            if state is not None:
                sync_view(st, self._db_store[buckets_name(self._name)], state)
            return st

        def _ts_state(self) -> TsState | None:
            return getattr(self._db_store[self._name], "ts", None)

        def _buckets(self):
            return self.database.get_collection(buckets_name(self._name))

        def _txn_check(self, session) -> None:
            if _active_txn() is not None or getattr(session, "in_transaction", False):
                raise OperationFailure("Cannot write to a time-series collection in a multi-document "
                                       "transaction on the embedded engine", 263)

        # -- writes ---------------------------------------------------------------------------
        def insert_one(self, document, bypass_document_validation=False, session=None, comment=None):
            if self._ts_state() is None:
                return super().insert_one(document, bypass_document_validation, session, comment)
            self._txn_check(session)
            from pymongo.errors import BulkWriteError
            try:
                ids = insert_measurements(self, [document], True)
            except BulkWriteError as e:
                err = e.details["writeErrors"][0]
                raise WriteError(err["errmsg"], err["code"], err) from None
            return InsertOneResult(ids[0], True)

        def insert_many(self, documents, ordered=True, bypass_document_validation=False, session=None,
                        comment=None):
            if self._ts_state() is None:
                return super().insert_many(documents, ordered, bypass_document_validation, session, comment)
            self._txn_check(session)
            docs = list(documents)
            if not docs:
                raise TypeError("documents must be a non-empty list")
            return InsertManyResult(insert_measurements(self, docs, ordered), True)

        def delete_one(self, filter, collation=None, hint=None, session=None, let=None, comment=None):
            return self._delete("delete_one", False, filter, collation, hint, session, let, comment)

        def delete_many(self, filter, collation=None, hint=None, session=None, let=None, comment=None):
            return self._delete("delete_many", True, filter, collation, hint, session, let, comment)

        def _delete(self, name, multi, filter, collation, hint, session, let, comment):
            """delete_one / delete_many: on measurements (``multi`` or the first match), else the plain
            collection's own."""
            if self._ts_state() is None:
                return getattr(super(), name)(filter, collation, hint, session, let, comment)
            self._txn_check(session)
            if collation or hint or let:
                raise _unsupported_write(name + "(collation/hint/let=...)")
            return DeleteResult({"n": delete(self, filter or {}, multi)}, True)

        # writes the engine does not model on a time-series collection (a plain collection's own otherwise)
        update_one = _refused_write(base, "update_one")
        update_many = _refused_write(base, "update_many")
        replace_one = _refused_write(base, "replace_one")
        find_one_and_update = _refused_write(base, "find_one_and_update")
        find_one_and_replace = _refused_write(base, "find_one_and_replace")
        find_one_and_delete = _refused_write(base, "find_one_and_delete")

        def bulk_write(self, requests, *args, **kwargs):
            if self._ts_state() is None:
                return super().bulk_write(requests, *args, **kwargs)
            raise _unsupported_write("bulk_write")

        # -- indexes --------------------------------------------------------------------------
        def create_index(self, keys, session=None, comment=None, **kwargs):
            if self._ts_state() is None:
                return super().create_index(keys, session, comment, **kwargs)
            from ..base.docutil import sort_list as _sort_list
            from mongomock import helpers
            key = _sort_list(keys) if not isinstance(keys, str) else [(keys, 1)]
            key = list(helpers.index_list(key)) if not isinstance(key, list) else key
            return create_index(self, key, kwargs)

        def _create_index(self, key, opts):
            if self._ts_state() is None:
                return super()._create_index(key, opts)
            return create_index(self, list(key), opts)

        def create_indexes(self, indexes, session=None, comment=None, **kwargs):
            if self._ts_state() is None:
                return super().create_indexes(indexes, session, comment, **kwargs)
            names = []
            for im in indexes:
                doc = dict(im.document)
                key = list(doc.pop("key").items())
                names.append(create_index(self, key, doc))
            return names

        def list_indexes(self, session=None, comment=None):
            if self._ts_state() is None:
                return super().list_indexes(session, comment)
            from .collection import CommandCursor
            return CommandCursor(list_indexes(self), session)

        def index_information(self, session=None, comment=None):
            if self._ts_state() is None:
                return super().index_information(session, comment)
            out = {}
            for d in list_indexes(self):
                d = dict(d)
                name = d.pop("name")
                d["key"] = list(d["key"].items())
                out[name] = d
            return out

        def drop_index(self, index_or_name, session=None, comment=None, **kwargs):
            if self._ts_state() is None:
                return super().drop_index(index_or_name, session, comment, **kwargs)
            from ..index.indexes import gen_index_name
            name = index_or_name if isinstance(index_or_name, str) else gen_index_name(list(index_or_name))
            state = self._ts_state()
            if name not in state.user_indexes:
                raise OperationFailure("index not found with name [%s]" % name, 27)
            self._buckets().drop_index(name)
            del state.user_indexes[name]

        def drop_indexes(self, session=None, comment=None, **kwargs):
            if self._ts_state() is None:
                return super().drop_indexes(session, comment, **kwargs)
            for name in list(self._ts_state().user_indexes):
                self.drop_index(name)

        # -- explain --------------------------------------------------------------------------
        def explain_find(self, q, verbosity="allPlansExecution", command=None):
            if self._ts_state() is None:
                return super().explain_find(q, verbosity, command)
            return explain_find(self, q, verbosity, command)

    return TimeseriesCollection


_TSC: list = []


def _tsc():
    """The TimeseriesCollection class (defined on first use: it subclasses rules.LabCollection)."""
    if not _TSC:
        _TSC.append(_define())
    return _TSC[0]


def __getattr__(name: str):
    if name == "TimeseriesCollection":
        return _tsc()
    raise AttributeError(name)


def collmod_expire(coll, value: Any) -> dict:
    """``collMod: name, expireAfterSeconds: N | "off"`` on a time-series (or clustered) collection."""
    st = coll._db_store._collections.get(coll.name)
    state = getattr(st, "ts", None)
    if state is None:
        raise _fail("expireAfterSeconds option is only supported on time-series collections or clustered "
                    "collections", INVALID_OPTIONS)
    bst = coll._db_store[buckets_name(coll.name)]
    if value == "off":
        state.expire = None
        st.options.pop("expireAfterSeconds", None)
        bst.options.pop("expireAfterSeconds", None)
        return {}
    n = check_expire(value)
    state.expire = n
    st.options["expireAfterSeconds"] = n
    bst.options["expireAfterSeconds"] = n
    return {}


# collStats (stats.py) and listCollections / create (rules.py) sit below this module: they call these
# through the engine's registry (hooks.py)
from ..base import hooks  # noqa: E402

hooks.register("timeseries_coll_stats", coll_stats)
hooks.register("timeseries_list_entry", list_entry)
hooks.register("timeseries_create", create)
