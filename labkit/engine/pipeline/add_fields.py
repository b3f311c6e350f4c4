"""The ``$addFields`` / ``$set`` and ``$replaceRoot`` / ``$replaceWith`` stages, with the server's rules.

``$addFields`` (manual "$addFields", "$set (aggregation)"; the server's ``ProjectionNode::applyExpressions``):

- each field is set to the value of its expression, evaluated against the whole input document
  (``$$ROOT``); an existing field keeps its position, a new one is appended; a value that is missing
  (``"$nope"``, ``"$$REMOVE"``) removes the field;
- a dotted name ``"a.b"`` and a nested object ``{a: {b: ...}}`` (keys without ``$``) are the same spec: they
  add ``b`` into the embedded document ``a`` (manual "Adding Fields to an Embedded Document"); through an
  array the spec applies to every element (nested arrays too); a non-document value on the way (or a missing
  one) is replaced by a document holding only the computed fields;
- a field name may not start with ``$`` (16410) nor be empty (40352); two specs for the same path collide
  (31250); an empty object ``{}`` is the value ``{}``.

``$replaceRoot`` / ``$replaceWith`` (manual pages of those names): the new root must evaluate to a document,
else 40228.

Expressions are compiled by the caller's ``compile_expr`` (aggregation's, the same evaluator ``$project`` uses);
a compiled expression raises ``KeyError`` for a missing value.
"""
from __future__ import annotations

from typing import Any, Callable

from pymongo.errors import OperationFailure

from ..bson.values import MISSING

_EXPR = "expr"


def _fail(msg: str, code: int) -> OperationFailure:
    return OperationFailure(msg, code, {"ok": 0.0, "errmsg": msg, "code": code})


def _is_nested_spec(v: Any) -> bool:
    return isinstance(v, dict) and bool(v) and not any(isinstance(k, str) and k.startswith("$") for k in v)


def _parse(spec: dict, stage: str, compile_expr: Callable, prefix: str = "") -> dict:
    """The spec as a tree: name -> (``"expr"``, expression) or a sub-tree."""
    tree: dict[str, Any] = {}
    for key, value in spec.items():
        if not isinstance(key, str) or key == "":
            raise _fail("Invalid %s :: caused by :: FieldPath cannot be constructed with empty string" % stage,
                        40352)
        parts = key.split(".")
        for p in parts:
            if p == "":
                raise _fail("Invalid %s :: caused by :: FieldPath field names may not be empty strings." % stage,
                            15998)
            if p.startswith("$"):
                raise _fail("Invalid %s :: caused by :: FieldPath field names may not start with '$'. Consider "
                            "using $getField or $setField." % stage, 16410)
        node = tree
        for i, p in enumerate(parts[:-1]):
            child = node.get(p)
            if child is None:
                child = node[p] = {}
            elif isinstance(child, tuple):
                raise _fail("Invalid %s :: caused by :: Path collision at %s" % (stage, prefix + ".".join(
                    parts[:i + 1])), 31250)
            node = child
        last = parts[-1]
        full = prefix + key
        if _is_nested_spec(value):
            sub = _parse(value, stage, compile_expr, full + ".")
            have = node.get(last)
            if isinstance(have, tuple):
                raise _fail("Invalid %s :: caused by :: Path collision at %s" % (stage, full), 31250)
            if have is None:
                node[last] = sub
            else:
                _merge(have, sub, stage, full)
        else:
            if last in node:
                raise _fail("Invalid %s :: caused by :: Path collision at %s" % (stage, full), 31250)
            node[last] = (_EXPR, _compiled(value, compile_expr))
    return tree


def _compiled(expr: Any, compile_expr: Callable) -> Callable[[dict], Any]:
    """``expr`` as a function of the root document; MISSING for a missing value."""
    if expr == "$$REMOVE":
        return lambda root: MISSING
    f = compile_expr(expr)

    def value(root: dict) -> Any:
        try:
            return f(root)
        except KeyError:
            return MISSING
    return value


def _merge(into: dict, sub: dict, stage: str, path: str) -> None:
    for k, v in sub.items():
        if k not in into:
            into[k] = v
        elif isinstance(into[k], dict) and isinstance(v, dict):
            _merge(into[k], v, stage, path + "." + k)
        else:
            raise _fail("Invalid %s :: caused by :: Path collision at %s.%s" % (stage, path, k), 31250)


def _apply(tree: dict, doc: dict, root: dict) -> dict:
    out = dict(doc)
    for name, node in tree.items():
        if isinstance(node, tuple):
            v = node[1](root)
            if v is MISSING:
                out.pop(name, None)
            else:
                out[name] = v
        else:
            out[name] = _apply_value(node, out.get(name, MISSING), root)
    return out


def _apply_value(tree: dict, value: Any, root: dict) -> Any:
    if isinstance(value, list):
        return [_apply_value(tree, x, root) for x in value]
    # a scalar or missing value becomes a document of the computed fields
    return _apply(tree, value if isinstance(value, dict) else {}, root)


def add_fields_stage(name: str, arg: Any, docs: list[dict],
                     compile_expr: Callable[[Any], Callable[[dict], Any]]) -> list[dict]:
    """``$addFields`` / ``$set`` over ``docs`` (read-only: changed levels are new dicts)."""
    if not isinstance(arg, dict):
        raise _fail("%s specification stage must be an object, got %s" % (name, _kind(arg)), 40272)
    tree = _parse(arg, name, compile_expr)
    return [_apply(tree, d, d) for d in docs]


def replace_root_stage(name: str, arg: Any, docs: list[dict],
                       compile_expr: Callable[[Any], Callable[[dict], Any]]) -> list[dict]:
    """``$replaceRoot: {newRoot: expr}`` / ``$replaceWith: expr``: each document replaced by the expression's
    document value (40228 otherwise)."""
    if name == "$replaceRoot":
        if not isinstance(arg, dict):
            raise _fail("$replaceRoot stage requires an object, got %s" % _kind(arg), 40228)
        for k in arg:
            if k != "newRoot":
                raise _fail("unrecognized option to $replaceRoot stage: %s, only valid option is 'newRoot'." % k,
                            40415)
        if "newRoot" not in arg:
            raise _fail("no newRoot specified for the $replaceRoot stage", 40231)
        expr = arg["newRoot"]
    else:
        expr = arg
    f = _compiled(expr, compile_expr)
    out = []
    for d in docs:
        v = f(d)
        if not isinstance(v, dict):
            from ..bson.values import type_name
            shown = "MISSING" if v is MISSING else repr(v)
            raise _fail("'newRoot' expression must evaluate to an object, but resulting value was: %s. Type of "
                        "resulting value: '%s'. Input document: %s"
                        % (shown, "missing" if v is MISSING else type_name(v), _short(d)), 40228)
        out.append(v)
    return out


def _kind(v: Any) -> str:
    from ..bson.values import type_name
    return type_name(v)


def _short(d: dict) -> str:
    s = repr(d)
    return s if len(s) <= 200 else s[:197] + "..."
