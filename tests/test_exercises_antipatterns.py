"""The anti-pattern exercise checkers accept good answers and reject typical wrong ones (embedded engine)."""
import datetime as dt

import pandas as pd
import pytest

import labkit
from labkit.engine import EmbeddedClient


def _db(name):
    return labkit.fresh_db(name, client=EmbeddedClient())


# --- 30 ---------------------------------------------------------------------------------------------------

def _workload():
    return pd.DataFrame({"operation": ["page", "list", "order", "mine", "review", "price", "report"],
                         "type": ["read", "read", "write", "read", "write", "write", "read"],
                         "per_second": [2000, 600, 15, 40, 2, 3 / 3600, 1 / 86400]})


def test_30_pick_operations():
    ex = labkit.exercises.get("30-pick-operations")
    w = pd.DataFrame([("Show article", "read", 5000), ("Front page", "read", 900), ("Like article", "write", 300),
                      ("Add comment", "write", 20), ("Edit article", "write", 0.01), ("Sign up", "write", 1),
                      ("Show profile", "read", 50)], columns=["operation", "type", "per_second"])
    top = w.sort_values("per_second", ascending=False)
    assert ex.check(w, top.head(4)).correct
    assert "left out" in ex.check(w, w.iloc[[0, 1, 3]]).message  # 'Add comment' in, 'Like article' out
    assert "99%" in ex.check(w, w.head(3)).message
    assert "too many" in ex.check(w, top.head(6)).message
    assert "not the news site" in ex.check(_workload(), _workload().head(2)).message
    assert "99%" in ex.check(w, top.head(1)).message
    assert not ex.check(top.head(4))
    assert not ex.check(w, "page")


# --- 31 ---------------------------------------------------------------------------------------------------

def _shirts():
    db = _db("t31")
    db.products.insert_many([{"_id": f"s{i}", "colors": ["red", "blue"][: 1 + i % 2], "sizes": ["S", "M"][: 1 + (i // 2) % 2]}
                             for i in range(20)])
    return db


def _reshape(db):
    for p in db.products.find():
        db.products.update_one({"_id": p["_id"]}, {"$set": {"variants": [{"color": c, "size": s} for c in p["colors"]
                                                                         for s in p["sizes"]]},
                                                   "$unset": {"colors": "", "sizes": ""}})


def test_31_no_parallel_arrays():
    ex = labkit.exercises.get("31-no-parallel-arrays")
    db = _shirts()
    assert "still hold both" in ex.check(db.products).message
    _reshape(db)
    assert "no index holds both" in ex.check(db.products).message
    db.products.create_index([("variants.size", 1), ("variants.color", 1)])
    assert "put `variants.color` first" in ex.check(db.products).message
    db.products.drop_index("variants.size_1_variants.color_1")
    db.products.create_index([("variants.color", 1), ("variants.size", 1)])
    assert ex.check(db.products).correct
    assert not ex.check(db)


def test_31_rejects_a_dummy_variant():
    """Issue 15's example: every product given one dummy variant passes the shape and index checks."""
    ex = labkit.exercises.get("31-no-parallel-arrays")
    db = _db("t31d")
    db.products.insert_many([{"_id": f"shirt:{i:03d}", "name": f"Shirt {i}",
                              "colors": ["red", "blue", "green", "black"][: 1 + i % 4],
                              "sizes": ["S", "M", "L", "XL"][: 1 + (i // 4) % 4]} for i in range(40)])
    db.products.update_many({}, {"$set": {"variants": [{"color": "none", "size": "none"}]},
                                 "$unset": {"colors": "", "sizes": ""}})
    db.products.create_index([("variants.color", 1), ("variants.size", 1)])
    result = ex.check(db.products)
    assert not result.correct and "combinations but its variants hold 1" in result.message


# --- 32 ---------------------------------------------------------------------------------------------------

# --- 33 ---------------------------------------------------------------------------------------------------

def _bloated():
    db = _db("t33")
    db.products.insert_many([{"_id": f"p{i}", "name": "n", "price": 1.0, "category": "c", "rating": 4.0,
                              "thumbnailUrl": "u", "description": "d" * 500, "specs": {"a": 1}, "history": [1],
                              "thumbnail": "T" * 1000} for i in range(10)])
    return db


COLD = ["description", "specs", "history", "thumbnail"]


def test_33_split_hot_cold():
    ex = labkit.exercises.get("33-split-hot-cold")
    db = _bloated()
    assert "still holds cold" in ex.check(db).message
    db.products.aggregate([{"$project": {f: 1 for f in COLD}}, {"$out": "product_details"}])
    assert "still holds cold" in ex.check(db).message
    db.products.update_many({}, {"$unset": {f: "" for f in COLD}})
    assert ex.check(db).correct
    db.product_details.delete_one({"_id": "p3"})
    assert "same `_id`" in ex.check(db).message
    db2 = _bloated()
    db2.products.update_many({}, {"$unset": {f: "" for f in COLD}})  # deleted before copying
    assert "empty" in ex.check(db2).message
    assert not ex.check(db.products)
    # issue 15's example: the cold fields exist in product_details but were emptied (the task: no cold data lost)
    db3 = _bloated()
    db3.product_details.insert_many([{"_id": f"p{i}", "description": "", "specs": {}, "history": [], "thumbnail": ""}
                                     for i in range(10)])
    db3.products.update_many({}, {"$unset": {f: "" for f in COLD}})
    result = ex.check(db3)
    assert not result.correct and "not their content" in result.message


# --- 34 ---------------------------------------------------------------------------------------------------

def _tenants():
    db = _db("t34")
    for t in range(3):
        db[f"events_t{t}"].insert_many([{"_id": f"t{t}:{k:03d}", "seq": k, "at": dt.datetime(2026, 11, 1) +
                                         dt.timedelta(hours=k)} for k in range(30 + t)])
    return db


def _merge(db, drop=True):
    for name in sorted(db.list_collection_names()):
        if name.startswith("events_"):
            db.events.insert_many([d | {"tenantId": name.removeprefix("events_")} for d in db[name].find()])
            if drop:
                db.drop_collection(name)


def test_34_merge_collections():
    ex = labkit.exercises.get("34-merge-collections")
    db = _tenants()
    assert "no `events` collection" in ex.check(db).message
    _merge(db, drop=False)
    assert "remain" in ex.check(db).message
    db = _tenants()
    _merge(db)
    assert "no index starts with `tenantId`" in ex.check(db).message
    db.events.create_index([("tenantId", 1), ("at", -1)])
    assert "no TTL index" in ex.check(db).message
    db.events.create_index([("at", 1)], expireAfterSeconds=30)
    assert "2,592,000" in ex.check(db).message
    db.events.drop_index("at_1")
    db.events.create_index([("at", 1)], expireAfterSeconds=30 * 86_400)
    assert ex.check(db).correct
    assert not ex.check(db.events)


# --- 35 ---------------------------------------------------------------------------------------------------

def _orders35():
    db = _db("t35")
    st = ["new", "paid", "shipped", "delivered"]
    db.orders.insert_many([{"_id": i, "customerId": f"cust:{(i * 7919) % 400:03d}", "status": st[i % 4],
                            "region": f"region:{(i * 31) % 6}", "sku": f"sku:{(i * 13) % 250:03d}", "total": i % 50,
                            "createdAt": dt.datetime(2026, 1, 1) + dt.timedelta(minutes=i)} for i in range(1500)])
    for keys in [[("customerId", 1)], [("customerId", 1), ("createdAt", -1)], [("status", 1)],
                 [("region", 1), ("status", 1)], [("sku", 1)], [("total", 1)], [("createdAt", 1)]]:
        db.orders.create_index(keys)
    return db.orders


def test_35_drop_unneeded():
    ex = labkit.exercises.get("35-drop-unneeded")
    orders = _orders35()
    assert "prefix of" in ex.check(orders).message
    orders.drop_index("customerId_1")
    assert "no query of the workload uses" in ex.check(orders).message
    for name in ["status_1", "total_1", "createdAt_1"]:
        orders.drop_index(name)
    assert ex.check(orders).correct
    orders.drop_index("sku_1")
    assert "dropped the index it needs" in ex.check(orders).message
    orders = _orders35()
    for name in ["customerId_1_createdAt_-1", "status_1", "total_1", "createdAt_1"]:
        orders.drop_index(name)
    assert "blocking SORT" in ex.check(orders).message
    assert not ex.check(orders.database)


def test_35_rejects_dropping_the_exact_index():
    """Issue 15's example: dropping region_1_status_1 leaves the dashboard on status_1 (no COLLSCAN, but
    hundreds of keys for a few results)."""
    orders = _orders35()
    for name in ["customerId_1", "total_1", "createdAt_1", "region_1_status_1"]:
        orders.drop_index(name)
    result = labkit.exercises.get("35-drop-unneeded").check(orders)
    assert not result.correct and "No COLLSCAN is not the same as cheap" in result.message


def test_35_is_judged_on_pristine_orders():
    orders = _orders35()
    for name in ["customerId_1", "total_1", "createdAt_1", "region_1_status_1"]:
        orders.drop_index(name)
    orders.delete_many({})  # an empty collection makes every plan look cheap; the check uses its own orders
    assert "not the same as cheap" in labkit.exercises.get("35-drop-unneeded").check(orders).message


# --- 36 ---------------------------------------------------------------------------------------------------

def _split36():
    db = _db("t36")
    db.users.insert_many([{"_id": f"u{u}", "email": "e"} for u in range(6)])
    db.user_profiles.insert_many([{"_id": f"p{u}", "userId": f"u{u}", "displayName": "n"} for u in range(6)])
    db.user_addresses.insert_many([{"_id": f"a{u}{k}", "userId": f"u{u}", "label": "home", "city": "c"}
                                   for u in range(6) for k in range(1 + u % 3)])
    db.user_settings.insert_many([{"_id": f"s{u}", "userId": f"u{u}", "theme": "light"} for u in range(6)])
    return db


LOOKUPS = [{"$lookup": {"from": f, "localField": "_id", "foreignField": "userId", "as": a}}
           for f, a in (("user_profiles", "p"), ("user_addresses", "a"), ("user_settings", "s"))]
PROJECT = {"$project": {"email": 1, "profile": {"displayName": {"$first": "$p.displayName"}},
                        "addresses": {"$map": {"input": "$a", "as": "x", "in": {"label": "$$x.label", "city": "$$x.city"}}},
                        "settings": {"theme": {"$first": "$s.theme"}}}}


def test_36_embed_context():
    ex = labkit.exercises.get("36-embed-context")
    db = _split36()
    assert "no embedded `profile`" in ex.check(db).message
    db.users.aggregate([LOOKUPS[0] | {}, {"$addFields": {"profile": "$p"}}, {"$out": "tmp"}])
    db.tmp.rename("users", dropTarget=True)
    assert "is an array" in ex.check(db).message
    db = _split36()
    db.users.aggregate(LOOKUPS + [PROJECT, {"$out": "tmp"}])
    db.tmp.rename("users", dropTarget=True)
    assert "still exist" in ex.check(db).message
    for name in ("user_profiles", "user_addresses", "user_settings"):
        db.drop_collection(name)
    assert ex.check(db).correct
    assert not ex.check(db.users)


# --- 37 ---------------------------------------------------------------------------------------------------

def test_37_login_filter():
    ex = labkit.exercises.get("37-login-filter")
    db = _db("t37")
    db.members.insert_many([{"_id": f"m{i:04d}", "email": ["ana", "Ben", "CHLOE"][i % 3] + f"{i}@Example.com"}
                            for i in range(200)])
    db.members.create_index([("email", 1)])
    assert "regular expression" in ex.check(db.members, lambda e: {"email": {"$regex": f"^{e}$", "$options": "i"}}).message
    assert "expected only" in ex.check(db.members, lambda e: {"email": e}).message
    db.members.update_many({}, [{"$set": {"emailLower": {"$toLower": "$email"}}}])
    assert "index the normalized field" in ex.check(db.members, lambda e: {"emailLower": e.lower()}).message
    db.members.create_index([("emailLower", 1)], unique=True)
    assert ex.check(db.members, lambda e: {"emailLower": e.lower()}).correct
    assert not ex.check(db.members)


# --- 38 ---------------------------------------------------------------------------------------------------

def test_38_extended_reference():
    ex = labkit.exercises.get("38-extended-reference")
    db = _db("t38")
    db.customers.insert_many([{"_id": f"c{c}", "name": f"N{c}", "tier": "gold", "email": "e"} for c in range(5)])
    db.orders.insert_many([{"_id": f"o{o}", "customerId": f"c{o % 5}"} for o in range(20)])
    assert "no `customer` subdocument" in ex.check(db).message
    for c in db.customers.find():
        db.orders.update_many({"customerId": c["_id"]}, {"$set": {"customer": c}})
    assert "copies ['email']" in ex.check(db).message
    for c in db.customers.find():
        db.orders.update_many({"customerId": c["_id"]}, {"$set": {"customer": {"name": c["name"], "tier": c["tier"]}}})
    assert ex.check(db).correct
    db.customers.update_one({"_id": "c1"}, {"$set": {"name": "renamed"}})
    assert "but customer" in ex.check(db).message
    db.orders.update_many({}, {"$unset": {"customerId": ""}})
    assert "lost their `customerId`" in ex.check(db).message
    assert not ex.check(db.orders)


# --- 39 ---------------------------------------------------------------------------------------------------

def _legacy():
    from pathlib import Path

    from bson import json_util
    from bson.json_util import JSONMode, JSONOptions

    text = (Path(__file__).resolve().parents[1] / "data" / "legacy_store.json").read_text()
    assert len(text) < 300_000
    legacy = json_util.loads(text, json_options=JSONOptions(json_mode=JSONMode.RELAXED, tz_aware=False))
    db = _db("t39")
    for name, docs in legacy["collections"].items():
        db[name].insert_many(docs)
    for name, specs in legacy["indexes"].items():
        for spec in specs:
            db[name].create_index(list(spec["key"].items()), name=spec["name"])
    return db, legacy["queryLog"]


def _profile(db, login_filter, collation=None):
    """Profiler-shaped entries (manual: Database Profiler Output): the login and the product list."""
    import datetime as dt

    t0 = dt.datetime(2026, 3, 2)
    login = {"find": "customers", "filter": login_filter, **({"collation": collation} if collation else {})}
    out = []
    for i in range(20):
        out.append({"op": "query", "ns": f"{db.name}.customers", "command": login, "ts": t0 + dt.timedelta(seconds=i)})
        out.append({"op": "query", "ns": f"{db.name}.products", "ts": t0 + dt.timedelta(seconds=i, milliseconds=500),
                    "command": {"find": "products", "filter": {"category": "tea"}, "projection": {"name": 1}}})
    return out


def _fix_customers(db, keep_events=True):
    if keep_events:
        db.customer_activity.insert_many([{"customerId": c["_id"], **e}
                                          for c in db.customers.find({}, {"activity": 1}) for e in c["activity"]])
    db.customers.update_many({}, {"$unset": {"activity": ""}})
    db.customers.drop_index("email_1")
    db.command("collMod", "customers", validator={"$jsonSchema": {"bsonType": "object", "required": ["email"]}})
    if keep_events:
        db.command("collMod", "customer_activity", validator={"$jsonSchema": {"bsonType": "object",
                                                                              "required": ["customerId", "at"]}})


def test_39_schema_review():
    from bson.regex import Regex

    from labkit.review import review

    ex = labkit.exercises.get("39-schema-review")
    db, _ = _legacy()
    regex_log = _profile(db, {"email": Regex("^ana\\.0@example\\.com$", "i")})
    found = review(db, query_log=regex_log).kinds()
    assert {("unbounded-array", "customers.activity"), ("case-insensitive-regex", "customers.email"),
            ("redundant-index", "customers.email_1"), ("no-validation", "customers")} <= found
    assert "still reports" in ex.check(db, regex_log, found).message
    assert "still hidden" in ex.check(db, regex_log, found - {("no-validation", "customers")}).message
    assert "is not what the review reports" in ex.check(db, regex_log, found | {("deep-nesting", "x")}).message
    assert "not a kind" in ex.check(db, regex_log, {("hot-lookup", "x")}).message
    _fix_customers(db)
    still = review(db, query_log=regex_log).kinds()
    assert "case-insensitive-regex" in ex.check(db, regex_log, still).message
    ci = {"locale": "en", "strength": 2}
    log = _profile(db, {"email": "ana.0@example.com"}, collation=ci)
    final = review(db, query_log=log).kinds()
    assert not [w for k, w in final if w.startswith("customers")]
    assert "case-insensitive collation" in ex.check(db, log, final).message
    db.customers.create_index("email", name="email_ci", collation=ci)
    assert ex.check(db, log, review(db, query_log=log).kinds()).correct
    no_login = [q for q in log if not q["ns"].endswith(".customers")]
    assert "login query" in ex.check(db, no_login, review(db, query_log=no_login).kinds()).message
    assert not ex.check(db, found)
    assert "profiler documents" in ex.check(db, [{"collection": "customers"}], set()).message

    lost, _ = _legacy()  # dropping the events is not a fix
    _fix_customers(lost, keep_events=False)
    lost.customers.create_index("email", name="email_ci", collation=ci)
    lost_log = _profile(lost, {"email": "ana.0@example.com"}, collation=ci)
    assert "activity events are gone" in ex.check(lost, lost_log, review(lost, query_log=lost_log).kinds()).message
