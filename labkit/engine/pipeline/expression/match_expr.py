"""The engine's aggregation expression evaluator: ``$expr`` in queries, and every expression of a pipeline
(``$project`` / ``$addFields`` / ``$group`` keys / update pipelines, through ``aggregation._compile_expr``).

This module holds the Evaluator (field paths, ``$$`` variables, expression objects, array literals) and the
boolean, comparison, conditional, variable and object operators; the other families live in ``expr_arith``,
``expr_string``, ``expr_array``, ``expr_date`` and ``expr_type`` and are registered in ``OPERATORS``. The rules are
the server's (manual "Expression Operators", src/mongo/db/pipeline/expression.cpp): comparison in BSON order
with missing below null (``{$eq: ["$nope", null]}`` is false, ``{$lt: ["$nope", null]}`` true); null and missing
operands give null for most operators; wrong argument counts and types fail with the server's codes. No
expression is handed to mongomock; JavaScript (``$function``, ``$accumulator``) is refused with 115. No field
lookup ever raises KeyError.
"""
from __future__ import annotations

import datetime
import random
from typing import Any, Callable

import bson
from bson import Timestamp
from mongomock import OperationFailure

from . import expr_arith, expr_array, expr_date, expr_string, expr_type, expressions
from .expr_base import (agg_compare, eval_args, fail, field_path, is_document, named_args, nullish, operands, tname,
                        truthy, typed_operands)
from ...bson.values import MISSING

__all__ = ["Evaluator", "evaluate", "let_variables", "compile_expr_predicate", "truthy", "field_path",
           "agg_compare", "MISSING", "OPERATORS"]


def _fail(msg: str, code: int = 2) -> OperationFailure:
    return fail(msg, code)


# Valid on MongoDB 8.0 but not evaluated by the embedded engine: a clear refusal (115), never a wrong answer.
NOT_MODELLED = frozenset(("$function", "$accumulator", "$meta", "$toHashedIndexKey", "$internalJsEmit",
                          "$_internalJsEmit", "$createObjectId", "$encStrStartsWith", "$encStrEndsWith",
                          "$encStrContains", "$encStrNormalizedEq", "$testApiVersion"))
# window-only operators and accumulators that are not expressions: the server does not know them here either
_NOT_EXPRESSIONS = frozenset(("$push", "$addToSet", "$count", "$top", "$topN", "$bottom", "$bottomN", "$rank",
                              "$denseRank", "$documentNumber", "$shift", "$expMovingAvg", "$derivative",
                              "$integral", "$covariancePop", "$covarianceSamp", "$locf", "$linearFill",
                              "$where", "$sampleRate", "$stdDev"))


class Evaluator:
    """Evaluates expression trees against documents; ``vars`` are the visible ``$$`` variables."""

    __slots__ = ("vars", "str_key", "_now")

    def __init__(self, variables: dict | None, str_key: Callable | None) -> None:
        self.vars = dict(variables or {})
        self.str_key = str_key
        self._now: list = []

    def scoped(self, names: dict) -> "Evaluator":
        """A child evaluator that also sees ``names`` (``$let``, ``$map`` / ``$filter`` ``as``, ``$reduce``)."""
        child = Evaluator.__new__(Evaluator)
        child.vars = {**self.vars, **names}
        child.str_key = self.str_key
        child._now = self._now
        return child

    def ev(self, e: Any, doc: Any) -> Any:
        """The value of expression ``e`` for ``doc`` (MISSING for a missing field)."""
        t = type(e)
        if t is str:
            if e.startswith("$$"):
                return self._var(e[2:], doc)
            if e.startswith("$"):
                if len(e) == 1:
                    raise fail("'$' by itself is not a valid FieldPath", 16872)
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
                    raise fail("an expression specification must contain exactly one field, the name of the "
                               "expression. Found %d fields in %r" % (len(e), e), 15983)
                return self._op(k, e[k], doc)
            out = {}
            for kk, vv in e.items():
                x = self.ev(vv, doc)
                if x is not MISSING:
                    out[kk] = x
            return out
        return e

    def now(self) -> datetime.datetime:
        """``$$NOW``: one value for the whole evaluation (millisecond precision, as BSON dates)."""
        if not self._now:
            n = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
            self._now.append(n.replace(microsecond=n.microsecond // 1000 * 1000))
        return self._now[0]

    def _var(self, name: str, doc: Any) -> Any:
        base, _, rest = name.partition(".")
        if base in self.vars:
            v = self.vars[base]
        elif base in ("ROOT", "CURRENT"):
            v = doc
        elif base == "REMOVE":
            return MISSING
        elif base == "NOW":
            v = self.now()
        elif base == "CLUSTER_TIME":
            v = Timestamp(int(self.now().replace(tzinfo=datetime.timezone.utc).timestamp()), 1)
        else:
            raise fail("Use of undefined variable: %s" % base, 17276)
        return field_path(v, rest) if rest else v

    def _op(self, op: str, arg: Any, doc: Any) -> Any:
        fn = OPERATORS.get(op)
        if fn is not None:
            try:
                return fn(self, op, arg, doc)
            except (TypeError, ValueError, OverflowError, ArithmeticError, IndexError, KeyError,
                    AttributeError, RecursionError) as e:  # never a bare Python error to the learner
                raise fail("Failed to evaluate %s: %s" % (op, e), 2) from None
        if op in NOT_MODELLED:
            from ...base.errors import not_modelled
            raise fail(not_modelled("Expression %s" % op), 115)
        raise fail("Unrecognized expression '%s'" % op, 168)


# ------------------------------------------------------------------------------------------ core operators
def _op_literal(ev: Evaluator, op: str, arg: Any, doc: Any) -> Any:
    return arg


def _op_and_or(ev: Evaluator, op: str, arg: Any, doc: Any) -> bool:
    items = arg if type(arg) is list else [arg]
    if op == "$and":
        return all(truthy(ev.ev(x, doc)) for x in items)
    return any(truthy(ev.ev(x, doc)) for x in items)


def _op_not(ev: Evaluator, op: str, arg: Any, doc: Any) -> bool:
    (v,) = eval_args(ev, op, arg, doc, 1)
    return not truthy(v)


_CMP = {"$eq": lambda c: c == 0, "$ne": lambda c: c != 0, "$gt": lambda c: c > 0, "$gte": lambda c: c >= 0,
        "$lt": lambda c: c < 0, "$lte": lambda c: c <= 0}


def _op_compare(ev: Evaluator, op: str, arg: Any, doc: Any) -> Any:
    a, b = eval_args(ev, op, arg, doc, 2)
    c = agg_compare(a, b, ev.str_key)
    if op == "$cmp":
        return -1 if c < 0 else (1 if c > 0 else 0)
    return _CMP[op](c)


def _op_in(ev: Evaluator, op: str, arg: Any, doc: Any) -> bool:
    x, arr = eval_args(ev, op, arg, doc, 2)
    if type(arr) is not list:
        raise fail("$in requires an array as a second argument, found: %s" % tname(arr), 40081)
    return any(agg_compare(x, y, ev.str_key) == 0 for y in arr)


def _op_if_null(ev: Evaluator, op: str, arg: Any, doc: Any) -> Any:
    if type(arg) is not list or len(arg) < 2:
        raise fail("$ifNull needs at least two arguments, had: %d" % (len(arg) if type(arg) is list else 1), 1257300)
    for x in arg[:-1]:
        v = ev.ev(x, doc)
        if not nullish(v):
            return v
    return ev.ev(arg[-1], doc)


def _op_cond(ev: Evaluator, op: str, arg: Any, doc: Any) -> Any:
    if isinstance(arg, dict):
        missing = "Missing '%(key)s' parameter to $cond"
        named_args(arg, ("if", "then", "else"), None, ("Unrecognized parameter to $cond: %(key)s", 17083),
                   {"if": (missing, 17080), "then": (missing, 17081), "else": (missing, 17082)})
        c, t, f = arg["if"], arg["then"], arg["else"]
    else:
        c, t, f = operands(op, arg, 3)
    return ev.ev(t, doc) if truthy(ev.ev(c, doc)) else ev.ev(f, doc)


def _op_switch(ev: Evaluator, op: str, arg: Any, doc: Any) -> Any:
    named_args(arg, ("branches", "default"), ("$switch requires an object as an argument, found: %(type)s", 40060),
               ("$switch found an unknown argument: %(key)s", 40067))
    branches = arg.get("branches", [])
    if type(branches) is not list:
        raise fail("$switch expected an array for 'branches', found: %s" % tname(branches), 40061)
    for b in branches:
        named_args(b, ("case", "then"), ("$switch expected each branch to be an object, found: %(type)s", 40062),
                   ("$switch found an unknown argument to a branch: %(key)s", 40063),
                   {"case": ("$switch requires each branch have a 'case' expression", 40064),
                    "then": ("$switch requires each branch have a 'then' expression.", 40065)})
    if not branches:
        raise fail("$switch requires at least one branch.", 40068)
    for b in branches:
        if truthy(ev.ev(b["case"], doc)):
            return ev.ev(b["then"], doc)
    if "default" not in arg:
        raise fail("$switch could not find a matching branch for an input, and no default was specified.", 40066)
    return ev.ev(arg["default"], doc)


def check_variable_name(name: str) -> None:
    """A user variable name as the server checks it (16866 empty, 16870 first character, 16871 others)."""
    if not name:
        raise fail("empty variable names are not allowed", 16866)
    if not (name[0].islower() or ord(name[0]) > 127):
        raise fail("'%s' starts with an invalid character for a user variable name" % name, 16870)
    for ch in name:
        if not (ch.isalnum() or ch == "_" or ord(ch) > 127):
            raise fail("'%s' contains an invalid character for a variable name: '%s'" % (name, ch), 16871)


def _op_let(ev: Evaluator, op: str, arg: Any, doc: Any) -> Any:
    missing = "Missing '%(key)s' parameter to $let"
    named_args(arg, ("vars", "in"), ("$let only supports an object as its argument", 16874),
               ("Unrecognized parameter to $let: %(key)s", 16875), {"vars": (missing, 16876), "in": (missing, 16877)})
    if not isinstance(arg["vars"], dict):
        raise fail("invalid parameter: expected an object (vars)", 10065)
    bound = {}
    for name, e in arg["vars"].items():
        check_variable_name(name)
        v = ev.ev(e, doc)
        bound[name] = MISSING if v is MISSING else v
    return ev.scoped(bound).ev(arg["in"], doc)


def _op_merge_objects(ev: Evaluator, op: str, arg: Any, doc: Any) -> dict:
    out: dict = {}
    for v in eval_args(ev, op, arg, doc, 0, None):
        if nullish(v):
            continue
        if not isinstance(v, dict):
            raise fail("$mergeObjects requires object inputs, but input %s is of type %s" % (_show(v), tname(v)),
                       40400)
        out.update(v)
    return out


def _show(v: Any) -> str:
    if isinstance(v, str):
        return '"%s"' % v
    return repr(v)


def _op_field(ev: Evaluator, op: str, arg: Any, doc: Any) -> Any:
    evaluate = lambda e: ev.ev(e, doc)  # noqa: E731
    if op == "$getField":
        return expressions.get_field(evaluate, doc, arg)
    out = expressions.set_field(evaluate, arg, unset=op == "$unsetField")
    return out


def _op_bson_size(ev: Evaluator, op: str, arg: Any, doc: Any) -> Any:
    vals = typed_operands(ev, op, arg, doc, is_document, "$bsonSize requires a document input, found: %(type)s", 31393,
                          1, -1)
    return None if vals is None else len(bson.encode(vals[0]))


def _op_binary_size(ev: Evaluator, op: str, arg: Any, doc: Any) -> Any:
    (v,) = eval_args(ev, op, arg, doc, 1)
    if nullish(v):
        return None
    if isinstance(v, str):
        return len(v.encode("utf-8"))
    if isinstance(v, (bytes, bson.Binary)):
        return len(bytes(v))
    raise fail("$binarySize requires a string or BinData argument, found: %s" % tname(v), 51276)


def _op_rand(ev: Evaluator, op: str, arg: Any, doc: Any) -> float:
    if arg not in ({}, []):
        raise fail("$rand does not currently accept arguments", 3040500)
    return random.random()


def _op_ts(ev: Evaluator, op: str, arg: Any, doc: Any) -> Any:
    (v,) = eval_args(ev, op, arg, doc, 1)
    if nullish(v):
        return None
    if not isinstance(v, Timestamp):
        raise fail("Argument to %s must be a timestamp, but is %s" % (op, tname(v)), 5687301 if op == "$tsSecond"
                   else 5687302)
    return bson.Int64(v.time if op == "$tsSecond" else v.inc)


def _op_bits(ev: Evaluator, op: str, arg: Any, doc: Any) -> Any:
    from .expr_base import make_int, num_kind
    if op == "$bitNot":
        (v,) = eval_args(ev, op, arg, doc, 1)
        vals = [v]
    else:
        vals = eval_args(ev, op, arg, doc, 0, None)
    kind = 0
    for v in vals:
        if nullish(v):
            return None
        if num_kind(v) not in (0, 1):
            raise fail("%s only supports int and long operands." % op, 28765)
        kind = max(kind, num_kind(v))
    if op == "$bitNot":
        return make_int(~int(vals[0]), kind)
    acc = {"$bitAnd": -1, "$bitOr": 0, "$bitXor": 0}[op]
    for v in vals:
        x = int(v)
        acc = acc & x if op == "$bitAnd" else (acc | x if op == "$bitOr" else acc ^ x)
    return make_int(acc, kind)


def _op_trig(ev: Evaluator, op: str, arg: Any, doc: Any) -> Any:
    import math

    from .expr_base import dec128, num_kind, to_dec, to_float
    if op == "$atan2":
        y, x = eval_args(ev, op, arg, doc, 2)
        if nullish(y) or nullish(x):
            return None
        for v in (y, x):
            if num_kind(v) < 0:
                raise fail("$atan2 only supports numeric types, not %s" % tname(v), 51044)
        r = math.atan2(to_float(y), to_float(x))
        return dec128(to_dec(r)) if 3 in (num_kind(y), num_kind(x)) else r
    (v,) = eval_args(ev, op, arg, doc, 1)
    if nullish(v):
        return None
    if num_kind(v) < 0:
        raise fail("%s only supports numeric types, not %s" % (op, tname(v)), 28765)
    x = to_float(v)
    fns = {"$sin": math.sin, "$cos": math.cos, "$tan": math.tan, "$asin": math.asin, "$acos": math.acos,
           "$atan": math.atan, "$sinh": math.sinh, "$cosh": math.cosh, "$tanh": math.tanh, "$asinh": math.asinh,
           "$acosh": math.acosh, "$atanh": math.atanh, "$degreesToRadians": math.radians,
           "$radiansToDegrees": math.degrees}
    try:
        r = fns[op](x)
    except (ValueError, OverflowError):
        if x != x:
            return x
        raise fail("cannot apply %s to %s, value must be in the function's domain" % (op, x), 50989) from None
    return dec128(to_dec(r)) if num_kind(v) == 3 else r


OPERATORS: dict[str, Callable[[Evaluator, str, Any, Any], Any]] = {
    "$literal": _op_literal, "$const": _op_literal,
    "$and": _op_and_or, "$or": _op_and_or, "$not": _op_not,
    "$eq": _op_compare, "$ne": _op_compare, "$gt": _op_compare, "$gte": _op_compare, "$lt": _op_compare,
    "$lte": _op_compare, "$cmp": _op_compare, "$in": _op_in,
    "$ifNull": _op_if_null, "$cond": _op_cond, "$switch": _op_switch, "$let": _op_let,
    "$mergeObjects": _op_merge_objects, "$getField": _op_field, "$setField": _op_field, "$unsetField": _op_field,
    "$bsonSize": _op_bson_size, "$binarySize": _op_binary_size, "$rand": _op_rand,
    "$tsSecond": _op_ts, "$tsIncrement": _op_ts,
    "$bitAnd": _op_bits, "$bitOr": _op_bits, "$bitXor": _op_bits, "$bitNot": _op_bits,
}
OPERATORS.update({op: _op_trig for op in ("$sin", "$cos", "$tan", "$asin", "$acos", "$atan", "$atan2", "$sinh",
                                          "$cosh", "$tanh", "$asinh", "$acosh", "$atanh", "$degreesToRadians",
                                          "$radiansToDegrees")})
for _family in (expr_arith, expr_string, expr_array, expr_date, expr_type):
    OPERATORS.update(_family.OPS)


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
