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
#     title: "Computed: maintain rating statistics on write"
#     section: Patterns
#     demo: "Pick '1 view per 10,000 reviews' in the page views per review menu and compare index keys examined: even then the aggregation, which reads every review's key on each view, costs more than keeping the statistics (one key per view, one update per review)."
#     exercise_minutes: 15
#     sources:
#     - title: "MongoDB manual: Store Computed Data (the computed pattern)"
#       url: https://www.mongodb.com/docs/manual/data-modeling/design-patterns/computed-values/computed-schema-pattern/
#     - title: "MongoDB manual: Use the Approximation Pattern"
#       url: https://www.mongodb.com/docs/manual/data-modeling/design-patterns/computed-values/approximation-schema-pattern/
#     - title: "mongodb/mongo jstests/aggregation/use_query_projection.js (a pipeline that needs only indexed fields is covered)"
#       url: https://github.com/mongodb/mongo/blob/v8.0/jstests/aggregation/use_query_projection.js
#     - title: "MongoDB manual: Express query stages (explain results)"
#       url: https://www.mongodb.com/docs/manual/reference/explain-results/
#     - title: "MongoDB manual: Atomicity and Transactions (single-document writes are atomic)"
#       url: https://www.mongodb.com/docs/manual/core/write-operations-atomicity/
#     - title: "MongoDB manual: Transactions"
#       url: https://www.mongodb.com/docs/manual/core/transactions/
#     mistakes: ["storing only a rounded average, which cannot be updated incrementally", "updating the statistics without the review in the same transaction and never reconciling", "computing on write a value that is read less often than it changes", "setting lastReplyAt with $set, so a late reply moves it back; $max keeps the newest", "reading the thread and writing replyCount + 1 back: two replies at once count as one"]
# ---

# %% [markdown]
# # 12 · Computed: maintain rating statistics on write
#
# **You will learn**
# - what an aggregation on every page view costs (index keys examined grow with the reviews);
# - to store pre-computed statistics on the product and update them with each new review, in a transaction;
# - to compare the total work of both designs as the read/write ratio changes;
# - the approximation pattern: write a counter one time in N and measure the error you accept.
#
# **Time:** about 35 minutes.

# %%
import datetime as dt
import random

import pandas as pd

import labkit

db = labkit.fresh_db("12_computed")
HEADPHONES = {"5": 5200, "4": 3100, "3": 1500, "2": 700, "1": 342}  # the source's distribution
rng = random.Random(12)
review_counts = {"prod:1": HEADPHONES} | {
    f"prod:{p}": {str(r): rng.randint(0, 60 // r) for r in range(1, 6)} for p in range(2, 21)}
db.products.insert_many([{"_id": pid, "name": "Wireless Headphones" if pid == "prod:1" else f"Product {pid[5:]}",
                          "price": 79.99} for pid in review_counts])
reviews, n = [], 0
for pid, dist in review_counts.items():
    for rating, count in dist.items():
        for _ in range(count):
            n += 1
            reviews.append({"_id": f"review:{n}", "productId": pid, "userId": f"user:{rng.randrange(5000)}",
                            "rating": int(rating), "createdAt": dt.datetime(2026, 1, 1) + dt.timedelta(minutes=n)})
rng.shuffle(reviews)  # reviews arrive interleaved across products
db.reviews.insert_many(reviews)
db.reviews.create_index([("productId", 1), ("rating", 1)])
print("products:", db.products.count_documents({}), "| reviews:", db.reviews.count_documents({}),
      "| on prod:1:", db.reviews.count_documents({"productId": "prod:1"}))

# %% [markdown]
# ## The workload

# %%
workload = pd.DataFrame([
    ("show a product page", "read", "1,000/s", "name, price, rating average, count, stars"),
    ("add a review", "write", "2/s", "stored for ever; the page must reflect it"),
], columns=["operation", "type", "rate (assumed)", "needs"]).set_index("operation")
workload

# %% [markdown]
# A page view is far more frequent than a new review (500 per review here): that ratio decides the design. The
# rates are the lesson's assumption; the ledger below lets you change them. The headphones carry the source's
# distribution of 10,842 reviews.
#
# ## The naive design: aggregate on every read

# %%
def rating_pipeline(pid):
    return [{"$match": {"productId": pid}},
            {"$group": {"_id": None, "avgRating": {"$avg": "$rating"}, "count": {"$sum": 1}}}]


list(db.reviews.aggregate(rating_pipeline("prod:1")))


# %% [markdown]
# How much work is that? The explain of the pipeline shows what one page view examines. The `$match` uses the
# `{productId: 1, rating: 1}` index, yet every review of the product is examined: `$group` needs all of them.
# The pipeline needs only `productId` and `rating`, both in the index, so the server answers it from the index keys
# alone, a **covered** plan (`PROJECTION_COVERED` in the plan below) that fetches no document
# ([mongo jstest: use_query_projection.js](https://github.com/mongodb/mongo/blob/v8.0/jstests/aggregation/use_query_projection.js)).
# Its work is the index keys it examines, one per review, so this lesson compares designs by **index keys
# examined**.
#
# **Predict first.** How many index keys does one page view of the headphones (`prod:1`) examine? Record your
# guess; the next cell measures it.

# %%
ex_keys = labkit.exercises.get("12-predict-aggregate-keys")
ex_keys

# %% tags=["solution"]
ex_keys.predict(10_842)

# %% tags=["reveal"]
def match_cost(pid):
    explain = db.command("explain", {"aggregate": "reviews", "pipeline": rating_pipeline(pid), "cursor": {}},
                         verbosity="executionStats")
    plan = labkit.plan_summary(explain)
    return {"plan": plan["stages"], "keys examined": plan["keysExamined"], "docs examined": plan["docsExamined"],
            "returned": plan["nReturned"]}


read_costs = pd.DataFrame({pid: match_cost(pid) for pid in ("prod:1", "prod:2")})
read_costs

# %% tags=["reveal"]
ex_keys.check(int(read_costs.loc["keys examined", "prod:1"]))

# %% [markdown]
# Every view of the headphones examines every one of its reviews (the keys examined above) to produce two
# numbers, and the work grows with every new review.
#
# ## The better design: statistics stored on the product
#
# Compute once, when a review arrives, and store the result where the page reads it: the
# [computed pattern](https://www.mongodb.com/docs/manual/data-modeling/design-patterns/computed-values/computed-schema-pattern/). Keep `count` and `sum`
# (the average is `sum / count`, exact at any time) and the star distribution. First, initialise them from the
# existing reviews:

# %%
for g in db.reviews.aggregate([{"$group": {"_id": {"p": "$productId", "r": "$rating"}, "n": {"$sum": 1}}}]):
    pid, r = g["_id"]["p"], g["_id"]["r"]
    db.products.update_one({"_id": pid}, {"$inc": {"ratingStats.count": g["n"], "ratingStats.sum": r * g["n"],
                                                   f"ratingStats.distribution.{r}": g["n"]}})
headphones = db.products.find_one({"_id": "prod:1"})
stats = headphones["ratingStats"]
print("average:", round(stats["sum"] / stats["count"], 2), "| count:", stats["count"], "| sum:", stats["sum"])
dict(sorted(stats["distribution"].items(), reverse=True))

# %% [markdown]
# The source's product document stores this very distribution with `average: 4.3`, but the distribution's own
# average is 4.12 (sum 44,642 over 10,842 reviews), and the source's update code, which rounds to one decimal, would
# store 4.1. A stored value that disagrees with the data it summarises is what a computed value looks like after a
# missed or doubled update. Two habits prevent it: keep the raw ingredients (`count` and `sum`) so the average is
# derived, never stored on its own, and keep a way to recompute everything from the source data (the `$group`
# above) to check or repair the stored statistics. The source also reads the product back inside its transaction
# to recompute the rounded average, one more round trip that a stored `sum` makes unnecessary.

# %%
source_average = 4.3  # the source's ratingStats.average
{"the source's stored average": source_average, "its distribution's average": round(stats["sum"] / stats["count"], 4),
 "rounded to one decimal, as the source's code does": round(stats["sum"] / stats["count"], 1)}

# %% [markdown]
# A page view is now one document read by `_id`. Its plan is `EXPRESS_IXSCAN`, MongoDB 8.0's fast path for an
# equality on `_id`: one index key, one document, no plan selection (lesson 01 explains it;
# [manual: explain results](https://www.mongodb.com/docs/manual/reference/explain-results/)).

# %%
def page_cost(pid):
    plan = labkit.plan_summary(db.products.find({"_id": pid}, {"name": 1, "price": 1, "ratingStats": 1}).explain())
    return {"plan": plan["stages"], "keys examined": plan["keysExamined"], "docs examined": plan["docsExamined"],
            "returned": plan["nReturned"]}


computed_page = page_cost("prod:1")
pd.DataFrame({"aggregate on read (prod:1)": read_costs["prod:1"], "computed (prod:1)": computed_page})

# %% [markdown]
# ## Keeping the statistics right: the write
#
# A new review is two writes: insert the review, `$inc` the product's statistics. Both should happen or
# neither, so they run in one [transaction](https://www.mongodb.com/docs/manual/core/transactions/), as the
# source does. `with_transaction` commits when the function returns, aborts if it raises, and retries on
# transient errors. (On a real server, transactions need a replica set or a sharded cluster; every Atlas
# cluster is one.)

# %%
client = db.client


def add_review(review, crash_after_insert=False):
    def work(s):
        db.reviews.insert_one(review, session=s)
        if crash_after_insert:
            raise RuntimeError("application crashed between the two writes")
        db.products.update_one({"_id": review["productId"]},
                               {"$inc": {"ratingStats.count": 1, "ratingStats.sum": review["rating"],
                                         f"ratingStats.distribution.{review['rating']}": 1}}, session=s)

    with client.start_session() as s:
        s.with_transaction(work)


for i, rating in enumerate([5, 4, 5, 1]):
    add_review({"_id": f"review:new-{i}", "productId": "prod:1", "userId": f"user:{900 + i}", "rating": rating,
                "createdAt": dt.datetime(2026, 10, 1, 10, i)})
stored = db.products.find_one({"_id": "prod:1"})["ratingStats"]
fresh = list(db.reviews.aggregate(rating_pipeline("prod:1")))[0]
pd.DataFrame.from_dict({"stored on product": {"count": stored["count"],
                                             "average": round(stored["sum"] / stored["count"], 4)},
                        "aggregated from reviews": {"count": fresh["count"], "average": round(fresh["avgRating"], 4)}},
                       orient="index")

# %% [markdown]
# A crash between the two writes leaves no trace: the transaction is aborted, so the review is not stored and
# the statistics are not changed.

# %%
try:
    add_review({"_id": "review:crash", "productId": "prod:1", "userId": "user:999", "rating": 1,
                "createdAt": dt.datetime(2026, 10, 1, 11)}, crash_after_insert=True)
except RuntimeError as exc:
    print("aborted:", exc)
print("review stored:", db.reviews.count_documents({"_id": "review:crash"}) == 1,
      "| count still:", db.products.find_one({"_id": "prod:1"})["ratingStats"]["count"])

# %% [markdown]
# Without transactions (a standalone server), run the two writes one after the other. The statistics update is
# still one `$inc` on one document, and a write to one document is atomic
# ([manual: atomicity](https://www.mongodb.com/docs/manual/core/write-operations-atomicity/)), so concurrent reviews
# never lose increments; only a crash between the writes can leave a review uncounted, and a periodic job that
# recomputes the statistics from `reviews` (the aggregation above, run rarely) repairs it, as in lesson 05. The
# manual's own example of the computed pattern goes further the other way: when the source data is written often,
# it recomputes the stored values on a schedule (a `$group` ending in `$merge`, every hour for example) and
# accepts that they lag behind in between.

# %% [markdown]
# ## Explore: page views per review
#
# Index keys examined for 10,000 new reviews of a product and the page views between them, **estimated** as the
# measured cost of one operation times how often it runs. Per page view: the aggregation walks the product's
# reviews (measured by explain on a product that has exactly the number of reviews the slider asks for), the
# computed design reads one key. Per review: both insert the review; the computed design also updates one
# product, found by `_id` (one key). Pick how many page views each review gets:

# %%
from labkit.resize import AccountLadder
from labkit.widgets import explorer, measured

computed_read = computed_page["keys examined"]  # the page read measured above
computed_write_extra = computed_read  # the $inc finds the product by _id exactly like a page view
slider_db = labkit.fresh_db("12_computed_slider")
slider_db.reviews.create_index([("productId", 1), ("rating", 1)])
# Products with 0, 2,000, 4,000, ... reviews are built once; the slider grows or shrinks the nearest one to
# exactly the count it asks for, so a move writes at most half a rung of reviews (and restores the product it changed
# before), however far it jumps.
slider_products = AccountLadder(slider_db.reviews, "prod:slider-", 11_000, 2_000,
                                lambda pid, i: {"productId": pid, "rating": 1 + i % 5}, id_prefix="review:")


def product_with(reviews):
    """A product with exactly `reviews` reviews, so the slider is never rounded."""
    return slider_products.account_for(reviews)


def aggregate_read_keys(pid):
    explain = slider_db.command("explain", {"aggregate": "reviews", "pipeline": rating_pipeline(pid), "cursor": {}},
                                verbosity="executionStats")
    return labkit.plan_summary(explain)["keysExamined"]


def product_figures(reviews):
    """Measured on a product with exactly `reviews` reviews: its review count and one page read's keys."""
    pid = product_with(reviews)
    return slider_db.reviews.count_documents({"productId": pid}), aggregate_read_keys(pid)


product_measured = measured(product_figures, data=slider_db)  # measured once per review count
VIEWS_PER_REVIEW = {"500 views per review (the workload)": 500, "10 views per review": 10,
                    "1 view per review": 1, "1 view per 1,000 reviews": 0.001,
                    "1 view per 10,000 reviews": 0.0001, "no views at all": 0}


def work(views_per_review, reviews):
    its_reviews, per_read = product_measured(reviews)
    writes = 10_000
    reads = round(writes * VIEWS_PER_REVIEW[views_per_review])
    aggregate = reads * per_read
    computed = reads * computed_read + writes * computed_write_extra
    break_even = computed_write_extra / (per_read - computed_read) if per_read > computed_read else None
    return {"its reviews": its_reviews, "page views": reads,
            "aggregate on read: keys examined (estimated: keys per view x views)": aggregate,
            "computed: keys examined (estimated: keys per view x views + key per review x reviews)": computed,
            "cheaper": "computed" if computed < aggregate else "aggregate on read" if aggregate < computed else "tie",
            "break-even: reviews per page view": round(1 / break_even) if break_even else "never"}


def draw(ax, values, r):
    ax.barh(["aggregate on read", "computed"],
            [r["aggregate on read: keys examined (estimated: keys per view x views)"], r["computed: keys examined (estimated: keys per view x views + key per review x reviews)"]])
    ax.set_xlabel("index keys examined")


ratio = explorer(work, sliders={"views_per_review": list(VIEWS_PER_REVIEW), "reviews": (0, 11_000, 10_850, 50)},
                 title="Page views per review", draw=draw, cache=True, data=slider_db)
ratio

# %% [markdown]
# The break-even is far below one view per review: for a product with about 10,850 reviews, one page view per
# several thousand new reviews already pays for maintaining the statistics, because a single view of the
# aggregation reads as many keys as thousands of statistics updates. The whole range, for that product:

# %%
pd.DataFrame([work(label, 10_850) for label in VIEWS_PER_REVIEW]).set_index("page views")

# %% [markdown]
# Counting keys treats a write like a read, which flatters the computed design a little: its update also writes
# the product, journals it and replicates it. At the workload's 500 views per review no weighting changes the
# verdict.
#
# ## The ledger: measured cost per operation, times the rates
#
# `labkit.Ledger` runs each operation once per design, measures what it cost from the commands it sent (round
# trips, documents written, bytes returned) and their explain (keys and documents examined), and multiplies by
# the workload's rates (the per-second figures are therefore estimates: measured cost times an assumed rate).
# The two designs, on the headphones, which now have 10,846 reviews (the four saved by the transaction above):

# %%
def show_aggregated(d):
    list(d.reviews.aggregate(rating_pipeline("prod:1")))


def show_computed(d):
    d.products.find_one({"_id": "prod:1"}, {"name": 1, "price": 1, "ratingStats": 1})


def review_plain(d):
    d.reviews.insert_one({"productId": "prod:1", "userId": "user:ledger", "rating": 4,
                          "createdAt": dt.datetime(2026, 10, 2)})


def review_computed(d):
    d.reviews.insert_one({"productId": "prod:1", "userId": "user:ledger", "rating": 4,
                          "createdAt": dt.datetime(2026, 10, 2)})
    d.products.update_one({"_id": "prod:1"}, {"$inc": {"ratingStats.count": 1, "ratingStats.sum": 4,
                                                        "ratingStats.distribution.4": 1}})


ledger = labkit.Ledger({"show a product page": 1000, "add a review": 2})
ledger.measure("aggregate on read", "show a product page", db, show_aggregated)
ledger.measure("computed", "show a product page", db, show_computed)
ledger.measure("aggregate on read", "add a review", db, review_plain)
ledger.measure("computed", "add a review", db, review_computed)
ledger.per_operation()

# %%
ledger.totals()

# %% [markdown]
# Move the rates (index keys examined per second): with no page views the computed design only costs an extra
# update per review; with even one page view a second, reading one key instead of every review's key wins by
# orders of magnitude.

# %%
ledger_widget = ledger.widget("keys examined", max_rate=2000)
ledger_widget

# %%
pd.DataFrame({f"{views} views/s": ledger.totals({"show a product page": views})["keys examined /s"]
              for views in (0, 1, 1000)})

# %% [markdown]
# ## The approximation pattern
#
# Some numbers only need to be about right: page views, downloads, likes on a trending post. Instead of a
# write per event, add N to the stored counter on one event in N (chosen at random, so bursts average out): the
# [approximation pattern](https://www.mongodb.com/docs/manual/data-modeling/design-patterns/computed-values/approximation-schema-pattern/).
# Writes drop N-fold; the stored value is off by a bounded, measurable amount. (The manual's example takes the
# other common form: it writes when the value has moved by a set step, a city's population by 100.) 10,000 views
# of one page, each view that is picked adding N with one `$inc`. A live site sends each of those writes as the
# view happens; this simulation sends them together, one `bulk_write` per N (one round trip), and the `writes`
# column is the server's own count of the updates it applied (`modified_count`):

# %%
from pymongo import UpdateOne

VIEWS = 10_000


def simulate(n, seed=3):
    page = f"page:every-{n}"
    db.pages.insert_one({"_id": page, "views": 0})
    pick = random.Random(seed)
    updates = [UpdateOne({"_id": page}, {"$inc": {"views": n}}) for _ in range(VIEWS) if pick.random() < 1 / n]
    writes = db.pages.bulk_write(updates).modified_count
    stored = db.pages.find_one({"_id": page})["views"]
    return {"true views": VIEWS, "stored views": stored, "writes": writes,
            "error": stored - VIEWS, "error %": round(100 * (stored - VIEWS) / VIEWS, 2)}


pd.DataFrame.from_dict({f"N = {n}": simulate(n) for n in (1, 10, 100)}, orient="index")

# %% [markdown]
# One run is one draw of the random choices. The error's spread over 30 runs (seeds 1 to 30) shows what to
# expect. The stored value is always N times the writes (the table above shows it), so these runs only count the
# random picks, without sending thousands more writes to the database:

# %%
def picks(n, seed):
    pick = random.Random(seed)
    return sum(1 for _ in range(VIEWS) if pick.random() < 1 / n)


def spread(n, runs=30):
    errors = [round(100 * (n * picks(n, seed) - VIEWS) / VIEWS, 2) for seed in range(1, runs + 1)]
    s = pd.Series(errors)
    return {"runs": runs, "mean error %": round(s.mean(), 2), "smallest error %": s.min(),
            "largest error %": s.max(), "std dev %": round(s.std(), 2)}


pd.DataFrame.from_dict({f"N = {n}": spread(n) for n in (10, 100)}, orient="index")

# %% [markdown]
# One write in ten needs about a tenth of the writes, for an error that stays within the range above; one in a
# hundred is cheaper still, and its error spreads far wider. Use it only where nobody needs the exact figure (never for
# money or stock).

# %% [markdown]
# ## Exercise 1: computed values in a forum
#
# A forum shows each thread with its number of replies and the time of the newest reply; threads are listed far
# more often than replies are written. Write `add_reply(db, reply)`: it stores the reply (`{_id, threadId,
# userId, text, at}`) in `db.replies` and keeps the thread's `replyCount` and `lastReplyAt` up to date, without
# reading the replies back. Replies can arrive late (a phone that was offline): `lastReplyAt` must stay the
# newest `at`, not the last one delivered. `ex2.check(add_reply)` runs it on threads of its own, with late
# replies and with two replies arriving at once.

# %%
ex2 = labkit.exercises.get("12-thread-stats")
ex2


# %% tags=["solution"]
def add_reply(db, reply):
    db.replies.insert_one(reply)
    db.threads.update_one({"_id": reply["threadId"]},
                          {"$inc": {"replyCount": 1}, "$max": {"lastReplyAt": reply["at"]}})


ex2.check(add_reply)

# %% [markdown]
# ## Exercise 2: more statistics on the product
#
# Write `add_review(db, review)` for a new design where each product also keeps `ratingStats.min` and
# `ratingStats.max` next to `count`, `sum` and `distribution`. `ex.check(add_review)` runs it on a scratch
# database with a dozen reviews across products and compares the stored statistics with an aggregation over the
# reviews (and checks that each review was stored).

# %%
ex = labkit.exercises.get("12-computed-stats")
ex


# %% tags=["solution"]
def add_review(db, review):
    r = review["rating"]
    db.reviews.insert_one(review)
    db.products.update_one(
        {"_id": review["productId"]},
        {"$inc": {"ratingStats.count": 1, "ratingStats.sum": r, f"ratingStats.distribution.{r}": 1},
         "$min": {"ratingStats.min": r}, "$max": {"ratingStats.max": r}},
    )


ex.check(add_review)

# %% [markdown]
# ## Summary
#
# - An aggregation on every read costs work proportional to the data it summarises, on every read.
# - The computed pattern does the work once per write and stores the result where the reader looks; keep the
#   raw ingredients (`count`, `sum`) so every update is a simple `$inc`.
# - Put the source write and the statistics update in one transaction where available; otherwise use one atomic
#   `$inc` and a periodic reconciliation.
# - It pays off once the work it saves on reads exceeds the work it adds to writes: for an aggregation over
#   thousands of reviews that happens after very few page views (the break-even above). The approximation pattern
#   goes further for counters that only need to be roughly right.
#
# **Next:** 13 · schema versioning.

# %% [markdown] tags=["sources"]
# ## Sources
#
# 1. [MongoDB manual: Store Computed Data (the computed pattern)](https://www.mongodb.com/docs/manual/data-modeling/design-patterns/computed-values/computed-schema-pattern/)
# 2. [MongoDB manual: Use the Approximation Pattern](https://www.mongodb.com/docs/manual/data-modeling/design-patterns/computed-values/approximation-schema-pattern/)
# 3. [mongodb/mongo jstests/aggregation/use_query_projection.js (a pipeline that needs only indexed fields is covered)](https://github.com/mongodb/mongo/blob/v8.0/jstests/aggregation/use_query_projection.js)
# 4. [MongoDB manual: Express query stages (explain results)](https://www.mongodb.com/docs/manual/reference/explain-results/)
# 5. [MongoDB manual: Atomicity and Transactions (single-document writes are atomic)](https://www.mongodb.com/docs/manual/core/write-operations-atomicity/)
# 6. [MongoDB manual: Transactions](https://www.mongodb.com/docs/manual/core/transactions/)

# %% [markdown] tags=["navigation"]
# [← 11 · Outlier: embed for the common case, overflow for the viral post](11_outlier.ipynb) · [Contents](../CONTENTS.md) · [13 · Schema versioning: v1 name, v2 firstName/lastName, no downtime →](13_schema_versioning.ipynb)
