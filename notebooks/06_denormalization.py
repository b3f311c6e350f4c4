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
#     title: "Denormalization: copies, caches and snapshots"
#     section: Relationships
#     exercise_minutes: 5
#     demo: >-
#       Push five followers into a three-entry preview; rename a widely listed follower, count stale previews, run the rebuild job after the deadline.
#     mistakes:
#     - "$slice: -3 with $position: 0 (keeps the oldest) instead of $slice: 3."
#     - "Rewriting historical snapshots on rename."
#     - "Copying whole user profiles into previews instead of the two fields the view needs."
# ---

# %% [markdown]
# # 06 · Denormalization: copies, caches and snapshots
#
# **You will learn**
# - to keep a *bounded* copy (a follower preview of three) with `$push`, `$each`, `$position` and `$slice`;
# - the three meanings a copy can have: current canonical value, display cache, historical snapshot;
# - to give a display cache a refresh deadline and a rebuild;
# - to count what a rename must touch under each policy.
#
# **Time:** about 25 minutes.

# %%
import datetime as dt

import pandas as pd

import labkit

db = labkit.fresh_db("06_denormalization")
labkit.seed.social(db, users=1500, seed=6, celebrity_followers=1000, celebrity_posts=800)

# %% [markdown]
# ## The workload
#
# | operation | type | rate (per second) | needs | freshness |
# |---|---|---|---|---|
# | profile header with "followed by Fred, Ann and 998 others" | read | 3,000 | 3 follower names | at most one day old |
# | a post with its author's name as published | read | 1,000 | the name at publishing time | never changes |
# | a post with its author's *current* name | read | 500 | today's name | exact |
# | follow | write | 300 | | |
# | rename a user | write | 0.1 | | |
#
# ## A bounded follower preview
#
# The profile needs three names, not a thousand. Keep a preview of the three newest followers in the user
# document; the full graph stays in `follows`. `$position: 0` puts the newcomer first and `$slice: 3` drops
# whatever falls off the end, in the same atomic write.

# %%
def add_to_preview(db, user_id, follower, now):
    db.users.update_one(
        {"_id": user_id},
        {"$push": {"followerPreview": {"$each": [{"userId": follower["_id"], "name": follower["name"]}],
                                       "$position": 0, "$slice": 3}},
         "$set": {"previewRefreshedAt": now}},
    )


newest = db.follows.find({"followingId": "user:112"}).sort([("createdAt", -1), ("_id", -1)]).limit(5)
for edge in reversed(list(newest)):
    add_to_preview(db, "user:112", db.users.find_one({"_id": edge["followerId"]}), edge["createdAt"])
db.users.find_one({"_id": "user:112"}, {"followerPreview": 1, "previewRefreshedAt": 1})

# %% [markdown]
# Five followers were pushed; the preview holds three. The document stays the same size no matter how many
# follow Sam.

# %% [markdown]
# ## A historical snapshot
#
# A post may copy its author's name *as it was when the post was published*. That copy must not follow a
# rename: it is history.

# %%
db.posts.update_many({"authorId": "user:112"}, {"$set": {"authorSnapshot": {"name": "Sam"}}})
db.users.update_one({"_id": "user:112"}, {"$set": {"name": "Samuel"}})
post = db.posts.find_one({"_id": "post:234"})
current = db.users.find_one({"_id": post["authorId"]}, {"name": 1})
print("published as:", post["authorSnapshot"]["name"], "| author today:", current["name"])

# %% [markdown]
# ## A display cache, with a deadline
#
# Give every user such a preview. The job that builds them reads the canonical sources (`follows` for who,
# `users` for the names) and stamps each preview with the time it was built.

# %%
def rebuild_previews(db, now, max_age=dt.timedelta(days=1), everyone=False):
    """Rebuild previews at least ``max_age`` old (or all of them) from follows + users, the canonical sources."""
    stale_filter = {} if everyone else {"previewRefreshedAt": {"$lte": now - max_age}}
    rebuilt = 0
    for user in db.users.find(stale_filter, {"_id": 1}).sort("_id", 1):
        edges = db.follows.find({"followingId": user["_id"]}).sort([("createdAt", -1), ("_id", -1)]).limit(3)
        ids = [e["followerId"] for e in edges]
        names = {u["_id"]: u["name"] for u in db.users.find({"_id": {"$in": ids}}, {"name": 1})}
        db.users.update_one({"_id": user["_id"]}, {"$set": {
            "followerPreview": [{"userId": i, "name": names.get(i, "?")} for i in ids], "previewRefreshedAt": now}})
        rebuilt += 1
    return rebuilt


print("previews built:", rebuild_previews(db, now=dt.datetime(2027, 1, 1), everyone=True))

# %% [markdown]
# A follower who appears in many previews renames themselves. Every preview that lists them is now stale:

# %%
def previews_listing(db, user_id):
    return db.users.count_documents({"followerPreview.userId": user_id})


listed = list(db.users.aggregate([{"$unwind": "$followerPreview"}, {"$sortByCount": "$followerPreview.userId"},
                                  {"$sort": {"count": -1, "_id": 1}}, {"$limit": 1}]))[0]
renamed = listed["_id"]
db.users.update_one({"_id": renamed}, {"$set": {"name": "Frederick"}})


def stale_previews():
    return db.users.count_documents({"followerPreview": {"$elemMatch": {"userId": renamed, "name": {"$ne": "Frederick"}}}})


print(f"previews listing {renamed}: {previews_listing(db, renamed)}, stale after the rename: {stale_previews()}")

# %% [markdown]
# The policy says a preview may be at most **one day** old. The job runs every six hours, so it must rebuild
# every preview that would pass the deadline before its next run: those at least 24 − 6 = 18 hours old. Run
# the schedule for the day after the rebuild and measure, at each run, how old the oldest preview had become:

# %%
MAX_AGE = dt.timedelta(days=1)
JOB_EVERY = dt.timedelta(hours=6)
built_at = dt.datetime(2027, 1, 1)
schedule = []
for k in range(1, 5):
    now = built_at + k * JOB_EVERY
    oldest = db.users.find_one({"previewRefreshedAt": {"$exists": True}}, sort=[("previewRefreshedAt", 1)])
    age_before = now - oldest["previewRefreshedAt"]
    rebuilt = rebuild_previews(db, now=now, max_age=MAX_AGE - JOB_EVERY)
    schedule.append({"job run at": now, "oldest preview before the run (hours)": age_before / dt.timedelta(hours=1),
                     "previews rebuilt": rebuilt, "stale previews after the run": stale_previews()})
schedule = pd.DataFrame(schedule).set_index("job run at")
print("oldest a preview ever got (hours):", schedule["oldest preview before the run (hours)"].max(),
      "| policy limit (hours):", MAX_AGE / dt.timedelta(hours=1))
schedule

# %% [markdown]
# ## The current canonical value: resolve the reference
#
# When a view needs the name as it is *now*, do not copy it at all: read it from the user (a second query or
# a `$lookup`). A rename then touches exactly one document.

# %%
list(db.posts.aggregate([
    {"$match": {"_id": "post:234"}},
    {"$lookup": {"from": "users", "localField": "authorId", "foreignField": "_id", "as": "author",
                 "pipeline": [{"$project": {"_id": 0, "name": 1}}]}},
    {"$project": {"title": 1, "authorSnapshot": 1, "author": 1}},
]))

# %% [markdown]
# ## Explore: what a rename touches
#
# The sliders ask for a user with a given number of posts and a given number of previews that list them; one
# account (`user:slider`, in a scratch database) is grown or shrunk in place to exactly that, and the documents
# a rename must rewrite are counted under each policy.

# %%
from labkit.resize import resize_children
from labkit.widgets import explorer

scratch = labkit.fresh_db("06_rename_slider")
scratch.users.insert_one({"_id": "user:slider", "name": "Slider"})


def slider_post(i):
    return {"authorId": "user:slider", "title": f"post {i}", "authorName": "Slider",
            "createdAt": dt.datetime(2026, 11, 1) + dt.timedelta(minutes=i)}


def fan(i):
    return {"name": f"fan {i}", "followerPreview": [{"userId": "user:slider", "name": "Slider"}]}


def rename_cost(posts, previews):
    resize_children(scratch.posts, "post:slider:", posts, slider_post)
    resize_children(scratch.users, "user:fan:", previews, fan)
    n_posts = scratch.posts.count_documents({"authorId": "user:slider"})
    return {"user": "user:slider", "posts": n_posts, "previews listing them": previews_listing(scratch, "user:slider"),
            "canonical reference: documents rewritten": 1,
            "display cache (previews): documents rewritten": 1 + previews_listing(scratch, "user:slider"),
            "copy of the current name on every post": 1 + n_posts,
            "historical snapshot: documents rewritten": 1}


renames = explorer(rename_cost, sliders={"posts": (1, 800, 100, 10), "previews": (0, 500, 50, 10)},
                   title="Rename a user")
renames

# %% [markdown]
# ## Exercise
#
# Write `add_follower(db, user_id, follower_id, name)`: it must keep `followerPreview` to the **three newest**
# followers, newest first, as `{userId, name}` entries, in **one** update. `ex.check(db, add_follower)` calls
# it on a test user of its own, including two followers arriving at the same moment, and watches the commands
# your function sends.

# %%
ex = labkit.exercises.get("06-bounded-preview")
ex

# %% tags=["solution"]
def add_follower(db, user_id, follower_id, name):
    db.users.update_one({"_id": user_id}, {"$push": {"followerPreview": {
        "$each": [{"userId": follower_id, "name": name}], "$position": 0, "$slice": 3}}})


ex.check(db, add_follower)

# %% [markdown]
# ## Summary
#
# - Copy only what a hot read needs, and keep the copy bounded (`$slice`).
# - Decide what each copy *means*: canonical (don't copy, resolve), cache (deadline + rebuild), snapshot (never rewrite).
# - A rename's cost is the number of copies the policy says must follow it.
#
# **Next:** 07 · enforce the document shape with validation.

# %% [markdown] tags=["navigation"]
# [← 05 · Two-way references and keeping copies consistent](05_two_way.ipynb) · [Contents](../CONTENTS.md) · [07 · Enforce the shape with schema validation →](07_validation.ipynb)
