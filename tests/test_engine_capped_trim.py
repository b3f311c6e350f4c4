"""Trimming a capped collection, in-process and over TCP: the oldest documents go first, until the data size is
at most ``size`` and the count at most ``max``; only an insert trims (an update that grows a document is trimmed
for at the next insert); a deleted document no longer counts.

Facts from MongoDB: the manual's "Capped Collections" page (insertion order kept, the oldest documents removed
to make room, ``size`` and ``max``, 5.0+ updates may change a document's size and deletes are allowed) and the
server's ``CollectionImpl::_cappedDeleteUntilBelowConfiguredMaximum`` (called after an insert: deletes from the
oldest record while the data size is over ``size`` or the count over ``max``). The expected documents come from
that rule applied to the BSON sizes in this test; the engine keeps a running total instead of summing again on
every insert (capped.py ``CappedDocs``), which must give the same documents.
"""
from __future__ import annotations

import itertools

import bson

from both_paths import client, server  # noqa: F401 - fixtures

_NAMES = itertools.count()


def _doc(i: int) -> dict:
    return {"_id": i, "pad": "x" * (i * 7 % 50)}  # sizes vary from 24 to 73 bytes


def _model(ops: list, cap: int, max_docs: int) -> list[int]:
    """The rule, on ``(kind, doc)`` operations: the ``_id``s left, oldest first."""
    held: list[tuple[int, int]] = []  # (_id, size) in insertion order
    for kind, doc in ops:
        if kind == "insert":
            held.append((doc["_id"], len(bson.encode(doc))))
            while held and (sum(s for _, s in held) > cap or len(held) > max_docs):
                held.pop(0)
        elif kind == "update":
            held = [(i, len(bson.encode(doc)) if i == doc["_id"] else s) for i, s in held]
        else:
            held = [(i, s) for i, s in held if i != doc["_id"]]
    return [i for i, _ in held]


def _run(client, cap: int, max_docs: int | None, ops: list) -> list[int]:
    db = client["ct_%d" % next(_NAMES)]
    opts = {"capped": True, "size": cap} | ({"max": max_docs} if max_docs else {})
    db.create_collection("c", **opts)
    for kind, doc in ops:
        if kind == "insert":
            db.c.insert_one(doc)
        elif kind == "update":
            db.c.replace_one({"_id": doc["_id"]}, doc)
        else:
            db.c.delete_one({"_id": doc["_id"]})
    left = list(db.c.find())
    assert sum(len(bson.encode(d)) for d in left) <= cap
    return [d["_id"] for d in left]


def _ops() -> list:
    ops: list = []
    for i in range(300):
        ops.append(("insert", _doc(i)))
        if i % 37 == 5:
            ops.append(("update", {"_id": i - 1, "pad": "y" * 90}))  # grows the newest-but-one document
        if i % 41 == 9:
            ops.append(("delete", {"_id": i - 2}))
    return ops


def test_size_trimming_follows_the_rule(client):
    ops = _ops()
    assert _run(client, 2000, None, ops) == _model(ops, 2000, 10 ** 9)


def test_max_and_size_together(client):
    ops = _ops()
    assert _run(client, 2000, 17, ops) == _model(ops, 2000, 17)
    assert _run(client, 100000, 17, ops) == _model(ops, 100000, 17)
