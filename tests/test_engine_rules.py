"""Server rules on the embedded engine: schema validation and document limits.

Each test reproduces a MongoDB manual example (quoted in its docstring) through plain pymongo calls, and
every failing write is checked to change nothing: documents (find results) and indexes (entries and
explain's keysExamined).
"""
from __future__ import annotations

import logging
import re

import pytest
from bson.int64 import Int64
from pymongo import InsertOne, ReplaceOne, ReturnDocument, UpdateOne
from pymongo.errors import (BulkWriteError, CollectionInvalid, DocumentTooLarge, OperationFailure, WriteError)

from labkit.engine import EmbeddedClient

from manual_examples import INVENTORY, INVENTORY_SCHEMA, STUDENTS_SCHEMA

MiB = 1024 * 1024

ALICE = {"name": "Alice", "year": 2019, "major": "History", "address": {"city": "NYC", "street": "33rd Street"}}


@pytest.fixture()
def db():
    return EmbeddedClient().rules


def state(coll):
    """Everything a failed write must leave alone: documents in natural order and every index's entries."""
    st = coll._store
    return ([repr(d) for d in st.docs.values()], {n: list(ix.entries) for n, ix in st.ix.items()})


def keys_examined(cur) -> int:
    return cur.explain()["executionStats"]["totalKeysExamined"]


def students(db, **opts):
    db.create_collection("students", validator={"$jsonSchema": STUDENTS_SCHEMA}, **opts)
    db.students.create_index("name")
    return db.students


# ------------------------------------------------------------------------------------------- validation
def test_students_gpa_int_fails_double_passes(db):
    """Manual, *Specify JSON Schema Validation*: the students collection requires ``gpa`` to be a double;
    ``insertOne({name: "Alice", year: Int32(2019), major: "History", gpa: Int32(3), address: ...})`` fails
    with "Document failed validation" (errInfo: gpa "type did not match", consideredValue 3, consideredType
    "int"); the same document with ``gpa: Double(3.0)`` is inserted."""
    c = students(db)
    before = state(c)
    with pytest.raises(WriteError) as ei:
        c.insert_one(dict(ALICE, gpa=3))
    e = ei.value
    assert e.code == 121 and "Document failed validation" in str(e)
    details = e.details["errInfo"]["details"]
    assert details["operatorName"] == "$jsonSchema" and details["title"] == "Student Object Validation"
    prop = details["schemaRulesNotSatisfied"][0]["propertiesNotSatisfied"][0]
    assert prop["propertyName"] == "gpa"
    assert prop["details"][0]["consideredValue"] == 3 and prop["details"][0]["consideredType"] == "int"
    assert state(c) == before and c.count_documents({}) == 0
    assert keys_examined(c.find({"name": "Alice"})) == 0
    c.insert_one(dict(ALICE, gpa=3.0))
    assert c.find_one({}, {"_id": 0, "name": 1, "gpa": 1}) == {"name": "Alice", "gpa": 3.0}
    assert keys_examined(c.find({"name": "Alice"})) == 1


def test_rules_shown_by_list_collections_and_options(db):
    """Manual, *View Existing Validation Rules*: ``db.getCollectionInfos({name: "students"})`` shows
    ``options: {validator: {$jsonSchema: ...}, validationLevel: "strict", validationAction: "error"}``."""
    students(db)
    db.create_collection("plain")
    infos = {i["name"]: i for i in db.list_collections()}
    assert infos["students"]["options"] == {"validator": {"$jsonSchema": STUDENTS_SCHEMA},
                                            "validationLevel": "strict", "validationAction": "error"}
    assert infos["plain"]["options"] == {} and infos["plain"]["type"] == "collection"
    assert db.students.options() == infos["students"]["options"]
    assert [i["name"] for i in db.list_collections(filter={"name": "students"})] == ["students"]
    assert db.list_collections(nameOnly=True).next().keys() == {"name", "type"}
    with pytest.raises(CollectionInvalid):
        db.create_collection("students")


def test_bad_rules_rejected_when_set(db):
    """Manual, *$jsonSchema* (omissions): ``type: "integer"`` is not supported (use ``bsonType: "int"``);
    createCollection/collMod refuse such validators, and unknown levels/actions, before changing anything."""
    bad = {"$jsonSchema": {"bsonType": "object", "properties": {"qty": {"type": "integer"}}}}
    with pytest.raises(OperationFailure) as ei:
        db.create_collection("inv", validator=bad)
    assert "Parsing of collection validator failed" in str(ei.value)
    assert "inv" not in db.list_collection_names()
    with pytest.raises(OperationFailure) as ei:
        db.create_collection("inv", validator={"a": 1}, validationLevel="sometimes")
    assert ei.value.code == 2
    with pytest.raises(OperationFailure):
        db.create_collection("inv", validator={"$where": "this.a > 1"})
    db.create_collection("inv", validator={"qty": {"$gte": 0}})
    with pytest.raises(OperationFailure):
        db.command("collMod", "inv", validator=bad)
    with pytest.raises(OperationFailure):
        db.command("collMod", "inv", validationAction="explode")
    assert db.inv.options()["validator"] == {"qty": {"$gte": 0}}
    with pytest.raises(OperationFailure) as ei:
        db.command("collMod", "missing", validator={"a": 1})
    assert ei.value.code == 26


def test_collmod_not_retroactive_and_moderate_level(db):
    """Manual, *Specify Validation Level for Existing Documents*: contacts ``{_id: 1, name: "Anne",
    phone: "+1 555 123 456", ...}`` and ``{_id: 2, name: "Ivan", city: "Vancouver"}`` exist before
    ``collMod`` adds a validator requiring string ``phone`` and ``name``. Existing documents stay. With
    ``validationLevel: "moderate"``, ``updateOne({_id: 1}, {$set: {name: 10}})`` fails (document 1 was
    valid) while ``updateOne({_id: 2}, {$set: {name: 20}})`` succeeds (document 2 already was invalid);
    with "strict" both fail."""
    c = db.contacts
    c.insert_many([{"_id": 1, "name": "Anne", "phone": "+1 555 123 456", "city": "London", "status": "Complete"},
                   {"_id": 2, "name": "Ivan", "city": "Vancouver"}])
    schema = {"bsonType": "object", "required": ["phone", "name"],
              "properties": {"phone": {"bsonType": "string", "description": "phone must be a string and is required"},
                             "name": {"bsonType": "string", "description": "name must be a string and is required"}}}
    assert db.command("collMod", "contacts", validator={"$jsonSchema": schema}, validationLevel="moderate")["ok"] == 1
    assert c.count_documents({}) == 2  # not applied retroactively
    assert c.options()["validationLevel"] == "moderate"
    before = state(c)
    with pytest.raises(WriteError) as ei:
        c.update_one({"_id": 1}, {"$set": {"name": 10}})
    assert ei.value.code == 121 and state(c) == before
    assert c.update_one({"_id": 2}, {"$set": {"name": 20}}).modified_count == 1
    db.command("collMod", "contacts", validationLevel="strict")
    assert c.options()["validator"] == {"$jsonSchema": schema}  # collMod keeps what it does not change
    with pytest.raises(WriteError):
        c.update_one({"_id": 2}, {"$set": {"name": 30}})
    assert c.find_one({"_id": 2})["name"] == 20


def test_query_operator_validator(db):
    """Manual, *Specify Validation With Query Operators* / *Choose How to Handle Invalid Documents*: with
    ``validator: {$or: [{phone: {$type: "string"}}, {email: {$regex: /@mongodb\\.com$/}},
    {status: {$in: ["Unknown", "Incomplete"]}}]}``, inserting ``{name: "Amanda", status: "Updated"}``
    fails with code 121 and errInfo ``operatorName: "$or"``."""
    db.create_collection("contacts", validator={"$or": [{"phone": {"$type": "string"}},
                                                        {"email": {"$regex": re.compile(r"@mongodb\.com$")}},
                                                        {"status": {"$in": ["Unknown", "Incomplete"]}}]})
    with pytest.raises(WriteError) as ei:
        db.contacts.insert_one({"name": "Amanda", "status": "Updated"})
    assert ei.value.code == 121
    assert ei.value.details["errInfo"]["details"]["operatorName"] == "$or"
    db.contacts.insert_one({"name": "Amanda", "status": "Incomplete"})
    db.contacts.insert_one({"name": "Xiao", "email": "xiao@mongodb.com"})
    assert db.contacts.count_documents({}) == 2


def test_validation_action_warn_logs_and_accepts(db, caplog):
    """Manual, *Choose How to Handle Invalid Documents*: with ``validationAction: "warn"`` the invalid
    ``{name: "Amanda", status: "Updated"}`` is inserted and the server logs "Document would fail
    validation" (log id 20294)."""
    db.create_collection("contacts2", validator={"$jsonSchema": {"bsonType": "object", "required": ["phone"]}},
                         validationAction="warn")
    with caplog.at_level(logging.WARNING, logger="labkit.engine"):
        db.contacts2.insert_one({"name": "Amanda", "status": "Updated"})
    assert db.contacts2.count_documents({}) == 1
    assert any("Document would fail validation" in r.getMessage() for r in caplog.records)


def test_bypass_document_validation(db):
    """Manual, *Bypass Schema Validation*: ``insertOne(doc, {bypassDocumentValidation: true})`` stores a
    document the validator would refuse (also for updates and bulk writes)."""
    c = students(db)
    c.insert_one({"name": "Bob"}, bypass_document_validation=True)
    c.insert_many([{"name": "Carol"}], bypass_document_validation=True)
    c.update_one({"name": "Bob"}, {"$set": {"gpa": 2}}, bypass_document_validation=True)
    c.bulk_write([InsertOne({"name": "Dan"})], bypass_document_validation=True)
    # pymongo's find_one_and_* pass extra keyword arguments as findAndModify fields: bypassDocumentValidation
    c.find_one_and_update({"name": "Dan"}, {"$set": {"gpa": 1}}, bypassDocumentValidation=True)
    with pytest.raises(OperationFailure) as err:  # not a pymongo argument: an unknown command field (IDL 40415)
        c.find_one_and_update({"name": "Dan"}, {"$set": {"gpa": 0}}, bypass_document_validation=True)
    assert err.value.code == 40415
    assert c.count_documents({}) == 3
    with pytest.raises(WriteError):
        c.insert_one({"name": "Eve"})


def test_insert_many_ordered_stops_unordered_continues(db):
    """Manual, *insertMany* error handling with the students validator: an ordered insert stops at the
    first invalid document (``nInserted`` counts the ones before it; ``writeErrors[0]`` has ``index``, code
    121 and ``errInfo``); an unordered insert tries every document and reports each failure."""
    c = students(db)
    docs = [dict(ALICE, name="A1", gpa=3.1), dict(ALICE, name="A2", gpa=3), dict(ALICE, name="A3", gpa=2.5),
            dict(ALICE, name="A4", year="2020")]
    with pytest.raises(BulkWriteError) as ei:
        c.insert_many([dict(d) for d in docs])
    det = ei.value.details
    assert det["nInserted"] == 1
    assert [(w["index"], w["code"]) for w in det["writeErrors"]] == [(1, 121)]
    assert det["writeErrors"][0]["errInfo"]["details"]["operatorName"] == "$jsonSchema"
    assert [d["name"] for d in c.find({}, {"name": 1})] == ["A1"]
    c.delete_many({})
    with pytest.raises(BulkWriteError) as ei:
        c.insert_many([dict(d) for d in docs], ordered=False)
    det = ei.value.details
    assert det["nInserted"] == 2
    assert [(w["index"], w["code"]) for w in det["writeErrors"]] == [(1, 121), (3, 121)]
    assert sorted(d["name"] for d in c.find()) == ["A1", "A3"]
    assert keys_examined(c.find({"name": "A2"})) == 0


def test_every_write_path_checks_the_resulting_document(db):
    """Manual, *Schema Validation*: "MongoDB applies validation rules on inserts and updates" -- update,
    replace, upsert, bulk_write and findAndModify are all checked on the document they would produce, and
    a refused write changes neither documents nor index entries."""
    c = students(db)
    c.insert_one(dict(ALICE, gpa=3.0))
    before = state(c)
    attempts = [
        lambda: c.update_one({"name": "Alice"}, {"$set": {"gpa": 4}}),
        lambda: c.update_many({}, {"$unset": {"major": ""}}),
        lambda: c.replace_one({"name": "Alice"}, {"name": "Alice"}),
        lambda: c.update_one({"name": "Zed"}, {"$set": {"gpa": 1.0}}, upsert=True),
        lambda: c.replace_one({"name": "Zed"}, {"name": "Zed"}, upsert=True),
        lambda: c.find_one_and_update({"name": "Alice"}, {"$set": {"year": 1999}}),
        lambda: c.find_one_and_replace({"name": "Alice"}, {"name": "Alice"}),
        lambda: c.find_one_and_update({"name": "Zed"}, {"$set": {"year": 2020}}, upsert=True),
    ]
    for attempt in attempts:
        with pytest.raises(WriteError) as ei:
            attempt()
        assert ei.value.code == 121
        assert state(c) == before
    with pytest.raises(BulkWriteError) as ei:
        c.bulk_write([UpdateOne({"name": "Alice"}, {"$set": {"gpa": 1}}), ReplaceOne({}, {"x": 1})])
    assert ei.value.details["writeErrors"][0]["code"] == 121 and state(c) == before
    assert keys_examined(c.find({"name": "Zed"})) == 0
    doc = c.find_one_and_update({"name": "Alice"}, {"$set": {"gpa": 3.9}}, return_document=ReturnDocument.AFTER)
    assert doc["gpa"] == 3.9


def test_jsonschema_query_operator(db):
    """Manual, *$jsonSchema* (query operator): with ``myschema`` (item string, qty int, size.uom string,
    h/w double, instock bool), ``find({$jsonSchema: myschema})`` returns the conforming inventory documents
    and ``find({$nor: [{$jsonSchema: myschema}]})`` the others (paper and planner: ``instock: 1``, a number); also in
    count_documents and an aggregation ``$match``."""
    myschema = INVENTORY_SCHEMA
    db.inventory.insert_many([dict(d) for d in INVENTORY])
    inv = db.inventory
    assert [d["item"] for d in inv.find({"$jsonSchema": myschema})] == \
        ["journal", "notebook", "postcard", "apple", "pears"]
    assert [d["item"] for d in inv.find({"$nor": [{"$jsonSchema": myschema}]})] == ["paper", "planner"]
    assert inv.count_documents({"$jsonSchema": myschema, "qty": {"$gt": 45}}) == 2
    out = inv.aggregate([{"$match": {"$nor": [{"$jsonSchema": myschema}]}}, {"$count": "n"}])
    assert list(out) == [{"n": 2}]
    with pytest.raises(OperationFailure):
        list(inv.find({"$jsonSchema": {"properties": {"qty": {"type": "integer"}}}}))


# ------------------------------------------------------------------------------------------- limits
def test_insert_over_16mib_raises_document_too_large(db):
    """Manual, *MongoDB Limits and Thresholds*: "The maximum BSON document size is 16 mebibytes"; pymongo
    refuses such a document before sending it (DocumentTooLarge). Nothing is stored."""
    c = db.big
    c.create_index("k")
    with pytest.raises(DocumentTooLarge):
        c.insert_one({"k": 1, "blob": "x" * (17 * MiB)})
    with pytest.raises(DocumentTooLarge):
        c.insert_many([{"k": 2}, {"k": 3, "blob": "x" * (17 * MiB)}])
    assert c.count_documents({}) == 0 and keys_examined(c.find({"k": {"$gte": 0}})) == 0
    c.insert_one({"k": 4, "blob": "x" * (15 * MiB)})
    assert c.count_documents({}) == 1


def test_update_growth_past_16mib_fails_17419(db):
    """Server rule (lesson 31's $push loop): an update whose result exceeds 16 MiB fails with WriteError
    17419 "Resulting document after update is larger than 16777216" and leaves the document unchanged."""
    c = db.grow
    c.create_index("k")
    c.insert_one({"_id": 1, "k": 1, "chunks": ["x" * (6 * MiB), "y" * (6 * MiB)]})
    before = state(c)
    with pytest.raises(WriteError) as ei:
        c.update_one({"_id": 1}, {"$push": {"chunks": "z" * (6 * MiB)}})
    assert ei.value.code == 17419 and "larger than 16777216" in str(ei.value)
    with pytest.raises(WriteError) as ei:
        c.replace_one({"_id": 1}, {"k": 2, "blob": "q" * (17 * MiB)})
    assert ei.value.code in (17419, 10334) or isinstance(ei.value, WriteError)
    assert state(c) == before
    assert len(c.find_one({"_id": 1})["chunks"]) == 2


def _nest(depth: int) -> dict:
    doc: dict = {"leaf": 1}
    for _ in range(depth - 1):
        doc = {"a": doc}
    return doc


def test_nesting_depth_limit_fails_cleanly(db):
    """The manual documents "no more than 100 levels of nesting" (*Nested Depth for BSON Documents*); an 8.0
    server stores up to BSONDepth::getMaxDepthForUserStorage() = 180 levels (src/mongo/bson/bson_depth.h,
    src/mongo/db/ops/insert.cpp). Deeper documents fail with code 15 (Overflow) on insert ("cannot insert
    document because it exceeds 180 levels of nesting") and on update ("Document exceeds maximum nesting depth
    of 180", src/mongo/db/update/storage_validation.cpp) -- even 5,000 levels give a clean WriteError, never a
    RecursionError -- and nothing changes."""
    c = db.deep
    c.insert_one(_nest(101))   # past the documented 100: a server stores it
    c.delete_many({})
    c.insert_one(_nest(180))
    before = state(c)
    for depth in (181, 5000):
        with pytest.raises(WriteError) as ei:
            c.insert_one(_nest(depth))
        assert ei.value.code == 15
    with pytest.raises(WriteError) as ei:
        c.update_one({}, {"$set": {"deeper": _nest(5000)}})
    assert ei.value.code == 15
    with pytest.raises(WriteError) as ei:
        c.update_one({}, {"$set": {"x": _nest(180)}})   # the result would nest 181 levels
    assert ei.value.code == 15
    assert ei.value.details["errmsg"] == "Document exceeds maximum nesting depth of 180"
    c.update_one({}, {"$set": {"x": _nest(179)}})         # 180 levels: accepted
    c.update_one({}, {"$unset": {"x": 1}})
    assert state(c) == before


def test_parallel_arrays_in_compound_index_171(db):
    """Manual, *Multikey Indexes* (compound): "you cannot create a compound multikey index if more than one
    to-be-indexed field of a document is an array" -- ``{a: [1, 2], b: [1, 2]}`` on index ``{a: 1, b: 1}``
    fails with code 171 "cannot index parallel arrays", both when inserting and when building the index."""
    c = db.par
    c.create_index([("a", 1), ("b", 1)])
    c.insert_one({"a": [1, 2], "b": 1})
    before = state(c)
    with pytest.raises(WriteError) as ei:
        c.insert_one({"a": [1, 2], "b": [1, 2]})
    assert ei.value.code == 171 and "cannot index parallel arrays [b] [a]" in str(ei.value)
    with pytest.raises(WriteError) as ei:
        c.update_one({}, {"$set": {"b": [3, 4]}})
    assert ei.value.code == 171
    assert state(c) == before
    d = db.par2
    d.insert_one({"a": [1], "b": [2]})
    with pytest.raises(OperationFailure) as ei:
        d.create_index([("a", 1), ("b", 1)])
    assert ei.value.code == 171
    assert list(d.index_information()) == ["_id_"]


def test_int64_and_int32_bson_types_in_validator(db):
    """Manual, *bsonType* aliases: ``"long"`` matches Int64 values only, ``"int"`` 32-bit integers."""
    db.create_collection("counts", validator={"$jsonSchema": {"properties": {"n": {"bsonType": "long"}}}})
    db.counts.insert_one({"n": Int64(5)})
    with pytest.raises(WriteError):
        db.counts.insert_one({"n": 5})


# ------------------------------------------------------------------------------------------- stages & DDL
def test_out_replaces_atomically_keeps_indexes(db):
    """Manual, *$out*: "$out replaces the existing collection ... does not change any indexes that existed
    on the previous collection. If the aggregation fails, the $out operation makes no changes to the
    pre-existing collection"; the aggregation returns no documents."""
    db.books.insert_many([{"_id": 8751, "title": "The Banquet", "author": "Dante", "copies": 2},
                          {"_id": 8752, "title": "Divine Comedy", "author": "Dante", "copies": 1},
                          {"_id": 8645, "title": "Eclogues", "author": "Dante", "copies": 2},
                          {"_id": 7000, "title": "The Odyssey", "author": "Homer", "copies": 10},
                          {"_id": 7020, "title": "Iliad", "author": "Homer", "copies": 10}])
    db.authors.insert_one({"_id": "Nobody", "books": []})
    db.authors.create_index("books", name="books_1")
    out = db.books.aggregate([{"$group": {"_id": "$author", "books": {"$push": "$title"}}}, {"$sort": {"_id": 1}},
                              {"$out": "authors"}])
    assert list(out) == []
    assert list(db.authors.find()) == [
        {"_id": "Dante", "books": ["The Banquet", "Divine Comedy", "Eclogues"]},
        {"_id": "Homer", "books": ["The Odyssey", "Iliad"]}]
    assert "books_1" in db.authors.index_information()
    assert db.authors.find({"books": "Iliad"}).explain()["executionStats"]["totalKeysExamined"] == 1
    db.authors.create_index("n", unique=True, sparse=True)
    before = state(db.authors)
    with pytest.raises(OperationFailure) as ei:
        db.books.aggregate([{"$project": {"n": {"$literal": 1}}}, {"$out": "authors"}])
    assert ei.value.code == 11000 and state(db.authors) == before
    with pytest.raises(OperationFailure) as ei:
        db.books.aggregate([{"$out": "x"}, {"$match": {}}])
    assert ei.value.code == 40601


def test_merge_when_matched_and_not_matched(db):
    """Manual, *$merge* (On-Demand Materialized View / Merge and Replace): the defaults on "_id",
    whenMatched "merge", whenNotMatched "insert"; "keepExisting"/"replace"/"fail", "discard"/"fail", an
    update pipeline with $$new, and "on" fields that need a unique index (51183)."""
    db.salaries.insert_many([{"_id": 1, "employee": "Ant", "dept": "A", "salary": 100000, "fiscal_year": 2017},
                             {"_id": 2, "employee": "Bee", "dept": "A", "salary": 120000, "fiscal_year": 2017},
                             {"_id": 3, "employee": "Cat", "dept": "Z", "salary": 115000, "fiscal_year": 2017},
                             {"_id": 4, "employee": "Ant", "dept": "A", "salary": 115000, "fiscal_year": 2018}])
    pipe = [{"$group": {"_id": {"fiscal_year": "$fiscal_year", "dept": "$dept"}, "salaries": {"$sum": "$salary"}}}]
    assert list(db.salaries.aggregate(pipe + [{"$merge": {"into": "budgets", "whenMatched": "replace"}}])) == []
    got = {(d["_id"]["fiscal_year"], d["_id"]["dept"]): d["salaries"] for d in db.budgets.find()}
    assert got == {(2017, "A"): 220000, (2017, "Z"): 115000, (2018, "A"): 115000}
    db.salaries.insert_one({"_id": 5, "employee": "Dog", "dept": "Z", "salary": 5, "fiscal_year": 2018})
    db.salaries.update_one({"_id": 1}, {"$inc": {"salary": 1}})
    db.salaries.aggregate(pipe + [{"$merge": {"into": "budgets", "whenMatched": "keepExisting"}}])
    got = {(d["_id"]["fiscal_year"], d["_id"]["dept"]): d["salaries"] for d in db.budgets.find()}
    assert got[(2017, "A")] == 220000 and got[(2018, "Z")] == 5
    db.salaries.aggregate(pipe + [{"$merge": {"into": "budgets", "whenMatched": [
        {"$set": {"previous": "$salaries", "salaries": "$$new.salaries"}}], "whenNotMatched": "discard"}}])
    doc = db.budgets.find_one({"_id": {"fiscal_year": 2017, "dept": "A"}})
    assert doc["salaries"] == 220001 and doc["previous"] == 220000
    with pytest.raises(OperationFailure) as ei:
        db.salaries.aggregate(pipe + [{"$merge": {"into": "budgets", "whenMatched": "fail"}}])
    assert ei.value.code == 11000
    with pytest.raises(OperationFailure) as ei:
        db.salaries.aggregate([{"$merge": {"into": "other", "whenNotMatched": "fail"}}])
    assert ei.value.code == 13113
    with pytest.raises(OperationFailure) as ei:
        db.salaries.aggregate([{"$merge": {"into": "budgets", "on": "employee"}}])
    assert ei.value.code == 51183
    # merge back into the collection being aggregated, adding a field (lesson 36's migration shape)
    db.salaries.aggregate([{"$project": {"band": {"$cond": [{"$gte": ["$salary", 115000]}, "high", "low"]}}},
                           {"$merge": {"into": "salaries", "on": "_id", "whenMatched": "merge",
                                       "whenNotMatched": "discard"}}])
    assert [d["band"] for d in db.salaries.find().sort("_id", 1)] == ["low", "high", "high", "high", "low"]


def test_merge_and_out_respect_validation(db):
    """Manual, *$merge*/*$out* with schema validation: the written documents must pass the target's
    validator unless the aggregation sets bypassDocumentValidation."""
    db.create_collection("valid", validator={"$jsonSchema": {"required": ["ok"]}})
    db.src.insert_many([{"_id": 1}, {"_id": 2, "ok": True}])
    with pytest.raises(OperationFailure) as ei:
        db.src.aggregate([{"$merge": {"into": "valid"}}])
    assert ei.value.code == 121
    with pytest.raises(OperationFailure) as ei:
        db.src.aggregate([{"$out": "valid"}])
    assert ei.value.code == 121 and db.valid.count_documents({}) == 0
    db.src.aggregate([{"$out": "valid"}], bypassDocumentValidation=True)
    assert db.valid.count_documents({}) == 2 and db.valid.options()["validator"] == {"$jsonSchema": {"required": ["ok"]}}


def test_graph_lookup_reporting_hierarchy(db):
    """Manual, *$graphLookup* (Within a Single Collection): employees Dev <- Eliot <- Ron/Andrew <- Asya/Dan;
    ``{$graphLookup: {from: "employees", startWith: "$reportsTo", connectFromField: "reportsTo",
    connectToField: "name", as: "reportingHierarchy"}}`` gives Dev ``[]``, Eliot ``[Dev]``, Ron ``[Eliot,
    Dev]``, Asya ``[Ron, Eliot, Dev]``...; maxDepth 0 keeps the first level; depthField counts levels."""
    db.employees.insert_many([{"_id": 1, "name": "Dev"}, {"_id": 2, "name": "Eliot", "reportsTo": "Dev"},
                              {"_id": 3, "name": "Ron", "reportsTo": "Eliot"},
                              {"_id": 4, "name": "Andrew", "reportsTo": "Eliot"},
                              {"_id": 5, "name": "Asya", "reportsTo": "Ron"},
                              {"_id": 6, "name": "Dan", "reportsTo": "Andrew"}])
    db.employees.create_index("name")
    stage = {"from": "employees", "startWith": "$reportsTo", "connectFromField": "reportsTo",
             "connectToField": "name", "as": "reportingHierarchy"}
    out = {d["name"]: sorted(x["name"] for x in d["reportingHierarchy"])
           for d in db.employees.aggregate([{"$graphLookup": stage}])}
    assert out == {"Dev": [], "Eliot": ["Dev"], "Ron": ["Dev", "Eliot"], "Andrew": ["Dev", "Eliot"],
                   "Asya": ["Dev", "Eliot", "Ron"], "Dan": ["Andrew", "Dev", "Eliot"]}
    out = list(db.employees.aggregate([{"$match": {"name": "Asya"}},
                                       {"$graphLookup": dict(stage, maxDepth=0, depthField="level")}]))
    assert [(x["name"], x["level"]) for x in out[0]["reportingHierarchy"]] == [("Ron", 0)]
    out = list(db.employees.aggregate([{"$match": {"name": "Asya"}},
                                       {"$graphLookup": dict(stage, depthField="level",
                                                             restrictSearchWithMatch={"name": {"$ne": "Dev"}})}]))
    assert sorted((x["name"], x["level"]) for x in out[0]["reportingHierarchy"]) == [("Eliot", 1), ("Ron", 0)]


def test_unmodelled_features_raise_clearly(db):
    """JavaScript ($function) is valid on MongoDB 8.0 but not modelled here: each raises OperationFailure naming the feature,
    saying it is not modelled and how to use it ("set MONGODB_URI" on the embedded path)
    instead of being ignored or reported as unknown."""
    db.t.insert_one({"d": 1})
    # time-unit windows and $expMovingAvg are the engine's own now (tests/test_engine_stages.py)
    attempts = [
        lambda: list(db.t.aggregate([{"$project": {"x": {"$function": {"body": "function(d) {return d}",
                                                                       "args": ["$d"], "lang": "js"}}}}])),
    ]
    for attempt in attempts:
        with pytest.raises(OperationFailure) as ei:
            attempt()
        assert "not modelled by labkit's embedded engine" in str(ei.value) and "MONGODB_URI" in str(ei.value)
    assert db.list_collection_names() == ["t"]
    assert list(db.t.aggregate([{"$replaceWith": {"x": "$d"}}])) == [{"x": 1}]


def test_create_and_list_collections_commands(db):
    """Manual, *create* / *listCollections* commands: ``db.runCommand({create: "orders", validator: ...})``
    sets the rules; ``listCollections`` with a filter shows them; creating an existing collection is
    NamespaceExists (48)."""
    assert db.command("create", "orders", validator={"total": {"$gte": 0}}, validationAction="warn")["ok"] == 1
    batch = db.command("listCollections", filter={"name": "orders"})["cursor"]["firstBatch"]
    assert batch[0]["options"] == {"validator": {"total": {"$gte": 0}}, "validationLevel": "strict",
                                   "validationAction": "warn"}
    with pytest.raises(OperationFailure) as ei:
        db.command("create", "orders")
    assert ei.value.code == 48


def test_expr_validator(db):
    """Manual, *Specify Validation With Query Operators* ($expr): orders must satisfy ``totalWithVAT ==
    total * (1 + VAT)``; a consistent order is stored, an inconsistent one fails with 121, with doubles and with
    the manual's NumberDecimal values (Decimal128 arithmetic is the engine's, expr_arith.py)."""
    from bson import Decimal128
    db.create_collection("orders", validator={"$expr": {"$eq": [
        "$totalWithVAT", {"$multiply": ["$total", {"$sum": [1, "$VAT"]}]}]}})
    db.orders.insert_one({"total": 141.0, "VAT": 0.25, "totalWithVAT": 176.25})
    with pytest.raises(WriteError) as ei:
        db.orders.insert_one({"total": 141.0, "VAT": 0.25, "totalWithVAT": 176.0})
    assert ei.value.code == 121 and ei.value.details["errInfo"]["details"]["operatorName"] == "$expr"
    db.orders.insert_one({"total": Decimal128("141"), "VAT": Decimal128("0.20"), "totalWithVAT": Decimal128("169.2")})
    with pytest.raises(WriteError) as ei:
        db.orders.insert_one({"total": Decimal128("141"), "VAT": Decimal128("0.20"), "totalWithVAT": Decimal128("169")})
    assert ei.value.code == 121
    assert db.orders.count_documents({}) == 2


CAKE_SALES = [
    {"_id": 0, "type": "chocolate", "orderDate": "2020-05-18T14:10:30", "state": "CA", "price": 13, "quantity": 120},
    {"_id": 1, "type": "chocolate", "orderDate": "2021-03-20T11:30:05", "state": "WA", "price": 14, "quantity": 140},
    {"_id": 2, "type": "vanilla", "orderDate": "2021-01-11T06:31:15", "state": "CA", "price": 12, "quantity": 145},
    {"_id": 3, "type": "vanilla", "orderDate": "2020-02-08T13:13:23", "state": "WA", "price": 13, "quantity": 104},
    {"_id": 4, "type": "strawberry", "orderDate": "2019-05-18T16:09:01", "state": "CA", "price": 41, "quantity": 162},
    {"_id": 5, "type": "strawberry", "orderDate": "2019-01-08T06:12:03", "state": "WA", "price": 43, "quantity": 134}]


def test_set_window_fields_manual_examples(db):
    """Manual, *$setWindowFields* / *$rank* / *$shift* with the cakeSales collection: cumulative quantity per
    state (documents ["unbounded", "current"]) 162/282/427 and 134/238/378; moving average per year
    (documents [-1, 0]) 134, 148, 104, 112, 145, 142.5; a price range window [-10, 10] summing 265/265/162
    and 244/244/134; $rank by quantity descending; $shift by 1 with default "Not available"."""
    import datetime
    db.cakeSales.insert_many([dict(d, orderDate=datetime.datetime.fromisoformat(d["orderDate"])) for d in CAKE_SALES])

    def run(spec, field):
        return [(d["_id"], d[field]) for d in db.cakeSales.aggregate([{"$setWindowFields": spec}])]
    assert run({"partitionBy": "$state", "sortBy": {"orderDate": 1}, "output": {"cumulativeQuantityForState": {
        "$sum": "$quantity", "window": {"documents": ["unbounded", "current"]}}}}, "cumulativeQuantityForState") == \
        [(4, 162), (0, 282), (2, 427), (5, 134), (3, 238), (1, 378)]
    assert run({"partitionBy": {"$year": "$orderDate"}, "sortBy": {"orderDate": 1}, "output": {"averageQuantity": {
        "$avg": "$quantity", "window": {"documents": [-1, 0]}}}}, "averageQuantity") == \
        [(5, 134), (4, 148), (3, 104), (0, 112), (2, 145), (1, 142.5)]
    assert run({"partitionBy": "$state", "sortBy": {"price": 1}, "output": {"quantityFromSimilarOrders": {
        "$sum": "$quantity", "window": {"range": [-10, 10]}}}}, "quantityFromSimilarOrders") == \
        [(2, 265), (0, 265), (4, 162), (3, 244), (1, 244), (5, 134)]
    assert run({"partitionBy": "$state", "sortBy": {"quantity": -1}, "output": {"rankQuantityForState": {
        "$rank": {}}}}, "rankQuantityForState") == [(4, 1), (2, 2), (0, 3), (1, 1), (5, 2), (3, 3)]
    assert run({"partitionBy": "$state", "sortBy": {"quantity": -1}, "output": {"shiftQuantityForState": {
        "$shift": {"output": "$quantity", "by": 1, "default": "Not available"}}}}, "shiftQuantityForState") == \
        [(4, 145), (2, 120), (0, "Not available"), (1, 134), (5, 104), (3, "Not available")]


def test_date_trunc(db):
    """Manual, *$dateTrunc*: binSize 1 / unit hour truncates 2021-03-20T11:30:05Z to 11:00, binSize 2 to
    10:00 (bins counted from 2000-01-01); grouping the cakeSales orders by ``{$dateTrunc: {date:
    "$orderDate", unit: "month", binSize: 6}}`` sums quantities 296 (2019-01-01), 224 (2020-01-01) and 285
    (2021-01-01); weeks start on ``startOfWeek``; a missing date gives null."""
    import datetime
    db.cakeSales.insert_many([dict(d, orderDate=datetime.datetime.fromisoformat(d["orderDate"])) for d in CAKE_SALES])
    groups = db.cakeSales.aggregate([{"$group": {"_id": {"truncatedOrderDate": {"$dateTrunc": {
        "date": "$orderDate", "unit": "month", "binSize": 6}}}, "sumQuantity": {"$sum": "$quantity"}}}])
    assert sorted((g["_id"]["truncatedOrderDate"].isoformat(), g["sumQuantity"]) for g in groups) == [
        ("2019-01-01T00:00:00", 296), ("2020-01-01T00:00:00", 224), ("2021-01-01T00:00:00", 285)]
    out = next(db.cakeSales.aggregate([{"$match": {"_id": 1}}, {"$project": {
        "h1": {"$dateTrunc": {"date": "$orderDate", "unit": "hour"}},
        "h2": {"$dateTrunc": {"date": "$orderDate", "unit": "hour", "binSize": 2}},
        "wk": {"$dateTrunc": {"date": "$orderDate", "unit": "week", "startOfWeek": "mon"}},
        "q": {"$dateTrunc": {"date": "$orderDate", "unit": "quarter"}},
        "la": {"$dateTrunc": {"date": "$orderDate", "unit": "day", "timezone": "-07:00"}},
        "none": {"$dateTrunc": {"date": "$missing", "unit": "day"}}}}]))
    assert out["h1"] == datetime.datetime(2021, 3, 20, 11) and out["h2"] == datetime.datetime(2021, 3, 20, 10)
    assert out["wk"] == datetime.datetime(2021, 3, 15) and out["q"] == datetime.datetime(2021, 1, 1)
    assert out["la"] == datetime.datetime(2021, 3, 20, 7) and out["none"] is None
