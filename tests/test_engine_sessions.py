"""Sessions and multi-document transactions on the embedded engine (labkit/engine/session/sessions.py).

The examples follow pymongo's documentation (*Transactions*, ``ClientSession.with_transaction``) and the
MongoDB manual (*Transactions*, *Drivers API*). Rolled-back writes must leave documents AND indexes as they
were (index entries and explain's keysExamined).
"""
from __future__ import annotations

import pytest
from pymongo import InsertOne, ReturnDocument, UpdateOne
from pymongo.errors import ConfigurationError, DuplicateKeyError, InvalidOperation, OperationFailure

from labkit.engine import EmbeddedClient


@pytest.fixture()
def client():
    c = EmbeddedClient()
    c.db.orders.create_index("sku")
    c.db.inventory.insert_one({"sku": "abc123", "qty": 500})
    c.db.inventory.create_index("sku", unique=True)
    return c


def state(coll):
    st = coll._store
    return ([repr(d) for d in st.docs.values()], {n: list(ix.entries) for n, ix in st.ix.items()})


def keys_examined(cur) -> int:
    return cur.explain()["executionStats"]["totalKeysExamined"]


def test_transaction_context_managers_commit(client):
    """pymongo docs, *Transactions*: ``with client.start_session() as session: with
    session.start_transaction(): orders.insert_one({"sku": "abc123", "qty": 100}, session=session);
    inventory.update_one({"sku": "abc123", "qty": {"$gte": 100}}, {"$inc": {"qty": -100}}, session=session)``.
    Inside, the session sees both writes and other readers see neither; leaving the block commits."""
    orders, inventory = client.db.orders, client.db.inventory
    with client.start_session() as session:
        with session.start_transaction():
            assert session.in_transaction
            orders.insert_one({"sku": "abc123", "qty": 100}, session=session)
            inventory.update_one({"sku": "abc123", "qty": {"$gte": 100}}, {"$inc": {"qty": -100}},
                                 session=session)
            assert orders.count_documents({}, session=session) == 1
            assert inventory.find_one({"sku": "abc123"}, session=session)["qty"] == 400
            assert orders.count_documents({}) == 0
            assert inventory.find_one({"sku": "abc123"})["qty"] == 500
            assert keys_examined(orders.find({"sku": "abc123"})) == 0
        assert not session.in_transaction
    assert orders.find_one({}, {"_id": 0}) == {"sku": "abc123", "qty": 100}
    assert inventory.find_one({"sku": "abc123"})["qty"] == 400
    assert keys_examined(orders.find({"sku": "abc123"})) == 1


def test_with_transaction_callback(client):
    """pymongo docs, ``ClientSession.with_transaction``: ``def callback(session): orders =
    session.client.db.orders; ... orders.insert_one(..., session=session); inventory.update_one(...,
    session=session)`` then ``session.with_transaction(callback)`` commits and returns the callback's
    result."""
    def callback(session):
        orders = session.client.db.orders
        inventory = session.client.db.inventory
        orders.insert_one({"sku": "abc123", "qty": 100}, session=session)
        inventory.update_one({"sku": "abc123", "qty": {"$gte": 100}}, {"$inc": {"qty": -100}}, session=session)
        return "done"

    with client.start_session() as session:
        assert session.with_transaction(callback) == "done"
    assert client.db.orders.count_documents({}) == 1
    assert client.db.inventory.find_one()["qty"] == 400


def test_exception_in_callback_aborts_and_propagates(client):
    """pymongo docs, ``with_transaction``: "If the callback raises an exception, the transaction is aborted
    and the exception re-raised" -- every write in it is rolled back, documents and index entries."""
    orders, inventory = client.db.orders, client.db.inventory
    before = (state(orders), state(inventory))

    def callback(session):
        orders.insert_one({"sku": "abc123", "qty": 100}, session=session)
        inventory.update_one({"sku": "abc123"}, {"$set": {"sku": "zzz"}}, session=session)
        raise ValueError("out of stock")

    with client.start_session() as session:
        with pytest.raises(ValueError):
            session.with_transaction(callback)
        assert not session.in_transaction
    assert (state(orders), state(inventory)) == before
    assert keys_examined(inventory.find({"sku": "zzz"})) == 0


def test_abort_rolls_back_only_the_transaction(client):
    """Manual, *Transactions*: "When a transaction aborts, all data changes made in the transaction are
    discarded" -- writes made outside it meanwhile stay, as do indexes' entries for them."""
    orders = client.db.orders
    session = client.start_session()
    session.start_transaction()
    orders.insert_one({"sku": "in-txn", "qty": 1}, session=session)
    orders.insert_one({"sku": "outside", "qty": 2})
    orders.delete_many({}, session=session)
    assert orders.count_documents({}, session=session) == 0
    session.abort_transaction()
    assert [d["sku"] for d in orders.find()] == ["outside"]
    assert keys_examined(orders.find({"sku": "in-txn"})) == 0
    assert keys_examined(orders.find({"sku": "outside"})) == 1
    # the with-statement form aborts on an exception
    with pytest.raises(KeyError):
        with session.start_transaction():
            orders.update_many({}, {"$set": {"qty": 0}}, session=session)
            raise KeyError("x")
    assert orders.find_one({"sku": "outside"})["qty"] == 2


def test_reads_with_the_session_see_the_transaction(client):
    """Manual, *Read Concern/Write Concern/Read Preference in transactions*: operations in a transaction
    read its own writes (find, cursors, aggregate with $lookup, distinct, count) from one snapshot."""
    orders, inventory = client.db.orders, client.db.inventory
    with client.start_session() as s:
        with s.start_transaction():
            orders.insert_many([{"sku": "abc123", "qty": 1}, {"sku": "abc123", "qty": 2}], session=s)
            cur = orders.find({"sku": "abc123"}, session=s).sort("qty", -1)
            assert [d["qty"] for d in cur] == [2, 1]
            pipeline = [{"$lookup": {"from": "orders", "localField": "sku", "foreignField": "sku", "as": "o"}},
                        {"$project": {"_id": 0, "n": {"$size": "$o"}}}]
            assert list(inventory.aggregate(pipeline, session=s)) == [{"n": 2}]
            assert list(inventory.aggregate(pipeline)) == [{"n": 0}]
            assert orders.distinct("qty", session=s) == [1, 2]
            assert orders.distinct("qty") == []
            # an outside write after the snapshot is not seen by the transaction
            inventory.update_one({}, {"$set": {"qty": 1}})
            assert inventory.find_one({}, session=s)["qty"] == 500
            # pymongo refuses a session for the count command (ConfigurationError, nothing sent): in a
            # transaction count_documents counts (manual "Transactions and Operations")
            with pytest.raises(ConfigurationError):
                orders.estimated_document_count(session=s)
            assert orders.count_documents({}, session=s) == 2


def test_write_conflict_applies_nothing(client):
    """Manual, *In-progress Transactions and Write Conflicts*: a transaction that writes a document modified
    outside it after its snapshot fails at that write with WriteConflict (112, label
    "TransientTransactionError") and is aborted; none of its writes (in any collection) are applied."""
    orders, inventory = client.db.orders, client.db.inventory
    s = client.start_session()
    s.start_transaction()
    orders.insert_one({"sku": "abc123", "qty": 100}, session=s)  # the snapshot is taken here
    inventory.update_one({"sku": "abc123"}, {"$inc": {"qty": -1}})  # a concurrent writer, after the snapshot
    before = (state(orders), state(inventory))
    with pytest.raises(OperationFailure) as ei:
        inventory.update_one({"sku": "abc123"}, {"$inc": {"qty": -100}}, session=s)
    assert ei.value.code == 112 and ei.value.has_error_label("TransientTransactionError")
    with pytest.raises(OperationFailure) as ei:
        s.commit_transaction()
    assert ei.value.code == 251  # the failed statement aborted the transaction
    assert (state(orders), state(inventory)) == before
    assert inventory.find_one()["qty"] == 499 and orders.count_documents({}) == 0
    assert not s.in_transaction


def test_with_transaction_retries_transient_errors(client):
    """pymongo docs, ``with_transaction``: on a TransientTransactionError the whole callback is retried;
    here the first attempt meets a write made after its snapshot (WriteConflict), the second commits."""
    inventory = client.db.inventory
    attempts = []

    def callback(session):
        attempts.append(1)
        inventory.find_one({"sku": "abc123"}, session=session)  # the snapshot
        if len(attempts) == 1:
            inventory.update_one({"sku": "abc123"}, {"$inc": {"qty": -1}})  # concurrent writer, once
        inventory.update_one({"sku": "abc123"}, {"$inc": {"qty": -100}}, session=session)

    with client.start_session() as s:
        s.with_transaction(callback)
    assert len(attempts) == 2
    assert inventory.find_one()["qty"] == 399


def test_unique_index_rechecked_at_commit(client):
    """Unique indexes hold across a transaction: a key inserted outside after the snapshot makes the
    transaction's insert of the same key fail (WriteConflict, nothing applied); inside, a duplicate of a key
    in the snapshot fails at once (11000) and, as on the server, the failed command aborts the transaction
    (commit -> NoSuchTransaction 251)."""
    inventory = client.db.inventory
    s = client.start_session()
    s.start_transaction()
    inventory.find_one({}, session=s)  # the snapshot
    inventory.insert_one({"sku": "new", "qty": 2})
    with pytest.raises(OperationFailure) as ei:
        inventory.insert_one({"sku": "new", "qty": 1}, session=s)
    assert ei.value.code == 112
    assert [d["qty"] for d in inventory.find({"sku": "new"})] == [2]
    s.abort_transaction()
    s.start_transaction()
    inventory.insert_one({"sku": "x", "qty": 1}, session=s)
    with pytest.raises(DuplicateKeyError):
        inventory.insert_one({"sku": "abc123"}, session=s)
    with pytest.raises(OperationFailure) as ei:
        s.commit_transaction()
    assert ei.value.code == 251 and ei.value.has_error_label("TransientTransactionError")
    assert inventory.count_documents({"sku": "x"}) == 0


def test_session_accepted_on_every_call(client):
    """pymongo API: every CRUD, aggregate, count, distinct and index method takes ``session=``; outside a
    transaction it simply runs (causally consistent on one node). DDL inside a transaction is refused
    clearly (263)."""
    db = client.db
    c = db.orders
    with client.start_session() as s:
        c.insert_one({"sku": "a", "qty": 1}, session=s)
        c.insert_many([{"sku": "b", "qty": 2}], session=s)
        c.update_one({"sku": "a"}, {"$inc": {"qty": 1}}, session=s)
        c.update_many({}, {"$inc": {"qty": 1}}, session=s)
        c.replace_one({"sku": "b"}, {"sku": "b", "qty": 9}, session=s)
        c.bulk_write([InsertOne({"sku": "c"}), UpdateOne({"sku": "c"}, {"$set": {"qty": 5}})], session=s)
        assert c.find_one_and_update({"sku": "c"}, {"$inc": {"qty": 1}}, session=s,
                                     return_document=ReturnDocument.AFTER)["qty"] == 6
        c.find_one_and_replace({"sku": "c"}, {"sku": "c", "qty": 7}, session=s)
        c.find_one_and_delete({"sku": "c"}, session=s)
        c.delete_one({"sku": "zz"}, session=s)
        c.delete_many({"sku": "zz"}, session=s)
        assert c.count_documents({}, session=s) == 2
        with pytest.raises(ConfigurationError):  # pymongo: "estimated_document_count does not support sessions"
            c.estimated_document_count(session=s)
        assert c.distinct("sku", session=s) == ["a", "b"]
        assert len(list(c.aggregate([{"$match": {}}], session=s))) == 2
        assert c.create_index("qty", session=s) == "qty_1"
        assert "qty_1" in c.index_information(session=s)
        assert len(list(c.list_indexes(session=s))) == 3
        c.drop_index("qty_1", session=s)
        assert "orders" in [i["name"] for i in db.list_collections(session=s)]
        db.create_collection("tmp", session=s)
        db.tmp.drop(session=s)
        s.start_transaction()
        with pytest.raises(OperationFailure) as ei:  # a new index on an existing collection (4.4+ rules)
            c.create_index("qty", session=s)
        assert ei.value.code == 263
        s.abort_transaction()


def test_session_api_errors(client):
    """pymongo ``ClientSession`` rules: no nested transactions, commit/abort need a transaction, an ended
    session cannot be used, and a session only works with the client that started it."""
    s = client.start_session()
    with pytest.raises(InvalidOperation):
        s.commit_transaction()
    with pytest.raises(InvalidOperation):
        s.abort_transaction()
    s.start_transaction()
    with pytest.raises(InvalidOperation):
        s.start_transaction()
    s.commit_transaction()
    s.commit_transaction()  # committing again is allowed (retry)
    with pytest.raises(InvalidOperation):
        s.abort_transaction()
    other = EmbeddedClient()
    with pytest.raises(InvalidOperation):
        other.db.x.insert_one({}, session=s)
    s.end_session()
    assert s.has_ended
    with pytest.raises(InvalidOperation):
        client.db.orders.find_one({}, session=s)


def test_collection_replaced_outside_is_a_conflict(client):
    """Manual, *Transactions* (operations that conflict with an open transaction): if ``$out`` replaces a
    collection the transaction wrote to, the transaction cannot commit (WriteConflict), and the replaced
    collection is left as ``$out`` wrote it."""
    orders = client.db.orders
    s = client.start_session()
    s.start_transaction()
    orders.insert_one({"sku": "t", "qty": 1}, session=s)
    client.db.inventory.aggregate([{"$project": {"sku": 1}}, {"$out": "orders"}])
    with pytest.raises(OperationFailure) as ei:
        s.commit_transaction()
    assert ei.value.code == 112
    assert [d["sku"] for d in orders.find()] == ["abc123"]
    assert "sku_1" in orders.index_information()


def test_random_transactions_keep_indexes_consistent():
    """Engine invariant behind every transaction example: after any mix of committed and aborted
    transactions interleaved with outside writes, each index holds exactly the keys of the stored documents
    (multikey and unique included), and the data equals the same writes replayed without transactions."""
    import random

    from pymongo.errors import PyMongoError
    rnd = random.Random(11)
    client, plain = EmbeddedClient(), EmbeddedClient()
    for cl in (client, plain):
        cl.db.t.create_index("k", unique=True, sparse=True)
        cl.db.t.create_index([("tags", 1), ("n", -1)])
    c, p = client.db.t, plain.db.t

    def op(coll, session=None):
        kind = rnd.random()
        i = rnd.randrange(40)
        if kind < 0.4:
            coll.update_one({"_id": i}, {"$set": {"n": rnd.randrange(5), "tags": [rnd.randrange(3)] * rnd.randrange(3)}},
                            upsert=True, session=session)
        elif kind < 0.6:
            coll.delete_one({"_id": i}, session=session)
        elif kind < 0.8:
            coll.update_one({"_id": i}, {"$set": {"k": rnd.randrange(60)}}, session=session)
        else:
            coll.update_many({"n": rnd.randrange(5)}, {"$inc": {"n": 1}}, session=session)

    for round_ in range(25):
        s = client.start_session()
        s.start_transaction()
        state_rnd = rnd.getstate()
        try:
            for _ in range(5):
                op(c, s)
            commit = rnd.random() < 0.7
            if commit:
                s.commit_transaction()
            else:
                s.abort_transaction()
        except PyMongoError:
            commit = False
            if s.in_transaction:
                s.abort_transaction()
        if commit:  # replay the same operations on the plain client
            after = rnd.getstate()
            rnd.setstate(state_rnd)
            for _ in range(5):
                op(p)
            rnd.random()
            rnd.setstate(after)
        st = c._store
        for ix in st.ix.values():
            expected = sorted((k, rid) for rid, d in st.docs.items() for k in ix.keys_for(d)[0])
            assert expected == ix.entries, (round_, ix.spec.name)
        assert list(c.find().sort("_id", 1)) == list(p.find().sort("_id", 1)), round_
