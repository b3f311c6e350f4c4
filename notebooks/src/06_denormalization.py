# ---
# jupyter:
#   jupytext:
#     formats: ipynb,src//py:percent
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
#   labkit:
#     minutes: 30
#     title: "Denormalization: copies, caches and snapshots"
#     section: Relationships
#     exercise_minutes: 15
#     demo: >-
#       Push five followers into a three-entry preview; rename a widely listed follower, count stale previews, run the rebuild job after the deadline.
#     mistakes:
#     - "Keeping the newest bids with $position: 0 instead of the highest with $sort: {amount: -1}."
#     - "$sort: {amount: 1} with $slice: -3: the three highest, but lowest first."
#     - "Rewriting historical snapshots on rename."
#     - "Copying whole entries (a bid with everything it carries, a whole profile) into a bounded list instead of the fields the page shows."
#     - "Renaming team previews one team at a time (one write per team) instead of one update_many with members.$.name."
#     - "Setting members.0.name: the renamed member sits at a different position in each team."
#     sources:
#     - title: "MongoDB manual: Handle Duplicate Data"
#       url: https://www.mongodb.com/docs/manual/data-modeling/handle-duplicate-data/
#     - title: "MongoDB manual: Data Consistency"
#       url: https://www.mongodb.com/docs/manual/data-modeling/data-consistency/
#     - title: "MongoDB manual: $push"
#       url: https://www.mongodb.com/docs/manual/reference/operator/update/push/
#     - title: "MongoDB manual: $position"
#       url: https://www.mongodb.com/docs/manual/reference/operator/update/position/
#     - title: "MongoDB manual: $slice (update modifier)"
#       url: https://www.mongodb.com/docs/manual/reference/operator/update/slice/
#     - title: "MongoDB manual: $elemMatch (query)"
#       url: https://www.mongodb.com/docs/manual/reference/operator/query/elemMatch/
#     - title: "MongoDB manual: $ (positional update operator)"
#       url: https://www.mongodb.com/docs/manual/reference/operator/update/positional/
#     - title: "MongoDB manual: $lookup (aggregation stage)"
#       url: https://www.mongodb.com/docs/manual/reference/operator/aggregation/lookup/
#     - title: "MongoDB manual: Change Streams"
#       url: https://www.mongodb.com/docs/manual/changeStreams/
#     - title: "MongoDB manual: Change Events"
#       url: https://www.mongodb.com/docs/manual/reference/change-events/
# ---

# %% [markdown]
# # 06 · Denormalization: copies, caches and snapshots
#
# **You will learn**
# - to keep a *bounded* copy (a follower preview of three) with `$push`, `$each`, `$position` and `$slice`;
# - the three meanings a copy can have: current canonical value, display cache, historical snapshot;
# - to give a display cache a refresh deadline and a rebuild;
# - to give each copy one owner, including a worker that follows a change stream;
# - to count what a rename must touch under each policy.
#
# **Time:** about 30 minutes.
#
# A copy saves reads and costs writes: before duplicating a field, weigh how often the copies must be updated
# against what the reads gain ([handle duplicate data](https://www.mongodb.com/docs/manual/data-modeling/handle-duplicate-data/)).
# This lesson measures both sides.

# %%
import datetime as dt

import pandas as pd

import labkit

db = labkit.fresh_db("06_denormalization")
labkit.seed.social(db, users=1500, seed=6, celebrity_followers=1000, celebrity_posts=800)

# %% [markdown]
# ## The workload

# %%
workload = pd.DataFrame(
    [
        ('profile header with "followed by Fred, Ann and 998 others"', "read", 3000, "3 follower names", "at most one day old"),
        ("a post with its author's name as published", "read", 1000, "the name at publishing time", "never changes"),
        ("a post with its author's current name", "read", 500, "today's name", "exact"),
        ("follow", "write", 300, "", ""),
        ("rename a user", "write", 0.1, "", ""),
    ],
    columns=["operation", "type", "per_second", "needs", "freshness"],
)
workload

# %% [markdown]
# ## A bounded follower preview
#
# The profile needs three names, not a thousand. Keep a preview of the three newest followers in the user
# document; the full graph stays in `follows`. [`$push`](https://www.mongodb.com/docs/manual/reference/operator/update/push/)
# with `$each` adds the newcomer, [`$position: 0`](https://www.mongodb.com/docs/manual/reference/operator/update/position/)
# puts it first and [`$slice: 3`](https://www.mongodb.com/docs/manual/reference/operator/update/slice/) keeps
# the first three and drops whatever falls off the end, in the same atomic write.

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
# Five followers were pushed; the preview holds three. However many follow Sam, his document keeps three
# entries.

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
# A follower who appears in many previews renames themselves. Every preview that lists them is now stale
# (found with [`$elemMatch`](https://www.mongodb.com/docs/manual/reference/operator/query/elemMatch/): one
# preview entry with that id *and* an old name):

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
# the schedule for the day after the rebuild and measure, at each run, how old the oldest preview had become.
#
# **Predict first.** How old (in hours) will the oldest preview get before a run? Record it with
# `ex_age.predict(...)`.

# %%
ex_age = labkit.exercises.get("06-predict-oldest-preview")
ex_age

# %% tags=["solution"]
ex_age.predict(18)

# %% tags=["reveal"]
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
oldest_hours = float(schedule["oldest preview before the run (hours)"].max())
print("oldest a preview ever got (hours):", oldest_hours, "| policy limit (hours):", MAX_AGE / dt.timedelta(hours=1))
schedule

# %% tags=["reveal"]
ex_age.check(oldest_hours)

# %% [markdown]
# ## The current canonical value: resolve the reference
#
# When a view needs the name as it is *now*, do not copy it at all: read it from the user (a second query or
# a [`$lookup`](https://www.mongodb.com/docs/manual/reference/operator/aggregation/lookup/)). A rename then
# touches exactly one document.

# %%
list(db.posts.aggregate([
    {"$match": {"_id": "post:234"}},
    {"$lookup": {"from": "users", "localField": "authorId", "foreignField": "_id", "as": "author",
                 "pipeline": [{"$project": {"_id": 0, "name": 1}}]}},
    {"$project": {"title": 1, "authorSnapshot": 1, "author": 1}},
]))

# %% [markdown]
# ## Who updates each copy
#
# A copy needs more than a meaning. Before adding one, write down its freshness requirement, **who owns its
# updates** (the one code path allowed to write it, so that two writers never undo each other) and how it is
# repaired when that code path fails. For this lesson's copies:

# %%
register = pd.DataFrame([
    ("users.followerPreview", "display cache", "at most one day old",
     "add_to_preview on each follow; rebuild_previews for everything else (renames, unfollows)",
     "rebuild_previews(everyone=True) from follows + users"),
    ("posts.authorSnapshot", "historical snapshot", "never changes after publishing",
     "the publish path, once; nothing writes it afterwards", "none needed: it is history, never rebuilt from the current name"),
    ("users.name", "canonical value", "exact", "the rename path, the only writer of a name", "not a copy"),
], columns=["copy", "meaning", "freshness", "who updates it", "repair"]).set_index("copy")
register

# %% [markdown]
# The register also says what is *not* kept fresh on the spot: an unfollow, like a rename, reaches the preview
# only through the next rebuild, which the one-day policy allows. If a view cannot accept that, the copy needs
# another owner (the unfollow path) or must not be a copy. Keeping copies in step is a choice among
# transactions, embedding and delayed updates ([data consistency](https://www.mongodb.com/docs/manual/data-modeling/data-consistency/)).

# %% [markdown]
# ### Another owner: a worker that follows renames
#
# The preview names need not wait for the rebuild, and the rename path need not own them either: a worker can
# follow the `users` change stream (lesson 05, [change streams](https://www.mongodb.com/docs/manual/changeStreams/))
# and rewrite the preview entries whenever a name changes. An update event lists the fields the update set in
# `updateDescription.updatedFields` ([change events](https://www.mongodb.com/docs/manual/reference/change-events/)),
# so the `$match` keeps only the updates that set `name`. The worker's own writes set
# `followerPreview.<i>.name`, another path, so they do not wake it again. It is then the one owner of the
# preview names, and saves its resume token after each rename, as lesson 05's worker does. Where the deployment
# refuses change streams (a standalone server does), `start_name_worker` prints why and returns `None`, and
# `run_name_worker` runs the rebuild job instead, as lesson 05's worker falls back to its reconciliation job.

# %%
from pymongo.errors import OperationFailure

NAME_CHANGES = [{"$match": {"operationType": "update", "updateDescription.updatedFields.name": {"$exists": True}}}]


def start_name_worker(db):
    """Open the users change stream after the saved token (at the present on the first start); None where the
    deployment refuses change streams."""
    state = db.workers.find_one({"_id": "preview-names"})
    try:
        stream = db.users.watch(NAME_CHANGES, resume_after=state["token"] if state else None)
    except OperationFailure as exc:
        if (why := labkit.changestreams.refusal(exc)) is None:
            raise  # any other error is a real failure
        print(f"{why}; the rebuild job refreshes the previews instead")
        return None
    if state is None:
        db.workers.insert_one({"_id": "preview-names", "token": stream.resume_token})
    return stream


def run_name_worker(db, stream):
    """Copy each new name into the previews that list the user; return how many renames it applied."""
    if stream is None:  # no change stream on this deployment: the rebuild job, at the schedule's last run
        rebuild_previews(db, now=built_at + 4 * JOB_EVERY, everyone=True)
        return 0
    applied = 0
    with stream:
        while (change := stream.try_next()) is not None:
            user_id, name = change["documentKey"]["_id"], change["updateDescription"]["updatedFields"]["name"]
            db.users.update_many({"followerPreview.userId": user_id}, {"$set": {"followerPreview.$.name": name}})
            applied += 1
            db.workers.update_one({"_id": "preview-names"}, {"$set": {"token": stream.resume_token}})
    return applied

# %%
def previews_with_other_name(user_id, name):
    return db.users.count_documents({"followerPreview": {"$elemMatch": {"userId": user_id, "name": {"$ne": name}}}})


name_stream = start_name_worker(db)
db.users.update_one({"_id": renamed}, {"$set": {"name": "Fred"}})
print("previews with the old name after the rename:", previews_with_other_name(renamed, "Fred"))
print("renames applied by the worker:", run_name_worker(db, name_stream))
print("previews with the old name after the worker ran:", previews_with_other_name(renamed, "Fred"))

# %% [markdown]
# The price is the one of lesson 05: a replica set or a sharded cluster, a worker to run and watch, and the
# rebuild job kept as the repair for a worker that was down longer than the oplog keeps its token.

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


def slider_fan(i):  # not `fan`: the ledger below names its user `fan`
    return {"name": f"fan {i}", "followerPreview": [{"userId": "user:slider", "name": "Slider"}]}


def rename_cost(posts, previews):
    resize_children(scratch.posts, "post:slider:", posts, slider_post)
    resize_children(scratch.users, "user:fan:", previews, slider_fan)
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
# ## The ledger: keep the preview, or compute it on every profile view?
#
# The preview is a copy that costs writes: a second write on every follow, and on a rename one write per
# preview listing the renamed user. (This is a stricter variant of the register above: the rename path owns
# the preview entries too, so they are never stale; it rewrites each entry with the
# [positional `$`](https://www.mongodb.com/docs/manual/reference/operator/update/positional/).) Computed on read instead, the profile header asks `follows` for the three
# newest followers (with an index that serves that sort) and `users` for their names. The workload's rates come
# from the table at the top; the rename is measured on the follower listed in the most previews, the worst case.

# %%
db.follows.create_index({"followingId": 1, "createdAt": -1, "_id": -1})  # serves the computed header
db.users.create_index({"followerPreview.userId": 1})  # finds the previews a rename must rewrite
fan = {"_id": "user:ledger-fan", "name": "Ledger Fan"}
db.users.insert_one(dict(fan))
when = dt.datetime(2027, 1, 2)


def header_preview(d):
    return d.users.find_one({"_id": "user:112"}, {"name": 1, "followerPreview": 1})


def header_computed(d):
    user = d.users.find_one({"_id": "user:112"}, {"name": 1})
    edges = list(d.follows.find({"followingId": "user:112"}, {"followerId": 1})
                 .sort([("createdAt", -1), ("_id", -1)]).limit(3))
    names = list(d.users.find({"_id": {"$in": [e["followerId"] for e in edges]}}, {"name": 1}))
    return user, names


def follow_computed(d):
    d.follows.insert_one({"followerId": fan["_id"], "followingId": "user:234", "createdAt": when})


def follow_preview(d):
    d.follows.insert_one({"followerId": fan["_id"], "followingId": "user:345", "createdAt": when})
    add_to_preview(d, "user:345", fan, when)


def rename_computed(d):
    d.users.update_one({"_id": renamed}, {"$set": {"name": "Fred C."}})


def rename_preview(d):  # a design where the rename path also owns the previews: they follow at once
    d.users.update_one({"_id": renamed}, {"$set": {"name": "Fred P."}})
    d.users.update_many({"followerPreview.userId": renamed}, {"$set": {"followerPreview.$.name": "Fred P."}})


rates = {"profile header": 3000, "follow": 300, "rename a user": 0.1}
ledger = labkit.Ledger(rates)
for design, header, follow, rename in [("computed on read", header_computed, follow_computed, rename_computed),
                                       ("preview copy", header_preview, follow_preview, rename_preview)]:
    ledger.measure(design, "profile header", db, header)
    ledger.measure(design, "follow", db, follow)
    ledger.measure(design, "rename a user", db, rename)
ledger.per_operation()

# %%
ledger.totals()

# %% [markdown]
# Move the follow rate: the copy's extra write per follow is paid for by the round trips it saves on profile
# views, up to the break-even printed below. Each view saves more than one round trip, so follows can outnumber
# the views before the copy stops paying.

# %%
ledger_widget = ledger.widget("round trips", max_rate=8000)
ledger_widget

# %%
cost = ledger.costs
for metric, attr in [("round trips", "round_trips"), ("documents examined", "docs_examined")]:
    saved = getattr(cost["computed on read", "profile header"], attr) - getattr(cost["preview copy", "profile header"], attr)
    per_follow = getattr(cost["preview copy", "follow"], attr) - getattr(cost["computed on read", "follow"], attr)
    per_rename = getattr(cost["preview copy", "rename a user"], attr) - getattr(cost["computed on read", "rename a user"], attr)
    other = per_rename * rates["rename a user"]
    print(f"{metric}: the preview saves {saved} per profile view, costs {per_follow} more per follow and "
          f"{per_rename:,} more per rename; at {rates['profile header']:,} views/s it wins while follows per second "
          f"< {(saved * rates['profile header'] - other) / per_follow:,.0f}")

# %% [markdown]
# ## Exercise 1: the three highest bids
#
# A changed scenario: an auction listing shows its **three highest bids**, a bounded copy of the bids
# collection. Write `add_bid(db, listing_id, bidder_id, amount)`: it keeps the listing's `topBids` to the 3
# highest bids, highest first, as `{bidderId, amount}` entries, in **one** update, whatever order the bids
# arrive in. Unlike the preview, the order is by amount, not by arrival. `ex.check(db, add_bid)` calls it on a
# listing of its own, including two bids arriving at the same moment, and watches the commands it sends.

# %%
db.listings.insert_one({"_id": "listing:1", "title": "Vintage lamp", "topBids": []})
ex = labkit.exercises.get("06-top-bids")
ex

# %% tags=["solution"]
def add_bid(db, listing_id, bidder_id, amount):
    db.listings.update_one({"_id": listing_id}, {"$push": {"topBids": {
        "$each": [{"bidderId": bidder_id, "amount": amount}], "$sort": {"amount": -1}, "$slice": 3}}})


for bidder, amount in [("b:ann", 30), ("b:bo", 50), ("b:cy", 20), ("b:di", 70)]:
    add_bid(db, "listing:1", bidder, amount)
print(db.listings.find_one({"_id": "listing:1"})["topBids"])
ex.check(db, add_bid)

# %% [markdown]
# ## Exercise 2: a cache and a snapshot in another schema
#
# A chat app: each team document keeps a `members` preview, `[{userId, name}, ...]` (up to five members, a
# display cache that should show current names); each message keeps `authorSnapshot: {name}`, the name as it
# was when the message was sent. Write `rename_member(db, user_id, new_name)`: rename the user, and every team
# preview entry for them, in **two writes however many teams list them**, and leave the messages alone. The
# checker runs it on teams of its own, where the user sits at a different position in each preview.

# %%
ex2 = labkit.exercises.get("06-rename-member")
ex2

# %% tags=["solution"]
def rename_member(db, user_id, new_name):
    db.users.update_one({"_id": user_id}, {"$set": {"name": new_name}})
    db.teams.update_many({"members.userId": user_id}, {"$set": {"members.$.name": new_name}})


ex2.check(db, rename_member)

# %% [markdown]
# ## Summary
#
# - Copy only what a hot read needs, and keep the copy bounded (`$slice`).
# - Decide what each copy *means*: canonical (don't copy, resolve), cache (deadline + rebuild), snapshot (never rewrite).
# - Give each copy one owner: the write path, a rebuild job, or a worker that follows a change stream.
# - A rename's cost is the number of copies the policy says must follow it.
# - The ledger turns that into per-second totals: a copy pays while the reads it saves outnumber the writes it adds.
#
# **Next:** 07 · enforce the document shape with validation.

# %% [markdown] tags=["sources"]
# ## Sources
#
# 1. [MongoDB manual: Handle Duplicate Data](https://www.mongodb.com/docs/manual/data-modeling/handle-duplicate-data/)
# 2. [MongoDB manual: Data Consistency](https://www.mongodb.com/docs/manual/data-modeling/data-consistency/)
# 3. [MongoDB manual: \$push](https://www.mongodb.com/docs/manual/reference/operator/update/push/)
# 4. [MongoDB manual: \$position](https://www.mongodb.com/docs/manual/reference/operator/update/position/)
# 5. [MongoDB manual: \$slice (update modifier)](https://www.mongodb.com/docs/manual/reference/operator/update/slice/)
# 6. [MongoDB manual: \$elemMatch (query)](https://www.mongodb.com/docs/manual/reference/operator/query/elemMatch/)
# 7. [MongoDB manual: \$ (positional update operator)](https://www.mongodb.com/docs/manual/reference/operator/update/positional/)
# 8. [MongoDB manual: \$lookup (aggregation stage)](https://www.mongodb.com/docs/manual/reference/operator/aggregation/lookup/)
# 9. [MongoDB manual: Change Streams](https://www.mongodb.com/docs/manual/changeStreams/)
# 10. [MongoDB manual: Change Events](https://www.mongodb.com/docs/manual/reference/change-events/)

# %% [markdown] tags=["navigation"]
# [← 05 · Two-way references and keeping copies consistent](05_two_way.ipynb) · [Contents](../CONTENTS.md) · [07 · Enforce the shape with schema validation →](07_validation.ipynb)
