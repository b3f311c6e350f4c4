"""find's ``min`` / ``max``: the hinted index read from the ``min`` key (inclusive) to the ``max`` key
(exclusive) in index order, in-process and over TCP against the served engine.

Facts from MongoDB's jstests/core/query/minmax.js (counts and errors: 51173 without a hint, 51174 bounds that are
not the index's key pattern, 51175 ``min`` not before ``max``, 51176 ``min`` and ``max`` with different fields,
NoQueryExecutionPlans 291 with a ``$natural`` hint), the planner's code (src/mongo/db/query/query_planner.cpp:
one IXSCAN of a simple range, the filter applied by FETCH) and ``IndexBounds::toBSON`` (a simple range lists no
per-field bounds: ``indexBounds: {}``); pymongo refuses min/max without a hint before it sends anything
(``Cursor._refresh``: InvalidOperation).
"""
from __future__ import annotations

import itertools

import pytest
from pymongo import MongoClient, monitoring
from pymongo.errors import InvalidOperation, OperationFailure

from both_paths import client, server  # noqa: F401 - fixtures: every test in-process and over TCP
from labkit.engine import EmbeddedClient

_NAMES = itertools.count()


class _Started(monitoring.CommandListener):
    def __init__(self) -> None:
        self.commands: list = []

    def started(self, e) -> None:
        self.commands.append(e.command)

    def succeeded(self, e) -> None:
        pass

    def failed(self, e) -> None:
        pass


def _four(coll, key) -> None:
    coll.drop()
    coll.create_index(key)
    coll.insert_many([{"a": 1, "b": 1}, {"a": 1, "b": 2}, {"a": 2, "b": 1}, {"a": 2, "b": 2}])


def test_counts_on_an_ascending_compound_index(client):
    coll = client["mm_%d" % next(_NAMES)].c
    _four(coll, [("a", 1), ("b", 1)])
    h = [("a", 1), ("b", 1)]

    def n(cur):
        return len(list(cur))
    assert n(coll.find().hint(h).min([("a", 1), ("b", 2)]).max([("a", 2), ("b", 1)])) == 1
    assert n(coll.find().hint(h).min([("a", 1), ("b", 2)]).max([("a", 2), ("b", 1.5)])) == 2
    assert n(coll.find().hint(h).min([("a", 1), ("b", 2)]).max([("a", 2), ("b", 2)])) == 2
    assert n(coll.find().hint(h).min([("a", 1), ("b", 2)])) == 3
    assert n(coll.find().hint(h).max([("a", 2), ("b", 1.5)])) == 3


def test_counts_on_a_descending_field(client):
    coll = client["mm_%d" % next(_NAMES)].c
    _four(coll, [("a", 1), ("b", -1)])
    h = [("a", 1), ("b", -1)]
    got = [len(list(coll.find().hint(h).min([("a", 1), ("b", 2)]))),
           len(list(coll.find().hint(h).max([("a", 2), ("b", 0.5)]))),
           len(list(coll.find().hint(h).min([("a", 2), ("b", 1)]))),
           len(list(coll.find().hint(h).max([("a", 1), ("b", 1.5)])))]
    assert got == [4, 4, 1, 1]


def test_order_follows_the_index(client):
    coll = client["mm_%d" % next(_NAMES)].c
    coll.insert_many([{"a": 3}, {"a": 4}, {"a": 5}])
    coll.create_index("a")
    assert [d["a"] for d in coll.find().hint([("a", 1)]).min([("a", 4)])] == [4, 5]
    assert [d["a"] for d in coll.find().hint([("a", 1)]).max([("a", 4)])] == [3]
    coll.drop_indexes()
    coll.create_index([("a", -1)])
    assert [d["a"] for d in coll.find().hint([("a", -1)]).min([("a", 4)])] == [4, 3]
    assert [d["a"] for d in coll.find().hint([("a", -1)]).max([("a", 4)])] == [5]


def test_filter_sort_and_the_plan(client):
    """The filter is applied to the fetched documents; a sort the index gives reverses the range scan (no SORT
    stage); explain shows one IXSCAN with ``indexBounds: {}`` and counts only the keys of the range."""
    coll = client["mm_%d" % next(_NAMES)].c
    coll.insert_many([{"_id": i, "a": i} for i in range(10)])
    coll.create_index("a")
    cur = coll.find({"a": {"$gt": 5}}).hint([("a", 1)]).min([("a", 4)]).max([("a", 8)])
    assert [d["a"] for d in cur] == [6, 7]
    assert [d["a"] for d in coll.find().hint([("a", 1)]).min([("a", 4)]).max([("a", 8)]).sort("a", -1)] == [7, 6, 5, 4]
    e = coll.find({"a": {"$gt": 5}}).hint([("a", 1)]).min([("a", 4)]).max([("a", 8)]).explain()
    plan = e["queryPlanner"]["winningPlan"]
    assert plan["stage"] == "FETCH" and plan["filter"] == {"a": {"$gt": 5}}
    ix = plan["inputStage"]
    assert ix["stage"] == "IXSCAN" and ix["indexBounds"] == {} and ix["direction"] == "forward"
    st = e["executionStats"]
    assert (st["nReturned"], st["totalKeysExamined"], st["totalDocsExamined"]) == (2, 4, 4)
    e = coll.find({}, {"a": 1, "_id": 0}).hint([("a", 1)]).min([("a", 4)]).sort("a", -1).explain()
    plan = e["queryPlanner"]["winningPlan"]
    assert plan["stage"] == "PROJECTION_COVERED" and plan["inputStage"]["direction"] == "backward"
    assert e["executionStats"]["totalKeysExamined"] == 6
    # a sort the index does not give: a blocking SORT over the range
    e = coll.find().hint([("a", 1)]).min([("a", 4)]).sort("_id", 1).explain()
    assert e["queryPlanner"]["winningPlan"]["stage"] == "SORT"


def test_errors(client):
    coll = client["mm_%d" % next(_NAMES)].c
    _four(coll, [("a", 1), ("b", -1)])
    h = [("a", 1), ("b", -1)]
    cases = [
        (lambda: coll.find().min([("a", 1)]).hint(h), 51174),
        (lambda: coll.find().min([("a", 1), ("b", 1)]).max([("a", 1)]).hint(h), 51176),
        (lambda: coll.find().min([("b", 1)]).max([("a", 1), ("b", 2)]).hint(h), 51176),
        (lambda: coll.find().min([("a", 1)]).hint([("$natural", 1)]), 291),
        (lambda: coll.find().max([("a", 1)]).hint([("$natural", 1)]), 291),
        (lambda: coll.find().hint(h).min([("a", 1), ("b", 2)]).max([("a", 1), ("b", 2)]), 51175),
        (lambda: coll.find().hint(h).min([("a", 2), ("b", 1)]).max([("a", 1), ("b", 1)]), 51175),
    ]
    for make, code in cases:
        with pytest.raises(OperationFailure) as ei:
            list(make())
        assert ei.value.code == code, (code, str(ei.value))
    # the server's own check, as another client meets it (pymongo refuses this before sending)
    with pytest.raises(OperationFailure) as ei:
        coll.database.command({"find": coll.name, "min": {"a": 1, "b": 2}})
    assert ei.value.code == 51173
    with pytest.raises(OperationFailure) as ei:  # find(min=[...]) goes out as an array
        list(coll.find(min=[("a", 1), ("b", 2)], hint=h))
    assert ei.value.code == 14
    with pytest.raises(InvalidOperation, match="Passing a 'hint' is required"):
        list(coll.find().min([("a", 1), ("b", 2)]))
    with pytest.raises(TypeError):
        coll.find().min({"a": 1})
    assert coll.count_documents({}) == 4


def test_the_command_the_driver_sends(server):
    """In-process events are what pymongo sends over the wire: ``min``/``max`` in the find command, nothing for a
    min/max without a hint."""
    streams = []
    for make in (lambda lst: EmbeddedClient(event_listeners=[lst]),
                 lambda lst: MongoClient(server.uri, serverSelectionTimeoutMS=5000, event_listeners=[lst])):
        lst = _Started()
        c = make(lst)
        coll = c["mm_events"].c
        coll.drop()
        coll.create_index("a")
        coll.insert_many([{"_id": i, "a": i} for i in range(5)])
        lst.commands.clear()
        list(coll.find({}, {"_id": 1}).hint([("a", 1)]).min([("a", 1)]).max([("a", 3)]))
        # the command-monitoring shape of a find with every option: an explicit False is sent too
        list(coll.find({"_id": {"$gt": 0}}, {"a": 1}, skip=1, comment="opts", hint=[("_id", 1)], max_time_ms=5000,
                       max={"_id": 4}, min={"_id": 0}, return_key=False, show_record_id=False, sort=[("a", -1)],
                       batch_size=1))
        with pytest.raises(InvalidOperation):
            list(coll.find().max([("a", 3)]))
        streams.append([{k: ("<cursor id>" if k == "getMore" else v) for k, v in cmd.items()
                         if k not in ("lsid", "$clusterTime", "$db")} for cmd in lst.commands])
        c.drop_database("mm_events")
        c.close()
    assert streams[0] == streams[1]
    assert len(streams[0]) == 3 and streams[0][0]["min"] == {"a": 1} and streams[0][0]["max"] == {"a": 3}
    assert streams[0][1]["returnKey"] is False and streams[0][1]["showRecordId"] is False
    assert [c.get("getMore") for c in streams[0]] == [None, None, "<cursor id>"]


def test_views_and_time_series_run_finds_as_aggregations(client):
    """A find on a view or a time-series collection runs as an aggregation, which has no min/max:
    InvalidPipelineOperator 168 "Option min not supported in aggregation." (query_request_helper.cpp,
    ``asAggregationCommand``), min checked first."""
    db = client["mm_%d" % next(_NAMES)]
    db.plain.insert_one({"m": 1})
    db.plain.create_index("m")
    db.create_collection("vw", viewOn="plain", pipeline=[])
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    for coll in (db.vw, db.ts):
        with pytest.raises(OperationFailure) as ei:
            list(coll.find().hint([("m", 1)]).min([("m", 1)]).max([("m", 2)]))
        assert ei.value.code == 168 and "Option min not supported in aggregation." in str(ei.value)
        with pytest.raises(OperationFailure) as ei:
            list(coll.find().hint([("m", 1)]).max([("m", 2)]))
        assert ei.value.code == 168 and "Option max not supported in aggregation." in str(ei.value)


def test_cursor_distinct_sends_no_bounds(client):
    """pymongo's ``Cursor.distinct`` runs ``distinct`` with the cursor's filter only (cursor.py): min/max
    play no part."""
    coll = client["mm_%d" % next(_NAMES)].c
    coll.insert_many([{"a": i} for i in range(5)])
    coll.create_index("a")
    assert sorted(coll.find({"a": {"$gt": 0}}).hint([("a", 1)]).min([("a", 3)]).distinct("a")) == [1, 2, 3, 4]
