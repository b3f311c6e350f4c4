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
#     title: "Scale out: choosing a shard key"
#     section: Scale out
#     demo: "Shard the same posts three ways and watch where the next 1,000 inserts land: a timestamp key sends all of them to one shard."
#     mistakes: ["A monotonically increasing key first (a timestamp or ObjectId): every insert lands in the last range", "A key with few distinct values: ranges that can never split", "A hashed key for data read by ranges: every range query is broadcast"]
#     sources:
#     - title: "MongoDB manual: Choose a Shard Key"
#       url: https://www.mongodb.com/docs/manual/core/sharding-choose-a-shard-key/
#     - title: "MongoDB manual: Hashed Sharding"
#       url: https://www.mongodb.com/docs/manual/core/hashed-sharding/
#     - title: "MongoDB manual: shardCollection"
#       url: https://www.mongodb.com/docs/manual/reference/command/shardCollection/
#     - title: "MongoDB manual: Data Partitioning with Chunks"
#       url: https://www.mongodb.com/docs/manual/core/sharding-data-partitioning/
#     - title: "MongoDB manual: $shardedDataDistribution"
#       url: https://www.mongodb.com/docs/manual/reference/operator/aggregation/shardedDataDistribution/
# ---

# %% [markdown]
# # 40 · Scale out: choosing a shard key
#
# **You will learn**
# - what a sharded cluster is: shards, the router (`mongos`), ranges of a **shard key**;
# - the three properties the manual asks of a shard key: **cardinality**, **frequency** and **monotonic change**;
# - why a timestamp key sends every insert to one shard (a *hot shard*), and what a hashed key costs range reads;
# - to measure both on a cluster: where inserts land, and how many shards a query contacts.
#
# **Time:** about 30 minutes.
#
# A **sharded cluster** spreads one collection over several servers, the **shards**. Applications talk to a
# router, `mongos`, which knows from the **config server** which shard owns which part of the data. The
# collection is cut by the value of its **shard key**, one or more fields of every document, into contiguous
# **ranges** (also called chunks); each range lives on one shard
# ([manual: Data Partitioning with Chunks](https://www.mongodb.com/docs/manual/core/sharding-data-partitioning/)).
#
# This lesson runs on labkit's simulated cluster of three shards (each an embedded engine) unless `MONGODB_URI`
# points at a real `mongos`, where the same cells run the real commands.

# %%
import datetime as dt

import matplotlib.pyplot as plt
import pandas as pd
from bson.min_key import MinKey

import labkit
from labkit import sharding

client = labkit.connect(shards=3)
print("engine:", labkit.describe(client).split(" at ")[0])
db = labkit.fresh_db("40_shard_keys", client=client)
print("shards:", sharding.shard_names(client))

# %% [markdown]
# ## The workload
#
# The social app of the earlier lessons, grown past one server: posts are written all day and read by author,
# newest first (the profile feed).

# %%
workload = labkit.workload_table([
    ("publish a post", "write", 300, "must not slow down as the app grows"),
    ("profile feed: one author's 20 newest posts", "read", 2000, "one author's posts, newest first"),
    ("moderation: posts of the last hour", "read", round(1 / 60, 4), "a time range over all authors (1 a minute)"),
], rate="per_second")
workload

# %% [markdown]
# The data: 3,000 posts by 206 authors, one a minute, in the shape of the earlier lessons
# (`authorId`, `createdAt`). A few authors write most of the posts.

# %%
START = dt.datetime(2026, 3, 1)
AUTHORS = 300


def post(i):
    author = (i * 7919) % AUTHORS if i % 3 else i % 17  # 17 busy authors write a third of the posts
    return {"_id": f"post:{i:05d}", "authorId": f"user:{author}", "createdAt": START + dt.timedelta(minutes=i),
            "title": f"post {i}"}


existing = [post(i) for i in range(3000)]
print(len(existing), "posts,", len({p["authorId"] for p in existing}), "authors,",
      existing[0]["createdAt"], "to", existing[-1]["createdAt"])

# %% [markdown]
# ## Three properties of a key
#
# The manual judges a candidate key by ([manual: Choose a Shard Key](https://www.mongodb.com/docs/manual/core/sharding-choose-a-shard-key/)):
#
# - **cardinality**: how many distinct values it has. Documents with the same key value always stay in one range,
#   so the number of distinct values caps the number of ranges;
# - **frequency**: how often the most common value occurs. A frequent value makes one range large;
# - **monotonic change**: whether new documents' values always increase (timestamps, ObjectIds). Then every new
#   document belongs after the last split point, in the **last** range.
#
# `sharding.key_profile` measures all three on documents in insertion order:

# %%
pd.DataFrame([sharding.key_profile(existing, f) for f in ("createdAt", "authorId", "_id")]
             ).set_index("field")[["distinct values", "top value share", "increasing share"]]

# %% [markdown]
# `createdAt` and `_id` increase with every post (increasing share 1.0); `authorId` has 206 values, not
# increasing, the busiest author holding the top share shown.
#
# ## Three designs, sharded
#
# Each design is a collection of its own, sharded while empty (`shardCollection` then creates the index the key
# needs; [manual: shardCollection](https://www.mongodb.com/docs/manual/reference/command/shardCollection/)):
#
# 1. `{createdAt: 1}`: *ranged* on the timestamp (the naive choice: "we always have a date");
# 2. `{authorId: 1, createdAt: 1}`: ranged on the author, then time;
# 3. `{_id: "hashed"}`: *hashed*: ranges over a hash of `_id`, which scatters neighbouring values
#    ([manual: Hashed Sharding](https://www.mongodb.com/docs/manual/core/hashed-sharding/)).

# %%
DESIGNS = {"createdAt": {"createdAt": 1}, "author+time": {"authorId": 1, "createdAt": 1}, "hashed _id": {"_id": "hashed"}}
for name, key in DESIGNS.items():
    coll = "posts_" + name.replace(" ", "_").replace("+", "_")
    client.admin.command("shardCollection", f"{db.name}.{coll}", key=key)
    db[coll].insert_many(existing, ordered=False)
colls = {name: db["posts_" + name.replace(" ", "_").replace("+", "_")] for name in DESIGNS}
[sharding.collection_info(c)["key"] for c in colls.values()]

# %% [markdown]
# A ranged key starts as one range on one shard; a hashed key on an empty collection starts with one range per
# shard (the default since MongoDB 7.2, server ticket SERVER-76405; earlier versions made two per shard). An
# administrator spreads the ranged ones by splitting them and moving ranges (`split`, `moveRange`).
# `sharding.spread` does that at the points we give: the thirds of the existing data.

# %%
t1, t2 = existing[1000]["createdAt"], existing[2000]["createdAt"]
sharding.spread(colls["createdAt"], [{"createdAt": t1}, {"createdAt": t2}])
sharding.spread(colls["author+time"], [{"authorId": "user:2", "createdAt": MinKey()},
                                       {"authorId": "user:5", "createdAt": MinKey()}])
pd.DataFrame({name: {r["shard"]: r["documents"] for r in sharding.distribution(c)} for name, c in colls.items()})

# %% [markdown]
# Documents per shard, measured with `$shardedDataDistribution`
# ([manual](https://www.mongodb.com/docs/manual/reference/operator/aggregation/shardedDataDistribution/)).
# All three start spread. Now the app keeps publishing.
#
# **Predict.** With the key `{createdAt: 1}`, where do the next 1,000 posts land? Record
# `predict_hot.predict("all on one shard")` or `predict_hot.predict("spread over the shards")`.

# %%
predict_hot = labkit.exercises.get("40-predict-hot-shard")
predict_hot

# %% tags=["solution"]
predict_hot.predict("all on one shard")

# %% [markdown]
# The next 1,000 posts, the minutes after the last one, each tagged with its number in `seq`:

# %%
new_posts = [dict(post(3000 + i), seq=i) for i in range(1000)]
landed = {name: sharding.inserts_per_shard(c, [dict(p) for p in new_posts]) for name, c in colls.items()}
landed_table = pd.DataFrame(landed)
landed_table

# %% tags=["reveal"]
hot = landed_table["createdAt"]
predict_hot.check("all on one shard" if hot.max() == hot.sum() else "spread over the shards")

# %% [markdown]
# Every new `createdAt` is later than the last split point, so every insert goes to the range
# `[last split, MaxKey)`, on one shard: that shard does all the writing while the others wait. Adding shards
# does not help, and the balancer keeps moving data away from it. The author key spreads inserts by author, and
# the hashed key spreads them almost evenly.
#
# ## What each key costs the reads
#
# The router sends a query only to the shards whose ranges its filter can reach (**targeted**); a filter that
# does not bound the shard key goes to every shard (**broadcast**, or scatter-gather). `explain()` through the
# router shows the shards it contacted: `SINGLE_SHARD` for one, `SHARD_MERGE` or `SHARD_MERGE_SORT` (merging in
# sort order) for several.

# %%
feed = {"authorId": "user:3"}
last_hour = {"createdAt": {"$gte": new_posts[-1]["createdAt"] - dt.timedelta(hours=1)}}
rows = []
for name, c in colls.items():
    f = sharding.targeting(c.find(feed).sort("createdAt", -1).limit(20).explain())
    h = sharding.targeting(c.find(last_hour).explain())
    rows.append({"design": name, "feed: shards": f["shards contacted"], "feed: plan": f["stage"],
                 "last hour: shards": h["shards contacted"], "last hour: docs examined": h["docs examined"],
                 "inserts on the busiest shard": int(landed_table[name].max())})
costs = pd.DataFrame(rows).set_index("design")
costs

# %% [markdown]
# - `{createdAt: 1}` targets the time-range read (one shard) but not the feed, which goes to all three shards,
#   and it is the hot-shard key;
# - `{authorId: 1, createdAt: 1}` targets the feed, the read that runs 2,000 times a second; the moderation read,
#   once a minute, is broadcast;
# - `{_id: "hashed"}` spreads inserts but targets neither read: a range of `createdAt` (or of `_id`) is scattered
#   over all the hash ranges, so range reads are always broadcast.
#
# The workload decides: the feed's rate makes `{authorId: 1, createdAt: 1}` the key here.

# %%
fig, ax = plt.subplots(figsize=(6, 2.4))
landed_table.T.plot.barh(stacked=True, ax=ax)
ax.set_xlabel("of the next 1,000 posts, inserted on each shard")
plt.tight_layout()
plt.show()

# %% [markdown]
# ## Explore: where do the inserts land?
#
# Pick a design and how many of the 1,000 new posts to count. Each step reads, through the router's `explain`,
# how many of them each shard holds (measured, nothing estimated).

# %%
from labkit.widgets import explorer


def where(design, new_posts_count):
    plan = colls[design].find({"seq": {"$lt": new_posts_count}}).explain()
    per = sharding.targeting(plan)["per shard"]
    counts = {s: per.get(s, {}).get("returned", 0) for s in sharding.shard_names(client)}
    busiest = max(counts, key=counts.get)
    return {**{f"on {s}": n for s, n in counts.items()},
            "busiest shard's share": f"{counts[busiest] / max(1, sum(counts.values())):.0%}"}


def draw_where(ax, values, r):
    shards = [k for k in r if k.startswith("on ")]
    ax.bar([s[3:] for s in shards], [r[s] for s in shards], color="#1f77b4")
    ax.set_ylabel("new posts on the shard")


where_widget = explorer(where, sliders={"design": list(DESIGNS), "new_posts_count": (100, 1000, 500, 100)},
                        title="Where the next posts land", draw=draw_where, cache=True, data=db)
where_widget

# %% [markdown]
# ## Exercise: a shard key for device events
#
# An IoT service stores `events`: `{deviceId, ts, temperature}` from 50 devices, 500 inserts a second. Its hot
# read is one device's events over a time range (`{deviceId: d, ts: {$gte: a, $lt: b}}`). Choose the shard key.
# `ex.check(client, key)` shards a fresh copy of the events on your key, spreads its ranges, inserts a new
# minute of events and measures where they land and how many shards the hot read contacts.

# %%
ex = labkit.exercises.get("40-device-shard-key")
ex

# %% tags=["solution"]
key = {"deviceId": 1, "ts": 1}
ex.check(client, key)

# %% [markdown]
# ## Summary
#
# - A shard key cuts a collection into ranges, one shard each; the router targets a query when its filter bounds
#   the key, and broadcasts it otherwise.
# - Judge a key by cardinality, frequency and monotonic change. A timestamp or ObjectId first sends every insert
#   to the last range: one hot shard, measured above.
# - A hashed key spreads inserts but turns every range read on it into a broadcast; a compound key led by the
#   field the hot read filters on by equality (`authorId`) gives both.
#
# **Next:** 41 · query targeting: the feed and follows on sharded collections.

# %% [markdown] tags=["sources"]
# ## Sources
#
# 1. [MongoDB manual: Choose a Shard Key](https://www.mongodb.com/docs/manual/core/sharding-choose-a-shard-key/)
# 2. [MongoDB manual: Hashed Sharding](https://www.mongodb.com/docs/manual/core/hashed-sharding/)
# 3. [MongoDB manual: shardCollection](https://www.mongodb.com/docs/manual/reference/command/shardCollection/)
# 4. [MongoDB manual: Data Partitioning with Chunks](https://www.mongodb.com/docs/manual/core/sharding-data-partitioning/)
# 5. [MongoDB manual: \$shardedDataDistribution](https://www.mongodb.com/docs/manual/reference/operator/aggregation/shardedDataDistribution/)

# %% [markdown] tags=["navigation"]
# [← 39 · Schema review: run the checklist on a legacy store](39_schema_review.ipynb) · [Contents](../CONTENTS.md) · [41 · Scale out: query targeting →](41_query_targeting.ipynb)
