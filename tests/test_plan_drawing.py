"""labkit.draw_plan: a plan as a tree of stages with per-stage counts (issue 28), for the embedded engine's explain
and for real servers' classic and SBE shapes.

Facts used (MongoDB manual, "Explain Results"; mongodb/mongo src/mongo/db/query/README_explain.md): classic
``executionStats.executionStages`` is the winning plan with each stage's ``nReturned`` and, on scans,
``keysExamined`` (IXSCAN, COUNT_SCAN, EXPRESS_IXSCAN) and ``docsExamined`` (FETCH, COLLSCAN);
``totalKeysExamined``/``totalDocsExamined`` sum them. A SORT stage is a blocking (in-memory) sort; without one the
index provides the order. SBE explain (explainVersion "2") keeps the plan's shape in
``queryPlanner.winningPlan.queryPlan`` (nodes numbered by ``planNodeId``) and reports SBE stages, tagged with
the ``planNodeId`` of the node they implement, in ``executionStages``. Aggregate explain lists ``stages``: the
``$cursor`` (the query) then later stages such as ``$lookup`` with ``totalKeysExamined``/``totalDocsExamined``/
``indexesUsed``/``collectionScans``.
"""
from __future__ import annotations

import xml.etree.ElementTree as ET

import pandas as pd
import pytest

import labkit
from labkit.engine import EmbeddedClient
from labkit.explain import PlanDrawing, draw_plan, show_plan


def _walk(stage):
    yield stage
    for key in ("inputStage", "innerStage", "outerStage"):
        if isinstance(stage.get(key), dict):
            yield from _walk(stage[key])
    for child in stage.get("inputStages") or []:
        yield from _walk(child)


@pytest.fixture(scope="module")
def db():
    db = EmbeddedClient().drawing
    db.posts.insert_many([{"_id": i, "authorId": "user:%d" % (i % 10), "createdAt": i} for i in range(200)])
    db.indexed.insert_many([{"_id": i, "authorId": "user:%d" % (i % 10), "createdAt": i} for i in range(200)])
    db.indexed.create_index([("authorId", 1), ("createdAt", -1)])
    db.users.insert_many([{"_id": "user:%d" % i} for i in range(3)])
    return db


def test_classic_counts_per_stage_are_the_explains_own(db):
    e = db.indexed.find({"authorId": "user:3"}).sort("createdAt", -1).limit(5).explain()
    d = draw_plan(e)
    stages = list(_walk(e["executionStats"]["executionStages"]))
    assert [n.stage for n in d.nodes] == [s["stage"] for s in stages] == ["LIMIT", "FETCH", "IXSCAN"]
    for node, stage in zip(d.nodes, stages):
        assert (node.keys, node.docs, node.returned) == (stage.get("keysExamined"), stage.get("docsExamined"),
                                                         stage["nReturned"])
    ixscan = d.nodes[-1]
    assert ixscan.index == "authorId_1_createdAt_-1" and ixscan.kind == "index" and ixscan.depth == 2
    assert sum(n.keys or 0 for n in d.nodes) == e["executionStats"]["totalKeysExamined"] == d.totals["keysExamined"]
    assert not any(n.kind == "blocking-sort" for n in d.nodes)


def test_blocking_sort_and_collection_scan_are_marked(db):
    e = db.posts.find({"authorId": "user:3"}).sort("createdAt", -1).limit(5).explain()
    d = draw_plan(e)
    assert [(n.stage, n.kind) for n in d.nodes] == [("SORT", "blocking-sort"), ("COLLSCAN", "collscan")]
    assert d.nodes[1].docs == 200 and d.nodes[0].returned == 5
    text = d.text()
    assert "blocking sort (in memory)" in text and "reads every document" in text and "limit 5" in text


def test_show_plan_keeps_its_table_and_draws_on_request(db):
    e = db.indexed.find({"authorId": "user:3"}).explain()
    table = show_plan(e)
    assert isinstance(table, pd.DataFrame) and table.iloc[0]["stages"] == "FETCH > IXSCAN"
    drawing = show_plan(e, draw=True)
    assert isinstance(drawing, PlanDrawing) and labkit.draw_plan is draw_plan
    assert list(drawing.to_frame()["stage"]) == ["FETCH", "IXSCAN"]


def test_svg_is_well_formed_with_one_box_per_stage(db):
    d = draw_plan(db.posts.find({"authorId": "user:3"}).sort("createdAt", -1).explain())
    root = ET.fromstring(d.svg())
    ns = "{http://www.w3.org/2000/svg}"
    groups = root.findall(f"{ns}g")
    assert [g.get("data-stage") for g in groups] == ["SORT", "COLLSCAN"]
    assert [g.find(f"{ns}rect").get("stroke") for g in groups] == ["#d62728", "#ff7f0e"]
    assert len(root.findall(f"{ns}path")) == 1  # one edge, child to parent
    html = d._repr_html_()
    assert html.startswith("<div class='labkit-plan-drawing'>") and "totals: keys examined 0" in html
    assert d.svg() == draw_plan(db.posts.find({"authorId": "user:3"}).sort("createdAt", -1).explain()).svg()


def test_aggregate_with_a_classic_lookup_is_drawn_above_its_cursor(db):
    e = db.command("explain", {"aggregate": "users", "pipeline": [
        {"$lookup": {"from": "indexed", "let": {"u": "$_id"}, "pipeline": [
            {"$match": {"$expr": {"$eq": ["$authorId", "$$u"]}}}], "as": "p"}}], "cursor": {}},
        verbosity="executionStats")
    d = draw_plan(e)
    assert [n.stage for n in d.nodes] == ["$lookup", "COLLSCAN"] and d.nodes[1].parent == 0
    lookup = e["stages"][1]
    assert (d.nodes[0].keys, d.nodes[0].docs) == (lookup["totalKeysExamined"], lookup["totalDocsExamined"])
    cursor = e["stages"][0]["$cursor"]["executionStats"]
    assert d.totals["docsExamined"] == cursor["totalDocsExamined"] + lookup["totalDocsExamined"]


def test_sbe_lookup_is_drawn_from_the_query_plan(db):
    e = db.command("explain", {"aggregate": "users", "pipeline": [
        {"$lookup": {"from": "indexed", "localField": "_id", "foreignField": "authorId", "as": "p"}}],
        "cursor": {}}, verbosity="executionStats")
    assert e["explainVersion"] == "2"
    d = draw_plan(e)
    assert [n.stage for n in d.nodes] == ["EQ_LOOKUP", "COLLSCAN"]
    assert d.nodes[0].index == "authorId_1_createdAt_-1" and "IndexedLoopJoin" in d.nodes[0].details
    assert "planNodeId" in d.note and d.totals["keysExamined"] == e["executionStats"]["totalKeysExamined"]


REAL_SBE_FIND = {  # the shape a 6.0 server returns for find({a: 1}) with index a_1 (SBE stages tagged by node)
    "explainVersion": "2",
    "queryPlanner": {"namespace": "test.c", "winningPlan": {
        "queryPlan": {"stage": "FETCH", "planNodeId": 2, "inputStage": {
            "stage": "IXSCAN", "planNodeId": 1, "indexName": "a_1", "keyPattern": {"a": 1},
            "indexBounds": {"a": ["[1, 1]"]}}},
        "slotBasedPlan": {"slots": "...", "stages": "..."}}, "rejectedPlans": []},
    "executionStats": {"executionSuccess": True, "nReturned": 3, "executionTimeMillis": 0, "totalKeysExamined": 3,
                       "totalDocsExamined": 3, "executionStages": {
                           "stage": "nlj", "planNodeId": 2, "nReturned": 3, "outerStage": {
                               "stage": "ixseek", "planNodeId": 1, "nReturned": 3, "keysExamined": 3, "seeks": 1},
                           "innerStage": {"stage": "seek", "planNodeId": 2, "nReturned": 3, "numReads": 3}}},
    "ok": 1,
}


def test_real_sbe_find_maps_counts_by_plan_node():
    d = draw_plan(REAL_SBE_FIND)
    assert [(n.stage, n.keys, n.docs, n.returned) for n in d.nodes] == [("FETCH", None, 3, 3), ("IXSCAN", 3, None, 3)]
    assert d.nodes[1].kind == "index" and "a: [1, 1]" in d.nodes[1].details


REAL_CLASSIC_FIND = {  # MongoDB manual, "Explain Results": a classic find with a blocking sort over an IXSCAN
    "explainVersion": "1",
    "queryPlanner": {"namespace": "test.inventory", "winningPlan": {"stage": "SORT"}, "rejectedPlans": []},
    "executionStats": {"executionSuccess": True, "nReturned": 3, "executionTimeMillis": 0, "totalKeysExamined": 4,
                       "totalDocsExamined": 3, "executionStages": {
                           "stage": "SORT", "nReturned": 3, "sortPattern": {"item": 1}, "memLimit": 104857600,
                           "type": "simple", "inputStage": {
                               "stage": "FETCH", "nReturned": 3, "docsExamined": 3, "inputStage": {
                                   "stage": "IXSCAN", "nReturned": 3, "keysExamined": 4, "indexName": "quantity_1",
                                   "keyPattern": {"quantity": 1},
                                   "indexBounds": {"quantity": ["[100, 200]"]}}}}},
    "ok": 1,
}


def test_real_classic_find_and_planner_only_verbosity():
    d = draw_plan(REAL_CLASSIC_FIND)
    assert [(n.stage, n.kind, n.keys, n.docs) for n in d.nodes] == [
        ("SORT", "blocking-sort", None, None), ("FETCH", "", None, 3), ("IXSCAN", "index", 4, None)]
    planner_only = {"queryPlanner": {"namespace": "t.c", "winningPlan": {
        "stage": "FETCH", "inputStage": {"stage": "IXSCAN", "indexName": "a_1"}}}}
    d = draw_plan(planner_only)
    assert [n.returned for n in d.nodes] == [None, None] and "no counts" in d.note
    assert "totals: keys examined not reported" in d.text()


def test_count_and_express_plans(db):
    count = db.command("explain", {"count": "indexed", "query": {"authorId": "user:1"}}, verbosity="executionStats")
    d = draw_plan(count)
    assert [n.stage for n in d.nodes] == ["COUNT", "COUNT_SCAN"] and any("counted 20" in x for x in d.nodes[0].details)
    express = draw_plan(db.posts.find({"_id": 3}).explain())
    assert [(n.stage, n.index, n.keys, n.docs) for n in express.nodes] == [("EXPRESS_IXSCAN", "_id_", 1, 1)]


def test_bad_input_is_named():
    with pytest.raises(TypeError, match="explain"):
        draw_plan("SORT > COLLSCAN")
    with pytest.raises(ValueError, match="queryPlanner"):
        draw_plan({"ok": 1})


def test_a_widget_shows_the_drawing_under_a_fixed_width_readout(db):
    """Explorer values that draw themselves go under the readout; the readout keeps one width whatever its values
    (demo mode: numbers must not jump sideways when a long takeaway appears)."""
    from labkit.widgets import READOUT_WIDTH, explorer

    def compute(index):
        coll = db.indexed if index == "yes" else db.posts
        e = coll.find({"authorId": "user:3"}).sort("createdAt", -1).limit(5).explain()
        return {"keys": e["executionStats"]["totalKeysExamined"],
                "takeaway": "a long sentence " * (1 if index == "yes" else 12), "drawn": draw_plan(e)}

    handle = explorer(compute, sliders={"index": ["yes", "no"]})
    first = handle.readout.value
    assert f"table-layout:fixed;width:{READOUT_WIDTH}px" in first and "<svg" not in first
    assert "class='labkit-plan'" in handle.figure.value and "IXSCAN" in handle.figure.value
    handle.set(index="no")
    assert f"table-layout:fixed;width:{READOUT_WIDTH}px" in handle.readout.value
    assert "data-stage='SORT'" in handle.figure.value
    assert handle.figure in handle.widget.children
    text = handle.text()
    assert "  drawn: Plan for drawing.posts" in text and "\n    └─ COLLSCAN" in text
