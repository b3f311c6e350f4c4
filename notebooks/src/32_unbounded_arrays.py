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
#     title: "Anti-pattern: unbounded arrays"
#     section: Anti-patterns
#     demo: "Compare the max and average array size, then migrate the events to a child collection and show the device page cost drop."
#     mistakes: ["Judging array growth from the average instead of the maximum", "Keeping the oldest elements: a $slice whose sign does not match where the new element goes", "Keeping the capped subset but forgetting to write the full history to the child collection", "Trimming in a second write, or rebuilding the array in the application (a concurrent write is lost)", "Migrating with $out into a collection that already receives new writes"]
#     sources:
#     - title: "MongoDB manual: Avoid Unbounded Arrays"
#       url: https://www.mongodb.com/docs/manual/data-modeling/design-antipatterns/unbounded-arrays/
#     - title: "MongoDB manual: Multikey Indexes"
#       url: https://www.mongodb.com/docs/manual/core/indexes/index-types/index-multikey/
#     - title: "MongoDB manual: $collStats (aggregation stage)"
#       url: https://www.mongodb.com/docs/manual/reference/operator/aggregation/collStats/
#     - title: "MongoDB manual: $bsonSize (aggregation)"
#       url: https://www.mongodb.com/docs/manual/reference/operator/aggregation/bsonSize/
#     - title: "MongoDB manual: $out (aggregation stage)"
#       url: https://www.mongodb.com/docs/manual/reference/operator/aggregation/out/
#     - title: "MongoDB manual: $merge (aggregation stage)"
#       url: https://www.mongodb.com/docs/manual/reference/operator/aggregation/merge/
#     - title: "MongoDB manual: Updates with Aggregation Pipeline"
#       url: https://www.mongodb.com/docs/manual/tutorial/update-documents-with-aggregation-pipeline/
#     - title: "MongoDB manual: $slice (update modifier)"
#       url: https://www.mongodb.com/docs/manual/reference/operator/update/slice/
#     - title: "MongoDB manual: Replica Set Oplog"
#       url: https://www.mongodb.com/docs/manual/core/replica-set-oplog/
#     - title: "mongodb/mongo jstests/replsets/v2_delta_oplog_entries.js ($v: 2 delta update entries)"
#       url: https://github.com/mongodb/mongo/blob/v8.0/jstests/replsets/v2_delta_oplog_entries.js
# ---

# %% [markdown]
# # 32 · Anti-pattern: unbounded arrays
#
# **You will learn**
# - to spot an array with nothing bounding it: compare its **maximum** length and size with the average;
# - what such an array costs on every read, and in an index on it, long before 16 MiB;
# - to move the elements to a child collection keyed by the parent `_id` and keep a capped subset with
#   `$push` + `$each` + `$slice`;
# - to migrate existing documents in place.
#
# **Time:** about 30 minutes.

# %%
import datetime as dt
import random

import bson
import matplotlib.pyplot as plt
import pandas as pd

import labkit
from labkit.sizes import doc_size_with_array, max_elements

db = labkit.fresh_db("32_unbounded_arrays")
print("engine:", labkit.describe(db.client))

# %% [markdown]
# Generated data, fixed seed: 400 devices, each document collecting **every** event the device ever reported
# in an `events` array. Most devices are quiet; a few are chatty, and `device:007` is the chattiest.

# %%
rng = random.Random(32)
START = dt.datetime(2026, 6, 1)
TYPES = ["boot", "heartbeat", "temperature", "door", "battery"]


def event(device, i):
    return {"at": START + dt.timedelta(seconds=97 * i), "type": TYPES[(i + device) % 5], "value": (i * 37 + device) % 1000}


devices = []
for d in range(400):
    n = 12_000 if d == 7 else min(int(rng.paretovariate(1.2) * 15), 3000)
    devices.append({"_id": f"device:{d:03d}", "site": f"site:{d % 20:02d}", "model": "TH-2",
                    "events": [event(d, i) for i in range(n)]})
db.devices.insert_many(devices)
print(f"{db.devices.count_documents({})} devices")

# %% [markdown]
# ## The workload
#
# What the application does, how often, and what each operation needs:

# %%
labkit.workload_table([
    ('record an event', 'write', '50/s', 'append one event to the device'),
    ('show device page', 'read', '200/s', 'device fields and its 10 newest events'),
    ('event history of a device for a period', 'read', 'a few per hour', 'events in a time range'),
])
# %% [markdown]
# ## Detect: maximum vs average
#
# The average document looks harmless; the maximum tells the truth. `$size` counts elements on the server.

# %%
array_stats = next(db.devices.aggregate([
    {"$project": {"n": {"$size": "$events"}}},
    {"$group": {"_id": None, "devices": {"$sum": 1}, "avg events": {"$avg": "$n"}, "max events": {"$max": "$n"}}},
]))
array_stats.pop("_id")
array_stats["avg events"] = round(array_stats["avg events"], 1)
array_stats

# %% [markdown]
# `$collStats` gives the average document size without a scan
# ([manual: `$collStats`](https://www.mongodb.com/docs/manual/reference/operator/aggregation/collStats/)):

# %%
def storage(collection):
    return next(collection.aggregate([{"$collStats": {"storageStats": {}}}]))["storageStats"]


before_stats = storage(db.devices)
print(f"avgObjSize: {before_stats['avgObjSize']:,} bytes, total data: {before_stats['size']:,} bytes")

# %% [markdown]
# The size of every document comes from `$bsonSize`
# ([manual: `$bsonSize`](https://www.mongodb.com/docs/manual/reference/operator/aggregation/bsonSize/)); it scans
# the collection, so on a real cluster run it on a secondary or off peak:

# %%
sizes = pd.DataFrame(db.devices.aggregate([
    {"$project": {"_id": 0, "device": "$_id", "events": {"$size": "$events"}, "bytes": {"$bsonSize": "$$ROOT"}}},
    {"$sort": {"bytes": -1, "device": 1}},
]))
print(f"max {sizes['bytes'].max():,} bytes vs average {sizes['bytes'].mean():,.0f} bytes "
      f"({sizes['bytes'].max() / sizes['bytes'].mean():.0f}x)")
sizes.head(5)

# %% [markdown]
# A maximum this far above the average means some documents are already in trouble, and nothing stops them
# from growing: every event adds one element for as long as the device lives
# ([manual: avoid unbounded arrays](https://www.mongodb.com/docs/manual/data-modeling/design-antipatterns/unbounded-arrays/)).
#
# ## What the array costs today
#
# The device page needs the 10 newest events, but the server loads the whole document to cut them out with a
# `$slice` projection: one document examined, and that document is device:007's full size.

# %%
def largest_bytes(collection, match=None):
    """The largest matching document's BSON size, measured on the server with $bsonSize."""
    return next(collection.aggregate([{"$match": match or {}},
                                      {"$group": {"_id": None, "b": {"$max": {"$bsonSize": "$$ROOT"}}}}]))["b"]


page = db.devices.find({"_id": "device:007"}, {"site": 1, "events": {"$slice": -10}}).explain()["executionStats"]
{"docs examined per page view": page["totalDocsExamined"],
 "size of that document ($bsonSize, bytes)": largest_bytes(db.devices, {"_id": "device:007"})}

# %% [markdown]
# Each recorded event is a `$push` on that document: the server loads it to apply the update, and the stored
# document grows. What a `$push` does **not** do since MongoDB 5.0 is replicate the whole document: the oplog
# entry of an update is a delta (`$v: 2` with a `diff` of the changed fields,
# [v2_delta_oplog_entries.js](https://github.com/mongodb/mongo/blob/v8.0/jstests/replsets/v2_delta_oplog_entries.js),
# [manual: oplog](https://www.mongodb.com/docs/manual/core/replica-set-oplog/)). The source material says a growing
# array makes every push more expensive to *replicate*; for the oplog entry that is no longer so, for reads,
# cache and the index below it still is.
#
# ### An index on the array: one entry per element
#
# If the array is indexed, the index is **multikey**: it holds one key per distinct element of every document's
# array ([manual: multikey indexes](https://www.mongodb.com/docs/manual/core/indexes/index-types/index-multikey/)).
# An index on `events.at` (every event time is different), scanned whole with `hint` to count its keys:

# %%
db.devices.create_index([("events.at", 1)])
scan = db.devices.find({"events.at": {"$gte": START}}, {"_id": 1}).hint("events.at_1").explain()["executionStats"]
print(f"index keys: {scan['totalKeysExamined']:,} for {scan['nReturned']} devices "
      f"(array elements in the collection: {int(sizes['events'].sum()):,})")
db.devices.drop_index("events.at_1")

# %% [markdown]
# Every recorded event adds one more key to such an index, and device:007 alone holds 12,000 of them. The
# index is dropped again: the fix below makes it unnecessary.

# %% [markdown]
# ## The fix: a child collection and a capped subset
#
# Events go to their own collection, one document per event, holding the parent `_id` and indexed by device
# and time. The device keeps only `recentEvents`, its 10 newest, which is all the hot page needs.
#
# ### Migration
#
# Step 1: copy every array element into `events`. An aggregation unwinds the arrays on the server and writes
# the result with `$merge`, inserting only the ids `events` does not hold yet
# ([manual: `$merge`](https://www.mongodb.com/docs/manual/reference/operator/aggregation/merge/)). The ids are
# built from the device id and the element's position, so re-running the step inserts nothing twice and keeps
# what step 3 records. `$out` would be the wrong stage here: it *replaces* the whole target collection
# ([manual: `$out`](https://www.mongodb.com/docs/manual/reference/operator/aggregation/out/)), so re-running it
# after step 3 would drop the newly recorded events (and after step 2, which removes the arrays, it would leave
# `events` empty).

# %%
db.devices.aggregate([
    {"$unwind": {"path": "$events", "includeArrayIndex": "n"}},
    {"$project": {"_id": {"$concat": ["$_id", ":", {"$toString": "$n"}]}, "deviceId": "$_id",
                  "at": "$events.at", "type": "$events.type", "value": "$events.value"}},
    {"$merge": {"into": "events", "on": "_id", "whenMatched": "keepExisting", "whenNotMatched": "insert"}},
])
db.events.create_index([("deviceId", 1), ("at", -1)])
print(f"events copied: {db.events.count_documents({}):,} (array elements: {int(sizes['events'].sum()):,})")

# %% [markdown]
# Step 2: keep the newest 10 in the parent and remove the big array, in one update with a pipeline: `$set`
# computes `recentEvents` from the document's own array, then `$unset` removes `events`
# ([manual: updates with a pipeline](https://www.mongodb.com/docs/manual/tutorial/update-documents-with-aggregation-pipeline/)).
# (The `$slice` projection below keeps every other field, as on a server.)

# %%
db.devices.update_many({}, [{"$set": {"recentEvents": {"$slice": ["$events", -10]}}}, {"$unset": "events"}])
db.devices.find_one({"_id": "device:007"}, {"recentEvents": {"$slice": -2}})

# %% [markdown]
# Step 3: from now on, recording an event is one insert into the child plus one capped `$push` on the
# parent. `$slice: -10` keeps the last 10 elements after the push, so the array can never grow past 10
# ([manual: `$slice` modifier](https://www.mongodb.com/docs/manual/reference/operator/update/slice/)):

# %%
def record(device_id, ev, n):
    db.events.insert_one({"_id": f"{device_id}:{n}", "deviceId": device_id, **ev})
    db.devices.update_one({"_id": device_id}, {"$push": {"recentEvents": {"$each": [ev], "$slice": -10}}})


for i in range(12_000, 12_025):
    record("device:007", event(7, i), i)
doc = db.devices.find_one({"_id": "device:007"})
print("recentEvents kept:", len(doc["recentEvents"]), "| newest:", doc["recentEvents"][-1]["at"])
print("events for device:007 in the child collection:", db.events.count_documents({"deviceId": "device:007"}))

# %% [markdown]
# ## Measured: before and after
#
# **Predict first.** After the fix, the 10 newest events of device:007 come from the `events` collection. How
# many event documents does that query examine? Record a number with `predict_history.predict(...)`.

# %%
predict_history = labkit.exercises.get("32-predict-history-docs")

# %% tags=["solution"]
predict_history.predict(10)

# %% tags=["reveal"]
after_stats = storage(db.devices)
hist = db.events.find({"deviceId": "device:007"}).sort("at", -1).limit(10).explain()["executionStats"]
after_bytes = largest_bytes(db.devices, {"_id": "device:007"})
compare = pd.DataFrame({
    "events array (before)": {
        "devices avgObjSize (bytes)": before_stats["avgObjSize"],
        "largest device document (bytes)": int(sizes["bytes"].max()),
        "device:007 document, loaded by its page (bytes)": int(sizes.loc[sizes["device"] == "device:007", "bytes"].iloc[0]),
        "max array length": array_stats["max events"],
    },
    "child collection + recentEvents (after)": {
        "devices avgObjSize (bytes)": after_stats["avgObjSize"],
        "largest device document (bytes)": largest_bytes(db.devices),
        "device:007 document, loaded by its page (bytes)": after_bytes,
        "max array length": next(db.devices.aggregate([{"$group": {"_id": None, "m": {"$max": {"$size": "$recentEvents"}}}}]))["m"],
    },
})
compare

# %% [markdown]
# The newest-10 query on the child collection, for the rarer screens that want more than the parent keeps,
# reads exactly what it returns:

# %% tags=["reveal"]
{"keys examined": hist["totalKeysExamined"], "docs examined": hist["totalDocsExamined"], "returned": hist["nReturned"]}

# %% tags=["reveal"]
predict_history.check(hist["totalDocsExamined"])

# %%
fig, ax = plt.subplots(figsize=(6, 2.4))
labels = ["avgObjSize", "largest document"]
before_vals = [compare.iloc[0, 0], compare.iloc[1, 0]]
after_vals = [compare.iloc[0, 1], compare.iloc[1, 1]]
y = range(len(labels))
ax.barh([i + 0.2 for i in y], before_vals, height=0.4, label="events array", color="#d62728")
ax.barh([i - 0.2 for i in y], after_vals, height=0.4, label="child + recentEvents", color="#1f77b4")
ax.set_yticks(list(y), labels)
ax.set_xscale("log")
ax.set_xlabel("bytes (log scale)")
ax.legend(fontsize=8)
plt.tight_layout()
plt.show()

# %% [markdown]
# ## Explore: how long until the wall?
#
# With the array on the parent, the question is not *whether* a device reaches 16 MiB but *when*. The event
# size comes from the BSON encoding of a real event; the number of events that fit is exact.

# %%
from labkit.plots import bars_against_limit
from labkit.widgets import explorer

parent = {"_id": "device:007", "site": "site:07", "model": "TH-2"}
one_event = event(7, 0)
capacity = max_elements(parent, "events", lambda i: one_event)


def wall(events_per_day):
    days = capacity / events_per_day
    return {"bytes per event in the array": len(bson.encode({"0": one_event})) - 5,
            "events that fit in 16 MiB": capacity,
            "days until writes fail": int(days), "years until writes fail": round(days / 365, 1),
            "parent size after one year if nothing stopped it (bytes, computed)": doc_size_with_array(parent, "events", events_per_day * 365,
                                                                      lambda i: one_event)}


walls = explorer(wall, sliders={"events_per_day": (100, 50_000, 2_880, 20)},
                 title="One device's event rate, estimated (BSON sizes x events per day)",
                 draw=lambda ax, v, r: bars_against_limit(ax, ["after one year"], [r["parent size after one year if nothing stopped it (bytes, computed)"]]))
walls

# %% [markdown]
# The slider starts at a heartbeat twice a minute (2,880 events a day): by this arithmetic (no server ran it)
# the document fills in about 101 days.

# %% [markdown]
# ## Exercise · The same idea in a chat app
#
# A chat app shows, for each room, its 5 newest messages, **newest first**, and keeps every message for the
# history page. Write `post_message(db, room_id, message)`: the message goes into `db.messages` with its
# `roomId`, and the room's `latest` array keeps only the 5 newest, newest first. (`$position: 0` in a `$push`
# puts the new element at the front of the array; think about what `$slice` must keep then.)
# `ex.check(post_message)` calls your function for a stream of messages on a scratch database (each message
# carries its own `_id`), then twice at once on another room, and inspects both collections.

# %%
ex = labkit.exercises.get("32-capped-subset")
ex


# %% tags=["solution"]
def post_message(db, room_id, message):
    db.messages.insert_one({"roomId": room_id, **message})
    db.rooms.update_one({"_id": room_id}, {"$push": {"latest": {"$each": [message], "$position": 0, "$slice": 5}}})


ex.check(post_message)

# %% [markdown]
# ## Summary
#
# - Detect: compare the maximum array length and document size with the average (`$size`, `$bsonSize`,
#   `avgObjSize` from `$collStats`). Ask what bounds the array; if nothing does, it is unbounded.
# - The cost grows with the array: the whole document is loaded for 10 elements, and an index on the array
#   holds one key per element. (The oplog entry of a `$push` is a delta since 5.0, not the whole document.)
# - Fix: a child collection keyed by the parent `_id`, indexed for the hot query, plus a capped subset in the
#   parent maintained with `$push` + `$each` + `$slice`.
# - Migrate on the server: unwind into the child collection with `$merge` (not `$out`, which replaces it),
#   compute the subset, remove the array.
#
# **Next:** 33 · bloated documents.

# %% [markdown] tags=["sources"]
# ## Sources
#
# 1. [MongoDB manual: Avoid Unbounded Arrays](https://www.mongodb.com/docs/manual/data-modeling/design-antipatterns/unbounded-arrays/)
# 2. [MongoDB manual: Multikey Indexes](https://www.mongodb.com/docs/manual/core/indexes/index-types/index-multikey/)
# 3. [MongoDB manual: \$collStats (aggregation stage)](https://www.mongodb.com/docs/manual/reference/operator/aggregation/collStats/)
# 4. [MongoDB manual: \$bsonSize (aggregation)](https://www.mongodb.com/docs/manual/reference/operator/aggregation/bsonSize/)
# 5. [MongoDB manual: \$out (aggregation stage)](https://www.mongodb.com/docs/manual/reference/operator/aggregation/out/)
# 6. [MongoDB manual: \$merge (aggregation stage)](https://www.mongodb.com/docs/manual/reference/operator/aggregation/merge/)
# 7. [MongoDB manual: Updates with Aggregation Pipeline](https://www.mongodb.com/docs/manual/tutorial/update-documents-with-aggregation-pipeline/)
# 8. [MongoDB manual: \$slice (update modifier)](https://www.mongodb.com/docs/manual/reference/operator/update/slice/)
# 9. [MongoDB manual: Replica Set Oplog](https://www.mongodb.com/docs/manual/core/replica-set-oplog/)
# 10. [mongodb/mongo jstests/replsets/v2_delta_oplog_entries.js (\$v: 2 delta update entries)](https://github.com/mongodb/mongo/blob/v8.0/jstests/replsets/v2_delta_oplog_entries.js)

# %% [markdown] tags=["navigation"]
# [← 31 · The hard limits, live](31_hard_limits.ipynb) · [Contents](../CONTENTS.md) · [33 · Anti-pattern: bloated documents →](33_bloated_documents.ipynb)
