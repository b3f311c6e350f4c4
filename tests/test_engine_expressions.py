"""The embedded engine's own aggregation expression evaluator (issue 13): values, null/missing rules and error
codes of MongoDB 8.0's expression operators, evaluated end to end through ``$project`` (``aggregation.
_compile_expr``), ``$expr`` in queries and update pipelines -- and never by mongomock.

Each group names its source: the manual page of the operator and/or the server's jstest
(jstests/aggregation/expressions/*.js) or src/mongo/db/pipeline/expression.cpp.
"""
from __future__ import annotations

import datetime
import math

import mongomock
import pytest
from bson import Decimal128, Int64, ObjectId, Regex, Timestamp
from pymongo.errors import OperationFailure

from labkit.engine import EmbeddedClient
from labkit.engine.pipeline.expression.match_expr import OPERATORS, evaluate
from labkit.engine.bson.values import MISSING

D = datetime.datetime


class ReachedMongomock(BaseException):
    """Raised if an expression is handed to mongomock (nothing in the engine catches a BaseException)."""


@pytest.fixture(autouse=True)
def no_mongomock_expressions(monkeypatch):
    """No expression evaluation may reach mongomock's parser during these tests."""
    from mongomock import aggregate as mm

    def refuse(*a, **k):
        raise ReachedMongomock("an expression reached mongomock")
    monkeypatch.setattr(mm, "_parse_expression", refuse)
    monkeypatch.setattr(mm._Parser, "parse", refuse)


@pytest.fixture(scope="module")
def coll():
    return EmbeddedClient().exprdb.c


def run(coll, expr, doc=None):
    """The value of ``expr`` for ``doc`` through a ``$project`` stage (MISSING when the field is absent)."""
    coll.delete_many({})
    coll.insert_one(dict(doc or {}, _id=1))
    out = list(coll.aggregate([{"$project": {"_id": 0, "r": expr}}]))
    return out[0].get("r", MISSING)


def code(coll, expr, doc=None):
    with pytest.raises(OperationFailure) as e:
        run(coll, expr, doc)
    return e.value.code


def test_the_guard_itself_works():
    # the fixture's monkeypatch really is what mongomock's pipeline code calls
    with pytest.raises(ReachedMongomock):
        mongomock.aggregate._parse_expression({"$add": [1, 2]}, {})


# ------------------------------------------------------------------ issue 13's measured cases
def test_issue_13_cases(coll):
    # manual $toLower/$toUpper: "If the argument resolves to null, $toLower returns an empty string"
    assert run(coll, {"$toLower": "$missing"}) == ""
    assert run(coll, {"$toUpper": "$missing"}) == ""
    assert run(coll, {"$toUpper": ["aBc"]}) == "ABC"
    # manual $dateToString, $$NOW (manual "Variables in Aggregation Expressions")
    assert run(coll, {"$dateToString": {"date": "$$NOW", "format": "%Y"}}) == str(datetime.datetime.utcnow().year)
    # manual $trim / $ltrim / $rtrim (default: whitespace incl. NUL and non-breaking space)
    assert run(coll, {"$trim": {"input": "\u00a0 \tab c\n\x00"}}) == "ab c"
    assert run(coll, {"$ltrim": {"input": "xxaxx", "chars": "x"}}) == "axx"
    assert run(coll, {"$rtrim": {"input": "xxaxx", "chars": "x"}}) == "xxa"
    # manual $sortArray
    assert run(coll, {"$sortArray": {"input": [3, 1, 2], "sortBy": 1}}) == [1, 2, 3]
    assert run(coll, {"$substrCP": ["caf\u00e9s", 3, 2]}) == "\u00e9s"


# ------------------------------------------------------------------ arithmetic
def test_arithmetic_type_promotion_and_overflow(coll):
    # jstests/aggregation/expressions/arith_overflow.js: int overflow -> long, long overflow -> double
    r = run(coll, {"$add": [2147483647, 1]})
    assert r == 2147483648 and isinstance(r, Int64)
    r = run(coll, {"$multiply": [Int64(2 ** 62), 4]})
    assert isinstance(r, float) and r == float(2 ** 64)
    assert type(run(coll, {"$add": [1, 2]})) is int
    assert isinstance(run(coll, {"$add": [Int64(1), 2]}), Int64)
    assert run(coll, {"$add": [1, 2.5]}) == 3.5
    # decimal is the widest type
    assert run(coll, {"$add": [Decimal128("1.1"), 1]}) == Decimal128("2.1")
    # manual $divide: always a double; $mod keeps the dividend's sign (expression_mod.js)
    assert run(coll, {"$divide": [7, 2]}) == 3.5
    assert run(coll, {"$mod": [-7, 3]}) == -1
    assert run(coll, {"$mod": [7.5, 2]}) == 1.5
    assert run(coll, {"$subtract": [10, 2.5]}) == 7.5
    assert run(coll, {"$abs": -5}) == 5 and run(coll, {"$abs": -2147483648}) == 2147483648


def test_arithmetic_with_dates(coll):
    # manual $add: "one of the arguments can be a date"; $subtract: date - date is milliseconds (a long)
    d = D(2024, 1, 1)
    assert run(coll, {"$add": ["$d", 1000, 500]}, {"d": d}) == D(2024, 1, 1, 0, 0, 1, 500000)
    r = run(coll, {"$subtract": ["$e", "$d"]}, {"d": d, "e": D(2024, 1, 2)})
    assert r == 86400000 and isinstance(r, Int64)
    assert run(coll, {"$subtract": ["$d", 60000]}, {"d": d}) == D(2023, 12, 31, 23, 59)
    assert code(coll, {"$add": ["$d", "$d"]}, {"d": d}) == 16612
    assert code(coll, {"$subtract": [1, "$d"]}, {"d": d}) == 14


def test_arithmetic_null_missing_and_errors(coll):
    # expression.cpp: null/missing -> null; wrong types with the server's codes
    for op in ("$add", "$subtract", "$multiply", "$divide", "$mod", "$pow", "$log"):
        assert run(coll, {op: [1, "$nope"]}) is None, op
    for op in ("$abs", "$ceil", "$floor", "$sqrt", "$exp", "$ln", "$log10", "$round", "$trunc"):
        assert run(coll, {op: "$nope"}) is None, op
    assert code(coll, {"$add": [1, "x"]}) == 16554
    assert code(coll, {"$multiply": [1, "x"]}) == 16555
    assert code(coll, {"$divide": [1, 0]}) == 16608
    assert code(coll, {"$divide": ["a", 1]}) == 16609
    assert code(coll, {"$mod": [1, 0]}) == 16610
    assert code(coll, {"$abs": "x"}) == 28765
    assert code(coll, {"$sqrt": -1}) == 28714
    assert code(coll, {"$ln": 0}) == 28766
    assert code(coll, {"$log10": -1}) == 28761
    assert code(coll, {"$log": [8, 1]}) == 28759
    assert code(coll, {"$pow": [0, -1]}) == 28764
    assert code(coll, {"$subtract": [1]}) == 16020
    assert code(coll, {"$round": [1, 2, 3]}) == 28667


def test_log_decimal_falls_through_to_the_double_path(coll):
    # ExpressionLog::evaluate (src/mongo/db/pipeline/expression.cpp): a Decimal128 result only for a positive
    # argument and a positive base other than 1; otherwise the double path decides: a NaN passes (double NaN),
    # a non-positive argument is 28758, a bad base 28759.
    assert math.isnan(run(coll, {"$log": [Decimal128("NaN"), 10]}))
    assert isinstance(run(coll, {"$log": [Decimal128("NaN"), 10]}), float)
    assert run(coll, {"$log": [Decimal128("100"), 10]}) == Decimal128("2")
    assert code(coll, {"$log": [Decimal128("-1"), 10]}) == 28758
    assert code(coll, {"$log": [Decimal128("8"), Decimal128("1")]}) == 28759
    assert code(coll, {"$log": [math.nan, -1]}) == 28759
    assert math.isnan(run(coll, {"$log": [math.nan, 10]}))


def test_math_functions(coll):
    # manual $pow, $sqrt, $exp, $ln, $log, $log10, $ceil, $floor, $round, $trunc (round_trunc.js)
    assert run(coll, {"$pow": [2, 10]}) == 1024 and type(run(coll, {"$pow": [2, 10]})) is int
    assert run(coll, {"$pow": [2, -1]}) == 0.5
    assert run(coll, {"$sqrt": 25}) == 5.0
    assert run(coll, {"$log": [100, 10]}) == pytest.approx(2.0)
    assert run(coll, {"$log10": 1000}) == pytest.approx(3.0)
    assert run(coll, {"$exp": 0}) == 1.0
    assert run(coll, {"$ceil": 1.2}) == 2.0 and run(coll, {"$floor": -1.2}) == -2.0
    assert run(coll, {"$round": [2.5, 0]}) == 2.0 and run(coll, {"$round": [3.5]}) == 4.0
    assert run(coll, {"$round": [1234, -2]}) == 1200
    assert run(coll, {"$trunc": [-2.77, 1]}) == -2.7
    assert math.isnan(run(coll, {"$sqrt": float("nan")}))


# ------------------------------------------------------------------ comparison, boolean, conditional
def test_comparison_and_boolean(coll):
    # manual "Comparison Expression Operators": BSON order across types; missing below null
    assert run(coll, {"$cmp": ["a", 1]}) == 1
    assert run(coll, {"$lt": ["$nope", None]}) is True
    assert run(coll, {"$eq": ["$nope", None]}) is False
    assert run(coll, {"$eq": [1, 1.0]}) is True
    assert run(coll, {"$and": [1, "x", []]}) is True and run(coll, {"$or": [0, None]}) is False
    assert run(coll, {"$not": [0]}) is True
    assert code(coll, {"$eq": [1]}) == 16020
    assert run(coll, {"$in": [2, [1, 2]]}) is True
    assert code(coll, {"$in": [2, "$nope"]}) == 40081


def test_conditionals(coll):
    # manual $cond, $ifNull (several inputs since 5.0), $switch (jstests .../switch.js)
    assert run(coll, {"$cond": {"if": "$f", "then": "y", "else": "n"}}, {"f": 0}) == "n"
    assert run(coll, {"$cond": [True, 1, 2]}) == 1
    assert run(coll, {"$ifNull": ["$a", "$b", "dflt"]}, {"b": None}) == "dflt"
    assert run(coll, {"$ifNull": ["$a", "$b", "dflt"]}, {"b": 7}) == 7
    sw = {"$switch": {"branches": [{"case": {"$gt": ["$x", 5]}, "then": "big"}], "default": "small"}}
    assert run(coll, sw, {"x": 9}) == "big" and run(coll, sw, {"x": 1}) == "small"
    assert code(coll, {"$switch": {"branches": [{"case": False, "then": 1}]}}) == 40066
    assert code(coll, {"$switch": 1}) == 40060
    assert code(coll, {"$cond": {"if": True, "then": 1}}) == 17082
    assert code(coll, {"$cond": {"if": True, "then": 1, "else": 2, "x": 3}}) == 17083
    assert code(coll, {"$ifNull": ["$a"]}) == 1257300


# ------------------------------------------------------------------ strings
def test_strings(coll):
    # manual $concat (null operand -> null, non-string 16702)
    assert run(coll, {"$concat": ["a", "b"]}) == "ab"
    assert run(coll, {"$concat": ["a", "$nope"]}) is None
    assert code(coll, {"$concat": ["a", 1]}) == 16702
    # jstests/aggregation/expressions/substr.js: byte offsets, continuation bytes refused
    assert run(coll, {"$substrBytes": ["hello", 1, 3]}) == "ell"
    assert run(coll, {"$substr": ["hello", 2, -1]}) == "llo"
    assert code(coll, {"$substrBytes": ["\u00e9", 1, 1]}) == 28656
    assert code(coll, {"$substrBytes": ["abc", -1, 1]}) == 50752
    assert code(coll, {"$substrCP": ["abc", -1, 1]}) == 34455
    assert code(coll, {"$substrCP": ["abc", 0, "x"]}) == 34452
    # strLenBytes.js / strLenCP.js
    assert run(coll, {"$strLenBytes": "\u00e9a"}) == 3 and run(coll, {"$strLenCP": "\u00e9a"}) == 2
    assert code(coll, {"$strLenCP": "$nope"}) == 34471
    # manual $toUpper: ASCII only; coerceToString for numbers and dates
    assert run(coll, {"$toUpper": "\u00e9a"}) == "\u00e9A"
    assert run(coll, {"$toLower": 12}) == "12"
    assert run(coll, {"$toLower": D(2024, 1, 2)}) == "2024-01-02t00:00:00.000z"
    assert code(coll, {"$toLower": [[1]]}) == 16007
    # manual $strcasecmp
    assert run(coll, {"$strcasecmp": ["ABC", "abc"]}) == 0 and run(coll, {"$strcasecmp": ["a", "B"]}) == -1
    # manual $split (jstests .../split.js)
    assert run(coll, {"$split": ["a-b-c", "-"]}) == ["a", "b", "c"]
    assert run(coll, {"$split": ["$nope", "-"]}) is None
    assert code(coll, {"$split": ["a", ""]}) == 40087
    assert code(coll, {"$split": [1, "-"]}) == 40085
    # indexof_bytes.js / indexof_codepoints.js
    assert run(coll, {"$indexOfBytes": ["caf\u00e9 bar", "bar"]}) == 6
    assert run(coll, {"$indexOfCP": ["caf\u00e9 bar", "bar"]}) == 5
    assert run(coll, {"$indexOfCP": ["abcabc", "b", 2]}) == 4
    assert run(coll, {"$indexOfCP": ["abc", "z"]}) == -1
    assert run(coll, {"$indexOfCP": ["$nope", "z"]}) is None
    assert code(coll, {"$indexOfCP": ["abc", "b", -1]}) == 40097
    # trim.js
    assert run(coll, {"$trim": {"input": "$nope"}}) is None
    assert code(coll, {"$trim": {"input": 1}}) == 50699
    assert code(coll, {"$trim": {"chars": "x"}}) == 50695
    assert code(coll, {"$trim": "x"}) == 50696


def test_regex_and_replace(coll):
    # manual $regexMatch / $regexFind / $regexFindAll (jstests .../regex.js)
    assert run(coll, {"$regexMatch": {"input": "Hello", "regex": "^h", "options": "i"}}) is True
    assert run(coll, {"$regexMatch": {"input": "$nope", "regex": "a"}}) is False
    assert run(coll, {"$regexFind": {"input": "ab12cd", "regex": Regex("(\\d)(\\d)")}}) == \
        {"match": "12", "idx": 2, "captures": ["1", "2"]}
    assert run(coll, {"$regexFind": {"input": "abc", "regex": "z"}}) is None
    assert [m["match"] for m in run(coll, {"$regexFindAll": {"input": "a1b22", "regex": "\\d+"}})] == ["1", "22"]
    assert run(coll, {"$regexFindAll": {"input": "$nope", "regex": "a"}}) == []
    assert code(coll, {"$regexMatch": {"input": 1, "regex": "a"}}) == 51104
    assert code(coll, {"$regexMatch": {"input": "a", "regex": "a", "options": "q"}}) == 51108
    assert code(coll, {"$regexMatch": "a"}) == 51103
    # manual $replaceOne / $replaceAll (replace_one.js, replace_all.js)
    assert run(coll, {"$replaceOne": {"input": "aXbXc", "find": "X", "replacement": "-"}}) == "a-bXc"
    assert run(coll, {"$replaceAll": {"input": "aXbXc", "find": "X", "replacement": "-"}}) == "a-b-c"
    assert run(coll, {"$replaceAll": {"input": "$nope", "find": "X", "replacement": "-"}}) is None
    assert code(coll, {"$replaceOne": {"input": 1, "find": "X", "replacement": "-"}}) == 51746


# ------------------------------------------------------------------ arrays and sets
def test_arrays(coll):
    doc = {"a": [1, 2, 3, 4], "o": {"x": 1, "y": 2}}
    # manual $arrayElemAt / $first / $last (out of range -> missing)
    assert run(coll, {"$arrayElemAt": ["$a", -1]}, doc) == 4
    assert run(coll, {"$arrayElemAt": ["$a", 9]}, doc) is MISSING
    assert code(coll, {"$arrayElemAt": [1, 0]}) == 28689
    assert code(coll, {"$arrayElemAt": ["$a", 1.5]}, doc) == 28691
    assert run(coll, {"$first": "$a"}, doc) == 1 and run(coll, {"$last": "$a"}, doc) == 4
    assert run(coll, {"$first": "$nope"}) is None
    # manual $concatArrays, $reverseArray, $size, $isArray, $range, $slice
    assert run(coll, {"$concatArrays": ["$a", [5]]}, doc) == [1, 2, 3, 4, 5]
    assert code(coll, {"$concatArrays": ["$a", 5]}, doc) == 28664
    assert run(coll, {"$reverseArray": "$a"}, doc) == [4, 3, 2, 1]
    assert run(coll, {"$size": "$a"}, doc) == 4
    assert code(coll, {"$size": "$nope"}) == 17124
    assert run(coll, {"$isArray": ["$a"]}, doc) is True
    assert run(coll, {"$range": [0, 10, 3]}) == [0, 3, 6, 9] and run(coll, {"$range": [5, 0, -2]}) == [5, 3, 1]
    assert code(coll, {"$range": [0, 5, 0]}) == 34449
    assert run(coll, {"$slice": ["$a", -2]}, doc) == [3, 4] and run(coll, {"$slice": ["$a", 1, 2]}, doc) == [2, 3]
    assert code(coll, {"$slice": ["$a", 1, 0]}, doc) == 28729
    # manual $filter (with limit, 5.2+), $map, $reduce
    f = {"$filter": {"input": "$a", "as": "n", "cond": {"$gt": ["$$n", 1]}, "limit": 2}}
    assert run(coll, f, doc) == [2, 3]
    assert run(coll, {"$filter": {"input": "$nope", "cond": True}}) is None
    assert code(coll, {"$filter": {"input": 1, "cond": True}}) == 28651
    assert code(coll, {"$filter": {"input": "$a", "cond": True, "limit": 0}}, doc) == 327392
    assert run(coll, {"$map": {"input": "$a", "in": {"$multiply": ["$$this", 2]}}}, doc) == [2, 4, 6, 8]
    assert code(coll, {"$map": {"input": "$a"}}, doc) == 16882
    assert code(coll, {"$map": {"input": 1, "in": 1}}) == 16883
    assert code(coll, {"$map": {"input": [], "as": "", "in": 1}}) == 16866
    r = {"$reduce": {"input": "$a", "initialValue": {"s": 0}, "in": {"s": {"$add": ["$$value.s", "$$this"]}}}}
    assert run(coll, r, doc) == {"s": 10}
    assert code(coll, {"$reduce": {"input": "$a", "in": 1}}, doc) == 40078
    # manual $indexOfArray, $in, $zip
    assert run(coll, {"$indexOfArray": ["$a", 3]}, doc) == 2
    assert run(coll, {"$indexOfArray": ["$a", 3, 0, 2]}, doc) == -1
    assert run(coll, {"$zip": {"inputs": [[1, 2], ["a"]]}}) == [[1, "a"]]
    assert run(coll, {"$zip": {"inputs": [[1, 2], ["a"]], "useLongestLength": True, "defaults": [0, "z"]}}) == \
        [[1, "a"], [2, "z"]]
    assert code(coll, {"$zip": {"inputs": [[1], 2]}}) == 34468
    # manual $objectToArray / $arrayToObject
    assert run(coll, {"$objectToArray": "$o"}, doc) == [{"k": "x", "v": 1}, {"k": "y", "v": 2}]
    assert run(coll, {"$arrayToObject": [[["a", 1], ["b", 2]]]}) == {"a": 1, "b": 2}
    assert run(coll, {"$arrayToObject": {"$literal": [{"k": "a", "v": 1}]}}) == {"a": 1}
    assert code(coll, {"$arrayToObject": "x"}) == 40386


def test_sort_array_and_n_expressions(coll):
    # manual $sortArray (sort_array.js), $firstN/$lastN/$maxN/$minN array expressions (n_expressions.js)
    people = [{"n": "b", "age": 30}, {"n": "a", "age": 20}, {"n": "c", "age": 30}]
    got = run(coll, {"$sortArray": {"input": "$p", "sortBy": {"age": -1, "n": 1}}}, {"p": people})
    assert [x["n"] for x in got] == ["b", "c", "a"]
    assert run(coll, {"$sortArray": {"input": [1, "a", None, 2.5], "sortBy": 1}}) == [None, 1, 2.5, "a"]
    assert run(coll, {"$sortArray": {"input": "$nope", "sortBy": 1}}) is None
    assert code(coll, {"$sortArray": {"input": 1, "sortBy": 1}}) == 2942504
    assert code(coll, {"$sortArray": [1]}) == 2942500
    assert run(coll, {"$firstN": {"input": [1, 2, 3], "n": 2}}) == [1, 2]
    assert run(coll, {"$lastN": {"input": [1, 2, 3], "n": 2}}) == [2, 3]
    assert run(coll, {"$maxN": {"input": [1, None, 5, 3], "n": 2}}) == [5, 3]
    assert run(coll, {"$minN": {"input": [4, 1, 3], "n": 2}}) == [1, 3]
    assert code(coll, {"$firstN": {"input": [1], "n": 0}}) == 5787908


def test_set_operators(coll):
    # manual "Set Expression Operators" (jstests .../set.js)
    assert run(coll, {"$setUnion": [[1, 2], [2, 3]]}) == [1, 2, 3]
    assert run(coll, {"$setIntersection": [[1, 2, 2], [2, 1.0]]}) == [1, 2]
    assert run(coll, {"$setDifference": [[1, 2, 3], [2]]}) == [1, 3]
    assert run(coll, {"$setEquals": [[1, 2], [2, 1, 1]]}) is True
    assert run(coll, {"$setIsSubset": [[1], [1, 2]]}) is True
    assert run(coll, {"$anyElementTrue": [[0, None, 3]]}) is True
    assert run(coll, {"$allElementsTrue": [[1, 0]]}) is False
    assert run(coll, {"$setUnion": [[1], "$nope"]}) is None
    assert code(coll, {"$setUnion": [[1], 2]}) == 17043
    assert code(coll, {"$setEquals": [[1], 2]}) == 17044
    assert code(coll, {"$setEquals": [[1]]}) == 17045


def test_accumulator_expressions(coll):
    # manual $sum/$avg/$min/$max/$stdDevPop/$stdDevSamp "in other supported stages"; $median/$percentile (7.0+)
    doc = {"a": [1, 2, 3, 4, "x", None]}
    assert run(coll, {"$sum": "$a"}, doc) == 10 and run(coll, {"$sum": [1, 2.5]}) == 3.5
    assert run(coll, {"$sum": "$nope"}) == 0
    assert run(coll, {"$avg": "$a"}, doc) == 2.5 and run(coll, {"$avg": "$nope"}) is None
    assert run(coll, {"$max": "$a"}, doc) == "x" and run(coll, {"$min": "$a"}, doc) == 1
    assert run(coll, {"$max": [1, 5, 3]}) == 5
    assert run(coll, {"$stdDevPop": [[1, 2, 3, 4]]}) == pytest.approx(1.118033988749895)
    assert run(coll, {"$stdDevSamp": [[1]]}) is None
    assert run(coll, {"$median": {"input": [5, 1, 3], "method": "approximate"}}) == 3.0
    assert run(coll, {"$percentile": {"input": [1, 2, 3, 4], "p": [0.5, 1], "method": "approximate"}}) == [2.0, 4.0]


# ------------------------------------------------------------------ objects, variables, literal
def test_objects_variables_literal(coll):
    # manual $mergeObjects (null inputs ignored; non-objects 40400)
    assert run(coll, {"$mergeObjects": [{"a": 1}, None, {"b": 2, "a": 3}]}) == {"a": 3, "b": 2}
    assert code(coll, {"$mergeObjects": [{"a": 1}, 5]}) == 40400
    # manual $getField / $setField (expression_get_field.js, expression_set_field.js)
    assert run(coll, {"$getField": "a.b"}, {"a.b": 5}) == 5
    assert run(coll, {"$setField": {"field": "x", "input": {"a": 1}, "value": 2}}) == {"a": 1, "x": 2}
    assert code(coll, {"$getField": "$a"}) == 5654600
    # manual $let, $$ROOT, $$REMOVE, $literal
    assert run(coll, {"$let": {"vars": {"t": {"$add": ["$x", 1]}}, "in": {"$multiply": ["$$t", 2]}}}, {"x": 2}) == 6
    assert code(coll, {"$let": {"vars": {"T": 1}, "in": 1}}) == 16870
    assert code(coll, {"$let": {"in": 1}}) == 16876
    assert run(coll, "$$ROOT.x", {"x": 4}) == 4
    assert run(coll, {"$cond": [True, "$$REMOVE", 1]}) is MISSING
    assert run(coll, {"$literal": "$notAPath"}) == "$notAPath"
    assert code(coll, "$$nope") == 17276
    # through $project the projection parser answers first: no such expression and no field path, 31325
    # (get_field.js expected it for $getField before that operator existed); elsewhere the expression parser, 168
    assert code(coll, {"$noSuchOperator": 1}) == 31325
    with pytest.raises(OperationFailure) as e:
        list(coll.aggregate([{"$addFields": {"r": {"$noSuchOperator": 1}}}]))
    assert e.value.code == 168
    # JavaScript stays a clear refusal
    assert code(coll, {"$function": {"body": "function() {return 1}", "args": [], "lang": "js"}}) == 115


# ------------------------------------------------------------------ types
def test_type_and_convert(coll):
    # manual $type (aggregation), $isNumber, $convert (convert.js), $toInt ... shorthands
    assert run(coll, {"$type": "$nope"}) == "missing"
    assert run(coll, {"$type": [Int64(1)]}) == "long" and run(coll, {"$type": 1}) == "int"
    assert run(coll, {"$isNumber": "1"}) is False and run(coll, {"$isNumber": Decimal128("1")}) is True
    assert run(coll, {"$toInt": "42"}) == 42 and run(coll, {"$toInt": 4.9}) == 4
    assert isinstance(run(coll, {"$toLong": "42"}), Int64)
    assert run(coll, {"$toDouble": "1.5"}) == 1.5 and run(coll, {"$toDouble": True}) == 1.0
    assert run(coll, {"$toDecimal": 1}) == Decimal128("1")
    assert run(coll, {"$toString": 2.5}) == "2.5" and run(coll, {"$toString": True}) == "true"
    # expression_convert.cpp performFormatDouble streams the double ("%g": six significant digits)
    assert run(coll, {"$toString": 3.14159265}) == "3.14159" and run(coll, {"$toString": 1e20}) == "1e+20"
    assert run(coll, {"$toString": -0.0}) == "-0" and run(coll, {"$toLower": 1234567.0}) == "1.23457e+06"
    assert run(coll, {"$toString": D(2024, 1, 2, 3, 4, 5)}) == "2024-01-02T03:04:05.000Z"
    assert run(coll, {"$toBool": ""}) is True and run(coll, {"$toBool": 0}) is False
    assert run(coll, {"$toDate": Int64(0)}) == D(1970, 1, 1)
    assert run(coll, {"$toDate": "2024-05-06T07:08:09Z"}) == D(2024, 5, 6, 7, 8, 9)
    oid = ObjectId()
    assert run(coll, {"$toObjectId": str(oid)}) == oid
    assert run(coll, {"$toInt": "$nope"}) is None
    assert code(coll, {"$toInt": "4.5"}) == 241
    assert code(coll, {"$toInt": [1, 2]}) == 50723
    assert code(coll, {"$toDate": 1}) == 241  # an int32 is not a date (convert.js)
    assert run(coll, {"$convert": {"input": "x", "to": "int", "onError": "bad"}}) == "bad"
    assert run(coll, {"$convert": {"input": "$nope", "to": "int", "onNull": 0}}) == 0
    assert run(coll, {"$convert": {"input": "7", "to": 16}}) == 7
    assert code(coll, {"$convert": {"input": "x"}}) == 9
    assert code(coll, {"$convert": 1}) == 9


# ------------------------------------------------------------------ dates
def test_date_parts_and_timezones(coll):
    # manual $year .. $millisecond, $dayOfWeek (1 = Sunday), $week (%U), $isoWeek; date_expressions_with_timezones.js
    d = {"d": D(2024, 1, 1, 2, 3, 4, 5000)}  # a Monday
    assert [run(coll, {op: "$d"}, d) for op in ("$year", "$month", "$dayOfMonth", "$hour", "$minute", "$second",
                                                 "$millisecond")] == [2024, 1, 1, 2, 3, 4, 5]
    assert run(coll, {"$dayOfWeek": "$d"}, d) == 2 and run(coll, {"$isoDayOfWeek": "$d"}, d) == 1
    assert run(coll, {"$dayOfYear": "$d"}, d) == 1 and run(coll, {"$week": "$d"}, d) == 0
    assert run(coll, {"$isoWeek": "$d"}, d) == 1 and run(coll, {"$isoWeekYear": "$d"}, d) == 2024
    assert run(coll, {"$year": {"date": "$d", "timezone": "America/New_York"}}, d) == 2023
    assert run(coll, {"$hour": {"date": "$d", "timezone": "+05:30"}}, d) == 7
    assert run(coll, {"$hour": {"date": "$d", "timezone": "-0100"}}, d) == 1
    assert run(coll, {"$year": "$nope"}) is None
    assert code(coll, {"$year": "x"}) == 16006
    assert code(coll, {"$hour": {}}) == 40539
    assert code(coll, {"$year": {"date": "$d", "timezone": "Mars/Base"}}, d) == 40485
    assert code(coll, {"$year": {"date": "$d", "timezone": 5}}, d) == 40517
    # ObjectId and Timestamp are dates for these operators
    assert run(coll, {"$year": Timestamp(0, 1)}) == 1970


def test_date_to_string_and_back(coll):
    # manual $dateToString format specifiers (date_to_string.js), $dateFromString (date_from_string.js)
    d = {"d": D(2024, 3, 5, 14, 7, 9, 123000)}
    fmt = "%Y-%m-%d %H:%M:%S.%L %j %w %u %U %V %G %% %b %B"
    assert run(coll, {"$dateToString": {"date": "$d", "format": fmt}}, d) == \
        "2024-03-05 14:07:09.123 065 3 2 09 10 2024 % Mar March"
    assert run(coll, {"$dateToString": {"date": "$d"}}, d) == "2024-03-05T14:07:09.123Z"
    assert run(coll, {"$dateToString": {"date": "$d", "format": "%H:%M %z", "timezone": "Asia/Kolkata"}}, d) == \
        "19:37 +0530"
    assert run(coll, {"$dateToString": {"date": "$nope", "onNull": "none"}}) == "none"
    assert run(coll, {"$dateToString": {"date": "$nope"}}) is None
    assert code(coll, {"$dateToString": {"date": "$d", "format": "%Q"}}, d) == 18536
    assert code(coll, {"$dateToString": {"format": "%Y"}}) == 18628
    assert code(coll, {"$dateToString": {"date": "$d", "bogus": 1}}, d) == 18534
    assert run(coll, {"$dateFromString": {"dateString": "2024-03-05T14:07:09.123+01:00"}}) == \
        D(2024, 3, 5, 13, 7, 9, 123000)
    assert run(coll, {"$dateFromString": {"dateString": "05/03/2024", "format": "%d/%m/%Y"}}) == D(2024, 3, 5)
    assert run(coll, {"$dateFromString": {"dateString": "2024-01-01", "timezone": "America/New_York"}}) == \
        D(2024, 1, 1, 5)
    assert run(coll, {"$dateFromString": {"dateString": "nope", "onError": "bad"}}) == "bad"
    assert run(coll, {"$dateFromString": {"dateString": "$nope", "onNull": 0}}) == 0
    assert code(coll, {"$dateFromString": {"dateString": "nope"}}) == 241


def test_date_parts_round_trip(coll):
    # manual $dateToParts / $dateFromParts (date_to_parts.js, date_from_parts.js): parts carry over
    d = {"d": D(2024, 2, 29, 23, 59, 58, 7000)}
    assert run(coll, {"$dateToParts": {"date": "$d"}}, d) == \
        {"year": 2024, "month": 2, "day": 29, "hour": 23, "minute": 59, "second": 58, "millisecond": 7}
    assert run(coll, {"$dateToParts": {"date": "$d", "iso8601": True}}, d)["isoWeek"] == 9
    assert run(coll, {"$dateFromParts": {"year": 2024, "month": 14, "day": 1}}) == D(2025, 2, 1)
    assert run(coll, {"$dateFromParts": {"year": 2024, "month": 3, "day": 0}}) == D(2024, 2, 29)
    assert run(coll, {"$dateFromParts": {"isoWeekYear": 2024, "isoWeek": 1, "isoDayOfWeek": 1}}) == D(2024, 1, 1)
    assert run(coll, {"$dateFromParts": {"year": 2024, "hour": 12, "timezone": "+02"}}) == D(2024, 1, 1, 10)
    assert run(coll, {"$dateFromParts": {"year": "$nope"}}) is None
    assert code(coll, {"$dateFromParts": {"year": 2024.5}}) == 40515
    assert code(coll, {"$dateFromParts": {"year": 0}}) == 31034
    assert code(coll, {"$dateFromParts": {"month": 1}}) == 40516
    # beyond Python's datetime range (year 10000): a server-shaped error, never a bare ValueError
    assert code(coll, {"$dateFromParts": {"year": 9999, "month": 13}}) == 2


def test_date_add_diff_trunc(coll):
    # manual $dateAdd / $dateSubtract (month ends clamp), $dateDiff (boundaries crossed), $dateTrunc
    d = {"d": D(2024, 1, 31, 12)}
    assert run(coll, {"$dateAdd": {"startDate": "$d", "unit": "month", "amount": 1}}, d) == D(2024, 2, 29, 12)
    assert run(coll, {"$dateAdd": {"startDate": "$d", "unit": "hour", "amount": 36}}, d) == D(2024, 2, 2)
    assert run(coll, {"$dateSubtract": {"startDate": "$d", "unit": "week", "amount": 1}}, d) == D(2024, 1, 24, 12)
    # a day across the New York DST change is 23 hours of UTC time
    r = run(coll, {"$dateAdd": {"startDate": D(2024, 3, 9, 17), "unit": "day", "amount": 1,
                                "timezone": "America/New_York"}})
    assert r == D(2024, 3, 10, 16)
    assert run(coll, {"$dateAdd": {"startDate": "$nope", "unit": "day", "amount": 1}}) is None
    assert code(coll, {"$dateAdd": {"startDate": "$d", "unit": "day", "amount": 1.5}}, d) == 5166405
    assert code(coll, {"$dateAdd": {"startDate": "x", "unit": "day", "amount": 1}}) == 5166403
    assert code(coll, {"$dateAdd": 1}) == 5166400
    diff = {"$dateDiff": {"startDate": D(2023, 12, 31, 23), "endDate": D(2024, 1, 1, 1), "unit": "year"}}
    r = run(coll, diff)
    assert r == 1 and isinstance(r, Int64)
    assert run(coll, {"$dateDiff": {"startDate": D(2024, 1, 1), "endDate": D(2024, 1, 1, 23, 59), "unit": "day"}}) == 0
    assert run(coll, {"$dateDiff": {"startDate": D(2024, 1, 6), "endDate": D(2024, 1, 7), "unit": "week"}}) == 1
    assert run(coll, {"$dateDiff": {"startDate": D(2024, 1, 6), "endDate": D(2024, 1, 7), "unit": "week",
                                    "startOfWeek": "monday"}}) == 0
    assert run(coll, {"$dateDiff": {"startDate": D(2024, 3, 1), "endDate": D(2024, 1, 31), "unit": "month"}}) == -2
    assert code(coll, {"$dateDiff": {"startDate": D(2024, 1, 1), "endDate": D(2024, 1, 2), "unit": "eon"}}) == 9
    t = {"d": D(2024, 3, 15, 10, 47)}
    assert run(coll, {"$dateTrunc": {"date": "$d", "unit": "hour"}}, t) == D(2024, 3, 15, 10)
    assert run(coll, {"$dateTrunc": {"date": "$d", "unit": "minute", "binSize": 15}}, t) == D(2024, 3, 15, 10, 45)
    assert run(coll, {"$dateTrunc": {"date": "$d", "unit": "week"}}, t) == D(2024, 3, 10)
    assert run(coll, {"$dateTrunc": {"date": "$d", "unit": "month", "binSize": 2}}, t) == D(2024, 3, 1)
    assert run(coll, {"$dateTrunc": {"date": "$d", "unit": "quarter"}}, t) == D(2024, 1, 1)
    assert run(coll, {"$dateTrunc": {"date": "$d", "unit": "day", "timezone": "America/New_York"}}, t) == \
        D(2024, 3, 15, 4)
    assert code(coll, {"$dateTrunc": {"date": "$d", "unit": "day", "binSize": 0}}, t) == 5439017


# ------------------------------------------------------------------ the same evaluator everywhere
def test_expr_updates_group_keys_use_the_engine(coll):
    # $expr in a query (manual $expr), an update pipeline (manual "Updates with Aggregation Pipeline"),
    # $addFields and $group keys all go through the engine's evaluator
    coll.delete_many({})
    coll.insert_many([{"_id": 1, "s": "  Ab ", "d": D(2024, 5, 1)}, {"_id": 2, "s": "cd", "d": D(2023, 5, 1)}])
    got = list(coll.find({"$expr": {"$eq": [{"$trim": {"input": "$s"}}, "Ab"]}}))
    assert [x["_id"] for x in got] == [1]
    coll.update_many({}, [{"$set": {"u": {"$toUpper": {"$trim": {"input": "$s"}}},
                                    "y": {"$dateToString": {"date": "$d", "format": "%Y"}}}}])
    assert [(x["u"], x["y"]) for x in coll.find({}, sort=[("_id", 1)])] == [("AB", "2024"), ("CD", "2023")]
    keys = sorted(x["_id"] for x in coll.aggregate([{"$group": {"_id": {"$year": "$d"}}}]))
    assert keys == [2023, 2024]
    added = list(coll.aggregate([{"$addFields": {"n": {"$strLenCP": "$s"}}}, {"$sort": {"_id": 1}}]))
    assert [x["n"] for x in added] == [5, 2]


def test_every_family_is_registered():
    # the operators of the manual's "Expression Operators" list that the brief names are all the engine's own
    for op in ("$add", "$trunc", "$cmp", "$switch", "$substrCP", "$regexFindAll", "$replaceAll", "$reduce",
               "$sortArray", "$maxN", "$setIsSubset", "$mergeObjects", "$convert", "$toObjectId", "$isoWeek",
               "$dateFromParts", "$dateTrunc", "$let", "$median", "$percentile", "$stdDevSamp", "$zip"):
        assert op in OPERATORS, op
    assert evaluate({"$add": ["$a", 1]}, {"a": 1}) == 2


def test_expressions_compare_strings_with_the_collation(coll):
    # manual "Collation": an aggregate's collation applies to its string comparisons, expressions included
    coll.delete_many({})
    coll.insert_many([{"_id": 1, "n": "ABC"}, {"_id": 2, "n": "abd"}])
    pipeline = [{"$project": {"e": {"$eq": ["$n", "abc"]}, "c": {"$cmp": ["$n", "abc"]},
                              "i": {"$in": ["$n", ["abc"]]}}}, {"$sort": {"_id": 1}}]
    got = list(coll.aggregate(pipeline, collation={"locale": "en", "strength": 2}))
    assert [(x["e"], x["c"], x["i"]) for x in got] == [(True, 0, True), (False, 1, False)]
    plain = list(coll.aggregate(pipeline))
    assert [(x["e"], x["c"]) for x in plain] == [(False, -1), (False, 1)]
