"""Each exercise checker accepts good answers and rejects typical wrong ones."""
import datetime as dt

import pandas as pd
import pytest

import labkit
from exercise_helpers import push_bid, solved
from labkit.engine import EmbeddedClient
from labkit.exercises.lessons.l00_start_here import RECIPE_COLUMNS, RECIPE_WORKLOAD


def test_registry_and_unknown_id():
    assert {"00-rank-workload", "01-embed-atomic"} <= set(labkit.exercises.ids())
    with pytest.raises(KeyError, match="known ids"):
        labkit.exercises.get("nope")


def _recipes():
    """Exercise 1 of lesson 00 ranks a recipe site's workload, as the notebook builds it (unranked)."""
    return pd.DataFrame(list(RECIPE_WORKLOAD), columns=list(RECIPE_COLUMNS))


def test_rank_workload():
    ex = labkit.exercises.get("00-rank-workload")
    good = _recipes().sort_values("per_second", ascending=False)
    assert ex.check(good).correct and "'Show a recipe'" in ex.check(good).message
    assert not ex.check(_recipes())  # unsorted
    assert "least frequent first" in ex.check(_recipes().sort_values("per_second")).message
    assert not ex.check(good.head(3))
    assert not ex.check(good.drop(columns="per_second"))
    assert not ex.check("b")
    assert ex.hint() != ex.hint() or len(ex.hints) == 1
    assert "sort_values" in ex.solution()


@pytest.fixture
def db():
    db = labkit.fresh_db("t01", client=EmbeddedClient())
    db.users.insert_many(labkit.seed.load_canonical()["users"])
    return db


def _give_role_good(db, user_id, title, can_edit, when):
    db.users.update_one({"_id": user_id}, {"$push": {"roles": {"title": title, "canEdit": can_edit}},
                                           "$set": {"updatedAt": when}})


def _give_role_two_writes(db, user_id, title, can_edit, when):
    """Lesson 01's listed mistake: one update_one for the role, another for updatedAt."""
    db.users.update_one({"_id": user_id}, {"$push": {"roles": {"title": title, "canEdit": can_edit}}})
    db.users.update_one({"_id": user_id}, {"$set": {"updatedAt": when}})


def _give_role_replace(db, user_id, title, can_edit, when):
    """A replacement that keeps roles and updatedAt but drops name and email (issue 15's example)."""
    old = db.users.find_one({"_id": user_id})
    db.users.replace_one({"_id": user_id}, {"roles": old["roles"] + [{"title": title, "canEdit": can_edit}],
                                            "updatedAt": when})


def _give_role_read_modify_write(db, user_id, title, can_edit, when):
    roles = db.users.find_one({"_id": user_id})["roles"] + [{"title": title, "canEdit": can_edit}]
    db.users.update_one({"_id": user_id}, {"$set": {"roles": roles, "updatedAt": when}})


def _give_role_fred_only(db, user_id, title, can_edit, when):
    db.users.update_one({"_id": "user:234"}, {"$push": {"roles": {"title": "moderator", "canEdit": True}},
                                              "$set": {"updatedAt": dt.datetime(2026, 10, 6, 8)}})


def test_embed_atomic_good(db):
    ex = labkit.exercises.get("01-embed-atomic")
    assert ex.check(db, _give_role_good).correct


@pytest.mark.parametrize("fn, why", [
    (_give_role_two_writes, "sent 2 writes"),
    (_give_role_replace, "replacement"),
    (_give_role_read_modify_write, "rewrites the whole `roles` array"),
    (_give_role_fred_only, "instead of the user it was given"),
    (lambda db, *a: None, "sent no write"),
])
def test_embed_atomic_wrong(db, fn, why):
    result = labkit.exercises.get("01-embed-atomic").check(db, fn)
    assert not result.correct and why in result.message, result.message
    assert result.outcome == "incorrect"


def test_embed_atomic_replacement_names_what_was_lost(db):
    result = labkit.exercises.get("01-embed-atomic").check(db, _give_role_replace)
    assert "email, name lost" in result.message


def test_embed_atomic_document_alone_asks_for_the_function(db):
    ex = labkit.exercises.get("01-embed-atomic")
    db.users.update_one({"_id": "user:234"}, {"$push": {"roles": {"title": "moderator", "canEdit": True}},
                                              "$set": {"updatedAt": dt.datetime(2026, 10, 6, 8)}})
    result = ex.check(db)
    assert not result.correct and "ex.check(db, give_role)" in result.message


def _can_edit_good(db, user_id, title, can_edit):
    db.users.update_one({"_id": user_id, "roles.title": title}, {"$set": {"roles.$.canEdit": can_edit}})


def _can_edit_index_zero(db, user_id, title, can_edit):
    """Lesson 01's listed mistake: roles.0 when the role's position is not known."""
    db.users.update_one({"_id": user_id}, {"$set": {"roles.0.canEdit": can_edit}})


def _can_edit_whole_array(db, user_id, title, can_edit):
    roles = db.users.find_one({"_id": user_id})["roles"]
    for r in roles:
        if r["title"] == title:
            r["canEdit"] = can_edit
    db.users.update_one({"_id": user_id}, {"$set": {"roles": roles}})


def _can_edit_everyone(db, user_id, title, can_edit):
    db.users.update_many({"roles.title": title}, {"$set": {"roles.$.canEdit": can_edit}})


@pytest.mark.parametrize("fn, good, why", [
    (_can_edit_good, True, "wherever it sat"),
    (_can_edit_index_zero, False, "position 2 for this user"),
    (_can_edit_whole_array, False, "rewrites the whole `roles` array"),
    (_can_edit_everyone, False, "roles changed too"),
])
def test_positional_role(db, fn, good, why):
    result = labkit.exercises.get("01-positional-role").check(db, fn)
    assert result.correct is good and why in result.message, result.message


# --- 02..08: each checker accepts the lesson's answer and rejects typical mistakes -----------------------

def _social(name, **kw):
    db = labkit.fresh_db(name, client=EmbeddedClient())
    labkit.seed.social(db, progress=False, **kw)
    return db


@pytest.fixture(scope="module")
def orders_db():
    """A learner's practice database with a few orders; the checker judges the indexes on orders of its own."""
    db = labkit.fresh_db("t02", client=EmbeddedClient())
    db.orders.insert_many([{"_id": f"o{i}", "customerId": f"cust:{i % 5}", "placedAt": dt.datetime(2026, 3, 1 + i)}
                           for i in range(20)])
    return db


@pytest.mark.parametrize("keys, good, why", [
    ([("customerId", 1), ("placedAt", -1), ("_id", -1)], True, ""),
    ([("customerId", -1), ("placedAt", 1), ("_id", 1)], True, ""),  # the exact reverse serves the sort too
    ([("customerId", 1)], False, "blocking SORT"),
    ([("customerId", 1), ("placedAt", 1), ("_id", -1)], False, "yours mixes"),
    # lesson 02's listed mistake: the directions must all match the sort or all be reversed
    ([("customerId", 1), ("placedAt", -1), ("_id", 1)], False, "every direction as in the sort"),
    ([("customerId", 1), ("placedAt", 1)], False, "Add `_id` after `placedAt`"),
    ([("placedAt", -1), ("_id", -1), ("customerId", 1)], False, "keys examined"),
    (None, False, "COLLSCAN"),
])
def test_orders_index(orders_db, keys, good, why):  # noqa: D103
    orders = orders_db.orders
    orders.drop_indexes()
    if keys:
        orders.create_index(keys)
    result = labkit.exercises.get("02-orders-index").check(orders)
    assert result.correct is good, result.message
    assert why in result.message


@pytest.fixture(scope="module")
def lookup_db():
    """The learner's shop; the checker runs the pipeline on products and reviews of its own."""
    return labkit.fresh_db("t03", client=EmbeddedClient())


def _lookup(inner, as_="reviews"):
    return [{"$match": {"_id": "prod:7"}},
            {"$lookup": {"from": "reviews", "localField": "_id", "foreignField": "productId", "as": as_,
                         "pipeline": inner}}]


def test_product_reviews(lookup_db):
    ex = labkit.exercises.get("03-product-reviews")
    good = [{"$sort": {"createdAt": -1, "_id": -1}}, {"$limit": 5}, {"$project": {"stars": 1, "text": 1}}]
    assert ex.check(lookup_db, _lookup(good)).correct
    assert 'name it with `as: "reviews"`' in ex.check(lookup_db, _lookup(good, as_="latest")).message
    assert "5 with `$limit`" in ex.check(lookup_db, _lookup(good[::2])).message
    asc = [{"$sort": {"createdAt": 1, "_id": 1}}, {"$limit": 5}, {"$project": {"stars": 1, "text": 1}}]
    assert "OLDEST" in ex.check(lookup_db, _lookup(asc)).message
    assert "carry" in ex.check(lookup_db, _lookup(good[:2])).message
    assert "ex.check(shop, pipeline)" in ex.check(_lookup(good)).message


def test_orders_index_rejects_a_redundant_customerId_index(orders_db):
    """Lesson 02's listed mistake: a separate {customerId: 1} next to the compound index."""
    orders = orders_db.orders
    orders.drop_indexes()
    orders.create_index([("customerId", 1), ("placedAt", -1), ("_id", -1)])
    orders.create_index([("customerId", 1)])
    result = labkit.exercises.get("02-orders-index").check(orders)
    assert not result.correct and "`customerId_1` is a prefix of `customerId_1_placedAt_-1__id_-1`" in result.message
    orders.drop_index("customerId_1")


def test_orders_index_is_judged_on_the_checkers_orders(orders_db):
    """An empty collection cannot make a wrong index look cheap: the check uses its own data."""
    orders = orders_db.client["t02_empty"].orders
    orders.create_index([("placedAt", -1), ("_id", -1), ("customerId", 1)])
    result = labkit.exercises.get("02-orders-index").check(orders)
    assert not result.correct and "keys examined" in result.message


@pytest.mark.parametrize("inner, why", [
    # lesson 03's listed mistake: $limit before $sort keeps 5 reviews in storage order
    ([{"$limit": 5}, {"$sort": {"createdAt": -1, "_id": -1}}, {"$project": {"stars": 1, "text": 1}}],
     "`$limit` comes before `$sort`"),
    ([{"$limit": 5}, {"$project": {"stars": 1, "text": 1}}], "limits without sorting"),
    ([{"$sort": {"createdAt": -1}}, {"$limit": 5}, {"$project": {"stars": 1, "text": 1}}], "tie-breaker"),
])
def test_product_reviews_order_mistakes(lookup_db, inner, why):
    result = labkit.exercises.get("03-product-reviews").check(lookup_db, _lookup(inner))
    assert not result.correct and why in result.message, result.message


@pytest.mark.parametrize("after", [
    {"$project": {"reviews": {"$slice": ["$reviews", 5]}}},
    {"$set": {"reviews": {"$firstN": {"input": "$reviews", "n": 5}}}},
    {"$addFields": {"reviews": {"$sortArray": {"input": "$reviews", "sortBy": {"createdAt": -1}}}}},
])
def test_product_reviews_trimming_after_the_join(lookup_db, after):
    """Lesson 03's listed mistake: trimming the joined array after $lookup instead of inside its pipeline."""
    pipeline = _lookup([{"$project": {"stars": 1, "text": 1}}]) + [after]
    result = labkit.exercises.get("03-product-reviews").check(lookup_db, pipeline)
    assert not result.correct and "*inside* the $lookup pipeline" in result.message
    assert result.outcome == "incorrect"


@pytest.fixture
def likes_coll():
    db = labkit.fresh_db("t04", client=EmbeddedClient())
    db.likes.insert_many([{"_id": f"l{i}", "userId": f"u:{i % 9}", "postId": f"p:{i % 13}",
                           "createdAt": dt.datetime(2026, 6, 1, i % 24)} for i in range(100)])
    return db.likes


def test_likes_indexes_good(likes_coll):
    likes_coll.create_index({"postId": 1, "userId": 1}, unique=True)
    likes_coll.create_index({"userId": 1, "createdAt": -1})
    assert labkit.exercises.get("04-likes-indexes").check(likes_coll).correct


def test_likes_indexes_not_unique_changes_nothing(likes_coll):
    likes_coll.create_index({"postId": 1, "userId": 1})
    likes_coll.create_index({"userId": 1, "createdAt": -1})
    before = list(likes_coll.find())
    result = labkit.exercises.get("04-likes-indexes").check(likes_coll)
    assert not result.correct and "unique" in result.message
    assert list(likes_coll.find()) == before, "the checker tries the duplicate on a copy, never the learner's data"


def test_likes_indexes_one_page_only(likes_coll):
    likes_coll.create_index({"postId": 1, "userId": 1}, unique=True)
    message = labkit.exercises.get("04-likes-indexes").check(likes_coll).message
    assert "a user's likes, newest first" in message and "COLLSCAN" in message


def _full_rebuild(db):
    """The lesson's own job (issue 15: the exercise accepted it): rewrites every user."""
    for field, key, other in (("followingIds", "followerId", "followingId"), ("followerIds", "followingId", "followerId")):
        db.users.update_many({}, {"$set": {field: []}})
        for g in db.follows.aggregate([{"$group": {"_id": f"${key}", "ids": {"$push": f"${other}"}}}]):
            db.users.update_one({"_id": g["_id"]}, {"$set": {field: g["ids"]}})


_reconcile_good = solved("05-reconcile")["reconcile"]


def test_reconcile():
    ex = labkit.exercises.get("05-reconcile")
    db = _social("t05", users=60, seed=5, celebrity_followers=30)
    assert ex.check(db, _reconcile_good).correct
    assert "that is a full rebuild" in ex.check(db, _full_rebuild).message

    def only_adds(db):  # lesson 05's listed mistake: adds missing ids, never removes ids that should not be there
        for g in db.follows.aggregate([{"$group": {"_id": "$followingId", "ids": {"$push": "$followerId"}}}]):
            db.users.update_one({"_id": g["_id"]}, {"$addToSet": {"followerIds": {"$each": g["ids"]}}})
        for g in db.follows.aggregate([{"$group": {"_id": "$followerId", "ids": {"$push": "$followingId"}}}]):
            db.users.update_one({"_id": g["_id"]}, {"$addToSet": {"followingIds": {"$each": g["ids"]}}})

    assert "that should not be there remain" in ex.check(db, only_adds).message

    def touches_edges(db):
        db.follows.delete_one({})
        _reconcile_good(db)

    assert "edges changed" in ex.check(db, touches_edges).message


def test_top_bids():
    ex = labkit.exercises.get("06-top-bids")
    db = labkit.fresh_db("t06", client=EmbeddedClient())

    def whole_bid(db, listing_id, bidder_id, amount):
        db.listings.update_one({"_id": listing_id}, {"$push": {"topBids": {
            "$each": [{"bidderId": bidder_id, "amount": amount, "email": "x@example.com"}],
            "$sort": {"amount": -1}, "$slice": 3}}})

    assert ex.check(db, push_bid(**{"$sort": {"amount": -1}, "$slice": 3})).correct
    assert "`$slice: 3`" in ex.check(db, push_bid(**{"$sort": {"amount": -1}})).message
    assert "only 2 entries" in ex.check(db, push_bid(**{"$sort": {"amount": -1}, "$slice": 2})).message
    assert "NEWEST" in ex.check(db, push_bid(**{"$position": 0, "$slice": 3})).message
    assert "only what the listing page shows" in ex.check(db, whole_bid).message
    assert db.listings.count_documents({}) == 0, "the checker works on its own data, never the learner's"


def test_post_validator():
    ex = labkit.exercises.get("07-post-validator")
    good = {"$jsonSchema": {"bsonType": "object", "required": ["authorId", "title", "createdAt"], "properties": {
        "authorId": {"bsonType": "string", "pattern": "^user:"},
        "title": {"bsonType": "string", "minLength": 1, "maxLength": 200},
        "createdAt": {"bsonType": "date"}}}}
    assert ex.check(good).correct
    loose = {"$jsonSchema": {"required": ["authorId", "title", "createdAt"]}}
    assert "accepted" in ex.check(loose).message
    closed = {"$jsonSchema": dict(good["$jsonSchema"], additionalProperties=False)}
    assert "valid post was rejected" in ex.check(closed).message
    # lesson 07's listed mistake: JSON Schema's `type`/`format` instead of MongoDB's `bsonType`
    assert "does not support the `format` keyword" in ex.check({"$jsonSchema": {"format": "date"}}).message
    typed = {"$jsonSchema": {"required": ["authorId"], "properties": {"authorId": {"type": "string"},
                                                                      "n": {"type": "integer"}}}}
    assert "Use `bsonType`" in ex.check(typed).message
    # issue 15's example: the unanchored pattern "user:" accepts ids that merely contain it
    unanchored = {"$jsonSchema": dict(good["$jsonSchema"], properties=dict(
        good["$jsonSchema"]["properties"], authorId={"bsonType": "string", "pattern": "user:"}))}
    result = ex.check(unanchored)
    assert not result.correct and "anchor the pattern" in result.message
    assert "refuses" in ex.check({"$jsonSchema": {"bsonType": "nonsense"}}).message
    expr = {"$expr": {"$gt": ["$missing.field", 3]}}
    assert ex.check(expr).outcome in ("incorrect", "error")


def test_orphans():
    ex = labkit.exercises.get("08-orphans")
    db = _social("t08", users=80, seed=8, celebrity_posts=30)
    assert "no orphaned" in ex.check(db, []).message
    db.users.delete_many({"_id": {"$in": ["user:1", "user:2"]}})
    truth = sorted(p["_id"] for p in db.posts.find({"authorId": {"$in": ["user:1", "user:2"]}}))
    assert ex.check(db, truth).correct
    assert "not sorted" in ex.check(db, truth[::-1]).message or len(truth) < 2
    assert "missing" in ex.check(db, truth[1:]).message
