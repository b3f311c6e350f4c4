"""Wrong answers a learner really writes for the exercises of lessons 00-19 (issue 15): each is refused with a
message specific to the mistake, the right answers pass, and no checker raises on any input.

The facts the checkers rely on come from the MongoDB manual: update operators ($push, $addToSet, $inc, $max,
positional `$` and `$[<id>]` with arrayFilters: manual "Update Operators"), upsert semantics (manual
"db.collection.updateOne() / upsert"), $jsonSchema validation (manual "Schema Validation"), sparse and partial
indexes (manual "Sparse Indexes", "Partial Indexes")."""
from __future__ import annotations

import datetime as dt

import pytest

from bson.decimal128 import Decimal128

import labkit
from exercise_helpers import answer_cases, assert_verdict, join_counter_first, push_bid, solved
from labkit import exercises
from labkit.engine import EmbeddedClient
from labkit.exercises import Prediction

MY_IDS = [i for i in exercises.ids() if int(i[:2]) < 20]


@pytest.fixture
def db():
    d = labkit.fresh_db("t_exa", client=EmbeddedClient())
    d.users.insert_many(labkit.seed.load_canonical()["users"])
    return d


def _check(ex_id, *args):
    return exercises.get(ex_id).check(*args)


# --- robustness: every checker of lessons 00-19, on any input ------------------------------------------------

def _boom(*a, **k):
    raise RuntimeError("learner bug")


def _noargs():
    return 1


_INPUTS = {"None": (None,), "garbage": ("garbage",), "int": (42,), "dict": ({},), "list": ([1, 2],),
           "db": ("DB",), "db+raising function": ("DB", _boom), "db+function without parameters": ("DB", _noargs),
           "db+string": ("DB", "x"), "raising function": (_boom,), "db, two raising functions": ("DB", _boom, _boom),
           "collection": ("COLL",), "db+pipeline": ("DB", [{"$match": {}}])}


@pytest.mark.parametrize("ex_id", MY_IDS)
def test_no_checker_raises_or_accepts_garbage(ex_id, db):
    for name, args in _INPUTS.items():
        args = tuple(db if a == "DB" else db.things if a == "COLL" else a for a in args)
        ex = exercises.get(ex_id)
        if isinstance(ex, Prediction):
            ex.predict(ex.choices[0] if ex.choices else 1)
        r = ex.check(*args)  # never raises
        assert r.outcome != "correct", (ex_id, name)
        assert "checker could not check" not in r.message, (ex_id, name, r.message)


def test_wrong_shapes_get_specific_messages(db):
    assert "task asks for the database" in _check("00-top-operations", db.things).message
    assert "task asks for a collection" in _check("17-materialized-path", db).message
    r = _check("01-embed-atomic", db, _noargs)
    assert r.outcome == "error" and "exactly the parameters the task names" in r.message
    p = exercises.get("12-predict-aggregate-keys")
    p.predict(3)
    assert "check the measured number" in p.check("x").message


# --- 01 ------------------------------------------------------------------------------------------------------

def _amount(q, p):
    """qty x price for a Decimal128 price, exactly (Decimal128 does no arithmetic in Python)."""
    return Decimal128(p.to_decimal() * q)


def _al_good(db, o, s, q, p):
    db.orders.update_one({"_id": o}, {"$push": {"lines": {"sku": s, "qty": q, "price": p}},
                                      "$inc": {"itemCount": q, "total": _amount(q, p)}})


def _al_pipeline(db, o, s, q, p):
    """One pipeline update, the server multiplying the Decimal128 price: atomic and exact too, so right."""
    db.orders.update_one({"_id": o}, [{"$set": {
        "lines": {"$concatArrays": [{"$ifNull": ["$lines", []]}, [{"sku": s, "qty": q, "price": p}]]},
        "itemCount": {"$add": ["$itemCount", q]}, "total": {"$add": ["$total", {"$multiply": [q, p]}]}}}])


def _al_addtoset(db, o, s, q, p):
    db.orders.update_one({"_id": o}, {"$addToSet": {"lines": {"sku": s, "qty": q, "price": p}},
                                      "$inc": {"itemCount": q, "total": _amount(q, p)}})


def _al_upsert(db, o, s, q, p):
    db.orders.update_one({"_id": o}, {"$push": {"lines": {"sku": s, "qty": q, "price": p}},
                                      "$inc": {"itemCount": q, "total": _amount(q, p)}}, upsert=True)


def _al_count_lines(db, o, s, q, p):
    db.orders.update_one({"_id": o}, {"$push": {"lines": {"sku": s, "qty": q, "price": p}},
                                      "$inc": {"itemCount": 1, "total": _amount(q, p)}})


def _al_price_only(db, o, s, q, p):
    db.orders.update_one({"_id": o}, {"$push": {"lines": {"sku": s, "qty": q, "price": p}},
                                      "$inc": {"itemCount": q, "total": p}})


ORDER_LINES_ANSWERS = [  # why: None for a right answer; run by test_answers
    (_al_good, None),
    (_al_pipeline, None),
    (_al_addtoset, "`$addToSet` drops a line equal to one already there"),
    (_al_upsert, "created it (`upsert=True`)"),
    (_al_count_lines, "`$inc` it by `qty`"),
    (_al_price_only, "17.00 plus 3 x 0.10 makes exactly 17.30"),
]


# --- 04 ------------------------------------------------------------------------------------------------------

def _likes(name="t_exa_likes"):
    d = labkit.fresh_db(name, client=EmbeddedClient())
    d.likes.insert_many([{"_id": f"l{i}", "userId": f"u:{i % 11}", "postId": f"p:{i}",
                          "createdAt": dt.datetime(2026, 6, 1) + dt.timedelta(minutes=i)} for i in range(60)])
    return d.likes


@pytest.mark.parametrize("specs", [
    [({"postId": 1, "userId": 1}, True), ({"userId": 1, "createdAt": -1}, False)],
    [({"userId": 1, "postId": 1}, True), ({"postId": 1, "userId": 1}, False), ({"userId": 1, "createdAt": -1}, False)],
    [({"postId": 1, "userId": -1}, True), ({"userId": 1, "createdAt": 1}, False)],  # scanned backwards
])
def test_04_likes_indexes_right_answers(specs):
    likes = _likes()
    for keys, unique in specs:
        likes.create_index(list(keys.items()), unique=unique)
    assert _check("04-likes-indexes", likes).correct


@pytest.mark.parametrize("specs, why", [
    ([({"postId": 1, "userId": 1}, True), ({"createdAt": -1}, False)], "does not start with `userId`"),
    ([({"postId": 1}, True), ({"userId": 1, "createdAt": -1}, False)], "not either field alone"),
    ([({"postId": 1, "userId": 1}, True), ({"userId": 1}, False)], "blocking SORT"),
    ([({"postId": 1, "userId": 1}, True), ({"userId": 1, "createdAt": -1}, False), ({"postId": 1}, False)],
     "'postId_1' is a prefix of"),
    ([({"postId": 1, "userId": 1}, False), ({"userId": 1, "createdAt": -1}, False)], "unique"),
    ([({"postId": 1, "userId": 1}, True), ({"userId": 1, "createdAt": -1}, False,
                                            {"partialFilterExpression": {"postId": "p:001"}})], "it is partial"),
    ([], "no index but `_id`"),
])
def test_04_likes_indexes_wrong_answers(specs, why):
    # the checker builds its own likes (300 users, post p:007 liked by many): the learner's few likes do not matter
    likes = _likes()
    for keys, unique, *options in specs:
        likes.create_index(list(keys.items()), unique=unique, **(options[0] if options else {}))
    before = list(likes.find())
    assert_verdict(_check("04-likes-indexes", likes), why)
    assert list(likes.find()) == before  # never writes to the learner's data


_join_good, _leave_good = solved("04-member-counter")["join"], solved("04-member-counter")["leave"]


def _join_upsert(db, g, u):
    """An upsert of the membership is idempotent too: right."""
    r = db.memberships.update_one({"groupId": g, "userId": u}, {"$setOnInsert": {"groupId": g, "userId": u}},
                                  upsert=True)
    if r.upserted_id is not None:
        db.groups.update_one({"_id": g}, {"$inc": {"memberCount": 1}})


def _join_recount(db, g, u):
    from pymongo.errors import DuplicateKeyError
    try:
        db.memberships.insert_one({"groupId": g, "userId": u})
    except DuplicateKeyError:
        return
    db.groups.update_one({"_id": g}, {"$set": {"memberCount": db.memberships.count_documents({"groupId": g})}})


def _join_rmw(db, g, u):
    from pymongo.errors import DuplicateKeyError
    try:
        db.memberships.insert_one({"groupId": g, "userId": u})
    except DuplicateKeyError:
        return
    c = db.groups.find_one({"_id": g}).get("memberCount", 0)
    db.groups.update_one({"_id": g}, {"$set": {"memberCount": c + 1}})


def _join_find_then_insert(db, g, u):
    if db.memberships.find_one({"groupId": g, "userId": u}):
        return
    db.memberships.insert_one({"groupId": g, "userId": u})
    db.groups.update_one({"_id": g}, {"$inc": {"memberCount": 1}})


_join_every_group = solved("04-member-counter", change=('update_one({"_id": group_id}', "update_many({}"))["join"]


def _join_uncaught(db, g, u):
    db.memberships.insert_one({"groupId": g, "userId": u})
    db.groups.update_one({"_id": g}, {"$inc": {"memberCount": 1}})


def _join_upsert_inc(db, g, u):  # idempotent membership, but counts every call
    db.memberships.update_one({"groupId": g, "userId": u}, {"$set": {"userId": u}}, upsert=True)
    db.groups.update_one({"_id": g}, {"$inc": {"memberCount": 1}})


_COUNTER = '    db.groups.update_one({"_id": group_id}, {"$inc": {"memberCount": 1}})\n'
_join_no_counter = solved("04-member-counter", change=(_COUNTER, ""))["join"]
_join_replace = solved("04-member-counter", change=(_COUNTER, (
    '    group = db.groups.find_one({"_id": group_id})\n'
    '    db.groups.replace_one({"_id": group_id}, {"memberCount": group.get("memberCount", 0) + 1})\n')))["join"]


def _leave_always(db, g, u):
    db.memberships.delete_one({"groupId": g, "userId": u})
    db.groups.update_one({"_id": g}, {"$inc": {"memberCount": -1}})


def _leave_recount(db, g, u):
    db.memberships.delete_one({"groupId": g, "userId": u})
    db.groups.update_one({"_id": g}, {"$set": {"memberCount": db.memberships.count_documents({"groupId": g})}})


def _leave_whole_group(db, g, u):
    if db.memberships.delete_many({"groupId": g}).deleted_count:
        db.groups.update_one({"_id": g}, {"$inc": {"memberCount": -1}})


JOIN_ANSWERS = [  # each with the right leave; why: None for a right answer
    (_join_good, None),
    (_join_upsert, None),
    (_join_uncaught, "let DuplicateKeyError escape"),
    (_join_upsert_inc, "joining twice counted twice"),
    (_join_no_counter, "memberCount is 3 instead of 4"),
    (_join_replace, "lost its other fields"),
    (_join_recount, "counts the memberships again"),
    (_join_rmw, "read-modify-write"),
    (_join_find_then_insert, "find-then-insert"),
    (join_counter_first, "joining twice counted twice"),
    (_join_every_group, "changed group:go's memberCount too"),
]
LEAVE_ANSWERS = [  # each with the right join
    (_leave_recount, "leave counts the memberships again"),
    (_leave_always, "never joined changed memberCount"),
    (_leave_whole_group, "0 memberships"),
]


@pytest.mark.parametrize("join, leave, why", [*((join, _leave_good, why) for join, why in JOIN_ANSWERS),
                                              *((_join_good, leave, why) for leave, why in LEAVE_ANSWERS)])
def test_04_member_counter(db, join, leave, why):
    # unique index refuses the duplicate (manual, "Unique Indexes"); $inc creates a missing field ("$inc")
    assert_verdict(_check("04-member-counter", db, join, leave), why)


def test_04_member_counter_arguments(db):
    assert "your two functions" in _check("04-member-counter", db, _join_good).message
    assert "your two functions" in _check("04-member-counter", db, "join", "leave").message


# --- 05 ------------------------------------------------------------------------------------------------------

_enroll_good = solved("05-idempotent-enroll")["enroll"]


def _enroll_pair_id(db, s, c, w):
    """A deterministic `_id` for the pair is as good as an upsert on the two fields."""
    db.enrollments.update_one({"_id": f"{s}|{c}"}, {"$setOnInsert": {"studentId": s, "courseId": c,
                                                                     "enrolledAt": w}}, upsert=True)
    db.students.update_one({"_id": s}, {"$addToSet": {"courseIds": c}})
    db.courses.update_one({"_id": c}, {"$addToSet": {"studentIds": s}})


def _enroll_find_then_insert(db, s, c, w):
    if not db.enrollments.find_one({"studentId": s, "courseId": c}):
        db.enrollments.insert_one({"studentId": s, "courseId": c, "enrolledAt": w})
    db.students.update_one({"_id": s}, {"$addToSet": {"courseIds": c}})
    db.courses.update_one({"_id": c}, {"$addToSet": {"studentIds": s}})


def _enroll_rmw(db, s, c, w):
    db.enrollments.update_one({"studentId": s, "courseId": c}, {"$setOnInsert": {"enrolledAt": w}}, upsert=True)
    st = db.students.find_one({"_id": s})
    db.students.update_one({"_id": s}, {"$set": {"courseIds": sorted(set(st.get("courseIds", [])) | {c})}})
    co = db.courses.find_one({"_id": c})
    db.courses.update_one({"_id": c}, {"$set": {"studentIds": sorted(set(co.get("studentIds", [])) | {s})}})


def _enroll_one_side(db, s, c, w):
    db.enrollments.update_one({"studentId": s, "courseId": c}, {"$setOnInsert": {"enrolledAt": w}}, upsert=True)
    db.students.update_one({"_id": s}, {"$addToSet": {"courseIds": c}})


ENROLL_ANSWERS = [  # why: None for a right answer; run by test_answers
    (_enroll_good, None),
    (_enroll_pair_id, None),
    (_enroll_find_then_insert, "a find before the insert sees nothing in both calls"),
    (_enroll_rmw, "read, add, `$set` back"),
    (_enroll_one_side, "the student to the course's `studentIds`"),
]


def _edge_sets(db):
    following, followers = {}, {}
    for e in db.follows.find({}, {"followerId": 1, "followingId": 1}):
        following.setdefault(e["followerId"], set()).add(e["followingId"])
        followers.setdefault(e["followingId"], set()).add(e["followerId"])
    return following, followers


def _reconcile_bulk(db):
    """Compare first, then one bulk_write of the differing users: right."""
    from pymongo import UpdateOne
    following, followers = _edge_sets(db)
    ops = []
    for u in db.users.find():
        want = {"followingIds": sorted(following.get(u["_id"], ())), "followerIds": sorted(followers.get(u["_id"], ()))}
        fix = {f: ids for f, ids in want.items() if f not in u or set(u[f] or []) != set(ids)}
        if fix:
            ops.append(UpdateOne({"_id": u["_id"]}, {"$set": fix}))
    if ops:
        db.users.bulk_write(ops)


def _reconcile_every_user(db):
    """Right copies, but one write per user even where nothing differs (nModified alone would not see it)."""
    following, followers = _edge_sets(db)
    for u in db.users.find():
        db.users.update_one({"_id": u["_id"]}, {"$set": {"followingIds": sorted(following.get(u["_id"], ())),
                                                         "followerIds": sorted(followers.get(u["_id"], ()))}})


def _reconcile_add_only(db):
    for e in db.follows.find():
        db.users.update_one({"_id": e["followerId"]}, {"$addToSet": {"followingIds": e["followingId"]}})
        db.users.update_one({"_id": e["followingId"]}, {"$addToSet": {"followerIds": e["followerId"]}})


def _reconcile_skips_missing_arrays(db):
    following, followers = _edge_sets(db)
    for u in db.users.find():
        fix = {f: sorted(m.get(u["_id"], ())) for f, m in (("followingIds", following), ("followerIds", followers))
               if f in u and set(u[f]) != m.get(u["_id"], set())}
        if fix:
            db.users.update_one({"_id": u["_id"]}, {"$set": fix})


def _reconcile_by_deleting(db):
    db.follows.delete_many({})
    db.users.update_many({}, {"$set": {"followingIds": [], "followerIds": []}})


RECONCILE_ANSWERS = [  # why: None for a right answer; run by test_answers
    (_reconcile_bulk, None),  # compare first, then one bulk_write
    (_reconcile_every_user, "sent 40 write statements to repair 4"),
    (_reconcile_add_only, "that should not be there remain"),
    (_reconcile_skips_missing_arrays, "followingIds entries still disagree"),
    (_reconcile_by_deleting, "never touches the edges"),
]


# --- 06 (06-rename-member: test_exercises_lessons_c.py) -----------------------------------------------------

def _bids_pipeline(db, listing_id, bidder_id, amount):
    """One pipeline update is atomic too: right."""
    db.listings.update_one({"_id": listing_id}, [{"$set": {"topBids": {"$firstN": {"n": 3, "input": {"$sortArray": {
        "input": {"$concatArrays": [{"$ifNull": ["$topBids", []]}, [{"bidderId": bidder_id, "amount": amount}]]},
        "sortBy": {"amount": -1}}}}}}}])


def _bids_two_writes(db, listing_id, bidder_id, amount):
    db.listings.update_one({"_id": listing_id}, {"$push": {"topBids": {"bidderId": bidder_id, "amount": amount}}})
    db.listings.update_one({"_id": listing_id}, {"$push": {"topBids": {"$each": [], "$sort": {"amount": -1},
                                                                       "$slice": 3}}})


TOP_BIDS_ANSWERS = [  # why: None for a right answer; run by test_answers
    (push_bid(**{"$sort": {"amount": -1}, "$slice": 3}), None),
    (_bids_pipeline, None),
    (push_bid(**{"$sort": {"amount": 1}, "$slice": -3}), "lowest first"),
    (push_bid(**{"$sort": {"amount": 1}, "$slice": 3}), "three LOWEST bids"),
    (push_bid(**{"$position": 0, "$slice": 3}), "three NEWEST bids"),
    (push_bid(**{"$sort": {"amount": -1}}), "add `$slice: 3`"),
    (push_bid(**{"$sort": {"amount": -1}, "$slice": 2}), "only 2 entries"),
    (_bids_two_writes, "2 writes"),
]


# --- 07 ------------------------------------------------------------------------------------------------------

def _migrate(change=None):
    """Lesson 07's own solution, or a learner's variant of it (``change``: text replaced in the solution)."""
    return solved("07-migrate-products", change)["migrate"]


_UPDATE = 'db.products.update_one({"_id": doc["_id"]}, {"$set": fix})'
_migrate_good = _migrate()
# a whole valid replacement of each invalid product passes too (nothing else is in those documents)
_migrate_replace = _migrate((_UPDATE, 'db.products.replace_one({"_id": doc["_id"]}, {"sku": doc["sku"], **fix})'))
_migrate_bypass = _migrate((_UPDATE, _UPDATE[:-1] + ", bypass_document_validation=True)"))
_migrate_every_product = _migrate(('db.products.find({"$nor": [{"$jsonSchema": schema}]})', "db.products.find()"))
_migrate_sku_as_every_name = _migrate(('"name": doc.get("name") or doc["sku"]', '"name": doc["sku"]'))


def _migrate_moderate_meanwhile(db):
    db.command("collMod", "products", validationLevel="moderate")
    _migrate_good(db)
    db.command("collMod", "products", validationLevel="strict")


MIGRATE_ANSWERS = [  # why: None for a right answer; run by test_answers
    (_migrate_good, None),
    (_migrate_replace, None),
    # strict validates the document an update produces (manual, "Schema Validation: Specify Validation Level")
    (_migrate_bypass, "`bypass_document_validation=True`: it is not needed"),
    (_migrate_moderate_meanwhile, "changes the collection's rules (collMod) while it runs"),
    (_migrate_every_product, "6 write statements for 5 invalid products"),
    (_migrate_sku_as_every_name, "'Lamp' became 'SKU-2'"),
]


_POST_SCHEMA = {"bsonType": "object", "required": ["authorId", "title", "createdAt"], "properties": {
    "authorId": {"bsonType": "string", "pattern": "^user:"},
    "title": {"bsonType": "string", "minLength": 1, "maxLength": 200},
    "createdAt": {"bsonType": "date"}}}


def _post_schema(field, rule):
    import copy
    schema = copy.deepcopy(_POST_SCHEMA)
    schema["properties"][field] = rule
    return {"$jsonSchema": schema}


@pytest.mark.parametrize("validator, why", [
    (_post_schema("authorId", {"bsonType": "string", "pattern": "^user"}), "without the colon"),
    (_post_schema("title", {"minLength": 1, "maxLength": 200}), "a numeric title"),
    (_post_schema("authorId", {"bsonType": "string", "pattern": "user:"}), "anchor the pattern"),
    (_post_schema("createdAt", {"bsonType": "string"}), "errInfo names createdAt, bsonType"),
    (_post_schema("title", {"bsonType": "string", "minLength": 1, "maxLength": 201}), "201-character title"),
])
def test_07_post_validator_wrong_answers(validator, why):
    assert_verdict(_check("07-post-validator", validator), why)


def test_07_post_validator_right_answer():
    assert _check("07-post-validator", {"$jsonSchema": _POST_SCHEMA}).correct


# --- 17 ------------------------------------------------------------------------------------------------------

_TREE17 = {"Books": None, "Fiction": "Books", "SciFi": "Fiction", "Poetry": "Books", "Bookshelves": None,
           "Oak": "Bookshelves"}


def _categories(name="t_exa_17"):
    d = labkit.fresh_db(name, client=EmbeddedClient())
    d.categories.insert_many([{"_id": n, "parent": p} for n, p in _TREE17.items()])
    return d


def _add_paths(d):
    parent_of = {c["_id"]: c["parent"] for c in d.categories.find()}
    for node, up in parent_of.items():
        chain = []
        while up is not None:
            chain.insert(0, up)
            up = parent_of.get(up)
        d.categories.update_one({"_id": node}, {"$set": {"path": "," + ",".join(chain) + "," if chain else None}})
    d.categories.create_index("path")


def test_17_paths_on_the_remembered_setup_pass():
    d = _categories()
    ex = exercises.get("17-materialized-path").remember(d, "categories")
    _add_paths(d)
    assert ex.check(d.categories).correct


def test_17_deleted_category_is_reported():
    d = _categories()
    ex = exercises.get("17-materialized-path").remember(d, "categories")
    d.categories.delete_one({"_id": "Poetry"})  # a learner's accident: the rest still gets consistent paths
    _add_paths(d)
    assert "1 of the 6 categories of the setup are gone (e.g. 'Poetry')" in ex.check(d.categories).message


def test_17_reparented_category_is_reported():
    d = _categories()
    ex = exercises.get("17-materialized-path").remember(d, "categories")
    d.categories.update_one({"_id": "SciFi"}, {"$set": {"parent": "Books"}})  # reshaped, paths follow the new tree
    _add_paths(d)
    assert "category 'SciFi': `parent` is not the value the setup had ('Fiction')" in ex.check(d.categories).message


def test_17_added_category_is_reported():
    d = _categories()
    ex = exercises.get("17-materialized-path").remember(d, "categories")
    d.categories.insert_one({"_id": "Drama", "parent": "Books"})
    _add_paths(d)
    assert "not in the setup (e.g. 'Drama')" in ex.check(d.categories).message


# --- 08 ------------------------------------------------------------------------------------------------------

def test_08_orphans_repeated_ids_and_unhashable_entries():
    d = labkit.fresh_db("t_exa_08", client=EmbeddedClient())
    d.users.insert_many([{"_id": "user:1"}, {"_id": "user:3"}])
    d.posts.insert_many([{"_id": f"post:{i}", "authorId": f"user:{i % 4}"} for i in range(8)])
    truth = sorted(p["_id"] for p in d.posts.find({"authorId": {"$in": ["user:0", "user:2"]}}))
    assert _check("08-orphans", d, truth).correct
    assert "more than once" in _check("08-orphans", d, sorted(truth + truth[:1])).message
    assert "should hold post ids" in _check("08-orphans", d, [[1], [2]]).message
    assert "orphan(s) missing" in _check("08-orphans", d, truth[1:]).message


# --- 10 / 11 / 12 --------------------------------------------------------------------------------------------

def _beat_bare_value(coll, patient_id, at, bpm):
    coll.update_one({"patientId": patient_id, "day": at.replace(hour=0, minute=0, second=0, microsecond=0),
                     "count": {"$lt": 100}},
                    {"$push": {"readings": bpm}, "$inc": {"count": 1, "sum": bpm}, "$min": {"min": bpm},
                     "$max": {"max": bpm}}, upsert=True)


def test_10_bucket_readings_without_their_time_are_refused(db):
    db.heart_buckets.create_index([("patientId", 1), ("day", 1)])
    r = _check("10-bucket-upsert", db, _beat_bare_value)
    assert r.outcome == "incorrect" and "each reading is a subdocument" in r.message


def _review_with_set_average(db, review):
    r = review["rating"]
    db.reviews.insert_one(review)
    db.products.update_one({"_id": review["productId"]}, {
        "$inc": {"ratingStats.count": 1, "ratingStats.sum": r, f"ratingStats.distribution.{r}": 1},
        "$min": {"ratingStats.min": r}, "$max": {"ratingStats.max": r}, "$set": {"ratingStats.avg": float(r)}})


def test_12_an_average_set_from_one_rating_is_refused():
    r = _check("12-computed-stats", _review_with_set_average)
    assert r.outcome == "incorrect" and "ratingStats.avg is" in r.message and "divide on read" in r.message


# --- 13 / 15 -------------------------------------------------------------------------------------------------

def test_13_regex_on_the_v2_city_field_is_named():
    import re
    r = _check("13-dual-query-city", lambda c: {"$or": [
        {"schemaVersion": 2, "address.city": {"$regex": c}},
        {"schemaVersion": 1, "address": {"$regex": f", {re.escape(c)}$"}}]})
    assert r.outcome == "incorrect" and "compare `address.city` by equality" in r.message


def _products15(name="t_exa_15"):
    d = labkit.fresh_db(name, client=EmbeddedClient())
    d.products.insert_many([{"_id": f"prod:{i}", "name": f"Gadget {i}", "price": i, "spec_weight_g": i * 10,
                             "spec_power_w": i % 7} for i in range(1, 21)])
    return d


def _to_attributes(doc):
    out = {k: v for k, v in doc.items() if not k.startswith("spec_")}
    out["specs"] = [{"k": k[len("spec_"):], "v": v} for k, v in doc.items() if k.startswith("spec_")]
    return out


def _rewrite15(d, func=_to_attributes):
    for doc in list(d.products.find()):
        d.products.replace_one({"_id": doc["_id"]}, func(doc))
    d.products.create_index([("specs.k", 1), ("specs.v", 1)])


def test_15_rewrite_on_the_remembered_setup_passes():
    d = _products15()
    ex = exercises.get("15-attribute").remember(d, "products")
    _rewrite15(d)
    assert ex.check(d.products, _to_attributes).correct


@pytest.mark.parametrize("damage, why", [
    (lambda d: d.products.delete_many({"_id": {"$in": ["prod:3", "prod:4"]}}), "2 of the 20 products of the setup are gone"),
    (lambda d: d.products.insert_one({"_id": "prod:copy", "name": "x", "price": 1, "spec_power_w": 1}),
     "not in the setup (e.g. 'prod:copy')"),
    (lambda d: d.products.update_one({"_id": "prod:5"}, {"$set": {"price": 0}}), "product 'prod:5': `price`"),
    (lambda d: d.products.update_one({"_id": "prod:6"}, {"$unset": {"spec_power_w": ""}}),
     "product 'prod:6': specs"),
])
def test_15_damaged_setup_is_caught_with_the_setup_copy(damage, why):
    d = _products15()
    ex = exercises.get("15-attribute").remember(d, "products")
    damage(d)  # before (or during) the rewrite
    _rewrite15(d)
    r = ex.check(d.products, _to_attributes)
    assert r.outcome == "incorrect" and why in r.message


# --- 16 / 19 -------------------------------------------------------------------------------------------------

def _subset(sort=None, many=False):
    def add_review(db, review):
        db.reviews.insert_one(review)
        push = {"recentReviews": {"$each": [review], "$sort": sort or {"createdAt": -1}, "$slice": 5}}
        if many:
            db.products.update_many({}, {"$push": push})
        else:
            db.products.update_one({"_id": review["productId"]}, {"$push": push})
    return add_review


SUBSET_ANSWERS = [  # why: None for a right answer; run by test_answers
    (_subset(), None),
    (_subset({"createdAt": -1, "_id": -1}), None),  # a tie-breaker is fine
    (_subset({"_id": -1}), "sorts the reviews by `_id`"),
    (_subset(many=True), "another product's recentReviews changed too"),
]


_enrol_good = solved("19-enrol")["enrol"]


def _enrol_two_statements(catalog, c, s):
    catalog.update_one({"_id": c}, {"$addToSet": {"relatedIds": s}})
    catalog.update_one({"_id": s}, {"$addToSet": {"relatedIds": c}})


def _enrol_rmw(catalog, c, s):
    for a, b in ((c, s), (s, c)):
        ids = list(catalog.find_one({"_id": a}).get("relatedIds", []))
        if b not in ids:
            ids.append(b)
        catalog.update_one({"_id": a}, {"$set": {"relatedIds": ids}})


def _enrol_everything_related(catalog, c, s):
    catalog.update_many({"relatedIds": {"$in": [c, s]}}, {"$addToSet": {"relatedIds": {"$each": [c, s]}}})


ENROL_ANSWERS = [  # why: None for a right answer; run by test_answers
    (_enrol_good, None),
    (_enrol_two_statements, None),
    (_enrol_rmw, "read, append, `$set` back"),
    (_enrol_everything_related, "which were never enrolled with it"),
]


# --- 00 ------------------------------------------------------------------------------------------------------

def _top_ops(share=0.8, strict=True):
    def top_operations(workload):
        ranked = workload.sort_values("per_second", ascending=False)
        before = ranked["per_second"].cumsum() - ranked["per_second"]
        keep = before < share * ranked["per_second"].sum() if strict else before <= share * ranked["per_second"].sum()
        return list(ranked[keep]["operation"])
    return top_operations


def _above_average(workload):
    return list(workload[workload["per_second"] > workload["per_second"].mean()]
                .sort_values("per_second", ascending=False)["operation"])


def test_00_top_operations_right_answer():
    assert _check("00-top-operations", _top_ops()).correct


@pytest.mark.parametrize("fn, why", [
    (_top_ops(strict=False), "stop as soon as the running total reaches 80%"),  # `<=`: one past exactly 80%
    (_above_average, "one short"),  # above the mean is not the top 80%
    (_top_ops(share=0.9), "stop as soon as the running total reaches 80%"),
])
def test_00_top_operations_near_misses(fn, why):
    assert_verdict(_check("00-top-operations", fn), why)


_prepare = solved("17-org-chart-reports")["prepare"]


def _prepare_twice(coll):
    coll.create_index("managerId")
    coll.create_index([("managerId", 1), ("_id", 1)])


_reports_by_level = solved("17-org-chart-reports")["all_reports"]


def _reports_in_python(coll, manager_id):
    managers = {d["_id"]: d.get("managerId") for d in coll.find({}, {"managerId": 1})}
    out, todo = [], [manager_id]
    while todo:
        x = todo.pop()
        kids = [k for k, v in managers.items() if v == x]
        out += kids
        todo += kids
    return out


def test_17_org_chart_right_answer():
    assert _check("17-org-chart-reports", _prepare, _reports_by_level).correct


@pytest.mark.parametrize("prepare, reports, why", [
    (_prepare, _reports_in_python, "reads the whole org chart"),
    (_prepare_twice, _reports_by_level, "'managerId_1', a prefix of"),
])
def test_17_org_chart_wrong_answers(prepare, reports, why):
    assert_verdict(_check("17-org-chart-reports", prepare, reports), why)


def _reply_every_thread(db, reply):
    db.replies.insert_one(reply)
    db.threads.update_many({}, {"$inc": {"replyCount": 1}, "$max": {"lastReplyAt": reply["at"]}})


def test_12_thread_stats_unfiltered_update_is_named():
    r = _check("12-thread-stats", _reply_every_thread)
    assert r.outcome == "incorrect" and "must filter on the reply's own thread" in r.message


def _migrate_batch_string_version(coll, batch_size):
    todo = list(coll.find({"schemaVersion": 1}).sort("_id", 1).limit(batch_size))
    for d in todo:
        street, _, city = d["address"].rpartition(", ")
        coll.update_one({"_id": d["_id"], "schemaVersion": 1},
                        {"$set": {"address": {"street": street, "city": city}, "schemaVersion": "2"}})
    return len(todo)


def test_13_migrate_batch_with_a_string_version_is_named(db):
    r = _check("13-migrate-batches", db, _migrate_batch_string_version)
    assert r.outcome == "incorrect" and "schemaVersion '2'" in r.message


# --- 18 ------------------------------------------------------------------------------------------------------

def _revision_by_replacement(db, doc_id, changes):
    current = db.documents.find_one({"_id": doc_id})
    copy = {k: v for k, v in current.items() if k != "_id"} | {"docId": doc_id}
    db.documents_history.update_one({"_id": f"{doc_id}@rev{current['rev']}"}, {"$setOnInsert": copy}, upsert=True)
    db.documents.replace_one({"_id": doc_id, "rev": current["rev"]}, changes | {"rev": current["rev"] + 1})


def test_18_versioning_replacing_the_document_is_refused(db):
    db.documents_history.create_index([("docId", 1), ("rev", 1)], unique=True)
    r = _check("18-versioning", db, _revision_by_replacement)
    assert r.outcome == "incorrect" and "it does not replace the document" in r.message


def _meters_one_minute_buckets(db):
    # custom bucketing (manual, "Time Series Granularity": bucketMaxSpanSeconds and bucketRoundingSeconds equal)
    db.create_collection("meter_readings", timeseries={"timeField": "ts", "metaField": "meterId",
                                                       "bucketMaxSpanSeconds": 60, "bucketRoundingSeconds": 60})


def _store_batch(coll, batch):
    coll.insert_many(batch)


def test_10_meters_tiny_custom_buckets_are_refused(db):
    r = _check("10-ts-meters", db, _meters_one_minute_buckets, _store_batch)
    assert r.outcome == "incorrect" and "bucketMaxSpanSeconds=60" in r.message


# --- 03 ------------------------------------------------------------------------------------------------------

def _top_comments(sort):
    def top_comments(post_id):
        return [{"$match": {"postId": post_id}}, {"$sort": sort}, {"$limit": 5},
                {"$lookup": {"from": "users", "localField": "userId", "foreignField": "_id", "as": "author"}},
                {"$project": {"text": 1, "likes": 1, "author": {"$arrayElemAt": ["$author.name", 0]}}}]
    return top_comments


def test_03_top_comments_right_answer_without_a_lookup_pipeline():
    assert _check("03-top-comments", _top_comments({"likes": -1, "_id": 1})).correct


def test_03_top_comments_without_a_tie_breaker_is_refused():
    r = _check("03-top-comments", _top_comments({"likes": -1}))
    assert r.outcome == "incorrect" and "no tie-breaker" in r.message


def test_03_product_reviews_unwound_afterwards_is_named():
    d = labkit.fresh_db("t_exa_03", client=EmbeddedClient())
    pipeline = [{"$match": {"_id": "prod:7"}},
                {"$lookup": {"from": "reviews", "localField": "_id", "foreignField": "productId", "as": "reviews",
                             "pipeline": [{"$sort": {"createdAt": -1, "_id": -1}}, {"$limit": 5},
                                          {"$project": {"stars": 1, "text": 1}}]}}]
    assert _check("03-product-reviews", d, pipeline).correct
    r = _check("03-product-reviews", d, pipeline + [{"$unwind": "$reviews"}])
    assert r.outcome == "incorrect" and "copies of the product" in r.message


# --- each answer of lessons 01-19's tables above, checked on the learner's database ----------------------------

@pytest.mark.parametrize("ex_id, fn, why", [
    *answer_cases("01-order-lines", ORDER_LINES_ANSWERS),
    *answer_cases("05-idempotent-enroll", ENROLL_ANSWERS),
    *answer_cases("05-reconcile", RECONCILE_ANSWERS),
    *answer_cases("06-top-bids", TOP_BIDS_ANSWERS),
    *answer_cases("07-migrate-products", MIGRATE_ANSWERS),
    *answer_cases("16-subset", SUBSET_ANSWERS),
    *answer_cases("19-enrol", ENROL_ANSWERS),
])
def test_answers(db, ex_id, fn, why):
    assert_verdict(_check(ex_id, db, fn), why)
