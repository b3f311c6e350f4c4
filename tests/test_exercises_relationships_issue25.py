"""Checkers of lessons 00-06 after issue 25: every mistake a lesson lists, and the four kinds of accepted wrong
answers (a function run once on data where a wrong filter works; a key pattern instead of whether the index serves
the query; a count or order judged without its rows; an exact count accepted within a tolerance), get "Not yet"
with a message of their own; the lesson's solution passes.

Sources of the behaviour the checkers rely on: MongoDB manual "$ (positional update operator)" (first matching
element; an upsert cannot use it without a match), "Model Monetary Data" (Decimal128), "$push" with "$sort" and
"$slice", "Use Indexes to Sort Query Results" (a sort is served when every direction matches or all are reversed),
"Unique Indexes", "Partial Indexes" (used only when the query implies the filter), "$lookup"; mongodb/mongo
src/mongo/db/exec/count_scan.cpp (COUNT_SCAN counts the key that ends the range).
"""
from __future__ import annotations

import datetime as dt

import pandas as pd
import pytest
from bson.decimal128 import Decimal128

import labkit
from labkit.engine import EmbeddedClient
from labkit.exercises.lessons.l00_start_here import RECIPE_COLUMNS, RECIPE_WORKLOAD

from exercise_helpers import (delete_follows_one_direction, enroll_with_push, join_counter_first,  # noqa: E402
                              solved)  # tests/ is on sys.path (conftest.py)


@pytest.fixture
def tmp_db():
    return labkit.fresh_db("issue25_rel", client=EmbeddedClient())


def _check(ex_id, *args):
    return labkit.exercises.get(ex_id).check(*args)


def _not_yet(result, *words):
    assert not result.correct and result.outcome == "incorrect", result
    for w in words:
        assert w in result.message, (w, result.message)


# --- 00: the ranking keeps each rate on its row; predicted counts are exact ------------------------------------

def _recipes():
    """Exercise 1 of lesson 00 is a transfer: the recipe site's workload, unranked as the notebook builds it."""
    return pd.DataFrame(list(RECIPE_WORKLOAD), columns=list(RECIPE_COLUMNS))


def test_00_rank_solution_passes():
    result = _check("00-rank-workload", _recipes().sort_values("per_second", ascending=False))
    assert result.correct and "'Show a recipe' runs most often" in result.message


def test_00_rank_mistake_rate_column_sorted_on_its_own():
    """Kind 3: the rates sorted detached from their operations look ordered but belong to other rows."""
    w = _recipes()
    detached = w.assign(per_second=sorted(w["per_second"], reverse=True))
    _not_yet(_check("00-rank-workload", detached), "no longer sit next to their operations")


def test_00_rank_mistake_another_column_detached():
    """Kind 3 again: the rows ranked, but the `needs` column kept in its old order."""
    ranked = _recipes().sort_values("per_second", ascending=False)
    detached = ranked.assign(needs=list(_recipes()["needs"]))
    _not_yet(_check("00-rank-workload", detached), "now holds another operation's 'needs'")


def test_00_rank_mistake_ascending():
    """The lesson's first mistake: sort_values is ascending by default."""
    _not_yet(_check("00-rank-workload", _recipes().sort_values("per_second")), "least frequent first")


def test_00_rank_mistake_the_lessons_table_instead_of_the_exercises():
    store = pd.DataFrame([("Show product page", "read", 2000, "a"), ("Add review", "write", 2, "e")],
                         columns=list(RECIPE_COLUMNS))
    _not_yet(_check("00-rank-workload", store), "rank `recipes`")


def test_00_rank_mistake_rows_lost_or_repeated():
    ranked = _recipes().sort_values("per_second", ascending=False)
    _not_yet(_check("00-rank-workload", ranked.head(3)), "all 7 operations")
    _not_yet(_check("00-rank-workload", pd.concat([ranked, ranked.head(1)])), "once each")
    twice = pd.concat([ranked, ranked["per_second"]], axis=1)
    _not_yet(_check("00-rank-workload", twice), "a column twice")


def test_00_predicted_count_is_exact():
    """Kind 4: 205 (the page without the product read) is not 206."""
    ex = labkit.exercises.get("00-predict-page-docs")
    ex.predict(205)
    _not_yet(ex.check(206), "the measurement says 206")
    ex.predict(206)
    assert ex.check(206).correct


# --- 01: the positional update on users of the checker's own, with namesakes ---------------------------------

def set_can_edit(db, user_id, title, can_edit):
    db.users.update_one({"_id": user_id, "roles.title": title}, {"$set": {"roles.$.canEdit": can_edit}})


def test_01_positional_solution_passes(tmp_db):
    assert _check("01-positional-role", tmp_db, set_can_edit).correct


def test_01_positional_mistake_filter_without_the_user_id(tmp_db):
    """Kind 1: the first user holding 'editor' is not the one asked for (Bo comes before Ada)."""
    def no_id(db, user_id, title, can_edit):
        db.users.update_one({"roles.title": title}, {"$set": {"roles.$.canEdit": can_edit}})
    _not_yet(_check("01-positional-role", tmp_db, no_id), "changed Bo's instead", "`_id`")


def test_01_positional_mistake_fixed_position(tmp_db):
    """The lesson's first mistake: roles.2 is right for Ada only; later calls show it."""
    def fixed(db, user_id, title, can_edit):
        db.users.update_one({"_id": user_id}, {"$set": {"roles.2.canEdit": can_edit}})
    _not_yet(_check("01-positional-role", tmp_db, fixed), "fixed position", "roles.$.canEdit")


def test_01_positional_mistake_upsert(tmp_db):
    def upsert(db, user_id, title, can_edit):
        db.users.update_one({"_id": user_id, "roles.title": title}, {"$set": {"roles.$.canEdit": can_edit}},
                            upsert=True)
    _not_yet(_check("01-positional-role", tmp_db, upsert), "upsert")


def test_01_positional_mistake_ignores_arguments(tmp_db):
    def always_true(db, user_id, title, can_edit):
        db.users.update_one({"_id": user_id, "roles.title": title}, {"$set": {"roles.$.canEdit": True}})

    def always_editor(db, user_id, title, can_edit):
        db.users.update_one({"_id": user_id, "roles.title": "editor"}, {"$set": {"roles.$.canEdit": can_edit}})
    for fn in (always_true, always_editor):
        _not_yet(_check("01-positional-role", tmp_db, fn), "each call must change only the named user's role")


# --- 01: order lines in Decimal128 ---------------------------------------------------------------------------

def add_line(db, order_id, sku, qty, price):
    db.orders.update_one({"_id": order_id},
                         {"$push": {"lines": {"sku": sku, "qty": qty, "price": price}},
                          "$inc": {"itemCount": qty, "total": Decimal128(price.to_decimal() * qty)}})


def test_01_order_lines_solution_passes(tmp_db):
    assert _check("01-order-lines", tmp_db, add_line).correct


def test_01_order_lines_mistake_python_arithmetic_on_decimal128(tmp_db):
    def py_mul(db, order_id, sku, qty, price):
        db.orders.update_one({"_id": order_id}, {"$push": {"lines": {"sku": sku, "qty": qty, "price": price}},
                                                 "$inc": {"itemCount": qty, "total": qty * price}})
    _not_yet(_check("01-order-lines", tmp_db, py_mul), "does no arithmetic in Python", "to_decimal()")


def test_01_order_lines_mistake_float_total(tmp_db):
    def floaty(db, order_id, sku, qty, price):
        db.orders.update_one({"_id": order_id},
                             {"$push": {"lines": {"sku": sku, "qty": qty, "price": price}},
                              "$inc": {"itemCount": qty, "total": float(price.to_decimal()) * qty}})
    _not_yet(_check("01-order-lines", tmp_db, floaty), "adds a float to the total")


def test_01_order_lines_mistake_float_price_on_the_line(tmp_db):
    def float_line(db, order_id, sku, qty, price):
        db.orders.update_one({"_id": order_id},
                             {"$push": {"lines": {"sku": sku, "qty": qty, "price": float(price.to_decimal())}},
                              "$inc": {"itemCount": qty, "total": Decimal128(price.to_decimal() * qty)}})
    _not_yet(_check("01-order-lines", tmp_db, float_line), "stored as a float")


def test_01_order_lines_mistake_read_modify_write(tmp_db):
    """The lesson's fourth mistake: the total computed in Python from a read loses a concurrent line."""
    def rmw(db, order_id, sku, qty, price):
        order = db.orders.find_one({"_id": order_id})
        if order is None:
            return
        total = Decimal128(order["total"].to_decimal() + price.to_decimal() * qty)
        db.orders.update_one({"_id": order_id}, {"$push": {"lines": {"sku": sku, "qty": qty, "price": price}},
                                                 "$set": {"total": total}, "$inc": {"itemCount": qty}})
    _not_yet(_check("01-order-lines", tmp_db, rmw), "lost update")


def test_01_order_lines_mistake_two_writes(tmp_db):
    def two(db, order_id, sku, qty, price):
        db.orders.update_one({"_id": order_id}, {"$push": {"lines": {"sku": sku, "qty": qty, "price": price}}})
        db.orders.update_one({"_id": order_id},
                             {"$inc": {"itemCount": qty, "total": Decimal128(price.to_decimal() * qty)}})
    _not_yet(_check("01-order-lines", tmp_db, two), "2 writes")


# --- 02: the orders page (a transfer of the feed index) ------------------------------------------------------

def _orders(tmp_db, *indexes, **options):
    tmp_db.orders.insert_one({"_id": "o1", "customerId": "cust:1", "placedAt": dt.datetime(2026, 1, 1)})
    for keys in indexes:
        tmp_db.orders.create_index(keys, **options)
    return tmp_db.orders


def test_02_orders_solution_passes(tmp_db):
    assert _check("02-orders-index", _orders(tmp_db, [("customerId", 1), ("placedAt", -1), ("_id", -1)])).correct


def test_02_orders_every_direction_reversed_passes(tmp_db):
    assert _check("02-orders-index", _orders(tmp_db, [("customerId", 1), ("placedAt", 1), ("_id", 1)])).correct


def test_02_orders_mistake_mixed_directions(tmp_db):
    """The lesson's first mistake: the directions must all match the sort or all be reversed."""
    _not_yet(_check("02-orders-index", _orders(tmp_db, [("customerId", 1), ("placedAt", -1), ("_id", 1)])),
             "blocking SORT")


def test_02_orders_mistake_no_tie_breaker(tmp_db):
    _not_yet(_check("02-orders-index", _orders(tmp_db, [("customerId", 1), ("placedAt", -1)])),
             "Add `_id` after `placedAt`")


def test_02_orders_mistake_redundant_prefix(tmp_db):
    """The lesson's second mistake: a separate {customerId: 1} next to the compound index."""
    orders = _orders(tmp_db, [("customerId", 1), ("placedAt", -1), ("_id", -1)], [("customerId", 1)])
    _not_yet(_check("02-orders-index", orders), "is a prefix of")


def test_02_orders_mistake_partial_index_the_query_cannot_use(tmp_db):
    """Kind 2: the right key pattern, made partial on a field the page never filters on, serves nothing."""
    orders = _orders(tmp_db, [("customerId", 1), ("placedAt", -1), ("_id", -1)],
                     partialFilterExpression={"status": "open"})
    _not_yet(_check("02-orders-index", orders), "it is partial")


def test_02_orders_mistake_sort_field_first(tmp_db):
    _not_yet(_check("02-orders-index", _orders(tmp_db, [("placedAt", -1), ("_id", -1), ("customerId", 1)])))


# --- 03: the product page's bounded join (a transfer of the lesson's join) -----------------------------------

M = {"$match": {"_id": "prod:7"}}


def _join(sub, as_="reviews"):
    return {"$lookup": {"from": "reviews", "localField": "_id", "foreignField": "productId", "as": as_,
                        "pipeline": sub}}


SORT, LIMIT, PROJECT = {"$sort": {"createdAt": -1, "_id": -1}}, {"$limit": 5}, {"$project": {"stars": 1, "text": 1}}


def test_03_reviews_solution_passes(tmp_db):
    assert _check("03-product-reviews", tmp_db, [M, _join([SORT, LIMIT, PROJECT])]).correct


@pytest.mark.parametrize("name, pipeline, words", [
    ("trimming after the $lookup", [M, {"$lookup": {"from": "reviews", "localField": "_id",
                                                    "foreignField": "productId", "as": "reviews"}},
                                    {"$project": {"reviews": {"$slice": ["$reviews", 5]}}}], ["`$slice`"]),
    ("limit before sort", [M, _join([LIMIT, SORT, PROJECT])], ["`$limit` comes before `$sort`"]),
    ("no tie-breaker", [M, _join([{"$sort": {"createdAt": -1}}, LIMIT, PROJECT])], ["tie-breaker"]),
    ("oldest first", [M, _join([{"$sort": {"createdAt": 1, "_id": 1}}, LIMIT, PROJECT])], ["OLDEST"]),
    ("no projection", [M, _join([SORT, LIMIT])], ["still carry"]),
    ("unwound", [M, _join([SORT, LIMIT, PROJECT]), {"$unwind": "$reviews"}], ["copies of the product"]),
    ("no $match", [_join([SORT, LIMIT, PROJECT])], ["Start with `$match`"]),
])
def test_03_reviews_mistakes(tmp_db, name, pipeline, words):
    _not_yet(_check("03-product-reviews", tmp_db, pipeline), *words)


def test_03_predicted_count_is_exact():
    ex = labkit.exercises.get("03-predict-bounded-docs")
    ex.predict(20)
    _not_yet(ex.check(21), "the measurement says 21")


# --- 04: likes indexes (a transfer of the follows indexes); the count's extra key ----------------------------

def _likes(tmp_db, *specs):
    tmp_db.likes.insert_one({"_id": "l1", "userId": "u:1", "postId": "p:1", "createdAt": dt.datetime(2026, 1, 1)})
    for keys, options in specs:
        tmp_db.likes.create_index(keys, **options)
    return tmp_db.likes


def test_04_likes_solution_passes(tmp_db):
    likes = _likes(tmp_db, ([("postId", 1), ("userId", 1)], {"unique": True}), ([("userId", 1), ("createdAt", -1)], {}))
    assert _check("04-likes-indexes", likes).correct


def test_04_likes_mistake_only_the_follows_shape(tmp_db):
    """The lesson's first mistake on the new scenario: copying the follows' two pair indexes leaves the
    newest-first page unserved (a blocking SORT)."""
    likes = _likes(tmp_db, ([("userId", 1), ("postId", 1)], {"unique": True}), ([("postId", 1), ("userId", 1)], {}))
    _not_yet(_check("04-likes-indexes", likes), "blocking SORT", "createdAt")


def test_04_likes_mistake_forgetting_unique(tmp_db):
    likes = _likes(tmp_db, ([("postId", 1), ("userId", 1)], {}), ([("userId", 1), ("createdAt", -1)], {}))
    _not_yet(_check("04-likes-indexes", likes), "was accepted", "unique")


def test_04_likes_mistake_index_only_for_the_sort(tmp_db):
    """Kind 2: an index that gives the order but does not start with the equality field walks everyone's
    likes: judged by the keys the plan reads, not by the pattern."""
    likes = _likes(tmp_db, ([("postId", 1), ("userId", 1)], {"unique": True}), ([("createdAt", -1)], {}))
    _not_yet(_check("04-likes-indexes", likes), "does not start with `userId`")


def test_04_likes_mistake_no_index(tmp_db):
    _not_yet(_check("04-likes-indexes", _likes(tmp_db)), "no index but `_id`")


def test_04_count_prediction_explains_the_end_of_range_key():
    """Kind 4 and the message: 4,000 followers cost 4,001 keys; 4000 is not accepted, and the explanation
    names the extra key instead of claiming 4001 followers."""
    ex = labkit.exercises.get("04-predict-count-keys")
    ex.predict(4000)
    result = ex.check(4001)
    _not_yet(result, "the measurement says 4001", "past the end")
    assert "4001 followers" not in result.message
    ex.predict(4001)
    assert ex.check(4001).correct


# --- 06: top bids (a transfer of the bounded preview) --------------------------------------------------------

def add_bid(db, listing_id, bidder_id, amount):
    db.listings.update_one({"_id": listing_id}, {"$push": {"topBids": {
        "$each": [{"bidderId": bidder_id, "amount": amount}], "$sort": {"amount": -1}, "$slice": 3}}})


def _bidder(update):
    def fn(db, listing_id, bidder_id, amount):
        db.listings.update_one({"_id": listing_id}, update({"bidderId": bidder_id, "amount": amount}))
    return fn


def test_06_bids_solution_passes(tmp_db):
    assert _check("06-top-bids", tmp_db, add_bid).correct


@pytest.mark.parametrize("name, fn, words", [
    ("$position 0 keeps the newest", _bidder(lambda e: {"$push": {"topBids": {"$each": [e], "$position": 0,
                                                                               "$slice": 3}}}), ["NEWEST"]),
    ("ascending sort keeps the lowest", _bidder(lambda e: {"$push": {"topBids": {"$each": [e], "$sort": {"amount": 1},
                                                                                  "$slice": 3}}}), ["LOWEST"]),
    ("$slice -3 keeps the highest, lowest first", _bidder(lambda e: {"$push": {"topBids": {
        "$each": [e], "$sort": {"amount": 1}, "$slice": -3}}}), ["lowest first"]),
    ("no $slice", _bidder(lambda e: {"$push": {"topBids": {"$each": [e], "$sort": {"amount": -1}}}}),
     ["`$slice: 3`"]),
    ("whole entries copied", _bidder(lambda e: {"$push": {"topBids": {"$each": [dict(e, note="x")],
                                                                       "$sort": {"amount": -1}, "$slice": 3}}}),
     ["{bidderId, amount}"]),
])
def test_06_bids_mistakes(tmp_db, name, fn, words):
    _not_yet(_check("06-top-bids", tmp_db, fn), *words)


def test_06_bids_mistake_read_modify_write(tmp_db):
    def rmw(db, listing_id, bidder_id, amount):
        doc = db.listings.find_one({"_id": listing_id})
        top = sorted(doc["topBids"] + [{"bidderId": bidder_id, "amount": amount}], key=lambda b: -b["amount"])[:3]
        db.listings.update_one({"_id": listing_id}, {"$set": {"topBids": top}})
    _not_yet(_check("06-top-bids", tmp_db, rmw), "was lost")


def test_06_bids_mistake_two_writes(tmp_db):
    def two(db, listing_id, bidder_id, amount):
        db.listings.update_one({"_id": listing_id}, {"$push": {"topBids": {"bidderId": bidder_id, "amount": amount}}})
        db.listings.update_one({"_id": listing_id}, {"$push": {"topBids": {"$each": [], "$sort": {"amount": -1},
                                                                           "$slice": 3}}})
    _not_yet(_check("06-top-bids", tmp_db, two), "writes")


def test_04_likes_mistake_unique_on_one_field(tmp_db):
    """A unique index on one side alone refuses ordinary likes (a post has many likes)."""
    tmp_db.likes.insert_one({"_id": "l1", "userId": "u:1", "postId": "p:1", "createdAt": dt.datetime(2026, 1, 1)})
    tmp_db.likes.create_index([("postId", 1)], unique=True)
    _not_yet(_check("04-likes-indexes", tmp_db.likes), "only the PAIR")


def test_02_comment_index_mistake_partial_index_the_query_cannot_use(tmp_db):
    """Kind 2 on the lesson's second exercise: the ESR key pattern made partial on likes >= 20, which the query's
    likes >= 10 does not imply, serves nothing (COLLSCAN); the same index partial on likes >= 10 serves it."""
    tmp_db.comments.insert_one({"_id": "c1", "postId": "post:9", "likes": 12, "createdAt": dt.datetime(2026, 1, 1)})
    keys = [("postId", 1), ("createdAt", 1), ("likes", 1)]
    tmp_db.comments.create_index(keys, partialFilterExpression={"likes": {"$gte": 20}})
    _not_yet(_check("02-comment-index", tmp_db.comments), "it is partial", "does not imply")
    tmp_db.comments.drop_indexes()
    tmp_db.comments.create_index(keys, partialFilterExpression={"likes": {"$gte": 10}})
    assert _check("02-comment-index", tmp_db.comments).correct


# --- every mistake lessons 00-08 list, caught by a checker with a message of its own --------------------------

def _predicted(ex_id, guess, measured):
    ex = labkit.exercises.get(ex_id)
    ex.predict(guess)
    return ex.check(measured)


def test_00_top_mistake_every_operation():
    """Letting the rare operations (the moderation report) into the list the schema is designed for."""
    _not_yet(_check("00-top-operations", lambda w: list(w.sort_values("per_second", ascending=False)["operation"])),
             "returned every operation", "80%")


def test_00_top_mistake_one_short():
    def one_short(w):
        ranked = w.sort_values("per_second", ascending=False)
        return list(ranked[ranked["per_second"].cumsum() < 0.8 * ranked["per_second"].sum()]["operation"])
    _not_yet(_check("00-top-operations", one_short), "one short")


def test_00_predict_mistake_forgetting_the_average():
    """The product and its 5 newest reviews (6) without the average, which reads all 200 reviews again."""
    _not_yet(_predicted("00-predict-page-docs", 6, 206), "every review of the product again")


def give_role_in_two_writes(db, user_id, title, can_edit, when):
    db.users.update_one({"_id": user_id}, {"$push": {"roles": {"title": title, "canEdit": can_edit}}})
    db.users.update_one({"_id": user_id}, {"$set": {"updatedAt": when}})


def test_01_embed_mistake_two_writes(tmp_db):
    _not_yet(_check("01-embed-atomic", tmp_db, give_role_in_two_writes), "writes")


def test_01_policy_prediction_mistake_one_shared_definition():
    """Thinking of the embedded role as one shared definition: 1 rewrite instead of one per holder."""
    _not_yet(_predicted("01-predict-policy-rewrites", 1, 663), "carries a copy of the permission")


def test_02_comment_index_mistake_range_before_sort(tmp_db):
    tmp_db.comments.insert_one({"_id": "c1", "postId": "post:9", "likes": 12, "createdAt": dt.datetime(2026, 1, 1)})
    tmp_db.comments.create_index([("postId", 1), ("likes", 1), ("createdAt", 1)])
    _not_yet(_check("02-comment-index", tmp_db.comments), "puts the range (`likes`) before the sort field")


_COMMENTS_SORTED = [{"$sort": {"likes": -1, "_id": 1}}, {"$limit": 5}]


def _top_comments(stages_before, stages_after, author=None):
    lookup = {"$lookup": {"from": "users", "localField": "userId", "foreignField": "_id",
                          "pipeline": [{"$project": {"name": 1}}], "as": "author"}}
    project = {"$project": {"text": 1, "likes": 1, "author": author or {"$first": "$author.name"}}}
    return lambda post_id: [{"$match": {"postId": post_id}}, *stages_before, lookup, *stages_after, project]


def test_03_top_comments_solution_passes():
    assert _check("03-top-comments", _top_comments(_COMMENTS_SORTED, [])).correct


def test_03_top_comments_mistake_join_before_limit():
    """Joining every comment, then sorting and limiting: right result, every comment joined."""
    _not_yet(_check("03-top-comments", _top_comments([], _COMMENTS_SORTED)), "every comment is joined")


def test_03_top_comments_mistake_author_left_as_array():
    _not_yet(_check("03-top-comments", _top_comments(_COMMENTS_SORTED, [], author="$author.name")),
             "still the array")


def test_04_likes_mistake_one_compound_index_only(tmp_db):
    """Only one compound index: no COLLSCAN for 'who liked a post', yet the plan walks every like of the index
    (600 keys for a page of 20), judged by the keys read, not by the absence of COLLSCAN."""
    likes = _likes(tmp_db, ([("userId", 1), ("postId", 1)], {"unique": True}))
    _not_yet(_check("04-likes-indexes", likes), "index keys for a page of 20", "walks everyone's likes")


def test_04_count_prediction_mistake_constant_time():
    """Expecting an indexed count to read one key, whatever the number of followers."""
    _not_yet(_predicted("04-predict-count-keys", 1, 4001), "one per follower")


def test_04_counter_mistake_increment_before_insert(tmp_db):
    def leave(db, group_id, user_id):
        if db.memberships.delete_one({"groupId": group_id, "userId": user_id}).deleted_count:
            db.groups.update_one({"_id": group_id}, {"$inc": {"memberCount": -1}})
    _not_yet(_check("04-member-counter", tmp_db, join_counter_first, leave), "counted twice")


def test_05_reconcile_mistake_adding_only(tmp_db):
    def add_missing(db):
        for e in db.follows.find():
            db.users.update_one({"_id": e["followerId"]}, {"$addToSet": {"followingIds": e["followingId"]}})
            db.users.update_one({"_id": e["followingId"]}, {"$addToSet": {"followerIds": e["followerId"]}})
    _not_yet(_check("05-reconcile", tmp_db, add_missing), "should not be there")


def test_05_enroll_mistake_retrying_an_insert_one(tmp_db):
    def enroll(db, student_id, course_id, when):
        db.enrollments.insert_one({"studentId": student_id, "courseId": course_id, "enrolledAt": when})
        db.students.update_one({"_id": student_id}, {"$addToSet": {"courseIds": course_id}})
        db.courses.update_one({"_id": course_id}, {"$addToSet": {"studentIds": student_id}})
    _not_yet(_check("05-idempotent-enroll", tmp_db, enroll), "DuplicateKeyError", "never repairs the copies")


def test_05_enroll_mistake_push_in_a_retried_write(tmp_db):
    _not_yet(_check("05-idempotent-enroll", tmp_db, enroll_with_push), "`$push` adds it again")


def _rename(teams_update, snapshots=False):
    def rename_member(db, user_id, new_name):
        db.users.update_one({"_id": user_id}, {"$set": {"name": new_name}})
        teams_update(db, user_id, new_name)
        if snapshots:
            db.messages.update_many({"authorId": user_id}, {"$set": {"authorSnapshot.name": new_name}})
    return rename_member


def _teams_positional(db, user_id, new_name):
    db.teams.update_many({"members.userId": user_id}, {"$set": {"members.$.name": new_name}})


def test_06_rename_solution_passes(tmp_db):
    assert _check("06-rename-member", tmp_db, _rename(_teams_positional)).correct


def test_06_rename_mistake_rewriting_snapshots(tmp_db):
    _not_yet(_check("06-rename-member", tmp_db, _rename(_teams_positional, snapshots=True)), "authorSnapshot")


def test_06_rename_mistake_one_write_per_team(tmp_db):
    def per_team(db, user_id, new_name):
        for team in db.teams.find({"members.userId": user_id}, {"_id": 1}):
            db.teams.update_one({"_id": team["_id"], "members.userId": user_id},
                                {"$set": {"members.$.name": new_name}})
    _not_yet(_check("06-rename-member", tmp_db, _rename(per_team)), "one per team")


def test_06_rename_mistake_fixed_position(tmp_db):
    def first_slot(db, user_id, new_name):
        db.teams.update_many({"members.userId": user_id}, {"$set": {"members.0.name": new_name}})
    _not_yet(_check("06-rename-member", tmp_db, _rename(first_slot)), "fixed position")


_POST_SCHEMA = {"bsonType": "object", "required": ["authorId", "title", "createdAt"], "properties": {
    "authorId": {"bsonType": "string", "pattern": "^user:"},
    "title": {"bsonType": "string", "minLength": 1, "maxLength": 200}, "createdAt": {"bsonType": "date"}}}


_JSON_TYPES = {"type": "object", "required": ["authorId", "title", "createdAt"], "properties": {
    "authorId": {"type": "string"}, "title": {"type": "string", "maxLength": 200},
    "createdAt": {"type": "integer"}}}


@pytest.mark.parametrize("schema, words", [
    (dict(_POST_SCHEMA, properties=dict(_POST_SCHEMA["properties"],
                                        createdAt={"bsonType": "string", "format": "date-time"})), ["`format`"]),
    (_JSON_TYPES, ["`bsonType`", "integer"]),
])
def test_07_validator_mistake_json_schema_keywords(schema, words):
    _not_yet(_check("07-post-validator", {"$jsonSchema": schema}), *words)


def test_07_strict_prediction_mistake_old_document():
    """Believing strict validates the document an update starts from, so a repair would be refused."""
    _not_yet(_predicted("07-predict-strict-repair", False, True), "the document an update *produces*")


def _migrate(change=None):
    """Lesson 07's own migration (its solution), or a near miss made from it."""
    return solved("07-migrate-products", change)["migrate"]


def test_07_migrate_solution_passes(tmp_db):
    assert _check("07-migrate-products", tmp_db, _migrate()).correct


def test_07_migrate_mistake_bypass(tmp_db):
    bypass = _migrate(('{"$set": fix})', '{"$set": fix}, bypass_document_validation=True)'))
    _not_yet(_check("07-migrate-products", tmp_db, bypass), "bypass_document_validation=True")


def test_07_migrate_mistake_trimming_tags(tmp_db):
    _not_yet(_check("07-migrate-products", tmp_db, _migrate(("if tags[5:]:", "if False:"))), "lost tag(s)")


def test_08_growing_read_mistake_a_page():
    _not_yet(_predicted("08-predict-growing-read", "followers page", "follower count"),
             "every page stops after 20 keys")


def test_08_delete_mistake_posts_left(tmp_db):
    def user_only(db, user_id):
        db.follows.delete_many({"$or": [{"followerId": user_id}, {"followingId": user_id}]})
        db.comments.delete_many({"authorId": user_id})
        db.users.delete_one({"_id": user_id})
    _not_yet(_check("08-delete-account", tmp_db, user_only), "their posts")


def test_08_delete_mistake_follows_one_direction(tmp_db):
    _not_yet(_check("08-delete-account", tmp_db, delete_follows_one_direction), "follows of them (followingId)")


#: lesson -> {the start of each mistake its `mistakes:` lists: the test above that gives its wrong answer "Not yet"}
MISTAKE_TESTS = {
    "00_start_here": {
        "Sorting least frequent first": test_00_rank_mistake_ascending,
        "Keeping every operation, the rare reports": test_00_top_mistake_every_operation,
        "Forgetting that a rating average": test_00_predict_mistake_forgetting_the_average,
        "Stopping one row short of 80%": test_00_top_mistake_one_short,
        "Sorting the rate column on its own": test_00_rank_mistake_rate_column_sorted_on_its_own,
        "Predicting a count that forgets one read": test_00_predicted_count_is_exact,
    },
    "01_embed_one_to_few": {
        "Using roles.0.canEdit": test_01_positional_mistake_fixed_position,
        "Two update_one calls": test_01_embed_mistake_two_writes,
        "Embedding a shared, centrally managed role": test_01_policy_prediction_mistake_one_shared_definition,
        "Reading the order, computing the new total": test_01_order_lines_mistake_read_modify_write,
        "Filtering only on roles.title": test_01_positional_mistake_filter_without_the_user_id,
        "Adding a float amount to the Decimal128 total": test_01_order_lines_mistake_float_total,
    },
    "02_one_to_many": {
        "Indexing {customerId: 1, placedAt: -1, _id: 1}": test_02_orders_mistake_mixed_directions,
        "Leaving `_id` out of the index": test_02_orders_mistake_no_tie_breaker,
        "Making the index partial": test_02_orders_mistake_partial_index_the_query_cannot_use,
        "Adding a separate {customerId: 1}": test_02_orders_mistake_redundant_prefix,
        "Putting a range field before the sort field": test_02_comment_index_mistake_range_before_sort,
    },
    "03_lookup": {
        "Trimming the joined array after the $lookup": test_03_reviews_mistakes,
        "Joining every comment and limiting afterwards": test_03_top_comments_mistake_join_before_limit,
        "Leaving the joined author as an array": test_03_top_comments_mistake_author_left_as_array,
    },
    "04_follows": {
        "Creating only one of the two compound indexes": test_04_likes_mistake_one_compound_index_only,
        "Copying the follows' two pair indexes": test_04_likes_mistake_only_the_follows_shape,
        "A unique index on one side alone": test_04_likes_mistake_unique_on_one_field,
        "Forgetting unique: true": test_04_likes_mistake_forgetting_unique,
        "Expecting count_documents to be constant-time": test_04_count_prediction_mistake_constant_time,
        "Incrementing the counter before the edge insert": test_04_counter_mistake_increment_before_insert,
        "Predicting 4,000 keys for 4,000 followers": test_04_count_prediction_explains_the_end_of_range_key,
    },
    "05_two_way": {
        "Reconciling by adding missing ids only": test_05_reconcile_mistake_adding_only,
        "Retrying a follow whose edge insert_one fails": test_05_enroll_mistake_retrying_an_insert_one,
        "Using $push in a retried write": test_05_enroll_mistake_push_in_a_retried_write,
    },
    "06_denormalization": {
        "Keeping the newest bids with $position: 0": test_06_bids_mistakes,
        "$sort: {amount: 1} with $slice: -3": test_06_bids_mistakes,
        "Rewriting historical snapshots on rename": test_06_rename_mistake_rewriting_snapshots,
        "Copying whole entries": test_06_bids_mistakes,
        "Renaming team previews one team at a time": test_06_rename_mistake_one_write_per_team,
        "Setting members.0.name": test_06_rename_mistake_fixed_position,
    },
    "07_validation": {
        "Using type: 'integer' or JSON Schema's format": test_07_validator_mistake_json_schema_keywords,
        "Forgetting that updates are validated on the resulting": test_07_strict_prediction_mistake_old_document,
        "Believing a migration needs bypass_document_validation": test_07_migrate_mistake_bypass,
        "Trimming an over-long array in a migration": test_07_migrate_mistake_trimming_tags,
    },
    "08_capstone_profile": {
        "Expecting a page (posts, followers) to grow": test_08_growing_read_mistake_a_page,
        "Leaving orphaned posts after deleting users": test_08_delete_mistake_posts_left,
        "Deleting a user's follows in one direction only": test_08_delete_mistake_follows_one_direction,
    },
}


@pytest.mark.parametrize("lesson", sorted(MISTAKE_TESTS))
def test_every_listed_mistake_has_a_test(lesson):
    """Each mistake a lesson's `mistakes:` lists starts with exactly one key of MISTAKE_TESTS[lesson] (whose test
    gives that wrong answer "Not yet" with its own message), and every key is used."""
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    sys.path.insert(0, str(root / "tools"))
    import notebook_meta

    mistakes = notebook_meta.read_lesson(root / "notebooks" / "src" / f"{lesson}.py").mistakes
    assert mistakes, f"{lesson} lists no mistakes"
    keys = MISTAKE_TESTS[lesson]
    for mistake in mistakes:
        found = [k for k in keys if mistake.startswith(k)]
        assert len(found) == 1, f"{lesson}: mistake {mistake!r} has {len(found)} tests in MISTAKE_TESTS"
    unused = [k for k in keys if not any(m.startswith(k) for m in mistakes)]
    assert not unused, f"{lesson}: MISTAKE_TESTS names mistakes the lesson no longer lists: {unused}"
