"""Compiled matchers for the common filter shapes, with mongomock's ``filter_applies`` as the reference.

A compiled predicate answers True/False for documents whose relevant values are plain scalars; whenever it
meets an array, an embedded document, or anything unusual it answers None and the caller falls back to
``filter_applies`` for that document. So answers are always mongomock's (differentially tested), only faster.
"""
from __future__ import annotations

import datetime
import re
from typing import Any, Callable

from bson import ObjectId
from mongomock.filtering import filter_applies

_MISSING = object()
_SCALARS = (str, int, float, bool, datetime.datetime, ObjectId, type(None))


def _kind(v: Any) -> int:
    t = type(v)
    if t is bool:
        return 4
    if t is int or t is float:
        return 1
    if t is str:
        return 2
    if t is datetime.datetime:
        return 3
    if t is ObjectId:
        return 5
    if v is None:
        return 0
    return -1


def _getter(path: str) -> Callable[[dict], Any]:
    parts = path.split(".")
    if any(p.isdigit() for p in parts):
        return None  # type: ignore[return-value]
    if len(parts) == 1:
        p0 = parts[0]

        def get1(doc: dict) -> Any:
            return doc.get(p0, _MISSING)
        return get1

    def getn(doc: dict) -> Any:
        cur: Any = doc
        for p in parts:
            if type(cur) is dict:
                cur = cur.get(p, _MISSING)
                if cur is _MISSING:
                    return _MISSING
            else:
                return _FALLBACK
        return cur
    return getn


_FALLBACK = object()


def _compile_cond(path: str, cond: Any) -> Callable[[dict], Any] | None:
    get = _getter(path)
    if get is None:
        return None
    if not (type(cond) is dict and cond and all(type(k) is str and k.startswith("$") for k in cond)):
        if type(cond) not in _SCALARS or (type(cond) is float and cond != cond):
            return None
        ck = _kind(cond)
        if cond is None:
            def eq_null(doc: dict) -> Any:
                v = get(doc)
                if v is _MISSING or v is None:
                    return True
                if v is _FALLBACK or type(v) in (list, dict):
                    return None
                return False
            return eq_null

        if "." not in path and type(cond) in (str, int, float):
            # the hot case: top-level field equal to a string or a number
            p0 = path
            want = (int, float) if type(cond) in (int, float) else (str,)

            def eq_top(doc: dict) -> Any:
                v = doc.get(p0, _MISSING)
                t = type(v)
                if t in want:
                    return v == cond and v == v
                if t is list or t is dict or (t is float and v != v):
                    return None
                if v is _MISSING or t in _SCALARS:
                    return False
                return None
            return eq_top

        def eq(doc: dict) -> Any:
            v = get(doc)
            if v is _MISSING:
                return False
            t = type(v)
            if t is list or t is dict or v is _FALLBACK:
                return None
            if t is float and v != v:
                return None
            return _kind(v) == ck and v == cond
        return eq
    tests = []
    for op, arg in cond.items():
        t = _compile_op(op, arg)
        if t is None:
            return None
        tests.append(t)

    def all_ops(doc: dict) -> Any:
        v = get(doc)
        if v is _FALLBACK:
            return None
        tv = type(v)
        if tv is list or tv is dict or (tv is float and v != v):
            return None
        if v is not _MISSING and tv not in _SCALARS:
            return None
        for t in tests:
            if not t(v):
                return False
        return True
    return all_ops


def _compile_op(op: str, arg: Any) -> Callable[[Any], bool] | None:
    if op in ("$eq", "$ne"):
        if type(arg) not in _SCALARS or (type(arg) is float and arg != arg):
            return None
        k = _kind(arg)
        if arg is None:
            f = lambda v: v is _MISSING or v is None  # noqa: E731
        else:
            f = lambda v: v is not _MISSING and _kind(v) == k and v == arg  # noqa: E731
        if op == "$eq":
            return f
        return lambda v: not f(v)
    if op in ("$gt", "$gte", "$lt", "$lte"):
        if type(arg) not in _SCALARS or arg is None or type(arg) is bool or (type(arg) is float and arg != arg):
            return None
        k = _kind(arg)
        if op == "$gt":
            return lambda v: v is not _MISSING and _kind(v) == k and v > arg
        if op == "$gte":
            return lambda v: v is not _MISSING and _kind(v) == k and v >= arg
        if op == "$lt":
            return lambda v: v is not _MISSING and _kind(v) == k and v < arg
        return lambda v: v is not _MISSING and _kind(v) == k and v <= arg
    if op in ("$in", "$nin"):
        if type(arg) not in (list, tuple) or not all(type(a) in _SCALARS for a in arg):
            return None
        if any(type(a) is float and a != a for a in arg):
            return None
        keyed = {(_kind(a), a) for a in arg if a is not None}
        has_null = any(a is None for a in arg)

        def f_in(v: Any) -> bool:
            if v is _MISSING or v is None:
                return has_null
            return (_kind(v), v) in keyed
        if op == "$in":
            return f_in
        return lambda v: not f_in(v)
    if op == "$exists":
        if isinstance(arg, (bool, int)):
            want = bool(arg)
            return lambda v: (v is not _MISSING) == want
        return None
    return None


def compile_filter(f: dict) -> Callable[[dict], Any] | None:
    """A predicate returning True/False/None (None: ask filter_applies), or None if not compilable."""
    if type(f) is not dict:
        return None
    tests = []
    for k, v in f.items():
        if k == "$and" or k == "$or":
            if type(v) is not list or not v:
                return None
            subs = [compile_filter(x) for x in v]
            if any(s is None for s in subs):
                return None
            tests.append(_and(subs) if k == "$and" else _or(subs))
        elif k.startswith("$"):
            return None
        else:
            t = _compile_cond(k, v)
            if t is None:
                return None
            tests.append(t)
    return _and(tests)


def _and(tests: list) -> Callable[[dict], Any]:
    if len(tests) == 1:
        return tests[0]

    def f(doc: dict) -> Any:
        unknown = False
        for t in tests:
            r = t(doc)
            if r is False:
                return False
            if r is None:
                unknown = True
        return None if unknown else True
    return f


def _or(tests: list) -> Callable[[dict], Any]:
    def f(doc: dict) -> Any:
        unknown = False
        for t in tests:
            r = t(doc)
            if r is True:
                return True
            if r is None:
                unknown = True
        return None if unknown else False
    return f


def fast_matcher(f: dict) -> Callable[[dict], bool]:
    """``filter_applies(f, doc)`` as a fast callable."""
    compiled = compile_filter(f)
    if compiled is None:
        return lambda doc: filter_applies(f, doc)

    def m(doc: dict) -> bool:
        r = compiled(doc)
        if r is None:
            return filter_applies(f, doc)
        return r
    return m
