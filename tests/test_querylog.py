"""labkit.querylog: a query log from the profiler, or from command monitoring where the profiler is refused.

The profiler documents carry the fields of the manual's "Database Profiler Output" (op, ns, command, ts, millis,
keysExamined, docsExamined); Atlas Free and Flex clusters refuse the `profile` command (Atlas "Unsupported
Commands"), which is what the fallback is for.
"""
from __future__ import annotations

import pytest
from pymongo.errors import OperationFailure

import labkit
from labkit import querylog


@pytest.fixture()
def db():
    d = labkit.fresh_db("test_querylog")
    d.items.insert_many([{"_id": i, "x": i % 3, "tag": f"t{i % 5}"} for i in range(30)])
    d.items.create_index("x")
    return d


def _traffic(d):
    for i in range(6):
        list(d.items.find({"x": i % 3}))
    d.items.find_one({"_id": 4})
    list(d.items.aggregate([{"$match": {"x": 1}}, {"$lookup": {"from": "items", "localField": "x",
                                                               "foreignField": "_id", "as": "j"}}]))


def test_profiler_log_counts_each_shape_with_the_servers_counters(db):
    list(db.items.find({"tag": "t1"}))  # before the window: must not be in the log
    log = querylog.capture(db, _traffic)
    assert log.source == "profiler" and len(log) == 8
    s = log.summary().set_index("shape")
    assert s.loc["find items: x", "runs"] == 6 and s.loc["find items: _id", "runs"] == 1
    assert s.loc["aggregate items: $match(x) $lookup(items)", "runs"] == 1
    assert s.loc["find items: x", "keys examined per run"] == 10 and s.loc["find items: x", "docs examined per run"] == 10
    assert "find items: tag" not in s.index
    assert all("lsid" not in e["command"] and "profile" not in e["command"] for e in log.entries)
    assert db.command("profile", -1)["was"] == 0  # the level before the run is restored


def test_monitoring_log_sees_the_same_operations_and_explain_fills_the_counters(db):
    prof = querylog.capture(db, _traffic).summary().set_index("shape")
    mon = querylog.capture(db, _traffic, source="monitoring")
    assert mon.source == "command monitoring" and len(mon) == 8
    assert "keys examined per run" not in mon.summary().columns  # the driver never sees them
    filled = mon.summary(db=db).set_index("shape")
    assert filled["runs"].to_dict() == prof["runs"].to_dict()
    assert filled.loc["find items: x", "docs examined per run"] == prof.loc["find items: x", "docs examined per run"]
    assert all(e["millis"] >= 0 and e["ns"].startswith("test_querylog.") for e in mon.entries)


class _NoProfiler:
    """A database whose deployment refuses `profile`, as Atlas Free and Flex clusters do."""

    def __init__(self, db):
        self._db = db

    def __getattr__(self, name):
        return getattr(self._db, name)

    def __getitem__(self, name):
        return self._db[name]

    def command(self, cmd, *args, **kwargs):
        if cmd == "profile":
            raise OperationFailure("profile is not allowed in this atlas tier", 8000)
        return self._db.command(cmd, *args, **kwargs)


def test_auto_falls_back_to_command_monitoring_when_profile_is_refused(db):
    log = querylog.capture(_NoProfiler(db), _traffic)
    assert log.source == "command monitoring" and "code 8000" in log.note and len(log) == 8
    with pytest.raises(querylog.QueryLogError, match="refuses the profiler"):
        querylog.capture(_NoProfiler(db), _traffic, source="profiler")


def test_shape_names_the_command_collection_fields_and_stages():
    assert querylog.shape({"command": {"find": "c", "filter": {"a": 1, "b": 2}, "sort": {"t": -1}}}) == \
        "find c: a, b sort(t)"
    assert querylog.shape({"command": {"find": "c", "filter": {}}}) == "find c: (all)"
    assert querylog.shape({"command": {"aggregate": "o", "pipeline": [
        {"$match": {"s": "open"}}, {"$limit": 5}, {"$lookup": {"from": "cust"}}]}}) == \
        "aggregate o: $match(s) $limit $lookup(cust)"
    assert querylog.shape({"command": {"update": "c", "updates": [{"q": {"_id": 1}, "u": {}}]}}) == "update c: _id"


def test_bad_input_gets_a_clear_error(db):
    with pytest.raises(querylog.QueryLogError, match="source="):
        querylog.capture(db, _traffic, source="slowlog")
    with pytest.raises(querylog.QueryLogError, match="function"):
        querylog.capture(db, None)
    with pytest.raises(querylog.QueryLogError, match="database"):
        querylog.capture(db.items, _traffic)
