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
#     title: "Scale out: patterns meet sharding"
#     section: Scale out
#     demo: "Bucket documents keyed by {sensorId, date} spread every hour's writes; keyed by date they pile onto one shard until reshardCollection repairs the key."
#     mistakes: ["Keying buckets by their date alone: each new hour's buckets land on one shard", "A low-cardinality key: ranges of one value grow into jumbo ranges the balancer cannot move", "Resharding to a hashed key when the reads are ranges: the repair makes every read a broadcast"]
#     sources:
#     - title: "MongoDB manual: Data Partitioning with Chunks (indivisible and jumbo chunks)"
#       url: https://www.mongodb.com/docs/manual/core/sharding-data-partitioning/
#     - title: "MongoDB manual: Sharded Cluster Balancer"
#       url: https://www.mongodb.com/docs/manual/core/sharding-balancer-administration/
#     - title: "MongoDB manual: Modify Range Size in a Sharded Cluster"
#       url: https://www.mongodb.com/docs/manual/tutorial/modify-chunk-size-in-sharded-cluster/
#     - title: "MongoDB manual: configureCollectionBalancing"
#       url: https://www.mongodb.com/docs/manual/reference/command/configurecollectionbalancing/
#     - title: "MongoDB manual: $lookup (sharded collections)"
#       url: https://www.mongodb.com/docs/manual/reference/operator/aggregation/lookup/
#     - title: "MongoDB manual: Aggregation Pipeline and Sharded Collections"
#       url: https://www.mongodb.com/docs/manual/core/aggregation-pipeline-sharded-collections/
#     - title: "mongodb/mongo jstests/sharding/query/sharded_lookup_execution.js"
#       url: https://github.com/mongodb/mongo/blob/v8.0/jstests/sharding/query/sharded_lookup_execution.js
#     - title: "MongoDB manual: Production Considerations (Sharded Clusters) for transactions"
#       url: https://www.mongodb.com/docs/manual/core/transactions-sharded-clusters/
#     - title: "MongoDB manual: Reshard a Collection"
#       url: https://www.mongodb.com/docs/manual/core/sharding-reshard-a-collection/
#     - title: "mongodb/mongo jstests/sharding/query/sharded_lookup_in_txn.js"
#       url: https://github.com/mongodb/mongo/blob/v8.0/jstests/sharding/query/sharded_lookup_in_txn.js
# ---

# %% [markdown]
# # 42 · Scale out: patterns meet sharding
#
# **You will learn**
# - which shard key the bucket pattern's `{sensorId, date}` documents need, measured on new hours of data;
# - how a low-cardinality key produces **jumbo** ranges that the balancer cannot split or move;
# - what `$lookup` across sharded collections and transactions across shards do on a cluster;
# - to repair a bad key in place with `reshardCollection`.
#
# **Time:** about 30 minutes.

# %%
import datetime as dt

import pandas as pd
from bson.min_key import MinKey
from pymongo.errors import OperationFailure

import labkit
from labkit import sharding

client = labkit.connect(shards=3)
print("engine:", labkit.describe(client).split(" at ")[0])
db = labkit.fresh_db("42_sharded_patterns", client=client)

# %% [markdown]
# ## The workload
#
# The sensor fleet of lesson 10, stored with the bucket pattern: one document per sensor per hour.

# %%
workload = labkit.workload_table([
    ("add a reading to its hour's bucket", "write", 1000, "the bucket of {sensorId, date}"),
    ("one sensor's day of buckets", "read", 50, "{sensorId, date: {$gte, $lt}}"),
    ("dashboard: sensors with their site's name", "read", 1, "a $lookup into sites"),
], rate="per_second")
workload

# %% [markdown]
# 60 sensors on 6 sites, two days of hourly buckets (12 readings each):

# %%
DAY0 = dt.datetime(2026, 5, 1)
SENSORS = [f"sensor:{s:02d}" for s in range(60)]


def bucket(sensor, hour):
    s = int(sensor.split(":")[1])
    values = [round(20 + ((s * 7 + hour * 3 + k) % 50) / 10, 1) for k in range(12)]
    return {"sensorId": sensor, "site": f"site:{s % 6}", "date": DAY0 + dt.timedelta(hours=hour),
            "count": 12, "sum": round(sum(values), 1), "readings": values}


buckets = [bucket(s, h) for h in range(48) for s in SENSORS]
print(len(buckets), "buckets of", buckets[0]["count"], "readings")

# %% [markdown]
# ## Buckets keyed by date, and by sensor then date
#
# Two copies, each sharded while empty, loaded, then spread in thirds (as in lesson 40):

# %%
designs = {"date": {"date": 1}, "sensorId, date": {"sensorId": 1, "date": 1}}
colls = {}
for name, key in designs.items():
    c = db["buckets_" + "_".join(key)]
    client.admin.command("shardCollection", c.full_name, key=key)
    c.insert_many([dict(b) for b in buckets], ordered=False)
    colls[name] = c
sharding.spread(colls["date"], [{"date": DAY0 + dt.timedelta(hours=16)}, {"date": DAY0 + dt.timedelta(hours=32)}])
sharding.spread(colls["sensorId, date"], [{"sensorId": "sensor:20", "date": MinKey()},
                                          {"sensorId": "sensor:40", "date": MinKey()}])
pd.DataFrame({n: {r["shard"]: r["documents"] for r in sharding.distribution(c)} for n, c in colls.items()})

# %% [markdown]
# The next hour opens a new bucket for every sensor. Where do those 60 inserts go, and how many shards does
# one sensor's day ask?

# %%
next_hour = [dict(bucket(s, 48), hour="new") for s in SENSORS]
one_day = {"sensorId": "sensor:07", "date": {"$gte": DAY0, "$lt": DAY0 + dt.timedelta(days=1)}}
rows = {}
for name, c in colls.items():
    landed = sharding.inserts_per_shard(c, [dict(b) for b in next_hour])
    read = sharding.targeting(c.find(one_day).explain())
    rows[name] = {**{f"new buckets on {s}": n for s, n in landed.items()}, "one sensor's day: shards": read["shards contacted"]}
pd.DataFrame(rows)

# %% [markdown]
# Keyed by `date`, every new hour is later than every split point: all 60 new buckets go to one shard (lesson
# 40's monotonic key), and one sensor's day spans the shards that hold that day. Keyed by `{sensorId, date}`,
# the hour's buckets spread with the sensors and a sensor's day is one range on one shard.
#
# ## A low-cardinality key: jumbo ranges
#
# Suppose the buckets were keyed by `site` alone: 6 values. All buckets of a site share one key value, so they
# always stay in one range. The balancer moves data in ranges of about the **range size**, 128 MB by default and
# 1 MB at the least ([manual: Modify Range Size](https://www.mongodb.com/docs/manual/tutorial/modify-chunk-size-in-sharded-cluster/)).
# Here this one collection gets 1 MB, so a small collection shows the effect: `sharding.set_range_size` runs
# `configureCollectionBalancing`, which every Atlas cluster accepts. By default a range cannot move when it holds
# more than twice the documents a range of the range size would hold (2 × range size ÷ average document size)
# ([manual: configureCollectionBalancing](https://www.mongodb.com/docs/manual/reference/command/configurecollectionbalancing/)).
# Such a range that cannot be split either, because it holds a single key value, is marked **jumbo** and
# stays where it is ([manual: Jumbo Chunks](https://www.mongodb.com/docs/manual/core/sharding-data-partitioning/);
# [manual: Balancer](https://www.mongodb.com/docs/manual/core/sharding-balancer-administration/)).

# %%
by_site = db.buckets_by_site
client.admin.command("shardCollection", by_site.full_name, key={"site": 1})
sharding.set_range_size(by_site, 1)
by_site.insert_many([dict(bucket(s, h), pad="x" * 20_000) for h in range(48) for s in SENSORS[:20]], ordered=False)
moved = sharding.balance(by_site)
chunks = list(client.config.chunks.find({"uuid": sharding.collection_info(by_site)["uuid"]},
                                        {"_id": 0, "min": 1, "shard": 1, "jumbo": 1}).sort("min", 1))
pd.DataFrame([{"range starts at": c["min"]["site"], "shard": c["shard"], "jumbo": c.get("jumbo", False)}
              for c in chunks])

# %%
per_site = pd.Series([d["site"] for d in by_site.find({}, {"site": 1})]).value_counts().sort_index()
site_dist = pd.DataFrame(sharding.distribution(by_site)).set_index("shard")
avg_size = int(site_dist["bytes"].sum() // site_dist["documents"].sum())
print(f"documents per site: {per_site.min()} to {per_site.max()}; a range may move with at most "
      f"2 x {2**20:,} // {avg_size:,} = {2 * (2**20 // avg_size)} documents")
site_dist

# %% [markdown]
# The balancer split the collection where the site changes, then could move none of the six ranges: each holds
# one site and more documents than a range may move with (printed above), and is marked jumbo. All the data
# stays on one shard, and with 6
# values there can never be more than 6 ranges, whatever the data grows to.
#
# ## `$lookup` across sharded collections
#
# The dashboard joins sensors' buckets with `sites`. Since MongoDB 5.1 the `from` collection of `$lookup` may be
# sharded ([manual: $lookup](https://www.mongodb.com/docs/manual/reference/operator/aggregation/lookup/)). Its
# result is the same as on one server; what changes is where the work runs. The router's `explain` shows the
# pipeline **split** in two: a part every shard runs on its own buckets, and a merging part that combines the
# shards' results ([manual: Aggregation Pipeline and Sharded Collections](https://www.mongodb.com/docs/manual/core/aggregation-pipeline-sharded-collections/)).

# %%
db.sites.insert_many([{"_id": f"site:{i}", "name": f"Site {i}", "city": ["Lyon", "Oslo", "Pune"][i % 3]}
                      for i in range(6)])
db.sites.create_index([("_id", "hashed")])
client.admin.command("shardCollection", db.sites.full_name, key={"_id": "hashed"})
dashboard = [{"$match": {"date": DAY0}},
             {"$lookup": {"from": "sites", "localField": "site", "foreignField": "_id", "as": "site_doc"}},
             {"$project": {"_id": 0, "sensorId": 1, "site": {"$first": "$site_doc.name"}}},
             {"$sort": {"sensorId": 1}}, {"$limit": 3}]
list(colls["sensorId, date"].aggregate(dashboard))

# %%
plan = db.command("explain", {"aggregate": colls["sensorId, date"].name, "pipeline": dashboard, "cursor": {}},
                  verbosity="queryPlanner")
split = plan["splitPipeline"]
print("the merge runs on:", plan["mergeType"])
pd.DataFrame({"each shard runs": pd.Series([next(iter(st)) for st in split["shardsPart"]]),
              "the merging part runs": pd.Series([next(iter(st)) for st in split["mergerPart"]])}).fillna("")

# %% [markdown]
# `sites` is sharded, so the join does not wait for the merge: every shard holding buckets runs the `$lookup` on
# its own buckets, itself querying the shards that own the sites those buckets name, then sorts and limits; the
# router (`mongos`) only merges the shards' sorted results (`$mergeCursors`) and keeps the first ones. The
# server's own test checks this placement: a `$lookup` of a sharded collection runs on every shard holding the
# local collection
# ([jstests/sharding/query/sharded_lookup_execution.js](https://github.com/mongodb/mongo/blob/v8.0/jstests/sharding/query/sharded_lookup_execution.js)).
#
# The manual states where the merging part runs: on the `mongos`, apart from a few cases, one of which is a
# `$lookup` of an **unsharded** collection: the merge then runs on the shard where that collection lives. And a
# pipeline that starts with an exact `$match` on the shard key runs whole on the matching shard only when it has
# no `$lookup` (nor `$out`)
# ([manual: Aggregation Pipeline and Sharded Collections](https://www.mongodb.com/docs/manual/core/aggregation-pipeline-sharded-collections/)).

# %% [markdown]
# Inside a transaction the same join is refused: `$lookup` and `$graphLookup` from a sharded collection cannot
# run in a transaction (error 3904800, tested in the server's
# [jstests/sharding/query/sharded_lookup_in_txn.js](https://github.com/mongodb/mongo/blob/v8.0/jstests/sharding/query/sharded_lookup_in_txn.js)).

# %%
try:
    with client.start_session() as s, s.start_transaction():
        list(colls["sensorId, date"].aggregate(dashboard, session=s))
except OperationFailure as exc:
    print("code", exc.code)

# %% [markdown]
# ## Transactions across shards
#
# A transaction may write to several shards; it then commits on all of them or none, and costs more than one that
# stays on a single shard ([manual: transactions on sharded clusters](https://www.mongodb.com/docs/manual/core/transactions-sharded-clusters/)).
# Moving a sensor from one site to another while recording the move in its last bucket touches one shard if both
# documents share a range, two otherwise. The shards each write would target:

# %%
moves = {"sensor:05 -> sensor:06": ("sensor:05", "sensor:06"), "sensor:05 -> sensor:45": ("sensor:05", "sensor:45")}
c = colls["sensorId, date"]
pd.DataFrame({name: {"shards written": len({s for sid in pair for s in sharding.targeting(
    c.find({"sensorId": sid, "date": DAY0}).explain())["shards"]})} for name, pair in moves.items()})

# %%
with client.start_session() as s, s.start_transaction():
    c.update_one({"sensorId": "sensor:05", "date": DAY0}, {"$set": {"note": "moved"}}, session=s)
    c.update_one({"sensorId": "sensor:45", "date": DAY0}, {"$set": {"note": "moved"}}, session=s)
c.count_documents({"note": "moved"})

# %% [markdown]
# Both writes committed together. Keeping what changes together under one key value (one sensor's buckets) keeps
# most transactions on one shard.
#
# ## Repairing a bad key: `reshardCollection`
#
# The date-keyed buckets are the hot-shard design. MongoDB 5.0 and later can change a collection's key in place
# with `reshardCollection`: it copies the data into ranges of the new key and switches over
# ([manual: Reshard a Collection](https://www.mongodb.com/docs/manual/core/sharding-reshard-a-collection/)).

# %%
bad = colls["date"]
client.admin.command("reshardCollection", bad.full_name, key={"sensorId": 1, "date": 1})
print(sharding.collection_info(bad)["key"], bad.count_documents({}))
after_hour = [dict(bucket(s, 49), hour="after") for s in SENSORS]
pd.DataFrame({"next hour after resharding": sharding.inserts_per_shard(bad, after_hour)})

# %% [markdown]
# ## Explore: the next hours
#
# Choose the key and how many new hours of buckets to count; each step reads, through the router's `explain`,
# how many of those buckets each shard holds.

# %%
from labkit.widgets import explorer

colls["sensorId, date"].insert_many([dict(bucket(s, h), hour=h) for h in range(50, 56) for s in SENSORS],
                                    ordered=False)
late = db["buckets_date_late"]  # a date-keyed copy that was not resharded
client.admin.command("shardCollection", late.full_name, key={"date": 1})
late.insert_many([dict(b) for b in buckets], ordered=False)
sharding.spread(late, [{"date": DAY0 + dt.timedelta(hours=16)}, {"date": DAY0 + dt.timedelta(hours=32)}])
late.insert_many([dict(bucket(s, h), hour=h) for h in range(50, 56) for s in SENSORS], ordered=False)
KEYS = {"date": late, "sensorId, date": colls["sensorId, date"]}


def next_hours(key, hours):
    per = sharding.targeting(KEYS[key].find({"hour": {"$gte": 50, "$lt": 50 + hours}}).explain())["per shard"]
    return {f"on {s}": per.get(s, {}).get("returned", 0) for s in sharding.shard_names(client)}


def draw_hours(ax, values, r):
    ax.bar([k[3:] for k in r], list(r.values()), color="#2ca02c")
    ax.set_ylabel("new buckets on the shard")


hours_widget = explorer(next_hours, sliders={"key": list(KEYS), "hours": (1, 6, 6, 1)},
                        title="Where new hours of buckets land", draw=draw_hours, cache=True, data=db)
hours_widget

# %% [markdown]
# ## Exercise: repair a fleet's key
#
# A trucking company sharded its GPS `pings` (`{truckId, ts, lat, lon}`, 40 trucks) on `{ts: 1}`, and one shard
# takes every insert. Its hot read is one truck's last hour. Write `repair(client, coll)` that changes the key in
# place (keep every document). `ex.check(repair)` runs it on its own fleet and measures new pings and the read.

# %%
ex = labkit.exercises.get("42-repair-key")
ex


# %% tags=["solution"]
def repair(client, coll):
    client.admin.command("reshardCollection", coll.full_name, key={"truckId": 1, "ts": 1})


ex.check(client, repair)

# %% [markdown]
# ## Summary
#
# - Key bucket documents by what identifies the series, then time (`{sensorId: 1, date: 1}`): each hour's new
#   buckets spread, and one sensor's range reads target one shard.
# - A key with few values caps the number of ranges; a range of one value that holds more documents than a
#   migration may move is jumbo and stays put.
# - `$lookup` of a sharded collection works outside transactions, each shard joining its own documents;
#   transactions may span shards at a higher cost; `reshardCollection` repairs a key without moving the data by
#   hand.
#
# **Next:** back to the [contents](../CONTENTS.md), or lesson 39's schema review on a sharded database.

# %% [markdown] tags=["sources"]
# ## Sources
#
# 1. [MongoDB manual: Data Partitioning with Chunks (indivisible and jumbo chunks)](https://www.mongodb.com/docs/manual/core/sharding-data-partitioning/)
# 2. [MongoDB manual: Sharded Cluster Balancer](https://www.mongodb.com/docs/manual/core/sharding-balancer-administration/)
# 3. [MongoDB manual: Modify Range Size in a Sharded Cluster](https://www.mongodb.com/docs/manual/tutorial/modify-chunk-size-in-sharded-cluster/)
# 4. [MongoDB manual: configureCollectionBalancing](https://www.mongodb.com/docs/manual/reference/command/configurecollectionbalancing/)
# 5. [MongoDB manual: \$lookup (sharded collections)](https://www.mongodb.com/docs/manual/reference/operator/aggregation/lookup/)
# 6. [MongoDB manual: Aggregation Pipeline and Sharded Collections](https://www.mongodb.com/docs/manual/core/aggregation-pipeline-sharded-collections/)
# 7. [mongodb/mongo jstests/sharding/query/sharded_lookup_execution.js](https://github.com/mongodb/mongo/blob/v8.0/jstests/sharding/query/sharded_lookup_execution.js)
# 8. [MongoDB manual: Production Considerations (Sharded Clusters) for transactions](https://www.mongodb.com/docs/manual/core/transactions-sharded-clusters/)
# 9. [MongoDB manual: Reshard a Collection](https://www.mongodb.com/docs/manual/core/sharding-reshard-a-collection/)
# 10. [mongodb/mongo jstests/sharding/query/sharded_lookup_in_txn.js](https://github.com/mongodb/mongo/blob/v8.0/jstests/sharding/query/sharded_lookup_in_txn.js)

# %% [markdown] tags=["navigation"]
# [← 41 · Scale out: query targeting](41_query_targeting.ipynb) · [Contents](../CONTENTS.md)
