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
#     exercise_minutes: 10
#     title: "Outlier: embed for the common case, overflow for the viral post"
#     section: Patterns
#     demo: "Drag virality to 300,000 comments: the fully embedded post crosses 16 MiB while the outlier design's post stays at a few KiB."
#     mistakes: ["designing every post around the one viral post", "capping the embedded array but dropping the items that do not fit", "forgetting the overflow flag, so readers never look in the overflow collection", "checking the array's length in Python before pushing, so two writes at once overfill it", "splitting a move into separate writes in an order where a crash loses, hides or doubles an item"]
#     sources:
#     - title: "MongoDB manual: Group Data with the Outlier Pattern"
#       url: https://www.mongodb.com/docs/manual/data-modeling/design-patterns/group-data/outlier-pattern/
#     - title: "MongoDB manual: $push (with $each, $position and $slice)"
#       url: https://www.mongodb.com/docs/manual/reference/operator/update/push/
#     - title: "MongoDB manual: $collStats (aggregation stage)"
#       url: https://www.mongodb.com/docs/manual/reference/operator/aggregation/collStats/
#     - title: "mongodb/mongo jstests/core/query/add_skip_stage_before_fetch.js (SKIP placed below FETCH)"
#       url: https://github.com/mongodb/mongo/blob/v8.0/jstests/core/query/add_skip_stage_before_fetch.js
#     - title: "MongoDB manual: Transactions"
#       url: https://www.mongodb.com/docs/manual/core/transactions/
#     - title: "MongoDB manual: 16 MiB BSON document size limit"
#       url: https://www.mongodb.com/docs/manual/reference/limits/
# ---

# %% [markdown]
# # 11 · Outlier: embed for the common case, overflow for the viral post
#
# **You will learn**
# - why one viral post should not dictate the schema of every post;
# - to embed up to N comments, move the rest to an overflow collection and mark the post with `hasOverflow`;
# - to measure both read paths (documents read, bytes, round trips) for a normal and a viral post;
# - how the threshold N trades the main document's size against extra queries.
#
# **Time:** about 35 minutes.

# %%
import datetime as dt
import math
import random

import bson
import pandas as pd

import labkit
from labkit.sizes import MAX_BSON_SIZE, doc_size_with_array, max_elements

db = labkit.fresh_db("11_outlier")
N = 20  # comments embedded per post
VIRAL = 50_000  # comments on the viral post
BASE = dt.datetime(2026, 10, 1)
rng = random.Random(11)


def comment(post_no, i):
    """The i-th comment (0 = oldest) of a post: fixed shape, deterministic content."""
    return {"userId": f"user:{(post_no * 7919 + i) % 10_000:04d}", "text": TEXTS[(post_no + i) % len(TEXTS)],
            "createdAt": BASE + dt.timedelta(minutes=post_no, seconds=7 * i)}


TEXTS = ["Great post!", "Amazing!", "Thanks for sharing", "So true", "Love this"]
counts = [min(int(rng.expovariate(1 / 5)), 15) for _ in range(199)]  # most posts: a handful of comments
print("normal posts:", len(counts), "| comments on them:", sum(counts), "| most on one:", max(counts),
      "| viral post:", f"{VIRAL:,}")

# %% [markdown]
# ## The workload

# %%
labkit.workload_table([
    ("show a post with its newest comments", "read", "2,000/s", "title, comment count, up to 20 newest comments"),
    ("\"more comments\" on a post", "read", "20/s, mostly on viral posts", "the next 20, newest first"),
    ("add a comment", "write", "50/s, bursty on viral posts", "cheap even on the viral post; none lost"),
], rate="rate (assumed)")

# %% [markdown]
# Almost all posts have a handful of comments; one has 50,000. That one post is the **outlier**
# ([manual: outlier pattern](https://www.mongodb.com/docs/manual/data-modeling/design-patterns/group-data/outlier-pattern/)).

# %% [markdown]
# ## The naive design: embed every comment
#
# Embedding is ideal for the typical post: one read shows it all. Build that design for all 200 posts, including
# the viral one with all 50,000 comments inside it, and read the sizes from the
# [`$collStats`](https://www.mongodb.com/docs/manual/reference/operator/aggregation/collStats/) stage:

# %%
def embedded_post(no, n):
    return {"_id": f"post:{no}", "title": f"Post {no}", "commentCount": n,
            "comments": [comment(no, i) for i in reversed(range(n))]}  # newest first


db.posts_embedded.insert_many([embedded_post(no, n) for no, n in enumerate(counts, start=1)])
db.posts_embedded.insert_one(embedded_post(200, VIRAL) | {"title": "This post went viral"})


def read_cost(coll, post_id):
    """One read of a post by _id: round trips, keys and documents measured from the run, and the post's bytes."""
    run = labkit.ledger.measure(coll.database, lambda d: d[coll.name].find_one({"_id": post_id}))
    doc = coll.find_one({"_id": post_id})
    return {"round trips": run.round_trips, "index keys examined": run.keys_examined,
            "documents read": run.docs_examined, "bytes read": len(bson.encode(doc))}


def storage(name):
    """count, size and avgObjSize of a collection, from `$collStats` (the collStats command is deprecated)."""
    s = next(db[name].aggregate([{"$collStats": {"storageStats": {}}}]))["storageStats"]
    return {k: s[k] for k in ("count", "size", "avgObjSize")}


s = storage("posts_embedded")
print(f"posts: {s['count']}, total {s['size']:,} bytes, average {s['avgObjSize']:,} bytes per post")
pd.DataFrame({"normal post (post:1)": read_cost(db.posts_embedded, "post:1"),
              "viral post (post:200)": read_cost(db.posts_embedded, "post:200")})

# %% [markdown]
# Most posts are a few hundred bytes. The viral one is megabytes: every view of it transfers all 50,000
# comments to show 20, and every new comment is an update of that multi-megabyte document, which the server
# has to hold in its cache to change. It still fits under the 16 MiB document limit
# ([manual: limits](https://www.mongodb.com/docs/manual/reference/limits/)), but not for long (estimated from
# `bson.encode` sizes, each comment the size of the viral post's first):

# %%
viral_base = {"_id": "post:200", "title": "This post went viral", "commentCount": VIRAL, "comments": []}
fits = max_elements(viral_base, "comments", lambda i: comment(200, 0))
print(f"estimated: the viral post hits 16 MiB at {fits:,} embedded comments")

# %% [markdown]
# ## The better design: the outlier pattern
#
# Keep the design that suits 199 posts out of 200, and treat the exception separately:
#
# - each post embeds at most **N = 20** comments, the newest first, and keeps `commentCount`;
# - comments pushed out of the embedded array go to an **overflow** collection `comments`, one document each with
#   `postId`, indexed `{postId: 1, createdAt: -1}`;
# - `hasOverflow: true` tells the application that older comments live elsewhere. Normal posts say `false`, so
#   their page never queries `comments`.

# %%
def outlier_post(no, n):
    newest = [comment(no, i) for i in reversed(range(max(0, n - N), n))]
    return {"_id": f"post:{no}", "title": f"Post {no}", "commentCount": n, "comments": newest,
            "hasOverflow": n > N}


db.posts.insert_many([outlier_post(no, n) for no, n in enumerate(counts, start=1)])
db.posts.insert_one(outlier_post(200, VIRAL) | {"title": "This post went viral"})
db.comments.insert_many([dict(comment(200, i), _id=f"comment:200:{i:05d}", postId="post:200")
                         for i in range(VIRAL - N)])
db.comments.create_index([("postId", 1), ("createdAt", -1)])
pd.DataFrame({name: storage(name) for name in ("posts", "comments")})

# %%
db.posts.count_documents({"hasOverflow": True}), db.posts.find_one({"_id": "post:200"}, {"comments": 0})

# %% [markdown]
# ## The read path
#
# Page 1 is always the post document alone. Later pages exist only for posts with `hasOverflow`; they come
# from the overflow collection, newest first (page 2 starts right after the 20 embedded comments). The source's
# `getComments` reads even page 1 of a viral post from the overflow collection; serving it from the embedded
# comments saves that query on the page everybody sees.

# %%
def get_comments(post_id, page=1):
    """Return (comments, cost) for one page of 20."""
    post = db.posts.find_one({"_id": post_id})
    cost = read_cost(db.posts, post_id) | {"keys examined in comments": 0}
    if page == 1 or not post["hasOverflow"]:
        return (post["comments"] if page == 1 else []), cost
    cursor = (db.comments.find({"postId": post_id}, {"_id": 0, "postId": 0})
              .sort("createdAt", -1).skip((page - 2) * 20).limit(20))
    stats = cursor.explain()["executionStats"]
    page_docs = list(cursor.clone())
    cost["round trips"] += 1
    cost["documents read"] += stats["totalDocsExamined"]
    cost["index keys examined"] += stats["totalKeysExamined"]
    cost["keys examined in comments"] = stats["totalKeysExamined"]
    cost["bytes read"] += sum(len(bson.encode(d)) for d in page_docs)
    return page_docs, cost


# %% [markdown]
# `skip(n)` does not jump to the n-th entry: the server walks the first n entries of the index in order and
# drops them. **Predict first.** Page 50 of the viral post: how many index keys does its query on `comments`
# examine? Record your number with `predict_deep.predict(...)` (as in lesson 00), then run the measuring cell.

# %%
predict_deep = labkit.exercises.get("11-predict-deep-page-keys")
predict_deep

# %% tags=["solution"]
predict_deep.predict(48 * 20 + 20)

# %% tags=["reveal"]
paths = {"normal post, page 1": get_comments("post:1")[1],
         "viral post, page 1": get_comments("post:200")[1],
         "viral post, page 2": get_comments("post:200", 2)[1],
         "viral post, page 50": get_comments("post:200", 50)[1]}
pd.DataFrame(paths)

# %% tags=["reveal"]
predict_deep.check(paths["viral post, page 50"]["keys examined in comments"])

# %% [markdown]
# Side by side with the naive design for the page everybody sees:

# %%
compare = pd.DataFrame({
    "naive: normal post": read_cost(db.posts_embedded, "post:1"),
    "naive: viral post": read_cost(db.posts_embedded, "post:200"),
    "outlier: normal post": {k: v for k, v in paths["normal post, page 1"].items() if k != "keys examined in comments"},
    "outlier: viral post": {k: v for k, v in paths["viral post, page 1"].items() if k != "keys examined in comments"},
})
compare

# %% [markdown]
# The normal post costs what it did: one round trip, its bytes plus the few of the `hasOverflow` flag. The
# viral post's page drops from megabytes to 1,524 bytes, a post with 20 comments. Deep pages cost more index
# work: `skip` walks the index past every earlier page (compare "keys examined in comments" for page 2 and page 50 in
# the first table). They do not cost more documents: the index `{postId: 1, createdAt: -1}` answers the whole
# filter, so the server places the SKIP stage *below* the FETCH and fetches only the 20 comments it returns,
# plus the post ("documents read" is the same for page 2 and page 50;
# [mongo jstest: add_skip_stage_before_fetch.js](https://github.com/mongodb/mongo/blob/v8.0/jstests/core/query/add_skip_stage_before_fetch.js)).
# The plan shows the order (read it from the right: the IXSCAN runs first; `PROJECTION_SIMPLE` applies the
# query's projection, dropping `_id` and `postId`):

# %%
plan = (db.comments.find({"postId": "post:200"}, {"_id": 0, "postId": 0})
        .sort("createdAt", -1).skip(48 * 20).limit(20).explain())
labkit.plan_summary(plan)["stages"]

# %% [markdown]
# A range on `createdAt` from the last comment shown would avoid the walk through earlier keys too.
#
# The newest comments on page 1 and page 2 continue each other without a gap:

# %%
first, _ = get_comments("post:200")
second, _ = get_comments("post:200", 2)
print("page 1 oldest:", first[-1]["createdAt"], "| page 2 newest:", second[0]["createdAt"])
print("strictly older:", second[0]["createdAt"] < first[-1]["createdAt"])

# %% [markdown]
# ## The write path
#
# Adding a comment to a post with fewer than N embedded comments is one update (`$push` + `$inc`). When the
# array is already full, the new comment goes to the front and the oldest embedded comment falls off the end
# ([`$push`](https://www.mongodb.com/docs/manual/reference/operator/update/push/) with `$each`, `$position: 0`,
# `$slice: N`). To learn which comment fell off, read the post as it was *before* the update
# (`find_one_and_update` with `ReturnDocument.BEFORE`), then insert that comment into `comments` and set
# `hasOverflow`. Written as separate writes, the fallen-off comment exists nowhere between the first and the
# second: if the process stops there, it is lost. `post:201` has exactly 20 comments; the process "crashes"
# right after the first write of its 21st:

# %%
from pymongo import ReturnDocument


class Crash(Exception):
    """The application process stopped here."""


def add_comment_two_writes(post_id, new, crash_after_first_write=False, session=None):
    before = db.posts.find_one_and_update(
        {"_id": post_id},
        {"$push": {"comments": {"$each": [new], "$position": 0, "$slice": N}}, "$inc": {"commentCount": 1}},
        return_document=ReturnDocument.BEFORE, session=session)
    if crash_after_first_write:
        raise Crash("the process stopped after the first write")
    if len(before["comments"]) == N:  # the oldest embedded comment fell off the end
        db.comments.insert_one(dict(before["comments"][-1], postId=post_id), session=session)
        db.posts.update_one({"_id": post_id}, {"$set": {"hasOverflow": True}}, session=session)


def comments_kept(post_id):
    post = db.posts.find_one({"_id": post_id})
    return {"commentCount": post["commentCount"], "embedded": len(post["comments"]),
            "in the overflow collection": db.comments.count_documents({"postId": post_id}),
            "comments kept": len(post["comments"]) + db.comments.count_documents({"postId": post_id})}


db.posts.insert_many([outlier_post(no, N) for no in (201, 202)])
try:
    add_comment_two_writes("post:201", comment(201, N), crash_after_first_write=True)
except Crash as exc:
    print("crash:", exc)
pd.Series(comments_kept("post:201"), name="post:201")

# %% [markdown]
# The post counts 21 comments and keeps 20: the oldest one fell off the array and never reached `comments`.
# Lesson 05's remedy applies: make the writes one unit. In a
# [transaction](https://www.mongodb.com/docs/manual/core/transactions/) the three writes commit together or not at
# all; `with_transaction` commits when the function returns, aborts when it raises (and retries transient
# errors). On a real server transactions need a replica set or a sharded cluster (every Atlas cluster is one).
# The same crash on `post:202`, then the retry:

# %%
client = db.client


def add_comment(post_id, new, crash_after_first_write=False):
    with client.start_session() as s:
        s.with_transaction(lambda session: add_comment_two_writes(post_id, new, crash_after_first_write, session))


try:
    add_comment("post:202", comment(202, N), crash_after_first_write=True)
except Crash as exc:
    print("crash:", exc, "(the transaction is aborted)")
after_crash = comments_kept("post:202")
add_comment("post:202", comment(202, N))  # the application retries
pd.DataFrame({"post:202 after the crash": after_crash, "after the retry": comments_kept("post:202")})

# %% [markdown]
# After the crash nothing changed, so the retry adds the comment once and the fallen-off comment lands in
# `comments`. Without transactions (a standalone server), order the writes so that a crash leaves a copy too
# many instead of one too few: copy the oldest embedded comment to `comments` first (keyed by an id of its own,
# so a retry finds it already there), then update the post only if that comment is still its last one.
#
# ## Explore: threshold and virality
#
# Estimated by `bson.encode` arithmetic (each comment the size of the viral post's first one): the size of its
# main document in both designs, how many overflow documents it needs, and what it costs to show page 1 or to read
# every comment (20 per round trip from the overflow collection).

# %%
from labkit.plots import bars_against_limit
from labkit.widgets import explorer

post_shell = {"_id": "post:200", "title": "This post went viral", "commentCount": VIRAL, "comments": [],
              "hasOverflow": True}


def outlier(threshold, virality):
    embedded_all = doc_size_with_array(post_shell, "comments", virality, lambda i: comment(200, 0))
    kept = min(threshold, virality)
    main = doc_size_with_array(post_shell, "comments", kept, lambda i: comment(200, 0))
    overflow = virality - kept
    return {
        "naive: main document (bytes)": embedded_all,
        "naive: under 16 MiB": embedded_all <= MAX_BSON_SIZE,
        "outlier: main document (bytes)": main,
        "outlier: overflow documents": overflow,
        "page 1: round trips (both designs)": 1,
        "page 1: bytes read, naive": embedded_all,
        "page 1: bytes read, outlier": main,
        "all comments: round trips, outlier": 1 + math.ceil(overflow / 20),
    }


def draw(ax, values, r):
    bars_against_limit(ax, ["embed all", f"embed {values['threshold']}"],
                       [r["naive: main document (bytes)"], r["outlier: main document (bytes)"]],
                       title="viral post's main document")


knobs = explorer(outlier, sliders={"threshold": (5, 500, 20, 5), "virality": (0, 400_000, 50_000, 1_000)},
                 title="Outlier threshold", draw=draw)
knobs

# %% [markdown]
# A larger N serves more posts from one document but makes each outlier's main document heavier; N should
# cover the comments a page shows and most posts entirely. Virality only grows the overflow collection,
# never the post.

# %% [markdown]
# ## Exercise · The manual's outlier: book sales
#
# The manual's own example of the outlier pattern tracks book sales: a book keeps its **first 50** buyers in
# `customers_purchased`; when a popular book gets more, the later purchases go to a collection `extra_sales`, one
# document `{book_id, customer}` each, and the book says `has_extras: True`. Write
# `record_purchase(db, book_id, customer)` **without a transaction** (the ordering remedy above, on a new case):
#
# - the array never holds more than 50 buyers, even when two purchases arrive at once;
# - a purchase that does not fit is stored in `extra_sales`, and the book then has `has_extras: True`;
# - if the process stops between your writes and the caller retries, no purchase is hidden from a reader who
#   trusts `has_extras`, and none is recorded twice.
#
# `ex.check(practice, record_purchase)` runs it on books of its own: many purchases of one book, a few of another,
# two at once on a nearly full book, and a stop after each of your writes followed by a retry.

# %%
practice = labkit.fresh_db("11_practice")
ex = labkit.exercises.get("11-outlier-write")
ex


# %% tags=["solution"]
def record_purchase(db, book_id, customer):
    added = db.sales.update_one({"_id": book_id, "customers_purchased.49": {"$exists": False}},
                                {"$push": {"customers_purchased": customer}})
    if added.modified_count == 0:  # the book is full: it is an outlier
        db.sales.update_one({"_id": book_id}, {"$set": {"has_extras": True}})
        db.extra_sales.insert_one({"book_id": book_id, "customer": customer})


ex.check(practice, record_purchase)

# %% [markdown]
# ## Summary
#
# - Design for the common case (a few embedded comments, one read) and handle the outlier separately.
# - Embed up to N items; the rest go to an overflow collection indexed for the overflow query; a flag
#   (`hasOverflow`) keeps normal posts at one round trip.
# - Moving an item from the embedded array to the overflow collection is several writes: make them one unit (a
#   transaction), or order them so that a crash leaves a duplicate, never a loss.
# - Measured here: the viral post's page went from megabytes and the full 50,000 comments to one small document;
#   normal posts still cost one read, a few bytes heavier for the flag.
#
# **Next:** 12 · the computed pattern.

# %% [markdown] tags=["sources"]
# ## Sources
#
# 1. [MongoDB manual: Group Data with the Outlier Pattern](https://www.mongodb.com/docs/manual/data-modeling/design-patterns/group-data/outlier-pattern/)
# 2. [MongoDB manual: \$push (with \$each, \$position and \$slice)](https://www.mongodb.com/docs/manual/reference/operator/update/push/)
# 3. [MongoDB manual: \$collStats (aggregation stage)](https://www.mongodb.com/docs/manual/reference/operator/aggregation/collStats/)
# 4. [mongodb/mongo jstests/core/query/add_skip_stage_before_fetch.js (SKIP placed below FETCH)](https://github.com/mongodb/mongo/blob/v8.0/jstests/core/query/add_skip_stage_before_fetch.js)
# 5. [MongoDB manual: Transactions](https://www.mongodb.com/docs/manual/core/transactions/)
# 6. [MongoDB manual: 16 MiB BSON document size limit](https://www.mongodb.com/docs/manual/reference/limits/)

# %% [markdown] tags=["navigation"]
# [← 10 · Bucket: group time-series readings per sensor and hour](10_bucket.ipynb) · [Contents](../CONTENTS.md) · [12 · Computed: maintain rating statistics on write →](12_computed.ipynb)
