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
#     title: "Anti-pattern: unnecessary indexes"
#     section: Anti-patterns
#     demo: "Run a fixed query mix, tally which index each query used, hide the unused and prefix-redundant ones, then drop them."
#     mistakes: ["Reading $indexStats on one node only, or over too short a period", "Dropping an index without hiding it first", "Keeping {a: 1} next to {a: 1, b: 1}", "Calling an index with its own collation (or unique, partial, sparse, TTL) redundant because its keys are a prefix"]
#     sources:
#     - title: "MongoDB manual: Remove Unnecessary Indexes"
#       url: https://www.mongodb.com/docs/manual/data-modeling/design-antipatterns/unnecessary-indexes/
#     - title: "MongoDB manual: $indexStats (aggregation stage)"
#       url: https://www.mongodb.com/docs/manual/reference/operator/aggregation/indexStats/
#     - title: "mongodb/mongo jstests/core/index/index_stats.js"
#       url: https://github.com/mongodb/mongo/blob/v8.0/jstests/core/index/index_stats.js
#     - title: "MongoDB manual: Hidden Indexes"
#       url: https://www.mongodb.com/docs/manual/core/index-hidden/
#     - title: "MongoDB manual: db.collection.hideIndex()"
#       url: https://www.mongodb.com/docs/manual/reference/method/db.collection.hideIndex/
#     - title: "MongoDB manual: Case-Insensitive Indexes (collation must match)"
#       url: https://www.mongodb.com/docs/manual/core/index-case-insensitive/
#     - title: "MongoDB manual: Multikey Indexes"
#       url: https://www.mongodb.com/docs/manual/core/indexes/index-types/index-multikey/
#     - title: "MongoDB manual: $collStats (aggregation stage)"
#       url: https://www.mongodb.com/docs/manual/reference/operator/aggregation/collStats/
#     - title: "MongoDB Atlas: Review Drop Index Recommendations (Performance Advisor)"
#       url: https://www.mongodb.com/docs/atlas/performance-advisor/drop-indexes/
#     - title: "MongoDB Atlas: Query Shape Insights"
#       url: https://www.mongodb.com/docs/atlas/query-shape-insights/
# ---

# %% [markdown]
# # 35 · Anti-pattern: unnecessary indexes
#
# **You will learn**
# - that every index is written by every insert and delete (and by updates that touch its fields), measured as
#   the keys each index holds;
# - to find indexes nothing uses, after a realistic workload (`$indexStats` on a real cluster);
# - to find prefix-redundant indexes: `{customerId: 1}` is covered by `{customerId: 1, createdAt: -1}`;
# - to hide an index first, watch, then drop it.
#
# **Time:** about 30 minutes.

# %%
import datetime as dt

import matplotlib.pyplot as plt
import pandas as pd

import labkit

db = labkit.fresh_db("35_unnecessary_indexes")
print("engine:", labkit.describe(db.client))

# %% [markdown]
# Orders generated deterministically, and the indexes a few years of "this query is slow, add an index" left
# behind.

# %%
STATUSES = ["new", "paid", "shipped", "delivered"]


def order(i):
    return {"_id": f"order:{i:05d}", "customerId": f"cust:{(i * 7919) % 400:03d}", "status": STATUSES[i % 4],
            "region": f"region:{(i * 31) % 6}", "sku": f"sku:{(i * 13) % 250:03d}", "total": round((i * 37) % 500 + 0.99, 2),
            "createdAt": dt.datetime(2026, 1, 1) + dt.timedelta(minutes=53 * i)}


db.orders.insert_many([order(i) for i in range(6000)])
legacy_indexes = [
    [("customerId", 1)],
    [("customerId", 1), ("createdAt", -1)],
    [("status", 1)],
    [("region", 1), ("status", 1)],
    [("sku", 1)],
    [("total", 1)],
    [("createdAt", 1)],
]
for keys in legacy_indexes:
    labkit.shared.create_index(db.orders, keys)  # on a shared cluster: builds staggered (LABKIT_SHARED=1)
_ = labkit.shared.note(f"{len(legacy_indexes)} index builds staggered, one at a time")
print(f"{db.orders.count_documents({}):,} orders")
sorted(db.orders.index_information())

# %% [markdown]
# ## The workload
#
# What the application does, how often, and what each operation needs:

# %%
labkit.workload_table([
    ("a customer's orders, newest first", 'read', '120/s', 'customerId equality, sort createdAt desc, 20'),
    ('dashboard: orders of a region in a status', 'read', '50/s', 'region and status equality'),
    ('orders containing a SKU', 'read', '30/s', 'sku equality'),
    ('place order', 'write', '30/s', 'one insert'),
])

# %% [markdown]
# Below is a deterministic mix of queries in those proportions, run against the collection the way the
# application would run them.

# %%
def workload_queries():
    for i in range(200):
        kind = i % 20
        if kind < 12:
            yield "customer orders", db.orders.find({"customerId": f"cust:{(i * 17) % 400:03d}"}).sort("createdAt", -1).limit(20)
        elif kind < 17:
            yield "region dashboard", db.orders.find({"region": f"region:{i % 6}", "status": STATUSES[i % 4]})
        else:
            yield "orders with a SKU", db.orders.find({"sku": f"sku:{(i * 7) % 250:03d}"})


ran = {}
for kind, cursor in workload_queries():
    results = list(cursor)  # run it and read every result, as the application does
    ran[kind] = ran.get(kind, 0) + 1
pd.Series(ran, name="queries run")

# %% [markdown]
# ## Detect unused indexes
#
# `$indexStats` returns, per index, `accesses.ops` (how many operations used it) and `accesses.since` (when
# counting started; not printed here because it is the moment this notebook ran)
# ([manual: `$indexStats`](https://www.mongodb.com/docs/manual/reference/operator/aggregation/indexStats/)). The
# counters live on each member and restart from 0 when it restarts, so a period must cover a full business
# cycle ([manual: remove unnecessary indexes](https://www.mongodb.com/docs/manual/data-modeling/design-antipatterns/unnecessary-indexes/)).

# %%
index_report = pd.DataFrame([{"index": s["name"], "ops": s["accesses"]["ops"]}
                             for s in db.orders.aggregate([{"$indexStats": {}}])]).sort_values("index", ignore_index=True)
index_report

# %% [markdown]
# **Every member counts for itself.** Each result carries `host`, the member whose counters it is. A secondary
# that serves reads has its own counts, which the primary's do not include. The same stage sent with a
# secondary read preference answers from a secondary when there is one (here, one member: the same host):

# %%
from pymongo import ReadPreference


def index_stats_by_member(collection):
    rows = []
    for pref in (ReadPreference.PRIMARY, ReadPreference.SECONDARY_PREFERRED):
        for s in collection.with_options(read_preference=pref).aggregate([{"$indexStats": {}}]):
            rows.append({"asked": pref.name, "host": s["host"], "index": s["name"], "ops": s["accesses"]["ops"]})
    return pd.DataFrame(rows).pivot_table(index="index", columns=["asked", "host"], values="ops", aggfunc="sum").astype(int)


index_stats_by_member(db.orders)

# %% [markdown]
# On a replica set, read it on **every** member (a direct connection to each host that `hello` lists, or Atlas's
# Performance Advisor, which shows one host at a time and flags unused and prefix-redundant indexes,
# [Atlas: drop index recommendations](https://www.mongodb.com/docs/atlas/performance-advisor/drop-indexes/)) and
# add the counts up.
#
# Which query shape uses which index, from `explain()` of one query of each shape. Explaining a query does not
# count as an access: the server's own test
# ([index_stats.js](https://github.com/mongodb/mongo/blob/v8.0/jstests/core/index/index_stats.js)) checks that
# "index access counters are not incremented for explain execution", so these explains leave the report above
# unchanged (checked below).

# %%
def index_used(cursor):
    node, names = cursor.explain()["queryPlanner"]["winningPlan"], []
    todo = [node]
    while todo:
        n = todo.pop()
        n = n.get("queryPlan", n)
        if "IXSCAN" in n.get("stage", ""):
            names.append(n.get("indexName", n.get("keyPattern")))
        todo += [n[k] for k in ("inputStage",) if k in n] + list(n.get("inputStages", []))
    return names[0] if names else "COLLSCAN"


def plans_by_shape():
    shapes = {}
    for kind, cursor in workload_queries():
        shapes.setdefault(kind, index_used(cursor))
    return pd.Series(shapes, name="index").sort_index()


plans_by_shape()

# %%
def ops_now():
    return {s["name"]: s["accesses"]["ops"] for s in db.orders.aggregate([{"$indexStats": {}}])}


ops_now() == dict(zip(index_report["index"], index_report["ops"]))

# %% [markdown]
# ## Detect prefix-redundant indexes
#
# An index whose keys (with their directions) are the first keys of another index can serve nothing the
# longer one cannot. Unique, TTL, partial or sparse indexes are exceptions: they do more than serve queries. So
# is an index whose **collation** differs from the longer one's: a query that compares strings uses an index
# only when it names the index's collation
# ([manual: case-insensitive indexes](https://www.mongodb.com/docs/manual/core/index-case-insensitive/)), so a
# case-insensitive `{customerId: 1}` serves queries that a plain `{customerId: 1, createdAt: -1}` cannot. A
# hidden index is left out too: it serves nothing yet.

# %%
def redundant_prefixes(collection):
    infos = collection.index_information()
    special = {"unique", "expireAfterSeconds", "partialFilterExpression", "sparse", "hidden"}
    found = {}
    for name, info in infos.items():
        key = list(info["key"])
        if name == "_id_" or special & set(info):
            continue
        for other, other_info in infos.items():
            longer = list(other_info["key"])
            same_collation = info.get("collation") == other_info.get("collation")
            if (other != name and len(longer) > len(key) and longer[: len(key)] == key and same_collation
                    and not other_info.get("hidden")):
                found[name] = other
    return found


redundant = redundant_prefixes(db.orders)
redundant

# %%
index_report["prefix of"] = index_report["index"].map(redundant).fillna("")
index_report["verdict"] = [
    "keep (_id)" if r["index"] == "_id_" else
    "drop: prefix-redundant" if r["prefix of"] else
    "drop: unused" if r["ops"] == 0 else "keep"
    for _, r in index_report.iterrows()]
index_report

# %% [markdown]
# ## Hide first, then drop
#
# A hidden index is still maintained on every write, but the planner ignores it. If something gets slower,
# un-hiding it takes effect at once, with no rebuild. (A hidden unique index still enforces uniqueness and a
# hidden TTL index still deletes documents: hiding only tests the effect on query plans,
# [manual: hidden indexes](https://www.mongodb.com/docs/manual/core/index-hidden/).)

# %%
to_drop = index_report.loc[index_report["verdict"].str.startswith("drop"), "index"].tolist()
for name in to_drop:
    db.command("collMod", "orders", index={"name": name, "hidden": True})
sorted(name for name, info in db.orders.index_information().items() if info.get("hidden"))

# %% [markdown]
# Hiding (and un-hiding) an index resets its `$indexStats` counters ("Index Modifications Reset Statistics",
# [manual: `hideIndex`](https://www.mongodb.com/docs/manual/reference/method/db.collection.hideIndex/)): the
# index starts again from 0 with a new `since`. The indexes hidden
# above had no accesses anyway; on an index in use the reset shows (hidden and at once un-hidden here, so its
# plans are unchanged). Record the counts you need *before* hiding anything.

# %%
in_use = index_report.loc[index_report["verdict"] == "keep", "index"].iloc[-1]
ops_before = ops_now()[in_use]
db.command("collMod", "orders", index={"name": in_use, "hidden": True})
db.command("collMod", "orders", index={"name": in_use, "hidden": False})
{"index": in_use, "ops before": ops_before, "ops after hide + unhide": ops_now()[in_use]}

# %% [markdown]
# While the indexes are hidden, check every query shape's plan again; watch for any that loses its index.
#
# **Predict.** With every drop candidate hidden, how many of the three query shapes will fall back to a
# COLLSCAN (0, 1, 2 or 3)?

# %%
predict_hidden = labkit.exercises.get("35-predict-hidden-collscans")
predict_hidden

# %% tags=["solution"]
predict_hidden.predict(0)

# %% tags=["reveal"]
check = plans_by_shape().rename("index while hidden").to_frame()
check["COLLSCAN?"] = check["index while hidden"] == "COLLSCAN"
check

# %% tags=["reveal"]
predict_hidden.check(int(check["COLLSCAN?"].sum()))

# %% [markdown]
# No query changed plan, so the hidden indexes can go (on a real system: after days of watching latency and
# the slow query log, not after one cell).

# %%
def storage(collection):
    return next(collection.aggregate([{"$collStats": {"storageStats": {}}}]))["storageStats"]


size_before = storage(db.orders)
for name in to_drop:
    db.orders.drop_index(name)
size_after = storage(db.orders)
sorted(db.orders.index_information())

# %% [markdown]
# ## Measured: the write cost of each index
#
# Each insert writes one key into every index (more into a multikey index: one per distinct array element,
# [manual: multikey indexes](https://www.mongodb.com/docs/manual/core/indexes/index-types/index-multikey/)). We
# insert the same 1,000 orders into two scratch collections, one with the legacy indexes and one with the kept
# ones, then count the keys each index holds: a `hint`ed scan of the whole index, whose `totalKeysExamined` is
# the number of keys in it. Every one of those keys was written by the inserts.

# %%
def keys_per_index(collection):
    """Keys each index holds, counted by a hinted scan of the whole index (explain's totalKeysExamined)."""
    counts = {}
    for name, info in collection.index_information().items():
        first = info["key"][0][0]
        cursor = collection.find({first: {"$exists": True}} if first != "_id" else {}).hint(name)
        counts[name] = cursor.explain()["executionStats"]["totalKeysExamined"]
    return counts


new_orders = [order(i) for i in range(6000, 7000)]
legacy, kept = db.orders_legacy, db.orders_kept
for keys in legacy_indexes:
    labkit.shared.create_index(legacy, keys)
for name, info in db.orders.index_information().items():
    if name != "_id_":
        labkit.shared.create_index(kept, list(info["key"]))
legacy.insert_many(new_orders)
kept.insert_many(new_orders)

legacy_keys, kept_keys = keys_per_index(legacy), keys_per_index(kept)
compare = pd.DataFrame({
    "legacy indexes": {"indexes": len(legacy_keys),
                       "index keys written by 1,000 inserts": sum(legacy_keys.values()),
                       "index keys per insert": sum(legacy_keys.values()) // len(new_orders),
                       "orders: totalIndexSize ($collStats, bytes)": size_before["totalIndexSize"]},
    "after review": {"indexes": len(kept_keys),
                     "index keys written by 1,000 inserts": sum(kept_keys.values()),
                     "index keys per insert": sum(kept_keys.values()) // len(new_orders),
                     "orders: totalIndexSize ($collStats, bytes)": size_after["totalIndexSize"]},
})
compare

# %%
fig, ax = plt.subplots(figsize=(6, 2.2))
ax.barh(compare.columns, compare.loc["index keys per insert"], color=["#d62728", "#1f77b4"])
ax.set_xlabel("index keys written per insert")
plt.tight_layout()
plt.show()

# %% [markdown]
# Every query is served exactly as before, and each insert writes fewer index keys. The `totalIndexSize`
# figures come from `$collStats`
# ([manual: `$collStats`](https://www.mongodb.com/docs/manual/reference/operator/aggregation/collStats/)): on the embedded engine they are its model of index bytes (key bytes plus a
# fixed overhead per key); a real server reports the storage engine's allocated pages, so its absolute numbers
# differ but the direction does not.

# %% [markdown]
# ## Explore: indexes × insert rate
#
# Index keys written per second for a given insert rate and number of indexes, estimated from the measured rule
# above (one key per index per insert; a multikey index adds one key per distinct array element).

# %%
from labkit.widgets import explorer


def write_load(inserts_per_second, secondary_indexes, tags_per_order):
    per_insert = 1 + secondary_indexes
    multikey = per_insert + max(tags_per_order, 1)  # an empty array still gets one key
    return {"keys per insert (estimated: 1 + indexes)": per_insert,
            "keys per second (estimated: keys per insert x rate)": per_insert * inserts_per_second,
            "with a multikey index on tags: keys per insert (estimated: + one per tag)": multikey,
            "with a multikey index on tags: keys per second (estimated: keys per insert x rate)": multikey * inserts_per_second}


def draw_load(ax, values, r):
    ax.bar(["plain", "+ tags index"], [r["keys per second (estimated: keys per insert x rate)"],
                                       r["with a multikey index on tags: keys per second (estimated: keys per insert x rate)"]],
           color=["#1f77b4", "#ff7f0e"])
    ax.set_ylabel("index keys / s (estimated: keys per insert x rate)")


load = explorer(write_load, sliders={"inserts_per_second": (1, 2000, 30, 1), "secondary_indexes": (0, 63, 7, 1),
                                     "tags_per_order": (0, 50, 0, 1)}, title="Write load from indexes", draw=draw_load)
load

# %% [markdown]
# ## Exercise 1 · A support desk, the same idea on other data
#
# A support desk's `tickets` collection has eight indexes (`ref_1` unique, `closedAt_1` a TTL index,
# `assignee_1`, `assignee_ci` on `assignee` with a case-insensitive collation, `assignee_1_status_1_priority_-1`,
# `customerId_1`, `status_1`, `priority_1`) and three queries: an agent's open tickets by priority
# (`{assignee, status: "open"}`, sort `priority: -1`, `limit(10)`), a customer's tickets (`{customerId}`), and an
# agent's tickets however the name is typed (`{assignee}` with the collation `{locale: "en", strength: 2}`).
# Write `prune(tickets)` that drops every index these queries do not need, without losing anything an index
# enforces. `ex_prune.check(prune)` builds the collection on its own (a few thousand tickets), runs the three
# queries, calls `prune`, then reads the plans and the indexes that are left.

# %%
ex_prune = labkit.exercises.get("35-prune-tickets")
ex_prune


# %% tags=["solution"]
def prune(tickets):
    used = {s["name"] for s in tickets.aggregate([{"$indexStats": {}}]) if s["accesses"]["ops"] > 0}
    infos = tickets.index_information()
    for name, info in infos.items():
        if name == "_id_" or info.get("unique") or "expireAfterSeconds" in info:
            continue  # constraints work on writes; no query counter shows it
        keys = list(info["key"])
        prefix = any(len(o["key"]) > len(keys) and list(o["key"])[:len(keys)] == keys
                     and o.get("collation") == info.get("collation")
                     for other, o in infos.items() if other != name)
        if prefix or name not in used:
            tickets.drop_index(name)


ex_prune.check(prune)

# %% [markdown]
# ## Exercise 2 · The same review on a practice copy
#
# `practice.orders` has the same legacy indexes. The workload is the same three queries. Remove every index
# the workload does not need (unused or prefix-redundant), keeping each query on an index and the customer
# query free of a blocking SORT. `ex.check(practice.orders)` runs the three queries and inspects the indexes.

# %%
practice = labkit.fresh_db("35_practice")
practice.orders.insert_many([order(i) for i in range(1500)])
for keys in legacy_indexes:
    labkit.shared.create_index(practice.orders, keys)
ex = labkit.exercises.get("35-drop-unneeded")
ex

# %% tags=["solution"]
for name in ["customerId_1", "status_1", "total_1", "createdAt_1"]:
    practice.orders.drop_index(name)
ex.check(practice.orders)

# %% [markdown]
# ## Summary
#
# - Every index costs a key written per insert and delete, plus disk and cache.
# - Find unused indexes with `$indexStats` on every member (each counts for itself) over a full business cycle;
#   find prefix-redundant ones by comparing key patterns, directions and collations. On Atlas, the Performance
#   Advisor flags both, and Query Shape Insights (M10+, 8.0) shows which query shapes run and how long they
#   take ([Atlas: Query Shape Insights](https://www.mongodb.com/docs/atlas/query-shape-insights/)).
# - Hide (`collMod` with `hidden: True`), watch, then drop. Extend an index that shares a prefix instead of
#   adding a new one.
#
# **Next:** 36 · separating data that is accessed together.

# %% [markdown] tags=["sources"]
# ## Sources
#
# 1. [MongoDB manual: Remove Unnecessary Indexes](https://www.mongodb.com/docs/manual/data-modeling/design-antipatterns/unnecessary-indexes/)
# 2. [MongoDB manual: \$indexStats (aggregation stage)](https://www.mongodb.com/docs/manual/reference/operator/aggregation/indexStats/)
# 3. [mongodb/mongo jstests/core/index/index_stats.js](https://github.com/mongodb/mongo/blob/v8.0/jstests/core/index/index_stats.js)
# 4. [MongoDB manual: Hidden Indexes](https://www.mongodb.com/docs/manual/core/index-hidden/)
# 5. [MongoDB manual: db.collection.hideIndex()](https://www.mongodb.com/docs/manual/reference/method/db.collection.hideIndex/)
# 6. [MongoDB manual: Case-Insensitive Indexes (collation must match)](https://www.mongodb.com/docs/manual/core/index-case-insensitive/)
# 7. [MongoDB manual: Multikey Indexes](https://www.mongodb.com/docs/manual/core/indexes/index-types/index-multikey/)
# 8. [MongoDB manual: \$collStats (aggregation stage)](https://www.mongodb.com/docs/manual/reference/operator/aggregation/collStats/)
# 9. [MongoDB Atlas: Review Drop Index Recommendations (Performance Advisor)](https://www.mongodb.com/docs/atlas/performance-advisor/drop-indexes/)
# 10. [MongoDB Atlas: Query Shape Insights](https://www.mongodb.com/docs/atlas/query-shape-insights/)

# %% [markdown] tags=["navigation"]
# [← 34 · Anti-pattern: a massive number of collections](34_massive_collections.ipynb) · [Contents](../CONTENTS.md) · [36 · Anti-pattern: separating data that is accessed together →](36_separate_data.ipynb)
