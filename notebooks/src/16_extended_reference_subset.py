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
#     exercise_minutes: 15
#     title: "Extended reference and subset: copy only what the hot read needs"
#     section: Patterns
#     demo: "Build the day's packing list three ways (two queries, $lookup, extended reference) and compare round trips and documents examined; then push reviews with $slice and watch the product document stay small."
#     mistakes: ["copying the whole customer into every order instead of the two or three fields the read needs", "forgetting the index on the copied reference (customer._id) that a name change has to update", "finding the copies to rename by the old copied name instead of the copied id, so a namesake's copies are renamed too", "$push without $slice, so the 'recent' array grows without bound", "$position: 0 without $sort when reviews can arrive out of date order"]
#     sources:
#     - title: "MongoDB manual: Handle Duplicate Data (copying fields between collections)"
#       url: https://www.mongodb.com/docs/manual/data-modeling/handle-duplicate-data/
#     - title: "MongoDB manual: Group Data with the Subset Pattern"
#       url: https://www.mongodb.com/docs/manual/data-modeling/design-patterns/group-data/subset-pattern/
#     - title: "MongoDB manual: $lookup (aggregation stage)"
#       url: https://www.mongodb.com/docs/manual/reference/operator/aggregation/lookup/
#     - title: "mongodb/mongo jstests/noPassthrough/query/lookup/lookup_pushdown.js (EQ_LOOKUP and its join strategies)"
#       url: https://github.com/mongodb/mongo/blob/v8.0/jstests/noPassthrough/query/lookup/lookup_pushdown.js
#     - title: "MongoDB manual: $push (with $each, $position, $sort and $slice)"
#       url: https://www.mongodb.com/docs/manual/reference/operator/update/push/
#     - title: "mongodb/mongo jstests/core/query/add_skip_stage_before_fetch.js (SKIP placed below FETCH)"
#       url: https://github.com/mongodb/mongo/blob/v8.0/jstests/core/query/add_skip_stage_before_fetch.js
#     - title: "MongoDB manual: $collStats (aggregation stage)"
#       url: https://www.mongodb.com/docs/manual/reference/operator/aggregation/collStats/
#     - title: "MongoDB manual: Iterate a Cursor (cursor batches: 101 documents in the first batch)"
#       url: https://www.mongodb.com/docs/manual/tutorial/iterate-a-cursor/
# ---

# %% [markdown]
# # 16 · Extended reference and subset: copy only what the hot read needs
#
# **You will learn**
# - the **extended reference** pattern: keep the reference, and copy next to it the few fields a frequent read needs;
# - to measure the cost of resolving a reference on every read: round trips and documents examined;
# - the **subset** pattern: keep a bounded, hot part of a big one-to-many (the 5 newest reviews) inside the parent,
#   and all of it in its own collection;
# - `$push` with `$each`, `$position`/`$sort` and `$slice` to keep that subset bounded in one write.
#
# **Time:** about 35 minutes.

# %%
import datetime as dt
import random

import bson
import pandas as pd

import labkit
from labkit.sizes import MAX_BSON_SIZE, doc_size_with_array

db = labkit.fresh_db("16_ext_ref_subset")
print("engine:", labkit.describe(db.client))

# %% [markdown]
# An online shop: 500 customers with full profiles (addresses, preferences, marketing flags, notes), and 3,000 orders
# over a month that reference their customer by id. Seeded, so every run builds the same data.

# %%
rng = random.Random(16)
CITIES = ["Lyon", "Porto", "Leeds", "Gent", "Bonn", "Turin", "Cork", "Graz", "Brno", "Malmo"]
START = dt.datetime(2026, 9, 1)


def make_customer(i):
    city = CITIES[i % len(CITIES)]
    return {"_id": f"cust:{i:04d}", "name": f"Customer {i:04d}", "email": f"c{i:04d}@example.com",
            "phone": f"+33 1 {i:04d} {i * 7 % 10000:04d}",
            "address": {"street": f"{rng.randint(1, 200)} Market Street", "city": city, "zip": f"{10000 + i}"},
            "addresses": [{"label": f"address {n}", "street": f"{n} Side Road", "city": city} for n in range(3)],
            "preferences": {"newsletter": i % 2 == 0, "language": "en", "currency": "EUR"},
            "notes": "customer since 2019; prefers deliveries after 6 pm; " * 12,
            "createdAt": dt.datetime(2019, 1, 1) + dt.timedelta(days=i)}


customers = [make_customer(i) for i in range(1, 501)]
orders = []
for n in range(1, 3001):
    cust = customers[rng.randrange(len(customers))]
    items = [{"sku": f"sku:{rng.randint(1, 900):03d}", "qty": rng.randint(1, 3), "price": rng.randint(3, 90)}
             for _ in range(rng.randint(1, 4))]
    orders.append({"_id": f"order:{n:05d}", "customerId": cust["_id"], "items": items,
                   "total": sum(i["qty"] * i["price"] for i in items),
                   "createdAt": START + dt.timedelta(minutes=14 * n + rng.randint(0, 13))})
db.customers.insert_many(customers)
db.orders.insert_many(orders)
db.orders.create_index("createdAt")
print("customers:", db.customers.count_documents({}), "| orders:", db.orders.count_documents({}))
print(f"one customer document: {len(bson.encode(customers[0])):,} bytes")

# %% [markdown]
# ## Part 1 · Extended reference

# %%
labkit.workload_table([
    ("order page", "read", "200", "order + customer name and address"),
    ("packing list: a day's orders", "read", "1", "order + 2 customer fields"),
    ("customer changes name", "write", "1", ""),
    ("customer moves", "write", "1", "past orders keep the address they were shipped to"),
], rate="per second (assumed)")

# %% [markdown]
# The rates are this lesson's assumption (the ledger below lets you change them). The customer profile is big and
# mostly irrelevant to orders: the order views need its name and address only.

# %%
day = {"createdAt": {"$gte": dt.datetime(2026, 9, 10), "$lt": dt.datetime(2026, 9, 11)}}
print("orders on 2026-09-10:", db.orders.count_documents(day))


# %% [markdown]
# A helper reads the numbers this lesson compares from `explain()`:

# %%
def examined(cursor):
    stats = cursor.explain()["executionStats"]
    return {"keys examined": stats["totalKeysExamined"], "docs examined": stats["totalDocsExamined"],
            "returned": stats["nReturned"]}


# %% [markdown]
# ### Design A: reference only, resolved with a second query
#
# One query for the day's orders, then one `$in` query for their customers: two queries, and every customer
# document read in full to use two of its fields.

# %%
day_orders = list(db.orders.find(day).sort("_id", 1))
ids = sorted({o["customerId"] for o in day_orders})
who = {c["_id"]: c for c in db.customers.find({"_id": {"$in": ids}}, {"name": 1, "address": 1})}
packing_a = [{"order": o["_id"], "name": who[o["customerId"]]["name"], "city": who[o["customerId"]]["address"]["city"]}
             for o in day_orders]
two_queries = [examined(db.orders.find(day)), examined(db.customers.find({"_id": {"$in": ids}}))]
pd.DataFrame(two_queries, index=["1: orders of the day", "2: their customers"])

# %% [markdown]
# ### Design B: reference only, resolved with `$lookup`
#
# `$lookup` saves the second query, but the server still does the join work: for every order it looks up
# one customer through the `_id` index.

# %%
lookup_pipeline = [
    {"$match": day},
    {"$lookup": {"from": "customers", "localField": "customerId", "foreignField": "_id", "as": "customer"}},
    {"$project": {"customerId": 1, "customer.name": 1, "customer.address": 1}},
    {"$sort": {"_id": 1}},
]
packing_b = [{"order": o["_id"], "name": o["customer"][0]["name"], "city": o["customer"][0]["address"]["city"]}
             for o in db.orders.aggregate(lookup_pipeline)]
print("same packing list as design A:", packing_a == packing_b)

# %% [markdown]
# `explain` of the aggregation shows the join's work. MongoDB 8.0 runs this
# [`$lookup`](https://www.mongodb.com/docs/manual/reference/operator/aggregation/lookup/) (the
# `localField`/`foreignField` form) in its slot-based execution engine (SBE, the newer of the server's two query
# engines; lesson 03): the join is an `EQ_LOOKUP` node in the `$cursor`'s `queryPlan`, with its strategy
# (`IndexedLoopJoin` on the `_id` index: one lookup per order) and the totals of both sides in its
# `executionStats` ([mongo jstest: lookup_pushdown.js](https://github.com/mongodb/mongo/blob/v8.0/jstests/noPassthrough/query/lookup/lookup_pushdown.js)).
# The classic engine instead lists a `$lookup` stage with its own counters; the helper below reads both forms.
#
# **Predict first.** How many documents does the server examine for this packing list (the day's orders are
# counted above)? Record your number with `predict_lookup.predict(...)` before running the measuring cell.

# %%
predict_lookup = labkit.exercises.get("16-predict-lookup-docs")
predict_lookup

# %% tags=["solution"]
predict_lookup.predict(2 * len(day_orders))  # each order, plus its customer

# %%
def aggregate_cost(collection, pipeline):
    explain = db.command("explain", {"aggregate": collection, "pipeline": pipeline, "cursor": {}},
                         verbosity="executionStats")
    part = explain["stages"][0]["$cursor"] if "stages" in explain else explain
    stats = part["executionStats"]
    keys, docs = stats["totalKeysExamined"], stats["totalDocsExamined"]
    joins = [s for s in explain.get("stages", []) if "$lookup" in s]  # classic engine
    used = {i for s in joins for i in s.get("indexesUsed", [])}
    node = part["queryPlanner"]["winningPlan"].get("queryPlan")  # SBE: EQ_LOOKUP nodes
    while node:
        if node["stage"] == "EQ_LOOKUP":
            used.add("%s (%s)" % (node.get("indexName", "no index"), node["strategy"]))
        node = node.get("inputStage")
    return {"keys examined": keys + sum(s["totalKeysExamined"] for s in joins),
            "docs examined": docs + sum(s["totalDocsExamined"] for s in joins),
            "$lookup indexes used": sorted(used)}


# %% tags=["reveal"]
lookup_cost = aggregate_cost("orders", lookup_pipeline)
lookup_cost

# %% tags=["reveal"]
predict_lookup.check(lookup_cost["docs examined"])

# %% [markdown]
# ### Design C: extended reference
#
# Keep `customerId`, and copy the two fields the order views need into the order, at the time of the order:
# `customer: {_id, name, address}`. The address copy is a **snapshot**: it records where this order was shipped, so
# it must *not* follow later moves. The manual weighs such copies the same way: a read without a join against the
# work of updating every copy when the original changes
# ([manual: handle duplicate data](https://www.mongodb.com/docs/manual/data-modeling/handle-duplicate-data/)).

# %%
snapshot = {c["_id"]: {"_id": c["_id"], "name": c["name"], "address": c["address"]} for c in customers}
db.orders_ext.insert_many([o | {"customer": snapshot[o["customerId"]]} for o in orders])
db.orders_ext.create_index("createdAt")
db.orders_ext.find_one({"_id": "order:00001"}, {"items": 0})

# %%
packing_c = [{"order": o["_id"], "name": o["customer"]["name"], "city": o["customer"]["address"]["city"]}
             for o in db.orders_ext.find(day, {"customer": 1}).sort("_id", 1)]
print("same packing list:", packing_c == packing_a)
ext_cost = examined(db.orders_ext.find(day))
ext_cost

# %% [markdown]
# ### Side by side
#
# The collection sizes come from the
# [`$collStats`](https://www.mongodb.com/docs/manual/reference/operator/aggregation/collStats/) stage.

# %%
sizes = {name: next(db[name].aggregate([{"$collStats": {"storageStats": {}}}]))["storageStats"]["size"]
         for name in ("orders", "orders_ext")}
trips = {design: labkit.ledger.measure(db, run).round_trips for design, run in {  # commands sent, from the run
    "A: two queries": lambda d: [list(d.orders.find(day)), list(d.customers.find({"_id": {"$in": ids}}))],
    "B: $lookup": lambda d: list(d.orders.aggregate(lookup_pipeline)),
    "C: extended reference": lambda d: list(d.orders_ext.find(day))}.items()}
part1 = pd.DataFrame({
    "A: two queries": {"round trips": trips["A: two queries"],
                       "docs examined": sum(q["docs examined"] for q in two_queries),
                       "orders collection bytes": sizes["orders"]},
    "B: $lookup": {"round trips": trips["B: $lookup"], "docs examined": lookup_cost["docs examined"],
                   "orders collection bytes": sizes["orders"]},
    "C: extended reference": {"round trips": trips["C: extended reference"], "docs examined": ext_cost["docs examined"],
                              "orders collection bytes": sizes["orders_ext"]},
}).T
part1

# %% [markdown]
# Each design needs one round trip more than it sends queries: a `find` or an `aggregate` returns at most 101
# documents in its first batch, so the rest of the day's orders come in a second batch, a `getMore`
# ([manual: cursor batches](https://www.mongodb.com/docs/manual/tutorial/iterate-a-cursor/)).
#
# The extended reference reads each order once and nothing else. The price is storage (every order carries a copy)
# and the copies themselves: when a customer changes **name**, past orders may need the new one. The copy lives
# in many orders, so index it and update them all in one statement:

# %%
db.orders_ext.create_index("customer._id")
rename = db.orders_ext.update_many({"customer._id": "cust:0007"}, {"$set": {"customer.name": "Customer Seven"}})
db.customers.update_one({"_id": "cust:0007"}, {"$set": {"name": "Customer Seven"}})
print("orders rewritten for one name change:", rename.modified_count)
examined(db.orders_ext.find({"customer._id": "cust:0007"}))

# %% [markdown]
# Copy fields that change rarely (or whose old value is the right one, like a shipping address) and that the hot
# read needs. A field that changes often is a poor candidate: every change fans out to all the copies.

# %% [markdown]
# ## The ledger: copy or join, by the rates
#
# Which design is cheaper depends on how often each operation runs. `labkit.Ledger` runs each operation once per
# design and measures it from the commands it sends (round trips, documents written, bytes returned) and their
# `explain` (keys and documents examined); `totals()` multiplies each cost by the rates of the workload table.
# A customer's move costs nothing extra in design C (the copied address is a snapshot), so it is left out.

# %%
RATES = {"order page": 200, "packing list": 1, "customer changes name": 1}
ORDER = "order:01500"
RENAMED = "cust:0042"
join = [{"$lookup": {"from": "customers", "localField": "customerId", "foreignField": "_id", "as": "customer"}},
        {"$project": {"customerId": 1, "items": 1, "total": 1, "customer.name": 1, "customer.address": 1}}]


def page_two_queries(d):
    order = d.orders.find_one({"_id": ORDER})
    return order, d.customers.find_one({"_id": order["customerId"]}, {"name": 1, "address": 1})


def packing_two_queries(d):
    todo = list(d.orders.find(day))
    return todo, list(d.customers.find({"_id": {"$in": sorted({o["customerId"] for o in todo})}},
                                       {"name": 1, "address": 1}))


def rename_reference(name):
    return lambda d: d.customers.update_one({"_id": RENAMED}, {"$set": {"name": name}})


def rename_extended(d):
    d.customers.update_one({"_id": RENAMED}, {"$set": {"name": "Customer 42 (C)"}})
    d.orders_ext.update_many({"customer._id": RENAMED}, {"$set": {"customer.name": "Customer 42 (C)"}})


designs = {
    "A: two queries": {"order page": page_two_queries, "packing list": packing_two_queries,
                       "customer changes name": rename_reference("Customer 42 (A)")},
    "B: $lookup": {"order page": lambda d: list(d.orders.aggregate([{"$match": {"_id": ORDER}}] + join)),
                   "packing list": lambda d: list(d.orders.aggregate([{"$match": day}] + join)),
                   "customer changes name": rename_reference("Customer 42 (B)")},
    "C: extended reference": {"order page": lambda d: d.orders_ext.find_one({"_id": ORDER}),
                              "packing list": lambda d: list(d.orders_ext.find(day)),
                              "customer changes name": rename_extended},
}
ledger = labkit.Ledger(RATES)
for design, operations in designs.items():
    for operation, run in operations.items():
        ledger.measure(design, operation, db, run)
ledger.per_operation()

# %% [markdown]
# Per second, at the rates of the table:

# %%
ledger.totals()

# %% [markdown]
# The copy saves documents examined on every order page and packing list, and costs extra writes on every name
# change. The break-even name-change rate, from the measured costs (design C against design B); above it, a
# design without copies wins. (It counts a document written like a document read; a write also journals and
# replicates, so the real break-even lies somewhat lower.)

# %%
designs = ("C: extended reference", "B: $lookup")
saved = sum(RATES[op] * ledger.difference("docs examined", op, *designs) for op in ("order page", "packing list"))
extra = -ledger.difference("docs examined", "customer changes name", *designs)
break_even = ledger.break_even("customer changes name", *designs)
print(f"design C saves {saved:,.0f} documents examined per second on reads and costs {extra:,.0f} more per name "
      f"change: it stays ahead below {break_even:,.0f} name changes per second")
{f"{rate:,.0f} name changes/s": ledger.best("docs examined", {"customer changes name": rate})
 for rate in (RATES["customer changes name"], round(break_even * 2))}

# %% [markdown]
# Move the rates and watch the better design flip (documents examined per second):

# %%
ledger_widget = ledger.widget("docs examined", max_rate=400)
ledger_widget

# %% [markdown]
# ## Part 2 · Subset

# %%
labkit.workload_table([
    ("product page", "read", "500", "product + its 5 newest reviews"),
    ("\"all reviews\" page", "read", "5", "any page of a product's reviews, newest first"),
    ("write a review", "write", "2", ""),
], rate="per second (assumed)")

# %% [markdown]
# Reviews are a one-to-many that can grow without bound: a popular product collects thousands.

# %%
REVIEW_TEXT = "Solid build, arrived on time, would buy again. Battery could last longer. " * 3


def make_review(product, n):
    return {"_id": f"rev:{product}:{n:05d}", "productId": f"prod:{product}", "userId": f"user:{(n * 37) % 9000:04d}",
            "rating": 1 + (n * 7 + product) % 5, "text": REVIEW_TEXT,
            "createdAt": dt.datetime(2026, 1, 1) + dt.timedelta(hours=3 * n + product)}


review_counts = {1: 1000, 2: 300, 3: 40, 4: 5, 5: 0}
products = [{"_id": f"prod:{p}", "name": f"Headphones model {p}", "price": 20 + 10 * p} for p in review_counts]
all_reviews = {p: [make_review(p, n) for n in range(1, c + 1)] for p, c in review_counts.items()}
print({f"prod:{p}": len(r) for p, r in all_reviews.items()})

# %% [markdown]
# ### Naive: every review embedded in the product
#
# The page needs 5 reviews, but reading the product brings all of them.

# %%
db.products_all.insert_many([p | {"reviews": [{k: v for k, v in r.items() if k != "productId"}
                                               for r in reversed(all_reviews[int(p["_id"][5:])])]}
                             for p in products])
embedded_sizes = {d["_id"]: len(bson.encode(d)) for d in db.products_all.find().sort("_id", 1)}
embedded_sizes

# %% [markdown]
# ### Subset: the 5 newest in the product, all of them in `reviews`
#
# Every review is written to the `reviews` collection (the full, paginated history). The product keeps a copy of the
# newest five in `recentReviews`: the
# [subset pattern](https://www.mongodb.com/docs/manual/data-modeling/design-patterns/group-data/subset-pattern/).
# One [`$push`](https://www.mongodb.com/docs/manual/reference/operator/update/push/) adds the new review at the front
# (`$position: 0`) and trims the array to five (`$slice: 5`), so the product can never grow past five reviews.

# %%
db.products.insert_many([p | {"recentReviews": [], "reviewCount": 0} for p in products])
db.reviews.create_index([("productId", 1), ("createdAt", -1)])


def add_review(review):
    db.reviews.insert_one(review)
    summary = {k: review[k] for k in ("_id", "userId", "rating", "text", "createdAt")}
    db.products.update_one({"_id": review["productId"]},
                           {"$push": {"recentReviews": {"$each": [summary], "$position": 0, "$slice": 5}},
                            "$inc": {"reviewCount": 1}})


for p in sorted(all_reviews):
    for review in all_reviews[p]:
        add_review(review)
page = db.products.find_one({"_id": "prod:1"})
print("reviewCount:", page["reviewCount"], "| embedded:", [r["_id"] for r in page["recentReviews"]])

# %% [markdown]
# `$position: 0` assumes reviews arrive in date order. When they may not (an import, a retried write), let `$sort`
# order the array instead: `{"$each": [r], "$sort": {"createdAt": -1}, "$slice": 5}` keeps the five newest whatever
# the arrival order.
#
# The product page is now one document of bounded size:

# %%
product_page = pd.DataFrame({
    "all reviews embedded (bytes)": embedded_sizes,
    "subset of 5 (bytes)": {d["_id"]: len(bson.encode(d)) for d in db.products.find().sort("_id", 1)},
    "reviews": {f"prod:{p}": c for p, c in review_counts.items()},
})
product_page["docs read for the page"] = 1
product_page

# %% [markdown]
# The full history is one indexed query away, a page at a time, only for the learners who click "all reviews":

# %%
examined(db.reviews.find({"productId": "prod:1"}).sort("createdAt", -1).skip(20).limit(20))

# %% [markdown]
# Page 2 walks past the 20 keys of page 1 ("keys examined"), but it reads only the documents it returns
# ("docs examined" equals "returned"): the index answers the whole filter and gives the order, so the server
# places the SKIP stage below the FETCH and skipped reviews are never fetched
# ([mongo jstest: add_skip_stage_before_fetch.js](https://github.com/mongodb/mongo/blob/v8.0/jstests/core/query/add_skip_stage_before_fetch.js)):

# %%
labkit.plan_summary(db.reviews.find({"productId": "prod:1"}).sort("createdAt", -1).skip(20).limit(20)
                    .explain())["stages"]

# %% [markdown]
# ## Explore: reviews per product
#
# The product document's exact BSON size when it embeds every review, against the subset design that keeps 5.
# Sizes are computed with `labkit.sizes` (exact `bson.encode` arithmetic), so a slider step is instant.

# %%
from labkit.plots import bars_against_limit
from labkit.widgets import explorer

base_product = dict(products[0])
embedded_review = {k: v for k, v in make_review(1, 1).items() if k != "productId"}


def review_sizes(reviews):
    everything = doc_size_with_array(base_product, "reviews", reviews,
                                     lambda i: embedded_review)
    subset = doc_size_with_array(base_product | {"reviewCount": 0}, "recentReviews", min(reviews, 5),
                                 lambda i: embedded_review)
    return {"reviews": reviews,
            "product with all reviews (bytes)": everything,
            "product with the 5 newest (bytes)": subset,
            "all reviews fit in 16 MiB": everything <= MAX_BSON_SIZE,
            "bytes read per product page, all embedded": everything,
            "bytes read per product page, subset": subset}


review_explorer = explorer(
    review_sizes, sliders={"reviews": (0, 60_000, 2_000, 500)}, title="Reviews per product",
    draw=lambda ax, v, r: bars_against_limit(ax, ["all embedded", "subset of 5"],
                                             [r["product with all reviews (bytes)"],
                                              r["product with the 5 newest (bytes)"]], title="product document"))
review_explorer

# %% [markdown]
# ## Exercise 1 · Extended reference for support tickets
#
# A help desk: `agents` hold big profiles (bio, skills, shifts); the ticket list, read all day, shows each ticket
# with its agent's **name and team**; agents change name rarely. Write
# - `open_ticket(db, ticket)`: insert the ticket (it carries `agentId`) with an extended reference
#   `agent: {_id, name, team}` copied from `db.agents`, in one insert;
# - `rename_agent(db, agent_id, new_name)`: change the name in the agent and in every copy, in two writes;
#
# and create on `practice.tickets` the index the rename needs. `ex_tickets.check(practice, open_ticket,
# rename_agent)` runs both on agents and tickets of its own (with your index), watching the writes and the plan.

# %%
practice = labkit.fresh_db("16_practice")
ex_tickets = labkit.exercises.get("16-extended-reference-tickets")
ex_tickets


# %% tags=["solution"]
def open_ticket(db, ticket):
    agent = db.agents.find_one({"_id": ticket["agentId"]}, {"name": 1, "team": 1})
    db.tickets.insert_one(ticket | {"agent": agent})


def rename_agent(db, agent_id, new_name):
    db.agents.update_one({"_id": agent_id}, {"$set": {"name": new_name}})
    db.tickets.update_many({"agent._id": agent_id}, {"$set": {"agent.name": new_name}})


practice.tickets.create_index("agent._id")
ex_tickets.check(practice, open_ticket, rename_agent)

# %% [markdown]
# ## Exercise 2 · A subset that stays right when reviews arrive out of order
#
# Reviews imported from a partner arrive **out of date order**. Write `add_review(db, review)` that stores the
# review in `db.reviews` and keeps `recentReviews` on its product to the **5 newest by `createdAt`, newest first**,
# with one update on the product. `ex.check(practice, add_review)` feeds it reviews in a shuffled order.

# %%
practice.products.insert_one({"_id": "prod:1", "name": "Headphones model 1", "recentReviews": []})
ex = labkit.exercises.get("16-subset")
ex


# %% tags=["solution"]
def add_review(db, review):
    db.reviews.insert_one(review)
    db.products.update_one({"_id": review["productId"]}, {"$push": {"recentReviews": {
        "$each": [{k: v for k, v in review.items() if k != "productId"}], "$sort": {"createdAt": -1}, "$slice": 5}}})


ex.check(practice, add_review)

# %% [markdown]
# ## Summary
#
# - Extended reference: keep the id *and* copy the few, rarely changing fields a frequent read needs. The read
#   becomes one query over one collection; the cost is storage and fanning out the rare changes (index the copied id).
# - Whether the copy pays depends on the rates: the ledger multiplies each design's measured cost by them, and the
#   break-even above is the name-change rate at which the join becomes cheaper.
# - A copied address can be a deliberate snapshot: past orders keep the address they were shipped to.
# - Subset: the parent holds a bounded slice of a big one-to-many (`$push` + `$each` + `$position`/`$sort` +
#   `$slice`), the child collection holds everything. The hot page reads one small document.
#
# **Next:** 17 · trees: parent references, ancestors, materialized paths and `$graphLookup`.

# %% [markdown] tags=["sources"]
# ## Sources
#
# 1. [MongoDB manual: Handle Duplicate Data (copying fields between collections)](https://www.mongodb.com/docs/manual/data-modeling/handle-duplicate-data/)
# 2. [MongoDB manual: Group Data with the Subset Pattern](https://www.mongodb.com/docs/manual/data-modeling/design-patterns/group-data/subset-pattern/)
# 3. [MongoDB manual: \$lookup (aggregation stage)](https://www.mongodb.com/docs/manual/reference/operator/aggregation/lookup/)
# 4. [mongodb/mongo jstests/noPassthrough/query/lookup/lookup_pushdown.js (EQ_LOOKUP and its join strategies)](https://github.com/mongodb/mongo/blob/v8.0/jstests/noPassthrough/query/lookup/lookup_pushdown.js)
# 5. [MongoDB manual: \$push (with \$each, \$position, \$sort and \$slice)](https://www.mongodb.com/docs/manual/reference/operator/update/push/)
# 6. [mongodb/mongo jstests/core/query/add_skip_stage_before_fetch.js (SKIP placed below FETCH)](https://github.com/mongodb/mongo/blob/v8.0/jstests/core/query/add_skip_stage_before_fetch.js)
# 7. [MongoDB manual: \$collStats (aggregation stage)](https://www.mongodb.com/docs/manual/reference/operator/aggregation/collStats/)
# 8. [MongoDB manual: Iterate a Cursor (cursor batches: 101 documents in the first batch)](https://www.mongodb.com/docs/manual/tutorial/iterate-a-cursor/)

# %% [markdown] tags=["navigation"]
# [← 15 · Attribute pattern: many similar fields, one index](15_attribute.ipynb) · [Contents](../CONTENTS.md) · [17 · Trees: parent and child references, ancestors, materialized paths, \$graphLookup →](17_trees.ipynb)
