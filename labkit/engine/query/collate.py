"""Query collation for the embedded engine: glue between ``labkit.collation`` and the planner.

* ``normalize`` validates a ``collation=`` argument (``labkit.collation.normalize_collation``); ``None``
  means the simple (binary) collation.
* ``using(collation)`` binds the collation of the current call (a context variable); the collection's
  ``_run`` then plans with ``CollationPlanner``.
* ``encode(value, collation)`` is the order-preserving key string of a value with every string replaced by
  its collation key (``labkit.collation.collation_key``); collation indexes use it as their key function,
  and the matcher/sort/distinct below compare with it.
* ``CollationPlanner`` is the engine's Planner with the server's collation rules: an index is eligible only
  for a comparison to strings, objects or arrays when its collation equals the query's (so a strength-2
  index serves a strength-2 query but neither a simple nor a strength-1 one), for other predicates any index
  is eligible; string bounds on a collation index are collation keys; ``$regex`` cannot use a collation
  index, but a simple-collation index serves it under any query collation; a collation index never covers a
  projection.
"""
from __future__ import annotations

import contextlib
import contextvars
import re
from collections.abc import Mapping
from typing import Any, Callable

from bson.regex import Regex
from ..collation.collator import CollationKey, collation_key, normalize_collation

from ..bson import keys as K
from ..matcher.match import fast_matcher
from ..index.bounds import Interval, full, union
from .planner import Candidate, Execution, Planner, Query, plan_and_run, unsupported
from ..exec.stages import Fetch, IndexScan, Or, Passthrough, Stage

_CURRENT: contextvars.ContextVar[dict | None] = contextvars.ContextVar("labkit_collation", default=None)
_RE_TYPE = type(re.compile(""))
_MISSING = K.MISSING


def normalize(collation: Any) -> dict | None:
    return normalize_collation(collation)


def current() -> dict | None:
    return _CURRENT.get()


@contextlib.contextmanager
def using(collation: dict | None):
    token = _CURRENT.set(collation)
    try:
        yield
    finally:
        _CURRENT.reset(token)


# ---------------------------------------------------------------------------------------------- key strings
def _enc_int(n: int) -> bytes:
    b = n.to_bytes((n.bit_length() + 7) // 8 or 1, "big")
    return bytes([len(b)]) + b


def _enc_tuple(t: tuple) -> bytes:
    out = []
    for x in t:
        out.append(b"\x02")
        out.append(_enc_tuple(x) if isinstance(x, tuple) else _enc_int(x))
    out.append(b"\x01")
    return b"".join(out)


def key_bytes(ck: CollationKey) -> bytes:
    """Order-preserving, prefix-free bytes of a collation key (tuple of level tuples)."""
    return _enc_tuple(tuple(ck))


def encode(v: Any, collation: dict | None) -> bytes:
    """``keys.encode`` with strings (also nested in documents and arrays) compared under ``collation``."""
    if collation is None:
        return K.encode(v)
    t = type(v)
    if t is str:
        return K.STR_B + key_bytes(collation_key(v, collation))
    if isinstance(v, dict):
        parts = [b"\x46"]
        for k, x in v.items():
            e = encode(x, collation)
            parts.append(e[:1])
            parts.append(K._enc_str(k))
            parts.append(e[1:])
        parts.append(b"\x00")
        return b"".join(parts)
    if t is list or t is tuple:
        return b"\x50" + b"".join(encode(x, collation) for x in v) + b"\x00"
    return K.encode(v)


def index_keyfunc(collation: dict | None) -> Callable[[Any], bytes]:
    if collation is None:
        return K.encode
    return lambda v: encode(v, collation)


# ---------------------------------------------------------------------------------------------- matching
def _has_str(v: Any) -> bool:
    if isinstance(v, str):
        return True
    if isinstance(v, dict):
        return any(_has_str(x) for x in v.values())
    if isinstance(v, (list, tuple)):
        return any(_has_str(x) for x in v)
    return False


def make_matcher(filter_: dict, collation: dict | None, variables: dict | None = None) -> Callable[[dict], bool]:
    """A document predicate for ``filter_`` compared under ``collation`` (``match.fast_matcher``)."""
    return fast_matcher(filter_, collation, variables)


# ---------------------------------------------------------------------------------------------- sorting
def sort_key_fn(sort: list[tuple[str, int]], store, collation: dict | None) -> Callable[[tuple], tuple]:
    parts = [(f.split("."), d < 0) for f, d in sort]

    def key(m: tuple) -> tuple:
        doc = m[1]
        if doc is None:
            doc = store.docs.get(m[0])
        return K.doc_sort_keys(doc, parts, enc)
    enc = index_keyfunc(collation)
    return key


def distinct_values(docs, key: str, collation: dict | None) -> list:
    from ..base.docutil import fast_copy
    seen: dict[bytes, Any] = {}
    parts = key.split(".")
    for doc in docs:
        for v in K.path_values(doc, parts):
            if isinstance(v, K.Undefined):
                continue
            e = encode(v, collation)
            if e not in seen:
                seen[e] = v
    return [fast_copy(seen[e]) for e in sorted(seen)]


# ---------------------------------------------------------------------------------------------- planning
def _rebound(ivs: list[Interval], collation: dict) -> list[Interval]:
    out = []
    for iv in ivs:
        lo, hi = iv.lo, iv.hi
        if _has_str(iv.lo_d):
            lo = encode(iv.lo_d, collation)
        if _has_str(iv.hi_d):
            hi = encode(iv.hi_d, collation)
        out.append(Interval(lo, iv.lo_incl, hi, iv.hi_incl, iv.lo_d, iv.hi_d))
    return union(out)


def _compares_strings(p) -> bool:
    """The predicate's operand is (or holds) a string, object or array: its bounds depend on the collation."""
    arg = p.arg
    if p.kind in ("exists", "exists_false", "null"):
        return False
    return isinstance(arg, (str, dict, list, tuple)) or _has_str(arg)


class CollationPlanner(Planner):
    """The engine's planner with the server's collation rules for index eligibility."""

    def __init__(self, store, query: Query, collation: dict | None) -> None:
        self.collation = collation
        super().__init__(store, query)
        if collation is not None:
            self.match_all = make_matcher(query.filter, collation, query.let) if query.filter else None
            self.sort_key = sort_key_fn(query.sort, store, collation) if query.sort else None

    def _allowed(self, ix, p) -> bool:
        # planner_ixselect.cpp ``_compatible``: a $regex never uses an index with a non-simple collation
        # (a simple-collation index still serves it, whatever the query's collation: regexes compare bytes);
        # comparisons to strings, objects or arrays need the index's collation to equal the query's;
        # other predicates (numbers, dates, $exists...) may use any index.
        if p.kind == "regex":
            if ix.spec.collation is not None:
                return False
        elif ix.spec.collation != self.collation and _compares_strings(p):
            return False
        return super()._allowed(ix, p)

    def _sort_dir(self, ix, bounds) -> int:
        if self.q.sort and ix.spec.collation != self.collation:
            return 0  # an index with another collation cannot provide the query's (collated) order
        return super()._sort_dir(ix, bounds)

    def assign(self, ix, by_path):
        if ix.spec.collation != self.collation:
            # another collation: only the predicates that do not compare strings get bounds (_allowed)
            bounds, exact, lead = super().assign(ix, by_path)
            if ix.spec.collation is not None:
                bounds = [_rebound(b, ix.spec.collation) for b in bounds]
            return bounds, exact, lead
        bounds, exact, lead = super().assign(ix, by_path)
        if ix.spec.collation is not None:
            bounds = [_rebound(b, ix.spec.collation) for b in bounds]
        return bounds, exact, lead

    def _covered(self, ix, exact_all: bool) -> bool:
        if ix.spec.collation is not None:
            return False
        return super()._covered(ix, exact_all)

    def _branch_planner(self, branch: dict) -> "CollationPlanner":
        return CollationPlanner(self.store, Query(branch, hint=None, let=self.q.let), self.collation)

    def _or_candidate(self, branches: list) -> Candidate | None:
        """A SUBPLAN of the branches' scans (no SORT_MERGE: collated keys do not give the sort order)."""
        subs = self._or_branches(branches)
        if subs is None:
            return None
        store, q, match = self.store, self.q, self.match_all

        def build() -> Stage:
            scans = []
            for sub, w in subs:
                bounds, exact, lead = sub.assign(w.index, sub.parsed.by_path())
                scans.append(IndexScan(w.index, bounds, 1))
            root: Stage = Fetch(Or(scans), store, match, None)
            root = self._finish(root, blocking_sort=bool(q.sort), covered=False)
            return Passthrough(root, "SUBPLAN")
        return Candidate(build, None, True, bool(q.sort), desc="SUBPLAN")


def has_collation_index(store) -> bool:
    return any(ix.spec.collation is not None for ix in store.ix.values())


def run_query(coll, q: Query, collation: dict | None, stop_after: int | None = None,
              explain: bool = False) -> Execution:
    """``plan_and_run`` with ``CollationPlanner`` (same counters, trial and index access statistics)."""
    if q.limit:
        stop_after = q.limit if stop_after is None else min(stop_after, q.limit)
    store = coll._store
    return plan_and_run(store, q, stop_after, explain_trial_snapshot=explain,
                        planner=CollationPlanner(store, q, collation), fast_paths=False)


# ---------------------------------------------------------------------------------------------- aggregate
_SAFE_STAGES = {"$match", "$sort", "$project", "$addFields", "$set", "$unset", "$limit", "$skip", "$count",
                "$unwind", "$replaceRoot", "$replaceWith", "$out", "$merge", "$graphLookup", "$lookup", "$facet"}


def check_pipeline(pipeline: list) -> None:
    """Refuse (clearly) pipelines with stages that would compare strings without the collation.

    ``$match`` and ``$sort`` (anywhere), the planner-run leading stages, ``$lookup``/``$graphLookup`` (their
    queries run through the collation-aware planner) honour the collation; the other stages listed in
    ``_SAFE_STAGES`` do not compare strings. ``$group``, ``$sortByCount``, ``$bucket``, ``$setWindowFields``...
    raise."""
    for stage in list(pipeline):
        if not isinstance(stage, dict) or len(stage) != 1:
            return  # malformed pipelines get their usual error later
        name, arg = next(iter(stage.items()))
        if name not in _SAFE_STAGES:
            raise unsupported("aggregate(collation=...) with a %s stage" % name)
        if name == "$lookup" and isinstance(arg, dict) and isinstance(arg.get("pipeline"), list):
            check_pipeline(arg["pipeline"])
        if name == "$facet" and isinstance(arg, dict):
            for sub in arg.values():
                if isinstance(sub, list):
                    check_pipeline(sub)
