"""Clustered collections on the embedded engine (MongoDB 8.0 rules).

Sources: manual "Clustered Collections"; server ``src/mongo/db/catalog/create_collection.cpp``
(``validateClusteredIndexSpec``, ``validateCollectionOptions``), ``clustered_collection_util.cpp`` (canonical
spec, default name ``_id_``, listIndexes ``clustered: true``), ``src/mongo/db/query/plan_executor_express.cpp``
(``EXPRESS_CLUSTERED_IXSCAN``); jstests/core/clustered/clustered_collection_bounded_scan.js (CLUSTERED_IXSCAN with
``minRecord``/``maxRecord`` and its docsExamined counts), clustered_collection_creation.js, clustered_collection_hint.js.

* ``create_collection(name, clusteredIndex={"key": {"_id": 1}, "unique": True[, "name": ...]}[,
  expireAfterSeconds=N])``, with the server's errors.
* Documents are kept in ``_id`` order (the natural order of a clustered collection): a COLLSCAN returns them by
  ``_id``.
* A find whose filter bounds ``_id`` with ``$eq``/``$gt``/``$gte``/``$lt``/``$lte`` (or a hint on ``{_id: 1}``)
  runs as ``CLUSTERED_IXSCAN``: ``minRecord``/``maxRecord`` only on the bounded sides, the whole predicate as
  ``filter``, docsExamined = documents with ``_id`` in [min, max] plus the one read past ``max`` (bounds are
  inclusive; the jstest's counts). ``{_id: v}`` alone is ``EXPRESS_CLUSTERED_IXSCAN`` (8.0). ``$in`` and other
  multi-interval ``_id`` predicates are a COLLSCAN with a filter (the 8.0 multi-range scan is not modelled).
* ``listIndexes``/``index_information``: the cluster key as ``{v: 2, key: {_id: 1}, name, unique: true,
  clustered: true}``; ``listCollections``: ``options.clusteredIndex`` (and ``expireAfterSeconds``), no ``idIndex``.
* TTL: :func:`expired_ids` gives the ``_id`` values a TTL pass removes (date ``_id`` older than
  ``now - expireAfterSeconds``).
"""
from __future__ import annotations

import datetime
from typing import Any

import bson
from mongomock import OperationFailure

from ..bson import keys as K
from ..query.planner import Candidate, Planner, Query, plan_and_run
from ..exec.stages import ADVANCED, IS_EOF, NEED_TIME, ExpressExec, PointLookup, Stage

MAX_EXPIRE = 2 ** 31 - 1  # index_key_validate: expireAfterSeconds up to INT_MAX


def parse_create(opts: dict) -> dict | None:
    """Pop ``clusteredIndex`` (and ``expireAfterSeconds`` with it) from ``create`` options; the stored options,
    or None. Raises the server's errors."""
    if "clusteredIndex" not in opts:
        if "expireAfterSeconds" in opts and "timeseries" not in opts:
            raise OperationFailure("'expireAfterSeconds' can be used only for clustered collections or timeseries "
                                   "collections", 72)
        return None
    spec = opts.pop("clusteredIndex")
    if isinstance(spec, bool):
        if not spec:
            return None
        raise OperationFailure("The 'clusteredIndex' legacy format {clusteredIndex: <bool>} is only supported for "
                               "specific internal collections and vice versa", 5979703)
    if not isinstance(spec, dict):
        raise OperationFailure("'clusteredIndex' has to be a boolean or object.", 5979702)
    for k in spec:
        if k not in ("key", "unique", "name", "v"):
            raise OperationFailure("BSON field 'ClusteredUtil::parseClusteredInfo.%s' is an unknown field." % k, 40415)
    if "key" not in spec:
        raise OperationFailure("BSON field 'ClusteredUtil::parseClusteredInfo.key' is missing but a required field",
                               40414)
    if "unique" not in spec:
        raise OperationFailure("BSON field 'ClusteredUtil::parseClusteredInfo.unique' is missing but a required "
                               "field", 40414)
    if spec.get("unique") is not True:
        raise OperationFailure("The clusteredIndex option requires unique: true to be specified", 5979700)
    key = spec["key"]
    if not isinstance(key, dict) or list(key) != ["_id"] or key["_id"] != 1 or isinstance(key["_id"], bool):
        raise OperationFailure("The clusteredIndex option is only supported for key: {_id: 1}", 197)
    v = spec.get("v", 2)
    if v != 2:
        raise OperationFailure("Invalid clusteredIndex specification %s; cannot create a clusteredIndex with v=%s"
                               % (spec, v), 5979704)
    name = spec.get("name", "_id_")
    if not isinstance(name, str):
        raise OperationFailure("BSON field 'ClusteredUtil::parseClusteredInfo.name' is the wrong type, expected "
                               "type 'string'", 14)
    out: dict[str, Any] = {"clusteredIndex": {"v": 2, "key": {"_id": 1}, "name": name, "unique": True}}
    if "expireAfterSeconds" in opts:
        e = opts.pop("expireAfterSeconds")
        if isinstance(e, bool) or not isinstance(e, (int, float, bson.Int64)) or e != int(e):
            raise OperationFailure("TTL index 'expireAfterSeconds' option must be numeric, but received a type of "
                                   "'%s'" % type(e).__name__, 72)
        if e < 0:
            raise OperationFailure("TTL index 'expireAfterSeconds' option cannot be less than 0", 72)
        if e > MAX_EXPIRE:
            raise OperationFailure("TTL index 'expireAfterSeconds' option must be within an acceptable range, try "
                                   "a lower number", 72)
        out["expireAfterSeconds"] = bson.Int64(int(e))
    return out


def is_clustered(st: Any) -> bool:
    return "clusteredIndex" in st.options


# ---------------------------------------------------------------------------------------------- storage order
def _id_key(doc: dict) -> bytes:
    return K.encode(doc["_id"])


def after_insert(st: Any) -> None:
    """Keep a clustered collection's documents in ``_id`` order (its natural order): new records are appended at
    the end of the record order; when one sorts before its predecessor the record order is rebuilt."""
    docs = st.docs
    seen = st.__dict__.get("_clustered_seen", 0)
    st._clustered_seen = st.next_rid - 1
    chain = []  # the new records (newest first), then the last old record
    for rid in reversed(docs):
        chain.append(rid)
        if rid <= seen:
            break
    prev = None
    for rid in reversed(chain):
        k = _id_key(docs[rid])
        if prev is not None and k <= prev:
            items = sorted(docs.items(), key=lambda kv: _id_key(kv[1]))
            docs.clear()
            docs.update(items)
            return
        prev = k


# ---------------------------------------------------------------------------------------------- planning
def _bounds(flt: dict) -> tuple[bool, Any, bool, Any] | None:
    """(has_min, min, has_max, max) of a filter's ``_id`` predicate, or None when it is not one interval."""
    if "_id" not in flt:
        return None
    cond = flt["_id"]
    if not isinstance(cond, dict) or not cond or not all(isinstance(k, str) and k.startswith("$") for k in cond):
        if isinstance(cond, (list, bson.Regex)) or cond is None:
            return None
        return True, cond, True, cond
    lo = hi = None
    has_lo = has_hi = False
    for op, v in cond.items():
        if isinstance(v, (dict, list, bson.Regex)) or v is None or hasattr(v, "pattern"):
            return None
        if op == "$eq":
            has_lo = has_hi = True
            lo = hi = v
        elif op in ("$gt", "$gte"):
            if has_lo:
                return None
            has_lo, lo = True, v
        elif op in ("$lt", "$lte"):
            if has_hi:
                return None
            has_hi, hi = True, v
        else:
            return None
    if not (has_lo or has_hi):
        return None
    return has_lo, lo, has_hi, hi


class ClusteredScan(Stage):
    """CLUSTERED_IXSCAN: a bounded collection scan over the records in cluster-key order."""
    name = "CLUSTERED_IXSCAN"

    def __init__(self, store, id_index, match, shown: dict | None, bounds: tuple, direction: int = 1) -> None:
        super().__init__()
        self.store = store
        self.index = id_index
        self.match = match
        self.shown = shown
        self.has_min, self.min, self.has_max, self.max = bounds
        self.direction = direction
        self.docs_examined = 0
        self._it = None

    def _start(self):
        entries = self.index.entries
        n = len(entries)
        lo_e = K.encode(self.min) if self.has_min else None
        hi_e = K.encode(self.max) if self.has_max else None
        if self.direction > 0:
            i = entries.bisect_left(((lo_e,),)) if lo_e is not None else 0
            rng = range(i, n)
        else:
            j = entries.bisect_left(((hi_e, K.HIGH),)) if hi_e is not None else n
            rng = range(j - 1, -1, -1)
        self._lo, self._hi = lo_e, hi_e
        return iter(rng)

    def _work(self) -> int:
        if self._it is None:
            self._it = self._start()
        entries = self.index.entries
        for pos in self._it:
            key, rid = entries[pos]
            doc = self.store.docs.get(rid)
            self.docs_examined += 1
            e = key[0]
            if self.direction > 0 and self._hi is not None and e > self._hi:
                return IS_EOF  # the one record read past the end bound
            if self.direction < 0 and self._lo is not None and e < self._lo:
                return IS_EOF
            if doc is None or (self.match is not None and not self.match(doc)):
                return NEED_TIME
            self.out = (rid, doc, None)
            return ADVANCED
        return IS_EOF

    def plan_fields(self) -> dict:
        d: dict[str, Any] = {}
        if self.shown:
            d["filter"] = self.shown
        d["direction"] = "forward" if self.direction > 0 else "backward"
        if self.has_min:
            d["minRecord"] = self.min
        if self.has_max:
            d["maxRecord"] = self.max
        return d

    def exec_fields(self) -> dict:
        return {"docsExamined": self.docs_examined}


class ExpressClustered(PointLookup):
    """EXPRESS_CLUSTERED_IXSCAN (8.0 express path for ``{_id: v}`` on a clustered collection)."""
    name = "EXPRESS_CLUSTERED_IXSCAN"

    def __init__(self, store, value: Any) -> None:
        super().__init__(None, store, value)

    def _lookup(self) -> tuple | None:
        from .store import store_key
        rid = self.store.rid_by_key.get(store_key(self.value))
        doc = self.store.docs.get(rid) if rid is not None else None
        if doc is None:
            return None
        self.docs_examined += 1
        from ..matcher.match import fast_matcher
        if not fast_matcher({"_id": self.value})(doc):
            return None
        return (rid, doc, None)

    def plan_fields(self) -> dict:
        return {}

    def exec_fields(self) -> dict:
        return {"keysExamined": self.keys_examined, "docsExamined": self.docs_examined}


class ClusteredPlanner(Planner):
    """The planner of a clustered collection: there is no separate ``_id`` index; plans that would scan it are
    replaced by a CLUSTERED_IXSCAN (or dropped when the ``_id`` predicate is not one interval)."""

    def candidates(self):
        cands, notes = super().candidates()
        id_ix = self.store.ix["_id_"]
        keep = [c for c in cands if c.index is not id_ix and c.desc not in ("IDHACK",)]
        bounds = _bounds(self.q.filter)
        h = self.q.hint
        hinted_id = h is not None and (h == "_id_" or h == {"_id": 1} or h == [("_id", 1)])
        if bounds is None and hinted_id:
            bounds = (False, None, False, None)
        if bounds is not None:
            keep = [c for c in keep if c.index is not None] if not hinted_id else []
            keep.insert(0, self._clustered_candidate(bounds))
        elif not keep or all(c.index is not None for c in keep) and len(keep) < len(cands):
            keep.append(self._collscan_candidate())
        if len(keep) > 1 and any(c.desc == "COLLSCAN" for c in keep):
            keep = [c for c in keep if c.desc != "COLLSCAN"] or keep
        return keep, notes

    def _clustered_candidate(self, bounds: tuple) -> Candidate:
        q = self.q
        store = self.store
        sort = q.sort
        direction = 1
        blocking = bool(sort)
        if sort and len(sort) == 1 and sort[0][0] == "_id":
            direction, blocking = (1 if sort[0][1] > 0 else -1), False
        match = self.match_all
        shown = q.filter or None
        id_ix = store.ix["_id_"]

        def build() -> Stage:
            root: Stage = ClusteredScan(store, id_ix, match, shown, bounds, direction)
            return self._finish(root, blocking_sort=blocking, covered=False)
        return Candidate(build, None, True, blocking, desc="CLUSTERED_IXSCAN")


def run(st: Any, q: Query, stop_after: int | None = None, explain: bool = False):
    """Plan and run ``q`` on a clustered collection store (the ``_run`` of a clustered collection)."""
    from ..query.planner import express_eligible
    ix = express_eligible(st, q)
    if ix is not None and ix.spec.name == "_id_":
        (path, cond), = q.filter.items()
        if isinstance(cond, dict) and "$eq" in cond:
            cond = cond["$eq"]
        elif isinstance(cond, dict) and "$in" in cond:
            cond = cond["$in"][0]
        stage = ExpressClustered(st, cond)
        results = []
        while stage.work() == ADVANCED:
            results.append(stage.out)
        cand = Candidate(lambda: stage, None, True, False, desc="EXPRESS_CLUSTERED_IXSCAN")
        cand.root = stage
        return ExpressExec(cand, results, 0)
    if q.limit:
        stop_after = q.limit if stop_after is None else min(stop_after, q.limit)
    return plan_and_run(st, q, stop_after=stop_after, explain_trial_snapshot=explain,
                        planner=ClusteredPlanner(st, q))


# ---------------------------------------------------------------------------------------------- catalog
def index_info(st: Any) -> dict:
    """The cluster key as listIndexes shows it (``formatClusterKeyForListIndexes``)."""
    spec = st.options["clusteredIndex"]
    # a time-series buckets collection has the legacy form ``clusteredIndex: true`` (named "_id_")
    name = spec["name"] if isinstance(spec, dict) else "_id_"
    return {"v": 2, "key": {"_id": 1}, "name": name, "unique": True, "clustered": True}


def expired_ids(coll: Any, now: datetime.datetime) -> list:
    """The ``_id`` values a TTL pass removes from a clustered collection with ``expireAfterSeconds``: date
    ``_id`` values older than ``now - expireAfterSeconds`` (ttl.cpp scans the cluster key from the smallest date
    to that bound, so non-date ``_id`` values never expire). [] for other collections. For helper "ts"'s TTL pass."""
    st = coll._store
    exp = st.options.get("expireAfterSeconds")
    if "clusteredIndex" not in st.options or exp is None:
        return []
    if now.tzinfo is not None:
        now = now.astimezone(datetime.timezone.utc).replace(tzinfo=None)
    cutoff = now - datetime.timedelta(seconds=int(exp))
    out = []
    for doc in st.docs.values():
        v = doc.get("_id")
        if isinstance(v, datetime.datetime):
            vv = v.astimezone(datetime.timezone.utc).replace(tzinfo=None) if v.tzinfo else v
            if vv < cutoff:
                out.append(v)
    return out
