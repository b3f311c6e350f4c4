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
from labkit.engine.catalog import collection as C
from labkit.engine.update import update_fast as F

from store_checks import update_and_profile

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


def _collection(client, index, unique, validator):
    """``client.db.c``, with a validator on ``b``'s type and an index on ``index`` when asked."""
    if validator:
        client.db.create_collection("c", validator={"$jsonSchema": {"properties": {"b": {
            "bsonType": ["int", "long", "double"]}}}}, validationAction="error")
    coll = client.db.c
    if index:
        coll.create_index(index, unique=unique)
    return coll


def _run(docs, upd, flt, many, index, validator, big):
    client = EmbeddedClient()
    db = client.db
    coll = _collection(client, index, False, validator)
    for i, d in enumerate(docs):
        d = dict(d, _id=i)
        if big and i == 0:
            d["pad"] = ""
            d["pad"] = "x" * (16 * 1024 * 1024 - 2 - len(bson.encode(d)))  # 2 bytes below 16 MiB: growing fails
        try:
            coll.insert_one(d)
        except PyMongoError:
            pass
    out, prof = update_and_profile(db, coll, flt, upd, many, ("keysInserted", "keysDeleted", "nMatched",
                                                              "nModified", "errCode", "errMsg"))
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
    from labkit.engine.update import update_ops as U

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


# ------------------------------------------------------------------------------------------------------------
# The batch loop of multi-updates (update_fast.run_lean) and the record-id-only plan run (planner.plan_and_run's
# ``rids``, ``_fetch_forward``) against the general path with the stepped plan: documents, counts, errors,
# profiler entries (keysExamined/docsExamined/planSummary of the stepped run), $indexStats accesses and the
# command monitoring events. Facts: manual "db.collection.updateMany()" (a multi-update is not atomic: documents
# updated before an error stay updated; nMatched/nModified), "Database Profiler Output" (keysExamined,
# docsExamined, planSummary, nMatched, nModified, keysInserted, keysDeleted), "$indexStats" (accesses.ops),
# "Write Concern" (w: 2 on a one-member set: writeConcernError after the write),
# jstests/core/write/update/update_arrayFilters.js (arrayFilters with $[<id>]),
# jstests/core/write/update/update_currentdate_examples.js ($currentDate), jstests/core/index/index_stats.js.

from pymongo.write_concern import WriteConcern  # noqa: E402

from labkit.engine.query import planner as P  # noqa: E402
from recording import EventRecorder  # noqa: E402


_Rec = EventRecorder  # tests/recording.py


BATCH_FILTERS = [{}, {"k": 1}, {"k": {"$gte": 0}}, {"k": {"$lt": 1}}, {"k": {"$in": [0, 1, "a"]}},
                 {"a": {"$exists": True}}, {"k": 1, "a": {"$ne": None}}]


def _run_batch(*args):
    ids = iter(range(1, 10 ** 6))
    with mock.patch.object(C, "new_object_id", lambda: bson.ObjectId(b"%012d" % next(ids))):
        return _run_batch_inner(*args)  # upserted _ids: the same on both paths


def _run_batch_inner(docs, upd, flt, index, unique, validator, wc, txn, upsert, af, n_copies):
    rec = _Rec()
    client = EmbeddedClient(event_listeners=[rec])
    db = client.db
    coll = _collection(client, index, unique, validator)
    rows = [dict(d, _id=i) for i, d in enumerate(docs * n_copies)]
    for d in rows:
        try:
            coll.insert_one(d)
        except PyMongoError:
            pass
    db.command("profile", 2)
    rec.events.clear()
    target = coll.with_options(write_concern=WriteConcern(w=2)) if wc else coll
    kw = {"upsert": upsert}
    if af:
        kw["array_filters"] = [{"e": {"$gt": 0}}]
    try:
        if txn:
            with client.start_session() as s:
                with s.start_transaction():
                    r = target.update_many(flt, upd, session=s, **kw)
        else:
            r = target.update_many(flt, upd, **kw)
        out = ("ok", r.matched_count, r.modified_count, r.upserted_id is not None)
    except PyMongoError as e:
        out = ("error", type(e).__name__, getattr(e, "code", None), str(e))
    prof = [{k: v for k, v in p.items() if k in ("keysExamined", "docsExamined", "planSummary", "nMatched",
                                                  "nModified", "keysInserted", "keysDeleted", "errCode",
                                                  "errMsg", "upsert")}
            for p in db.system.profile.find({"op": "update"})]
    stats = sorted((s["name"], s["accesses"]["ops"]) for s in coll.aggregate([{"$indexStats": {}}]))
    events = [(kind, name, {k: v for k, v in body.items() if k not in ("operationTime", "$clusterTime")})
              for kind, name, body in rec.events if name == "update"]
    db.command("profile", 0)
    return out, prof, stats, repr(events), _state(coll)


def _general(fn):
    """Run ``fn`` with the batch loop, the scalar shortcut and the record-id-only plan run all switched off."""
    with mock.patch.object(C, "scalar_plan", lambda compiled, af=None: None), \
            mock.patch.object(P, "_fetch_forward", lambda root, store, results: False), \
            mock.patch.object(P.Query, "rids_only", False):
        return fn()


@st.composite
def batch_updates(draw):
    kind = draw(st.sampled_from(["scalar", "scalar", "scalar", "currentDate", "push", "arrayFilters"]))
    if kind == "scalar":
        return draw(updates()), False
    if kind == "currentDate":
        return {"$currentDate": {"a": True}, "$inc": {"k": 1}}, False
    if kind == "push":
        return {"$push": {"c": 1}}, False
    return {"$set": {"c.$[e]": 0}}, True


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(docs=docs_st, upd=batch_updates(), flt=st.sampled_from(BATCH_FILTERS),
       index=st.sampled_from([None, "a", "k", "b"]), unique=st.booleans(), validator=st.booleans(),
       wc=st.booleans(), txn=st.booleans(), upsert=st.booleans(), n_copies=st.sampled_from([1, 3]))
def test_batch_update_equals_general_path(docs, upd, flt, index, unique, validator, wc, txn, upsert, n_copies):
    upd, af = upd
    args = (docs, upd, flt, index, unique and index is not None, validator, wc, txn, upsert, af, n_copies)
    import datetime
    with mock.patch.object(C.U, "_now", lambda: datetime.datetime(2026, 1, 1, 12, 0)):  # $currentDate's time
        fast = _run_batch(*args)
        slow = _general(lambda: _run_batch(*args))
    assert repr(fast) == repr(slow)


def test_batch_update_stops_at_an_error_midway():
    """A multi-update is not atomic (manual "db.collection.updateMany()": documents updated before an error stay
    updated): the batch loop does documents 0..2, hands document 3 (a string: $inc fails with 14,
    jstests/core/write/update/update_inc*.js) to the general path, which raises; documents 4.. stay as they were."""
    def run():
        coll = EmbeddedClient().db.c
        coll.insert_many([{"_id": i, "n": "s" if i == 3 else i} for i in range(8)])
        try:
            coll.update_many({}, {"$inc": {"n": 1}})
        except PyMongoError as e:
            err = (type(e).__name__, e.code)
        return err, [d["n"] for d in coll.find()]
    fast = run()
    assert fast == (("WriteError", 14), [1, 2, 3, "s", 4, 5, 6, 7])
    assert fast == _general(run)


def test_batch_update_unique_violation_midway():
    """An update of a unique-indexed field is not lean: the violation (E11000, code 11000) comes after the
    documents before it were updated, the same on both paths."""
    def run():
        coll = EmbeddedClient().db.c
        coll.create_index("u", unique=True)
        coll.insert_many([{"_id": i, "u": i * 2, "k": 1} for i in range(6)])
        try:
            coll.update_many({"k": 1}, {"$inc": {"u": 1}})
            err = None
        except PyMongoError as e:
            err = (type(e).__name__, e.code)
        coll.update_many({"k": 1}, {"$set": {"u": 5}})  # noqa - second one collides at once
        return err, [d["u"] for d in coll.find()]
    try:
        fast = run()
    except PyMongoError as e:
        fast = repr(e)
    try:
        slow = _general(run)
    except PyMongoError as e:
        slow = repr(e)
    assert fast == slow


def test_batch_loop_is_taken_and_counters_match_the_stepped_scan():
    """The batch loop runs (no per-document apply_scalar call) and the IXSCAN/FETCH figures of the profiler
    equal the stepped scan's."""
    def run(check_path):
        client = EmbeddedClient()
        db = client.db
        coll = db.c
        coll.create_index("k")
        coll.insert_many([{"_id": i, "k": i % 4, "n": i} for i in range(400)])
        db.command("profile", 2)
        if check_path:
            with mock.patch.object(C, "apply_scalar", side_effect=AssertionError("per-document path")):
                r = coll.update_many({"k": 2}, {"$inc": {"n": 1}})
        else:
            r = coll.update_many({"k": 2}, {"$inc": {"n": 1}})
        p = db.system.profile.find_one({"op": "update"})
        return r.matched_count, r.modified_count, p["keysExamined"], p["docsExamined"], p["planSummary"]
    fast = run(True)
    assert fast == (100, 100, 100, 100, "IXSCAN { k: 1 }")
    assert fast == _general(lambda: run(False))


def test_run_lean_cases():
    """run_lean's own answers: where it stops and what it counts."""
    def plan(u):
        from labkit.engine.update import update_ops as U
        return F.scalar_plan(U.Update(u, None, None))
    docs = {1: {"_id": "a", "n": 1}, 2: {"_id": "b", "n": I32 - 1}, 3: {"_id": True, "n": 5}, 5: {"_id": 9, "n": 0}}
    j, m, mod = F.run_lean(plan({"$inc": {"n": 1}}), [1, 4, 2, 3], 0, docs)
    assert (j, m, mod) == (2, 1, 1) and docs[1] == {"_id": "a", "n": 2}  # stops at the int32 overflow
    j, m, mod = F.run_lean(plan({"$inc": {"n": 1}}), [1, 4, 2, 3], 3, docs)
    assert (j, m, mod) == (4, 1, 1) and docs[3] == {"_id": True, "n": 6}
    j, m, mod = F.run_lean(plan({"$inc": {"n": 0}}), [5], 0, docs)
    assert (j, m, mod) == (1, 1, 0)  # matched, not modified
    j, m, mod = F.run_lean(plan({"$set": {"n": 0}, "$unset": {"x": ""}}), [5, 1], 0, docs)
    assert (j, m, mod) == (2, 2, 1) and docs[1]["n"] == 0
    old = docs[5]
    j, m, mod = F.run_lean(plan({"$inc": {"n": 1}}), [5, 1], 0, docs)
    assert (j, m, mod) == (2, 2, 2) and docs[5]["n"] == 1 and old["n"] == 0  # a new version, the old one kept


nums = st.one_of(ints, floats, st.just(Int64(3)), st.just("s"), st.none(), st.booleans())


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(vals=st.lists(nums, min_size=1, max_size=12),
       op=st.sampled_from(["$inc", "$mul", "$set", "$min", "$max"]),
       arg=st.one_of(st.sampled_from([0, 1, -1, 2, 0.0, 1.5, -0.0, float("nan"), float("inf")]), ints, strs),
       flt=st.sampled_from([{}, {"k": 1}, {"k": {"$gte": 1}}]), index_k=st.booleans())
def test_batch_single_operation_equals_general_path(vals, op, arg, flt, index_k):
    """One operation on one numeric field over many documents: the batch loop's inline checks (int32/int64
    width, float no-ops, NaN) against the general path, document by document."""
    if op in ("$inc", "$mul") and type(arg) is str:
        arg = 1
    docs = [{"k": i % 2, "n": v} for i, v in enumerate(vals)]

    def run():
        coll = EmbeddedClient().db.c
        if index_k:
            coll.create_index("k")
        coll.insert_many([dict(d, _id=i) for i, d in enumerate(docs)])
        try:
            r = coll.update_many(flt, {op: {"n": arg}})
            out = ("ok", r.matched_count, r.modified_count)
        except PyMongoError as e:
            out = ("error", type(e).__name__, getattr(e, "code", None), str(e))
        return out, _state(coll)
    assert repr(run()) == repr(_general(run))


def test_batch_set_of_a_longer_string_near_the_size_limit():
    """A $set that grows a string is handed to the general path, which checks the 16 MiB limit (17419,
    jstests/core/write/update/update_document_too_large.js): the first document is 2 bytes below the limit,
    so "abcdef" over "abc" (3 bytes more) fails there, after nothing else was changed."""
    def run():
        coll = EmbeddedClient().db.c
        d = {"_id": 0, "b": "abc", "pad": ""}
        d["pad"] = "x" * (16 * 1024 * 1024 - 2 - len(bson.encode(d)))
        coll.insert_one(d)
        coll.insert_one({"_id": 1, "b": "abc"})
        try:
            coll.update_many({}, {"$set": {"b": "abcdef"}})
            out = None
        except PyMongoError as e:
            out = (type(e).__name__, e.code)
        return out, [x["b"] for x in coll.find({}, {"b": 1})]
    fast = run()
    assert fast == (("WriteError", 17419), ["abc", "abc"])
    assert fast == _general(run)
