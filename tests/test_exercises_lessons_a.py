"""Exercises of lessons 02, 04, 07 and 08 (predictions and changed-scenario builds): every listed mistake and
near-miss fails with a message about that mistake; each solution passes. (04-member-counter's answers are in
test_exercises_exa.py.)

Facts used (MongoDB manual): "Compound Indexes" / "The ESR (Equality, Sort, Range) Guideline" (02); "Unique
Indexes" and count's "Index Use" (04); "Specify Validation Level for Existing Documents" (07: strict applies
the rules to all updates, moderate skips updates to already-invalid documents; an update is validated on the
document it produces); "Database References" (08: the application resolves, and cleans up, references)."""
import pytest

import labkit
from exercise_helpers import (answer_cases, assert_prediction_round_trip, assert_verdict, delete_follows_one_direction,
                              solved)
from labkit.engine import EmbeddedClient
from labkit.exercises import observe
from labkit.exercises.lessons.l07_validation import PRODUCTS_SCHEMA


@pytest.fixture
def db():
    return labkit.fresh_db("t_lessons_a", client=EmbeddedClient())


# --- 02 --------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def comments():
    db = labkit.fresh_db("t_comments", client=EmbeddedClient())
    observe.seed_comments(db, {"post:9": 400, "post:3": 100})
    return db.comments


def _with_indexes(coll, *specs):
    coll.drop_indexes()
    for keys in specs:
        coll.create_index(keys)
    return coll


@pytest.mark.parametrize("specs, why", [
    ([], "COLLSCAN"),
    ([{"postId": 1}], "blocking SORT"),
    ([{"postId": 1, "likes": 1, "createdAt": 1}], "puts the range (`likes`) before the sort field"),
    ([{"postId": 1, "createdAt": 1}], "cannot check `likes >= 10` on its keys"),
    ([{"createdAt": 1, "postId": 1, "likes": 1}], "does not start with the equality field `postId`"),
    ([{"postId": 1, "createdAt": 1, "likes": 1}, {"postId": 1}], "is a prefix of"),
    ([{"postId": 1, "createdAt": 1, "likes": 1}], None),
    ([{"postId": -1, "createdAt": -1, "likes": -1}], None),
])
def test_comment_index(comments, specs, why):
    # ESR guideline (manual, "The ESR (Equality, Sort, Range) Guideline")
    result = labkit.exercises.get("02-comment-index").check(_with_indexes(comments, *specs))
    if why is None:
        assert result.correct, result.message
    else:
        assert not result.correct and result.outcome == "incorrect" and why in result.message, result.message


def test_comment_index_is_judged_on_pristine_comments(comments):
    _with_indexes(comments, {"postId": 1, "createdAt": 1, "likes": 1})
    comments.delete_many({"postId": "post:9"})  # the learner's data is damaged; the checker does not care
    try:
        assert labkit.exercises.get("02-comment-index").check(comments).correct
    finally:
        comments.database.drop_collection("comments")
        observe.seed_comments(comments.database, {"post:9": 400, "post:3": 100})


def test_comment_index_and_orders_index_want_a_collection(db):
    assert "pass the collection" in labkit.exercises.get("02-comment-index").check(db).message
    assert "pass the collection" in labkit.exercises.get("02-orders-index").check(db).message
    assert "pass the collection" in labkit.exercises.get("02-orders-index").check(42).message


# --- predictions -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("ex_id, right, wrong", [
    ("02-predict-feed-keys", 20, 5000),
    ("04-predict-count-keys", 4001, 4000),  # exact: 4,000 followers and the key past the end of the range
    ("07-predict-strict-repair", True, False),
    ("08-predict-growing-read", "follower count", "newest 20 posts"),
])
def test_predictions(ex_id, right, wrong):
    assert_prediction_round_trip(ex_id, right, wrong)


def test_growing_read_prediction_offers_only_the_page_operations():
    ex = labkit.exercises.get("08-predict-growing-read")
    assert "Choose one of" in ex.predict("the count")
    assert ex.check("follower count").outcome == "not-attempted"


# --- 07 --------------------------------------------------------------------------------------------------

def _tags(doc):
    tags = doc.get("tags") or []
    return [t.strip() for t in tags.split(",")] if isinstance(tags, str) else tags


def migrate(db):
    for doc in db.products.find({"$nor": [{"$jsonSchema": PRODUCTS_SCHEMA}]}):
        tags = _tags(doc)
        fix = {"tags": tags[:5], "name": doc.get("name") or doc["sku"]}
        if tags[5:]:
            fix["moreTags"] = tags[5:]
        db.products.update_one({"_id": doc["_id"]}, {"$set": fix})


def migrate_trim(db):  # lesson 07's old migration: the sixth tag and later silently lost
    for doc in db.products.find({"$nor": [{"$jsonSchema": PRODUCTS_SCHEMA}]}):
        db.products.update_one({"_id": doc["_id"]}, {"$set": {"tags": _tags(doc)[:5],
                                                              "name": doc.get("name") or doc["sku"]}})


def migrate_in_steps(db):  # only the name: the result is still invalid
    for doc in db.products.find({"$nor": [{"$jsonSchema": PRODUCTS_SCHEMA}]}):
        db.products.update_one({"_id": doc["_id"]}, {"$set": {"name": doc.get("name") or doc["sku"]}})


def migrate_bad_update(db):  # an update whose result breaks the rules: strict refuses it
    db.products.update_one({"_id": 2}, {"$set": {"name": "Lamp"}, "$unset": {"sku": ""}})


def migrate_loosened(db):
    db.command("collMod", "products", validationLevel="moderate")
    migrate(db)


def migrate_everything(db):
    for doc in db.products.find():
        tags = _tags(doc)
        db.products.replace_one({"_id": doc["_id"]}, {"sku": doc["sku"], "name": doc.get("name") or doc["sku"],
                                                      "tags": tags[:5], "moreTags": tags[5:]})


def migrate_collmod_only(db):  # lesson 07's listed mistake: expecting collMod to fix existing documents
    db.command("collMod", "products", validator={"$jsonSchema": PRODUCTS_SCHEMA}, validationLevel="strict")


def migrate_delete(db):
    db.products.delete_many({"$nor": [{"$jsonSchema": PRODUCTS_SCHEMA}]})


def migrate_unstripped(db):
    for doc in db.products.find({"$nor": [{"$jsonSchema": PRODUCTS_SCHEMA}]}):
        tags = doc.get("tags") or []
        tags = tags.split(",") if isinstance(tags, str) else tags
        fix = {"tags": tags[:5], "name": doc.get("name") or doc["sku"]}
        if tags[5:]:
            fix["moreTags"] = tags[5:]
        db.products.update_one({"_id": doc["_id"]}, {"$set": fix})


def migrate_reversed_overflow(db):
    for doc in db.products.find({"$nor": [{"$jsonSchema": PRODUCTS_SCHEMA}]}):
        tags = _tags(doc)
        db.products.update_one({"_id": doc["_id"]}, {"$set": {"tags": tags[-5:], "moreTags": tags[:-5],
                                                              "name": doc.get("name") or doc["sku"]}})


# strict validates the document an update produces (manual, "Specify Validation Level for Existing Documents")
MIGRATE_ANSWERS = [  # run by test_answers
    (migrate, None),
    (migrate_trim, "lost tag(s) ['wax', 'nordic']"),
    (migrate_in_steps, "still break the rules"),
    (migrate_bad_update, "refused one of your updates (code 121)"),
    (migrate_loosened, "must not loosen the validator"),
    (migrate_everything, "was already valid but was rewritten"),
    (migrate_delete, "were deleted"),
    (migrate_collmod_only, "still break the rules"),
    (migrate_unstripped, "strip each tag"),
    (migrate_reversed_overflow, "in that order"),
]


def test_migrate_products_needs_no_bypass_and_never_raises(db):
    ex = labkit.exercises.get("07-migrate-products")
    assert "no bypass" in ex.check(db, migrate).message
    assert ex.check(db, lambda d: 1 / 0).outcome == "error"
    assert "ex.check(practice, migrate)" in ex.check(db).message


# --- 08 --------------------------------------------------------------------------------------------------

delete_account = solved("08-delete-account")["delete_account"]


def delete_user_only(db, user_id):  # lesson 08's careless deletion
    db.users.delete_one({"_id": user_id})


def delete_posts_first(db, user_id):  # the posts go before their comments were found
    db.posts.delete_many({"authorId": user_id})
    post_ids = [p["_id"] for p in db.posts.find({"authorId": user_id}, {"_id": 1})]
    db.comments.delete_many({"$or": [{"postId": {"$in": post_ids}}, {"authorId": user_id}]})
    db.follows.delete_many({"$or": [{"followerId": user_id}, {"followingId": user_id}]})
    db.users.delete_one({"_id": user_id})


def delete_too_much(db, user_id):
    delete_account(db, user_id)
    db.comments.delete_many({"postId": {"$regex": "^post:3:"}})


DELETE_ANSWERS = [  # run by test_answers
    (delete_account, None),
    (delete_user_only, "still point at them"),
    (delete_follows_one_direction, "4 follows of them (followingId)"),
    (delete_posts_first, "comments on their posts"),
    (delete_too_much, "other users' data was deleted too (comments"),
]


# --- 07, 08: each answer checked on the learner's database ------------------------------------------------

@pytest.mark.parametrize("ex_id, fn, why", [*answer_cases("07-migrate-products", MIGRATE_ANSWERS),
                                            *answer_cases("08-delete-account", DELETE_ANSWERS)])
def test_answers(db, ex_id, fn, why):
    assert_verdict(labkit.exercises.get(ex_id).check(db, fn), why)


# --- sliders: the account the slider asks for ------------------------------------------------------------

def test_resize_children_grows_and_shrinks_to_exactly_n(db):
    from labkit.resize import resize_children

    db.posts.insert_one({"_id": "post:other", "authorId": "user:1"})
    make = lambda i: {"authorId": "user:slider", "n": i}  # noqa: E731
    assert resize_children(db.posts, "post:slider:", 37, make) == 37
    assert db.posts.count_documents({"authorId": "user:slider"}) == 37
    assert resize_children(db.posts, "post:slider:", 5, make) == 32
    assert sorted(d["n"] for d in db.posts.find({"authorId": "user:slider"})) == [0, 1, 2, 3, 4]
    assert resize_children(db.posts, "post:slider:", 5, make) == 0
    assert resize_children(db.posts, "post:slider:", 0, make) == 5
    assert db.posts.count_documents({}) == 1  # nothing outside the prefix is touched
    with pytest.raises(ValueError, match="whole number"):
        resize_children(db.posts, "post:slider:", -1, make)


def test_account_ladder_gives_exactly_n_with_bounded_work(db):
    from labkit.resize import AccountLadder

    ladder = AccountLadder(db.follows, "user:ladder-", 1000, 250,
                           lambda account, i: {"followingId": account, "followerId": f"user:{i}"})
    assert db.follows.count_documents({}) == 250 + 500 + 750 + 1000
    for n in (0, 1, 999, 1000, 260, 260, 3, 740):
        account = ladder.account_for(n)
        assert db.follows.count_documents({"followingId": account}) == n
        # every other rung account is back at its rung
        for other in ladder.accounts:
            if other != account:
                assert db.follows.count_documents({"followingId": other}) == int(other.split("-")[1])
    with pytest.raises(ValueError):
        ladder.account_for(1001)


def test_post_validator_with_an_expression_the_engine_lacks_gets_a_message():
    # issue 15: "an $expr validator in 07 raise uncaught errors"
    r = labkit.exercises.get("07-post-validator").check({"$expr": {"$gt": [{"$strLenCP": "$title"}, 0]}})
    assert r.outcome == "incorrect", r.message  # a message, whether or not the engine evaluates $strLenCP
