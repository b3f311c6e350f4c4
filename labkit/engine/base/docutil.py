"""Document helpers every layer uses: copying, pausing the garbage collector, sort specifications.

Moved out of ``collection.py`` so the planner and aggregation layers need not import the collection
(tests/test_engine_layers.py); ``collection`` re-exports the old names.
"""
from __future__ import annotations

import itertools
import os
import time
from collections.abc import Mapping
from typing import Any

from bson import ObjectId
from pymongo.errors import OperationFailure

from .errors import unsupported

_ASC_DESC = (1, -1)


# ------------------------------------------------------------------------------------------ ObjectIds
# (moved here from collection.py, which re-exports new_object_id, so the profiler need not import the collection)
def _reseed_object_ids() -> None:
    global _OID_RANDOM, _OID_COUNTER
    _OID_RANDOM = os.urandom(5)
    _OID_COUNTER = itertools.count(int.from_bytes(os.urandom(3), "big"))


_reseed_object_ids()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reseed_object_ids)  # a forked process must not reuse the random part


def new_object_id() -> ObjectId:
    """A new ObjectId laid out as the specification (and bson's ``ObjectId()``) says: 4-byte seconds since the
    epoch, 5 random bytes per process, a 3-byte counter starting at a random value. About 4x cheaper than
    ``ObjectId()``, which takes a lock and re-checks the process id on every call."""
    return ObjectId((int(time.time()) & 0xFFFFFFFF).to_bytes(4, "big") + _OID_RANDOM
                    + (next(_OID_COUNTER) & 0xFFFFFF).to_bytes(3, "big"))


def fast_copy(v: Any) -> Any:
    """Deep copy of plain BSON-ish data (dicts, lists, immutables)."""
    t = type(v)
    if t is dict:
        return {k: fast_copy(x) if type(x) in (dict, list) else x for k, x in v.items()}
    if t is list:
        return [fast_copy(x) if type(x) in (dict, list) else x for x in v]
    if isinstance(v, dict):
        return type(v)((k, fast_copy(x)) for k, x in v.items())
    return v


class no_gc:
    """Pause the cyclic garbage collector around bulk work: building 100k result copies otherwise triggers
    repeated full collections over every stored document (reference counting still frees memory)."""

    def __enter__(self):
        import gc
        self._was = gc.isenabled()
        gc.disable()
        return self

    def __exit__(self, *exc):
        import gc
        if self._was:
            gc.enable()
        return False


def sort_list(key_or_list: Any, direction: Any = None) -> list[tuple[str, int]]:
    """A sort argument (key, [(key, dir)], {key: dir}) as a list of (key, direction)."""
    if key_or_list is None:
        return []
    if isinstance(key_or_list, str):
        return [(key_or_list, 1 if direction is None else direction)]
    if isinstance(key_or_list, Mapping):
        return list(key_or_list.items())
    out = []
    for item in key_or_list:
        if isinstance(item, str):
            out.append((item, 1))
        else:
            out.append((item[0], item[1]))
    return out


def check_sort(sort: list[tuple[str, int]]) -> list[tuple[str, int]]:
    """The server's checks of sort directions (15975); ``$meta`` sorts and ``$natural`` with other keys are refused (115)."""
    out = []
    seen = set()
    for f, d in sort:
        if isinstance(d, dict):
            raise unsupported("Sort by %s (%r)" % (f, d))
        if d not in _ASC_DESC:
            raise OperationFailure("$sort key ordering must be 1 (for ascending) or -1 (for descending)", 15975)
        if f == "$natural" and len(sort) > 1:
            raise unsupported("sort by $natural together with other fields")
        if f != "$natural":
            check_sort_path(f)
            if f in seen:  # query/sort_pattern.cpp
                raise OperationFailure("$sort key must not contain duplicate keys (duplicate: '%s')" % f, 7472500)
            seen.add(f)
        out.append((f, int(d)))
    return out


def check_sort_path(f: Any) -> None:
    """A sort key's name as the server's FieldPath checks it (pipeline/field_path.cpp: 40352, 15998, 16410)."""
    if not isinstance(f, str):
        return
    if not f:
        raise OperationFailure("FieldPath cannot be constructed with empty string", 40352)
    for part in f.split("."):
        if not part:
            raise OperationFailure("FieldPath field names may not be empty strings.", 15998)
        if part[0] == "$":
            raise OperationFailure("FieldPath field names may not start with '$'. Consider using $getField or "
                                   "$setField.", 16410)


class CursorProtocol:
    """``to_list`` and the context-manager protocol of pymongo's cursors, shared by the engine's cursor classes
    (a subclass iterates its documents and defines ``close``)."""

    def to_list(self, length: int | None = None) -> list:
        out = []
        for d in self:
            out.append(d)
            if length is not None and len(out) >= length:
                break
        return out

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()
