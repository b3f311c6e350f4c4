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
#     exercise_minutes: 10
#     title: "Scale out: query targeting"
#     section: Scale out
#     demo: "The feed query on posts sharded by hashed _id asks every shard; sharded by author it asks one."
#     mistakes: ["Sharding by a hashed _id when the hot read filters on another field: every read is broadcast", "A shard key that is not a prefix of a unique index: shardCollection refuses it", "A descending field in a shard key: shard keys are ascending or hashed"]
#     sources:
#     - title: "MongoDB manual: Targeted Operations vs. Broadcast Operations"
#       url: https://www.mongodb.com/docs/manual/core/sharded-cluster-query-router/
#     - title: "MongoDB manual: Explain Results"
#       url: https://www.mongodb.com/docs/manual/reference/explain-results/
#     - title: "MongoDB manual: Shard Keys"
#       url: https://www.mongodb.com/docs/manual/core/sharding-shard-key/
#     - title: "MongoDB manual: Unique Indexes (sharded collections)"
#       url: https://www.mongodb.com/docs/manual/core/index-unique/
#     - title: "MongoDB manual: Shard Key Indexes (unique indexes)"
#       url: https://www.mongodb.com/docs/manual/core/sharding-shard-key-indexes/
# ---

# %% [markdown]
# # 41 · Scale out: query targeting
#
# **You will learn**
# - to read, in `explain()` through the router, which shards a query asked and what each one examined;
# - which shard keys make the feed query and the two follows lookups **targeted** (one shard) or **broadcast**;
# - two rules of shard keys that decide the design for you: no descending fields, and every unique index must
#   start with the shard key.
#
# **Time:** about 25 minutes.

# %%
import datetime as dt

import pandas as pd
from pymongo.errors import OperationFailure

import labkit
from labkit import sharding

client = labkit.connect(shards=3)
print("engine:", labkit.describe(client).split(" at ")[0])
db = labkit.fresh_db("41_query_targeting", client=client)

# %% [markdown]
# ## The workload
#
# The feed and follows of lessons 02 and 04, now on a sharded cluster:

# %%
workload = labkit.workload_table([
    ("profile feed: an author's 20 newest posts", "read", 2000, "{authorId}, sorted {createdAt: -1, _id: -1}"),
    ("whom does Fred follow?", "read", 300, "{followerId}"),
    ("who follows Sam?", "read", 500, "{followingId}"),
    ("publish a post", "write", 300, ""),
    ("follow someone", "write", 50, "no duplicate pairs"),
], rate="per_second")
workload

# %% [markdown]
# The data: 500 users (Sam is `user:112`, Fred `user:234`), 6,000 posts and 4,156 follows, generated
# deterministically.

# %%
START = dt.datetime(2026, 4, 1)
posts = [{"_id": f"post:{i:05d}", "authorId": f"user:{(i * 7919) % 500}" if i % 4 else "user:112",
          "title": f"post {i}", "createdAt": START + dt.timedelta(minutes=7 * i)} for i in range(6000)]
pairs = [(a, (a * 7 + 1 + 13 * k) % 500) for k in range(8) for a in range(500)] + [(a, 112) for a in range(0, 500, 3)]
pairs = sorted({(a, b) for a, b in pairs if a != b})
follows = [{"_id": f"follow:{a}:{b}", "followerId": f"user:{a}", "followingId": f"user:{b}",
            "createdAt": START + dt.timedelta(hours=k)} for k, (a, b) in enumerate(pairs)]
print(len(posts), "posts,", len(follows), "follows")

# %% [markdown]
# ## Posts: the naive key
#
# A hashed `_id` spreads every insert evenly (lesson 40). Shard the posts on it and create the source's feed
# index `{authorId: 1, createdAt: -1, _id: -1}`:

# %%
client.admin.command("shardCollection", f"{db.name}.posts_by_id", key={"_id": "hashed"})
db.posts_by_id.insert_many(posts, ordered=False)
db.posts_by_id.create_index([("authorId", 1), ("createdAt", -1), ("_id", -1)])
pd.DataFrame(sharding.distribution(db.posts_by_id)).set_index("shard")

# %% [markdown]
# The feed, as the source writes it:

# %%
def feed(coll, author="user:112"):
    return coll.find({"authorId": author}, {"title": 1, "createdAt": 1}).sort([("createdAt", -1), ("_id", -1)]).limit(20)


naive = sharding.targeting(feed(db.posts_by_id).explain())
pd.DataFrame(naive["per shard"]).T

# %% [markdown]
# The filter names `authorId`, not the shard key, so the router cannot know where Sam's posts are: it asks all
# three shards (`SHARD_MERGE_SORT`: each returns its 20 newest, the router merge-sorts them and keeps 20).
# Every shard does the work of the whole query
# ([manual: targeted vs broadcast operations](https://www.mongodb.com/docs/manual/core/sharded-cluster-query-router/)).

# %%
print(naive["stage"], "| shards contacted:", naive["shards contacted"], "| keys examined:", naive["keys examined"],
      "| returned to the router:", sum(s["returned"] for s in naive["per shard"].values()))

# %% [markdown]
# ## Posts: a key for the feed
#
# The feed filters on `authorId` by equality, so the key should start with it. Why not use the feed's own index,
# `{authorId: 1, createdAt: -1}`, as the key? The server refuses: shard key fields are ascending or hashed
# ([manual: Shard Keys](https://www.mongodb.com/docs/manual/core/sharding-shard-key/)).

# %%
try:
    client.admin.command("shardCollection", f"{db.name}.posts_by_author", key={"authorId": 1, "createdAt": -1})
except OperationFailure as exc:
    print(exc.code, exc.details["codeName"], "|", exc.details["errmsg"].replace(db.name + ".", ""))

# %% [markdown]
# `{authorId: 1, createdAt: 1}` works (the collection is empty, so `shardCollection` creates its index); the feed
# keeps its own descending index. `createdAt` after `authorId` keeps a prolific author's posts splittable.
# Spread the ranges over the shards, as in lesson 40, and load the same posts:

# %%
from bson.min_key import MinKey

client.admin.command("shardCollection", f"{db.name}.posts_by_author", key={"authorId": 1, "createdAt": 1})
sharding.spread(db.posts_by_author, [{"authorId": "user:2", "createdAt": MinKey()},
                                     {"authorId": "user:4", "createdAt": MinKey()}])
db.posts_by_author.insert_many(posts, ordered=False)
db.posts_by_author.create_index([("authorId", 1), ("createdAt", -1), ("_id", -1)])
pd.DataFrame(sharding.distribution(db.posts_by_author)).set_index("shard")

# %%
better = sharding.targeting(feed(db.posts_by_author).explain())
pd.DataFrame({"hashed _id": {k: naive[k] for k in ("stage", "shards contacted", "keys examined", "docs examined")},
              "authorId, createdAt": {k: better[k] for k in ("stage", "shards contacted", "keys examined",
                                                             "docs examined")}})

# %% [markdown]
# What that means at the workload's rates: the ledger of lesson 00 measures one run of each operation on each
# design (through the router, it also counts the **shards contacted**, summed over the operation's commands) and
# multiplies by the rates.

# %%
ledger = labkit.Ledger({"profile feed": 2000, "publish a post": 300})
for design, coll in {"hashed _id": db.posts_by_id, "authorId, createdAt": db.posts_by_author}.items():
    ledger.measure(design, "profile feed", db, lambda d, c=coll.name: list(feed(d[c])))
    ledger.measure(design, "publish a post", db, lambda d, c=coll.name: d[c].insert_one(
        {"_id": "post:06000", "authorId": "user:7", "title": "post 6000", "createdAt": START + dt.timedelta(days=30)}))
ledger.per_operation()[["shards contacted", "keys examined", "cost"]]

# %%
ledger.totals()[["shards contacted /s", "keys examined /s"]]

# %% [markdown]
# Publishing costs the same on both designs (each new post goes to one shard), so the feed decides: at 2,000 feeds a
# second the hashed key has the router contact shards 6,300 times a second, the author key 2,300. These totals are
# estimates (rate x the measured cost of one run), as the table's header says.
#
# One shard, one index scan of 20 keys: the feed costs on the cluster what it cost on one server. Each shard's
# plan has one more stage, `SHARDING_FILTER`, which drops documents that a shard holds but does not own (left
# over from a migration) ([manual: Explain Results](https://www.mongodb.com/docs/manual/reference/explain-results/)):

# %%
plan = feed(db.posts_by_author).explain()["queryPlanner"]["winningPlan"]["shards"][0]["winningPlan"]


def stages(node):
    return [node["stage"]] + (stages(node["inputStage"]) if "inputStage" in node else [])


stages(plan)

# %% [markdown]
# ## Follows: the key decides one direction
#
# The source's follows collection has a unique index `{followerId: 1, followingId: 1}` (no duplicate pairs) and
# the reverse index `{followingId: 1, followerId: 1}`. A unique index on a sharded collection must start with the
# shard key, since each shard can only check uniqueness among its own documents; the `_id` index is the
# exception, and it is unique only within each shard unless `_id` is the shard key
# ([manual: Unique Indexes](https://www.mongodb.com/docs/manual/core/index-unique/),
# [manual: Shard Key Indexes](https://www.mongodb.com/docs/manual/core/sharding-shard-key-indexes/)). So, with
# the source's unique index, "who follows Sam?", the busier lookup, cannot pick the key:

# %%
db.follows.insert_many(follows)
db.follows.create_index([("followerId", 1), ("followingId", 1)], unique=True)
db.follows.create_index([("followingId", 1), ("followerId", 1)])
try:
    client.admin.command("shardCollection", f"{db.name}.follows", key={"followingId": 1})
except OperationFailure as exc:
    print(exc.code, exc.details["codeName"], "|", exc.details["errmsg"].replace(db.name + ".", ""))

# %% [markdown]
# **Predict.** Shard `follows` on `{followerId: 1, followingId: 1}` (the unique index supports it) and spread it
# over the three shards. How many shards does "who follows Sam?" contact? Record it with
# `predict_shards.predict(...)`.

# %%
predict_shards = labkit.exercises.get("41-predict-follower-shards")
predict_shards

# %% tags=["solution"]
predict_shards.predict(3)

# %%
client.admin.command("shardCollection", f"{db.name}.follows", key={"followerId": 1, "followingId": 1})
sharding.spread(db.follows, [{"followerId": "user:2", "followingId": MinKey()},
                             {"followerId": "user:4", "followingId": MinKey()}])
whom = sharding.targeting(db.follows.find({"followerId": "user:234"}).sort("followingId", 1).limit(20).explain())
who = sharding.targeting(db.follows.find({"followingId": "user:112"}).sort("followerId", 1).limit(20).explain())

# %% tags=["reveal"]
pd.DataFrame({"whom does Fred follow": {k: whom[k] for k in ("stage", "shards contacted", "keys examined")},
              "who follows Sam": {k: who[k] for k in ("stage", "shards contacted", "keys examined")}})

# %% tags=["reveal"]
predict_shards.check(who["shards contacted"])

# %% [markdown]
# Each shard answers "who follows Sam?" from its reverse index, so the broadcast costs three index scans instead
# of one, 500 times a second. Making the pair unique in the other order (`{followingId: 1, followerId: 1}`)
# would let the key start with `followingId`, and then "whom does Fred follow?" would be the broadcast one: with
# one collection, one direction is broadcast. If both directions matter, one fix is a second, deliberately
# duplicated collection keyed the other way (the two-way pattern of lesson 05), written in the same transaction.
#
# ## Explore: which shards does a query ask?
#
# Choose a query and a design; each step runs the query's `explain()` through the router and shows what each
# shard examined.

# %%
from labkit.widgets import explorer

QUERIES = {
    "feed (posts by hashed _id)": lambda: feed(db.posts_by_id),
    "feed (posts by authorId, createdAt)": lambda: feed(db.posts_by_author),
    "whom does Fred follow": lambda: db.follows.find({"followerId": "user:234"}).limit(20),
    "who follows Sam": lambda: db.follows.find({"followingId": "user:112"}).limit(20),
    "posts of one day (by authorId, createdAt)": lambda: db.posts_by_author.find(
        {"createdAt": {"$gte": START, "$lt": START + dt.timedelta(days=1)}}),
}


def asked(query):
    t = sharding.targeting(QUERIES[query]().explain())
    out = {"plan": t["stage"], "shards contacted": t["shards contacted"]}
    for s in sharding.shard_names(client):
        p = t["per shard"].get(s)
        out[s] = f"{p['keys examined']} keys, {p['docs examined']} docs" if p else "not asked"
    return out


targeting_widget = explorer(asked, sliders={"query": list(QUERIES)}, title="Targeted or broadcast?",
                            cache=True, data=db)
targeting_widget

# %% [markdown]
# ## Exercise: a multi-tenant invoice collection
#
# A billing service keeps every customer company's invoices in one `invoices` collection:
# `{tenantId, number, issuedAt, total}` for 20 tenants. Invoice numbers are unique **per tenant** (a unique
# index `{tenantId: 1, number: 1}`), and the hot read is one tenant's newest invoices. Choose the shard key.
# `ex.check(client, key)` shards a fresh copy on it, spreads it, and measures the hot read.

# %%
ex = labkit.exercises.get("41-tenant-shard-key")
ex

# %% tags=["solution"]
key = {"tenantId": 1, "number": 1}
ex.check(client, key)

# %% [markdown]
# ## Summary
#
# - `explain()` through the router lists the shards a query asked: `SINGLE_SHARD` when the filter bounds the
#   shard key to one shard's ranges; `SHARD_MERGE` / `SHARD_MERGE_SORT` when more than one shard works on it
#   (every shard, when the filter does not name the key's first field).
# - Start the key with the field the hottest read filters on by equality (`authorId` for the feed).
# - Shard keys have no descending fields, and every unique index other than `_id` must start with the shard key:
#   for follows, the unique pair index leaves `followerId` as the key, so one direction of the graph is broadcast.
#
# **Next:** 42 · patterns meet sharding: buckets, jumbo ranges, `$lookup`, transactions and resharding.

# %% [markdown] tags=["sources"]
# ## Sources
#
# 1. [MongoDB manual: Targeted Operations vs. Broadcast Operations](https://www.mongodb.com/docs/manual/core/sharded-cluster-query-router/)
# 2. [MongoDB manual: Explain Results](https://www.mongodb.com/docs/manual/reference/explain-results/)
# 3. [MongoDB manual: Shard Keys](https://www.mongodb.com/docs/manual/core/sharding-shard-key/)
# 4. [MongoDB manual: Unique Indexes (sharded collections)](https://www.mongodb.com/docs/manual/core/index-unique/)
# 5. [MongoDB manual: Shard Key Indexes (unique indexes)](https://www.mongodb.com/docs/manual/core/sharding-shard-key-indexes/)

# %% [markdown] tags=["navigation"]
# [← 40 · Scale out: choosing a shard key](40_shard_keys.ipynb) · [Contents](../CONTENTS.md) · [42 · Scale out: patterns meet sharding →](42_sharded_patterns.ipynb)
