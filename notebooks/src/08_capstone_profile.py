# ---
# jupyter:
#   jupytext:
#     formats: ipynb,src//py:percent
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
#   labkit:
#     minutes: 35
#     title: "Capstone: a real-world profile page"
#     section: Relationships
#     exercise_minutes: 17
#     demo: >-
#       Run the measure() table for the busiest, typical and newcomer accounts; move the slider to show page cost independent of account size, except the count. Delete two accounts carelessly, find the dangling follows with the repair job and delete them.
#     mistakes:
#     - "Expecting a page (posts, followers) to grow with a big account: pages stop after 20 keys; the follower count is the read that grows."
#     - "Leaving orphaned posts after deleting users."
#     - "Deleting a user's follows in one direction only, leaving edges that point at nobody."
#     sources:
#     - title: "MongoDB manual: Explain Results"
#       url: https://www.mongodb.com/docs/manual/reference/explain-results/
#     - title: "MongoDB manual: $bsonSize"
#       url: https://www.mongodb.com/docs/manual/reference/operator/aggregation/bsonSize/
#     - title: "MongoDB manual: $lookup (aggregation stage)"
#       url: https://www.mongodb.com/docs/manual/reference/operator/aggregation/lookup/
#     - title: "MongoDB manual: Atomicity and Transactions"
#       url: https://www.mongodb.com/docs/manual/core/write-operations-atomicity/
# ---

# %% [markdown]
# # 08 · Capstone: a real-world profile page
#
# **You will learn**
# - to go from an access-pattern table to a complete schema (users with roles, posts, follows);
# - to measure *every* operation with `explain` on representative accounts: the busiest, a typical one, a new one;
# - to run the common-mistakes checklist against real data.
#
# **Time:** about 35 minutes.

# %%
import bson
import pandas as pd

import labkit

db = labkit.fresh_db("08_capstone")
summary = labkit.seed.social(db, users=5000, seed=8, celebrity_posts=3000, celebrity_followers=4000)
summary

# %% [markdown]
# ## Access patterns and the model for each
#
# A profile shows the account, the newest 20 posts, follower navigation and a follower count. Roles rarely
# change; posts and follows keep accumulating.

# %%
pd.DataFrame(
    [
        ("read account and its roles", 3000, "embed roles in users", "bounded (8), owned, read together"),
        ("read the newest 20 posts", 3000, "posts.authorId + {authorId: 1, createdAt: -1, _id: -1}",
         "unbounded history"),
        ("navigate followers / following", 400, "follows + two compound indexes", "unbounded many-to-many"),
        ("show the follower count", 3000, "count the edges; a counter only if measurements ask for one", "hot read"),
        ("publish a post", 50, "insert one post", "the user document is not touched"),
        ("follow / unfollow", 300, "insert / delete one edge", "unique index refuses duplicates"),
        ("delete an account", 0.01, "delete the user and everything that points at it", "no dangling references"),
    ],
    columns=["access pattern", "rate (per second)", "model", "why"],
)

# %% [markdown]
# ## The schema, as it is in the database

# %%
pd.DataFrame([{"collection": name, "documents": db[name].count_documents({}),
               "indexes": ", ".join(sorted(db[name].index_information()))}
              for name in ("users", "posts", "follows")])

# %% [markdown]
# ## Representative accounts
#
# Small examples prove nothing about production. Measure the busiest account, a typical one and a newcomer.

# %%
post_counts = {d["_id"]: d["count"] for d in db.posts.aggregate([{"$sortByCount": "$authorId"}])}
ordered = sorted(post_counts, key=lambda u: (-post_counts[u], u))
newcomer = db.users.find_one({"_id": {"$nin": list(post_counts)}}, sort=[("_id", 1)])["_id"]
accounts = {"busiest": ordered[0], "typical": ordered[len(ordered) // 2], "newcomer": newcomer}
accounts

# %% [markdown]
# **Predict first.** Which of the page's reads examines the most index keys for the busiest account: the
# account read, the newest 20 posts, the followers page, the following page or the follower count? Record
# one of those names with `ex_grow.predict(...)`.

# %%
ex_grow = labkit.exercises.get("08-predict-growing-read")
ex_grow

# %% tags=["solution"]
ex_grow.predict("follower count")

# %% tags=["reveal"]
def operations(user_id, db=db):
    """The profile page's reads for one account, as cursors or explain commands."""
    return {
        "account + roles": db.users.find({"_id": user_id}, {"name": 1, "roles": 1}),
        "newest 20 posts": db.posts.find({"authorId": user_id}, {"title": 1, "location": 1, "createdAt": 1})
                                   .sort([("createdAt", -1), ("_id", -1)]).limit(20),
        "followers page": db.follows.find({"followingId": user_id}).sort("followerId", 1).limit(20),
        "following page": db.follows.find({"followerId": user_id}).sort("followingId", 1).limit(20),
        "follower count": {"count": "follows", "query": {"followingId": user_id}},
    }


def measure(user_id, db=db):
    rows = []
    for name, op in operations(user_id, db).items():
        if isinstance(op, dict):
            plan = db.command("explain", op, verbosity="executionStats")
        else:
            plan = op.explain()
        s = labkit.plan_summary(plan)
        rows.append({"operation": name, "plan": s["stages"], "keys": s["keysExamined"], "docs": s["docsExamined"],
                     "returned": s["nReturned"], "blocking sort": s["blockingSort"]})
    return pd.DataFrame(rows).set_index("operation")


page_costs = pd.concat({label: measure(uid) for label, uid in accounts.items()}, axis=1)
most_keys_busiest = page_costs["busiest"]["keys"].idxmax()
print("most keys for the busiest account:", most_keys_busiest)
page_costs

# %% tags=["reveal"]
ex_grow.check(most_keys_busiest)

# %% [markdown]
# Every read is served by an index with no blocking sort (`explain("executionStats")`,
# [explain results](https://www.mongodb.com/docs/manual/reference/explain-results/)). The account read is the
# `_id` express path (`EXPRESS_IXSCAN`, lesson 01); the pages cost at most 20 keys whatever the account's size.
# The one read that grows with the account is the follower count (`COUNT_SCAN`, lesson 04): one key per
# follower, plus the key that ends the range.

# %% [markdown]
# ## The ledger: the whole profile workload, per second
#
# The table's rates times what each operation costs for the busiest account, measured from the commands it
# sends. Two designs that differ only in the follower count: counted from the edges on every view, or kept as
# a counter on the user that each follow increments (lesson 04). The follows are made by two existing users who
# do not follow the busiest account yet. With the counter, a follow is two writes to two documents, so it also
# needs one of lesson 05's ways to keep them consistent (a transaction, or a durable to-do and a worker).

# %%
import datetime as dt

busiest = accounts["busiest"]
already = {e["followerId"] for e in db.follows.find({"followingId": busiest}, {"followerId": 1})}
fan_a, fan_b = [u["_id"] for u in db.users.find({"_id": {"$nin": sorted(already | {busiest})}}, {"_id": 1})
                .sort("_id", 1).limit(2)]
db.users.update_one({"_id": busiest}, {"$set": {"followerCount": len(already)}})  # backfill the counter once
when = dt.datetime(2026, 12, 1)


def read_account(d):
    return d.users.find_one({"_id": busiest}, {"name": 1, "roles": 1})


def read_posts(d):
    return list(d.posts.find({"authorId": busiest}, {"title": 1, "location": 1, "createdAt": 1})
                .sort([("createdAt", -1), ("_id", -1)]).limit(20))


def followers_page(d):
    return list(d.follows.find({"followingId": busiest}).sort("followerId", 1).limit(20))


def count_edges(d):
    return d.follows.count_documents({"followingId": busiest})


def read_counter(d):
    return d.users.find_one({"_id": busiest}, {"followerCount": 1})


def publish(tag):
    return lambda d: d.posts.insert_one({"_id": f"post:ledger-{tag}", "authorId": busiest, "title": "ledger",
                                         "location": "Oakland", "createdAt": when})


def follow_edge(fan, counter):
    def run(d):
        d.follows.insert_one({"_id": f"follow:{fan[5:]}:{busiest[5:]}", "followerId": fan, "followingId": busiest,
                              "createdAt": when})
        if counter:
            d.users.update_one({"_id": busiest}, {"$inc": {"followerCount": 1}})
    return run


rates = {"read account and its roles": 3000, "read the newest 20 posts": 3000, "navigate followers / following": 400,
         "show the follower count": 3000, "publish a post": 50, "follow / unfollow": 300}
ledger = labkit.Ledger(rates)
for design, count, fan, counter in [("count the edges", count_edges, fan_a, False),
                                    ("follower counter", read_counter, fan_b, True)]:
    ledger.measure(design, "read account and its roles", db, read_account)
    ledger.measure(design, "read the newest 20 posts", db, read_posts)
    ledger.measure(design, "navigate followers / following", db, followers_page)
    ledger.measure(design, "show the follower count", db, count)
    ledger.measure(design, "publish a post", db, publish(design[:5]))
    ledger.measure(design, "follow / unfollow", db, follow_edge(fan, counter))
ledger.per_operation()

# %%
ledger.totals()

# %% [markdown]
# Which operation dominates each design's keys examined per second? Move the follower-count rate: the counter
# is worth its extra write per follow only while the count is shown often enough.

# %%
per_op = ledger.per_operation()
share = (per_op["keys examined"] * per_op["per second"]).unstack("design")
(share / share.sum()).round(3).rename(columns=lambda c: f"{c}: share of keys /s")

# %%
ledger_widget = ledger.widget("keys examined", max_rate=6000)
ledger_widget

# %%
designs = ("follower counter", "count the edges")  # (better, worse) for the count
saved = ledger.difference("keys examined", "show the follower count", *designs)
extra = -ledger.difference("keys examined", "follow / unfollow", *designs)
print(f"keys saved per count shown: {saved:,}; extra keys per follow: {extra}")
print(f"at {rates['follow / unfollow']} follows per second the counter wins once the count is shown more than "
      f"{ledger.break_even('show the follower count', *designs, metric='keys examined'):.2f} times per second")

# %% [markdown]
# ## Explore: the page as an account grows
#
# Pick a size: an account with exactly that many posts **and** that many followers is measured, every read
# of its profile page. Watch which figure follows the slider. (The accounts live in a scratch database with the
# same indexes, so the checklist below still sees only the profile's data. Accounts at evenly spaced sizes are
# built once; the slider grows or shrinks the nearest one by the difference.)

# %%
from labkit.resize import AccountLadder
from labkit.widgets import explorer


def slider_post(account, i):
    return {"authorId": account, "title": f"post {i}", "location": "Oakland",
            "createdAt": dt.datetime(2026, 1, 1) + dt.timedelta(minutes=i), "body": "x" * 40}


scratch = labkit.fresh_db("08_capstone_slider")
scratch.posts.create_index({"authorId": 1, "createdAt": -1, "_id": -1})
scratch.follows.create_index({"followerId": 1, "followingId": 1}, unique=True)
scratch.follows.create_index({"followingId": 1, "followerId": 1})
follower_pool = [f"user:fan-{i:04d}" for i in range(3000)]


def slider_edge(account, i):
    return {"followerId": follower_pool[i], "followingId": account, "createdAt": dt.datetime(2026, 1, 1)}


post_ladder = AccountLadder(scratch.posts, "user:slider-", 3000, 1000, slider_post, id_prefix="post:")
follow_ladder = AccountLadder(scratch.follows, "user:slider-", 3000, 1000, slider_edge, id_prefix="follow:")
scratch.users.insert_many([{"_id": a, "name": "Slider", "roles": []} for a in post_ladder.accounts])


def page_cost(size):
    user = post_ladder.account_for(size)
    assert follow_ladder.account_for(size) == user  # the same rungs: one account has both
    m = measure(user, scratch)
    out = {"account": user, "posts": scratch.posts.count_documents({"authorId": user}),
           "followers": scratch.follows.count_documents({"followingId": user})}
    out.update({f"{op}: keys": int(m.loc[op, "keys"]) for op in m.index})
    out["any blocking sort"] = bool(m["blocking sort"].any())
    return out


page = explorer(page_cost, sliders={"size": (1, 3000, 2000, 10)}, title="Profile page cost")
page

# %% [markdown]
# ## The common-mistakes checklist, on the data
#
# **1. Average cardinality as the bound.** Compare the mean with the maximum:

# %%
follower_counts = pd.Series({d["_id"]: d["n"] for d in db.follows.aggregate(
    [{"$group": {"_id": "$followingId", "n": {"$sum": 1}}}])})
pd.DataFrame({"posts per author": pd.Series(post_counts).describe(), "followers per user": follower_counts.describe()}).loc[["mean", "50%", "max"]]

# %% [markdown]
# **2. Unlimited id arrays.** No user document holds a growing array; the biggest user documents, measured with
# [`$bsonSize`](https://www.mongodb.com/docs/manual/reference/operator/aggregation/bsonSize/), are tiny:

# %%
biggest = list(db.users.aggregate([{"$project": {"bytes": {"$bsonSize": "$$ROOT"}, "roles": {"$size": "$roles"}}},
                                   {"$sort": {"bytes": -1, "_id": 1}}, {"$limit": 3}]))
pd.DataFrame(biggest)

# %% [markdown]
# **3. Duplicating everything.** Nothing is copied between collections yet; add copies only with a measured
# read benefit and a freshness policy (lesson 06).
#
# **4. Two indexes are not two relationship documents.** One document per edge:

# %%
print("follows documents:", db.follows.count_documents({}))
print("distinct (follower, following) pairs:",
      len(list(db.follows.aggregate([{"$group": {"_id": {"a": "$followerId", "b": "$followingId"}}}]))))

# %% [markdown]
# **5. Deletion and repair.** When a user is deleted, their posts and edges point at nobody. Let's delete two
# accounts the careless way and see what is left behind.

# %%
gone = ordered[5:7]
db.users.delete_many({"_id": {"$in": gone}})
print("deleted:", gone)

# %% [markdown]
# The follows still name them, on either side. A repair job does not need to know who was deleted: it collects
# every user id the edges name, looks each id up in `users` once with
# [`$lookup`](https://www.mongodb.com/docs/manual/reference/operator/aggregation/lookup/), and keeps the edges
# of the ids that are missing. (Joining each edge to both of its users instead would look up a popular user
# once per follower: the same answer for many times the work.)

# %%
def dangling_follows(db):
    """Ids of follows whose follower or followed user no longer exists (a full pass over follows)."""
    return [d["_id"] for d in db.follows.aggregate([
        {"$project": {"user": ["$followerId", "$followingId"]}},  # both ends of every edge
        {"$unwind": "$user"},
        {"$group": {"_id": "$user", "edges": {"$push": "$_id"}}},  # one row per user id the edges name
        {"$lookup": {"from": "users", "localField": "_id", "foreignField": "_id", "as": "found",
                     "pipeline": [{"$project": {"_id": 1}}]}},
        {"$match": {"found": {"$size": 0}}},  # ids no user has any more
        {"$unwind": "$edges"},
        {"$group": {"_id": "$edges"}},  # an edge whose two ends are both gone, once
    ])]


dangling = dangling_follows(db)
print(f"follows scanned: {db.follows.count_documents({}):,}; dangling: {len(dangling)}")
print("of which name a deleted user as followed:",
      db.follows.count_documents({"_id": {"$in": dangling}, "followingId": {"$in": gone}}),
      "| as follower:", db.follows.count_documents({"_id": {"$in": dangling}, "followerId": {"$in": gone}}))

# %% [markdown]
# Repair them, then check again:

# %%
repaired = db.follows.delete_many({"_id": {"$in": dangling}}).deleted_count
print("dangling follows deleted:", repaired, "| dangling now:", len(dangling_follows(db)))

# %% [markdown]
# ## Exercise 1: delete an account properly
#
# A changed scenario with one more kind of reference: **comments** (`postId`, `authorId`). Write
# `delete_account(db, user_id)` that deletes the user and everything that would point at nobody afterwards
# (several writes to several collections, which are not atomic together,
# [atomicity](https://www.mongodb.com/docs/manual/core/write-operations-atomicity/): a crash halfway leaves
# what the repair job above finds):
# their posts, the comments on those posts, their own comments on other posts, and their follows in both
# directions, and nothing else. `ex.check(db, delete_account)` runs it on a small network of its own.

# %%
ex = labkit.exercises.get("08-delete-account")
ex

# %% tags=["solution"]
def delete_account(db, user_id):
    post_ids = [p["_id"] for p in db.posts.find({"authorId": user_id}, {"_id": 1})]
    db.comments.delete_many({"$or": [{"postId": {"$in": post_ids}}, {"authorId": user_id}]})
    db.posts.delete_many({"authorId": user_id})
    db.follows.delete_many({"$or": [{"followerId": user_id}, {"followingId": user_id}]})
    db.users.delete_one({"_id": user_id})


ex.check(db, delete_account)

# %% [markdown]
# ## Exercise 2: the posts the careless deletion left
#
# Back to this lesson's network, where two accounts were deleted the careless way above. Find every
# **orphaned post**: a post whose `authorId` matches no user. Assign the sorted list of their `_id`s to
# `orphans`. `ex2.check(db, orphans)` compares with what it finds itself.

# %%
ex2 = labkit.exercises.get("08-orphans")
ex2

# %% tags=["solution"]
orphans = sorted(d["_id"] for d in db.posts.aggregate([
    {"$group": {"_id": "$authorId", "posts": {"$push": "$_id"}}},  # each author looked up once
    {"$lookup": {"from": "users", "localField": "_id", "foreignField": "_id", "as": "author",
                 "pipeline": [{"$project": {"_id": 1}}]}},
    {"$match": {"author": {"$size": 0}}},
    {"$unwind": "$posts"},
    {"$project": {"_id": "$posts"}},
]))
print(len(orphans), "orphaned posts")
ex2.check(db, orphans)

# %% [markdown]
# The repair for the posts: delete the deleted users' posts (or reassign them, if the product wants to keep
# them), then count again.

# %%
orphaned_before = db.posts.count_documents({"authorId": {"$in": gone}})
deleted_posts = db.posts.delete_many({"authorId": {"$in": gone}}).deleted_count
print(f"orphaned posts deleted: {deleted_posts} of {orphaned_before}; "
      f"left: {db.posts.count_documents({'authorId': {'$in': gone}})}")

# %% [markdown]
# ## Summary
#
# - Derive each model from an access pattern; write the reason next to it.
# - Measure every operation on the busiest account, not the average one: pages should cost the page size.
#   Test concurrent writes too: a counter on a popular account is a write hotspot (lesson 04).
# - Run the checklist on data: bounds, arrays, copies, edges, and what deletion leaves behind; delete an
#   account with everything that points at it, and run a repair job for what an earlier deletion left.
#
# **Next:** the pattern lessons, starting with the bucket pattern.

# %% [markdown] tags=["sources"]
# ## Sources
#
# 1. [MongoDB manual: Explain Results](https://www.mongodb.com/docs/manual/reference/explain-results/)
# 2. [MongoDB manual: \$bsonSize](https://www.mongodb.com/docs/manual/reference/operator/aggregation/bsonSize/)
# 3. [MongoDB manual: \$lookup (aggregation stage)](https://www.mongodb.com/docs/manual/reference/operator/aggregation/lookup/)
# 4. [MongoDB manual: Atomicity and Transactions](https://www.mongodb.com/docs/manual/core/write-operations-atomicity/)

# %% [markdown] tags=["navigation"]
# [← 07 · Enforce the shape with schema validation](07_validation.ipynb) · [Contents](../CONTENTS.md) · [10 · Bucket: group time-series readings per sensor and hour →](10_bucket.ipynb)
