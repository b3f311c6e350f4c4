"""Checkers of the pattern lessons (notebooks 10-20) accept good answers and reject typical wrong ones."""
import datetime as dt

import pytest

import labkit
from labkit.engine import EmbeddedClient


@pytest.fixture
def db():
    return labkit.fresh_db("patterns_test", client=EmbeddedClient())


# --- 10 bucket upsert: heart-rate readings in daily buckets (a transfer of the lesson's hourly sensor buckets) ---
# Manual, "Bucket Pattern"; "update" with upsert; $min/$max/$inc update operators.

def _beat_writer(cap=100, truncate=True, inc=True, minmax=True, upsert=True, total=True):
    def add_beat(coll, patient_id, at, bpm):
        day = at.replace(hour=0, minute=0, second=0, microsecond=0) if truncate else at
        filt = {"patientId": patient_id, "day": day}
        if cap:
            filt["count"] = {"$lt": cap}
        update = {"$push": {"readings": {"at": at, "bpm": bpm}}}
        if inc:
            update["$inc"] = {"count": 1, "sum": bpm} if total else {"count": 1}
        else:
            update["$set"] = {"count": 1, "sum": bpm}
        if not total:
            update.setdefault("$set", {})["sum"] = bpm  # the listed mistake: no running sum (an average would do)
        if minmax:
            update["$min"], update["$max"] = {"min": bpm}, {"max": bpm}
        else:
            update.setdefault("$set", {}).update({"min": bpm, "max": bpm})
        coll.update_one(filt, update, upsert=upsert)
    return add_beat


def _ward(db, unique=False, index=True):
    if index:
        db.heart_buckets.create_index([("patientId", 1), ("day", 1)], unique=unique)
    return db


def test_bucket_upsert_good(db):
    result = labkit.exercises.get("10-bucket-upsert").check(_ward(db), _beat_writer())
    assert result.correct, result.message
    assert db.heart_buckets.count_documents({}) == 0  # the checker writes into a sandbox of its own


@pytest.mark.parametrize("kwargs, why", [
    ({"cap": None}, "cap it at 100"),
    ({"truncate": False}, "one per reading"),
    ({"inc": False}, "$inc"),
    ({"minmax": False}, "$min"),
    ({"total": False}, "sum"),
    ({"upsert": False}, "upsert=True"),
])
def test_bucket_upsert_wrong(db, kwargs, why):
    result = labkit.exercises.get("10-bucket-upsert").check(_ward(db), _beat_writer(**kwargs))
    assert not result.correct and why in result.message, result.message


def test_bucket_upsert_a_unique_index_with_a_cap_is_named(db):
    """Listed mistake: a unique index on the bucket key together with a per-bucket cap."""
    result = labkit.exercises.get("10-bucket-upsert").check(_ward(db, unique=True), _beat_writer())
    assert not result.correct and "must not be unique" in result.message, result.message


def test_bucket_upsert_without_the_index_is_named(db):
    result = labkit.exercises.get("10-bucket-upsert").check(_ward(db, index=False), _beat_writer())
    assert not result.correct and "scans the whole collection" in result.message, result.message


def _find_then_insert(coll, patient_id, at, bpm):
    """Listed mistake: find the open bucket, insert one when there is none."""
    day = at.replace(hour=0, minute=0, second=0, microsecond=0)
    open_bucket = coll.find_one({"patientId": patient_id, "day": day, "count": {"$lt": 100}})
    if open_bucket is None:
        coll.insert_one({"patientId": patient_id, "day": day, "readings": [{"at": at, "bpm": bpm}],
                         "count": 1, "sum": bpm, "min": bpm, "max": bpm})
    else:
        coll.update_one({"_id": open_bucket["_id"]}, {"$push": {"readings": {"at": at, "bpm": bpm}},
                                                      "$inc": {"count": 1, "sum": bpm}, "$min": {"min": bpm},
                                                      "$max": {"max": bpm}})


def test_bucket_upsert_rejects_find_then_insert(db):
    result = labkit.exercises.get("10-bucket-upsert").check(_ward(db), _find_then_insert)
    assert not result.correct and "upsert=True" in result.message and "reads first" in result.message


def test_bucket_upsert_call_shape(db):
    ex = labkit.exercises.get("10-bucket-upsert")
    assert "ex.check(practice, add_beat)" in ex.check(_beat_writer()).message


# --- 11 outlier write path: the manual's book sales (Group Data with the Outlier Pattern) ----------------------
# The first 50 buyers stay in the book, later ones go to extra_sales with has_extras; no transaction.

def _purchase_writer(condition=True, store=True, flag=True, flag_first=True, book_id_field=True):
    def record_purchase(db, book_id, customer):
        if condition:
            added = db.sales.update_one({"_id": book_id, "customers_purchased.49": {"$exists": False}},
                                        {"$push": {"customers_purchased": customer}}).modified_count
        else:  # the listed mistake: the room is checked in Python, then pushed
            book = db.sales.find_one({"_id": book_id})
            added = 0
            if len(book["customers_purchased"]) < 50:
                added = db.sales.update_one({"_id": book_id}, {"$push": {"customers_purchased": customer}})
                added = added.modified_count
        if added:
            return
        extra = {"book_id": book_id, "customer": customer} if book_id_field else {"customer": customer}
        if flag and flag_first:
            db.sales.update_one({"_id": book_id}, {"$set": {"has_extras": True}})
        if store:
            db.extra_sales.insert_one(extra)
        if flag and not flag_first:
            db.sales.update_one({"_id": book_id}, {"$set": {"has_extras": True}})
    return record_purchase


def test_outlier_write_good(db):
    result = labkit.exercises.get("11-outlier-write").check(db, _purchase_writer())
    assert result.correct, result.message
    assert db.list_collection_names() == []  # the checker's books live in its own sandbox


@pytest.mark.parametrize("kwargs, why", [
    ({"store": False}, "not dropped"),                        # listed: capping but dropping what does not fit
    ({"flag": False}, "has_extras"),                          # listed: forgetting the overflow flag
    ({"book_id_field": False}, "without `book_id`"),
    ({"condition": False}, "checking the length in Python"),  # listed: the room checked in Python
    ({"flag_first": False}, "hidden"),                        # listed: a crash between the writes hides it
])
def test_outlier_write_wrong(db, kwargs, why):
    result = labkit.exercises.get("11-outlier-write").check(db, _purchase_writer(**kwargs))
    assert not result.correct and why in result.message, result.message


def _push_without_cap(db, book_id, customer):
    db.sales.update_one({"_id": book_id}, {"$push": {"customers_purchased": customer}})


def test_outlier_write_without_a_cap_is_named(db):
    result = labkit.exercises.get("11-outlier-write").check(db, _push_without_cap)
    assert not result.correct and "stop at 50" in result.message, result.message


def test_outlier_write_call_shape(db):
    assert "ex.check(practice, record_purchase)" in labkit.exercises.get("11-outlier-write").check(
        _purchase_writer()).message


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


# --- 13 migration in batches (customers: address string -> {street, city}) -----------------------------------

def _migrator(limit=True, bump=True, split="last-comma"):
    def migrate_batch(coll, batch_size):
        cursor = coll.find({"schemaVersion": 1}).sort("_id", 1)
        todo = list(cursor.limit(batch_size) if limit else cursor)
        for d in todo:
            if split == "last-comma":
                street, _, city = d["address"].rpartition(", ")
            else:  # the first comma: a street with a comma in it loses its end to the city
                street, _, city = d["address"].partition(", ")
            update = {"$set": {"address": {"street": street, "city": city}}}
            if bump:
                update["$set"]["schemaVersion"] = 2
            coll.update_one({"_id": d["_id"]}, update)
        return len(todo)
    return migrate_batch


def test_migrate_batches_good(db):
    result = labkit.exercises.get("13-migrate-batches").check(db, _migrator())
    assert result.correct, result.message


@pytest.mark.parametrize("kwargs, why", [
    ({"limit": False}, ".limit(batch_size)"),
    ({"bump": False}, "schemaVersion: 2"),
    ({"split": "first-comma"}, "the LAST ', '"),
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
