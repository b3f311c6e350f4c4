"""Fuzzing the operation boundary: random but plausible filters, updates, pipelines and projections only ever
raise pymongo errors (the server would answer each with a result or an error document; a learner never sees a
bare TypeError/KeyError/AttributeError/RecursionError from the engine).

Source of the rule: issue 13 ("nothing raises a bare Python exception to a learner"); the server answers every
malformed request with an error code (manual "Error Codes"). Which code is right for each request is checked
by the rule tests elsewhere; here only the class of what escapes is checked, and that the collection and its
indexes are still consistent afterwards.
"""
from __future__ import annotations

import datetime

import bson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import PyMongoError

from labkit.engine import EmbeddedClient

FIELDS = ["a", "b", "c", "a.x", "b.0", "c.y.z", "_id"]
scalars = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.floats(-2, 2, allow_nan=False),
                    st.sampled_from(["", "x", "ab"]), st.just(datetime.datetime(2024, 1, 1)),
                    st.just(bson.ObjectId("65a000000000000000000001")))
values = st.recursive(scalars, lambda ch: st.one_of(st.lists(ch, max_size=3),
                                                    st.dictionaries(st.sampled_from(["x", "y", "z"]), ch,
                                                                    max_size=2)),
                      max_leaves=6)
docs = st.lists(st.fixed_dictionaries({}, optional={"a": values, "b": values, "c": values}), max_size=6)

QUERY_OPS = ["$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin", "$exists", "$type", "$size", "$all",
             "$elemMatch", "$not", "$regex", "$mod"]
cond = st.one_of(values, st.dictionaries(st.sampled_from(QUERY_OPS), values, min_size=1, max_size=2))
leaf = st.dictionaries(st.sampled_from(FIELDS), cond, max_size=2)
filters = st.recursive(leaf, lambda ch: st.one_of(
    st.builds(lambda xs, op: {op: xs}, st.lists(ch, min_size=1, max_size=2), st.sampled_from(["$and", "$or", "$nor"])),
    st.builds(lambda e: {"$expr": e}, st.sampled_from([{"$eq": ["$a", 1]}, {"$gt": ["$b", "$a"]},
                                                       {"$in": ["$a", [1, 2]]}, {"$add": ["$a", 1]}]))),
    max_leaves=4)

UPDATE_OPS = ["$set", "$unset", "$inc", "$mul", "$min", "$max", "$push", "$addToSet", "$pull", "$pop", "$rename",
              "$currentDate", "$setOnInsert", "$pullAll"]
update_fields = st.sampled_from(["a", "b", "c", "a.x", "b.0", "c.y", "a.$", "b.$[]", "new"])
updates = st.dictionaries(st.sampled_from(UPDATE_OPS), st.dictionaries(update_fields, values, min_size=1, max_size=2),
                          min_size=1, max_size=2)

projections = st.one_of(st.none(), st.dictionaries(st.sampled_from(["a", "b", "a.x", "c", "_id", "b.$"]),
                                                   st.one_of(st.sampled_from([0, 1, True, False]),
                                                             st.just({"$slice": 1}),
                                                             st.just({"$elemMatch": {"x": 1}})), max_size=2))
stages = st.one_of(
    st.builds(lambda f: {"$match": f}, filters),
    st.builds(lambda k: {"$group": {"_id": "$" + k, "n": {"$sum": 1}, "s": {"$sum": "$" + k}}},
              st.sampled_from(["a", "b", "c", "a.x"])),
    st.builds(lambda k, d: {"$sort": {k: d}}, st.sampled_from(["a", "b", "c"]), st.sampled_from([1, -1])),
    st.builds(lambda n: {"$limit": n}, st.integers(1, 3)),
    st.builds(lambda k: {"$unwind": "$" + k}, st.sampled_from(["a", "b", "c"])),
    st.builds(lambda k, v: {"$addFields": {k: v}}, st.sampled_from(["a", "z"]),
              st.one_of(values, st.sampled_from(["$a", {"$add": ["$a", 1]}, {"$concat": ["$a", "x"]},
                                                 {"$size": "$b"}, {"$arrayElemAt": ["$b", 0]}]))),
    st.builds(lambda p: {"$project": p}, st.dictionaries(st.sampled_from(["a", "b", "c.y"]), st.sampled_from([0, 1]),
                                                         min_size=1, max_size=2)),
    st.builds(lambda k: {"$bucketAuto": {"groupBy": "$" + k, "buckets": 2}}, st.sampled_from(["a", "b"])),
)
pipelines = st.lists(stages, max_size=3)

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow],
                    derandomize=True)


def fresh(documents, index: str | None):
    c = EmbeddedClient().f.c
    if documents:
        c.insert_many([dict(d) for d in documents])
    if index:
        try:
            c.create_index(index)
        except PyMongoError:
            pass
    return c


def only_pymongo_errors(fn) -> None:
    try:
        r = fn()
        if hasattr(r, "__iter__") and not isinstance(r, (dict, list)):
            list(r)
    except PyMongoError:
        pass


def assert_consistent(c) -> None:
    st_ = c._store
    for ix in st_.ix.values():
        expected = sorted((k, rid) for rid, d in st_.docs.items() for k in ix.keys_for(d)[0])
        assert expected == ix.entries, ix.spec.name


@SETTINGS
@given(docs, filters, projections, st.sampled_from([None, "a", "b", "a.x"]))
def test_find_raises_only_pymongo_errors(documents, flt, proj, index):
    c = fresh(documents, index)
    only_pymongo_errors(lambda: c.find(flt, proj))
    only_pymongo_errors(lambda: c.find(flt).sort("a", 1))
    only_pymongo_errors(lambda: c.count_documents(flt))
    only_pymongo_errors(lambda: c.distinct("a", flt))


@SETTINGS
@given(docs, filters, updates, st.booleans(), st.sampled_from([None, "a", "b"]))
def test_updates_raise_only_pymongo_errors(documents, flt, upd, upsert, index):
    c = fresh(documents, index)
    only_pymongo_errors(lambda: c.update_many(flt, upd, upsert=upsert))
    only_pymongo_errors(lambda: c.update_one({}, upd))
    only_pymongo_errors(lambda: c.find_one_and_update(flt, upd, upsert=upsert))
    only_pymongo_errors(lambda: c.delete_many(flt))
    assert_consistent(c)


@SETTINGS
@given(docs, pipelines)
def test_pipelines_raise_only_pymongo_errors(documents, pipeline):
    c = fresh(documents, None)
    only_pymongo_errors(lambda: c.aggregate(pipeline))


@SETTINGS
@given(docs, updates)
def test_errors_inside_a_transaction_abort_it(documents, upd):
    client = EmbeddedClient()
    c = client.f.c
    if documents:
        c.insert_many([dict(d) for d in documents])
    with client.start_session() as s:
        s.start_transaction()
        try:
            c.update_many({}, upd, session=s)
        except PyMongoError:
            # the server aborts the transaction: the next operation in it fails with NoSuchTransaction
            try:
                c.insert_one({"after": 1}, session=s)
                raise AssertionError("an operation after a failed one ran in the aborted transaction")
            except PyMongoError as e:
                assert e.code == 251
        finally:
            if s.in_transaction:
                s.abort_transaction()
    assert c.count_documents({"after": 1}) == 0


# ------------------------------------------------------------------------------------- invalid inputs
# Random INVALID requests: operator names in the wrong place, arguments of every wrong type, odd field names,
# deep nesting, extreme numbers. The server rejects each with an error code (or, for some, answers); the
# engine must do the same and never let a TypeError/KeyError/ValueError/AttributeError/IndexError/
# RecursionError escape. Only the places pymongo itself does not check are filled with junk (pymongo raises
# its own TypeError/ValueError for a non-document filter or an update without operators, before any server).
QUERY_OPS_ALL = QUERY_OPS + ["$gt", "$gte", "$lt", "$lte", "$bitsAllSet", "$bitsAnyClear", "$jsonSchema", "$text",
                             "$where", "$near", "$geoWithin", "$comment", "$options", "$expr", "$and", "$or",
                             "$nor", "$sampleRate", "$foo"]
EXPR_OPS = ["$add", "$concat", "$cond", "$ifNull", "$map", "$filter", "$reduce", "$let", "$literal", "$getField",
            "$setField", "$dateToString", "$toInt", "$convert", "$switch", "$arrayElemAt", "$slice", "$divide",
            "$mod", "$substrCP", "$regexMatch", "$sortArray", "$zip", "$objectToArray", "$mergeObjects", "$sum",
            "$bogus"]
STAGE_NAMES = ["$match", "$project", "$addFields", "$set", "$unset", "$group", "$sort", "$limit", "$skip",
               "$unwind", "$lookup", "$facet", "$bucket", "$bucketAuto", "$count", "$replaceRoot", "$replaceWith",
               "$sample", "$sortByCount", "$redact", "$setWindowFields", "$densify", "$fill", "$unionWith",
               "$graphLookup", "$out", "$merge", "$documents", "$indexStats", "$collStats", "$densify", "$nope"]
ODD_NAMES = ["a", "b", "a.x", "", ".", "a..b", "$a", "a.$", "a.$[]", "a.$[i]", "$$ROOT", "$a.b", "_id", "a.0",
             "x" * 3, "a.", "$", "$$", "$[]"]
odd_scalars = st.one_of(
    scalars, st.sampled_from([float("nan"), float("inf"), -float("inf"), bson.Int64(2 ** 63 - 1),
                              bson.Int64(-2 ** 63), bson.Decimal128("NaN"), bson.Decimal128("-Infinity"),
                              bson.Decimal128("1E6144"), bson.Regex("(", ""), bson.Regex("a", "z"), b"\x00\xff",
                              bson.Binary(b"\x01", 5), bson.Timestamp(0, 0), bson.MinKey(), bson.MaxKey(),
                              bson.Code("x"), 2 ** 31, -(2 ** 31) - 1, "$a", "$$NOW", "$$nope", "x" * 40]))
junk = st.recursive(
    odd_scalars,
    lambda ch: st.one_of(
        st.lists(ch, max_size=3),
        st.dictionaries(st.sampled_from(ODD_NAMES + QUERY_OPS_ALL + EXPR_OPS), ch, max_size=3),
    ),
    max_leaves=8,
)
junk_filters = st.one_of(
    st.dictionaries(st.sampled_from(ODD_NAMES + QUERY_OPS_ALL), junk, max_size=3),
    st.builds(lambda op, v: {"a": {op: v}}, st.sampled_from(QUERY_OPS_ALL), junk),
    st.builds(lambda op, v: {"$expr": {op: v}}, st.sampled_from(EXPR_OPS), junk),
)
UPDATE_OPS_ALL = UPDATE_OPS + ["$bit", "$setOnInsert", "$pullAll", "$foo", "$"]
junk_updates = st.one_of(
    st.dictionaries(st.sampled_from(UPDATE_OPS_ALL), st.one_of(junk, st.dictionaries(st.sampled_from(ODD_NAMES), junk,
                                                                                     max_size=2)),
                    min_size=1, max_size=2),
    st.lists(st.dictionaries(st.sampled_from(STAGE_NAMES), junk, min_size=1, max_size=1), min_size=1, max_size=2),
)
junk_pipelines = st.lists(
    st.one_of(st.dictionaries(st.sampled_from(STAGE_NAMES), junk, min_size=1, max_size=2), junk), max_size=3)
junk_projection = st.one_of(st.none(), st.dictionaries(st.sampled_from(ODD_NAMES), junk, max_size=3))
junk_sort = st.lists(st.tuples(st.sampled_from([n for n in ODD_NAMES]), st.one_of(junk, st.sampled_from([1, -1]))),
                     min_size=1, max_size=2)
junk_number = st.one_of(st.integers(-3, 3), odd_scalars)
INVALID = settings(max_examples=int(__import__("os").environ.get("MODEL_EXAMPLES", 60)), deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)


def server_error_or_result(fn) -> None:
    """``fn`` answers, or fails with a pymongo error carrying an int code (a server error)."""
    try:
        r = fn()
        if hasattr(r, "__iter__") and not isinstance(r, (dict, list, str, bytes)):
            list(r)
    except PyMongoError as e:
        code = getattr(e, "code", None)
        assert code is None or isinstance(code, int), e


@INVALID
@given(docs, junk_filters, junk_projection, junk_sort, junk_number, junk_number, st.sampled_from([None, "a", "a.x"]))
def test_invalid_reads_raise_only_server_errors(documents, flt, proj, sort, skip, limit, index):
    c = fresh(documents, index)
    server_error_or_result(lambda: c.find(flt, proj))
    server_error_or_result(lambda: c.find({}, proj).sort(sort))
    server_error_or_result(lambda: c.count_documents(flt, skip=skip))
    server_error_or_result(lambda: c.count_documents({}, limit=limit))
    server_error_or_result(lambda: c.distinct("a", flt))
    server_error_or_result(lambda: c.find(flt).hint([("$natural", 1)]).max_time_ms(10000))
    server_error_or_result(lambda: c.find_one_and_delete(flt, projection=proj))


@INVALID
@given(docs, junk_filters, junk_updates, st.one_of(st.none(), st.lists(junk_filters, max_size=2)), st.booleans())
def test_invalid_writes_raise_only_server_errors(documents, flt, upd, array_filters, upsert):
    c = fresh(documents, "a")
    server_error_or_result(lambda: c.update_many(flt, upd, upsert=upsert, array_filters=array_filters
                                                 if isinstance(upd, dict) else None))
    server_error_or_result(lambda: c.update_one({}, upd, array_filters=array_filters if isinstance(upd, dict)
                                                else None))
    server_error_or_result(lambda: c.find_one_and_update(flt, upd, upsert=upsert))
    server_error_or_result(lambda: c.delete_many(flt))
    assert_consistent(c)


@INVALID
@given(docs, st.dictionaries(st.sampled_from(ODD_NAMES), junk, max_size=3), junk_filters)
def test_invalid_documents_raise_only_server_errors(documents, doc, flt):
    c = fresh(documents, "a.x")
    server_error_or_result(lambda: c.insert_one(dict(doc)))
    server_error_or_result(lambda: c.insert_many([dict(doc), dict(doc)], ordered=False))
    if not next(iter(doc), "").startswith("$"):  # pymongo refuses a replacement starting with $ (ValueError)
        server_error_or_result(lambda: c.replace_one(flt, dict(doc), upsert=True))
    assert_consistent(c)


@INVALID
@given(docs, junk_pipelines)
def test_invalid_pipelines_raise_only_server_errors(documents, pipeline):
    c = fresh(documents, None)
    server_error_or_result(lambda: c.aggregate(pipeline))
