"""Read-only views on the embedded engine (labkit/engine/catalog/views.py), checked against MongoDB 8.0's rules.

Sources are named per test: the manual's "Views" pages (create, supported operations, collation, drop, modify),
``create``/``collMod``/``listCollections``, the server's src/mongo/db/views/ and catalog_raii.cpp, and
jstests/core/views/.
"""
from __future__ import annotations

import pytest
from pymongo.errors import BulkWriteError, OperationFailure, WriteError

from labkit.engine import EmbeddedClient


@pytest.fixture
def db():
    d = EmbeddedClient()["views_test"]
    d.people.insert_many([{"_id": i, "name": n, "state": s, "age": a}
                          for i, (n, s, a) in enumerate([("Ann", "CA", 30), ("Bob", "NY", 25), ("Cy", "CA", 41),
                                                         ("Di", "CA", 19), ("Ed", "NY", 52)])])
    return d


def _ca(db):
    return db.create_collection("ca", viewOn="people",
                                pipeline=[{"$match": {"state": "CA"}}, {"$project": {"state": 0}}])


def test_find_on_view_runs_pipeline_then_query(db):
    # jstests/core/views/views_find.js: filter, projection, sort, skip, limit on a view
    v = _ca(db)
    assert [d["name"] for d in v.find()] == ["Ann", "Cy", "Di"]
    assert all("state" not in d for d in v.find())
    assert list(v.find({"age": {"$gt": 20}}, {"_id": 0, "name": 1}).sort("age", -1)) == [{"name": "Cy"},
                                                                                          {"name": "Ann"}]
    assert [d["name"] for d in v.find().sort("age", 1).skip(1).limit(1)] == ["Ann"]
    assert v.find_one({"name": "Di"})["age"] == 19
    assert v.find_one({"name": "Bob"}) is None


def test_count_distinct_aggregate_on_view(db):
    # jstests/core/views/views_count.js, views_distinct.js, views_aggregation.js
    v = _ca(db)
    assert v.count_documents({}) == 3 and v.count_documents({"age": {"$lt": 35}}) == 2
    assert v.count_documents({}, skip=1, limit=1) == 1
    assert v.estimated_document_count() == 3
    assert v.distinct("age") == [19, 30, 41]
    assert db.command("count", "ca")["n"] == 3
    assert db.command("distinct", "ca", key="name")["values"] == ["Ann", "Cy", "Di"]
    out = list(v.aggregate([{"$group": {"_id": None, "total": {"$sum": "$age"}}}]))
    assert out == [{"_id": None, "total": 90}]


def test_views_on_views_and_create_command(db):
    # manual "Views": a view may be defined on another view; db.runCommand({create, viewOn, pipeline})
    _ca(db)
    db.command("create", "ca_adults", viewOn="ca", pipeline=[{"$match": {"age": {"$gte": 21}}}])
    assert [d["name"] for d in db.ca_adults.find()] == ["Ann", "Cy"]


def test_cycles_are_refused(db):
    # src/mongo/db/views/view_graph.cpp: GraphContainsCycle (93) "View cycle detected"
    db.create_collection("v1", viewOn="people")
    db.create_collection("v2", viewOn="v1")
    with pytest.raises(OperationFailure) as e:
        db.command("collMod", "v1", viewOn="v2", pipeline=[])
    assert e.value.code == 93 and "View cycle detected" in str(e.value)
    with pytest.raises(OperationFailure) as e:
        db.create_collection("v3", viewOn="v3")
    assert e.value.code == 93


def test_writes_and_indexes_on_view_fail_with_166(db):
    # catalog_raii.cpp: CommandNotSupportedOnView (166) "Namespace <ns> is a view, not a collection"
    v = _ca(db)
    for op in (lambda: v.insert_one({"x": 1}), lambda: v.update_one({}, {"$set": {"x": 1}}),
               lambda: v.delete_many({}), lambda: v.replace_one({}, {"x": 1})):
        with pytest.raises(WriteError) as e:
            op()
        assert e.value.code == 166 and "views_test.ca is a view, not a collection" in str(e.value)
    with pytest.raises(BulkWriteError) as e:
        v.insert_many([{"x": 1}])
    assert e.value.details["writeErrors"][0]["code"] == 166
    for op in (lambda: v.create_index("age"), lambda: list(v.list_indexes()),
               lambda: v.find_one_and_update({}, {"$set": {"x": 1}}),
               lambda: db.command("collStats", "ca"),
               lambda: db.command("createIndexes", "ca", indexes=[{"key": {"a": 1}, "name": "a_1"}])):
        with pytest.raises(OperationFailure) as e:
            op()
        assert e.value.code == 166
    assert db.people.count_documents({}) == 5


def test_list_collections_and_system_views(db):
    # manual "listCollections": a view is type "view" with options {viewOn, pipeline} and info.readOnly true;
    # the definition is stored in <db>.system.views as {_id: "<db>.<view>", viewOn, pipeline}
    _ca(db)
    entry = next(db.list_collections(filter={"name": "ca"}))
    assert entry["type"] == "view" and entry["info"] == {"readOnly": True} and "idIndex" not in entry
    assert entry["options"] == {"viewOn": "people", "pipeline": [{"$match": {"state": "CA"}},
                                                                 {"$project": {"state": 0}}]}
    assert db.ca.options() == entry["options"]
    assert list(db.system.views.find()) == [{"_id": "views_test.ca", "viewOn": "people",
                                              "pipeline": entry["options"]["pipeline"]}]
    assert db.command("dbStats")["views"] == 1


def test_collmod_and_drop_view(db):
    # manual "Modify a View" (collMod viewOn + pipeline) and "Remove a View" (drop)
    v = _ca(db)
    db.command("collMod", "ca", viewOn="people", pipeline=[{"$match": {"state": "NY"}}])
    assert [d["name"] for d in v.find()] == ["Bob", "Ed"]
    assert db.system.views.find_one()["pipeline"] == [{"$match": {"state": "NY"}}]
    v.drop()
    assert "ca" not in db.list_collection_names() and db.system.views.count_documents({}) == 0
    db.ca.insert_one({"_id": 1})  # the name is an ordinary collection again
    assert db.ca.find_one() == {"_id": 1}


def test_create_view_errors(db):
    # create_collection.cpp: "option not supported on a view" (InvalidOptions 72); existing name 48;
    # collection_options.cpp: pipeline without viewOn; $out in a view definition
    with pytest.raises(OperationFailure) as e:
        db.create_collection("v", viewOn="people", capped=True, size=4096)
    assert e.value.code == 72 and "option not supported on a view: capped" in str(e.value)
    with pytest.raises(OperationFailure) as e:
        db.command("create", "people", viewOn="x")
    assert e.value.code == 48
    with pytest.raises(OperationFailure) as e:
        db.create_collection("v", pipeline=[])
    assert e.value.code == 72
    with pytest.raises(OperationFailure):
        db.create_collection("v", viewOn="people", pipeline=[{"$out": "x"}])
    assert "v" not in db.list_collection_names()


def test_explain_on_view_shows_resolved_aggregation(db):
    # manual "Views: Supported operations" / explain: the explain of a read on a view is the resolved
    # aggregation's explain on the backing collection (namespace of the source collection)
    db.create_collection("ca", viewOn="people", pipeline=[{"$match": {"state": "CA"}}])
    db.people.create_index("age")
    e = db.ca.find({"age": {"$gt": 20}}).explain()
    qp = e["queryPlanner"] if "queryPlanner" in e else e["stages"][0]["$cursor"]["queryPlanner"]
    assert qp["namespace"] == "views_test.people"
    assert "state" in str(qp["parsedQuery"]) and "age" in str(qp["parsedQuery"])
    e2 = db.command("explain", {"aggregate": "ca", "pipeline": [{"$match": {"age": 19}}], "cursor": {}})
    assert "views_test.people" in str(e2)


def test_view_collation(db):
    # manual "Views: Collation Behavior": the view's default collation applies; a different one fails
    db.create_collection("ci", viewOn="people", pipeline=[], collation={"locale": "en", "strength": 2})
    assert [d["name"] for d in db.ci.find({"name": "ann"})] == ["Ann"]
    with pytest.raises(OperationFailure):
        list(db.ci.find({"name": "ann"}, collation={"locale": "fr"}))


def test_union_with_a_view_and_lookup_from_a_view(db):
    # manual "$unionWith": the coll may be a view (its pipeline runs first); $lookup/$graphLookup from a view are
    # valid on 8.0 but not modelled here: a clear 115, never an empty join
    _ca(db)
    db.other.insert_one({"_id": "o", "name": "Zed"})
    out = list(db.other.aggregate([{"$unionWith": {"coll": "ca", "pipeline": [{"$match": {"age": {"$gt": 35}}}]}}]))
    assert [d["name"] for d in out] == ["Zed", "Cy"]
    with pytest.raises(OperationFailure) as e:
        list(db.other.aggregate([{"$lookup": {"from": "ca", "localField": "name", "foreignField": "name",
                                              "as": "m"}}]))
    assert e.value.code == 115


def test_views_capped_clustered_over_the_wire():
    # the same rules through pymongo over the wire protocol (labkit serve): create with viewOn, find/count on a
    # view, 166 on insert, listCollections type "view"; a capped and a clustered collection's listIndexes
    from pymongo import MongoClient
    from labkit.engine.transport.wire import serve_in_thread
    with serve_in_thread() as srv:
        c = MongoClient(srv.uri, serverSelectionTimeoutMS=5000)
        try:
            w = c.wire_views
            w.people.insert_many([{"_id": i, "state": "CA" if i % 2 else "NY"} for i in range(6)])
            w.command("create", "ca", viewOn="people", pipeline=[{"$match": {"state": "CA"}}])
            assert [d["_id"] for d in w.ca.find({}, sort=[("_id", -1)], limit=2)] == [5, 3]
            assert w.ca.count_documents({}) == 3
            with pytest.raises(OperationFailure) as e:
                w.ca.insert_one({"x": 1})
            assert e.value.code == 166
            assert next(w.list_collections(filter={"name": "ca"}))["type"] == "view"
            w.create_collection("cap", capped=True, size=4096, max=2)
            w.cap.insert_many([{"_id": i} for i in range(4)])
            assert [d["_id"] for d in w.cap.find()] == [2, 3]
            w.create_collection("cl", clusteredIndex={"key": {"_id": 1}, "unique": True})
            assert next(w.cl.list_indexes())["clustered"] is True
        finally:
            c.drop_database("wire_views")
            c.close()


def test_options_a_view_cannot_honour_are_refused(db):
    # never silently ignored: hint and let on a view's find, unknown count options (IDL 40415)
    _ca(db)
    with pytest.raises(OperationFailure) as e:
        db.ca.find({}, hint=[("age", 1)])
    assert e.value.code == 115
    with pytest.raises(OperationFailure) as e:
        db.ca.find({"$expr": {"$eq": ["$age", "$$a"]}}, let={"a": 30})
    assert e.value.code == 115
    with pytest.raises(OperationFailure) as e:
        db.ca.count_documents({}, bogus=1)
    assert e.value.code == 40415
    assert db.ca.count_documents({}, maxTimeMS=10000) == 3
