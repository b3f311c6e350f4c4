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
#     exercise_minutes: 15
#     title: "Anti-pattern: bloated documents"
#     section: Anti-patterns
#     demo: "Show avgObjSize next to the bytes the listing returns, then a covered query with totalDocsExamined 0."
#     mistakes: ["Relying on projection to shrink what the server loads", "Splitting by field type instead of by access pattern", "Giving the cold collection new ids instead of sharing _id"]
#     sources:
#     - title: "MongoDB manual: Reduce Bloated Documents"
#       url: https://www.mongodb.com/docs/manual/data-modeling/design-antipatterns/bloated-documents/
#     - title: "MongoDB manual: $collStats (aggregation stage)"
#       url: https://www.mongodb.com/docs/manual/reference/operator/aggregation/collStats/
#     - title: "MongoDB manual: $bsonSize (aggregation)"
#       url: https://www.mongodb.com/docs/manual/reference/operator/aggregation/bsonSize/
#     - title: "MongoDB manual: Query Optimization (covered queries)"
#       url: https://www.mongodb.com/docs/manual/core/query-optimization/
#     - title: "MongoDB manual: Explain Results"
#       url: https://www.mongodb.com/docs/manual/reference/explain-results/
#     - title: "MongoDB manual: GridFS"
#       url: https://www.mongodb.com/docs/manual/core/gridfs/
#     - title: "MongoDB manual: $out (aggregation stage)"
#       url: https://www.mongodb.com/docs/manual/reference/operator/aggregation/out/
# ---

# %% [markdown]
# # 33 · Anti-pattern: bloated documents
#
# **You will learn**
# - to compare `avgObjSize` with the bytes the most frequent query actually needs;
# - why a projection saves network bytes but not cache: the server loads whole documents unless the query is
#   **covered** by an index;
# - to split hot and cold fields into two collections that share `_id`, and migrate to it.
#
# **Time:** about 30 minutes.

# %%
import base64
import random

import bson
import pandas as pd

import labkit

db = labkit.fresh_db("33_bloated_documents")
print("engine:", labkit.describe(db.client))

# %% [markdown]
# A catalogue of 600 products, generated with a fixed seed. Each product carries what the listing page needs
# (name, price, category, rating, thumbnail URL) **and** a long description, a specification sheet, its
# change history and an inline base64 thumbnail.

# %%
rng = random.Random(33)
WORDS = "steel grinder burr espresso quiet compact warranty ceramic adjustable hopper motor".split()


def product(i):
    return {
        "_id": f"product:{i:04d}", "name": f"Grinder {i:04d}", "category": f"cat:{i % 10}",
        "price": round(20 + rng.random() * 480, 2), "rating": round(1 + rng.random() * 4, 1),
        "thumbnailUrl": f"https://img.example/{i:04d}.jpg",
        "description": " ".join(rng.choice(WORDS) for _ in range(600)),
        "specs": {f"spec{k:02d}": f"value {rng.randint(1, 999)}" for k in range(40)},
        "history": [{"version": v, "editor": f"user:{rng.randint(1, 50)}", "note": "price and copy update"}
                    for v in range(30)],
        "thumbnail": base64.b64encode(rng.randbytes(12_000)).decode(),
    }


db.products.insert_many([product(i) for i in range(600)])
print(f"{db.products.count_documents({})} products")

# %% [markdown]
# ## The workload
#
# What the application does, how often, and what each operation needs:

# %%
labkit.workload_table([
    ('list products in a category, by price', 'read', '600/s', 'name, price, rating, thumbnail URL (20 per page)'),
    ('show the full product sheet', 'read', '20/s', 'everything'),
    ('edit the description or specs', 'write', 'a few per day', 'cold fields'),
])
# %% [markdown]
# ## Detect: `avgObjSize` vs what the hot query returns
#
# `$collStats` gives the average document size without reading the documents
# ([manual: `$collStats`](https://www.mongodb.com/docs/manual/reference/operator/aggregation/collStats/)); the
# listing's 20 results are encoded to count the bytes it needs
# ([manual: reduce bloated documents](https://www.mongodb.com/docs/manual/data-modeling/design-antipatterns/bloated-documents/)).

# %%
listing_filter = {"category": "cat:3"}
listing_fields = {"name": 1, "price": 1, "rating": 1, "thumbnailUrl": 1}
db.products.create_index([("category", 1), ("price", 1)])


def storage(collection):
    return next(collection.aggregate([{"$collStats": {"storageStats": {}}}]))["storageStats"]


stats = storage(db.products)
page = list(db.products.find(listing_filter, listing_fields).sort("price", 1).limit(20))
returned = sum(len(bson.encode(d)) for d in page) / len(page)
print(f"avgObjSize:                        {stats['avgObjSize']:>8,} bytes")
print(f"bytes the listing needs per item:  {returned:>8,.0f} bytes")
print(f"share of each document the hot path uses: {returned / stats['avgObjSize']:.1%}")

# %% [markdown]
# Under 1% of each document is what the listing uses. Whether the rest is read anyway is the next question.

# %% [markdown]
# ## Projection does not save the cache
#
# The projection above trimmed what crossed the network. `explain()` shows what the server read to produce
# it: `totalDocsExamined`, and the stages of its plan, where FETCH is the stage that loads whole documents
# ([manual: explain results](https://www.mongodb.com/docs/manual/reference/explain-results/)).

# %%
from labkit.explain import query_cost


# %% [markdown]
# **Predict first.** The listing returns 20 products with 4 fields each. How many whole documents does the
# server examine to produce it? Record a number with `predict_projection.predict(...)`.

# %%
predict_projection = labkit.exercises.get("33-predict-projection-docs")

# %% tags=["solution"]
predict_projection.predict(20)

# %% tags=["reveal"]
projected = query_cost(db.products.find(listing_filter, listing_fields).sort("price", 1).limit(20))
projected

# %% tags=["reveal"]
predict_projection.check(projected["docs examined"])

# %% [markdown]
# A query is **covered** when the index holds every field the filter, sort and projection touch, and `_id` is
# excluded (or in the index). Then the server answers from the index alone: a PROJECTION_COVERED stage and no documents
# examined ([manual: covered queries](https://www.mongodb.com/docs/manual/core/query-optimization/)). Covering
# the whole listing would need an index holding every listed field:

# %%
db.products.create_index([("category", 1), ("price", 1), ("name", 1), ("rating", 1), ("thumbnailUrl", 1)])
covered = query_cost(db.products.find(listing_filter, {"_id": 0, "price": 1, "name": 1, "rating": 1, "thumbnailUrl": 1})
               .sort("price", 1).limit(20))
pd.DataFrame({"projected, not covered": projected, "covered": covered}).T

# %% [markdown]
# Covering works, but it copies the hot fields into a wide index and breaks as soon as the page needs one more
# field. The durable fix is to stop storing cold fields in the hot document. Before changing anything, the
# bytes of the 20 documents the uncovered listing examines (kept for the comparison after the split):

# %%
def examined_bytes(collection):
    """BSON bytes of the listing's 20 documents: the ones its FETCH stage examines."""
    return next(collection.aggregate([{"$match": listing_filter}, {"$sort": {"price": 1}}, {"$limit": 20},
                                      {"$group": {"_id": None, "b": {"$sum": {"$bsonSize": "$$ROOT"}}}}]))["b"]


bloated_listing_bytes = examined_bytes(db.products)
print(f"the listing's 20 documents: {bloated_listing_bytes:,} bytes ($bsonSize)")

# %% [markdown]
# ## The fix: split along access lines
#
# `products` keeps the hot fields; `product_details` holds the cold ones under the **same `_id`**, so the
# product sheet reads both by `_id` with no extra key. The binary thumbnail belongs in object storage (or
# GridFS, [manual: GridFS](https://www.mongodb.com/docs/manual/core/gridfs/)) with only its URL in the document;
# here it moves to the cold collection with the rest.
#
# Migration step 1: copy the cold fields to a new collection on the server with `$project` and `$out` (`$out`
# creates `product_details`; it would replace it if it existed,
# [manual: `$out`](https://www.mongodb.com/docs/manual/reference/operator/aggregation/out/)).

# %%
COLD = ["description", "specs", "history", "thumbnail"]
db.products.aggregate([{"$project": {f: 1 for f in COLD}}, {"$out": "product_details"}])
print("product_details:", db.product_details.count_documents({}))

# %% [markdown]
# Step 2: once reads of the product sheet use both collections, remove the cold fields from `products`.
# The covering index is no longer needed either.

# %%
db.products.update_many({}, {"$unset": {f: "" for f in COLD}})
db.products.drop_index("category_1_price_1_name_1_rating_1_thumbnailUrl_1")
db.products.find_one({"_id": "product:0003"})

# %% [markdown]
# ## Measured: before and after
#
# The FETCH stage examines the listing's 20 documents whole. Their size is measured with `$bsonSize` over the
# same 20 documents (the listing's filter, sort and limit)
# ([manual: `$bsonSize`](https://www.mongodb.com/docs/manual/reference/operator/aggregation/bsonSize/)). Before
# the split this was measured above, on the bloated documents. The cache holds the storage engine's own form of
# these documents, so take the bytes as the size of what the server had to read, not as an exact cache figure.

# %%
after = storage(db.products)
details = storage(db.product_details)
split_plan = query_cost(db.products.find(listing_filter, listing_fields).sort("price", 1).limit(20))
compare = pd.DataFrame({
    "one bloated collection": {"products avgObjSize": stats["avgObjSize"],
                               "docs examined per listing page": projected["docs examined"],
                               "bytes of the documents examined ($bsonSize)": bloated_listing_bytes,
                               "products data size (all docs)": stats["size"],
                               "reads for the product sheet": 1},
    "hot + cold split": {"products avgObjSize": after["avgObjSize"],
                         "docs examined per listing page": split_plan["docs examined"],
                         "bytes of the documents examined ($bsonSize)": examined_bytes(db.products),
                         "products data size (all docs)": after["size"],
                         "reads for the product sheet": 2},
})
compare

# %%
labkit.plots.before_after(compare, "bytes of the documents examined ($bsonSize)",
                           "BSON bytes of the 20 documents a listing page examines")

# %% [markdown]
# The cold collection holds the rest (about the same bytes as before, read only by the sheet at 20/s):

# %%
print(f"product_details avgObjSize: {details['avgObjSize']:,} bytes")

# %% [markdown]
# ## Explore: the working set
#
# The working set is the documents and index pages in frequent use. For a catalogue of a million products, how
# much cache would the listing's documents need, bloated and split? The sizes are the real BSON sizes of a
# product generated with the thumbnail and description sizes you choose; the totals are estimated as one
# million times that size (index pages and the storage engine's overhead not counted).

# %%
from labkit.widgets import explorer

hot_doc = db.products.find_one({"_id": "product:0003"})


def working_set(thumbnail_kib, description_words):
    cold = {"description": " ".join(["espresso"] * description_words), "specs": product(0)["specs"],
            "history": product(0)["history"], "thumbnail": "A" * (thumbnail_kib * 1024)}
    bloated = len(bson.encode(hot_doc | cold))
    hot = len(bson.encode(hot_doc))
    return {"bloated document (bytes)": bloated, "hot document (bytes)": hot,
            "estimated: 1M bloated documents (MiB)": round(bloated * 1_000_000 / 2**20),
            "estimated: 1M split documents (MiB)": round(hot * 1_000_000 / 2**20)}


def draw_ws(ax, values, r):
    ax.barh(["bloated", "split"], [r["estimated: 1M bloated documents (MiB)"],
                                   r["estimated: 1M split documents (MiB)"]], color=["#d62728", "#1f77b4"])
    ax.set_xlabel("MiB of cache for 1M products")


ws = explorer(working_set, sliders={"thumbnail_kib": (0, 200, 16, 4), "description_words": (0, 2000, 600, 50)},
              title="Cold field sizes", draw=draw_ws)
ws

# %% [markdown]
# ## Exercise 1 · User profiles, split when they are saved
#
# Another application: every page header shows the signed-in user's **name, avatar and plan**; the bio, the
# settings and the login history are shown only on the settings page. Write `save_user(db, user)` that stores
# `_id`, `name`, `avatarUrl` and `plan` in `db.users` and every other field in `db.user_details` under the same
# `_id`, losing nothing. `ex_profile.check(practice, save_user)` (with `practice`, the scratch database created here) saves 20 users of its own and inspects both
# collections and the writes.

# %%
practice = labkit.fresh_db("33_practice")
ex_profile = labkit.exercises.get("33-save-profile-split")
ex_profile

# %% tags=["solution"]
HOT = ("name", "avatarUrl", "plan")


def save_user(db, user):
    db.users.insert_one({k: user[k] for k in ("_id", *HOT)})
    db.user_details.insert_one({k: v for k, v in user.items() if k not in HOT})


ex_profile.check(practice, save_user)

# %% [markdown]
# ## Exercise 2 · Split the catalogue's copy
#
# `practice.products` is bloated the same way. Split it: keep `name`, `price`, `category`, `rating` and
# `thumbnailUrl` in `practice.products`, move `description`, `specs`, `history` and `thumbnail` to
# `practice.product_details` under the same `_id`. `ex.check(practice)` compares sizes with `$collStats`
# and checks that no cold data was lost.

# %%
rng = random.Random(333)
practice.products.insert_many([product(i) for i in range(150)])
ex = labkit.exercises.get("33-split-hot-cold").remember(practice, "products")  # the setup, as it is now
ex

# %% tags=["solution"]
practice.products.aggregate([{"$project": {f: 1 for f in COLD}}, {"$out": "product_details"}])
practice.products.update_many({}, {"$unset": {f: "" for f in COLD}})
ex.check(practice)

# %% [markdown]
# ## Summary
#
# - Detect: `avgObjSize` (from `$collStats`) far above the bytes the hot query returns.
# - Projection only trims the network; unless the query is covered (PROJECTION_COVERED, no documents
#   examined), the server loads each document it examines whole.
# - Fix: split by access pattern into two collections sharing `_id`; binaries go to object storage or GridFS.
#
# **Next:** 34 · a massive number of collections.

# %% [markdown] tags=["sources"]
# ## Sources
#
# 1. [MongoDB manual: Reduce Bloated Documents](https://www.mongodb.com/docs/manual/data-modeling/design-antipatterns/bloated-documents/)
# 2. [MongoDB manual: \$collStats (aggregation stage)](https://www.mongodb.com/docs/manual/reference/operator/aggregation/collStats/)
# 3. [MongoDB manual: \$bsonSize (aggregation)](https://www.mongodb.com/docs/manual/reference/operator/aggregation/bsonSize/)
# 4. [MongoDB manual: Query Optimization (covered queries)](https://www.mongodb.com/docs/manual/core/query-optimization/)
# 5. [MongoDB manual: Explain Results](https://www.mongodb.com/docs/manual/reference/explain-results/)
# 6. [MongoDB manual: GridFS](https://www.mongodb.com/docs/manual/core/gridfs/)
# 7. [MongoDB manual: \$out (aggregation stage)](https://www.mongodb.com/docs/manual/reference/operator/aggregation/out/)

# %% [markdown] tags=["navigation"]
# [← 32 · Anti-pattern: unbounded arrays](32_unbounded_arrays.ipynb) · [Contents](../CONTENTS.md) · [34 · Anti-pattern: a massive number of collections →](34_massive_collections.ipynb)
