"""The engine's matcher, sort keys and sparse-index rules, each test naming where the rule comes from.

Sources: mongodb/mongo jstests (jstests/core/query/...), the server's matcher sources
(src/mongo/db/matcher/expression_parser.cpp, path.cpp, expression_leaf.cpp; query/planner_ixselect.cpp)
and the MongoDB manual's query operator pages. Facts and expected results are carried over; the code is
our own.
"""
from __future__ import annotations

import datetime

import pytest
from bson import Decimal128, Int64, ObjectId, Regex
from bson.max_key import MaxKey
from bson.min_key import MinKey
from pymongo.errors import OperationFailure

from labkit.engine import EmbeddedClient
from labkit.engine.bson import values as V
from labkit.engine.matcher.match import check_query_depth, fast_matcher, first_matching_index


def ids(filter_: dict, docs: list[dict], **kw) -> list:
    m = fast_matcher(filter_, **kw)
    return sorted(str(d["_id"]) for d in docs if m(d))


def error(filter_: dict) -> OperationFailure:
    with pytest.raises(OperationFailure) as ei:
        fast_matcher(filter_)
    return ei.value


# ---------------------------------------------------------------------------------------- null semantics
# jstests/core/query/null_query_semantics.js (8.0 line: the version before SERVER-36681's 9.0 change)
NULL_DOCS = [
    {"_id": "a_empty_subobject", "a": {}},
    {"_id": "a_null", "a": None},
    {"_id": "a_number", "a": 4},
    {"_id": "a_subobject_b_not_null", "a": {"b": "hi"}},
    {"_id": "a_subobject_b_null", "a": {"b": None}},
    {"_id": "no_a"},
    {"_id": "a_double_array", "a": [[]]},
    {"_id": "a_empty_array", "a": []},
    {"_id": "a_object_array_no_b_nulls", "a": [{"b": 1}, {"b": 3}, {"b": "string"}]},
    {"_id": "a_object_array_some_b_nulls", "a": [{"b": None}, {"b": 3}, {"b": None}]},
    {"_id": "a_object_array_some_b_missing", "a": [{"b": 3}, {}]},
    {"_id": "a_value_array_all_nulls", "a": [None, None]},
    {"_id": "a_value_array_no_nulls", "a": [1, "string", 4]},
    {"_id": "a_value_array_with_null", "a": [1, "string", None, 4]},
]
ALL_NULL_IDS = sorted(d["_id"] for d in NULL_DOCS)


def test_eq_null_matches_null_missing_and_arrays_holding_null():
    # null_query_semantics.js testBasicNullQuery (multikey part)
    assert ids({"a": {"$eq": None}}, NULL_DOCS) == sorted(
        ["a_null", "no_a", "a_value_array_all_nulls", "a_value_array_with_null"])


def test_ne_null_is_the_complement():
    # null_query_semantics.js testBasicNotEqualsNullQuery
    got = ids({"a": {"$ne": None}}, NULL_DOCS)
    assert got == sorted(set(ALL_NULL_IDS) - {"a_null", "no_a", "a_value_array_all_nulls",
                                              "a_value_array_with_null"})


def test_dotted_null_matches_scalar_parent_and_subdocuments_without_the_field():
    # null_query_semantics.js testDottedEqualsNull: {a: 4} matches {"a.b": null}; value arrays do not
    assert ids({"a.b": None}, NULL_DOCS) == sorted(
        ["a_empty_subobject", "a_null", "a_number", "a_subobject_b_null", "no_a",
         "a_object_array_some_b_nulls", "a_object_array_some_b_missing"])
    assert ids({"a.b": {"$in": [None, 75]}}, NULL_DOCS) == ids({"a.b": None}, NULL_DOCS)


def test_dotted_ne_and_nin_null():
    # null_query_semantics.js testDottedNotEqualsNull / testDottedNotInNullQuery
    expected = sorted(["a_subobject_b_not_null", "a_double_array", "a_empty_array", "a_object_array_no_b_nulls",
                       "a_value_array_all_nulls", "a_value_array_no_nulls", "a_value_array_with_null"])
    assert ids({"a.b": {"$ne": None}}, NULL_DOCS) == expected
    assert ids({"a.b": {"$nin": [None, 75]}}, NULL_DOCS) == expected


def test_nin_null_and_empty_array():
    # null_query_semantics.js testNotInNullAndEmptyArrayQuery
    excluded = {"a_null", "no_a", "a_double_array", "a_empty_array", "a_value_array_all_nulls",
                "a_value_array_with_null"}
    assert ids({"a": {"$nin": [None, []]}}, NULL_DOCS) == sorted(set(ALL_NULL_IDS) - excluded)


def test_not_gte_null():
    # null_query_semantics.js testBasicNotEqualsGTENullQuery: $gte: null matches what $eq: null does
    assert ids({"a": {"$not": {"$gte": None}}}, NULL_DOCS) == ids({"a": {"$ne": None}}, NULL_DOCS)


def test_elem_match_null_forms():
    # null_query_semantics.js testElemMatchValue / testElemMatchObject
    assert ids({"a": {"$elemMatch": {"$eq": None}}}, NULL_DOCS) == ["a_value_array_all_nulls",
                                                                  "a_value_array_with_null"]
    assert ids({"a": {"$elemMatch": {"b": {"$eq": None}}}}, NULL_DOCS) == sorted(
        ["a_double_array", "a_object_array_some_b_nulls", "a_object_array_some_b_missing"])
    assert ids({"a": {"$elemMatch": {"b": {"$ne": None}}}}, NULL_DOCS) == sorted(
        ["a_object_array_no_b_nulls", "a_object_array_some_b_nulls", "a_object_array_some_b_missing"])
    assert ids({"a.b": {"$elemMatch": {"$eq": None}}}, NULL_DOCS) == []


def test_exists_false_dotted():
    # null_query_semantics.js testDottedExistsFalse (non-array part)
    docs = NULL_DOCS[:6]
    assert ids({"a.b": {"$exists": False}}, docs) == sorted(["no_a", "a_empty_subobject", "a_null", "a_number"])


# ---------------------------------------------------------------------------------------- type bracketing
def test_bool_is_not_a_number():
    # manual "Comparison/Sort Order": numbers and booleans are different BSON types; True != 1
    docs = [{"_id": 1, "c": 1}, {"_id": 2, "c": True}, {"_id": 3, "c": 1.0}, {"_id": 4, "c": Int64(1)},
            {"_id": 5, "c": Decimal128("1")}]
    assert ids({"c": True}, docs) == ["2"]
    assert ids({"c": 1}, docs) == ["1", "3", "4", "5"]
    assert ids({"c": {"$in": [True]}}, docs) == ["2"]
    assert ids({"c": {"$gte": 0}}, docs) == ["1", "3", "4", "5"]


def test_comparisons_stay_within_a_type():
    # manual "Comparison Query Operators" > type bracketing: {$gt: 5} never matches strings
    docs = [{"_id": 1, "a": "z"}, {"_id": 2, "a": 7}, {"_id": 3, "a": datetime.datetime(2020, 1, 1)},
            {"_id": 4, "a": None}, {"_id": 5}]
    assert ids({"a": {"$gt": 5}}, docs) == ["2"]
    assert ids({"a": {"$gt": "a"}}, docs) == ["1"]
    assert ids({"a": {"$lt": datetime.datetime(2021, 1, 1)}}, docs) == ["3"]
    # expression_leaf.cpp: {$gte: null} / {$lte: null} match null and missing, $gt/$lt: null nothing
    assert ids({"a": {"$gte": None}}, docs) == ["4", "5"]
    assert ids({"a": {"$gt": None}}, docs) == []


def test_minkey_maxkey_bounds():
    # expression_leaf.cpp ComparisonMatchExpressionBase: MinKey/MaxKey compare across types
    docs = [{"_id": 1, "a": "z"}, {"_id": 2, "a": 7}, {"_id": 3, "a": MaxKey()}]
    assert ids({"a": {"$gt": MinKey()}}, docs) == ["1", "2", "3"]
    assert ids({"a": {"$lt": MaxKey()}}, docs) == ["1", "2"]


def test_nan_equals_only_nan():
    # expression_leaf.cpp: NaN is equal to NaN but otherwise compares false
    nan = float("nan")
    docs = [{"_id": 1, "a": nan}, {"_id": 2, "a": 1}, {"_id": 3, "a": float("-inf")}]
    assert ids({"a": nan}, docs) == ["1"]
    assert ids({"a": {"$gt": nan}}, docs) == []
    assert ids({"a": {"$gte": nan}}, docs) == ["1"]
    assert ids({"a": {"$lt": 0}}, docs) == ["3"]


def test_object_equality_is_field_order_sensitive():
    # manual "Query on Embedded/Nested Documents": equality on a document needs the exact document, order too
    docs = [{"_id": 1, "a": {"x": 1, "y": 2}}, {"_id": 2, "a": {"y": 2, "x": 1}}]
    assert ids({"a": {"x": 1, "y": 2}}, docs) == ["1"]
    # {"a.x": {}} is equality with an empty document
    docs2 = [{"_id": 1, "a": {"x": {}}}, {"_id": 2, "a": 5}, {"_id": 3, "a": {"x": 1}}]
    assert ids({"a.x": {}}, docs2) == ["1"]


# ---------------------------------------------------------------------------------------- arrays and paths
def test_implicit_array_element_matching_and_whole_array_equality():
    # manual "Query an Array": {tags: "red"} matches an element; {tags: [..]} the exact array
    docs = [{"_id": 1, "tags": ["red", "blank"]}, {"_id": 2, "tags": ["blank", "red"]},
            {"_id": 3, "tags": [["red", "blank"]]}, {"_id": 4, "tags": "red"}]
    assert ids({"tags": "red"}, docs) == ["1", "2", "4"]
    assert ids({"tags": ["red", "blank"]}, docs) == ["1", "3"]


def test_numeric_path_component_is_index_or_field_name():
    # path.cpp isArrayOffsetMatch: "a.0" indexes an array and also names a field "0" of subdocuments;
    # a path ending at an offset yields that element as it is (a nested array is not expanded)
    docs = [{"_id": 1, "a": [5, 6]}, {"_id": 2, "a": [{"0": 5}]}, {"_id": 3, "a": {"0": 5}},
            {"_id": 4, "a": [[5]]}, {"_id": 5, "a": [6, 5]}]
    assert ids({"a.0": 5}, docs) == ["1", "2", "3"]
    assert ids({"a.0": [5]}, docs) == ["4"]
    assert ids({"a.1": 5}, docs) == ["5"]


def test_dotted_path_through_nested_arrays():
    # path.cpp: arrays of subdocuments are traversed, nested arrays below a leaf are not flattened
    docs = [{"_id": 1, "a": [{"b": [{"c": 1}]}]}, {"_id": 2, "a": [{"b": [[{"c": 1}]]}]},
            {"_id": 3, "a": {"b": {"c": [1, 2]}}}]
    assert ids({"a.b.c": 1}, docs) == ["1", "3"]


def test_ne_and_nin_negate_through_arrays():
    # manual "$ne": matches documents where no array element equals the value
    docs = [{"_id": 1, "a": [1, 2]}, {"_id": 2, "a": [2, 3]}, {"_id": 3}, {"_id": 4, "a": 1}]
    assert ids({"a": {"$ne": 1}}, docs) == ["2", "3"]
    assert ids({"a": {"$nin": [1, 3]}}, docs) == ["3"]
    assert ids({"a": {"$not": {"$gt": 1}}}, docs) == ["3", "4"]


def test_size_only_matches_arrays():
    # manual "$size": counts array elements; strings and numbers never match
    docs = [{"_id": 1, "a": [1]}, {"_id": 2, "a": "x"}, {"_id": 3, "a": 1}, {"_id": 4, "a": [[1, 2]]},
            {"_id": 5, "a": []}]
    assert ids({"a": {"$size": 1}}, docs) == ["1", "4"]
    assert ids({"a": {"$size": 0}}, docs) == ["5"]
    assert error({"a": {"$size": "1"}}).details["errmsg"] == "$size needs a number"
    assert error({"a": {"$size": -1}}).details["errmsg"] == "$size may not be negative"
    assert error({"a": {"$size": 1.5}}).details["errmsg"] == "$size must be a whole number"


def test_all_empty_and_all_null():
    # expression_parser.cpp parseAll: $all: [] is AlwaysFalse; $all is an $and of equalities ($all: [null]
    # is {a: null}, matching missing)
    docs = [{"_id": 1, "a": [1, 2]}, {"_id": 2}, {"_id": 3, "a": [None]}, {"_id": 4, "a": [1]}]
    assert ids({"a": {"$all": []}}, docs) == []
    assert ids({"a": {"$all": [None]}}, docs) == ["2", "3"]
    assert ids({"a": {"$all": [1, 2]}}, docs) == ["1"]
    assert ids({"a": {"$all": [[1, 2]]}}, docs) == ["1"]
    assert error({"a": {"$all": 1}}).details["errmsg"] == "$all needs an array"


def test_all_with_elem_match():
    # manual "$all" > "Use $all with $elemMatch"
    docs = [{"_id": 1, "qty": [{"size": "S", "num": 10}, {"size": "M", "num": 45}]},
            {"_id": 2, "qty": [{"size": "M", "num": 50}]}]
    f = {"qty": {"$all": [{"$elemMatch": {"size": "M", "num": {"$gt": 40}}},
                          {"$elemMatch": {"num": 10}}]}}
    assert ids(f, docs) == ["1"]
    assert error({"qty": {"$all": [{"$elemMatch": {"num": 1}}, 5]}}).details["errmsg"] == \
        "$all/$elemMatch has to be consistent"


def test_elem_match_value_form_does_not_enter_nested_arrays():
    # expression_array.cpp ElemMatchValue: each element is matched as a single element (no traversal)
    docs = [{"_id": 1, "a": [2]}, {"_id": 2, "a": [[2]]}, {"_id": 3, "a": [0, 5]}, {"_id": 4, "a": 2}]
    assert ids({"a": {"$elemMatch": {"$gt": 1, "$lt": 3}}}, docs) == ["1"]
    # without $elemMatch, different elements may satisfy each bound (manual "Query an Array")
    assert ids({"a": {"$gt": 1, "$lt": 3}}, docs) == ["1", "3", "4"]


def test_elem_match_object_form():
    # manual "$elemMatch (query)" example: results with product "xyz" and score >= 8
    docs = [{"_id": 1, "results": [{"product": "abc", "score": 10}, {"product": "xyz", "score": 5}]},
            {"_id": 2, "results": [{"product": "abc", "score": 8}, {"product": "xyz", "score": 7}]},
            {"_id": 3, "results": [{"product": "abc", "score": 7}, {"product": "xyz", "score": 8}]}]
    assert ids({"results": {"$elemMatch": {"product": "xyz", "score": {"$gte": 8}}}}, docs) == ["3"]
    assert error({"a": {"$elemMatch": 1}}).details["errmsg"] == "$elemMatch needs an Object"


# ---------------------------------------------------------------------------------------- $type
def test_type_aliases_codes_and_number():
    # manual "$type" > Available Types: aliases, numeric codes, "number"; arrays match "array"
    docs = [{"_id": 1, "a": 1}, {"_id": 2, "a": 1.5}, {"_id": 3, "a": "s"}, {"_id": 4, "a": [1]},
            {"_id": 5, "a": None}, {"_id": 6}, {"_id": 7, "a": Int64(2)}, {"_id": 8, "a": 2 ** 40}]
    assert ids({"a": {"$type": 16}}, docs) == ["1", "4"]
    assert ids({"a": {"$type": "int"}}, docs) == ids({"a": {"$type": 16}}, docs)
    assert ids({"a": {"$type": "long"}}, docs) == ["7", "8"]
    assert ids({"a": {"$type": "number"}}, docs) == ["1", "2", "4", "7", "8"]
    assert ids({"a": {"$type": "array"}}, docs) == ["4"]
    assert ids({"a": {"$type": 4}}, docs) == ["4"]
    assert ids({"a": {"$type": "null"}}, docs) == ["5"]
    assert ids({"a": {"$type": ["string", 10]}}, docs) == ["3", "5"]
    assert error({"a": {"$type": "nope"}}).details["errmsg"] == "Unknown type name alias: nope"
    assert error({"a": {"$type": 99}}).code == 2


# ---------------------------------------------------------------------------------------- $regex / $not
def test_regex_options_and_not_regex():
    # manual "$regex": {$regex, $options}; $not accepts a regex object or {$regex, $options}
    docs = [{"_id": 1, "s": "Apple"}, {"_id": 2, "s": "banana"}, {"_id": 3, "s": 5}, {"_id": 4}]
    assert ids({"s": {"$regex": "^a", "$options": "i"}}, docs) == ["1"]
    assert ids({"s": Regex("^a", "i")}, docs) == ["1"]
    assert ids({"s": {"$not": {"$regex": "^a", "$options": "i"}}}, docs) == ["2", "3", "4"]
    assert ids({"s": {"$in": [Regex("^b"), 5]}}, docs) == ["2", "3"]


def test_regex_errors():
    # expression_parser.cpp parseRegexDocument; invalid patterns fail as PCRE compile errors (51091)
    assert error({"s": {"$regex": "("}}).code == 51091
    assert error({"s": {"$options": "i"}}).details["errmsg"] == "$options needs a $regex"
    assert error({"s": {"$regex": 5}}).details["errmsg"] == "$regex has to be a string"
    assert error({"s": {"$regex": Regex("a", "i"), "$options": "m"}}).code == 51075
    assert error({"s": {"$regex": "a", "$options": "z"}}).code == 51108
    assert error({"s": {"$gt": Regex("a")}}).code == 2


# ---------------------------------------------------------------------------------------- parse errors
def test_parse_errors_are_bad_value():
    # expression_parser.cpp: the messages and code BadValue (2)
    assert error({"a": {"$foo": 1}}).details["errmsg"] == "unknown operator: $foo"
    assert error({"$foo": 1}).details["errmsg"].startswith("unknown top level operator: $foo")
    assert error({"$and": []}).details["errmsg"] == "$and/$or/$nor must be a nonempty array"
    assert error({"$or": [1]}).details["errmsg"] == "$or/$and/$nor entries need to be full objects"
    assert error({"a": {"$in": 1}}).details["errmsg"] == "$in needs an array"
    assert error({"a": {"$nin": 1}}).details["errmsg"] == "$nin needs an array"
    assert error({"a": {"$in": [{"$gt": 1}]}}).details["errmsg"] == "cannot nest $ under $in"
    assert error({"a": {"$not": 1}}).details["errmsg"] == "$not needs a regex or a document"
    assert error({"a": {"$not": {}}}).details["errmsg"] == "$not cannot be empty"
    assert error({"a": {"$mod": [0, 1]}}).code == 2
    assert error({"a": {"$mod": [1]}}).details["errmsg"] == "malformed mod, not enough elements"
    for e in (error({"a": {"$foo": 1}}), error({"$and": []})):
        assert e.code == 2


def test_deep_nesting_is_the_servers_error_not_recursion_error():
    # expression_parser.cpp: query trees deeper than 100 fail with BadValue
    f: dict = {"a": 1}
    for _ in range(900):
        f = {"$and": [f]}
    assert error(f).code == 2
    with pytest.raises(OperationFailure) as ei:
        check_query_depth(f)  # the iterative check callers can run before any recursive walk
    assert ei.value.code == 2
    deep_value: dict = {}
    for _ in range(150):
        deep_value = {"x": deep_value}
    check_query_depth({"a": deep_value})  # a literal document is not a tree level


def test_where_text_and_geo_are_refused_clearly():
    # the embedded engine runs no JavaScript and has no text/geo indexes: refused with 115, never ignored
    for f in ({"$where": "this.a > 1"}, {"$text": {"$search": "x"}},
              {"loc": {"$near": {"$geometry": {"type": "Point", "coordinates": [0, 0]}}}}):
        e = error(f)
        assert e.code == 115 and "not modelled by labkit's embedded engine" in str(e)


# ---------------------------------------------------------------------------------------- $mod, bits, $expr
def test_mod_truncates_toward_zero():
    # manual "$mod": decimal values are truncated toward zero; negative dividends keep their sign
    docs = [{"_id": 1, "q": 5.5}, {"_id": 2, "q": -5}, {"_id": 3, "q": 9}, {"_id": 4, "q": "5"}]
    assert ids({"q": {"$mod": [4, 1]}}, docs) == ["1", "3"]
    assert ids({"q": {"$mod": [4, -1]}}, docs) == ["2"]


def test_bitwise_operators():
    # manual "$bitsAllSet" examples: a = 54 (00110110)
    docs = [{"_id": 1, "a": 54}, {"_id": 2, "a": 20}, {"_id": 3, "a": 20.0}, {"_id": 4, "a": "x"}]
    assert ids({"a": {"$bitsAllSet": [1, 5]}}, docs) == ["1"]
    assert ids({"a": {"$bitsAnySet": [1, 5]}}, docs) == ["1"]
    assert ids({"a": {"$bitsAllClear": [1, 5]}}, docs) == ["2", "3"]
    assert ids({"a": {"$bitsAnyClear": 35}}, docs) == ["1", "2", "3"]


def test_expr_missing_fields_and_let_variables():
    # manual "$expr" and aggregation comparison order: missing < null, {$eq: ["$x", null]} is false for
    # a missing x; let variables are $$name
    docs = [{"_id": 1, "spent": 400, "budget": 200}, {"_id": 2, "spent": 100}, {"_id": 3, "budget": None}]
    assert ids({"$expr": {"$gt": ["$spent", "$budget"]}}, docs) == ["1", "2"]
    assert ids({"$expr": {"$eq": ["$budget", None]}}, docs) == ["3"]
    assert ids({"$expr": {"$lt": ["$nope", None]}}, docs) == ["1", "2", "3"]
    assert ids({"$expr": {"$gte": ["$spent", "$$limit"]}}, docs, variables={"limit": 150}) == ["1"]
    with pytest.raises(OperationFailure) as ei:
        fast_matcher({"$expr": {"$eq": ["$a", "$$nope"]}})({"a": 1})
    assert ei.value.code == 17276


def test_comment_and_always_boolean():
    # expression_parser.cpp: $comment has no effect; $alwaysTrue / $alwaysFalse take 1
    docs = [{"_id": 1}]
    assert ids({"$comment": "x"}, docs) == ["1"]
    assert ids({"$alwaysFalse": 1}, docs) == []
    assert ids({"$alwaysTrue": 1}, docs) == ["1"]


def test_collation_in_the_matcher():
    # manual "Collation": strength 2 compares case-insensitively, also inside $in and arrays
    coll = {"locale": "en", "strength": 2}
    docs = [{"_id": 1, "f": "Apple"}, {"_id": 2, "f": ["x", "APPLE"]}, {"_id": 3, "f": "pear"}]
    assert ids({"f": "apple"}, docs, collation=coll) == ["1", "2"]
    assert ids({"f": {"$in": ["APPLE"]}}, docs, collation=coll) == ["1", "2"]
    assert ids({"f": "apple"}, docs) == []


def test_first_matching_index_for_positional_updates():
    # manual "$ (update)": the first array element that matched the query
    doc = {"_id": 1, "grades": [80, 85, 90], "subs": [{"g": 1}, {"g": 9}]}
    assert first_matching_index({"grades": 85}, doc, "grades") == 1
    assert first_matching_index({"subs.g": {"$gt": 5}}, doc, "subs") == 1
    assert first_matching_index({"grades": 1}, doc, "grades") is None


# ---------------------------------------------------------------------------------------- values / sort keys
def test_bson_order():
    # manual "Comparison/Sort Order"
    order = [MinKey(), None, 1, "a", {"a": 1}, [1], b"\x00", ObjectId(), False,
             datetime.datetime(2020, 1, 1), Regex("a"), MaxKey()]
    for a, b in zip(order, order[1:]):
        assert V.compare(a, b) < 0, (a, b)
    assert V.compare(1, 1.0) == 0 and V.compare(Decimal128("2.5"), 2.5) == 0
    assert V.compare(float("nan"), -1e308) < 0
    assert V.compare({"a": 1}, {"b": 0}) < 0  # field names before values
    assert V.compare({"a": 1}, {"a": "x"}) < 0  # then value types


def test_sort_keys_for_arrays_and_missing():
    # jstests/core/query/sort/sort_dotted_paths.js: a subdocument without the field gives null
    c = EmbeddedClient().db.s
    c.insert_many([{"_id": 1, "a": {"b": 2}}, {"_id": 2, "a": {"b": []}}, {"_id": 3, "a": {"b": [2, 3]}},
                   {"_id": 4, "a": {"c": 1}}, {"_id": 5, "a": []}, {"_id": 6, "a": [{"b": [5]}]},
                   {"_id": 7, "a": [{"b": [4, 5]}, {"b": 7}]}, {"_id": 8, "a": [{"b": [1, 3]}, {"b": [2, 5]}]},
                   {"_id": 9, "a": [{"b": []}, {"b": [1, 3]}]}])
    got = [d["_id"] for d in c.find({}, {"_id": 1}).sort([("a.b", 1), ("_id", 1)])]
    assert got == [2, 9, 4, 5, 8, 1, 3, 7, 6]
    got = [d["_id"] for d in c.find({}, {"_id": 1}).sort([("a.b", -1), ("_id", 1)])]
    assert got == [7, 6, 8, 3, 9, 1, 4, 5, 2]
    agg = [d["_id"] for d in c.aggregate([{"$sort": {"a.b": 1, "_id": 1}}])]
    assert agg == [2, 9, 4, 5, 8, 1, 3, 7, 6]
    c2 = EmbeddedClient().db.t
    c2.insert_many([{"_id": 1, "a": [{"y": 1}, {"x": 5}]}, {"_id": 2, "a": {"x": 3}}])
    assert [d["_id"] for d in c2.find().sort("a.x", 1)] == [1, 2]  # 1's key is null, not 5


# ---------------------------------------------------------------------------------------- planner rules
def test_sparse_index_never_gives_incomplete_results():
    # planner_ixselect.cpp / manual "Sparse Indexes": a sparse index is not used for predicates that
    # match documents without the field ($ne, $nin, $in with null, {a: null}, $exists: false)
    c = EmbeddedClient().db.sp
    c.create_index("c", sparse=True)
    c.insert_many([{"_id": 1}, {"_id": 2, "c": 1}, {"_id": 3, "c": 5}])
    assert sorted(d["_id"] for d in c.find({"c": {"$ne": 5}})) == [1, 2]
    assert sorted(d["_id"] for d in c.find({"c": {"$nin": [5]}})) == [1, 2]
    assert sorted(d["_id"] for d in c.find({"c": {"$in": [None, 1]}})) == [1, 2]
    assert [d["_id"] for d in c.find({"c": None})] == [1]
    assert [d["_id"] for d in c.find({"c": {"$exists": False}})] == [1]
    assert c.delete_many({"c": {"$ne": 5}}).deleted_count == 2
    assert [d["_id"] for d in c.find()] == [3]
    # a predicate that excludes missing documents may use it
    plan = c.find({"c": {"$gt": 0}}).explain()["queryPlanner"]["winningPlan"]
    assert plan["stage"] == "FETCH"


def test_same_answer_through_index_and_natural():
    # issue 13 repro: one rule set serves every plan (True is not 1 on either path)
    c = EmbeddedClient().db.pi
    c.create_index("c")
    c.insert_many([{"_id": 1, "c": 1, "b": [{"y": 1}]}, {"_id": 2, "c": True, "b": [{"y": 1}]},
                   {"_id": 3, "c": 1.0, "b": [{"y": 1}]}])
    f = {"c": True, "b": {"$elemMatch": {"y": 1}}}
    assert [d["_id"] for d in c.find(f)] == [2]
    assert [d["_id"] for d in c.find(f).hint({"$natural": 1})] == [2]
    assert [d["_id"] for d in c.find(f).hint("c_1")] == [2]


def test_elem_match_over_nested_arrays_same_through_index_and_scan():
    # issue 13: $elemMatch {$gt: 1, $lt: 3} on nested arrays must not differ between a scan and an index
    # (expression_array.cpp ElemMatchValue vs index keys of [[2]], which are the array [2])
    c = EmbeddedClient().db.em
    c.create_index("a")
    c.insert_many([{"_id": 1, "a": [[2]]}, {"_id": 2, "a": [2]}, {"_id": 3, "a": [0, 5]}])
    f = {"a": {"$elemMatch": {"$gt": 1, "$lt": 3}}}
    assert [d["_id"] for d in c.find(f)] == [2]
    assert [d["_id"] for d in c.find(f).hint("a_1")] == [2]
    assert [d["_id"] for d in c.find(f).hint({"$natural": 1})] == [2]


def test_compound_sort_pairs_fields_of_one_array_element():
    # jstests/core/query/sort/sort_dotted_paths.js: {"a.c": 1, "a.b": 1} sorts by the smallest (c, b) pair of
    # one element, not by the smallest c and the smallest b independently
    c = EmbeddedClient().db.cs
    c.insert_many([{"_id": 1, "a": [{"b": 4, "c": 1}, {"b": 1, "c": 2}]},
                   {"_id": 4, "a": [{"b": 4, "c": 1}, {"b": 5, "c": 3}]},
                   {"_id": 6, "a": [{"b": 5, "c": 1}, {"b": 3, "c": 3}]}])
    assert [d["_id"] for d in c.find().sort([("a.c", 1), ("a.b", 1), ("_id", 1)])] == [1, 4, 6]
    assert [d["_id"] for d in c.aggregate([{"$sort": {"a.c": 1, "a.b": 1, "_id": 1}}])] == [1, 4, 6]


def test_sort_on_parallel_arrays_is_bad_value():
    # jstests/core/query/sort/sort_dotted_paths.js: two sort fields through different arrays fail
    c = EmbeddedClient().db.pa
    c.insert_many([{"_id": 1, "a": [], "b": 1}, {"_id": 2, "a": 1, "b": []}, {"_id": 3, "a": [], "b": []}])
    for sort in ([("a", 1), ("b", 1)], [("_id", 1), ("a", 1), ("b", 1)]):
        with pytest.raises(OperationFailure) as ei:
            list(c.find().sort(sort))
        assert ei.value.code == 2 and "parallel arrays" in str(ei.value)
    f = {"$or": [{"a": {"$not": {"$type": "array"}}}, {"b": {"$not": {"$type": "array"}}}]}
    assert [d["_id"] for d in c.find(f).sort([("a", 1), ("b", 1)])] == [1, 2]


def test_find_let_variables():
    # manual "db.collection.find()" > let (5.0+): $$name in $expr, constant expressions, variable-name rules
    c = EmbeddedClient().db.lv
    c.create_index("a")
    c.insert_many([{"_id": 1, "a": 1}, {"_id": 2, "a": 2}, {"_id": 3, "a": 3}])
    f = {"$expr": {"$eq": ["$a", "$$v"]}}
    assert [d["_id"] for d in c.find(f, let={"v": 2})] == [2]
    assert [d["_id"] for d in c.find({"$or": [{"a": 1}, {"$expr": {"$gte": ["$a", "$$v"]}}]},
                                     let={"v": {"$add": [1, 2]}})] == [1, 3]
    assert c.find_one(f, let={"v": 3})["_id"] == 3
    with pytest.raises(OperationFailure) as ei:
        c.find({}, let={"V": 1})
    assert ei.value.code == 16870
    with pytest.raises(OperationFailure) as ei:
        list(c.find(f))  # no let: $$v is undefined
    assert ei.value.code == 17276


def test_expr_validator_on_a_missing_field_is_a_validation_error():
    # issue 13 repro (KeyError before): manual "Schema Validation" > query operators in validators; the
    # $expr comparison of a missing field is false (aggregation order: missing < 1), so the insert fails 121
    from pymongo.errors import WriteError
    db = EmbeddedClient().db
    db.create_collection("v", validator={"$expr": {"$gt": ["$a", 1]}})
    with pytest.raises(WriteError) as ei:
        db.v.insert_one({"b": 1})
    assert ei.value.code == 121
    db.v.insert_one({"a": 5})
    assert db.v.count_documents({}) == 1
    assert [c["name"] for c in db.list_collections(filter={"name": {"$regex": "^v$"}})] == ["v"]


def test_negated_null_never_uses_a_multikey_index_on_that_path():
    """planner_ixselect.cpp: "Most of the time we can't use a multikey index for a $ne: null query" (an empty
    array is keyed as null, so inverted null bounds would miss {a: []}; isQueryNegatingEqualToNull). Found by
    the plan-independence property test: the index answer differed from $natural."""
    from labkit.engine import EmbeddedClient
    c = EmbeddedClient().rules.neg_null
    c.insert_many([{"_id": 1, "a": []}, {"_id": 2, "a": [{"x": 1}]}, {"_id": 3, "a": [{"x": None}]}])
    c.create_index("a.x")
    for q in ({"a.x": {"$nin": [None]}}, {"a.x": {"$ne": None}}, {"a.x": {"$nin": [None, 7]}}):
        natural = sorted(d["_id"] for d in c.find(q).hint({"$natural": 1}))
        assert sorted(d["_id"] for d in c.find(q)) == natural, q
        assert c.find(q).explain()["queryPlanner"]["winningPlan"]["stage"] == "COLLSCAN", q
    # a negation of a non-null value still uses the index
    assert c.find({"a.x": {"$ne": 5}}).explain()["queryPlanner"]["winningPlan"]["stage"] == "FETCH"
