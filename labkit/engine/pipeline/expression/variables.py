"""``$$name`` variables in pipelines: binding a command's ``let`` values and finding undefined variables.

A pipeline (``aggregate``, ``Database.aggregate``, an update pipeline, a ``$lookup`` sub-pipeline) is walked once
before it runs, with the server's scoping rules (manual "Variables in Aggregation Expressions", "$let", "$map",
"$filter", "$reduce", "$lookup", "$merge"; jstests/core/command_let_variables.js):

- a variable of the command's ``let`` is visible in every stage and every sub-pipeline (``$lookup``,
  ``$unionWith``, ``$facet``) unless an inner scope defines the same name (``$let`` ``vars``, ``$map`` /
  ``$filter`` ``as`` (default ``this``), ``$reduce``'s ``this`` / ``value``, ``$lookup`` ``let``, ``$merge``
  ``let`` (default ``new``));
- a reference to a name that no scope defines and that is not a system variable fails with 17276
  "Use of undefined variable: <name>" (variables.cpp ``VariablesParseState::getVariable``);
- in ``$match`` only ``$expr`` holds expressions: ``{a: "$$x"}`` there is the string ``"$$x"``.

Bound values are written into the pipeline as ``{$literal: <value>}`` so every evaluator downstream (the engine's
matcher, its stages, the expression evaluator) sees a constant.
"""
from __future__ import annotations

from typing import Any

from mongomock import OperationFailure

from .match_expr import field_path
from ...bson.values import MISSING

# System variables (variables.cpp kBuiltinVarNameToId, manual "Variables in Aggregation Expressions").
SYSTEM_VARIABLES = frozenset(("ROOT", "CURRENT", "REMOVE", "NOW", "CLUSTER_TIME", "DESCEND", "PRUNE", "KEEP",
                              "SEARCH_META", "SEARCH_SCORE", "USER_ROLES", "IS_MR", "JS_SCOPE"))
UNDEFINED_VARIABLE = 17276


def _undefined(name: str) -> OperationFailure:
    msg = "Use of undefined variable: %s" % name
    return OperationFailure(msg, UNDEFINED_VARIABLE, {"ok": 0.0, "errmsg": msg, "code": UNDEFINED_VARIABLE,
                                                       "codeName": "Location17276"})


class _Binder:
    """One walk over a pipeline: ``values`` are the bound variables, ``check`` raises 17276 for unknown ones."""

    def __init__(self, values: dict, check: bool) -> None:
        self.values = values
        self.check = check

    # ---------------------------------------------------------------- expressions
    def expr(self, e: Any, scope: frozenset) -> Any:
        t = type(e)
        if t is str:
            if not e.startswith("$$"):
                return e
            base, _, rest = e[2:].partition(".")
            if base in scope or base in SYSTEM_VARIABLES:
                return e
            if base in self.values:
                v = self.values[base]
                if rest:
                    v = field_path(v, rest)
                return {"$literal": None if v is MISSING else v}
            if self.check:
                raise _undefined(base)
            return e
        if t is list:
            return [self.expr(x, scope) for x in e]
        if isinstance(e, dict):
            if len(e) == 1:
                (op, arg), = e.items()
                if op == "$literal":
                    return e
                if op in _SCOPED and isinstance(arg, dict):
                    return {op: _SCOPED[op](self, arg, scope)}
            return {k: self.expr(v, scope) for k, v in e.items()}
        return e

    def _let(self, arg: dict, scope: frozenset) -> dict:
        out = dict(arg)
        names = arg.get("vars")
        if isinstance(names, dict):
            out["vars"] = {k: self.expr(v, scope) for k, v in names.items()}
            scope = scope | frozenset(str(k) for k in names)
        if "in" in arg:
            out["in"] = self.expr(arg["in"], scope)
        return out

    def _iterating(self, arg: dict, scope: frozenset, bodies: tuple[str, ...]) -> dict:
        out = {}
        inner = scope | frozenset((arg.get("as") if isinstance(arg.get("as"), str) else "this",))
        for k, v in arg.items():
            out[k] = self.expr(v, inner if k in bodies else scope)
        return out

    def _reduce(self, arg: dict, scope: frozenset) -> dict:
        inner = scope | frozenset(("this", "value"))
        return {k: self.expr(v, inner if k == "in" else scope) for k, v in arg.items()}

    # ---------------------------------------------------------------- queries and stages
    def query(self, q: Any, scope: frozenset) -> Any:
        """A ``$match`` filter: only ``$expr`` (also under ``$and``/``$or``/``$nor``) holds expressions."""
        if not isinstance(q, dict):
            return q
        out = {}
        for k, v in q.items():
            if k == "$expr":
                out[k] = self.expr(v, scope)
            elif k in ("$and", "$or", "$nor") and isinstance(v, list):
                out[k] = [self.query(x, scope) for x in v]
            else:
                out[k] = v
        return out

    def pipeline(self, stages: Any, scope: frozenset) -> Any:
        if not isinstance(stages, list):
            return stages
        return [self.stage(st, scope) for st in stages]

    def stage(self, st: Any, scope: frozenset) -> Any:
        if not isinstance(st, dict) or len(st) != 1:
            return st  # the stage parser reports the malformed stage
        (name, arg), = st.items()
        if name in _LITERAL_STAGES:
            return st
        if name == "$match":
            return {name: self.query(arg, scope)}
        if name in ("$lookup", "$merge") and isinstance(arg, dict):
            out = dict(arg)
            let = arg.get("let")
            if isinstance(let, dict):
                out["let"] = {k: self.expr(v, scope) for k, v in let.items()}
                inner = scope | frozenset(str(k) for k in let)
            else:
                inner = scope | (frozenset(("new",)) if name == "$merge" else frozenset())
            key = "pipeline" if name == "$lookup" else "whenMatched"
            if isinstance(arg.get(key), list):
                out[key] = self.pipeline(arg[key], inner)
            return {name: out}
        if name == "$unionWith" and isinstance(arg, dict):
            out = dict(arg)
            if isinstance(arg.get("pipeline"), list):
                out["pipeline"] = self.pipeline(arg["pipeline"], scope)
            return {name: out}
        if name == "$facet" and isinstance(arg, dict):
            return {name: {k: self.pipeline(v, scope) for k, v in arg.items()}}
        if name == "$graphLookup" and isinstance(arg, dict):
            out = dict(arg)
            if "startWith" in arg:
                out["startWith"] = self.expr(arg["startWith"], scope)
            if "restrictSearchWithMatch" in arg:
                out["restrictSearchWithMatch"] = self.query(arg["restrictSearchWithMatch"], scope)
            return {name: out}
        if name == "$setWindowFields" and isinstance(arg, dict):
            return {name: {k: (v if k == "sortBy" else self.expr(v, scope)) for k, v in arg.items()}}
        return {name: self.expr(arg, scope)}


_SCOPED = {
    "$let": _Binder._let,
    "$map": lambda b, arg, scope: b._iterating(arg, scope, ("in",)),
    "$filter": lambda b, arg, scope: b._iterating(arg, scope, ("cond",)),
    "$reduce": _Binder._reduce,
}
# Stages whose arguments hold no expressions (paths, sort orders, names, sizes).
_LITERAL_STAGES = frozenset(("$sort", "$limit", "$skip", "$unwind", "$count", "$sample", "$out", "$unset",
                             "$indexStats", "$collStats", "$planCacheStats", "$listSessions", "$currentOp"))


def bind_pipeline(pipeline: list, variables: dict | None, check: bool = True) -> list:
    """``pipeline`` with the ``variables`` (a command's evaluated ``let``) written in as literals; with ``check``,
    a reference to a variable no scope defines fails with 17276 as on the server."""
    return _Binder(variables or {}, check).pipeline(pipeline, frozenset())


def bind_expression(expr: Any, variables: dict | None, check: bool = True) -> Any:
    """One expression with ``variables`` written in (``$documents``' argument, a ``let`` value)."""
    return _Binder(variables or {}, check).expr(expr, frozenset())
