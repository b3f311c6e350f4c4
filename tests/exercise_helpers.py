"""Shared checks for exercise tests (imported by the test_exercises_* files)."""
from __future__ import annotations

from typing import Any

import pytest

import labkit


def assert_prediction_round_trip(ex_id: str, right: Any, wrong: Any) -> None:
    """A Prediction says "not attempted" before any prediction, rejects a wrong one with the measurement,
    accepts the right one, and explains it."""
    ex = labkit.exercises.get(ex_id)
    assert ex.check(right).outcome == "not-attempted"  # no prediction yet
    ex.predict(wrong)
    r = ex.check(right)
    assert not r.correct and "the measurement says" in r.message
    ex.predict(right)
    assert ex.check(right).correct
    assert ex.explain(right)


def assert_prediction(ex_id: str, wrong: Any, measured: Any, why: str = "", right: Any = None) -> None:
    """A Prediction refuses the ``wrong`` guess with a message that says ``why``, then accepts ``measured`` (or
    ``right``, another spelling of it, when given)."""
    ex = labkit.exercises.get(ex_id)
    ex.predict(wrong)
    r = ex.check(measured)
    assert not r.correct and why in r.message, r.message
    ex.predict(measured if right is None else right)
    assert ex.check(measured).correct


def assert_verdict(result: Any, why: str | None) -> None:
    """A check's result: passed when ``why`` is None, else refused as incorrect (not an error of the learner's
    code, not "not attempted") with a message that says ``why``."""
    if why is None:
        assert result.correct, result.message
    else:
        assert result.outcome == "incorrect" and why in result.message, (result.outcome, result.message)


def answer_cases(ex_id: str, rows: list[tuple[Any, str | None]]) -> list:
    """pytest parameters ``(ex_id, fn, why)``, one per ``(fn, why)`` row of answers to ``ex_id`` (``why`` None for a
    right answer), for one test that runs the answers of several exercises the same way."""
    return [pytest.param(ex_id, fn, why, id=f"{ex_id}-{getattr(fn, '__name__', 'answer')}") for fn, why in rows]


def solved(ex_id: str, change: tuple[str, str] | None = None) -> dict[str, Any]:
    """What the exercise's own solution (``ex.solution()``) defines: the functions and values a test checks, so a
    test never keeps a second copy of the solution. Each top-level statement runs on its own; one that needs the
    notebook (``practice``, ``ex``) is left out. ``re`` is there, as in the notebooks.

    ``change=(old, new)`` replaces the text ``old`` (which must be there) by ``new`` first: a learner's near miss
    made from the solution itself."""
    import ast
    import re

    text = labkit.exercises.get(ex_id).solution()
    if change is not None:
        assert change[0] in text, f"{ex_id}'s solution no longer contains {change[0]!r}: update the test's change"
        text = text.replace(*change, 1)
    names: dict[str, Any] = {"re": re}
    for node in ast.parse(text).body:
        code = compile(ast.Module([node], type_ignores=[]), f"<solution of {ex_id}>", "exec")
        try:
            exec(code, names)  # noqa: S102 - labkit's own solution text
        except NameError:
            continue
    return names


def prune_indexes(compare_collation: bool):
    """Lesson 35's pruning rule as a learner writes it: drop every index no operation used and every index whose
    keys are a prefix of another's, except _id, unique and TTL indexes; ``compare_collation`` False is the
    lesson's mistake (an index with its own collation called a redundant prefix)."""

    def prune(tickets):
        used = {s["name"] for s in tickets.aggregate([{"$indexStats": {}}]) if s["accesses"]["ops"] > 0}
        infos = tickets.index_information()
        for name, info in infos.items():
            if name == "_id_" or info.get("unique") or "expireAfterSeconds" in info:
                continue
            keys = list(info["key"])
            prefix = any(len(o["key"]) > len(keys) and list(o["key"])[:len(keys)] == keys
                         and (not compare_collation or o.get("collation") == info.get("collation"))
                         for other, o in infos.items() if other != name)
            if prefix or name not in used:
                tickets.drop_index(name)
    return prune


def push_bid(**modifiers: Any):
    """An answer to 06-top-bids: ``add_bid`` pushes the bid into the listing's ``topBids`` with ``$each`` and the
    given ``$push`` modifiers (``$sort``, ``$slice``, ``$position``)."""
    def add_bid(db: Any, listing_id: Any, bidder_id: Any, amount: Any) -> None:
        db.listings.update_one({"_id": listing_id}, {"$push": {"topBids": {
            "$each": [{"bidderId": bidder_id, "amount": amount}], **modifiers}}})
    return add_bid


def join_counter_first(db: Any, group_id: Any, user_id: Any) -> None:
    """04-member-counter's listed mistake: the counter is incremented before the membership is inserted, and kept
    when the insert is a duplicate (joining twice counts twice)."""
    from pymongo.errors import DuplicateKeyError

    db.groups.update_one({"_id": group_id}, {"$inc": {"memberCount": 1}})
    try:
        db.memberships.insert_one({"groupId": group_id, "userId": user_id})
    except DuplicateKeyError:
        pass


def enroll_with_push(db: Any, student_id: Any, course_id: Any, when: Any) -> None:
    """05-idempotent-enroll's listed mistake: ``$push`` in a write that may be retried (a retry adds the id
    again)."""
    db.enrollments.update_one({"studentId": student_id, "courseId": course_id},
                              {"$setOnInsert": {"enrolledAt": when}}, upsert=True)
    db.students.update_one({"_id": student_id}, {"$push": {"courseIds": course_id}})
    db.courses.update_one({"_id": course_id}, {"$push": {"studentIds": student_id}})


def delete_follows_one_direction(db: Any, user_id: Any) -> None:
    """08-delete-account's listed mistake: the account's posts, comments and own follows go, but the follows of
    it (``followingId``) stay behind."""
    post_ids = [p["_id"] for p in db.posts.find({"authorId": user_id}, {"_id": 1})]
    db.comments.delete_many({"$or": [{"postId": {"$in": post_ids}}, {"authorId": user_id}]})
    db.posts.delete_many({"authorId": user_id})
    db.follows.delete_many({"followerId": user_id})
    db.users.delete_one({"_id": user_id})


def rename_by_old_name(db: Any, agent_id: Any, new_name: Any) -> None:
    """16-extended-reference-tickets' listed mistake: the tickets' copies are found by the old copied name, so a
    namesake agent's tickets are renamed too."""
    old = db.agents.find_one({"_id": agent_id})["name"]
    db.agents.update_one({"_id": agent_id}, {"$set": {"name": new_name}})
    db.tickets.update_many({"agent.name": old}, {"$set": {"agent.name": new_name}})
