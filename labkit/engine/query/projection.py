"""find() projections with the server's rules (the engine's own; no mongomock).

Sources: the manual "Project Fields to Return from Query" and "Projection" (find command) pages, the
``$``, ``$elemMatch`` and ``$slice`` projection operator pages, and ``jstests/core/query/projection/``.

Rules modelled: a projection is an inclusion or an exclusion (``_id`` may be excluded from an inclusion or
included in an exclusion); mixing fails with 31254 ("Cannot do exclusion on field b in inclusion projection")
or 31253 ("Cannot do inclusion on field a in exclusion projection"); computed fields (expressions and
literals) make it an inclusion (31252 / 31310 in an exclusion); ``{a: 1, "a.b": 1}`` fails with 31249 and
``{"a.b": 1, a: 1}`` with 31250 (path collisions); dotted paths traverse arrays (an inclusion keeps only the
embedded documents of an array, an exclusion keeps everything else); ``{"a.$": 1}`` keeps the array element the
query matched (51246 when none, 31277 when the query does not name the array); ``$elemMatch`` (top-level fields
only, 31275); ``$slice`` as a number or ``[skip, limit]`` (31272/31257/31258/31259/31273); ``$meta`` is refused
(no text or search scores on the embedded engine). Included fields keep the stored order; computed fields are
appended in projection order.
"""
from __future__ import annotations

from typing import Any, Callable

from pymongo.errors import OperationFailure

from ..matcher.match import fast_matcher
from ..pipeline.expression.match_expr import NOT_MODELLED, OPERATORS
from ..update.update_ops import MISSING, fmt_elem, matched_index, type_name, with_value

_INCL = True
_EXCL = False


def _num(v: Any) -> bool:
    return type(v) is not bool and type(v).__name__ in ("int", "float", "Int64", "Decimal128")


class _Slice:
    __slots__ = ("skip", "limit")

    def __init__(self, skip: int | None, limit: int) -> None:
        self.skip, self.limit = skip, limit

    def apply(self, v: Any) -> Any:
        if not isinstance(v, list):
            return v
        if self.skip is None:
            n = self.limit
            return v[:n] if n >= 0 else v[n:]
        start = self.skip if self.skip >= 0 else max(0, len(v) + self.skip)
        return v[start:start + self.limit]


class _ElemMatch:
    __slots__ = ("field", "match")

    def __init__(self, field: str, cond: dict) -> None:
        self.field = field
        self.match = fast_matcher({field: {"$elemMatch": cond}})

    def apply(self, v: Any) -> Any:
        if not isinstance(v, list):
            return MISSING
        for e in v:
            if self.match({self.field: [e]}):
                return [e]
        return MISSING


class _Expr:
    __slots__ = ("expr", "fn")

    def __init__(self, expr: Any, fn: Callable[[dict], Any]) -> None:
        self.expr, self.fn = expr, fn


class _Positional:
    __slots__ = ("parts",)

    def __init__(self, parts: tuple) -> None:
        self.parts = parts


def _int(v: Any) -> int:
    try:
        return int(v.to_decimal()) if type(v).__name__ == "Decimal128" else int(v)
    except (OverflowError, ValueError):
        return 0


def _add(root: dict, parts: list[str], node: Any) -> None:
    cur = root
    full = ".".join(parts)
    for i, p in enumerate(parts[:-1]):
        child = cur.get(p)
        if child is None:
            child = cur[p] = {}
        elif not isinstance(child, dict):
            raise OperationFailure("Path collision at %s remaining portion %s" % (full, ".".join(parts[i + 1:])),
                                   31249)
        cur = child
    if parts[-1] in cur:
        raise OperationFailure("Path collision at %s" % full, 31250)
    cur[parts[-1]] = node


class Projection:
    """A parsed find projection; ``apply(doc)`` gives the projected copy."""

    def __init__(self, spec: dict, query: Any = None,
                 compile_expr: Callable[[Any], Callable[[dict], Any]] | None = None, find: bool = True,
                 stage: str = "$project") -> None:
        """``find``: the find command's projection (positional ``$``, ``$elemMatch`` and the find form of
        ``$slice`` allowed); False: an aggregation ``$project`` (errors prefixed "Invalid $project")."""
        self.find = find
        try:
            self._parse(spec, query, compile_expr)
        except OperationFailure as e:
            if find or e.code == 115:
                raise
            msg = e.details.get("errmsg", str(e)) if isinstance(e.details, dict) else str(e)
            raise OperationFailure("Invalid %s :: caused by :: %s" % (stage, msg), e.code) from None

    def _parse(self, spec: dict, query: Any, compile_expr: Any) -> None:
        if not self.find and not spec:
            raise OperationFailure("projection specification must have at least one field", 51272)
        self.tree: dict = {}
        self.query = query
        self.kind: bool | None = None  # _INCL / _EXCL
        self.positional: _Positional | None = None
        has_slice = has_elem = False
        id_in = id_out = False
        self._compile = compile_expr
        for key, val in spec.items():
            if not isinstance(key, str) or key == "" or "" in key.split("."):
                raise OperationFailure("FieldPath field names may not be empty strings.", 15998)
            pos = key.endswith(".$") or ".$." in key or key == "$"
            if pos and not self.find:
                raise OperationFailure("Cannot use positional projection in aggregation projection", 31324)
            is_top_id = key == "_id"
            if isinstance(val, dict):
                if pos:
                    raise OperationFailure("positional projection cannot be used with an expression or sub object",
                                           31271)
                _check_field_path(key)
                kind = self._sub(key.split("."), val)
                if kind == "slice":
                    has_slice = True
                elif kind == "elem":
                    has_elem = True
            elif type(val) is bool or _num(val):
                truthy = bool(val) if not type(val).__name__ == "Decimal128" else val.to_decimal() != 0
                kind = _INCL if truthy else _EXCL
                if truthy and pos:
                    self._positional(key)
                else:
                    _check_field_path(key)  # "a.$": 0 included: no positional exclusion
                    _add(self.tree, key.split("."), kind)
                if not is_top_id:
                    self._set_kind(kind, key)
                elif truthy:
                    id_in = True
                else:
                    id_out = True
            else:
                if pos:
                    raise OperationFailure("positional projection cannot be used with a literal", 31308)
                _check_field_path(key)
                if self.kind is _EXCL:
                    raise OperationFailure("Cannot use an expression %s in an exclusion projection"
                                           % fmt_elem(key, val), 31310)
                _add(self.tree, key.split("."), self._expr(val))
                self.kind = _INCL
        if self.kind is None:
            if has_slice:
                self.kind = _INCL if id_in else _EXCL
            elif has_elem:
                self.kind = _INCL
            else:
                self.kind = _INCL if id_in else _EXCL
        if self.kind is _INCL and "_id" not in self.tree:
            self.tree["_id"] = _INCL
        if self.kind is _EXCL and self.tree.get("_id") is _INCL:
            del self.tree["_id"]

    # -- parsing ----------------------------------------------------------------------------------------
    def _set_kind(self, kind: bool, key: str) -> None:
        if self.kind is None or self.kind is kind:
            self.kind = kind
            return
        if kind is _INCL:
            raise OperationFailure("Cannot do inclusion on field %s in exclusion projection" % key, 31253)
        raise OperationFailure("Cannot do exclusion on field %s in inclusion projection" % key, 31254)

    def _expr(self, val: Any) -> _Expr:
        if self._compile is None:
            return _Expr(val, lambda doc, _v=val: _v)
        return _Expr(val, self._compile(val))

    def _sub(self, parts: list[str], val: dict) -> str:
        first = next(iter(val), None)
        if len(val) == 1 and isinstance(first, str) and first.startswith("$"):
            arg = val[first]
            if first == "$elemMatch" and not self.find:
                raise OperationFailure("Cannot use $elemMatch in this context", 168)
            if first == "$slice" and not self.find or first == "$slice" and isinstance(arg, list) and not (
                    len(arg) == 2 and _num(arg[0]) and _num(arg[1])) and not all(_num(x) for x in arg):
                pass  # the $slice expression (aggregation, or a find $slice that is not the find form)
            elif first == "$slice":
                if _num(arg):
                    _add(self.tree, parts, _Slice(None, _int(arg)))
                elif isinstance(arg, list):
                    if len(arg) != 2:
                        raise OperationFailure("$slice array argument should be of form [skip, limit]", 31272)
                    if not _num(arg[0]):
                        raise OperationFailure("$slice expects the skip argument to be a number, got %s"
                                               % type_name(arg[0]), 31257)
                    if not _num(arg[1]):
                        raise OperationFailure("$slice expects the limit argument to be a number, got %s"
                                               % type_name(arg[1]), 31258)
                    if _int(arg[1]) <= 0:
                        raise OperationFailure("$slice limit must be positive, got %d" % _int(arg[1]), 31259)
                    _add(self.tree, parts, _Slice(_int(arg[0]), _int(arg[1])))
                else:
                    raise OperationFailure("$slice only supports numbers and [skip, limit] arrays", 31273)
                return "slice"
            if first == "$elemMatch":
                if not isinstance(arg, dict):
                    raise OperationFailure("elemMatch: Invalid argument, object required, but got %s"
                                           % type_name(arg), 31274)
                if self.positional is not None:
                    raise OperationFailure("Cannot specify positional operator and $elemMatch.", 31255)
                if len(parts) != 1:
                    raise OperationFailure("Cannot use $elemMatch projection on a nested field.", 31275)
                _add(self.tree, parts, _ElemMatch(parts[0], arg))
                return "elem"
            if first == "$meta":
                from ..base.errors import unsupported
                raise unsupported("$meta projections (text and search scores)")
            if first not in OPERATORS and first not in NOT_MODELLED:
                # projection_parser.cpp: a {$name: ...} that names no expression and is no field path
                raise OperationFailure("Unknown expression %s" % first, 31325)
            if self.kind is _EXCL:
                raise OperationFailure("Cannot use expression other than $meta in exclusion projection", 31252)
            _add(self.tree, parts, self._expr(val))
            self.kind = _INCL
            return "expr"
        if not val:
            raise OperationFailure("An empty sub-projection is not a valid value. Found empty object at path",
                                   51270)
        kind = "tree"
        for k, v in val.items():
            sub = dict({k: v})
            key = ".".join(parts) + "." + k
            if any(c[:1] == "$" and c != "$" for c in k.split(".")):
                _check_field_path(k)  # a sub-projection's field is a FieldPath too ("$" alone is positional)
            if isinstance(v, dict):
                self._sub(key.split("."), v)
            elif type(v) is bool or _num(v):
                if v:
                    _add(self.tree, key.split("."), _INCL)
                    self._set_kind(_INCL, k)
                else:
                    _check_field_path(key)  # "a.$": 0 included: no positional exclusion
                    _add(self.tree, key.split("."), _EXCL)
                    self._set_kind(_EXCL, k)
            else:
                if self.kind is _EXCL:
                    raise OperationFailure("Cannot use an expression %s in an exclusion projection"
                                           % fmt_elem(k, v), 31310)
                _add(self.tree, key.split("."), self._expr(v))
                self.kind = _INCL
            del sub
        return kind

    def _positional(self, key: str) -> None:
        if self.positional is not None:
            raise OperationFailure("Cannot specify more than one positional projection per query.", 31276)
        if any(isinstance(v, _ElemMatch) for v in self.tree.values()):
            raise OperationFailure("Cannot specify positional operator and $elemMatch.", 31256)
        if key.endswith(".$."):
            raise OperationFailure("Path cannot end with '.$.'", 31270)
        i = key.find(".$.")
        base, rest = (key[:i], key[i + 3:]) if i >= 0 else (key[:-2], "")
        if rest == "$" or rest.endswith(".$") or ".$." in rest or key.count(".$") > 1:
            raise OperationFailure("Cannot use positional operator twice: %s" % key, 31287)
        top = base.split(".")[0]
        if not self.query or not _mentions(self.query, top):
            raise OperationFailure("Positional projection '%s' does not match the query document." % key, 31277)
        self.positional = _Positional(tuple(base.split(".")))
        _add(self.tree, base.split("."), _INCL)

    # -- application ------------------------------------------------------------------------------------
    def apply(self, doc: dict) -> dict:
        """The projected copy of a stored document."""
        if self.positional is not None:
            doc = self._apply_positional(doc)
        if self.kind is _INCL:
            return _include(doc, self.tree, doc)
        return _exclude(doc, self.tree, doc)

    def _apply_positional(self, doc: dict) -> dict:
        parts = self.positional.parts
        # the first array on the path is the one the positional operator trims
        cur: Any = doc
        for n, p in enumerate(parts):
            if not isinstance(cur, dict) or p not in cur:
                return doc
            cur = cur[p]
            if isinstance(cur, list):
                idx = matched_index(self.query, doc, tuple(parts[:n + 1]))
                if idx is None:
                    raise OperationFailure("Executor error during find command :: caused by :: positional "
                                           "operator '.$' couldn't find a matching element in the array", 51246)
                return with_value(doc, parts[:n + 1], [cur[idx]])
        return doc


def _mentions(query: Any, top: str) -> bool:
    if not isinstance(query, dict):
        return False
    for k, v in query.items():
        if k in ("$and", "$or", "$nor") and isinstance(v, list):
            if any(_mentions(x, top) for x in v):
                return True
        elif isinstance(k, str) and not k.startswith("$") and k.split(".")[0] == top:
            return True
    return False


def _copy(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _copy(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_copy(x) for x in v]
    return v


def _include(d: dict, tree: dict, root: dict) -> dict:
    """An inclusion level: included fields in the stored order, then computed fields (in place when the
    field was already output, else appended in projection order; ``projection_semantics.js``)."""
    out: dict = {}
    for k, v in d.items():
        node = tree.get(k)
        if node is None or isinstance(node, _Expr):
            continue
        if node is _INCL:
            out[k] = _copy(v)
        elif isinstance(node, dict):
            r = _include_value(v, node, root)
            if r is not MISSING:
                out[k] = r
        elif isinstance(node, (_Slice, _ElemMatch)):
            r = node.apply(v)
            if r is not MISSING:
                out[k] = _copy(r)
    for k, node in tree.items():
        if isinstance(node, _Expr):
            try:
                val = node.fn(root)
            except KeyError:  # a missing value (the engine's evaluator: a missing field, $$REMOVE...): no field
                val = MISSING
            if val is MISSING:
                out.pop(k, None)
            else:
                out[k] = val
        elif isinstance(node, dict) and k not in d and _has_expr(node):
            out[k] = _include({}, node, root)
    return out


def _has_expr(tree: dict) -> bool:
    return any(isinstance(n, _Expr) or (isinstance(n, dict) and _has_expr(n)) for n in tree.values())


def _include_value(v: Any, tree: dict, root: dict) -> Any:
    """A value under an inclusion sub-tree: documents projected, arrays element by element (scalars dropped,
    or overwritten by documents when the sub-tree computes fields), a scalar dropped (or overwritten)."""
    if isinstance(v, dict):
        return _include(v, tree, root)
    computes = _has_expr(tree)
    if isinstance(v, list):
        return [_include_value(e, tree, root) for e in v if computes or isinstance(e, (dict, list))]
    return _include({}, tree, root) if computes else MISSING


def _exclude(d: dict, tree: dict, root: dict) -> dict:
    out: dict = {}
    for k, v in d.items():
        node = tree.get(k)
        if node is None:
            out[k] = _copy(v)
        elif node is _EXCL:
            continue
        elif isinstance(node, dict):
            out[k] = _exclude_value(v, node, root)
        elif isinstance(node, (_Slice, _ElemMatch)):
            r = node.apply(v)
            if r is not MISSING:
                out[k] = _copy(r)
        else:
            out[k] = _copy(v)
    return out


def _exclude_value(v: Any, tree: dict, root: dict) -> Any:
    if isinstance(v, list):
        return [_exclude_value(e, tree, root) for e in v]
    return _exclude(v, tree, root) if isinstance(v, dict) else _copy(v)


def project(doc: dict, spec: Any, query: Any = None,
            compile_expr: Callable[[Any], Callable[[dict], Any]] | None = None) -> dict:
    """One document through a find projection (``spec`` None: a copy)."""
    if spec is None:
        return _copy(doc)
    return Projection(spec, query, compile_expr).apply(doc)


def project_stage(name: str, arg: Any, docs: list[dict],
                  compile_expr: Callable[[Any], Callable[[dict], Any]] | None = None) -> list[dict]:
    """The aggregation stages ``$project`` and ``$unset`` (``$unset: "a"`` / ``["a", "b.c"]`` is an exclusion)."""
    if name == "$unset":
        fields = [arg] if isinstance(arg, str) else arg
        if not isinstance(fields, list):  # document_source_project.cpp
            raise OperationFailure("$unset specification must be a string or an array", 31002)
        if not fields:
            raise OperationFailure("$unset specification must be a string or an array with at least one field",
                                   31119)
        if not all(isinstance(f, str) for f in fields):
            raise OperationFailure("$unset specification must be a string or an array containing only string "
                                   "values", 31120)
        spec: Any = {f: 0 for f in fields}
    else:
        spec = arg
        if not isinstance(spec, dict):
            raise OperationFailure("$project specification must be an object", 15969)
    p = Projection(spec, None, compile_expr, find=False, stage=name)
    return [p.apply(d) for d in docs]


def _check_field_path(key: str) -> None:
    """A projected field's name as the server's FieldPath checks it (query/projection_parser.cpp builds a
    FieldPath for every inclusion, exclusion, literal and sub-object): no component may start with '$'."""
    for part in key.split("."):
        if part[:1] == "$":
            raise OperationFailure("FieldPath field names may not start with '$'. Consider using $getField or "
                                   "$setField.", 16410)
