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
#     title: "Start from the workload"
#     section: Anti-patterns
#     demo: "Rank the store's operations, then measure the two hottest reads (product page, category listing) before and after a rating summary in the product."
#     mistakes: ["Designing from the entity diagram instead of the operation list", "Letting the monthly report shape the schema", "Judging read/write ratios for the whole database instead of per piece of data", "Designing only for the hottest operation and forgetting the second row"]
#     sources:
#     - title: "MongoDB manual: Identify Application Workload"
#       url: https://www.mongodb.com/docs/manual/data-modeling/schema-design-process/identify-workload/
#     - title: "MongoDB manual: Handle Computed Values"
#       url: https://www.mongodb.com/docs/manual/data-modeling/design-patterns/handle-computed-values/
#     - title: "MongoDB manual: $slice (update modifier)"
#       url: https://www.mongodb.com/docs/manual/reference/operator/update/slice/
#     - title: "MongoDB manual: Atomicity and Transactions"
#       url: https://www.mongodb.com/docs/manual/core/write-operations-atomicity/
#     - title: "MongoDB manual: Use Indexes to Sort Query Results"
#       url: https://www.mongodb.com/docs/manual/tutorial/sort-results-with-indexes/
#     - title: "MongoDB manual: Explain Results"
#       url: https://www.mongodb.com/docs/manual/reference/explain-results/
#     - title: "MongoDB manual: cursor.sort() (sort and index use, blocking sort memory)"
#       url: https://www.mongodb.com/docs/manual/reference/method/cursor.sort/
# ---

# %% [markdown]
# # 30 · Start from the workload
#
# **You will learn**
# - to write the operation table first: operation, read or write, frequency, what it needs;
# - to rank operations by frequency and work out the read/write ratio *per piece of data*;
# - to decide which operations may be slow, and to leave them out of the design;
# - to design for the top rows (here the product page *and* the category listing) and measure both designs
#   with `explain()` and a ledger of the workload's rates.
#
# **Time:** about 30 minutes.

# %%
import datetime as dt
import random

import pandas as pd

import labkit

db = labkit.fresh_db("30_workload")
print("engine:", labkit.describe(db.client))

# %% [markdown]
# A small store catalogue, generated with a fixed seed: 300 products in 12 categories, and their reviews. A few
# products are popular and collect many reviews; most collect a handful.

# %%
rng = random.Random(30)
START = dt.datetime(2026, 1, 1)
products, reviews = [], []
for p in range(300):
    products.append({"_id": f"product:{p:03d}", "name": f"Product {p:03d}", "category": f"cat:{p % 12:02d}",
                     "price": round(5 + rng.random() * 195, 2), "inStock": rng.random() > 0.1,
                     "thumbnail": f"https://img.example/{p:03d}.jpg"})
    n = 400 if p == 7 else int(rng.paretovariate(1.3) * 6)
    for r in range(min(n, 400)):
        reviews.append({"_id": f"review:{p:03d}:{r:04d}", "productId": f"product:{p:03d}",
                        "stars": rng.randint(1, 5), "text": "Solid, arrived on time. " * rng.randint(1, 6),
                        "createdAt": START + dt.timedelta(minutes=37 * r + p)})
db.products.insert_many(products)
db.reviews.insert_many(reviews)
print(f"{db.products.count_documents({}):,} products, {db.reviews.count_documents({}):,} reviews")

# %% [markdown]
# ## The operation table
#
# Before any document is drawn, list what the application does
# ([manual: identify the workload](https://www.mongodb.com/docs/manual/data-modeling/schema-design-process/identify-workload/)).
# The frequencies are the store's peak figures; "a few per hour" is counted as three an hour and "once a day"
# as once in the day's seconds (both printed below).

# %%
workload = pd.DataFrame(
    [
        ("Show product page", "read", 2000, "product, price, stock flag, 5 newest reviews, rating average"),
        ("List products in a category, by price", "read", 600, "name, price, thumbnail, rating average"),
        ("Place order", "write", 15, "must not lose data; records prices at time of sale"),
        ("Show my orders", "read", 40, "one customer's order headers, newest first"),
        ("Add review", "write", 2, "review text, rating"),
        ("Change product price", "write", 3 / 3600, "visible on the next page load"),
        ("Monthly sales report", "read", 1 / 86400, "can be slow, can run on a secondary"),
    ],
    columns=["operation", "type", "per_second", "needs"],
)
print(f"a few per hour: 3 / 3,600 s = {3 / 3600:.6f}/s; once a day: 1 / 86,400 s = {1 / 86400:.6f}/s")
workload

# %% [markdown]
# ### Rank by frequency, and mark what may be slow
#
# Design for the top rows. Mark an operation as *may be slow* when it is rare and nobody waits for it: the
# monthly report and, because a price change only has to be visible on the next page load, the price change too.

# %%
ranked = workload.sort_values("per_second", ascending=False).reset_index(drop=True)
ranked["share of all operations"] = (ranked["per_second"] / ranked["per_second"].sum()).map("{:.3%}".format)
ranked["cumulative share"] = (ranked["per_second"].cumsum() / ranked["per_second"].sum()).map("{:.3%}".format)
ranked["design for it"] = ranked.index < 4
ranked["may be slow"] = ranked["operation"].isin(["Monthly sales report", "Change product price"])
ranked[["operation", "per_second", "share of all operations", "cumulative share", "design for it", "may be slow"]]

# %% [markdown]
# The first two rows carry about 98% of the traffic (97.855%, the cumulative share of the second row): the
# product page about 75%, the category listing about 23%. Both must be cheap. The last two rows are rare enough
# that nobody will notice if they cost a thousand times more per call.
#
# ### Read/write ratio per piece of data
#
# A database-wide read/write ratio hides what matters. Each operation touches some pieces of data; what we
# want is, for each piece, how often it is read compared with how often it is written.

# %%
touches = {
    "Show product page": ["product", "reviews", "rating"],
    "List products in a category, by price": ["product", "rating"],
    "Place order": ["orders", "product"],
    "Show my orders": ["orders"],
    "Add review": ["reviews", "rating"],
    "Change product price": ["product"],
    "Monthly sales report": ["orders"],
}
rows = []
for _, op in workload.iterrows():
    for piece in touches[op["operation"]]:
        # placing an order only reads the product (its price); it writes the order
        kind = "read" if (op["operation"] == "Place order" and piece == "product") else op["type"]
        rows.append({"data": piece, "kind": kind, "per_second": op["per_second"]})
per_piece = pd.DataFrame(rows).pivot_table(index="data", columns="kind", values="per_second", aggfunc="sum",
                                           fill_value=0)
per_piece["reads per write"] = (per_piece["read"] / per_piece["write"]).round(0).astype(int)
per_piece.round(4).sort_values("reads per write", ascending=False)

# %% [markdown]
# Reviews are read 1,000 times for every review written, and the rating (which both hot reads show) 1,300
# times. Those ratios justify extra work when a review arrives, so that reading becomes cheap. Orders are the
# other way round: written often relative to how often they are shown, so they should stay cheap to write.

# %% [markdown]
# ## The naive design: entities as collections
#
# Derived from the entities, `products` and `reviews` are two collections. A product page needs three queries:
# the product, the five newest reviews, and *all* of the product's reviews for the average. The index on
# `{productId: 1, createdAt: -1}` returns the five newest in order without a sort
# ([manual: sorting with indexes](https://www.mongodb.com/docs/manual/tutorial/sort-results-with-indexes/)), but
# the average still reads every review. Costs come from `explain("executionStats")`: keys examined,
# documents examined and documents returned
# ([manual: explain results](https://www.mongodb.com/docs/manual/reference/explain-results/)).

# %%
db.reviews.create_index([("productId", 1), ("createdAt", -1)])
db.products.create_index([("category", 1), ("price", 1)])


def stats(cursor):
    s = cursor.explain()["executionStats"]
    return {"keys examined": s["totalKeysExamined"], "docs examined": s["totalDocsExamined"],
            "returned": s["nReturned"]}


def naive_page(product_id):
    steps = {
        "1 product": stats(db.products.find({"_id": product_id})),
        "2 newest 5 reviews": stats(db.reviews.find({"productId": product_id}).sort("createdAt", -1).limit(5)),
        "3 all reviews for the average": stats(db.reviews.find({"productId": product_id}, {"stars": 1})),
    }
    return pd.DataFrame(steps).T


print("reviews of product:007:", db.reviews.count_documents({"productId": "product:007"}))

# %% [markdown]
# **Predict first.** Product 007 has 400 reviews. In total, how many documents do the three queries of its page
# examine? Record an exact number with `predict_page.predict(...)`, e.g. `predict_page.predict(123)`.

# %%
predict_page = labkit.exercises.get("30-predict-naive-page-docs")

# %% tags=["solution"]
predict_page.predict(1 + 5 + 400)

# %% tags=["reveal"]
naive = naive_page("product:007")
naive

# %% tags=["reveal"]
predict_page.check(int(naive["docs examined"].sum()))

# %% [markdown]
# ### The second row: the category listing
#
# The listing shows 20 products of a category by price, each with its rating average. The index
# `{category: 1, price: 1}` returns a category's products already in price order (equality field first, then the
# sort field), so no blocking sort is needed: a sort no index provides is done in memory, up to 100 MB before it
# spills to disk, or fails where disk use is not allowed
# ([manual: `sort()`](https://www.mongodb.com/docs/manual/reference/method/cursor.sort/)).
# The listing needs no review text at all, but in this design the average lives in `reviews`: after the page of
# 20 products comes one query for all their reviews. Measured on every category:

# %%
def naive_listing(category):
    page = db.products.find({"category": category}, {"name": 1, "price": 1, "thumbnail": 1}).sort("price", 1).limit(20)
    ids = [p["_id"] for p in page.clone()]
    steps = {"1 page of 20 products": stats(page),
             "2 their reviews for the averages": stats(db.reviews.find({"productId": {"$in": ids}}, {"stars": 1}))}
    return pd.DataFrame(steps).T


CATEGORIES = sorted(db.products.distinct("category"))
listing_docs = pd.Series({c: int(naive_listing(c)["docs examined"].sum()) for c in CATEGORIES},
                         name="docs examined per listing page").sort_values(kind="stable")
print(len(CATEGORIES), "categories")
listing_docs.to_frame().T

# %% [markdown]
# Every listing page reads hundreds of reviews to show 20 averages. The ledger below measures the listing on
# the category in the middle of that ranking; here are its two queries:

# %%
typical_category = listing_docs.index[len(listing_docs) // 2]
print(f"typical category: {typical_category}, number {len(listing_docs) // 2 + 1} of {len(listing_docs)} by cost")
naive_listing(typical_category)

# %% [markdown]
# ## The workload-driven design
#
# The source material's rule: data that is accessed together is stored together. A document is the unit the
# server reads, caches and writes atomically, so what the hot reads need together belongs in the document they
# fetch. Both hot reads need the rating average; the page also needs five reviews, not all of them. So the product
# document keeps a rating summary (count and total, from which the average follows: the computed pattern,
# [manual: computed values](https://www.mongodb.com/docs/manual/data-modeling/design-patterns/handle-computed-values/))
# and the five newest reviews; the reviews collection keeps all of them for the rare "all reviews" page. One
# pass builds the summaries for the existing products (a one-off migration):

# %%
for doc in db.reviews.aggregate([
    {"$sort": {"productId": 1, "createdAt": -1}},
    {"$group": {"_id": "$productId", "count": {"$sum": 1}, "total": {"$sum": "$stars"},
                "recent": {"$push": {"_id": "$_id", "stars": "$stars", "text": "$text", "createdAt": "$createdAt"}}}},
]):
    db.products.update_one({"_id": doc["_id"]}, {"$set": {
        "rating": {"count": doc["count"], "total": doc["total"]},
        "recentReviews": doc["recent"][:5]}})
db.products.find_one({"_id": "product:007"}, {"name": 1, "rating": 1, "recentReviews.stars": 1})

# %% [markdown]
# The pages show `total / count`. From now on, adding a review is two writes: insert the review, and one update
# of the product, which is atomic because it touches one document
# ([manual: atomicity](https://www.mongodb.com/docs/manual/core/write-operations-atomicity/)): `$inc` moves the
# count and total, `$push` with `$each`, `$sort` and `$slice: 5` adds the review and keeps only the five newest
# ([manual: `$slice` modifier](https://www.mongodb.com/docs/manual/reference/operator/update/slice/)). The two
# writes together are not atomic: a failure between them leaves a review that the summary does not count yet.
# For a rating that is acceptable (a periodic recount repairs it); where it is not, a multi-document transaction
# makes the pair all-or-nothing
# ([manual: atomicity](https://www.mongodb.com/docs/manual/core/write-operations-atomicity/)).

# %%
def add_review(d, review):
    d.reviews.insert_one(review)
    d.products.update_one({"_id": review["productId"]}, {
        "$inc": {"rating.count": 1, "rating.total": review["stars"]},
        "$push": {"recentReviews": {"$each": [{k: review[k] for k in ("_id", "stars", "text", "createdAt")}],
                                    "$sort": {"createdAt": -1}, "$slice": 5}},
    })


add_review(db, {"_id": "review:007:new", "productId": "product:007", "stars": 5, "text": "Best purchase this year.",
                "createdAt": dt.datetime(2026, 11, 1, 9, 0)})
page = db.products.find_one({"_id": "product:007"})
print(f"rating: {page['rating']['total'] / page['rating']['count']:.2f} from {page['rating']['count']} reviews")
print("newest review on the page:", page["recentReviews"][0]["_id"], "| kept:", len(page["recentReviews"]))

# %% [markdown]
# Both hot reads are now one query each (the listing reads `rating` with the other fields):

# %%
better = pd.DataFrame({
    "product page: 1 product with summary": stats(db.products.find({"_id": "product:007"})),
    f"listing of {typical_category}: 20 products with ratings": stats(
        db.products.find({"category": typical_category}, {"name": 1, "price": 1, "thumbnail": 1, "rating": 1})
        .sort("price", 1).limit(20)),
}).T
better

# %% [markdown]
# ## The ledger: the method in one table
#
# The method is "list the operations with their rates, design for the top rows". `labkit.Ledger` does the
# arithmetic: it runs each operation of each design once, measures it from the commands it sends and their
# `explain` (round trips, keys and documents examined, bytes returned, documents written), and multiplies by the
# rates of the table. The page is measured on a typical product (the median review count) and on the busiest;
# the two page rows split the 2,000 page views a second between them. The listing is measured on the typical
# category, at 600 a second. (product:007 now has 401 reviews, with the one added above, so its naive page
# examines one document more than in the prediction.)

# %%
review_counts = {d["_id"]: d["n"] for d in db.reviews.aggregate([{"$group": {"_id": "$productId", "n": {"$sum": 1}}}])}
by_count = sorted(review_counts, key=lambda p: (review_counts[p], p))
typical = by_count[len(by_count) // 2]
print("typical product:", typical, "with", review_counts[typical], "reviews")
RATES = {"product page (typical product)": 1990, "product page (product:007)": 10, "category listing": 600,
         "add review": 2}


def naive_page_run(product_id):
    def run(d):
        d.products.find_one({"_id": product_id})
        list(d.reviews.find({"productId": product_id}).sort("createdAt", -1).limit(5))
        list(d.reviews.aggregate([{"$match": {"productId": product_id}},
                                  {"$group": {"_id": "$productId", "average": {"$avg": "$stars"}}}]))
    return run


def naive_listing_run(d):
    page = list(d.products.find({"category": typical_category}, {"name": 1, "price": 1, "thumbnail": 1})
                .sort("price", 1).limit(20))
    list(d.reviews.aggregate([{"$match": {"productId": {"$in": [p["_id"] for p in page]}}},
                              {"$group": {"_id": "$productId", "average": {"$avg": "$stars"}}}]))


def summary_listing_run(d):
    list(d.products.find({"category": typical_category}, {"name": 1, "price": 1, "thumbnail": 1, "rating": 1})
         .sort("price", 1).limit(20))


def review_for(n):
    return {"_id": f"review:{typical[8:]}:ledger{n}", "productId": typical, "stars": 4, "text": "Good.",
            "createdAt": dt.datetime(2026, 11, 2, 9, n)}


ledger = labkit.Ledger(RATES)
for name, product in (("typical product", typical), ("product:007", "product:007")):
    ledger.measure("naive (3 collections)", f"product page ({name})", db, naive_page_run(product))
    ledger.measure("workload-driven", f"product page ({name})", db,
                   lambda d, product=product: d.products.find_one({"_id": product}))
ledger.measure("naive (3 collections)", "category listing", db, naive_listing_run)
ledger.measure("workload-driven", "category listing", db, summary_listing_run)
ledger.measure("naive (3 collections)", "add review", db, lambda d: d.reviews.insert_one(review_for(1)))
ledger.measure("workload-driven", "add review", db, lambda d: add_review(d, review_for(2)))
ledger.per_operation()[["per second", "round trips", "docs examined", "docs written"]]

# %% [markdown]
# Per second, at the table's rates:

# %%
ledger.totals()

# %% [markdown]
# The summary design writes one more document per review and examines far fewer per page view and per
# listing. **When does the extra write stop paying?** Counting the work of each design as documents examined
# plus documents written, and keeping the reads at the table's rates, the break-even is the review rate at
# which both designs do the same work per second:

# %%
cost = ledger.per_operation()
work = cost["docs examined"] + cost["docs written"]
reads = [op for op in RATES if op != "add review"]


def work_per_second(design, reviews_per_second):
    return sum(RATES[op] * work[design, op] for op in reads) + reviews_per_second * work[design, "add review"]


extra_per_review = work["workload-driven", "add review"] - work["naive (3 collections)", "add review"]
saved = work_per_second("naive (3 collections)", 0) - work_per_second("workload-driven", 0)
print(f"the reads save {saved:,.0f} documents a second; each review costs {extra_per_review} more: the summary "
      f"pays off until reviews arrive {saved / extra_per_review:,.0f} times a second (the table says "
      f"{RATES['add review']})")

# %% [markdown]
# ## Explore: move the rates
#
# The widget recomputes the ledger's per-second documents examined for the rates you set. Set the three read
# rates near zero and the review rate up to see the naive design win; at the table's rates the summary wins by a
# wide margin.

# %%
ledger_widget = ledger.widget("docs examined", max_rate=2000, max_rates={"add review": 50_000})
ledger_widget

# %% [markdown]
# ## Exercise 1 · Pick the operations to design for, on another application
#
# A news site (its operation table is in `news` below). Choose the rows of `news` you would shape the schema
# around: a DataFrame `chosen` holding those rows. The checker looks at frequencies: your rows must be the most
# frequent ones (no rarer operation in, no more frequent one left out), cover nearly all the traffic, and leave
# out what may be slow. Call `ex.check(news, chosen)`.

# %%
news = pd.DataFrame([("Show article", "read", 5000), ("Front page", "read", 900), ("Like article", "write", 300),
                     ("Add comment", "write", 20), ("Edit article", "write", 0.01), ("Sign up", "write", 1),
                     ("Show profile", "read", 50)], columns=["operation", "type", "per_second"])
ex = labkit.exercises.get("30-pick-operations")
ex

# %% tags=["solution"]
chosen = news.sort_values("per_second", ascending=False).head(4)
ex.check(news, chosen)

# %% [markdown]
# ## Exercise 2 · Reads per write on the news site
#
# Write `reads_per_write(workload, touches)` that returns, for each piece of data, its reads per second divided
# by its writes per second (`float("inf")` when it is never written). `touches` says, for each operation, which
# pieces it reads and which it writes: an operation of type "write" may still only *read* some pieces.
# `ex_ratio.check(reads_per_write)` runs it on the news site's workload and on a second version with other rates.

# %%
news_touches = {
    "Show article": {"article": "read", "comments": "read", "likes": "read"},
    "Front page": {"article": "read", "likes": "read", "sections": "read"},
    "Like article": {"likes": "write"},
    "Add comment": {"comments": "write", "article": "read", "users": "read"},
    "Edit article": {"article": "write"},
    "Sign up": {"users": "write"},
    "Show profile": {"users": "read", "comments": "read"},
}
ex_ratio = labkit.exercises.get("30-reads-per-write")
ex_ratio


# %% tags=["solution"]
def reads_per_write(workload, touches):
    reads, writes = {}, {}
    for op, rate in zip(workload["operation"], workload["per_second"]):
        for piece, kind in touches[op].items():
            reads.setdefault(piece, 0.0)
            writes.setdefault(piece, 0.0)
            (reads if kind == "read" else writes)[piece] += rate
    return {p: reads[p] / writes[p] if writes[p] else float("inf") for p in reads}


print(reads_per_write(news, news_touches))
ex_ratio.check(reads_per_write)

# %% [markdown]
# ## Summary
#
# - The operation table (operation, read or write, frequency, needs) comes before any document.
# - Rank by frequency; design for the top three or four rows (here the page *and* the listing) and let rare
#   operations pay more.
# - Work out reads per write for each piece of data; a piece read far more often than written (the rating) is
#   worth maintaining on write, in the document the hot reads fetch.
# - The ledger multiplies each design's measured cost by the rates: the better design is the one that is cheaper
#   at *these* rates, and the break-even says how far the rates may move before that changes.
# - Keep the table next to the schema and re-run it when features change.
#
# **Next:** 31 · the hard limits the server enforces.

# %% [markdown] tags=["sources"]
# ## Sources
#
# 1. [MongoDB manual: Identify Application Workload](https://www.mongodb.com/docs/manual/data-modeling/schema-design-process/identify-workload/)
# 2. [MongoDB manual: Handle Computed Values](https://www.mongodb.com/docs/manual/data-modeling/design-patterns/handle-computed-values/)
# 3. [MongoDB manual: \$slice (update modifier)](https://www.mongodb.com/docs/manual/reference/operator/update/slice/)
# 4. [MongoDB manual: Atomicity and Transactions](https://www.mongodb.com/docs/manual/core/write-operations-atomicity/)
# 5. [MongoDB manual: Use Indexes to Sort Query Results](https://www.mongodb.com/docs/manual/tutorial/sort-results-with-indexes/)
# 6. [MongoDB manual: Explain Results](https://www.mongodb.com/docs/manual/reference/explain-results/)
# 7. [MongoDB manual: cursor.sort() (sort and index use, blocking sort memory)](https://www.mongodb.com/docs/manual/reference/method/cursor.sort/)

# %% [markdown] tags=["navigation"]
# [← 20 · Which pattern when: use cases, patterns and a quiz](20_which_pattern.ipynb) · [Contents](../CONTENTS.md) · [31 · The hard limits, live →](31_hard_limits.ipynb)
