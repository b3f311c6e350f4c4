"""find() and aggregation projections as a MongoDB 8.0 server applies them (labkit/engine/query/projection.py).
Each test names its source: the manual ("Project Fields to Return from Query", the ``$``, ``$elemMatch`` and
``$slice`` projection operator pages) or the server's tests (``jstests/core/projection_semantics.js``) and
parser (``src/mongo/db/query/projection_parser.cpp`` for the error codes). Facts and results carry over; the
code is this project's own."""
from __future__ import annotations

import pytest
from pymongo.errors import OperationFailure

from labkit.engine import EmbeddedClient


@pytest.fixture()
def c():
    return EmbeddedClient().proj.c


def proj(c, doc: dict, projection, query=None) -> dict:
    c.delete_many({})
    c.insert_one(doc)
    q = {"_id": doc["_id"]} if query is None else query
    return c.find_one(q, projection)


def code_of(fn) -> tuple[int, str]:
    with pytest.raises(OperationFailure) as ei:
        fn()
    e = ei.value
    return e.code, (e.details or {}).get("errmsg", str(e)) if isinstance(e.details, dict) else str(e)


def test_inclusion_and_exclusion_basics(c):
    # manual "Project Fields to Return from Query": inclusion returns the named fields and _id; _id: 0
    # removes it; exclusion returns everything else. projection_semantics.js: a missing field is omitted.
    d = {"_id": 1, "a": "demo", "b": "other", "x": "extra"}
    assert proj(c, d, {"a": 1}) == {"_id": 1, "a": "demo"}
    assert proj(c, d, {"a": 1, "_id": 0}) == {"a": "demo"}
    assert proj(c, d, {"a": 0}) == {"_id": 1, "b": "other", "x": "extra"}
    assert proj(c, d, {"_id": 0}) == {"a": "demo", "b": "other", "x": "extra"}
    assert proj(c, d, {"_id": 1}) == {"_id": 1}
    assert proj(c, d, {"nope": 1}) == {"_id": 1}
    assert proj(c, d, {"a": True, "b": 1.0}) == {"_id": 1, "a": "demo", "b": "other"}
    assert proj(c, d, {}) == d
    assert proj(c, d, ["b"]) == {"_id": 1, "b": "other"}


def test_included_fields_keep_the_stored_order(c):
    # The server builds the output in the document's field order, not the projection's.
    assert list(proj(c, {"_id": 1, "a": 1, "b": 2, "c": 3}, {"c": 1, "a": 1})) == ["_id", "a", "c"]


def test_dotted_inclusion_through_arrays(c):
    # projection_semantics.js (testInclusionOneLevelOfNesting / LevelsOfNesting): inclusion keeps only the
    # embedded documents of arrays (scalars dropped, empty documents kept, nested arrays traversed).
    p = {"a.b": 1, "_id": 0}
    assert proj(c, {"_id": 1, "a": [{"b": 1, "c": 1}, {"c": 2}]}, p) == {"a": [{"b": 1}, {}]}
    assert proj(c, {"_id": 1, "a": ["scalar", {}, "scalar", {"c": 1}]}, p) == {"a": [{}, {}]}
    assert proj(c, {"_id": 1, "a": [[1, 2, 3]]}, p) == {"a": [[]]}
    assert proj(c, {"_id": 1, "a": [[1, {"b": 1}, {"b": 2, "c": 2}, "scalar"]]}, p) == {"a": [[{"b": 1}, {"b": 2}]]}
    assert proj(c, {"_id": 1, "a": "scalar"}, p) == {}
    assert proj(c, {"_id": 1, "a": {}}, p) == {"a": {}}
    assert proj(c, {"_id": 1, "a": [1, {"x": 2}]}, {"a.x": 1}) == {"_id": 1, "a": [{}, ] if False else [{"x": 2}]}
    p3 = {"a.b.c": 1, "_id": 0}
    assert proj(c, {"_id": 1, "a": {"b": "scalar"}}, p3) == {"a": {}}
    assert proj(c, {"_id": 1, "a": [1, {"b": [[1, 2], [{}], 2]}, 2]}, p3) == {"a": [{"b": [[], [{}]]}]}
    assert proj(c, {"_id": 1, "a": [{"b": 1, "c": 2, "d": 3}, {"b": 4, "c": 5, "d": 6}]},
                {"a.b": 1, "a.c": 1, "_id": 0}) == {"a": [{"b": 1, "c": 2}, {"b": 4, "c": 5}]}
    # nested-document form means the same as the dotted form (testMiscellaneousProjections)
    m = {"_id": 1, "m": {"t": 20, "p": 0.7, "h": 0.4}}
    assert proj(c, m, {"m": {"t": 1, "p": 1}, "_id": 0}) == {"m": {"t": 20, "p": 0.7}}
    assert proj(c, m, {"m": {"h": 0}, "_id": 0}) == {"m": {"t": 20, "p": 0.7}}


def test_dotted_exclusion_keeps_scalars(c):
    # projection_semantics.js (testExclusionSemantics): an exclusion leaves parents' scalar values alone.
    assert proj(c, {"_id": 1, "a": 5}, {"a.x": 0}) == {"_id": 1, "a": 5}
    assert proj(c, {"_id": 1, "a": ["scalar", {"b": 1, "c": 1, "d": 1}, {"b": 2, "c": 2}, {"b": 3}]},
                {"a.b": 0}) == {"_id": 1, "a": ["scalar", {"c": 1, "d": 1}, {"c": 2}, {}]}
    assert proj(c, {"_id": 1, "a": [[], [{"b": [[1, 2], {"c": 1, "d": 1}]}]]},
                {"a.b.c": 0}) == {"_id": 1, "a": [[], [{"b": [[1, 2], {"d": 1}]}]]}


def test_mixing_inclusion_and_exclusion(c):
    # projection_parser.cpp: 31254 / 31253 (only _id may be excluded from an inclusion or included in an
    # exclusion); computed fields make an inclusion (31252 / 31310 in an exclusion).
    c.insert_one({"_id": 1, "a": 1, "b": 2})
    assert code_of(lambda: c.find_one({}, {"a": 1, "b": 0})) == (
        31254, "Cannot do exclusion on field b in inclusion projection")
    assert code_of(lambda: c.find_one({}, {"a": 0, "b": 1})) == (
        31253, "Cannot do inclusion on field b in exclusion projection")
    assert code_of(lambda: c.find_one({}, {"a": 0, "b": {"$add": [1, 2]}}))[0] == 31252
    assert code_of(lambda: c.find_one({}, {"a": 0, "b": "lit"}))[0] == 31310
    assert c.find_one({}, {"_id": 1, "a": 0}) == {"_id": 1, "b": 2}
    assert c.find_one({}, {"_id": 0, "a": 1}) == {"a": 1}
    # the error comes before any document is read, even when nothing matches
    assert code_of(lambda: list(c.find({"_id": 99}, {"a": 1, "b": 0})))[0] == 31254


def test_path_collisions(c):
    # projection_parser.cpp: a path and its prefix: 31249 (prefix first) / 31250 (prefix second).
    c.insert_one({"_id": 1, "a": {"b": 1}})
    assert code_of(lambda: c.find_one({}, {"a": 1, "a.b": 1})) == (31249, "Path collision at a.b remaining portion b")
    assert code_of(lambda: c.find_one({}, {"a.b": 1, "a": 1})) == (31250, "Path collision at a")


def test_positional_projection(c):
    # manual "$ (projection)": returns the first element the query matched; the query must name the array
    # (31277); no match in the document: 51246; only one positional (31276); not with $elemMatch (31256).
    d = {"_id": 1, "grades": [80, 85, 90], "students": [{"n": "a", "s": 1}, {"n": "b", "s": 2}]}
    assert proj(c, d, {"grades.$": 1}, {"grades": {"$gte": 85}}) == {"_id": 1, "grades": [85]}
    assert proj(c, d, {"students.$": 1}, {"students.s": 2}) == {"_id": 1, "students": [{"n": "b", "s": 2}]}
    assert proj(c, d, {"students.$": 1, "_id": 0}, {"students": {"$elemMatch": {"n": "a"}}}) == {
        "students": [{"n": "a", "s": 1}]}
    assert code_of(lambda: c.find_one({"_id": 1}, {"grades.$": 1})) == (
        31277, "Positional projection 'grades.$' does not match the query document.")
    assert code_of(lambda: c.find_one({"grades": 85, "students.s": 1}, {"grades.$": 1, "students.$": 1}))[0] == 31276
    assert code_of(lambda: c.find_one({"grades": 85}, {"grades.$": 1, "students": {"$elemMatch": {"s": 1}}}))[0] == 31255
    assert code_of(lambda: c.find_one({"grades": 85}, {"students": {"$elemMatch": {"s": 1}}, "grades.$": 1}))[0] == 31256
    c.insert_one({"_id": 2, "grades": 85})
    assert c.find_one({"_id": 2, "grades": 85}, {"grades.$": 1}) == {"_id": 2, "grades": 85}  # not an array
    c.insert_one({"_id": 3, "grades": [1], "g2": [85]})
    e = code_of(lambda: c.find_one({"_id": 3, "$or": [{"grades": 85}, {"g2": 85}]}, {"grades.$": 1}))
    assert e[0] == 51246 and "couldn't find a matching element in the array" in e[1]


def test_elem_match_projection(c):
    # manual "$elemMatch (projection)": the first matching element only; omitted when none matches;
    # top-level fields only (31275); needs an object (31274).
    d = {"_id": 1, "zip": 63109, "students": [{"name": "john", "age": 10}, {"name": "jess", "age": 11},
                                             {"name": "jeff", "age": 12}]}
    assert proj(c, d, {"students": {"$elemMatch": {"age": {"$gt": 10}}}}) == {
        "_id": 1, "students": [{"name": "jess", "age": 11}]}
    assert proj(c, d, {"students": {"$elemMatch": {"age": 99}}}) == {"_id": 1}
    assert proj(c, d, {"zip": 1, "students": {"$elemMatch": {"name": "jeff"}}}) == {
        "_id": 1, "zip": 63109, "students": [{"name": "jeff", "age": 12}]}
    # with an exclusion elsewhere the projection is an exclusion and $elemMatch trims its field
    assert proj(c, d, {"zip": 0, "students": {"$elemMatch": {"name": "jeff"}}}) == {
        "_id": 1, "students": [{"name": "jeff", "age": 12}]}
    assert code_of(lambda: c.find_one({}, {"a.b": {"$elemMatch": {"x": 1}}}))[0] == 31275
    assert code_of(lambda: c.find_one({}, {"a": {"$elemMatch": 1}}))[0] == 31274


def test_slice_projection(c):
    # manual "$slice (projection)": n first, -n last, [skip, limit] (negative skip counts from the end);
    # alone it is an exclusion (other fields stay); argument errors 31272 / 31257 / 31258 / 31259.
    d = {"_id": 1, "a": [1, 2, 3, 4, 5], "b": "x"}
    assert proj(c, d, {"a": {"$slice": 2}}) == {"_id": 1, "a": [1, 2], "b": "x"}
    assert proj(c, d, {"a": {"$slice": -2}}) == {"_id": 1, "a": [4, 5], "b": "x"}
    assert proj(c, d, {"a": {"$slice": [1, 2]}}) == {"_id": 1, "a": [2, 3], "b": "x"}
    assert proj(c, d, {"a": {"$slice": [-2, 5]}}) == {"_id": 1, "a": [4, 5], "b": "x"}
    assert proj(c, d, {"a": {"$slice": 1}, "b": 0}) == {"_id": 1, "a": [1]}
    assert proj(c, d, {"a": {"$slice": 1}, "_id": 1}) == {"_id": 1, "a": [1]}
    assert proj(c, {"_id": 2, "a": "str"}, {"a": {"$slice": 1}}) == {"_id": 2, "a": "str"}
    c.insert_one({"_id": 3, "a": [1]})
    assert code_of(lambda: c.find_one({}, {"a": {"$slice": [1, 2, 3]}}))[0] == 31272
    assert code_of(lambda: c.find_one({}, {"a": {"$slice": [1, "x"]}}))[0] != 0
    assert code_of(lambda: c.find_one({}, {"a": {"$slice": [1, 0]}})) == (31259, "$slice limit must be positive, got 0")
    assert code_of(lambda: c.find_one({}, {"a": {"$slice": "x"}}))[0] == 31273


def test_computed_fields(c):
    # projection_semantics.js (testComputedProjections) and the manual ("Project New Array Fields",
    # 4.4+ expressions in find): literals and expressions; computed fields overwrite scalars inside arrays.
    d = {"_id": 1, "a": 1, "b": 1, "c": 1}
    assert proj(c, d, {"a": {"$literal": 0}, "b": "string"}) == {"_id": 1, "a": 0, "b": "string"}
    assert proj(c, {"_id": 2, "a": {"b": 1, "c": 1}}, {"a.b": "new value"}) == {"_id": 2, "a": {"b": "new value"}}
    assert proj(c, {"_id": 3, "a": ["scalar", {"b": 1}, {"b": 2, "c": 2}]}, {"a.b": "nv"}) == {
        "_id": 3, "a": [{"b": "nv"}, {"b": "nv"}, {"b": "nv"}]}
    assert proj(c, {"_id": 4, "a": []}, {"a.b": "nv"}) == {"_id": 4, "a": []}
    assert proj(c, {"_id": 5, "p": 2, "q": 3}, {"total": {"$add": ["$p", "$q"]}, "p": 1}) == {
        "_id": 5, "p": 2, "total": 5}
    assert proj(c, {"_id": 6, "p": 2}, {"copy": "$p", "gone": "$nope"}) == {"_id": 6, "copy": 2}


def test_meta_is_refused_clearly(c):
    # $meta needs text / search scores, which the embedded engine does not have: a clear 115.
    c.insert_one({"_id": 1})
    e = code_of(lambda: c.find_one({}, {"score": {"$meta": "textScore"}}))
    assert e[0] == 115 and "embedded engine" in e[1]


def test_find_one_and_update_projection(c):
    # manual "findOneAndUpdate()": projection applies to the returned document, with the same rules.
    c.insert_one({"_id": 1, "a": [1, 2, 3], "b": 1})
    assert c.find_one_and_update({"a": 2}, {"$inc": {"b": 1}}, projection={"a.$": 1}) == {"_id": 1, "a": [2]}
    assert c.find_one_and_update({"_id": 1}, {"$inc": {"b": 1}}, projection={"b": 0}) == {"_id": 1, "a": [1, 2, 3]}


def test_aggregate_project_and_unset(c):
    # manual "$project (aggregation)" / "$unset (aggregation)": the same inclusion / exclusion rules; errors
    # prefixed "Invalid $project :: caused by ::"; find-only features refused (31324 positional, 168
    # $elemMatch); $slice is the expression there.
    c.insert_one({"_id": 1, "a": [1, {"x": 2}], "b": 5, "c": {"d": 1, "e": 2}})
    assert list(c.aggregate([{"$project": {"a.x": 1}}])) == [{"_id": 1, "a": [{"x": 2}]}]
    assert list(c.aggregate([{"$project": {"a.x": 0, "c.d": 0}}])) == [{"_id": 1, "a": [1, {}], "b": 5, "c": {"e": 2}}]
    assert list(c.aggregate([{"$unset": ["b", "c.e"]}])) == [{"_id": 1, "a": [1, {"x": 2}], "c": {"d": 1}}]
    assert list(c.aggregate([{"$unset": "a"}])) == [{"_id": 1, "b": 5, "c": {"d": 1, "e": 2}}]
    assert list(c.aggregate([{"$project": {"n": {"$slice": ["$a", 1]}, "_id": 0}}])) == [{"n": [1]}]
    e = code_of(lambda: list(c.aggregate([{"$project": {"a": 1, "b": 0}}])))
    assert e == (31254, "Invalid $project :: caused by :: Cannot do exclusion on field b in inclusion projection")
    assert code_of(lambda: list(c.aggregate([{"$project": {"a.$": 1}}])))[0] == 31324
    assert code_of(lambda: list(c.aggregate([{"$project": {"a": {"$elemMatch": {"x": 2}}}}])))[0] == 168
    assert code_of(lambda: list(c.aggregate([{"$project": {}}])))[0] == 51272
    # $unset argument errors (document_source_project.cpp): 31002 / 31119 / 31120
    assert code_of(lambda: list(c.aggregate([{"$unset": {"a": 1}}])))[0] == 31002
    assert code_of(lambda: list(c.aggregate([{"$unset": []}])))[0] == 31119
    assert code_of(lambda: list(c.aggregate([{"$unset": [1]}])))[0] == 31120
