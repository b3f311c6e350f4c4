"""The server's hashed-index key: ``BSONElementHasher::hash64`` (src/mongo/db/hasher.cpp), reimplemented from its
description: MD5 over the 4-byte little-endian seed (0), then per element its canonical type as a 4-byte
little-endian int, then the value: numbers as the 64-bit integer they truncate to (NaN -> 0, clamped to the int64
range), embedded documents and arrays element by element (name, NUL, then the element), other types as their BSON
value bytes. The key is the first 8 digest bytes as a little-endian int64. Checked against the expected values of
the server's unit test src/mongo/db/hasher_test.cpp (tests/test_engine_plans_80.py)."""
from __future__ import annotations

import datetime
import hashlib
import math
import re
import struct
import uuid
from typing import Any

import bson
from bson.binary import Binary
from bson.code import Code
from bson.dbref import DBRef
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from bson.max_key import MaxKey
from bson.min_key import MinKey
from bson.objectid import ObjectId
from bson.regex import Regex
from bson.timestamp import Timestamp

from ..bson.values import with_path

DEFAULT_HASH_SEED = 0
_I64_MIN, _I64_MAX = -(2 ** 63), 2 ** 63 - 1


def _canonical(v: Any) -> int:
    """canonicalizeBSONType (src/mongo/bson/bsontypes.h)."""
    if isinstance(v, MinKey):
        return -1
    if isinstance(v, MaxKey):
        return 127
    if v is None:
        return 5
    if isinstance(v, bool):
        return 40
    if isinstance(v, (int, float, Decimal128)):
        return 10
    if isinstance(v, str):
        return 15
    if isinstance(v, (dict, DBRef)) or hasattr(v, "keys"):
        return 20
    if isinstance(v, (list, tuple)):
        return 25
    if isinstance(v, (bytes, Binary, uuid.UUID)):
        return 30
    if isinstance(v, ObjectId):
        return 35
    if isinstance(v, datetime.datetime):
        return 45
    if isinstance(v, Timestamp):
        return 47
    if isinstance(v, (Regex, re.Pattern)):
        return 50
    if isinstance(v, Code):
        return 65 if v.scope is not None else 60
    return 0


def _as_long(v: Any) -> int:
    """BSONElement::safeNumberLong: truncation toward zero, NaN -> 0, clamped to the int64 range."""
    if isinstance(v, Decimal128):
        v = float(v.to_decimal())
    if isinstance(v, float):
        if math.isnan(v):
            return 0
        if v >= 2.0 ** 63:
            return _I64_MAX
        if v < -(2.0 ** 63):
            return _I64_MIN
        return int(v)
    return max(_I64_MIN, min(_I64_MAX, int(v)))


def _value_bytes(v: Any) -> bytes:
    """The element's BSON value bytes (what follows the type byte and field name)."""
    raw = bson.encode({"": v})
    # document: int32 size, type byte, "" + NUL, value..., trailing NUL
    return raw[4 + 1 + 1:-1]


def _append(h, v: Any, name: str | None) -> None:
    h.update(struct.pack("<i", _canonical(v)))
    if name is not None:
        h.update(name.encode("utf-8") + b"\x00")
    if isinstance(v, DBRef):
        v = v.as_doc()
    if isinstance(v, (dict, list, tuple)) or hasattr(v, "keys"):
        items = v.items() if not isinstance(v, (list, tuple)) else ((str(i), x) for i, x in enumerate(v))
        for k, x in items:
            _append(h, x, k)
        h.update(struct.pack("<i", 0))  # the terminating EOO element: its canonical type (0) only
        return
    if isinstance(v, bool) or not isinstance(v, (int, float, Decimal128)):
        h.update(_value_bytes(v))
        return
    h.update(struct.pack("<q", _as_long(v)))


def hash64(v: Any, seed: int = DEFAULT_HASH_SEED) -> Int64:
    """The hashed-index key of ``v`` (what ``convertShardKeyToHashed(v)`` returns)."""
    h = hashlib.md5()
    h.update(struct.pack("<i", seed))
    _append(h, v, None)
    return Int64(struct.unpack("<q", h.digest()[:8])[0])


# ------------------------------------------------------------------------------------------ hashed index
HASHED_ARRAY_CODE = 16766


def hashed_fields(spec) -> list[int]:
    """Positions of the ``"hashed"`` fields of an index key pattern."""
    return [i for i, (_, d) in enumerate(spec.key) if d == "hashed"]


def check_hashed_spec(spec) -> None:
    """The server's create-time rules for hashed indexes (src/mongo/db/index/expression_keys_private.cpp /
    hash_access_method.cpp): at most one hashed field (31303), no unique (16764)."""
    from mongomock import OperationFailure
    pos = hashed_fields(spec)
    if not pos:
        return
    if len(pos) > 1:
        raise OperationFailure("A maximum of one index field is allowed to be hashed but found %d for 'key' %s"
                               % (len(pos), dict(spec.key)), 31303)
    if spec.unique and spec.name != "_id_":
        raise OperationFailure("Currently hashed indexes cannot guarantee uniqueness. Use a regular index.", 16764)


def _hashed_value(doc: dict, path: str) -> Any:
    """The value a hashed index hashes at ``path``: missing and null hash as null; an array anywhere on the
    path is refused (16766, "hashed indexes do not currently support array values")."""
    cur: Any = doc
    for part in path.split("."):
        if isinstance(cur, list):
            _array_error(path)
        if not isinstance(cur, dict) and not hasattr(cur, "keys"):
            return None
        if part not in cur:
            return _MISSING
        cur = cur[part]
    if isinstance(cur, list):
        _array_error(path)
    return cur


class _Missing:
    pass


_MISSING = _Missing()


def _array_error(path: str):
    from pymongo.errors import WriteError
    msg = "hashed indexes do not currently support array values. Found array at path: %s" % path
    raise WriteError(msg, HASHED_ARRAY_CODE, {"code": HASHED_ARRAY_CODE, "errmsg": msg})


def make_hashed_index_class(base):
    """A subclass of the engine's ``Index`` whose hashed field's key is ``hash64`` of the value."""

    class HashedIndex(base):
        """An index with one ``"hashed"`` field: point lookups only, never multikey on that field."""

        hashed = True

        def _fast_fn(self):
            return lambda doc: None

        def flat_keys(self, doc: dict) -> list[tuple]:
            return self.keys_for(doc)[0]

        def keys_for(self, doc: dict):
            spec = self.spec
            if spec.partial is not None and not spec.partial_match(doc):
                return [], {}
            pos = self.hashed_pos
            path = spec.fields[pos]
            v = _hashed_value(doc, path)
            if spec.sparse and all(not _present(doc, f) for f in spec.fields):
                return [], {}
            h = hash64(None if v is _MISSING else v)
            return base.keys_for(self, with_path(doc, path.split("."), h))

        def key_document(self, doc: dict, key: tuple) -> dict:
            path = self.spec.fields[self.hashed_pos]
            v = _hashed_value(doc, path)
            return base.key_document(self, with_path(doc, path.split("."), hash64(None if v is _MISSING else v)),
                                     key)

    return HashedIndex


def _present(doc: dict, path: str) -> bool:
    cur: Any = doc
    for part in path.split("."):
        if isinstance(cur, dict) and part in cur:
            cur = cur[part]
        else:
            return False
    return True


_CLASS = None


def new_index(spec, keyfunc=None):
    """An ``Index`` for ``spec``: the hashed variant when the key pattern has a ``"hashed"`` field."""
    global _CLASS
    from .indexes import Index
    pos = hashed_fields(spec)
    if not pos:
        return Index(spec, keyfunc=keyfunc)
    if _CLASS is None:
        _CLASS = make_hashed_index_class(Index)
    ix = _CLASS(spec, keyfunc=keyfunc)
    ix.hashed_pos = pos[0]
    return ix
