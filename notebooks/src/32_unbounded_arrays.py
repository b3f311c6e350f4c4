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
#     mistakes: ["Judging array growth from the average instead of the maximum", "Using $slice: 10 (keeps the oldest) instead of $slice: -10", "Keeping the capped subset but forgetting to write the full history to the child collection"]
# ---

# %% [markdown]
# # 32 · Anti-pattern: unbounded arrays
#
# **You will learn**
# - to spot an array with nothing bounding it: compare its **maximum** length and size with the average;
# - what such an array costs on every write and every read, long before 16 MiB;
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
# | operation | type | rate | needs |
# |---|---|---|---|
# | record an event | write | 50/s | append one event to the device |
# | show device page | read | 200/s | device fields and its 10 newest events |
# | event history of a device for a period | read | a few per hour | events in a time range |

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
# `collStats` gives the average document size without a scan:

# %%
before_stats = db.command("collStats", "devices")
print(f"avgObjSize: {before_stats['avgObjSize']:,} bytes, total data: {before_stats['size']:,} bytes")

# %% [markdown]
# The size of every document comes from `$bsonSize` (it scans the collection, so on a real cluster run it on a
# secondary or off peak):

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
# from growing: every event adds one element for as long as the device lives.
#
# ## What the array costs today
#
# The device page needs the 10 newest events but the server reads the whole document to produce them, and
# every recorded event rewrites (and replicates) a bigger document.

# %%
def largest_bytes(collection, match=None):
    """The largest matching document's BSON size, measured on the server with $bsonSize."""
    return next(collection.aggregate([{"$match": match or {}},
                                      {"$group": {"_id": None, "b": {"$max": {"$bsonSize": "$$ROOT"}}}}]))["b"]


def naive_costs(device_id):
    doc_bytes = largest_bytes(db.devices, {"_id": device_id})
    page = db.devices.find({"_id": device_id}, {"site": 1, "events": {"$slice": -10}}).explain()["executionStats"]
    return {"document bytes read per page view": doc_bytes, "docs examined per page view": page["totalDocsExamined"],
            "document bytes touched per recorded event": doc_bytes}


naive_costs("device:007")

# %% [markdown]
# ## The fix: a child collection and a capped subset
#
# Events go to their own collection, one document per event, holding the parent `_id` and indexed by device
# and time. The device keeps only `recentEvents`, its 10 newest, which is all the hot page needs.
#
# ### Migration
#
# Step 1: copy every array element into `events`. An aggregation unwinds the arrays on the server and writes
# the result with `$out` (the ids are built from the device id and the element's position, so re-running it
# gives the same documents).

# %%
db.devices.aggregate([
    {"$unwind": {"path": "$events", "includeArrayIndex": "n"}},
    {"$project": {"_id": {"$concat": ["$_id", ":", {"$toString": "$n"}]}, "deviceId": "$_id",
                  "at": "$events.at", "type": "$events.type", "value": "$events.value"}},
    {"$out": "events"},
])
db.events.create_index([("deviceId", 1), ("at", -1)])
print(f"events copied: {db.events.count_documents({}):,} (array elements: {int(sizes['events'].sum()):,})")

# %% [markdown]
# Step 2: keep the newest 10 in the parent and remove the big array, in one update with a pipeline: `$set`
# computes `recentEvents` from the document's own array, then `$unset` removes `events`. (A `$slice`
# projection on its own keeps every other field, as on a server.)

# %%
db.devices.update_many({}, [{"$set": {"recentEvents": {"$slice": ["$events", -10]}}}, {"$unset": "events"}])
db.devices.find_one({"_id": "device:007"}, {"recentEvents": {"$slice": -2}})

# %% [markdown]
# Step 3: from now on, recording an event is one insert into the child plus one capped `$push` on the
# parent. `$slice: -10` keeps the last 10 elements after the push, so the array can never grow past 10:

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
# many event documents does that query examine?

# %%
predict_history = labkit.exercises.get("32-predict-history-docs")

# %% tags=["solution"]
predict_history.predict(10)

# %% tags=["reveal"]
after_stats = db.command("collStats", "devices")
hist = db.events.find({"deviceId": "device:007"}).sort("at", -1).limit(10).explain()["executionStats"]
after_bytes = largest_bytes(db.devices, {"_id": "device:007"})
compare = pd.DataFrame({
    "events array (before)": {
        "devices avgObjSize (bytes)": before_stats["avgObjSize"],
        "largest device document (bytes)": int(sizes["bytes"].max()),
        "bytes read for device:007's page": int(sizes.loc[sizes["device"] == "device:007", "bytes"].iloc[0]),
        "max array length": array_stats["max events"],
    },
    "child collection + recentEvents (after)": {
        "devices avgObjSize (bytes)": after_stats["avgObjSize"],
        "largest device document (bytes)": largest_bytes(db.devices),
        "bytes read for device:007's page": after_bytes,
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
            "parent size after one year (bytes)": doc_size_with_array(parent, "events", events_per_day * 365,
                                                                      lambda i: one_event)}


walls = explorer(wall, sliders={"events_per_day": (100, 50_000, 2_000, 100)}, title="One device's event rate",
                 draw=lambda ax, v, r: bars_against_limit(ax, ["after one year"], [r["parent size after one year (bytes)"]]))
walls

# %% [markdown]
# A heartbeat every 30 seconds (2,880 events a day) fills the document in a matter of months.
#
# ## Exercise
#
# Write `record_event(db, device_id, event)` for the fixed design: the event goes into `db.events` with its
# `deviceId`, and the device's `recentEvents` keeps only the 10 newest (newest last). `ex.check(record_event)`
# calls your function 25 times on a scratch database (each event it passes carries its own `_id`) and
# inspects both collections.

# %%
ex = labkit.exercises.get("32-capped-subset")
ex

# %% tags=["solution"]
def record_event(db, device_id, event):
    db.events.insert_one({"deviceId": device_id, **event})
    db.devices.update_one({"_id": device_id}, {"$push": {"recentEvents": {"$each": [event], "$slice": -10}}})


ex.check(record_event)

# %% [markdown]
# ## Summary
#
# - Detect: compare the maximum array length and document size with the average (`$size`, `$bsonSize`,
#   `avgObjSize`). Ask what bounds the array; if nothing does, it is unbounded.
# - Fix: a child collection keyed by the parent `_id`, indexed for the hot query, plus a capped subset in the
#   parent maintained with `$push` + `$each` + `$slice`.
# - Migrate on the server: unwind into the child collection, compute the subset, remove the array.
#
# **Next:** 33 · bloated documents.

# %% [markdown] tags=["navigation"]
# [← 31 · The hard limits, live](31_hard_limits.ipynb) · [Contents](../CONTENTS.md) · [33 · Anti-pattern: bloated documents →](33_bloated_documents.ipynb)
