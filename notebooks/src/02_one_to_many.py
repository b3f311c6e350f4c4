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
#     title: "One-to-many: reference the parent from the child"
#     section: Relationships
#     exercise_minutes: 15
#     demo: >-
#       Explain the feed query before and after creating {authorId: 1, createdAt: -1, _id: -1}: COLLSCAN + SORT over every post becomes 20 keys, 20 documents, no SORT. Then flip the ESR dropdown.
#     mistakes:
#     - "Indexing {customerId: 1, placedAt: -1, _id: 1} for a sort on placedAt -1 with _id -1 (the directions must all match the sort or all be reversed)."
#     - "Leaving `_id` out of the index when the sort breaks ties on it: the server sorts in memory again."
#     - "Making the index partial on a field the query never filters on: the planner cannot use it."
#     - "Adding a separate {customerId: 1} (or {authorId: 1}) index next to the compound one that starts with it."
#     - "Putting a range field before the sort field (E R S), which brings back the blocking SORT."
#     sources:
#     - title: "MongoDB manual: Model One-to-Many Relationships with Document References"
#       url: https://www.mongodb.com/docs/manual/tutorial/model-referenced-one-to-many-relationships-between-documents/
#     - title: "MongoDB manual: MongoDB Limits and Thresholds"
#       url: https://www.mongodb.com/docs/manual/reference/limits/
#     - title: "MongoDB manual: Explain Results"
#       url: https://www.mongodb.com/docs/manual/reference/explain-results/
#     - title: "MongoDB manual: cursor.allowDiskUse()"
#       url: https://www.mongodb.com/docs/manual/reference/method/cursor.allowDiskUse/
#     - title: "MongoDB manual: Compound Indexes"
#       url: https://www.mongodb.com/docs/manual/core/indexes/index-types/index-compound/
#     - title: "MongoDB manual: Use Indexes to Sort Query Results"
#       url: https://www.mongodb.com/docs/manual/tutorial/sort-results-with-indexes/
#     - title: "MongoDB manual: The ESR (Equality, Sort, Range) Guideline"
#       url: https://www.mongodb.com/docs/manual/tutorial/equality-sort-range-guideline/
#     - title: "MongoDB manual: $in"
#       url: https://www.mongodb.com/docs/manual/reference/operator/query/in/
# ---

# %% [markdown]
# # 02 · One-to-many: reference the parent from the child
#
# **You will learn**
# - why a parent-side array of ids (`users.postIds`) still grows without bound;
# - to put the reference on the child (`posts.authorId`) and index it to match the query *and* its sort;
# - to read `explain()`: COLLSCAN vs IXSCAN, keys and documents examined vs returned, blocking SORT;
# - the ESR rule (Equality, Sort, Range) for compound index order.
#
# **Time:** about 30 minutes.

# %%
import bson
import pandas as pd

import labkit
from labkit.sizes import MAX_BSON_SIZE, doc_size_with_array, max_elements

db = labkit.fresh_db("02_one_to_many")
print("engine:", labkit.describe(db.client))

# %% [markdown]
# ## The workload
#
# (The posts as their own documents, each naming its author, is the manual's
# [one-to-many with document references](https://www.mongodb.com/docs/manual/tutorial/model-referenced-one-to-many-relationships-between-documents/).)

# %%
workload = labkit.workload_table([
    ("show an author's newest 20 posts", "read", 2000, "title, location, date; newest first, ties broken by id"),
    ("publish a post", "write", 50, "must not slow down as the author's history grows"),
    ("search posts by location", "read", 5, "posts queried on their own, without the author"),
], rate="per_second")
workload

# %% [markdown]
# The busiest author matters, not the average one. Our generated data gives Sam (`user:112`) a long history.

# %%
summary = labkit.seed.social(db, users=2000, seed=2, celebrity_posts=5000, indexes=False)
summary

# %%
per_author = pd.DataFrame(db.posts.aggregate([{"$sortByCount": "$authorId"}]))
print("authors with posts:", len(per_author))
print("posts by the busiest author:", per_author["count"].max(), f"({per_author.iloc[0]['_id']})")
print("median posts per author:", int(per_author["count"].median()))

# %% [markdown]
# ## The naive design: an array of post ids on the user
#
# `{_id: "user:112", postIds: ["post:234", "post:432", ...]}` looks bounded because ids are small. It is not:
# the array gains an element with every post, and every publish rewrites the user document.

# %%
sam = db.users.find_one({"_id": "user:112"})
sam_posts = [p["_id"] for p in db.posts.find({"authorId": "user:112"}, {"_id": 1})]
with_ids = dict(sam, postIds=sam_posts)
print(f"Sam without ids: {len(bson.encode(sam)):,} bytes")
print(f"Sam with {len(sam_posts):,} post ids: {len(bson.encode(with_ids)):,} bytes")


# %%
def post_id(i):
    return f"post:{i}"


def embedded_post(i):
    return {"_id": post_id(i), "title": "need a break?", "location": "Sacramento",
            "createdAt": pd.Timestamp("2026-10-03T12:00:00").to_pydatetime()}


print(f"post ids until Sam hits 16 MiB:       {max_elements(sam, 'postIds', post_id):,}")
print(f"embedded posts until Sam hits 16 MiB: {max_elements(sam, 'posts', embedded_post):,}")

# %% [markdown]
# Hundreds of thousands of ids fit under the 16 MiB
# [limit](https://www.mongodb.com/docs/manual/reference/limits/), so the wall seems far away. But the cost
# shows up long before the wall: every new post rewrites the whole user document. With the reference on the
# child, publishing inserts one small post and leaves the user alone. (The slider numbers its ids from `post:0`, so at 5,000 posts its document is a few bytes smaller than Sam's
# real one above, whose ids run from `post:1`.)

# %%
from labkit.plots import bars_against_limit
from labkit.widgets import explorer

one_post = len(bson.encode(embedded_post(1) | {"authorId": "user:112"}))


def parent_growth(posts):
    ids = doc_size_with_array(sam, "postIds", posts, post_id)
    embedded = doc_size_with_array(sam, "posts", posts, embedded_post)
    return {
        "posts by the busiest author": posts,
        "user doc with postIds (bytes)": ids,
        "user doc with embedded posts (bytes)": embedded,
        "user doc, child references (bytes)": len(bson.encode(sam)),
        "bytes rewritten per new post: postIds": ids,
        "bytes rewritten per new post: child reference": one_post,
        "embedded posts fit in 16 MiB": embedded <= MAX_BSON_SIZE,
    }


def draw_growth(ax, values, r):
    bars_against_limit(ax, ["postIds", "embedded", "child ref"],
                       [r["user doc with postIds (bytes)"], r["user doc with embedded posts (bytes)"],
                        r["user doc, child references (bytes)"]], title="user document size")


growth = explorer(parent_growth, sliders={"posts": (0, 400_000, 5_000, 1_000)},
                  title="Busiest author's posts", draw=draw_growth)
growth

# %% [markdown]
# ## The better design: `posts.authorId`
#
# Each post names its author. The generated posts already look like that:

# %%
db.posts.find_one({"_id": "post:234"})

# %% [markdown]
# The feed query asks for one author's posts, newest first, 20 at a time. Its `explain` (the plan columns are
# described in lesson 01 and in [explain results](https://www.mongodb.com/docs/manual/reference/explain-results/))
# shows that without an index the server reads every post (`COLLSCAN`, a collection scan) and sorts Sam's in memory: a **blocking SORT**, so called
# because it must read every matching post before it can return the first one. A sort that needs more than
# 100 megabytes of memory writes temporary files to disk (by default since MongoDB 6.0,
# [allowDiskUse](https://www.mongodb.com/docs/manual/reference/method/cursor.allowDiskUse/)):

# %%
feed_filter = {"authorId": "user:112"}
feed_sort = [("createdAt", -1), ("_id", -1)]
projection = {"title": 1, "location": 1, "createdAt": 1}


def feed_plan(**kwargs):
    cursor = db.posts.find(feed_filter, projection, **kwargs).sort(feed_sort).limit(20)
    return labkit.show_plan(cursor.explain())


no_index = feed_plan()
no_index

# %% [markdown]
# Now the compound index from the source material: equality on `authorId`, then the sort fields in the sort's
# order, with `_id` as the tie-breaker.
#
# **Predict first.** Sam has thousands of posts. With this index, how many index keys will the feed query
# examine? Record your guess with `ex_keys.predict(...)` (as in lesson 00), then run the measurement.

# %%
ex_keys = labkit.exercises.get("02-predict-feed-keys")
ex_keys

# %% tags=["solution"]
ex_keys.predict(20)

# %% tags=["reveal"]
db.posts.create_index({"authorId": 1, "createdAt": -1, "_id": -1})
with_index = feed_plan()
feed_keys = labkit.plan_summary(db.posts.find(feed_filter, projection).sort(feed_sort).limit(20).explain())["keysExamined"]
print("keys examined with the index:", feed_keys)
pd.concat([no_index, with_index], keys=["no index", "authorId_1_createdAt_-1__id_-1"])

# %% tags=["reveal"]
ex_keys.check(feed_keys)

# %% [markdown]
# The index hands back Sam's posts already in feed order, so the plan reads exactly 20 keys and 20 posts and
# has no SORT stage: when the index order (or its exact reverse) matches the sort, no sort is needed
# ([sort with indexes](https://www.mongodb.com/docs/manual/tutorial/sort-results-with-indexes/)). The cost no
# longer depends on how many posts exist.
#
# ### No separate `authorId` index needed
#
# `authorId` is the index's first field (its *prefix*), so any query on `authorId` alone can use the same
# index ([compound indexes](https://www.mongodb.com/docs/manual/core/indexes/index-types/index-compound/)):

# %%
labkit.show_plan(db.posts.find({"authorId": "user:234"}).explain())

# %% [markdown]
# ### Posts queried on their own: search by location
#
# The third row of the workload searches posts by place, without their author. As documents of their own,
# posts get an index for that query too. (With the posts embedded in their authors, the same search would be a
# query on `users` matching `posts.location`, returning whole user documents with every post inside.)

# %%
db.posts.create_index({"location": 1, "createdAt": -1, "_id": -1})


def search_location(d):
    return list(d.posts.find({"location": "Sacramento"}, projection).sort(feed_sort).limit(20))


labkit.show_plan(db.posts.find({"location": "Sacramento"}, projection).sort(feed_sort).limit(20).explain())

# %% [markdown]
# ## Field order: the ESR rule
#
# A variation: Sam's posts **not** written in Los Angeles, newest first. `$ne` is a *range* on `location`.
# Pick an index shape and look at keys examined and whether a blocking SORT appears (each shape is forced with
# `hint`, so the comparison does not depend on which index the planner would pick).

# %%
esr_filter = {"authorId": "user:112", "location": {"$ne": "Los Angeles"}}
shapes = {
    "E S   {authorId, createdAt}": [("authorId", 1), ("createdAt", -1)],
    "E S R {authorId, createdAt, location}": [("authorId", 1), ("createdAt", -1), ("location", 1)],
    "E R S {authorId, location, createdAt}": [("authorId", 1), ("location", 1), ("createdAt", -1)],
    "R E S {location, authorId, createdAt}": [("location", 1), ("authorId", 1), ("createdAt", -1)],
}
names = {label: db.posts.create_index(keys) for label, keys in shapes.items()}


def esr(index):
    cursor = db.posts.find(esr_filter, projection).sort("createdAt", -1).limit(20).hint(names[index])
    plan = labkit.plan_summary(cursor.explain())
    return {"index": names[index], "keys examined": plan["keysExamined"], "docs examined": plan["docsExamined"],
            "returned": plan["nReturned"], "blocking SORT": plan["blockingSort"]}


esr_explorer = explorer(esr, sliders={"index": list(shapes)}, title="ESR")
esr_explorer

# %%
pd.DataFrame([esr(label) for label in shapes]).set_index("index")

# %% [markdown]
# Equality first, then the sort, then the range: the sort comes straight from the index and the range is
# checked on index keys, so only the 20 returned posts are fetched. Putting the range before the sort forces a
# blocking SORT over every matching post
# ([the ESR guideline](https://www.mongodb.com/docs/manual/tutorial/equality-sort-range-guideline/)). The four
# experiment indexes go again, so the rest of the lesson runs with the feed and location indexes only:

# %%
for index_name in names.values():
    db.posts.drop_index(index_name)
sorted(db.posts.index_information())

# %% [markdown]
# ## The ledger: the two designs at the workload's rates
#
# `labkit.Ledger` measures each design's operations from the commands they send (round trips, documents and
# keys examined from their explain, bytes returned, documents written) and multiplies by the rates of the
# workload table. The array design keeps Sam's post ids, oldest first, in his user document (a copy of it here);
# its feed reads the last 20 ids, then those posts with [`$in`](https://www.mongodb.com/docs/manual/reference/operator/query/in/),
# sorted newest first like the other feed (without the sort the server returns them in `_id` index order, which
# is not the feed's order). Searching by location reads only `posts`, so it costs the same in both designs.

# %%
db.users_with_ids.insert_one(dict(sam, postIds=[p["_id"] for p in db.posts.find({"authorId": "user:112"}, {"_id": 1})
                                                 .sort([("createdAt", 1), ("_id", 1)])]))
new_post = {"authorId": "user:112", "title": "ledger post", "location": "Oakland",
            "createdAt": pd.Timestamp("2026-12-01T09:00:00").to_pydatetime()}


def feed_array(d):
    ids = d.users_with_ids.find_one({"_id": "user:112"}, {"postIds": {"$slice": -20}})["postIds"]
    return list(d.posts.find({"_id": {"$in": ids}}, projection).sort(feed_sort))


def feed_child(d):
    return list(d.posts.find(feed_filter, projection).sort(feed_sort).limit(20))


def publish_array(d):
    d.posts.insert_one(dict(new_post, _id="post:ledger-array"))
    d.users_with_ids.update_one({"_id": "user:112"}, {"$push": {"postIds": "post:ledger-array"}})


def publish_child(d):
    d.posts.insert_one(dict(new_post, _id="post:ledger-child"))


ledger = labkit.Ledger({"show an author's newest 20 posts": 2000, "publish a post": 50,
                        "search posts by location": 5})
for design, feed, publish in [("postIds on the user", feed_array, publish_array),
                              ("child reference", feed_child, publish_child)]:
    ledger.measure(design, "show an author's newest 20 posts", db, feed)
    ledger.measure(design, "publish a post", db, publish)
    ledger.measure(design, "search posts by location", db, search_location)
ledger.per_operation()

# %%
ledger.totals()

# %%
per_op = ledger.per_operation()
worse_everywhere = all((per_op.loc["postIds on the user"][m] >= per_op.loc["child reference"][m]).all()
                       for m in ("round trips", "docs examined", "docs written"))
print("the array design costs at least as much on every operation and metric:", worse_everywhere)

# %% [markdown]
# The array costs a second round trip on every feed, a sort of the 20 posts it fetched, and a second write on
# every publish, so there is no break-even: at any rates (move them below) the child reference does less work. And the user document it
# rewrites keeps growing with each post, which the ledger's per-operation counts do not even show.

# %%
ledger_widget = ledger.widget("round trips", max_rate=4000)
ledger_widget

# %% [markdown]
# ## Exercise 1: the "my orders" page
#
# A changed scenario, from lesson 00's store: each order references its customer (`customerId`), and the
# "my orders" page shows one customer's **20 newest orders**, ties broken by `_id`:
# `orders.find({"customerId": c}).sort([("placedAt", -1), ("_id", -1)]).limit(20)`. `practice.orders` has no
# index but `_id`. Create the index that serves the page **without a blocking SORT**, reading at most 20 keys.
# `ex.check(practice.orders)` tries your indexes on orders of its own and reads the plan.

# %%
import datetime as dt
import random

from bson.decimal128 import Decimal128

practice = labkit.fresh_db("02_practice")
rng = random.Random(2)
practice.orders.insert_many([
    {"_id": f"order:{i:04d}", "customerId": f"cust:{rng.randrange(40)}", "status": rng.choice(["open", "shipped"]),
     "placedAt": dt.datetime(2026, 3, 1) + dt.timedelta(hours=rng.randrange(2000)),
     "total": Decimal128(f"{rng.randint(300, 20000) / 100:.2f}")} for i in range(2000)])
ex = labkit.exercises.get("02-orders-index")
ex

# %% tags=["solution"]
practice.orders.create_index({"customerId": 1, "placedAt": -1, "_id": -1})
ex.check(practice.orders)

# %% [markdown]
# ## Exercise: comments under a post
#
# A changed scenario. Each comment references its post (`postId`) and carries `likes` and `createdAt`. The
# post page shows **the first 20 comments with at least 10 likes, oldest first**:
# `comments.find({"postId": ..., "likes": {"$gte": 10}}).sort("createdAt", 1).limit(20)`.
# Create the index that serves it with no blocking SORT and without fetching a single comment only to throw it
# away. `ex2.check(practice.comments)` judges your indexes on comments of its own.

# %%
from labkit.exercises.observe import seed_comments

seed_comments(practice, {"post:9": 1500, "post:10": 600, "post:11": 300})
ex2 = labkit.exercises.get("02-comment-index")
ex2

# %% tags=["solution"]
practice.comments.create_index({"postId": 1, "createdAt": 1, "likes": 1})
ex2.check(practice.comments)

# %% [markdown]
# ## Summary
#
# - An id array on the parent is still unbounded, and every child rewrites the parent.
# - Reference the parent from the child, and index the child for the query *and* its sort order.
# - Read plans: IXSCAN with keys ≈ returned and no SORT stage is the goal; COLLSCAN or a SORT stage over many
#   documents is the warning.
# - Order compound indexes Equality, Sort, Range: the range last lets the index check it on its keys.
#
# **Next:** 03 · resolving references with separate queries or `$lookup`.

# %% [markdown] tags=["sources"]
# ## Sources
#
# 1. [MongoDB manual: Model One-to-Many Relationships with Document References](https://www.mongodb.com/docs/manual/tutorial/model-referenced-one-to-many-relationships-between-documents/)
# 2. [MongoDB manual: MongoDB Limits and Thresholds](https://www.mongodb.com/docs/manual/reference/limits/)
# 3. [MongoDB manual: Explain Results](https://www.mongodb.com/docs/manual/reference/explain-results/)
# 4. [MongoDB manual: cursor.allowDiskUse()](https://www.mongodb.com/docs/manual/reference/method/cursor.allowDiskUse/)
# 5. [MongoDB manual: Compound Indexes](https://www.mongodb.com/docs/manual/core/indexes/index-types/index-compound/)
# 6. [MongoDB manual: Use Indexes to Sort Query Results](https://www.mongodb.com/docs/manual/tutorial/sort-results-with-indexes/)
# 7. [MongoDB manual: The ESR (Equality, Sort, Range) Guideline](https://www.mongodb.com/docs/manual/tutorial/equality-sort-range-guideline/)
# 8. [MongoDB manual: \$in](https://www.mongodb.com/docs/manual/reference/operator/query/in/)

# %% [markdown] tags=["navigation"]
# [← 01 · Embed one-to-few: roles inside the user](01_embed_one_to_few.ipynb) · [Contents](../CONTENTS.md) · [03 · Resolve references: separate queries or \$lookup →](03_lookup.ipynb)
