"""Predicate implication for partial indexes: does a query filter imply a ``partialFilterExpression``?

MongoDB uses a partial index only when every document the query can match is in the index, i.e. when
the query predicate is a *subset* of the filter expression (manual "Partial Indexes" > "Query
Coverage"). The server decides this with ``expression::isSubsetOf(query, filter)``
(mongodb/mongo ``src/mongo/db/matcher/expression_algo.cpp``); this module mirrors that function:

* equivalent expressions imply each other;
* a ``$or`` filter is implied if the query implies one of its branches; an ``$and`` filter if the query
  implies every clause; a query ``$and`` implies the filter if one of its clauses does; a query ``$or``
  if every branch does;
* comparisons (``$eq/$lt/$lte/$gt/$gte``) on the same path and the same canonical BSON type: equality
  implies a range containing the value, a range implies a wider range of the same direction;
* ``$in`` in the query: every value must imply the filter; ``$in`` in the filter: the query must imply
  one of its values (no regexes in either);
* ``$exists: true`` is implied by any comparison with a non-null value, by ``$in`` without null, by
  ``$exists: true``, ``$type``, ``$regex``, ``$size``, ``$mod``, ``$elemMatch`` and by ``$ne: null``.

Anything else is not implied (the server gives the same conservative answer: e.g. ``$elemMatch`` never
implies a dotted-path filter, see ``query_planner_partialidx_test.cpp``). Strings, objects and arrays
compare only when the query and the index use the same collation; under a non-simple collation this
module only accepts identical strings (a conservative simplification: the index may then be skipped where
a server would use it, never the reverse).
"""
from __future__ import annotations

import math
import re
from typing import Any

from bson import Regex

from ..bson import keys as K

_RE = type(re.compile(""))
_CMP = ("eq", "lt", "lte", "gt", "gte")


class Node:
    __slots__ = ("kind", "path", "value", "children")

    def __init__(self, kind: str, path: str = "", value: Any = None, children: list | None = None) -> None:
        self.kind = kind          # and/or/nor/not, eq/lt/lte/gt/gte, in, exists, type, regex, size, mod,
        self.path = path          # elemmatch, geo, other
        self.value = value
        self.children = children or []

    def key(self) -> Any:
        if self.kind in ("and", "or", "nor"):
            return (self.kind, tuple(sorted((c.key() for c in self.children), key=repr)))
        if self.kind == "not":
            return ("not", self.children[0].key())
        return (self.kind, self.path, _vkey(self.value))


def _vkey(v: Any) -> Any:
    try:
        if isinstance(v, tuple) and len(v) == 2 and isinstance(v[0], list):  # $in: (equalities, regexes)
            return (tuple(sorted(K.encode(x) for x in v[0])), tuple(sorted(K.encode(x) for x in v[1])))
        return K.encode(v)
    except TypeError:
        return repr(v)


def _is_regex(v: Any) -> bool:
    return isinstance(v, (Regex, _RE))


def _and(children: list[Node]) -> Node:
    flat: list[Node] = []
    for c in children:
        flat.extend(c.children if c.kind == "and" else [c])
    if len(flat) == 1:
        return flat[0]
    return Node("and", children=flat)


def parse(filter_: Any) -> Node:
    """The server's MatchExpression tree (after its single-child and ``$in``-of-one simplifications)."""
    if not isinstance(filter_, dict):
        return Node("other", value=repr(filter_))
    children: list[Node] = []
    for k, v in filter_.items():
        if k == "$comment":
            continue
        if k in ("$and", "$or", "$nor"):
            subs = [parse(x) for x in v] if isinstance(v, (list, tuple)) else [Node("other")]
            if k == "$and":
                children.append(_and(subs) if subs else Node("other"))
            elif k == "$or":
                children.append(subs[0] if len(subs) == 1 else Node("or", children=subs))
            else:
                children.append(Node("nor", children=subs))
        elif k.startswith("$"):
            children.append(Node("other", value=repr({k: v})))
        else:
            children.append(_parse_path(k, v))
    if not children:
        return Node("and")
    return _and(children)


def _is_op_doc(v: Any) -> bool:
    return isinstance(v, dict) and bool(v) and next(iter(v)).startswith("$")


def _parse_path(path: str, v: Any) -> Node:
    if _is_regex(v):
        return Node("regex", path, v)
    if not _is_op_doc(v):
        return Node("eq", path, v)
    parts: list[Node] = []
    if "$regex" in v:
        parts.append(Node("regex", path, (v.get("$regex"), v.get("$options", ""))))
    for op, arg in v.items():
        if op in ("$regex", "$options"):
            continue
        parts.append(_parse_op(path, op, arg))
    return _and(parts)


def _parse_op(path: str, op: str, arg: Any) -> Node:
    if op == "$eq":
        return Node("eq", path, arg)
    if op in ("$lt", "$lte", "$gt", "$gte"):
        return Node(op[1:], path, arg)
    if op == "$ne":
        return Node("not", children=[Node("eq", path, arg)])
    if op in ("$in", "$nin"):
        vals = list(arg) if isinstance(arg, (list, tuple)) else []
        eqs = [x for x in vals if not _is_regex(x)]
        rxs = [x for x in vals if _is_regex(x)]
        if len(eqs) == 1 and not rxs:
            node = Node("eq", path, eqs[0])
        elif len(rxs) == 1 and not eqs:
            node = Node("regex", path, rxs[0])
        else:
            node = Node("in", path, (eqs, rxs))
        return node if op == "$in" else Node("not", children=[node])
    if op == "$exists":
        node = Node("exists", path, True)
        return node if arg else Node("not", children=[node])
    if op == "$type":
        return Node("type", path, tuple(arg) if isinstance(arg, list) else arg)
    if op == "$size":
        return Node("size", path, arg)
    if op == "$mod":
        return Node("mod", path, tuple(arg) if isinstance(arg, list) else arg)
    if op == "$elemMatch":
        return Node("elemmatch", path, repr(arg))
    if op in ("$geoWithin", "$geoIntersects", "$within"):
        return Node("geo", path, repr(arg))
    if op == "$all":
        vals = list(arg) if isinstance(arg, (list, tuple)) else []
        if not vals:
            return Node("other", path, repr(arg))
        return _and([Node("regex", path, x) if _is_regex(x) else
                     (Node("elemmatch", path, repr(x)) if _is_op_doc(x) and "$elemMatch" in x
                      else Node("eq", path, x)) for x in vals])
    if op == "$not":
        if _is_regex(arg):
            inner = Node("regex", path, arg)
        elif isinstance(arg, dict):
            inner = _parse_path(path, arg) if _is_op_doc(arg) else Node("other", path, repr(arg))
        else:
            inner = Node("other", path, repr(arg))
        return Node("not", children=[inner])
    return Node("other", path, repr({op: arg}))


# ------------------------------------------------------------------------------------------ subset test

def is_subset_of(lhs: Node, rhs: Node, collation: Any = None) -> bool:
    """``expression::isSubsetOf(lhs=query, rhs=partial filter)``. ``collation``: False when the query's
    collation differs from the index's, the (shared) non-simple collation document, or None (simple)."""
    if lhs.key() == rhs.key():
        return True
    if rhs.kind == "or":
        if any(is_subset_of(lhs, c, collation) for c in rhs.children):
            return True
    if rhs.kind == "and":
        return all(is_subset_of(lhs, c, collation) for c in rhs.children)
    if lhs.kind == "and":
        return any(is_subset_of(c, rhs, collation) for c in lhs.children)
    if lhs.kind == "or":
        return bool(lhs.children) and all(is_subset_of(c, rhs, collation) for c in lhs.children)
    if rhs.kind in _CMP:
        return _subset_cmp_target(lhs, rhs, collation)
    if rhs.kind == "exists":
        return _subset_exists(lhs, rhs)
    if rhs.kind == "in":
        eqs, rxs = rhs.value
        if rxs or lhs.path != rhs.path:
            return False
        return any(_subset_cmp_target(lhs, Node("eq", rhs.path, e), collation) for e in eqs)
    return False


def _subset_cmp_target(lhs: Node, rhs: Node, collation: Any) -> bool:
    if lhs.path != rhs.path:
        return False
    if lhs.kind in _CMP:
        return _cmp_subset(lhs, rhs, collation)
    if lhs.kind == "in":
        eqs, rxs = lhs.value
        if rxs:
            return False
        return all(_cmp_subset(Node("eq", lhs.path, e), rhs, collation) for e in eqs)
    return False


def _isnan(v: Any) -> bool:
    try:
        if isinstance(v, float):
            return math.isnan(v)
        from bson import Decimal128
        if isinstance(v, Decimal128):
            return v.to_decimal().is_nan()
    except Exception:  # pragma: no cover
        return False
    return False


def _cmp_subset(lhs: Node, rhs: Node, collation: Any) -> bool:
    a, b = lhs.value, rhs.value
    try:
        ta, tb = K.canonical_type(a), K.canonical_type(b)
    except TypeError:
        return False
    if ta != tb:
        return False
    if _isnan(a) or _isnan(b):
        if lhs.kind in ("lte", "eq", "gte") and rhs.kind in ("lte", "eq", "gte"):
            return _isnan(a) and _isnan(b)
        return False
    if ta in (K.T_STR, K.T_OBJ, K.T_ARR) and collation is not None:
        if collation is False:
            return False          # the query and the index compare strings differently
        return lhs.kind == rhs.kind and K.encode(a) == K.encode(b)
    ea, eb = K.encode(a), K.encode(b)
    cmp = (ea > eb) - (ea < eb)
    if lhs.kind == rhs.kind and cmp == 0:
        return True
    if rhs.kind in ("lt", "lte"):
        if lhs.kind in ("lt", "lte", "eq"):
            return cmp <= 0 if rhs.kind == "lte" else cmp < 0
        return False
    if rhs.kind in ("gt", "gte"):
        if lhs.kind in ("gt", "gte", "eq"):
            return cmp >= 0 if rhs.kind == "gte" else cmp > 0
        return False
    return False


def _subset_exists(lhs: Node, rhs: Node) -> bool:
    if lhs.kind != "not" and lhs.path != rhs.path:
        return False
    if lhs.kind in _CMP:
        return lhs.value is not None
    if lhs.kind in ("elemmatch", "exists", "geo", "mod", "regex", "size", "type"):
        return True
    if lhs.kind == "in":
        return not any(x is None for x in lhs.value[0])
    if lhs.kind == "not":
        child = lhs.children[0]
        if child.path != rhs.path:
            return False
        if child.kind == "eq":
            return child.value is None
        if child.kind == "in":
            return any(x is None for x in child.value[0])
    return False


def implies(query: dict, partial_filter: dict, collation: Any = None) -> bool:
    """True when every document matching ``query`` is in an index with ``partial_filter``."""
    return is_subset_of(parse(query or {}), parse(partial_filter), collation)


# ------------------------------------------------------------------------------------------ equivalence

# MatchExpression::MatchType order (src/mongo/db/matcher/expression.h): the first key of the server's
# ``matchExpressionComparator`` (expression_optimizer.cpp), which sorts the children of $and / $or
_TYPE_RANK = {"and": 0, "or": 1, "elemmatch": 2, "size": 4, "eq": 5, "lte": 6, "lt": 7, "gt": 8, "gte": 9,
              "regex": 10, "mod": 11, "exists": 12, "in": 13, "not": 18, "nor": 19, "type": 20, "geo": 21}


def _sort_key(n: Node) -> tuple:
    """``matchExpressionComparator``: type, then path, then the children in order, then their number."""
    return (_TYPE_RANK.get(n.kind, 99), n.path, tuple(_sort_key(c) for c in n.children), len(n.children))


def _normalized(n: Node) -> Node:
    """The tree as ``MatchExpression::optimize`` leaves it for comparison: children normalized, then the
    children of $and / $or sorted by ``_sort_key`` (a stable sort: leaves of one type on one path keep their
    order, the server does not sort them by value, SERVER-47661)."""
    kids = [_normalized(c) for c in n.children]
    if n.kind in ("and", "or"):
        kids.sort(key=_sort_key)
    return Node(n.kind, n.path, n.value, kids)


def _same(a: Node, b: Node) -> bool:
    if a.kind != b.kind or a.path != b.path or len(a.children) != len(b.children):
        return False
    if not a.children and _vkey(a.value) != _vkey(b.value):
        return False
    return all(_same(x, y) for x, y in zip(a.children, b.children))


def equivalent(a: dict, b: dict) -> bool:
    """Whether two ``partialFilterExpression`` documents are one index signature (the server's
    ``MatchExpression::equivalent`` after ``parseAndNormalize``, as ``IndexDescriptor::compareIndexOptions``
    compares them): ``{a: {$gt: 0, $lt: 10}, b: "x"}`` and ``{$and: [{b: "x"}, {a: {$lt: 10}}, {a: {$gt: 0}}]}``
    are equivalent; ``{$and: [{a: {$type: 1}}, {a: {$type: 2}}]}`` and its reverse are not (SERVER-47661,
    jstests/core/index/index_signature.js)."""
    return _same(_normalized(parse(a or {})), _normalized(parse(b or {})))
