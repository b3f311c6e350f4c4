"""BSON values as the server orders and names them: the lowest layer of the engine.

* ``canonical_type(v)``: the rank of a value's type in MongoDB's comparison order (manual "Comparison/Sort
  Order"): MinKey < undefined < null < numbers (int, long, double, decimal compared by value) < string
  < object < array < BinData < ObjectId < bool < date < timestamp < regex < MaxKey.
* ``compare(a, b)``: -1/0/1 in that order (numbers by value, NaN below every other number and equal to
  itself; objects field by field, type then name then value; arrays element by element; BinData by length,
  subtype, bytes), with an optional string-key function for collations.
* ``bson_type_code`` / ``TYPE_ALIASES``: the ``$type`` names and numbers (manual "$type" > "Available Types");
  ``type_name``: the one type-name function (``$type`` aggregation, error messages).
* ``sort_values(doc, parts)``: the values a sort key is chosen from (server's sort-key generation).
"""
from __future__ import annotations

import datetime
import math
import re
import uuid
from collections import OrderedDict
from collections.abc import Mapping
from decimal import Decimal
from typing import Any, Callable

from bson import Binary, Code, Decimal128, Int64, ObjectId, Regex, Timestamp
from bson.dbref import DBRef
from bson.max_key import MaxKey
from bson.min_key import MinKey

T_MINKEY = 0x0A
T_UNDEF = 0x0F
T_NULL = 0x14
T_NUM = 0x1E
T_STR = 0x3C
T_OBJ = 0x46
T_ARR = 0x50
T_BIN = 0x5A
T_OID = 0x64
T_BOOL = 0x6E
T_DATE = 0x78
T_TS = 0x82
T_REGEX = 0x8C
T_MAXKEY = 0xF0

RE_TYPE = type(re.compile(""))
_EPOCH = datetime.datetime(1970, 1, 1)
_EPOCH_TZ = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


class Undefined:
    """BSON undefined (the index key of an empty array)."""

    def __repr__(self) -> str:
        return "undefined"


UNDEFINED = Undefined()


class _Missing:
    """A field that is not there (the server's EOO element)."""

    def __repr__(self) -> str:
        return "<missing>"


MISSING = _Missing()

_FAST_TYPE = {
    str: T_STR, int: T_NUM, float: T_NUM, bool: T_BOOL, type(None): T_NULL, dict: T_OBJ, list: T_ARR,
    ObjectId: T_OID, datetime.datetime: T_DATE, Int64: T_NUM, Decimal128: T_NUM, bytes: T_BIN,
    Binary: T_BIN, Timestamp: T_TS, Regex: T_REGEX, RE_TYPE: T_REGEX, MinKey: T_MINKEY, MaxKey: T_MAXKEY,
    tuple: T_ARR, Undefined: T_UNDEF, _Missing: T_NULL, Code: T_STR,
}


#: canonical_type's slow path (subclasses, and types _FAST_TYPE does not list): the first class that matches
#: gives the rank (bool before int, as bool is an int).
_RANK_BY_CLASS = (
    (bool, T_BOOL), ((int, float, Decimal128, Decimal), T_NUM), (str, T_STR), ((dict, DBRef), T_OBJ),
    ((list, tuple), T_ARR), (ObjectId, T_OID), (datetime.datetime, T_DATE), ((bytes, Binary), T_BIN),
    (Timestamp, T_TS), ((Regex, RE_TYPE), T_REGEX), (MinKey, T_MINKEY), (MaxKey, T_MAXKEY), (Undefined, T_UNDEF),
)


def canonical_type(v: Any) -> int:
    """The rank of ``v``'s type in BSON comparison order (missing ranks as null)."""
    t = _FAST_TYPE.get(type(v))
    if t is not None:
        return t
    if v is None:
        return T_NULL
    for classes, rank in _RANK_BY_CLASS:
        if isinstance(v, classes):
            return rank
    raise TypeError("cannot order value of type %s" % type(v).__name__)


def is_number(v: Any) -> bool:
    t = type(v)
    return t is int or t is float or t is Int64 or t is Decimal128 or (
        t is not bool and isinstance(v, (int, float, Decimal128)))


def num_value(v: Any) -> Any:
    """A Python number (int, float or Decimal) that compares exactly."""
    if type(v) is Decimal128 or isinstance(v, Decimal128):
        return v.to_decimal()
    return v


def is_nan(v: Any) -> bool:
    if type(v) is float:
        return v != v
    if isinstance(v, Decimal128):
        return v.to_decimal().is_nan()
    if isinstance(v, Decimal):
        return v.is_nan()
    return False


def date_ms(v: datetime.datetime) -> int:
    d = v - (_EPOCH if v.tzinfo is None else _EPOCH_TZ)
    return (d.days * 86400 + d.seconds) * 1000 + d.microseconds // 1000


def regex_parts(v: Any) -> tuple[str, str]:
    """(pattern, flags) of a BSON regex (flags as the sorted letters the server stores)."""
    if isinstance(v, RE_TYPE):
        v = Regex.from_native(v)
    flags = v.flags
    if isinstance(flags, int):
        flags = regex_flag_letters(flags)
    return v.pattern, "".join(sorted(flags))


def regex_flag_letters(flags: int) -> str:
    """Python ``re`` flag bits as the server's option letters (``re.U`` has none: Python 3 strings are Unicode)."""
    out = ""
    for ch, bit in (("i", re.I), ("l", re.L), ("m", re.M), ("s", re.S), ("x", re.X)):
        if flags & bit:
            out += ch
    return out


def pcre_to_python(pattern: str) -> str:
    """A PCRE pattern (what the server's ``$regex`` and ``$regexMatch`` run) as Python ``re`` reads it: ``\\Q...\\E``
    quotes everything between them literally (to the end when there is no ``\\E``; a lone ``\\E`` is
    ignored), and named groups ``(?<name>...)`` become ``(?P<name>...)``."""
    if "\\Q" in pattern or "\\E" in pattern:
        out: list[str] = []
        i, n = 0, len(pattern)
        while i < n:
            c = pattern[i]
            if c == "\\" and i + 1 < n:
                d = pattern[i + 1]
                if d == "Q":
                    j = pattern.find("\\E", i + 2)
                    out.append(re.escape(pattern[i + 2:] if j < 0 else pattern[i + 2:j]))
                    i = n if j < 0 else j + 2
                    continue
                if d != "E":
                    out.append(pattern[i:i + 2])
                i += 2
                continue
            out.append(c)
            i += 1
        pattern = "".join(out)
    return re.sub(r"\(\?<([A-Za-z_][A-Za-z0-9_]*)>", r"(?P<\1>", pattern)


def _cmp(a: Any, b: Any) -> int:
    return -1 if a < b else (1 if a > b else 0)


def compare(a: Any, b: Any, str_key: Callable[[str], Any] | None = None) -> int:
    """-1, 0 or 1: ``a`` against ``b`` in BSON comparison order. ``str_key`` maps strings to collation keys."""
    ta, tb = type(a), type(b)
    if ta is tb and (ta is int or ta is str and str_key is None):
        return -1 if a < b else (1 if a > b else 0)
    ra, rb = canonical_type(a), canonical_type(b)
    if ra != rb:
        return -1 if ra < rb else 1
    if ra == T_NUM:
        na, nb = is_nan(a), is_nan(b)
        if na or nb:
            return 0 if na and nb else (-1 if na else 1)
        return _cmp(num_value(a), num_value(b))
    if ra == T_STR:
        if str_key is not None:
            return _cmp(str_key(str(a)), str_key(str(b)))
        return _cmp(str(a), str(b))
    if ra == T_OBJ:
        ia = iter(_items(a))
        ib = iter(_items(b))
        while True:
            ea = next(ia, None)
            eb = next(ib, None)
            if ea is None or eb is None:
                return 0 if ea is None and eb is None else (-1 if ea is None else 1)
            c = _cmp(canonical_type(ea[1]), canonical_type(eb[1]))
            if c:
                return c
            c = _cmp(ea[0].encode("utf-8", "surrogatepass"), eb[0].encode("utf-8", "surrogatepass"))
            if c:
                return c
            c = compare(ea[1], eb[1], str_key)
            if c:
                return c
    if ra == T_ARR:
        for x, y in zip(a, b):
            c = compare(x, y, str_key)
            if c:
                return c
        return _cmp(len(a), len(b))
    if ra == T_BIN:
        c = _cmp(len(a), len(b))
        if c:
            return c
        c = _cmp(getattr(a, "subtype", 0), getattr(b, "subtype", 0))
        return c or _cmp(bytes(a), bytes(b))
    if ra == T_OID:
        return _cmp(a.binary, b.binary)
    if ra == T_BOOL:
        return _cmp(bool(a), bool(b))
    if ra == T_DATE:
        return _cmp(date_ms(a), date_ms(b))
    if ra == T_TS:
        return _cmp((a.time, a.inc), (b.time, b.inc))
    if ra == T_REGEX:
        pa, fa = regex_parts(a)
        pb, fb = regex_parts(b)
        return _cmp(pa, pb) or _cmp(fa, fb)
    return 0  # MinKey, MaxKey, null, undefined: one value each


def _items(v: Any):
    if isinstance(v, DBRef):
        return v.as_doc().items()
    return v.items()


def equal(a: Any, b: Any, str_key: Callable[[str], Any] | None = None) -> bool:
    """BSON equality (``1 == 1.0``, ``True != 1``, NaN equals NaN, field order matters in objects)."""
    ta = type(a)
    if ta is type(b) and (ta is int or ta is str and str_key is None or ta is ObjectId):
        return a == b
    return compare(a, b, str_key) == 0


# ------------------------------------------------------------------------------------------- $type names
TYPE_ALIASES: dict[str, int] = {
    "double": 1, "string": 2, "object": 3, "array": 4, "binData": 5, "undefined": 6, "objectId": 7,
    "bool": 8, "date": 9, "null": 10, "regex": 11, "dbPointer": 12, "javascript": 13, "symbol": 14,
    "javascriptWithScope": 15, "int": 16, "timestamp": 17, "long": 18, "decimal": 19, "minKey": -1,
    "maxKey": 127,
}
TYPE_CODES = frozenset(TYPE_ALIASES.values())
_INT32 = 1 << 31


#: bson_type_code's types whose number does not depend on the value, the first class that matches giving it
#: (after Int64, bool, int, float, decimals and Code, whose numbers do or which subclass these).
_CODE_BY_CLASS = (
    (str, 2), ((dict, DBRef), 3), ((list, tuple), 4), ((bytes, Binary), 5), (Undefined, 6), (datetime.datetime, 9),
    ((Regex, RE_TYPE), 11), (Timestamp, 17), (MinKey, -1), (MaxKey, 127),
    ((bytearray, uuid.UUID), 5),  # pymongo stores both as binData
)


def bson_type_code(v: Any) -> int:
    """The BSON type number pymongo stores ``v`` as (Python int: int32 when it fits, else long)."""
    t = type(v)
    if t is str:
        return 2
    if t is int:
        return 16 if -_INT32 <= v < _INT32 else 18
    if t is float:
        return 1
    if t is bool:
        return 8
    if v is None:
        return 10
    if t is dict:
        return 3
    if t is list:
        return 4
    if t is ObjectId:
        return 7
    if t is datetime.datetime:
        return 9
    if isinstance(v, Int64):
        return 18
    if isinstance(v, bool):
        return 8
    if isinstance(v, int):
        return 16 if -_INT32 <= v < _INT32 else 18
    if isinstance(v, float):
        return 1
    if isinstance(v, (Decimal128, Decimal)):
        return 19
    if isinstance(v, Code):
        return 15 if v.scope is not None else 13
    for classes, code in _CODE_BY_CLASS:
        if isinstance(v, classes):
            return code
    if type(v).__name__ == "DatetimeMS":
        return 9
    if isinstance(v, Mapping):  # RawBSONDocument and other mappings are documents
        return 3
    return 0


_TYPE_NAMES = {code: name for name, code in TYPE_ALIASES.items()}


def type_name(v: Any) -> str:
    """The server's name of a value's BSON type (``typeName()``): the ``$type`` aggregation operator's answer
    and the type printed in error messages ("double", "string", "object", "array", "binData", "objectId",
    "bool", "date", "null", "regex", "javascript", "int", "timestamp", "long", "decimal", "minKey", "maxKey";
    "missing" for a missing value)."""
    if v is MISSING:
        return "missing"
    name = _TYPE_NAMES.get(bson_type_code(v))
    return name if name is not None else type(v).__name__


# ------------------------------------------------------------------------------------------- sort keys
def with_path(doc: dict, parts: list[str], value: Any) -> dict:
    """A shallow copy of ``doc`` with ``value`` at the dotted path ``parts``: each document on the way is copied,
    anything else on the way (a missing field, a scalar, an array) becomes a new document."""
    out = dict(doc)
    cur = out
    for p in parts[:-1]:
        nxt = cur.get(p)
        nxt = dict(nxt) if isinstance(nxt, dict) else {}
        cur[p] = nxt
        cur = nxt
    cur[parts[-1]] = value
    return out


def sort_values(doc: Any, parts: list[str]) -> list[Any]:
    """The candidate values of a sort key on ``parts`` (the server's sort-key generation, which is the
    B-tree key generator's): arrays are expanded one level (an empty leaf array gives undefined), a
    subdocument of an array without the field, a non-document array element with path left, an empty
    array with path left and a missing field all give null; a numeric component indexes an array
    (jstests/core/query/sort/sort_dotted_paths.js). The ascending key is the smallest, descending the
    largest."""
    out: list[Any] = []
    _sort_collect(doc, parts, 0, out)
    return out or [None]


def _sort_collect(cur: Any, parts: list[str], i: int, out: list) -> None:
    n = len(parts)
    while i < n:
        t = type(cur)
        if t is dict or (t is not list and isinstance(cur, dict)):
            cur = cur.get(parts[i], MISSING)
            if cur is MISSING:
                out.append(None)
                return
            i += 1
            continue
        if t is list:
            part = parts[i]
            if part.isdigit() and not any(type(e) is dict and part in e for e in cur):
                k = int(part)
                if k < len(cur):
                    cur = cur[k]
                    i += 1
                    continue
                out.append(None)
                return
            if not cur:
                out.append(None)
                return
            for e in cur:
                if type(e) is dict or isinstance(e, dict):
                    _sort_collect(e, parts, i, out)
                else:
                    out.append(None)
            return
        out.append(None)
        return
    leaf_values(cur, out)


def leaf_values(cur: Any, out: list) -> None:
    """Adds to ``out`` the key values the value at a path's end gives: an array's elements (an empty array:
    undefined), else the value itself (as the server's key generators, for sort keys and index keys)."""
    if type(cur) is list or isinstance(cur, list):
        if not cur:
            out.append(UNDEFINED)
        else:
            out.extend(cur)
    else:
        out.append(cur)


def is_finite_number(v: Any) -> bool:
    if not is_number(v):
        return False
    x = num_value(v)
    if isinstance(x, Decimal):
        return x.is_finite()
    return not (isinstance(x, float) and (math.isinf(x) or x != x))


def client_value(v: Any) -> Any:
    """A value from the client as the server receives it: datetimes become naive UTC with millisecond precision
    (BSON dates), containers are copied; everything else, ``Timestamp(0, 0)`` included, is kept as sent (the
    server fills empty timestamps only in inserted and replacement documents, jstests/core/write/empty_ts)."""
    t = type(v)
    if t is dict:
        return {k: client_value(x) for k, x in v.items()}
    if isinstance(v, dict):  # an OrderedDict stays one; SON and other dict types become dicts
        return (OrderedDict if isinstance(v, OrderedDict) else dict)((k, client_value(x)) for k, x in v.items())
    if t is list or t is tuple:
        return [client_value(x) for x in v]
    if isinstance(v, datetime.datetime):
        ms = v.microsecond // 1000 * 1000
        if v.tzinfo is not None:
            off = v.utcoffset()
            return (v - off if off else v).replace(tzinfo=None, microsecond=ms)
        return v.replace(microsecond=ms)
    return v
