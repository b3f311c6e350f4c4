# ---
# jupyter:
#   jupytext:
#     formats: ipynb,src//py:percent
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
#   labkit:
#     minutes: 20
#     title: Start here
#     section: Introduction
#     exercise_minutes: 5
#     demo: >-
#       Run the setup cell and read the engine line aloud (embedded, no server). Build the workload
#       table, then compute reads per write live: about 1,000 product-page reads per review written.
#       Call ex.check(workload) on the unsorted table to show how the checker explains what is wrong.
#     mistakes:
#     - Sorting least frequent first (sort_values is ascending by default; pass ascending=False).
#     - "Keeping every operation, the rare reports included, among those the schema is designed for: stop where the running total reaches 80%."
#     - Forgetting that a rating average computed on read reads every review of the product, on every page view.
#     - "Stopping one row short of 80%: the operation whose rate crosses 80% belongs to the top rows."
#     - "Sorting the rate column on its own (e.g. sorted(recipes.per_second)) so the rates no longer sit next to their operations."
#     - "Predicting a count that forgets one read (e.g. 205 without the product itself): counts are checked exactly."
#     sources:
#     - title: "MongoDB manual: Identify Application Workload"
#       url: https://www.mongodb.com/docs/manual/data-modeling/schema-design-process/identify-workload/
#     - title: "MongoDB manual: MongoDB Limits and Thresholds"
#       url: https://www.mongodb.com/docs/manual/reference/limits/
#     - title: "MongoDB manual: Explain Results"
#       url: https://www.mongodb.com/docs/manual/reference/explain-results/
#     - title: "MongoDB manual: Read Preference"
#       url: https://www.mongodb.com/docs/manual/core/read-preference/
#     - title: "MongoDB manual: Connection Strings"
#       url: https://www.mongodb.com/docs/manual/reference/connection-string/
#     - title: "MongoDB manual: Convert a Standalone mongod to a Replica Set"
#       url: https://www.mongodb.com/docs/manual/tutorial/convert-standalone-to-replica-set/
# ---

# %% [markdown]
# # 00 · Start here
#
# **You will learn**
# - how every Schema Lab lesson is built, and how to run it;
# - the *workload-first* method: list the operations before drawing any document;
# - what the embedded engine is, and how to point the same notebooks at a real MongoDB server;
# - how the checked exercises work.
#
# **Time:** about 20 minutes.

# %% [markdown]
# ## What this suite is
#
# Schema Lab teaches MongoDB schema design by changing the shape of data and measuring what happens:
# document sizes against the 16 MiB limit, the plan `explain()` reports, how many round trips and writes an
# operation costs. You write ordinary **pymongo** code. The figures come from running it; a figure worked out
# with a formula says so ("estimated", and how).
#
# The lessons come in three groups:
#
# | group | what you will do |
# |---|---|
# | Relationships | embed one-to-few, reference one-to-many from the child, relationship collections for one-to-infinity, `$lookup`, keeping copies consistent, validation |
# | Patterns | bucket, outlier, computed, schema versioning, polymorphic and the rest of the pattern catalogue |
# | Anti-patterns | find, fix and measure unbounded arrays, bloated documents, too many collections, unused indexes, and more |
#
# Each lesson has the same shape: goals and a time estimate, a setup cell, the problem as a workload table,
# a naive design and what it costs when run, a better design and what it costs, a slider to explore how the
# numbers change with cardinality, a prediction you make before a measurement runs, checked exercises (the
# first on a changed scenario), a summary, and the sources: the MongoDB manual pages and server tests each
# statement about MongoDB rests on, linked where the statement is made.

# %% [markdown]
# ## Setup
#
# Every lesson starts like this. `labkit.fresh_db` gives you an empty database that labkit created and may
# drop again; it refuses to touch a database it did not create.

# %%
import pandas as pd

import labkit

db = labkit.fresh_db("00_start_here")
print("engine:  ", labkit.describe(db.client))
print("database:", db.name)

# %% [markdown]
# With no configuration, `labkit.connect()` (used by `fresh_db`) starts an **embedded engine** inside this
# Python process: no server, no account. It models a MongoDB 8.0 server, including `explain()`, index use and
# the server's rules. To use a real server instead, set `MONGODB_URI` to its
# [connection string](https://www.mongodb.com/docs/manual/reference/connection-string/) before starting
# Jupyter, for example `MONGODB_URI=mongodb://localhost:27017 python3 dev.py lab`. The notebooks do not change. On a shared
# workshop cluster each learner's databases get their own name prefix, so nobody overwrites anybody else.
# Lessons 05, 06, 11, 12, 36 and 42 use transactions or change streams, which a standalone `mongod` refuses: give
# them a replica set or a sharded cluster. Every Atlas cluster is one, and a local `mongod` becomes a one-member
# replica set when started with `--replSet` and initiated
# ([convert a standalone](https://www.mongodb.com/docs/manual/tutorial/convert-standalone-to-replica-set/)).

# %% [markdown]
# ## The workload comes first
#
# A relational schema can be derived from the entities alone. A document schema cannot: the same data has
# several sensible shapes, and the right one depends on which operations run, how often, and what each
# one needs. So the first artefact of a design is a table of operations: what triggers each one, whether it
# reads or writes, the fields it needs and how often it runs (MongoDB's manual starts schema design with the
# same [workload table](https://www.mongodb.com/docs/manual/data-modeling/schema-design-process/identify-workload/)).
# Here is one for a small online store:

# %%
workload = pd.DataFrame(
    [
        ("Show product page", "read", 2000, "product, price, stock flag, 5 newest reviews, rating average"),
        ("List a category, sorted by price", "read", 600, "name, price, thumbnail, rating average"),
        ("Place order", "write", 15, "never lose data; keep the prices paid"),
        ("Show my orders", "read", 40, "one customer's order headers, newest first"),
        ("Add review", "write", 2, "review text and rating"),
        ("Change product price", "write", 3 / 3600, "visible on the next page load"),
        ("Monthly sales report", "read", 1 / 86400, "may be slow; may run on a secondary"),
    ],
    columns=["operation", "type", "per_second", "needs"],
)
workload

# %% [markdown]
# Two numbers fall straight out of the table. Reads outnumber writes by a wide margin, and the product page
# alone is most of the traffic:

# %%
by_type = workload.groupby("type")["per_second"].sum()
print(f"reads per second:  {by_type['read']:,.1f}")
print(f"writes per second: {by_type['write']:,.1f}")
print(f"reads per write:   {by_type['read'] / by_type['write']:,.0f}")
share = workload.loc[0, "per_second"] / workload["per_second"].sum()
print(f"share of all operations that are product-page reads: {share:.0%}")

# %% [markdown]
# Reviews are written far less often than they are shown. How many product pages show each review written?

# %%
per_second = workload.set_index("operation")["per_second"]
views_per_review = per_second["Show product page"] / per_second["Add review"]
print(f"product-page views per review written: {views_per_review:,.0f}")

# %% [markdown]
# So a little extra work when a review is written (keeping the rating average and the five newest reviews
# inside the product) is repaid once per page view, that many times for every review. Two more things the
# table says that no entity diagram does:
#
# - **what each read needs**: the product page needs the 5 newest reviews, not all of them; the category listing
#   needs no review at all, only the rating average;
# - **which operations may be slow**: the monthly sales report runs once a day, may take its time and may read
#   from a secondary member of the replica set
#   ([read preference](https://www.mongodb.com/docs/manual/core/read-preference/)); it should not shape the
#   schema at all.
#
# How many times the extra write pays off is a measurement, not a slogan: let's measure both designs.
#
# ## The ledger: what each design costs, times how often it runs
#
# Two designs for the product page and for adding a review:
#
# - **referenced**: reviews in their own collection; the page reads the product, the 5 newest reviews and
#   averages every review's rating;
# - **embedded**: the product keeps the 5 newest reviews and a running sum and count of ratings; adding a review
#   inserts it *and* updates the product.
#
# The data: one product with 200 reviews, generated deterministically.

# %%
import datetime as dt

reviews_200 = [{"_id": f"review:{i}", "productId": "product:1", "user": f"user:{i}", "stars": 1 + (i * 7) % 5,
                "text": "Grinds evenly, a bit loud.", "at": dt.datetime(2026, 1, 1) + dt.timedelta(hours=i)}
               for i in range(200)]
newest_5 = sorted(reviews_200, key=lambda r: r["at"], reverse=True)[:5]
db.ref_products.insert_one({"_id": "product:1", "name": "Espresso grinder", "price": 249.0})
db.ref_reviews.insert_many(reviews_200)
db.ref_reviews.create_index({"productId": 1, "at": -1})
db.emb_products.insert_one({"_id": "product:1", "name": "Espresso grinder", "price": 249.0,
                            "rating": {"sum": sum(r["stars"] for r in reviews_200), "count": len(reviews_200)},
                            "newestReviews": newest_5})
db.emb_reviews.insert_many(reviews_200)
print("reviews:", db.ref_reviews.count_documents({}), "| embedded newest:", len(newest_5))

# %% [markdown]
# The four operations, one function each. Each takes the database, so the ledger can run it on a connection
# that watches the commands it sends.

# %%
new_review = {"productId": "product:1", "user": "user:new", "stars": 5, "text": "Great.",
              "at": dt.datetime(2026, 2, 1)}


def page_referenced(d):
    product = d.ref_products.find_one({"_id": "product:1"})
    newest = list(d.ref_reviews.find({"productId": "product:1"}).sort("at", -1).limit(5))
    average = list(d.ref_reviews.aggregate([{"$match": {"productId": "product:1"}},
                                            {"$group": {"_id": None, "avg": {"$avg": "$stars"}}}]))
    return product, newest, average


def page_embedded(d):
    return d.emb_products.find_one({"_id": "product:1"})


def review_referenced(d):
    d.ref_reviews.insert_one(dict(new_review))


def review_embedded(d):
    d.emb_reviews.insert_one(dict(new_review))
    d.emb_products.update_one({"_id": "product:1"},
                              {"$push": {"newestReviews": {"$each": [dict(new_review)], "$sort": {"at": -1},
                                                           "$slice": 5}},
                               "$inc": {"rating.sum": new_review["stars"], "rating.count": 1}})

# %% [markdown]
# ## Predictions and checked exercises
#
# Some cells ask you to **predict** a measurement before it runs. Each prediction is an object with two
# methods: `.predict(value)` records your guess (a number, a name, True or False), and after the measuring
# cell has run, `.check(measured)` compares the two and explains the figure. Exercises work the same way:
# `ex.check(answer)` says what is right or still wrong, `ex.hint()` gives a hint and `ex.solution()` a worked
# answer.
#
# The first one: how many documents does one *referenced* product page examine, for this product with 200
# reviews? Count each read the page function above sends. "Examine" means the documents the server reads to
# answer (its `explain` reports them as `docsExamined`,
# [explain results](https://www.mongodb.com/docs/manual/reference/explain-results/)), not only the ones it
# returns.

# %%
ex_page = labkit.exercises.get("00-predict-page-docs")
ex_page

# %% [markdown]
# In the next cell, record your number: `ex_page.predict(12)` would record 12.

# %% tags=["solution"]
ex_page.predict(206)

# %% [markdown]
# `labkit.Ledger` takes the workload's rates (operations per second, from the table above), runs each
# operation once per design and measures what it cost from the commands it sent: round trips, documents and
# index keys examined (from each read's `explain`), bytes returned, documents written.

# %% tags=["reveal"]
rates = {"show product page": float(per_second["Show product page"]), "add review": float(per_second["Add review"])}
ledger = labkit.Ledger(rates)
ledger.measure("referenced", "show product page", db, page_referenced)
ledger.measure("embedded", "show product page", db, page_embedded)
ledger.measure("referenced", "add review", db, review_referenced)
ledger.measure("embedded", "add review", db, review_embedded)
ledger.per_operation()

# %% tags=["reveal"]
page_docs = ledger.costs[("referenced", "show product page")].docs_examined
ex_page.check(page_docs)

# %% [markdown]
# Per second, at the table's rates:

# %%
ledger.totals()

# %% [markdown]
# And the "pays off" figure, computed: the embedded design spends extra work on each review written (a second
# write, a second round trip) and saves work on each page view. Per second, at these rates:

# %%
cost = ledger.costs
page_ref, page_emb = cost["referenced", "show product page"], cost["embedded", "show product page"]
write_ref, write_emb = cost["referenced", "add review"], cost["embedded", "add review"]
views, writes = rates["show product page"], rates["add review"]
rt_saved = (page_ref.round_trips - page_emb.round_trips) * views
rt_spent = (write_emb.round_trips - write_ref.round_trips) * writes
print(f"round trips saved per second on page views:      {rt_saved:,.0f}")
print(f"documents examined saved per second:             {(page_ref.docs_examined - page_emb.docs_examined) * views:,.0f}")
print(f"extra round trips per second writing reviews:    {rt_spent:,.0f}")
print(f"extra documents written per second:              {(write_emb.docs_written - write_ref.docs_written) * writes:,.0f}")
print(f"the extra write pays off {rt_saved / rt_spent:,.0f} times (round trips saved per round trip spent)")

# %% [markdown]
# Move the rates: at what review rate would the embedded design stop winning on round trips? The slider
# readout names the better design at the rates you set.

# %%
ledger_widget = ledger.widget("round trips", max_rate=4000)
ledger_widget

# %%
page_gap = page_ref.round_trips - page_emb.round_trips
write_gap = write_emb.round_trips - write_ref.round_trips
print(f"break-even: embedded wins on round trips while reviews per second < {views * page_gap / write_gap:,.0f} "
      f"(at {views:,.0f} page views per second)")

# %% [markdown]
# ## Real-looking data
#
# labkit ships the small example records the lessons start from (Sam, Fred, two posts and one follow) and
# seeders that generate larger, deterministic datasets. Let's load the examples:

# %%
canonical = labkit.seed.load_canonical()
for name, docs in canonical.items():
    db[name].insert_many(docs)
    print(f"{name:8} {db[name].count_documents({})} document(s)")

# %%
db.users.find_one({"_id": "user:112"})

# %% [markdown]
# Every document has a size in BSON, the format MongoDB stores. The server refuses documents over 16 MiB
# ([limits](https://www.mongodb.com/docs/manual/reference/limits/)), and the lessons measure how close a design
# gets to that wall:

# %%
import bson

for doc in db.users.find().sort("_id", 1):
    print(f"{doc['_id']}: {len(bson.encode(doc))} bytes")

# %% [markdown]
# ## Sliders: change the cardinality, watch the numbers
#
# Lessons put their key measurement behind a slider. This one keeps the newest *N* reviews inside a product
# document (the product page's "5 newest reviews"). Move the slider: the size is computed from the real BSON
# encoding each time.

# %%
from labkit.plots import bars_against_limit
from labkit.widgets import explorer


def product_with_reviews(reviews):
    product = {"_id": "product:1", "name": "Espresso grinder", "price": 249.0, "inStock": True,
               "rating": {"average": 4.4, "count": reviews},
               "reviews": [{"user": f"user:{i}", "stars": 1 + i % 5, "text": "Grinds evenly, a bit loud. " * 4}
                           for i in range(reviews)]}
    size = len(bson.encode(product))
    return {"reviews embedded": reviews, "document bytes": size, "share of 16 MiB": f"{size / 2**24:.4%}"}


reviews = explorer(product_with_reviews, sliders={"reviews": (0, 5000, 5, 5)}, title="Reviews kept in the product",
                   draw=lambda ax, v, r: bars_against_limit(ax, ["product"], [r["document bytes"]], unit="KiB"))
reviews

# %% [markdown]
# With five reviews the product document is 906 bytes; keeping *every* review would grow it with each one
# written. That is the trade-off the pattern lessons measure in detail.

# %% [markdown]
# ## Exercise 1: rank another workload
#
# Each lesson ends with exercises, and the first one takes what the lesson did to a changed scenario. Here it
# is a recipe site instead of the store. `ex.check(answer)` looks at *what you built* (a plan without a sort
# stage, a document under a size, a table in the right order) and says what is still wrong.

# %%
recipes = pd.DataFrame(
    [
        ("Rate a recipe", "write", 5, "stars; the average shown on the recipe page"),
        ("Show a recipe", "read", 1500, "recipe, ingredients, steps, rating average"),
        ("Daily newsletter", "read", 1 / 86400, "may be slow; may run on a secondary"),
        ("Search recipes by ingredient", "read", 400, "name, photo, rating average"),
        ("Publish a recipe", "write", 1 / 60, "searchable within a minute"),
        ("Save a recipe to favourites", "write", 20, "one user and recipe pair, once"),
        ("Show a cook's profile", "read", 60, "the cook and their 10 newest recipes"),
    ],
    columns=["operation", "type", "per_second", "needs"],
)
ex = labkit.exercises.get("00-rank-workload")
ex

# %% [markdown]
# Checking the table as it is tells you what is missing:

# %%
ex.check(recipes)

# %%
print(ex.hint())

# %% [markdown]
# **Your turn:** rank the recipe site's operations by `per_second`, most frequent first (each rate stays on its
# operation's row), and check your answer.

# %% tags=["solution"]
ranked = recipes.sort_values("per_second", ascending=False)
ex.check(ranked)

# %% [markdown]
# ## Exercise 2: the top rows of another workload
#
# "Design for the top rows" needs a rule for where the top ends. Write `top_operations(workload)`: given any
# workload table with `operation` and `per_second` columns, return the names of the operations that together
# make up at least 80% of all operations per second, most frequent first. The checker runs it on workloads of
# its own (a message board, a mail app, a live score), not on the store's.

# %%
ex2 = labkit.exercises.get("00-top-operations")
ex2

# %% tags=["solution"]
def top_operations(workload):
    ranked = workload.sort_values("per_second", ascending=False)
    before = ranked["per_second"].cumsum() - ranked["per_second"]
    return list(ranked[before < 0.8 * ranked["per_second"].sum()]["operation"])


ex2.check(top_operations)

# %% [markdown]
# ## Summary
#
# - Start a design from the operations, their frequencies and what each needs, not from the entities.
# - Optimise the few most frequent operations; let rare ones pay more.
# - Keep the workload table next to the schema and revisit it when features change: a schema that was right
#   for last year's workload is where most schema problems start.
# - A ledger multiplies what each design's operations cost when they ran by the workload's rates: the better
#   design is the one with the lower per-second totals, and it can flip when the rates change.
# - `labkit.fresh_db(name)` gives each lesson a clean database; the embedded engine needs no server, and
#   `MONGODB_URI` switches to a real one without changing a line.
#
# **Next:** the relationship lessons, starting with embedding bounded one-to-few data.

# %% [markdown] tags=["sources"]
# ## Sources
#
# 1. [MongoDB manual: Identify Application Workload](https://www.mongodb.com/docs/manual/data-modeling/schema-design-process/identify-workload/)
# 2. [MongoDB manual: MongoDB Limits and Thresholds](https://www.mongodb.com/docs/manual/reference/limits/)
# 3. [MongoDB manual: Explain Results](https://www.mongodb.com/docs/manual/reference/explain-results/)
# 4. [MongoDB manual: Read Preference](https://www.mongodb.com/docs/manual/core/read-preference/)
# 5. [MongoDB manual: Connection Strings](https://www.mongodb.com/docs/manual/reference/connection-string/)
# 6. [MongoDB manual: Convert a Standalone mongod to a Replica Set](https://www.mongodb.com/docs/manual/tutorial/convert-standalone-to-replica-set/)

# %% [markdown] tags=["navigation"]
# [Contents](../CONTENTS.md) · [01 · Embed one-to-few: roles inside the user →](01_embed_one_to_few.ipynb)
