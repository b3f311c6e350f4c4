"""Query planner modeled on MongoDB 8.0's classic engine, and the executor that runs the chosen plan.

Rules followed (see /work/shared/reference/mongodb-explain-rules.md): relevant indexes by prefix, bounds
intersection, sort analysis with explode-for-sort (< 200 scans), covered projections, COLLSCAN only when no
indexed plan exists, multi-planner trial with the productivity score, rooted $or through SUBPLAN/OR,
EXPRESS_IXSCAN for ``_id`` / unique single-field equality, EOF for trivially false predicates.
"""
from __future__ import annotations

import contextlib
import contextvars
import itertools
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from bson import ObjectId
from mongomock import OperationFailure

from ..base.errors import unsupported  # noqa: F401 - re-exported: many modules import it from here
from ..bson import keys as K
from ..bson import values as V
from ..matcher.match import fast_matcher  # the engine's matcher (match.py)
from ..index.bounds import Interval, Parsed, Pred, and_filter, full, intersect, union
from ..exec.stages import IndexScan as _IndexScan
from ..exec.stages import RangeIndexScan
from ..exec.stages import (ADVANCED, IS_EOF, NEED_TIME, CollScan, CountScan, EOFStage, Fetch, IdHack, IndexScan,
                           Limit, Or, Passthrough, PointLookup, Projection, ReturnKey, Skip, Sort, SortMerge, Stage,
                           index_fields)

MAX_SCANS_TO_EXPLODE = 200
TRIAL_MAX_RESULTS = 101


_EXPLAINING: contextvars.ContextVar[bool] = contextvars.ContextVar("labkit_explaining", default=False)


@contextlib.contextmanager
def explaining():
    """Inside this block query runs are explains: they do not count as index accesses
    (jstests/core/index/index_stats.js: "index access counters are not incremented for explain execution")."""
    token = _EXPLAINING.set(True)
    try:
        yield
    finally:
        _EXPLAINING.reset(token)


def note_access(ix) -> None:
    """Count one use of ``ix`` for ``$indexStats`` (``accesses.ops``), unless the run is an explain."""
    if not _EXPLAINING.get():
        ix.accesses += 1


def make_matcher(filter_: dict, variables: dict | None = None) -> Callable[[dict], bool]:
    """The document predicate of a query filter: ``match.fast_matcher`` (the server's rules)."""
    return fast_matcher(filter_, None, variables)


class Query:
    """A find-like request."""

    def __init__(self, filter_: dict | None = None, sort: list[tuple[str, int]] | None = None,
                 projection: dict | None = None, skip: int = 0, limit: int = 0, hint: Any = None,
                 batch_size: int = 0, kind: str = "find", distinct_key: str | None = None,
                 let: dict | None = None, allow_disk_use: bool | None = None) -> None:
        self.filter = filter_ or {}
        self.let = let  # ``let`` variables ($$name) for $expr in the filter
        self.sort = list(sort or [])
        self.projection = projection
        self.skip = int(skip or 0)
        self.limit = abs(int(limit or 0))
        self.hint = hint
        self.batch_size = batch_size
        self.kind = kind
        self.distinct_key = distinct_key
        self.allow_disk_use = allow_disk_use  # None: the server default (allowDiskUseByDefault true)
        self.origin = "find"  # or "aggregate": which command's error wording
        self.count_like = False  # a pipeline whose later stages need no document field (pipeline_d.cpp IS_COUNT)

    rids_only = False  # set by writes (_matching_rids): plan_and_run's ``rids`` (only record ids needed)
    projection_shown: dict | None = None  # an aggregate's pushed-down projection as explain prints it
    absorbs_project = False  # that projection is the pipeline's first $project, which leaves the pipeline
    min_bound: dict | None = None  # find's ``min`` / ``max`` (the hinted index's key bounds, set by the cursor)
    max_bound: dict | None = None
    return_key = False  # find's ``returnKey``: a RETURN_KEY stage gives each result's index key (return_key.cpp)
    sort_key_fields: list[str] = []  # with returnKey: the projection's {$meta: "sortKey"} fields
    show_record_id = False  # find's ``showRecordId``: the projection gains ``$recordId: {$meta: "recordId"}``


@dataclass(eq=False)
class Candidate:
    """One query solution: a recipe for a fresh stage tree plus what the ranker needs to know (the trial sets
    ``root``, ``results`` and ``score``)."""

    build: Callable[[], Stage]
    index: Any = None
    has_fetch: bool = True
    has_sort: bool = False
    desc: str = ""
    root: Stage | None = field(default=None, init=False)
    results: list = field(default_factory=list, init=False)
    score: float = field(default=0.0, init=False)


def _sort_key_fn(sort: list[tuple[str, int]], store) -> Callable[[tuple], tuple]:
    parts = [(f.split("."), d < 0) for f, d in sort]
    if len(parts) == 1 and len(parts[0][0]) == 1:
        one, desc = parts[0]
        one_key = K.doc_sort_key  # what doc_sort_keys computes for a single field

        def key1(m: tuple) -> tuple:
            doc = m[1]
            if doc is None:
                doc = store.docs.get(m[0])
            return (one_key(doc, one, desc),)
        return key1

    def key(m: tuple) -> tuple:
        doc = m[1]
        if doc is None:
            doc = store.docs.get(m[0])
        return K.doc_sort_keys(doc, parts)
    return key


def _is_inclusion_projection(proj: dict | None) -> bool:
    if not proj:
        return False
    for k, v in proj.items():
        if k == "_id":
            continue
        if isinstance(v, dict) or not (v is True or v == 1) or isinstance(v, str):
            return False
    return True


def _null_like(p: Pred) -> bool:
    """An equality to null, or an ``$in`` listing null: its index key null stands for null and missing."""
    return p.kind == "null" or (p.kind == "in" and isinstance(p.arg, (list, tuple)) and any(v is None for v in p.arg))


RECORD_ID_META = {"$meta": "recordId"}


def with_record_id(projection: dict) -> dict:
    """The projection a find with ``showRecordId`` runs (query_request_helper.cpp ``addShowRecordIdMetaProj``):
    ``$recordId: {$meta: "recordId"}`` appended unless the projection already names ``$recordId``."""
    if "$recordId" in projection:
        return dict(projection)
    return {**projection, "$recordId": dict(RECORD_ID_META)}


def projection_kind(proj: dict | None) -> str:
    if not proj:
        return ""
    for k, v in proj.items():
        if isinstance(v, dict) or "." in k or "$" in k or (not isinstance(v, (bool, int, float))):
            return "PROJECTION_DEFAULT"
    return "PROJECTION_SIMPLE"


class Planner:
    """Builds candidate plans for one query over one collection store."""

    def __init__(self, store, query: Query) -> None:
        self.store = store
        self.q = query
        self.parsed = Parsed(query.filter)
        self.match_all = make_matcher(query.filter, query.let) if query.filter else None
        self.sort_key = _sort_key_fn(query.sort, store) if query.sort else None
        self._keyfilters: dict[str, list[tuple[int, Pred]]] = {}

    # -- index eligibility ---------------------------------------------------------------------------
    def visible_indexes(self) -> list:
        return [ix for ix in self.store.ix.values() if not ix.spec.hidden]

    def hinted_index(self):
        h = self.q.hint
        if h is None:
            return None
        if isinstance(h, str):
            ix = self.store.ix.get(h)
        else:
            pattern = list(h.items()) if isinstance(h, dict) else [tuple(x) for x in h]
            if pattern and pattern[0][0] == "$natural":
                return "$natural"
            found = [cand for cand in self.store.ix.values()
                     if cand.spec.key == pattern or [(f, d) for f, d in cand.spec.key] == pattern]
            if len(found) > 1:  # since 5.0 indexes may share a key pattern (query_planner.cpp)
                raise OperationFailure("error processing query: planner returned error :: caused by :: Hint "
                                       "matched multiple indexes, must hint by index name. Matched: %s and %s"
                                       % (_entry_str(found[0]), _entry_str(found[1])), 27)
            ix = found[0] if found else None
        if ix is None or ix.spec.hidden:
            raise OperationFailure("error processing query: planner returned error :: caused by :: "
                                   "hint provided does not correspond to an existing index", 2)
        return ix

    def _partial_ok(self, ix, by_path: dict[str, list[Pred]] | None = None) -> bool:
        """A partial index answers the query only if the query predicate implies its filter expression
        (the server's ``expression::isSubsetOf``; manual "Partial Indexes" > "Query Coverage")."""
        pf = ix.spec.partial
        if pf is None:
            return True
        cache = self.__dict__.setdefault("_partial_cache", {})
        name = ix.spec.name
        if name not in cache:
            from ..matcher.subset import implies
            qc = getattr(self, "collation", None)
            ic = getattr(ix.spec, "collation", None)
            coll: Any = None if (qc is None and ic is None) else (qc if qc == ic else False)
            cache[name] = implies(self.q.filter, pf, coll)
        return cache[name]

    def _allowed(self, ix, p: Pred) -> bool:
        if not p.indexable:
            return False
        if ix.spec.hashed and p.path in ix.spec.hashed and not _hash_point_pred(p):
            return False  # a hashed field answers only equality / $in (manual "Hashed Indexes")
        if any(part.isdigit() for part in p.path.split(".")):
            return False
        if ix.spec.sparse and _can_match_missing(p):
            return False  # a sparse index lacks the documents without the field (planner_ixselect.cpp)
        if p.kind in ("exists_false", "arrayeq") and ix.multikey_paths.get(p.path):
            return False
        if p.kind == "null" and (ix.multikey_paths.get(p.path) or set()) - {p.path}:
            return False  # an array above the field: {a: [1, {b: 2}]} has a null key for "a.b"
        if p.kind == "ne" and ix.multikey_paths.get(p.path) and not _can_match_missing(p):
            # $ne: null / $nin with null: an empty array is keyed as null, so the inverted bounds would miss
            # documents like {a: []} for "a.x" (planner_ixselect.cpp: "Most of the time we can't use a multikey
            # index for a $ne: null query"; isQueryNegatingEqualToNull)
            return False
        if p.kind in ("exists_false", "arrayeq") and any(v for v in ix.multikey_paths.values()):
            return False
        return True

    def assign(self, ix, by_path: dict[str, list[Pred]]) -> tuple[list[list[Interval]], list[Pred], bool]:
        """Bounds for every index field, the predicates answered exactly, and whether the leading field
        got a predicate."""
        bounds: list[list[Interval]] = []
        exact_used: list[Pred] = []
        lead = False
        keyf: list[tuple[int, Pred]] = []
        mk_seen: list[tuple[set[str], Any]] = []  # (multikey components, $elemMatch group of its bounds)
        for i, f in enumerate(ix.spec.fields):
            ps = [p for p in by_path.get(f, []) if self._allowed(ix, p)]
            mk = ix.multikey_paths.get(f) or set()
            if mk and any(mk & s for s, _ in mk_seen):
                # bounds on fields sharing a multikey path compound only inside one $elemMatch on that
                # path (manual "Multikey Index Bounds" > compound bounds, $elemMatch on array documents)
                ps = [p for p in ps if p.elem_group is not None and all(
                    g is not None and g is p.elem_group[0] and _elem_covers(p.elem_group[1], mk & s)
                    for s, g in mk_seen if mk & s)]
            chosen: list[Pred] = []
            if ps:
                if mk:
                    elem = [p for p in ps if p.kind == "elem"]
                    grouped = [p for p in ps if p.elem_group is not None and _elem_covers(p.elem_group[1], mk)]
                    if elem:
                        chosen = elem[:1]
                    elif grouped:  # several predicates of one $elemMatch apply to the same element
                        chosen = [p for p in grouped if p.elem_group is grouped[0].elem_group]
                    else:
                        chosen = ps[:1]
                else:
                    chosen = ps
            if mk:
                gs = {id(p.elem_group[0]) if p.elem_group is not None else None for p in chosen}
                mk_seen.append((mk, chosen[0].elem_group[0] if chosen and len(gs) == 1 and None not in gs
                                else None))
            if not ps:
                bounds.append(full())
                continue
            if i == 0:
                lead = True
            ivs = full()
            for p in chosen:
                ivs = intersect(ivs, p.intervals)
            hashed = f in ix.spec.hashed
            if hashed:
                ivs = _hash_intervals(ivs)
            bounds.append(ivs)
            for p in chosen:
                if hashed:
                    continue  # hashed bounds are never exact (collisions): the FETCH filter decides
                if p.exact and not (mk and p.kind == "ne") and not (mk - {f} and _null_like(p)):
                    exact_used.append(p)
                elif p.kind == "regex":
                    keyf.append((i, p))
        self._keyfilters[ix.spec.name] = keyf
        return bounds, exact_used, lead

    # -- candidate generation ---------------------------------------------------------------------
    def candidates(self) -> tuple[list[Candidate], dict]:
        """Candidate plans and notes (e.g. {"subplan": True}). A count (the count command, or a pipeline whose
        later stages need no document field: ``Query.count_like``) takes the first candidate that can become a
        COUNT_SCAN, alone, without a trial (get_executor.cpp: "See if one of our solutions is a fast count
        hack in disguise", ``turnIxscanIntoCount``)."""
        cands, notes = self._candidates()
        if self.q.kind == "count" or self.q.count_like:
            for c in cands:
                scan = _count_scan_source(c.build())
                if scan is not None:
                    ix, bounds = scan.index, scan.vbounds

                    def build_count() -> Stage:
                        return CountScan(ix, bounds)
                    return [Candidate(build_count, ix, False, False, desc="COUNT_SCAN")], notes
        return cands, notes

    def _candidates(self) -> tuple[list[Candidate], dict]:
        q = self.q
        parsed = self.parsed
        notes: dict[str, Any] = {}
        if parsed.false:
            return [Candidate(lambda: EOFStage("predicateEvalsToFalse"), has_fetch=False, desc="EOF")], notes
        if q.min_bound or q.max_bound:
            return [self._min_max_candidate()], notes
        hint = self.hinted_index()
        if hint == "$natural":
            return [self._collscan_candidate()], notes
        idv = self._idhack_value()
        if idv is not _NO_ID:
            ix = self.store.ix["_id_"]
            store = self.store

            def build_id() -> Stage:
                return self._finish(IdHack(ix, store, idv), blocking_sort=False, covered=False)
            return [Candidate(build_id, ix, True, False, desc="IDHACK")], notes
        by_path = parsed.by_path()
        cands: list[Candidate] = []
        if hint is not None:
            bounds, exact, lead = self.assign(hint, by_path) if self._partial_ok(hint, by_path) else \
                ([full() for _ in hint.spec.fields], [], False)
            if not lead:
                bounds, exact = [full() for _ in hint.spec.fields], []
            cands.extend(self._index_candidates(hint, bounds, exact))
            return cands[:1], notes
        # rooted $or (only $or at the top level) -> SUBPLAN/OR when every branch is indexed
        if parsed.ors and not parsed.preds and not parsed.others and len(parsed.ors) == 1:
            orc = self._or_candidate(parsed.ors[0])
            if orc is not None:
                notes["subplan"] = True
                return [orc], notes
        indexes = self.visible_indexes()
        # unique single-field equality prunes the rest
        for ix in indexes:
            if ix.spec.unique and len(ix.spec.fields) == 1 and ix.spec.partial is None and not ix.spec.sparse:
                ps = [p for p in by_path.get(ix.spec.fields[0], []) if p.is_equality and self._allowed(ix, p)]
                if ps:
                    bounds, exact, lead = self.assign(ix, by_path)
                    return self._index_candidates(ix, bounds, exact)[:1], notes
        providing_sort: list = []
        for ix in indexes:
            if not self._partial_ok(ix, by_path):
                continue
            bounds, exact, lead = self.assign(ix, by_path)
            if lead:
                cands.extend(self._index_candidates(ix, bounds, exact))
            elif q.sort and self._sort_dir(ix, [full() for _ in ix.spec.fields]) and not ix.spec.sparse:
                providing_sort.append(ix)  # partial ones only when implied (checked above), as the server does
        if any(not c.has_sort for c in cands):
            # query_planner.cpp adds "index provides the sort" whole-index scans only when no indexed
            # solution already avoids a blocking SORT (``usingIndexToSort``)
            providing_sort = []
        for ix in providing_sort:
            cands.extend(self._index_candidates(ix, [full() for _ in ix.spec.fields], []))
        if not cands:
            cands.append(self._collscan_candidate())
        return cands, notes

    def _idhack_value(self) -> Any:
        """The ``_id`` value of an IDHACK-eligible find (src/mongo/db/query/get_executor.cpp
        isIdHackEligibleQuery: no hint, skip, min/max or showRecordId; ``CanonicalQuery::isSimpleIdQuery``:
        the filter is ``{_id: v}`` or ``{_id: {$eq: v}}`` with v not an operator object; the query collation
        equal to the collection's), else ``_NO_ID``. 8.0 runs most of these as EXPRESS_IXSCAN first
        (``express_eligible``); IDHACK remains for the rest (e.g. computed projections)."""
        q = self.q
        if q.kind != "find" or q.hint is not None or q.skip or "_id_" not in self.store.ix or q.show_record_id:
            return _NO_ID
        v = simple_id_value(q.filter)
        if v is not _NO_ID and getattr(self, "collation", None) is not None and _has_string(v):
            return _NO_ID
        return v

    def _collscan_candidate(self) -> Candidate:
        q = self.q
        store = self.store
        match = self.match_all
        shown = q.filter or None

        h = q.hint
        if isinstance(h, (list, tuple)) and h and isinstance(h[0], (list, tuple)):
            h = dict(h)
        direction = -1 if isinstance(h, dict) and h.get("$natural", 1) < 0 else 1  # {$natural: -1}: backward

        def build() -> Stage:
            root: Stage = CollScan(store, match, shown, direction)
            return self._finish(root, blocking_sort=bool(q.sort), covered=False)
        return Candidate(build, None, True, bool(q.sort), desc="COLLSCAN")

    def _min_max_candidate(self) -> Candidate:
        """find with ``min`` / ``max`` (query_planner.cpp): only the hinted index, scanned from the ``min`` key
        (inclusive) to the ``max`` key (exclusive) in index order, the whole filter applied by FETCH; a
        ``sort`` the index order gives (either way) needs no SORT stage. Errors as the planner's: no hint
        51173, a ``$natural`` hint NoQueryExecutionPlans (291), bounds whose fields are not the index's key
        pattern 51174, ``min`` not before ``max`` 51175 (jstests/core/query/minmax.js)."""
        q = self.q

        def refused(msg: str, code: int) -> OperationFailure:
            return OperationFailure("error processing query: planner returned error :: caused by :: " + msg, code)
        ix = self.hinted_index()
        if ix is None:
            raise refused("When using min()/max() a hint of which index to use must be provided", 51173)
        if ix == "$natural":
            raise refused("min and max are incompatible with $natural", 291)
        if ix.spec.hashed or ix.spec.collation is not None or any(
                not isinstance(d, (int, float)) or isinstance(d, bool) for _, d in ix.spec.key):
            raise unsupported("find min/max on a hashed, special or collated index",
                              "a range filter on the indexed fields with hint()")
        if self.store.options and "clusteredIndex" in self.store.options:
            raise unsupported("find min/max on a clustered collection", "a range filter on _id")
        if getattr(self, "collation", None) is not None:  # collate.py's planner: string bounds need the collation
            raise unsupported("find min/max with a collation", "a range filter on the indexed fields with hint()")

        def key_of(bound: dict | None) -> tuple | None:
            if not bound:
                return None
            if list(bound) != ix.spec.fields:
                raise refused("The index chosen is not compatible with min/max", 51174)
            kf = ix.keyfunc
            return tuple(K.invert(kf(v)) if d else kf(v) for v, d in zip(bound.values(), ix.spec.desc))
        start, end = key_of(q.min_bound), key_of(q.max_bound)
        if start is not None and end is not None and start >= end:
            raise refused("The value provided for min() does not come before the value provided for max() in the "
                          "hinted index", 51175)
        store = self.store
        match = self.match_all
        shown = q.filter or None
        direction = self._sort_dir(ix, [full() for _ in ix.spec.fields])
        covered = self._covered(ix, not q.filter)

        def build() -> Stage:
            root: Stage = RangeIndexScan(ix, start, end, direction or 1)
            if not covered:
                root = Fetch(root, store, match, shown)
            return self._finish(root, blocking_sort=not direction, covered=covered)
        return Candidate(build, ix, not covered, bool(q.sort) and not direction, desc=ix.spec.name)

    def _sort_dir(self, ix, bounds: list[list[Interval]]) -> int:
        """+1/-1 if scanning ``ix`` with ``bounds`` yields the requested sort order, else 0."""
        sort = self.q.sort
        if not sort:
            return 1
        if any(ix.multikey_paths.get(f) for f, _ in sort):
            return 0
        if ix.spec.hashed and any(f in ix.spec.hashed for f, _ in sort):
            return 0  # hash order is not value order
        fields = ix.spec.fields
        dirs = [-1 if d else 1 for d in ix.spec.desc]
        point = [len(b) == 1 and b[0].is_point for b in bounds]
        # drop equality-bound index fields and sort fields bound to points
        eff = [(f, d) for f, d, p in zip(fields, dirs, point) if not p]
        point_fields = {f for f, p in zip(fields, point) if p}
        want = [(f, 1 if d > 0 else -1) for f, d in sort if f not in point_fields]
        if not want:
            return 1
        if len(want) > len(eff):
            return 0
        if all(w == e for w, e in zip(want, eff)):
            return 1
        if all(w[0] == e[0] and w[1] == -e[1] for w, e in zip(want, eff)):
            return -1
        return 0

    def _covered(self, ix, exact_all: bool) -> bool:
        proj = self.q.projection
        if self.q.return_key:  # the projection is ignored: only the filter and an in-memory sort need documents
            return exact_all and not ix.multikey and not ix.spec.hashed and (
                not self.q.sort or {f for f, _ in self.q.sort} <= set(ix.spec.fields))
        if not exact_all or not _is_inclusion_projection(proj) or ix.multikey or ix.spec.hashed:
            return False  # hashed indexes never cover (covered_index_negative_1.js)
        fields = set(ix.spec.fields)
        want = {k for k, v in proj.items() if k != "_id"}
        if any(_null_like(p) and p.path in want for p in self.parsed.preds):
            return False  # a null key is null or missing: the document tells (jstests/core/query/cover_null_queries.js)
        if proj.get("_id", 1) not in (0, False) and "_id" not in fields:
            return False
        if not want <= fields:
            return False
        if self.q.sort and not {f for f, _ in self.q.sort} <= fields:
            return False
        return True

    def _index_candidates(self, ix, bounds: list[list[Interval]], exact: list[Pred]) -> list[Candidate]:
        q = self.q
        store = self.store
        parsed = self.parsed
        key_filter, key_shown, on_key = self._key_check(ix, bounds)
        residual_frags = [p.frag for p in parsed.preds if p not in exact and p not in on_key
                          and p.elem_group is None]  # derived bounds: their $elemMatch is the filter
        residual_frags += parsed.others + [{"$or": o} for o in parsed.ors]
        exact_all = not residual_frags
        shown = and_filter(_dedupe(residual_frags)) or None
        match = None if exact_all else self.match_all
        direction = self._sort_dir(ix, bounds)
        covered = self._covered(ix, exact_all)
        # a count reads no field: when the index answers the whole filter no document is fetched
        # (jstests/core/query/cover_null_queries.js: a count over two intervals is an IXSCAN without FETCH)
        keys_only = (q.kind == "count" or q.count_like) and exact_all and not q.sort and not q.projection
        empty = any(len(b) == 0 for b in bounds)

        def IndexScan(ix_, b_, d_):  # noqa: N802 - IXSCAN with the key-level (regex) filter attached
            return _IndexScan(ix_, b_, d_, key_filter, key_shown)
        # SERVER-13946 (jstests/core/query/add_skip_stage_before_fetch.js): when the index answers the whole
        # filter and provides the order, SKIP goes below FETCH so skipped documents are never fetched
        skip_below = bool(q.skip) and not covered and match is None and not keys_only

        def fetch_over(child: Stage) -> Stage:
            if keys_only:
                return child
            if skip_below:
                child = Skip(child, q.skip)
            return Fetch(child, store, match, shown)
        if direction:
            def build() -> Stage:
                if empty:
                    scan: Stage = IndexScan(ix, bounds, 1)
                else:
                    scan = IndexScan(ix, bounds, direction)
                root = scan if covered else fetch_over(scan)
                return self._finish(root, blocking_sort=False, covered=covered, skip_done=skip_below)
            return [Candidate(build, ix, not covered, False, desc=ix.spec.name)]
        # explode for sort: leading point fields split into one scan per combination
        exploded = self._explode(ix, bounds)
        if exploded is not None:
            def build_m() -> Stage:
                scans = [IndexScan(ix, b, d) for b, d in exploded]
                merge = SortMerge(scans, q.sort, self._index_sort_key(ix))
                root = merge if covered else fetch_over(merge)
                return self._finish(root, blocking_sort=False, covered=covered, skip_done=skip_below)
            return [Candidate(build_m, ix, not covered, False, desc=ix.spec.name + " (SORT_MERGE)")]

        def build_s() -> Stage:
            scan = IndexScan(ix, bounds, 1)
            root = scan if covered or keys_only else Fetch(scan, store, match, shown)
            return self._finish(root, blocking_sort=True, covered=covered)
        return [Candidate(build_s, ix, not covered, bool(q.sort), desc=ix.spec.name)]

    def _key_check(self, ix, bounds: list[list[Interval]]) -> tuple[Callable[[tuple], bool] | None, dict | None,
                                                                      list[Pred]]:
        """The IXSCAN's own filter for ``ix`` (after ``assign``): the predicates whose bounds are inexact but that
        the index keys can decide (INEXACT_COVERED, e.g. a regex without a plain prefix), as a key test, the
        filter explain shows on the IXSCAN, and those predicates (no document is fetched for a key failing
        them)."""
        keyf = [(i, p) for i, p in self._keyfilters.get(ix.spec.name, []) if bounds[i]]
        if not keyf:
            return None, None, []
        on_key = [p for _, p in keyf]
        return _key_filter(ix, keyf), and_filter(_dedupe([p.frag for p in on_key])) or None, on_key

    def _index_sort_key(self, ix) -> Callable[[tuple], tuple]:
        return self.sort_key

    def _explode(self, ix, bounds: list[list[Interval]]):
        n = 1
        for j, b in enumerate(bounds):
            if all(i.is_point for i in b) and b:
                n *= len(b)
                if n > MAX_SCANS_TO_EXPLODE - 1:
                    return None
                rest = [[iv] for iv in b]
                combos = list(itertools.product(*bounds[:j + 1]))
                tail = bounds[j + 1:]
                # the sort must be provided by the remaining fields once the exploded ones are points
                test = [[iv] for iv in combos[0]] + tail
                d = self._sort_dir(ix, test)
                if d and len(combos) > 1:
                    return [([[iv] for iv in c] + tail, d) for c in combos]
            else:
                return None
        return None

    def _finish(self, root: Stage, blocking_sort: bool, covered: bool, skip_done: bool = False) -> Stage:
        q = self.q
        if blocking_sort and q.sort:
            lim = (q.skip + q.limit) if q.limit else 0
            memory = None
            if q.allow_disk_use is False or _EXPLAINING.get():
                from ..exec.stages import SortMemory
                memory = SortMemory(q.allow_disk_use is not False, q.origin)  # allowDiskUseByDefault: true
            root = Sort(root, q.sort, self.sort_key, lim, covered=covered, memory=memory, store=self.store)
        if q.return_key:
            # planner_analysis.cpp analyzeDataAccess: SKIP, then RETURN_KEY instead of any projection, then LIMIT
            if q.skip and not skip_done:
                root = Skip(root, q.skip)
            if q.sort_key_fields and not (blocking_sort and q.sort):  # addSortKeyGeneratorStageIfNeeded
                root = Passthrough(root, "SORT_KEY_GENERATOR")
            root = ReturnKey(root, self.store, q.sort_key_fields, q.sort)
            if q.limit and not (blocking_sort and q.sort):
                root = Limit(root, q.limit)
            return root
        if q.projection or q.show_record_id:
            shown = q.projection_shown or q.projection or {}
            if q.show_record_id:
                shown = with_record_id(shown)
            kind = "PROJECTION_COVERED" if covered else \
                "PROJECTION_DEFAULT" if q.show_record_id else projection_kind(q.projection)
            root = Projection(root, kind, shown, self.store if covered else None)
        elif covered:
            root = Projection(root, "PROJECTION_COVERED", {}, self.store)
        if q.skip and not skip_done:
            root = Skip(root, q.skip)
        if q.limit and not (blocking_sort and q.sort and not q.skip):
            root = Limit(root, q.limit)
        elif q.limit and blocking_sort and q.sort and q.skip:
            root = Limit(root, q.limit)
        return root

    def _branch_planner(self, branch: dict) -> "Planner":
        """The planner of one ``$or`` branch (the subplanner plans each branch alone)."""
        return Planner(self.store, Query(branch, hint=None, let=self.q.let))

    def _or_branches(self, branches: list) -> list | None:
        """``(planner, winning candidate)`` of each ``$or`` branch, or None when a branch cannot use an index
        (then the ``$or`` is no SUBPLAN candidate)."""
        subs = []
        for br in branches:
            if not isinstance(br, dict):
                return None
            sub = self._branch_planner(br)
            if sub.parsed.ors or sub.parsed.false:
                return None
            cands, _ = sub.candidates()
            if not cands or cands[0].index is None:
                return None
            winner = run_trial(cands, len(self.store.docs))[0] if len(cands) > 1 else cands[0]
            subs.append((sub, winner))
        return subs

    def _or_candidate(self, branches: list) -> Candidate | None:
        store = self.store
        subs = self._or_branches(branches)
        if subs is None:
            return None
        q = self.q
        match = self.match_all
        shown = q.filter

        # planner_access.cpp buildIndexedOr: when every branch's scan yields the requested order, the OR
        # becomes a SORT_MERGE of the branch scans (no blocking SORT)
        plans = []
        for sub, w in subs:
            bounds, exact, lead = sub.assign(w.index, sub.parsed.by_path())
            # a branch's inexact-but-covered predicates (a regex) are checked on its keys (get_executor's
            # subplanner plans each branch alone: the branch IXSCAN carries its filter)
            key_filter, key_shown, _ = sub._key_check(w.index, bounds)
            plans.append((w.index, bounds, key_filter, key_shown))
        dirs = [self._sort_dir(ix, b) if q.sort else 1 for ix, b, _, _ in plans]
        merge = bool(q.sort) and all(dirs)

        def build() -> Stage:
            scans = [IndexScan(ix, b, d if merge else 1, kf, ks) for (ix, b, kf, ks), d in zip(plans, dirs)]
            child: Stage = SortMerge(scans, q.sort, self.sort_key) if merge else Or(scans)
            root: Stage = Fetch(child, store, match, None)
            root = self._finish(root, blocking_sort=bool(q.sort) and not merge, covered=False)
            return Passthrough(root, "SUBPLAN")
        return Candidate(build, None, True, bool(q.sort) and not merge, desc="SUBPLAN")


_NO_ID = object()


def simple_id_value(filter_: dict) -> Any:
    """The ``_id`` value of a filter that is a simple ``_id`` equality (query_utils.cpp ``isSimpleIdQuery``:
    the only field is ``_id``, its value ``v`` or ``{$eq: v}``, ``v`` generating exact index bounds: not an
    operator document, null, an array or a regex), else ``_NO_ID``."""
    if not isinstance(filter_, dict) or len(filter_) != 1 or "_id" not in filter_:
        return _NO_ID
    v = filter_["_id"]
    if isinstance(v, dict) and len(v) == 1 and "$eq" in v:
        v = v["$eq"]
    if isinstance(v, dict) and v and str(next(iter(v))).startswith("$"):
        return _NO_ID
    if v is None or isinstance(v, (list, tuple)) or K.canonical_type(v) == K.T_REGEX:
        return _NO_ID
    return v


def idhack_eligible(store, q: "Query", collation: dict | None) -> bool:
    """``isIdHackEligibleQuery`` (src/mongo/db/query/query_utils.h, 8.0): no hint, skip or min/max (an
    aggregate has no showRecordId or tailable), a simple ``_id`` equality filter, and the query's collation
    the collection's (the engine's collections have the simple default collation). query_utils.cpp
    ``isQuerySbeCompatible`` keeps such a query out of SBE, so an aggregate that starts with it runs its
    later stages in the classic engine."""
    if not store.is_created or q.hint is not None or q.skip or q.min_bound or q.max_bound:
        return False
    return collation is None and simple_id_value(q.filter) is not _NO_ID


def _count_scan_source(root: Stage) -> "IndexScan | None":
    """The IXSCAN a count can read instead of ``root`` (``turnIxscanIntoCount``, query_planner / get_executor):
    ``root`` is a FETCH without a filter over an IXSCAN without a filter whose bounds are one interval
    (``IndexBoundsBuilder::isSingleInterval``: equalities, then at most one range, then whole fields)."""
    if type(root) is _IndexScan:
        scan = root  # a count's IXSCAN without FETCH (the index answers the filter)
    elif type(root) is not Fetch or root.match is not None:
        return None
    else:
        scan = root.children[0]
    if type(scan) is not _IndexScan or scan.key_filter is not None or not scan.single:
        return None
    return scan


def _entry_str(ix) -> str:
    """``IndexEntry::toString`` (src/mongo/db/query/index_entry.cpp), as planner errors print an index."""
    spec = ix.spec
    out = "kp: " + K.fmt_value(dict(spec.key))
    if ix.multikey:
        out += " multikey"
    if spec.sparse:
        out += " sparse"
    if spec.unique:
        out += " unique"
    out += " name: '%s'" % spec.name
    if spec.partial is not None:
        out += " filterExpr: " + K.fmt_value(spec.partial)
    return out + " io: " + K.fmt_value(spec.info())


def _has_string(v: Any) -> bool:
    if isinstance(v, str):
        return True
    if isinstance(v, dict):
        return any(_has_string(x) for x in v.values())
    return False


def _hash_point_pred(p: Pred) -> bool:
    """Equality, $in or null: every interval a point (what a hashed field can look up)."""
    return p.kind in ("eq", "in", "null") and bool(p.intervals) and all(i.is_point for i in p.intervals)


def _hash_intervals(ivs: list[Interval]) -> list[Interval]:
    """Point intervals on values -> point intervals on their hashes (hashed.hash64), in key order."""
    from ..index.bounds import point
    from ..index.hashed import hash64
    if not all(i.is_point for i in ivs):
        return ivs
    pts = {}
    for i in ivs:
        iv = point(hash64(i.lo_d))
        pts[iv.lo] = iv
    return [pts[k] for k in sorted(pts)]


def _can_match_missing(p: Pred) -> bool:
    """Whether a predicate is true for a document without the field ({a: null}, $exists: false, $in with
    null, $ne / $nin of non-null values): a sparse index cannot answer it (manual "Sparse Indexes")."""
    if p.kind in ("null", "exists_false"):
        return True
    if p.kind == "in":
        return any(v is None for v in (p.arg or []))
    if p.kind == "ne":
        negated = p.arg if p.op == "$nin" else [p.arg]
        return not any(v is None for v in negated)
    return False


def _key_filter(ix, keyf: list) -> Callable[[tuple], bool]:
    """Regex predicates evaluated on index keys (INEXACT_COVERED): no document fetch for non-matches."""
    import re
    from ..index.bounds import _regex_parts
    tests = []
    for pos, p in keyf:
        r, _ = _regex_parts(p.arg, (p.frag.get(p.path) or {}).get("$options", "") if isinstance(
            p.frag.get(p.path), dict) else "")
        flags = 0
        fl = r.flags if isinstance(r.flags, str) else K.regex_flag_letters(r.flags)
        for ch, bit in (("i", re.I), ("m", re.M), ("s", re.S), ("x", re.X)):
            if ch in fl:
                flags |= bit
        tests.append((pos, re.compile(V.pcre_to_python(r.pattern), flags), ix.spec.desc[pos], K.encode(r)))

    def f(key: tuple) -> bool:
        for pos, rx, desc, same_regex in tests:
            kb = key[pos]
            if desc:
                kb = K.invert(kb)
            t = kb[0]
            if t == K.T_STR:
                if not rx.search(K.decode_str(kb)):
                    return False
            elif t != K.T_REGEX or kb != same_regex:  # a stored regex matches the same pattern and flags only
                return False
        return True
    return f


def _elem_covers(elem_path: str, components: set[str]) -> bool:
    """Every multikey path component is the $elemMatch path or above it (one array element decides)."""
    return all(c == elem_path or elem_path.startswith(c + ".") for c in components)


def _nest(path: str, v: Any) -> dict:
    parts = path.split(".")
    d: Any = v
    for p in reversed(parts):
        d = {p: d}
    return d


def _contained(iv: Interval, outer: list[Interval]) -> bool:
    for o in outer:
        lo_ok = o.lo < iv.lo or (o.lo == iv.lo and (o.lo_incl or not iv.lo_incl))
        hi_ok = iv.hi < o.hi or (iv.hi == o.hi and (o.hi_incl or not iv.hi_incl))
        if lo_ok and hi_ok:
            return True
    return False


def _dedupe(frags: list[dict]) -> list[dict]:
    out = []
    for f in frags:
        if f not in out:
            out.append(f)
    return out


# ------------------------------------------------------------------------------------------ ranking

def _score(c: Candidate) -> float:
    root = c.root
    works = max(root.works, 1)
    eps = min(1.0 / (10 * works), 1e-4)
    s = 1 + root.advanced / works
    if root.eof:
        s += 1
    stage_names = {s.name for s in root.walk()}
    if "FETCH" not in stage_names:
        s += eps
    if "SORT" not in stage_names:
        s += eps
    if not ({"AND_HASH", "AND_SORTED"} & stage_names):
        s += eps
    return s


def run_trial(cands: list[Candidate], nrecords: int) -> tuple[Candidate, list[Candidate]]:
    """Round-robin trial (classic multi-planner). Returns (winner, all candidates with trial stats)."""
    for c in cands:
        c.root = c.build()
        c.results = []
    max_works = max(10000, int(0.3 * nrecords))
    total = 0
    done = False
    while not done:
        for c in cands:
            st = c.root.work()
            if st == ADVANCED:
                c.results.append(c.root.out)
                if len(c.results) >= TRIAL_MAX_RESULTS:
                    done = True
            elif st == IS_EOF:
                done = True
        total += 1
        if total >= max_works:
            break
    for c in cands:
        c.score = _score(c)
    _tie_breaks(cands)
    best = None
    for c in cands:
        if best is None or c.score > best.score:
            best = c
    return best, cands


# plan_ranker.h (8.0, internalQueryPlanTieBreakingWithIndexHeuristics on by default): when the top scores tie
# exactly, the fewest documents examined get +kBonusEpsilon and, if the tied plans have the same shape, the
# index-bounds winner (longest single-point prefix, then point prefix, closed-interval prefix, bounded prefix,
# then the shortest key pattern) gets +2 kBonusEpsilon.
BONUS_EPSILON = 1e-4


def _tie_breaks(cands: list[Candidate]) -> None:
    top = max(c.score for c in cands)
    tied = [c for c in cands if c.score == top]
    if len(tied) < 2:
        return
    docs = [totals(c.root)[1] for c in tied]
    for c, d in zip(tied, docs):
        if d == min(docs):
            c.score += BONUS_EPSILON
    roots = [c.root for c in tied]
    wins = [0] * len(tied)
    stack = [roots]
    while stack:
        nodes = stack.pop()
        if any(n.name != nodes[0].name or len(n.children) != len(nodes[0].children) for n in nodes):
            return  # shapes differ: no index-prefix bonus
        for i in range(len(nodes[0].children)):
            stack.append([n.children[i] for n in nodes])
        if isinstance(nodes[0], IndexScan):
            scores = [_bounds_score(n.vbounds) for n in nodes]
            for i, sc in enumerate(scores):
                if sc == max(scores):
                    wins[i] += 1
    best = max(wins)
    for c, w in zip(tied, wins):
        if w == best:
            c.score += 2 * BONUS_EPSILON


def _closed(iv: Interval) -> bool:
    """Both ends are values of one type and neither is that type's open end (MinKey/MaxKey, +-inf, "")."""
    lo, hi = iv.lo_d, iv.hi_d
    if iv.lo[:1] != iv.hi[:1]:
        return False
    for v in (lo, hi):
        if type(v).__name__ in ("MinKey", "MaxKey") or v in (float("inf"), float("-inf")) or v == "" or v == {}:
            return False
    return True


def _bounds_score(bounds: list[list[Interval]]) -> tuple:
    """getIndexBoundsScore (plan_ranker.cpp) as a comparable tuple."""
    single = points = closed = length = 0
    for ivs in bounds:
        if len(ivs) == 1 and ivs[0].is_full:
            break
        if length == single and len(ivs) == 1 and ivs[0].is_point:
            single += 1
        if length == points and ivs and all(i.is_point for i in ivs):
            points += 1
        if length == closed and all(_closed(i) for i in ivs):
            closed += 1
        length += 1
    return (single, points, closed, length, -len(bounds))


class Execution:
    """Result of planning and running a query: winner stage tree, all candidates, results."""

    def __init__(self, winner: Candidate, cands: list[Candidate], notes: dict, results: list, millis: int) -> None:
        self.winner = winner
        self.cands = cands
        self.notes = notes
        self.results = results
        self.millis = millis

    rids = False  # results are record ids (plan_and_run's ``rids``), not (rid, doc, key) members


def plan_and_run(store, query: Query, stop_after: int | None = None, explain_trial_snapshot: bool = False,
                 planner: "Planner | None" = None, fast_paths: bool = True, rids: bool | None = None) -> Execution:
    """Plan ``query``, run the winner to completion (or ``stop_after`` results) and keep stats.

    ``planner`` replaces the default :class:`Planner` (collation queries pass theirs); ``fast_paths=False``
    runs the winner one ``work()`` at a time without batching or the bulk full-scan shortcut. ``rids``: the
    caller (a multi-update) needs only the record ids, so ``results`` is a list of them, made without a
    ``(rid, doc, key)`` tuple per document (``Execution.rids`` says so); the stage counters are the same
    either way. None: ``query.rids_only``.
    """
    t0 = time.perf_counter()
    if rids is None:
        rids = query.rids_only
    if planner is None:
        planner = Planner(store, query)
    cands, notes = planner.candidates()
    trial_docs: list[dict] = []
    if len(cands) > 1:
        winner, cands = run_trial(cands, len(store.docs))
        if explain_trial_snapshot:
            trial_docs = [_snapshot(c) for c in cands]
        results = [m[0] for m in winner.results] if rids else list(winner.results)
    else:
        winner = cands[0]
        winner.root = winner.build()
        results = []
    root = winner.root
    if fast_paths:
        _enable_batching(root, [])
    done = False
    if fast_paths and isinstance(root, CollScan) and root.match is None and root._it is None and stop_after is None:
        # an unfiltered full scan: take every document at once, with the counters one-at-a-time gives
        if rids:
            results = list(store.docs)  # record ids only: no tuple per document
            if root.direction < 0:
                results.reverse()
        else:
            items = list(store.docs.items())
            if root.direction < 0:
                items.reverse()
            results = [(rid, doc, None) for rid, doc in items]
        n = len(results)
        root.docs_examined = n
        root.works = root.advanced = n
        root._it = iter(())
        root.work()  # the final IS_EOF call
        done = True
    if not done and stop_after is None:
        done = _count_forward(root, results)
    if not done and rids and fast_paths and stop_after is None:
        done = _fetch_forward(root, store, results)
    if not done and (stop_after is None or len(results) < stop_after):
        work = root.work
        while True:
            st = work()
            if st == ADVANCED:
                results.append(root.out[0] if rids else root.out)
                if stop_after is not None and len(results) >= stop_after:
                    break
            elif st == IS_EOF:
                break
    notes["trial"] = trial_docs
    if winner.index is not None:
        note_access(winner.index)
    else:
        for s in root.walk():
            if isinstance(s, IndexScan):
                note_access(s.index)
                break
    ex = Execution(winner, cands, notes, results, int((time.perf_counter() - t0) * 1000))
    ex.rids = rids
    return ex


def _forward_scan(root: Stage) -> "IndexScan | None":
    """The started IXSCAN under ``root`` when ``root`` is a FETCH (no filter) > IXSCAN over one interval of a
    non-multikey index without a key filter, neither at EOF: a scan whose rest can be read by positions (the
    shortcuts below). None for any other plan."""
    if type(root) is not Fetch or root.match is not None or root.eof:
        return None
    scan = root.children[0]
    if type(scan) is not IndexScan or not scan.single or scan.key_filter is not None or scan.seen is not None \
            or scan.eof:
        return None
    if scan.pos is None:
        if any(not ivs for ivs in scan.sb):
            return None  # an empty interval list: the ordinary loop reaches EOF at once
        scan._start()
    return scan


def _credit_forward(root: Stage, scan: "IndexScan", rem: int) -> None:
    """The counters of ``rem`` more keys and documents, then EOF: exactly what running ``work()`` on
    ``root`` to its end would leave (rem ADVANCED calls of each stage, then the IS_EOF one)."""
    scan.pos = scan.end
    scan.keys_examined += rem
    for st in (scan, root):
        st.works += rem + 1
        st.advanced += rem
        st.eof = True
    root.docs_examined += rem


def _count_forward(root: Stage, results: list) -> bool:
    """A COUNT_SCAN plan run to its end at once: the rest of the range is the distance between two binary-searched
    positions (distinct record ids on a multikey index); the stage counters end exactly as running ``work()``
    to EOF would leave them, and ``results`` gets one placeholder per counted record. False (nothing done)
    for any other plan."""
    if type(root) is not CountScan:
        return False
    results.extend([None] * root.count_rest())
    return True


def _fetch_forward(root: Stage, store, results: list) -> bool:
    """The record ids of the rest of a FETCH (no filter) > IXSCAN over one interval of a non-multikey index
    without a key filter (a multi-update's ``{field: value}`` or range), read from the index in one slice.
    The stage counters end exactly as running ``work()`` to EOF would leave them;
    False (nothing done) for any other plan, or when an entry's document is missing (the stepped FETCH then
    counts that entry differently)."""
    scan = _forward_scan(root)
    if scan is None:
        return False
    pos, end = scan.pos, scan.end
    if scan.direction > 0:
        if end < pos:
            return False
        lo, hi = pos, end
    else:
        if pos < end:
            return False
        lo, hi = end + 1, pos + 1
    found = list(scan.index.entries.rids_between(lo, hi))
    if scan.direction < 0:
        found.reverse()
    docs = store.docs
    for rid in found:
        if rid not in docs:
            return False
    _credit_forward(root, scan, len(found))
    results.extend(found)
    return True


def _enable_batching(stage: Stage, path: list) -> None:
    if isinstance(stage, CollScan):
        stage.ancestors = list(path)
        return
    if stage.name in ("SORT", "LIMIT", "SKIP", "SUBPLAN") or stage.name.startswith("PROJECTION"):
        for c in stage.children:
            _enable_batching(c, path + [stage])


def _snapshot(c: Candidate) -> dict:
    d = {"nReturned": c.root.advanced, "executionTimeMillisEstimate": 0,
         "totalKeysExamined": sum(getattr(s, "keys_examined", 0) for s in c.root.walk()),
         "totalDocsExamined": sum(getattr(s, "docs_examined", 0) for s in c.root.walk()),
         "score": round(c.score, 4), "executionStages": c.root.exec_doc()}
    return d


def totals(root: Stage) -> tuple[int, int]:
    keys = docs = 0
    for s in root.walk():
        keys += getattr(s, "keys_examined", 0)
        docs += getattr(s, "docs_examined", 0)
    return keys, docs


def express_eligible(store, q: Query) -> Any:
    """The index for an EXPRESS_IXSCAN plan (8.0), or None."""
    f = q.filter
    if q.hint is not None or q.skip or q.sort or len(f) != 1 or q.batch_size or q.return_key or q.show_record_id:
        return None  # isExpressEligible (8.0): no hint, skip, sort, batchSize, returnKey or showRecordId
    if q.projection and projection_kind(q.projection) != "PROJECTION_SIMPLE":
        return None
    return express_index(store, f, q.limit)


# a stored value of exactly one of these types equal to the looked-up value matches it (the matcher agrees;
# NaN, unequal to itself, and every other case ask the matcher)
_QUICK_EQ = frozenset({str, int, float, ObjectId})
_EXPRESS_SCALARS = frozenset({str, int, float})  # never None, an array, a regex or an operator document


def express_index(store, f: dict, limit: int) -> Any:
    """``express_eligible`` for a one-field filter ``f`` of a query without hint, skip, sort, batch size or
    a projection other than a simple one: the index, or None."""
    (path, cond), = f.items()
    if path.startswith("$"):
        return None
    if type(cond) in _EXPRESS_SCALARS:  # the common case: none of the checks below can refuse it
        pass
    elif isinstance(cond, dict) and cond and all(k.startswith("$") for k in cond):
        if list(cond) == ["$eq"]:
            cond = cond["$eq"]
        elif path == "_id" and list(cond) == ["$in"] and isinstance(cond["$in"], list) and len(cond["$in"]) == 1:
            cond = cond["$in"][0]
        else:
            return None
    if type(cond) in _EXPRESS_SCALARS:
        pass
    elif cond is None or isinstance(cond, (list, tuple)) or K.canonical_type(cond) == K.T_REGEX \
            if not isinstance(cond, dict) else any(str(k).startswith("$") for k in cond):
        return None
    if path == "_id":
        return store.ix["_id_"]
    best = None
    for ix in store.ix.values():
        s = ix.spec
        if s.hidden or s.partial is not None or s.sparse or s.collation is not None or ix.multikey or s.hashed:
            continue
        if s.fields[0] != path:
            continue
        if len(s.fields) == 1 and s.unique:
            if best is None or len(best.spec.fields) > 1:
                best = ix
        elif limit == 1 and (best is None or len(s.fields) < len(best.spec.fields)):
            best = ix
    return best


def express_value(cond: Any) -> Any:
    """The value an EXPRESS plan looks up for an eligible filter's condition (``$eq`` / one-element ``$in``)."""
    if isinstance(cond, dict) and "$eq" in cond:
        return cond["$eq"]
    if isinstance(cond, dict) and "$in" in cond:
        return cond["$in"][0]
    return cond


def express_bounds(index, value: Any) -> tuple[tuple, tuple]:
    """The entries an EXPRESS_IXSCAN reads for ``value``: those ``lo <= entry < hi``, where the first key part
    is ``value``'s (from ``(e,)`` up to ``(e, HIGH)``; HIGH sorts after any part)."""
    e = K.encode(value)
    if index.spec.desc[0]:
        e = K.invert(e)
    return ((e,),), ((e, K.HIGH),)


def express_first(store, index, value: Any) -> tuple[int, dict] | None:
    """What an EXPRESS_IXSCAN limited to one document returns, without building the stage: the first entry
    of ``value``'s key range whose document matches ``{field: value}`` (``Express`` with limit 1; used when
    no one observes the run's counters; tests/test_engine_speed.py compares the two)."""
    lo, hi = express_bounds(index, value)
    entries = index.entries
    docs = store.docs
    field = index.spec.fields[0]
    quick = "." not in field and type(value) in _QUICK_EQ
    if quick:  # the first entries of the range, without positions: nearly always the answer is the first
        for ent in entries.head_from(lo, 8):
            if ent >= hi:
                return None
            doc = docs.get(ent[1])
            if doc is None:
                continue
            v = doc.get(field)
            if type(v) is type(value) and v == value:
                return ent[1], doc
            break  # another value with the same key (1 and 1.0): the walk below decides
    n = len(entries)
    pos = entries.bisect_left(lo)
    match = None
    chunk = 8
    while pos < n:
        stop = min(n, pos + chunk)
        for ent in entries.items_between(pos, stop):
            if ent >= hi:
                return None
            doc = docs.get(ent[1])
            if doc is None:
                continue
            if quick:
                v = doc.get(field)
                if type(v) is type(value) and v == value:
                    return ent[1], doc
            if match is None:
                match = fast_matcher({field: value})
            if match(doc):
                return ent[1], doc
        pos = stop
        chunk *= 8
    return None


class Express(PointLookup):
    name = "EXPRESS_IXSCAN"

    def __init__(self, index, store, value: Any) -> None:
        super().__init__(index, store, value)
        self._rids: list[int] | None = None
        self._match: Callable[[dict], bool] | None = None
        field = index.spec.fields[0]
        self._field = field
        # a plain string or int compared with a top-level field: a stored value of exactly that type and equal
        # matches (the general matcher agrees); anything else asks the general matcher (compiled on first use)
        self._quick = "." not in field and type(value) in _QUICK_EQ

    def _load(self) -> bool:
        """Fetch the next chunk of record ids of the key range (a limit-1 find reads only the first few)."""
        entries = self.index.entries
        if self._rids is None:
            lo, self._hi = express_bounds(self.index, self.value)
            self._pos = entries.bisect_left(lo)
            self._chunk = 8
            self._done = False
        if self._done:
            return False
        pos = self._pos
        stop = min(len(entries), pos + self._chunk)
        self._chunk *= 8
        hi = self._hi
        rids = []
        for ent in entries.items_between(pos, stop):
            if ent >= hi:
                self._done = True
                break
            rids.append(ent[1])
        else:
            self._done = stop >= len(entries)
        self._rids = rids
        self._pos = stop
        self._i = 0
        return bool(rids)

    def _work(self) -> int:
        rids = self._rids
        if (rids is None or self._i >= len(rids)) and not self._load():
            return IS_EOF
        rid = self._rids[self._i]
        self._i += 1
        self.keys_examined += 1
        doc = self.store.docs.get(rid)
        self.docs_examined += 1
        if doc is None:
            return NEED_TIME
        if self._quick:
            v = doc.get(self._field)
            value = self.value
            if type(v) is type(value) and v == value:
                self.out = (rid, doc, None)
                return ADVANCED
        if self._match is None:
            self._match = fast_matcher({self._field: self.value})
        if not self._match(doc):
            return NEED_TIME
        self.out = (rid, doc, None)
        return ADVANCED

    def plan_fields(self) -> dict:
        return {"keyPattern": "{ %s }" % ", ".join("%s: %s" % (f, d) for f, d in self.index.spec.key),
                "indexName": self.index.spec.name}

    def exec_fields(self) -> dict:
        return {"keysExamined": self.keys_examined, "docsExamined": self.docs_examined}
