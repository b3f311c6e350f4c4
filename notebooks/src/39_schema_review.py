# ---
# jupyter:
#   jupytext:
#     formats: ipynb,src//py:percent
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
#   labkit:
#     minutes: 40
#     exercise_minutes: 15
#     title: "Schema review: run the checklist on a legacy store"
#     section: Anti-patterns
#     demo: "Review the legacy store with labkit.review, fix the two hottest findings, and re-run the review to watch them go."
#     mistakes: ["Judging an array by its length today instead of by what bounds it", "Dropping a unique or partial index because its keys look like a prefix", "Treating every $lookup as a problem, whatever its frequency", "Trusting $indexStats counters that started a minute ago", "Creating the new collection without the validator the shape now deserves"]
#     sources:
#     - title: "MongoDB manual: Schema Design Anti-Patterns"
#       url: https://www.mongodb.com/docs/manual/data-modeling/design-antipatterns/
#     - title: "MongoDB manual: Database Profiler"
#       url: https://www.mongodb.com/docs/manual/tutorial/manage-the-database-profiler/
#     - title: "MongoDB manual: Database Profiler Output"
#       url: https://www.mongodb.com/docs/manual/reference/database-profiler/
#     - title: "MongoDB Atlas: Unsupported Commands (Free and Flex clusters)"
#       url: https://www.mongodb.com/docs/atlas/unsupported-commands/
#     - title: "MongoDB manual: $sample (aggregation stage)"
#       url: https://www.mongodb.com/docs/manual/reference/operator/aggregation/sample/
#     - title: "MongoDB manual: $collStats (aggregation stage)"
#       url: https://www.mongodb.com/docs/manual/reference/operator/aggregation/collStats/
#     - title: "MongoDB manual: $indexStats (aggregation stage)"
#       url: https://www.mongodb.com/docs/manual/reference/operator/aggregation/indexStats/
#     - title: "MongoDB manual: Schema Validation"
#       url: https://www.mongodb.com/docs/manual/core/schema-validation/
#     - title: "MongoDB manual: MongoDB Extended JSON (v2)"
#       url: https://www.mongodb.com/docs/manual/reference/mongodb-extended-json/
# ---

# %% [markdown]
# # 39 · Schema review: run the checklist on a legacy store
#
# **You will learn**
# - to review an existing schema with measurements instead of opinions, read-only, with `labkit.review`;
# - where each kind of evidence comes from: `$sample`, `$collStats`, `$indexStats`, validators, and a query log
#   of what actually ran (the profiler, or command monitoring where the profiler is refused);
# - the source material's review checklist, item by item, and which finding answers each;
# - to fix findings in order of the traffic they touch, and re-run the review to see them go.
#
# The review looks for the manual's schema design anti-patterns
# ([manual: anti-patterns](https://www.mongodb.com/docs/manual/data-modeling/design-antipatterns/)) and the two
# the source material adds (data accessed together but stored apart, case-insensitive regular expressions).
#
# **Time:** about 40 minutes.

# %%
import datetime as dt
import random
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
from bson import json_util
from bson.json_util import JSONMode, JSONOptions
from bson.regex import Regex

import labkit

db = labkit.fresh_db("39_schema_review")
print("engine:", labkit.describe(db.client))

# %% [markdown]
# ## The legacy store
#
# A small shop's database, inherited from another team: its collections, its indexes, and its workload (each
# query the application sends, with how often it sends it). It ships as MongoDB Extended JSON
# ([manual: Extended JSON](https://www.mongodb.com/docs/manual/reference/mongodb-extended-json/)) in
# `data/legacy_store.json`. This code is what generated the file (fixed seed):

# %%
LEGACY_JSON = JSONOptions(json_mode=JSONMode.RELAXED, tz_aware=False)


def legacy_store(seed=39):
    """The legacy store's data, indexes and a query-log sample: same seed, same bytes."""
    rng = random.Random(seed)
    t0 = dt.datetime(2025, 3, 1)
    names = ["Ana", "Ben", "Chloe", "Dev", "Elena", "Farah", "Gus", "Hana", "Ivan", "Jada"]
    customers = []
    for c in range(60):
        n = 1800 if c == 13 else rng.randint(0, 25)
        customers.append({
            "_id": f"cust:{c:03d}", "email": f"{names[c % 10]}.{c}@Example.com", "name": f"{names[c % 10]} {c}",
            "createdAt": t0 + dt.timedelta(days=c),
            "activity": [{"at": t0 + dt.timedelta(minutes=61 * i), "page": f"/p/{(i * 7 + c) % 40}"} for i in range(n)],
        })
    products = []
    for p in range(14):
        products.append({
            "_id": f"prod:{p:03d}", "name": f"Kettle {p}", "price": round(15 + rng.random() * 80, 2),
            "category": ["kitchen", "tea", "outdoor"][p % 3],
            "description": " ".join(rng.choice(["steel", "quiet", "fast", "boil", "handle", "litre", "lid"])
                                    for _ in range(500)),
            "specSheet": {f"spec{k:02d}": rng.randint(1, 999) for k in range(60)},
            "revisions": [{"rev": r, "by": f"staff:{rng.randint(1, 9)}", "note": "copy edit"} for r in range(25)],
        })
    tenants = ["acme", "globex", "initech", "umbrella", "hooli", "stark"]
    orders = {}
    for ti, tenant in enumerate(tenants):
        orders[f"orders_{tenant}"] = [{
            "_id": f"{tenant}:{o:03d}", "customerId": f"cust:{(o * 7 + ti) % 60:03d}",
            "total": round(5 + rng.random() * 300, 2), "createdAt": t0 + dt.timedelta(hours=5 * o + ti),
        } for o in range(25)]
    collections = {"customers": customers, "products": products, **orders}
    indexes = {
        "customers": [{"name": "email_1", "key": {"email": 1}},
                      {"name": "email_1_createdAt_-1", "key": {"email": 1, "createdAt": -1}}],
        "products": [{"name": "category_1_price_1", "key": {"category": 1, "price": 1}},
                     {"name": "category_1", "key": {"category": 1}}],
        **{name: [{"name": "customerId_1", "key": {"customerId": 1}}] for name in orders},
    }
    query_log = [
        {"collection": "customers", "op": "find", "perSecond": 120,
         "filter": {"email": Regex("^ana\\.0@example\\.com$", "i")}, "projection": None},
        {"collection": "products", "op": "find", "perSecond": 400, "filter": {"category": "tea"},
         "projection": {"name": 1, "price": 1}},
        {"collection": "customers", "op": "find", "perSecond": 60, "filter": {"_id": "cust:013"},
         "projection": {"name": 1, "email": 1}},
        {"collection": "orders_acme", "op": "aggregate", "perSecond": 250, "pipeline": [
            {"$match": {"customerId": "cust:007"}},
            {"$lookup": {"from": "customers", "localField": "customerId", "foreignField": "_id", "as": "customer"}}]},
        {"collection": "orders_globex", "op": "aggregate", "perSecond": 0.001, "pipeline": [
            {"$lookup": {"from": "products", "localField": "sku", "foreignField": "_id", "as": "product"}},
            {"$group": {"_id": "$customerId", "n": {"$sum": 1}}}]},
    ]
    return {"collections": collections, "indexes": indexes, "queryLog": query_log}


def legacy_json(seed=39):
    return json_util.dumps(legacy_store(seed), json_options=LEGACY_JSON) + "\n"


# %% [markdown]
# Notebooks run from their own folder (`students/` or `notebooks/`), so the file is one level up. Loading it,
# and checking that it is exactly what the code above generates:

# %%
ROOT = Path.cwd().parent if Path.cwd().name in ("notebooks", "students") else Path.cwd()
path = ROOT / "data" / "legacy_store.json"
text = path.read_text()
legacy = json_util.loads(text, json_options=LEGACY_JSON)
print(f"{path.relative_to(ROOT)}: {len(text):,} bytes; same as the generator: {text == legacy_json()}")


# %% [markdown]
# Into the database: every collection with its documents and indexes.

# %%
def load(target):
    for name, docs in legacy["collections"].items():
        target[name].insert_many(docs)
    for name, specs in legacy["indexes"].items():
        for spec in specs:
            target[name].create_index(list(spec["key"].items()), name=spec["name"])


load(db)
workload = legacy["queryLog"]
pd.DataFrame([{"collection": q["collection"], "op": q["op"], "per second": q["perSecond"],
               "query": str(q.get("filter") or [list(s)[0] for s in q["pipeline"]])} for q in workload])

# %% [markdown]
# ## What runs: a query log
#
# A review needs to know what runs, and how often. The application does not know that reliably; the server
# does. The **database profiler**, at level 2, records every operation as a document of `<db>.system.profile`:
# `op`, `ns`, the `command` itself, `ts`, `millis`, and counters such as `keysExamined` and `docsExamined`
# ([manual: profiler](https://www.mongodb.com/docs/manual/tutorial/manage-the-database-profiler/),
# [manual: profiler output](https://www.mongodb.com/docs/manual/reference/database-profiler/)). On a busy
# server use level 1 with `slowms`/`sampleRate`, or a `filter`, rather than level 2.
#
# Here the application's traffic runs for one second at the workload's rates (the nightly report once, as if
# the second were the one it started in), and `labkit.querylog.capture` records it (lesson 38): with the
# profiler where the deployment allows it, otherwise from the driver's command monitoring, because Atlas Free
# and Flex clusters refuse `profile`
# ([Atlas: unsupported commands](https://www.mongodb.com/docs/atlas/unsupported-commands/)). Nothing in the log is
# typed in: every entry is an operation the server ran.

# %%
def traffic(workload, seconds=1):
    """The application: each query of `workload`, at its rate, for `seconds` (at least once each)."""
    def run(d):
        runs = {i: max(1, round(q["perSecond"] * seconds)) for i, q in enumerate(workload)}
        for step in range(max(runs.values())):
            for i, q in enumerate(workload):
                if step < runs[i]:
                    coll = d[q["collection"]]
                    if q["op"] == "find":
                        cursor = coll.find(q["filter"], q.get("projection"))
                        list(cursor.collation(q["collation"]) if q.get("collation") else cursor)
                    else:
                        list(coll.aggregate(q["pipeline"]))
    return run


def profile_log(target, workload, seconds=1):
    """Run `seconds` of `workload` against `target` and return what ran, as profiler documents."""
    return labkit.querylog.capture(target, traffic(workload, seconds)).entries


captured = labkit.querylog.capture(db, traffic(workload))
log = captured.entries
print(f"{len(log):,} operations recorded, from the {captured.source}")
captured.summary()[["shape", "runs"]]

# %% [markdown]
# One entry, as the server wrote it (the command, the counters, the time; fields that vary from run to run left
# out):

# %%
{k: v for k, v in log[0].items() if k in ("op", "ns", "command", "keysExamined", "docsExamined", "nreturned",
                                           "planSummary")}

# %% [markdown]
# On a server you can also read the log yourself with `db.system.profile.find()`, or save it as JSON lines with
# `mongoexport -c system.profile` for `python -m labkit review --query-log`; `labkit.review` reads
# `system.profile` by itself when no log is given.
#
# ## Run the review
#
# `labkit.review(db, query_log=log)` reads, and never writes: up to 1,000 documents per collection with
# `$sample` ([manual: `$sample`](https://www.mongodb.com/docs/manual/reference/operator/aggregation/sample/)),
# `$collStats` ([manual](https://www.mongodb.com/docs/manual/reference/operator/aggregation/collStats/)),
# `$indexStats` ([manual](https://www.mongodb.com/docs/manual/reference/operator/aggregation/indexStats/)), the
# validators and index specs, and the log. Every finding has a kind, a place, a severity, the measured evidence,
# a fix with the commands, and the lesson that teaches it.

# %%
before = labkit.review(db, query_log=log)
print(before.summary())
before.to_frame()[["severity", "kind", "where", "summary"]]

# %% [markdown]
# One finding in full. `unbounded-array` is judged by **what bounds the array**, not by its length today:
# `products.revisions` holds only 25 entries, but nothing (no `maxItems`, no `$slice`) stops it from growing.

# %%
for f in before.findings:
    if f.kind == "unbounded-array":
        print(f"{f.kind} {f.where} ({f.severity}): {f.summary}")
        print("  evidence:", {k: v for k, v in f.evidence.items()})
        print("  fix:", f.fix, "\n")

# %% [markdown]
# What the review does **not** say matters as much:
#
# - the indexes' `$indexStats` counters started when this copy was loaded, seconds ago, so no index is
#   called unused (on a live cluster, read them on every member, with their `since` time);
# - a unique or partial index is never proposed as redundant, even when its keys are a prefix of another;
# - the nightly `$lookup` on `orders_globex` runs once in the log: not a finding.
#
# Without query data, the checks that need it say so, and the rest still run. An untouched copy of the store,
# whose profiler has recorded nothing (it also serves the thresholds explorer below):

# %%
original = labkit.fresh_db("39_schema_review_original")
load(original)
blind = labkit.review(original)
print(blind.summary())
sorted(before.kinds() - blind.kinds())

# %% [markdown]
# ## The checklist behind the review
#
# The source material ends its anti-patterns with a review checklist. Each item, in short, and what answers it
# here:
#
# | checklist item | how the review (or the lesson) answers it |
# |---|---|
# | list every operation with its type, frequency and fields; rank by frequency | the query log, ranked by runs (lesson 30 builds the table) |
# | make each top operation read one document through one index | `separate-data`, `lookup-overuse` (lessons 36, 38) |
# | name what bounds every array; move unbounded ones out, keep a capped subset | `unbounded-array` (32) |
# | compare `avgObjSize` with what the hot queries return; split cold fields | `bloated-document` (33) |
# | count collections; look for names holding ids or dates | `many-collections` (34) |
# | `$indexStats` on every member; hide unused and prefix-redundant indexes, then drop | `unused-index`, `redundant-index` (35); the review reads the member it is connected to |
# | replace `$lookup` and repeated same-key reads on hot paths with embedded or copied fields | `lookup-overuse`, `separate-data` (lessons 36, 38) |
# | replace case-insensitive regular expressions with a collation index or a normalized field | `case-insensitive-regex` (37) |
# | add `$jsonSchema` validation once the shape is settled | `no-validation` (07) |
#
# The kinds this first review reported, against that list:

# %%
CHECKLIST = {
    "separate-data": "one document through one index", "lookup-overuse": "no $lookup on hot paths",
    "unbounded-array": "what bounds every array", "bloated-document": "avgObjSize vs the hot queries",
    "many-collections": "count collections", "unused-index": "$indexStats, hide, drop",
    "redundant-index": "$indexStats, hide, drop", "case-insensitive-regex": "no case-insensitive regex",
    "no-validation": "$jsonSchema validation",
}
found = before.to_frame().groupby("kind").size().rename("findings").to_frame()
found["checklist item"] = found.index.map(CHECKLIST)
found

# %% [markdown]
# ## The evidence side by side
#
# Severity per finding, grouped by the lesson that teaches the fix:

# %%
frame = before.to_frame()
counts = frame.groupby(["lesson", "severity"]).size().unstack(fill_value=0)
counts = counts.reindex(columns=[s for s in ("high", "medium", "low") if s in counts.columns])
fig, ax = plt.subplots(figsize=(7, 3))
counts.plot.barh(stacked=True, ax=ax, color={"high": "#d62728", "medium": "#ff7f0e", "low": "#1f77b4"})
ax.set_xlabel("findings")
ax.invert_yaxis()
plt.tight_layout()
plt.show()

# %% [markdown]
# ## Fix in order of traffic
#
# The products query runs 400 times a second; the order lookup 250. Both first.
#
# **Products** (`bloated-document`, `unbounded-array` on `revisions`, `redundant-index`): the hot query reads
# name and price, so the description and spec sheet move to `product_details` (same `_id`), each revision
# becomes a document of `product_revisions`, the redundant index goes, and a validator on each of the three
# collections writes the shape down ([manual: schema validation](https://www.mongodb.com/docs/manual/core/schema-validation/)).

# %%
db.products.aggregate([{"$project": {"description": 1, "specSheet": 1}}, {"$merge": {"into": "product_details"}}])
db.product_revisions.insert_many([{"_id": f"{p['_id']}:{r['rev']}", "productId": p["_id"], **r}
                                  for p in db.products.find({}, {"revisions": 1}) for r in p["revisions"]])
db.product_revisions.create_index([("productId", 1), ("rev", -1)])
db.products.update_many({}, {"$unset": {"description": "", "specSheet": "", "revisions": ""}})
db.products.drop_index("category_1")
db.command("collMod", "products", validator={"$jsonSchema": {
    "bsonType": "object", "required": ["name", "price", "category"],
    "properties": {"price": {"bsonType": ["double", "int"]}}}})
db.command("collMod", "product_details", validator={"$jsonSchema": {
    "bsonType": "object", "required": ["description", "specSheet"],
    "properties": {"description": {"bsonType": "string"}, "specSheet": {"bsonType": "object"}}}})
db.command("collMod", "product_revisions", validator={"$jsonSchema": {"bsonType": "object",
                                                                      "required": ["productId", "rev"]}})
print({n: db[n].estimated_document_count() for n in ("products", "product_details", "product_revisions")})

# %% [markdown]
# **Orders** (`many-collections`, `lookup-overuse`): six collections with the same shape become one `orders`
# with a `tenant` field, and the hot read's join becomes an extended reference (lesson 38): the customer's
# name is copied into each order, `customerId` stays.

# %%
tenants = sorted(n for n in db.list_collection_names() if n.startswith("orders_"))
for name in tenants:
    db[name].aggregate([
        {"$set": {"tenant": name.split("_", 1)[1]}},
        {"$lookup": {"from": "customers", "localField": "customerId", "foreignField": "_id", "as": "c"}},
        {"$set": {"customer": {"name": {"$first": "$c.name"}}}},
        {"$unset": "c"},
        {"$merge": {"into": "orders"}}])
    db.drop_collection(name)
db.orders.create_index([("tenant", 1), ("customerId", 1)])
db.command("collMod", "orders", validator={"$jsonSchema": {"bsonType": "object",
                                                           "required": ["tenant", "customerId", "total"]}})
print(f"{len(tenants)} collections merged into orders: {db.orders.count_documents({}):,} orders;",
      db.orders.find_one({"_id": "acme:001"}))

# %% [markdown]
# The application changes with the schema, so the workload does too: the hot order read is now one indexed
# `find` without a join, and the nightly report reads `orders` by tenant.
#
# **Predict.** The first review reported the findings listed above. After these fixes to products and orders,
# how many of them will the re-run review no longer report? Record a number with `predict_gone.predict(...)`.

# %%
predict_gone = labkit.exercises.get("39-predict-findings-gone")
predict_gone

# %% tags=["solution"]
predict_gone.predict(len([f for f in before.findings if not f.where.startswith("customers")]))

# %% tags=["reveal"]
workload_after = [
    workload[0],  # the customer login, unchanged (the exercise fixes it)
    workload[1],
    workload[2],
    {"collection": "orders", "op": "find", "perSecond": 250, "filter": {"tenant": "acme", "customerId": "cust:007"},
     "projection": {"total": 1, "createdAt": 1, "customer": 1}},
    {"collection": "orders", "op": "aggregate", "perSecond": 0.001, "pipeline": [
        {"$match": {"tenant": "globex"}},
        {"$lookup": {"from": "products", "localField": "sku", "foreignField": "_id", "as": "product"}},
        {"$group": {"_id": "$customerId", "n": {"$sum": 1}}}]},
]
log_after = profile_log(db, workload_after)
after = labkit.review(db, query_log=log_after)
gone = sorted(before.kinds() - after.kinds())
print(f"{len(gone)} findings gone:", gone)
after.to_frame()[["severity", "kind", "where", "summary"]]

# %% tags=["reveal"]
predict_gone.check(len(gone))

# %% [markdown]
# ## Explore: thresholds
#
# Thresholds are judgement calls; `labkit.review(..., thresholds={...})` changes them. Move them and see how
# many findings each kind raises on an untouched copy of the legacy store.

# %%
from labkit.review import judge, measure
from labkit.widgets import explorer, measured

original_log = profile_log(original, workload)  # one second of the workload on the untouched copy
# the review reads the store once (measure); each step judges that reading with the slider's thresholds
reading = measured(lambda: measure(original, query_log=original_log), data=original)


def flagged(array_docs_min, bloat_ratio, lookup_share_pct):
    r = judge(reading(), thresholds={
        "array_docs_min": array_docs_min, "bloat_ratio": bloat_ratio, "lookup_share": lookup_share_pct / 100})
    counts = {kind: 0 for kind in ("unbounded-array", "bloated-document", "lookup-overuse")}
    for f in r.findings:
        if f.kind in counts:
            counts[f.kind] += 1
    counts["all findings"] = len(r.findings)
    return counts


def draw_flagged(ax, values, r):
    ax.barh(list(r)[::-1], list(r.values())[::-1])
    ax.set_xlabel("findings")
    ax.tick_params(axis="y", labelsize=7)


th = explorer(flagged, sliders={"array_docs_min": (5, 100, 20, 1), "bloat_ratio": (2, 200, 10, 1),
                                "lookup_share_pct": (1, 50, 10, 1)}, title="Review thresholds", draw=draw_flagged,
              cache=True, data=original)
th

# %% [markdown]
# ## Exercise
#
# Four findings are left, all on `customers`: the activity array nothing bounds (one customer already holds
# 1,800 entries), the case-insensitive login regex, the redundant `email_1`, and no validator. Fix them:
#
# - move the activity to its own collection (one document per event, with `customerId`), and remove the array;
# - give the login a case-insensitive index (collation strength 2, lesson 37) and change the login query in
#   `workload_after` to an equality match with that collation (`"collation": {...}` in its entry);
# - drop the redundant index; add a validator to `customers` and to the new collection.
#
# Then rebuild the log (`log_after = profile_log(db, workload_after)`), re-run the review, and submit
# `ex.check(db, log_after, findings)` with `findings` = the set of `(kind, where)` pairs the review still
# reports (`review.kinds()`). The checker re-runs the review and checks your fixes kept every event.

# %%
ex = labkit.exercises.get("39-schema-review")
ex

# %% tags=["solution"]
CI = {"locale": "en", "strength": 2}
db.customer_activity.insert_many([{"customerId": c["_id"], **event}
                                  for c in db.customers.find({}, {"activity": 1}).sort("_id", 1)
                                  for event in c["activity"]])
db.customer_activity.create_index([("customerId", 1), ("at", -1)])
db.customers.update_many({}, {"$unset": {"activity": ""}})
db.customers.drop_index("email_1")
db.customers.create_index("email", name="email_ci", collation=CI)
db.command("collMod", "customers", validator={"$jsonSchema": {"bsonType": "object", "required": ["email", "name"]}})
db.command("collMod", "customer_activity", validator={"$jsonSchema": {"bsonType": "object",
                                                                      "required": ["customerId", "at"]}})
workload_after[0] = {"collection": "customers", "op": "find", "perSecond": 120,
                     "filter": {"email": "ana.0@example.com"}, "collation": CI, "projection": None}
log_after = profile_log(db, workload_after)
final = labkit.review(db, query_log=log_after)
print(final.summary())
ex.check(db, log_after, final.kinds())

# %% [markdown]
# ## Exercise: the same idea on another store
#
# Another inherited database, a blog: 30 `authors`, each embedding all of their `posts`, with the indexes
# `handle_1` and `handle_1_joined_-1`. Review it yourself first (the cell below builds it in `blog`), then
# write `fix(db)` so that `labkit.review(db)` reports nothing, while every post is kept.
# `ex_blog.check(fix)` runs your `fix` on its own pristine copy of the store and re-runs the review.

# %%
from labkit.exercises.antipatterns import blog_store

blog = labkit.fresh_db("39_blog")
print(f"{blog_store(blog)} posts inside {blog.authors.count_documents({})} authors")
ex_blog = labkit.exercises.get("39-fix-blog")
ex_blog


# %% tags=["solution"]
def fix(d):
    d.posts.insert_many([{"authorId": a["_id"], **p} for a in d.authors.find({}, {"posts": 1}) for p in a["posts"]])
    d.posts.create_index([("authorId", 1), ("at", -1)])
    d.authors.update_many({}, {"$unset": {"posts": ""}})
    d.authors.drop_index("handle_1")
    d.command("collMod", "authors", validator={"$jsonSchema": {"bsonType": "object", "required": ["handle"]}})
    d.command("collMod", "posts", validator={"$jsonSchema": {"bsonType": "object",
                                                            "required": ["authorId", "slug"]}})


ex_blog.check(fix)

# %% [markdown]
# ## Summary
#
# - `labkit.review(db)` (or `python -m labkit review --db NAME`) measures instead of guessing, read-only:
#   `$sample`, `$collStats`, `$indexStats`, validators, and the profiler's record of what runs.
# - Arrays are judged by what bounds them; indexes that are constraints (unique, partial, TTL, collation,
#   hidden) are never "redundant"; usage counters count only since their `since` time; joins by frequency.
# - Fix in order of traffic, change the workload with the schema, and re-run the review to see the findings go.
#
# **Next:** back to the workload table (30): the review is only as good as the workload it was given.

# %% [markdown] tags=["sources"]
# ## Sources
#
# 1. [MongoDB manual: Schema Design Anti-Patterns](https://www.mongodb.com/docs/manual/data-modeling/design-antipatterns/)
# 2. [MongoDB manual: Database Profiler](https://www.mongodb.com/docs/manual/tutorial/manage-the-database-profiler/)
# 3. [MongoDB manual: Database Profiler Output](https://www.mongodb.com/docs/manual/reference/database-profiler/)
# 4. [MongoDB Atlas: Unsupported Commands (Free and Flex clusters)](https://www.mongodb.com/docs/atlas/unsupported-commands/)
# 5. [MongoDB manual: \$sample (aggregation stage)](https://www.mongodb.com/docs/manual/reference/operator/aggregation/sample/)
# 6. [MongoDB manual: \$collStats (aggregation stage)](https://www.mongodb.com/docs/manual/reference/operator/aggregation/collStats/)
# 7. [MongoDB manual: \$indexStats (aggregation stage)](https://www.mongodb.com/docs/manual/reference/operator/aggregation/indexStats/)
# 8. [MongoDB manual: Schema Validation](https://www.mongodb.com/docs/manual/core/schema-validation/)
# 9. [MongoDB manual: MongoDB Extended JSON (v2)](https://www.mongodb.com/docs/manual/reference/mongodb-extended-json/)

# %% [markdown] tags=["navigation"]
# [← 38 · Anti-pattern: overuse of \$lookup](38_lookup_overuse.ipynb) · [Contents](../CONTENTS.md) · [40 · Scale out: choosing a shard key →](40_shard_keys.ipynb)
