"""Audit of issue 13: every repro the issue lists, and the rules found a few steps off the lessons' path,
each checked against the server's documented behaviour.

Each test names where its rule comes from: mongodb/mongo jstests (jstests/core/query/..., jstests/core/write/...),
the server's sources (src/mongo/db/...) or the MongoDB manual. Facts and expected results are carried over; the
code is our own.
"""
from __future__ import annotations

import threading

import pytest
from bson import SON, Decimal128, Int64, Timestamp
from pymongo import InsertOne
from pymongo.errors import OperationFailure, PyMongoError, WriteError

from labkit.engine import EmbeddedClient
from labkit.engine.bson import keys as K
from labkit.engine.bson import values as V


def coll(docs=(), name: str = "c"):
    c = EmbeddedClient().audit[name]
    if docs:
        c.insert_many([dict(d) for d in docs])
    return c


def ids(cursor) -> list:
    return [d["_id"] for d in cursor]


def both_plans(c, f: dict) -> tuple[list, list]:
    """The ids through the planner's choice and through a collection scan."""
    return sorted(ids(c.find(f))), sorted(ids(c.find(f).hint([("$natural", 1)])))


def code_of(fn) -> int:
    with pytest.raises(PyMongoError) as ei:
        fn()
    return ei.value.code


# ------------------------------------------------------------------------------------- issue 13's repros

def test_sparse_index_never_answers_ne_nin_or_in_null():
    # manual "Sparse Indexes": not used where it would give incomplete results; planner_ixselect.cpp
    c = coll()
    c.create_index("c", sparse=True)
    c.insert_many([{"_id": 1}, {"_id": 2, "c": 1}, {"_id": 3, "c": 5}])
    assert sorted(ids(c.find({"c": {"$ne": 5}}))) == [1, 2]
    assert sorted(ids(c.find({"c": {"$nin": [5]}}))) == [1, 2]
    assert sorted(ids(c.find({"c": {"$in": [None]}}))) == [1]
    assert c.delete_many({"c": {"$ne": 5}}).deleted_count == 2
    assert ids(c.find()) == [3]


def test_bool_and_numbers_are_different_bson_types_through_every_plan():
    # manual "Comparison/Sort Order": true is a boolean, never equal to 1 or 1.0
    c = coll([{"_id": i, "c": v, "b": [{"y": 1}]} for i, v in ((1, 1), (2, True), (3, 1.0))])
    c.create_index("c")
    assert both_plans(c, {"c": True, "b": {"$elemMatch": {"y": 1}}}) == ([2], [2])
    assert both_plans(c, {"c": 1}) == ([1, 3], [1, 3])


def test_threads_lose_no_insert_and_no_increment():
    # issue 13 "Lost writes from threads": one client shared by threads keeps every write
    c = coll()
    c.create_index("x")

    def insert(k: int) -> None:
        for i in range(400):
            c.insert_one({"x": i, "k": k})

    def inc() -> None:
        for _ in range(300):
            c.update_one({"_id": "n"}, {"$inc": {"n": 1}})

    threads = [threading.Thread(target=insert, args=(k,)) for k in range(4)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    c.insert_one({"_id": "n", "n": 0})
    threads = [threading.Thread(target=inc) for _ in range(4)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    assert c.count_documents({"x": {"$gte": 0}}) == 1600  # through the index
    assert len(list(c.find({"k": {"$gte": 0}}).hint([("$natural", 1)]))) == 1600
    assert c.find_one({"_id": "n"})["n"] == 1200


def test_positional_operator_needs_the_query_to_match_an_array():
    # jstests/core/write/update/update_arraymatch*.js; manual "$ (update)": error 2 without a match
    c = coll([{"_id": 1, "a": [1, 2]}])
    with pytest.raises(WriteError) as ei:
        c.update_one({}, {"$set": {"a.$": 5}})
    assert ei.value.code == 2 and "did not find the match needed from the query" in str(ei.value)
    c.update_one({"a": 2}, {"$set": {"a.$": 5}})  # the manual's own example
    assert c.find_one()["a"] == [1, 5]
    c2 = coll([{"_id": 1, "a": {"b": 1}}], "c2")
    assert code_of(lambda: c2.update_one({"a.b": 1}, {"$inc": {"a.$": 1}})) == 2
    assert c2.find_one() == {"_id": 1, "a": {"b": 1}}  # no field literally named "$"


def test_all_positional_push_reaches_every_element():
    # jstests/core/write/update/update_arrayFilters.js ($[] paths); manual "$[]"
    c = coll([{"_id": 1, "a": [{"x": [1]}, {"x": []}]}])
    c.update_one({}, {"$push": {"a.$[].x": 9}})
    assert c.find_one() == {"_id": 1, "a": [{"x": [1, 9]}, {"x": [9]}]}


def test_min_and_max_compare_across_types_in_bson_order():
    # jstests/core/write/update/update_min_max_examples.js; manual "$min": BSON comparison order (null < bool)
    c = coll([{"_id": 1, "c": None}, {"_id": 2, "c": 5}])
    c.update_one({"_id": 1}, {"$min": {"c": True}})
    assert c.find_one({"_id": 1})["c"] is None
    c.update_one({"_id": 1}, {"$max": {"c": True}})
    assert c.find_one({"_id": 1})["c"] is True
    c.update_one({"_id": 2}, {"$min": {"c": "s"}})  # numbers < strings
    assert c.find_one({"_id": 2})["c"] == 5
    c.update_one({"_id": 2}, {"$max": {"c": "s"}})
    assert c.find_one({"_id": 2})["c"] == "s"


def test_query_nesting_over_100_is_the_servers_error():
    # matcher/expression_parser.cpp: "exceeded maximum query tree depth of 100" (BadValue 2)
    f: dict = {"a": 1}
    for _ in range(900):
        f = {"$and": [f]}
    assert code_of(lambda: list(coll([{"_id": 1, "a": 1}]).find(f))) == 2


def test_expr_on_a_missing_field_is_missing_not_an_error():
    # manual "$expr": a missing field path evaluates to missing; validators likewise (121 on failure)
    assert ids(coll([{"_id": 1}]).find({"$expr": {"$eq": ["$a.b", 1]}})) == []
    db = EmbeddedClient().audit_v
    db.create_collection("v", validator={"$expr": {"$gt": ["$a.b", 1]}})
    assert code_of(lambda: db.v.insert_one({"_id": 1})) == 121


def test_positional_projection_keeps_the_first_matching_element():
    # jstests/core/query/project/positional_projection.js
    assert list(coll([{"_id": 1, "a": [1, 2, 3]}]).find({"a": 2}, {"a.$": 1})) == [{"_id": 1, "a": [2]}]


def test_dotted_null_in_and_nin():
    # jstests/core/query/null_query_semantics.js: {a: 4} has no a.x, so {"a.x": null} matches it
    c = coll([{"_id": 1, "a": 4}, {"_id": 2, "a": [1]}])
    assert ids(c.find({"a.x": None})) == [1]
    assert ids(c.find({"a.x": {"$in": [None]}})) == [1]
    assert ids(c.find({"a.x": {"$nin": [None]}})) == [2]


def test_negations_through_arrays_of_scalars():
    # manual "$ne"/"$nin"/"$not": a document matches when NO element equals the value; missing fields match
    c = coll([{"_id": 1, "a": [1, 2]}, {"_id": 2, "a": 3}, {"_id": 3}])
    for f in ({"a": {"$not": {"$eq": 1}}}, {"a": {"$ne": 1}}, {"a": {"$nin": [1]}}):
        assert ids(c.find(f)) == [2, 3], f


def test_comparisons_with_null_and_all_and_size():
    # null_query_semantics.js ($gte/$lte null match null and missing; $gt/$lt null match nothing);
    # jstests/core/query/all/all.js ($all: [] matches nothing); jstests/core/query/size*.js (arrays only)
    c = coll([{"_id": 1}, {"_id": 2, "b": None}, {"_id": 3, "b": 1}])
    assert ids(c.find({"b": {"$gte": None}})) == [1, 2]
    assert ids(c.find({"b": {"$gt": None}})) == [] and ids(c.find({"b": {"$lt": None}})) == []
    assert ids(c.find({"b": {"$all": [None]}})) == [1, 2]
    assert ids(c.find({"b": {"$all": []}})) == []
    c2 = coll([{"_id": 1, "a": "ab"}, {"_id": 2, "a": 2}, {"_id": 3, "a": [1, 2]}], "c2")
    assert ids(c2.find({"a": {"$size": 2}})) == [3]


def test_empty_document_equality_matches_only_empty_documents():
    # manual "Query on Embedded/Nested Documents": equality on a document is exact
    c = coll([{"_id": 1, "a": {"x": {}}}, {"_id": 2, "a": 1}, {"_id": 3}])
    assert ids(c.find({"a.x": {}})) == [1]


def test_elem_match_value_form_on_nested_arrays_is_plan_independent():
    # jstests/core/query/elemmatch/elemmatch_value.js: the inner array [2] is not > 1 and < 3
    c = coll([{"_id": 1, "a": [[2]]}, {"_id": 2, "a": [2]}])
    c.create_index("a")
    assert both_plans(c, {"a": {"$elemMatch": {"$gt": 1, "$lt": 3}}}) == ([2], [2])


def test_type_codes_aliases_and_regex_options():
    # jstests/core/query/type/type*.js (numeric codes, arrays of codes, "number");
    # jstests/core/query/not/not2.js ($not with $regex and $options); regex/regex_invalid.js (51091)
    c = coll([{"_id": 1, "a": 1}, {"_id": 2, "a": 1.5}, {"_id": 3, "a": "s"}])
    assert ids(c.find({"a": {"$type": 16}})) == [1]
    assert ids(c.find({"a": {"$type": [1, 2]}})) == [2, 3]
    assert ids(c.find({"a": {"$type": "number"}})) == [1, 2]
    c2 = coll([{"_id": 1, "a": "ABC"}, {"_id": 2, "a": "x"}], "c2")
    assert ids(c2.find({"a": {"$not": {"$regex": "^a", "$options": "i"}}})) == [2]
    assert code_of(lambda: list(c2.find({"a": {"$regex": "("}}))) == 51091


def test_projection_through_scalars_and_mixed_arrays():
    # jstests/core/query/project/projection_semantics.js: an exclusion of a.x leaves a scalar a alone;
    # an inclusion keeps only the subdocuments' x (scalars in the array are dropped)
    assert list(coll([{"_id": 1, "a": 5}]).find({}, {"a.x": 0})) == [{"_id": 1, "a": 5}]
    assert list(coll([{"_id": 1, "a": [1, {"x": 2}]}]).find({}, {"a.x": 1})) == [{"_id": 1, "a": [{"x": 2}]}]


def test_sort_key_of_an_array_without_the_field_is_null():
    # jstests/core/query/sort/sort_array.js / sort_dotted_paths.js: a: [{y: 1}, {x: 5}] sorts on "a.x" with
    # both null (the missing one) and 5; ascending takes the smallest (null), descending the largest (5)
    c = coll([{"_id": 1, "a": [{"y": 1}, {"x": 5}]}, {"_id": 2, "a": {"x": 3}}])
    assert ids(c.find().sort("a.x", 1)) == [1, 2]
    assert ids(c.find().sort("a.x", -1)) == [1, 2]


def test_documents_over_16_mib_from_stages_fail():
    # manual "BSON Document Size": 16 MiB for every document a stage produces (BSONObjectTooLarge 10334)
    db = EmbeddedClient().audit_big
    db.big.insert_many([{"k": 1, "s": "x" * (1 << 20)} for _ in range(17)])
    db.one.insert_one({"k": 1})
    lookup = [{"$lookup": {"from": "big", "localField": "k", "foreignField": "k", "as": "all"}}]
    assert code_of(lambda: list(db.one.aggregate(lookup))) == 10334
    assert code_of(lambda: list(db.big.aggregate([{"$group": {"_id": None, "a": {"$push": "$s"}}}]))) == 10334
    assert code_of(lambda: list(db.big.aggregate([{"$facet": {"a": [{"$match": {}}]}}]))) == 10334


def test_max_time_ms_expires_with_error_50():
    # manual "cursor.maxTimeMS()": MaxTimeMSExpired (50)
    c = coll([{"_id": i, "a": i} for i in range(20000)])
    assert code_of(lambda: list(c.find({"a": {"$gte": 0}}).sort("a", -1).max_time_ms(1))) == 50


def test_id_rules():
    # manual "Field Names" / "_id Field"; ops/insert.cpp fixDocumentForInsert; update/update_driver.cpp
    c = coll([{"_id": 2, "a": 1}])
    c.replace_one({"_id": {"$gt": 1}}, {"a": 2})  # the matched _id is kept
    assert c.find_one() == {"_id": 2, "a": 2}
    c.update_one({"_id": 2}, [{"$replaceRoot": {"newRoot": {"b": 1}}}])
    assert c.find_one() == {"_id": 2, "b": 1}
    c.update_one({"_id": None}, {"$set": {"a": 1}}, upsert=True)
    assert c.find_one({"_id": None}) == {"_id": None, "a": 1}
    assert code_of(lambda: c.insert_one({"_id": [1, 2]})) == 2
    c.insert_one({"_id": SON([("a", 1), ("b", 2)])})
    c.insert_one({"_id": SON([("b", 2), ("a", 1)])})  # field order matters: not a duplicate
    c.insert_one({"x": 1, "_id": 5})
    assert list(c.find_one({"_id": 5})) == ["_id", "x"]  # _id stored first
    assert ids(c.find({"_id": {"$type": "null"}})) == [None]


def test_a_drop_waits_for_the_transaction_that_wrote_to_the_collection():
    # manual "Production Considerations" for transactions (Pending DDL Operations and Transactions): a drop of a
    # collection an open transaction wrote to waits behind it (MaxTimeMSExpired 50 when its maxTimeMS passes
    # first, nothing dropped); the transaction then commits (test_engine_ddl_waits_for_txn.py: in-process and
    # over TCP, the waiting drop running after the commit)
    client = EmbeddedClient()
    db = client.audit_tx
    db.t.insert_one({"_id": 1})
    with client.start_session() as s:
        s.start_transaction()
        db.t.insert_one({"_id": 2}, session=s)
        assert code_of(lambda: db.command({"drop": "t", "maxTimeMS": 50})) == 50
        s.commit_transaction()
    assert sorted(d["_id"] for d in db.t.find()) == [1, 2]
    db.t.drop()
    assert "t" not in db.list_collection_names()


def test_an_error_inside_a_transaction_aborts_it():
    # manual "Transactions": a failed operation aborts the transaction; commit then says NoSuchTransaction
    client = EmbeddedClient()
    db = client.audit_tx
    db.t.insert_one({"_id": 1, "a": "s"})
    s = client.start_session()
    s.start_transaction()
    db.t.insert_one({"_id": 2}, session=s)
    assert code_of(lambda: db.t.update_one({"_id": 1}, {"$inc": {"a": 1}}, session=s)) == 14
    assert code_of(s.commit_transaction) == 251
    assert db.t.count_documents({}) == 1


def test_features_valid_on_a_standalone_80():
    # issue 13 "Missing everyday features": array filters, top-level $-prefixed / dotted field names (5.0+),
    # Database.aggregate with $documents, bulk_write(let=...)
    c = coll([{"_id": 1, "a": [1, 5, 9]}])
    c.update_one({}, {"$set": {"a.$[e]": 0}}, array_filters=[{"e": {"$gt": 3}}])
    assert c.find_one()["a"] == [1, 0, 0]
    c.insert_one({"_id": 2, "$x": 1, "a.b": 2})
    assert c.find_one({"_id": 2}) == {"_id": 2, "$x": 1, "a.b": 2}
    assert list(EmbeddedClient().audit.aggregate([{"$documents": [{"a": 1}]}])) == [{"a": 1}]
    from pymongo import UpdateOne
    c.bulk_write([UpdateOne({"$expr": {"$eq": ["$_id", "$$v"]}}, {"$set": {"b": 1}})], let={"v": 1})
    assert c.find_one({"_id": 1})["b"] == 1


# ---------------------------------------------------------------------------- count_documents arguments

@pytest.mark.parametrize("kw, code", [
    ({"skip": -1}, 5107200), ({"skip": "a"}, 5107200), ({"skip": 1.5}, 5107200), ({"skip": float("inf")}, 5107200),
    ({"skip": float("nan")}, 5107200), ({"skip": Decimal128("sNaN")}, 5107200), ({"skip": 2 ** 70}, 5107200),
    ({"limit": -1}, 5107201), ({"limit": True}, 5107201), ({"limit": 0}, 15958), ({"bogus": 1}, 40415),
    ({"maxTimeMS": -1}, 2),
    # pymongo adds the stage whenever the keyword is given, so skip=None sends {$skip: null}
    ({"skip": None}, 5107200), ({"limit": None}, 5107201),
])
def test_count_documents_arguments_are_checked_as_the_server_checks_its_stages(kw, code):
    # pymongo's count_documents sends [{$match}, {$skip}, {$limit}, {$group}]; document_source_skip.cpp /
    # document_source_limit.cpp (5107200/5107201, 15958), unknown aggregate fields 40415
    c = coll([{"_id": i} for i in range(11)])
    assert code_of(lambda: c.count_documents({}, **kw)) == code


def test_count_documents_filter_must_be_a_document_and_numbers_of_any_type_count():
    # document_source_match.cpp: "the match filter must be an expression in an object" (15959)
    c = coll([{"_id": i} for i in range(11)])
    assert code_of(lambda: c.count_documents([])) == 15959
    assert code_of(lambda: c.count_documents(None)) == 15959
    assert c.count_documents({}, skip=Decimal128("2")) == 9
    assert c.count_documents({}, limit=Int64(3)) == 3
    assert c.count_documents({}, skip=20) == 0
    assert c.count_documents({"_id": {"$gt": 3}}, skip=2.0, limit=3) == 3


# ------------------------------------------------------------------------------- Timestamp(0, 0) rules

def test_empty_timestamps_are_filled_only_at_the_top_level_of_inserts_and_replacements():
    # jstests/core/write/empty_ts/empty_ts.js; ops/insert.cpp fixDocumentForInsert (top level only)
    empty = Timestamp(0, 0)
    c = coll()
    c.insert_one({"_id": 1, "t": empty, "n": {"t": empty}, "l": [empty]})
    c.insert_many([{"_id": 2, "t": empty}])
    c.bulk_write([InsertOne({"_id": 3, "t": empty})])
    c.insert_many([{"_id": i, "t": 0} for i in (4, 5)])
    c.replace_one({"_id": 4}, {"t": empty})
    c.replace_one({"_id": 6}, {"t": empty}, upsert=True)
    c.find_one_and_replace({"_id": 7}, {"t": empty}, upsert=True)
    c.update_one({"_id": 5}, {"$set": {"t": empty}})
    c.update_one({"_id": 8}, {"$set": {"t": empty}}, upsert=True)
    c.update_one({"_id": 9}, [{"$set": {"t": empty}}], upsert=True)
    got = {d["_id"]: d for d in c.find()}
    for i in (1, 2, 3, 4, 6, 7):
        assert got[i]["t"] != empty and got[i]["t"].time > 0, i
    for i in (5, 8, 9):
        assert got[i]["t"] == empty, i
    assert got[1]["n"] == {"t": empty} and got[1]["l"] == [empty]  # nested ones are kept


def test_empty_timestamps_in_queries_are_values_not_the_current_time():
    # empty_ts.js: findOne({_id: Timestamp(0, 0)}) finds the document
    empty = Timestamp(0, 0)
    c = coll()
    c.insert_one({"_id": empty, "a": 9})
    c.insert_one({"_id": 1, "n": {"t": empty}})
    c.insert_one({"_id": 2, "n": {"t": Timestamp(1, 1)}})
    assert c.find_one({"_id": empty}) == {"_id": empty, "a": 9}
    assert ids(c.find({"n.t": empty})) == [1]
    assert ids(c.find({"n.t": {"$gt": empty}})) == [2]
    assert c.count_documents({"n.t": empty}) == 1
    assert ids(c.aggregate([{"$match": {"n.t": empty}}])) == [1]
    assert c.delete_many({"n.t": empty}).deleted_count == 1


# -------------------------------------------------------------------------- exact numbers in index keys

DECIMALS = [Decimal128("0.1"), 0.1, Decimal128("0.1000000000000000055511151231257827"), 2 ** 53 + 1,
            Decimal128("9007199254740993"), Decimal128("9007199254740993.5"), 2 ** 53, Int64(2 ** 63 - 1),
            Decimal128("9223372036854775807"), float(2 ** 63), Decimal128("1E-6176"), 0.0, Decimal128("-0.1"),
            -0.1, Decimal128("1E6111"), float("inf"), Decimal128("Infinity"), Decimal128("-1E6111"), 5e-324,
            Decimal128("5E-324"), Decimal128("1.5"), 1.5, 1, Decimal128("1.0"), float("nan"), Decimal128("NaN")]


def test_index_keys_order_numbers_exactly_as_bson_comparison():
    # manual "Comparison/Sort Order": numbers compare by exact value across int, long, double and decimal
    # (Decimal128 0.1 is not the double 0.1); key_string.cpp keeps that order in index keys
    for a in DECIMALS:
        for b in DECIMALS:
            ka, kb = K.encode(a), K.encode(b)
            assert (ka > kb) - (ka < kb) == V.compare(a, b), (a, b)
            ka, kb = K.encode([a, "z"]), K.encode([b, 1])  # prefix-free inside compound keys
            if V.compare(a, b):
                assert (ka > kb) - (ka < kb) == V.compare(a, b), (a, b)


def test_decimal_equality_through_an_index_is_exact():
    # jstests/core/query/decimal/decimal_find_query.js: 0.1 as a double and as a decimal are different values
    c = coll([{"_id": 1, "a": Decimal128("0.1")}, {"_id": 2, "a": 0.1}, {"_id": 3, "a": Decimal128("1.0")},
              {"_id": 4, "a": 1}])
    c.create_index("a")
    assert both_plans(c, {"a": 0.1}) == ([2], [2])
    assert both_plans(c, {"a": Decimal128("0.1")}) == ([1], [1])
    assert both_plans(c, {"a": {"$gt": 0.1, "$lt": 2}}) == ([3, 4], [3, 4])
    assert both_plans(c, {"a": {"$gte": Decimal128("0.1"), "$lt": 0.1}}) == ([1], [1])
    assert both_plans(c, {"a": 1}) == ([3, 4], [3, 4])


# ---------------------------------------------------------------------------------------- sort patterns

@pytest.mark.parametrize("sort, code", [
    ([("", 1)], 40352), ([("a..b", 1)], 15998), ([("a.", 1)], 15998), ([("$x", 1)], 16410),
    ([("a.$x", 1)], 16410), ([("a", 1), ("a", -1)], 7472500), ([("a", 2)], 15975),
])
def test_sort_keys_are_field_paths(sort, code):
    # query/sort_pattern.cpp (FieldPath of each key, 7472500 duplicates, 15975 direction) and
    # pipeline/field_path.cpp (40352 empty, 15998 empty component, 16410 '$'-prefixed component)
    c = coll([{"_id": 1, "a": 1}, {"_id": 2, "a": 2}])
    assert code_of(lambda: list(c.find().sort(sort))) == code
    if len(SON(sort)) == len(sort):  # a $sort stage is a document: it cannot hold a key twice
        assert code_of(lambda: list(c.aggregate([{"$sort": SON(sort)}]))) == code


# ------------------------------------------------------------------------- found by the property tests

def test_bit_tests_on_decimals_round_ties_to_even():
    # matcher/expression_leaf.cpp BitTestMatchExpression: a non-double number is tested as numberLong(), which
    # for Decimal128 is toLong() with ties-to-even rounding (bsonelement.h, decimal128.h); NaN and
    # out-of-range decimals give LLONG_MIN (only bit 63 and up set). Double NaN never matches.
    c = coll([{"_id": 1, "a": Decimal128("2.5")}, {"_id": 2, "a": Decimal128("3.5")}, {"_id": 3, "a": 2.5},
              {"_id": 4, "a": Decimal128("NaN")}, {"_id": 5, "a": float("nan")}, {"_id": 6, "a": Decimal128("1E40")}])
    assert ids(c.find({"a": {"$bitsAllSet": [1]}})) == [1]  # 2.5 -> 2 (binary 10); 3.5 -> 4 (100)
    assert ids(c.find({"a": {"$bitsAllSet": [2]}})) == [2]
    assert ids(c.find({"a": {"$bitsAllSet": [63]}})) == [4, 6]
    assert ids(c.find({"a": {"$bitsAllClear": [0]}})) == [1, 2, 4, 6]


def test_a_stored_regex_matches_only_the_same_regex_through_every_index():
    # matcher/expression_leaf.cpp RegexMatchExpression: a BSON regex value matches when pattern and flags are
    # the same; a compound index's key filter must not let any other stored regex through
    from bson import Regex
    c = coll([{"_id": 0, "c": Regex("^a")}, {"_id": 1, "c": Regex("^a", "i")}, {"_id": 2, "c": "ab"}])
    for spec in ([("c", 1)], [("a", 1), ("c", 1)], [("a", 1), ("c", -1)]):
        c.create_index(spec)
        for f, want in (({"c": {"$regex": "b"}}, [2]), ({"c": {"$regex": "^a"}}, [0, 2]),
                        ({"c": {"$regex": "^a", "$options": "i"}}, [1, 2]), ({"c": {"$regex": "a"}}, [2])):
            assert sorted(ids(c.find(f).hint(spec))) == want, (spec, f)
            assert sorted(ids(c.find(f).hint([("$natural", 1)]))) == want, f


def test_decimal_nan_satisfies_no_lt_or_lte_against_a_number():
    # matcher/expression_leaf.cpp ComparisonMatchExpressionBase: a double or decimal NaN is equal to NaN and
    # otherwise compares false (manual "Comparison/Sort Order": NaN sorts below every number, but $lt 0 is false)
    c = coll([{"_id": 1, "a": Decimal128("NaN")}, {"_id": 2, "a": float("nan")}, {"_id": 3, "a": Decimal128("-1")}])
    for f in ({"$lt": 0}, {"$lte": 0}, {"$lt": 0.5}, {"$lte": Int64(0)}):
        assert ids(c.find({"a": f})) == [3], f
    assert ids(c.find({"a": {"$gte": float("nan")}})) == [1, 2]
    c.create_index("a")
    assert both_plans(c, {"a": {"$lt": 0}}) == ([3], [3])


def test_in_compares_decimals_with_other_numbers_by_value():
    # manual "$in": equality per element, numbers by value across types (1 == NumberDecimal("1"));
    # found by the numbers property test: {$in: [inf]} missed NumberDecimal("Infinity")
    c = coll([{"_id": 1, "a": Decimal128("1")}, {"_id": 2, "a": Decimal128("Infinity")}, {"_id": 3, "a": Decimal128("1.5")},
              {"_id": 4, "a": Decimal128("0.1")}, {"_id": 5, "a": Decimal128("NaN")}])
    assert ids(c.find({"a": {"$in": [1, float("inf"), 1.5, 0.1]}})) == [1, 2, 3]
    assert ids(c.find({"a": {"$nin": [1, Int64(7)]}})) == [2, 3, 4, 5]
    assert ids(c.find({"a": {"$in": [float("nan")]}})) == [5]
    c.create_index("a")
    assert both_plans(c, {"a": {"$in": [1, float("inf"), 1.5, 0.1]}}) == ([1, 2, 3], [1, 2, 3])


@pytest.mark.parametrize("proj", [{"$e": 1}, {"$e": 0}, {"a.$x": 1}, {"$z": "x"}, {"a.$": 0}])
def test_projected_names_are_field_paths(proj):
    # query/projection_parser.cpp: every inclusion, exclusion and literal builds a FieldPath, so a
    # '$'-prefixed component fails with 16410, and "a.$": 0 (no positional exclusion) as well
    c = coll([{"_id": 1, "a": [1, 2, 3], "e": 5}])
    assert code_of(lambda: list(c.find({"a": 3}, proj))) == 16410


def test_count_documents_on_a_view_checks_skip_and_limit_like_a_collection():
    # pymongo's count_documents sends {$skip: null} for skip=None, on a view too (document_source_skip.cpp)
    db = EmbeddedClient().t
    db.c.insert_many([{"_id": i} for i in range(5)])
    db.create_collection("v", viewOn="c", pipeline=[])
    assert db.v.count_documents({}, skip=1, limit=2) == 2
    assert code_of(lambda: db.v.count_documents({}, skip=None)) == 5107200
    assert code_of(lambda: db.v.count_documents({}, limit=None)) == 5107201
    assert code_of(lambda: db.v.count_documents({}, limit=0)) == 15958


@pytest.mark.parametrize("projection, code", [
    ({"z": {"$x": 1}}, 31325),            # one $-field naming no expression: "Unknown expression $x"
    ({"a": 0, "z": {"$x": 1}}, 31325),    # checked before the inclusion/exclusion kind
    ({"z": {"$x": 1, "y": 1}}, 16410),    # two fields: a sub-projection, whose "$x" is no FieldPath
    ({"z": {"y": 1, "$x": {"a": 1}}}, 16410),
    ({"a": 0, "z": {"$add": [1, 2]}}, 31252),
])
def test_projection_unknown_expressions_and_dollar_fields(projection, code):
    # src/mongo/db/query/projection_parser.cpp: parseSubObject (31325 when the name is no expression and no
    # field path), parseElement/parseInclusion build a FieldPath for each field (16410)
    c = coll([{"_id": 1, "a": 1}])
    assert code_of(lambda: c.find({}, projection).to_list()) == code
    assert code_of(lambda: c.aggregate([{"$project": projection}]).to_list()) == code
    assert c.find({}, {"z": {"$add": [1, 2]}}).to_list() == [{"_id": 1, "z": 3}]


def test_views_and_time_series_answer_with_pymongo_command_cursors():
    # pymongo's CommandCursor API (alive, cursor_id, try_next, to_list, close, with) on every aggregate and
    # listIndexes result, views and time-series collections included (mongomock's cursor has none of these)
    import datetime
    db = EmbeddedClient().t
    db.c.insert_many([{"_id": i, "a": i} for i in range(5)])
    db.create_collection("v", viewOn="c", pipeline=[{"$match": {"a": {"$gte": 2}}}])
    with db.v.aggregate([{"$sort": {"_id": 1}}], batchSize=1) as cur:
        assert cur.cursor_id != 0 and cur.alive
        assert cur.try_next() == {"_id": 2, "a": 2}
        assert cur.to_list() == [{"_id": 3, "a": 3}, {"_id": 4, "a": 4}]
        assert not cur.alive and cur.cursor_id == 0
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    db.ts.insert_one({"t": datetime.datetime(2024, 1, 1), "m": 1, "x": 1})
    names = [ix["name"] for ix in db.ts.list_indexes().to_list()]
    assert names == ["m_1_t_1"]
    assert db.ts.aggregate([{"$project": {"_id": 0, "x": 1}}]).to_list() == [{"x": 1}]


def test_write_errors_carry_the_servers_errmsg_in_every_write_path():
    # batch_write_command_insert.js: writeErrors[].errmsg is the server's message; pymongo's str() of an error
    # appends ", full error: {...}", which must not leak into the details (bulk_write, insert_many, time series)
    import datetime
    from pymongo.errors import BulkWriteError
    db = EmbeddedClient().t
    db.c.create_index("a", unique=True)
    db.create_collection("ts", timeseries={"timeField": "t"})
    for call in (lambda: db.c.bulk_write([InsertOne({"a": 1}), InsertOne({"a": 1})]),
                 lambda: db.c.insert_many([{"a": 2}, {"a": 2}]),
                 lambda: db.ts.insert_many([{"t": datetime.datetime(2024, 1, 1)}, {"t": 1}])):
        with pytest.raises(BulkWriteError) as e:
            call()
        msg = e.value.details["writeErrors"][0]["errmsg"]
        assert "full error" not in msg and msg


@pytest.mark.parametrize("key", [[("$**", 1)], [("attrs.$**", 1)]])
def test_wildcard_indexes_are_refused_rather_than_kept_unused(key):
    # A server plans {a: 3} on a wildcard index (jstests/core/index/wildcard/); the embedded planner has no
    # wildcard plans, so creating one would show COLLSCANs where the server shows IXSCANs: refused clearly.
    c = coll([{"_id": 1, "a": 3}])
    with pytest.raises(OperationFailure) as e:
        c.create_index(key)
    assert e.value.code == 115 and "wildcard" in str(e.value) and "not modelled" in str(e.value)
    assert list(c.index_information()) == ["_id_"]


def test_an_int_beyond_64_bits_fails_as_pymongo_fails_before_sending():
    # bson's encoder raises OverflowError("MongoDB can only handle up to 8-byte ints") in the driver, before any
    # command is sent: nothing is written, whatever the profiler level (it used to become InternalError 1)
    db = EmbeddedClient().t
    for level in (0, 2):
        db.command("profile", level)
        with pytest.raises(OverflowError, match="8-byte ints"):
            db.c.insert_one({"a": 2 ** 70})
        with pytest.raises(OverflowError, match="8-byte ints"):
            db.c.insert_many([{"a": 1}, {"a": 2 ** 70}])
    assert db.c.count_documents({}) == 0


def test_aggregate_hint_plans_the_leading_cursor_stage_with_that_index():
    # aggregate's hint goes to the planner of the pipeline's $cursor query (manual: db.collection.aggregate()
    # "hint" option; jstests/core/query/agg_hint.js asserts the hinted index in explain)
    c = coll([{"_id": i, "a": i % 10, "b": i} for i in range(100)])
    c.create_index("a")
    c.create_index("b")
    p = [{"$match": {"a": 3, "b": {"$gte": 50}}}, {"$group": {"_id": None, "n": {"$sum": 1}}}]
    assert c.aggregate(p, hint="b_1").to_list() == c.aggregate(p).to_list() == [{"_id": None, "n": 5}]
    for hint, keys in (("b_1", 50), ([("a", 1)], 10)):
        cmd = {"aggregate": "c", "pipeline": p, "cursor": {}, "hint": hint if isinstance(hint, str) else dict(hint)}
        ex = c.database.command("explain", cmd, verbosity="executionStats")
        assert ex["executionStats"]["totalKeysExamined"] == keys
    assert code_of(lambda: c.aggregate(p, hint="nope").to_list()) == 2
    # no $match: the hinted index is scanned whole, so documents come in its order
    assert [d["_id"] for d in c.aggregate([{"$limit": 3}], hint="a_1")] == [0, 10, 20]
    assert code_of(lambda: c.aggregate([], hint=[("b", -1)]).to_list()) == 2  # no such index
