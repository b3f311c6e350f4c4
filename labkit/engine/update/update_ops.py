"""MongoDB's update operators, applied with the server's rules (the engine's own updater; no mongomock).

Sources: the manual's "Update Operators" pages ($set, $unset, $inc, $mul, $min, $max, $rename, $setOnInsert,
$currentDate, $push with $each/$slice/$sort/$position, $addToSet, $pop, $pull, $pullAll, the positional
operators ``$``, ``$[]`` and ``$[<identifier>]`` with ``arrayFilters``), "Upsert behavior" and the server's
``jstests/core/write/update/`` tests (for the error codes and messages).

How it works, as on the server (``src/mongo/db/update/``): the update document is parsed once into a list of
(operator, path, argument) with the parse-time errors (unknown modifier 9, empty paths 56, conflicting paths 40,
bad positional paths 2, array filter identifiers 2/9); for each document the positional parts of every path are
resolved into concrete paths (``$`` from the query's matched array element, ``$[]`` every element, ``$[id]`` the
elements its array filter matches), and the operations are applied in the server's field order (paths sorted
component by component, array indexes numerically), so fields that exist are changed in place and new fields
are appended in that order. ``apply`` returns whether the document really changed (nModified counts only real
changes: a ``$set`` to the same value of the same type is a no-op).

Matching inside updates ($pull conditions, the positional ``$`` and array filters) goes through
``labkit.engine.matcher.match.fast_matcher``.
"""
from __future__ import annotations

import datetime
import functools
import re
from decimal import Decimal
from typing import Any, Callable

from bson import Decimal128, Int64, ObjectId, Regex, Timestamp
from pymongo.errors import WriteError

from ..bson import keys as K
from ..matcher.match import fast_matcher
from ..pipeline.expression.expr_base import DEC_CTX, to_dec
from ..bson.values import type_name  # noqa: F401 - the one type-name function (projection.py imports it here)

MISSING = K.MISSING
_ID_RE = re.compile(r"^[a-z][a-zA-Z0-9]*$")
_NUMERIC = (int, float, Int64, Decimal128)
INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1

FIELD_OPS = ("$set", "$unset", "$inc", "$mul", "$min", "$max", "$rename", "$setOnInsert", "$currentDate")
ARRAY_OPS = ("$push", "$addToSet", "$pop", "$pull", "$pullAll")
ALL_OPS = frozenset(FIELD_OPS + ARRAY_OPS + ("$bit",))


def update_error(message: str, code: int) -> WriteError:
    """A WriteError with the server's write-error document."""
    return WriteError(message, code, {"index": 0, "code": code, "errmsg": message})


# ------------------------------------------------------------------------------------------- values
def fmt(v: Any) -> str:
    """A value as the server's BSON ``toString`` prints it in messages (``{ a: 1 }``, ``"x"``, ``[ 1, 2 ]``)."""
    if isinstance(v, dict):
        if not v:
            return "{}"
        return "{ " + ", ".join("%s: %s" % (k, fmt(x)) for k, x in v.items()) + " }"
    if isinstance(v, (list, tuple)):
        if not v:
            return "[]"
        return "[ " + ", ".join(fmt(x) for x in v) + " ]"
    if isinstance(v, str):
        return '"%s"' % v
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, float) and v == int(v) and abs(v) < 1e15:
        return "%d.0" % v
    return K.fmt_value(v)


def fmt_elem(name: str, v: Any) -> str:
    """One element as ``BSONElement::toString``: ``a: 1``."""
    return "%s: %s" % (name, fmt(v))


def same(a: Any, b: Any) -> bool:
    """Binary equality of two BSON values: same types (1 and 1.0 and True differ), same field order."""
    if a is b:
        return True
    ta = type(a)
    if ta is not type(b) and not (isinstance(a, dict) and isinstance(b, dict)):
        return False
    if ta is dict or isinstance(a, dict):
        if len(a) != len(b):
            return False
        for (k1, v1), (k2, v2) in zip(a.items(), b.items()):
            if k1 != k2 or (v1 is not v2 and not same(v1, v2)):
                return False
        return True
    if ta is list:
        if len(a) != len(b):
            return False
        for x, y in zip(a, b):
            if x is not y and not same(x, y):
                return False
        return True
    if ta is float and a != a:
        return b != b
    return a == b


def bson_equal(a: Any, b: Any) -> bool:
    """Equality under BSON comparison (numbers across types, field order significant): $addToSet, $pullAll."""
    try:
        return K.encode(a) == K.encode(b)
    except TypeError:
        return same(a, b)


def _cmp(a: Any, b: Any) -> int:
    ea, eb = K.encode(a), K.encode(b)
    return (ea > eb) - (ea < eb)


def _is_num(v: Any) -> bool:
    return type(v) is not bool and isinstance(v, _NUMERIC)


def check_id_value(v: Any) -> None:
    """The ``_id`` of an updated/replaced/upserted document (storage validation, code 53)."""
    if isinstance(v, (list, tuple)):
        raise update_error("The '_id' value cannot be of type array", 53)
    if isinstance(v, (Regex, type(re.compile("")))):
        raise update_error("The '_id' value cannot be of type regex", 53)
    if isinstance(v, dict):
        for k in v:
            if isinstance(k, str) and k.startswith("$"):
                raise update_error("The dollar ($) prefixed field '%s' in '_id.%s' is not valid for storage."
                                   % (k, k), 52)


# ------------------------------------------------------------------------------------------- paths
def _is_index(part: str) -> bool:
    return part.isdigit() and part.isascii()


def _path_cmp(a: tuple, b: tuple) -> int:
    """The server's ``cmpPathsAndArrayIndexes``, component by component."""
    for x, y in zip(a, b):
        if x == y:
            continue
        if _is_index(x) and _is_index(y):
            return -1 if int(x) < int(y) else 1
        return -1 if x < y else 1
    return (len(a) > len(b)) - (len(a) < len(b))


_path_key = functools.cmp_to_key(_path_cmp)


def _positional_kind(part: str) -> str | None:
    if part == "$":
        return "$"
    if part.startswith("$[") and part.endswith("]"):
        return "[]" if part == "$[]" else "id"
    return None


class _Op:
    __slots__ = ("op", "path", "parts", "arg", "to_parts", "positional")

    def __init__(self, op: str, path: str, arg: Any) -> None:
        self.op, self.path, self.arg = op, path, arg
        self.parts = tuple(path.split("."))
        self.to_parts: tuple | None = None
        self.positional = "$" in path and any(_positional_kind(p) for p in self.parts)


_SHAPES: dict = {}  # update shape (operators and paths) -> its parse (paths checked, conflicts, order)


def _shape_key(update: dict) -> tuple | None:
    """The operators and paths of an update (and $rename targets), when it has no positional paths."""
    key = []
    for op, spec in update.items():
        if type(spec) is not dict:
            return None
        if op == "$rename":
            key.append((op, tuple((k, v) for k, v in spec.items() if type(v) is str)))
        else:
            key.append((op, tuple(spec)))
    return tuple(key)


def _check_path(path: Any, op: str) -> None:
    if type(path) is str and path and "." not in path and path[0] != "$":
        return  # a plain field name (the common case)
    if not isinstance(path, str) or path == "":
        raise update_error("An empty update path is not valid.", 56)
    parts = path.split(".")
    if any(p == "" for p in parts):
        raise update_error("The update path '%s' contains an empty field name, which is not allowed." % path, 56)
    if parts[0] == "$" or parts[0].startswith("$["):
        raise update_error("Cannot have positional (i.e. '$') element in the first component in path '%s'"
                           % path, 2)
    if sum(1 for p in parts if p == "$") > 1:
        raise update_error("Too many positional (i.e. '$') elements found in path '%s'" % path, 2)


def _is_array_update(part: str) -> bool:
    return part.startswith("$[") and part.endswith("]")


def _conflict(paths: list[tuple[str, tuple]], new: str, parts: tuple) -> None:
    """Parse-time conflicts (code 40): one path a prefix of another, or an array update ``$[...]`` next to any
    other kind of child (``a.$[i]`` with ``a.$``, ``a.0`` or ``a.b``) of the same parent."""
    for old, oparts in paths:
        n = min(len(parts), len(oparts))
        if parts[:n] == oparts[:n]:
            at = ".".join(parts[:n])
            raise update_error("Updating the path '%s' would create a conflict at '%s'" % (new, at), 40)
        i = next(i for i in range(n) if parts[i] != oparts[i])
        if _is_array_update(parts[i]) != _is_array_update(oparts[i]):
            raise update_error("Updating the path '%s' would create a conflict at '%s'"
                               % (new, ".".join(parts[:i])), 40)
    paths.append((new, parts))


# ------------------------------------------------------------------------------------------- array filters
_TOP_LEVEL = frozenset({"$and", "$or", "$nor", "$expr", "$where", "$text", "$comment", "$jsonSchema",
                        "$alwaysTrue", "$alwaysFalse", "$sampleRate"})


def _top_names(f: Any, out: set) -> None:
    if not isinstance(f, dict):
        return
    for k, v in f.items():
        if k in ("$and", "$or", "$nor"):
            if isinstance(v, list):
                for x in v:
                    _top_names(x, out)
        elif k.startswith("$"):
            if k not in _TOP_LEVEL:
                raise update_error("unknown top level operator: %s. If you have a field name that starts with a "
                                   "'$' symbol, consider using $getField or $setField." % k, 2)
            if k in ("$where", "$text"):
                raise update_error("%s is not allowed in this context" % k, 2)
            if k == "$expr":
                raise update_error("$expr is not allowed in this context", 224)
        else:
            out.add(k.split(".")[0])


def parse_array_filters(array_filters: Any, make_matcher: Callable = fast_matcher) -> dict[str, Callable[[Any], bool]]:
    """``arrayFilters``: one filter document per identifier (the top-level field name of its paths)
    (``jstests/core/write/update/update_arrayFilters.js``)."""
    out: dict[str, Callable[[Any], bool]] = {}
    if array_filters is None:
        return out
    if not isinstance(array_filters, (list, tuple)):
        raise update_error("BSON field 'update.updates.arrayFilters' is the wrong type '%s', expected type "
                           "'array'" % type_name(array_filters), 14)
    for f in array_filters:
        if not isinstance(f, dict):
            raise update_error("BSON field 'update.updates.arrayFilters' is the wrong type '%s', expected type "
                               "'object'" % type_name(f), 14)
        names: set = set()
        _top_names(f, names)
        if not names:
            raise update_error("Cannot use an expression without a top-level field name in arrayFilters", 9)
        if len(names) > 1:
            a, b = sorted(names)[:2]
            raise update_error("Error parsing array filter :: caused by :: Expected a single top-level field "
                               "name, found '%s' and '%s'" % (a, b), 9)
        name = names.pop()
        if not _ID_RE.match(name):
            raise update_error("Error parsing array filter :: caused by :: The top-level field name must be an "
                               "alphanumeric string beginning with a lowercase letter, found '%s'" % name, 2)
        if name in out:
            raise update_error("Found multiple array filters with the same top-level field name %s" % name, 9)
        m = make_matcher(f)
        out[name] = (lambda e, _m=m, _n=name: bool(_m({_n: e})))
    return out


# ------------------------------------------------------------------------------------------- positional $
def _query_clauses(q: Any, out: list) -> None:
    if not isinstance(q, dict):
        return
    for k, v in q.items():
        if k == "$and" and isinstance(v, list):
            for x in v:
                _query_clauses(x, out)
        elif not k.startswith("$"):
            out.append((k, v))


def matched_index(query: Any, doc: dict, array_parts: tuple, make_matcher: Callable = fast_matcher) -> int | None:
    """Index of the first element of the array at ``array_parts`` that the query's clauses on that array
    match (the server's "elemMatchKey" that the positional ``$`` operator uses); None when the query does not
    match an element of that array."""
    arr = _get(doc, array_parts)
    if not isinstance(arr, list):
        return None
    prefix = ".".join(array_parts)
    clauses = []
    _query_clauses(query, clauses)
    related = [(k, v) for k, v in clauses if k == prefix or k.startswith(prefix + ".")]
    if not related:
        return None
    matcher = make_matcher(dict(related))
    for i, e in enumerate(arr):
        probe = with_value(doc, array_parts, [e])
        if matcher(probe):
            return i
    return None


def with_value(doc: dict, parts: tuple | list, value: Any) -> dict:
    """A shallow-copied ``doc`` whose value at ``parts`` (a path without arrays before it) is ``value``."""
    top = dict(doc)
    cur = top
    for p in parts[:-1]:
        nxt = cur.get(p) if isinstance(cur, dict) else None
        nxt = dict(nxt) if isinstance(nxt, dict) else nxt
        cur[p] = nxt
        cur = nxt
    cur[parts[-1]] = value
    return top


def _get(doc: Any, parts: tuple) -> Any:
    cur = doc
    for p in parts:
        if isinstance(cur, dict):
            if p not in cur:
                return MISSING
            cur = cur[p]
        elif isinstance(cur, list) and _is_index(p):
            i = int(p)
            if i >= len(cur):
                return MISSING
            cur = cur[i]
        else:
            return MISSING
    return cur


# ------------------------------------------------------------------------------------------- the update
class Update:
    """A parsed update document (operator form). ``apply(doc, query, inserting)`` changes ``doc`` in place."""

    def __init__(self, update: dict, array_filters: Any = None, make_matcher: Callable = fast_matcher) -> None:
        self.update = update
        self.make_matcher = make_matcher
        key = _shape_key(update) if array_filters is None else None
        shape = _SHAPES.get(key) if key is not None else None
        if shape is not None:
            self._from_shape(update, shape)
            return
        self._parse(update, array_filters, make_matcher)
        if key is not None and self._plain is not None:
            if len(_SHAPES) > 512:
                _SHAPES.clear()
            index = {id(o): i for i, o in enumerate(self.ops)}
            _SHAPES[key] = ([(o.op, o.path, o.parts) for o in self.ops],
                            [index[id(o)] for _, o, _ in self._plain], self.has_set_on_insert)

    def _from_shape(self, update: dict, shape: tuple) -> None:
        """An update whose operators and paths were parsed before: the path checks, conflicts and order are
        known; only the arguments are checked again."""
        ops_shape, order, soi = shape
        self.filters = {}
        self.has_set_on_insert = soi
        ops = []
        for op, path, parts in ops_shape:
            o = _Op.__new__(_Op)
            o.op, o.path, o.arg, o.parts, o.to_parts, o.positional = op, path, update[op][path], parts, None, False
            self._parse_arg(o)
            ops.append(o)
        self.ops = ops
        self._plain = [(ops[i].parts, ops[i], ops[i].to_parts) for i in order]

    def _parse(self, update: dict, array_filters: Any, make_matcher: Callable) -> None:
        self.filters = parse_array_filters(array_filters, make_matcher)
        self.ops: list[_Op] = []
        self.has_set_on_insert = False
        self._paths: dict[tuple, str] = {}       # the paths updated so far
        self._prefixes: set = set()              # their proper prefixes
        self._array_paths: list | None = None    # (path, parts) when array updates ($[...]) are involved
        used: set = set()
        for op, spec in update.items():
            if op not in ALL_OPS:
                raise update_error("Unknown modifier: %s. Expected a valid update modifier or pipeline-style "
                                   "update specified as an array" % op, 9)
            if not isinstance(spec, dict):
                raise update_error("Modifiers operate on fields but we found type %s instead. For example: "
                                   "{$mod: {<field>: ...}} not {%s: %s}" % (type_name(spec), op, fmt(spec)), 9)
            for path, arg in spec.items():
                _check_path(path, op)
                o = _Op(op, path, arg)
                self._parse_arg(o)
                for p in (o.parts if o.positional else ()):
                    if _positional_kind(p) == "id":
                        ident = p[2:-1]
                        if ident not in self.filters:
                            raise update_error("No array filter found for identifier '%s' in path '%s'"
                                               % (ident, path), 2)
                        used.add(ident)
                self._add_path(path, o.parts)
                if op == "$rename":
                    self._add_path(o.arg, o.to_parts)
                if op == "$setOnInsert":
                    self.has_set_on_insert = True
                self.ops.append(o)
        for ident in self.filters:
            if ident not in used:
                raise update_error("The array filter for identifier '%s' was not used in the update %s"
                                   % (ident, fmt(update)), 9)
        # without positional paths the order of application is known now
        self._plain: list | None = None
        if not any(o.positional for o in self.ops):
            self._plain = self._ordered([(o.parts, o, o.to_parts) for o in self.ops if o.op != "$setOnInsert"])

    def _add_path(self, path: str, parts: tuple) -> None:
        """Parse-time conflicts (40): a path equal to, or a prefix of, another (manual "Update Operators";
        jstests update_arrayFilters.js); array updates next to other children of the same parent."""
        for i in range(1, len(parts) + 1):
            if parts[:i] in self._paths:
                raise update_error("Updating the path '%s' would create a conflict at '%s'"
                                   % (path, ".".join(parts[:i])), 40)
        if parts in self._prefixes:
            raise update_error("Updating the path '%s' would create a conflict at '%s'" % (path, path), 40)
        if self._array_paths is not None or "$[" in path:
            if self._array_paths is None:
                self._array_paths = [(p, k) for k, p in self._paths.items()]
            _conflict(self._array_paths, path, parts)
        self._paths[parts] = path
        for i in range(1, len(parts)):
            self._prefixes.add(parts[:i])

    @staticmethod
    def _ordered(concrete: list) -> list:
        """Operations in the server's order: by path (a $rename at its destination, where the server's
        RenameNode sits), array indexes compared as numbers."""
        if len(concrete) < 2:
            return concrete
        keys = [c[2] if c[2] is not None else c[0] for c in concrete]
        if any(p.isdigit() for k in keys for p in k):
            order = sorted(range(len(keys)), key=lambda i: _path_key(keys[i]))
        else:  # no array indexes: plain component order is the server's order
            order = sorted(range(len(keys)), key=keys.__getitem__)
        return [concrete[i] for i in order]

    # -- parse-time argument checks ------------------------------------------------------------------
    def _parse_arg(self, o: _Op) -> None:
        op, a = o.op, o.arg
        if op in ("$inc", "$mul") and not _is_num(a):
            verb = "increment" if op == "$inc" else "multiply"
            raise update_error("Cannot %s with non-numeric argument: {%s}" % (verb, fmt_elem(o.path, a)), 14)
        if op == "$rename":
            if not isinstance(a, str):
                raise update_error("The 'to' field for $rename must be a string: %s" % fmt_elem(o.path, a), 2)
            if a == o.path:
                raise update_error("The source and target field for $rename must differ: %s" % fmt_elem(o.path, a), 2)
            _check_path(a, op)
            if o.positional:
                raise update_error("The source field for $rename may not be dynamic: %s" % o.path, 2)
            if any(_positional_kind(p) for p in a.split(".")):
                raise update_error("The destination field for $rename may not be dynamic: %s" % a, 2)
            o.to_parts = tuple(a.split("."))
        elif op == "$currentDate":
            if isinstance(a, bool):
                return
            if isinstance(a, dict) and len(a) == 1 and a.get("$type") in ("date", "timestamp"):
                return
            if isinstance(a, dict) and "$type" in a and len(a) == 1:
                raise update_error("The '$type' string field is required to be 'date' or 'timestamp': "
                                   "{$currentDate: {field : {$type: 'date'}}}", 2)
            raise update_error("%s is not valid type for $currentDate. Please use a boolean ('true') or a $type "
                               "expression ({$type: 'timestamp/date'})." % type_name(a), 2)
        elif op == "$pop":
            if not _is_num(a) or a not in (1, -1):
                raise update_error("$pop expects 1 or -1, found: %s" % fmt(a), 9)
        elif op == "$pullAll":
            if not isinstance(a, list):
                raise update_error("$pullAll requires an array argument but was given a %s" % type_name(a), 2)
        elif op == "$push":
            o.arg = _parse_push(a, o.path)
        elif op == "$addToSet":
            if isinstance(a, dict) and "$each" in a:
                if not isinstance(a["$each"], list):
                    raise update_error("The argument to $each in $addToSet must be an array but it was of type %s"
                                       % type_name(a["$each"]), 2)
                if len(a) > 1:
                    bad = next(k for k in a if k != "$each")
                    raise update_error("Found unexpected fields after $each in $addToSet: %s" % fmt(a), 2)
                vals = a["$each"]
            else:
                vals = [a]
            o.arg = vals
        elif op == "$pull":
            o.arg = _pull_matcher(a, self.make_matcher)
        elif op == "$bit":
            if not isinstance(a, dict) or not a:
                raise update_error("The $bit modifier is not compatible with a %s. You must pass in an embedded "
                                   "document: {$bit: {field: {and/or/xor: #}}" % type_name(a), 2)
            for k, v in a.items():
                if k not in ("and", "or", "xor"):
                    raise update_error("The $bit modifier only supports 'and', 'or', and 'xor', not '%s' which is an "
                                       "unknown operator: {%s}" % (k, fmt_elem(k, v)), 2)
                if type(v) not in (int, Int64):
                    raise update_error("The $bit modifier field must be an Integer(32/64 bit); a '%s' is not "
                                       "supported here: {%s}" % (type_name(v), fmt_elem(k, v)), 2)

    # -- application -----------------------------------------------------------------------------------
    def apply(self, doc: dict, query: Any = None, inserting: bool = False) -> None:
        """Apply the update to ``doc`` in place (``query``: the filter that matched, for ``$``;
        ``inserting``: an upsert's new document, where ``$setOnInsert`` applies and which is validated as an
        insert). A top-level ``$``-prefixed field the update writes into an existing document fails with 52
        (storage_validation.cpp: with FCV >= 5.0 only the top level is checked; ``modifier_node.cpp``
        validates the modified element, or the first one a new path creates, at its depth)."""
        tops = self._dtops
        if tops is None:
            tops = self._dtops = self._dollar_tops()
        if not tops or inserting:
            self._apply(doc, query, inserting)
            return
        before = {name: _copy(doc[name]) if name in doc else MISSING for name, _ in tops}
        self._apply(doc, query, inserting)
        for name, whole in tops:
            now = doc.get(name, MISSING)
            was = before[name]
            if now is not MISSING and (was is MISSING or (whole and not same(was, now))):
                raise update_error(dollar_field_message(name, name), 52)

    _dtops = None

    def _dollar_tops(self) -> tuple:
        """``(name, whole)`` for each top-level ``$``-prefixed field the update writes (``$unset`` only removes;
        a ``$rename`` writes its destination); ``whole``: the path is that field itself, so changing it counts,
        while a longer path counts only when it creates the field."""
        out = []
        for o in self.ops:
            if o.op == "$unset":
                continue
            parts = o.to_parts if o.op == "$rename" else o.parts
            if parts and parts[0][:1] == "$" and _positional_kind(parts[0]) is None:
                out.append((parts[0], len(parts) == 1))
        return tuple(out)

    def _apply(self, doc: dict, query: Any, inserting: bool) -> None:
        if self._plain is not None and not (inserting and self.has_set_on_insert):
            for parts, o, to_parts in self._plain:
                _APPLY[o.op](self, doc, parts, o, to_parts)
            return
        concrete: list[tuple[tuple, _Op, tuple | None]] = []
        pos_cache: dict = {}
        for o in self.ops:
            if o.op == "$setOnInsert" and not inserting:
                continue
            if o.positional:
                for parts in self._expand(doc, o, query, pos_cache):
                    concrete.append((parts, o, None))
            else:
                concrete.append((o.parts, o, o.to_parts))
        if len(concrete) > 1:
            if any(o.positional for _, o, _ in concrete):
                seen: dict = {}
                for parts, o, _ in concrete:
                    other = seen.get(parts)
                    if other is not None:
                        # named as the server does: resolved up to where the two paths' templates last differ
                        d = max(i for i in range(len(parts)) if o.parts[i] != other.parts[i])
                        shown = parts[:d + 1] + o.parts[d + 1:]
                        raise update_error("Update created a conflict at '%s'" % ".".join(shown), 40)
                    seen[parts] = o
            concrete = self._ordered(concrete)
        for parts, o, to_parts in concrete:
            _APPLY[o.op](self, doc, parts, o, to_parts)

    def _expand(self, doc: dict, o: _Op, query: Any, cache: dict) -> list[tuple]:
        todo = [((), 0)]
        out = []
        parts = o.parts
        while todo:
            done, i = todo.pop()
            while i < len(parts) and _positional_kind(parts[i]) is None:
                done = done + (parts[i],)
                i += 1
            if i == len(parts):
                out.append(done)
                continue
            kind = _positional_kind(parts[i])
            if kind == "$":
                if done not in cache:
                    cache[done] = matched_index(query, doc, done, self.make_matcher) if query is not None else None
                idx = cache[done]
                if idx is None:
                    raise update_error("The positional operator did not find the match needed from the query.", 2)
                todo.append((done + (str(idx),), i + 1))
                continue
            arr = _get(doc, done)
            if arr is MISSING:
                raise update_error("The path '%s' must exist in the document in order to apply array updates."
                                   % ".".join(done), 2)
            if not isinstance(arr, list):
                raise update_error("Cannot apply array updates to non-array element %s"
                                   % fmt_elem(done[-1], arr), 2)
            flt = self.filters.get(parts[i][2:-1]) if kind == "id" else None
            for j in reversed(range(len(arr))):
                if flt is None or flt(arr[j]):
                    todo.append((done + (str(j),), i + 1))
        out.reverse()
        return out


# ------------------------------------------------------------------------------------------- walking
def _element_desc(parent: Any, key: str) -> str:
    return "{%s}" % fmt_elem(key, parent)


def _resolve_create(doc: dict, parts: tuple) -> tuple[Any, str]:
    """Walk to the parent of the last component, creating embedded documents on the way. Fails with 28
    (PathNotViable) through a scalar, null or a non-numeric field of an array."""
    if len(parts) == 1:
        return doc, parts[0]
    cur: Any = doc
    name = ""
    for p in parts[:-1]:
        if isinstance(cur, dict):
            nxt = cur.get(p, MISSING)
            if nxt is MISSING:
                nxt = cur[p] = {}
        elif isinstance(cur, list):
            if not _is_index(p):
                raise update_error("Cannot create field '%s' in element %s" % (p, _element_desc(cur, name)), 28)
            i = int(p)
            if i < len(cur):
                nxt = cur[i]
            else:
                cur.extend([None] * (i - len(cur)))
                nxt = {}
                cur.append(nxt)
        else:
            raise update_error("Cannot create field '%s' in element %s" % (p, _element_desc(cur, name)), 28)
        cur, name = nxt, p
    last = parts[-1]
    if not isinstance(cur, (dict, list)) or (isinstance(cur, list) and not _is_index(last)):
        raise update_error("Cannot create field '%s' in element %s" % (last, _element_desc(cur, name)), 28)
    return cur, last


def _lookup(doc: dict, parts: tuple, strict: bool = False) -> tuple[Any, str]:
    """(parent, last) of an existing path, or (None, last) when some component on the way is missing.
    ``strict`` (``$pop``, ``$pull``, ``$pullAll``): a path blocked by a scalar, or by an array with a field
    name, fails with 28 (PathNotViable) instead of being a no-op."""
    cur: Any = doc
    name = ""
    for i, p in enumerate(parts):
        if i == len(parts) - 1 and isinstance(cur, dict):
            return cur, p
        if isinstance(cur, dict):
            nxt = cur.get(p, MISSING)
        elif isinstance(cur, list) and _is_index(p):
            nxt = cur[int(p)] if int(p) < len(cur) else MISSING
            if i == len(parts) - 1:
                return cur, p
        else:
            if strict:
                raise update_error("Cannot use the part (%s of %s) to traverse the element ({%s})"
                                   % (p, ".".join(parts), fmt_elem(name, cur)), 28)
            return None, parts[-1]
        if nxt is MISSING:
            return None, parts[-1]
        cur, name = nxt, p
    return None, parts[-1]  # pragma: no cover - the loop returns at the last part


def _read(parent: Any, key: str) -> Any:
    if type(parent) is dict or isinstance(parent, dict):
        return parent.get(key, MISSING)
    if isinstance(parent, list) and _is_index(key) and int(key) < len(parent):
        return parent[int(key)]
    return MISSING


def _write(parent: Any, key: str, value: Any) -> None:
    if type(parent) is dict or isinstance(parent, dict):
        parent[key] = value
        return
    i = int(key)
    if i < len(parent):
        parent[i] = value
    else:
        parent.extend([None] * (i - len(parent)))
        parent.append(value)


def _copy(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _copy(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_copy(x) for x in v]
    if isinstance(v, datetime.datetime) and v.tzinfo is not None:
        return v.astimezone(datetime.timezone.utc).replace(tzinfo=None, microsecond=v.microsecond // 1000 * 1000)
    if isinstance(v, datetime.datetime):
        return v.replace(microsecond=v.microsecond // 1000 * 1000)
    if isinstance(v, Decimal):
        return Decimal128(v)
    return v


def _id_of(doc: dict) -> str:
    return "{%s}" % fmt_elem("_id", doc.get("_id")) if "_id" in doc else "{}"


# ------------------------------------------------------------------------------------------- operators
def _op_set(u: Update, doc: dict, parts: tuple, o: _Op, _to: Any) -> None:
    parent, key = _resolve_create(doc, parts)
    old = _read(parent, key)
    if old is not MISSING and same(old, o.arg):
        return
    _write(parent, key, _copy(o.arg))


def _op_unset(u: Update, doc: dict, parts: tuple, o: _Op, _to: Any) -> None:
    parent, key = _lookup(doc, parts)
    if isinstance(parent, dict):
        parent.pop(key, None)
    elif isinstance(parent, list) and _is_index(key) and int(key) < len(parent):
        parent[int(key)] = None  # the server leaves a null in the array


def _arith(op: str, a: Any, b: Any, doc: dict, path: str) -> Any:
    if isinstance(a, Decimal128) or isinstance(b, Decimal128):
        # safe_num.cpp SafeNum::getDecimal: a double becomes Decimal128(d, kRoundTo15Digits) (15 significant
        # digits), then Decimal128 add / multiply (34 digits, ties to even)
        x, y = to_dec(a), to_dec(b)
        return Decimal128(DEC_CTX.add(x, y) if op == "$inc" else DEC_CTX.multiply(x, y))
    if isinstance(a, float) or isinstance(b, float):
        return float(a) + float(b) if op == "$inc" else float(a) * float(b)
    r = int(a) + int(b) if op == "$inc" else int(a) * int(b)
    if r < INT64_MIN or r > INT64_MAX:
        raise update_error("Failed to apply %s operations to current value (%s) for document %s"
                           % (op, fmt(a), _id_of(doc)), 2)
    if type(a) is Int64 or type(b) is Int64:
        return Int64(r)
    return r


def _op_arith(u: Update, doc: dict, parts: tuple, o: _Op, _to: Any) -> None:
    parent, key = _resolve_create(doc, parts)
    old = _read(parent, key)
    if old is MISSING:
        if o.op == "$inc":
            new = o.arg
        else:
            a = o.arg
            new = Decimal128("0") if isinstance(a, Decimal128) else 0.0 if isinstance(a, float) else \
                Int64(0) if type(a) is Int64 else 0
        _write(parent, key, new)
        return
    ta, tb = type(old), type(o.arg)
    if (ta is int or ta is float) and (tb is int or tb is float) and (ta is float or tb is float):
        new = old + o.arg if o.op == "$inc" else old * o.arg  # double arithmetic (the common case)
        if ta is not float or new != old or new != new:
            _write(parent, key, float(new))
        return
    if not _is_num(old):
        raise update_error("Cannot apply %s to a value of non-numeric type. %s has the field '%s' of non-numeric "
                           "type %s" % (o.op, _id_of(doc), key, type_name(old)), 14)
    new = _arith(o.op, old, o.arg, doc, ".".join(parts))
    if not same(old, new):
        _write(parent, key, new)


def _op_minmax(u: Update, doc: dict, parts: tuple, o: _Op, _to: Any) -> None:
    parent, key = _resolve_create(doc, parts)
    old = _read(parent, key)
    if old is MISSING:
        _write(parent, key, _copy(o.arg))
        return
    c = _cmp(o.arg, old)
    if (o.op == "$min" and c < 0) or (o.op == "$max" and c > 0):
        _write(parent, key, _copy(o.arg))


def _now() -> datetime.datetime:
    n = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    return n.replace(microsecond=n.microsecond // 1000 * 1000)


_TS_INC = [0, 0]


def _timestamp() -> Timestamp:
    import time
    t = int(time.time())
    if _TS_INC[0] != t:
        _TS_INC[0], _TS_INC[1] = t, 0
    _TS_INC[1] += 1
    return Timestamp(t, _TS_INC[1])


def fill_empty_timestamps(doc: dict) -> dict:
    """An inserted or replacement document's top-level ``Timestamp(0, 0)`` values (not ``_id``) set to the
    current timestamp, as the server does (ops/insert.cpp fixDocumentForInsert; jstests/core/write/empty_ts);
    nested ones, ``$set`` values and query values are kept. Changes ``doc`` in place and returns it."""
    for k, v in doc.items():
        if type(v) is Timestamp and k != "_id" and v.time == 0 and v.inc == 0:
            doc[k] = _timestamp()
    return doc


def _op_current_date(u: Update, doc: dict, parts: tuple, o: _Op, _to: Any) -> None:
    parent, key = _resolve_create(doc, parts)
    ts = isinstance(o.arg, dict) and o.arg.get("$type") == "timestamp"
    _write(parent, key, _timestamp() if ts else _now())


def _op_rename(u: Update, doc: dict, parts: tuple, o: _Op, to_parts: Any) -> None:
    """$rename: the value moves from the source to the destination; neither may go through an array (2;
    the message names the document's ``_id`` and the array field, as rename_node.cpp words it)."""
    who = fmt_elem("_id", doc["_id"]) if "_id" in doc else "no id"
    cur: Any = doc
    for i, p in enumerate(parts):
        if isinstance(cur, list):
            raise update_error("The source field cannot be an array element, '%s' in doc with %s has an array "
                               "field called '%s'" % (o.path, who, parts[i - 1]), 2)
        if not isinstance(cur, dict) or p not in cur:
            return
        if i < len(parts) - 1:
            cur = cur[p]
    value = cur[parts[-1]]
    dst: Any = doc
    for p in to_parts[:-1]:
        if isinstance(dst, dict) and p in dst:
            dst = dst[p]
            if isinstance(dst, list):
                raise update_error("The destination field cannot be an array element, '%s' in doc with %s has "
                                   "an array field called '%s'" % (o.arg, who, p), 2)
        else:
            break
    del cur[parts[-1]]
    parent, key = _resolve_create(doc, to_parts)
    _write(parent, key, value)


# -- $push -----------------------------------------------------------------------------------------------
class _Push:
    __slots__ = ("each", "slice", "sort", "position")

    def __init__(self) -> None:
        self.each: list = []
        self.slice: int | None = None
        self.sort: Any = None
        self.position: int | None = None


def _int_arg(v: Any) -> int | None:
    if _is_num(v) and not isinstance(v, Decimal128) and float(v) == int(v):
        return int(v)
    return None


_PUSH_INT_MESSAGES = {  # $push's integer modifiers (the _Push attribute without the "$") and the server's message
    "$slice": "The value for $slice must be an integer value but was given type: %s",
    "$position": "The value for $position must be an integer value, not of type: %s",
}


def _parse_push(a: Any, path: str) -> _Push:
    p = _Push()
    if not (isinstance(a, dict) and "$each" in a):
        p.each = [a]
        return p
    for k, v in a.items():
        if k == "$each":
            if not isinstance(v, list):
                raise update_error("The argument to $each in $push must be an array but it was of type: %s"
                                   % type_name(v), 2)
            p.each = v
        elif k in _PUSH_INT_MESSAGES:
            n = _int_arg(v)
            if n is None:
                raise update_error(_PUSH_INT_MESSAGES[k] % type_name(v), 2)
            setattr(p, k[1:], n)
        elif k == "$sort":
            if _is_num(v) and v in (1, -1):
                p.sort = int(v)
            elif isinstance(v, dict) and v and all(
                    _is_num(d) and d in (1, -1) and isinstance(f, str) and f and not f.startswith("$")
                    and "" not in f.split(".") for f, d in v.items()):
                p.sort = [(f.split("."), int(d)) for f, d in v.items()]
            elif isinstance(v, dict) and not v:
                raise update_error("The $sort pattern is empty when it should be a set of fields.", 2)
            else:
                raise update_error("The $sort is invalid: use 1/-1 to sort the whole element, or {field:1/-1} to "
                                   "sort embedded fields", 2)
        else:
            raise update_error("Unrecognized clause in $push: %s" % k, 2)
    return p


def _push_sort(arr: list, sort: Any) -> list:
    if isinstance(sort, int):
        return sorted(arr, key=K.encode, reverse=sort == -1)

    def key(e: Any) -> tuple:
        d = e if isinstance(e, dict) else {}
        return tuple(K.doc_sort_key(d, parts, desc == -1) for parts, desc in sort)
    return sorted(arr, key=key)


def _op_push(u: Update, doc: dict, parts: tuple, o: _Op, _to: Any) -> None:
    parent, key = _resolve_create(doc, parts)
    old = _read(parent, key)
    if old is not MISSING and not isinstance(old, list):
        raise update_error("The field '%s' must be an array but is of type %s in document %s"
                           % (".".join(parts), type_name(old), _id_of(doc)), 2)
    p: _Push = o.arg
    if type(old) is list and p.position is None and p.sort is None and p.slice is None:
        if p.each:
            old.extend([_copy(v) for v in p.each])  # a plain append (the common case)
        return
    arr = list(old) if old is not MISSING else []
    each = [_copy(v) for v in p.each]
    pos = p.position
    if pos is None or pos >= len(arr):
        arr.extend(each)
    else:
        if pos < 0:
            pos = max(0, len(arr) + pos)
        arr[pos:pos] = each
    if p.sort is not None:
        arr = _push_sort(arr, p.sort)
    if p.slice is not None:
        arr = arr[:p.slice] if p.slice >= 0 else (arr[p.slice:] if p.slice else [])
    if old is MISSING or not same(old, arr):
        _write(parent, key, arr)


def _op_add_to_set(u: Update, doc: dict, parts: tuple, o: _Op, _to: Any) -> None:
    parent, key = _resolve_create(doc, parts)
    old = _read(parent, key)
    if old is MISSING:
        arr: list = []
        for v in o.arg:
            if not any(bson_equal(v, x) for x in arr):
                arr.append(_copy(v))
        _write(parent, key, arr)
        return
    if not isinstance(old, list):
        raise update_error("Cannot apply $addToSet to non-array field. Field named '%s' has non-array type %s"
                           % (key, type_name(old)), 2)
    for v in o.arg:
        if not any(bson_equal(v, x) for x in old):
            old.append(_copy(v))


def _op_pop(u: Update, doc: dict, parts: tuple, o: _Op, _to: Any) -> None:
    parent, key = _lookup(doc, parts, strict=True)
    old = _read(parent, key) if parent is not None else MISSING
    if old is MISSING:
        return
    if not isinstance(old, list):
        raise update_error("Path '%s' contains an element of non-array type '%s'"
                           % (".".join(parts), type_name(old)), 14)
    if old:
        if o.arg == 1:
            old.pop()
        else:
            old.pop(0)


def _pull_matcher(a: Any, make_matcher: Callable = fast_matcher) -> Callable[[Any], bool]:
    """$pull's three cases (as the server's PullNode): a document without query operators at the top matches
    document elements as a query; a query-operator document or a regex matches each element as a field value;
    anything else is BSON equality."""
    if isinstance(a, dict) and a and not next(iter(a)).startswith("$") or \
            isinstance(a, dict) and next(iter(a), "") in ("$and", "$or", "$nor", "$expr", "$where", "$jsonSchema",
                                                          "$comment", "$text"):
        m = make_matcher(a)
        return lambda e: isinstance(e, dict) and bool(m(e))
    if isinstance(a, dict) or isinstance(a, (Regex, type(re.compile("")))):
        if isinstance(a, dict) and not a:
            m0 = make_matcher({})
            return lambda e: isinstance(e, dict) and bool(m0(e))
        m = make_matcher({"x": a})
        return lambda e: bool(m({"x": e}))
    return lambda e: bson_equal(e, a)


def _pull_where(doc: dict, parts: tuple, op: str, drop: Callable[[Any], bool]) -> None:
    """Remove the elements ``drop`` picks from the array at ``parts`` (in place; nothing when it is missing)."""
    parent, key = _lookup(doc, parts, strict=True)
    old = _read(parent, key) if parent is not None else MISSING
    if old is MISSING:
        return
    if not isinstance(old, list):
        raise update_error("Cannot apply %s to a non-array value" % op, 2)
    keep = [e for e in old if not drop(e)]
    if len(keep) != len(old):
        old[:] = keep


def _op_pull(u: Update, doc: dict, parts: tuple, o: _Op, _to: Any) -> None:
    _pull_where(doc, parts, "$pull", o.arg)


def _op_pull_all(u: Update, doc: dict, parts: tuple, o: _Op, _to: Any) -> None:
    _pull_where(doc, parts, "$pullAll", lambda e: any(bson_equal(e, v) for v in o.arg))


def _op_bit(u: Update, doc: dict, parts: tuple, o: _Op, _to: Any) -> None:
    parent, key = _resolve_create(doc, parts)
    old = _read(parent, key)
    if old is MISSING:
        cur: Any = 0
    elif type(old) not in (int, Int64):
        raise update_error("Cannot apply $bit to a value of non-integral type.%s has the field %s of non-integer "
                           "type %s" % (_id_of(doc), key, type_name(old)), 14)
    else:
        cur = old
    long = type(cur) is Int64 or not (INT32_MIN <= cur <= INT32_MAX)
    for k, v in o.arg.items():
        long = long or type(v) is Int64 or not (INT32_MIN <= v <= INT32_MAX)
        cur = int(cur) & int(v) if k == "and" else int(cur) | int(v) if k == "or" else int(cur) ^ int(v)
    new = Int64(cur) if long else cur
    if old is MISSING or not same(old, new):
        _write(parent, key, new)


_APPLY: dict[str, Callable] = {
    "$bit": _op_bit,
    "$set": _op_set, "$setOnInsert": _op_set, "$unset": _op_unset, "$inc": _op_arith, "$mul": _op_arith,
    "$min": _op_minmax, "$max": _op_minmax, "$currentDate": _op_current_date, "$rename": _op_rename,
    "$push": _op_push, "$addToSet": _op_add_to_set, "$pop": _op_pop, "$pull": _op_pull, "$pullAll": _op_pull_all,
}


# ------------------------------------------------------------------------------------------- documents
def is_operator_update(update: Any) -> bool:
    """True for the operator form (first field ``$``-prefixed), False for a replacement document."""
    return isinstance(update, dict) and bool(update) and str(next(iter(update))).startswith("$")


def dollar_field_message(name: str, full: str) -> str:
    """DollarPrefixedFieldName (52) for a top-level ``$``-prefixed field an update writes (storage_validation.cpp
    ``validateDollarPrefixElement``, FCV >= 5.0)."""
    return ("The dollar ($) prefixed field '%s' in '%s' is not allowed in the context of an update's replacement "
            "document. Consider using an aggregation pipeline with $replaceWith." % (name, full))


def check_replacement(doc: dict) -> None:
    """Storage validation of a replacement of an existing document: a top-level ``$``-prefixed name fails with
    52 (nested ones are stored, jstests/core/field_name_validation.js)."""
    for k, v in doc.items():
        if isinstance(k, str) and k.startswith("$"):
            raise update_error(dollar_field_message(k, k), 52)
    if "_id" in doc:
        check_id_value(doc["_id"])


def id_first(doc: dict) -> dict:
    """The document with ``_id`` as its first field (the server moves it first on insert and replace)."""
    if "_id" not in doc or next(iter(doc)) == "_id":
        return doc
    out = {"_id": doc["_id"]}
    for k, v in doc.items():
        if k != "_id":
            out[k] = v
    return out


def _immutable_path(update: Any) -> str:
    if isinstance(update, dict):
        for spec in update.values():
            if isinstance(spec, dict):
                for p in spec:
                    if p == "_id" or str(p).startswith("_id."):
                        return p
    return "_id"


def check_id_unchanged(old: dict, new: dict, update: Any) -> None:
    """Error 66 when an update changed (or removed) ``_id``."""
    if "_id" not in old:
        return
    if "_id" not in new or not same(old["_id"], new["_id"]):
        if isinstance(update, dict) and not is_operator_update(update):
            raise update_error("After applying the update, the (immutable) field '_id' was found to have been "
                               "altered to %s" % fmt_elem("_id", new.get("_id")), 66)
        raise update_error("Performing an update on the path '%s' would modify the immutable field '_id'"
                           % _immutable_path(update), 66)


def replace(old: dict, replacement: dict) -> dict:
    """The stored form of a replacement: the matched ``_id`` kept (first) when the replacement has none;
    error 66 when it names a different one."""
    check_replacement(replacement)
    new = {k: _copy(v) for k, v in replacement.items()}
    if "_id" not in new:
        if "_id" in old:
            new = {"_id": old["_id"], **new}
    else:
        if "_id" in old and not bson_equal(old["_id"], new["_id"]):
            raise update_error("After applying the update, the (immutable) field '_id' was found to have been "
                               "altered to %s" % fmt_elem("_id", new["_id"]), 66)
        if "_id" in old:
            new["_id"] = old["_id"] if same(old["_id"], new["_id"]) else new["_id"]
        new = id_first(new)
    return new


# ------------------------------------------------------------------------------------------- upserts
_RX = (Regex, type(re.compile("")))


def _equalities(q: Any, out: list) -> None:
    """The equality predicates of a filter (``jstests/core/write/update/upsert_fields.js``): ``{a: v}``,
    ``{a: {$eq: v}}``, one-element ``$in`` and ``$all``, through ``$and`` and one-clause ``$or``; not regexes
    (unless ``$eq``), ranges, ``$ne``, ``$nor``, ``$elemMatch``, ``$exists``, ``$not``."""
    if not isinstance(q, dict):
        return
    for k, v in q.items():
        if k == "$and" and isinstance(v, list) or k == "$or" and isinstance(v, list) and len(v) == 1:
            for x in v:
                _equalities(x, out)
        elif isinstance(k, str) and k.startswith("$"):
            continue
        elif isinstance(v, dict) and v and str(next(iter(v))).startswith("$"):
            for op, arg in v.items():
                if op == "$eq":
                    out.append((k, arg))
                elif op == "$in" and isinstance(arg, list) and len(arg) == 1 and not isinstance(arg[0], _RX):
                    out.append((k, arg[0]))
                elif op == "$all" and isinstance(arg, list):
                    for x in arg:
                        if not isinstance(x, _RX) and not (isinstance(x, dict) and "$elemMatch" in x):
                            out.append((k, x))
        elif isinstance(v, _RX):
            continue
        else:
            out.append((k, v))


def upsert_seed(query: Any, only_id: bool = False) -> dict:
    """The document an upsert starts from: the equality fields of the filter (manual "Upsert with Operator
    Expressions"), dotted paths as embedded documents, in path order (the server keeps them in a sorted map),
    ``_id`` first; error 54 when two of them collide. ``only_id``: a replacement upsert takes only ``_id``."""
    eqs: list = []
    _equalities(query, eqs)
    if only_id:
        eqs = [(p, v) for p, v in eqs if p == "_id"]
    seed: dict = {}
    seen: list[tuple[str, tuple]] = []
    for path, v in sorted(eqs, key=lambda e: e[0]):
        parts = tuple(path.split("."))
        for other, oparts in seen:
            n = min(len(parts), len(oparts))
            if parts[:n] == oparts[:n]:
                if parts == oparts:
                    raise update_error("cannot infer query fields to set, path '%s' is matched twice" % path, 54)
                a, b = (other, path) if len(oparts) < len(parts) else (path, other)
                raise update_error("cannot infer query fields to set, both paths '%s' and '%s' are matched"
                                   % (a, b), 54)
        seen.append((path, parts))
        cur = seed
        for p in parts[:-1]:
            cur = cur.setdefault(p, {})
        cur[parts[-1]] = _copy(v)
    if "_id" in seed:
        check_id_value(seed["_id"])
        seed = id_first(seed)
    return seed


def upsert_document(query: Any, update: Any, array_filters: Any = None,
                    pipeline: Callable[[dict], dict] | None = None, compiled: Update | None = None) -> dict:
    """The new document of an upsert that matched nothing (``_id`` not yet generated when the filter and the
    update give none). ``pipeline``: applies an update pipeline to a document; ``compiled``: the parsed
    operator update, when the caller has it."""
    seed = upsert_seed(query, only_id=pipeline is None and not is_operator_update(update))
    if pipeline is not None:
        new = pipeline(seed)
        if "_id" in seed and "_id" not in new:
            new = {"_id": seed["_id"], **new}
    elif is_operator_update(update):
        u = compiled if compiled is not None else Update(update, array_filters)
        new = seed
        u.apply(new, None, inserting=True)
        if "_id" in seed:
            check_id_unchanged(seed, new, update)
    else:  # validated as an insert (manual "Dollar-Prefixed Field Names"): only the _id below
        new = {k: _copy(v) for k, v in update.items()}
        if "_id" not in new and "_id" in seed:
            new = {"_id": seed["_id"], **new}
        elif "_id" in new and "_id" in seed and not bson_equal(new["_id"], seed["_id"]):
            raise update_error("After applying the update, the (immutable) field '_id' was found to have been "
                               "altered to %s" % fmt_elem("_id", new["_id"]), 66)
    if "_id" in new:
        check_id_value(new["_id"])
    return id_first(new)
