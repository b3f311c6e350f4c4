# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
#   labkit:
#     minutes: 35
#     title: "Capstone: a real-world profile page"
#     section: Relationships
#     exercise_minutes: 5
#     demo: >-
#       Run the measure() table for the busiest, typical and newcomer accounts; move the slider to show page cost independent of account size, except the count.
#     mistakes:
#     - "Measuring only small accounts."
#     - "Leaving orphaned posts after deleting users."
#     - "Treating the two follows indexes as two copies of the relationship."
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
        ("read account and its roles", "embed roles in users", "bounded (8), owned, read together"),
        ("read the newest 20 posts", "posts.authorId + {authorId: 1, createdAt: -1, _id: -1}", "unbounded history"),
        ("navigate followers / following", "follows + two compound indexes", "unbounded many-to-many"),
        ("show the follower count", "count the edges; a counter only if measurements ask for one", "hot read"),
    ],
    columns=["access pattern", "model", "why"],
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

# %%
def operations(user_id):
    """The profile page's reads for one account, as cursors or explain commands."""
    return {
        "account + roles": db.users.find({"_id": user_id}, {"name": 1, "roles": 1}),
        "newest 20 posts": db.posts.find({"authorId": user_id}, {"title": 1, "location": 1, "createdAt": 1})
                                   .sort([("createdAt", -1), ("_id", -1)]).limit(20),
        "followers page": db.follows.find({"followingId": user_id}).sort("followerId", 1).limit(20),
        "following page": db.follows.find({"followerId": user_id}).sort("followingId", 1).limit(20),
        "follower count": {"count": "follows", "query": {"followingId": user_id}},
    }


def measure(user_id):
    rows = []
    for name, op in operations(user_id).items():
        if isinstance(op, dict):
            plan = db.command("explain", op, verbosity="executionStats")
        else:
            plan = op.explain()
        s = labkit.plan_summary(plan)
        rows.append({"operation": name, "plan": s["stages"], "keys": s["keysExamined"], "docs": s["docsExamined"],
                     "returned": s["nReturned"], "blocking sort": s["blockingSort"]})
    return pd.DataFrame(rows).set_index("operation")


pd.concat({label: measure(uid) for label, uid in accounts.items()}, axis=1)

# %% [markdown]
# Every read is an index scan with no blocking sort, and the pages cost 20 keys whatever the account's size.
# The one read that grows with the account is the follower count: one key per follower.

# %% [markdown]
# ## Explore: the busiest account's page
#
# Pick an account by its number of posts; every operation of its profile page is re-measured.

# %%
from labkit.widgets import explorer


def page_cost(posts):
    user = min(post_counts, key=lambda u: (abs(post_counts[u] - posts), u))
    m = measure(user)
    out = {"account": user, "posts": post_counts[user]}
    out.update({f"{op}: keys": int(m.loc[op, "keys"]) for op in m.index})
    out["any blocking sort"] = bool(m["blocking sort"].any())
    return out


page = explorer(page_cost, sliders={"posts": (1, 3000, 3000, 10)}, title="Profile page cost")
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
# **2. Unlimited id arrays.** No user document holds a growing array; the biggest user documents are tiny:

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
# ## Exercise
#
# Find every **orphaned post**: a post whose `authorId` matches no user. Assign the sorted list of their
# `_id`s to `orphans`. `ex.check(db, orphans)` compares with what it finds itself.

# %%
ex = labkit.exercises.get("08-orphans")
ex

# %% tags=["solution"]
orphans = sorted(d["_id"] for d in db.posts.aggregate([
    {"$lookup": {"from": "users", "localField": "authorId", "foreignField": "_id", "as": "author"}},
    {"$match": {"author": {"$size": 0}}},
    {"$project": {"_id": 1}},
]))
print(len(orphans), "orphaned posts")
ex.check(db, orphans)

# %% [markdown]
# ## Summary
#
# - Derive each model from an access pattern; write the reason next to it.
# - Measure every operation on the busiest account, not the average one: pages should cost the page size.
# - Run the checklist on data: bounds, arrays, copies, edges, and what deletion leaves behind.
#
# **Next:** the pattern lessons, starting with the bucket pattern.

# %% [markdown] tags=["navigation"]
# [← 07 · Enforce the shape with schema validation](07_validation.ipynb) · [Contents](../CONTENTS.md) · [10 · Bucket: group time-series readings per sensor and hour →](10_bucket.ipynb)
