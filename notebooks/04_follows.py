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
#     title: "One-to-infinity: the follows relationship collection"
#     section: Relationships
#     exercise_minutes: 5
#     demo: >-
#       Insert a duplicate follow and show code 11000 with keyValue; explain both directions; explain the count and show keys examined equal the followers.
#     mistakes:
#     - "Creating only one of the two compound indexes and trusting that no COLLSCAN means the query is cheap (a full index scan for sort order)."
#     - "Forgetting unique: true, so duplicate edges are accepted."
#     - "Expecting count_documents to be constant-time with an index."
# ---

# %% [markdown]
# # 04 · One-to-infinity: the follows relationship collection
#
# **You will learn**
# - to store a many-to-many, unbounded relationship as one document per directed edge;
# - a unique compound index that rejects duplicates, and the reverse index for the other direction;
# - that counting matches costs work proportional to the matches, even with an index;
# - when a maintained counter pays for itself.
#
# **Time:** about 25 minutes.

# %%
import datetime as dt

import pandas as pd
from pymongo.errors import DuplicateKeyError

import labkit
from labkit.sizes import doc_size_with_array

db = labkit.fresh_db("04_follows")
summary = labkit.seed.social(db, users=5000, seed=4, celebrity_followers=4000, indexes=False)
summary

# %% [markdown]
# ## The workload
#
# | operation | type | rate | needs |
# |---|---|---|---|
# | who follows X (page of 20, by follower id) | read | frequent | follower ids |
# | whom does X follow (page of 20) | read | frequent | followed ids |
# | follow / unfollow | write | frequent | never a duplicate edge |
# | show X's follower count | read | very frequent | one number |
#
# Sam is the celebrity: thousands follow him. Storing follower ids on his user document would grow it with every
# new follower, so each relationship is its own document:

# %%
db.follows.find_one({"_id": "follow:234:112"})

# %% [markdown]
# ## The two indexes
#
# One unique index for "whom does X follow" that also forbids duplicate edges, and its mirror image for
# "who follows X".

# %%
db.follows.create_index({"followerId": 1, "followingId": 1}, unique=True)
db.follows.create_index({"followingId": 1, "followerId": 1})
sorted(db.follows.index_information())

# %% [markdown]
# Following Sam twice is rejected by the server, not by application code:

# %%
try:
    db.follows.insert_one({"_id": "follow:234:112:again", "followerId": "user:234", "followingId": "user:112",
                           "createdAt": dt.datetime(2026, 10, 5, 12, 0)})
except DuplicateKeyError as exc:
    print("code:", exc.code)
    print("keyValue:", exc.details["keyValue"])

# %% [markdown]
# ## Both directions, each from its own index

# %%
followers_of_sam = db.follows.find({"followingId": "user:112"}).sort("followerId", 1).limit(20)
fred_follows = db.follows.find({"followerId": "user:234"}).sort("followingId", 1).limit(20)
pd.concat([labkit.show_plan(followers_of_sam.explain()), labkit.show_plan(fred_follows.explain())],
          keys=["who follows Sam", "whom Fred follows"])

# %% [markdown]
# ## Counting is proportional to the matches
#
# An index makes counting cheap per match, not free. The count's plan walks one index key per follower:

# %%
def count_cost(user_id):
    plan = db.command("explain", {"count": "follows", "query": {"followingId": user_id}}, verbosity="executionStats")
    stats = plan["executionStats"]
    return {"followers": db.follows.count_documents({"followingId": user_id}),
            "keys examined": stats["totalKeysExamined"], "docs examined": stats["totalDocsExamined"],
            "plan": labkit.plan_summary(plan)["stages"]}


pd.DataFrame({u: count_cost(u) for u in ["user:112", "user:234"]}).T

# %% [markdown]
# ## A maintained counter
#
# If the count is shown on every profile view, keep it on the user and change it with each follow. Reading it
# is one document; the price is a second write per follow (and keeping the two consistent, lesson 05).

# %%
for doc in db.follows.aggregate([{"$group": {"_id": "$followingId", "n": {"$sum": 1}}}]):
    db.users.update_one({"_id": doc["_id"]}, {"$set": {"followerCount": doc["n"]}})
db.users.find_one({"_id": "user:112"}, {"name": 1, "followerCount": 1})

# %%
counter_plan = labkit.show_plan(db.users.find({"_id": "user:112"}, {"followerCount": 1}).explain())
counter_plan

# %% [markdown]
# Per profile view the counter reads one key and one document instead of one key per follower. Per follow it
# costs one extra write. With many views per follow, the counter wins by a wide margin.

# %% [markdown]
# ## Explore: a celebrity's followers
#
# For a follower count (the slider picks the generated account whose count is closest; the readout names it),
# compare what counting costs with a maintained counter, and how big that user document would be if it kept all
# follower ids in an array.

# %%
from labkit.plots import bars_against_limit
from labkit.widgets import explorer

follower_counts = {d["_id"]: d["n"] for d in db.follows.aggregate([{"$group": {"_id": "$followingId", "n": {"$sum": 1}}}])}
sam_doc = db.users.find_one({"_id": "user:112"})


def celebrity(followers):
    account = min(follower_counts, key=lambda a: (abs(follower_counts[a] - followers), a))
    cost = count_cost(account)
    return {"account": account, "followers": cost["followers"],
            "count: keys examined": cost["keys examined"], "counter: keys examined": 1,
            "user doc with followerIds (bytes)": doc_size_with_array(sam_doc, "followerIds", cost["followers"],
                                                                      lambda i: f"user:{i}"),
            "user doc with followerIds, 1M followers (bytes)": doc_size_with_array(sam_doc, "followerIds", 1_000_000,
                                                                                   lambda i: f"user:{i}")}


fans = explorer(celebrity, sliders={"followers": (1, 4000, 1000, 50)}, title="Followers of a celebrity",
                draw=lambda ax, v, r: bars_against_limit(
                    ax, ["this account", "1M followers"],
                    [r["user doc with followerIds (bytes)"], r["user doc with followerIds, 1M followers (bytes)"]]))
fans

# %% [markdown]
# ## Exercise
#
# `practice.follows` holds the same kind of edges with no index but `_id`. Create indexes so that
# **both** directions (sorted pages of 20) run without COLLSCAN or a blocking SORT, and a duplicate
# follower/following pair is rejected. `ex.check(practice.follows)` checks the plans and tries a duplicate
# (and removes it again if it got in).

# %%
practice = labkit.fresh_db("04_practice")
labkit.seed.social(practice, users=800, seed=5, celebrity_followers=600, indexes=False)
ex = labkit.exercises.get("04-follow-indexes")
ex

# %% tags=["solution"]
practice.follows.create_index({"followerId": 1, "followingId": 1}, unique=True)
practice.follows.create_index({"followingId": 1, "followerId": 1})
ex.check(practice.follows)

# %% [markdown]
# ## Summary
#
# - Unbounded many-to-many: one document per relationship, never growing arrays on both sides.
# - Two compound indexes serve both directions; the unique one also forbids duplicate edges.
# - Counting walks the matches; keep a counter when the count is read far more often than it changes.
#
# **Next:** 05 · two-way references and how to keep copies consistent.

# %% [markdown] tags=["navigation"]
# [← 03 · Resolve references: separate queries or \$lookup](03_lookup.ipynb) · [Contents](../CONTENTS.md) · [05 · Two-way references and keeping copies consistent →](05_two_way.ipynb)
