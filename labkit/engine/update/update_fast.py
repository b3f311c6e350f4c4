"""Operator updates of top-level scalar fields without the general update walk (issue 19, engine speed).

``update_many({}, {$inc: {likes: 1}})`` over 100,000 documents used to run, per document, the general
operator machinery (``update_ops.Update.apply``: path resolution, argument dispatch, ``_arith``), a no-op
comparison of the whole document and a BSON encoding for the 16 MiB check. For the common statements
(``$set`` / ``$inc`` / ``$mul`` / ``$min`` / ``$max`` / ``$unset`` on top-level fields, with scalar arguments)
``scalar_plan`` compiles the update once into ``(field, code, argument)`` triples and ``apply_scalar`` makes
the new version of one document directly, when the result is certain to be what the general path makes and
the document cannot grow:

* an integer stays an integer of the same BSON width (int32 stays int32, int64 stays int64: the same size), a
  double stays a double, a string is replaced by one that is not longer in UTF-8, a boolean by a boolean, a
  null by a null; an ``$unset`` only shrinks the document. So the new document is never larger than the
  stored one (which passed the size check), and the encoding for 17419 is not needed.
* anything else (a missing field, a change of type or width, a string that grows, an overflow, ``NaN`` in a
  comparison, a non-numeric field under ``$inc``) returns ``FALLBACK``: the caller runs the general path for
  that document, so every error (14 type mismatch, 2 overflow, 17419 size) comes from the general code.

tests/test_engine_speed_update.py compares both paths (stored documents with their BSON types and field
order, counts, index entries, errors) over random documents and updates.
"""
from __future__ import annotations

from typing import Any, Callable, Iterator


INC, MUL, SET, MIN, MAX, UNSET = range(6)
_CODES = {"$inc": INC, "$mul": MUL, "$set": SET, "$min": MIN, "$max": MAX, "$unset": UNSET}
_SET_TYPES = frozenset({str, int, float, bool, type(None)})
_MISSING = object()
FALLBACK = object()  # apply_scalar: this document needs the general path

_I32 = 1 << 31
_I64 = 1 << 63


def _width(n: int) -> int:
    """BSON width class of a Python int: 0 int32, 1 int64, 2 not encodable."""
    if -_I32 <= n < _I32:
        return 0
    if -_I64 <= n < _I64:
        return 1
    return 2


def scalar_plan(compiled: Any, array_filters: Any = None) -> list[tuple[str, int, Any]] | None:
    """``(field, code, argument)`` per operation of a parsed operator update (``update_ops.Update``) whose
    every operation is ``$set``/``$inc``/``$mul``/``$min``/``$max``/``$unset`` on a top-level field other than
    ``_id`` with a scalar argument; None for any other update (then the general path runs)."""
    plain = getattr(compiled, "_plain", None)
    if plain is None or array_filters:
        return None
    out = []
    for parts, o, to_parts in plain:
        code = _CODES.get(o.op)
        if code is None or to_parts or len(parts) != 1:
            return None
        f = parts[0]
        if f == "_id" or f.startswith("$"):
            return None
        a = o.arg
        ta = type(a)
        if code in (INC, MUL, MIN, MAX):
            if ta is not int and ta is not float:
                return None
        elif code == SET and ta not in _SET_TYPES:
            return None
        out.append((f, code, a))
    return out


def apply_scalar(plan: list[tuple[str, int, Any]], old: dict) -> Any:
    """The new version of ``old`` under ``plan`` (a new dict sharing the untouched values), None when the
    update changes nothing (matched, not modified), or ``FALLBACK`` (see the module docstring)."""
    new = None
    for f, code, a in plan:
        v = old.get(f, _MISSING)
        tv = type(v)
        if code == UNSET:
            if v is _MISSING:
                continue
            if new is None:
                new = dict(old)
            del new[f]
            continue
        if code == SET:
            if tv is not type(a):
                return FALLBACK
            if tv is str:
                if a == v:
                    continue
                if len(a) > len(v) or not (a.isascii() and v.isascii()):
                    try:
                        if len(a.encode("utf-8")) > len(v.encode("utf-8")):
                            return FALLBACK
                    except UnicodeEncodeError:  # not encodable as BSON: the general path says so
                        return FALLBACK
            elif tv is int:
                if _width(a) != _width(v):
                    return FALLBACK
                if a == v:
                    continue
            elif tv is float:
                if a == v or (a != a and v != v):
                    continue
            elif a == v:  # bool, None
                continue
            r = a
        elif code == INC or code == MUL:
            ta = type(a)
            if tv is int and ta is int:
                r = v + a if code == INC else v * a
                w = _width(v)
                if w == 2 or _width(r) != w:
                    return FALLBACK
                if r == v:
                    continue
            elif tv is float:
                r = float(v + a if code == INC else v * a)
                if r == v or (r != r and v != v):
                    continue
            else:
                return FALLBACK
        else:  # MIN / MAX
            if tv is not type(a):
                return FALLBACK
            if tv is int:
                if _width(a) != _width(v):
                    return FALLBACK
            elif v != v or a != a:  # NaN sorts below every number in BSON order
                return FALLBACK
            if (a < v) if code == MIN else (a > v):
                r = a
            else:
                continue
        if new is None:
            new = dict(old)
        new[f] = r
    return new


def _stored(rids: list, i: int, get: Any) -> Iterator[tuple[int, Any, Any]]:
    """``(j, rid, document)`` for ``rids[i:]`` that still have a document (``get``: the store's ``docs.get``);
    by index, not a slice: a loop handing a document back at ``j`` must not have copied the rest."""
    for j in range(i, len(rids)):
        rid = rids[j]
        old = get(rid)
        if old is not None:
            yield j, rid, old


def _store(docs: dict, note: Callable[[tuple], None] | None, rid: Any, old: dict, new: dict) -> None:
    """Store ``new`` as record ``rid``'s document in ``docs``; ``note`` (``changed.append`` when run_lean's
    caller keeps the replaced versions, else None) receives ``(rid, old)``."""
    docs[rid] = new
    if note is not None:
        note((rid, old))


def run_lean(plan: list[tuple[str, int, Any]], rids: list, i: int, docs: dict,
             changed: list | None = None) -> tuple[int, int, int]:
    """Apply ``plan`` to the documents of ``rids[i:]`` in a collection where the update needs nothing but
    the new version stored (no index reads the updated fields, no partial index, no validator: the caller's
    "lean" case), in one loop for the common single-operation statements: no call per document but
    ``_store`` for each one modified.

    Stops at the first document that needs the general path (``apply_scalar``'s ``FALLBACK``, or a stored
    document that is not a plain dict) and returns ``(j, matched, modified)``: ``rids[j]`` is that document
    (``j == len(rids)`` when every document was done); ``matched``/``modified`` count ``rids[i:j]``. Record
    ids without a document are skipped (not matched), as the general loop does. ``docs`` (record id ->
    document) is the record store's map (its ``_id`` map is a view of it: nothing else to write). The caller
    bumps the store's version by ``modified``. ``changed``: a list that receives ``(rid, previous document)``
    for every document replaced (the history of point-in-time reads, session/history.py)."""
    n = len(rids)
    matched = modified = 0
    get = docs.get
    note = changed.append if changed is not None else None
    if len(plan) == 1 and plan[0][1] in (INC, MUL) and type(plan[0][2]) is int:
        f, code, a = plan[0]
        inc = code == INC
        missing = _MISSING
        for j, rid, old in _stored(rids, i, get):
            if type(old) is not dict:
                return j, matched, modified
            v = old.get(f, missing)
            tv = type(v)
            if tv is int:
                r = v + a if inc else v * a
                if -2147483648 <= v < 2147483648 and -2147483648 <= r < 2147483648:
                    pass  # int32 (_width 0) stays int32: the common case, two comparisons
                elif -2147483648 <= v < 2147483648:
                    return j, matched, modified  # int32 -> int64: the general path
                elif -_I64 <= v < _I64:
                    if not -_I64 <= r < _I64 or -_I32 <= r < _I32:
                        return j, matched, modified
                else:
                    return j, matched, modified
                matched += 1
                if r == v:
                    continue
            elif tv is float:
                r = float(v + a if inc else v * a)
                matched += 1
                if r == v or (r != r and v != v):
                    continue
            else:
                return j, matched, modified
            new = old.copy()
            new[f] = r
            _store(docs, note, rid, old, new)
            modified += 1
        return n, matched, modified
    if len(plan) == 1 and plan[0][1] == SET and type(plan[0][2]) in (str, int):
        # $set of one string or integer: the stored value must have the argument's type (and, for an
        # integer, its BSON width); a string may not grow (ASCII: its length is its UTF-8 size). Anything
        # else goes back to the caller, whose apply_scalar decides as before.
        f, _, a = plan[0]
        missing = _MISSING
        ta = type(a)
        short = ta is str and a.isascii()
        la = len(a) if ta is str else 0
        w32 = ta is int and -_I32 <= a < _I32
        for j, rid, old in _stored(rids, i, get):
            if type(old) is not dict:
                return j, matched, modified
            v = old.get(f, missing)
            if type(v) is not ta:
                return j, matched, modified
            if v == a:
                matched += 1
                continue  # matched, not modified
            if ta is str:
                if not (short and la <= len(v) and v.isascii()):
                    return j, matched, modified
            elif not (w32 and -2147483648 <= v < 2147483648):
                return j, matched, modified
            matched += 1
            new = old.copy()
            new[f] = a
            _store(docs, note, rid, old, new)
            modified += 1
        return n, matched, modified
    for j, rid, old in _stored(rids, i, get):
        if type(old) is not dict:
            return j, matched, modified
        new = apply_scalar(plan, old)
        if new is FALLBACK:
            return j, matched, modified
        matched += 1
        if new is None:
            continue
        _store(docs, note, rid, old, new)
        modified += 1
    return n, matched, modified
