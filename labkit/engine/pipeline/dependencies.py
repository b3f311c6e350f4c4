"""Which document fields a pipeline reads: the server's dependency analysis (src/mongo/db/pipeline/
dependencies.cpp ``DepsTracker``, each stage's ``getDependencies``) and the projection the aggregate pushes
into the query layer with it (pipeline_d.cpp ``buildProjectionForPushdown``).

After the leading ``$match`` / ``$sort`` / ``$skip`` / ``$limit`` go to the query layer, the stages left are
walked in order: a ``$match``, ``$sort``, ``$unwind``, ``$addFields``/``$set`` or ``$lookup`` adds the fields it
reads and lets the analysis go on (``$unset`` and ``$unionWith`` read none); an inclusion ``$project``,
``$group``, ``$count``, ``$sortByCount`` or ``$replaceRoot`` adds what it reads and ends it (its output is new
documents); any other stage (the analysis follows no more), an expression reading ``$$ROOT``, or reaching the
end of the pipeline means the whole document is needed. Then (``buildProjectionForPushdown``):

1. an inclusion ``$project`` first among the stages left is pushed down as it is and leaves the pipeline
   (with computed fields only when no sort, skip or limit was pushed down);
2. else a finite set of fields becomes the projection ``{<fields in order>: 1, _id: 0|1}``
   (``DepsTracker::toProjectionWithoutMetadata``);
3. else an exclusion ``$project`` (or ``$unset``) first among the stages left is pushed down and leaves it;
4. else nothing is pushed.

With that projection the planner can answer the query from an index alone (PROJECTION_COVERED, no document
fetched: MongoDB's jstests/aggregation/use_query_projection.js). A pipeline that needs no field at all is a
count (``needs_no_fields`` in aggregation.py) and gets no projection.
"""
from __future__ import annotations

from typing import Any

_ENDS = ("$group", "$count", "$sortByCount", "$replaceRoot", "$replaceWith")
# operators whose string argument names a field of $$CURRENT without a "$" (the whole document is read)
_READS_CURRENT = ("$getField",)


class Pushdown:
    """The projection an aggregate hands to the query layer: ``spec`` the planner plans with (a covered plan
    needs an inclusion of indexed fields), ``shown`` the ``transformBy`` explain prints, ``absorbs`` whether the
    first stage left (the ``$project``) leaves the pipeline."""

    def __init__(self, spec: dict, shown: dict, absorbs: bool) -> None:
        self.spec = spec
        self.shown = shown
        self.absorbs = absorbs


def expr_fields(expr: Any, out: list[str]) -> bool:
    """Add the fields an aggregation expression reads to ``out``; False when it reads the whole document
    (``$$ROOT`` / ``$$CURRENT``, ``$getField``)."""
    if isinstance(expr, str):
        if expr.startswith("$$"):
            head, _, rest = expr[2:].partition(".")
            if head in ("ROOT", "CURRENT"):
                if not rest:
                    return False
                out.append(rest)
            return True
        if expr.startswith("$") and len(expr) > 1:
            out.append(expr[1:])
        return True
    if isinstance(expr, dict):
        for k, v in expr.items():
            if k == "$literal":
                continue
            if k in _READS_CURRENT:
                return False
            if not expr_fields(v, out):
                return False
        return True
    if isinstance(expr, list):
        return all(expr_fields(x, out) for x in expr)
    return True


def _match_fields(filt: Any, out: list[str]) -> bool:
    """The fields a ``$match`` filter reads (its top-level paths, inside ``$and``/``$or``/``$nor``, and
    ``$expr``); False for an operator the analysis does not follow."""
    if not isinstance(filt, dict):
        return False
    for k, v in filt.items():
        if k in ("$and", "$or", "$nor"):
            if not isinstance(v, list) or not all(_match_fields(x, out) for x in v):
                return False
        elif k == "$expr":
            if not expr_fields(v, out):
                return False
        elif k == "$comment":
            continue
        elif k.startswith("$"):
            return False
        else:
            out.append(k)
    return True


def _is_expression(v: Any) -> bool:
    return not (isinstance(v, bool) or isinstance(v, (int, float)) or type(v).__name__ in ("Int64", "Decimal128"))


def _truthy(v: Any) -> bool:
    return bool(v.to_decimal()) if type(v).__name__ == "Decimal128" else bool(v)


def _walk_project(spec: dict, prefix: str, incl: list[str], excl: list[str], exprs: list[tuple[str, Any]]) -> bool:
    """Sort a ``$project`` spec into included paths, excluded paths and computed fields; False if malformed."""
    for k, v in spec.items():
        if not isinstance(k, str) or not k:
            return False
        path = prefix + k
        if isinstance(v, dict) and v and not any(str(x).startswith("$") for x in v):
            if not _walk_project(v, path + ".", incl, excl, exprs):
                return False
        elif _is_expression(v):
            exprs.append((path, v))
        elif _truthy(v):
            incl.append(path)
        else:
            excl.append(path)
    return True


def _project_kind(spec: Any) -> tuple[str, list[str], list[str], list[tuple[str, Any]]] | None:
    """("inclusion" | "exclusion", included, excluded, computed) of an aggregation ``$project``; None if it is
    not one the analysis understands (the stage itself raises the server's error when it runs)."""
    if not isinstance(spec, dict) or not spec:
        return None
    incl: list[str] = []
    excl: list[str] = []
    exprs: list[tuple[str, Any]] = []
    if not _walk_project(spec, "", incl, excl, exprs):
        return None
    non_id_excl = [p for p in excl if p != "_id"]
    if non_id_excl:
        return ("exclusion", incl, excl, exprs) if not exprs and not [p for p in incl if p != "_id"] else None
    if [p for p in incl if p != "_id"] or exprs or "_id" in incl:
        return "inclusion", incl, excl, exprs
    return "exclusion", incl, excl, exprs  # {_id: 0}


def _serialize(kind: str, incl: list[str], excl: list[str], exprs: list[tuple[str, Any]]) -> dict:
    """The projection as the server serializes it (projection_node.cpp ``ProjectionNode::serialize``): ``_id``
    first, then the fields in order as booleans, sub-objects nested, computed fields after."""
    out: dict = {}
    if kind == "inclusion":
        if "_id" in excl:
            out["_id"] = False
        elif not any(p == "_id" for p, _ in exprs):
            out["_id"] = True
        leaves = [p for p in incl if p != "_id"]
        val = True
    else:
        if "_id" in excl:
            out["_id"] = False
        leaves = [p for p in excl if p != "_id"]
        val = False
    for p in leaves:
        node = out
        parts = p.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = val
    for p, e in exprs:
        node = out
        parts = p.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = e if isinstance(e, (dict, list)) or (isinstance(e, str) and e.startswith("$")) \
            else {"$const": e}
    return out


def _stage_fields(name: str, arg: Any, out: list[str]) -> str:
    """Add what one stage reads to ``out``: "next" (go on), "end" (the stage's output is new documents) or
    "all" (the whole document is needed)."""
    if name == "$match":
        return "next" if _match_fields(arg, out) else "all"
    if name == "$sort":
        if not isinstance(arg, dict) or any(isinstance(v, dict) for v in arg.values()):
            return "all"
        out.extend(arg)
        return "next"
    if name in ("$skip", "$limit"):
        return "next"
    if name == "$unwind":
        path = arg if isinstance(arg, str) else arg.get("path") if isinstance(arg, dict) else None
        if not isinstance(path, str) or not path.startswith("$"):
            return "all"
        out.append(path[1:])
        return "next"
    if name in ("$addFields", "$set"):
        return "next" if isinstance(arg, dict) and expr_fields(list(arg.values()), out) else "all"
    if name in ("$unset", "$unionWith"):
        return "next"  # document_source_union_with.cpp getDependencies: SEE_NEXT (its fields are its own)
    if name == "$lookup":
        if not isinstance(arg, dict):
            return "all"
        if isinstance(arg.get("localField"), str):
            out.append(arg["localField"])
        return "next" if expr_fields(list((arg.get("let") or {}).values()), out) else "all"
    if name == "$project":
        parsed = _project_kind(arg)
        if parsed is None:
            return "all"
        kind, incl, _, exprs = parsed
        if kind == "exclusion":
            return "next"
        out.extend(incl)
        if "_id" not in incl and "_id" not in (parsed[2]):
            out.append("_id")
        return "end" if expr_fields([e for _, e in exprs], out) else "all"
    if name == "$group":
        if not isinstance(arg, dict):
            return "all"
        for k, v in arg.items():
            if isinstance(v, dict):
                for acc in v.values():
                    if isinstance(acc, dict) and isinstance(acc.get("sortBy"), dict):
                        out.extend(acc["sortBy"])
            if not expr_fields(v, out):
                return "all"
        return "end"
    if name == "$count":
        return "end"
    if name == "$sortByCount":
        return "end" if expr_fields(arg, out) else "all"
    if name in ("$replaceRoot", "$replaceWith"):
        root = arg.get("newRoot") if name == "$replaceRoot" and isinstance(arg, dict) else arg
        return "end" if expr_fields(root, out) else "all"
    return "all"


def needed_fields(stages: list) -> list[str] | None:
    """The fields the stages read, or None when they need the whole document (``needWholeDocument``)."""
    out: list[str] = []
    for st in stages:
        if not isinstance(st, dict) or len(st) != 1:
            return None
        (name, arg), = st.items()
        step = _stage_fields(name, arg, out)
        if step == "all":
            return None
        if step == "end":
            return out
    return None


def deps_projection(fields: list[str]) -> dict:
    """``DepsTracker::toProjectionWithoutMetadata``: the fields in lexicographic order, a field under one
    already listed left out, then ``_id: 1`` when ``_id`` (or a part of it) is read, else ``_id: 0``."""
    spec: dict = {}
    need_id = False
    last = ""
    for f in sorted(set(fields)):
        if f == "_id" or f.startswith("_id."):
            need_id = True
            continue
        if last and f.startswith(last):
            continue
        last = f + "."
        spec[f] = 1
    spec["_id"] = 1 if need_id else 0
    return spec


def projection_for_pushdown(stages: list, allow_expressions: bool) -> Pushdown | None:
    """pipeline_d.cpp ``buildProjectionForPushdown`` for the stages left after the query layer took the
    ``$match``/``$sort``/``$skip``/``$limit`` prefix (``allow_expressions``: none of those but ``$match``)."""
    if not stages or not isinstance(stages[0], dict) or len(stages[0]) != 1:
        return None
    (name, arg), = stages[0].items()
    front = None
    if name == "$project":
        front = _project_kind(arg)
    elif name == "$unset":
        fields = [arg] if isinstance(arg, str) else arg
        if isinstance(fields, list) and fields and all(isinstance(f, str) and f for f in fields):
            front = ("exclusion", [], list(fields), [])
    if front is not None and front[0] == "inclusion" and (allow_expressions or not front[3]):
        return Pushdown(dict(arg), _serialize(*front), True)
    fields = needed_fields(stages)
    if fields:
        spec = deps_projection(fields)
        return Pushdown(spec, dict(spec), False)
    if front is not None and front[0] == "exclusion":
        spec = dict(arg) if name == "$project" else {f: 0 for f in front[2]}
        return Pushdown(spec, _serialize(*front), True)
    return None
