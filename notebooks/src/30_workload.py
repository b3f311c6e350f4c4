# ---
# jupyter:
#   jupytext:
#     formats: ipynb,src//py:percent
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
#   labkit:
#     minutes: 25
#     exercise_minutes: 15
#     title: "Start from the workload"
#     section: Anti-patterns
#     demo: "Rank the store's operations, then show the product page going from three queries to one document."
#     mistakes: ["Designing from the entity diagram instead of the operation list", "Letting the monthly report shape the schema", "Judging read/write ratios for the whole database instead of per piece of data"]
# ---

# %% [markdown]
# # 30 · Start from the workload
#
# **You will learn**
# - to write the operation table first: operation, read or write, frequency, what it needs;
# - to rank operations by frequency and work out the read/write ratio *per piece of data*;
# - to decide which operations may be slow, and to leave them out of the design;
# - how the table shapes the product document (rating average + 5 newest reviews), measured with `explain()`.
#
# **Time:** about 25 minutes.

# %%
import datetime as dt
import random

import matplotlib.pyplot as plt
import pandas as pd

import labkit

db = labkit.fresh_db("30_workload")
print("engine:", labkit.describe(db.client))

# %% [markdown]
# A small store catalogue, generated with a fixed seed: 300 products and their reviews. A few products are
# popular and collect many reviews; most collect a handful.

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
# Before any document is drawn, list what the application does. The frequencies are the store's peak figures;
# "a few per hour" is counted as 3 per hour and "once a day" as one per 86,400 seconds.

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
workload

# %% [markdown]
# ### Rank by frequency

# %%
ranked = workload.sort_values("per_second", ascending=False).reset_index(drop=True)
ranked["share of all operations"] = (ranked["per_second"] / ranked["per_second"].sum()).map("{:.3%}".format)
ranked["cumulative share"] = (ranked["per_second"].cumsum() / ranked["per_second"].sum()).map("{:.3%}".format)
ranked[["operation", "type", "per_second", "share of all operations", "cumulative share"]]

# %% [markdown]
# The first two rows are almost all of the traffic. The last two rows are rare enough that nobody will notice
# if they cost a thousand times more per call.
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
# Reviews are read a thousand times for every review written. That is the number that justifies doing extra
# work when a review arrives, so that reading one becomes cheap. Orders are the other way round: written
# often relative to how often they are shown, so they should stay cheap to write.

# %% [markdown]
# ### Which operations may be slow?
#
# Mark an operation as *may be slow* when it is rare and nobody waits for it. Here that means the report and,
# because a price change only has to be visible on the next page load, the price change too.

# %%
ranked["design for it"] = ranked.index < 4
ranked["may be slow"] = ranked["operation"].isin(["Monthly sales report", "Change product price"])
ranked[["operation", "per_second", "design for it", "may be slow"]]

# %% [markdown]
# ## The naive design: entities as collections
#
# Derived from the entities, a product page needs three round trips: the product, the five newest reviews, and
# an aggregation over *all* of the product's reviews for the average. Even with the right index on reviews,
# the average reads every review. Product 007 is the popular one (400 reviews).

# %%
db.reviews.create_index([("productId", 1), ("createdAt", -1)])
print("reviews of product:007:", db.reviews.count_documents({"productId": "product:007"}))


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


# %% [markdown]
# **Predict first.** In total, how many documents do the three queries of product:007's page examine?

# %%
predict_page = labkit.exercises.get("30-predict-naive-page-docs")

# %% tags=["solution"]
predict_page.predict(1 + 5 + 400)

# %% tags=["reveal"]
naive = naive_page("product:007")
naive

# %% tags=["reveal"]
predict_page.check(int(naive["docs examined"].sum()))

# %%
avg = next(db.reviews.aggregate([{"$match": {"productId": "product:007"}},
                                 {"$group": {"_id": "$productId", "average": {"$avg": "$stars"},
                                             "count": {"$sum": 1}}}]))
print(f"rating of product:007: {avg['average']:.2f} from {avg['count']} reviews")

# %% [markdown]
# ## The workload-driven design
#
# The product page needs the rating average and five reviews, not all reviews. So the product document keeps
# a rating summary (count and total, from which the average follows) and the five newest reviews, and the reviews collection keeps all of them for the rare
# "all reviews" page. One pass builds the summaries for existing products (a one-off migration):

# %%
for doc in db.reviews.aggregate([
    {"$sort": {"productId": 1, "createdAt": -1}},
    {"$group": {"_id": "$productId", "count": {"$sum": 1}, "total": {"$sum": "$stars"},
                "recent": {"$push": {"_id": "$_id", "stars": "$stars", "text": "$text", "createdAt": "$createdAt"}}}},
]):
    db.products.update_one({"_id": doc["_id"]}, {"$set": {
        "rating": {"count": doc["count"], "total": doc["total"]},
        "recentReviews": doc["recent"][:5]}})
db.products.find_one({"_id": "product:007"}, {"name": 1, "rating": 1, "recentReviews.stars": 1,
                                             "recentReviews.createdAt": 1})

# %% [markdown]
# The page shows `total / count`. From now on, adding a review is two writes: insert the review, and one
# atomic update of the product: `$inc` moves the count and total, `$push` with `$each`, `$sort` and `$slice`
# adds the review and keeps only the five newest.

# %%
def add_review(review):
    db.reviews.insert_one(review)
    db.products.update_one({"_id": review["productId"]}, {
        "$inc": {"rating.count": 1, "rating.total": review["stars"]},
        "$push": {"recentReviews": {"$each": [{k: review[k] for k in ("_id", "stars", "text", "createdAt")}],
                                    "$sort": {"createdAt": -1}, "$slice": 5}},
    })


add_review({"_id": "review:007:new", "productId": "product:007", "stars": 5, "text": "Best purchase this year.",
            "createdAt": dt.datetime(2026, 11, 1, 9, 0)})
page = db.products.find_one({"_id": "product:007"})
print(f"rating: {page['rating']['total'] / page['rating']['count']:.2f} from {page['rating']['count']} reviews")
print("newest review on the page:", page["recentReviews"][0]["_id"], "| kept:", len(page["recentReviews"]))

# %%
better = pd.DataFrame({"1 product with summary": stats(db.products.find({"_id": "product:007"}))}).T
better

# %% [markdown]
# ## Side by side, per second at peak
#
# Multiply the cost of one product page by 2,000 pages a second; add the cost of the extra write on the
# 2 reviews a second.

# %%
naive_007 = naive_page("product:007")
compare = pd.DataFrame({
    "naive (3 collections)": {"round trips per page": len(naive_007),
                              "docs examined per page": int(naive_007["docs examined"].sum()),
                              "docs examined per second": int(naive_007["docs examined"].sum()) * 2000,
                              "writes per new review": 1},
    "workload-driven": {"round trips per page": len(better),
                        "docs examined per page": int(better["docs examined"].sum()),
                        "docs examined per second": int(better["docs examined"].sum()) * 2000,
                        "writes per new review": 2},
})
compare

# %%
fig, ax = plt.subplots(figsize=(6, 2.4))
ax.barh(compare.columns, compare.loc["docs examined per second"], color=["#d62728", "#1f77b4"])
ax.set_xlabel("documents examined per second (product:007 page, 2,000/s)")
ax.set_title("Product page cost at peak", fontsize=10)
plt.tight_layout()
plt.show()

# %% [markdown]
# product:007 is the busiest product, so its page is the worst case. The 2,000 page views a second are spread
# over the whole catalogue, so the fair figure uses the average page. Measured over all 300 products:

# %%
naive_docs = [int(naive_page(p["_id"])["docs examined"].sum()) for p in db.products.find({}, {"_id": 1})]
average_naive = sum(naive_docs) / len(naive_docs)
fair = pd.DataFrame({
    "average product": {"naive docs per page": round(average_naive, 1),
                        "naive docs per second": round(average_naive * 2000),
                        "workload-driven docs per second": int(better["docs examined"].sum()) * 2000},
    "product:007 (busiest)": {"naive docs per page": int(naive_007["docs examined"].sum()),
                              "naive docs per second": int(naive_007["docs examined"].sum()) * 2000,
                              "workload-driven docs per second": int(better["docs examined"].sum()) * 2000},
})
fair

# %% [markdown]
# One extra write two times a second buys removing the difference between those rows: for the average page
# and, far more, for the busiest one. That trade is only visible because the table put both rates side by
# side.

# %% [markdown]
# ## The ledger: the method in one table
#
# The method is "list the operations with their rates, design for the top rows". `labkit.Ledger` does the
# arithmetic: it runs each operation of each design once, measures it from the commands it sends and their
# `explain` (round trips, keys and documents examined, bytes returned, documents written), and multiplies by the
# rates of the table. The page is measured on a typical product (the median review count) and on the busiest;
# the two page rows split the 2,000 page views a second between them.

# %%
by_count = sorted(review_counts_all := {d["_id"]: d["n"] for d in db.reviews.aggregate(
    [{"$group": {"_id": "$productId", "n": {"$sum": 1}}}])}, key=lambda p: (review_counts_all[p], p))
typical = by_count[len(by_count) // 2]
print("typical product:", typical, "with", review_counts_all[typical], "reviews")
RATES = {"product page (typical product)": 1990, "product page (product:007)": 10, "add review": 2}


def naive_page_run(product_id):
    def run(d):
        d.products.find_one({"_id": product_id})
        list(d.reviews.find({"productId": product_id}).sort("createdAt", -1).limit(5))
        list(d.reviews.aggregate([{"$match": {"productId": product_id}},
                                  {"$group": {"_id": "$productId", "average": {"$avg": "$stars"}}}]))
    return run


def review_for(n):
    return {"_id": f"review:{typical[8:]}:ledger{n}", "productId": typical, "stars": 4, "text": "Good.",
            "createdAt": dt.datetime(2026, 11, 2, 9, n)}


def add_review_naive(d):
    d.reviews.insert_one(review_for(1))


def add_review_summary(d):
    review = review_for(2)
    d.reviews.insert_one(review)
    d.products.update_one({"_id": review["productId"]}, {
        "$inc": {"rating.count": 1, "rating.total": review["stars"]},
        "$push": {"recentReviews": {"$each": [{k: review[k] for k in ("_id", "stars", "text", "createdAt")}],
                                    "$sort": {"createdAt": -1}, "$slice": 5}}})


ledger = labkit.Ledger(RATES)
for name, product in (("typical product", typical), ("product:007", "product:007")):
    ledger.measure("naive (3 collections)", f"product page ({name})", db, naive_page_run(product))
    ledger.measure("workload-driven", f"product page ({name})", db,
                   lambda d, product=product: d.products.find_one({"_id": product}))
ledger.measure("naive (3 collections)", "add review", db, add_review_naive)
ledger.measure("workload-driven", "add review", db, add_review_summary)
ledger.per_operation()

# %%
ledger.totals()

# %% [markdown]
# The summary design writes one more document per review and examines far fewer per page. The break-even: how
# few page views a second would make the extra write not worth it (documents examined plus documents written,
# from the measured costs)?

# %%
cost = ledger.per_operation()
work = cost["docs examined"] + cost["docs written"]
page_share = {op: RATES[op] / (RATES["product page (typical product)"] + RATES["product page (product:007)"])
              for op in RATES if op.startswith("product page")}
saved_per_view = sum(share * (work["naive (3 collections)", op] - work["workload-driven", op])
                     for op, share in page_share.items())
extra_per_review = work["workload-driven", "add review"] - work["naive (3 collections)", "add review"]
print(f"each page view saves {saved_per_view:.1f} documents, each review costs {extra_per_review:.0f} more: the "
      f"summary pays off above {extra_per_review * RATES['add review'] / saved_per_view:.2f} page views a second "
      f"at {RATES['add review']} reviews a second")

# %% [markdown]
# Move the rates (documents examined per second); set the page rates near zero and the review rate up to see the
# naive design win:

# %%
ledger_widget = ledger.widget("docs examined", max_rate=2000)
ledger_widget

# %% [markdown]
# ## Explore: how popular is the product?
#
# The naive page's cost grows with the number of reviews; the summary design's does not. The slider gives
# one extra product, product:explore, exactly the number of reviews it asks for (adding or deleting only the
# difference) and runs both plans on it.

# %%
from labkit.resize import resize_children
from labkit.widgets import explorer

db.products.update_one({"_id": "product:explore"}, {"$setOnInsert": {"name": "Explorer product"}}, upsert=True)


def explore_review(i):
    return {"productId": "product:explore", "stars": 1 + i % 5, "text": "Solid, arrived on time.",
            "createdAt": START + dt.timedelta(minutes=37 * i)}


def popularity(reviews):
    product = "product:explore"
    resize_children(db.reviews, "review:explore:", reviews, explore_review)
    naive_cost = int(naive_page(product)["docs examined"].sum())
    better_cost = stats(db.products.find({"_id": product}))["docs examined"]
    return {"product": product, "reviews": db.reviews.count_documents({"productId": product}),
            "naive: docs examined per page": naive_cost, "summary: docs examined per page": better_cost,
            "naive: docs examined per second at 2,000/s": naive_cost * 2000}


def draw_popularity(ax, values, r):
    ax.barh(["naive", "summary"], [r["naive: docs examined per page"], r["summary: docs examined per page"]],
            color=["#d62728", "#1f77b4"])
    ax.set_xlabel("documents examined per page view")


pop = explorer(popularity, sliders={"reviews": (1, 400, 50, 1)}, title="Reviews on one product",
               draw=draw_popularity)
pop

# %% [markdown]
# ## Exercise 1 · Pick the operations to design for
#
# Pick the operations to optimise: a DataFrame holding the rows of `workload` you would shape the schema
# around. The checker looks at frequencies: your rows must be the most frequent ones (no rarer operation in,
# no more frequent one left out), cover nearly all the traffic, and leave out what may be slow.
# Call `ex.check(workload, chosen)`.

# %%
ex = labkit.exercises.get("30-pick-operations")
ex

# %% tags=["solution"]
chosen = workload.sort_values("per_second", ascending=False).head(4)
ex.check(workload, chosen)

# %% [markdown]
# ## Exercise 2 · Reads per write on a news site
#
# A different application: a news site. Write `reads_per_write(workload, touches)` that returns, for each
# piece of data, its reads per second divided by its writes per second (`float("inf")` when it is never
# written). `touches` says, for each operation, which pieces it reads and which it writes: an operation of type
# "write" may still only *read* some pieces. `ex_ratio.check(reads_per_write)` runs it on the news site's
# workload below and on a second version with other rates.

# %%
news = pd.DataFrame([("Show article", "read", 5000), ("Front page", "read", 900), ("Like article", "write", 300),
                     ("Add comment", "write", 20), ("Edit article", "write", 0.01), ("Sign up", "write", 1),
                     ("Show profile", "read", 50)], columns=["operation", "type", "per_second"])
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
# - Rank by frequency; design for the top three or four rows and let rare operations pay more.
# - Work out reads per write for each piece of data (the per-piece table above), and summarise the pieces read
#   far more often than written into the document that reads them, when they are written.
# - The ledger multiplies each design's measured cost by the rates: the better design is the one that is cheaper
#   at *these* rates, and the break-even says how far the rates may move before that changes.
# - Keep the table next to the schema and re-run it when features change.
#
# **Next:** 31 · the hard limits the server enforces.

# %% [markdown] tags=["navigation"]
# [← 20 · Which pattern when: use cases, patterns and a quiz](20_which_pattern.ipynb) · [Contents](../CONTENTS.md) · [31 · The hard limits, live →](31_hard_limits.ipynb)
