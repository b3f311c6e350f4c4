"""Everyday MongoDB 8.0 features on the embedded engine (issue 13): client-level bulk_write, Database.aggregate
with $documents, $getField / $setField / $unsetField, and "$"-prefixed / dotted field names in documents.

Each test names where the rule comes from (manual page or the server's jstests); results and codes are the
server's as those sources state them.
"""
from __future__ import annotations

import pytest
from pymongo import DeleteMany, DeleteOne, InsertOne, ReplaceOne, UpdateMany, UpdateOne
from pymongo.errors import (BulkWriteError, ClientBulkWriteException, InvalidOperation, OperationFailure,
                            WriteError)
from pymongo.results import ClientBulkWriteResult

from labkit.engine import EmbeddedClient


@pytest.fixture
def client():
    return EmbeddedClient()


# ------------------------------------------------------------------------------------------ client bulk_write
# Sources: manual "Mongo.bulkWrite()" / "bulkWrite" command; jstests/core/write/bulk/bulk_write*.js;
# pymongo's MongoClient.bulk_write docstring (the namespaces example) and results.ClientBulkWriteResult.

def test_client_bulk_write_across_namespaces(client):
    client.db.test.insert_many([{"_id": 1, "x": 1}, {"_id": 2, "x": 1}])
    client.db.coll.insert_one({"_id": 10, "x": 2})
    res = client.bulk_write([
        InsertOne(namespace="db.test", document={"_id": 3, "y": 1}),
        DeleteOne(namespace="db.test", filter={"x": 1}),
        InsertOne(namespace="db.coll", document={"_id": 11, "y": 2}),
        ReplaceOne(namespace="db.test", filter={"w": 1}, replacement={"_id": 4, "z": 1}, upsert=True),
        UpdateMany(namespace="other.c", filter={}, update={"$set": {"k": 1}}),
    ])
    assert isinstance(res, ClientBulkWriteResult) and res.acknowledged
    assert (res.inserted_count, res.deleted_count, res.matched_count, res.modified_count, res.upserted_count) \
        == (2, 1, 0, 0, 1)
    assert sorted(d["_id"] for d in client.db.test.find()) == [2, 3, 4]
    assert sorted(d["_id"] for d in client.db.coll.find()) == [10, 11]
    with pytest.raises(InvalidOperation, match="verbose"):
        res.insert_results


def test_client_bulk_write_verbose_results(client):
    # bulk_write_update_cursor.js: per-operation n / nModified / upserted; SERVER-83138: nMatched excludes upserts.
    client.db.c.insert_one({"_id": 1, "skey": "MongoDB"})
    res = client.bulk_write([
        InsertOne(namespace="db.c", document={"_id": 2, "skey": "MongoDB"}),
        UpdateOne(namespace="db.c", filter={"_id": 1}, update={"$set": {"skey": "MongoDB2"}}),
        UpdateOne(namespace="db.c", filter={"_id": 9}, update={"$set": {"skey": "new"}}, upsert=True),
        UpdateMany(namespace="db.c", filter={"skey": "none"}, update={"$set": {"a": 1}}),
        DeleteMany(namespace="db.c", filter={"skey": "MongoDB"}),
    ], verbose_results=True)
    assert res.has_verbose_results
    assert res.insert_results[0].inserted_id == 2
    assert (res.update_results[1].matched_count, res.update_results[1].modified_count) == (1, 1)
    assert res.update_results[1].upserted_id is None
    assert res.update_results[2].upserted_id == 9 and res.update_results[2].matched_count == 1
    assert res.update_results[3].matched_count == 0
    assert res.delete_results[4].deleted_count == 1
    assert res.matched_count == 1 and res.upserted_count == 1 and res.modified_count == 1
    assert client.db.c.find_one({"_id": 9}) == {"_id": 9, "skey": "new"}


def _bulk_error(client, ops, **kw):
    """The ClientBulkWriteException ``client.bulk_write(ops, **kw)`` raises when db.c already holds {_id: 1}."""
    client.db.c.insert_one({"_id": 1})
    with pytest.raises(ClientBulkWriteException) as info:
        client.bulk_write(ops, **kw)
    return info.value


def test_client_bulk_write_ordered_stops_at_first_error(client):
    exc = _bulk_error(client, [InsertOne(namespace="db.c", document={"_id": i}) for i in (0, 1, 2)])
    assert exc.code == 65 and len(exc.write_errors) == 1
    err = exc.write_errors[0]
    assert err["idx"] == 1 and err["code"] == 11000 and "E11000 duplicate key error" in err["errmsg"]
    assert err["keyValue"] == {"_id": 1} and err["op"]["document"] == {"_id": 1}
    assert exc.partial_result.inserted_count == 1
    assert sorted(d["_id"] for d in client.db.c.find()) == [0, 1]


def test_client_bulk_write_unordered_runs_everything(client):
    exc = _bulk_error(client, [
        InsertOne(namespace="db.c", document={"_id": 1}),
        InsertOne(namespace="db.c", document={"_id": 2}),
        UpdateOne(namespace="db.c", filter={"_id": 2}, update={"$inc": {"n": 1}}),
        InsertOne(namespace="db.c", document={"_id": 2}),
    ], ordered=False, verbose_results=True)
    assert [e["idx"] for e in exc.write_errors] == [0, 3]
    partial = exc.partial_result
    assert partial.inserted_count == 1 and partial.modified_count == 1
    assert list(partial.insert_results) == [1]
    assert client.db.c.find_one({"_id": 2}) == {"_id": 2, "n": 1}


def test_client_bulk_write_validation_error_is_a_write_error(client):
    # Manual "Schema Validation": a failing document is refused with DocumentValidationFailure (121).
    client.db.create_collection("v", validator={"$jsonSchema": {"required": ["name"]}})
    with pytest.raises(ClientBulkWriteException) as info:
        client.bulk_write([InsertOne(namespace="db.v", document={"_id": 1})])
    assert info.value.write_errors[0]["code"] == 121
    res = client.bulk_write([InsertOne(namespace="db.v", document={"_id": 1})], bypass_document_validation=True)
    assert res.inserted_count == 1


def test_client_bulk_write_invalid_namespace_runs_nothing(client):
    # The server checks every nsInfo entry before running an operation: InvalidNamespace (73).
    with pytest.raises(ClientBulkWriteException) as info:
        client.bulk_write([InsertOne(namespace="db.ok", document={"_id": 1}),
                           InsertOne(namespace="nodot", document={"_id": 2})])
    assert isinstance(info.value.error, OperationFailure) and info.value.error.code == 73
    assert "db" not in client.list_database_names()


def test_client_bulk_write_argument_errors(client):
    with pytest.raises(InvalidOperation, match="namespace"):
        client.bulk_write([InsertOne({"_id": 1})])
    with pytest.raises(TypeError, match="not a valid request"):
        client.bulk_write([{"insert": 1}])
    with pytest.raises(TypeError):
        client.bulk_write(InsertOne(namespace="db.c", document={}))


def test_client_bulk_write_let_reaches_every_statement(client):
    # bulk_write_update_per_statement_constants.js / manual "Mongo.bulkWrite()": let is evaluated by the server
    # and visible to each operation's filter (more in tests/test_engine_let.py).
    client.db.c.insert_many([{"_id": 1, "a": 1}, {"_id": 2, "a": 2}])
    result = client.bulk_write([UpdateOne(namespace="db.c", filter={"$expr": {"$eq": ["$a", "$$v"]}},
                                          update={"$set": {"b": 1}})], let={"v": 1})
    assert result.modified_count == 1
    assert client.db.c.find_one({"_id": 1}) == {"_id": 1, "a": 1, "b": 1}


def test_collection_bulk_write_let_reaches_every_statement(client):
    """manual, db.collection.bulkWrite(): `let` variables are available to every operation's filter."""
    client.db.c.insert_many([{"_id": 1, "a": 1}, {"_id": 2, "a": 2}])
    result = client.db.c.bulk_write([UpdateOne({"$expr": {"$eq": ["$a", "$$v"]}}, {"$set": {"b": 1}})],
                                    let={"v": 1})
    assert result.modified_count == 1
    assert list(client.db.c.find().sort("_id", 1)) == [{"_id": 1, "a": 1, "b": 1}, {"_id": 2, "a": 2}]


def test_client_bulk_write_in_a_transaction(client):
    client.db.c.insert_one({"_id": 0})
    with client.start_session() as s:
        s.start_transaction()
        client.bulk_write([InsertOne(namespace="db.c", document={"_id": 1}),
                           InsertOne(namespace="db.d", document={"_id": 1})], session=s)
        assert client.db.c.count_documents({}) == 1  # not visible outside before commit
        s.abort_transaction()
    assert client.db.c.count_documents({}) == 1 and client.db.d.count_documents({}) == 0


# ------------------------------------------------------------------------------------------ Database.aggregate
# Sources: manual "db.aggregate()" and "$documents" (examples: test documents, $lookup from $documents).

def test_database_aggregate_documents(client):
    out = list(client.db.aggregate([{"$documents": [{"x": 10}, {"x": 2}, {"x": 5}]},
                                    {"$match": {"x": {"$gt": 3}}}, {"$sort": {"x": 1}}]))
    assert out == [{"x": 5}, {"x": 10}]
    assert "db" not in client.list_database_names()  # $documents reads no collection and creates none


def test_database_aggregate_documents_lookup(client):
    client.db.locations.insert_many([{"_id": 1, "name": "Paris"}, {"_id": 2, "name": "Rome"}])
    out = list(client.db.aggregate([
        {"$documents": [{"loc": 2, "doc": "b"}, {"loc": 3, "doc": "c"}]},
        {"$lookup": {"from": "locations", "localField": "loc", "foreignField": "_id", "as": "where"}},
    ]))
    assert out == [{"loc": 2, "doc": "b", "where": [{"_id": 2, "name": "Rome"}]},
                   {"loc": 3, "doc": "c", "where": []}]
    assert client.db.list_collection_names() == ["locations"]


@pytest.mark.parametrize("pipeline, code", [
    ([{"$match": {}}], 73),
    ([{"$project": {"a": 1}}], 73),
    ([{"$documents": 5}], 5858203),
    ([{"$documents": [{"a": 1}, 3]}], 5858203),
    ([{"$documents": [{}]}, {"$documents": [{}]}], 40602),
    # $currentOp runs on admin only (document_source_current_op.cpp: InvalidNamespace); $listLocalSessions runs
    # on any database, so it is not here (tests/test_wire_server_tools.py)
    ([{"$currentOp": {}}], 73),
])
def test_database_aggregate_errors(client, pipeline, code):
    with pytest.raises(OperationFailure) as info:
        list(client.db.aggregate(pipeline))
    assert info.value.code == code


def test_database_aggregate_documents_with_set_field(client):
    out = list(client.db.aggregate([
        {"$documents": [{"_id": 1, "price": 3}]},
        {"$replaceWith": {"$setField": {"field": "price.usd", "input": "$$ROOT", "value": "$price"}}},
    ]))
    assert out == [{"_id": 1, "price": 3, "price.usd": 3}]


# ------------------------------------------------------------------------------------ $getField / $setField
# Source: jstests/aggregation/expressions/expression_get_field.js and expression_set_field.js; manual pages
# "$getField", "$setField", "$unsetField".

ODD = {"_id": 0, "x": 0, "a$b": "foo", "a.b": "bar", "a.$b": 5, "$a": 10, "c": {"d": "x"}, "e": {"$f": 30},
       "$v..": None}


@pytest.fixture
def odd(client):
    client.db.odd.insert_one(dict(ODD))
    return client.db.odd


def _project(coll, expr):
    return list(coll.aggregate([{"$project": {"_id": 1, "test": expr}}]))[0]


@pytest.mark.parametrize("arg, expected", [
    ("a$b", "foo"), ("a.b", "bar"), ("a.$b", 5), ("x", 0),
    ({"$literal": "$a"}, 10), ({"$const": "$v.."}, None),
    ({"field": "a", "input": {"a": "b"}}, "b"),
    ({"field": {"$const": "$f"}, "input": "$e"}, 30),
    ({"field": "a", "input": None}, None),
    ({"field": "a", "input": {"a": None}}, None),
    ({"field": "d", "input": {"$getField": "c"}}, "x"),
])
def test_get_field_values(odd, arg, expected):
    assert _project(odd, {"$getField": arg}) == {"_id": 0, "test": expected}


@pytest.mark.parametrize("arg", [
    "a", {"field": "a", "input": {"b": 2}}, {"field": "a", "input": True}, {"$const": "$u.."},
    {"field": "x", "input": {"$getField": "doesNotExist"}}, {"field": "a.b.c", "input": {"a": {"b": {"c": 5}}}},
])
def test_get_field_missing(odd, arg):
    assert _project(odd, {"$getField": arg}) == {"_id": 0}


@pytest.mark.parametrize("arg, code", [
    ({"input": {"a": "b"}}, 3041702), ({"field": "a"}, 3041703),
    ({"field": "a", "input": {}, "unknown": True}, 3041701),
    ({"field": True, "input": {}}, 5654602), (5, 5654602), ({"field": None, "input": {}}, 5654602),
    ({"field": {"a": 1}, "input": {}}, 5654601), ({"$add": [2, 3]}, 5654601),
    ({"field": {"$concat": ["a", "b"]}, "input": {}}, 5654601),
    ({"field": "$a", "input": {}}, 5654600), ({"field": "$$CURRENT.a", "input": {}}, 5654600),
])
def test_get_field_errors(odd, arg, code):
    with pytest.raises(OperationFailure) as info:
        _project(odd, {"$getField": arg})
    assert info.value.code == code


def test_get_field_in_match_expr(odd):
    out = list(odd.aggregate([{"$match": {"$expr": {"$eq": [{"$getField": "a.b"}, "bar"]}}}, {"$project": {"_id": 1}}]))
    assert out == [{"_id": 0}]


@pytest.mark.parametrize("arg, expected", [
    ({"field": "a", "input": {"a": "b"}, "value": 24}, {"a": 24}),
    ({"field": "a", "input": {"b": "b"}, "value": 24}, {"b": "b", "a": 24}),
    ({"field": "a", "input": {"a": "b"}, "value": "$$REMOVE"}, {}),
    ({"field": "a.b.c", "input": {"a": {"b": {"c": 5}}}, "value": 1}, {"a": {"b": {"c": 5}}, "a.b.c": 1}),
    ({"field": {"$literal": "$b"}, "input": {"$literal": {"$b": 5}}, "value": 7}, {"$b": 7}),
    ({"field": "x", "input": None, "value": 0}, None),
])
def test_set_field_values(odd, arg, expected):
    assert _project(odd, {"$setField": arg}) == {"_id": 0, "test": expected}


def test_set_field_keeps_field_order(odd):
    out = _project(odd, {"$setField": {"field": "a.b", "input": "$$ROOT", "value": 1}})["test"]
    assert list(out) == list(ODD) and out["a.b"] == 1


def test_unset_field(odd):
    out = _project(odd, {"$unsetField": {"field": {"$literal": "$a"}, "input": "$$ROOT"}})["test"]
    assert "$a" not in out and list(out) == [k for k in ODD if k != "$a"]
    assert _project(odd, {"$unsetField": {"field": "q", "input": None}}) == {"_id": 0, "test": None}


@pytest.mark.parametrize("op, arg, code", [
    ("$setField", 5, 4161100), ("$setField", "foo", 4161100), ("$setField", {"$add": [2, 3]}, 4161101),
    ("$setField", {"field": "a", "input": {}, "value": 1, "unknown": True}, 4161101),
    ("$setField", {"input": {"a": "b"}}, 4161102), ("$setField", {"field": "a"}, 4161103),
    ("$setField", {"field": "foo", "value": 0}, 4161109),
    ("$setField", {"field": True, "input": {}, "value": 1}, 4161107),
    ("$setField", {"field": {"a": 1}, "input": {}, "value": 1}, 4161106),
    ("$setField", {"field": "$path", "input": {}, "value": 1}, 4161108),
    ("$setField", {"field": "a", "input": True, "value": 1}, 4161105),
    ("$unsetField", {"field": "a", "value": "foo"}, 4161101),
    ("$unsetField", {"field": "foo"}, 4161109),
    ("$unsetField", {"field": "a", "input": True}, 4161105),
])
def test_set_field_errors(odd, op, arg, code):
    with pytest.raises(OperationFailure) as info:
        _project(odd, {op: arg})
    assert info.value.code == code


# ------------------------------------------------------------------------------ "$"-prefixed and dotted names
# Source: jstests/core/field_name_validation.js (insert section); manual "Field Names" / "Field Names with
# Periods and Dollar Signs": allowed at every level since 5.0, except "$"-prefixed names inside an _id object.

@pytest.mark.parametrize("doc", [
    {"a.b": 1}, {"_id.a": 1}, {"a": {"a.b": 1}}, {"_id": {"a.b": 1}}, {"a": {"$b": 1}},
    {"$a": 1}, {"valid": 1, "$a": 1}, {"$a": {"$b": 1}}, {"$ref": 1}, {"$id": 1}, {"$db": 1},
])
def test_dollar_and_dotted_names_are_stored(client, doc):
    client.db.f.insert_one(dict(doc))
    stored = client.db.f.find_one({}, {"_id": 0}) if "_id" not in doc else client.db.f.find_one()
    expected = {k: v for k, v in doc.items() if k != "_id"} if "_id" not in doc else doc
    assert stored == expected


def test_dollar_field_round_trip_and_index(client):
    c = client.db.f
    c.insert_one({"_id": 0, "$valid": 1, "a": 1})
    c.create_index("a")
    assert c.find_one({"a": 1}) == {"_id": 0, "$valid": 1, "a": 1}
    c.insert_many([{"_id": 1, "$x": 1}, {"_id": 2, "$ref": 1, "$id": 2}])
    assert c.count_documents({}) == 3
    assert c.find_one({"a.$b": {"$exists": False}, "_id": 2}) == {"_id": 2, "$ref": 1, "$id": 2}


@pytest.mark.parametrize("bad_id", [{"$b": 1}, {"a": 1, "$b": 1}])
def test_dollar_names_inside_id_refused(client, bad_id):
    with pytest.raises(WriteError) as info:
        client.db.f.insert_one({"_id": bad_id})
    assert info.value.code == 52  # DollarPrefixedFieldName
    with pytest.raises(BulkWriteError) as info:
        client.db.f.insert_many([{"_id": 1}, {"_id": bad_id}, {"_id": 3}], ordered=False)
    assert [e["code"] for e in info.value.details["writeErrors"]] == [52]
    assert client.db.f.count_documents({}) == 2


def test_client_bulk_write_error_in_a_transaction_aborts_it(client):
    # Manual "Transactions" > error handling: a write error aborts the transaction (NoSuchTransaction, 251, after).
    client.db.c.insert_one({"_id": 1})
    with client.start_session() as s:
        s.start_transaction()
        with pytest.raises(ClientBulkWriteException) as info:
            client.bulk_write([InsertOne(namespace="db.c", document={"_id": 1}),
                               InsertOne(namespace="db.c", document={"_id": 2})], session=s, ordered=False)
        assert [(e["idx"], e["code"]) for e in info.value.write_errors] == [(0, 11000)]
        with pytest.raises(OperationFailure) as info:
            s.commit_transaction()
        assert info.value.code == 251
    assert client.db.c.count_documents({}) == 1


def test_insert_many_of_a_cursor_or_generator_while_commands_are_watched():
    """pymongo's insert_many takes any iterable of documents (collection.py: ``gen()`` over ``documents``); with a
    command listener registered the documents are still read once and all inserted (the monitor used to exhaust
    a generator or cursor first)."""
    from pymongo import monitoring

    class Quiet(monitoring.CommandListener):
        def started(self, event): self.seen = getattr(self, "seen", 0) + 1
        def succeeded(self, event): pass
        def failed(self, event): pass

    listener = Quiet()
    client = EmbeddedClient(event_listeners=[listener])
    db = client.iter_docs
    db.a.insert_many([{"_id": i} for i in range(5)])
    assert db.b.insert_many(db.a.find()).inserted_ids == [0, 1, 2, 3, 4]
    assert db.c.insert_many({"_id": i} for i in range(3)).inserted_ids == [0, 1, 2]
    assert db.b.count_documents({}) == 5 and db.c.count_documents({}) == 3 and listener.seen > 0
