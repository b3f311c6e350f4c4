"""Each exercise checker accepts good answers and rejects typical wrong ones."""
import datetime as dt

import pandas as pd
import pytest

import labkit
from exercise_helpers import solved
from labkit.engine import EmbeddedClient


def test_registry_and_unknown_id():
    assert {"00-rank-workload", "01-embed-atomic"} <= set(labkit.exercises.ids())
    with pytest.raises(KeyError, match="known ids"):
        labkit.exercises.get("nope")


def _workload():
    return pd.DataFrame({"operation": list("abcdefg"), "per_second": [5, 700, 1, 30, 0.1, 2, 9]})


def test_rank_workload():
    ex = labkit.exercises.get("00-rank-workload")
    good = _workload().sort_values("per_second", ascending=False)
    assert ex.check(good).correct and "'b'" in ex.check(good).message
    assert not ex.check(_workload())  # unsorted
    assert "least frequent first" in ex.check(_workload().sort_values("per_second")).message
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
    (_can_edit_everyone, False, "Lin's"),
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
def posts_db():
    return _social("t02", users=200, seed=3, celebrity_posts=120, indexes=False)


@pytest.mark.parametrize("keys, good, why", [
    ([("authorId", 1), ("createdAt", -1), ("_id", -1)], True, ""),
    ([("authorId", -1), ("createdAt", 1), ("_id", 1)], True, ""),  # the exact reverse serves the sort too
    ([("authorId", 1)], False, "blocking SORT"),
    ([("authorId", 1), ("createdAt", 1), ("_id", -1)], False, "blocking SORT"),
    # lesson 02's listed mistake: {authorId: 1, createdAt: 1} expected to serve createdAt -1, _id -1
    ([("authorId", 1), ("createdAt", 1)], False, "every direction matches the sort"),
    ([("createdAt", -1), ("_id", -1), ("authorId", 1)], False, "keys examined"),
    (None, False, "COLLSCAN"),
])
def test_feed_index(posts_db, keys, good, why):  # noqa: D103
    posts = posts_db.posts
    posts.drop_indexes()
    if keys:
        posts.create_index(keys)
    result = labkit.exercises.get("02-feed-index").check(posts)
    assert result.correct is good, result.message
    assert why in result.message


@pytest.fixture(scope="module")
def lookup_db():
    return _social("t03", users=100, seed=3, celebrity_posts=60)


def _lookup(inner, as_="posts"):
    return [{"$match": {"_id": "user:112"}},
            {"$lookup": {"from": "posts", "localField": "_id", "foreignField": "authorId", "as": as_,
                         "pipeline": inner}}]


def test_bounded_lookup(lookup_db):
    ex = labkit.exercises.get("03-bounded-lookup")
    good = [{"$sort": {"createdAt": -1, "_id": -1}}, {"$limit": 10}, {"$project": {"title": 1, "createdAt": 1}}]
    assert ex.check(lookup_db, _lookup(good)).correct
    assert ex.check(lookup_db, _lookup(good, as_="latest")).correct
    assert "10 with `$limit`" in ex.check(lookup_db, _lookup(good[::2])).message
    asc = [{"$sort": {"createdAt": 1, "_id": 1}}, {"$limit": 10}, {"$project": {"title": 1, "createdAt": 1}}]
    assert not ex.check(lookup_db, _lookup(asc)).correct
    assert "carry" in ex.check(lookup_db, _lookup(good[:2])).message
    assert "ex.check(db, pipeline)" in ex.check(_lookup(good)).message


def test_feed_index_rejects_a_redundant_authorId_index(posts_db):
    """Lesson 02's listed mistake: a separate {authorId: 1} next to the compound index."""
    posts = posts_db.posts
    posts.drop_indexes()
    posts.create_index([("authorId", 1), ("createdAt", -1), ("_id", -1)])
    posts.create_index([("authorId", 1)])
    result = labkit.exercises.get("02-feed-index").check(posts)
    assert not result.correct and "`authorId_1` is a prefix of `authorId_1_createdAt_-1__id_-1`" in result.message
    posts.drop_index("authorId_1")


def test_feed_index_is_judged_on_pristine_posts(posts_db):
    """Deleting the learner's posts cannot make a wrong index look cheap: the check uses its own data."""
    posts = posts_db.client["t02_empty"].posts
    posts.create_index([("createdAt", -1), ("_id", -1), ("authorId", 1)])
    result = labkit.exercises.get("02-feed-index").check(posts)
    assert not result.correct and "keys examined" in result.message


@pytest.mark.parametrize("inner, why", [
    # lesson 03's listed mistake: $limit before $sort keeps 10 posts in storage order
    ([{"$limit": 10}, {"$sort": {"createdAt": -1, "_id": -1}}, {"$project": {"title": 1, "createdAt": 1}}],
     "`$limit` comes before `$sort`"),
    ([{"$limit": 10}, {"$project": {"title": 1, "createdAt": 1}}], "limits without sorting"),
    ([{"$sort": {"createdAt": -1}}, {"$limit": 10}, {"$project": {"title": 1, "createdAt": 1}}], "tie-breaker"),
])
def test_bounded_lookup_order_mistakes(lookup_db, inner, why):
    result = labkit.exercises.get("03-bounded-lookup").check(lookup_db, _lookup(inner))
    assert not result.correct and why in result.message, result.message


@pytest.mark.parametrize("after", [
    {"$project": {"posts": {"$slice": ["$posts", 10]}}},
    {"$set": {"posts": {"$firstN": {"input": "$posts", "n": 10}}}},
    {"$addFields": {"posts": {"$sortArray": {"input": "$posts", "sortBy": {"createdAt": -1}}}}},
])
def test_bounded_lookup_trimming_after_the_join(lookup_db, after):
    """Lesson 03's listed mistake: trimming the joined array after $lookup instead of inside its pipeline."""
    pipeline = _lookup([{"$project": {"title": 1, "createdAt": 1}}]) + [after]
    result = labkit.exercises.get("03-bounded-lookup").check(lookup_db, pipeline)
    assert not result.correct and "*inside* the $lookup pipeline" in result.message
    assert result.outcome == "incorrect"


@pytest.fixture
def follows_coll():
    return _social("t04", users=120, seed=5, celebrity_followers=80, indexes=False).follows


def test_follow_indexes_good(follows_coll):
    follows_coll.create_index({"followerId": 1, "followingId": 1}, unique=True)
    follows_coll.create_index({"followingId": 1, "followerId": 1})
    assert labkit.exercises.get("04-follow-indexes").check(follows_coll).correct


def test_follow_indexes_not_unique_changes_nothing(follows_coll):
    follows_coll.create_index({"followerId": 1, "followingId": 1})
    follows_coll.create_index({"followingId": 1, "followerId": 1})
    before = follows_coll.count_documents({})
    result = labkit.exercises.get("04-follow-indexes").check(follows_coll)
    assert not result.correct and "unique" in result.message
    assert follows_coll.count_documents({}) == before


def test_follow_indexes_one_direction(follows_coll):
    follows_coll.create_index({"followerId": 1, "followingId": 1}, unique=True)
    assert "followingId" in labkit.exercises.get("04-follow-indexes").check(follows_coll).message


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


def test_bounded_preview():
    ex = labkit.exercises.get("06-bounded-preview")
    db = labkit.fresh_db("t06", client=EmbeddedClient())

    def good(db, uid, fid, name):
        db.users.update_one({"_id": uid}, {"$push": {"followerPreview": {
            "$each": [{"userId": fid, "name": name}], "$position": 0, "$slice": 3}}})

    def unbounded(db, uid, fid, name):
        db.users.update_one({"_id": uid}, {"$push": {"followerPreview": {"userId": fid, "name": name}}})

    def oldest_first(db, uid, fid, name):
        db.users.update_one({"_id": uid}, {"$push": {"followerPreview": {
            "$each": [{"userId": fid, "name": name}], "$slice": -3}}})

    def slice_minus_three(db, uid, fid, name):
        """Lesson 06's listed mistake: $slice: -3 with $position: 0 keeps the oldest."""
        db.users.update_one({"_id": uid}, {"$push": {"followerPreview": {
            "$each": [{"userId": fid, "name": name}], "$position": 0, "$slice": -3}}})

    def read_modify_write(db, uid, fid, name):
        """Issue 15's example: a lost update when two followers arrive together."""
        preview = db.users.find_one({"_id": uid}).get("followerPreview", [])
        preview = ([{"userId": fid, "name": name}] + preview)[:3]
        db.users.update_one({"_id": uid}, {"$set": {"followerPreview": preview}})

    def two_writes(db, uid, fid, name):
        db.users.update_one({"_id": uid}, {"$push": {"followerPreview": {"$each": [{"userId": fid, "name": name}],
                                                                        "$position": 0}}})
        db.users.update_one({"_id": uid}, {"$push": {"followerPreview": {"$each": [], "$slice": 3}}})

    def whole_profile(db, uid, fid, name):
        db.users.update_one({"_id": uid}, {"$push": {"followerPreview": {
            "$each": [{"userId": fid, "name": name, "email": "x@example.com", "bio": "..."}],
            "$position": 0, "$slice": 3}}})

    assert ex.check(db, good).correct
    assert "$slice" in ex.check(db, unbounded).message
    assert "oldest first" in ex.check(db, oldest_first).message
    assert "`$slice: -3` keeps the last three" in ex.check(db, slice_minus_three).message
    assert "was lost" in ex.check(db, read_modify_write).message
    assert "sent 2 writes" in ex.check(db, two_writes).message
    assert "only what the view needs" in ex.check(db, whole_profile).message
    assert db.users.count_documents({}) == 0, "the checker works on its own data, never the learner's"


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
