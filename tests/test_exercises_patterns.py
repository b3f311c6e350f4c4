"""Checkers of the pattern lessons (notebooks 10-20) accept good answers and reject typical wrong ones."""
import datetime as dt

import pytest

import labkit
from labkit.engine import EmbeddedClient


@pytest.fixture
def db():
    return labkit.fresh_db("patterns_test", client=EmbeddedClient())


# --- 10 bucket upsert ----------------------------------------------------------------------------------------

def _bucket_writer(cap=60, truncate=True, inc=True, minmax=True, upsert=True):
    def add_reading(coll, sensor_id, ts, value):
        start = ts.replace(minute=0, second=0, microsecond=0) if truncate else ts
        filt = {"sensorId": sensor_id, "start": start}
        if cap:
            filt["count"] = {"$lt": cap}
        update = {"$push": {"readings": {"ts": ts, "temperature": value}}}
        update["$inc"] = {"count": 1} if inc else {}
        if not inc:
            update["$set"] = {"count": 1}
            del update["$inc"]
        if minmax:
            update["$min"], update["$max"] = {"min": value}, {"max": value}
        else:
            update.setdefault("$set", {}).update({"min": value, "max": value})
        coll.update_one(filt, update, upsert=upsert)
    return add_reading


def test_bucket_upsert_good(db):
    ex = labkit.exercises.get("10-bucket-upsert")
    result = ex.check(db, _bucket_writer())
    assert result.correct, result.message
    assert "exercise_10_buckets" not in db.list_collection_names() or db.exercise_10_buckets.count_documents({}) == 0


@pytest.mark.parametrize("kwargs, why", [
    ({"cap": None}, "cap it at 60"),
    ({"truncate": False}, "one per reading"),
    ({"inc": False}, "$inc"),
    ({"minmax": False}, "$min"),
    ({"upsert": False}, "upsert=True"),
])
def test_bucket_upsert_wrong(db, kwargs, why):
    ex = labkit.exercises.get("10-bucket-upsert")
    result = ex.check(db, _bucket_writer(**kwargs))
    assert not result.correct and why in result.message, result.message


def _find_then_insert(coll, sensor_id, ts, value):
    """Issue 15's example for lesson 10: find the open bucket, insert one when there is none."""
    start = ts.replace(minute=0, second=0, microsecond=0)
    open_bucket = coll.find_one({"sensorId": sensor_id, "start": start, "count": {"$lt": 60}})
    if open_bucket is None:
        coll.insert_one({"sensorId": sensor_id, "start": start, "readings": [{"ts": ts, "temperature": value}],
                         "count": 1, "min": value, "max": value})
    else:
        coll.update_one({"_id": open_bucket["_id"]}, {"$push": {"readings": {"ts": ts, "temperature": value}},
                                                      "$inc": {"count": 1}, "$min": {"min": value},
                                                      "$max": {"max": value}})


def test_bucket_upsert_rejects_find_then_insert(db):
    result = labkit.exercises.get("10-bucket-upsert").check(db, _find_then_insert)
    assert not result.correct and "upsert=True" in result.message and "reads first" in result.message


def test_bucket_upsert_leaves_the_learners_database_alone(db):
    db.exercise_10_buckets.insert_one({"_id": "mine"})
    labkit.exercises.get("10-bucket-upsert").check(db, _bucket_writer())
    assert db.exercise_10_buckets.find_one({"_id": "mine"}) == {"_id": "mine"}


def test_bucket_upsert_call_shape(db):
    ex = labkit.exercises.get("10-bucket-upsert")
    assert "ex.check(db, add_reading)" in ex.check(_bucket_writer()).message


# --- 11 outlier write path ------------------------------------------------------------------------------------

def _comment_writer(slice_=True, position=True, move=True, flag=True, count=True):
    from pymongo import ReturnDocument

    def add_comment(posts, comments, post_id, comment):
        push = {"$each": [comment]}
        if position:
            push["$position"] = 0
        if slice_:
            push["$slice"] = 20 if position else 20
        update = {"$push": {"comments": push}}
        if count:
            update["$inc"] = {"commentCount": 1}
        before = posts.find_one_and_update({"_id": post_id}, update, return_document=ReturnDocument.BEFORE)
        embedded = before.get("comments", [])
        if len(embedded) == 20:
            if move:
                comments.insert_one(dict(embedded[-1] if position else comment, postId=post_id))
            if flag:
                posts.update_one({"_id": post_id}, {"$set": {"hasOverflow": True}})
    return add_comment


def test_outlier_write_good(db):
    result = labkit.exercises.get("11-outlier-write").check(db, _comment_writer())
    assert result.correct, result.message


@pytest.mark.parametrize("kwargs, why", [
    ({"slice_": False}, "$slice"),
    ({"position": False}, "$position"),
    ({"move": False}, "dropped, not moved"),
    ({"flag": False}, "hasOverflow"),
    ({"count": False}, "commentCount"),
])
def test_outlier_write_wrong(db, kwargs, why):
    result = labkit.exercises.get("11-outlier-write").check(db, _comment_writer(**kwargs))
    assert not result.correct and why in result.message, result.message


# --- 12 computed statistics -----------------------------------------------------------------------------------

def _review_writer(minmax="ops", insert=True, dist=True):
    def add_review(db, review):
        r = review["rating"]
        if insert:
            db.reviews.insert_one(review)
        update = {"$inc": {"ratingStats.count": 1, "ratingStats.sum": r}}
        if dist:
            update["$inc"][f"ratingStats.distribution.{r}"] = 1
        if minmax == "ops":
            update["$min"], update["$max"] = {"ratingStats.min": r}, {"ratingStats.max": r}
        else:
            update["$set"] = {"ratingStats.min": r, "ratingStats.max": r}
        db.products.update_one({"_id": review["productId"]}, update)
    return add_review


def test_computed_stats_good():
    result = labkit.exercises.get("12-computed-stats").check(_review_writer())
    assert result.correct, result.message


@pytest.mark.parametrize("kwargs, why", [
    ({"minmax": "set"}, "$min"),
    ({"insert": False}, "must still be inserted"),
    ({"dist": False}, "distribution"),
])
def test_computed_stats_wrong(kwargs, why):
    result = labkit.exercises.get("12-computed-stats").check(_review_writer(**kwargs))
    assert not result.correct and why in result.message, result.message


def _recompute_writer(db, review):
    """Issue 15's example for lesson 12: a full re-aggregation of the product's reviews on every write."""
    db.reviews.insert_one(review)
    pid = review["productId"]
    stats = next(db.reviews.aggregate([
        {"$match": {"productId": pid}},
        {"$group": {"_id": None, "count": {"$sum": 1}, "sum": {"$sum": "$rating"}, "min": {"$min": "$rating"},
                    "max": {"$max": "$rating"}, "all": {"$push": "$rating"}}}]))
    dist = {str(k): stats["all"].count(k) for k in set(stats["all"])}
    db.products.update_one({"_id": pid}, {"$set": {"ratingStats": {
        "count": stats["count"], "sum": stats["sum"], "min": stats["min"], "max": stats["max"],
        "distribution": dist}}})


def test_computed_stats_rejects_recomputing_on_every_write():
    result = labkit.exercises.get("12-computed-stats").check(_recompute_writer)
    assert not result.correct and "re-computing, not the computed pattern" in result.message


def test_computed_stats_call_shape(db):
    assert "ex.check(add_review)" in labkit.exercises.get("12-computed-stats").check(db, _review_writer()).message


# --- 13 migration in batches ----------------------------------------------------------------------------------

def _migrator(limit=True, unset=True, bump=True, split="partition"):
    def migrate_batch(coll, batch_size):
        cursor = coll.find({"schemaVersion": 1}).sort("_id", 1)
        todo = list(cursor.limit(batch_size) if limit else cursor)
        for d in todo:
            if split == "partition":
                first, _, last = d["name"].partition(" ")
            else:
                first, last = d["name"].split(" ")[0], d["name"].split(" ")[-1]
            update = {"$set": {"firstName": first, "lastName": last}}
            if bump:
                update["$set"]["schemaVersion"] = 2
            if unset:
                update["$unset"] = {"name": ""}
            coll.update_one({"_id": d["_id"]}, update)
        return len(todo)
    return migrate_batch


def test_migrate_batches_good(db):
    result = labkit.exercises.get("13-migrate-batches").check(db, _migrator())
    assert result.correct, result.message


@pytest.mark.parametrize("kwargs, why", [
    ({"limit": False}, ".limit(batch_size)"),
    ({"unset": False}, "$unset"),
    ({"bump": False}, "schemaVersion: 2"),
    ({"split": "last-word"}, "first word, then the rest"),
])
def test_migrate_batches_wrong(db, kwargs, why):
    result = labkit.exercises.get("13-migrate-batches").check(db, _migrator(**kwargs))
    assert not result.correct and why in result.message, result.message


# --- 14 polymorphic validator ---------------------------------------------------------------------------------

def _events_validator(pin=True, number=("int", "double", "decimal"), require_at=True):
    click_type = {"enum": ["click"]} if pin else {"enum": ["click", "purchase"]}
    purchase_type = {"enum": ["purchase"]} if pin else {"enum": ["click", "purchase"]}
    schema = {
        "bsonType": "object",
        "required": ["type", "at"] if require_at else ["type"],
        "properties": {"type": {"enum": ["click", "purchase"]}, "at": {"bsonType": "date"}},
        "oneOf": [
            {"properties": {"type": click_type, "element": {"bsonType": "string"},
                            "x": {"bsonType": "int"}, "y": {"bsonType": "int"}},
             "required": ["element", "x", "y"]},
            {"properties": {"type": purchase_type, "orderId": {"bsonType": "string"},
                            "amount": {"bsonType": list(number)}},
             "required": ["orderId", "amount"]},
        ],
    }
    return {"$jsonSchema": schema}


def test_polymorphic_validator_good():
    result = labkit.exercises.get("14-polymorphic-validator").check(_events_validator())
    assert result.correct, result.message


@pytest.mark.parametrize("validator, why", [
    (_events_validator(pin=False), "labelled"),
    (_events_validator(number=("double",)), "int amount was rejected"),
    (_events_validator(require_at=False), "without `at`"),
    ({"$jsonSchema": {"required": ["type"]}}, "accepted"),
    ("not a dict", "must be a dict"),
])
def test_polymorphic_validator_wrong(validator, why):
    result = labkit.exercises.get("14-polymorphic-validator").check(validator)
    assert not result.correct and why in result.message, result.message


# --- 20 which pattern quiz ------------------------------------------------------------------------------------

_RIGHT = {"sensor-every-second": "bucket", "viral-post": "outlier", "rating-on-every-view": "computed",
          "renamed-fields": "schema versioning", "mixed-feed": "polymorphic",
          "rough-view-counter": "approximation", "many-spec-fields": "attribute"}


def test_which_pattern_good_and_spellings():
    ex = labkit.exercises.get("20-which-pattern")
    assert ex.check(_RIGHT).correct
    loose = dict(_RIGHT, **{"sensor-every-second": "Bucket Pattern", "renamed-fields": "schema-versioning",
                            "rating-on-every-view": " Computed "})
    assert ex.check(loose).correct, ex.check(loose).message


def test_which_pattern_explains_wrong_answers():
    ex = labkit.exercises.get("20-which-pattern")
    result = ex.check(dict(_RIGHT, **{"viral-post": "subset", "renamed-fields": "document versioning"}))
    assert not result.correct
    assert "5 of 7 right" in result.message
    assert "viral-post" in result.message and "exceptional post" in result.message
    assert "renamed-fields" in result.message and "*shape*" in result.message
    assert "mixed-feed" not in result.message
    assert "outlier" not in result.message and "schema versioning" not in result.message


def test_which_pattern_never_reveals_an_answer_before_all_are_right():
    """Issue 15: the quiz's checker said "Expected <pattern>" for each wrong answer, giving the quiz away."""
    from labkit.exercises.lessons.l20_which_pattern import _SYNONYMS
    ex = labkit.exercises.get("20-which-pattern")
    for scenario, expected in _RIGHT.items():
        for wrong in sorted(set(_SYNONYMS.values()) - {expected}):
            message = ex.check(dict(_RIGHT, **{scenario: wrong})).message
            assert expected not in message.lower(), (scenario, wrong, message)
            assert "Ask yourself" in message or "Not quite" in message
    assert "polymorphic" in ex.check(_RIGHT).message  # once all are right, the explanations are shown


@pytest.mark.parametrize("answers, why", [
    ({k: "bucket" for k in _RIGHT}, "1 of 7 right"),
    (dict(_RIGHT, **{"viral-post": ""}), "no answer yet"),
    (dict(_RIGHT, unknown="bucket"), "unknown scenario"),
    (["bucket"], "should be a dict"),
])
def test_which_pattern_wrong(answers, why):
    result = labkit.exercises.get("20-which-pattern").check(answers)
    assert not result.correct and why in result.message, result.message
