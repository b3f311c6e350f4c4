"""Collation on the embedded engine (labkit/engine/query/collate.py over labkit.collation): queries, sorts,
counts, distinct, updates, deletes, find-and-modify, aggregate, and collation indexes chosen by the planner
only for queries that name the same collation."""
from __future__ import annotations

import pytest
from pymongo import ReturnDocument
from pymongo.collation import Collation
from pymongo.errors import DuplicateKeyError, InvalidOperation, OperationFailure

from labkit.engine import EmbeddedClient

EN2 = {"locale": "en", "strength": 2}
EN1 = {"locale": "en", "strength": 1}
FULL_EN2 = {"locale": "en", "caseLevel": False, "caseFirst": "off", "strength": 2, "numericOrdering": False,
            "alternate": "non-ignorable", "maxVariable": "punct", "normalization": False, "backwards": False,
            "version": "57.1"}


@pytest.fixture()
def db():
    return EmbeddedClient().coll


def plan(cur) -> tuple[int, str, int]:
    """(results, leaf stage, keysExamined) of a cursor."""
    e = cur.explain()
    stage = e["queryPlanner"]["winningPlan"]
    while "inputStage" in stage:
        stage = stage["inputStage"]
    return len(list(cur.clone())), stage["stage"], e["executionStats"]["totalKeysExamined"]


def cafe(db):
    db.myColl.insert_many([{"_id": 1, "category": "café"}, {"_id": 2, "category": "cafe"},
                           {"_id": 3, "category": "cafE"}])
    return db.myColl


def test_fruit_case_insensitive_index(db):
    """Manual, *Case-Insensitive Indexes*: ``db.fruit.createIndex({type: 1}, {collation: {locale: "en",
    strength: 2}})``; with apple/Apple/APPLE, ``find({type: "apple"})`` does not use the index and finds one
    result; ``.collation({locale: "en", strength: 2})`` uses the index and finds three; ``.collation({locale:
    "en", strength: 1})`` does not use the index and finds three."""
    f = db.fruit
    f.create_index([("type", 1)], collation=EN2)
    f.insert_many([{"type": "apple"}, {"type": "Apple"}, {"type": "APPLE"}])
    assert plan(f.find({"type": "apple"})) == (1, "COLLSCAN", 0)
    assert plan(f.find({"type": "apple"}).collation(EN2)) == (3, "IXSCAN", 3)
    assert plan(f.find({"type": "apple"}).collation(EN1)) == (3, "COLLSCAN", 0)
    assert plan(f.find({"type": "apple"}, collation=Collation("en", strength=2))) == (3, "IXSCAN", 3)
    assert f.index_information()["type_1"]["collation"] == FULL_EN2
    assert [ix.get("collation") for ix in f.list_indexes()] == [None, FULL_EN2]


def test_strengths_and_simple(db):
    """Manual, *Collation* (strength): level 1 compares base characters only, level 2 adds diacritics,
    level 3 (the default) adds case; the simple collation compares binary. With café/cafe/cafE,
    ``find({category: "cafe"})`` returns 3 / 2 / 1 / 1 documents."""
    c = cafe(db)
    ids = lambda coll: sorted(d["_id"] for d in c.find({"category": "cafe"}, collation=coll))  # noqa: E731
    assert ids(EN1) == [1, 2, 3]
    assert ids(EN2) == [2, 3]
    assert ids({"locale": "en"}) == [2]
    assert ids({"locale": "simple"}) == [2]
    assert sorted(d["_id"] for d in c.find({"category": {"$in": ["CAFE"]}}).collation(EN2)) == [2, 3]
    assert [d["_id"] for d in c.find({"category": {"$ne": "CAFE"}}).collation(EN2)] == [1]


def test_sort_with_collation(db):
    """Manual, *Collation* / ``cursor.sort()``: without a collation strings sort by binary code points
    (cafE < cafe < café); with ``{locale: "en"}`` ICU order puts lowercase before uppercase and accents
    after (cafe < cafE < café). Ranges compare in collation order too."""
    c = cafe(db)
    assert [d["_id"] for d in c.find().sort("category", 1)] == [3, 2, 1]
    assert [d["_id"] for d in c.find().sort("category", 1).collation({"locale": "en"})] == [2, 3, 1]
    assert [d["_id"] for d in c.find(sort=[("category", -1)], collation={"locale": "en"})] == [1, 3, 2]
    c.insert_many([{"_id": 4, "category": "Bread"}, {"_id": 5, "category": "apple"}])
    assert [d["_id"] for d in c.find({"category": {"$lt": "C"}}).sort("category", 1).collation(EN2)] == [5, 4]
    assert [d["_id"] for d in c.find({"category": {"$lt": "C"}}).sort("category", 1)] == [4]


def test_count_distinct_update_delete_with_collation(db):
    """pymongo API (collation= on count_documents, distinct, update_*, delete_*, find_one_and_*): each
    compares strings under the collation, e.g. strength 2 treats "apple" and "APPLE" as equal."""
    f = db.fruit
    f.insert_many([{"_id": 1, "type": "apple"}, {"_id": 2, "type": "Apple"}, {"_id": 3, "type": "APPLE"},
                   {"_id": 4, "type": "pear"}])
    assert f.count_documents({"type": "apple"}, collation=EN2) == 3
    assert f.distinct("type", collation=EN2) == ["apple", "pear"]
    assert f.distinct("type") == ["APPLE", "Apple", "apple", "pear"]
    assert f.find({}).collation(EN2).distinct("type") == ["apple", "pear"]
    assert f.update_many({"type": "APPLE"}, {"$set": {"ok": 1}}, collation=EN2).modified_count == 3
    assert f.update_one({"type": "PEAR"}, {"$set": {"ok": 2}}, collation=EN2).modified_count == 1
    assert f.replace_one({"type": "PEAR"}, {"type": "pear", "ok": 3}, collation=EN2).modified_count == 1
    doc = f.find_one_and_update({"type": "aPPle"}, {"$inc": {"ok": 10}}, collation=EN2, sort=[("_id", -1)],
                                return_document=ReturnDocument.AFTER)
    assert doc == {"_id": 3, "type": "APPLE", "ok": 11}
    assert f.find_one({"type": "PEAR"}, collation=EN2)["ok"] == 3
    assert f.delete_one({"type": "PEAR"}, collation=EN2).deleted_count == 1
    assert f.delete_many({"type": "APPLE"}, collation=EN1).deleted_count == 3
    assert f.count_documents({}) == 0


def test_aggregate_with_collation(db):
    """Manual, ``db.collection.aggregate()`` *Specify a Collation*: $match and $sort stages (leading or later,
    also inside $facet) compare strings under the collation (here strength 1: "cafe" matches café/cafe/cafE).
    Stages the engine cannot run under a collation ($group...) raise a clear OperationFailure instead of
    ignoring it."""
    c = cafe(db)
    out = c.aggregate([{"$match": {"category": "cafe"}}, {"$sort": {"category": 1}}, {"$project": {"_id": 1}}],
                      collation=EN1)
    assert sorted(d["_id"] for d in out) == [1, 2, 3]
    assert list(c.aggregate([{"$match": {"category": "CAFE"}}, {"$count": "n"}], collation=EN2)) == [{"n": 2}]
    later = c.aggregate([{"$project": {"category": 1}}, {"$match": {"category": "CAFE"}}, {"$sort": {"category": -1, "_id": -1}},
                         {"$facet": {"ids": [{"$match": {"category": {"$in": ["CAFÉ", "cafe"]}}}]}}], collation=EN2)
    assert [d["_id"] for d in next(later)["ids"]] == [3, 2]
    with pytest.raises(OperationFailure) as ei:
        c.aggregate([{"$group": {"_id": "$category"}}], collation=EN2)
    assert "not modelled by labkit's embedded engine" in str(ei.value) and "$group" in str(ei.value)


def test_unique_collation_index(db):
    """Manual, *Collation* (index): a unique index with ``{locale: "en", strength: 2}`` treats "Apple" and
    "apple" as the same key, so the second insert fails with E11000 and changes nothing."""
    u = db.users
    u.create_index("name", unique=True, collation=EN2)
    u.insert_one({"name": "apple"})
    before = [list(ix.entries) for ix in u._store.ix.values()]
    with pytest.raises(DuplicateKeyError):
        u.insert_one({"name": "APPLE"})
    assert [list(ix.entries) for ix in u._store.ix.values()] == before
    u.insert_one({"name": "äpple"})  # an accent differs at strength 2
    assert u.count_documents({}) == 2


def test_collation_index_only_for_matching_queries(db):
    """Manual, *Collation and Index Use*: "To use an index for string comparisons, an operation must also
    specify the same collation"; a simple-collation range query scans the collection (correct results),
    non-string predicates are unaffected, and $regex cannot use a collation index's bounds."""
    f = db.fruit
    f.create_index("type", collation=EN2)
    f.insert_many([{"type": t} for t in ("apple", "Apple", "banana", "Cherry", "cherry")])
    assert plan(f.find({"type": {"$gte": "b"}})) == (2, "COLLSCAN", 0)  # binary: "Cherry" < "b"
    assert plan(f.find({"type": {"$gte": "b"}}).collation(EN2)) == (3, "IXSCAN", 3)
    assert plan(f.find({"type": {"$gte": "B", "$lt": "C"}}).collation(EN2)) == (1, "IXSCAN", 1)
    assert plan(f.find({"type": {"$in": ["APPLE", "CHERRY"]}}).collation(EN2))[:2] == (4, "IXSCAN")
    assert sorted(d["type"] for d in f.find({"type": {"$regex": "^[ab]"}}).collation(EN2)) == \
        ["apple", "banana"]
    # binary "$gt B" (uppercase letters sort first); hinted index with another collation: full scan + filter
    assert [d["type"] for d in f.find({"type": {"$gt": "B"}}).hint("type_1")] == ["apple", "banana", "Cherry", "cherry"]
    assert [d["type"] for d in f.find({}).sort("type", 1).collation(EN2).limit(2)] == ["apple", "Apple"]


def test_bad_collations_are_refused(db):
    """Manual, *Collation Document*: unsupported locales/strengths are errors, never ignored (the
    embedded engine implements en/en_US and simple); Cursor.collation() cannot follow iteration."""
    c = cafe(db)
    with pytest.raises(OperationFailure):
        list(c.find({}, collation={"locale": "fr"}))
    with pytest.raises(OperationFailure):
        c.count_documents({}, collation={"locale": "en", "strength": 0})
    with pytest.raises(OperationFailure):
        c.create_index("category", collation={"strength": 2})
    cur = c.find()
    next(cur)
    with pytest.raises(InvalidOperation):
        cur.collation(EN2)


def test_collation_in_commands(db):
    """Manual, *count*/*distinct*/*explain* commands: each takes a ``collation`` field, e.g.
    ``{count: "fruit", query: {type: "apple"}, collation: {locale: "en", strength: 2}}`` counts all three
    apples, and explaining the find with that collation shows the IXSCAN on the collation index."""
    f = db.fruit
    f.create_index("type", collation=EN2)
    f.insert_many([{"type": "apple"}, {"type": "Apple"}, {"type": "APPLE"}])
    assert db.command("count", "fruit", query={"type": "apple"}, collation=EN2)["n"] == 3
    assert db.command("count", "fruit", query={"type": "apple"})["n"] == 1
    assert db.command("distinct", "fruit", key="type", collation=EN2)["values"] == ["apple"]
    e = db.command("explain", {"find": "fruit", "filter": {"type": "apple"}, "collation": EN2})
    assert e["queryPlanner"]["winningPlan"]["inputStage"]["stage"] == "IXSCAN"
    assert e["executionStats"]["nReturned"] == 3


def test_index_and_collection_scan_agree_with_labkit_collation(db):
    """Differential check against ``labkit.collation`` (the engine-free reference): for random words with
    case and accent variants, equality, ranges and sorts under each strength return exactly what
    ``strings_equal``/``compare`` say, whether the planner uses the matching collation index or scans."""
    import functools
    import random

    from labkit.collation import compare, normalize_collation, strings_equal
    rnd = random.Random(7)
    letters = ["a", "A", "á", "b", "B", "e", "é", "É", "z"]
    words = sorted({"".join(rnd.choice(letters) for _ in range(rnd.randint(1, 3))) for _ in range(120)})
    c = db.words
    c.insert_many([{"_id": i, "w": w} for i, w in enumerate(words)])
    for strength in (1, 2, 3):
        spec = {"locale": "en", "strength": strength}
        norm = normalize_collation(spec)
        c.create_index("w", collation=spec, name="w_%d" % strength)
        for probe in rnd.sample(words, 8):
            want = sorted(d["_id"] for d in c.find() if strings_equal(d["w"], probe, norm))
            for hint in ("w_%d" % strength, {"$natural": 1}):
                got = sorted(d["_id"] for d in c.find({"w": probe}, collation=spec).hint(hint))
                assert got == want, (strength, probe, hint)
            lo = [d["_id"] for d in c.find({"w": {"$lt": probe}}, collation=spec)]
            assert sorted(lo) == sorted(i for i, w in enumerate(words) if compare(w, probe, norm) < 0)
        ordered = [d["w"] for d in c.find({}, collation=spec).sort("w", 1)]
        keys = [functools.cmp_to_key(lambda a, b: compare(a, b, norm))(w) for w in ordered]
        assert all(not (keys[i + 1] < keys[i]) for i in range(len(keys) - 1))
        assert plan(c.find({"w": words[0]}, collation=spec))[1] == "IXSCAN"


def test_bulk_write_operations_with_collation(db):
    """pymongo API: UpdateOne/UpdateMany/ReplaceOne/DeleteOne/DeleteMany take ``collation=``; in bulk_write
    each operation matches under its own collation."""
    from pymongo import DeleteMany, UpdateMany, UpdateOne
    f = db.fruit
    f.insert_many([{"_id": 1, "type": "apple"}, {"_id": 2, "type": "Apple"}, {"_id": 3, "type": "pear"}])
    r = f.bulk_write([UpdateMany({"type": "APPLE"}, {"$set": {"n": 1}}, collation=EN2),
                      UpdateOne({"type": "APPLE"}, {"$set": {"n": 2}}),
                      DeleteMany({"type": "PEAR"}, collation=EN1)])
    assert (r.matched_count, r.modified_count, r.deleted_count) == (2, 2, 1)
    assert [d.get("n") for d in f.find().sort("_id", 1)] == [1, 1]
