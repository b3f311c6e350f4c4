# ---
# jupyter:
#   jupytext:
#     formats: ipynb,src//py:percent
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
#   labkit:
#     minutes: 25
#     title: "Resolve references: separate queries or $lookup"
#     section: Relationships
#     exercise_minutes: 15
#     demo: >-
#       Show the unbounded $lookup's bytes returned, then the bounded form; read the join's cost from the aggregate explain (the classic $lookup entry: a $match on _id keeps the join out of SBE).
#     mistakes:
#     - "Trimming the joined array after the $lookup (e.g. $slice) instead of sorting and limiting inside its pipeline."
#     - "Joining every comment and limiting afterwards: $lookup before $sort/$limit runs the join once per comment, not once per comment shown."
#     - "Leaving the joined author as an array (or a whole user document) instead of taking its name with $first."
#     sources:
#     - title: "MongoDB manual: $lookup (aggregation stage)"
#       url: https://www.mongodb.com/docs/manual/reference/operator/aggregation/lookup/
#     - title: "MongoDB manual: Project Fields to Return from Query"
#       url: https://www.mongodb.com/docs/manual/tutorial/project-fields-from-query-results/
#     - title: "MongoDB manual: Explain Results"
#       url: https://www.mongodb.com/docs/manual/reference/explain-results/
#     - title: "MongoDB manual: Slot-Based Query Execution Engine"
#       url: https://www.mongodb.com/docs/manual/reference/sbe/
#     - title: "mongodb/mongo src/mongo/db/pipeline/document_source_lookup.cpp (which $lookup SBE runs)"
#       url: https://github.com/mongodb/mongo/blob/v8.0/src/mongo/db/pipeline/document_source_lookup.cpp
#     - title: "mongodb/mongo src/mongo/db/query/query_utils.cpp (isQuerySbeCompatible: which queries SBE may run)"
#       url: https://github.com/mongodb/mongo/blob/v8.0/src/mongo/db/query/query_utils.cpp
#     - title: "mongodb/mongo src/mongo/db/query/planner_analysis.cpp (determineLookupStrategy: join strategies)"
#       url: https://github.com/mongodb/mongo/blob/v8.0/src/mongo/db/query/planner_analysis.cpp
#     - title: "MongoDB manual: MongoDB Limits and Thresholds"
#       url: https://www.mongodb.com/docs/manual/reference/limits/
# ---

# %% [markdown]
# # 03 · Resolve references: separate queries or `$lookup`
#
# **You will learn**
# - two ways to resolve a reference: two queries from the application, or one `$lookup` on the server;
# - to count round trips, documents examined and bytes returned for each;
# - why a `$lookup` must stay bounded (sort, limit and project *inside* the join);
# - to read the `$lookup` part of an aggregation's `explain()`.
#
# **Time:** about 25 minutes.

# %%
import bson
import pandas as pd

import labkit

db = labkit.fresh_db("03_lookup")
summary = labkit.seed.social(db, users=2000, seed=3, celebrity_posts=4000)
summary

# %% [markdown]
# ## The workload

# %%
workload = labkit.workload_table([
    ("profile page: the user and their newest 20 posts", "read", 900, "name; title, location, date of 20 posts"),
    ("home timeline: the 20 newest posts, each with its author's name", "read", 900, "title, date, author name"),
    ("publish a post", "write", 20, "one insert"),
    ("change a display name", "write", 0.01, "visible on the next page load"),
], rate="per_second")
workload

# %% [markdown]
# (Illustrative rates; the ledger below lets you change them.)
#
# Posts reference their author (`posts.authorId`, lesson 02), with the index
# `{authorId: 1, createdAt: -1, _id: -1}`. How do we put the page together?

# %%
db.posts.index_information()

# %% [markdown]
# ## Option 1: two queries from the application
#
# One query for the user, one for the page of posts. Two round trips, each cheap and each cacheable on its own.

# %%
def bytes_of(docs):
    return sum(len(bson.encode(d)) for d in docs)


def round_trips(fn):
    """Commands `fn(db)` sends to the server, counted from the driver's command events."""
    return labkit.ledger.measure(db, fn).round_trips


user_q = db.users.find({"_id": "user:112"}, {"name": 1})
posts_q = (db.posts.find({"authorId": "user:112"}, {"title": 1, "location": 1, "createdAt": 1})
           .sort([("createdAt", -1), ("_id", -1)]).limit(20))
separate = {
    "round trips": round_trips(lambda d: (d.users.find_one({"_id": "user:112"}, {"name": 1}),
                                          list(d.posts.find({"authorId": "user:112"}, {"title": 1, "location": 1,
                                                                                      "createdAt": 1})
                                               .sort([("createdAt", -1), ("_id", -1)]).limit(20)))),
    "docs examined": sum(c.explain()["executionStats"]["totalDocsExamined"] for c in (user_q.clone(), posts_q.clone())),
    "keys examined": sum(c.explain()["executionStats"]["totalKeysExamined"] for c in (user_q.clone(), posts_q.clone())),
    "bytes returned": bytes_of(user_q) + bytes_of(posts_q),
}
separate

# %% [markdown]
# ## Option 2: `$lookup`, unbounded
#
# [`$lookup`](https://www.mongodb.com/docs/manual/reference/operator/aggregation/lookup/) is the aggregation
# stage that joins on the server: for each input document it finds the documents of another collection whose
# `foreignField` equals the input's `localField`, and adds them as an array. A first `$lookup` joins Sam's
# *whole* publishing history into his document. One round trip, but look at the size of what comes back:

# %%
unbounded = [
    {"$match": {"_id": "user:112"}},
    {"$lookup": {"from": "posts", "localField": "_id", "foreignField": "authorId", "as": "posts"}},
    {"$project": {"name": 1, "posts": 1}},
]
result = list(db.users.aggregate(unbounded))
print(f"posts joined: {len(result[0]['posts']):,}; bytes returned: {bytes_of(result):,}")

# %% [markdown]
# The whole history comes back inside one result document, which grows with every post Sam writes, toward the
# 16 MiB limit on a document ([limits](https://www.mongodb.com/docs/manual/reference/limits/)): the same
# oversized-document problem as embedding every post.
#
# ## Option 3: `$lookup`, bounded
#
# The source's form: match on `localField`/`foreignField` and, inside the join, sort, limit and project
# ([projection](https://www.mongodb.com/docs/manual/tutorial/project-fields-from-query-results/): return only
# the fields the page shows), so only the page is joined:

# %%
bounded = [
    {"$match": {"_id": "user:112"}},
    {"$lookup": {
        "from": "posts", "localField": "_id", "foreignField": "authorId",
        "pipeline": [
            {"$sort": {"createdAt": -1, "_id": -1}},
            {"$limit": 20},
            {"$project": {"title": 1, "location": 1, "createdAt": 1}},
        ],
        "as": "posts",
    }},
    {"$project": {"name": 1, "posts": 1}},
]
page = list(db.users.aggregate(bounded))
print(f"posts joined: {len(page[0]['posts'])}; bytes returned: {bytes_of(page):,}")

# %% [markdown]
# ## What the server did: `explain` on an aggregation
#
# pymongo's `aggregate` has no `.explain()`: send the `explain` command with the pipeline instead. Two things
# in its answer need an introduction.

# %% [markdown]
# **Which engine ran the join.** MongoDB 8.0 has two engines that execute queries: the *classic* engine and
# the newer *slot-based execution engine* (SBE), which runs some pipeline stages, `$lookup` among them, when
# conditions are met ([slot-based engine](https://www.mongodb.com/docs/manual/reference/sbe/)). For `$lookup`
# one condition is the plain `localField`/`foreignField` form: a `$lookup` with a `pipeline` of its own, like
# our bounded one, runs in the classic engine
# ([server source](https://github.com/mongodb/mongo/blob/v8.0/src/mongo/db/pipeline/document_source_lookup.cpp)).
# Another is that the query in front of it may run in SBE as well, and a query that is only an equality on
# `_id` (no hint, no `$skip`, the collection's collation) never does: the server answers it with its dedicated
# `_id` lookup instead
# ([query_utils.cpp](https://github.com/mongodb/mongo/blob/v8.0/src/mongo/db/query/query_utils.cpp),
# `isQuerySbeCompatible`). Both our joins start with `{"$match": {"_id": "user:112"}}`, so both run in the
# classic engine.
# The explain tells which: `explainVersion` is "1" for classic and "2" for SBE
# ([explain results](https://www.mongodb.com/docs/manual/reference/explain-results/)).

# %% [markdown]
# **How it joined, and what it read.** A classic join reports its own figures in the `$lookup` entry of the
# explain's `stages`: keys and documents examined on the joined side and the indexes it used (`indexesUsed`;
# here the `authorId` index, so each user's posts are looked up in the index); the `$cursor` entry before it
# holds the user lookup's. A join that runs in SBE (one after a `$match` on another field, for instance) shows
# up instead as an `EQ_LOOKUP` step with a `strategy`: `IndexedLoopJoin` with an index on the joined field,
# else reading the whole joined collection once into an in-memory table (`HashJoin`, for a small collection)
# or again for every input document (`NestedLoopJoin`)
# (the server's choice, in order: [determineLookupStrategy](https://github.com/mongodb/mongo/blob/v8.0/src/mongo/db/query/planner_analysis.cpp)),
# with the keys and documents examined in the explain's totals. The function below reads both shapes.

# %% [markdown]
# **Predict first.** Sam has thousands of posts. How many documents will the *bounded* `$lookup` examine in
# all, his user document included? Record your guess with `ex_docs.predict(...)`; the table below measures
# it.

# %%
ex_docs = labkit.exercises.get("03-predict-bounded-docs")
ex_docs

# %% tags=["solution"]
ex_docs.predict(21)

# %% tags=["reveal"]
def lookup_cost(pipeline):
    plan = db.command("explain", {"aggregate": "users", "pipeline": pipeline, "cursor": {}},
                      verbosity="executionStats")
    docs = list(db.users.aggregate(pipeline))
    classic = next((s for s in plan.get("stages", []) if "$lookup" in s), None)
    if classic is not None:  # classic engine: the join's statistics sit next to its stage spec
        user = plan["stages"][0]["$cursor"]["executionStats"]  # the user lookup in front of it
        return {"engine": "classic", "strategy": "-", "round trips": round_trips(lambda d: list(d.users.aggregate(pipeline))),
                "docs examined": user["totalDocsExamined"] + classic["totalDocsExamined"],
                "keys examined": user["totalKeysExamined"] + classic["totalKeysExamined"], "bytes returned": bytes_of(docs),
                "index used": ", ".join(classic["indexesUsed"]) or "none"}
    part = plan["stages"][0]["$cursor"] if "stages" in plan else plan  # SBE: the pushed-down part
    node = part["queryPlanner"]["winningPlan"]["queryPlan"]
    while node["stage"] != "EQ_LOOKUP":
        node = node["inputStage"]
    stats = part["executionStats"]
    return {"engine": "SBE", "strategy": node["strategy"],
            "round trips": round_trips(lambda d: list(d.users.aggregate(pipeline))),
            "docs examined": stats["totalDocsExamined"], "keys examined": stats["totalKeysExamined"],
            "bytes returned": bytes_of(docs), "index used": node.get("indexName", "none")}


costs = pd.DataFrame({"separate queries": separate, "unbounded $lookup": lookup_cost(unbounded),
                      "bounded $lookup": lookup_cost(bounded)}).T.fillna("-")
costs

# %% tags=["reveal"]
ex_docs.check(int(costs.loc["bounded $lookup", "docs examined"]))

# %% [markdown]
# The bounded join reads and returns the same page as the two queries, in one round trip. The unbounded one
# reads and ships the whole history.

# %% [markdown]
# ## Explore: page size and history size
#
# Pick how many posts a page shows and how long the author's history is. The slider measures an author with
# exactly that many posts: authors with 0, 1,000, 2,000, ... posts are built once, and each move grows or shrinks
# the nearest one by the difference.

# %%
import datetime as dt

from labkit.resize import AccountLadder
from labkit.widgets import explorer


def slider_post(account, i):
    return {"authorId": account, "title": f"post {i}", "location": "Oakland",
            "createdAt": dt.datetime(2026, 1, 1) + dt.timedelta(minutes=i), "body": "x" * 40}


ladder = AccountLadder(db.posts, "user:slider-", 4000, 1000, slider_post, id_prefix="post:")
db.users.insert_many([{"_id": a, "name": "Slider", "roles": []} for a in ladder.accounts])
counts = {}


def compare(page_size, history):
    author = ladder.account_for(history)
    counts[author] = history
    match = {"$match": {"_id": author}}
    join = {"from": "posts", "localField": "_id", "foreignField": "authorId", "as": "posts"}
    whole = [match, {"$lookup": join}]
    paged = [match, {"$lookup": dict(join, pipeline=[{"$sort": {"createdAt": -1, "_id": -1}},
                                                     {"$limit": page_size},
                                                     {"$project": {"title": 1, "location": 1, "createdAt": 1}}])}]
    return {"author": author, "posts in history": counts[author],
            "bytes returned, whole history": bytes_of(db.users.aggregate(whole)),
            "bytes returned, one page": bytes_of(db.users.aggregate(paged))}


pages = explorer(compare, sliders={"page_size": (5, 100, 20, 5), "history": (1, 4000, 1000, 50)},
                 title="Join a page, or the whole history?")
pages

# %% [markdown]
# ## The ledger: join the author's name, or copy it into each post?
#
# The home timeline shows 20 posts with their authors' names. Two designs:
#
# - **`$lookup`**: posts hold `authorId`; each timeline read joins the 20 authors;
# - **copied name**: each post also holds `authorName`; the timeline is one plain query, and a display-name
#   change must rewrite every post of that author.
#
# Both designs get their own posts collection (same posts, with and without the copy), with the indexes their
# operations need.

# %%
names = {u["_id"]: u["name"] for u in db.users.find({}, {"name": 1})}
slim = [{"_id": p["_id"], "authorId": p["authorId"], "title": p["title"], "createdAt": p["createdAt"]}
        for p in db.posts.find({"_id": {"$not": {"$regex": "^post:user:slider-"}}})]
db.posts_ref.insert_many(slim)
db.posts_copied.insert_many([dict(p, authorName=names[p["authorId"]]) for p in slim])
for coll in (db.posts_ref, db.posts_copied):
    coll.create_index({"createdAt": -1, "_id": -1})
    coll.create_index({"authorId": 1})
sam_posts = db.posts_copied.count_documents({"authorId": "user:112"})
print(f"posts: {len(slim):,}; Sam's posts (copies of his name): {sam_posts:,}")

# %%
def timeline_lookup(d):
    return list(d.posts_ref.aggregate([
        {"$sort": {"createdAt": -1, "_id": -1}}, {"$limit": 20},
        {"$lookup": {"from": "users", "localField": "authorId", "foreignField": "_id",
                     "pipeline": [{"$project": {"name": 1}}], "as": "author"}},
        {"$project": {"title": 1, "createdAt": 1, "authorName": {"$first": "$author.name"}}},
    ]))


def timeline_copied(d):
    return list(d.posts_copied.find({}, {"title": 1, "createdAt": 1, "authorName": 1})
                .sort([("createdAt", -1), ("_id", -1)]).limit(20))


def rename_lookup(d):
    d.users.update_one({"_id": "user:112"}, {"$set": {"name": "Sam L."}})


def rename_copied(d):
    d.users.update_one({"_id": "user:112"}, {"$set": {"name": "Sam C."}})
    d.posts_copied.update_many({"authorId": "user:112"}, {"$set": {"authorName": "Sam C."}})


sam_name = names["user:112"]
rates = {"home timeline": 900, "change a display name": 0.01}
ledger = labkit.Ledger(rates)
ledger.measure("$lookup", "home timeline", db, timeline_lookup)
ledger.measure("copied name", "home timeline", db, timeline_copied)
ledger.measure("$lookup", "change a display name", db, rename_lookup)
ledger.measure("copied name", "change a display name", db, rename_copied)
db.users.update_one({"_id": "user:112"}, {"$set": {"name": sam_name}})
db.posts_copied.update_many({"authorId": "user:112"}, {"$set": {"authorName": sam_name}})
ledger.per_operation()

# %%
ledger.totals()

# %% [markdown]
# Per second, the copy saves the join's reads on every timeline and pays for them on every rename, once per
# post of the renamed author (Sam, a prolific author, is the expensive case). Move the rename rate: the better
# design flips at the break-even computed below.

# %%
ledger_widget = ledger.widget("docs examined", max_rate=2000, max_rates={"change a display name": 20})
ledger_widget

# %%
cost = ledger.costs
saved = (cost["$lookup", "home timeline"].docs_examined - cost["copied name", "home timeline"].docs_examined)
spent = (cost["copied name", "change a display name"].docs_examined
         - cost["$lookup", "change a display name"].docs_examined)
print(f"documents examined saved per timeline by the copy: {saved}")
print(f"extra documents examined per rename of Sam:        {spent:,}")
print(f"break-even at {rates['home timeline']} timelines per second: the copy wins while renames per second < "
      f"{rates['home timeline'] * saved / spent:.2f}")

# %% [markdown]
# ## Exercise 1: the product page
#
# A changed scenario, from lesson 00's store: the product page shows a product with its **5 newest reviews**.
# Reviews reference their product (`reviews.productId`) and carry `stars`, `text`, `userId`, `helpful` and
# `createdAt`; `shop` below holds a few products and their reviews, with the index
# `{productId: 1, createdAt: -1, _id: -1}`. Write `pipeline`, run on `products`: product `prod:7` with its 5
# newest reviews joined in as `reviews`, newest first (ties: larger `_id` first), each review carrying only
# `_id`, `stars` and `text`. The join itself must stay bounded. `ex.check(shop, pipeline)` runs it on products
# of its own (one has hundreds of reviews) and counts the documents the server examines.

# %%
shop = labkit.fresh_db("03_practice")
shop.products.insert_many([{"_id": f"prod:{k}", "name": f"Product {k}", "price": 20 + k} for k in range(1, 11)])
shop.reviews.insert_many([{"_id": f"review:{i:04d}", "productId": f"prod:{1 + i % 10}", "stars": 1 + i % 5,
                           "text": f"review {i}", "userId": f"user:{i % 90}", "helpful": i % 7,
                           "createdAt": dt.datetime(2026, 5, 1) + dt.timedelta(minutes=30 * i)}
                          for i in range(600)])
shop.reviews.create_index({"productId": 1, "createdAt": -1, "_id": -1})
ex = labkit.exercises.get("03-product-reviews")
ex

# %% tags=["solution"]
pipeline = [
    {"$match": {"_id": "prod:7"}},
    {"$lookup": {"from": "reviews", "localField": "_id", "foreignField": "productId", "as": "reviews",
                 "pipeline": [{"$sort": {"createdAt": -1, "_id": -1}}, {"$limit": 5},
                              {"$project": {"stars": 1, "text": 1}}]}},
]
ex.check(shop, pipeline)

# %% [markdown]
# ## Exercise 2: the join the other way round
#
# A post page shows its **5 most-liked comments**, each with the commenter's name. Comments reference their
# commenter (`comments.userId` -> `users._id`): many comments to one user each, the opposite direction of the
# posts join. Write `top_comments(post_id)`: it returns a pipeline on `comments` whose results are the post's 5
# most-liked comments (ties: smaller `_id` first), each with only `_id`, `text`, `likes` and `author` (the
# commenter's name, a string), and which joins `users` **only for those 5**. The checker runs it on comment threads
# of its own, a long one and a short one, and measures the documents the server examines.

# %%
ex2 = labkit.exercises.get("03-top-comments")
ex2

# %% tags=["solution"]
def top_comments(post_id):
    return [
        {"$match": {"postId": post_id}},
        {"$sort": {"likes": -1, "_id": 1}},
        {"$limit": 5},
        {"$lookup": {"from": "users", "localField": "userId", "foreignField": "_id",
                     "pipeline": [{"$project": {"name": 1}}], "as": "author"}},
        {"$project": {"text": 1, "likes": 1, "author": {"$first": "$author.name"}}},
    ]


ex2.check(top_comments)

# %% [markdown]
# ## Summary
#
# - Separate queries cost a round trip each but stay small, independent and cacheable.
# - `$lookup` saves round trips; its cost is the documents it reads on the joined side.
# - Always bound a join: sort, limit and project inside the `$lookup` pipeline, with an index that serves them.
#   Joining many-to-one, decide which documents are shown first and join only those.
# - A copied field saves the join on every read and costs one write per copy on every change: the ledger's
#   rates decide, and the break-even moves with how many copies a change rewrites.
#
# **Next:** 04 · one-to-infinity with a relationship collection.

# %% [markdown] tags=["sources"]
# ## Sources
#
# 1. [MongoDB manual: \$lookup (aggregation stage)](https://www.mongodb.com/docs/manual/reference/operator/aggregation/lookup/)
# 2. [MongoDB manual: Project Fields to Return from Query](https://www.mongodb.com/docs/manual/tutorial/project-fields-from-query-results/)
# 3. [MongoDB manual: Explain Results](https://www.mongodb.com/docs/manual/reference/explain-results/)
# 4. [MongoDB manual: Slot-Based Query Execution Engine](https://www.mongodb.com/docs/manual/reference/sbe/)
# 5. [mongodb/mongo src/mongo/db/pipeline/document_source_lookup.cpp (which \$lookup SBE runs)](https://github.com/mongodb/mongo/blob/v8.0/src/mongo/db/pipeline/document_source_lookup.cpp)
# 6. [mongodb/mongo src/mongo/db/query/query_utils.cpp (isQuerySbeCompatible: which queries SBE may run)](https://github.com/mongodb/mongo/blob/v8.0/src/mongo/db/query/query_utils.cpp)
# 7. [mongodb/mongo src/mongo/db/query/planner_analysis.cpp (determineLookupStrategy: join strategies)](https://github.com/mongodb/mongo/blob/v8.0/src/mongo/db/query/planner_analysis.cpp)
# 8. [MongoDB manual: MongoDB Limits and Thresholds](https://www.mongodb.com/docs/manual/reference/limits/)

# %% [markdown] tags=["navigation"]
# [← 02 · One-to-many: reference the parent from the child](02_one_to_many.ipynb) · [Contents](../CONTENTS.md) · [04 · One-to-infinity: the follows relationship collection →](04_follows.ipynb)
