"""String expression operators (manual "String Expression Operators"; src/mongo/db/pipeline/expression.cpp;
jstests/aggregation/expressions/{concat,substr,substrCP,split,indexof_bytes,indexof_codepoints,strLenBytes,
strLenCP,trim,regex,replace_one,replace_all,strcasecmp,toLower,toUpper}.js).

``$toLower`` / ``$toUpper`` / ``$strcasecmp`` / ``$substr*`` convert their input to a string as the server's
``coerceToString`` does (null or missing -> ``""``, numbers and dates printed, arrays and objects refused, 16007)
and change case for ASCII letters only; ``$concat`` takes strings only (16702) and gives null on a null operand.
Byte offsets (``$substrBytes``, ``$indexOfBytes``, ``$strLenBytes``) count UTF-8 bytes, ``CP`` variants code points.
"""
from __future__ import annotations

import datetime
import re
from typing import Any

from bson import Regex, Timestamp

from ...bson import values as V
from .expr_base import (INT32_MAX, INT32_MIN, eval_args, fail, int_value, iso_date, named_args, nullish, num_kind,
                        num_str, string_or_null, tname, typed_operands)


def coerce_to_string(v: Any) -> str:
    """The server's ``Value::coerceToString``."""
    if nullish(v):
        return ""
    if type(v) is str:
        return v
    if num_kind(v) >= 0:
        return num_str(v)
    if isinstance(v, datetime.datetime):
        return iso_date(v)
    if isinstance(v, Timestamp):
        return "Timestamp(%d, %d)" % (v.time, v.inc)
    if isinstance(v, str):
        return str(v)
    raise fail("can't convert from BSON type %s to String" % tname(v), 16007)


def _ascii_lower(s: str) -> str:
    return "".join(chr(ord(c) + 32) if "A" <= c <= "Z" else c for c in s) if not s.isascii() else s.lower()


def _ascii_upper(s: str) -> str:
    return "".join(chr(ord(c) - 32) if "a" <= c <= "z" else c for c in s) if not s.isascii() else s.upper()


def op_concat(ev: Any, op: str, arg: Any, doc: Any) -> Any:
    vals = typed_operands(ev, op, arg, doc, lambda v: isinstance(v, str), "$concat only supports strings, not %(type)s",
                          16702)
    return None if vals is None else "".join(vals)


def op_case(ev: Any, op: str, arg: Any, doc: Any) -> str:
    (v,) = eval_args(ev, op, arg, doc, 1)
    s = coerce_to_string(v)
    return _ascii_lower(s) if op == "$toLower" else _ascii_upper(s)


def op_strcasecmp(ev: Any, op: str, arg: Any, doc: Any) -> int:
    a, b = eval_args(ev, op, arg, doc, 2)
    x, y = _ascii_upper(coerce_to_string(a)), _ascii_upper(coerce_to_string(b))
    xb, yb = x.encode("utf-8"), y.encode("utf-8")
    return 0 if xb == yb else (-1 if xb < yb else 1)


def _int64_arg(v: Any) -> int:
    k = num_kind(v)
    if k in (0, 1):
        return int(v)
    x = float(V.num_value(v))
    if x != x:
        return 0
    if x in (float("inf"), float("-inf")):
        return (1 << 63) - 1 if x > 0 else -(1 << 63)
    return int(x)


def op_substr_bytes(ev: Any, op: str, arg: Any, doc: Any) -> str:
    """``$substrBytes`` / ``$substr``: ``[string, byte index, byte count]`` (a negative count: to the end)."""
    name = "$substrBytes"  # $substr is its alias, named so in messages
    s, start, length = eval_args(ev, name, arg, doc, 3)
    text = coerce_to_string(s).encode("utf-8")
    if num_kind(start) < 0:
        raise fail("%s:  starting index must be a numeric type (is BSON type %s)" % (name, tname(start)), 16034)
    if num_kind(length) < 0:
        raise fail("%s:  length must be a numeric type (is BSON type %s)" % (name, tname(length)), 16035)
    lo, n = _int64_arg(start), _int64_arg(length)
    if lo < 0:
        raise fail("%s:  starting index must be non-negative (got: %d)" % (name, lo), 50752)
    if lo >= len(text):
        return ""
    if lo < len(text) and (text[lo] & 0xC0) == 0x80:
        raise fail("%s:  Invalid range, starting index is a UTF-8 continuation byte." % name, 28656)
    hi = len(text) if n < 0 else min(len(text), lo + n)
    if hi < len(text) and (text[hi] & 0xC0) == 0x80:
        raise fail("%s:  Invalid range, ending index is in the middle of a UTF-8 character." % name, 28657)
    return text[lo:hi].decode("utf-8")


def op_substr_cp(ev: Any, op: str, arg: Any, doc: Any) -> str:
    """``$substrCP``: ``[string, code point index, code point count]``, both non-negative int32."""
    s, start, length = eval_args(ev, op, arg, doc, 3)
    text = coerce_to_string(s)
    if num_kind(start) < 0:
        raise fail("$substrCP: starting index must be a numeric type (is BSON type %s)" % tname(start), 34450)
    if num_kind(length) < 0:
        raise fail("$substrCP: length must be a numeric type (is BSON type %s)" % tname(length), 34452)
    lo, n = int_value(start), int_value(length)
    if lo is None or not INT32_MIN <= lo <= INT32_MAX:
        raise fail("$substrCP: starting index cannot be represented as a 32-bit integral value: %s"
                   % num_str(start), 34451)
    if n is None or not INT32_MIN <= n <= INT32_MAX:
        raise fail("$substrCP: length cannot be represented as a 32-bit integral value: %s" % num_str(length), 34453)
    if n < 0:
        raise fail("$substrCP: length must be a nonnegative integer.", 34454)
    if lo < 0:
        raise fail("$substrCP: the starting index must be nonnegative integer.", 34455)
    return text[lo:lo + n]


def op_strlen(ev: Any, op: str, arg: Any, doc: Any) -> int:
    (v,) = eval_args(ev, op, arg, doc, 1)
    if not isinstance(v, str):
        raise fail("%s requires a string argument, found: %s" % (op, tname(v)),
                   34473 if op == "$strLenBytes" else 34471)
    return len(v.encode("utf-8")) if op == "$strLenBytes" else len(v)


def op_split(ev: Any, op: str, arg: Any, doc: Any) -> Any:
    s, sep = eval_args(ev, op, arg, doc, 2)
    if nullish(s) or nullish(sep):
        return None
    if not isinstance(s, str):
        raise fail("$split requires an expression that evaluates to a string as a first argument, found: %s"
                   % tname(s), 40085)
    if not isinstance(sep, str):
        raise fail("$split requires an expression that evaluates to a string as a second argument, found: %s"
                   % tname(sep), 40086)
    if sep == "":
        raise fail("$split requires a non-empty separator", 40087)
    return s.split(sep)


def op_index_of(ev: Any, op: str, arg: Any, doc: Any) -> Any:
    """``$indexOfBytes`` / ``$indexOfCP``: ``[string, substring, start?, end?]``; -1 when not found."""
    vals = eval_args(ev, op, arg, doc, 2, 4)
    s, sub = vals[0], vals[1]
    cp = op == "$indexOfCP"
    s = string_or_null(s, lambda v: "%s requires a string as the first argument, found: %s" % (op, tname(v)),
                       40093 if cp else 40091)
    if s is None:
        return None
    if not isinstance(sub, str):
        raise fail("%s requires a string as the second argument, found: %s"
                   % (op, "missing" if sub is V.MISSING else tname(sub)), 40094 if cp else 40092)
    hay: Any = s if cp else s.encode("utf-8")
    needle: Any = sub if cp else sub.encode("utf-8")
    bounds = []
    for which, v in zip(("starting", "ending"), vals[2:]):
        i = int_value(v) if num_kind(v) >= 0 else None
        if i is None:
            raise fail("%srequires an integral %s index, found a value of type: %s, with value: %s"  # sic
                       % (op, which, tname(v), num_str(v) if num_kind(v) >= 0 else repr(v)), 40096)
        if i < 0:
            raise fail("%s requires a nonnegative %s index, found: %d" % (op, which, i), 40097)
        bounds.append(i)
    start = bounds[0] if bounds else 0
    end = bounds[1] if len(bounds) > 1 else len(hay)
    end = min(end, len(hay))
    if start > len(hay) or end < start:
        return -1
    if cp and start == end:  # the server's code-point loop looks at no position (except "" in "")
        return 0 if hay == "" and needle == "" else -1
    return hay.find(needle, start, end)


def _show(v: Any) -> str:
    """A value in an error message."""
    if isinstance(v, (dict, list)):
        return repr(v)
    return num_str(v) if num_kind(v) >= 0 else str(v)


_WHITESPACE = "\x00 \t\n\x0b\x0c\r\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009" \
              "\u200a\u2028\u2029\u202f\u205f\u3000"


def op_trim(ev: Any, op: str, arg: Any, doc: Any) -> Any:
    """``$trim`` / ``$ltrim`` / ``$rtrim``: ``{input, chars}``; default chars the server's whitespace set."""
    named_args(arg, ("input", "chars"), (op + " only supports an object as an argument, found %(type)s", 50696),
               (op + " found an unknown argument: %(key)s", 50694),
               {"input": (op + " requires an 'input' field", 50695)})
    s = string_or_null(ev.ev(arg["input"], doc), lambda v: "%s requires its input to be a string, got %s (of type "
                       "%s) instead." % (op, _show(v), tname(v)), 50699)
    if s is None:
        return None
    chars = _WHITESPACE
    if "chars" in arg:
        chars = string_or_null(ev.ev(arg["chars"], doc), lambda v: "%s requires 'chars' to be a string, got %s (of "
                               "type %s) instead." % (op, _show(v), tname(v)), 50700)
        if chars is None:
            return None
    if op == "$ltrim":
        return s.lstrip(chars)
    if op == "$rtrim":
        return s.rstrip(chars)
    return s.strip(chars)


# ------------------------------------------------------------------------------------------ regex
def _regex_args(ev: Any, op: str, arg: Any, doc: Any) -> tuple[Any, Any]:
    """(input string or None, compiled pattern or None) of a ``$regex*`` operator."""
    missing = op + " requires '%(key)s' parameter"
    named_args(arg, ("input", "regex", "options"),
               (op + " expects an object of named arguments but found: %(type)s", 51103),
               (op + " found an unknown argument: %(key)s", 31024),
               {"input": (missing, 31022), "regex": (missing, 31023)})
    s = ev.ev(arg["input"], doc)
    rx = ev.ev(arg["regex"], doc)
    opts = ev.ev(arg["options"], doc) if "options" in arg else MISSING_OPTS
    if not nullish(s) and not isinstance(s, str):
        raise fail("%s needs 'input' to be of type string" % op, 51104)
    flags = ""
    if isinstance(rx, (Regex, V.RE_TYPE)):
        pattern, flags = V.regex_parts(rx)
        if opts is not MISSING_OPTS and not nullish(opts) and flags:
            raise fail("%s: regex option(s) specified in both 'regex' and 'option' fields" % op, 51107)
    elif isinstance(rx, str):
        pattern = rx
    elif nullish(rx):
        pattern = None
    else:
        raise fail("%s needs 'regex' to be of type string or regex" % op, 51105)
    if opts is not MISSING_OPTS and not nullish(opts):
        if not isinstance(opts, str):
            raise fail("%s needs 'options' to be of type string" % op, 51106)
        flags = opts
    if pattern is not None and "\x00" in pattern:
        raise fail("%s: regular expression cannot contain an embedded null byte" % op, 51109)
    py = 0
    for f in flags:
        if f == "i":
            py |= re.IGNORECASE
        elif f == "m":
            py |= re.MULTILINE
        elif f == "s":
            py |= re.DOTALL
        elif f == "x":
            py |= re.VERBOSE
        elif f == "u":
            pass
        else:
            raise fail("%s: invalid flag in regex options: %s" % (op, f), 51108)
    if nullish(s) or pattern is None:
        return None, None
    try:
        return s, re.compile(V.pcre_to_python(pattern), py)
    except re.error as e:
        raise fail("%s: Invalid regular expression: %s" % (op, e), 51111) from None


MISSING_OPTS = object()


def _match_doc(m: Any, s: str) -> dict:
    return {"match": m.group(0), "idx": m.start(),
            "captures": [g for g in m.groups()]}


def op_regex(ev: Any, op: str, arg: Any, doc: Any) -> Any:
    """``$regexMatch`` (bool), ``$regexFind`` ({match, idx, captures} or null), ``$regexFindAll`` (a list)."""
    s, rx = _regex_args(ev, op, arg, doc)
    if rx is None:
        return False if op == "$regexMatch" else (None if op == "$regexFind" else [])
    if op == "$regexMatch":
        return rx.search(s) is not None
    if op == "$regexFind":
        m = rx.search(s)
        return _match_doc(m, s) if m else None
    return [_match_doc(m, s) for m in rx.finditer(s)]


def op_replace(ev: Any, op: str, arg: Any, doc: Any) -> Any:
    """``$replaceOne`` / ``$replaceAll``: ``{input, find, replacement}``, strings or null."""
    missing = op + " requires '%(key)s' to be specified"
    named_args(arg, ("input", "find", "replacement"),
               (op + " requires an object as an argument, found: %(type)s", 51751),
               (op + " found an unknown argument: %(key)s", 51750),
               {"input": (missing, 51749), "find": (missing, 51748), "replacement": (missing, 51747)})
    vals = {}
    for k, code in (("input", 51746), ("find", 51745), ("replacement", 51744)):
        v = ev.ev(arg[k], doc)
        if not nullish(v) and not isinstance(v, str):
            raise fail("%s requires that '%s' be a string, found: %s" % (op, k, tname(v)), code)
        vals[k] = v
    if any(nullish(v) for v in vals.values()):
        return None
    s, find, rep = vals["input"], vals["find"], vals["replacement"]
    return s.replace(find, rep, 1) if op == "$replaceOne" else s.replace(find, rep)


OPS = {
    "$concat": op_concat,
    "$toLower": op_case,
    "$toUpper": op_case,
    "$strcasecmp": op_strcasecmp,
    "$substr": op_substr_bytes,
    "$substrBytes": op_substr_bytes,
    "$substrCP": op_substr_cp,
    "$strLenBytes": op_strlen,
    "$strLenCP": op_strlen,
    "$split": op_split,
    "$indexOfBytes": op_index_of,
    "$indexOfCP": op_index_of,
    "$trim": op_trim,
    "$ltrim": op_trim,
    "$rtrim": op_trim,
    "$regexMatch": op_regex,
    "$regexFind": op_regex,
    "$regexFindAll": op_regex,
    "$replaceOne": op_replace,
    "$replaceAll": op_replace,
}
