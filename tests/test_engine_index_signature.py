"""Index signatures (MongoDB 5.0+): several indexes may share a key pattern when they differ in ``unique``,
``sparse``, ``partialFilterExpression`` or collation; other options (``expireAfterSeconds``, ``hidden``) do not
tell two indexes apart. Run in-process and over the wire (tests/both_paths.py).

Facts, from MongoDB's source and tests:

* src/mongo/db/index/index_descriptor.cpp ``IndexDescriptor::compareIndexOptions``: "We first check whether the
  key pattern is identical for both indexes", then ``unique()``, ``isSparse()``, the collators
  (``collatorsMatch``) and the partial filter ("Compare 'partialFilterExpression' in each descriptor to see if
  they are equivalent", after ``parseAndNormalize``) decide kDifferent; the remaining options (all but key,
  name, v, background, collation, partialFilterExpression, unique, sparse, wildcardProjection) decide kIdentical
  or kEquivalent: "two indexes with these options and the same key cannot coexist".
* src/mongo/db/catalog/index_catalog_impl.cpp ``_doesSpecConflictWithExisting``: same name and kDifferent is
  IndexKeySpecsConflict ("An existing index has the same name as the requested index..."), same name and
  kEquivalent is IndexOptionsConflict ("An equivalent index already exists with the same name but different
  options"), same name and kIdentical is IndexAlreadyExists (not an error: createIndexes answers "all indexes
  already exist"); another name and kEquivalent is IndexOptionsConflict ("...with a different name and
  options"), kIdentical is IndexOptionsConflict ("Index already exists with a different name: <name>").
* jstests/core/index/index_signature.js: a second ``{a: 1}`` index with ``sparse: true`` is built; with
  ``unique: true`` too; ``expireAfterSeconds`` alone is IndexOptionsConflict; partial filters
  ``{a: {$gt: 0, $lt: 10}, b: "blah"}`` and ``{$and: [{b: "blah"}, {a: {$lt: 10}}, {a: {$gt: 0}}]}`` are one
  signature, ``{$and: [{a: {$type: 1}}, {a: {$type: 2}}]}`` and its reverse are not (SERVER-47661).
* src/mongo/db/catalog/drop_indexes.cpp ``getDescriptorByKeyPattern``: a key pattern matching several indexes is
  AmbiguousIndexKeyPattern (181) "N indexes found for key: ..., identify by name instead."; none is
  IndexNotFound (27) "can't find index with key: ...".
* src/mongo/db/query/query_planner.cpp: a hint by key pattern matching several indexes fails with IndexNotFound
  "Hint matched multiple indexes, must hint by index name".
* manual "Sparse Indexes": a sparse index is not used when the query needs documents without the field,
  unless hinted; manual "Partial Indexes" > "Query Coverage": a partial index only when the query implies its
  filter.
"""
from __future__ import annotations

import pytest
from pymongo import IndexModel
from pymongo.errors import OperationFailure

from both_paths import client, server  # noqa: F401 - fixtures


def _coll(client, name):  # noqa: F811
    db = client["sig_" + name]
    db.drop_collection("c")
    c = db.c
    c.insert_many([{"_id": i, "a": i % 5, "b": i} for i in range(20)] + [{"_id": 100, "b": 100}])
    return c


def _names(coll):
    return [ix["name"] for ix in coll.list_indexes()]


def test_sparse_next_to_plain_index_is_a_new_index(client):  # noqa: F811
    # index_signature.js: "Verifies that we can create a second index on {a: 1} with 'sparse':true"
    c = _coll(client, "sparse")
    c.delete_many({"a": {"$gt": 0}})  # unique indexes below: one document per value of a
    c.delete_many({"a": 0, "_id": {"$gt": 0}})
    c.create_index("a")
    assert c.create_index([("a", 1)], name="sp", sparse=True) == "sp"
    assert c.create_index([("a", 1)], name="uq", unique=True) == "uq"
    assert c.create_index([("a", 1)], name="uq_sp", unique=True, sparse=True) == "uq_sp"
    specs = {ix["name"]: ix for ix in c.list_indexes()}
    assert _names(c) == ["_id_", "a_1", "sp", "uq", "uq_sp"]
    assert specs["sp"] == {"v": 2, "key": {"a": 1}, "name": "sp", "sparse": True}
    assert specs["uq_sp"]["unique"] is True and specs["uq_sp"]["sparse"] is True
    # $indexStats lists each of them under its own name, with the shared key pattern
    stats = {d["name"]: d["key"] for d in c.aggregate([{"$indexStats": {}}])}
    assert stats["sp"] == stats["a_1"] == {"a": 1}


def test_collation_and_partial_filter_are_part_of_the_signature(client):  # noqa: F811
    c = _coll(client, "collation")
    pf = {"a": {"$gt": 0, "$lt": 10}, "b": "blah"}
    c.create_index([("a", 1)], name="initial", collation={"locale": "en_US", "strength": 1},
                   partialFilterExpression=pf)
    c.create_index([("a", 1)], name="simple", collation={"locale": "simple"}, partialFilterExpression=pf)
    c.create_index([("a", 1)], name="other_filter", collation={"locale": "en_US", "strength": 1},
                   partialFilterExpression={"a": {"$gt": 5, "$lt": 10}, "b": "blah"})
    assert _names(c) == ["_id_", "initial", "simple", "other_filter"]
    # the same filter written differently is the same signature: identical under the same name (no-op) ...
    same = {"$and": [{"b": "blah"}, {"a": {"$lt": 10}}, {"a": {"$gt": 0}}]}
    assert c.create_index([("a", 1)], name="initial", collation={"locale": "en_US", "strength": 1},
                          partialFilterExpression=same) == "initial"
    # ... and refused under another name
    with pytest.raises(OperationFailure) as err:
        c.create_index([("a", 1)], name="dupe", collation={"locale": "en_US", "strength": 1},
                       partialFilterExpression=same)
    assert err.value.code == 85 and "Index already exists with a different name: initial" in str(err.value)
    # leaves of one type on one path are not sorted by value: the reversed $and is another signature, so the
    # same name with it is IndexKeySpecsConflict (86)
    types = {"$and": [{"a": {"$type": 1}}, {"a": {"$type": 2}}]}
    c.create_index([("a", 1)], name="types", partialFilterExpression=types)
    with pytest.raises(OperationFailure) as err:
        c.create_index([("a", 1)], name="types",
                       partialFilterExpression={"$and": [{"a": {"$type": 2}}, {"a": {"$type": 1}}]})
    assert err.value.code == 86 and "An existing index has the same name" in str(err.value)


def test_options_outside_the_signature_conflict(client):  # noqa: F811
    c = _coll(client, "nonsig")
    c.create_index("a")
    # index_signature.js: "Verifies that non-signature options cannot distinguish a new index"
    with pytest.raises(OperationFailure) as err:
        c.create_index([("a", 1)], name="non_sig_index", expireAfterSeconds=10)
    assert err.value.code == 85
    assert "An equivalent index already exists with a different name and options" in str(err.value)
    # the same name and signature with another option: "...with the same name but different options"
    with pytest.raises(OperationFailure) as err:
        c.create_index([("a", 1)], name="a_1", hidden=True)
    assert err.value.code == 85 and "with the same name but different options" in str(err.value)
    # the same name on another signature: IndexKeySpecsConflict
    with pytest.raises(OperationFailure) as err:
        c.create_index([("a", 1)], name="a_1", sparse=True)
    assert err.value.code == 86
    assert _names(c) == ["_id_", "a_1"]


def test_identical_index_is_a_no_op(client):  # noqa: F811
    c = _coll(client, "noop")
    c.create_index([("a", 1)], name="sp", sparse=True)
    reply = c.database.command({"createIndexes": "c", "indexes": [{"key": {"a": 1}, "name": "sp", "sparse": True}]})
    assert reply["numIndexesBefore"] == reply["numIndexesAfter"] == 2
    assert reply["note"] == "all indexes already exist"
    assert c.create_indexes([IndexModel([("a", 1)], name="plain")]) == ["plain"]
    assert _names(c) == ["_id_", "sp", "plain"]


def test_planner_considers_both_indexes(client):  # noqa: F811
    c = _coll(client, "planner")
    c.create_index("a")
    c.create_index([("a", 1)], name="sp", sparse=True)
    # an equality on a: both indexes answer it, the first built wins the tie, the other is a rejected plan
    qp = c.find({"a": 2}).explain()["queryPlanner"]
    assert qp["winningPlan"]["inputStage"]["indexName"] == "a_1"
    assert [p["inputStage"]["indexName"] for p in qp["rejectedPlans"]] == ["sp"]
    # {a: null} needs the documents without a: the sparse index cannot answer it (manual "Sparse Indexes")
    qp = c.find({"a": None}).explain()["queryPlanner"]
    assert qp["winningPlan"]["inputStage"]["indexName"] == "a_1" and qp["rejectedPlans"] == []
    # ... unless hinted by name; a hint by the shared key pattern is ambiguous
    assert c.find({"a": None}).hint("sp").explain()["queryPlanner"]["winningPlan"]["inputStage"]["indexName"] == "sp"
    with pytest.raises(OperationFailure) as err:
        list(c.find({"a": 2}).hint([("a", 1)]))
    assert err.value.code == 27 and "Hint matched multiple indexes, must hint by index name" in str(err.value)
    assert len(list(c.find({"a": 2}).hint("sp"))) == 4


def test_partial_index_serves_only_queries_implying_its_filter(client):  # noqa: F811
    c = _coll(client, "partial")
    c.create_index("a")
    c.create_index([("a", 1)], name="small_b", partialFilterExpression={"b": {"$lt": 10}})
    qp = c.find({"a": 2, "b": {"$lt": 5}}).explain()["queryPlanner"]
    used = {qp["winningPlan"]["inputStage"]["indexName"]} | {p["inputStage"]["indexName"]
                                                             for p in qp["rejectedPlans"]}
    assert used == {"a_1", "small_b"}
    qp = c.find({"a": 2}).explain()["queryPlanner"]
    assert qp["winningPlan"]["inputStage"]["indexName"] == "a_1" and qp["rejectedPlans"] == []


def test_drop_by_shared_key_pattern_is_ambiguous(client):  # noqa: F811
    c = _coll(client, "drop")
    c.create_index("a")
    c.create_index([("a", 1)], name="sp", sparse=True)
    db = c.database
    with pytest.raises(OperationFailure) as err:
        db.command({"dropIndexes": "c", "index": {"a": 1}})  # what mongosh's dropIndex({a: 1}) sends
    assert err.value.code == 181
    assert "2 indexes found for key: { a: 1 }, identify by name instead." in str(err.value)
    with pytest.raises(OperationFailure) as err:
        db.command({"collMod": "c", "index": {"keyPattern": {"a": 1}, "hidden": True}})
    assert err.value.code == 181
    with pytest.raises(OperationFailure) as err:
        db.command({"dropIndexes": "c", "index": {"zz": 1}})
    assert err.value.code == 27 and "can't find index with key: { zz: 1 }" in str(err.value)
    assert _names(c) == ["_id_", "a_1", "sp"]
    c.drop_index("sp")  # by name
    db.command({"dropIndexes": "c", "index": {"a": 1}})  # one left: the key pattern names it
    assert _names(c) == ["_id_"]
