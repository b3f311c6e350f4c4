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
#     exercise_minutes: 10
#     title: "Anti-pattern: a massive number of collections"
#     section: Anti-patterns
#     demo: "Count collections and indexes with dbStats, merge 300 per-tenant-per-day collections into one, count again."
#     mistakes: ["Creating a collection per tenant, day or device type", "Dropping old collections instead of expiring documents with a TTL index", "Forgetting to put the former collection name in the leading index field"]
# ---

# %% [markdown]
# # 34 · Anti-pattern: a massive number of collections
#
# **You will learn**
# - why a collection per tenant or per day scales badly: every collection brings at least one index, and the
#   storage engine manages each collection and index separately;
# - to detect it with `dbStats` and with collection names that contain ids or dates;
# - to merge the collections into one, turning the name into a field that leads the indexes;
# - to expire old data with a TTL index instead of dropping collections.
#
# **Time:** about 25 minutes.

# %%
import datetime as dt
import re

import matplotlib.pyplot as plt
import pandas as pd

import labkit

db = labkit.fresh_db("34_massive_collections")
print("engine:", labkit.describe(db.client))

# %% [markdown]
# A multi-tenant order service that "partitions" its data by creating one collection per tenant per day:
# `orders_t03_2026_11_02`. 20 tenants × 15 days, each collection with its own `customerId` index. (In
# shared-cluster mode, `LABKIT_SHARED=1`, the demonstration uses 4 tenants, so a room of learners does not
# create thousands of collections on one cluster; the conclusions are the same.)

# %%
TENANTS = [f"t{t:02d}" for t in range(labkit.shared.scale(20, 4))]
DAYS = [dt.date(2026, 11, 1) + dt.timedelta(days=d) for d in range(15)]


def coll_name(tenant, day):
    return f"orders_{tenant}_{day:%Y_%m_%d}"


for ti, tenant in enumerate(TENANTS):
    for di, day in enumerate(DAYS):
        coll = db[coll_name(tenant, day)]
        coll.insert_many([{"_id": f"{tenant}:{day:%m%d}:{k:03d}", "customerId": f"c{(k * 7 + ti) % 40:03d}",
                           "total": round(5 + (k * 13 + di) % 200 * 1.5, 2),
                           "createdAt": dt.datetime.combine(day, dt.time(8)) + dt.timedelta(minutes=17 * k)}
                          for k in range(12)])
        labkit.shared.create_index(coll, [("customerId", 1)])  # pauses between builds in shared mode
labkit.shared.note(f"{len(TENANTS)} tenants × {len(DAYS)} days = {len(TENANTS) * len(DAYS)} collections "
                   "instead of 20 × 15 = 300, index builds staggered")
print("collections created:", len(db.list_collection_names()))

# %% [markdown]
# ## The workload
#
# | operation | type | rate | needs |
# |---|---|---|---|
# | record an order | write | 30/s | one tenant, today |
# | a customer's orders, last 15 days | read | 50/s | one tenant, one customer, newest first |
# | delete data older than 15 days | write | once a day | whole days |

# %% [markdown]
# ## Detect: `dbStats` and the names
#
# `dbStats` counts collections and indexes without reading any data:

# %%
before = db.command("dbStats")
{k: before[k] for k in ("collections", "objects", "indexes", "indexSize")}

# %% [markdown]
# Names that contain dates or ids are the giveaway. A regular expression over the listing finds them:

# %%
names = sorted(db.list_collection_names())
pattern = re.compile(r"^(?P<prefix>[a-z]+)_(?P<tenant>t\d+)_(?P<day>\d{4}_\d{2}_\d{2})$")
matches = [pattern.match(n) for n in names]
old = [n for n, m in zip(names, matches) if m]  # on a server the listing also holds labkit's marker, `_labkit`
families = pd.Series([m["prefix"] for m in matches if m]).value_counts()
print(f"{sum(bool(m) for m in matches)} of {len(names)} collection names contain a tenant id and a date")
print("first three:", names[:3])
families

# %% [markdown]
# Indexes per collection, from each collection's index list (here every collection has the same two):

# %%
per_collection = pd.Series({n: len(db[n].index_information()) for n in old})
per_collection.describe()[["count", "mean", "max"]]

# %% [markdown]
# The cost of the read in the workload: a customer's orders for the last 15 days means one query per daily
# collection, so 15 round trips, each through its own small index.

# %%
def customer_orders_split(tenant, customer):
    trips, found, keys = 0, [], 0
    for day in DAYS:
        cursor = db[coll_name(tenant, day)].find({"customerId": customer})
        keys += cursor.explain()["executionStats"]["totalKeysExamined"]
        found += list(db[coll_name(tenant, day)].find({"customerId": customer}))
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
# The merge runs on the server: one aggregation per old collection adds the fields its name encoded and
# ends in `$merge`, which inserts into `orders` (and, re-run, would leave already-merged orders alone).

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
# Expiry: instead of dropping yesterday's collections, a TTL index deletes documents whose `createdAt` is older
# than the retention period. 15 days is 1,296,000 seconds.

# %%
db.orders.create_index([("createdAt", 1)], expireAfterSeconds=15 * 86_400)
{name: info for name, info in db.orders.index_information().items() if "expireAfterSeconds" in info}

# %% [markdown]
# The server's TTL monitor makes one pass about once a minute and deletes what has expired; the section
# "Expiry, measured" below runs such a pass.

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
# Same orders, same keys examined, one round trip instead of one per day, and a single collection with a
# fixed handful of indexes (the TTL index included) instead of hundreds of each. The numbers the storage
# engine cares about are collections and indexes, and they no longer grow with tenants × days.

# %% [markdown]
# ## Expiry, measured
#
# Time-partitioned data often fits a **time-series collection** too: the tenant as `metaField`, `createdAt`
# as `timeField`, and `expireAfterSeconds` on the collection itself, which makes the TTL monitor delete whole
# buckets once their newest measurement is past the limit. A copy of the orders goes into one:

# %%
orders_ts = db.create_collection("orders_ts", timeseries={"timeField": "createdAt", "metaField": "tenantId",
                                                          "granularity": "minutes"}, expireAfterSeconds=15 * 86_400)
orders_ts.insert_many([{k: v for k, v in d.items() if k != "day"} for d in db.orders.find().sort("_id", 1)])
ts_buckets = db.command("collStats", "orders_ts")["timeseries"]["bucketCount"]
print(f"orders_ts: {orders_ts.count_documents({})} orders in {ts_buckets} buckets (one per tenant and day)")

# %% [markdown]
# `labkit.ttl_pass` runs **one pass** of the TTL monitor. On the embedded engine it runs at a time you choose
# (here 20 November, 08:00) and deletes what the server's monitor would; on a server it cannot choose the
# time: it waits for the server's next pass (at the server's clock) and reports what the server counted.
#
# **Predict first.** The TTL index on `orders.createdAt` keeps 15 days. Each tenant has 12 orders a day from
# 1 to 15 November, the first at 08:00. How many orders does a pass at 20 November 08:00 delete?

# %%
ex_ttl = labkit.exercises.get("34-predict-ttl")
ex_ttl

# %% tags=["solution"]
ex_ttl.predict(4 * len(TENANTS) * 12)

# %% tags=["reveal"]
orders_before_pass = db.orders.count_documents({})
try:
    ttl = labkit.ttl_pass(db, now=dt.datetime(2026, 11, 20, 8, 0))  # embedded engine (in process or served)
except ValueError:  # a real server: its monitor runs at the server's clock; wait for its next pass
    ttl = labkit.ttl_pass(db)
deleted_orders = orders_before_pass - db.orders.count_documents({})
pd.Series({"orders before the pass": orders_before_pass, "orders deleted": deleted_orders,
           "orders left": db.orders.count_documents({}),
           "orders_ts buckets left": db.command("collStats", "orders_ts")["timeseries"]["bucketCount"],
           "orders_ts orders left": orders_ts.count_documents({}),
           "TTL passes so far (serverStatus metrics.ttl.passes)":
               db.command("serverStatus")["metrics"]["ttl"]["passes"]})

# %% tags=["reveal"]
ex_ttl.check(deleted_orders)

# %% [markdown]
# The same days disappear from both: from `orders` document by document through the TTL index, from
# `orders_ts` as whole buckets. No collection was dropped and no application code ran.

# %% [markdown]
# ## Explore: tenants × retention
#
# How many collections and indexes does each design carry? Every collection has the `_id` index plus, here,
# one secondary index; the merged design has a fixed set.

# %%
from labkit.widgets import explorer


def growth(tenants, days_kept):
    split_colls = tenants * days_kept
    return {"split: collections": split_colls, "split: indexes": split_colls * 2,
            "merged: collections": 1, "merged: indexes": len(db.orders.index_information())}


def draw_growth(ax, values, r):
    ax.bar(["split", "merged"], [r["split: indexes"], r["merged: indexes"]], color=["#d62728", "#1f77b4"])
    ax.set_ylabel("indexes to maintain")


grow = explorer(growth, sliders={"tenants": (1, 5000, 20, 1), "days_kept": (1, 365, 15, 1)},
                title="Tenants and days kept", draw=draw_growth)
grow

# %% [markdown]
# ## Exercise
#
# `practice` holds one `events_<tenant>` collection per tenant. Merge them into one `events` collection where
# each document has a `tenantId` (the tenant part of the old name), create an index that starts with
# `tenantId`, add a TTL index on `at` expiring after 30 days, and drop the per-tenant collections.
# `ex.check(practice)` looks at the collections, the indexes and a per-tenant query plan.

# %%
practice = labkit.fresh_db("34_practice")
for t in range(8):
    practice[f"events_t{t}"].insert_many([
        {"_id": f"t{t}:{k:03d}", "seq": k, "kind": ["click", "view"][k % 2],
         "at": dt.datetime(2026, 11, 1) + dt.timedelta(hours=k)} for k in range(30 + 5 * t)])
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
# - Detect: `dbStats` (`collections`, `indexes`) and collection names containing dates or ids.
# - Every collection carries at least an `_id` index; thousands of collections and indexes strain the storage
#   engine even when idle.
# - Fix: one collection, the old name as a field (`tenantId`, `day`) leading the indexes; merge with
#   `$merge`; expire with a TTL index (or a time-series collection with `expireAfterSeconds`, which deletes
#   whole buckets) instead of dropping. A TTL index is single-field, counts seconds, and ignores non-dates.
#
# **Next:** 35 · unnecessary indexes.

# %% [markdown] tags=["navigation"]
# [← 33 · Anti-pattern: bloated documents](33_bloated_documents.ipynb) · [Contents](../CONTENTS.md) · [35 · Anti-pattern: unnecessary indexes →](35_unnecessary_indexes.ipynb)
