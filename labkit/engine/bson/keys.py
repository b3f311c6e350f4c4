"""BSON total order as order-preserving byte strings ("key strings"), index key generation, display.

Every BSON value is encoded to ``bytes`` so that comparing the bytes gives MongoDB's comparison order
(MinKey < undefined < null/missing < numbers < string < object < array < binData < ObjectId < bool < date
< timestamp < regex < MaxKey; numbers compare across int/float/Decimal128). Encodings are prefix-free,
so a descending index field simply stores the bitwise inverse of the encoding.
"""
from __future__ import annotations

import datetime
import math
import re
import struct
from decimal import Decimal
from typing import Any, Callable, Iterable

import bson
from bson import ObjectId, Timestamp, Regex, Binary, Decimal128, Int64
from bson.min_key import MinKey
from bson.max_key import MaxKey

from .values import (T_ARR, T_BIN, T_BOOL, T_DATE, T_MAXKEY, T_MINKEY, T_NULL, T_NUM, T_OBJ, T_OID,  # noqa: F401
                     T_REGEX, T_STR, T_TS, T_UNDEF, UNDEFINED, Undefined, canonical_type, leaf_values,
                     regex_flag_letters, sort_values)

# The leading byte of each type's encoding is its rank in BSON order, taken from values.py (one order).
STR_B = bytes([T_STR])
OBJ_B = bytes([T_OBJ])
ARR_B = bytes([T_ARR])
BIN_B = bytes([T_BIN])
OID_B = bytes([T_OID])
DATE_B = bytes([T_DATE])
TS_B = bytes([T_TS])
REGEX_B = bytes([T_REGEX])
TRUE_B = bytes([T_BOOL, 1])
FALSE_B = bytes([T_BOOL, 0])
NUM_B = bytes([T_NUM, 1])   # a number: its double image (and tie-break) follows
NAN_B = bytes([T_NUM, 0])   # NaN sorts below every other number
MINKEY_B = bytes([T_MINKEY])
MAXKEY_B = bytes([T_MAXKEY])
NULL_B = bytes([T_NULL])
UNDEF_B = bytes([T_UNDEF])
LOW = b"\x00"      # sorts below every encoded field
HIGH = b"\xff"     # sorts above every encoded field (also inverted ones)

_INV = bytes(255 - i for i in range(256))
_EPOCH = datetime.datetime(1970, 1, 1)
_EPOCH_TZ = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
_RE_TYPE = type(re.compile(""))


def invert(b: bytes) -> bytes:
    return b.translate(_INV)


def _enc_str(s: str) -> bytes:
    return s.encode("utf-8", "surrogatepass").replace(b"\x00", b"\x00\xff") + b"\x00"


def decode_str(b: bytes) -> str:
    """The string of a string key-string (type byte, escaped UTF-8, terminator)."""
    return b[1:-1].replace(b"\x00\xff", b"\x00").decode("utf-8", "surrogatepass")


_PACK_D = struct.Struct(">d").pack
_TOP = bytes(range(128, 256)) + bytes(range(128, 256))  # byte -> byte | 0x80 (for the first byte only)


def _enc_double(f: float) -> bytes:
    # IEEE-754 big-endian bits: negative numbers inverted, positive ones with the sign bit set
    if f == 0:
        f = 0.0
    b = _PACK_D(f)
    if b[0] & 0x80:
        return b.translate(_INV)
    return b[:1].translate(_TOP) + b[1:]


_EXACT = 1 << 53  # integers up to 2**53 are exact doubles: no tie-break suffix needed


def _enc_int(v: int) -> bytes:
    if -_EXACT <= v <= _EXACT:
        return NUM_B + _enc_double(float(v)) + b"\x02"
    return _enc_number(v)


def _enc_float(v: float) -> bytes:
    if v != v:
        return NAN_B
    return NUM_B + _enc_double(v) + b"\x02"


_MAX_D = 1.7976931348623157e308
_DEC_CTX = __import__("decimal").Context(prec=7000, Emin=-9999, Emax=9999)  # exact for Decimal128 - double
_I64 = 1 << 63


def _enc_diff(d: Any) -> bytes:
    """The tie-break of a number that is not exactly its double image ``f``: the exact difference
    ``d = v - f`` (an int or a Decimal, not 0) as floor ``q`` (8 bytes, saturated past 64 bits) then the
    fraction in [0, 1): ``\x00\x00`` for none, else (65535 - leading zeros) and its digits, ``\x00``-ended.
    Prefix-free and order-preserving, so int64 and Decimal128 values sharing a double image sort exactly."""
    if isinstance(d, int):
        q, r = d, 0
    else:
        q = int(d.to_integral_value(rounding="ROUND_FLOOR", context=_DEC_CTX))
        r = _DEC_CTX.subtract(d, Decimal(q))
    tag = b"\x01" if d < 0 else b"\x03"
    qb = (min(max(q, -_I64), _I64 - 1) + _I64).to_bytes(8, "big")
    if not r:
        return tag + qb + b"\x00\x00"
    sign, digits, exp = r.normalize(_DEC_CTX).as_tuple()  # r = 0.000ddd: exp < 0, len(digits) <= -exp
    zeros = -exp - len(digits)
    return tag + qb + (65535 - min(zeros, 65535)).to_bytes(2, "big") + bytes(x + 1 for x in digits) + b"\x00"


def _enc_number(v: Any) -> bytes:
    if isinstance(v, Decimal128):
        d = v.to_decimal()
        if d.is_nan():
            return NAN_B
        if d.is_infinite():
            return NUM_B + _enc_double(math.inf if d > 0 else -math.inf) + b"\x02"
        f = float(d)
        if math.isinf(f):  # beyond every double: just inside the infinities (their order among themselves lost)
            return NUM_B + _enc_double(_MAX_D if d > 0 else -_MAX_D) + (b"\x03" + b"\xff" * 10 if d > 0
                                                                      else b"\x01" + b"\x00" * 10)
        diff = _DEC_CTX.subtract(d, Decimal(f))
        if not diff:
            return NUM_B + _enc_double(f) + b"\x02"
        return NUM_B + _enc_double(f) + _enc_diff(diff)
    if isinstance(v, float):
        if v != v:
            return NAN_B
        return NUM_B + _enc_double(v) + b"\x02"
    # int
    try:
        f = float(v)
    except OverflowError:  # pragma: no cover
        f = math.inf if v > 0 else -math.inf
    if math.isinf(f):
        return NUM_B + _enc_double(f) + b"\x02"
    d = v - int(f)
    if d == 0:
        return NUM_B + _enc_double(f) + b"\x02"
    return NUM_B + _enc_double(f) + _enc_diff(d)


def encode(v: Any) -> bytes:
    """Order-preserving, prefix-free encoding of one BSON value."""
    f = _FAST_ENC.get(type(v))
    if f is not None:
        return f(v)
    if v is None:
        return NULL_B
    t = type(v)
    if t is str:
        return STR_B + _enc_str(v)
    if t is int or t is float or t is Int64:
        return _enc_number(v)
    if t is bool:
        return TRUE_B if v else FALSE_B
    if t is dict or isinstance(v, dict):
        parts = [OBJ_B]
        for k, x in v.items():
            e = encode(x)
            parts.append(e[:1])
            parts.append(_enc_str(k))
            parts.append(e[1:])
        parts.append(b"\x00")
        return b"".join(parts)
    if t is list or t is tuple:
        return ARR_B + b"".join(encode(x) for x in v) + b"\x00"
    if t is ObjectId:
        return OID_B + v.binary
    if isinstance(v, datetime.datetime):
        if v.tzinfo is not None:
            ms = int((v - _EPOCH_TZ) / datetime.timedelta(milliseconds=1))
        else:
            ms = int((v - _EPOCH) / datetime.timedelta(milliseconds=1))
        return DATE_B + (ms + (1 << 63)).to_bytes(8, "big")
    if isinstance(v, (Decimal128, int, float)):
        return _enc_number(v)
    if isinstance(v, Decimal):
        return _enc_number(Decimal128(v))
    if isinstance(v, (bytes, Binary)):
        sub = v.subtype if isinstance(v, Binary) else 0
        return BIN_B + len(v).to_bytes(4, "big") + bytes([sub]) + bytes(v)
    if isinstance(v, Timestamp):
        return TS_B + v.time.to_bytes(4, "big") + v.inc.to_bytes(4, "big")
    if isinstance(v, Regex):
        return REGEX_B + _enc_str(v.pattern) + _enc_str(str(v.flags) if not isinstance(v.flags, int) else regex_flag_letters(v.flags))
    if isinstance(v, _RE_TYPE):
        r = Regex.from_native(v)
        return REGEX_B + _enc_str(r.pattern) + _enc_str(regex_flag_letters(r.flags))
    if isinstance(v, MinKey):
        return MINKEY_B
    if isinstance(v, MaxKey):
        return MAXKEY_B
    if isinstance(v, Undefined):
        return UNDEF_B
    raise TypeError("cannot index value of type %s" % type(v).__name__)


def _enc_s(v: str) -> bytes:
    b = v.encode("utf-8", "surrogatepass")
    if b"\x00" in b:
        b = b.replace(b"\x00", b"\x00\xff")
    return STR_B + b + b"\x00"


def _enc_dt(v: datetime.datetime) -> bytes:
    d = v - (_EPOCH if v.tzinfo is None else _EPOCH_TZ)
    # same value as int(d / timedelta(milliseconds=1)): an exactly rounded int / int division, truncated
    ms = int(((d.days * 86400 + d.seconds) * 1000000 + d.microseconds) / 1000)
    return DATE_B + (ms + (1 << 63)).to_bytes(8, "big")


# exact-type fast paths for the common scalar types (other types take the isinstance chain above)
_FAST_ENC: dict = {
    str: _enc_s, int: _enc_int, float: _enc_float, bool: lambda v: TRUE_B if v else FALSE_B,
    type(None): lambda v: NULL_B, ObjectId: lambda v: OID_B + v.binary, datetime.datetime: _enc_dt,
    Int64: _enc_int,
}


# ----------------------------------------------------------------------------- display

def fmt_value(v: Any) -> str:
    """A value printed the way the server prints index bounds."""
    if v is None:
        return "null"
    if isinstance(v, MinKey):
        return "MinKey"
    if isinstance(v, MaxKey):
        return "MaxKey"
    if isinstance(v, Undefined):
        return "undefined"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        if math.isinf(v):
            return "inf.0" if v > 0 else "-inf.0"
        if v != v:
            return "nan.0"
        if v == int(v) and abs(v) < 1e16:
            return "%d.0" % int(v)
        return repr(v)
    if isinstance(v, int):
        return str(v)
    if isinstance(v, Decimal128):
        return 'NumberDecimal("%s")' % v
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, ObjectId):
        return "ObjectId('%s')" % v
    if isinstance(v, datetime.datetime):
        if v.tzinfo is None:
            v = v.replace(tzinfo=datetime.timezone.utc)
        ms = int((v - _EPOCH_TZ) / datetime.timedelta(milliseconds=1))
        return "new Date(%d)" % ms
    if isinstance(v, DateBound):
        return "new Date(%d)" % v.ms
    if isinstance(v, dict):
        if not v:
            return "{}"
        return "{ " + ", ".join("%s: %s" % (k, fmt_value(x)) for k, x in v.items()) + " }"
    if isinstance(v, list):
        if not v:
            return "[]"
        return "[ " + ", ".join(fmt_value(x) for x in v) + " ]"
    if isinstance(v, Regex):
        return "/%s/%s" % (v.pattern, v.flags if isinstance(v.flags, str) else regex_flag_letters(v.flags))
    if isinstance(v, _RE_TYPE):
        return "/%s/%s" % (v.pattern, regex_flag_letters(v.flags))
    if isinstance(v, (bytes, Binary)):
        return "BinData(%d, %s)" % (getattr(v, "subtype", 0), bytes(v).hex().upper())
    if isinstance(v, Timestamp):
        return "Timestamp(%d, %d)" % (v.time, v.inc)
    if isinstance(v, TypeBound):
        return v.text
    return repr(v)


class DateBound:
    """Extreme date bound (printed as new Date(ms))."""

    def __init__(self, ms: int) -> None:
        self.ms = ms


class TypeBound:
    """A bound that only exists for display (e.g. ObjectId('ffff…'))."""

    def __init__(self, text: str) -> None:
        self.text = text


# ----------------------------------------------------------------------------- key generation

class ParallelArrays(Exception):
    def __init__(self, a: str, b: str) -> None:
        super().__init__("cannot index parallel arrays [%s] [%s]" % (a, b))
        self.a, self.b = a, b


def path_values(doc: Any, parts: list[str], array_paths: set[str] | None = None, prefix: str = "") -> list[Any]:
    """All values an index on ``parts`` sees in ``doc`` (arrays expanded one level, dotted paths into
    arrays of subdocuments). Missing -> []. ``array_paths`` collects the paths that held arrays."""
    out: list[Any] = []
    _collect(doc, parts, 0, out, array_paths, prefix)
    return out


def _collect(cur: Any, parts: list[str], i: int, out: list, array_paths: set | None, prefix: str) -> None:
    if i == len(parts):
        if array_paths is not None and isinstance(cur, list):
            array_paths.add(prefix)
        leaf_values(cur, out)
        return
    part = parts[i]
    if isinstance(cur, dict):
        if part in cur:
            _collect(cur[part], parts, i + 1, out, array_paths, prefix + ("." if prefix else "") + part)
        return
    if isinstance(cur, list):
        if array_paths is not None:
            array_paths.add(prefix)
        if part.isdigit() and int(part) < len(cur) and not any(isinstance(e, dict) and part in e for e in cur):
            _collect(cur[int(part)], parts, i + 1, out, array_paths, prefix + "." + part)
            return
        for e in cur:
            if isinstance(e, dict) and part in e:
                _collect(e[part], parts, i + 1, out, array_paths, prefix + "." + part)
        return


def doc_sort_key(doc: Any, parts: list[str], descending: bool) -> bytes:
    """Key-string of a document for one sort field: min candidate ascending, max descending
    (candidates: ``values.sort_values``, the server's sort-key generation)."""
    if len(parts) == 1:
        v = doc.get(parts[0], MISSING)
        if type(v) is not list:
            e = NULL_B if v is MISSING else encode(v)
            return invert(e) if descending else e
    vals = sort_values(doc, parts)
    if len(vals) == 1:
        e = encode(vals[0])
    else:
        encs = [encode(v) for v in vals]
        e = max(encs) if descending else min(encs)
    return invert(e) if descending else e


def _parallel_error() -> Exception:
    from pymongo.errors import OperationFailure
    msg = "cannot sort with keys that are parallel arrays"
    return OperationFailure(msg, 2, {"ok": 0.0, "errmsg": msg, "code": 2, "codeName": "BadValue"})


def _check_parallel(arrays: dict[int, set[str]]) -> None:
    items = list(arrays.values())
    for i in range(len(items)):
        for j in range(i + 1, len(items)):
            for a in items[i]:
                for b in items[j]:
                    if not (a == b or a.startswith(b + ".") or b.startswith(a + ".")):
                        raise _parallel_error()


def _paired_sort_key(doc: Any, fields: list[tuple[list[str], bool]], e: Callable[[Any], bytes]) -> tuple | None:
    """A compound sort through arrays: the B-tree key generator's keys of ``doc`` (fields under one array paired
    per element), the smallest by key string: ``(its values, its key-string tuple)``; None when no sort field
    meets an array (or a numeric path component does: the fields are then taken one by one)."""
    parts_list = [p for p, _ in fields]
    try:
        for parts in parts_list:
            _simple_get(doc, parts)
        return None
    except _HasArray:
        keys, arrays = index_key_values(doc, parts_list)
    if len(arrays) > 1:
        _check_parallel(arrays)
    if any(part.isdigit() for parts in parts_list for part in parts):
        return None
    descs = [d for _, d in fields]

    def key_string(key: list) -> tuple:
        return tuple((invert(x) if d else x) for x, d in zip((e(None if v is MISSING else v) for v in key), descs))
    best = min(keys, key=key_string)
    return best, key_string(best)


def doc_sort_keys(doc: Any, fields: list[tuple[list[str], bool]],
                  enc: Callable[[Any], bytes] | None = None) -> tuple:
    """The sort key of a document for (parts, descending) fields, as the server generates it: a compound
    sort takes the smallest of the B-tree key generator's keys (fields under one array are paired per element,
    not chosen independently); two fields through different arrays fail with BadValue 2 "cannot sort with keys
    that are parallel arrays" (jstests/core/query/sort/sort_dotted_paths.js). ``enc``: key-string function
    (collation keys); default ``encode``."""
    e = enc or encode
    if len(fields) > 1:
        paired = _paired_sort_key(doc, fields, e)
        if paired is not None:
            return paired[1]
    out = []
    for parts, desc in fields:
        if enc is None:
            out.append(doc_sort_key(doc, parts, desc))
        else:
            encs = [e(v) for v in sort_values(doc, parts)]
            x = max(encs) if desc else min(encs)
            out.append(invert(x) if desc else x)
    return tuple(out)


def doc_sort_key_values(doc: Any, fields: list[tuple[list[str], bool]]) -> list[Any]:
    """The values of ``doc``'s sort key for (parts, descending) fields: the candidates ``doc_sort_keys`` orders
    by (what a find's ``{$meta: "sortKey"}`` shows, one value per sort field; a missing field is null)."""
    if len(fields) > 1:
        paired = _paired_sort_key(doc, fields, encode)
        if paired is not None:
            return [None if v is MISSING else v for v in paired[0]]
    out = []
    for parts, desc in fields:
        vals = sort_values(doc, parts)
        out.append(max(vals, key=encode) if desc else min(vals, key=encode))
    return out


MISSING = object()


def _simple_get(doc: Any, parts: list[str]) -> Any:
    """Value at a dotted path when no array is on the way; MISSING if absent; raises _HasArray on arrays."""
    cur = doc
    for p in parts:
        if type(cur) is dict or isinstance(cur, dict):
            if p not in cur:
                return MISSING
            cur = cur[p]
            if type(cur) is list:
                raise _HasArray
        else:
            return MISSING
    return cur


class _HasArray(Exception):
    pass


def index_key_values(doc: dict, parts_list: list[list[str]]) -> tuple[list[list[Any]], dict[int, set[str]]]:
    """Per-key value lists for a (compound) index, generated like the server's B-tree key generator:
    array elements of a shared path prefix are paired, not crossed. Returns (keys, array paths by field
    position); each key is a list of values (MISSING where absent)."""
    try:
        return [[_simple_get(doc, parts) for parts in parts_list]], {}
    except _HasArray:
        pass
    arrays: dict[int, set[str]] = {}
    fields = [(i, parts) for i, parts in enumerate(parts_list)]
    dicts = _gen(doc, fields, "", arrays)
    n = len(parts_list)
    out = []
    for d in dicts:
        key = [d.get(i, MISSING) for i in range(n)]
        out.append(key)
    return out, arrays


def _gen(obj: Any, fields: list[tuple[int, list[str]]], prefix: str, arrays: dict[int, set[str]]) -> list[dict]:
    groups: dict[str, list[tuple[int, list[str]]]] = {}
    for pos, parts in fields:
        groups.setdefault(parts[0], []).append((pos, parts))
    results: list[dict] = [{}]
    for comp, flist in groups.items():
        sub = obj.get(comp, MISSING) if isinstance(obj, dict) else MISSING
        path = prefix + ("." if prefix else "") + comp
        terminal = [pos for pos, parts in flist if len(parts) == 1]
        deeper = [(pos, parts[1:]) for pos, parts in flist if len(parts) > 1]
        group: list[dict] = []
        if isinstance(sub, list):
            for pos, _ in flist:
                arrays.setdefault(pos, set()).add(path)
            if not sub:
                d = {pos: UNDEFINED for pos in terminal}
                group = [d]
            else:
                for e in sub:
                    base = {pos: e for pos in terminal}
                    if deeper:
                        if isinstance(e, dict):
                            sub_keys = _gen(e, deeper, path, arrays)
                        else:
                            sub_keys = [{}]
                        group.extend(base | s for s in sub_keys)
                    else:
                        group.append(base)
        else:
            base = {pos: sub for pos in terminal}
            if deeper:
                if isinstance(sub, dict):
                    group = [base | s for s in _gen(sub, deeper, path, arrays)]
                else:
                    group = [base]
            else:
                group = [base]
        results = [r | g for r in results for g in group]
    return results
