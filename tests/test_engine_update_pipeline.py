"""Update pipelines and the ``$addFields`` / ``$set`` / ``$replaceRoot`` / ``$replaceWith`` stages on the engine.

Sources: manual "Updates with Aggregation Pipeline" (allowed stages, ``_id`` kept, upsert), manual "$addFields"
("Adding Fields to an Embedded Document", "Overwriting an existing field", "Remove Fields" with ``$$REMOVE``),
"$set (aggregation)", "$replaceRoot" / "$replaceWith" (newRoot must be a document, 40228);
jstests/core/write/update/update_pipeline_shell_helpers.js and update_with_pipeline.js (stage list, error 72 for
other stages, _id immutable 66); src/mongo/db/exec/projection_node.cpp facts (a dotted path through an array
applies to each element, a non-document value becomes a document of the computed fields); field-name errors from
src/mongo/db/pipeline/field_path.cpp (16410 ``$``-prefixed, 40352 empty).
"""
from __future__ import annotations

import pytest
from pymongo.errors import OperationFailure, WriteError

from labkit.engine import EmbeddedClient


@pytest.fixture()
def c():
    coll = EmbeddedClient().db.up
    coll.insert_many([{"_id": 1, "a": {"c": 1}, "arr": [{"x": 1}, 5, [{"x": 2}]], "s": 3}])
    return coll


def _one(c, stage):
    return list(c.aggregate([stage]))[0]


def test_add_fields_merges_into_embedded_documents(c):
    # manual "$addFields" > "Adding Fields to an Embedded Document": {specs: {fuel_type: ...}} adds into specs
    assert _one(c, {"$addFields": {"a": {"b": 5}}})["a"] == {"c": 1, "b": 5}
    assert _one(c, {"$set": {"a.b": "$s"}})["a"] == {"c": 1, "b": 3}
    # a new path creates its documents; several fields of one new document
    assert _one(c, {"$set": {"q.r": "$s", "q.t": 2}})["q"] == {"r": 3, "t": 2}
    # an empty object is a value
    assert _one(c, {"$set": {"z": {}}})["z"] == {}


def test_add_fields_through_arrays(c):
    # projection_node.cpp: each element gets the field; a scalar element becomes a document of the computed
    # fields; nested arrays are descended in aggregation
    assert _one(c, {"$set": {"arr.y": 1}})["arr"] == [{"x": 1, "y": 1}, {"y": 1}, [{"x": 2, "y": 1}]]
    # a scalar on the path is replaced by a document
    assert _one(c, {"$set": {"s.t": 1}})["s"] == {"t": 1}


def test_add_fields_positions_missing_and_remove(c):
    # manual "$addFields": overwriting keeps the field's place, new fields are appended; "Remove Fields": $$REMOVE
    d = _one(c, {"$set": {"a": 0, "new": 1}})
    assert list(d) == ["_id", "a", "arr", "s", "new"]
    assert "s" not in _one(c, {"$set": {"s": "$$REMOVE"}})
    assert "n" not in _one(c, {"$set": {"n": "$nope"}})  # a missing value adds nothing
    # array literals: each element evaluated, missing -> null (manual "$project" > "Project New Array Fields")
    assert _one(c, {"$set": {"l": ["$s", "$nope"]}})["l"] == [3, None]
    assert _one(c, {"$set": {"e": {"$eq": ["$s", 3]}, "f": {"$add": ["$s", 1]}}})["f"] == 4


def test_add_fields_name_errors(c):
    # field_path.cpp: '$'-prefixed names 16410, empty names 40352; two specs for one path collide
    for spec, code in (({"$x": 1}, 16410), ({"": 1}, 40352), ({"a.$b": 1}, 16410), ({"a": 1, "a.b": 2}, 31250)):
        with pytest.raises(OperationFailure) as ei:
            list(c.aggregate([{"$set": spec}]))
        assert ei.value.code == code, spec


def test_replace_root_and_replace_with(c):
    # manual "$replaceRoot" / "$replaceWith": the new root must evaluate to a document (40228)
    assert list(c.aggregate([{"$replaceWith": "$a"}])) == [{"c": 1}]
    assert list(c.aggregate([{"$replaceRoot": {"newRoot": {"k": "$s"}}}])) == [{"k": 3}]
    for stage in ({"$replaceWith": "$s"}, {"$replaceWith": "$nope"}, {"$replaceRoot": {"newRoot": 1}}):
        with pytest.raises(OperationFailure) as ei:
            list(c.aggregate([stage]))
        assert ei.value.code == 40228, stage
    with pytest.raises(OperationFailure) as ei:
        list(c.aggregate([{"$replaceRoot": {}}]))
    assert ei.value.code == 40231


def test_update_pipeline_runs_engine_stages(c):
    # manual "Updates with Aggregation Pipeline": $set merges into embedded documents as in aggregation
    c.update_one({"_id": 1}, [{"$set": {"a.d": 9}}, {"$unset": "arr"}])
    assert c.find_one({"_id": 1}) == {"_id": 1, "a": {"c": 1, "d": 9}, "s": 3}
    c.update_one({"_id": 1}, [{"$set": {"a": {"e": "$s"}}}])
    assert c.find_one({"_id": 1})["a"] == {"c": 1, "d": 9, "e": 3}
    # $replaceWith keeps the matched _id (the output has none)
    c.update_one({"_id": 1}, [{"$replaceWith": {"only": "$s"}}])
    assert c.find_one({"_id": 1}) == {"_id": 1, "only": 3}


def test_update_pipeline_id_and_stage_rules(c):
    # update_with_pipeline.js: _id may not change (66); only the six stages (72); unknown names 40324
    with pytest.raises(WriteError) as ei:
        c.update_one({"_id": 1}, [{"$set": {"_id": 2}}])
    assert ei.value.code == 66
    with pytest.raises(WriteError) as ei:
        c.update_one({"_id": 1}, [{"$match": {"a": 1}}])
    assert ei.value.code == 72
    with pytest.raises(WriteError) as ei:
        c.update_one({"_id": 1}, [{"$bogus": {}}])
    assert ei.value.code == 40324
    with pytest.raises(OperationFailure) as ei:
        c.update_one({"_id": 1}, [{"$replaceWith": "$s"}])
    assert ei.value.code == 40228
    assert c.find_one({"_id": 1})["s"] == 3


def test_update_pipeline_upsert(c):
    # manual "Updates with Aggregation Pipeline" + upsert: the pipeline runs on the document made of the
    # query's equality fields
    c.update_one({"_id": 7, "k": 2}, [{"$set": {"v": {"$add": ["$k", 1]}, "w.x": 1}}], upsert=True)
    assert c.find_one({"_id": 7}) == {"_id": 7, "k": 2, "v": 3, "w": {"x": 1}}


def test_lesson_pipelines_keep_their_results(c):
    # lessons 32 and 37 (manual "$slice", "$toLower"): expression operators keep their argument rules
    c.insert_many([{"_id": 2, "username": "BoB", "events": list(range(20))}, {"_id": 3}])
    c.update_many({"_id": {"$gte": 2}}, [{"$set": {"usernameLower": {"$toLower": "$username"}}}])
    c.update_many({"_id": {"$gte": 2}}, [{"$set": {"recentEvents": {"$slice": ["$events", -10]}}},
                                         {"$unset": "events"}])
    assert c.find_one({"_id": 2}) == {"_id": 2, "username": "BoB", "usernameLower": "bob",
                                      "recentEvents": list(range(10, 20))}


def test_field_paths_through_arrays_in_stages(c):
    # manual "Field Paths" / "$project": "$a.b" through an array gives the array of the values found (nested
    # arrays kept, missing ones dropped); a numeric component is a field name, not an array index
    c.insert_many([{"_id": 10, "a": [{"b": 1}, {"c": 2}, [{"b": 3}]]}, {"_id": 11, "a": [1, 2]}])
    out = list(c.aggregate([{"$match": {"_id": {"$gte": 10}}}, {"$set": {"x": "$a.b", "y": "$a.0"}},
                            {"$project": {"x": 1, "y": 1}}]))
    assert out == [{"_id": 10, "x": [1, [3]], "y": [[]]}, {"_id": 11, "x": [], "y": []}]
