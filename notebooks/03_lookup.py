# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
#   labkit:
#     minutes: 25
#     title: "Resolve references: separate queries or $lookup"
#     section: Relationships
#     exercise_minutes: 5
#     demo: >-
#       Show the unbounded $lookup's bytes returned, then the bounded form; read the join's cost from the aggregate explain (SBE EQ_LOOKUP totals, or the classic $lookup entry).
#     mistakes:
#     - "Trimming the joined array after the $lookup (e.g. $slice) instead of sorting and limiting inside its pipeline."
#     - "Reading plan['stages'] on a pipeline that 8.0 pushed down to SBE (explainVersion 2 has no $lookup entry; the join is an EQ_LOOKUP node)."
#     - "Forgetting that pymongo's aggregate has no .explain(); use db.command('explain', ...)."
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
#
# | operation | type | rate | needs |
# |---|---|---|---|
# | profile page: the user and their newest 20 posts | read | very frequent | name; title, location, date of 20 posts |
# | publish a post | write | frequent | one insert |
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
# A first `$lookup` joins Sam's *whole* publishing history into his document. One round trip, but look at
# the size of what comes back:

# %%
unbounded = [
    {"$match": {"_id": "user:112"}},
    {"$lookup": {"from": "posts", "localField": "_id", "foreignField": "authorId", "as": "posts"}},
    {"$project": {"name": 1, "posts": 1}},
]
result = list(db.users.aggregate(unbounded))
print(f"posts joined: {len(result[0]['posts']):,}; bytes returned: {bytes_of(result):,}")

# %% [markdown]
# ## Option 3: `$lookup`, bounded
#
# The source's form: match on `localField`/`foreignField` and, inside the join, sort, limit and project,
# so only the page is joined:

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
# pymongo has no `.explain()` on `aggregate`; send the `explain` command. What comes back depends on which
# engine runs the join. MongoDB 8.0 runs a `$lookup` of the `localField`/`foreignField` form in its
# slot-based engine (SBE): the explain has `explainVersion: "2"` and the join is an `EQ_LOOKUP` node inside
# `queryPlanner.winningPlan.queryPlan`, with the **join strategy** the server chose:
#
# - `IndexedLoopJoin`: an index on the foreign field exists; each local document looks its matches up in it;
# - `HashJoin`: no such index, foreign collection small enough (at most 10,000 documents and 100 MB): the
#   foreign collection is read **once** into a hash table;
# - `NestedLoopJoin`: no index and too large (or `allowDiskUse: false`): the foreign collection is scanned once
#   **per local document**.
#
# Its statistics are the pipeline's totals (`totalDocsExamined`, `totalKeysExamined`). A `$lookup` with a
# `pipeline` inside (our bounded form) stays in the classic engine: `explainVersion: "1"`, and a `$lookup`
# entry in `stages` carries its own `totalDocsExamined`, `totalKeysExamined` and `indexesUsed`. The function
# below reads both shapes.

# %%
def lookup_cost(pipeline):
    plan = db.command("explain", {"aggregate": "users", "pipeline": pipeline, "cursor": {}},
                      verbosity="executionStats")
    docs = list(db.users.aggregate(pipeline))
    classic = next((s for s in plan.get("stages", []) if "$lookup" in s), None)
    if classic is not None:  # classic engine: statistics sit next to the stage spec (+1: the user document)
        return {"engine": "classic", "strategy": "-", "round trips": round_trips(lambda d: list(d.users.aggregate(pipeline))),
                "docs examined": classic["totalDocsExamined"] + 1,
                "keys examined": classic["totalKeysExamined"] + 1, "bytes returned": bytes_of(docs),
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


pd.DataFrame({"separate queries": separate, "unbounded $lookup": lookup_cost(unbounded),
              "bounded $lookup": lookup_cost(bounded)}).T.fillna("-")

# %% [markdown]
# The bounded join reads and returns the same page as the two queries, in one round trip. The unbounded one
# reads and ships the whole history: the same oversized-document problem as embedding every post.

# %% [markdown]
# ## Explore: page size and history size
#
# Pick how many posts a page shows and how long the author's history is (the slider picks the generated author
# whose post count is closest).

# %%
from labkit.widgets import explorer

counts = {d["_id"]: d["count"] for d in db.posts.aggregate([{"$sortByCount": "$authorId"}])}


def compare(page_size, history):
    author = min(counts, key=lambda a: (abs(counts[a] - history), a))
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
# ## Exercise
#
# Write `pipeline`: Sam's document (`user:112`) with his **10** newest posts joined in, newest first, each
# post carrying only `_id`, `title` and `createdAt`. The join itself must stay bounded.
# `ex.check(db, pipeline)` runs it and inspects the result.

# %%
ex = labkit.exercises.get("03-bounded-lookup")
ex

# %% tags=["solution"]
pipeline = [
    {"$match": {"_id": "user:112"}},
    {"$lookup": {"from": "posts", "localField": "_id", "foreignField": "authorId", "as": "posts",
                 "pipeline": [{"$sort": {"createdAt": -1, "_id": -1}}, {"$limit": 10},
                              {"$project": {"title": 1, "createdAt": 1}}]}},
]
ex.check(db, pipeline)

# %% [markdown]
# ## Summary
#
# - Separate queries cost a round trip each but stay small, independent and cacheable.
# - `$lookup` saves round trips; its cost is the documents it reads on the joined side.
# - Always bound a join: sort, limit and project inside the `$lookup` pipeline, with an index that serves them.
#
# **Next:** 04 · one-to-infinity with a relationship collection.

# %% [markdown] tags=["navigation"]
# [← 02 · One-to-many: reference the parent from the child](02_one_to_many.ipynb) · [Contents](../CONTENTS.md) · [04 · One-to-infinity: the follows relationship collection →](04_follows.ipynb)
