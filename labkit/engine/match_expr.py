"""``$expr`` in a query: aggregation expressions evaluated against a document, with ``let`` variables.

The boolean and comparison layer (``$and $or $not $eq $ne $gt $gte $lt $lte $cmp $in $ifNull $cond``),
field paths, ``$$`` variables and ``$literal`` are evaluated here with the server's aggregation rules
(manual "Expression Operators"; comparison order of ``values.compare`` with missing below null, so
``{$eq: ["$nope", null]}`` is false and ``{$lt: ["$nope", null]}`` true); any other operator is evaluated
by mongomock's expression evaluator on the already-substituted arguments, missing fields given as null.
No field lookup ever raises KeyError.
"""
from __future__ import annotations

import datetime
from typing import Any, Callable

from mongomock import OperationFailure

from . import values as V
from .values import MISSING


def _fail(msg: str, code: int = 2) -> OperationFailure:
    return OperationFailure(msg, code, {"ok": 0.0, "errmsg": msg, "code": code})


def truthy(v: Any) -> bool:
    """Aggregation truthiness: false, null, missing, undefined and numeric zero are false."""
    if v is None or v is MISSING or v is False or isinstance(v, V.Undefined):
        return False
    if V.is_number(v) and not isinstance(v, bool):
        x = V.num_value(v)
        return not (x == 0)
    return True


def field_path(doc: Any, path: str) -> Any:
    """``"$a.b"`` in aggregation: arrays on the way map to arrays of the values found (missing dropped)."""
    cur = doc
    for i, p in enumerate(path.split(".")):
        if type(cur) is dict or isinstance(cur, dict):
            cur = cur.get(p, MISSING)
            if cur is MISSING:
                return MISSING
        elif type(cur) is list:
            rest = ".".join(path.split(".")[i:])
            out = []
            for e in cur:
                if type(e) is dict or type(e) is list:
                    x = field_path(e, rest)
                    if x is not MISSING:
                        out.append(x)
            return out
        else:
            return MISSING
    return cur


def _agg_rank(v: Any) -> int:
    if v is MISSING:
        return V.T_UNDEF
    return V.canonical_type(v)


def agg_compare(a: Any, b: Any, str_key: Callable | None = None) -> int:
    ra, rb = _agg_rank(a), _agg_rank(b)
    if ra != rb:
        return -1 if ra < rb else 1
    if ra == V.T_UNDEF:
        return 0
    return V.compare(a, b, str_key)


class Evaluator:
    """Evaluates one expression tree against documents."""

    def __init__(self, variables: dict | None, str_key: Callable | None) -> None:
        self.vars = dict(variables or {})
        self.str_key = str_key

    def ev(self, e: Any, doc: Any) -> Any:
        t = type(e)
        if t is str:
            if e.startswith("$$"):
                return self._var(e[2:], doc)
            if e.startswith("$"):
                return field_path(doc, e[1:])
            return e
        if t is list:
            return [None if x is MISSING else x for x in (self.ev(y, doc) for y in e)]
        if t is dict:
            if not e:
                return {}
            k = next(iter(e))
            if isinstance(k, str) and k.startswith("$"):
                if len(e) != 1:
                    raise _fail("an expression specification must contain exactly one field, the name of the "
                                "expression. Found %d fields in %r" % (len(e), e), 15983)
                return self._op(k, e[k], doc)
            out = {}
            for kk, vv in e.items():
                x = self.ev(vv, doc)
                if x is not MISSING:
                    out[kk] = x
            return out
        return e

    def _var(self, name: str, doc: Any) -> Any:
        base, _, rest = name.partition(".")
        if base in ("ROOT", "CURRENT"):
            v = doc
        elif base == "REMOVE":
            return MISSING
        elif base == "NOW":
            v = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
        elif base in self.vars:
            v = self.vars[base]
        else:
            raise _fail("Use of undefined variable: %s" % base, 17276)
        return field_path(v, rest) if rest else v

    def _args(self, arg: Any, doc: Any) -> list:
        if type(arg) is list:
            return [self.ev(x, doc) for x in arg]
        return [self.ev(arg, doc)]

    def _op(self, op: str, arg: Any, doc: Any) -> Any:
        if op == "$literal":
            return arg
        if op == "$and":
            return all(truthy(self.ev(x, doc)) for x in (arg if type(arg) is list else [arg]))
        if op == "$or":
            return any(truthy(self.ev(x, doc)) for x in (arg if type(arg) is list else [arg]))
        if op == "$not":
            a = arg[0] if type(arg) is list and len(arg) == 1 else arg
            if type(arg) is list and len(arg) != 1:
                raise _fail("Expression $not takes exactly 1 arguments. %d were passed in." % len(arg), 16020)
            return not truthy(self.ev(a, doc))
        if op in ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$cmp"):
            if type(arg) is not list or len(arg) != 2:
                n = len(arg) if type(arg) is list else 1
                raise _fail("Expression %s takes exactly 2 arguments. %d were passed in." % (op, n), 16020)
            c = agg_compare(self.ev(arg[0], doc), self.ev(arg[1], doc), self.str_key)
            return {"$eq": c == 0, "$ne": c != 0, "$gt": c > 0, "$gte": c >= 0, "$lt": c < 0,
                    "$lte": c <= 0, "$cmp": c}[op]
        if op == "$in":
            if type(arg) is not list or len(arg) != 2:
                raise _fail("Expression $in takes exactly 2 arguments. %d were passed in."
                            % (len(arg) if type(arg) is list else 1), 16020)
            x = self.ev(arg[0], doc)
            arr = self.ev(arg[1], doc)
            if type(arr) is not list:
                raise _fail("$in requires an array as a second argument, found: %s"
                            % ("missing" if arr is MISSING else V.type_name(arr)), 40081)
            return any(agg_compare(x, y, self.str_key) == 0 for y in arr)
        if op == "$ifNull":
            if type(arg) is not list or len(arg) < 2:
                raise _fail("$ifNull needs at least two arguments, had: %d"
                            % (len(arg) if type(arg) is list else 1), 1257300)
            for x in arg[:-1]:
                v = self.ev(x, doc)
                if v is not None and v is not MISSING and not isinstance(v, V.Undefined):
                    return v
            return self.ev(arg[-1], doc)
        if op == "$cond":
            if type(arg) is list:
                if len(arg) != 3:
                    raise _fail("Expression $cond takes exactly 3 arguments. %d were passed in." % len(arg), 16020)
                c, t, f = arg
            elif isinstance(arg, dict):
                c, t, f = arg.get("if"), arg.get("then"), arg.get("else")
            else:
                raise _fail("Expression $cond takes exactly 3 arguments. 1 were passed in.", 16020)
            return self.ev(t, doc) if truthy(self.ev(c, doc)) else self.ev(f, doc)
        return self._delegate(op, arg, doc)

    def _delegate(self, op: str, arg: Any, doc: Any) -> Any:
        from mongomock import aggregate as mm_aggregate

        def lit(v: Any) -> Any:
            return {"$literal": None if v is MISSING else v}
        if type(arg) is list:
            sub: Any = [lit(self.ev(x, doc)) for x in arg]
        elif isinstance(arg, dict) and not any(isinstance(k, str) and k.startswith("$") for k in arg):
            # named-argument operators ($dateToString, $regexMatch, $map...): keep their shape
            sub = _subst_vars(arg, self.vars, doc)
        else:
            sub = lit(self.ev(arg, doc))
        try:
            return mm_aggregate._parse_expression({op: sub}, doc, ignore_missing_keys=True)
        except OperationFailure:
            raise
        except NotImplementedError as e:
            raise _fail("Expression %s (%s) is not supported on the embedded engine; use a real server "
                        "(set MONGODB_URI)" % (op, e), 115) from None
        except KeyError:
            return None
        except (TypeError, ValueError, AttributeError, ZeroDivisionError, IndexError) as e:
            raise _fail("Failed to evaluate %s: %s" % (op, e)) from None


def _subst_vars(obj: Any, vars_: dict, doc: Any) -> Any:
    if isinstance(obj, str) and obj.startswith("$$"):
        name, _, rest = obj[2:].partition(".")
        if name in vars_:
            v = vars_[name]
            v = field_path(v, rest) if rest else v
            return {"$literal": None if v is MISSING else v}
        return obj
    if isinstance(obj, dict):
        return {k: _subst_vars(v, vars_, doc) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_subst_vars(v, vars_, doc) for v in obj]
    return obj


def evaluate(expr: Any, doc: Any, variables: dict | None = None, str_key: Callable | None = None) -> Any:
    """The value of aggregation expression ``expr`` for ``doc`` (MISSING when it is a missing field)."""
    return Evaluator(variables, str_key).ev(expr, doc)


def let_variables(let: Any) -> dict | None:
    """The values of a command's ``let`` document: names checked as the server's user variable names
    (16870 / 16871), each value a constant expression evaluated once (``$$NOW`` allowed)."""
    if let is None:
        return None
    if not isinstance(let, dict):
        raise TypeError("let must be an instance of dict, bson.son.SON, or any other type that inherits from "
                        "collections.Mapping")
    out = {}
    for name, expr in let.items():
        name = str(name)
        if name in ("NOW", "CLUSTER_TIME", "IS_MR", "JS_SCOPE", "USER_ROLES"):  # variables.cpp validateVariable
            raise _fail("Attempt to set internal constant: %s" % name, 4738901)
        if _reads_fields(expr):
            raise _fail("Command let Expression tried to access a field, but this is not allowed because Command "
                        "let Expressions run before the query examines any documents.", 4890500)
        if not name or not (name[0].islower() or ord(name[0]) > 127):
            raise _fail("'%s' starts with an invalid character for a user variable name" % name, 16870)
        if any(not (ch.isalnum() or ch == "_" or ord(ch) > 127) for ch in name):
            raise _fail("'%s' contains an invalid character for a variable name: '%s'"
                        % (name, next(ch for ch in name if not (ch.isalnum() or ch == "_" or ord(ch) > 127))),
                        16871)
        v = Evaluator(out, None).ev(expr, {})
        out[name] = None if v is MISSING else v
    return out


def _reads_fields(expr: Any) -> bool:
    """Whether a ``let`` value reads the document (a field path or ``$$ROOT`` / ``$$CURRENT``)."""
    if isinstance(expr, str):
        return expr.startswith("$") and (not expr.startswith("$$") or expr[2:].split(".")[0] in ("ROOT", "CURRENT"))
    if isinstance(expr, list):
        return any(_reads_fields(x) for x in expr)
    if isinstance(expr, dict):
        if len(expr) == 1 and next(iter(expr)) == "$literal":
            return False
        return any(_reads_fields(v) for v in expr.values())
    return False


def compile_expr_predicate(expr: Any, variables: dict | None, str_key: Callable | None) -> Callable[[Any], bool]:
    """The ``$expr`` query operator: the expression's truthiness per document."""
    ev = Evaluator(variables, str_key)
    if isinstance(expr, dict) and len(expr) > 1 and any(str(k).startswith("$") for k in expr):
        raise _fail("an expression specification must contain exactly one field, the name of the expression. "
                    "Found %d fields in %r" % (len(expr), expr), 15983)
    slow = lambda doc: truthy(ev.ev(expr, doc))  # noqa: E731
    return _field_eq_const(expr, slow) if str_key is None else slow


_EXACT_EQ_TYPES = (str, int)


def _field_eq_const(expr: Any, slow: Callable[[Any], bool]) -> Callable[[Any], bool]:
    """``{$eq: ["$field", constant]}`` (a ``$lookup`` sub-pipeline's join condition once ``$$var`` is
    substituted): when the document's value has exactly the constant's type (a string or a plain int, where
    BSON equality is Python's ``==``) the answer is ``==``; every other case takes ``slow``."""
    if not isinstance(expr, dict) or len(expr) != 1 or "$eq" not in expr:
        return slow
    args = expr["$eq"]
    if not isinstance(args, list) or len(args) != 2:
        return slow
    a, b = args
    if isinstance(b, str) and b.startswith("$") and not b.startswith("$$"):
        a, b = b, a
    if type(b) is dict and len(b) == 1 and "$literal" in b:
        b = b["$literal"]
    elif type(b) is str and b.startswith("$"):
        return slow
    if type(a) is not str or not a.startswith("$") or a.startswith("$$") or "." in a or type(b) not in _EXACT_EQ_TYPES:
        return slow
    name, tb = a[1:], type(b)

    def eq(doc: Any) -> bool:
        x = doc.get(name, MISSING) if type(doc) is dict else MISSING
        if type(x) is tb:
            return x == b
        return slow(doc)
    return eq
