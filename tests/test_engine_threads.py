"""One embedded client used from several threads keeps every write and consistent indexes.

Source of the rule: pymongo's documentation ("MongoClient is thread-safe ... a single client can be shared by
threads") and the server's per-document atomicity (manual "Atomicity and Transactions": a write to one
document is atomic; ``$inc`` from concurrent clients never loses increments). Issue 13 reproduced 5,114 of
12,000 threaded inserts kept and 6,716 of 12,000 ``$inc``.

The threads switch very often (``sys.setswitchinterval``) so that interleavings inside the engine would
happen if the boundary's lock did not serialize operations. No timing is asserted; only counts and index
contents.
"""
from __future__ import annotations

import sys
import threading

import pytest
from pymongo.errors import DuplicateKeyError, OperationFailure

from labkit.engine import EmbeddedClient


@pytest.fixture(autouse=True)
def fast_switching():
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(old)


def run_threads(target, n: int = 4) -> None:
    errors: list[BaseException] = []

    def wrap(i: int) -> None:
        try:
            target(i)
        except BaseException as e:  # surfaced below: a thread's failure fails the test
            errors.append(e)

    ts = [threading.Thread(target=wrap, args=(i,)) for i in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors[:3]


def assert_consistent(coll) -> None:
    """Every index holds exactly the keys of the stored documents (and the _id map matches)."""
    st = coll._store
    for ix in st.ix.values():
        expected = sorted((k, rid) for rid, d in st.docs.items() for k in ix.keys_for(d)[0])
        assert expected == ix.entries, ix.spec.name
    assert len(st.rid_by_key) == len(st.docs) == len(st._documents)


def test_threaded_insert_one_keeps_every_document():
    c = EmbeddedClient().t.c
    c.create_index("k")

    def work(i: int) -> None:
        for j in range(3000):
            c.insert_one({"k": j, "t": i})

    run_threads(work)
    assert c.count_documents({}) == 12000
    assert c.count_documents({"k": 7}) == 4
    assert_consistent(c)


def test_threaded_inc_loses_nothing():
    c = EmbeddedClient().t.c
    c.insert_one({"_id": 1, "n": 0})

    def work(i: int) -> None:
        for _ in range(3000):
            c.update_one({"_id": 1}, {"$inc": {"n": 1}})

    run_threads(work)
    assert c.find_one({"_id": 1})["n"] == 12000


def test_threaded_unique_index_admits_one_winner():
    c = EmbeddedClient().t.c
    c.create_index("u", unique=True)
    wins = []

    def work(i: int) -> None:
        for j in range(500):
            try:
                c.insert_one({"u": j, "t": i})
                wins.append(j)
            except DuplicateKeyError:
                pass

    run_threads(work)
    assert sorted(wins) == list(range(500))  # each key inserted by exactly one thread
    assert c.count_documents({}) == 500
    assert_consistent(c)


def test_mixed_workload_keeps_indexes_consistent():
    client = EmbeddedClient()
    c = client.t.c
    c.insert_many([{"_id": i, "a": i % 17, "b": [i % 3, i % 5], "n": 0} for i in range(600)])
    c.create_index([("a", 1), ("n", -1)])
    c.create_index("b")
    done = {"txn": 0, "conflicts": 0}

    def work(i: int) -> None:
        for j in range(300):
            k = i * 150 + j % 150  # each thread deletes and re-inserts only its own _ids
            r = j % 6
            if r == 0:
                c.update_many({"a": k % 17}, {"$inc": {"n": 1}})
            elif r == 1:
                c.delete_one({"_id": k})
                c.insert_one({"_id": k, "a": k % 17, "b": [k % 3], "n": 0})
            elif r == 2:
                docs = list(c.find({"a": k % 17}).sort("n", -1).limit(5))
                assert all(d["a"] == k % 17 for d in docs)
            elif r == 3:
                c.replace_one({"_id": k}, {"a": k % 17, "b": [k % 5, 9], "n": j})
            elif r == 4 and j % 60 == 4:
                name = c.create_index("x%d" % i)
                c.drop_index(name)
            elif r == 5:
                with client.start_session() as s:
                    try:
                        with s.start_transaction():
                            c.update_one({"_id": k}, {"$inc": {"n": 100}}, session=s)
                            c.insert_one({"_id": 10_000 + i * 1000 + j, "a": 1, "b": [], "n": 0}, session=s)
                        done["txn"] += 1
                    except OperationFailure as e:
                        assert e.code == 112  # WriteConflict only (a concurrent write to the same document)
                        done["conflicts"] += 1

    run_threads(work)
    assert_consistent(c)
    assert done["txn"] + done["conflicts"] == 4 * 50
    # committed transactions' inserts are all there, and nothing else beyond the 600 ids
    extra = c.count_documents({"_id": {"$gte": 10_000}})
    assert extra == done["txn"]
    assert c.count_documents({"_id": {"$lt": 600}}) == 600
    # the index answers agree with a full scan
    for a in range(17):
        assert sorted(d["_id"] for d in c.find({"a": a})) == \
            sorted(d["_id"] for d in c.find({"a": a}).hint({"$natural": 1}))


def test_clients_sharing_a_store_share_the_lock():
    base = EmbeddedClient()
    other = EmbeddedClient(_store=base._store)
    c1, c2 = base.t.c, other.t.c

    def work(i: int) -> None:
        coll = c1 if i % 2 else c2
        for j in range(2000):
            coll.insert_one({"i": i, "j": j})

    run_threads(work)
    assert c1.count_documents({}) == 8000
    assert_consistent(c1)
