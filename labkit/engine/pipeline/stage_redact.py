"""``$redact`` (MongoDB 8.0 manual "$redact"; src/mongo/db/pipeline/document_source_redact.cpp;
jstests/aggregation/sources/redact/*).

The expression is evaluated at the top-level document and, for ``$$DESCEND``, at every embedded document (also
those inside arrays) with that document as ``$$CURRENT``; it must give ``$$KEEP`` (the document as it is),
``$$PRUNE`` (drop it) or ``$$DESCEND`` (keep its scalar fields, redact its embedded documents). ``$$ROOT`` stays
the top-level document.
"""
from __future__ import annotations

from typing import Any, Callable

from pymongo.errors import OperationFailure

_KEEP, _PRUNE, _DESCEND = "\x00labkit$$KEEP", "\x00labkit$$PRUNE", "\x00labkit$$DESCEND"
_MARKS = {"$$KEEP": _KEEP, "$$PRUNE": _PRUNE, "$$DESCEND": _DESCEND}


def _fail(msg: str, code: int) -> OperationFailure:
    return OperationFailure(msg, code, {"ok": 0.0, "errmsg": msg, "code": code})


def _substitute(expr: Any, root: Any = None, with_root: bool = False) -> Any:
    """The expression with ``$$KEEP``/``$$PRUNE``/``$$DESCEND`` (and, given, ``$$ROOT``) as literals."""
    if isinstance(expr, str):
        if expr in _MARKS:
            return {"$literal": _MARKS[expr]}
        if with_root and (expr == "$$ROOT" or expr.startswith("$$ROOT.")):
            if expr == "$$ROOT":
                return {"$literal": root}
            cur: Any = root
            for p in expr[len("$$ROOT."):].split("."):
                cur = cur.get(p) if isinstance(cur, dict) else None
            return {"$literal": cur}
        return expr
    if isinstance(expr, list):
        return [_substitute(x, root, with_root) for x in expr]
    if isinstance(expr, dict):
        if set(expr) == {"$literal"}:
            return expr
        return {k: _substitute(v, root, with_root) for k, v in expr.items()}
    return expr


def _uses_root(expr: Any) -> bool:
    if isinstance(expr, str):
        return expr == "$$ROOT" or expr.startswith("$$ROOT.")
    if isinstance(expr, list):
        return any(_uses_root(x) for x in expr)
    if isinstance(expr, dict):
        return any(_uses_root(v) for v in expr.values())
    return False


def redact_stage(arg: Any, docs: list[dict], compile_expr: Callable) -> list[dict]:
    """Run ``{$redact: arg}`` over ``docs``."""
    per_root = _uses_root(arg)
    shared = None if per_root else compile_expr(_substitute(arg))
    out = []
    for doc in docs:
        f = compile_expr(_substitute(arg, doc, True)) if per_root else shared
        r = _redact(doc, f)
        if r is not None:
            out.append(r)
    return out


def _redact(obj: dict, f: Callable) -> dict | None:
    try:
        res = f(obj)
    except KeyError:
        res = None
    if res == _KEEP:
        return obj
    if res == _PRUNE:
        return None
    if res != _DESCEND:
        shown = {_KEEP: "$$KEEP", _PRUNE: "$$PRUNE"}.get(res, res) if isinstance(res, str) else res
        raise _fail("$redact's expression should not return anything aside from the variables $$KEEP, "
                    "$$DESCEND, and $$PRUNE, but returned %s" % (shown,), 17053)
    out = {}
    for k, v in obj.items():
        if isinstance(v, dict):
            r = _redact(v, f)
            if r is not None:
                out[k] = r
        elif isinstance(v, list):
            out[k] = _redact_array(v, f)
        else:
            out[k] = v
    return out


def _redact_array(arr: list, f: Callable) -> list:
    res = []
    for x in arr:
        if isinstance(x, dict):
            r = _redact(x, f)
            if r is not None:
                res.append(r)
        elif isinstance(x, list):
            res.append(_redact_array(x, f))
        else:
            res.append(x)
    return res
