"""Executable plan stages with classic-engine counters (works/advanced/needTime/isEOF, keys/docs examined).

Each stage's ``work()`` returns ADVANCED (with ``self.out`` set), NEED_TIME or IS_EOF, like the classic
``PlanStage::work``. Members flowing between stages are ``(rid, doc or None, key or None)`` tuples.
"""
from __future__ import annotations

import bisect
import heapq
from dataclasses import dataclass, field
from typing import Any, Callable

from ..base.errors import unsupported
from ..bson import keys as K
from ..index.bounds import Interval, full

ADVANCED, NEED_TIME, IS_EOF = 0, 1, 2
LOCATE_BISECT_MIN = 8  # IndexScan._locate: binary search when a field has more intervals than this


class ExpressExec:
    """What an express plan (one point lookup, no candidates raced) reports to explain: the winner as the only
    candidate, no trial, and its results and milliseconds."""

    def __init__(self, winner, results, millis):
        self.winner = winner
        self.cands = [winner]
        self.notes = {"express": True, "trial": []}
        self.results = results
        self.millis = millis


class Stage:
    name = "STAGE"

    def __init__(self, children: list["Stage"] | None = None) -> None:
        self.children = children or []
        self.works = self.advanced = self.need_time = 0
        self.eof = False
        self.out: Any = None

    def work(self) -> int:
        self.works += 1
        if self.eof:
            return IS_EOF
        st = self._work()
        if st == ADVANCED:
            self.advanced += 1
        elif st == NEED_TIME:
            self.need_time += 1
        else:
            self.eof = True
        return st

    def _work(self) -> int:  # pragma: no cover
        raise NotImplementedError

    # explain ---------------------------------------------------------------------------------
    def plan_fields(self) -> dict:
        return {}

    def exec_fields(self) -> dict:
        return {}

    def plan_doc(self) -> dict:
        d: dict[str, Any] = {"stage": self.name}
        d.update(self.plan_fields())
        self._attach_children(d, exec_=False)
        return d

    def exec_doc(self) -> dict:
        d: dict[str, Any] = {"stage": self.name}
        fields = self.plan_fields()
        if "filter" in fields:
            d["filter"] = fields.pop("filter")
        d.update({"nReturned": self.advanced, "executionTimeMillisEstimate": 0, "works": self.works,
                  "advanced": self.advanced, "needTime": self.need_time, "needYield": 0,
                  "saveState": 0, "restoreState": 0, "isEOF": 1 if self.eof else 0})
        d.update(fields)
        d.update(self.exec_fields())
        self._attach_children(d, exec_=True)
        return d

    def _attach_children(self, d: dict, exec_: bool) -> None:
        if not self.children:
            return
        if len(self.children) == 1 and self.name not in ("OR", "SORT_MERGE"):
            d["inputStage"] = self.children[0].exec_doc() if exec_ else self.children[0].plan_doc()
        else:
            d["inputStages"] = [c.exec_doc() if exec_ else c.plan_doc() for c in self.children]

    def walk(self):
        yield self
        for c in self.children:
            yield from c.walk()


class EOFStage(Stage):
    name = "EOF"

    def __init__(self, kind: str = "predicateEvalsToFalse") -> None:
        super().__init__()
        self.kind = kind

    def _work(self) -> int:
        return IS_EOF

    def plan_fields(self) -> dict:
        return {"type": self.kind}


class CollScan(Stage):
    name = "COLLSCAN"

    def __init__(self, store, match: Callable[[dict], bool] | None, shown_filter: dict | None,
                 direction: int = 1) -> None:
        super().__init__()
        self.store = store
        self.match = match
        self.shown_filter = shown_filter
        self.direction = direction
        self.docs_examined = 0
        self._it = None

    ancestors: list | None = None  # set by the executor outside the trial: skip non-matches in one call

    def _work(self) -> int:
        if self._it is None:
            # a live view, not a list of (rid, doc) pairs: nothing writes while a plan runs (the executor runs
            # it to its end or abandons it, under the store's lock), and a million-document scan then
            # allocates no tuple per document for the garbage collector to trace
            items = self.store.docs.items()
            self._it = iter(items) if self.direction > 0 else reversed(items)
        match = self.match
        if self.ancestors is not None and match is not None:
            # Examine documents until one matches; every skipped document still counts as one work()
            # returning NEED_TIME here and in every ancestor (same counters as one-at-a-time).
            skipped = 0
            for rid, doc in self._it:
                if match(doc):
                    if skipped:
                        self._credit(skipped)
                    self.docs_examined += skipped + 1
                    self.out = (rid, doc, None)
                    return ADVANCED
                skipped += 1
            if skipped:
                self._credit(skipped)
                self.docs_examined += skipped
            return IS_EOF
        try:
            rid, doc = next(self._it)
        except StopIteration:
            return IS_EOF
        self.docs_examined += 1
        if match is None or match(doc):
            self.out = (rid, doc, None)
            return ADVANCED
        return NEED_TIME

    def _credit(self, n: int) -> None:
        self.works += n
        self.need_time += n
        for a in self.ancestors:
            a.works += n
            a.need_time += n

    def plan_fields(self) -> dict:
        d: dict[str, Any] = {}
        if self.shown_filter:
            d["filter"] = self.shown_filter
        d["direction"] = "forward" if self.direction > 0 else "backward"
        return d

    def exec_fields(self) -> dict:
        return {"docsExamined": self.docs_examined}


class IndexScan(Stage):
    """IXSCAN with the classic IndexBoundsChecker counting rules (see rules file §4)."""

    name = "IXSCAN"

    def __init__(self, index, bounds: list[list[Interval]], direction: int = 1,
                 key_filter: Callable[[tuple], bool] | None = None, shown_filter: dict | None = None) -> None:
        super().__init__()
        self.index = index
        self.spec = index.spec
        self.vbounds = bounds                      # value-space intervals per field (ascending)
        self.direction = direction
        self.key_filter = key_filter
        self.shown_filter = shown_filter
        self.keys_examined = 0
        self.seeks = 0
        self.dups_tested = 0
        self.dups_dropped = 0
        self.seen: set[int] | None = set() if index.multikey else None
        # stored-space intervals (descending fields are inverted and reversed)
        self.sb: list[list[tuple[bytes, bool, bytes, bool]]] = []
        for ivs, desc in zip(bounds, self.spec.desc):
            if desc:
                self.sb.append([(K.invert(i.hi), i.hi_incl, K.invert(i.lo), i.lo_incl) for i in reversed(ivs)])
            else:
                self.sb.append([(i.lo, i.lo_incl, i.hi, i.hi_incl) for i in ivs])
        self.single = self._single_interval()
        self.pos: int | None = None
        self.end: int | None = None
        self.nfields = len(self.sb)

    # -- bounds shape ----------------------------------------------------------------------------
    def _single_interval(self) -> bool:
        state = 0  # 0: points, 1: after the one range, (full fields only)
        for ivs in self.sb:
            if len(ivs) != 1:
                return False
            lo, li, hi, hii = ivs[0]
            is_point = lo == hi and li and hii
            is_full = li and hii and (lo in (K.MINKEY_B, K.invert(K.MAXKEY_B))) and \
                (hi in (K.MAXKEY_B, K.invert(K.MINKEY_B)))
            if state == 0:
                if is_point:
                    continue
                state = 1
                continue
            if not is_full:
                return False
        return True

    # -- positioning helpers ---------------------------------------------------------------------
    def _seek_ge(self, probe: tuple) -> int:
        self.seeks += 1
        return self.index.entries.bisect_left((probe,))

    def _seek_le(self, probe: tuple) -> int:
        """Backward: the last entry strictly below ``probe`` (probe built with HIGH suffix as needed)."""
        self.seeks += 1
        return self.index.entries.bisect_left((probe,)) - 1

    def _start(self) -> None:
        entries = self.index.entries
        if self.single:
            lo_probe: list[bytes] = []
            hi_probe: list[bytes] = []
            lo_done = hi_done = False
            for ivs in self.sb:
                lo, li, hi, hii = ivs[0]
                if not lo_done:
                    lo_probe.append(lo)
                    if not li:
                        lo_probe.append(K.HIGH)
                        lo_done = True
                if not hi_done:
                    hi_probe.append(hi)
                    if not hii:
                        hi_done = True
            if not hi_done:
                hi_probe.append(K.HIGH)
            self.seeks += 1
            start = entries.bisect_left((tuple(lo_probe),))
            end = entries.bisect_left((tuple(hi_probe),))
            if self.direction > 0:
                self.pos, self.end = start, end
            else:
                self.pos, self.end = end - 1, start - 1
            return
        # checker mode: seek to the start of the first interval of every field
        if self.direction > 0:
            self.pos = self._seek_ge(self._suffix_probe([], 0))
        else:
            self.pos = self._seek_le(self._suffix_probe_back([], 0))

    def _suffix_probe(self, prefix: list[bytes], i: int) -> tuple:
        probe = list(prefix)
        for j in range(i, self.nfields):
            lo, li, _, _ = self.sb[j][0]
            probe.append(lo)
            if not li:
                probe.append(K.HIGH)
                break
        return tuple(probe)

    def _suffix_probe_back(self, prefix: list[bytes], i: int) -> tuple:
        probe = list(prefix)
        for j in range(i, self.nfields):
            _, _, hi, hii = self.sb[j][-1]
            probe.append(hi)
            if not hii:
                return tuple(probe)
        probe.append(K.HIGH)
        return tuple(probe)

    def _locate(self, j: int, v: bytes) -> tuple[int, int]:
        """(-1, k): before interval k; (0, k): inside interval k; (1, -1): after all (scan order)."""
        ivs = self.sb[j]
        if len(ivs) > LOCATE_BISECT_MIN:
            # many intervals (a long $in): binary search over the sorted, disjoint intervals instead of a
            # linear walk per key (which made k-value $in scans O(k^2)); same answers as the walk below
            cache = self.__dict__.setdefault("_bounds_cols", {})
            cols = cache.get(j)
            if cols is None:
                cols = cache[j] = ([iv[0] for iv in ivs], [iv[2] for iv in ivs])
            los, his = cols
            if self.direction > 0:
                k = bisect.bisect_left(his, v)
                if k < len(ivs) and his[k] == v and not ivs[k][3]:
                    k += 1
                if k >= len(ivs):
                    return 1, -1
                lo, li, hi, hii = ivs[k]
                return (-1, k) if (v < lo or (v == lo and not li)) else (0, k)
            k = bisect.bisect_right(los, v) - 1
            if k >= 0 and los[k] == v and not ivs[k][1]:
                k -= 1
            if k < 0:
                return 1, -1
            lo, li, hi, hii = ivs[k]
            return (-1, k) if (v > hi or (v == hi and not hii)) else (0, k)
        if self.direction > 0:
            for k, (lo, li, hi, hii) in enumerate(ivs):
                if v < lo or (v == lo and not li):
                    return -1, k
                if v < hi or (v == hi and hii):
                    return 0, k
            return 1, -1
        for k in range(len(ivs) - 1, -1, -1):
            lo, li, hi, hii = ivs[k]
            if v > hi or (v == hi and not hii):
                return -1, k
            if v > lo or (v == lo and li):
                return 0, k
        return 1, -1

    def _at_end(self, j: int, v: bytes, k: int) -> bool:
        ivs = self.sb[j]
        if self.direction > 0:
            lo, li, hi, hii = ivs[-1]
            return k == len(ivs) - 1 and v == hi and hii
        lo, li, hi, hii = ivs[0]
        return k == 0 and v == lo and li

    def _work(self) -> int:
        if self.pos is None:
            if any(not ivs for ivs in self.sb):
                return IS_EOF  # an empty interval list (contradictory predicates) scans nothing
            self._start()
        entries = self.index.entries
        pos = self.pos
        if self.single:
            if pos == self.end:
                return IS_EOF
            key, rid = entries[pos]
            self.pos = pos + self.direction
            self.keys_examined += 1
            return self._emit(key, rid)
        if pos < 0 or pos >= len(entries):
            return IS_EOF
        key, rid = entries[pos]
        self.keys_examined += 1
        ks: list[int] = []
        for i in range(self.nfields):
            where, k = self._locate(i, key[i])
            if where == 0:
                ks.append(k)
                continue
            if where == -1:
                # seek to the start of interval k of field i, later fields at their first interval
                if self.direction > 0:
                    lo, li, _, _ = self.sb[i][k]
                    probe = list(key[:i]) + [lo]
                    if not li:
                        probe.append(K.HIGH)
                        self.pos = self._seek_ge(tuple(probe))
                    else:
                        self.pos = self._seek_ge(self._suffix_probe(probe, i + 1))
                else:
                    _, _, hi, hii = self.sb[i][k]
                    probe = list(key[:i]) + [hi]
                    if not hii:
                        self.pos = self._seek_le(tuple(probe))
                    else:
                        self.pos = self._seek_le(self._suffix_probe_back(probe, i + 1))
                return NEED_TIME
            # after all intervals of field i: advance the nearest earlier field not at its end
            j = i - 1
            while j >= 0 and self._at_end(j, key[j], ks[j]):
                j -= 1
            if j < 0:
                self.pos = -1 if self.direction < 0 else len(entries)
                return IS_EOF
            if self.direction > 0:
                self.pos = self._seek_ge(tuple(key[:j + 1]) + (K.HIGH,))
            else:
                self.pos = self._seek_le(tuple(key[:j + 1]))
            return NEED_TIME
        self.pos = pos + self.direction
        return self._emit(key, rid)

    def _emit(self, key: tuple, rid: int) -> int:
        if self.key_filter is not None and not self.key_filter(key):
            return NEED_TIME
        if self.seen is not None:
            self.dups_tested += 1
            if rid in self.seen:
                self.dups_dropped += 1
                return NEED_TIME
            self.seen.add(rid)
        self.out = (rid, None, key)
        return ADVANCED

    # -- explain ---------------------------------------------------------------------------------
    def bounds_doc(self) -> dict:
        out = {}
        for f, ivs, desc in zip(self.spec.fields, self.vbounds, self.spec.desc):
            rev = desc != (self.direction < 0)
            seq = list(reversed(ivs)) if rev else ivs
            out[f] = [i.fmt(rev) for i in seq]
        return out

    def plan_fields(self) -> dict:
        d: dict[str, Any] = {}
        if self.shown_filter:
            d["filter"] = self.shown_filter
        d.update(index_fields(self.index))
        d["direction"] = "forward" if self.direction > 0 else "backward"
        d["indexBounds"] = self.bounds_doc()
        return d

    def exec_fields(self) -> dict:
        return {"keysExamined": self.keys_examined, "seeks": max(self.seeks, 1), "dupsTested": self.dups_tested,
                "dupsDropped": self.dups_dropped}


class RangeIndexScan(IndexScan):
    """The IXSCAN of a find with ``min``/``max`` (query_planner.cpp, ``QueryPlannerAccess::makeIndexScan``): one
    simple range of the index, from the ``min`` key (inclusive) to the ``max`` key (exclusive) in index order,
    every field at once, rather than per-field bounds; explain shows its bounds as ``{}`` (``IndexBounds::toBSON``
    of a simple range lists no fields). ``start``/``end``: stored key tuples, or None for the index's ends."""

    def __init__(self, index, start: tuple | None, end: tuple | None, direction: int = 1) -> None:
        super().__init__(index, [full() for _ in index.spec.fields], direction)
        self.start_key = start
        self.end_key = end
        self.single = True

    def _start(self) -> None:
        entries = self.index.entries
        self.seeks += 1
        lo = 0 if self.start_key is None else entries.bisect_left((self.start_key,))
        hi = len(entries) if self.end_key is None else entries.bisect_left((self.end_key,))
        hi = max(lo, hi)
        if self.direction > 0:
            self.pos, self.end = lo, hi
        else:
            self.pos, self.end = hi - 1, lo - 1

    def bounds_doc(self) -> dict:
        return {}


def index_fields(index) -> dict:
    spec = index.spec
    return {"keyPattern": dict(spec.key), "indexName": spec.name, "isMultiKey": bool(index.multikey),
            "multiKeyPaths": index.multikey_paths_doc(), "isUnique": spec.unique, "isSparse": spec.sparse,
            "isPartial": spec.partial is not None, "indexVersion": 2}


class CountScan(Stage):
    """COUNT_SCAN (src/mongo/db/exec/classic/count_scan.cpp): an index range read without documents, what the
    planner makes of a filter-free FETCH > IXSCAN over one interval when only the number of results matters
    (``turnIxscanIntoCount``). Always forward ("count scans return no data"). ``keysExamined`` counts every
    key read, and the end-of-range probe too ("++keysExamined" precedes "if (!entry) return IS_EOF"); on a
    multikey index a record seen before is NEED_TIME (``_shouldDedup``). Members carry the record id only."""

    name = "COUNT_SCAN"

    def __init__(self, index, bounds: list[list[Interval]]) -> None:
        super().__init__()
        self.index = index
        self.spec = index.spec
        self.vbounds = bounds
        self.keys_examined = 0
        self.seen: set[int] | None = set() if index.multikey else None
        self._scan = IndexScan(index, bounds, 1)  # positions the range (one interval: ``single``)
        self.pos: int | None = None
        self.end: int | None = None

    def _start(self) -> None:
        scan = self._scan
        if any(not ivs for ivs in scan.sb):
            self.pos = self.end = 0  # an empty interval list: nothing to read
            return
        scan._start()
        self.pos, self.end = scan.pos, max(scan.pos, scan.end)

    def _work(self) -> int:
        if self.pos is None:
            self._start()
        self.keys_examined += 1
        pos = self.pos
        if pos >= self.end:
            return IS_EOF
        self.pos = pos + 1
        rid = self.index.entries.rid_at(pos)
        if self.seen is not None:
            if rid in self.seen:
                return NEED_TIME
            self.seen.add(rid)
        self.out = (rid, None, None)
        return ADVANCED

    def count_rest(self) -> int:
        """Run to EOF at once: the counters ``work()`` until IS_EOF would leave; returns the records counted."""
        if self.pos is None:
            self._start()
        pos, end = self.pos, self.end
        if self.eof:
            return 0
        n = end - pos
        if self.seen is not None:
            fresh = set(self.index.entries.rids_between(pos, end)) - self.seen
            self.seen |= fresh
            n = len(fresh)
        self.pos = end
        self.keys_examined += end - pos + 1
        self.works += end - pos + 1
        self.advanced += n
        self.need_time += end - pos - n
        self.eof = True
        return n

    def plan_fields(self) -> dict:
        d: dict[str, Any] = dict(index_fields(self.index))
        start, end = {}, {}
        s_incl = e_incl = True
        for f, ivs, desc in zip(self.spec.fields, self.vbounds, self.spec.desc):
            iv = ivs[0] if ivs else None
            if iv is None:
                continue
            lo, hi, li, hii = (iv.hi_d, iv.lo_d, iv.hi_incl, iv.lo_incl) if desc else \
                (iv.lo_d, iv.hi_d, iv.lo_incl, iv.hi_incl)
            start[f], end[f] = lo, hi
            s_incl = s_incl and li
            e_incl = e_incl and hii
        d["indexBounds"] = {"startKey": start, "startKeyInclusive": s_incl, "endKey": end,
                            "endKeyInclusive": e_incl}
        return d

    def exec_fields(self) -> dict:
        return {"keysExamined": self.keys_examined}


class RecordStoreFastCount(Stage):
    """RECORD_STORE_FAST_COUNT (src/mongo/db/exec/classic/record_store_fast_count.cpp): the count of a ``count``
    without a filter or hint, read from the record store's size: one work(), no key, no document."""

    name = "RECORD_STORE_FAST_COUNT"

    def _work(self) -> int:
        return IS_EOF


class Fetch(Stage):
    name = "FETCH"

    def __init__(self, child: Stage, store, match: Callable[[dict], bool] | None, shown_filter: dict | None) -> None:
        super().__init__([child])
        self.store = store
        self.match = match
        self.shown_filter = shown_filter
        self.docs_examined = 0

    def _work(self) -> int:
        st = self.children[0].work()
        if st != ADVANCED:
            return st
        rid, doc, key = self.children[0].out
        if doc is None:
            doc = self.store.docs.get(rid)
            if doc is None:
                return NEED_TIME
            self.docs_examined += 1
        if self.match is None or self.match(doc):
            self.out = (rid, doc, key)  # the index key stays with the member (a RETURN_KEY above reads it)
            return ADVANCED
        return NEED_TIME

    def plan_fields(self) -> dict:
        return {"filter": self.shown_filter} if self.shown_filter else {}

    def exec_fields(self) -> dict:
        return {"docsExamined": self.docs_examined, "alreadyHasObj": 0}


class _Counted(Stage):
    """A stage that counts its child's results against a fixed number ``n`` (LIMIT passes the first ``n`` on,
    SKIP drops them); explain shows ``n`` under the stage's ``amount_field``."""

    amount_field = ""

    def __init__(self, child: Stage, n: int) -> None:
        super().__init__([child])
        self.n = n
        self.count = 0  # results counted so far (passed on by LIMIT, dropped by SKIP)

    def plan_fields(self) -> dict:
        return {self.amount_field: self.n}


class Limit(_Counted):
    name = "LIMIT"
    amount_field = "limitAmount"

    def _work(self) -> int:
        if self.count >= self.n:
            return IS_EOF
        st = self.children[0].work()
        if st == ADVANCED:
            self.count += 1
            self.out = self.children[0].out
        return st


class Skip(_Counted):
    name = "SKIP"
    amount_field = "skipAmount"

    def _work(self) -> int:
        st = self.children[0].work()
        if st == ADVANCED:
            if self.count < self.n:
                self.count += 1
                return NEED_TIME
            self.out = self.children[0].out
        return st


MAX_BLOCKING_SORT_BYTES = 104857600  # internalQueryMaxBlockingSortMemoryUsageBytes


@dataclass(eq=False)
class SortMemory:
    """The sorter's memory accounting (src/mongo/db/sorter: spill whenever the buffered data exceeds the
    limit), computed from BSON sizes of the sorted documents (the server counts its in-memory sizes, a little
    larger: an approximation). ``what``: the command whose error wording a refusal takes (find or aggregate)."""

    allow_disk_use: bool
    what: str = "find"
    total: int = field(default=0, init=False)      # bytes sorted
    spills: int = field(default=0, init=False)
    spilled: int = field(default=0, init=False)    # bytes written by the spills
    _buffered: int = field(default=0, init=False)  # bytes held since the last spill

    def add(self, nbytes: int, what: str | None = None) -> None:
        what = what or self.what
        self.total += nbytes
        self._buffered += nbytes
        if self._buffered > MAX_BLOCKING_SORT_BYTES:
            if not self.allow_disk_use:
                from mongomock import OperationFailure
                prefix = "Executor error during find command" if what == "find" else \
                    "PlanExecutor error during aggregation"
                raise OperationFailure("%s :: caused by :: Sort exceeded memory limit of %d bytes, but did not "
                                       "opt in to external sorting." % (prefix, MAX_BLOCKING_SORT_BYTES), 292)
            self.spills += 1
            self.spilled += self._buffered
            self._buffered = 0

    def stats(self) -> dict:
        return {"totalDataSizeSorted": self.total, "usedDisk": self.spills > 0, "spills": self.spills,
                "spilledDataStorageSize": self.spilled}


class Sort(Stage):
    """Blocking SORT; with a limit keeps only the top k (heapq). With ``memory`` set, the sorter's memory
    accounting runs (explain statistics, and error 292 when allowDiskUse is false)."""

    name = "SORT"

    def __init__(self, child: Stage, pattern: list[tuple[str, int]], sort_key: Callable[[tuple], tuple],
                 limit: int = 0, covered: bool = False, memory: SortMemory | None = None,
                 store: Any = None) -> None:
        super().__init__([child])
        self.pattern = pattern
        self.sort_key = sort_key
        self.limit = limit
        self.buf: list = []
        self.sorted: list | None = None
        self.i = 0
        self.seq = 0
        self.covered = covered
        self.memory = memory
        self.store = store

    def _work(self) -> int:
        if self.sorted is None:
            st = self.children[0].work()
            if st == ADVANCED:
                m = self.children[0].out
                self.buf.append((self.sort_key(m), self.seq, m))
                self.seq += 1
                if self.limit and len(self.buf) > 4 * self.limit + 64:
                    self.buf = heapq.nsmallest(self.limit, self.buf)
                return NEED_TIME
            if st == NEED_TIME:
                return NEED_TIME
            if self.limit:
                self.sorted = heapq.nsmallest(self.limit, self.buf)
            else:
                self.buf.sort()
                self.sorted = self.buf
            if self.memory is not None:
                self._account(self.sorted if self.limit else self.buf)
            self.buf = []
            return NEED_TIME
        if self.i >= len(self.sorted):
            return IS_EOF
        self.out = self.sorted[self.i][2]
        self.i += 1
        return ADVANCED

    def _account(self, items: list) -> None:
        """Sizes of the sorted members (the documents, or their index keys when covered); a top-k sort
        holds only k of them at a time."""
        import bson
        docs = self.store.docs if self.store is not None else {}
        for _, _, m in items:
            doc = m[1] if m[1] is not None else docs.get(m[0])
            self.memory.add(len(bson.encode(doc)) if doc is not None else sum(len(k) for k in (m[2] or ())))

    def plan_fields(self) -> dict:
        d: dict[str, Any] = {"sortPattern": dict(self.pattern), "memLimit": MAX_BLOCKING_SORT_BYTES}
        if self.limit:
            d["limitAmount"] = self.limit
        d["type"] = "default" if self.covered else "simple"
        return d

    def exec_fields(self) -> dict:
        if self.memory is not None:
            return self.memory.stats()
        return {"totalDataSizeSorted": 0, "usedDisk": False, "spills": 0, "spilledDataStorageSize": 0}


class SortMerge(Stage):
    name = "SORT_MERGE"

    def __init__(self, children: list[Stage], pattern: list[tuple[str, int]], sort_key: Callable[[tuple], tuple]):
        super().__init__(children)
        self.pattern = pattern
        self.sort_key = sort_key
        self.heads: list | None = None
        self.pending: list[int] = []
        self.seen: set[int] = set()
        self.dups_tested = self.dups_dropped = 0

    def _work(self) -> int:
        if self.heads is None:
            self.heads = [None] * len(self.children)
            self.pending = list(range(len(self.children)))
        # fill one missing head per work call
        while self.pending:
            i = self.pending[0]
            st = self.children[i].work()
            if st == ADVANCED:
                m = self.children[i].out
                self.heads[i] = (self.sort_key(m), i, m)
                self.pending.pop(0)
                continue
            if st == IS_EOF:
                self.pending.pop(0)
                continue
            return NEED_TIME
        best = None
        for h in self.heads:
            if h is not None and (best is None or h[:2] < best[:2]):
                best = h
        if best is None:
            return IS_EOF
        self.heads[best[1]] = None
        self.pending.append(best[1])
        rid = best[2][0]
        self.dups_tested += 1
        if rid in self.seen:
            self.dups_dropped += 1
            return NEED_TIME
        self.seen.add(rid)
        self.out = best[2]
        return ADVANCED

    def plan_fields(self) -> dict:
        return {"sortPattern": dict(self.pattern)}

    def exec_fields(self) -> dict:
        return {"dupsTested": self.dups_tested, "dupsDropped": self.dups_dropped}


class Or(Stage):
    name = "OR"

    def __init__(self, children: list[Stage]) -> None:
        super().__init__(children)
        self.i = 0
        self.seen: set[int] = set()
        self.dups_tested = self.dups_dropped = 0

    def _work(self) -> int:
        if self.i >= len(self.children):
            return IS_EOF
        st = self.children[self.i].work()
        if st == IS_EOF:
            self.i += 1
            return NEED_TIME if self.i < len(self.children) else IS_EOF
        if st == ADVANCED:
            m = self.children[self.i].out
            self.dups_tested += 1
            if m[0] in self.seen:
                self.dups_dropped += 1
                return NEED_TIME
            self.seen.add(m[0])
            self.out = m
            return ADVANCED
        return st

    def exec_fields(self) -> dict:
        return {"dupsTested": self.dups_tested, "dupsDropped": self.dups_dropped}


class Projection(Stage):
    def __init__(self, child: Stage, kind: str, spec: dict, store=None) -> None:
        super().__init__([child])
        self.name = kind
        self.spec = spec
        self.store = store

    def _work(self) -> int:
        st = self.children[0].work()
        if st == ADVANCED:
            rid, doc, key = self.children[0].out
            if doc is None and self.store is not None:
                # covered: the values equal the index key values (non-multikey, exact bounds);
                # the document object is used only to rebuild them, it is not counted as examined.
                doc = self.store.docs.get(rid)
            self.out = (rid, doc, key)
        return st

    def plan_fields(self) -> dict:
        return {"transformBy": self.spec}


class ReturnKey(Stage):
    """RETURN_KEY (src/mongo/db/exec/return_key.cpp): each member becomes the index key it was found by, as a
    document of the key pattern's fields; ``{}`` for a member no index scan produced (a collection scan).
    Members become ``(None, key document, None)``: the record id is dropped as the server drops it."""

    name = "RETURN_KEY"

    def __init__(self, child: Stage, store, sort_key_fields: list[str] | None = None,
                 sort: list[tuple[str, int]] | None = None) -> None:
        super().__init__([child])
        self.store = store
        # the projection's {$meta: "sortKey"} fields, the only part of it RETURN_KEY keeps (planner_analysis.cpp
        # extractSortKeyMetaFieldsFromProjection): each gets the sort key's values as an array
        self.sort_key_fields = [f.split(".") for f in sort_key_fields or ()]
        self.sort_parts = [(f.split("."), d < 0) for f, d in sort or ()]
        self.indexes = []  # the indexes whose keys can reach this stage, in plan order
        for s in child.walk():
            ix = getattr(s, "index", None)
            if ix is not None and ix not in self.indexes and isinstance(s, (IndexScan, PointLookup)):
                self.indexes.append(ix)

    def _work(self) -> int:
        st = self.children[0].work()
        if st == ADVANCED:
            rid, doc, key = self.children[0].out
            if doc is None:
                doc = self.store.docs.get(rid)
            out = self.key_document(doc, key)
            if self.sort_key_fields and doc is not None:
                values = K.doc_sort_key_values(doc, self.sort_parts)
                for parts in self.sort_key_fields:
                    at = out
                    for p in parts[:-1]:
                        nxt = at.get(p)
                        if not isinstance(nxt, dict):
                            nxt = at[p] = {}
                        at = nxt
                    at[parts[-1]] = list(values)
            self.out = (None, out, None)
        return st

    def key_document(self, doc: dict | None, key: tuple | None) -> dict:
        if doc is None or not self.indexes:
            return {}
        if key is None:  # IDHACK reads the _id index without handing its key on: the key is the _id
            ix = self.indexes[0]
            return {"_id": doc["_id"]} if ix.spec.name == "_id_" else {}
        for ix in self.indexes:
            if len(ix.spec.fields) == len(key):
                if ix.spec.collation is not None:
                    raise unsupported("find returnKey over an index with a collation (its keys are ICU sort keys)",
                                      "a projection of the indexed fields")
                kd = ix.key_document(doc, key)
                if len(self.indexes) == 1:
                    return kd
                kf = ix.keyfunc  # an OR of several indexes: the one whose key this is
                if tuple((K.invert(kf(v)) if d else kf(v)) for v, d in zip(kd.values(), ix.spec.desc)) == key:
                    return kd
        return {}


class Passthrough(Stage):
    """SUBPLAN wrapper."""

    def __init__(self, child: Stage, name: str) -> None:
        super().__init__([child])
        self.name = name

    def _work(self) -> int:
        st = self.children[0].work()
        if st == ADVANCED:
            self.out = self.children[0].out
        return st


class PointLookup(Stage):
    """A leaf stage that looks up the documents of one key value: the index (None on a clustered collection),
    the store, the value and the counters explain reports. A stage that finds at most one document defines
    ``_lookup`` (IDHACK, EXPRESS_CLUSTERED_IXSCAN); EXPRESS_IXSCAN works through its key range itself."""

    def __init__(self, index, store, value: Any) -> None:
        super().__init__()
        self.index = index
        self.store = store
        self.value = value
        self.keys_examined = 0
        self.docs_examined = 0
        self._done = False

    def _work(self) -> int:
        if self._done:
            return IS_EOF
        self._done = True
        found = self._lookup()
        if found is None:
            return IS_EOF
        self.out = found
        return ADVANCED

    def _lookup(self) -> tuple | None:
        """The one ``(record id, document, None)`` found, or None."""
        raise NotImplementedError


class IdHack(PointLookup):
    """IDHACK: one ``_id`` index lookup and one document read (src/mongo/db/exec/classic/idhack.cpp:
    keysExamined and docsExamined are 1 when the key is found, 0 otherwise)."""

    name = "IDHACK"

    def _lookup(self) -> tuple | None:
        e = K.encode(self.value)
        entries = self.index.entries
        i = entries.bisect_left(((e,),))
        if i >= len(entries) or entries[i][0][0] != e:
            return None
        rid = entries[i][1]
        doc = self.store.docs.get(rid)
        if doc is None:
            return None
        self.keys_examined += 1
        self.docs_examined += 1
        return (rid, doc, None)

    def exec_fields(self) -> dict:
        return {"keysExamined": self.keys_examined, "docsExamined": self.docs_examined}
