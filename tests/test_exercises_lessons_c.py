"""Exercises of lessons 00, 01, 03, 05, 06, 12 and 20 (lessons_c): each solution passes, each listed mistake and
near-miss fails with a message naming it, garbage gets a message."""
from __future__ import annotations

import pytest
from bson.decimal128 import Decimal128

import labkit
import labkit.exercises as exercises
from exercise_helpers import answer_cases, assert_prediction, assert_verdict, enroll_with_push, solved
from labkit.engine import EmbeddedClient


@pytest.fixture
def tmp_db():
    return labkit.fresh_db("t_lessons_c", client=EmbeddedClient())


def _check(ex_id, *args):
    return exercises.get(ex_id).check(*args)


# --- 00: the top rows of a workload ------------------------------------------------------------------------
# Source material: workload-first design ("list the operations with their rates, design for the top rows").

def top_solution(workload):
    ranked = workload.sort_values("per_second", ascending=False)
    before = ranked["per_second"].cumsum() - ranked["per_second"]
    return list(ranked[before < 0.8 * ranked["per_second"].sum()]["operation"])


def test_00_top_operations_solution_passes():
    result = _check("00-top-operations", top_solution)
    assert result.correct, result.message


def test_00_top_operations_ascending_sort():
    # listed mistake (00): sort_values is ascending by default
    def asc(workload):
        ranked = workload.sort_values("per_second")
        return list(ranked["operation"][: 2])
    result = _check("00-top-operations", asc)
    assert not result.correct and "rarest operation" in result.message


def test_00_top_operations_one_short_of_80_percent():
    def short(workload):
        ranked = workload.sort_values("per_second", ascending=False)
        return list(ranked[ranked["per_second"].cumsum() < 0.8 * ranked["per_second"].sum()]["operation"])
    result = _check("00-top-operations", short)
    assert not result.correct and "one short" in result.message


def test_00_top_operations_every_row_and_wrong_order():
    every = _check("00-top-operations", lambda w: list(w.sort_values("per_second", ascending=False)["operation"]))
    assert not every.correct and "every operation" in every.message
    order = _check("00-top-operations", lambda w: sorted(top_solution(w)))
    assert not order.correct and "wrong order" in order.message


def test_00_top_operations_too_many_and_dataframe_return():
    def too_many(workload):
        return list(workload.sort_values("per_second", ascending=False)["operation"][:3])
    result = _check("00-top-operations", too_many)
    assert not result.correct and ("too many" in result.message or "one short" in result.message
                                   or "every operation" in result.message)

    def frame(workload):
        ranked = workload.sort_values("per_second", ascending=False)
        before = ranked["per_second"].cumsum() - ranked["per_second"]
        return ranked[before < 0.8 * ranked["per_second"].sum()]
    assert _check("00-top-operations", frame).correct


def test_00_top_operations_garbage_gets_messages():
    assert _check("00-top-operations", None).outcome == "not-attempted"
    assert "pass your function" in _check("00-top-operations", 42).message
    assert "list of operation names" in _check("00-top-operations", lambda w: 3).message
    crash = _check("00-top-operations", lambda w: w["nope"])
    assert crash.outcome == "error" and "KeyError" in crash.message


def test_00_predict_page_docs():
    assert exercises.get("00-predict-page-docs").check(206).outcome == "not-attempted"
    assert_prediction("00-predict-page-docs", 6, 206, "every review")


# --- 01: one atomic write on an embedded one-to-few (order lines, money in Decimal128) ----------------------
# Manual: "Atomicity and Transactions" (a write to one document is atomic), "$inc", "$push", "Model Monetary
# Data" (Decimal128).

def _amount(qty, price):
    return Decimal128(price.to_decimal() * qty)


def add_line_solution(db, order_id, sku, qty, price):
    db.orders.update_one({"_id": order_id}, {"$push": {"lines": {"sku": sku, "qty": qty, "price": price}},
                                             "$inc": {"itemCount": qty, "total": _amount(qty, price)}})


def test_01_order_lines_solution_passes(tmp_db):
    result = _check("01-order-lines", tmp_db, add_line_solution)
    assert result.correct, result.message


def test_01_order_lines_two_writes(tmp_db):
    # listed mistake (01): two update_one calls instead of one write
    def two(db, order_id, sku, qty, price):
        db.orders.update_one({"_id": order_id}, {"$push": {"lines": {"sku": sku, "qty": qty, "price": price}}})
        db.orders.update_one({"_id": order_id}, {"$inc": {"itemCount": qty, "total": _amount(qty, price)}})
    result = _check("01-order-lines", tmp_db, two)
    assert not result.correct and "2 writes" in result.message


def test_01_order_lines_read_modify_write_loses_an_update(tmp_db):
    # listed mistake (01): total computed in Python from a read, written back with $set
    def rmw(db, order_id, sku, qty, price):
        order = db.orders.find_one({"_id": order_id})
        db.orders.update_one({"_id": order_id}, {"$push": {"lines": {"sku": sku, "qty": qty, "price": price}},
                                                 "$set": {"itemCount": order["itemCount"] + qty,
                                                          "total": Decimal128(order["total"].to_decimal()
                                                                              + price.to_decimal() * qty)}})
    result = _check("01-order-lines", tmp_db, rmw)
    assert not result.correct and "lost update" in result.message


def test_01_order_lines_replacement(tmp_db):
    def replace(db, order_id, sku, qty, price):
        order = db.orders.find_one({"_id": order_id})
        order["lines"].append({"sku": sku, "qty": qty, "price": price})
        order["itemCount"] += qty
        order["total"] = Decimal128(order["total"].to_decimal() + price.to_decimal() * qty)
        db.orders.replace_one({"_id": order_id}, order)
    result = _check("01-order-lines", tmp_db, replace)
    assert not result.correct and "replacement" in result.message


def test_01_order_lines_wrong_arithmetic_and_no_write(tmp_db):
    def no_count(db, order_id, sku, qty, price):
        db.orders.update_one({"_id": order_id}, {"$push": {"lines": {"sku": sku, "qty": qty, "price": price}},
                                                 "$inc": {"total": _amount(qty, price)}})
    assert "itemCount" in _check("01-order-lines", tmp_db, no_count).message

    def price_only(db, order_id, sku, qty, price):
        db.orders.update_one({"_id": order_id}, {"$push": {"lines": {"sku": sku, "qty": qty, "price": price}},
                                                 "$inc": {"itemCount": qty, "total": price}})
    assert "3 x 0.10 makes exactly 17.30" in _check("01-order-lines", tmp_db, price_only).message
    assert "no write" in _check("01-order-lines", tmp_db, lambda db, *a: None).message

    def every_order(db, order_id, sku, qty, price):
        db.orders.update_many({}, {"$push": {"lines": {"sku": sku, "qty": qty, "price": price}},
                                   "$inc": {"itemCount": qty, "total": _amount(qty, price)}})
    assert "order:2 changed" in _check("01-order-lines", tmp_db, every_order).message


def test_01_order_lines_garbage(tmp_db):
    assert _check("01-order-lines", None, None).outcome == "not-attempted"
    assert "ex.check(db, add_line)" in _check("01-order-lines", tmp_db).message
    crash = _check("01-order-lines", tmp_db, lambda db, *a: 1 / 0)
    assert crash.outcome == "error" and "ZeroDivisionError" in crash.message


def test_01_predict_policy_rewrites():
    assert_prediction("01-predict-policy-rewrites", 1, 663, "one per copy")


# --- 03: a bounded many-to-one join (comments -> commenter) -------------------------------------------------
# Manual: "$lookup" (localField/foreignField with a pipeline), "Aggregation Pipeline Optimization" ($sort + $limit
# coalescence), "$first" (array expression operator).

def top_comments_solution(post_id):
    return [{"$match": {"postId": post_id}}, {"$sort": {"likes": -1, "_id": 1}}, {"$limit": 5},
            {"$lookup": {"from": "users", "localField": "userId", "foreignField": "_id",
                         "pipeline": [{"$project": {"name": 1}}], "as": "author"}},
            {"$project": {"text": 1, "likes": 1, "author": {"$first": "$author.name"}}}]


def test_03_top_comments_solution_passes():
    result = _check("03-top-comments", top_comments_solution)
    assert result.correct, result.message


def test_03_top_comments_join_before_limit_is_measured():
    # listed mistake (03): $lookup before $sort/$limit joins every comment of the post
    def join_first(post_id):
        s = top_comments_solution(post_id)
        return [s[0], s[3], s[1], s[2], s[4]]
    result = _check("03-top-comments", join_first)
    assert not result.correct and "documents for 5 comments" in result.message


def test_03_top_comments_author_array_or_document():
    # listed mistake (03): the joined author left as an array / a whole document
    def as_array(post_id):
        s = top_comments_solution(post_id)
        return s[:4] + [{"$project": {"text": 1, "likes": 1, "author": 1}}]
    assert "still the array" in _check("03-top-comments", as_array).message

    def as_doc(post_id):
        s = top_comments_solution(post_id)
        return s[:4] + [{"$project": {"text": 1, "likes": 1, "author": {"$first": "$author"}}}]
    assert "whole document" in _check("03-top-comments", as_doc).message


def test_03_top_comments_order_ties_and_wrong_posts():
    def no_tiebreak(post_id):
        s = top_comments_solution(post_id)
        return [s[0], {"$sort": {"likes": -1, "_id": -1}}] + s[2:]
    result = _check("03-top-comments", no_tiebreak)
    assert not result.correct and ("ties" in result.message or "most-liked" in result.message)

    def newest(post_id):
        s = top_comments_solution(post_id)
        return [s[0], {"$sort": {"createdAt": -1}}] + s[2:]
    assert "not the 5 most-liked" in _check("03-top-comments", newest).message

    def reversed_order(post_id):
        return top_comments_solution(post_id) + [{"$sort": {"likes": 1, "_id": -1}}]
    assert "wrong order" in _check("03-top-comments", reversed_order).message

    def limit_first(post_id):
        s = top_comments_solution(post_id)
        return [s[0], s[2], s[1]] + s[3:]
    assert "comes before any `$sort`" in _check("03-top-comments", limit_first).message


def test_03_top_comments_wrong_join_extra_fields_no_lookup_garbage():
    def wrong_key(post_id):
        s = top_comments_solution(post_id)
        return s[:3] + [{"$lookup": {"from": "users", "localField": "postId", "foreignField": "_id",
                                     "as": "author"}}, s[4]]
    assert "localField" in _check("03-top-comments", wrong_key).message

    def extra(post_id):
        s = top_comments_solution(post_id)
        return s[:4] + [{"$set": {"author": {"$first": "$author.name"}}}]
    assert "still carry" in _check("03-top-comments", extra).message
    assert "no `$lookup`" in _check("03-top-comments", lambda p: [{"$match": {"postId": p}}]).message
    assert "list of stage documents" in _check("03-top-comments", lambda p: {"$match": {}}).message
    assert "fails on the server" in _check("03-top-comments", lambda p: [{"$lookup": {}}]).message
    assert "pass your function" in _check("03-top-comments", [1]).message
    assert _check("03-top-comments", None).outcome == "not-attempted"


def test_03_predict_bounded_docs():
    assert_prediction("03-predict-bounded-docs", 4001, 21, "never read")


# --- the ledger widget: one operation's slider range (a rare write's break-even) ----------------------------

def test_ledger_widget_max_rates_sets_one_sliders_range(tmp_db):
    import pytest as _pytest

    tmp_db.items.insert_many([{"_id": i} for i in range(10)])
    ledger = labkit.Ledger({"read": 900, "rename": 0.01})
    ledger.measure("a", "read", tmp_db, lambda d: list(d.items.find()))
    ledger.measure("a", "rename", tmp_db, lambda d: d.items.update_one({"_id": 1}, {"$set": {"x": 1}}))
    handle = ledger.widget("docs examined", max_rate=2000, max_rates={"rename": 20})
    # 0.01 renames a second is shown exactly, as 36 an hour; the range ends at 20 a second = 72,000 an hour
    assert handle.values["rename /h"] == 36 and handle.sliders["rename /h"].max == 72_000
    handle.set(**{"rename /h": 72_000})
    assert handle.result["a: docs examined /s"] == 900 * 10 + 20 * 1
    with _pytest.raises(ValueError, match="not in the workload"):
        ledger.widget(max_rates={"nope": 3})


# --- 06: a display cache follows a rename, a snapshot does not (teams and messages) -------------------------
# Manual: "The positional $ operator" (first matching element, with the array in the query), "update_many",
# data modeling "Handle Duplicate Data" (snapshots vs. data that must stay consistent).

rename_solution = solved("06-rename-member")["rename_member"]


def rename_with_array_filters(db, user_id, new_name):
    db.users.update_one({"_id": user_id}, {"$set": {"name": new_name}})
    db.teams.update_many({"members.userId": user_id}, {"$set": {"members.$[m].name": new_name}},
                         array_filters=[{"m.userId": user_id}])


def rename_team_by_team(db, user_id, new_name):  # listed mistake (06): one write per team
    db.users.update_one({"_id": user_id}, {"$set": {"name": new_name}})
    for team in list(db.teams.find({"members.userId": user_id}, {"_id": 1})):
        db.teams.update_one({"_id": team["_id"], "members.userId": user_id},
                            {"$set": {"members.$.name": new_name}})


def rename_fixed_position(db, user_id, new_name):  # listed mistake (06): members.0.name
    db.users.update_one({"_id": user_id}, {"$set": {"name": new_name}})
    db.teams.update_many({"members.userId": user_id}, {"$set": {"members.0.name": new_name}})


def rename_every_team(db, user_id, new_name):
    """Two writes and the right result, but the teams update visits every team."""
    db.users.update_one({"_id": user_id}, {"$set": {"name": new_name}})
    db.teams.update_many({}, {"$set": {"members.$[m].name": new_name}}, array_filters=[{"m.userId": user_id}])


def rename_every_element(db, user_id, new_name):
    db.users.update_one({"_id": user_id}, {"$set": {"name": new_name}})
    db.teams.update_many({"members.userId": user_id}, {"$set": {"members.$[].name": new_name}})


def rename_history_too(db, user_id, new_name):  # listed mistake (06): rewriting historical snapshots on rename
    rename_solution(db, user_id, new_name)
    db.messages.update_many({"authorId": user_id}, {"$set": {"authorSnapshot.name": new_name}})


@pytest.mark.parametrize("fn, why", [  # why: None for a right answer
    (rename_solution, None),
    (rename_with_array_filters, None),
    (rename_team_by_team, "one per team?"),
    (rename_every_team, "it visits every team"),
    (rename_every_element, "change only the matching entry's `name`"),
    (rename_fixed_position, "fixed position"),
    (rename_history_too, "history"),
])
def test_06_rename_member(tmp_db, fn, why):
    assert_verdict(_check("06-rename-member", tmp_db, fn), why)


def rename_one_team(db, user_id, new_name):
    db.users.update_one({"_id": user_id}, {"$set": {"name": new_name}})
    db.teams.update_one({"members.userId": user_id}, {"$set": {"members.$.name": new_name}})


def rename_teams_only(db, user_id, new_name):
    db.teams.update_many({"members.userId": user_id}, {"$set": {"members.$.name": new_name}})


def rename_rewrite_arrays(db, user_id, new_name):
    db.users.update_one({"_id": user_id}, {"$set": {"name": new_name}})
    for team in list(db.teams.find({"members.userId": user_id})):
        members = [dict(m, name=new_name) if m["userId"] == user_id else m for m in team["members"]]
        db.teams.update_one({"_id": team["_id"]}, {"$set": {"members": members}})


def rename_replace_user(db, user_id, new_name):
    db.users.replace_one({"_id": user_id}, {"name": new_name})
    db.teams.update_many({"members.userId": user_id}, {"$set": {"members.$.name": new_name}})


def rename_nothing(db, user_id, new_name):
    return None


RENAME_NEAR_MISSES = [  # run by test_near_misses
    (rename_one_team, "update every team"),
    (rename_teams_only, "canonical user"),
    (rename_rewrite_arrays, "rewrite whole `members` arrays"),
    (rename_replace_user, "other fields of user:7"),
    (rename_nothing, "no write"),
]


def test_06_rename_member_garbage():
    assert _check("06-rename-member", None, None).outcome == "not-attempted"
    assert "ex.check(db, rename_member)" in _check("06-rename-member", "db").message


def test_06_predict_oldest_preview():
    assert_prediction("06-predict-oldest-preview", 24, 18.0, "6-hour margin", right=18)


# --- 05: retry-safe writes to a two-way relationship (enrollments) ------------------------------------------
# Manual: "Retryable Writes" (a retried operation must be safe to repeat), "$addToSet", "upsert" with
# "$setOnInsert", "Unique Indexes" (E11000 duplicate key error, code 11000).

enroll_solution = solved("05-idempotent-enroll")["enroll"]


def test_05_enroll_solution_passes(tmp_db):
    result = _check("05-idempotent-enroll", tmp_db, enroll_solution)
    assert result.correct, result.message


def test_05_enroll_insert_one_raises_on_retry(tmp_db):
    # listed mistake (05): the retried edge insert fails with DuplicateKeyError
    def insert_edge(db, student_id, course_id, when):
        db.enrollments.insert_one({"studentId": student_id, "courseId": course_id, "enrolledAt": when})
        db.students.update_one({"_id": student_id}, {"$addToSet": {"courseIds": course_id}})
        db.courses.update_one({"_id": course_id}, {"$addToSet": {"studentIds": student_id}})
    result = _check("05-idempotent-enroll", tmp_db, insert_edge)
    assert not result.correct and "DuplicateKeyError" in result.message


def test_05_enroll_push_duplicates_on_retry(tmp_db):
    # listed mistake (05): $push in a retried write
    result = _check("05-idempotent-enroll", tmp_db, enroll_with_push)
    assert not result.correct and "$addToSet" in result.message


def test_05_enroll_copies_before_edge_and_swallowed_duplicates(tmp_db):
    def copies_first(db, student_id, course_id, when):
        db.students.update_one({"_id": student_id}, {"$addToSet": {"courseIds": course_id}})
        db.courses.update_one({"_id": course_id}, {"$addToSet": {"studentIds": student_id}})
        db.enrollments.update_one({"studentId": student_id, "courseId": course_id},
                                  {"$setOnInsert": {"enrolledAt": when}}, upsert=True)
    assert "before the enrollment" in _check("05-idempotent-enroll", tmp_db, copies_first).message

    def stops_at_duplicate(db, student_id, course_id, when):
        import pymongo.errors
        try:
            db.enrollments.insert_one({"studentId": student_id, "courseId": course_id, "enrolledAt": when})
        except pymongo.errors.DuplicateKeyError:
            return  # gives up: the copies a crash left undone are never written
        db.students.update_one({"_id": student_id}, {"$addToSet": {"courseIds": course_id}})
        db.courses.update_one({"_id": course_id}, {"$addToSet": {"studentIds": student_id}})
    assert "finish the writes a crash left undone" in _check("05-idempotent-enroll", tmp_db,
                                                              stops_at_duplicate).message

    def catches_and_carries_on(db, student_id, course_id, when):
        import pymongo.errors
        try:
            db.enrollments.insert_one({"studentId": student_id, "courseId": course_id, "enrolledAt": when})
        except pymongo.errors.DuplicateKeyError:
            pass
        db.students.update_one({"_id": student_id}, {"$addToSet": {"courseIds": course_id}})
        db.courses.update_one({"_id": course_id}, {"$addToSet": {"studentIds": student_id}})
    assert _check("05-idempotent-enroll", tmp_db, catches_and_carries_on).correct


def enroll_one_copy(db, student_id, course_id, when):
    db.enrollments.update_one({"studentId": student_id, "courseId": course_id},
                              {"$setOnInsert": {"enrolledAt": when}}, upsert=True)
    db.students.update_one({"_id": student_id}, {"$addToSet": {"courseIds": course_id}})


def enroll_nothing(db, student_id, course_id, when):
    return None


def enroll_wrong_fields(db, student_id, course_id, when):
    db.enrollments.update_one({"s": student_id, "c": course_id}, {"$set": {"at": when}}, upsert=True)


ENROLL_NEAR_MISSES = [  # run by test_near_misses
    (enroll_one_copy, "studentIds"),
    (enroll_nothing, "no write"),
    (enroll_wrong_fields, "studentId"),
]


def test_05_enroll_garbage(tmp_db):
    assert _check("05-idempotent-enroll", None, None).outcome == "not-attempted"
    assert "ex.check(db, enroll)" in _check("05-idempotent-enroll", tmp_db, 3).message


def test_05_predict_transaction_crash():
    assert "Choose one of" in exercises.get("05-predict-transaction-crash").predict(2)
    assert_prediction("05-predict-transaction-crash", 1, 0, "aborted")


# --- 12: computed values maintained on write (forum threads) ------------------------------------------------
# Manual: "$max" (updates only if the new value is greater), "$inc" (atomic on one document); the computed
# pattern (Building with Patterns: The Computed Pattern).

add_reply_solution = solved("12-thread-stats")["add_reply"]


def add_reply_set_time(db, reply):  # listed mistake (12): $set lastReplyAt, a late reply moves it back
    db.replies.insert_one(reply)
    db.threads.update_one({"_id": reply["threadId"]},
                          {"$inc": {"replyCount": 1}, "$set": {"lastReplyAt": reply["at"]}})


def add_reply_read_modify_write(db, reply):  # listed mistake (12): read the thread, write replyCount + 1 back
    db.replies.insert_one(reply)
    thread = db.threads.find_one({"_id": reply["threadId"]})
    db.threads.update_one({"_id": reply["threadId"]}, {"$set": {"replyCount": thread["replyCount"] + 1},
                                                       "$max": {"lastReplyAt": reply["at"]}})


def add_reply_recount(db, reply):  # the case: a full re-aggregation on every write
    db.replies.insert_one(reply)
    n = db.replies.count_documents({"threadId": reply["threadId"]})
    newest = db.replies.find_one({"threadId": reply["threadId"]}, sort=[("at", -1)])["at"]
    db.threads.update_one({"_id": reply["threadId"]}, {"$set": {"replyCount": n, "lastReplyAt": newest}})


@pytest.mark.parametrize("fn, why", [  # why: None for a right answer
    (add_reply_solution, None),
    (add_reply_set_time, "`$max` keeps"),
    (add_reply_read_modify_write, "lost update"),
    (add_reply_recount, "re-computing"),
])
def test_12_thread_stats(fn, why):
    assert_verdict(_check("12-thread-stats", fn), why)


def test_12_thread_stats_near_misses_and_garbage():
    def no_insert(db, reply):
        db.threads.update_one({"_id": reply["threadId"]},
                              {"$inc": {"replyCount": 1}, "$max": {"lastReplyAt": reply["at"]}})
    assert "insert the reply" in _check("12-thread-stats", no_insert).message

    def two_updates(db, reply):
        db.replies.insert_one(reply)
        db.threads.update_one({"_id": reply["threadId"]}, {"$inc": {"replyCount": 1}})
        db.threads.update_one({"_id": reply["threadId"]}, {"$max": {"lastReplyAt": reply["at"]}})
    assert "one `update_one`" in _check("12-thread-stats", two_updates).message

    def no_count(db, reply):
        db.replies.insert_one(reply)
        db.threads.update_one({"_id": reply["threadId"]}, {"$max": {"lastReplyAt": reply["at"]}})
    assert "replyCount" in _check("12-thread-stats", no_count).message

    def every_thread(db, reply):
        db.replies.insert_one(reply)
        db.threads.update_many({}, {"$inc": {"replyCount": 1}, "$max": {"lastReplyAt": reply["at"]}})
    assert not _check("12-thread-stats", every_thread).correct
    assert _check("12-thread-stats", None).outcome == "not-attempted"
    assert "ex2.check(add_reply)" in _check("12-thread-stats", None, add_reply_solution).message or \
        _check("12-thread-stats", None, add_reply_solution).outcome == "not-attempted"
    assert "pass your function" in _check("12-thread-stats", "add_reply").message


def test_12_predict_aggregate_keys():
    assert_prediction("12-predict-aggregate-keys", 1, 10_842, "every review")


# --- 20: describing an application to the decision helper ---------------------------------------------------
# Manual: data modeling "Embedded Data Versus References" (bounded vs. unbounded one-to-many), "Model One-to-Many
# Relationships with Document References".

def chat_solution():
    """Fresh copies of the lists the exercise's own solution builds."""
    names = solved("20-chat-workload")
    return names["access_patterns"], names["relationships"]


def test_20_chat_workload_solution_passes():
    result = _check("20-chat-workload", *chat_solution())
    assert result.correct, result.message


def test_20_chat_workload_guessed_bound():
    # listed mistake (20): an unbounded relationship given a guessed maximum
    access, rels = chat_solution()
    rels[1]["cardinality"] = [0, 2000, 10_000]
    result = _check("20-chat-workload", access, rels)
    assert not result.correct and "nothing bounds" in result.message


def test_20_chat_workload_near_misses():
    access, rels = chat_solution()
    access[0]["per_second"] = 20
    assert "rates" in _check("20-chat-workload", access, rels).message
    access, rels = chat_solution()
    access[0]["entities"] = ["channels", "messages"]
    assert "all three" in _check("20-chat-workload", access, rels).message
    access, rels = chat_solution()
    rels[1]["child_queried_alone"] = False
    assert "searched on their own" in _check("20-chat-workload", access, rels).message
    access, rels = chat_solution()
    rels[0]["cardinality"] = [0, 8, 500]
    assert "[2, 8, 50]" in _check("20-chat-workload", access, rels).message
    access, rels = chat_solution()
    rels[1]["child_doc_bytes"] = 0
    assert "refuses the input" in _check("20-chat-workload", access, rels).message
    access, rels = chat_solution()
    assert "channels -> messages" in _check("20-chat-workload", access, rels[:1]).message


def test_20_chat_workload_garbage():
    assert _check("20-chat-workload", None).outcome == "not-attempted"
    assert "both lists" in _check("20-chat-workload", "x").message
    assert "lists of dicts" in _check("20-chat-workload", {}, {}).message
    assert _check("20-chat-workload", [1], [2]).outcome in ("incorrect", "error")
    assert "refuses" in _check("20-chat-workload", [1], [2]).message


def test_20_predict_helper_model():
    ex = exercises.get("20-predict-helper-model")
    assert "Choose one of" in ex.predict("bucket")
    ex.predict("embed")
    wrong = ex.check("child reference")
    assert not wrong.correct and "unbounded" not in wrong.message.split(".")[0] and "lesson 02" in wrong.message
    ex.predict("child reference")
    assert ex.check("child reference").correct


# --- 05, 06: near misses, each named in the check's message ----------------------------------------------------

@pytest.mark.parametrize("ex_id, fn, why", [*answer_cases("06-rename-member", RENAME_NEAR_MISSES),
                                            *answer_cases("05-idempotent-enroll", ENROLL_NEAR_MISSES)])
def test_near_misses(tmp_db, ex_id, fn, why):
    assert why in _check(ex_id, tmp_db, fn).message
