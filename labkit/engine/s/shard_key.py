"""Shard key patterns: validation, extracting a document's key, hashing, and the key ranges a filter can touch.

Mirrors ``src/mongo/s/shard_key_pattern.cpp`` (a key is a list of ascending fields with at most one
``"hashed"`` field; a document's key takes null for a missing field, and an array anywhere on a key path is
refused: ShardKeyNotFound 61 "Shard key cannot contain array values or array descendants.") and the targeting of
``src/mongo/s/chunk_manager_targeter.cpp`` / ``ShardKeyPattern::flattenBounds`` (equality predicates on a prefix
of the key give points, the first range predicate gives an interval, the fields after it span MinKey..MaxKey; a
hashed field is targeted only by equality). Keys are compared as the engine's order-preserving key strings
(``bson/keys.py``), so a chunk's bounds are plain ``bytes`` and routing is a binary search.
"""
from __future__ import annotations

import math

from collections.abc import Mapping
from typing import Any

import datetime

from bson import ObjectId
from bson.int64 import Int64
from bson.max_key import MaxKey
from bson.min_key import MinKey
from pymongo.errors import OperationFailure

from ..bson import keys as K
from ..index import bounds as B
from ..index.hashed import hash64

SHARD_KEY_NOT_FOUND = 61
_CACHEABLE = (str, int, ObjectId, datetime.datetime)
_ARRAY_MSG = "Shard key cannot contain array values or array descendants."
#: more point combinations than this in a compound key's bounds and the query is broadcast (the server caps its
#: flattened bounds the same way, ``kMaxFlattenedInCombinations``)
MAX_POINTS = 4_000_000 // 100


#: code names of the sharding errors (src/mongo/base/error_codes.yml) the command layer does not list
CODE_NAMES = {2: "BadValue", 13: "Unauthorized", 20: "IllegalOperation", 23: "AlreadyInitialized",
              61: "ShardKeyNotFound", 67: "CannotCreateIndex", 70: "ShardNotFound", 72: "InvalidOptions",
              118: "NamespaceNotSharded", 166: "CommandNotSupportedOnView"}


def fail(msg: str, code: int, code_name: str | None = None) -> OperationFailure:
    """An OperationFailure carrying the server's reply document."""
    from ..commands.dispatch import code_name as _name
    return OperationFailure(msg, code, {"ok": 0.0, "errmsg": msg, "code": code,
                                        "codeName": code_name or CODE_NAMES.get(code) or _name(code)})


class ShardKeyPattern:
    """One shard key pattern, e.g. ``{authorId: 1, createdAt: 1}`` or ``{sensorId: "hashed"}``."""

    def __init__(self, spec: Any) -> None:
        if not isinstance(spec, Mapping) or not spec:
            raise fail("Shard key pattern must be a non-empty document, found %r" % (spec,), 2, "BadValue")
        self.spec: dict = dict(spec)
        self.fields: list[str] = list(self.spec)
        hashed = []
        for i, (f, v) in enumerate(self.spec.items()):
            # parseShardKeyPattern (src/mongo/db/s/shard_key_pattern.cpp): the path's checks, then one rule for the
            # value: 1 (any number equal to 1), or "hashed" for at most one field
            parts = f.split(".")
            if not f:
                raise fail("Field %s is empty" % f, 2, "BadValue")
            if "" in parts:
                raise fail("Field %s contains empty parts" % f, 2, "BadValue")
            if any(p.startswith("$") and not (j and p in ("$db", "$id", "$ref")) for j, p in enumerate(parts)):
                raise fail("Field %s contains parts that start with '$'" % f, 2, "BadValue")
            if v == "hashed":
                hashed.append(i)
            number_one = (not isinstance(v, bool) and isinstance(v, (int, float)) and math.isfinite(v)
                          and int(v) == 1)  # safeNumberInt: 1.5 counts as 1, NaN and infinities do not
            if not (number_one or (v == "hashed" and len(hashed) == 1)):
                raise fail("Shard key %s can contain at most one 'hashed' field, and/or multiple numerical fields "
                           "set to a value of 1. Failed to parse field %s" % (_show(self.spec), f), 2, "BadValue")
        self.hashed_pos: int | None = hashed[0] if hashed else None
        self._cache: dict = {}

    # -- what kind of key ----------------------------------------------------------------------------------
    @property
    def is_hashed(self) -> bool:
        return self.hashed_pos is not None

    def is_prefix_of(self, index_key: Mapping) -> bool:
        """The key pattern is a prefix of ``index_key`` (field names and directions, as ``BSONObj::isPrefixOf``)."""
        items = list(index_key.items())
        if len(items) < len(self.fields):
            return False
        for (f, v), (g, w) in zip(self.spec.items(), items):
            if f != g or not _same_direction(v, w):
                return False
        return True

    def is_unique_index_compatible(self, index_key: Mapping) -> bool:
        """A unique index is allowed on a sharded collection when the shard key is a prefix of it (``_id`` is
        always allowed: ``ShardKeyPattern::isUniqueIndexCompatible``); field names only, directions aside."""
        names = list(index_key)
        if names and names[0] == "_id" and len(names) == 1:
            return True
        return names[:len(self.fields)] == self.fields

    # -- a document's key ----------------------------------------------------------------------------------
    def values(self, doc: Mapping) -> list[Any]:
        """The key's field values in ``doc`` (null for a missing field); ShardKeyNotFound 61 for an array."""
        out = []
        for f in self.fields:
            cur: Any = doc
            for part in f.split("."):
                if isinstance(cur, list):
                    raise fail(_ARRAY_MSG, SHARD_KEY_NOT_FOUND)
                if not isinstance(cur, Mapping) or part not in cur:
                    cur = None
                    break
                cur = cur[part]
            if isinstance(cur, list):
                raise fail(_ARRAY_MSG, SHARD_KEY_NOT_FOUND)
            out.append(cur)
        return out

    def routing_values(self, values: list[Any]) -> list[Any]:
        """The values chunks are ranged over: the hashed field replaced by its 64-bit hash."""
        if self.hashed_pos is None:
            return values
        out = list(values)
        out[self.hashed_pos] = hash64(out[self.hashed_pos])
        return out

    def key_bytes(self, doc: Mapping) -> bytes:
        """The routing key of ``doc`` as an order-preserving byte string (one-field keys of a plain value are
        remembered: hashing is the slow part of routing a batch)."""
        if len(self.fields) == 1 and "." not in self.fields[0]:
            v = doc.get(self.fields[0]) if isinstance(doc, Mapping) else None
            t = type(v)
            if t in _CACHEABLE:
                cache = self._cache
                kb = cache.get((t, v))
                if kb is None:
                    if len(cache) > 200_000:
                        cache.clear()
                    kb = cache[(t, v)] = encode_key(self.routing_values([v]))
                return kb
        return encode_key(self.routing_values(self.values(doc)))

    def key_doc(self, values: list[Any]) -> dict:
        """A key as the server shows it, e.g. ``{authorId: 'u1', createdAt: ...}``."""
        return dict(zip(self.fields, values))

    def global_min(self) -> dict:
        return {f: MinKey() for f in self.fields}

    def global_max(self) -> dict:
        return {f: MaxKey() for f in self.fields}

    # -- targeting -----------------------------------------------------------------------------------------
    def ranges_for_filter(self, flt: Mapping | None, simple_collation: bool = True) -> list[tuple[bytes, bytes]] | None:
        """Closed key ranges ``[(lo, hi)]`` that can hold documents matching ``flt``; None means every range
        (the query is broadcast)."""
        if not flt:
            return None
        parsed = B.Parsed(dict(flt))
        if parsed.false:
            return []
        by_path = parsed.by_path()
        per_field: list[list[B.Interval] | None] = []
        for i, f in enumerate(self.fields):
            ivs: list[B.Interval] | None = None
            for p in by_path.get(f, []):
                if p.intervals is None or p.elem_group is not None or p.kind == "elem":
                    continue
                if p.kind in ("regex", "exists", "arrayeq"):
                    continue
                if not simple_collation and any(isinstance(iv.lo_d, str) or isinstance(iv.hi_d, str)
                                                for iv in p.intervals):
                    continue
                ivs = p.intervals if ivs is None else B.intersect(ivs, p.intervals)
            if ivs is not None and i == self.hashed_pos:
                if not all(iv.is_point for iv in ivs):
                    ivs = None
            per_field.append(ivs)
        ranges = self._flatten(per_field)
        if ranges is None and parsed.ors and len(parsed.ors) == 1:
            rest = {k: v for k, v in flt.items() if k != "$or"}
            out: list[tuple[bytes, bytes]] = []
            for branch in parsed.ors[0]:
                if not isinstance(branch, Mapping):
                    return None
                sub = self.ranges_for_filter(B.and_filter([rest, dict(branch)]), simple_collation)
                if sub is None:
                    return None
                out.extend(sub)
            return out
        return ranges

    def _flatten(self, per_field: list[list[B.Interval] | None]) -> list[tuple[bytes, bytes]] | None:
        prefixes: list[bytes] = [b""]
        for i, ivs in enumerate(per_field):
            if ivs is None:
                if i == 0:
                    return None
                return [(p + _tail(len(self.fields) - i, low=True), p + _tail(len(self.fields) - i, low=False))
                        for p in prefixes]
            if not ivs:
                return []
            if all(iv.is_point for iv in ivs):
                enc = [self._enc_point(i, iv) for iv in ivs]
                if len(prefixes) * len(enc) > MAX_POINTS:
                    return None
                prefixes = [p + e for p in prefixes for e in enc]
                continue
            rest = len(self.fields) - i - 1
            return [(p + iv.lo + _tail(rest, low=True), p + iv.hi + _tail(rest, low=False))
                    for p in prefixes for iv in ivs]
        return [(p, p) for p in prefixes]

    def _enc_point(self, i: int, iv: B.Interval) -> bytes:
        if i == self.hashed_pos:
            return K.encode(hash64(iv.lo_d))
        return iv.lo


def encode_key(values: list[Any]) -> bytes:
    """Order-preserving bytes of a key's (routing) values."""
    return b"".join(K.encode(v) for v in values)


def _tail(n: int, low: bool) -> bytes:
    return (K.MINKEY_B if low else K.MAXKEY_B) * n


def _same_direction(a: Any, b: Any) -> bool:
    if a == "hashed" or b == "hashed":
        return a == b
    return not isinstance(a, str) and not isinstance(b, str) and (a > 0) == (b > 0)


def _show(spec: Mapping) -> str:
    return "{ %s }" % ", ".join("%s: %s" % (k, '"hashed"' if v == "hashed" else (int(v) if isinstance(v, (int, float))
                                                                                   and v == int(v) else v))
                                for k, v in spec.items())


def show(spec: Mapping) -> str:
    """A key pattern or key as the server prints it in messages: ``{ authorId: 1 }``."""
    return _show(spec)


def hashed_split_points(n: int) -> list[Int64]:
    """Split points of an empty collection with a hashed key and ``n`` initial chunks: ``n`` equal parts of the
    int64 range (``InitialSplitPolicy::calculateHashedSplitPoints``)."""
    if n <= 1:
        return []
    interval = (2 ** 63 - 1) // n * 2
    splits: list[int] = []
    current = 0
    if n % 2 == 0:
        splits.append(0)
        current += interval
    else:
        current += interval // 2
    for _ in range((n - 1) // 2):
        splits.extend((current, -current))
        current += interval
    return [Int64(s) for s in sorted(splits)]


__all__ = ["ShardKeyPattern", "encode_key", "hashed_split_points", "fail", "show", "SHARD_KEY_NOT_FOUND"]
