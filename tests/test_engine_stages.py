"""Aggregation stages and $group accumulators on the embedded engine, with the server's results and error codes
(issue 13). Facts come from MongoDB's manual pages of each stage/operator and the server's jstests named in
each test (jstests/aggregation/accumulators/*, jstests/aggregation/sources/*); no mongomock stage handler is
involved (the first test makes every one of them raise)."""
from __future__ import annotations

import datetime as dt

import mongomock.aggregate as mm_aggregate
import pytest
from bson import Decimal128, Int64
from pymongo.errors import OperationFailure

from labkit.engine import EmbeddedClient


@pytest.fixture
def db():
    return EmbeddedClient()["stages"]


def _code(db, coll: str, pipeline: list) -> int:
    with pytest.raises(OperationFailure) as ei:
        list(db[coll].aggregate(pipeline))
    return ei.value.code


def _seed(db):
    db.c.insert_many([{"_id": i, "g": i % 3, "v": i, "s": "x%d" % (i % 2)} for i in range(10)])
    return db.c


BROAD = [
    [{"$group": {"_id": "$g", "n": {"$sum": 1}, "a": {"$avg": "$v"}, "m": {"$median": {"input": "$v",
                                                                                    "method": "approximate"}}}}],
    [{"$group": {"_id": None, "t": {"$topN": {"n": 2, "sortBy": {"v": -1}, "output": "$v"}},
                 "mo": {"$mergeObjects": {"k": "$v"}}, "sd": {"$stdDevSamp": "$v"}}}],
    [{"$bucket": {"groupBy": "$v", "boundaries": [0, 5, 10]}}],
    [{"$bucketAuto": {"groupBy": "$v", "buckets": 3}}],
    [{"$count": "n"}],
    [{"$sortByCount": "$s"}],
    [{"$unwind": {"path": "$arr", "preserveNullAndEmptyArrays": True}}],
    [{"$setWindowFields": {"sortBy": {"v": 1}, "output": {"r": {"$rank": {}}}}}],
    [{"$densify": {"field": "v", "range": {"step": 1, "bounds": "full"}}}],
    [{"$fill": {"output": {"z": {"value": 0}}}}],
    [{"$redact": "$$KEEP"}],
    [{"$sample": {"size": 2}}],
    [{"$skip": 1}, {"$limit": 2}],
    [{"$addFields": {"w": 1}}, {"$project": {"w": 1}}, {"$replaceRoot": {"newRoot": {"w": "$w"}}}],
    [{"$facet": {"a": [{"$count": "n"}], "b": [{"$group": {"_id": "$s"}}]}}],
    [{"$unionWith": "c"}, {"$count": "n"}],
    [{"$lookup": {"from": "c", "localField": "g", "foreignField": "v", "as": "j"}}],
]


def test_no_stage_comes_from_mongomock(db, monkeypatch):
    # issue 13: every stage is the engine's own; mongomock's pipeline and stage handlers are never called
    def boom(*a, **k):
        raise AssertionError("mongomock stage handler called")
    monkeypatch.setattr(mm_aggregate, "process_pipeline", boom)
    for name in dir(mm_aggregate):
        if name.startswith("_handle_"):
            monkeypatch.setattr(mm_aggregate, name, boom)
    _seed(db)
    for p in BROAD:
        list(db.c.aggregate(p))
    assert _code(db, "c", [{"$nosuchstage": {}}]) == 40324


# ------------------------------------------------------------------------------------------- $group
def test_group_parse_errors(db):
    # accumulation_statement.cpp / document_source_group.cpp codes (manual $group)
    _seed(db)
    assert _code(db, "c", [{"$group": {"n": {"$sum": 1}}}]) == 15955
    assert _code(db, "c", [{"$group": {"_id": 1, "n": {"$nosuch": 1}}}]) == 15952
    assert _code(db, "c", [{"$group": {"_id": 1, "n": 1}}]) == 40234
    assert _code(db, "c", [{"$group": {"_id": 1, "a.b": {"$sum": 1}}}]) == 40235
    assert _code(db, "c", [{"$group": {"_id": 1, "$a": {"$sum": 1}}}]) == 40236
    assert _code(db, "c", [{"$group": {"_id": 1, "n": {"$sum": [1, 2]}}}]) == 40237
    assert _code(db, "c", [{"$group": {"_id": 1, "n": {"$sum": 1, "$max": 1}}}]) == 40238
    assert _code(db, "c", [{"$group": {"_id": 1, "n": {"$count": {"x": 1}}}}]) == 14


def test_group_keys_compare_as_bson_values(db):
    # manual $group: _id values are grouped by BSON equality: 1, 1.0 and NumberLong(1) are one group;
    # embedded documents compare field by field in order, so {a,b} and {b,a} are two groups
    db.k.insert_many([{"k": 1}, {"k": 1.0}, {"k": Int64(1)}, {"k": Decimal128("1")}, {"k": {"a": 1, "b": 2}},
                      {"k": {"b": 2, "a": 1}}, {"k": None}, {}, {"k": True}])
    out = list(db.k.aggregate([{"$group": {"_id": "$k", "n": {"$sum": 1}}}]))
    counts = sorted(d["n"] for d in out)
    assert counts == [1, 1, 1, 2, 4]  # numbers; {a,b}; {b,a}; true; null and missing together
    out = list(db.k.aggregate([{"$group": {"_id": "$k", "n": {"$sum": 1}, "m": {"$median": {
        "input": 1, "method": "approximate"}}}}]))  # the general (non fast-path) grouping agrees
    assert sorted(d["n"] for d in out) == [1, 1, 1, 2, 4]


def test_sum_avg_min_max_first_last_null_and_missing(db):
    # jstests/aggregation/accumulators/avg_ignore_missing.js, avg_null_no_input.js, first_last.js:
    # $avg/$sum ignore non-numbers ($sum of nothing is 0, $avg null); $min/$max skip null and missing;
    # $first/$last keep null and turn missing into null; $push skips missing
    db.n.insert_many([{"_id": 1, "v": None}, {"_id": 2}, {"_id": 3, "v": "s"}, {"_id": 4, "v": 2},
                      {"_id": 5, "v": 4}, {"_id": 6}])
    spec = {"_id": None, "s": {"$sum": "$v"}, "a": {"$avg": "$v"}, "mn": {"$min": "$v"}, "mx": {"$max": "$v"},
            "f": {"$first": "$v"}, "l": {"$last": "$v"}, "p": {"$push": "$v"}, "st": {"$addToSet": "$v"}}
    for extra in ({}, {"sd": {"$stdDevPop": "$v"}}):  # fast path, then the general path
        out = list(db.n.aggregate([{"$sort": {"_id": 1}}, {"$group": dict(spec, **extra)}]))[0]
        assert (out["s"], out["a"], out["mn"], out["mx"], out["f"], out["l"]) == (6, 3.0, 2, "s", None, None)
        assert out["p"] == [None, "s", 2, 4]
        assert sorted(map(str, out["st"])) == ["2", "4", "None", "s"]
    out = list(db.n.aggregate([{"$match": {"v": "nothing"}}, {"$group": {"_id": None, "s": {"$sum": "$v"}}}]))
    assert out == []
    out = list(db.n.aggregate([{"$group": {"_id": None, "s": {"$sum": "$nope"}, "a": {"$avg": "$nope"},
                                           "sd": {"$stdDevSamp": "$nope"}}}]))
    assert out == [{"_id": None, "s": 0, "a": None, "sd": None}]


def test_sum_types(db):
    # manual $sum: int overflowing int32 becomes long; any double makes a double
    db.t.insert_many([{"v": 2 ** 31 - 1}, {"v": 1}])
    out = list(db.t.aggregate([{"$group": {"_id": None, "s": {"$sum": "$v"}, "x": {"$stdDevPop": "$v"}}}]))[0]
    assert out["s"] == 2 ** 31 and isinstance(out["s"], Int64)
    db.t.insert_one({"v": 0.5})
    out = list(db.t.aggregate([{"$group": {"_id": None, "s": {"$sum": "$v"}, "x": {"$stdDevPop": "$v"}}}]))[0]
    assert out["s"] == 2 ** 31 + 0.5 and isinstance(out["s"], float)


def test_merge_objects_and_std_dev(db):
    # manual $mergeObjects (later fields win, null skipped, non-object 40400); $stdDevPop / $stdDevSamp
    db.m.insert_many([{"_id": 1, "o": {"a": 1, "b": 1}, "v": 2}, {"_id": 2, "o": None, "v": 4},
                      {"_id": 3, "o": {"b": 2}, "v": 4}, {"_id": 4, "v": 4}, {"_id": 5, "v": 5}, {"_id": 6, "v": 5},
                      {"_id": 7, "v": 7}, {"_id": 8, "v": 9}])
    out = list(db.m.aggregate([{"$sort": {"_id": 1}}, {"$group": {
        "_id": None, "o": {"$mergeObjects": "$o"}, "p": {"$stdDevPop": "$v"}, "s": {"$stdDevSamp": "$v"}}}]))[0]
    assert out["o"] == {"a": 1, "b": 2}
    assert out["p"] == 2.0  # the manual's classic population example 2,4,4,4,5,5,7,9
    assert abs(out["s"] - 2.138089935299395) < 1e-12
    db.m.insert_one({"_id": 9, "o": 5})
    assert _code(db, "m", [{"$group": {"_id": None, "o": {"$mergeObjects": "$o"}}}]) == 40400


def test_median_and_percentile(db):
    # jstests/aggregation/accumulators/median_approx.js: non-numeric ignored; all non-numeric -> null;
    # groups {k:0: [2, 1]} -> 1, {k:1: [2, 0]} -> 0 (the rank-based value for small inputs), {k:2} -> null
    db.p.insert_many([{"k": 0, "x": 2}, {"k": 0, "x": 1}, {"k": 1, "x": 2}, {"k": 2}, {"k": 0, "x": "str"},
                      {"k": 1, "x": 0}])
    out = list(db.p.aggregate([{"$group": {"_id": "$k", "m": {"$median": {"input": "$x", "method": "approximate"}},
                                           "p": {"$percentile": {"input": "$x", "p": [0.5, 1.0, 0.0],
                                                                 "method": "approximate"}}}},
                               {"$sort": {"_id": 1}}]))
    assert [d["m"] for d in out] == [1, 0, None]
    assert [d["p"] for d in out] == [[1.0, 2.0, 1.0], [0.0, 2.0, 0.0], [None, None, None]]
    db.q.insert_many([{"x": i} for i in range(1, 11)])
    out = list(db.q.aggregate([{"$group": {"_id": None, "p": {"$percentile": {
        "input": "$x", "p": [0.1, 0.25, 0.5, 0.95], "method": "approximate"}}}}]))
    assert out[0]["p"] == [1.0, 3.0, 5.0, 10.0]  # rank max(0, ceil(n*p) - 1) of the sorted values


def test_percentile_syntax_errors(db):
    # jstests/aggregation/accumulators/percentiles_syntax.js
    db.q.insert_one({"x": 1})

    def pct(spec):
        return _code(db, "q", [{"$group": {"_id": None, "p": {"$percentile": spec}}}])
    assert pct({"input": "$x", "p": [0.5]}) == 40414  # method is required
    assert pct({"input": "$x", "p": [0.5], "method": "fancy"}) == 2
    assert pct({"input": "$x", "p": [], "method": "approximate"}) == 7750301
    assert pct({"input": "$x", "p": ["a"], "method": "approximate"}) == 7750302
    assert pct({"input": "$x", "p": [1.5], "method": "approximate"}) == 7750303
    assert pct({"input": "$x", "p": "$x", "method": "approximate"}) == 7750300
    assert pct({"input": "$x", "p": [0.5], "method": "approximate", "extra": 1}) == 40415
    assert pct(5) == 7429703
    assert _code(db, "q", [{"$group": {"_id": None, "m": {"$median": {"input": "$x"}}}}]) == 40414


def test_top_bottom_and_n_accumulators(db):
    # jstests/aggregation/accumulators/top_bottom_top_n_bottom_n.js, first_n_last_n.js, min_n_max_n.js
    db.s.insert_many([{"_id": 1, "g": "a", "score": 5, "p": "x"}, {"_id": 2, "g": "a", "score": 9, "p": "y"},
                      {"_id": 3, "g": "a", "score": 1}, {"_id": 4, "g": "a", "score": None, "p": "w"},
                      {"_id": 5, "g": "a", "score": 9, "p": "z"}])
    out = list(db.s.aggregate([{"$sort": {"_id": 1}}, {"$group": {
        "_id": "$g",
        "top": {"$top": {"sortBy": {"score": -1}, "output": "$p"}},
        "bottom": {"$bottom": {"sortBy": {"score": -1}, "output": ["$p", "$score"]}},
        "topN": {"$topN": {"n": 3, "sortBy": {"score": -1}, "output": "$p"}},
        "bottomN": {"$bottomN": {"n": 2, "sortBy": {"score": -1}, "output": "$_id"}},
        "firstN": {"$firstN": {"input": "$p", "n": 4}}, "lastN": {"$lastN": {"input": "$score", "n": 2}},
        "maxN": {"$maxN": {"input": "$score", "n": 3}}, "minN": {"$minN": {"input": "$score", "n": 2}}}}]))[0]
    assert out["top"] == "y"                       # ties keep the first document seen (_id 2 before _id 5)
    assert out["bottom"] == ["w", None]            # null sorts lowest, so last in descending order
    assert out["topN"] == ["y", "z", "x"]
    assert out["bottomN"] == [3, 4]
    assert out["firstN"] == ["x", "y", None, "w"]  # missing becomes null
    assert out["lastN"] == [None, 9]
    assert out["maxN"] == [9, 9, 5]                # null and missing skipped, descending
    assert out["minN"] == [1, 5]

    # ties at the boundary keep the documents seen first (accumulator_multi.cpp _processValue)
    db.ties.insert_many([{"_id": i, "k": k} for i, k in enumerate([5, 1, 1, 1])])
    out = list(db.ties.aggregate([{"$sort": {"_id": 1}}, {"$group": {
        "_id": None, "b": {"$bottomN": {"n": 2, "sortBy": {"k": -1}, "output": "$_id"}},
        "t": {"$topN": {"n": 2, "sortBy": {"k": 1}, "output": "$_id"}}}}]))[0]
    assert out["b"] == [1, 2] and out["t"] == [1, 2]

    def err(acc):
        return _code(db, "s", [{"$group": {"_id": None, "x": acc}}])
    assert err({"$firstN": {"input": "$p"}}) == 5787906
    assert err({"$firstN": {"n": 2}}) == 5787907
    assert err({"$firstN": {"input": "$p", "n": 0}}) == 5787908
    assert err({"$firstN": {"input": "$p", "n": "a"}}) == 5787902
    assert err({"$firstN": {"input": "$p", "n": 1.5}}) == 5787903
    assert err({"$maxN": {"input": "$p", "n": 1, "z": 1}}) == 5787901
    assert err({"$topN": {"n": 1, "output": "$p"}}) == 5788005
    assert err({"$top": {"sortBy": {"a": 1}}}) == 5788004
    assert err({"$top": {"n": 1, "sortBy": {"a": 1}, "output": 1}}) == 5788002
    assert err({"$topN": {"sortBy": {"a": 1}, "output": 1}}) == 5788003


def test_n_may_depend_on_the_group_key(db):
    # manual $firstN: "n" can be an expression of the group's _id
    db.s.insert_many([{"g": 1, "v": i} for i in range(5)] + [{"g": 2, "v": i} for i in range(5)])
    out = list(db.s.aggregate([{"$sort": {"v": 1}}, {"$group": {"_id": "$g", "f": {"$firstN": {
        "input": "$v", "n": {"$cond": [{"$eq": ["$_id", 1]}, 1, 3]}}}}}, {"$sort": {"_id": 1}}]))
    assert [d["f"] for d in out] == [[0], [0, 1, 2]]


# ------------------------------------------------------------------------------------------- $bucket
def test_bucket(db):
    # manual $bucket; jstests/aggregation/sources/bucket/*: [lower, upper) buckets, default bucket, sorted _id
    _seed(db)
    db.c.insert_many([{"_id": 20, "v": "str"}, {"_id": 21}])
    out = list(db.c.aggregate([{"$bucket": {"groupBy": "$v", "boundaries": [0, 3, 10], "default": "other",
                                            "output": {"n": {"$sum": 1}, "ids": {"$push": "$_id"}}}}]))
    assert out == [{"_id": 0, "n": 3, "ids": [0, 1, 2]}, {"_id": 3, "n": 7, "ids": [3, 4, 5, 6, 7, 8, 9]},
                   {"_id": "other", "n": 2, "ids": [20, 21]}]
    out = list(db.c.aggregate([{"$match": {"v": {"$gte": 5}}},
                               {"$bucket": {"groupBy": "$v", "boundaries": [5, 100]}}]))
    assert out == [{"_id": 5, "count": 5}]  # out-of-range values without default fail below


def test_bucket_errors(db):
    # document_source_bucket.cpp codes
    _seed(db)

    def b(spec):
        return _code(db, "c", [{"$bucket": spec}])
    assert b({"groupBy": "$v", "boundaries": [5, 100]}) == 40066  # a value below every bucket, no default
    assert b({"groupBy": "$v"}) == 40198
    assert b({"groupBy": "$v", "boundaries": [0]}) == 40192
    assert b({"groupBy": "$v", "boundaries": [0, "a"]}) == 40193
    assert b({"groupBy": "$v", "boundaries": [5, 1]}) == 40194
    assert b({"groupBy": "$v", "boundaries": 5}) == 40200
    assert b({"groupBy": "$v", "boundaries": [0, 10], "default": 5}) == 40199
    assert b({"groupBy": "$v", "boundaries": [0, 10], "output": 1}) == 40196
    assert b({"groupBy": "v", "boundaries": [0, 10]}) == 40202
    assert b({"groupBy": "$v", "boundaries": [0, 10], "x": 1}) == 40197
    assert b(1) == 40201


def test_bucket_auto(db):
    # document_source_bucket_auto.cpp: round(n / buckets) documents per bucket, equal values stay together,
    # a bucket's max is the next one's min, the last max is the largest value
    db.b.insert_many([{"v": v} for v in [1, 1, 1, 1, 2, 3, 4, 5, 6, 7]])
    out = list(db.b.aggregate([{"$bucketAuto": {"groupBy": "$v", "buckets": 3}}]))
    assert out == [{"_id": {"min": 1, "max": 2}, "count": 4}, {"_id": {"min": 2, "max": 5}, "count": 3},
                   {"_id": {"min": 5, "max": 7}, "count": 3}]
    out = list(db.b.aggregate([{"$bucketAuto": {"groupBy": "$v", "buckets": 20,
                                                "output": {"vs": {"$push": "$v"}}}}]))
    assert [d["vs"] for d in out] == [[1, 1, 1, 1], [2], [3], [4], [5], [6], [7]]


def test_bucket_auto_granularity(db):
    # manual $bucketAuto > granularity: boundaries from the preferred-number series, rounded up/down
    db.g.insert_many([{"v": v} for v in range(10)])
    out = list(db.g.aggregate([{"$bucketAuto": {"groupBy": "$v", "buckets": 3, "granularity": "R5"}}]))
    assert [d["count"] for d in out] == [3, 4, 3]
    assert out[0]["_id"] == {"min": 0.0, "max": 2.5}
    assert out[-1]["_id"]["max"] == 10.0
    out = list(db.g.aggregate([{"$bucketAuto": {"groupBy": "$v", "buckets": 2, "granularity": "POWERSOF2"}}]))
    assert [d["_id"] for d in out] == [{"min": 0, "max": 8}, {"min": 8, "max": 16}]
    assert all(type(d["_id"]["max"]) is int for d in out)  # $pow(2, n) of integers (powers_of_two.cpp)
    db.h2.insert_many([{"v": x} for x in (0.3, 3.5, 8.0)])
    out = list(db.h2.aggregate([{"$bucketAuto": {"groupBy": "$v", "buckets": 3, "granularity": "POWERSOF2"}}]))
    assert [d["_id"] for d in out] == [{"min": 0.25, "max": 0.5}, {"min": 0.5, "max": 4}, {"min": 4, "max": 16}]
    out = list(db.g.aggregate([{"$bucketAuto": {"groupBy": "$v", "buckets": 2, "granularity": "1-2-5"}}]))
    assert [d["_id"] for d in out] == [{"min": 0.0, "max": 5.0}, {"min": 5.0, "max": 10.0}]


def test_bucket_auto_errors(db):
    # document_source_bucket_auto.cpp codes
    db.g.insert_many([{"v": "s"}, {"v": -1}])  # the first key read decides which check fails

    def b(spec, coll="g"):
        return _code(db, coll, [{"$bucketAuto": spec}])
    assert b({"groupBy": "$v"}) == 40246
    assert b({"groupBy": "$v", "buckets": 0}) == 40243
    assert b({"groupBy": "$v", "buckets": "a"}) == 40241
    assert b({"groupBy": "$v", "buckets": 1.5}) == 40242
    assert b({"groupBy": "v", "buckets": 2}) == 40239
    assert b({"groupBy": "$v", "buckets": 2, "x": 1}) == 40245
    assert b({"groupBy": "$v", "buckets": 2, "output": 1}) == 40244
    assert b({"groupBy": "$v", "buckets": 2, "granularity": 1}) == 40261
    assert b({"groupBy": "$v", "buckets": 2, "granularity": "R5"}) == 40258  # the string
    db.h.insert_one({"v": -1})
    assert b({"groupBy": "$v", "buckets": 2, "granularity": "R5"}, "h") == 40260
    assert b(5) == 40240


# ------------------------------------------------------------------------------------------- small stages
def test_count_sort_by_count_limit_skip(db):
    # manual $count (document_source_count.cpp codes), $sortByCount, $limit / $skip argument rules
    _seed(db)
    assert list(db.c.aggregate([{"$count": "n"}])) == [{"n": 10}]
    assert list(db.c.aggregate([{"$match": {"v": -1}}, {"$count": "n"}])) == []
    for arg, code in ((1, 40156), ("", 40157), ("$n", 40158), ("a.b", 40160), ("_id", 9039800)):
        assert _code(db, "c", [{"$count": arg}]) == code
    out = list(db.c.aggregate([{"$sortByCount": "$g"}]))
    assert [(d["_id"], d["count"]) for d in out][0] == (0, 4)
    assert _code(db, "c", [{"$sortByCount": 1}]) == 40149
    assert _code(db, "c", [{"$sortByCount": "g"}]) == 40148
    assert _code(db, "c", [{"$sortByCount": {"a": 1}}]) == 40147
    assert _code(db, "c", [{"$limit": 0}]) == 15958
    assert _code(db, "c", [{"$limit": -1}]) == 5107201
    assert _code(db, "c", [{"$limit": "a"}]) == 5107201
    assert _code(db, "c", [{"$limit": 1.5}]) == 5107201
    assert _code(db, "c", [{"$skip": -1}]) == 5107200
    assert _code(db, "c", [{"$project": {"v": 1}}, {"$skip": "a"}]) == 5107200
    assert len(list(db.c.aggregate([{"$skip": 2.0}, {"$limit": 3.0}]))) == 3


def test_unwind_options_and_errors(db):
    # manual $unwind; document_source_unwind.cpp codes
    db.u.insert_many([{"_id": 1, "a": [1, 2]}, {"_id": 2, "a": []}, {"_id": 3, "a": None}, {"_id": 4},
                      {"_id": 5, "a": 7}])
    out = list(db.u.aggregate([{"$unwind": {"path": "$a", "includeArrayIndex": "i"}}]))
    assert out == [{"_id": 1, "a": 1, "i": 0}, {"_id": 1, "a": 2, "i": 1}, {"_id": 5, "a": 7, "i": None}]
    out = list(db.u.aggregate([{"$unwind": {"path": "$a", "preserveNullAndEmptyArrays": True}}]))
    assert [d["_id"] for d in out] == [1, 1, 2, 3, 4, 5]
    for spec, code in (({"path": "a"}, 28818), ("a", 28818), ({"includeArrayIndex": "i"}, 28812),
                       ({"path": 1}, 28808), ({"path": "$a", "includeArrayIndex": "$i"}, 28822),
                       ({"path": "$a", "includeArrayIndex": ""}, 28810),
                       ({"path": "$a", "preserveNullAndEmptyArrays": 1}, 28809),
                       ({"path": "$a", "x": 1}, 28811), (5, 15981)):
        assert _code(db, "u", [{"$unwind": spec}]) == code, spec


def test_redact(db):
    # manual $redact (the "tags" example shape): $$DESCEND walks embedded documents and arrays of documents
    db.r.insert_one({"_id": 1, "level": 1, "title": "t",
                     "parts": [{"level": 2, "x": 1}, {"level": 5, "x": 2}], "sub": {"level": 5, "y": 1}})
    expr = {"$cond": {"if": {"$gt": ["$level", 3]}, "then": "$$PRUNE", "else": "$$DESCEND"}}
    assert list(db.r.aggregate([{"$redact": expr}])) == [
        {"_id": 1, "level": 1, "title": "t", "parts": [{"level": 2, "x": 1}]}]
    assert list(db.r.aggregate([{"$redact": "$$PRUNE"}])) == []
    assert _code(db, "r", [{"$redact": "keep"}]) == 17053


# ------------------------------------------------------------------------------------------- $setWindowFields
def test_window_ranks_shift_and_cumulative(db):
    # manual $setWindowFields, $rank, $denseRank, $documentNumber, $shift;
    # jstests/aggregation/sources/setWindowFields/{rank,shift,...}.js
    db.w.insert_many([{"_id": i, "p": i % 2, "v": v} for i, v in enumerate([5, 3, 5, 1, 8, 3])])
    out = list(db.w.aggregate([{"$setWindowFields": {
        "partitionBy": "$p", "sortBy": {"v": 1},
        "output": {"r": {"$rank": {}}, "dr": {"$denseRank": {}}, "dn": {"$documentNumber": {}},
                   "prev": {"$shift": {"output": "$v", "by": -1, "default": "none"}},
                   "cum": {"$sum": "$v", "window": {"documents": ["unbounded", "current"]}},
                   "tot": {"$sum": "$v"}, "mov": {"$avg": "$v", "window": {"documents": [-1, 1]}}}}}]))
    p0 = [d for d in out if d["p"] == 0]
    assert [d["v"] for d in p0] == [5, 5, 8]
    assert [(d["r"], d["dr"], d["dn"]) for d in p0] == [(1, 1, 1), (1, 1, 2), (3, 2, 3)]
    assert [d["prev"] for d in p0] == ["none", 5, 5]
    assert [d["cum"] for d in p0] == [5, 10, 18] and {d["tot"] for d in p0} == {18}
    assert [d["mov"] for d in p0] == [5.0, 6.0, 6.5]
    assert [d["p"] for d in out] == [0, 0, 0, 1, 1, 1]  # partitions in partition-value order


def test_window_range_and_time_units(db):
    # manual $setWindowFields > range windows, with "unit" over dates
    t0 = dt.datetime(2024, 1, 1)
    db.w.insert_many([{"t": t0 + dt.timedelta(hours=h), "x": h, "v": 1} for h in (0, 1, 2, 5)])
    out = list(db.w.aggregate([{"$setWindowFields": {"sortBy": {"x": 1}, "output": {
        "n": {"$count": {}, "window": {"range": [-1, 0]}}}}}]))
    assert [d["n"] for d in out] == [1, 2, 2, 1]
    out = list(db.w.aggregate([{"$setWindowFields": {"sortBy": {"t": 1}, "output": {
        "n": {"$sum": "$v", "window": {"range": [-2, "current"], "unit": "hour"}}}}}]))
    assert [d["n"] for d in out] == [1, 2, 3, 1]
    assert _code(db, "w", [{"$setWindowFields": {"sortBy": {"t": 1}, "output": {
        "n": {"$sum": "$v", "window": {"range": [-2, 0]}}}}}]) == 5429414
    assert _code(db, "w", [{"$setWindowFields": {"output": {
        "n": {"$sum": "$v", "window": {"documents": [-1, 0]}}}}}]) == 5339901


def test_window_derivative_integral_ema_locf_linear_fill(db):
    # manual $derivative, $integral (trapezoidal rule), $expMovingAvg, $locf, $linearFill
    db.w.insert_many([{"_id": i, "x": x, "y": y} for i, (x, y) in enumerate([(0, 0), (1, 2), (3, None), (4, 8)])])
    out = list(db.w.aggregate([{"$setWindowFields": {"sortBy": {"x": 1}, "output": {
        "d": {"$derivative": {"input": "$y"}, "window": {"documents": [-1, 0]}},
        "i": {"$integral": {"input": "$y"}, "window": {"documents": ["unbounded", "current"]}},
        "e": {"$expMovingAvg": {"input": "$y", "alpha": 0.5}},
        "l": {"$locf": "$y"}, "f": {"$linearFill": "$y"}}}}]))
    assert [d["d"] for d in out] == [None, 2.0, None, None]
    assert [d["i"] for d in out] == [0.0, 1.0, 1.0, 16.0]  # the null point is skipped: (4-1)*(2+8)/2 + 1
    assert [d["e"] for d in out] == [0.0, 1.0, 1.0, 4.5]
    assert [d["l"] for d in out] == [0, 2, 2, 8]
    assert [d["f"] for d in out] == [0, 2, 6.0, 8]
    # parse errors: jstests/aggregation/sources/setWindowFields/comprehensive_parse.js
    assert _code(db, "w", [{"$setWindowFields": {"output": {"r": {"$rank": {}}}}}]) == 5371602
    assert _code(db, "w", [{"$setWindowFields": {"sortBy": {"x": 1, "y": 1}, "output": {"r": {"$rank": {}}}}}]) \
        == 5371602
    assert _code(db, "w", [{"$setWindowFields": {"sortBy": {"x": 1}, "output": {"r": {"$rank": 1}}}}]) == 5371603
    assert _code(db, "w", [{"$setWindowFields": {"output": {"s": {"$shift": {"output": "$y", "by": 1}}}}}]) == 9
    assert _code(db, "w", [{"$setWindowFields": {"sortBy": {"x": 1}, "output": {
        "d": {"$derivative": {"input": "$y"}}}}}]) == 9
    assert _code(db, "w", [{"$setWindowFields": {"output": {"i": {"$integral": {"input": "$y"}}}}}]) == 9
    assert _code(db, "w", [{"$setWindowFields": {"sortBy": {"x": 1}, "output": {
        "i": {"$integral": {"input": "$y", "unit": "hour"}}}}}]) == 5423901
    assert _code(db, "w", [{"$setWindowFields": {"sortBy": {"x": 1}, "output": {
        "d": {"$derivative": {"input": "$y", "unit": "hour"}, "window": {"documents": [-1, 0]}}}}}]) == 5624900
    assert _code(db, "w", [{"$setWindowFields": {"partitionBy": [1], "output": {"n": {"$sum": 1}}}}]) == 14
    assert _code(db, "w", [{"$setWindowFields": {"partitionBy": ["$x"], "output": {"n": {"$sum": 1}}}}]) == 14
    assert _code(db, "w", [{"$setWindowFields": {"sortBy": {"x": 1}, "output": {
        "r": {"$rank": {}, "window": {"documents": [0, 1]}}}}}]) == 5371601
    assert _code(db, "w", [{"$setWindowFields": {"sortBy": {"x": 1}, "output": {"r": {"$nosuch": 1}}}}]) == 5371603
    assert _code(db, "w", [{"$setWindowFields": {"sortBy": {"x": 1}, "output": {
        "e": {"$expMovingAvg": {"input": "$y", "N": 2, "alpha": 0.5}}}}}]) == 5433602
    assert _code(db, "w", [{"$setWindowFields": {"output": {"e": {"$expMovingAvg": {"input": "$y", "N": 2}}}}}]) \
        == 9


def test_window_n_accumulators_and_percentile(db):
    # window functions include $topN/$minN/$median (manual "$setWindowFields" > window operators)
    db.w.insert_many([{"_id": i, "v": v} for i, v in enumerate([4, 1, 3, 2])])
    out = list(db.w.aggregate([{"$setWindowFields": {"sortBy": {"_id": 1}, "output": {
        "m": {"$median": {"input": "$v", "method": "approximate"}, "window": {"documents": ["unbounded", 0]}},
        "mn": {"$minN": {"input": "$v", "n": 2}, "window": {"documents": ["unbounded", 0]}}}}}]))
    assert [d["m"] for d in out] == [4.0, 1.0, 3.0, 2.0]
    assert [d["mn"] for d in out] == [[4], [1, 4], [1, 3], [1, 2]]


# ------------------------------------------------------------------------------------------- $densify / $fill
def test_densify(db):
    # manual $densify: explicit [lower, upper) bounds, "full", "partition"; generated documents hold only the
    # field and the partition fields
    db.d.insert_many([{"_id": 1, "k": "a", "v": 0}, {"_id": 2, "k": "a", "v": 4}, {"_id": 3, "k": "b", "v": 2}])
    out = list(db.d.aggregate([{"$densify": {"field": "v", "range": {"step": 2, "bounds": [0, 6]}}},
                               {"$project": {"_id": 0, "v": 1}}]))
    assert [d["v"] for d in out] == [0, 2, 4]
    out = list(db.d.aggregate([{"$densify": {"field": "v", "partitionByFields": ["k"],
                                             "range": {"step": 1, "bounds": "partition"}}}]))
    assert [(d["k"], d["v"]) for d in out] == [("a", 0), ("a", 1), ("a", 2), ("a", 3), ("a", 4), ("b", 2)]
    assert {"_id"} & set(out[1]) == set()
    out = list(db.d.aggregate([{"$densify": {"field": "v", "partitionByFields": ["k"],
                                             "range": {"step": 2, "bounds": "full"}}}]))
    assert [(d["k"], d["v"]) for d in out] == [("a", 0), ("a", 2), ("a", 4), ("b", 0), ("b", 2), ("b", 4)]
    assert _code(db, "d", [{"$densify": {"field": "k", "range": {"step": 1, "bounds": "full"}}}]) == 5733201
    assert _code(db, "d", [{"$densify": {"field": "v", "range": {"step": 0, "bounds": "full"}}}]) == 5733401
    assert _code(db, "d", [{"$densify": {"field": "v"}}]) == 40414


def test_densify_dates(db):
    # manual $densify over dates with a unit
    t0 = dt.datetime(2024, 1, 31)
    db.d.insert_many([{"t": t0}, {"t": dt.datetime(2024, 4, 30)}])
    out = list(db.d.aggregate([{"$densify": {"field": "t", "range": {"step": 1, "unit": "month",
                                                                       "bounds": "full"}}}]))
    assert [d["t"] for d in out] == [t0, dt.datetime(2024, 2, 29), dt.datetime(2024, 3, 31),
                                     dt.datetime(2024, 4, 30)]
    assert _code(db, "d", [{"$densify": {"field": "t", "range": {"step": 1, "bounds": "full"}}}]) == 6053600


def test_fill(db):
    # manual $fill: value outputs fill null/missing; locf and linear need sortBy
    db.f.insert_many([{"_id": 1, "x": 1, "a": 10, "b": "p"}, {"_id": 2, "x": 2, "a": None},
                      {"_id": 3, "x": 3, "b": None}, {"_id": 4, "x": 4, "a": 40, "b": "q"}])
    out = list(db.f.aggregate([{"$fill": {"sortBy": {"x": 1}, "output": {"a": {"method": "linear"},
                                                                        "b": {"method": "locf"},
                                                                        "c": {"value": "$x"}}}}]))
    assert [d["a"] for d in out] == [10, 20.0, 30.0, 40]
    assert [d["b"] for d in out] == ["p", "p", "p", "q"]
    assert [d["c"] for d in out] == [1, 2, 3, 4]
    assert _code(db, "f", [{"$fill": {"output": {"a": {"method": "linear"}}}}]) == 5371602
    assert _code(db, "f", [{"$fill": {"output": {"a": {"method": "nope"}}, "sortBy": {"x": 1}}}]) == 6050202
    assert _code(db, "f", [{"$fill": {"output": {"a": {"value": 1}}, "partitionBy": "$x",
                                      "partitionByFields": ["x"]}}]) == 6050204


# ------------------------------------------------------------------------------------------- time series
def test_merge_into_time_series_is_refused_and_out_replaces(db):
    # manual "Time Series Collection Limitations" > Aggregation $merge (use $out); on 8.0 the namespace is a
    # view, so $merge fails as for a view (166, SERVER-107433); $out (7.0.3+) writes a time-series collection:
    # document_source_out.cpp validateTimeseries (7406103, 7268700)
    t = dt.datetime(2024, 1, 1)
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    db.ts.insert_one({"t": t, "m": 0, "v": -1})
    db.src.insert_many([{"_id": i, "t": t, "m": 1, "v": i} for i in range(3)])
    assert _code(db, "src", [{"$merge": {"into": "ts"}}]) == 166
    assert db.ts.count_documents({}) == 1
    assert list(db.src.aggregate([{"$out": "ts"}])) == []
    assert sorted(d["v"] for d in db.ts.find()) == [0, 1, 2]
    assert db.ts.options()["timeseries"]["metaField"] == "m"
    assert _code(db, "src", [{"$project": {"t": 0}}, {"$out": "ts"}]) == 2  # the time field is required
    assert db.ts.count_documents({}) == 3
    assert _code(db, "src", [{"$out": {"db": "stages", "coll": "ts", "timeseries": {"timeField": "t"}}}]) == 7406103
    assert _code(db, "src", [{"$out": {"db": "stages", "coll": "src", "timeseries": {"timeField": "t"}}}]) \
        == 7268700
    list(db.src.aggregate([{"$out": {"db": "stages", "coll": "new", "timeseries": {"timeField": "t"}}}]))
    assert db.new.options()["timeseries"]["timeField"] == "t" and db.new.count_documents({}) == 3


def test_documents_in_sub_pipelines_and_collection_pipelines(db):
    # manual $documents: the first stage of a database-level aggregate, of $unionWith without "coll" and of
    # $lookup without "from"; in a collection's pipeline it is InvalidNamespace (73)
    db.c.insert_one({"_id": 1, "k": 2})
    out = list(db.c.aggregate([{"$unionWith": {"pipeline": [{"$documents": [{"x": 1}, {"x": 2}]},
                                                            {"$match": {"x": 2}}]}}]))
    assert out == [{"_id": 1, "k": 2}, {"x": 2}]
    out = list(db.c.aggregate([{"$lookup": {"as": "j", "let": {"k": "$k"}, "pipeline": [
        {"$documents": [{"v": 1}, {"v": 2}, {"v": 3}]}, {"$match": {"$expr": {"$gte": ["$v", "$$k"]}}}]}}]))
    assert out == [{"_id": 1, "k": 2, "j": [{"v": 2}, {"v": 3}]}]
    assert _code(db, "c", [{"$documents": [{"x": 1}]}]) == 73
    assert _code(db, "c", [{"$match": {}}, {"$documents": [{"x": 1}]}]) == 40602
    assert _code(db, "c", [{"$unionWith": {"pipeline": [{"$match": {}}]}}]) == 9
    assert _code(db, "c", [{"$unionWith": {"pipeline": [{"$documents": 5}]}}]) == 5858203
    assert list(db.aggregate([{"$documents": [{"a": 1}]}, {"$set": {"b": 2}}])) == [{"a": 1, "b": 2}]


def test_every_server_stage_name_runs_or_is_refused_by_name(db):
    # manual "Aggregation Stages" (8.0): no valid stage name is reported as unknown (40324); the ones a
    # standalone embedded server does not have are refused with 115 naming the stage
    from labkit.engine.pipeline.stage_names import STAGE_NAMES
    db.c.insert_one({"_id": 1})
    for name in sorted(STAGE_NAMES):
        if name == "$changeStream":  # a tailable cursor that waits for events (tests/test_change_streams.py)
            with db.c.aggregate([{name: {}}], maxAwaitTimeMS=1) as stream:
                assert stream.try_next() is None
            continue
        try:
            list(db.c.aggregate([{name: {}}]))
        except OperationFailure as e:
            assert e.code != 40324, name
            if e.code == 115:
                assert name in str(e), name
    assert _code(db, "c", [{"$rankFusion": {}}]) == 40324  # 8.1, not an 8.0 stage


def test_percentile_groups_explain_classic(db):
    # accumulator_percentile.cpp: $percentile/$median make a $group SBE-incompatible; $sum keeps SBE
    _seed(db)
    sbe = db.command("explain", {"aggregate": "c", "pipeline": [{"$group": {"_id": "$g", "n": {"$sum": 1}}}],
                                 "cursor": {}}, verbosity="queryPlanner")
    assert sbe["explainVersion"] == "2"
    classic = db.command("explain", {"aggregate": "c", "pipeline": [{"$group": {"_id": "$g", "m": {"$median": {
        "input": "$v", "method": "approximate"}}}}], "cursor": {}}, verbosity="queryPlanner")
    assert classic["explainVersion"] == "1"


def test_fast_path_and_general_group_agree_on_random_documents(db):
    # the $group fast path ($sum/$avg/... over fields) and the general accumulators must give the same
    # documents (manual $group null/missing rules); the general path is forced by an extra $median field
    import random
    rnd = random.Random(13)
    values = [None, 0, 1, 2, -3, 1.5, 2.0, "a", "b", True, [1, 2], {"x": 1}, Int64(7)]
    docs = []
    for i in range(300):
        d = {"_id": i, "k": rnd.choice([1, 1.0, 2, "x", None, Int64(2)])}
        if rnd.random() < 0.8:
            d["v"] = rnd.choice(values)
        if rnd.random() < 0.1:
            del d["k"]
        docs.append(d)
    db.r.insert_many(docs)
    spec = {"_id": "$k", "s": {"$sum": "$v"}, "a": {"$avg": "$v"}, "mn": {"$min": "$v"}, "mx": {"$max": "$v"},
            "f": {"$first": "$v"}, "l": {"$last": "$v"}, "p": {"$push": "$v"}, "st": {"$addToSet": "$v"},
            "c": {"$count": {}}, "one": {"$sum": 1}}
    fast = list(db.r.aggregate([{"$sort": {"_id": 1}}, {"$group": spec}]))
    general = list(db.r.aggregate([{"$sort": {"_id": 1}}, {"$group": dict(spec, m={"$median": {
        "input": "$v", "method": "approximate"}})}]))
    assert len(fast) == len(general) == 4  # {1, 1.0}, {2, NumberLong(2)}, "x", null with missing
    by_key = {str(g["_id"]): g for g in general}
    for f in fast:
        g = by_key[str(f["_id"])]
        for field in spec:
            if field == "_id":
                continue
            assert f[field] == g[field], field
