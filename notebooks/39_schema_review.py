# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
#   labkit:
#     minutes: 40
#     title: "Schema review: run the checklist on a legacy store"
#     section: Anti-patterns
#     demo: "Load the legacy store, run each checklist step, and watch the findings table fill up."
#     mistakes: ["Flagging a collection as bloated because of one outlier document", "Treating every $lookup as a problem, whatever its frequency", "Reading the entity names instead of measuring"]
# ---

# %% [markdown]
# # 39 · Schema review: run the checklist on a legacy store
#
# **You will learn**
# - to review an existing schema with measurements instead of opinions;
# - to run the checklist: collections and names, arrays and their bounds, document size against the hot
#   query, redundant indexes, case-insensitive regexes and joins on hot paths;
# - to write findings down as evidence another engineer can re-run.
#
# **Time:** about 40 minutes.

# %%
import datetime as dt
import random
import re
import statistics
from pathlib import Path

import bson
import matplotlib.pyplot as plt
import pandas as pd
from bson import json_util
from bson.json_util import JSONMode, JSONOptions
from bson.regex import Regex

import labkit

db = labkit.fresh_db("39_schema_review")
print("engine:", labkit.describe(db.client))

# %% [markdown]
# ## The legacy store
#
# A small shop's database, inherited from another team: its collections, its indexes, and a sample of the
# query log with how often each query runs. It ships as MongoDB Extended JSON in `data/legacy_store.json`.
# This code is what generated the file (fixed seed):

# %%
LEGACY_JSON = JSONOptions(json_mode=JSONMode.RELAXED, tz_aware=False)


def legacy_store(seed=39):
    """The legacy store's data, indexes and a query-log sample: same seed, same bytes."""
    rng = random.Random(seed)
    t0 = dt.datetime(2025, 3, 1)
    names = ["Ana", "Ben", "Chloe", "Dev", "Elena", "Farah", "Gus", "Hana", "Ivan", "Jada"]
    customers = []
    for c in range(60):
        n = 1800 if c == 13 else rng.randint(0, 25)
        customers.append({
            "_id": f"cust:{c:03d}", "email": f"{names[c % 10]}.{c}@Example.com", "name": f"{names[c % 10]} {c}",
            "createdAt": t0 + dt.timedelta(days=c),
            "activity": [{"at": t0 + dt.timedelta(minutes=61 * i), "page": f"/p/{(i * 7 + c) % 40}"} for i in range(n)],
        })
    products = []
    for p in range(14):
        products.append({
            "_id": f"prod:{p:03d}", "name": f"Kettle {p}", "price": round(15 + rng.random() * 80, 2),
            "category": ["kitchen", "tea", "outdoor"][p % 3],
            "description": " ".join(rng.choice(["steel", "quiet", "fast", "boil", "handle", "litre", "lid"])
                                    for _ in range(500)),
            "specSheet": {f"spec{k:02d}": rng.randint(1, 999) for k in range(60)},
            "revisions": [{"rev": r, "by": f"staff:{rng.randint(1, 9)}", "note": "copy edit"} for r in range(25)],
        })
    tenants = ["acme", "globex", "initech", "umbrella", "hooli", "stark"]
    orders = {}
    for ti, tenant in enumerate(tenants):
        orders[f"orders_{tenant}"] = [{
            "_id": f"{tenant}:{o:03d}", "customerId": f"cust:{(o * 7 + ti) % 60:03d}",
            "total": round(5 + rng.random() * 300, 2), "createdAt": t0 + dt.timedelta(hours=5 * o + ti),
        } for o in range(25)]
    collections = {"customers": customers, "products": products, **orders}
    indexes = {
        "customers": [{"name": "email_1", "key": {"email": 1}},
                      {"name": "email_1_createdAt_-1", "key": {"email": 1, "createdAt": -1}}],
        "products": [{"name": "category_1_price_1", "key": {"category": 1, "price": 1}},
                     {"name": "category_1", "key": {"category": 1}}],
        **{name: [{"name": "customerId_1", "key": {"customerId": 1}}] for name in orders},
    }
    query_log = [
        {"collection": "customers", "op": "find", "perSecond": 120,
         "filter": {"email": Regex("^ana\\.0@example\\.com$", "i")}, "projection": None},
        {"collection": "products", "op": "find", "perSecond": 400, "filter": {"category": "tea"},
         "projection": {"name": 1, "price": 1}},
        {"collection": "customers", "op": "find", "perSecond": 60, "filter": {"_id": "cust:013"},
         "projection": {"name": 1, "email": 1}},
        {"collection": "orders_acme", "op": "aggregate", "perSecond": 250, "pipeline": [
            {"$match": {"customerId": "cust:007"}},
            {"$lookup": {"from": "customers", "localField": "customerId", "foreignField": "_id", "as": "customer"}}]},
        {"collection": "orders_globex", "op": "aggregate", "perSecond": 0.001, "pipeline": [
            {"$lookup": {"from": "products", "localField": "sku", "foreignField": "_id", "as": "product"}},
            {"$group": {"_id": "$customerId", "n": {"$sum": 1}}}]},
    ]
    return {"collections": collections, "indexes": indexes, "queryLog": query_log}


def legacy_json(seed=39):
    return json_util.dumps(legacy_store(seed), json_options=LEGACY_JSON) + "\n"


# %% [markdown]
# Notebooks run from the `notebooks/` folder, so the file is one level up. Loading it, and checking that it is
# exactly what the code above generates:

# %%
ROOT = Path.cwd().parent if Path.cwd().name == "notebooks" else Path.cwd()
path = ROOT / "data" / "legacy_store.json"
text = path.read_text()
legacy = json_util.loads(text, json_options=LEGACY_JSON)
print(f"{path.relative_to(ROOT)}: {len(text):,} bytes; same as the generator: {text == legacy_json()}")

# %% [markdown]
# Into the database: every collection with its documents and indexes. The query log stays a table.

# %%
for name, docs in legacy["collections"].items():
    db[name].insert_many(docs)
for name, specs in legacy["indexes"].items():
    for spec in specs:
        db[name].create_index(list(spec["key"].items()), name=spec["name"])
log = legacy["queryLog"]
pd.DataFrame([{"collection": q["collection"], "op": q["op"], "per second": q["perSecond"],
               "query": str(q.get("filter") or [list(s)[0] for s in q["pipeline"]])} for q in log])

# %% [markdown]
# ## The checklist
#
# The six checks below each produce **evidence** (numbers from the server) and, where the evidence crosses a
# threshold, a finding: `(kind, where)`. The kinds:

# %%
KINDS = ["collection-per-tenant", "unbounded-array", "bloated-document", "redundant-index",
         "case-insensitive-regex", "hot-lookup"]
KINDS

# %% [markdown]
# ### 1. Count collections; look for names with ids or dates

# %%
stats = db.command("dbStats")
names = sorted(db.list_collection_names())
print(f"collections: {stats['collections']}, indexes: {stats['indexes']}")
families = pd.Series([n.rsplit("_", 1)[0] + "_*" for n in names if "_" in n]).value_counts()
families

# %% [markdown]
# ### 2. For every array, name what bounds it
#
# Maximum against average length, per array field, with `$size` on the server:

# %%
def array_fields(collection):
    fields = set()
    for doc in collection.find().limit(50):
        fields |= {k for k, v in doc.items() if isinstance(v, list)}
    return sorted(fields)


arrays = []
for name in names:
    for field in array_fields(db[name]):
        s = next(db[name].aggregate([{"$project": {"n": {"$size": {"$ifNull": [f"${field}", []]}}}},
                                     {"$group": {"_id": None, "max": {"$max": "$n"}, "avg": {"$avg": "$n"}}}]))
        arrays.append({"where": f"{name}.{field}", "max length": s["max"], "avg length": round(s["avg"], 1),
                       "max / avg": round(s["max"] / max(s["avg"], 1), 1)})
arrays = pd.DataFrame(arrays)
arrays

# %% [markdown]
# ### 3. Compare document size with what the hot query returns
#
# `avgObjSize` from `collStats`, the median document (so one outlier does not decide), and the bytes the
# most frequent projected query on the collection actually returns:

# %%
def bson_sizes(collection, stages=()):
    """BSON sizes of the documents a pipeline produces, measured on the server with $bsonSize."""
    return [d["b"] for d in collection.aggregate([*stages, {"$project": {"_id": 0, "b": {"$bsonSize": "$$ROOT"}}}])]


sizes = []
for q in sorted((q for q in log if q["op"] == "find" and q.get("projection")), key=lambda q: -q["perSecond"]):
    coll = db[q["collection"]]
    returned = bson_sizes(coll, [{"$match": q["filter"]}, {"$project": q["projection"]}])
    docs = bson_sizes(coll)
    sizes.append({"where": q["collection"], "avgObjSize": db.command("collStats", q["collection"])["avgObjSize"],
                  "median doc bytes": int(statistics.median(docs)), "hot query bytes per doc": int(statistics.median(returned)),
                  "median / hot": round(statistics.median(docs) / statistics.median(returned), 1)})
sizes = pd.DataFrame(sizes)
sizes

# %% [markdown]
# ### 4. Find prefix-redundant indexes
#
# On a live cluster, also read `$indexStats` on every member to find unused indexes. A copy loaded a minute ago
# has no usage history, so here only the key patterns can be judged.

# %%
redundant = []
for name in names:
    infos = db[name].index_information()
    for ix, info in infos.items():
        for other, other_info in infos.items():
            key, longer = list(info["key"]), list(other_info["key"])
            if ix != other and ix != "_id_" and len(longer) > len(key) and longer[: len(key)] == key:
                redundant.append({"where": f"{name}.{ix}", "prefix of": other})
redundant = pd.DataFrame(redundant)
redundant

# %% [markdown]
# ### 5. Case-insensitive regular expressions, with their plan

# %%
regexes = []
for q in log:
    for field, value in (q.get("filter") or {}).items():
        if isinstance(value, Regex) and value.flags & re.I:
            s = db[q["collection"]].find(q["filter"]).explain()["executionStats"]
            regexes.append({"where": f"{q['collection']}.{field}", "per second": q["perSecond"],
                            "keys examined": s["totalKeysExamined"], "docs examined": s["totalDocsExamined"],
                            "returned": s["nReturned"]})
regexes = pd.DataFrame(regexes)
regexes

# %% [markdown]
# ### 6. Joins on hot paths: frequency first

# %%
lookups = pd.DataFrame([{"where": q["collection"], "per second": q["perSecond"],
                         "joins": sum("$lookup" in s for s in q["pipeline"])}
                        for q in log if q["op"] == "aggregate"])
lookups.sort_values("per second", ascending=False)

# %% [markdown]
# ## The evidence side by side
#
# Each check's key ratio against its threshold. A bar past the dashed line is a finding.

# %%
evidence = pd.concat([
    arrays.assign(check="array max / avg", value=arrays["max / avg"], threshold=10.0),
    sizes.assign(check="median doc / hot bytes", value=sizes["median / hot"], threshold=10.0),
    regexes.assign(check="keys examined / returned",
                   value=regexes["keys examined"] / regexes["returned"].clip(lower=1), threshold=10.0),
    lookups.assign(check="lookups per second", value=lookups["per second"], threshold=100.0),
])[["check", "where", "value", "threshold"]].reset_index(drop=True)
evidence["finding?"] = evidence["value"] >= evidence["threshold"]
evidence.round(2)

# %%
fig, ax = plt.subplots(figsize=(7, 3))
labels = [f"{c}: {w}" for c, w in zip(evidence["check"], evidence["where"])]
ax.barh(labels, evidence["value"] / evidence["threshold"],
        color=["#d62728" if f else "#1f77b4" for f in evidence["finding?"]])
ax.axvline(1, color="grey", linestyle="--")
ax.set_xscale("log")
ax.set_xlabel("value / threshold (log scale)")
ax.tick_params(axis="y", labelsize=7)
plt.tight_layout()
plt.show()

# %% [markdown]
# ## Explore: thresholds
#
# Thresholds are judgement calls. Move them and see how many findings each check raises (the evidence is the
# one measured above).

# %%
from labkit.widgets import explorer


def flagged(array_ratio, bloat_ratio, hot_per_second):
    return {"unbounded arrays": int((arrays["max / avg"] >= array_ratio).sum()),
            "bloated collections": int((sizes["median / hot"] >= bloat_ratio).sum()),
            "hot lookups": int((lookups["per second"] >= hot_per_second).sum()),
            "redundant indexes (no threshold)": len(redundant),
            "case-insensitive regexes (no threshold)": len(regexes)}


def draw_flagged(ax, values, r):
    ax.barh(list(r)[::-1], list(r.values())[::-1])
    ax.set_xlabel("findings")
    ax.tick_params(axis="y", labelsize=7)


th = explorer(flagged, sliders={"array_ratio": (2, 100, 10, 1), "bloat_ratio": (2, 100, 10, 1),
                                "hot_per_second": (1, 500, 100, 1)}, title="Review thresholds", draw=draw_flagged)
th

# %% [markdown]
# ## Exercise
#
# Write down what the review found: a **set** of `(kind, where)` pairs, with `kind` from `KINDS` and `where`
# as the tables above spell it (`collection.field`, `collection.index`, a collection, or a name family such as
# `orders_*`). `ex.check(db, log, findings)` re-measures each claim on the data and tells you which ones hold,
# which do not (and why), and how many are still hidden.

# %%
ex = labkit.exercises.get("39-schema-review")
ex

# %% tags=["solution"]
findings = set()
findings |= {("collection-per-tenant", f) for f, n in families.items() if n >= 3}
findings |= {("unbounded-array", w) for w in arrays.loc[arrays["max / avg"] >= 10, "where"]}
findings |= {("bloated-document", w) for w in sizes.loc[sizes["median / hot"] >= 10, "where"]}
findings |= {("redundant-index", w) for w in redundant["where"]}
findings |= {("case-insensitive-regex", w) for w in regexes["where"]}
findings |= {("hot-lookup", w) for w in lookups.loc[lookups["per second"] >= 100, "where"]}
print(sorted(findings))
ex.check(db, log, findings)

# %% [markdown]
# ## Summary
#
# - Review with numbers: `dbStats` and names, `$size` max vs average, `collStats` against hot-query bytes,
#   index key prefixes (and `$indexStats` on every node), explain of the case-insensitive queries, and the
#   frequency of every `$lookup`.
# - Each finding points at a lesson: 32 arrays, 33 bloat, 34 collections, 35 indexes, 37 case, 38 joins.
# - Re-run the checklist whenever the workload table changes.
#
# **Next:** back to the workload table (30): fix the findings in order of the traffic they touch.

# %% [markdown] tags=["navigation"]
# [← 38 · Anti-pattern: overuse of \$lookup](38_lookup_overuse.ipynb) · [Contents](../CONTENTS.md)
