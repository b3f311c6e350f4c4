"""Checkers of lessons 30-39 after issue 25: each mistake the lessons list, and the four kinds of accepted wrong
answers (a function tried on data where a wrong filter works, a key pattern instead of the plan, counts judged
without their rows or without every requirement, exact counts accepted within a tolerance), gets "Not yet".

Sources for the rules the tests lean on: MongoDB manual "$push" with "$each", "$position" and "$slice" (a
positive $slice keeps the first elements, a negative one the last); "Case-Insensitive Indexes" (a query uses an
index for strings only with the index's collation); "Schema Validation" ($jsonSchema ``required``).
"""
from __future__ import annotations

import datetime as dt

import pandas as pd
import pytest

import labkit
from exercise_helpers import assert_prediction, prune_indexes


def _news():
    return pd.DataFrame([("Show article", "read", 5000), ("Front page", "read", 900), ("Like article", "write", 300),
                         ("Add comment", "write", 20), ("Edit article", "write", 0.01), ("Sign up", "write", 1),
                         ("Show profile", "read", 50)], columns=["operation", "type", "per_second"])


# --- 30 ------------------------------------------------------------------------------------------------------

def test_30_pick_operations_on_the_news_site_passes():
    ex = labkit.exercises.get("30-pick-operations")
    news = _news()
    assert ex.check(news, news.sort_values("per_second", ascending=False).head(4)).correct


def test_30_chosen_passed_as_the_table_is_not_the_news_site():
    """Kind 3: a count judged against the learner's own table (chosen twice covers 100% of itself)."""
    ex = labkit.exercises.get("30-pick-operations")
    chosen = _news().head(2)
    r = ex.check(chosen, chosen)
    assert not r.correct and "not the news site's operation table" in r.message


def test_30_rate_column_sorted_apart_from_its_operations_is_refused():
    """Kind 3: the rates sorted on their own, detached from the operations they belong to."""
    ex = labkit.exercises.get("30-pick-operations")
    news = _news()
    detached = news.head(4).copy()
    detached["per_second"] = sorted(news["per_second"], reverse=True)[:4]
    r = ex.check(news, detached)
    assert not r.correct and "do not detach a column" in r.message


def test_30_designing_for_a_rare_row_is_refused():
    ex = labkit.exercises.get("30-pick-operations")
    news = _news()
    r = ex.check(news, news.iloc[[0, 1, 4]])
    assert not r.correct and "left out" in r.message


@pytest.mark.parametrize("guess", [401, 405, 407, 412])
def test_30_predicted_page_docs_are_exact(guess):
    """Kind 4, judged exactly: a guess that forgets the product and the five reviews (401) is not 'about right'."""
    assert_prediction("30-predict-naive-page-docs", guess, 406)


# --- 32: a chat room keeps its 5 newest messages, newest first ----------------------------------------------

def _poster(push):
    def post_message(db, room_id, message):
        db.messages.insert_one({"roomId": room_id, **message})
        db.rooms.update_one({"_id": room_id}, {"$push": {"latest": push(message)}})
    return post_message


def test_32_position_0_and_slice_5_passes():
    ex = labkit.exercises.get("32-capped-subset")
    assert ex.check(_poster(lambda m: {"$each": [m], "$position": 0, "$slice": 5})).correct
    assert ex.check(_poster(lambda m: {"$each": [m], "$sort": {"at": -1}, "$slice": 5})).correct


@pytest.mark.parametrize("push, fragment", [
    (lambda m: m, "not capped"),
    (lambda m: {"$each": [m], "$slice": 5}, "5 *oldest* messages: `$slice: 5` keeps the first"),
    (lambda m: {"$each": [m], "$position": 0, "$slice": -5}, "`$slice: -5` keeps the last"),
    (lambda m: {"$each": [m], "$sort": {"at": -1}, "$slice": -5}, "`$slice: -5` keeps the last"),
    (lambda m: {"$each": [m], "$slice": -5}, "newest last"),
])
def test_32_slice_sign_and_position_mistakes(push, fragment):
    """The lesson's mistake: the subset that keeps the oldest elements (the sign of $slice against where the new
    element goes)."""
    r = labkit.exercises.get("32-capped-subset").check(_poster(push))
    assert not r.correct and fragment in r.message, r.message


def test_32_forgetting_the_full_history_is_refused():
    def no_child(db, room_id, message):
        db.rooms.update_one({"_id": room_id}, {"$push": {"latest": {"$each": [message], "$position": 0,
                                                                    "$slice": 5}}})

    r = labkit.exercises.get("32-capped-subset").check(no_child)
    assert not r.correct and "full history" in r.message


def test_32_push_then_trim_in_a_second_write_is_refused():
    def two_writes(db, room_id, message):
        db.messages.insert_one({"roomId": room_id, **message})
        db.rooms.update_one({"_id": room_id}, {"$push": {"latest": {"$each": [message], "$position": 0}}})
        db.rooms.update_one({"_id": room_id}, {"$push": {"latest": {"$each": [], "$slice": 5}}})

    r = labkit.exercises.get("32-capped-subset").check(two_writes)
    assert not r.correct and "50 write statements on the room" in r.message


def test_32_read_modify_write_loses_a_concurrent_message():
    """Kind 1: a function that only works when called alone (two messages at once)."""
    def rmw(db, room_id, message):
        db.messages.insert_one({"roomId": room_id, **message})
        latest = (db.rooms.find_one({"_id": room_id}) or {}).get("latest", [])
        db.rooms.update_one({"_id": room_id}, {"$set": {"latest": ([message] + latest)[:5]}})

    r = labkit.exercises.get("32-capped-subset").check(rmw)
    assert not r.correct and "two messages arrived at once" in r.message


def test_32_wrong_argument_gets_a_message():
    r = labkit.exercises.get("32-capped-subset").check(3)
    assert not r.correct and "pass your function" in r.message


# --- 34 ------------------------------------------------------------------------------------------------------

def test_34_ttl_prediction_speaks_of_the_run_not_fixed_dates():
    ex = labkit.exercises.get("34-predict-ttl")
    assert "2026" not in ex.task and "November" not in ex.task and "10 days" in ex.task
    ex.predict(1200)
    r = ex.check(1200)
    assert r.correct and "2026" not in r.message and "10 days" in r.message


# --- 35: an index with its own collation is not a redundant prefix ----------------------------------------

def test_35_prune_that_compares_collations_passes():
    r = labkit.exercises.get("35-prune-tickets").check(prune_indexes(compare_collation=True))
    assert r.correct, r.message
    assert "assignee_ci" in r.message


def test_35_prefix_rule_that_ignores_collation_is_refused():
    """The lesson's mistake: calling an index with its own collation redundant because its keys are a prefix."""
    r = labkit.exercises.get("35-prune-tickets").check(prune_indexes(compare_collation=False))
    assert not r.correct and "assignee_ci" in r.message and "collation" in r.message


# --- 36: two fields asked, not the whole side document -----------------------------------------------------

def _migrate(stock_stage):
    def migrate(d):
        d.books.aggregate([
            {"$lookup": {"from": "book_stock", "localField": "_id", "foreignField": "bookId", "as": "s"}},
            {"$lookup": {"from": "book_authors", "localField": "_id", "foreignField": "bookId", "as": "a"}},
            {"$project": {"stock": stock_stage,
                          "authors": {"$map": {"input": "$a", "as": "x",
                                               "in": {"name": "$$x.name", "role": "$$x.role"}}}}},
            {"$merge": {"into": "books", "on": "_id", "whenMatched": "merge", "whenNotMatched": "discard"}}])
        d.drop_collection("book_stock")
        d.drop_collection("book_authors")
    return migrate


def _load(d, book_id):
    return d.books.find_one({"_id": book_id})


def test_36_two_stock_fields_pass():
    stock = {"inStock": {"$first": "$s.inStock"}, "warehouse": {"$first": "$s.warehouse"}}
    assert labkit.exercises.get("36-embed-books").check(_migrate(stock), _load).correct


def test_36_whole_stock_document_embedded_is_refused():
    """Kind 3: not every requirement checked (the task asks for two fields; the whole side document passed)."""
    r = labkit.exercises.get("36-embed-books").check(_migrate({"$first": "$s"}), _load)
    assert not r.correct and "whole book_stock document" in r.message


# --- 37 ------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("guess", [4800, 4999, 5001, 5200])
def test_37_predicted_keys_are_exact(guess):
    """Kind 4: a number within 5% was accepted before; the count is exact."""
    assert_prediction("37-predict-regex-keys", guess, 5000)


# --- 39: the new collection needs its validator --------------------------------------------------------------

def _legacy39(name):
    from pathlib import Path

    from bson import json_util
    from bson.json_util import JSONMode, JSONOptions

    from labkit.engine import EmbeddedClient

    text = (Path(__file__).resolve().parents[1] / "data" / "legacy_store.json").read_text()
    legacy = json_util.loads(text, json_options=JSONOptions(json_mode=JSONMode.RELAXED, tz_aware=False))
    db = labkit.fresh_db(name, client=EmbeddedClient())
    for coll, docs in legacy["collections"].items():
        db[coll].insert_many(docs)
    for coll, specs in legacy["indexes"].items():
        for spec in specs:
            db[coll].create_index(list(spec["key"].items()), name=spec["name"])
    return db


def _log39(db):
    ci = {"locale": "en", "strength": 2}
    t0 = dt.datetime(2026, 3, 2)
    login = {"find": "customers", "filter": {"email": "ana.0@example.com"}, "collation": ci}
    return [{"op": "query", "ns": f"{db.name}.customers", "command": login, "ts": t0 + dt.timedelta(seconds=i)}
            for i in range(20)]


def _fix39(db, activity_validator):
    db.customer_activity.insert_many([{"customerId": c["_id"], **e}
                                      for c in db.customers.find({}, {"activity": 1}) for e in c["activity"]])
    db.customers.update_many({}, {"$unset": {"activity": ""}})
    db.customers.drop_index("email_1")
    db.customers.create_index("email", name="email_ci", collation={"locale": "en", "strength": 2})
    db.command("collMod", "customers", validator={"$jsonSchema": {"bsonType": "object",
                                                                  "required": ["email", "name"]}})
    if activity_validator is not None:
        db.command("collMod", "customer_activity", validator=activity_validator)


def _check39(db):
    from labkit.review import review

    log = _log39(db)
    return labkit.exercises.get("39-schema-review").check(db, log, review(db, query_log=log).kinds())


def test_39_fixes_with_validators_pass():
    db = _legacy39("t39_ok")
    _fix39(db, {"$jsonSchema": {"bsonType": "object", "required": ["customerId", "at"]}})
    assert _check39(db).correct


def test_39_new_collection_without_a_validator_is_refused():
    """Kind 3: the findings submitted match the review, but the task's requirement (a validator on the new
    collection) is not met."""
    db = _legacy39("t39_none")
    _fix39(db, None)
    r = _check39(db)
    assert not r.correct and "customer_activity" in r.message and "no validator" in r.message


def test_39_validator_that_requires_nothing_is_refused():
    db = _legacy39("t39_empty")
    _fix39(db, {"$jsonSchema": {"bsonType": "object"}})
    r = _check39(db)
    assert not r.correct and "requires no field" in r.message
