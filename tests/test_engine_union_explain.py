"""``$unionWith`` in explain carries its sub-pipeline's own explain, in process and over the wire.

Facts (src/mongo/db/pipeline/document_source_union_with.cpp ``DocumentSourceUnionWith::serialize``, read for
this test; the test is written from it): when serializing for explain the stage explains its sub-pipeline with
the same verbosity (``preparePipelineAndExplain``) and prints ``{$unionWith: {coll: <name>, pipeline: <that
explain>}}``, so the other collection's ``$cursor`` stage (its plan and, from executionStats on, its keys and
documents examined) is part of the explain; only the outer pipeline can be optimized away into a query.
"""
from __future__ import annotations

import pytest

from both_paths import client, server  # noqa: F401 - fixtures


@pytest.fixture()
def db(client):  # noqa: F811
    d = client["unionexplain"]
    d.drop_collection("a")
    d.drop_collection("b")
    d.a.insert_many([{"_id": i, "x": i} for i in range(10)])
    d.b.insert_many([{"_id": i, "y": i % 3} for i in range(30)])
    d.b.create_index("y")
    return d


def _explain(db, pipeline, verbosity):
    return db.command({"explain": {"aggregate": "a", "pipeline": pipeline, "cursor": {}}, "verbosity": verbosity})


def test_union_explain_has_the_sub_pipeline_cursor(db):
    sub = [{"$match": {"y": 1}}]
    pipeline = [{"$match": {"x": {"$lt": 3}}}, {"$unionWith": {"coll": "b", "pipeline": sub}}]
    assert len(list(db.a.aggregate(pipeline))) == 13
    e = _explain(db, pipeline, "executionStats")
    union = e["stages"][1]["$unionWith"]
    assert union["coll"] == "b"
    cursor = union["pipeline"][0]["$cursor"]
    assert cursor["queryPlanner"]["namespace"] == "unionexplain.b"
    assert "optimizedPipeline" not in cursor["queryPlanner"]
    plan = cursor["queryPlanner"]["winningPlan"]
    assert plan["stage"] == "FETCH" and plan["inputStage"]["indexName"] == "y_1"
    st = cursor["executionStats"]
    assert (st["nReturned"], st["totalKeysExamined"], st["totalDocsExamined"]) == (10, 10, 10)
    # the outer $cursor keeps its own figures
    outer = e["stages"][0]["$cursor"]["executionStats"]
    assert (outer["nReturned"], outer["totalDocsExamined"]) == (3, 10)


def test_query_planner_verbosity_has_no_statistics(db):
    e = _explain(db, [{"$unionWith": "b"}], "queryPlanner")
    cursor = e["stages"][1]["$unionWith"]["pipeline"][0]["$cursor"]
    assert cursor["queryPlanner"]["winningPlan"]["stage"] == "COLLSCAN"
    assert "executionStats" not in cursor


def test_sub_pipeline_stages_after_its_cursor_are_listed(db):
    sub = [{"$match": {"y": 2}}, {"$addFields": {"z": 1}}]
    e = _explain(db, [{"$unionWith": {"coll": "b", "pipeline": sub}}], "executionStats")
    stages = e["stages"][1]["$unionWith"]["pipeline"]
    assert [next(iter(s)) for s in stages] == ["$cursor", "$addFields"]
