# ---
# jupyter:
#   jupytext:
#     formats: ipynb,src//py:percent
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Schema Lab · live demo: cardinality and query plans
#
# Two questions, answered by moving a slider. Every number is computed on the spot by the engine the notebook
# runs on (the embedded engine unless `MONGODB_URI` points at a server).

# %%
import bson

import labkit
from labkit.plots import bars_against_limit
from labkit.sizes import MAX_BSON_SIZE, doc_size_with_array, max_elements
from labkit.widgets import explorer

db = labkit.fresh_db("demo_dashboard")
labkit.seed.social(db, users=2000, seed=2, celebrity_posts=5000, indexes=False, progress=False)
sam = db.users.find_one({"_id": "user:112"})

# %% [markdown]
# ## 1 · Parent-side arrays grow with the busiest author
#
# Keep every post id on the user, or every post embedded, or reference the user from each post.
# The **takeaway** line under the numbers says what to point at; it is computed from the same numbers.

# %%
def embedded_post(i):
    return {"_id": f"post:{i}", "title": "need a break?", "location": "Sacramento", "createdAt": sam["createdAt"]}


def post_id(i):
    return f"post:{i}"


WALL_EMBEDDED = max_elements(sam, "posts", embedded_post) + 1  # the first post count past 16 MiB
WALL_IDS = max_elements(sam, "postIds", post_id) + 1


def growth_takeaway(posts, embedded, ids, child):
    if embedded > MAX_BSON_SIZE:
        return (f"at {posts:,} embedded posts the user document is {embedded / 2**20:.1f} MiB, past the 16 MiB "
                f"limit (crossed at {WALL_EMBEDDED:,} posts): every write to this user fails")
    if ids > MAX_BSON_SIZE:
        return f"even ids alone cross 16 MiB at {WALL_IDS:,} posts; only child references stay at {child:,} bytes"
    return (f"at {posts:,} posts embedding uses {embedded / MAX_BSON_SIZE:.1%} of 16 MiB (crossed at "
            f"{WALL_EMBEDDED:,} posts); child references stay at {child:,} bytes whatever the count")


def parent_growth(posts):
    ids = doc_size_with_array(sam, "postIds", posts, post_id)
    embedded = doc_size_with_array(sam, "posts", posts, embedded_post)
    child = len(bson.encode(sam))
    return {"posts by the author": posts, "user with postIds (bytes)": ids,
            "user with embedded posts (bytes)": embedded, "user, child references (bytes)": child,
            "takeaway": growth_takeaway(posts, embedded, ids, child)}


explorer(parent_growth, sliders={"posts": (0, 200_000, 20_000, 1_000)}, title="Posts by the busiest author",
         draw=lambda ax, v, r: bars_against_limit(ax, ["postIds", "embedded", "child ref"], list(r.values())[1:4]))

# %% [markdown]
# ## 2 · The feed query's plan, with and without the right index
#
# `find({authorId}).sort({createdAt: -1, _id: -1}).limit(20)` for the author ranked *r* by number of posts
# (rank 1 is the busiest).

# %%
copies = {"no index": None, "{authorId: 1}": [("authorId", 1)],
          "{authorId: 1, createdAt: -1, _id: -1}": [("authorId", 1), ("createdAt", -1), ("_id", -1)]}
posts = list(db.posts.find())
for i, keys in enumerate(copies.values()):
    db[f"posts_{i}"].insert_many(posts)
    if keys:
        db[f"posts_{i}"].create_index(keys)
counts = {d["_id"]: d["count"] for d in db.posts.aggregate([{"$sortByCount": "$authorId"}])}
ranked = sorted(counts, key=lambda a: (-counts[a], a))


def plan_takeaway(plan, total):
    docs, keys, returned = plan["docsExamined"], plan["keysExamined"], plan["nReturned"]
    if not keys:
        return (f"no index: all {docs:,} posts of the collection are read to return {returned}"
                + (", then sorted in memory" if plan["blockingSort"] else ""))
    if plan["blockingSort"]:
        return (f"the index finds the author's {total:,} posts but all {docs:,} are fetched and sorted in memory "
                f"to return {returned}: cost grows with the author")
    return (f"the index returns the newest {returned} in order: {keys} keys and {docs} documents examined, "
            f"whether the author has {total:,} posts or a million")


def feed_plan(rank, index):
    author = ranked[rank - 1]
    coll = db[f"posts_{list(copies).index(index)}"]
    plan = labkit.plan_summary(coll.find({"authorId": author}).sort([("createdAt", -1), ("_id", -1)]).limit(20).explain())
    return {"author": author, "author's posts": counts[author], "plan": plan["stages"],
            "keys examined": plan["keysExamined"], "documents examined": plan["docsExamined"],
            "returned": plan["nReturned"], "blocking sort": plan["blockingSort"],
            "takeaway": plan_takeaway(plan, counts[author])}


explorer(feed_plan, sliders={"rank": (1, 200, 1), "index": list(copies)}, title="Feed query plan")
