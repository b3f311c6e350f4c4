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
#     title: "Attribute pattern: many similar fields, one index"
#     section: Patterns
#     demo: "Create the 40 per-country indexes, then replace them with one compound index on releases.k/releases.v and show the $elemMatch plan's bounds."
#     mistakes: ["querying releases.k and releases.v without $elemMatch, so the country and the date may come from different array elements", "indexing releases.v before releases.k, which puts the selective equality last", "storing the country code in the value and the date in the key (k/v swapped)", "making the index partial on a field the query does not filter on, so the query cannot use it"]
#     sources:
#     - title: "MongoDB manual: Group Data with the Attribute Pattern"
#       url: https://www.mongodb.com/docs/manual/data-modeling/design-patterns/group-data/attribute-pattern/
#     - title: "MongoDB manual: Sparse Indexes"
#       url: https://www.mongodb.com/docs/manual/core/index-sparse/
#     - title: "MongoDB manual: Multikey Index Bounds"
#       url: https://www.mongodb.com/docs/manual/core/indexes/index-types/index-multikey/multikey-index-bounds/
#     - title: "MongoDB manual: $elemMatch (query)"
#       url: https://www.mongodb.com/docs/manual/reference/operator/query/elemMatch/
#     - title: "MongoDB manual: MongoDB Limits and Thresholds (64 indexes per collection)"
#       url: https://www.mongodb.com/docs/manual/reference/limits/
#     - title: "MongoDB manual: $collStats (aggregation stage)"
#       url: https://www.mongodb.com/docs/manual/reference/operator/aggregation/collStats/
# ---

# %% [markdown]
# # 15 · Attribute pattern: many similar fields, one index
#
# **You will learn**
# - why a family of look-alike fields (`releaseUS`, `releaseFR`, ...) needs one index per field;
# - to fold that family into a key/value array `releases: [{k, v}, ...]` served by a single compound index;
# - to query the array with `$elemMatch`, and to read the multikey IXSCAN and its bounds in `explain()`;
# - what goes wrong when the two conditions are written without `$elemMatch`.
#
# **Time:** about 25 minutes.

# %%
import datetime as dt
import random

import pandas as pd
from pymongo.errors import OperationFailure

import labkit

db = labkit.fresh_db("15_attribute")
print("engine:", labkit.describe(db.client))

# %% [markdown]
# A film catalogue: 2,000 movies, each released in the United States and in a varying number of the other
# markets of a list of 40. The generator is seeded, so every run builds the same catalogue.

# %%
COUNTRIES = ["US", "FR", "DE", "IT", "GB", "ES", "JP", "BR", "CA", "AU", "MX", "KR", "IN", "NL", "SE", "NO", "DK",
             "FI", "PL", "PT", "BE", "CH", "AT", "IE", "AR", "CL", "CO", "PE", "ZA", "EG", "TR", "GR", "CZ", "HU",
             "RO", "NZ", "SG", "TH", "PH", "ID"]
rng = random.Random(15)


def make_movie(i):
    us = dt.datetime(2000, 1, 7) + dt.timedelta(days=7 * rng.randrange(0, 1300))
    others = rng.sample(COUNTRIES[1:], rng.randint(2, 24))
    dates = {"US": us} | {c: us + dt.timedelta(days=rng.randint(0, 120)) for c in sorted(others)}
    return {"_id": i, "title": f"Movie {i:04d}", "runtime": rng.randint(80, 180), "dates": dates}


catalogue = [make_movie(i) for i in range(1, 2001)]
print("movies:", len(catalogue), "| markets:", len(COUNTRIES), "| release dates:",
      sum(len(m["dates"]) for m in catalogue))

# %% [markdown]
# ## The workload

# %%
labkit.workload_table([
    ("movies released in country X between two dates", "read", "200/s", "any of the 40 countries, one index-backed query"),
    ("movie page", "read", "3,000/s", "the movie by _id"),
    ("add a movie, add a country to a movie", "write", "50 a day", "cheap, no schema change when a new market opens"),
])

# %% [markdown]
# The first read is the problem: *any* country may be asked for.

# %% [markdown]
# ## The naive design: one field per country
#
# Each country's date is its own top-level field, the way the data usually arrives from a spreadsheet.

# %%
wide = db.movies_wide
wide.insert_many([{"_id": m["_id"], "title": m["title"], "runtime": m["runtime"]}
                  | {f"release{c}": d for c, d in m["dates"].items()} for m in catalogue])
wide.find_one({"_id": 1})


# %% [markdown]
# A small helper turns an `explain()` document into the few numbers this lesson compares. It walks the winning plan
# from its root to the leaf.

# %%
def plan_stages(explain):
    node, stages = explain["queryPlanner"]["winningPlan"], []
    while node:
        node = node.get("queryPlan", node)
        stages.append(node)
        node = node.get("inputStage")
    return stages


def cost(cursor):
    explain = cursor.explain()
    stats, stages = explain["executionStats"], plan_stages(explain)
    scan = stages[-1]
    return {"plan": " > ".join(s["stage"] for s in stages), "index": scan.get("indexName", "-"),
            "multikey": scan.get("isMultiKey", "-"), "keys examined": stats["totalKeysExamined"],
            "docs examined": stats["totalDocsExamined"], "returned": stats["nReturned"]}


# %% [markdown]
# Without an index on `releaseFR`, "French releases in spring 2010" reads every movie:

# %%
spring = {"$gte": dt.datetime(2010, 3, 1), "$lt": dt.datetime(2010, 6, 1)}
pd.DataFrame([cost(wide.find({"releaseFR": spring}))], index=["releaseFR, no index"])

# %% [markdown]
# To make the query fast for **every** country, each country field needs its own index (sizes from the
# [`$collStats`](https://www.mongodb.com/docs/manual/reference/operator/aggregation/collStats/) stage):

# %%
for country in COUNTRIES:
    labkit.shared.create_index(wide, f"release{country}")  # staggered on a shared cluster (LABKIT_SHARED=1)
_ = labkit.shared.note(f"{len(COUNTRIES)} index builds staggered, one at a time")
def storage(name):
    """nindexes and totalIndexSize of a collection, from the `$collStats` stage's storage statistics."""
    return next(db[name].aggregate([{"$collStats": {"storageStats": {}}}]))["storageStats"]


wide_stats = storage("movies_wide")
print("indexes on movies_wide:", wide_stats["nindexes"], "(40 countries + _id)")
print(f"total index size: {wide_stats['totalIndexSize']:,} bytes")

# %%
pd.DataFrame([cost(wide.find({"releaseFR": spring})), cost(wide.find({"releaseJP": spring}))],
             index=["releaseFR", "releaseJP"])

# %% [markdown]
# Each query is fast now, but look at what it cost. An index that is not sparse holds one entry per document, even
# for movies that have no date in that country (they are indexed under `null`). A full scan of one index, forced with
# `hint`, counts its entries:

# %%
entries_one = wide.find().hint("releaseFR_1").explain()["executionStats"]["totalKeysExamined"]
print("entries in releaseFR_1:", entries_one)
print("entries in the 40 country indexes:", entries_one * len(COUNTRIES))

# %% [markdown]
# And the schema is tied to the list of countries: a 41st market means a new field name *and* a new index build.
# Every insert writes a key into all 41 indexes.
#
# ### The fair alternative: sparse indexes
#
# Those null entries are not a law of the wide design: a **sparse** index holds only the documents that have the
# field ([manual: sparse indexes](https://www.mongodb.com/docs/manual/core/index-sparse/)). The same 40 country
# indexes, sparse, on a copy of the collection:

# %%
wide_sparse = db.movies_wide_sparse
wide_sparse.insert_many(list(wide.find()))
for country in COUNTRIES:
    labkit.shared.create_index(wide_sparse, f"release{country}", sparse=True)
sparse_stats = storage("movies_wide_sparse")
# a query with a condition on the field may use the sparse index; a range covering all dates counts its entries
every_date = {"$gte": dt.datetime(1900, 1, 1)}
entries_sparse = sum(wide_sparse.find({f"release{c}": every_date}).hint(f"release{c}_1").explain()
                     ["executionStats"]["totalKeysExamined"] for c in COUNTRIES)
pd.DataFrame([cost(wide_sparse.find({"releaseFR": spring}))], index=["releaseFR_1, sparse"]).assign(
    **{"entries in the 40 sparse indexes": entries_sparse, "total index bytes": sparse_stats["totalIndexSize"]})

# %% [markdown]
# **Predict** before the attribute design is built below: its single compound index will hold one entry per
# release of a movie. Compared with the 40 sparse indexes together, will it hold fewer entries, the same number,
# or more?

# %%
predict_entries = labkit.exercises.get("15-predict-entries-vs-sparse")

# %% tags=["solution"]
predict_entries.predict("the same")

# %% [markdown]
# ## The better design: the attribute pattern
#
# Move the family of fields into an array of small `{k, v}` subdocuments: `k` names the attribute (the country),
# `v` holds its value (the date). Fields that are not part of the family (`title`, `runtime`) stay where they are.
# This is the manual's own example of the
# [attribute pattern](https://www.mongodb.com/docs/manual/data-modeling/design-patterns/group-data/attribute-pattern/)
# (it names the two fields `location` and `date`; `k` and `v` fit any attribute).

# %%
movies = db.movies
movies.insert_many([{"_id": m["_id"], "title": m["title"], "runtime": m["runtime"],
                     "releases": [{"k": c, "v": d} for c, d in m["dates"].items()]} for m in catalogue])
movies.find_one({"_id": 1})

# %% [markdown]
# One compound index covers every country, present and future: the key first (equality), then the value (range).

# %%
movies.create_index([("releases.k", 1), ("releases.v", 1)])
attr_stats = storage("movies")
print("indexes on movies:", attr_stats["nindexes"], "(releases.k_1_releases.v_1 + _id)")
print(f"total index size: {attr_stats['totalIndexSize']:,} bytes")

# %% [markdown]
# ### Querying with `$elemMatch`
#
# Both conditions must hold for the **same** array element: the element whose `k` is `"FR"` must be the one whose
# `v` falls in spring 2010. That is exactly what
# [`$elemMatch`](https://www.mongodb.com/docs/manual/reference/operator/query/elemMatch/) says.

# %%
fr_spring = {"releases": {"$elemMatch": {"k": "FR", "v": spring}}}
pd.DataFrame([cost(movies.find(fr_spring)), cost(wide.find({"releaseFR": spring}))],
             index=["attribute, $elemMatch", "wide, releaseFR_1"])

# %% [markdown]
# The plan is an IXSCAN on the compound index, flagged **multikey** (one document has many keys, one per array
# element). The bounds show that both fields are constrained: `k` to the single point `"FR"`, `v` to the spring
# range. The server can combine ("compound") the two bounds only because `$elemMatch` ties them to one element
# ([manual: multikey index bounds](https://www.mongodb.com/docs/manual/core/indexes/index-types/index-multikey/multikey-index-bounds/)).

# %%
ixscan = plan_stages(movies.find(fr_spring).explain())[-1]
{"indexName": ixscan["indexName"], "isMultiKey": ixscan["isMultiKey"], "indexBounds": ixscan["indexBounds"]}

# %% [markdown]
# ### The same conditions without `$elemMatch`
#
# Written as two dotted fields, the conditions may be satisfied by *different* elements: a movie released in
# France in 2012 and somewhere else in spring 2010 matches. The answer is wrong, and the bounds on `v` are lost
# (the server cannot tie `releases.v` to the element that matched `releases.k`), so the scan reads every French key.

# %%
loose = {"releases.k": "FR", "releases.v": spring}
check = pd.DataFrame([cost(movies.find(fr_spring)), cost(movies.find(loose))],
                     index=["$elemMatch", "two dotted fields"])
check["correct answer"] = [movies.count_documents(fr_spring), wide.count_documents({"releaseFR": spring})]
check

# %%
plan_stages(movies.find(loose).explain())[-1]["indexBounds"]

# %% [markdown]
# ## Side by side

# %%
entries_attr = movies.find().hint("releases.k_1_releases.v_1").explain()["executionStats"]["totalKeysExamined"]
fr_wide, fr_attr = cost(wide.find({"releaseFR": spring})), cost(movies.find(fr_spring))
fr_sparse = cost(wide_sparse.find({"releaseFR": spring}))
comparison = pd.DataFrame({
    "one field per country, normal indexes": {"indexes": wide_stats["nindexes"], "total index bytes": wide_stats["totalIndexSize"],
                              "secondary index entries": entries_one * len(COUNTRIES),
                              "index keys written per new movie (average)": float(wide_stats["nindexes"]),
                              "FR spring: keys examined": fr_wide["keys examined"],
                              "FR spring: docs examined": fr_wide["docs examined"],
                              "new country needs a new index": True},
    "one field per country, sparse indexes": {"indexes": sparse_stats["nindexes"],
                                              "total index bytes": sparse_stats["totalIndexSize"],
                                              "secondary index entries": entries_sparse,
                                              "index keys written per new movie (average)": round(
                                                  1 + entries_sparse / len(catalogue), 2),
                                              "FR spring: keys examined": fr_sparse["keys examined"],
                                              "FR spring: docs examined": fr_sparse["docs examined"],
                                              "new country needs a new index": True},
    "attribute pattern": {"indexes": attr_stats["nindexes"], "total index bytes": attr_stats["totalIndexSize"],
                          "secondary index entries": entries_attr,
                          "index keys written per new movie (average)": round(1 + entries_attr / len(catalogue), 2),
                          "FR spring: keys examined": fr_attr["keys examined"],
                          "FR spring: docs examined": fr_attr["docs examined"],
                          "new country needs a new index": False},
})
comparison

# %% [markdown]
# Check the prediction: the attribute index against the 40 sparse indexes.

# %% tags=["reveal"]
entries_verdict = ("fewer" if entries_attr < entries_sparse else "more" if entries_attr > entries_sparse
                   else "the same")
pd.Series({"attribute index entries": entries_attr, "40 sparse indexes, entries": entries_sparse,
           "verdict": entries_verdict})

# %% tags=["reveal"]
predict_entries.check(entries_verdict)

# %% [markdown]
# Against the normal indexes, the attribute design answers the same query with the same work and a fraction of
# the entries. Against the fair alternative, sparse indexes, the entries are the same (one per release either
# way), so are the keys written per new movie, and the bytes are of the same order (the attribute keys also
# carry the country code); what the attribute design removes is the *number* of
# indexes (2 instead of 41, each with its own catalogue entry, build and cache footprint) and the schema change
# per market: a new market is a new `k` value, not a new index build. And the wide design has a wall that sparse
# indexes do not move: a collection holds at most 64 indexes
# ([manual: limits](https://www.mongodb.com/docs/manual/reference/limits/)). The limit, tried on a scratch
# collection with one field per market for 70 markets:

# %%
limit_db = labkit.shared.local_db("15_index_limit", db.client)  # shared mode: on this machine, not the cluster
_ = labkit.shared.note("the 64-index limit is shown on the embedded engine on this machine (same limit, same code)")
limit_db.wide.insert_one({f"release{n:02d}": dt.datetime(2020, 1, 1) for n in range(70)})
built, refused = 0, None
for n in range(70):
    try:
        limit_db.wide.create_index(f"release{n:02d}", sparse=True)
        built += 1
    except OperationFailure as exc:
        refused = f"market {n + 1} refused: code {exc.code}, {exc}"
        break
print(f"markets tried: 70 | country indexes built: {built} (+ _id = {built + 1})")
print(refused)

# %% [markdown]
# ## Explore: how many markets?
#
# Keep only the first N countries of the list (the US is always first). The readouts count the indexes each design
# needs and the index entries they hold, from the release dates actually stored in `db.movies`.

# %%
from labkit.widgets import explorer

per_country = {d["_id"]: d["n"] for d in movies.aggregate(
    [{"$unwind": "$releases"}, {"$group": {"_id": "$releases.k", "n": {"$sum": 1}}}])}
n_movies = movies.count_documents({})


def markets(countries):
    kept = COUNTRIES[:countries]
    releases = sum(per_country.get(c, 0) for c in kept)
    return {"countries": countries,
            "indexes needed, one field per country": countries + 1,
            "indexes needed, attribute pattern": 2,
            "secondary index entries, one field per country": countries * n_movies,
            "secondary index entries, one field per country, sparse": releases,
            "secondary index entries, attribute pattern": releases,
            "index keys written per new movie (avg), one field per country": countries + 1,
            "index keys written per new movie (avg), attribute pattern": round(1 + releases / n_movies, 2)}


def draw_markets(ax, values, r):
    labels = ["one field per country", "attribute pattern"]
    ax.barh(labels, [r["secondary index entries, one field per country"],
                     r["secondary index entries, attribute pattern"]], color=["#d62728", "#1f77b4"])
    ax.set_xlabel("secondary index entries")
    ax.set_title(f"{values['countries']} countries", fontsize=10)


market_explorer = explorer(markets, sliders={"countries": (1, 40, 40)}, title="Release markets", draw=draw_markets)
market_explorer

# %% [markdown]
# With one country both designs need an index on it. From the second country on, the wide design adds an index per
# market while the attribute design keeps the same two.

# %% [markdown]
# ## Exercise
#
# `practice.products` stores technical specs as separate fields (`spec_weight_g`, `spec_width_mm`, ...).
# Write `to_attributes(doc)` that returns the document with **every** `spec_*` field moved into
# `specs: [{"k": <name without "spec_">, "v": <value>}, ...]` (other fields unchanged), rewrite the collection with it,
# and create the **one** index that serves "products whose spec *k* lies between two values" with `$elemMatch`.
# `ex.check(practice.products, to_attributes)` tests your function on sample documents, then looks at the
# collection and its indexes.

# %%
practice = labkit.fresh_db("15_practice")
spec_rng = random.Random(151)
practice.products.insert_many([
    {"_id": f"prod:{i}", "name": f"Gadget {i}", "price": spec_rng.randint(5, 500)}
    | {f"spec_{s}": spec_rng.randint(1, 999) for s in spec_rng.sample(["weight_g", "width_mm", "height_mm",
                                                                       "depth_mm", "battery_mah", "power_w"], 3)}
    for i in range(1, 301)])
ex = labkit.exercises.get("15-attribute").remember(practice, "products")  # the setup, as it is now
ex

# %% tags=["solution"]
def to_attributes(doc):
    out = {k: v for k, v in doc.items() if not k.startswith("spec_")}
    out["specs"] = [{"k": k[len("spec_"):], "v": v} for k, v in doc.items() if k.startswith("spec_")]
    return out


for product in list(practice.products.find()):
    practice.products.replace_one({"_id": product["_id"]}, to_attributes(product))
practice.products.create_index([("specs.k", 1), ("specs.v", 1)])
ex.check(practice.products, to_attributes)

# %% [markdown]
# ## Summary
#
# - Many fields with the same meaning and type (one per country, per size, per language) each need an index to be
#   searchable; that multiplies indexes (at most 64 per collection) and, unless the indexes are sparse, index
#   entries and write cost. Sparse indexes hold the same entries as the attribute index, not fewer indexes.
# - The attribute pattern stores them as `[{k, v}, ...]`; one compound index `{"<array>.k": 1, "<array>.v": 1}`
#   serves every attribute, including ones added later.
# - Query the pairs with `$elemMatch` so both conditions apply to one element: the multikey IXSCAN then bounds both
#   `k` and `v`. Two separate dotted conditions give wrong matches and loose bounds.
#
# **Next:** 16 · extended reference and subset: copy only what the hot read needs.

# %% [markdown] tags=["sources"]
# ## Sources
#
# 1. [MongoDB manual: Group Data with the Attribute Pattern](https://www.mongodb.com/docs/manual/data-modeling/design-patterns/group-data/attribute-pattern/)
# 2. [MongoDB manual: Sparse Indexes](https://www.mongodb.com/docs/manual/core/index-sparse/)
# 3. [MongoDB manual: Multikey Index Bounds](https://www.mongodb.com/docs/manual/core/indexes/index-types/index-multikey/multikey-index-bounds/)
# 4. [MongoDB manual: \$elemMatch (query)](https://www.mongodb.com/docs/manual/reference/operator/query/elemMatch/)
# 5. [MongoDB manual: MongoDB Limits and Thresholds (64 indexes per collection)](https://www.mongodb.com/docs/manual/reference/limits/)
# 6. [MongoDB manual: \$collStats (aggregation stage)](https://www.mongodb.com/docs/manual/reference/operator/aggregation/collStats/)

# %% [markdown] tags=["navigation"]
# [← 14 · Polymorphic: articles, videos and tools in one feed collection](14_polymorphic.ipynb) · [Contents](../CONTENTS.md) · [16 · Extended reference and subset: copy only what the hot read needs →](16_extended_reference_subset.ipynb)
