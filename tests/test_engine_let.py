"""``let`` on aggregate (collection and database level) and on ``MongoClient.bulk_write``.

Sources: jstests/core/command_let_variables.js (aggregate/update/findAndModify with let, undefined variables 17276,
reserved names 4738901), src/mongo/db/pipeline/variables.cpp (``seedVariablesWithLetParameters``: 4890500 for a
let value reading a field; ``getVariable``: 17276), manual "aggregate" (let, new in 5.0), "$lookup" (let and
pipeline), "$let", "$map", "Variables in Aggregation Expressions", "Mongo.bulkWrite()" (let).
"""
from __future__ import annotations

import pytest
from pymongo import DeleteOne, InsertOne, UpdateOne
from pymongo.errors import ClientBulkWriteException, OperationFailure

from labkit.engine import EmbeddedClient

TRENDS = [
    {"_id": 1, "species": "Blackbird", "trend": "no change"},
    {"_id": 2, "species": "Bullfinch", "trend": "weak increase"},
    {"_id": 3, "species": "Chaffinch", "trend": "weak decline"},
    {"_id": 4, "species": "Song Thrush", "trend": "weak decline"},
]


@pytest.fixture()
def client():
    return EmbeddedClient()


@pytest.fixture()
def c(client):
    coll = client.db.birds
    coll.insert_many([dict(d) for d in TRENDS])
    return coll


def test_aggregate_let_in_match_expr(c):
    # command_let_variables.js: $match {$expr: {$eq: [field, "$$target_trend"]}} with let on the aggregate
    pipeline = [{"$match": {"$expr": {"$eq": ["$trend", "$$target"]}}}, {"$sort": {"species": 1}},
                {"$project": {"_id": 0, "species": 1}}]
    assert list(c.aggregate(pipeline, let={"target": "weak increase"})) == [{"species": "Bullfinch"}]
    assert list(c.aggregate(pipeline, let={"target": "weak decline"})) == [{"species": "Chaffinch"},
                                                                          {"species": "Song Thrush"}]
    # let variables may be any constant expression, evaluated once before the pipeline runs
    assert [d["_id"] for d in c.aggregate([{"$match": {"$expr": {"$gte": ["$_id", "$$lo"]}}}],
                                          let={"lo": {"$add": [1, 2]}})] == [3, 4]


def test_aggregate_let_in_project_and_scoping(c):
    # command_let_variables.js: $project sees command-level let; a $let of the same name shadows it
    shadow = {"$let": {"vars": {"variable": "INNER"}, "in": "$$variable"}}
    docs = list(c.aggregate([{"$match": {"_id": 1}},
                             {"$project": {"inner": shadow, "outer": "$$variable",
                                           "both": {"$let": {"vars": {"innerVar": "I"},
                                                             "in": {"$concat": ["$$innerVar", "$$variable"]}}}}}],
                            let={"variable": "OUTER"}))
    assert docs == [{"_id": 1, "inner": "INNER", "outer": "OUTER", "both": "IOUTER"}]
    # $map's "as" binds its own name inside "in" only (manual "$map")
    out = list(c.aggregate([{"$match": {"_id": 1}},
                            {"$project": {"_id": 0, "m": {"$map": {"input": [1, 2], "as": "v",
                                                                   "in": {"$add": ["$$v", "$$k"]}}},
                                          "v": "$$v"}}], let={"v": 100, "k": 10}))
    assert out == [{"m": [11, 12], "v": 100}]


def test_aggregate_let_reaches_lookup_pipeline_and_set(c):
    # manual "$lookup": the sub-pipeline sees the stage's let and the command's let
    out = list(c.aggregate([
        {"$lookup": {"from": "birds", "let": {"me": "$_id"}, "as": "later",
                     "pipeline": [{"$match": {"$expr": {"$and": [{"$gt": ["$_id", "$$me"]},
                                                                 {"$lte": ["$_id", "$$hi"]}]}}},
                                  {"$project": {"_id": 1}}]}},
        {"$set": {"tag": "$$label"}}, {"$project": {"later": 1, "tag": 1}}], let={"hi": 3, "label": "x"}))
    assert out == [{"_id": 1, "later": [{"_id": 2}, {"_id": 3}], "tag": "x"},
                   {"_id": 2, "later": [{"_id": 3}], "tag": "x"},
                   {"_id": 3, "later": [], "tag": "x"}, {"_id": 4, "later": [], "tag": "x"}]


def test_match_outside_expr_is_not_a_variable(c):
    # query language: only $expr holds expressions; {a: "$$x"} compares with the string "$$x"
    c.insert_one({"_id": 9, "trend": "$$t"})
    assert [d["_id"] for d in c.aggregate([{"$match": {"trend": "$$t"}}], let={"t": "no change"})] == [9]


def test_undefined_variable_17276(c):
    # command_let_variables.js: a pipeline using a variable the let does not define fails with 17276
    with pytest.raises(OperationFailure) as ei:
        list(c.aggregate([{"$match": {"$expr": {"$eq": ["$trend", "$$target"]}}}], let={"cat": "x"}))
    assert ei.value.code == 17276 and "Use of undefined variable: target" in str(ei.value)
    with pytest.raises(OperationFailure) as ei:
        list(c.aggregate([{"$project": {"a": "$$nope"}}]))
    assert ei.value.code == 17276
    # an update pipeline likewise (command_let_variables.js, "update's update part")
    with pytest.raises(OperationFailure) as ei:
        c.update_one({"_id": 1}, [{"$set": {"species": "$$new_name"}}], let={"other": 1})
    assert ei.value.code == 17276
    assert c.find_one({"_id": 1})["species"] == "Blackbird"


def test_bad_let_names_and_values(c):
    # command_let_variables.js: system variables may not be set (4738901); a user variable name must start
    # with a lowercase letter; variables.cpp: a let value may not read a field (4890500)
    for name in ("NOW", "CLUSTER_TIME", "IS_MR", "JS_SCOPE"):
        with pytest.raises(OperationFailure) as ei:
            list(c.aggregate([], let={name: "failure"}))
        assert ei.value.code == 4738901, name
    with pytest.raises(OperationFailure) as ei:
        list(c.aggregate([], let={"Reserved": "failure"}))
    assert "starts with an invalid character for a user variable name" in str(ei.value)
    with pytest.raises(OperationFailure) as ei:
        list(c.aggregate([], let={"x": "$species"}))
    assert ei.value.code == 4890500
    assert list(c.aggregate([{"$count": "n"}], let={})) == [{"n": 4}]
    assert list(c.aggregate([{"$count": "n"}], let=None)) == [{"n": 4}]


def test_aggregate_command_and_explain_take_let(client, c):
    # the aggregate command's let (manual "aggregate" command fields)
    res = client.db.command("aggregate", "birds", pipeline=[{"$match": {"$expr": {"$eq": ["$_id", "$$v"]}}}],
                            cursor={}, let={"v": 2})
    assert [d["_id"] for d in res["cursor"]["firstBatch"]] == [2]
    exp = client.db.command("aggregate", "birds", pipeline=[{"$match": {"$expr": {"$eq": ["$_id", "$$v"]}}}],
                            explain=True, let={"v": 2})
    assert exp["ok"] == 1.0


def test_database_aggregate_let(client):
    # manual "db.aggregate()" with $documents; let variables in $documents and later stages
    out = list(client.db.aggregate([{"$documents": [{"a": "$$x"}, {"a": 2}]}, {"$set": {"b": "$$x"}}],
                                   let={"x": 5}))
    assert out == [{"a": 5, "b": 5}, {"a": 2, "b": 5}]
    with pytest.raises(OperationFailure) as ei:
        list(client.db.aggregate([{"$documents": [{"a": "$$y"}]}], let={"x": 5}))
    assert ei.value.code == 17276


def test_client_bulk_write_let(client, c):
    # manual "Mongo.bulkWrite()": let variables for every operation's filter and update pipeline
    r = client.bulk_write([
        UpdateOne({"$expr": {"$eq": ["$_id", "$$k"]}}, [{"$set": {"z": "$$k"}}], namespace="db.birds"),
        DeleteOne({"$expr": {"$eq": ["$_id", "$$gone"]}}, namespace="db.birds"),
        InsertOne({"_id": 10}, namespace="db.birds"),
    ], let={"k": 1, "gone": 4})
    assert (r.modified_count, r.deleted_count, r.inserted_count) == (1, 1, 1)
    assert c.find_one({"_id": 1})["z"] == 1 and c.find_one({"_id": 4}) is None
    # a bad let fails the whole command before any write
    with pytest.raises(ClientBulkWriteException) as ei:
        client.bulk_write([InsertOne({"_id": 11}, namespace="db.birds")], let={"x": "$a"})
    assert ei.value.error.code == 4890500
    assert c.find_one({"_id": 11}) is None
    # an undefined variable in one operation is that operation's write error
    with pytest.raises(ClientBulkWriteException) as ei:
        client.bulk_write([UpdateOne({"$expr": {"$eq": ["$_id", "$$nope"]}}, {"$set": {"q": 1}},
                                     namespace="db.birds")], let={"k": 1})
    assert ei.value.write_errors[0]["code"] == 17276
    with pytest.raises(TypeError):
        client.bulk_write([InsertOne({"_id": 12}, namespace="db.birds")], let=1)
