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
#     title: "The hard limits, live"
#     section: Anti-patterns
#     demo: "Push into one document until the server refuses the write, after predicting the exact push."
#     mistakes: ["Treating 16 MiB as a target rather than a wall", "Storing comment threads as nested replies", "Indexing two arrays of the same document together", "Taking a server parameter (transaction lifetime) for a fixed limit"]
#     sources:
#     - title: "MongoDB manual: MongoDB Limits and Thresholds"
#       url: https://www.mongodb.com/docs/manual/reference/limits/
#     - title: "MongoDB manual: MongoDB Server Parameters"
#       url: https://www.mongodb.com/docs/manual/reference/parameters/
#     - title: "MongoDB manual: Time Series Collection Limitations"
#       url: https://www.mongodb.com/docs/manual/core/timeseries/timeseries-limitations/
#     - title: "MongoDB manual: $collStats (aggregation stage)"
#       url: https://www.mongodb.com/docs/manual/reference/operator/aggregation/collStats/
#     - title: "MongoDB manual: collStats (command, deprecated since 6.2)"
#       url: https://www.mongodb.com/docs/manual/reference/command/collStats/
#     - title: "MongoDB manual: $bsonSize (aggregation)"
#       url: https://www.mongodb.com/docs/manual/reference/operator/aggregation/bsonSize/
#     - title: "MongoDB manual: Multikey Indexes"
#       url: https://www.mongodb.com/docs/manual/core/indexes/index-types/index-multikey/
#     - title: "mongodb/mongo src/mongo/bson/bson_depth.h (maxBSONDepth, storage depth)"
#       url: https://github.com/mongodb/mongo/blob/v8.0/src/mongo/bson/bson_depth.h
#     - title: "MongoDB Atlas: Unsupported Commands (Free and Flex clusters)"
#       url: https://www.mongodb.com/docs/atlas/unsupported-commands/
# ---

# %% [markdown]
# # 31 · The hard limits, live
#
# **You will learn**
# - which limits the server enforces, which are settings, and which design choice each one punishes;
# - to predict the write that breaks the 16 MiB document limit, then watch it fail;
# - what happens with deep nesting, too many indexes, too many fields in an index, two indexed arrays, a
#   too-large time-series measurement, and where the transaction lifetime comes from;
# - to check document sizes with `$bsonSize` and `$collStats` long before the wall.
#
# **Time:** about 25 minutes.

# %%
import datetime as dt

import bson
import matplotlib.pyplot as plt
import pandas as pd
from pymongo.errors import OperationFailure, WriteError

import labkit
from labkit.limits import nesting_depth
from labkit.sizes import MAX_BSON_SIZE, doc_size_with_array, max_elements

db = labkit.fresh_db("31_hard_limits")
print("engine:", labkit.describe(db.client))

# %% [markdown]
# ## The limits
#
# The manual's "Limits and Thresholds" page
# ([manual: limits](https://www.mongodb.com/docs/manual/reference/limits/)) lists most of them. They are not all
# of one kind: five are built into the server, one is a documented design limit that the server binary enforces
# more loosely, and the transaction lifetime is a server parameter with a default
# ([manual: server parameters](https://www.mongodb.com/docs/manual/reference/parameters/)). The time-series figure
# comes from the time-series limitations page
# ([manual: time series limitations](https://www.mongodb.com/docs/manual/core/timeseries/timeseries-limitations/)).

# %%
limits = pd.DataFrame(
    [
        ("maximum BSON document size", "16 MiB (16,777,216 bytes)", "fixed",
         "an array that never stops growing will fail writes"),
        ("nesting depth", "100 levels documented", "design limit (8.0 stores up to 180 levels)",
         "recursive shapes (replies inside replies) reach it"),
        ("indexes per collection", "64", "fixed", "needing an index per attribute means the shape is wrong"),
        ("fields in a compound index", "32", "fixed", "rarely a constraint"),
        ("array fields per compound multikey index", "one per document", "fixed",
         "two parallel arrays cannot be indexed together"),
        ("transaction lifetime", "60 s by default", "parameter transactionLifetimeLimitSeconds",
         "transactions are for short multi-document writes"),
        ("time series measurement size", "4 MB", "fixed", "applies to time series collections only"),
    ],
    columns=["limit", "value", "kind", "what it punishes"],
)
limits

# %% [markdown]
# ## 16 MiB: a document that grows until the server says no
#
# An audit trail kept inside one account document: every event appends 512 KiB of payload (large on purpose,
# so the wall arrives in a few dozen writes instead of tens of thousands). (In shared-cluster mode,
# `LABKIT_SHARED=1`, this document grows in the embedded engine on your machine, which enforces the same limit
# with the same error code, so that a room of learners does not store a 16 MiB document each on one cluster.)
#
# **Predict.** How many 512 KiB pushes will the server accept before it refuses one? Record your guess with
# `predict_pushes.predict(...)` before the next two cells run; the check is after the pushes.

# %%
predict_pushes = labkit.exercises.get("31-predict-pushes")
predict_pushes

# %% tags=["solution"]
predict_pushes.predict(31)

# %% [markdown]
# The exact BSON arithmetic first: the size of the document with n events, for the n around the wall.

# %% tags=["reveal"]
CHUNK = "x" * (512 * 1024)
account = {"_id": "account:1", "owner": "Sam", "events": []}
wall_db = labkit.shared.local_db("31_hard_limits_wall", db.client) if labkit.shared_mode() else db
labkit.shared.note("the 16 MiB document grows in the embedded engine on this machine, not on the cluster")
wall_db.accounts.insert_one(account)

fits = max_elements(account, "events", lambda i: CHUNK)
print(f"events that fit in 16 MiB: {fits}")
print(f"size with {fits} events:     {doc_size_with_array(account, 'events', fits, lambda i: CHUNK):,} bytes")
print(f"size with {fits + 1} events:     {doc_size_with_array(account, 'events', fits + 1, lambda i: CHUNK):,} bytes")
print(f"limit:                  {MAX_BSON_SIZE:,} bytes")
print(f"prediction: push number {fits + 1} fails")

# %% [markdown]
# Now push for real until the server refuses:

# %% tags=["reveal"]
pushes = 0
while True:
    try:
        wall_db.accounts.update_one({"_id": "account:1"}, {"$push": {"events": CHUNK}})
    except WriteError as exc:
        print(f"push number {pushes + 1} failed: code {exc.code}")
        print("message:", str(exc).split(", full error")[0])
        break
    pushes += 1
print(f"pushes accepted: {pushes} (predicted {fits})")

# %% tags=["reveal"]
predict_pushes.check(pushes)

# %% [markdown]
# The document is still there, frozen just under the wall: every later `$push` will fail in the same way,
# for this account only. The failure is local and sudden, which is what makes it nasty in production.
#
# ### Checking sizes before the wall
#
# The `$collStats` stage with `storageStats` reports the average document size without scanning the documents
# ([manual: `$collStats`](https://www.mongodb.com/docs/manual/reference/operator/aggregation/collStats/)). (The
# `collStats` command gives the same figures but is deprecated since MongoDB 6.2 in favour of the stage,
# [manual: `collStats` command](https://www.mongodb.com/docs/manual/reference/command/collStats/).)

# %%
stats = next(wall_db.accounts.aggregate([{"$collStats": {"storageStats": {}}}]))["storageStats"]
print(f"count: {stats['count']}, avgObjSize: {stats['avgObjSize']:,} bytes "
      f"({stats['avgObjSize'] / MAX_BSON_SIZE:.1%} of the limit)")

# %% [markdown]
# The largest documents need a scan with `$bsonSize`
# ([manual: `$bsonSize`](https://www.mongodb.com/docs/manual/reference/operator/aggregation/bsonSize/)). It reads
# every document, so on a real cluster run it on a secondary or off peak:

# %%
list(wall_db.accounts.aggregate([
    {"$project": {"bytes": {"$bsonSize": "$$ROOT"}}},
    {"$sort": {"bytes": -1}},
    {"$limit": 5},
]))

# %% [markdown]
# ## Nesting depth: replies inside replies
#
# A comment thread stored as nested replies adds two levels per reply (the `replies` array and the reply
# document in it). `labkit.limits.nesting_depth` counts levels the way the limit does (the top-level document
# is level 1).

# %%
def thread(replies):
    node = {"text": "last reply"}
    for i in range(replies):
        node = {"text": f"reply {replies - i}", "replies": [node]}
    return {"_id": f"thread:{replies}", "post": "post:1", **node}


depths = pd.DataFrame([{"nested replies": n, "depth": nesting_depth(thread(n))} for n in (1, 10, 49, 50, 100)])
depths

# %% [markdown]
# The manual documents 100 levels, so 50 nested replies is already over it. The 8.0 server binary is looser: it
# accepts stored documents up to 180 levels (its `maxBSONDepth` of 200 minus 20 levels kept for the server's own
# wrapping, [bson_depth.h](https://github.com/mongodb/mongo/blob/v8.0/src/mongo/bson/bson_depth.h)) and refuses
# deeper ones with code 15 (Overflow). We try one thread just over the documented 100 (depth 101) and one past
# 180 (depth 301). A MongoDB 8.0 server accepts the first and refuses the second. Design for the manual's
# figure all the same.

# %%
def try_insert(collection, doc):
    try:
        collection.insert_one(doc)
        return "accepted"
    except (WriteError, OperationFailure) as exc:
        return f"refused, code {exc.code}"


deep = pd.DataFrame([{"nested replies": n, "depth": nesting_depth(thread(n)),
                      "insert": try_insert(db.threads, thread(n))} for n in (50, 150)])
deep

# %% [markdown]
# The fix is the same as for any unbounded structure: one document per reply, with `parentId` (and, to read a
# whole thread in one query, the root `threadId` and a path or depth field).

# %% [markdown]
# ## 64 indexes per collection
#
# The `_id` index counts. Create one per attribute until there are 64, then try one more:

# %%
for i in range(63):
    labkit.shared.create_index(db.catalog, [(f"attr{i:02d}", 1)])  # pauses between builds in shared mode
labkit.shared.note("the 63 index builds pause between builds, so the room does not queue them all at once")
print("indexes now:", len(db.catalog.index_information()))
try:
    db.catalog.create_index([("attr63", 1)])
    index65 = f"accepted; indexes now: {len(db.catalog.index_information())}"
except OperationFailure as exc:
    index65 = f"refused, code {exc.code}"
print("the 65th index:", index65)

# %% [markdown]
# A real server refuses the 65th index (code 67, CannotCreateIndex). A collection that wants an index per
# attribute wants a different shape: the attribute pattern, `attrs: [{k, v}]` with one index on
# `{"attrs.k": 1, "attrs.v": 1}`.
#
# ## 32 fields in a compound index

# %%
def try_index(collection, keys):
    try:
        return f"accepted as {collection.create_index(keys)[:30]}..."
    except OperationFailure as exc:
        return f"refused, code {exc.code}"


wide = pd.DataFrame([{"fields": n, "create_index": try_index(db[f"wide{n}"], [(f"f{i:02d}", 1) for i in range(n)])}
                     for n in (32, 33)])
wide

# %% [markdown]
# ## One array per compound multikey index
#
# A product with a `colors` array and a `sizes` array cannot have both in one index: the server would have to
# store every color × size pair
# ([manual: multikey indexes](https://www.mongodb.com/docs/manual/core/indexes/index-types/index-multikey/)).
# The error code is 171 (CannotIndexParallelArrays), both when building the index over existing documents and
# when inserting such a document under an existing index.

# %%
db.shirts.insert_one({"_id": "shirt:1", "colors": ["red", "blue"], "sizes": ["S", "M", "L"]})
print("index build over two arrays:", try_index(db.shirts, [("colors", 1), ("sizes", 1)]))
db.shirts2.create_index([("colors", 1), ("sizes", 1)])
parallel = try_insert(db.shirts2, {"_id": "shirt:1", "colors": ["red", "blue"], "sizes": ["S", "M", "L"]})
print("insert under an existing index:", parallel)

# %% [markdown]
# One array of objects holds both facts and indexes fine: `variants: [{color, size}]`. The exercise does this.
#
# ## Time series: 4 MB per measurement
#
# A time-series collection stores measurements in buckets, and a bucket keeps each value twice more, in its
# `control.min` and `control.max` summaries. The manual gives 4 MB as the largest measurement. A 3 MB reading
# is accepted; a 6 MB one is refused with code 10334 (BSONObjectTooLarge). (In shared-cluster mode this runs in
# the embedded engine on your machine too.)

# %%
readings = wall_db.create_collection("readings", timeseries={"timeField": "at", "metaField": "sensor"})


def try_reading(megabytes):
    doc = {"at": dt.datetime(2026, 1, 1), "sensor": "s1", "trace": "x" * (megabytes * 1000 * 1000)}
    return try_insert(readings, doc)


timeseries_sizes = pd.DataFrame([{"measurement": f"{mb} MB", "insert": try_reading(mb)} for mb in (3, 6)])
timeseries_sizes

# %% [markdown]
# ## Transaction lifetime: a parameter, not a wall
#
# A multi-document transaction that stays open longer than `transactionLifetimeLimitSeconds` (60 by default) is
# aborted by the server. It is a server parameter: `getParameter` reads it and, on a self-managed deployment,
# `setParameter` changes it. Atlas Free and Flex clusters allow `getParameter` only for `authSchemaVersion` and
# `authenticationMechanisms`, so they refuse it for this parameter
# ([Atlas: unsupported commands](https://www.mongodb.com/docs/atlas/unsupported-commands/)); the cell then says
# so. Waiting 60 seconds to watch a transaction die would teach nothing more: keep transactions short.

# %%
try:
    lifetime = db.client.admin.command("getParameter", 1, transactionLifetimeLimitSeconds=1)
    lifetime = f"{lifetime['transactionLifetimeLimitSeconds']} s (getParameter)"
except OperationFailure as exc:
    lifetime = f"not readable here (code {exc.code}); the documented default is 60 s"
print("transactionLifetimeLimitSeconds:", lifetime)

# %% [markdown]
# ## Measured: what each limit did on this engine

# %% tags=["reveal"]
measured = pd.DataFrame([
    {"limit": "16 MiB document", "what we tried": f"{fits + 1} pushes of 512 KiB (predicted to fail at {fits + 1})",
     "result": f"push {pushes + 1} refused"},
    {"limit": "nesting depth 100", "what we tried": f"depth {deep.loc[1, 'depth']}", "result": deep.loc[1, "insert"]},
    {"limit": "64 indexes", "what we tried": "65th index", "result": index65},
    {"limit": "32 index fields", "what we tried": "33 fields", "result": wide.loc[1, "create_index"]},
    {"limit": "one array per multikey index", "what we tried": "insert with two indexed arrays", "result": parallel},
    {"limit": "time series 4 MB", "what we tried": "6 MB measurement", "result": timeseries_sizes.loc[1, "insert"]},
    {"limit": "transaction lifetime", "what we tried": "getParameter", "result": lifetime},
]).set_index("limit")
measured

# %% [markdown]
# A real MongoDB 8.0 server refuses the first six with these error codes, and reports the lifetime as a
# setting. Should one of the first six rows ever read *accepted*, the engine running the notebook does not
# enforce that limit: set `MONGODB_URI` and re-run against a real server.

# %% tags=["reveal"]
sizes_mib = [doc_size_with_array(account, "events", n, lambda i: CHUNK) / 2**20 for n in range(0, fits + 2)]
fig, ax = plt.subplots(figsize=(6, 2.6))
ax.plot(range(0, fits + 2), sizes_mib, marker=".", label="document size")
ax.axhline(16, color="#d62728", linestyle="--", label="16 MiB")
ax.axvline(pushes + 1, color="grey", linestyle=":", label=f"push {pushes + 1} refused")
ax.set_xlabel("pushes")
ax.set_ylabel("MiB")
ax.legend(fontsize=8)
plt.tight_layout()
plt.show()

# %% [markdown]
# ## Explore: how many pushes until the wall?
#
# Event payloads are rarely 512 KiB. Pick a payload size: the readout gives the exact number of events one
# document can hold, from the same arithmetic that predicted the failing push above.

# %%
from labkit.plots import bars_against_limit
from labkit.widgets import explorer


def wall(payload_bytes):
    event = {"at": "2026-11-01T00:00:00Z", "type": "login", "payload": "x" * payload_bytes}
    n = max_elements(account, "events", lambda i: event)
    return {"bytes per event (BSON)": len(bson.encode({"e": event})) - 5, "events that fit": n,
            "document at 10,000 events (bytes)": doc_size_with_array(account, "events", 10_000, lambda i: event)}


walls = explorer(wall, sliders={"payload_bytes": (0, 4000, 200, 50)}, title="Events in one document",
                 draw=lambda ax, v, r: bars_against_limit(ax, ["10,000 events"], [r["document at 10,000 events (bytes)"]]))
walls

# %% [markdown]
# ## Exercise
#
# `practice.products` stores `colors` and `sizes` as two arrays, so no index can serve "red in size M".
# Reshape every product to hold `variants: [{"color": ..., "size": ...}]` (one per color × size) and remove
# the two arrays, then create one compound index on `variants.color` and `variants.size`.
# `ex.check(practice.products)` checks the shapes, the index, and the plan of a color + size query.

# %%
practice = labkit.fresh_db("31_practice")
practice.products.insert_many([
    {"_id": f"shirt:{i:03d}", "name": f"Shirt {i}", "colors": ["red", "blue", "green", "black"][: 1 + i % 4],
     "sizes": ["S", "M", "L", "XL"][: 1 + (i // 4) % 4]} for i in range(200)])
ex = labkit.exercises.get("31-no-parallel-arrays").remember(practice, "products")  # the setup, as it is now
ex

# %% tags=["solution"]
for p in practice.products.find():
    variants = [{"color": c, "size": s} for c in p["colors"] for s in p["sizes"]]
    practice.products.update_one({"_id": p["_id"]}, {"$set": {"variants": variants},
                                                       "$unset": {"colors": "", "sizes": ""}})
practice.products.create_index([("variants.color", 1), ("variants.size", 1)])
ex.check(practice.products)

# %% [markdown]
# ## Exercise: the same idea on other data
#
# The nested comment thread of this lesson's nesting section, the other way round: write `flatten(thread)`
# that turns one nested thread document (`{_id, post, text, by, replies: [{text, by, replies: [...]}, ...]}`,
# any number of replies at any depth) into a list of flat documents, one per message (the first one included):
# `{_id, threadId, parentId, text, by}`, where `parentId` is the `_id` of the message it answers (`None` for the
# first one). `ex_flat.check(flatten)` flattens a chain of nested replies far deeper than the limit allows in
# one document and a branching thread, stores the result, and reads each thread back with one query by
# `threadId`.

# %%
ex_flat = labkit.exercises.get("31-flatten-thread")
ex_flat


# %% tags=["solution"]
def flatten(thread):
    out, todo = [], [(thread, None)]
    while todo:
        node, parent = todo.pop()
        my_id = f"{thread['_id']}:{len(out)}"
        out.append({"_id": my_id, "threadId": thread["_id"], "parentId": parent,
                    "text": node["text"], "by": node.get("by")})
        todo += [(reply, my_id) for reply in node.get("replies", [])]
    return out


ex_flat.check(flatten)

# %% [markdown]
# ## Summary
#
# - 16 MiB is a wall: the write that crosses it fails (code 17419 for an update) and so does every later one.
#   Predict it with size arithmetic; watch `avgObjSize` (`$collStats`) and `$bsonSize` long before.
# - Recursive nesting and per-attribute indexes run into limits; both signal a shape problem. Design for the
#   documented 100 levels even though an 8.0 server stores up to 180.
# - A compound index may span at most one array per document (code 171); use one array of objects instead.
# - A time-series measurement may be at most 4 MB; a transaction lives 60 s by default, a parameter you can read
#   (and on a self-managed server change), not a reason to run long transactions.
#
# **Next:** 32 · unbounded arrays, detected and fixed.

# %% [markdown] tags=["sources"]
# ## Sources
#
# 1. [MongoDB manual: MongoDB Limits and Thresholds](https://www.mongodb.com/docs/manual/reference/limits/)
# 2. [MongoDB manual: MongoDB Server Parameters](https://www.mongodb.com/docs/manual/reference/parameters/)
# 3. [MongoDB manual: Time Series Collection Limitations](https://www.mongodb.com/docs/manual/core/timeseries/timeseries-limitations/)
# 4. [MongoDB manual: \$collStats (aggregation stage)](https://www.mongodb.com/docs/manual/reference/operator/aggregation/collStats/)
# 5. [MongoDB manual: collStats (command, deprecated since 6.2)](https://www.mongodb.com/docs/manual/reference/command/collStats/)
# 6. [MongoDB manual: \$bsonSize (aggregation)](https://www.mongodb.com/docs/manual/reference/operator/aggregation/bsonSize/)
# 7. [MongoDB manual: Multikey Indexes](https://www.mongodb.com/docs/manual/core/indexes/index-types/index-multikey/)
# 8. [mongodb/mongo src/mongo/bson/bson_depth.h (maxBSONDepth, storage depth)](https://github.com/mongodb/mongo/blob/v8.0/src/mongo/bson/bson_depth.h)
# 9. [MongoDB Atlas: Unsupported Commands (Free and Flex clusters)](https://www.mongodb.com/docs/atlas/unsupported-commands/)

# %% [markdown] tags=["navigation"]
# [← 30 · Start from the workload](30_workload.ipynb) · [Contents](../CONTENTS.md) · [32 · Anti-pattern: unbounded arrays →](32_unbounded_arrays.ipynb)
