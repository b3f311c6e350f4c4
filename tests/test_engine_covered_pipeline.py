"""An aggregation whose fields all live in one index is answered from the index keys (no document fetched), in
process and over the wire (tests/both_paths.py).

Facts (MongoDB's source and jstests, read for this test; the test is written from them):

* src/mongo/db/pipeline/pipeline_d.cpp ``createCanonicalQuery``: after the leading ``$match`` / ``$sort`` /
  ``$skip`` / ``$limit`` are pushed down, "we only analyze the stages that remain in the pipeline"
  (``pipeline->getDependencies``); ``buildProjectionForPushdown`` then pushes (1) an inclusion ``$project`` at the
  front as it is, removing it from the pipeline (with computed fields only when no sort, skip or limit was pushed
  down), else (2) a projection of the finite dependency set, else (3) an exclusion ``$project`` at the front.
* src/mongo/db/pipeline/dependencies.cpp ``DepsTracker::toProjectionWithoutMetadata``: the fields in
  lexicographic order as ``field: 1``, then ``_id: 1`` when ``_id`` is needed, else ``_id: 0``.
* src/mongo/db/exec/projection_node.cpp ``ProjectionNode::serialize``: a pushed ``$project`` is shown with
  ``_id`` first and booleans (``{_id: false, rating: true}``).
* jstests/aggregation/use_query_projection.js: ``[{$match: {x: "string"}}, {$project: {_id: 0, x: 1}}]`` over
  ``{x: 1, a: -1, _id: 1}`` is optimized away into a query plan with an IXSCAN and no FETCH; a ``$project`` of a
  field outside the index keeps the FETCH; a multikey index prevents the covered plan.
* A ``$group`` after the query runs in SBE in 8.0 (``internalQueryFrameworkControl: trySbeRestricted``), over the
  same covered plan: ``GROUP > PROJECTION_COVERED > IXSCAN`` with totalDocsExamined 0. A projection that is not
  covered is not shown under the GROUP (SERVER-60101, fixed in 5.1, removed the PROJECTION_SIMPLE between GROUP
  and COLLSCAN: the SBE stages read the fields from the documents).
"""
from __future__ import annotations

import pytest

from both_paths import client, server  # noqa: F401 - fixtures


@pytest.fixture()
def coll(client):  # noqa: F811
    db = client["covagg"]
    db.drop_collection("r")
    c = db.r
    c.insert_many([{"_id": i, "p": "a" if i % 3 else "b", "rating": i % 5 + 1, "note": "n%d" % i}
                   for i in range(300)])
    c.create_index([("p", 1), ("rating", 1)])
    return c


def _explain(coll, pipeline, verbosity="executionStats"):
    return coll.database.command({"explain": {"aggregate": coll.name, "pipeline": pipeline, "cursor": {}},
                                  "verbosity": verbosity})


def _chain(plan):
    out = []
    while plan:
        out.append(plan["stage"])
        plan = plan.get("inputStage")
    return out


def test_match_project_of_indexed_fields_is_covered_and_optimized_away(coll):
    pipeline = [{"$match": {"p": "a"}}, {"$project": {"_id": 0, "rating": 1}}]
    got = list(coll.aggregate(pipeline))
    # in index order: rating ascending, then record order
    assert got == [{"rating": r} for r in sorted(i % 5 + 1 for i in range(300) if i % 3)]
    e = _explain(coll, pipeline)
    assert "stages" not in e and e["explainVersion"] == "1"  # the pipeline became the query (isQueryPlan)
    plan = e["queryPlanner"]["winningPlan"]
    assert _chain(plan) == ["PROJECTION_COVERED", "IXSCAN"]
    assert plan["transformBy"] == {"_id": False, "rating": True}
    assert list(plan["transformBy"]) == ["_id", "rating"]
    assert e["queryPlanner"]["optimizedPipeline"] is True
    st = e["executionStats"]
    assert (st["nReturned"], st["totalKeysExamined"], st["totalDocsExamined"]) == (200, 200, 0)


def test_match_group_of_indexed_fields_is_covered_in_sbe(coll):
    pipeline = [{"$match": {"p": "a"}}, {"$group": {"_id": None, "avg": {"$avg": "$rating"}}}]
    ratings = [i % 5 + 1 for i in range(300) if i % 3]
    assert list(coll.aggregate(pipeline)) == [{"_id": None, "avg": sum(ratings) / len(ratings)}]
    e = _explain(coll, pipeline)
    assert e["explainVersion"] == "2"
    qp = e["queryPlanner"]["winningPlan"]["queryPlan"]
    assert _chain(qp) == ["GROUP", "PROJECTION_COVERED", "IXSCAN"]
    assert [qp["planNodeId"], qp["inputStage"]["planNodeId"], qp["inputStage"]["inputStage"]["planNodeId"]] \
        == [3, 2, 1]
    assert qp["inputStage"]["transformBy"] == {"rating": 1, "_id": 0}  # the dependency projection
    st = e["executionStats"]
    assert (st["nReturned"], st["totalKeysExamined"], st["totalDocsExamined"]) == (1, 200, 0)
    assert _chain(st["executionStages"]) == ["group", "project", "ixseek"]


def test_group_by_indexed_field_needs_its_id_only_when_read(coll):
    pipeline = [{"$match": {"p": "a"}}, {"$group": {"_id": "$rating", "n": {"$sum": 1}}}, {"$sort": {"_id": 1}}]
    assert list(coll.aggregate(pipeline)) == [{"_id": r, "n": 40} for r in range(1, 6)]
    e = _explain(coll, pipeline)
    cursor = e["stages"][0]["$cursor"]
    qp = cursor["queryPlanner"]["winningPlan"]["queryPlan"]
    assert _chain(qp) == ["GROUP", "PROJECTION_COVERED", "IXSCAN"]
    assert cursor["executionStats"]["totalDocsExamined"] == 0
    # reading _id as well: _id is not in the index, so the documents are fetched
    pipeline = [{"$match": {"p": "a"}}, {"$group": {"_id": "$rating", "ids": {"$push": "$_id"}}}]
    e = _explain(coll, pipeline)
    qp = e["queryPlanner"]["winningPlan"]["queryPlan"]
    # SBE reads the fields from the fetched documents: no projection node under the GROUP (SERVER-60101)
    assert _chain(qp) == ["GROUP", "FETCH", "IXSCAN"]
    assert e["executionStats"]["totalDocsExamined"] == 200


def test_field_outside_the_index_keeps_the_fetch(coll):
    pipeline = [{"$match": {"p": "a"}}, {"$project": {"_id": 0, "rating": 1, "note": 1}}]
    got = list(coll.aggregate(pipeline))
    assert got[0] == {"rating": 1, "note": "n5"} and len(got) == 200
    e = _explain(coll, pipeline)
    plan = e["queryPlanner"]["winningPlan"]
    assert _chain(plan) == ["PROJECTION_SIMPLE", "FETCH", "IXSCAN"]
    assert e["executionStats"]["totalDocsExamined"] == 200


def test_dependency_projection_for_later_stages(coll):
    """A computed ``$project`` after a pushed-down ``$limit`` is not pushed (case 1 needs no sort/skip/limit);
    the fields it reads are (case 2), so the plan is still covered and the stage stays in the pipeline."""
    pipeline = [{"$match": {"p": "a"}}, {"$limit": 5}, {"$project": {"_id": 0, "r2": {"$multiply": ["$rating", 2]}}}]
    assert list(coll.aggregate(pipeline)) == [{"r2": 2}] * 5  # the first keys of p "a" have rating 1
    e = _explain(coll, pipeline)
    cursor = e["stages"][0]["$cursor"]
    plan = cursor["queryPlanner"]["winningPlan"]
    assert "PROJECTION_COVERED" in _chain(plan) and "FETCH" not in _chain(plan)
    assert [next(iter(s)) for s in e["stages"][1:]] == ["$project"]


def test_whole_document_needed_means_no_projection(coll):
    pipeline = [{"$match": {"p": "a"}}, {"$addFields": {"x": 1}}]
    e = _explain(coll, pipeline)
    plan = e["stages"][0]["$cursor"]["queryPlanner"]["winningPlan"]
    assert _chain(plan) == ["FETCH", "IXSCAN"]
    assert len(list(coll.aggregate(pipeline))) == 200


def test_multikey_index_is_never_covered(coll):
    coll.insert_one({"_id": 1000, "p": ["a", "z"], "rating": 3})
    pipeline = [{"$match": {"p": "a"}}, {"$project": {"_id": 0, "rating": 1}}]
    e = _explain(coll, pipeline)
    assert _chain(e["queryPlanner"]["winningPlan"]) == ["PROJECTION_SIMPLE", "FETCH", "IXSCAN"]
    assert len(list(coll.aggregate(pipeline))) == 201


def test_exclusion_project_is_pushed_when_no_field_set_is_finite(coll):
    pipeline = [{"$match": {"p": "b"}}, {"$project": {"note": 0}}]
    got = list(coll.aggregate(pipeline))
    assert got[0] == {"_id": 0, "p": "b", "rating": 1} and len(got) == 100
    e = _explain(coll, pipeline)
    assert "stages" not in e
    plan = e["queryPlanner"]["winningPlan"]
    assert plan["transformBy"] == {"note": False} and _chain(plan)[-2:] == ["FETCH", "IXSCAN"]


def test_covered_aggregate_profiles_no_document(coll):
    db = coll.database
    db.drop_collection("system.profile")
    db.command("profile", 2)
    try:
        list(coll.aggregate([{"$match": {"p": "a"}}, {"$group": {"_id": None, "n": {"$sum": "$rating"}}}]))
    finally:
        db.command("profile", 0)
    entry = [e for e in db["system.profile"].find({"ns": coll.full_name})][-1]
    db.drop_collection("system.profile")
    assert (entry["keysExamined"], entry["docsExamined"]) == (200, 0)
    assert entry["planSummary"] == "IXSCAN { p: 1, rating: 1 }"
