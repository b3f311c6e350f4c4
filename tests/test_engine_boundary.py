"""Rules enforced at the engine's operation boundary (labkit/engine/service/boundary.py).

Each test names its source: MongoDB's manual, the server source or jstests, or pymongo's own argument checks.
"""
from __future__ import annotations

import contextlib

import pytest
from pymongo.errors import ExecutionTimeout, OperationFailure, WriteError

from labkit.engine import EmbeddedClient
from labkit.engine.service import boundary


@pytest.fixture
def client():
    return EmbeddedClient()


@pytest.fixture
def coll(client):
    c = client.t.c
    c.insert_many([{"_id": i, "a": i % 5} for i in range(50)])
    return c


def deep_and(n: int) -> dict:
    q: dict = {"a": 1}
    for _ in range(n):
        q = {"$and": [q]}
    return q


# -- nesting depth ---------------------------------------------------------------------------------------------
# Server: MatchExpressionParser::kMaximumTreeDepth = 100 (src/mongo/db/matcher/expression_parser.cpp), status
# BadValue "exceeded maximum query tree depth of 100 at ..." (jstests/core/query/query_tree_depth.js idea).
def test_query_tree_depth_100_is_allowed(coll):
    assert len(list(coll.find(deep_and(100)))) == 10


@pytest.mark.parametrize("call", [
    lambda c, q: list(c.find(q)),
    lambda c, q: c.count_documents(q),
    lambda c, q: c.delete_many(q),
    lambda c, q: c.update_many(q, {"$set": {"x": 1}}),
    lambda c, q: list(c.aggregate([{"$match": q}])),
    lambda c, q: c.find_one_and_delete(q),
])
def test_query_tree_depth_over_100_is_bad_value(coll, call):
    for n in (101, 900):
        with pytest.raises(OperationFailure) as ei:
            call(coll, deep_and(n))
        assert ei.value.code == 2
        assert "exceeded maximum query tree depth of 100" in str(ei.value)
    assert coll.count_documents({}) == 50


# Manual "MongoDB Limits and Thresholds" > Nested Depth for BSON Documents (100 levels); the server's insert path
# fails with Overflow (15).
def test_deep_document_is_overflow_not_recursion(coll):
    d: dict = {"x": 1}
    for _ in range(900):
        d = {"x": d}
    with pytest.raises(WriteError) as ei:
        coll.insert_one(d)
    assert ei.value.code == 15
    with pytest.raises(WriteError) as ei:
        coll.update_one({}, {"$set": {"deep": d}})
    assert ei.value.code == 15


# -- raw exceptions -------------------------------------------------------------------------------------------
def _run_raises(coll, monkeypatch, exc):
    """The collection's command runner fails inside with ``exc`` (a bug, or a corner the engine does not model)."""
    def broken(self, *a, **k):
        raise exc
    monkeypatch.setattr(type(coll), "_run", broken)


def test_raw_exception_becomes_internal_error_with_cause(coll, monkeypatch):
    _run_raises(coll, monkeypatch, KeyError("oops"))
    with pytest.raises(OperationFailure) as ei:
        list(coll.find({"a": 1}))
    err = ei.value
    assert err.code == 1 and err.details["codeName"] == "InternalError"
    assert "embedded engine" in str(err) and "report" in str(err)
    assert isinstance(err.__cause__, KeyError)
    with pytest.raises(WriteError) as ei:  # writes fail as write errors
        coll.delete_one({"a": 1})
    assert ei.value.code == 1


def test_not_implemented_becomes_unsupported(coll, monkeypatch):
    _run_raises(coll, monkeypatch, NotImplementedError("Some corner"))
    with pytest.raises(OperationFailure) as ei:
        coll.count_documents({"a": 1})
    assert ei.value.code == 115 and "not modelled by labkit's embedded engine" in str(ei.value)


def test_pymongo_client_side_argument_errors_stay(coll):
    # pymongo raises these itself before sending anything (pymongo/synchronous/cursor.py, collection.py)
    with pytest.raises(TypeError):
        coll.insert_one(5)
    with pytest.raises(TypeError):
        coll.find().limit("x")
    with pytest.raises(ValueError):
        coll.find().skip(-1)
    with pytest.raises(TypeError):
        coll.find().batch_size("x")
    with pytest.raises(ValueError):
        coll.find().batch_size(-1)
    with pytest.raises(TypeError):
        coll.find().max_time_ms("x")


def test_code_less_engine_errors_get_the_servers_code(coll):
    with pytest.raises(OperationFailure) as ei:  # server: BadValue "unknown operator: $bogus"
        list(coll.find({"a": {"$bogus": 1}}))
    assert ei.value.code == 2


# -- transactions ---------------------------------------------------------------------------------------------
# Manual "Transactions" > "Transactions and Operations": a command that fails inside a transaction aborts it;
# later operations and the commit fail with NoSuchTransaction (251) labelled TransientTransactionError.
@contextlib.contextmanager
def _aborted_transaction(client, coll, _id):
    """A transaction that inserted {_id}, for a body whose failing command aborts it: afterwards the commit fails
    with NoSuchTransaction (251, labelled TransientTransactionError) and the insert is gone."""
    with client.start_session() as s:
        s.start_transaction()
        coll.insert_one({"_id": _id}, session=s)
        yield s
        with pytest.raises(OperationFailure) as ei:
            s.commit_transaction()
        assert ei.value.code == 251 and ei.value.has_error_label("TransientTransactionError")
    assert coll.find_one({"_id": _id}) is None


def test_error_inside_transaction_aborts_it(client, coll, monkeypatch):
    with _aborted_transaction(client, coll, "t1") as s:
        with pytest.raises(OperationFailure):
            coll.insert_one({"_id": "t1"}, session=s)  # duplicate key inside the transaction
        with pytest.raises(OperationFailure) as ei:
            coll.find_one({}, session=s)
        assert ei.value.code == 251


def test_raw_exception_inside_transaction_aborts_it(client, coll, monkeypatch):
    with _aborted_transaction(client, coll, "t2") as s:
        real = type(coll)._run
        _run_raises(coll, monkeypatch, AttributeError("gap"))
        with pytest.raises(OperationFailure) as ei:
            coll.update_one({"_id": "t2"}, {"$set": {"x": 1}}, session=s)
        assert ei.value.code == 1
        monkeypatch.setattr(type(coll), "_run", real)


def test_too_deep_query_inside_transaction_aborts_it(client, coll):
    with _aborted_transaction(client, coll, "t4") as s:
        with pytest.raises(OperationFailure):
            list(coll.find(deep_and(150), session=s))


# jstests/core/txns/commands_not_allowed_in_txn.js: a command refused with OperationNotSupportedInTransaction
# inside a transaction in progress "fails inside a transaction, but does not abort the transaction".
def test_not_supported_in_transaction_does_not_abort(client, coll):
    # jstests/core/txns/commands_not_allowed_in_txn.js: a command a transaction may not run (dropIndexes) is
    # refused before it runs (263) and the transaction goes on; create_existing_indexes.js: createIndexes of a
    # new index on an existing collection fails while it runs (263) and aborts the transaction
    with client.start_session() as s:
        with s.start_transaction():
            coll.insert_one({"_id": "t5"}, session=s)
            with pytest.raises(OperationFailure) as ei:
                coll.drop_indexes(session=s)
            assert ei.value.code == 263
        s.start_transaction()
        coll.insert_one({"_id": "t6"}, session=s)
        with pytest.raises(OperationFailure) as ei:
            coll.create_index("z", session=s)
        assert ei.value.code == 263
        with pytest.raises(OperationFailure) as ei:
            s.commit_transaction()
        assert ei.value.code == 251
    assert coll.find_one({"_id": "t5"}) == {"_id": "t5"} and coll.find_one({"_id": "t6"}) is None


def test_client_side_error_does_not_abort_transaction(client, coll):
    with client.start_session() as s:
        with s.start_transaction():
            coll.insert_one({"_id": "t3"}, session=s)
            with pytest.raises(TypeError):
                coll.insert_one(5, session=s)  # pymongo refuses it before sending: the server never sees it
    assert coll.find_one({"_id": "t3"}) == {"_id": "t3"}


# The manual's "Production Considerations" for transactions (Pending DDL Operations and Transactions): a drop of a
# collection an open transaction wrote to, or a rename over it, waits behind the transaction (the exclusive
# collection lock; MaxTimeMSExpired 50 when its maxTimeMS passes first, nothing changed), so a commit never writes
# into a dropped or re-created collection (issue 13's resurrection case cannot arise).
@pytest.mark.parametrize("over", [False, True])
@pytest.mark.parametrize("also_update", [False, True])
def test_a_drop_waits_for_the_transaction_that_wrote(client, coll, over, also_update):
    with client.start_session() as s:
        s.start_transaction()
        coll.insert_one({"_id": "in-txn"}, session=s)  # inserts only: issue 13's resurrection case
        if also_update:
            coll.update_one({"_id": 1}, {"$set": {"x": 1}}, session=s)
        before = coll.count_documents({})
        if over:  # renameCollection with dropTarget onto the collection
            client.t.other.insert_one({"_id": "outside"})
            cmd, on = {"renameCollection": "t.other", "to": "t." + coll.name, "dropTarget": True,
                       "maxTimeMS": 50}, client.admin
        else:
            cmd, on = {"drop": coll.name, "maxTimeMS": 50}, client.t
        with pytest.raises(OperationFailure) as ei:
            on.command(cmd)
        assert ei.value.code == 50
        assert coll.count_documents({}) == before  # nothing dropped
        s.commit_transaction()
    assert coll.find_one({"_id": "in-txn"}) == {"_id": "in-txn"}
    assert "c" in client.t.list_collection_names()


def test_commit_after_unrelated_drop_succeeds(client, coll):
    client.t.other.insert_one({"x": 1})
    with client.start_session() as s:
        with s.start_transaction():
            coll.insert_one({"_id": "ok"}, session=s)
            client.t.other.drop()
    assert coll.find_one({"_id": "ok"}) == {"_id": "ok"}


# -- maxTimeMS ------------------------------------------------------------------------------------------------
# Manual "cursor.maxTimeMS()" / "Terminate running operations": an operation past its time limit fails with
# MaxTimeMSExpired (50); pymongo raises ExecutionTimeout for it. Time is moved on by a fake clock (no timing).
@pytest.fixture
def slow_clock(monkeypatch):
    t = [0.0]

    def clock() -> float:
        t[0] += 0.01  # every look at the clock: 10 ms later
        return t[0]
    monkeypatch.setattr(boundary, "_clock", clock)


@pytest.mark.parametrize("call", [
    lambda c: list(c.find({"a": 1}).max_time_ms(5)),
    lambda c: list(c.find({"a": 1}, max_time_ms=5)),
    lambda c: list(c.aggregate([{"$match": {"a": 1}}], maxTimeMS=5)),
    lambda c: c.count_documents({"a": 1}, maxTimeMS=5),
    lambda c: c.distinct("a", {"a": 1}, maxTimeMS=5),
    lambda c: c.estimated_document_count(maxTimeMS=5),
    lambda c: c.find_one_and_update({"a": 1}, {"$set": {"t": 1}}, maxTimeMS=5),
])
def test_max_time_ms_expires(coll, slow_clock, call):
    with pytest.raises(ExecutionTimeout) as ei:
        call(coll)
    assert ei.value.code == 50
    assert coll.count_documents({"t": 1}) == 0  # find_one_and_update did not modify anything


def test_max_time_ms_not_exceeded_or_zero(coll, slow_clock):
    assert len(list(coll.find({"a": 1}).max_time_ms(10_000))) == 10
    assert len(list(coll.find({"a": 1}).max_time_ms(0))) == 10  # 0: no limit
    assert coll.count_documents({"a": 1}, maxTimeMS=10_000) == 10


def test_max_time_ms_validation(coll):
    with pytest.raises(OperationFailure) as ei:
        list(coll.find(max_time_ms=-1))
    assert ei.value.code == 2
    with pytest.raises(OperationFailure) as ei:
        coll.count_documents({}, maxTimeMS=-1)
    assert ei.value.code == 2


# -- argument validation --------------------------------------------------------------------------------------
# pymongo's count_documents sends {$skip: n} / {$limit: n} stages; the server's document_source_skip/limit
# parsers answer 5107200 / 5107201 ("Expected a non-negative number") and 15958 ("the limit must be positive").
@pytest.mark.parametrize("kwargs,code", [({"skip": -1}, 5107200), ({"limit": -1}, 5107201), ({"limit": 0}, 15958),
                                         ({"skip": "a"}, 5107200), ({"limit": 1.5}, 5107201)])
def test_count_documents_skip_limit(coll, kwargs, code):
    with pytest.raises(OperationFailure) as ei:
        coll.count_documents({}, **kwargs)
    assert ei.value.code == code


def test_count_documents_skip_limit_values(coll):
    assert coll.count_documents({}, skip=45) == 5
    assert coll.count_documents({}, skip=10, limit=7) == 7
    assert coll.count_documents({}, skip=0) == 50


# Server: "hint provided does not correspond to an existing index" (BadValue 2), query_planner.cpp.
@pytest.mark.parametrize("call", [
    lambda c: list(c.find().hint("nope_1")),
    lambda c: list(c.find().hint([("zz", 1)])),
    lambda c: c.count_documents({}, hint="nope"),
    lambda c: c.update_one({}, {"$set": {"b": 1}}, hint="nope"),
    lambda c: c.delete_one({}, hint="nope"),
])
def test_hint_of_missing_index(coll, call):
    with pytest.raises(OperationFailure) as ei:
        call(coll)
    assert ei.value.code == 2 and "hint provided does not correspond to an existing index" in str(ei.value)
