"""Top-level scalar operator updates made without the general update walk equal the general path (issue 19).

``update_fast.apply_scalar`` makes the new version of a document for ``$set``/``$inc``/``$mul``/``$min``/
``$max``/``$unset`` on top-level fields when the document cannot grow, and hands anything else back to the
general path (``update_ops``). Semantics checked here come from the manual's update operator pages
($inc: "increments a field by a specified value", on a missing field creates it, on a non-numeric field
fails (jstests/core/write/update/update_inc*.js: TypeMismatch 14); $mul on a missing field sets 0 of the
argument's type; $min/$max compare with BSON order; a no-op update is matched but not modified (manual
"db.collection.updateMany() - Output": nModified); the 16 MiB limit gives 17419 (jstests
core/write/update/update_document_too_large.js); an int32 that overflows becomes int64
(jstests/core/write/update/update_inc_number_overflow.js)). Each run is compared with the general path
(``scalar_plan`` patched to refuse): stored bytes (BSON types and field order), counts, index entries,
profiler write counters and errors.
"""
from __future__ import annotations

from unittest import mock

import bson
from bson.int64 import Int64
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import PyMongoError

from labkit.engine import EmbeddedClient
from labkit.engine import collection as C
from labkit.engine import update_fast as F

I32, I64 = 2 ** 31, 2 ** 63
ints = st.sampled_from([0, 1, -1, 7, I32 - 1, I32 - 2, -I32, I32, I64 - 1, -I64, 2 ** 40])
floats = st.sampled_from([0.0, -0.0, 1.5, -2.25, float("nan"), float("inf"), float("-inf"), 1e308])
strs = st.sampled_from(["", "a", "abc", "zz", "é", "日本", "abcdef"])
scalars = st.one_of(ints, floats, strs, st.booleans(), st.none(), st.just(Int64(5)), st.just([1, 2]),
                    st.just({"x": 1}))
FIELDS = ["a", "b", "c", "k"]
docs_st = st.lists(st.dictionaries(st.sampled_from(FIELDS), scalars, max_size=4), min_size=1, max_size=10)


@st.composite
def updates(draw):
    out: dict = {}
    for f in draw(st.lists(st.sampled_from(FIELDS), min_size=1, max_size=3, unique=True)):
        op = draw(st.sampled_from(["$set", "$inc", "$mul", "$min", "$max", "$unset"]))
        if op in ("$inc", "$mul"):
            arg = draw(st.one_of(ints, floats, st.just(Int64(2))))
        elif op == "$unset":
            arg = ""
        else:
            arg = draw(scalars)
        out.setdefault(op, {})[f] = arg
    return out


def _state(coll):
    st_ = coll._store
    docs = [bson.encode(d) for _, d in sorted(st_.docs.items())]
    by_key = sorted(bson.encode(d) for d in st_._documents.values())
    ents = {name: list(ix.entries) for name, ix in st_.ix.items()}
    return docs, by_key, ents


def _run(docs, upd, flt, many, index, validator, big):
    client = EmbeddedClient()
    db = client.db
    if validator:
        db.create_collection("c", validator={"$jsonSchema": {"properties": {"b": {"bsonType": ["int", "long",
                                                                                             "double"]}}}},
                             validationAction="error")
    coll = db.c
    if index:
        coll.create_index(index)
    for i, d in enumerate(docs):
        d = dict(d, _id=i)
        if big and i == 0:
            d["pad"] = ""
            d["pad"] = "x" * (16 * 1024 * 1024 - 2 - len(bson.encode(d)))  # 2 bytes below 16 MiB: growing fails
        try:
            coll.insert_one(d)
        except PyMongoError:
            pass
    db.command("profile", 2)
    try:
        r = (coll.update_many if many else coll.update_one)(flt, upd)
        out = ("ok", r.matched_count, r.modified_count)
    except PyMongoError as e:
        out = ("error", type(e).__name__, getattr(e, "code", None), str(e))
    prof = [{k: v for k, v in p.items() if k in ("keysInserted", "keysDeleted", "nMatched", "nModified",
                                                  "errCode", "errMsg")}
            for p in db.system.profile.find({"op": "update"})]
    return out, prof, _state(coll)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(docs=docs_st, upd=updates(), k=st.one_of(st.none(), st.sampled_from([0, 1, "a"])), many=st.booleans(),
       index=st.sampled_from([None, "a", "k", "z"]), validator=st.booleans())
def test_scalar_update_equals_general_path(docs, upd, k, many, index, validator):
    flt = {} if k is None else {"k": k}
    fast = _run(docs, upd, flt, many, index, validator, False)
    with mock.patch.object(C, "scalar_plan", lambda compiled, af=None: None):
        slow = _run(docs, upd, flt, many, index, validator, False)
    assert repr(fast) == repr(slow)  # repr: NaN == NaN, -0.0 vs 0.0 kept apart


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(upd=st.one_of(updates(), st.just({"$inc": {"k": 1}}), st.just({"$set": {"b": "abcd"}})))
def test_scalar_update_near_the_size_limit_equals_general_path(upd):
    docs = [{"a": 1, "b": "abc", "c": 1.5, "k": I32 - 1}, {"a": "x"}]  # k + 1 is an int64: 4 bytes more
    fast = _run(docs, upd, {}, True, None, False, True)
    with mock.patch.object(C, "scalar_plan", lambda compiled, af=None: None):
        slow = _run(docs, upd, {}, True, None, False, True)
    assert repr(fast) == repr(slow)


def test_apply_scalar_cases():
    """The shortcut's own answers: made directly, a no-op, or handed back (FALLBACK)."""
    from labkit.engine import update_ops as U

    def plan(u):
        return F.scalar_plan(U.Update(u, None, None))

    assert F.apply_scalar(plan({"$inc": {"n": 1}}), {"_id": 1, "n": 5}) == {"_id": 1, "n": 6}
    assert F.apply_scalar(plan({"$inc": {"n": 0}}), {"_id": 1, "n": 5}) is None          # matched, not modified
    assert F.apply_scalar(plan({"$inc": {"n": 1}}), {"_id": 1, "n": I32 - 1}) is F.FALLBACK  # int32 -> int64
    assert F.apply_scalar(plan({"$inc": {"n": 1}}), {"_id": 1, "n": "s"}) is F.FALLBACK      # error 14 there
    assert F.apply_scalar(plan({"$inc": {"n": 1}}), {"_id": 1}) is F.FALLBACK                # creates the field
    assert F.apply_scalar(plan({"$set": {"s": "ab"}}), {"_id": 1, "s": "abc"}) == {"_id": 1, "s": "ab"}
    assert F.apply_scalar(plan({"$set": {"s": "abcd"}}), {"_id": 1, "s": "abc"}) is F.FALLBACK  # grows
    assert F.apply_scalar(plan({"$unset": {"s": ""}}), {"_id": 1, "s": 1, "t": 2}) == {"_id": 1, "t": 2}
    assert F.apply_scalar(plan({"$max": {"n": 3}}), {"_id": 1, "n": 5}) is None
    assert F.apply_scalar(plan({"$min": {"n": 3}}), {"_id": 1, "n": 5}) == {"_id": 1, "n": 3}
    assert plan({"$set": {"_id": 1}}) is None and plan({"$set": {"a.b": 1}}) is None
    assert plan({"$push": {"a": 1}}) is None and plan({"$set": {"a": {"x": 1}}}) is None
    old = {"_id": 1, "n": 5, "d": {"x": 1}}
    new = F.apply_scalar(plan({"$inc": {"n": 1}}), old)
    assert old == {"_id": 1, "n": 5, "d": {"x": 1}} and new["d"] is old["d"]  # copy on write


def test_scalar_update_is_taken():
    coll = EmbeddedClient().db.c
    coll.insert_many([{"_id": i, "n": i} for i in range(5)])
    with mock.patch.object(C.U.Update, "apply", side_effect=AssertionError("general path")):
        assert coll.update_many({}, {"$inc": {"n": 1}}).modified_count == 5
    assert [d["n"] for d in coll.find()] == [1, 2, 3, 4, 5]
