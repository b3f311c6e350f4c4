"""The engine's query matcher: MongoDB 8.0's match-expression rules, compiled to Python closures.

``fast_matcher(filter, collation=None, variables=None)`` parses a filter once (raising the server's parse
errors: BadValue 2 "unknown operator: $foo", "$in needs an array", ...) and returns ``doc -> bool``.
Every plan uses it, so an answer never depends on the plan.

Rules (sources: src/mongo/db/matcher/expression_parser.cpp, path.cpp, expression_leaf.cpp; the manual's
query operator pages; jstests/core/query/null_query_semantics.js):

* Paths: a dotted path walks into subdocuments; an array on the way is traversed (each subdocument element
  continues with the rest of the path, a numeric component also indexes the array); at the end of the path
  an array yields each element and then the array itself. ``$size`` and ``$elemMatch`` see leaf arrays only
  as a whole. A subdocument of an array without the field yields "missing".
* Comparisons only between values of one canonical BSON type (``values.canonical_type``: ``True`` is not
  ``1``), numbers by value, NaN equal only to NaN; ``null`` matches null and missing; ``$gte/$lte: null``
  match missing; MinKey/MaxKey bounds.
* ``$ne``, ``$nin``, ``$not`` and ``$exists: false`` negate the whole path predicate (so ``{a: {$ne: 1}}``
  does not match ``a: [1, 2]``).
* ``$all: []`` matches nothing; ``$all`` is an ``$and`` of equalities (regexes match, ``$elemMatch`` forms).
* ``$regex`` / ``$options`` (flags ``imsx``; ``u`` accepted); an invalid pattern is error 51091.
* ``$expr`` (with ``let`` variables), ``$jsonSchema`` (``labkit.validation``), ``$comment``,
  ``$alwaysTrue/False``, bitwise operators; ``$where``, ``$text`` and geo operators are refused (115).
"""
from __future__ import annotations

import math
import re
from typing import Any, Callable

from bson import Binary, Decimal128, Int64, ObjectId, Regex
from bson.max_key import MaxKey
from bson.min_key import MinKey
from mongomock import OperationFailure

from ..bson import values as V
from ..bson.values import MISSING

_RE_TYPE = V.RE_TYPE
MAX_DEPTH = 100

Pred = Callable[[Any], bool]

_TRAVERSE = 0
_NO_TRAVERSE = 1


def _bad(msg: str, code: int = 2) -> OperationFailure:
    names = {2: "BadValue", 9: "FailedToParse", 14: "TypeMismatch", 51091: "Location51091",
             51108: "Location51108", 115: "CommandNotSupported"}
    return OperationFailure(msg, code, {"ok": 0.0, "errmsg": msg, "code": code, "codeName": names.get(code, "")})


def _unsupported(what: str, instead: str | None = None) -> OperationFailure:
    from ..base.errors import not_modelled
    return _bad(not_modelled(what, instead), 115)


# ------------------------------------------------------------------------------------------- path values
def path_values(doc: Any, parts: list[str], mode: int = _TRAVERSE) -> list[Any]:
    """The elements the server's ElementIterator yields for ``parts`` in ``doc`` (MISSING for "no field")."""
    out: list[Any] = []
    _iter(doc, parts, 0, mode, out)
    return out


def _iter(obj: Any, parts: list[str], i: int, mode: int, out: list) -> None:
    # getFieldDottedOrArray: walk subdocuments until the path ends or an array is met
    n = len(parts)
    cur = obj
    while True:
        if type(cur) is not dict and not isinstance(cur, dict):
            out.append(MISSING)
            return
        cur = cur.get(parts[i], MISSING)
        if cur is MISSING:
            out.append(MISSING)
            return
        i += 1
        if i == n:
            break
        if type(cur) is list:
            break
    if type(cur) is not list:
        out.append(cur)
        return
    if i == n:  # leaf array
        if mode == _NO_TRAVERSE:
            out.append(cur)
        else:
            out.extend(cur)
            out.append(cur)
        return
    _array(cur, parts, i, mode, out)


def _array(arr: list, parts: list[str], i: int, mode: int, out: list) -> None:
    """Elements of ``arr`` matching the rest of the path ``parts[i:]`` (non-leaf array traversal)."""
    part = parts[i]
    is_num = part.isdigit()
    last = i + 1 == len(parts)
    for idx, e in enumerate(arr):
        if type(e) is dict or isinstance(e, dict):
            _iter(e, parts, i, mode, out)
            if is_num and str(idx) == part:
                if last:
                    out.append(e)
                else:
                    _iter(e, parts, i + 1, mode, out)
        elif is_num and str(idx) == part:
            if last:
                out.append(e)
            elif type(e) is list:
                _array(e, parts, i + 1, mode, out)


def _as_doc(v: Any) -> Any:
    if type(v) is list:
        return {str(i): x for i, x in enumerate(v)}
    return v


# ------------------------------------------------------------------------------------------- parsing
class _Ctx:
    __slots__ = ("str_key", "variables", "collation")

    def __init__(self, collation: dict | None, variables: dict | None) -> None:
        self.collation = collation
        self.variables = variables or {}
        if collation is not None:
            from ..collation.collator import collation_key

            def str_key(s: str, _c=collation) -> Any:
                return collation_key(s, _c)
            self.str_key = str_key
        else:
            self.str_key = None


def _is_op_doc(v: Any) -> bool:
    """The server's isExpressionDocument: an object whose first field starts with '$' (not a DBRef)."""
    if type(v) is not dict or not v:
        return False
    k = next(iter(v))
    if not (isinstance(k, str) and k.startswith("$")):
        return False
    if "$ref" in v and "$id" in v:
        return False
    return True


def _and_all(preds: list[Pred]) -> Pred:
    if not preds:
        return lambda doc: True
    if len(preds) == 1:
        return preds[0]
    if len(preds) == 2:
        a, b = preds

        def and2(doc: Any) -> bool:
            return a(doc) and b(doc)
        return and2
    ps = tuple(preds)

    def and_n(doc: Any) -> bool:
        for p in ps:
            if not p(doc):
                return False
        return True
    return and_n


def _always_false(doc: Any) -> bool:
    return False


def compile_filter(f: Any, ctx: _Ctx | None = None, depth: int = 0) -> Pred:
    """A document predicate for the filter ``f`` (raises the server's parse errors)."""
    if ctx is None:
        ctx = _Ctx(None, None)
    if not isinstance(f, dict):
        raise _bad("the match filter must be an expression in an object", 15959)
    if depth > MAX_DEPTH:
        raise _bad("exceeded maximum query tree depth of %d at %s" % (MAX_DEPTH, _short(f)))
    preds: list[Pred] = []
    for k, v in f.items():
        if not isinstance(k, str):
            raise _bad("field names must be strings")
        if k.startswith("$"):
            p = _top_operator(k, v, ctx, depth)
            if p is not None:
                preds.append(p)
            continue
        preds.append(_path_pred(k, v, ctx, depth))
    return _and_all(preds)


def _short(v: Any, depth: int = 3) -> str:
    """A depth-limited rendering of a filter for error messages (never recursing deeply)."""
    if isinstance(v, dict):
        if depth <= 0:
            return "{ ... }"
        return "{ " + ", ".join("%s: %s" % (k, _short(x, depth - 1)) for k, x in list(v.items())[:5]) + " }"
    if isinstance(v, (list, tuple)):
        if depth <= 0:
            return "[ ... ]"
        return "[ " + ", ".join(_short(x, depth - 1) for x in list(v)[:5]) + " ]"
    s = repr(v)
    return s if len(s) < 100 else s[:100] + "..."


def _top_operator(k: str, v: Any, ctx: _Ctx, depth: int) -> Pred | None:
    if k in ("$and", "$or", "$nor"):
        if type(v) not in (list, tuple):
            raise _bad("%s must be an array" % k)
        if not v:
            raise _bad("$and/$or/$nor must be a nonempty array")
        subs = []
        for x in v:
            if not isinstance(x, dict):
                raise _bad("$or/$and/$nor entries need to be full objects")
            subs.append(compile_filter(x, ctx, depth + 1))
        if k == "$and":
            return _and_all(subs)
        if k == "$or":
            if len(subs) == 1:
                return subs[0]
            ts = tuple(subs)

            def or_(doc: Any) -> bool:
                for s in ts:
                    if s(doc):
                        return True
                return False
            return or_
        ts = tuple(subs)
        return lambda doc: not any(s(doc) for s in ts)
    if k == "$comment":
        return None
    if k == "$expr":
        from ..pipeline.expression.match_expr import compile_expr_predicate
        return compile_expr_predicate(v, ctx.variables, ctx.str_key)
    if k == "$jsonSchema":
        from .validation import check_schema, schema_matches
        if not isinstance(v, dict):
            raise _bad("$jsonSchema must be an object", 14)
        check_schema(v)
        return lambda doc, _s=v: schema_matches(_s, doc)
    if k in ("$alwaysTrue", "$alwaysFalse"):
        if not V.is_number(v) or V.num_value(v) != 1:
            raise _bad("%s must be an integer value of 1" % k, 9)
        return (lambda doc: True) if k == "$alwaysTrue" else _always_false
    if k == "$where":
        raise _unsupported("$where (server-side JavaScript)", "$expr with aggregation expressions")
    if k == "$text":
        raise _unsupported("$text (text indexes)", "$regex on an indexed field")
    if k in ("$id", "$ref", "$db"):
        return _path_pred(k, v, ctx, depth)
    if k == "$sampleRate":
        raise _unsupported("$sampleRate")
    from .validation import _unknown_top_level
    raise _bad(_unknown_top_level(k))


# ------------------------------------------------------------------------------------------- leaf predicates
class _Leaf:
    """One path operator: ``single(value) -> bool`` (matchesSingleElement), the leaf-array mode, and
    whether it is a negation of ``inner`` (negations apply to the whole path, not per element)."""

    __slots__ = ("single", "mode", "neg")

    def __init__(self, single: Pred, mode: int = _TRAVERSE, neg: "_Leaf | None" = None) -> None:
        self.single, self.mode, self.neg = single, mode, neg


def _path_pred(path: str, cond: Any, ctx: _Ctx, depth: int) -> Pred:
    leaves = _leaves(path, cond, ctx, depth)
    parts = path.split(".")
    return _and_all([_leaf_on_path(parts, lf) for lf in leaves])


def _leaf_on_path(parts: list[str], lf: _Leaf) -> Pred:
    if isinstance(lf, _Conj):
        return _and_all([_leaf_on_path(parts, x) for x in lf.leaves])
    if lf.neg is not None:
        inner = _leaf_on_path(parts, lf.neg)
        return lambda doc: not inner(doc)
    single = lf.single
    mode = lf.mode
    if len(parts) == 1:
        p0 = parts[0]
        if mode == _TRAVERSE:
            def top(doc: Any) -> bool:
                v = doc.get(p0, MISSING)
                if type(v) is list:
                    for e in v:
                        if single(e):
                            return True
                return single(v)
            return top

        def top_nt(doc: Any) -> bool:
            return single(doc.get(p0, MISSING))
        return top_nt

    def dotted(doc: Any) -> bool:
        for e in path_values(doc, parts, mode):
            if single(e):
                return True
        return False
    return dotted


def _leaves(path: str, cond: Any, ctx: _Ctx, depth: int) -> list[_Leaf]:
    if _is_op_doc(cond):
        out = []
        ops = cond
        for op, arg in ops.items():
            lf = _operator(path, op, arg, ops, ctx, depth)
            if lf is not None:
                out.append(lf)
        return out
    if isinstance(cond, (Regex, _RE_TYPE)):
        return [_Leaf(_regex_single(*_regex_from_value(cond)))]
    return [_Leaf(_eq_single(cond, ctx))]


def _single_and(leaves: list[_Leaf]) -> Pred:
    """Per-element conjunction of leaves (``$elemMatch`` value form, ``$not`` inside it)."""
    fs = []
    for lf in leaves:
        if lf.neg is not None:
            inner = _single_and([lf.neg])
            fs.append(lambda v, _i=inner: not _i(v))
        else:
            fs.append(lf.single)
    if len(fs) == 1:
        return fs[0]
    ft = tuple(fs)
    return lambda v: all(f(v) for f in ft)


_COMPARISONS = ("$eq", "$gt", "$gte", "$lt", "$lte")
_GEO = ("$near", "$nearSphere", "$geoWithin", "$geoIntersects", "$within", "$geoNear", "$box", "$center",
        "$centerSphere", "$polygon", "$maxDistance", "$minDistance", "$geometry")


def _operator(path: str, op: str, arg: Any, ops: dict, ctx: _Ctx, depth: int) -> _Leaf | None:
    if op == "$eq":
        return _Leaf(_eq_single(arg, ctx))
    if op in ("$gt", "$gte", "$lt", "$lte"):
        if isinstance(arg, (Regex, _RE_TYPE)):
            raise _bad("Can't have RegEx as arg to predicate over field '%s'." % path)
        return _Leaf(_cmp_single(op, arg, ctx))
    if op == "$ne":
        if isinstance(arg, (Regex, _RE_TYPE)):
            raise _bad("Can't have regex as arg to $ne.")
        return _Leaf(_always_false, neg=_Leaf(_eq_single(arg, ctx)))
    if op in ("$in", "$nin"):
        if type(arg) not in (list, tuple):
            raise _bad("%s needs an array" % op)
        inner = _Leaf(_in_single(arg, ctx))
        return inner if op == "$in" else _Leaf(_always_false, neg=inner)
    if op == "$not":
        if isinstance(arg, (Regex, _RE_TYPE)):
            inner_leaves = [_Leaf(_regex_single(*_regex_from_value(arg)))]
        elif isinstance(arg, dict):
            if not arg:
                raise _bad("$not cannot be empty")
            if not _is_op_doc(arg):
                k = next(iter(arg))
                raise _bad("unknown operator: %s" % k)
            inner_leaves = _leaves(path, arg, ctx, depth + 1)
        else:
            raise _bad("$not needs a regex or a document")
        if len(inner_leaves) == 1:
            return _Leaf(_always_false, neg=inner_leaves[0])
        return _Leaf(_always_false, neg=_Conj(inner_leaves))
    if op == "$exists":
        ex = _Leaf(_exists_single)
        return ex if _truthy(arg) else _Leaf(_always_false, neg=ex)
    if op == "$type":
        return _Leaf(_type_single(arg))
    if op == "$size":
        n = _size_arg(arg)
        return _Leaf(lambda v, _n=n: type(v) is list and len(v) == _n, _NO_TRAVERSE)
    if op == "$all":
        return _all(path, arg, ctx, depth)
    if op == "$elemMatch":
        return _elem_match(path, arg, ctx, depth)
    if op == "$regex":
        pattern, flags = _regex_doc(ops)
        return _Leaf(_regex_single(pattern, flags))
    if op == "$options":
        if "$regex" not in ops:
            raise _bad("$options needs a $regex")
        return None
    if op == "$mod":
        return _Leaf(_mod_single(arg))
    if op in ("$bitsAllSet", "$bitsAllClear", "$bitsAnySet", "$bitsAnyClear"):
        return _Leaf(_bits_single(op, arg))
    if op == "$comment":
        return None
    if op in _GEO:
        raise _unsupported("%s (geospatial queries)" % op)
    if op == "$where":
        raise _bad("$where cannot be applied to a field")
    if op == "$text":
        raise _bad("unknown operator: $text")
    raise _bad("unknown operator: %s" % op)


class _Conj(_Leaf):
    """Several leaves on one path under ``$not``: NOT(AND(path predicates))."""

    def __init__(self, leaves: list[_Leaf]) -> None:
        super().__init__(_single_and(leaves))
        self.leaves = leaves


def _truthy(v: Any) -> bool:
    if v is None or v is False:
        return False
    if V.is_number(v):
        x = V.num_value(v)
        return x != 0
    return True


# --- equality / comparison
_SIMPLE_EQ = {int: V.T_NUM, float: V.T_NUM, str: V.T_STR, bool: V.T_BOOL, ObjectId: V.T_OID,
              Int64: V.T_NUM}


def _eq_single(rhs: Any, ctx: _Ctx) -> Pred:
    if rhs is None:
        return lambda v: v is None or v is MISSING or type(v) is V.Undefined
    if isinstance(rhs, (MinKey, MaxKey)):
        t = type(rhs)
        return lambda v: type(v) is t
    str_key = ctx.str_key
    t = type(rhs)
    if t is str and str_key is None:
        def eq_str(v: Any) -> bool:
            return type(v) is str and v == rhs
        return eq_str
    if ((t is int or t is Int64) and not isinstance(rhs, bool)) or (t is float and rhs == rhs):
        def eq_number(v: Any) -> bool:
            tv = type(v)
            if tv is int or tv is float or tv is Int64:
                return v == rhs
            if tv is Decimal128:
                return V.equal(v, rhs)
            return False
        return eq_number
    if t is bool:
        return lambda v: type(v) is bool and v is rhs
    if t is ObjectId:
        return lambda v: type(v) is ObjectId and v == rhs
    rank = V.canonical_type(rhs)

    def eq_any(v: Any) -> bool:
        return _of_rank(v, rank) and V.compare(v, rhs, str_key) == 0
    return eq_any


def _of_rank(v: Any, rank: int) -> bool:
    """``v`` is there and of type rank ``rank``: a comparison matches only values of its own type bracket."""
    if v is MISSING:
        return False
    try:
        return V.canonical_type(v) == rank
    except TypeError:
        return False


def _cmp_single(op: str, rhs: Any, ctx: _Ctx) -> Pred:
    str_key = ctx.str_key
    if isinstance(rhs, (MinKey, MaxKey)):  # every value is >= MinKey and <= MaxKey; only itself equals it
        kind = MinKey if isinstance(rhs, MinKey) else MaxKey
        every, all_but_itself, only_itself = ("$gte", "$gt", "$lte") if kind is MinKey else ("$lte", "$lt", "$gte")
        if op == every:
            return lambda v: True
        if op == all_but_itself:
            return lambda v: not isinstance(v, kind)
        if op == only_itself:
            return lambda v: isinstance(v, kind)
        return _always_false
    if rhs is None:
        if op in ("$gte", "$lte"):
            return lambda v: v is None or v is MISSING or type(v) is V.Undefined
        return _always_false
    rank = V.canonical_type(rhs)
    if rank == V.T_NUM and V.is_nan(rhs):
        if op in ("$gte", "$lte"):
            return lambda v: V.is_number(v) and V.is_nan(v)
        return _always_false
    t = type(rhs)
    if t in (int, float) and not isinstance(rhs, bool):
        # the hot case: plain numbers (NaN on the document side compares false)
        if op == "$gt":
            def f(v: Any) -> bool:
                tv = type(v)
                if tv is int or tv is float:
                    return v > rhs
                return (tv is Int64 or tv is Decimal128) and _num_cmp(v, rhs) > 0
        elif op == "$gte":
            def f(v: Any) -> bool:
                tv = type(v)
                if tv is int or tv is float:
                    return v >= rhs
                return (tv is Int64 or tv is Decimal128) and _num_cmp(v, rhs) >= 0
        elif op == "$lt":
            def f(v: Any) -> bool:
                tv = type(v)
                if tv is int or tv is float:
                    return v < rhs
                return (tv is Int64 or tv is Decimal128) and -2 < _num_cmp(v, rhs) < 0  # -2: a NaN
        else:
            def f(v: Any) -> bool:
                tv = type(v)
                if tv is int or tv is float:
                    return v <= rhs
                return (tv is Int64 or tv is Decimal128) and -2 < _num_cmp(v, rhs) <= 0  # -2: a NaN
        return f
    want = {"$gt": (1,), "$gte": (0, 1), "$lt": (-1,), "$lte": (-1, 0)}[op]
    str_key = ctx.str_key

    def cmp_any(v: Any) -> bool:
        if not _of_rank(v, rank):
            return False
        if rank == V.T_NUM and V.is_nan(v):
            return False
        return V.compare(v, rhs, str_key) in want
    return cmp_any


def _num_cmp(v: Any, rhs: Any) -> int:
    """compare() for a long/decimal document value against a plain number; NaN compares false (-2)."""
    if V.is_nan(v):
        return -2
    return V.compare(v, rhs)


def _in_single(arr: Any, ctx: _Ctx) -> Pred:
    eqs: list[Pred] = []
    regexes: list[Pred] = []
    has_null = False
    keyed: set = set()
    str_key = ctx.str_key
    for x in arr:
        if _is_op_doc(x):
            raise _bad("cannot nest $ under $in")
        if isinstance(x, (Regex, _RE_TYPE)):
            regexes.append(_regex_single(*_regex_from_value(x)))
            continue
        if x is None:
            has_null = True
            continue
        tx = type(x)
        if tx in _SIMPLE_EQ and not (tx is float and x != x) and not (tx is str and str_key is not None):
            keyed.add((_SIMPLE_EQ[tx], x))
        else:
            eqs.append(_eq_single(x, ctx))
    eq_t = tuple(eqs)
    rx_t = tuple(regexes)

    def in_(v: Any) -> bool:
        if v is None or v is MISSING:
            return has_null
        tv = type(v)
        r = _SIMPLE_EQ.get(tv)
        if r is not None:
            if (r, v) in keyed and not (tv is float and v != v):
                return True
        elif tv is V.Undefined:
            return has_null
        elif tv is Decimal128:  # against the keyed int/long/double values: by exact value (Decimal == float
            d = v.to_decimal()  # and their hashes agree in Python); NaNs are left to the $eq predicates
            if not d.is_nan() and (V.T_NUM, d) in keyed:
                return True
        for e in eq_t:
            if e(v):
                return True
        for e in rx_t:
            if e(v):
                return True
        return False
    return in_


def _exists_single(v: Any) -> bool:
    return v is not MISSING


# --- $type
def _type_codes(arg: Any) -> tuple[set[int], bool]:
    items = arg if type(arg) in (list, tuple) else [arg]
    codes: set[int] = set()
    number = False
    for x in items:
        if isinstance(x, str):
            if x == "number":
                number = True
            elif x in V.TYPE_ALIASES:
                codes.add(V.TYPE_ALIASES[x])
            else:
                raise _bad("Unknown type name alias: %s" % x)
        elif V.is_number(x) and not isinstance(x, bool):
            if not V.is_finite_number(x) or V.num_value(x) != int(V.num_value(x)):
                raise _bad("Invalid numerical type code: %s" % x)
            n = int(V.num_value(x))
            if n not in V.TYPE_CODES:
                raise _bad("Invalid numerical type code: %s" % x)
            codes.add(n)
        else:
            raise _bad("type must be represented as a number or a string")
    if type(arg) in (list, tuple) and not items:
        raise _bad("$type must match at least one type", 9)
    return codes, number


def _type_single(arg: Any) -> Pred:
    codes, number = _type_codes(arg)
    if number:
        codes |= {1, 16, 18, 19}

    def type_(v: Any) -> bool:
        if v is MISSING:
            return False
        return V.bson_type_code(v) in codes
    return type_


def _size_arg(arg: Any) -> int:
    if isinstance(arg, bool) or not V.is_number(arg):
        raise _bad("$size needs a number")
    n = V.num_value(arg)
    if isinstance(arg, float) or isinstance(arg, Decimal128):
        if n != n or n != int(n):
            raise _bad("$size must be a whole number")
    n = int(n)
    if n < 0:
        raise _bad("$size may not be negative")
    if n >= 1 << 31:
        raise _bad("$size must be representable as a 32-bit integer")
    return n


# --- $all / $elemMatch
def _all(path: str, arg: Any, ctx: _Ctx, depth: int) -> _Leaf:
    if type(arg) not in (list, tuple):
        raise _bad("$all needs an array")
    if not arg:
        return _Leaf(_always_false)
    first = arg[0]
    leaves: list[_Leaf] = []
    if isinstance(first, dict) and first and next(iter(first)) == "$elemMatch":
        for x in arg:
            if not (isinstance(x, dict) and x and next(iter(x)) == "$elemMatch"):
                raise _bad("$all/$elemMatch has to be consistent")
            leaves.append(_elem_match(path, x["$elemMatch"], ctx, depth))
    else:
        for x in arg:
            if isinstance(x, (Regex, _RE_TYPE)):
                leaves.append(_Leaf(_regex_single(*_regex_from_value(x))))
            elif isinstance(x, dict) and x and isinstance(next(iter(x)), str) and next(iter(x)).startswith("$") \
                    and not ("$ref" in x and "$id" in x):
                raise _bad("no $ expressions in $all")
            else:
                leaves.append(_Leaf(_eq_single(x, ctx)))
    if len(leaves) == 1:
        return leaves[0]
    return _Conj(leaves)


_PATHLESS = ("$and", "$or", "$nor", "$expr", "$where", "$text", "$comment", "$jsonSchema", "$alwaysTrue",
             "$alwaysFalse", "$id", "$ref", "$db", "$sampleRate")


def _elem_match(path: str, arg: Any, ctx: _Ctx, depth: int) -> _Leaf:
    if not isinstance(arg, dict):
        raise _bad("$elemMatch needs an Object")
    if depth + 1 > MAX_DEPTH:
        raise _bad("exceeded maximum query tree depth of %d at %s" % (MAX_DEPTH, _short(arg)))
    first = next(iter(arg)) if arg else None
    if isinstance(first, str) and first.startswith("$") and first not in _PATHLESS:
        # value form: every operator must hold for one element (no traversal into it)
        leaves = []
        for op, a in arg.items():
            lf = _operator(path, op, a, arg, ctx, depth + 1)
            if lf is not None:
                leaves.append(lf)
        single = _single_and(leaves) if leaves else (lambda v: True)

        def em_value(v: Any) -> bool:
            if type(v) is not list:
                return False
            for e in v:
                if single(e):
                    return True
            return False
        return _Leaf(em_value, _NO_TRAVERSE)
    if "$where" in arg:
        raise _bad("$elemMatch cannot contain $where expression")
    if "$expr" in arg:
        raise _bad("$expr can only be applied to the top-level document")
    if "$text" in arg:
        raise _bad("$text can only be applied to the top-level document")
    sub = compile_filter(arg, ctx, depth + 1)

    def em_obj(v: Any) -> bool:
        if type(v) is not list:
            return False
        for e in v:
            te = type(e)
            if te is dict:
                if sub(e):
                    return True
            elif te is list:
                if sub(_as_doc(e)):
                    return True
            elif isinstance(e, dict) and sub(e):
                return True
        return False
    return _Leaf(em_obj, _NO_TRAVERSE)


# --- $regex
_VALID_FLAGS = set("imsxu")


def _regex_from_value(rx: Any) -> tuple[str, str]:
    return V.regex_parts(rx)


def _regex_doc(ops: dict) -> tuple[str, str]:
    rx = ops.get("$regex")
    opts = ops.get("$options", None)
    if opts is not None and not isinstance(opts, str):
        raise _bad("$options has to be a string")
    if isinstance(rx, str):
        return rx, opts or ""
    if isinstance(rx, (Regex, _RE_TYPE)):
        pattern, flags = V.regex_parts(rx)
        if flags and opts:
            raise _bad("options set in both $regex and $options", 51075)
        return pattern, flags or opts or ""
    raise _bad("$regex has to be a string")


_RX_CACHE: dict[tuple[str, str], Any] = {}


def compile_regex(pattern: str, flags: str) -> Any:
    """A compiled Python pattern for a BSON regex (error 51091 / 51108 as the server's PCRE parse)."""
    key = (pattern, flags)
    r = _RX_CACHE.get(key)
    if r is not None:
        return r
    f = 0
    for ch in flags:
        if ch not in _VALID_FLAGS:
            raise _bad("invalid flag in regex options: %s" % ch, 51108)
        f |= {"i": re.I, "m": re.M, "s": re.S, "x": re.X, "u": 0}[ch]
    if "\x00" in pattern:
        raise _bad("Regular expression cannot contain an embedded null byte", 51109)
    try:
        r = re.compile(_pcre_to_python(pattern), f)
    except re.error as e:
        raise _bad("Regular expression is invalid: %s" % e, 51091) from None
    if len(_RX_CACHE) > 512:
        _RX_CACHE.clear()
    _RX_CACHE[key] = r
    return r


def _pcre_to_python(p: str) -> str:
    # PCRE's possessive/atomic syntax is Python 3.11+ too; \Q...\E and (?<name>..) are translated (values.py)
    return V.pcre_to_python(p)


def _regex_single(pattern: str, flags: str) -> Pred:
    rx = compile_regex(pattern, flags)
    search = rx.search
    canon = (pattern, "".join(sorted(flags)))

    def regex_(v: Any) -> bool:
        tv = type(v)
        if tv is str:
            return search(v) is not None
        if isinstance(v, (Regex, _RE_TYPE)):
            return V.regex_parts(v) == canon
        if isinstance(v, str) and tv.__name__ != "Code":
            return search(v) is not None
        return False
    return regex_


# --- $mod / bits
def _mod_single(arg: Any) -> Pred:
    if type(arg) not in (list, tuple):
        raise _bad("malformed mod, needs to be an array")
    if len(arg) < 2:
        raise _bad("malformed mod, not enough elements")
    if len(arg) > 2:
        raise _bad("malformed mod, too many elements")
    d, r = arg
    if isinstance(d, bool) or not V.is_number(d):
        raise _bad("malformed mod, divisor not a number")
    if isinstance(r, bool) or not V.is_number(r):
        raise _bad("malformed mod, remainder not a number")
    if not V.is_finite_number(d):
        raise _bad("malformed mod, divisor value is invalid :: caused by :: "
                   "Unable to coerce NaN/Inf to integral type")
    if not V.is_finite_number(r):
        raise _bad("malformed mod, remainder value is invalid :: caused by :: "
                   "Unable to coerce NaN/Inf to integral type")
    di = int(V.num_value(d))
    ri = int(V.num_value(r))
    if di == 0:
        raise _bad("divisor cannot be 0")

    def mod_(v: Any) -> bool:
        if isinstance(v, bool) or not V.is_number(v) or not V.is_finite_number(v):
            return False
        x = int(V.num_value(v))  # truncation toward zero, as numberLong()
        m = abs(x) % abs(di)
        if x < 0:
            m = -m
        return m == ri
    return mod_


def _bits_single(op: str, arg: Any) -> Pred:
    positions: list[int] = []
    if type(arg) in (list, tuple):
        for x in arg:
            if isinstance(x, bool) or not V.is_number(x):
                raise _bad("bit positions must be an integer but got: %s: %r" % (op, x))
            n = V.num_value(x)
            if n != n or n != int(n):
                raise _bad("bit positions must be an integer but got: %s: %r" % (op, x))
            if n < 0:
                raise _bad("bit positions must be >= 0 but got: %s: %r" % (op, x))
            positions.append(int(n))
        mask = sum(1 << p for p in set(positions))
    elif V.is_number(arg) and not isinstance(arg, bool):
        n = V.num_value(arg)
        if n != n or n != int(n):
            raise _bad("Expected an integer: %s: %r" % (op, arg), 9)
        if n < 0:
            raise _bad("Expected a positive number in: %s: %r" % (op, arg), 9)
        mask = int(n)
    elif isinstance(arg, (bytes, Binary)):
        mask = int.from_bytes(bytes(arg), "little")
    else:
        raise _bad("%s takes an Array, a number, or a BinData but received: %s: %r" % (op, op, arg))

    def value_bits(v: Any) -> int | None:
        if isinstance(v, bool):
            return None
        if isinstance(v, (bytes, Binary)):
            return int.from_bytes(bytes(v), "little")
        if not V.is_number(v):
            return None
        x = V.num_value(v)
        if isinstance(v, Decimal128):  # numberLong(): Decimal128::toLong, ties to even; NaN, inf and
            if not x.is_finite():       # out-of-range values give the integer indefinite (LLONG_MIN)
                return -(1 << 63)
            x = int(x.to_integral_value(rounding="ROUND_HALF_EVEN"))
            return x if -(1 << 63) <= x < (1 << 63) else -(1 << 63)
        if isinstance(x, float) or not isinstance(x, int):
            if x != x or x in (math.inf, -math.inf) or x != int(x):
                return None
            x = int(x)
            if not (-(1 << 63) <= x < (1 << 63)):
                return None
        return x  # Python ints are two's complement with infinite sign extension, as the server's 64 bits

    def bits(v: Any) -> bool:
        b = value_bits(v)
        if b is None:
            return False
        b_and = b & mask
        if op == "$bitsAllSet":
            return b_and == mask
        if op == "$bitsAnySet":
            return b_and != 0
        if op == "$bitsAllClear":
            return b_and == 0
        return b_and != mask
    return bits


# ------------------------------------------------------------------------------------------- entry points
_CACHE: dict = {}


def fast_matcher(filter: dict, collation: dict | None = None,
                 variables: dict | None = None) -> Callable[[dict], bool]:
    """THE matcher: ``doc -> bool`` with the server's rules for ``filter`` (parse errors raised here)."""
    if filter is None:
        filter = {}
    return compile_filter(filter, _Ctx(collation, variables), 0)


def check_query_depth(filter: Any) -> None:
    """Raise the server's BadValue (2) when a filter nests deeper than 100 levels (iteratively: safe to call
    before anything recursive walks the filter)."""
    stack = [(filter, 0)]
    while stack:
        cur, d = stack.pop()
        if d > MAX_DEPTH:
            raise _bad("exceeded maximum query tree depth of %d at %s" % (MAX_DEPTH, _short(cur)))
        if isinstance(cur, dict):  # literal values (non-operator documents) are not tree levels
            stack.extend((v, d + 1) for k, v in cur.items() if isinstance(v, (dict, list)) and (
                str(k).startswith("$") or _is_op_doc(v)))
        elif isinstance(cur, list):
            stack.extend((v, d) for v in cur if isinstance(v, (dict, list)))


def filter_applies(filter: dict, doc: dict, collation: dict | None = None,
                   variables: dict | None = None) -> bool:
    """One-shot ``fast_matcher(filter, ...)(doc)`` (the signature mongomock's filter_applies had)."""
    return fast_matcher(filter, collation, variables)(doc)


def first_matching_index(filter: dict, doc: dict, array_path: str, collation: dict | None = None,
                         variables: dict | None = None) -> int | None:
    """The position in the array at ``array_path`` of the first element that makes ``filter`` match
    ``doc`` (the positional ``$`` operator's element), or None. Implemented as the server records the
    "elemMatchKey": each element is tried alone in place of the array."""
    m = fast_matcher(filter, collation, variables)
    if not m(doc):
        return None
    parts = array_path.split(".")
    cur: Any = doc
    for p in parts:
        if isinstance(cur, dict) and p in cur:
            cur = cur[p]
        elif isinstance(cur, list) and p.isdigit() and int(p) < len(cur):
            cur = cur[int(p)]
        else:
            return None
    if type(cur) is not list:
        return None
    for i, e in enumerate(cur):
        probe = _replace_at(doc, parts, [e])
        if m(probe):
            return i
    return None


def _replace_at(doc: Any, parts: list[str], value: Any) -> Any:
    if not parts:
        return value
    p = parts[0]
    if isinstance(doc, dict):
        out = dict(doc)
        out[p] = _replace_at(doc.get(p), parts[1:], value)
        return out
    if isinstance(doc, list) and p.isdigit():
        out_l = list(doc)
        out_l[int(p)] = _replace_at(doc[int(p)], parts[1:], value)
        return out_l
    return doc


# validation.py (its $jsonSchema matcher, used above) applies validators' query operators with this matcher,
# through the engine's registry (hooks.py), so it need not import this module back
from ..base import hooks  # noqa: E402

hooks.register("filter_applies", filter_applies)

__all__ = ["fast_matcher", "filter_applies", "check_query_depth", "first_matching_index", "path_values", "compile_regex",
           "compile_filter"]
