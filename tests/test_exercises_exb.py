"""Lessons 20-39 (helper exb, issue 15): wrong answers a learner really writes are refused with a message
specific to the mistake, right answers pass, and no checker raises on odd input.

The reshaping exercises (31, 33, 34, 36, 38) compare the learner's result with the setup copy kept by
``Exercise.remember`` (as the notebooks do), never with data the learner may have damaged."""
from __future__ import annotations

import datetime as dt

import pytest

import labkit
from exercise_helpers import solved
from labkit.engine import EmbeddedClient


def _db(name):
    return labkit.fresh_db(name, client=EmbeddedClient())


def _raises(*_args):
    raise RuntimeError("boom")


ODD_INPUTS = [None, "garbage", 42, {"a": 1}, [1, 2], _raises, lambda: None]


@pytest.mark.parametrize("ex_id", [i for i in labkit.exercises.ids() if i[:2] in
                                   {"20", "30", "31", "32", "33", "34", "35", "36", "37", "38", "39"}])
@pytest.mark.parametrize("answer", ODD_INPUTS, ids=["None", "str", "int", "dict", "list", "raises", "no-args"])
def test_no_checker_raises_on_odd_input(ex_id, answer):
    ex = labkit.exercises.get(ex_id)
    result = ex.check(answer)  # never raises
    assert not result.correct
    assert result.outcome in ("incorrect", "error", "not-attempted")
    # an odd input is the learner's, not a checker gap
    assert "checker gap" not in result.message, result.message


# --- 31 · variants instead of parallel arrays (the notebook's practice data) ---------------------------------

def _shirts31(n=40):
    db = _db("exb31")
    db.products.insert_many([
        {"_id": f"shirt:{i:03d}", "name": f"Shirt {i}", "colors": ["red", "blue", "green", "black"][: 1 + i % 4],
         "sizes": ["S", "M", "L", "XL"][: 1 + (i // 4) % 4]} for i in range(n)])
    return db


def _reshape31(db):
    for p in list(db.products.find()):
        db.products.update_one({"_id": p["_id"]}, {
            "$set": {"variants": [{"color": c, "size": s} for c in p["colors"] for s in p["sizes"]]},
            "$unset": {"colors": "", "sizes": ""}})
    db.products.create_index([("variants.color", 1), ("variants.size", 1)])


def _ex31(db):
    return labkit.exercises.get("31-no-parallel-arrays").remember(db, "products")


def test_31_right_answer_passes_with_the_setup_copy():
    db = _shirts31()
    ex = _ex31(db)
    _reshape31(db)
    assert ex.check(db.products).correct


def test_31_deleted_products_are_reported():
    db = _shirts31()
    ex = _ex31(db)
    db.products.delete_many({"_id": {"$in": ["shirt:003", "shirt:004"]}})
    _reshape31(db)
    r = ex.check(db.products)
    assert not r.correct and "2 of the 40 products of the setup are gone" in r.message


def test_31_renamed_product_is_reported():
    db = _shirts31()
    ex = _ex31(db)
    db.products.update_one({"_id": "shirt:005"}, {"$set": {"name": "oops"}})
    _reshape31(db)
    assert "product 'shirt:005': `name` is 'oops'" in ex.check(db.products).message


def test_31_dummy_variant_and_first_color_only_are_refused():
    db = _shirts31()
    ex = _ex31(db)
    db.products.update_many({}, {"$set": {"variants": [{"color": "none", "size": "none"}]},
                                 "$unset": {"colors": "", "sizes": ""}})
    db.products.create_index([("variants.color", 1), ("variants.size", 1)])
    assert "combinations but its variants hold 1" in ex.check(db.products).message
    db = _shirts31()
    ex = _ex31(db)
    for p in list(db.products.find()):  # zip instead of the cross product: one variant per color
        db.products.update_one({"_id": p["_id"]}, {
            "$set": {"variants": [{"color": c, "size": s} for c, s in zip(p["colors"], p["sizes"])]},
            "$unset": {"colors": "", "sizes": ""}})
    db.products.create_index([("variants.color", 1), ("variants.size", 1)])
    assert "combination(s) missing" in ex.check(db.products).message


def test_31_other_wrong_answers():
    db = _shirts31()
    ex = _ex31(db)
    for p in list(db.products.find()):  # variants set, arrays kept
        db.products.update_one({"_id": p["_id"]}, {"$set": {"variants": [
            {"color": c, "size": s} for c in p["colors"] for s in p["sizes"]]}})
    assert "still hold both" in ex.check(db.products).message
    db.products.update_many({}, {"$unset": {"colors": "", "sizes": ""}})
    assert "no index holds both" in ex.check(db.products).message
    db.products.create_index([("variants.color", 1)])
    db.products.create_index([("variants.size", 1)])
    assert "cover one field only" in ex.check(db.products).message
    db.products.create_index([("variants.size", 1), ("variants.color", 1)])
    assert "put `variants.color` first" in ex.check(db.products).message
    assert "pass the collection" in ex.check(db).message


def test_31_unhashable_variant_values_get_a_message():
    db = _shirts31(8)
    ex = _ex31(db)
    db.products.update_many({}, {"$set": {"variants": [{"color": ["red"], "size": {"s": 1}}]},
                                 "$unset": {"colors": "", "sizes": ""}})
    db.products.create_index([("variants.color", 1), ("variants.size", 1)])
    r = ex.check(db.products)
    assert r.outcome == "incorrect" and "combination" in r.message


# --- 34 · one events collection instead of one per tenant -----------------------------------------------------

def _tenants34():
    db = _db("exb34")
    for t in range(4):
        db[f"events_t{t}"].insert_many([
            {"_id": f"t{t}:{k:03d}", "seq": k, "kind": ["click", "view"][k % 2],
             "at": dt.datetime(2026, 11, 1) + dt.timedelta(hours=k)} for k in range(30 + 5 * t)])
    return db, labkit.exercises.get("34-merge-collections").remember(db, *db.list_collection_names())


def _merge34(db, change=None):
    for name in sorted(db.list_collection_names()):
        if name.startswith("events_"):
            docs = [d | {"tenantId": name.removeprefix("events_")} for d in db[name].find()]
            if change:
                docs = change(docs)
            db.events.insert_many(docs)
            db.drop_collection(name)
    db.events.create_index([("tenantId", 1), ("at", -1)])
    db.events.create_index([("at", 1)], expireAfterSeconds=30 * 86_400)


def test_34_right_answer_passes():
    db, ex = _tenants34()
    _merge34(db)
    assert ex.check(db).correct


def test_34_a_tenant_dropped_without_merging_is_reported():
    db, ex = _tenants34()
    db.drop_collection("events_t2")  # dropped by accident before the merge
    _merge34(db)
    r = ex.check(db)
    assert not r.correct and "'t2'" in r.message and "of the setup are gone" in r.message


def test_34_changed_documents_are_reported():
    db, ex = _tenants34()
    _merge34(db, change=lambda docs: [d | {"kind": "view"} for d in docs])  # overwrote a field while copying
    assert "`kind` is 'view', not the setup's 'click'" in ex.check(db).message


def test_34_lost_tail_is_reported_even_without_gaps():
    db, ex = _tenants34()
    _merge34(db, change=lambda docs: docs[:-5])  # the newest five of each tenant lost (seq stays contiguous)
    r = ex.check(db)
    assert not r.correct and "5 of the" in r.message


def test_34_wrong_ttl_and_index_answers():
    db, ex = _tenants34()
    for name in sorted(db.list_collection_names()):
        db.events.insert_many([d | {"tenantId": name.removeprefix("events_")} for d in db[name].find()])
        db.drop_collection(name)
    assert "no index starts with `tenantId`" in ex.check(db).message
    db.events.create_index([("at", -1), ("tenantId", 1)])
    assert "no index starts with `tenantId`" in ex.check(db).message
    db.events.create_index([("tenantId", 1), ("at", -1)])
    assert "no TTL index" in ex.check(db).message
    db.events.create_index([("at", 1)], expireAfterSeconds=30)  # 30 seconds, not 30 days
    assert "2,592,000" in ex.check(db).message


# --- 36 · embed what is read together --------------------------------------------------------------------------

CITIES = ["Oslo", "Lima", "Pune", "Kobe", "Graz", "Cork"]


def _split36():
    db = _db("exb36")
    db.users.insert_many([{"_id": f"user:{u:04d}", "email": f"user{u}@example.com"} for u in range(30)])
    db.user_profiles.insert_many([{"_id": f"profile:{u:04d}", "userId": f"user:{u:04d}",
                                   "displayName": f"User {u}", "bio": "hi"} for u in range(30)])
    db.user_addresses.insert_many([{"_id": f"addr:{u:04d}:{k}", "userId": f"user:{u:04d}",
                                    "label": ["home", "work", "other"][k], "city": CITIES[(u + k) % 6]}
                                   for u in range(30) for k in range(1 + u % 3)])
    db.user_settings.insert_many([{"_id": f"settings:{u:04d}", "userId": f"user:{u:04d}", "theme": "light",
                                   "newsletter": False} for u in range(30)])
    ex = labkit.exercises.get("36-embed-context").remember(db, "users", "user_profiles", "user_addresses",
                                                           "user_settings")
    return db, ex


def _embed36(project=None, drop=True, db_ex=None):
    db, ex = db_ex or _split36()
    project = project or {
        "profile": {"displayName": {"$first": "$p.displayName"}, "bio": {"$first": "$p.bio"}},
        "addresses": {"$map": {"input": "$a", "as": "x", "in": {"label": "$$x.label", "city": "$$x.city"}}},
        "settings": {"theme": {"$first": "$s.theme"}, "newsletter": {"$first": "$s.newsletter"}}}
    db.users.aggregate([
        {"$lookup": {"from": "user_profiles", "localField": "_id", "foreignField": "userId", "as": "p"}},
        {"$lookup": {"from": "user_addresses", "localField": "_id", "foreignField": "userId", "as": "a"}},
        {"$lookup": {"from": "user_settings", "localField": "_id", "foreignField": "userId", "as": "s"}},
        {"$project": project},
        {"$merge": {"into": "users", "on": "_id", "whenMatched": "merge", "whenNotMatched": "discard"}}])
    if drop:
        for name in ("user_profiles", "user_addresses", "user_settings"):
            db.drop_collection(name)
    return db, ex


def test_36_right_answer_passes():
    db, ex = _embed36()
    assert ex.check(db).correct


def test_36_dropped_bio_is_lost_data():
    db, ex = _embed36({"profile": {"displayName": {"$first": "$p.displayName"}},
                       "addresses": {"$map": {"input": "$a", "as": "x", "in": {"label": "$$x.label",
                                                                                "city": "$$x.city"}}},
                       "settings": {"theme": {"$first": "$s.theme"}, "newsletter": {"$first": "$s.newsletter"}}})
    assert "lacks `bio`" in ex.check(db).message


def test_36_first_address_only_is_refused():
    db, ex = _embed36({"profile": {"displayName": {"$first": "$p.displayName"}, "bio": {"$first": "$p.bio"}},
                       "addresses": [{"label": {"$first": "$a.label"}, "city": {"$first": "$a.city"}}],
                       "settings": {"theme": {"$first": "$s.theme"}, "newsletter": {"$first": "$s.newsletter"}}})
    assert "but user_addresses had 2" in ex.check(db).message


def test_36_deleted_users_and_changed_values_are_reported():
    db, ex = _split36()
    db.users.delete_many({"_id": {"$in": ["user:0001", "user:0002", "user:0003"]}})
    _embed36(db_ex=(db, ex))
    assert "3 of the 30 users of the setup are gone" in ex.check(db).message
    db, ex = _split36()
    db.user_settings.update_many({}, {"$set": {"theme": "dark"}})  # changed before embedding
    _embed36(db_ex=(db, ex))
    assert "`settings.theme` is 'dark', but its user_settings document had 'light'" in ex.check(db).message
    db, ex = _split36()
    db.users.update_one({"_id": "user:0007"}, {"$set": {"email": None}})
    _embed36(db_ex=(db, ex))
    assert "user 'user:0007': `email` is None" in ex.check(db).message


def test_36_side_collections_kept_and_arrays_from_lookup():
    db, ex = _embed36(drop=False)
    assert "still exist" in ex.check(db).message
    db, ex = _split36()
    db.users.aggregate([{"$lookup": {"from": "user_profiles", "localField": "_id", "foreignField": "userId",
                                     "as": "profile"}},
                        {"$merge": {"into": "users", "whenMatched": "merge"}}])
    assert "is an array" in ex.check(db).message


# --- 38 · extended reference -----------------------------------------------------------------------------------

TIERS = ["gold", "silver", "bronze"]


def _practice38():
    db = _db("exb38")
    db.customers.insert_many([{"_id": f"cust:{c:03d}", "name": f"Customer {c}", "tier": TIERS[c % 3],
                               "email": f"c{c}@example.com", "notes": "n"} for c in range(20)])
    db.orders.insert_many([{"_id": f"order:{o:04d}", "customerId": f"cust:{(o * 7) % 20:03d}", "status": "open",
                            "createdAt": dt.datetime(2026, 2, 1) + dt.timedelta(hours=o)} for o in range(120)])
    return db, labkit.exercises.get("38-extended-reference").remember(db, "customers", "orders")


COPY_STAGES = [
    {"$lookup": {"from": "customers", "localField": "customerId", "foreignField": "_id", "as": "c"}},
    {"$project": {"customer": {"name": {"$first": "$c.name"}, "tier": {"$first": "$c.tier"}}}},
    {"$merge": {"into": "orders", "on": "_id", "whenMatched": "merge", "whenNotMatched": "discard"}}]


def test_38_right_answer_passes():
    db, ex = _practice38()
    db.orders.aggregate(COPY_STAGES)
    assert ex.check(db).correct


def test_38_renaming_the_customer_and_its_copies_together_is_caught():
    db, ex = _practice38()
    db.customers.update_one({"_id": "cust:003"}, {"$set": {"name": "Renamed"}})  # damaged source, copied faithfully
    db.orders.aggregate(COPY_STAGES)
    assert "customer 'cust:003': `name` is 'Renamed'" in ex.check(db).message


def test_38_deleted_orders_and_dropped_reference():
    db, ex = _practice38()
    db.orders.delete_many({"status": "open", "_id": {"$lt": "order:0010"}})
    db.orders.aggregate(COPY_STAGES)
    assert "10 of the 120 orders of the setup are gone" in ex.check(db).message
    db, ex = _practice38()
    db.orders.aggregate(COPY_STAGES)
    db.orders.update_many({}, {"$unset": {"customerId": ""}})  # replaced the reference by the copy
    assert "`customerId` is missing" in ex.check(db).message


def test_38_whole_customer_copied_and_array_copy():
    db, ex = _practice38()
    db.orders.aggregate([COPY_STAGES[0], {"$project": {"customer": {"$first": "$c"}}}, COPY_STAGES[2]])
    assert "copies ['email', 'notes'] as well" in ex.check(db).message
    db, ex = _practice38()
    db.orders.aggregate([COPY_STAGES[0], {"$project": {"customer": {"name": "$c.name", "tier": "$c.tier"}}},
                         COPY_STAGES[2]])
    assert not ex.check(db).correct


def test_a_function_with_the_wrong_signature_gets_a_learner_message():
    r = labkit.exercises.get("30-reads-per-write").check(lambda: None)
    assert r.outcome == "error" and "parameters" in r.message and "TypeError" in r.message


# (lesson 32's capped-subset checks are in test_exercises_antipatterns_issue25.py)


# --- 33 · save_user split -----------------------------------------------------------------------------------------

HOT33 = ("name", "avatarUrl", "plan")


def test_33_save_user_right_and_duplicated_hot_fields():
    ex = labkit.exercises.get("33-save-profile-split")
    db = _db("exb33")

    def save_user(d, user):
        d.users.insert_one({k: user[k] for k in ("_id", *HOT33)})
        d.user_details.insert_one({k: v for k, v in user.items() if k not in HOT33})

    def copies_all(d, user):
        d.users.insert_one({k: user[k] for k in ("_id", *HOT33)})
        d.user_details.insert_one(dict(user))

    def drops_history(d, user):
        d.users.insert_one({k: user[k] for k in ("_id", *HOT33)})
        d.user_details.insert_one({k: v for k, v in user.items() if k not in HOT33 and k != "loginHistory"})

    assert ex.check(db, save_user).correct
    assert "also holds hot field(s) ['avatarUrl', 'name', 'plan']" in ex.check(db, copies_all).message
    assert "'loginHistory' missing" in ex.check(db, drops_history).message


# --- 39 · the blog store -------------------------------------------------------------------------------------------

def _fix_blog(keep):
    """Lesson 39's solution, moving only the fields ``keep`` of each post."""
    moved = "**{k: v for k, v in p.items() if k in " + repr(tuple(keep)) + "}}"
    return solved("39-fix-blog", change=("**p}", moved))["fix"]


def test_39_fix_blog_keeps_every_field_of_each_post():
    ex = labkit.exercises.get("39-fix-blog")
    assert ex.check(_fix_blog(("slug", "title", "at"))).correct
    r = ex.check(_fix_blog(("slug",)))  # moved the slugs only
    assert not r.correct and "lost or changed their `title` or `at`" in r.message


# --- 20 · the chat app described to the helper ---------------------------------------------------------------------

def _chat(members_bytes=60, messages_max=None):
    patterns = [{"operation": "Open a channel", "type": "read", "per_second": 2000,
                 "entities": ["channels", "members", "messages"], "fields": ["name", "members.userId", "messages.text"]},
                {"operation": "Post a message", "type": "write", "per_second": 200, "entities": ["messages"],
                 "fields": []}]
    rels = [{"parent": "channels", "child": "members", "cardinality": [2, 8, 50], "child_queried_alone": False,
             "changes_with_parent": True, "child_doc_bytes": members_bytes},
            {"parent": "channels", "child": "messages", "cardinality": [0, 2000, messages_max],
             "child_queried_alone": True, "changes_with_parent": False, "child_doc_bytes": 300}]
    return patterns, rels


def test_20_chat_workload_accepts_inf_as_no_bound_and_checks_sizes():
    ex = labkit.exercises.get("20-chat-workload")
    assert ex.check(*_chat()).correct
    assert ex.check(*_chat(messages_max=float("inf"))).correct  # labkit.decision: None or math.inf = unbounded
    assert "nothing bounds a channel's messages" in ex.check(*_chat(messages_max=100_000)).message
    assert "about 60 bytes" in ex.check(*_chat(members_bytes=6000)).message


# --- 33 · hot/cold split judged against the setup copy --------------------------------------------------------------

def test_33_emptied_cold_fields_are_refused_with_the_setup_copy():
    from test_exercises_antipatterns import COLD, _bloated
    db = _bloated()
    ex = labkit.exercises.get("33-split-hot-cold").remember(db, "products")
    db.product_details.insert_many([{"_id": f"p{i}", "description": "", "specs": {}, "history": [], "thumbnail": ""}
                                    for i in range(10)])
    db.products.update_many({}, {"$unset": {f: "" for f in COLD}})
    r = ex.check(db)
    assert not r.correct and "not their content" in r.message
    db = _bloated()
    ex = labkit.exercises.get("33-split-hot-cold").remember(db, "products")
    db.products.aggregate([{"$project": {"description": 1, "specs": 1, "history": 1, "thumbnail": {"$literal": "T"}}},
                           {"$out": "product_details"}])  # replaced while copying
    db.products.update_many({}, {"$unset": {f: "" for f in COLD}})
    assert "`thumbnail` is not the value the setup had" in ex.check(db).message


# --- 35 · unnecessary indexes -----------------------------------------------------------------------------------------

def test_35_hidden_instead_of_dropped_and_the_hot_index_dropped():
    from test_exercises_antipatterns import _orders35
    ex = labkit.exercises.get("35-drop-unneeded")
    orders = _orders35()
    orders.drop_index("customerId_1")
    for name in ["status_1", "total_1", "createdAt_1"]:
        orders.database.command("collMod", "orders", index={"name": name, "hidden": True})
    assert "hidden, not dropped" in ex.check(orders).message
    orders = _orders35()
    for name in ["customerId_1", "status_1", "total_1", "createdAt_1", "region_1_status_1"]:
        orders.drop_index(name)  # the dashboard's exact index too: it falls back to a COLLSCAN
    assert "dropped the index it needs" in ex.check(orders).message
    orders = _orders35()
    for name in ["customerId_1", "total_1", "createdAt_1", "region_1_status_1"]:
        orders.drop_index(name)  # status_1 still serves the dashboard, at many keys per result
    r = ex.check(orders)
    assert not r.correct and "keys and" in r.message and "No COLLSCAN is not the same as cheap" in r.message


def test_35_hints_do_not_name_the_indexes_to_keep_or_drop():
    for ex_id, names in (("35-drop-unneeded", ("customerId_1_createdAt_-1", "region_1_status_1", "sku_1")),
                         ("35-prune-tickets", ("assignee_1`", "status_1", "priority_1"))):
        for hint in labkit.exercises.get(ex_id).hints:
            assert not any(n in hint for n in names), hint
    assert all(".head(" not in h for h in labkit.exercises.get("30-pick-operations").hints)


# --- damaged or dropped practice data: a message, never a traceback -------------------------------------------------

def test_dropped_practice_data_gets_a_message():
    db = _db("exb_dropped")
    cases = [("31-no-parallel-arrays", (db.products,), "empty"),
             ("33-split-hot-cold", (db,), "empty"),
             ("34-merge-collections", (db,), "no `events` collection"),
             ("36-embed-context", (db,), "empty"),
             ("38-extended-reference", (db,), "empty"),
             ("37-login-filter", (db.members, lambda e: {"emailLower": e.lower()}), "empty")]
    for ex_id, args, phrase in cases:
        r = labkit.exercises.get(ex_id).check(*args)
        assert r.outcome == "incorrect" and phrase in r.message, (ex_id, r)


def test_37_member_without_email_gets_a_message():
    db = _db("exb37")
    db.members.insert_many([{"_id": f"m{i}", "email": f"User{i}@Example.com"} for i in range(30)])
    db.members.update_one({"_id": "m0"}, {"$unset": {"email": ""}})
    r = labkit.exercises.get("37-login-filter").check(db.members, lambda e: {"emailLower": e.lower()})
    assert r.outcome == "incorrect" and "has no `email` string" in r.message


def test_31_an_extra_single_field_index_is_refused():
    db = _shirts31()
    ex = _ex31(db)
    _reshape31(db)
    db.products.create_index([("variants.color", 1)])  # "to be safe": a prefix of the compound index
    r = ex.check(db.products)
    assert not r.correct and "variants.color_1 is a prefix of" in r.message


def test_36_books_authors_keep_their_side_id():
    ex = labkit.exercises.get("36-embed-books")
    keep_id = ('"in": {"name": "$$x.name"', '"in": {"_id": "$$x._id", "name": "$$x.name"')
    migrate = solved("36-embed-books", change=keep_id)["migrate"]

    r = ex.check(migrate, lambda db, book_id: db.books.find_one({"_id": book_id}))
    assert not r.correct and "the side document's `_id`" in r.message


def test_34_new_ids_and_missing_tenant_get_their_own_messages():
    db, ex = _tenants34()
    _merge34(db, change=lambda docs: [{k: v for k, v in d.items() if k != "_id"} for d in docs])
    assert "got a new `_id`" in ex.check(db).message
    db, ex = _tenants34()
    _merge34(db, change=lambda docs: [{k: v for k, v in d.items() if k != "tenantId"} for d in docs])
    assert "no or a wrong `tenantId`" in ex.check(db).message


def test_36_and_38_lookup_arrays_left_in_the_documents_are_refused():
    db, ex = _split36()
    db.users.aggregate([
        {"$lookup": {"from": "user_profiles", "localField": "_id", "foreignField": "userId", "as": "p"}},
        {"$lookup": {"from": "user_addresses", "localField": "_id", "foreignField": "userId", "as": "a"}},
        {"$lookup": {"from": "user_settings", "localField": "_id", "foreignField": "userId", "as": "s"}},
        {"$addFields": {"profile": {"displayName": {"$first": "$p.displayName"}, "bio": {"$first": "$p.bio"}},
                        "addresses": {"$map": {"input": "$a", "as": "x", "in": {"label": "$$x.label",
                                                                                 "city": "$$x.city"}}},
                        "settings": {"theme": {"$first": "$s.theme"}, "newsletter": {"$first": "$s.newsletter"}}}},
        {"$merge": {"into": "users", "on": "_id", "whenMatched": "merge", "whenNotMatched": "discard"}}])
    assert "also got ['a', 'p', 's']" in ex.check(db).message
    db, ex = _practice38()
    db.orders.aggregate([COPY_STAGES[0], {"$addFields": {"customer": {"name": {"$first": "$c.name"},
                                                                      "tier": {"$first": "$c.tier"}}}},
                         COPY_STAGES[2]])
    assert "also got ['c']" in ex.check(db).message


@pytest.mark.parametrize("ex_id,n", [("33-save-profile-split", 2), ("34-ttl-sessions", 2), ("36-embed-books", 2),
                                     ("37-team-names", 3), ("38-rename-agent", 1), ("39-fix-blog", 1),
                                     ("35-prune-tickets", 1), ("32-capped-subset", 1), ("31-flatten-thread", 1),
                                     ("30-reads-per-write", 1)])
def test_a_collection_where_a_function_belongs_gets_a_message(ex_id, n):
    """A pymongo/mongomock collection is callable (it raises TypeError when called): not a learner's function."""
    db = _db("exb_callable")
    args = [db.things] if n == 1 else [db] + [db.things] * (n - 1)
    r = labkit.exercises.get(ex_id).check(*args)
    assert r.outcome == "incorrect", r
    assert "checker gap" not in r.message


# --- 34 · touch must record the `now` it is given ---------------------------------------------------------------

def _setup34(db):
    db.sessions.create_index("lastSeen", expireAfterSeconds=30 * 60)


@pytest.mark.parametrize("touch", [
    lambda coll, sid, now: coll.update_one({"_id": sid}, {"$set": {"lastSeen": __import__("datetime").datetime.now()}}),
    lambda coll, sid, now: coll.update_one({"_id": sid}, {"$currentDate": {"lastSeen": True}}),
    lambda coll, sid, now: coll.update_one({"_id": sid}, {"$set": {"lastSeen": now + __import__("datetime").timedelta(hours=1)}}),
])
def test_34_touch_that_ignores_its_now_argument_is_refused(touch):
    # a touch on the machine's clock survives the pass only because the clock is later than the check's `now`
    r = labkit.exercises.get("34-ttl-sessions").check(_setup34, touch)
    assert not r.correct and "record the `now` it is given" in r.message, r.message


def test_34_touch_with_an_aware_now_passes():
    import datetime as dt

    def touch(coll, sid, now):
        coll.update_one({"_id": sid}, {"$set": {"lastSeen": now.replace(tzinfo=dt.timezone.utc)}})
    assert labkit.exercises.get("34-ttl-sessions").check(_setup34, touch).correct
