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
#     exercise_minutes: 10
#     title: "Anti-pattern: a massive number of collections"
#     section: Anti-patterns
#     demo: "Count collections and indexes with dbStats, merge 300 per-tenant-per-day collections into one, count again, then shorten the retention with collMod and watch one TTL pass."
#     mistakes: ["Creating a collection per tenant, day or device type", "Dropping old collections instead of expiring documents with a TTL index", "Forgetting to put the former collection name in the leading index field", "Expecting a time-series collection to delete each measurement the moment it expires"]
#     sources:
#     - title: "MongoDB manual: Reduce the Number of Collections"
#       url: https://www.mongodb.com/docs/manual/data-modeling/design-antipatterns/reduce-collections/
#     - title: "MongoDB Atlas FAQ: How many collections can a single Atlas cluster have?"
#       url: https://www.mongodb.com/docs/atlas/reference/faq/database/
#     - title: "MongoDB manual: dbStats"
#       url: https://www.mongodb.com/docs/manual/reference/command/dbStats/
#     - title: "MongoDB manual: $merge (aggregation stage)"
#       url: https://www.mongodb.com/docs/manual/reference/operator/aggregation/merge/
#     - title: "MongoDB manual: TTL Indexes"
#       url: https://www.mongodb.com/docs/manual/core/index-ttl/
#     - title: "MongoDB manual: collMod"
#       url: https://www.mongodb.com/docs/manual/reference/command/collMod/
#     - title: "MongoDB manual: Set up Automatic Removal for Time Series Collections (TTL)"
#       url: https://www.mongodb.com/docs/manual/core/timeseries/timeseries-automatic-removal/
#     - title: "mongodb/mongo jstests/noPassthrough/timeseries/timeseries_ttl.js"
#       url: https://github.com/mongodb/mongo/blob/v8.0/jstests/noPassthrough/timeseries/timeseries_ttl.js
#     - title: "MongoDB manual: $collStats (aggregation stage)"
#       url: https://www.mongodb.com/docs/manual/reference/operator/aggregation/collStats/
# ---

# %% [markdown]
# # 34 · Anti-pattern: a massive number of collections
#
# **You will learn**
# - why a collection per tenant or per day scales badly: every ordinary collection brings at least its `_id`
#   index, and the storage engine manages each collection and index separately;
# - to detect it with `dbStats` and with collection names that contain ids or dates, and where "too many"
#   starts on Atlas;
# - to merge the collections into one, turning the name into a field that leads the indexes;
# - to expire old data with a TTL index (or a time-series collection) instead of dropping collections, and how
#   a time-series collection's expiry differs.
#
# **Time:** about 30 minutes.

# %%
import datetime as dt
import re

import matplotlib.pyplot as plt
import pandas as pd

import labkit

db = labkit.fresh_db("34_massive_collections")
print("engine:", labkit.describe(db.client))

# %% [markdown]
# A multi-tenant order service that "partitions" its data by creating one collection per tenant per day, named
# after the date (`orders_t03_<year>_<month>_<day>`): 20 tenants × the last 15 days, each collection with its
# own `customerId` index. The dates are the 15 days up to today, so that a real server's background expiry
# (below) sees the data as this lesson describes it; the outputs show counts and ages, never the dates. (In
# shared-cluster mode, `LABKIT_SHARED=1`, the demonstration uses 4 tenants, so a room of learners does not
# create thousands of collections on one cluster; the conclusions are the same.)

# %%
NOW = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None, microsecond=0)
TENANTS = [f"t{t:02d}" for t in range(labkit.shared.scale(20, 4))]
DAYS_AGO = list(range(14, -1, -1))  # 14 days ago ... today


def day_start(ago):
    """The first order of a day: `ago` days and 4 hours before now (its 12 orders span the next 3 hours)."""
    return NOW - dt.timedelta(days=ago, hours=4)


def coll_name(tenant, ago):
    return f"orders_{tenant}_{day_start(ago):%Y_%m_%d}"


for ti, tenant in enumerate(TENANTS):
    for di, ago in enumerate(DAYS_AGO):
        coll = db[coll_name(tenant, ago)]
        coll.insert_many([{"_id": f"{tenant}:d{di:02d}:{k:03d}", "customerId": f"c{(k * 7 + ti) % 40:03d}",
                           "total": round(5 + (k * 13 + di) % 200 * 1.5, 2),
                           "createdAt": day_start(ago) + dt.timedelta(minutes=17 * k)}
                          for k in range(12)])
        labkit.shared.create_index(coll, [("customerId", 1)])  # pauses between builds in shared mode
labkit.shared.note(f"{len(TENANTS)} tenants × {len(DAYS_AGO)} days = {len(TENANTS) * len(DAYS_AGO)} collections "
                   "instead of 20 × 15 = 300, index builds staggered")
print("collections created:", len(db.list_collection_names()))

# %% [markdown]
# ## The workload
#
# What the application does, how often, and what each operation needs:

# %%
labkit.workload_table([
    ('record an order', 'write', '30/s', 'one tenant, today'),
    ("a customer's orders, last 15 days", 'read', '50/s', 'one tenant, one customer, newest first'),
    ('delete data older than 15 days', 'write', 'once a day', 'whole days'),
])
# %% [markdown]
# ## Detect: `dbStats` and the names
#
# `dbStats` counts collections and indexes without reading any data
# ([manual: `dbStats`](https://www.mongodb.com/docs/manual/reference/command/dbStats/)):

# %%
before = db.command("dbStats")
{k: before[k] for k in ("collections", "objects", "indexes")}

# %% [markdown]
# Names that contain dates or ids are the giveaway. A regular expression over the listing finds them (the
# dates are shown masked):

# %%
names = sorted(db.list_collection_names())
pattern = re.compile(r"^(?P<prefix>[a-z]+)_(?P<tenant>t\d+)_(?P<day>\d{4}_\d{2}_\d{2})$")
matches = [pattern.match(n) for n in names]
old = [n for n, m in zip(names, matches) if m]  # on a server the listing also holds labkit's marker, `_labkit`
families = pd.Series([m["prefix"] for m in matches if m]).value_counts()
print(f"{sum(bool(m) for m in matches)} of {len(names)} collection names contain a tenant id and a date")
print("first three:", [re.sub(r"\d{4}_\d{2}_\d{2}$", "<date>", n) for n in old[:3]])
families

# %% [markdown]
# **Where does "too many" start?** The manual's warning is qualitative: every collection gets a default `_id`
# index, and too many collections and indexes strain replica-set resources and decrease performance
# ([manual: reduce the number of collections](https://www.mongodb.com/docs/manual/data-modeling/design-antipatterns/reduce-collections/)).
# Atlas gives figures: a recommended maximum of collections **and indexes combined** per cluster tier, 5,000 on
# M10, 10,000 on M20 and M30, 100,000 on M40 and above
# ([Atlas FAQ](https://www.mongodb.com/docs/atlas/reference/faq/database/)). Past them, the FAQ says,
# checkpoints take longer and operations might run more slowly; how much depends on how many of the collections
# are in use. This database's count against them:

# %%
ATLAS_RECOMMENDED = {"M10": 5_000, "M20 / M30": 10_000, "M40+": 100_000}
combined = before["collections"] + before["indexes"]
pd.Series({tier: f"{combined:,} of {limit:,} ({combined / limit:.0%})" for tier, limit in ATLAS_RECOMMENDED.items()},
          name="collections + indexes")

# %% [markdown]
# 20 tenants and 15 days already use 18% of an M10's recommended total, and the count grows with tenants × days.
#
# The read in the workload, a customer's orders for the last 15 days, means one query per daily collection:
# 15 round trips, each through its own small index.

# %%
def customer_orders_split(tenant, customer):
    trips, found, keys = 0, [], 0
    for ago in DAYS_AGO:
        cursor = db[coll_name(tenant, ago)].find({"customerId": customer})
        keys += cursor.explain()["executionStats"]["totalKeysExamined"]
        found += list(db[coll_name(tenant, ago)].find({"customerId": customer}))
        trips += 1
    return trips, found, keys


trips_before, orders_before, keys_before = customer_orders_split("t03", "c010")
print(f"round trips: {trips_before}, orders found: {len(orders_before)}, keys examined: {keys_before}")

# %% [markdown]
# ## The fix: one collection, the name becomes fields
#
# All orders go into `orders`, each carrying `tenantId` and `day`. The index the read needs leads with the
# tenant, then the customer, then time (newest first).
#
# The merge runs on the server: one aggregation per old collection adds the fields its name encoded and ends
# in `$merge`, which inserts into `orders` (and, re-run, would leave already-merged orders alone,
# [manual: `$merge`](https://www.mongodb.com/docs/manual/reference/operator/aggregation/merge/)).

# %%
for name in old:
    m = pattern.match(name)
    db[name].aggregate([
        {"$addFields": {"tenantId": m["tenant"], "day": m["day"].replace("_", "-")}},
        {"$merge": {"into": "orders", "on": "_id", "whenMatched": "keepExisting", "whenNotMatched": "insert"}},
    ])
db.orders.create_index([("tenantId", 1), ("customerId", 1), ("createdAt", -1)])
print("orders:", db.orders.count_documents({}))

# %% [markdown]
# Expiry: instead of dropping yesterday's collections, a TTL ("time to live") index on a date field lets a
# background task of the server delete documents whose `createdAt` is older than the retention period
# ([manual: TTL indexes](https://www.mongodb.com/docs/manual/core/index-ttl/)). 15 days
# is 1,296,000 seconds. The server's TTL monitor makes one pass about every 60 seconds
# ([manual: TTL indexes](https://www.mongodb.com/docs/manual/core/index-ttl/)). The oldest order is just over 14
# days old, so nothing has expired yet.

# %%
db.orders.create_index([("createdAt", 1)], expireAfterSeconds=15 * 86_400)
oldest = db.orders.find_one(sort=[("createdAt", 1)])["createdAt"]
print("TTL index:", {n: i["expireAfterSeconds"] for n, i in db.orders.index_information().items()
                     if "expireAfterSeconds" in i})
print(f"oldest order: {(NOW - oldest).days} days {(NOW - oldest).seconds // 3600} hours old")

# %% [markdown]
# Once reads use `orders`, drop the old collections:

# %%
for name in old:
    db.drop_collection(name)

# %% [markdown]
# ## Measured: before and after

# %%
after = db.command("dbStats")
cursor = db.orders.find({"tenantId": "t03", "customerId": "c010"}).sort("createdAt", -1)
merged = cursor.explain()["executionStats"]
compare = pd.DataFrame({
    "collection per tenant per day": {"collections": before["collections"], "indexes": before["indexes"],
                                      "round trips for 15 days of a customer": trips_before,
                                      "keys examined": keys_before, "orders returned": len(orders_before)},
    "one collection": {"collections": after["collections"], "indexes": after["indexes"],
                       "round trips for 15 days of a customer": 1,
                       "keys examined": merged["totalKeysExamined"], "orders returned": merged["nReturned"]},
})
compare

# %%
fig, ax = plt.subplots(figsize=(6, 2.4))
x = range(2)
ax.bar([i - 0.2 for i in x], compare.loc["collections"], width=0.4, label="collections")
ax.bar([i + 0.2 for i in x], compare.loc["indexes"], width=0.4, label="indexes")
ax.set_xticks(list(x), compare.columns)
ax.set_ylabel("count")
ax.legend(fontsize=8)
plt.tight_layout()
plt.show()

# %% [markdown]
# Same orders, same keys examined, one round trip instead of one per day, and a single collection with a fixed
# handful of indexes (the TTL index included) instead of hundreds of each. The numbers the storage engine cares
# about are collections and indexes, and they no longer grow with tenants × days.

# %% [markdown]
# ## Expiry, measured
#
# Time-partitioned data often fits a **time-series collection** too: the tenant as `metaField`, `createdAt` as
# `timeField`, and `expireAfterSeconds` on the collection itself. Such a collection does not store each
# measurement (here: each order) as its own document: it groups measurements with the same `metaField` value
# and close times into internal documents called **buckets**. A copy of the orders goes into one, with the
# same 15 days. With `granularity: "minutes"` a bucket spans at most 24 hours, so each tenant's day is one
# bucket (its orders lie within three hours); `$collStats` counts the buckets
# ([manual: `$collStats`](https://www.mongodb.com/docs/manual/reference/operator/aggregation/collStats/)):

# %%
orders_ts = db.create_collection("orders_ts", timeseries={"timeField": "createdAt", "metaField": "tenantId",
                                                          "granularity": "minutes"}, expireAfterSeconds=15 * 86_400)
orders_ts.insert_many([{k: v for k, v in d.items() if k != "day"} for d in db.orders.find().sort("_id", 1)])


def bucket_count():
    return next(orders_ts.aggregate([{"$collStats": {"storageStats": {}}}]))["storageStats"]["timeseries"]["bucketCount"]


print(f"orders_ts: {orders_ts.count_documents({})} orders in {bucket_count()} buckets")

# %% [markdown]
# Now the business shortens the retention to 10 days. With collections per day that means dropping five days
# of collections by hand; here it is one `collMod` per collection
# ([manual: `collMod`](https://www.mongodb.com/docs/manual/reference/command/collMod/)), and the TTL monitor's
# next pass deletes what is past the new limit:

# %%
orders_kept_before = db.orders.count_documents({})
ts_orders_before, ts_buckets_before = orders_ts.count_documents({}), bucket_count()
TEN_DAYS = 10 * 86_400
db.command("collMod", "orders", index={"keyPattern": {"createdAt": 1}, "expireAfterSeconds": TEN_DAYS})
db.command("collMod", "orders_ts", expireAfterSeconds=TEN_DAYS)
print(f"retention now {TEN_DAYS:,} s ({TEN_DAYS // 86_400} days) on orders and orders_ts")

# %% [markdown]
# `labkit.ttl_pass(db)` waits for that pass: on the embedded engine it runs one at once, on a server it waits for
# the server's own pass (within about a minute) and reports what the server counted.
#
# **Predict first.** Each tenant has 12 orders a day; the orders of the day 10 days ago are all a little more
# than 10 days old, those of the day 9 days ago a little more than 9. How many orders does the next pass delete
# from `orders`? Record a number with `ex_ttl.predict(...)`.

# %%
ex_ttl = labkit.exercises.get("34-predict-ttl")
ex_ttl

# %% tags=["solution"]
ex_ttl.predict(5 * len(TENANTS) * 12)

# %% tags=["reveal"]
ttl = labkit.ttl_pass(db)
deleted_orders = orders_kept_before - db.orders.count_documents({})
pd.Series({"orders before": orders_kept_before, "orders deleted": deleted_orders,
           "orders_ts orders deleted": ts_orders_before - orders_ts.count_documents({}),
           "orders_ts buckets deleted": ts_buckets_before - bucket_count()})

# %% tags=["reveal"]
ex_ttl.check(deleted_orders)

# %% [markdown]
# From `orders` the TTL index deleted every order older than 10 days, document by document: five days. The
# time-series collection works on whole buckets, and a server deletes a bucket only when its **minimum** time
# plus the bucket's maximum span (24 hours here) plus `expireAfterSeconds` has passed, because until then the
# bucket could hold a measurement that has not expired
# ([manual: time-series automatic removal](https://www.mongodb.com/docs/manual/core/timeseries/timeseries-automatic-removal/),
# the server's test [timeseries_ttl.js](https://github.com/mongodb/mongo/blob/v8.0/jstests/noPassthrough/timeseries/timeseries_ttl.js)).
# So the bucket of the day 10 days ago stays for up to another day, although all its orders are past the
# limit: expect one day less to go from `orders_ts`. Either way, no collection was dropped and no application code
# ran.

# %% [markdown]
# ## Explore: tenants × retention
#
# How many collections and indexes does each design carry, and which Atlas tier's recommended total does it
# exceed? Every collection has the `_id` index plus, here, one secondary index; the merged design has a fixed
# set.

# %%
from labkit.widgets import explorer


def growth(tenants, days_kept):
    split_colls = tenants * days_kept
    split_total = split_colls * 3  # each collection and its two indexes
    merged_total = 1 + len(db.orders.index_information())
    over = [tier for tier, limit in ATLAS_RECOMMENDED.items() if split_total > limit]
    return {"split: collections": split_colls, "split: collections + indexes": split_total,
            "merged: collections + indexes": merged_total,
            "split exceeds the Atlas recommendation of": ", ".join(over) if over else "no tier"}


def draw_growth(ax, values, r):
    ax.bar(["split", "merged"], [r["split: collections + indexes"], r["merged: collections + indexes"]],
           color=["#d62728", "#1f77b4"])
    ax.axhline(ATLAS_RECOMMENDED["M10"], color="grey", linestyle=":", label="Atlas M10: 5,000")
    ax.set_ylabel("collections + indexes")
    ax.legend(fontsize=8)


grow = explorer(growth, sliders={"tenants": (1, 5000, 20, 1), "days_kept": (1, 365, 15, 1)},
                title="Tenants and days kept", draw=draw_growth)
grow

# %% [markdown]
# ## Exercise
#
# `practice` holds one `events_<tenant>` collection per tenant (events of the last few days). Merge them into
# one `events` collection where each document has a `tenantId` (the tenant part of the old name), create an
# index that starts with `tenantId`, add a TTL index on `at` expiring after 30 days, and drop the per-tenant
# collections. `ex.check(practice)` looks at the collections, the indexes and a per-tenant query plan.

# %%
practice = labkit.fresh_db("34_practice")
for t in range(8):
    practice[f"events_t{t}"].insert_many([
        {"_id": f"t{t}:{k:03d}", "seq": k, "kind": ["click", "view"][k % 2],
         "at": NOW - dt.timedelta(hours=k)} for k in range(30 + 5 * t)])
sorted(practice.list_collection_names())

# %%
ex = labkit.exercises.get("34-merge-collections").remember(practice, *practice.list_collection_names())
ex

# %% tags=["solution"]
for name in sorted(practice.list_collection_names()):
    if name.startswith("events_"):
        tenant = name.removeprefix("events_")
        practice.events.insert_many([d | {"tenantId": tenant} for d in practice[name].find().sort("_id", 1)])
        practice.drop_collection(name)
practice.events.create_index([("tenantId", 1), ("at", -1)])
practice.events.create_index([("at", 1)], expireAfterSeconds=30 * 86_400)
ex.check(practice)

# %% [markdown]
# ## Exercise: sessions that expire when idle
#
# Another app keeps login sessions in one collection per day and drops old days. Replace that with one
# `sessions` collection (`{_id, userId, createdAt, lastSeen}`) in which a session disappears **30 minutes after
# its last activity**. Write `setup_sessions(db)` (the indexes) and `touch(coll, session_id, now)` (records
# activity). The check runs your functions on a private embedded engine, touches an idle session and an unknown
# one, runs one TTL pass at a chosen time and looks at which sessions are left (a server's TTL pass cannot be run
# at a chosen time, so this check always uses the embedded engine).

# %%
ex_sessions = labkit.exercises.get("34-ttl-sessions")
ex_sessions


# %% tags=["solution"]
def setup_sessions(db):
    db.sessions.create_index("lastSeen", expireAfterSeconds=30 * 60)


def touch(coll, session_id, now):
    coll.update_one({"_id": session_id}, {"$set": {"lastSeen": now}})


ex_sessions.check(setup_sessions, touch)

# %% [markdown]
# ## Summary
#
# - Detect: `dbStats` (`collections`, `indexes`) and collection names containing dates or ids. Atlas recommends
#   at most 5,000 collections and indexes combined on M10, 10,000 on M20/M30, 100,000 on M40+.
# - Every ordinary collection carries at least an `_id` index; thousands of collections and indexes strain the
#   storage engine, the more so the more of them are in use.
# - Fix: one collection, the old name as a field (`tenantId`, `day`) leading the indexes; merge with
#   `$merge`; expire with a TTL index instead of dropping, and change the retention with `collMod`. A TTL index
#   is single-field, counts seconds, and ignores values that are not dates.
# - A time-series collection expires whole buckets, each only once its minimum time + the bucket span +
#   `expireAfterSeconds` has passed: data may stay up to one bucket span longer.
#
# **Next:** 35 · unnecessary indexes.

# %% [markdown] tags=["sources"]
# ## Sources
#
# 1. [MongoDB manual: Reduce the Number of Collections](https://www.mongodb.com/docs/manual/data-modeling/design-antipatterns/reduce-collections/)
# 2. [MongoDB Atlas FAQ: How many collections can a single Atlas cluster have?](https://www.mongodb.com/docs/atlas/reference/faq/database/)
# 3. [MongoDB manual: dbStats](https://www.mongodb.com/docs/manual/reference/command/dbStats/)
# 4. [MongoDB manual: \$merge (aggregation stage)](https://www.mongodb.com/docs/manual/reference/operator/aggregation/merge/)
# 5. [MongoDB manual: TTL Indexes](https://www.mongodb.com/docs/manual/core/index-ttl/)
# 6. [MongoDB manual: collMod](https://www.mongodb.com/docs/manual/reference/command/collMod/)
# 7. [MongoDB manual: Set up Automatic Removal for Time Series Collections (TTL)](https://www.mongodb.com/docs/manual/core/timeseries/timeseries-automatic-removal/)
# 8. [mongodb/mongo jstests/noPassthrough/timeseries/timeseries_ttl.js](https://github.com/mongodb/mongo/blob/v8.0/jstests/noPassthrough/timeseries/timeseries_ttl.js)
# 9. [MongoDB manual: \$collStats (aggregation stage)](https://www.mongodb.com/docs/manual/reference/operator/aggregation/collStats/)

# %% [markdown] tags=["navigation"]
# [← 33 · Anti-pattern: bloated documents](33_bloated_documents.ipynb) · [Contents](../CONTENTS.md) · [35 · Anti-pattern: unnecessary indexes →](35_unnecessary_indexes.ipynb)
