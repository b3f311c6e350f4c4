"""Predicates and index bounds (MongoDB's IndexBoundsBuilder, simplified but faithful for the common operators)."""
from __future__ import annotations

import datetime
import re
from typing import Any, Iterable

from bson import Decimal128, ObjectId, Regex, Timestamp
from bson.max_key import MaxKey
from bson.min_key import MinKey

from ..bson import keys as K

_RE_TYPE = type(re.compile(""))

OTHER_TOP = {"$nor", "$expr", "$where", "$text", "$comment", "$jsonSchema", "$alwaysFalse", "$alwaysTrue",
             "$sampleRate"}


class Interval:
    """One interval in ascending value order: ``lo``/``hi`` as key strings plus display values."""

    __slots__ = ("lo", "lo_incl", "hi", "hi_incl", "lo_d", "hi_d")

    def __init__(self, lo: bytes, lo_incl: bool, hi: bytes, hi_incl: bool, lo_d: Any, hi_d: Any) -> None:
        self.lo, self.lo_incl, self.hi, self.hi_incl, self.lo_d, self.hi_d = lo, lo_incl, hi, hi_incl, lo_d, hi_d

    @property
    def is_point(self) -> bool:
        return self.lo == self.hi and self.lo_incl and self.hi_incl

    @property
    def is_full(self) -> bool:
        return self.lo == K.MINKEY_B and self.hi == K.MAXKEY_B and self.lo_incl and self.hi_incl

    def empty(self) -> bool:
        return self.lo > self.hi or (self.lo == self.hi and not (self.lo_incl and self.hi_incl))

    def __repr__(self) -> str:  # pragma: no cover
        return self.fmt(False)

    def fmt(self, reverse: bool) -> str:
        if reverse:
            return "%s%s, %s%s" % ("[" if self.hi_incl else "(", K.fmt_value(self.hi_d), K.fmt_value(self.lo_d),
                                   "]" if self.lo_incl else ")")
        return "%s%s, %s%s" % ("[" if self.lo_incl else "(", K.fmt_value(self.lo_d), K.fmt_value(self.hi_d),
                               "]" if self.hi_incl else ")")


def point(v: Any) -> Interval:
    e = K.encode(v)
    return Interval(e, True, e, True, v, v)


FULL = Interval(K.MINKEY_B, True, K.MAXKEY_B, True, MinKey(), MaxKey())


def full() -> list[Interval]:
    return [FULL]


def intersect(a: list[Interval], b: list[Interval]) -> list[Interval]:
    out = []
    for x in a:
        for y in b:
            if x.lo > y.lo or (x.lo == y.lo and not x.lo_incl):
                lo, li, lod = x.lo, x.lo_incl, x.lo_d
            else:
                lo, li, lod = y.lo, y.lo_incl, y.lo_d
            if x.hi < y.hi or (x.hi == y.hi and not x.hi_incl):
                hi, hi_, hid = x.hi, x.hi_incl, x.hi_d
            else:
                hi, hi_, hid = y.hi, y.hi_incl, y.hi_d
            iv = Interval(lo, li, hi, hi_, lod, hid)
            if not iv.empty():
                out.append(iv)
    return union(out)


def union(ivs: list[Interval]) -> list[Interval]:
    ivs = sorted(ivs, key=lambda i: (i.lo, not i.lo_incl))
    out: list[Interval] = []
    for iv in ivs:
        if out:
            last = out[-1]
            if iv.lo < last.hi or (iv.lo == last.hi and (iv.lo_incl or last.hi_incl)):
                if iv.hi > last.hi or (iv.hi == last.hi and iv.hi_incl and not last.hi_incl):
                    out[-1] = Interval(last.lo, last.lo_incl, iv.hi, iv.hi_incl, last.lo_d, iv.hi_d)
                continue
        out.append(iv)
    return out


def complement(ivs: list[Interval]) -> list[Interval]:
    out = []
    lo, li, lod = K.MINKEY_B, True, MinKey()
    for iv in ivs:
        c = Interval(lo, li, iv.lo, not iv.lo_incl, lod, iv.lo_d)
        if not c.empty():
            out.append(c)
        lo, li, lod = iv.hi, not iv.hi_incl, iv.hi_d
    c = Interval(lo, li, K.MAXKEY_B, True, lod, MaxKey())
    if not c.empty():
        out.append(c)
    return out


# type brackets for range predicates: (low display, low, low_incl, high display, high, high_incl)
_DATE_MIN = K.DateBound(-(1 << 63))
_DATE_MAX = K.DateBound((1 << 63) - 1)


def _bracket(v: Any):
    t = K.canonical_type(v)
    if t == K.T_NUM:
        return (float("-inf"), K.encode(float("-inf")), True, float("inf"), K.encode(float("inf")), True)
    if t == K.T_STR:
        return ("", K.encode(""), True, {}, K.encode({}), False)
    if t == K.T_OBJ:
        return ({}, K.encode({}), True, [], K.encode([]), False)
    if t == K.T_OID:
        lo, hi = ObjectId("0" * 24), ObjectId("f" * 24)
        return (lo, K.encode(lo), True, hi, K.encode(hi), True)
    if t == K.T_BOOL:
        return (False, K.encode(False), True, True, K.encode(True), True)
    if t == K.T_DATE:
        return (_DATE_MIN, b"\x78" + b"\x00" * 8, True, _DATE_MAX, b"\x78" + b"\xff" * 8, True)
    if t == K.T_TS:
        lo, hi = Timestamp(0, 0), Timestamp(4294967295, 4294967295)
        return (lo, K.encode(lo), True, hi, K.encode(hi), True)
    return None


class Pred:
    """One indexable predicate on a path: intervals, exactness, original filter fragment."""

    def __init__(self, path: str, op: str, arg: Any, frag: dict, intervals: list[Interval] | None,
                 exact: bool, kind: str = "") -> None:
        self.path, self.op, self.arg, self.frag = path, op, arg, frag
        self.intervals = intervals  # None => not indexable
        self.exact = exact
        self.kind = kind  # "eq", "range", "null", "regex", "in", "ne", "exists", "exists_false", "elem"
        # (identity, path) of the object-form $elemMatch this predicate was derived from: it only supplies
        # index bounds, the $elemMatch itself stays in the FETCH filter
        self.elem_group: tuple | None = None

    @property
    def indexable(self) -> bool:
        return self.intervals is not None

    @property
    def is_equality(self) -> bool:
        return self.kind in ("eq",) and self.intervals is not None and len(self.intervals) == 1 \
            and self.intervals[0].is_point


def _regex_parts(rx: Any, options: str = "") -> tuple[Regex, str | None]:
    """The regex (flags merged with ``$options``) and the prefix every string it matches starts with (None when
    there is none to bound a scan by)."""
    r, flags = _regex_of(rx, options)
    prefix, _ = regex_prefix(r.pattern, flags)
    return r, (prefix or None)


def _regex_of(rx: Any, options: str = "") -> tuple[Regex, str]:
    """The regex with its flags merged with ``$options``, and those flags as a string."""
    if isinstance(rx, _RE_TYPE):
        r = Regex.from_native(rx)
        pattern, flags = r.pattern, K.regex_flag_letters(r.flags)
    elif isinstance(rx, Regex):
        pattern = rx.pattern
        flags = rx.flags if isinstance(rx.flags, str) else K.regex_flag_letters(rx.flags)
    else:
        pattern, flags = str(rx), ""
    flags = "".join(sorted(set(flags + (options or ""))))
    return Regex(pattern, flags), flags


def _may_have_unescaped_pipe(s: str) -> bool:
    """analyze_regex.cpp ``stringMayHaveUnescapedPipe`` (best effort, false positives allowed)."""
    if s[:1] == "|" or (len(s) > 1 and s[1] == "|" and s[0] != "\\"):
        return True
    return any(s[i] == "|" and (s[i - 1] != "\\" or s[i - 2] == "\\") for i in range(2, len(s)))


def regex_prefix(pattern: str, flags: str = "") -> tuple[str, bool]:
    """src/mongo/db/query/util/analyze_regex.cpp ``getRegexPrefixMatch``: the prefix every matching string
    starts with, and whether the regex *is* "starts with that prefix" (then the index bounds answer it exactly:
    ``/^bar/`` -> ("bar", True), ``/^bar?/`` -> ("ba", False), ``/^abc.*/`` -> ("abc", True), a regex without
    ``^`` / ``\\A``, with an unescaped ``|`` or with the ``i`` flag -> ("", False))."""
    if pattern.startswith("\\A"):
        multiline_ok, rest = True, pattern[2:]
    elif pattern.startswith("^"):
        multiline_ok, rest = False, pattern[1:]
    else:
        return "", False
    if _may_have_unescaped_pipe(rest):
        return "", False
    extended = False
    for f in flags:
        if f == "m":
            if not multiline_ok:
                return "", False
        elif f == "x":
            extended = True
        elif f != "s":
            return "", False  # "i" and any other flag: the index order cannot bound it
    ss: list[str] = []
    r: str | None = None
    i, n = 0, len(rest)
    while i < n:
        c = rest[i]
        i += 1
        if c in "*?":  # the last character becomes optional: bounds from the prefix before it, not exact
            return "".join(ss)[:-1], False
        if c == "\\":
            c = rest[i] if i < n else ""
            i += 1
            if c == "Q":  # \Q...\E quotes everything inside
                while i < n:
                    c = rest[i]
                    i += 1
                    if c == "\\" and rest[i:i + 1] == "E":
                        i += 1
                        break
                    ss.append(c)
            elif c.isascii() and (c.isalnum() or c == ""):
                r = "".join(ss)  # \d, \w, \1 ...: stop here
                break
            else:
                ss.append(c)
        elif c in "^$.[()+{":
            if not multiline_ok and c == ".":
                if rest[i:] == "*":  # /^abc.*/: exactly "starts with abc"
                    return "".join(ss), True
            r = "".join(ss)
            break
        elif extended and c == "#":
            r = "".join(ss)
            break
        elif extended and c.isspace():
            continue
        else:
            ss.append(c)
    if r is None and i >= n:
        r = "".join(ss)
        return r, bool(r)
    return r or "", False


def regex_intervals(rx: Any, options: str = "") -> list[Interval]:
    r, prefix = _regex_parts(rx, options)
    rv = Interval(K.encode(r), True, K.encode(r), True, r, r)
    if prefix:
        succ = prefix[:-1] + chr(ord(prefix[-1]) + 1)
        s = Interval(K.encode(prefix), True, K.encode(succ), False, prefix, succ)
    else:
        s = Interval(K.encode(""), True, K.encode({}), False, "", {})
    return [s, rv]


def regex_exact(rx: Any, options: str = "") -> bool:
    """Whether the bounds of ``rx`` answer it exactly (index_bounds_builder.cpp ``simpleRegex``: EXACT for a
    plain prefix, else INEXACT_COVERED: the regex is then checked on the index keys, before any fetch)."""
    r, flags = _regex_of(rx, options)
    return regex_prefix(r.pattern, flags)[1]


def eq_intervals(v: Any) -> tuple[list[Interval] | None, bool, str]:
    if v is None:
        # 8.0: null equality matches null and missing only (not undefined), exactly the index key null
        # (jstests/core/query/cover_null_queries.js: COUNT_SCAN and covered plans for {a: null})
        return [point(None)], True, "null"
    if isinstance(v, (Regex, _RE_TYPE)):
        return regex_intervals(v), regex_exact(v), "regex"
    if isinstance(v, (list, tuple)):
        v = list(v)
        ivs = [point(v)]
        if v:
            first = eq_intervals(v[0])[0]
            if first is None:
                return None, False, ""
            ivs += first
        else:
            ivs.append(point(K.UNDEFINED))
        return union(ivs), False, "arrayeq"
    if isinstance(v, (MinKey, MaxKey)):
        return [point(v)], True, "eq"
    try:
        return [point(v)], True, "eq"
    except TypeError:
        return None, False, ""


def range_intervals(op: str, v: Any) -> list[Interval] | None:
    if v is None or isinstance(v, (list, tuple, MinKey, MaxKey, Regex, _RE_TYPE)):
        return None
    try:
        b = _bracket(v)
    except TypeError:
        return None
    if b is None:
        return None
    lod, lo, loi, hid, hi, hii = b
    e = K.encode(v)
    if isinstance(v, float) and v != v or isinstance(v, Decimal128) and v.to_decimal().is_nan():
        return None  # NaN: only $gte/$lte NaN match (NaNs), a FETCH filter decides
    if op == "$gt":
        iv = Interval(e, False, hi, hii, v, hid)
    elif op == "$gte":
        iv = Interval(e, True, hi, hii, v, hid)
    elif op == "$lt":
        iv = Interval(lo, loi, e, False, lod, v)
    else:
        iv = Interval(lo, loi, e, True, lod, v)
    return [] if iv.empty() else [iv]


def make_preds(path: str, cond: Any) -> list[Pred] | None:
    """Predicates of one ``{path: cond}`` entry; None when the entry is not indexable at all."""
    frag = {path: cond}
    if not (isinstance(cond, dict) and cond and all(isinstance(k, str) and k.startswith("$") for k in cond)):
        ivs, exact, kind = eq_intervals(cond)
        return [Pred(path, "$eq", cond, frag, ivs, exact, "eq" if kind == "eq" else kind)]
    preds = []
    options = cond.get("$options", "")
    for op, arg in cond.items():
        f = {path: {op: arg}}
        if op == "$eq":
            ivs, exact, kind = eq_intervals(arg)
            preds.append(Pred(path, op, arg, f, ivs, exact, kind))
        elif op in ("$gt", "$gte", "$lt", "$lte"):
            preds.append(Pred(path, op, arg, f, range_intervals(op, arg), True, "range"))
        elif op == "$in":
            if not isinstance(arg, (list, tuple)):
                preds.append(Pred(path, op, arg, f, None, False))
                continue
            all_ivs: list[Interval] = []
            exact = True
            ok = True
            for v in arg:
                ivs, ex, _ = eq_intervals(v)
                if ivs is None:
                    ok = False
                    break
                exact = exact and ex
                all_ivs += ivs
            preds.append(Pred(path, op, arg, f, union(all_ivs) if ok else None, exact, "in"))
        elif op == "$ne":
            if isinstance(arg, (list, tuple, dict, Regex, _RE_TYPE)):
                preds.append(Pred(path, op, arg, f, None, False))
            else:
                preds.append(Pred(path, op, arg, f, complement([point(arg)]), True, "ne"))
        elif op == "$nin":
            if isinstance(arg, (list, tuple)) and all(
                    not isinstance(v, (list, tuple, dict, Regex, _RE_TYPE)) for v in arg):
                preds.append(Pred(path, op, arg, f, complement(union([point(v) for v in arg])), True, "ne"))
            else:
                preds.append(Pred(path, op, arg, f, None, False))
        elif op == "$exists":
            if arg:
                preds.append(Pred(path, op, arg, f, full(), False, "exists"))
            else:
                preds.append(Pred(path, op, arg, f, [point(None)], False, "exists_false"))
        elif op == "$regex":
            f = {path: {"$regex": arg, "$options": options}} if options else f
            preds.append(Pred(path, op, arg, f, regex_intervals(arg, options), regex_exact(arg, options), "regex"))
        elif op == "$options":
            continue
        elif op == "$elemMatch":
            if isinstance(arg, dict) and arg and all(k.startswith("$") for k in arg) and \
                    not any(k in ("$and", "$or", "$nor", "$expr", "$where") for k in arg):
                sub = make_preds(path, arg)
                ivs: list[Interval] | None = full()
                for p in sub or []:
                    if p.intervals is not None and p.kind in ("eq", "range", "in", "regex"):
                        ivs = intersect(ivs, p.intervals)
                if ivs is not None and len(ivs) == 1 and ivs[0].is_full:
                    ivs = None
                preds.append(Pred(path, op, arg, f, ivs, False, "elem"))
            elif isinstance(arg, dict) and arg and not any(str(k).startswith("$") for k in arg):
                # object form {path: {$elemMatch: {c: .., s: ..}}}: the sub-predicates give bounds on
                # path.c / path.s (compoundable on a multikey index, manual "Multikey Index Bounds" >
                # "Compound Bounds for Multikey Index" with $elemMatch); the $elemMatch is the filter
                preds.append(Pred(path, op, arg, f, None, False))
                group = (object(), path)
                for sk, sv in arg.items():
                    for p in make_preds(path + "." + sk, sv) or []:
                        if p.intervals is None or p.kind not in ("eq", "range", "in"):
                            continue
                        p.exact = False
                        p.elem_group = group
                        preds.append(p)
            else:
                preds.append(Pred(path, op, arg, f, None, False))
        else:
            preds.append(Pred(path, op, arg, f, None, False))
    return preds


class Parsed:
    """A filter split into indexable predicates by path, a rooted $or (if any), and the rest."""

    def __init__(self, filter_: dict) -> None:
        self.filter = filter_ or {}
        self.preds: list[Pred] = []
        self.others: list[dict] = []
        self.ors: list[list[dict]] = []
        self.false = False
        self._walk(self.filter)

    def _walk(self, f: dict) -> None:
        for k, v in f.items():
            if k == "$and" and isinstance(v, list) and v:
                for sub in v:
                    if isinstance(sub, dict):
                        self._walk(sub)
                    else:
                        self.others.append({k: v})
            elif k == "$or" and isinstance(v, list) and v:
                self.ors.append(v)
            elif k.startswith("$"):
                if k == "$alwaysFalse":
                    self.false = True
                self.others.append({k: v})
            else:
                ps = make_preds(k, v)
                for p in ps or []:
                    if p.indexable and p.op == "$in" and not p.intervals:
                        self.false = True
                    if p.kind == "range" and p.intervals == []:
                        self.false = True
                    self.preds.append(p)

    def by_path(self) -> dict[str, list[Pred]]:
        out: dict[str, list[Pred]] = {}
        for p in self.preds:
            out.setdefault(p.path, []).append(p)
        return out


def and_filter(frags: list[dict]) -> dict:
    """Server-style filter document for explain: a single fragment or {$and: [...]}."""
    frags = [f for f in frags if f]
    if not frags:
        return {}
    if len(frags) == 1:
        return frags[0]
    return {"$and": frags}
