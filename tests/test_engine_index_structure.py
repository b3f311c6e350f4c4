"""Differential tests of the index entry structure (labkit.engine.index.entrylist.SortedEntries) against a plain
sorted Python list: random inserts, deletes and bulk updates must leave the same order, the same length, the
same positional items and the same ``bisect`` answers (the index scans and every plan figure rely on them).

The structure is internal (no MongoDB semantics of its own); the facts checked are those of Python's ``bisect``
module on a sorted list. Small block sizes are forced so that splits and merges happen with few items.
"""
from __future__ import annotations

import bisect

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from labkit.engine.index import entrylist
from labkit.engine.index.entrylist import SortedEntries

keys = st.tuples(st.tuples(st.binary(max_size=3)), st.integers(0, 60))
ops = st.lists(st.one_of(
    st.tuples(st.just("add"), keys),
    st.tuples(st.just("remove"), keys),
    st.tuples(st.just("remove_existing"), st.integers(0, 10 ** 6)),
    st.tuples(st.just("insert_at"), keys),
    st.tuples(st.just("update"), st.lists(keys, max_size=30)),
), max_size=120)


@pytest.fixture(params=[2, 4, 512])
def load(request, monkeypatch):
    monkeypatch.setattr(entrylist, "LOAD", request.param)
    return request.param


@pytest.fixture(params=[False, True], ids=["tuple-keys", "one-field-keys"])
def one(request):
    """Both key column layouts: key tuples, and the bare component of one-field keys."""
    return request.param


def _check_same(se: SortedEntries, ref: list, probes: list) -> None:
    assert len(se) == len(ref)
    assert list(se) == ref
    assert list(reversed(se)) == ref[::-1]
    for i in range(len(ref)):
        assert se[i] == ref[i]
        assert se[-i - 1] == ref[-i - 1]
    n = len(ref)
    for a, b in ((0, n), (1, n - 1), (n // 3, 2 * n // 3 + 1), (n // 2, n // 2), (2, 1), (-3, n + 5)):
        assert se[a:b] == ref[a:b]
        if 0 <= a <= b <= n:
            assert se.items_between(a, b) == ref[a:b]
    for p in probes:
        assert se.bisect_left(p) == bisect.bisect_left(ref, p)
        assert se.bisect_right(p) == bisect.bisect_right(ref, p)
        for lo in (0, len(ref) // 2, len(ref)):
            assert se.bisect_left(p, lo) == bisect.bisect_left(ref, p, lo)
        assert list(se.first_ge(p)) == ref[bisect.bisect_left(ref, p):]
    if ref:
        assert se.last() == ref[-1]
    # the blocks themselves: two parallel columns of equal length, no empty block, each block's max recorded,
    # no pair tuple kept per entry (the columns hold the key tuples and record ids themselves)
    assert len(se._keys) == len(se._rids) == len(se._maxes)
    assert all(se._keys), "empty block"
    assert [len(kb) for kb in se._keys] == [len(rb) for rb in se._rids]
    assert se._maxes == [((kb[-1],) if se.one_field else kb[-1], rb[-1]) for kb, rb in zip(se._keys, se._rids)]
    assert all(len(kb) <= 2 * entrylist.LOAD for kb in se._keys)
    flat_k = [(k,) if se.one_field else k for kb in se._keys for k in kb]
    assert flat_k == [k for k, _ in ref] and [r for rb in se._rids for r in rb] == [r for _, r in ref]
    for i in range(len(ref)):
        assert se.key_at(i) == ref[i][0] and se.rid_at(i) == ref[i][1]
    for a, b in ((0, n), (n // 3, min(n, 2 * n // 3 + 1)), (n // 2, n // 2)):
        assert se.rids_between(a, b) == [r for _, r in ref[a:b]]
    assert SortedEntries.from_columns([k for k, _ in ref], [r for _, r in ref], se.one_field) == ref
    if se.one_field:  # no 1-tuple kept per entry: the column holds the components themselves
        assert all(type(k) is bytes for kb in se._keys for k in kb)


def _run(load_size: int, start: list, program: list, one: bool = False) -> None:
    start = sorted(set(start))
    se = SortedEntries(start, one)
    ref = list(start)
    probes = []
    for op, arg in program:
        if op == "add":
            se.add(arg)
            bisect.insort(ref, arg)
            probes.append(arg)
        elif op == "insert_at":
            loc = se.locate(arg)
            se.insert_at(loc, arg)
            ref.insert(bisect.bisect_left(ref, arg), arg)
            probes.append(arg)
        elif op == "remove":
            present = arg in ref
            assert se.remove(arg) is present
            if present:
                ref.remove(arg)
            probes.append(arg)
        elif op == "remove_existing":
            if ref:
                x = ref[arg % len(ref)]
                assert se.remove(x) is True
                ref.remove(x)
        else:
            batch = sorted(arg)
            se.update(batch)
            ref = sorted(ref + batch)
        # positional access right after a change (the cached block must not be stale)
        if ref:
            assert se[len(ref) // 2] == ref[len(ref) // 2]
    # probes as the scans build them: (key,) and (key, rid), (key + HIGH,) for exclusive bounds (longer than
    # the one-field keys), and the empty key
    extra = [((b"",),), ((b"\xff" * 4,),), ((b"\x01",), 30), ((),), ((b"\x01", b"\xff"),), ((b"", b"\xff"),)]
    extra += [((k[0], b"\xff"),) for k, _ in ref[:5]] + [((k[0], b"\xff"), 3) for k, _ in ref[-5:]]
    _check_same(se, ref, probes + extra)
    cp = se.copy()
    if ref:
        cp.remove(ref[0])
        assert list(se) == ref  # the copy is independent


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(start=st.lists(keys, max_size=40), program=ops)
def test_matches_sorted_list(load, one, start, program):
    if not one:  # key tuples of two components (a compound index), the second repeating the first's head
        def two(e):
            return ((e[0][0], e[0][0][:1]), e[1])
        start = [two(e) for e in start]
        program = [(op, [two(e) for e in arg] if op == "update" else two(arg) if op != "remove_existing" else arg)
                   for op, arg in program]
    _run(load, start, program, one)


def test_bulk_merge_and_many_blocks(load, one):
    # a bulk update as large as the index takes the merge path; a small one inserts one by one
    se = SortedEntries([((bytes([i % 7]),), i) for i in sorted(range(0, 400, 2), key=lambda i: (i % 7, i))], one)
    ref = list(se)
    big = sorted(((bytes([i % 7]),), i) for i in range(1, 400, 2))
    se.update(big)
    ref = sorted(ref + big)
    small = sorted(((bytes([i % 7]),), i) for i in range(1000, 1005))
    se.update(small)
    ref = sorted(ref + small)
    _check_same(se, ref, [((bytes([k]),),) for k in range(8)])
    # delete all but a few: blocks merge, answers stay right
    for x in ref[3:-3]:
        assert se.remove(x)
    ref = ref[:3] + ref[-3:]
    _check_same(se, ref, [((bytes([k]),),) for k in range(8)])
    assert se == ref


def test_index_keeps_entries_structure():
    # Index.entries accepts a sorted list (as index builds and transaction copies assign) and wraps it
    from labkit.engine.index.indexes import Index, IndexSpec
    ix = Index(IndexSpec("a_1", [("a", 1)]))
    ix.entries = [((b"a",), 1), ((b"b",), 2)]
    assert isinstance(ix.entries, SortedEntries)
    ix.add([(b"ab",)], 3)
    assert list(ix.entries) == [((b"a",), 1), ((b"ab",), 3), ((b"b",), 2)]
    ix.remove([(b"a",)], 1)
    assert ix.entries == [((b"ab",), 3), ((b"b",), 2)]


def test_unique_place_finds_other_record():
    from labkit.engine.index.indexes import Index, IndexSpec
    ix = Index(IndexSpec("a_1", [("a", 1)], unique=True))
    for i, k in enumerate([b"a", b"c", b"e"]):
        loc, other = ix.place((k,), i + 1)
        assert other is None
        ix.insert_at(loc, (k,), i + 1)
    assert ix.place((b"c",), 9)[1] == 2  # another record holds this key
    assert ix.place((b"c",), 2)[1] is None  # the same record
    loc, other = ix.place((b"d",), 9)
    assert other is None
    ix.insert_at(loc, (b"d",), 9)
    assert [k for k, _ in ix.entries] == [(b"a",), (b"c",), (b"d",), (b"e",)]


# -- the record store's maps (issue 19: one view instead of a third map) ----------------------------------------
# MongoDB facts used below: the manual's "Transactions" page (read isolation: writes made in a transaction are
# not visible outside it until it commits; an aborted transaction's writes are discarded) and "Write Conflicts"
# (a document changed outside the transaction after its snapshot makes the commit fail with WriteConflict, 112).

def _store_consistent(st) -> None:
    """``_documents`` is exactly ``_id`` key -> document through ``rid_by_key`` and ``docs`` (same objects)."""
    view = st._documents
    assert len(view) == len(st.docs) == len(st.rid_by_key)
    assert list(view) == list(st.rid_by_key)
    for sk, rid in st.rid_by_key.items():
        assert view[sk] is st.docs[rid] and view.get(sk) is st.docs[rid] and sk in view
    assert [d["_id"] for d in view.values()] == [d["_id"] for d in st.docs.values()]
    assert "no-such-id" not in view and view.get("no-such-id", 7) == 7
    # every index holds one entry per document here (no sparse/multikey indexes in these tests)
    for ix in st.ix.values():
        assert sorted(r for _, r in ix.entries) == sorted(st.docs)


def test_documents_view_follows_writes():
    from pymongo.errors import OperationFailure
    from labkit.engine import EmbeddedClient
    coll = EmbeddedClient().t.c
    coll.create_index("a")
    coll.insert_many([{"_id": i, "a": i % 3} for i in range(10)])
    coll.insert_one({"_id": "x", "a": 1})
    coll.update_many({"a": 1}, {"$inc": {"n": 1}})
    coll.replace_one({"_id": 2}, {"a": 9})
    coll.delete_many({"a": 0})
    st = coll._store
    _store_consistent(st)
    assert sorted(map(str, st._documents)) == sorted(map(str, [1, 2, 4, 5, 7, 8, "x"]))
    assert st._documents[2] == {"_id": 2, "a": 9}
    with pytest.raises(OperationFailure):
        st._documents["new"] = {"_id": "new"}  # a new document needs a record id: store.put
    assert "new" not in st._documents
    coll.drop()
    assert len(coll._store._documents) == 0 and coll.count_documents({}) == 0


def test_transaction_snapshot_isolation_with_the_view():
    from pymongo.errors import OperationFailure
    from labkit.engine import EmbeddedClient
    client = EmbeddedClient()
    coll = client.t.c
    coll.create_index("a")
    coll.insert_many([{"_id": i, "a": i} for i in range(20)])
    live = coll._store
    s = client.start_session()
    s.start_transaction()
    coll.insert_one({"_id": 100, "a": 100}, session=s)
    coll.update_one({"_id": 3}, {"$set": {"a": -3}}, session=s)
    coll.delete_one({"_id": 4}, session=s)
    # outside the transaction: nothing of it visible, in the documents or through the index
    assert coll.count_documents({}) == 20 and coll.find_one({"_id": 100}) is None
    assert coll.find_one({"a": -3}) is None and coll.find_one({"_id": 4}) is not None
    assert live._documents.get(100) is None and live._documents[3]["a"] == 3
    _store_consistent(live)
    # inside: the snapshot plus the transaction's own writes
    assert coll.count_documents({}, session=s) == 20
    assert coll.find_one({"a": -3}, session=s)["_id"] == 3
    assert coll.find_one({"_id": 4}, session=s) is None
    s.commit_transaction()
    _store_consistent(coll._store)
    assert coll.count_documents({}) == 20 and coll.find_one({"a": 100})["_id"] == 100
    assert coll.find_one({"a": -3})["_id"] == 3 and coll.find_one({"_id": 4}) is None
    # an aborted transaction leaves the live maps as they were
    s.start_transaction()
    coll.delete_many({}, session=s)
    s.abort_transaction()
    assert coll.count_documents({}) == 20
    _store_consistent(coll._store)
    # a document changed outside after the snapshot: the transaction's write to it fails (WriteConflict, as on
    # a replica set: jstests/core/txns/write_conflicts_with_non_txns.js) and the transaction applies nothing
    s.start_transaction()
    coll.update_one({"_id": 6}, {"$set": {"a": 66}}, session=s)  # the snapshot is taken here
    coll.update_one({"_id": 5}, {"$set": {"a": 56}})
    with pytest.raises(OperationFailure) as e:
        coll.update_one({"_id": 5}, {"$set": {"a": 55}}, session=s)
    assert e.value.code == 112
    s.abort_transaction()
    assert coll.find_one({"_id": 5})["a"] == 56 and coll.find_one({"_id": 6})["a"] == 6
    _store_consistent(coll._store)
