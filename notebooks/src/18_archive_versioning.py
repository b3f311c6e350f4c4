# ---
# jupyter:
#   jupytext:
#     formats: ipynb,src//py:percent
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
#   labkit:
#     minutes: 40
#     exercise_minutes: 20
#     title: "Archive and document versioning: keep the hot collection small"
#     section: Patterns
#     demo: "Archive orders older than a year with $match + $merge, then show the support search reading a third of the documents it read before; then save two revisions of a document and read revision 1 back through the unique {docId, rev} index."
#     sources:
#     - title: "MongoDB manual: Archive Pattern"
#       url: https://www.mongodb.com/docs/manual/data-modeling/design-patterns/archive/
#     - title: "MongoDB manual: $merge (aggregation stage)"
#       url: https://www.mongodb.com/docs/manual/reference/operator/aggregation/merge/
#     - title: "MongoDB manual: $unionWith (aggregation stage)"
#       url: https://www.mongodb.com/docs/manual/reference/operator/aggregation/unionWith/
#     - title: "MongoDB manual: TTL Indexes"
#       url: https://www.mongodb.com/docs/manual/core/index-ttl/
#     - title: "MongoDB Atlas: Online Archive Overview"
#       url: https://www.mongodb.com/docs/atlas/online-archive/overview/
#     - title: "MongoDB manual: Keep a History of Document Versions (document versioning pattern)"
#       url: https://www.mongodb.com/docs/manual/data-modeling/design-patterns/data-versioning/document-versioning/
#     - title: "MongoDB manual: Unique Indexes"
#       url: https://www.mongodb.com/docs/manual/core/index-unique/
#     - title: "MongoDB manual: $setOnInsert"
#       url: https://www.mongodb.com/docs/manual/reference/operator/update/setOnInsert/
#     - title: "MongoDB manual: $collStats (aggregation stage)"
#       url: https://www.mongodb.com/docs/manual/reference/operator/aggregation/collStats/
#     mistakes: ["deleting from the hot collection before the copy to the archive is confirmed", "expecting archiving to speed up a query that an index already narrows to a few documents", "copying the new revision into the history instead of the one being replaced", "keeping the current document's _id in the history copy, so the second revision collides", "a history _id made of the edit time, so two edits in one minute collide", "a plain insert of the history copy, so a crash between the two writes locks the document for ever"]
# ---

# %% [markdown]
# # 18 · Archive and document versioning: keep the hot collection small
#
# **You will learn**
# - the **archive** pattern: move documents nobody reads any more (orders older than a cutoff) to an archive
#   collection with an aggregation ending in `$merge`, then delete them from the hot one;
# - which queries get faster after archiving (scans and loose filters) and which do not (a tight index lookup);
# - when a TTL index, which simply deletes old documents, is the simpler choice, and what Atlas Online Archive does;
# - the **document versioning** pattern: the current revision in `documents`, every earlier one in
#   `documents_history`, with a unique index on `{docId, rev}`;
# - to read a past revision with one index lookup.
#
# **Time:** about 40 minutes.

# %%
import datetime as dt
import random
from bisect import bisect_left

import bson
import pandas as pd
from pymongo.errors import DuplicateKeyError

import labkit

db = labkit.fresh_db("18_archive_versioning")
print("engine:", labkit.describe(db.client))

# %% [markdown]
# Three years of orders for a shop, four or five a day, seeded so every run builds the same ones. "Today" is fixed at
# 2026-10-01 so the lesson's numbers never drift.

# %%
TODAY = dt.datetime(2026, 10, 1)
FIRST_DAY = dt.datetime(2023, 10, 1)
rng = random.Random(18)
span_minutes = int((TODAY - FIRST_DAY).total_seconds() // 60)
orders = []
for n in range(1, 5_001):
    created = FIRST_DAY + dt.timedelta(minutes=(n * span_minutes) // 5_000 - rng.randint(1, 60))
    items = [{"sku": f"sku:{rng.randint(1, 400):03d}", "qty": rng.randint(1, 3)} for _ in range(rng.randint(1, 3))]
    orders.append({"_id": f"order:{n:05d}", "customerId": f"cust:{rng.randint(1, 800):04d}", "items": items,
                   "status": "delivered" if created < TODAY - dt.timedelta(days=14) else "shipped",
                   "createdAt": created})
db.orders.insert_many(orders)
db.orders.create_index([("customerId", 1), ("createdAt", -1)])
print("orders:", db.orders.count_documents({}), "| first:", orders[0]["createdAt"].date(),
      "| last:", orders[-1]["createdAt"].date())

# %% [markdown]
# ## Part 1 · Archive

# %%
labkit.workload_table([
    ("a customer's orders of the last 90 days", "read", "500/s", "indexed on {customerId, createdAt}"),
    ("support search: last year's orders with a SKU", "read", "2/s", "ad hoc, no index on items.sku"),
    ("full history of a customer (tax, disputes)", "read", "10 a day", "may be slower"),
])

# %% [markdown]
# Orders older than a year are almost never read, yet they fill the collection, its indexes and the server's cache.
# The manual's [archive pattern](https://www.mongodb.com/docs/manual/data-modeling/design-patterns/archive/) moves
# them elsewhere: to external file storage (its first choice for cost), to another cluster, or, as here, to another
# collection. Its tips: keep each archived document self-contained (embedded, not referencing documents that may
# change) and keep the document's age in one field (`createdAt` here). Sizes come from the
# [`$collStats`](https://www.mongodb.com/docs/manual/reference/operator/aggregation/collStats/) stage.

# %%
def cost(cursor):
    explain = cursor.explain()
    stats, plan = explain["executionStats"], explain["queryPlanner"]["winningPlan"]
    while "inputStage" in plan:
        plan = plan["inputStage"]
    return {"scan": plan["stage"], "keys examined": stats["totalKeysExamined"],
            "docs examined": stats["totalDocsExamined"], "returned": stats["nReturned"]}


def collection_figures(name):
    """Documents, data and index bytes, from the `$collStats` stage's storage statistics."""
    stats = next(db[name].aggregate([{"$collStats": {"storageStats": {}}}]))["storageStats"]
    return {"documents": stats["count"], "data bytes": stats["size"], "index bytes": stats["totalIndexSize"]}


recent = {"customerId": "cust:0042", "createdAt": {"$gte": TODAY - dt.timedelta(days=90)}}
support = {"items.sku": "sku:042", "createdAt": {"$gte": TODAY - dt.timedelta(days=365)}}
before = {"customer, last 90 days": cost(db.orders.find(recent).sort("createdAt", -1)),
          "support search, last year": cost(db.orders.find(support))}
sizes_before = collection_figures("orders")
pd.DataFrame(before).T

# %% [markdown]
# The customer query is already cheap: its index narrows the scan to the few matching orders. The support search
# has no index to use and reads every order, three years of them, to return a handful from the last twelve months.

# %% [markdown]
# ### Moving cold orders with `$merge`
#
# The aggregation selects the cold orders and [`$merge`](https://www.mongodb.com/docs/manual/reference/operator/aggregation/merge/)s
# them into `orders_archive` (inserting new ones, keeping any that a previous, interrupted run already copied). Only
# once every cold order is found in the archive are they deleted from the hot collection. A crash between the two
# steps leaves an order in both places, never in neither, and running the job again finishes it. (The manual's
# script deletes right after the `$merge`; checking first costs one indexed read of the archive and protects
# against a copy that did not complete.)

# %%
def archive_before(cutoff):
    cold = {"createdAt": {"$lt": cutoff}}
    db.orders.aggregate([{"$match": cold},
                         {"$merge": {"into": "orders_archive", "on": "_id",
                                     "whenMatched": "keepExisting", "whenNotMatched": "insert"}}])
    hot_ids = {d["_id"] for d in db.orders.find(cold, {"_id": 1})}
    archived = {d["_id"] for d in db.orders_archive.find(cold, {"_id": 1})}
    if hot_ids - archived:
        raise RuntimeError(f"{len(hot_ids - archived)} cold orders are not in the archive; nothing deleted")
    return db.orders.delete_many(cold).deleted_count


CUTOFF = TODAY - dt.timedelta(days=365)
print("moved to the archive:", archive_before(CUTOFF))
print("running it again moves:", archive_before(CUTOFF))
archive_index = db.orders_archive.create_index([("customerId", 1), ("createdAt", -1)])

# %% [markdown]
# ### Before and after

# %%
after = {"customer, last 90 days": cost(db.orders.find(recent).sort("createdAt", -1)),
         "support search, last year": cost(db.orders.find(support))}
pd.concat([pd.DataFrame(before).T, pd.DataFrame(after).T], keys=["before archiving", "after archiving"])

# %%
pd.DataFrame({"orders before": sizes_before, "orders after": collection_figures("orders"),
              "orders_archive": collection_figures("orders_archive")}).T

# %% [markdown]
# The support search reads about a third of what it read before, because two thirds of the documents it used to scan
# are gone from the hot collection. The customer query did not change at all: archiving helps scans, caches and
# index sizes, not a query that an index already pins down.
#
# The rare full-history read now needs both collections: each side is an indexed query, and
# [`$unionWith`](https://www.mongodb.com/docs/manual/reference/operator/aggregation/unionWith/) runs both in one
# aggregation, one round trip, returning the documents of the first collection followed by those of the second:

# %%
history = [("hot", cost(db.orders.find({"customerId": "cust:0042"}))),
           ("archive", cost(db.orders_archive.find({"customerId": "cust:0042"})))]
full_history = list(db.orders.aggregate([
    {"$match": {"customerId": "cust:0042"}},
    {"$unionWith": {"coll": "orders_archive", "pipeline": [{"$match": {"customerId": "cust:0042"}}]}},
    {"$sort": {"createdAt": -1}}, {"$project": {"createdAt": 1}}]))
print("one $unionWith aggregation returned", len(full_history), "orders, newest",
      full_history[0]["createdAt"].date(), "| oldest", full_history[-1]["createdAt"].date())
pd.DataFrame(dict(history)).T

# %% [markdown]
# ### When the old data is not needed at all: expire it
#
# Archiving keeps the cold orders. If nobody ever needs them again, the simpler tool is a
# [TTL index](https://www.mongodb.com/docs/manual/core/index-ttl/): a single-field index on a date with
# `expireAfterSeconds`, whose monitor (a background task of the server, every 60 seconds) deletes each document
# once its date is older than that. No job to write, no second collection, and nothing to query afterwards.
#
# A TTL index acts on the server's clock, so a copy of the orders gets dates *relative to now* (each order keeps
# its age). `labkit.ttl_pass` runs one pass of the monitor on the embedded engine; on a server it waits for the
# server's own next pass:

# %%
now = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)
db.orders_ttl.insert_many([dict(o, createdAt=now - (TODAY - o["createdAt"])) for o in orders])
db.orders_ttl.create_index("createdAt", expireAfterSeconds=365 * 86_400)
ttl_before = db.orders_ttl.count_documents({})
labkit.ttl_pass(db)
pd.Series({"orders before the pass": ttl_before, "deleted by the TTL monitor": ttl_before -
           db.orders_ttl.count_documents({}), "left": db.orders_ttl.count_documents({})}, name="orders_ttl")

# %% [markdown]
# The same orders leave the hot collection as with the archive, and they are gone for good. On Atlas,
# [Online Archive](https://www.mongodb.com/docs/atlas/online-archive/overview/) sits between the two: a rule (a date
# field and an age) makes Atlas move matching documents to cheap cloud object storage on its own, and a read-only
# federated endpoint queries the cluster and the archive together, which is this section's pattern run by the
# service (M10 clusters and above).

# %% [markdown]
# ## Explore: where to put the cutoff
#
# The readouts come from the orders' real BSON sizes, sorted by date: how many documents and bytes stay hot for a
# given cutoff age, and how many documents the unindexed support search (a collection scan of the hot collection)
# has to read.

# %%
from labkit.widgets import explorer

by_date = sorted((o["createdAt"], len(bson.encode(o))) for o in orders)
dates = [d for d, _ in by_date]
cumulative = [0]
for _, size in by_date:
    cumulative.append(cumulative[-1] + size)


def cutoff_split(days):
    index = bisect_left(dates, TODAY - dt.timedelta(days=days))
    return {"cutoff": str((TODAY - dt.timedelta(days=days)).date()),
            "hot documents": len(dates) - index, "archived documents": index,
            "hot bytes": cumulative[-1] - cumulative[index], "archive bytes": cumulative[index],
            "support search docs examined (estimated: a scan reads every hot order)": len(dates) - index}


def draw_split(ax, values, r):
    ax.barh(["hot", "archive"], [r["hot bytes"] / 1024, r["archive bytes"] / 1024], color=["#d62728", "#1f77b4"])
    ax.set_xlabel("KiB")
    ax.set_title(f"cutoff {values['days']} days", fontsize=10)


split_explorer = explorer(cutoff_split, sliders={"days": (30, 1095, 365, 15)}, title="Archive cutoff",
                          draw=draw_split)
split_explorer

# %% [markdown]
# ## Part 2 · Document versioning

# %%
labkit.workload_table([
    ("read a contract", "read", "200/s", "the current revision only"),
    ("edit a contract", "write", "1/s", "keep the old revision, lose no edit"),
    ("show revision *n* / the revision list", "read", "100 a day", "any past revision, by number"),
])

# %% [markdown]
# The current revisions live in `documents`; each edit first copies the revision it replaces into
# `documents_history`: the manual's
# [document versioning pattern](https://www.mongodb.com/docs/manual/data-modeling/design-patterns/data-versioning/document-versioning/),
# which keeps the current version small and fast to read and the history beside it. (The manual's example
# updates the current document first and then copies it, new revision included, into the revisions collection;
# filing the replaced revision first, as here, means a crash between the two writes can never lose a revision.) A
# [unique index](https://www.mongodb.com/docs/manual/core/index-unique/) on `{docId, rev}` makes every revision
# number exist once per document.

# %%
db.documents.insert_many([{"_id": f"doc:{i:03d}", "rev": 1, "title": f"Contract {i:03d}",
                           "body": f"Terms of contract {i:03d}, first draft.", "updatedBy": "legal",
                           "updatedAt": dt.datetime(2026, 1, 1) + dt.timedelta(days=i)} for i in range(1, 101)])
db.documents_history.create_index([("docId", 1), ("rev", 1)], unique=True)
sorted(db.documents_history.index_information())


# %% [markdown]
# An edit starts from the revision the editor loaded (`seen`). Saving copies that revision into the history, under an
# `_id` of its own (when it was replaced), then updates the current document only if it is still at that revision.

# %%
def save_revision(seen, changes, by, when):
    doc_id = seen["_id"]
    old = {k: v for k, v in seen.items() if k != "_id"} | {"_id": f"{doc_id}@{when:%Y-%m-%dT%H:%M}", "docId": doc_id}
    db.documents_history.insert_one(old)  # refused if this revision was already replaced
    db.documents.update_one({"_id": doc_id, "rev": seen["rev"]},
                            {"$set": changes | {"updatedBy": by, "updatedAt": when}, "$inc": {"rev": 1}})
    return db.documents.find_one({"_id": doc_id}, {"rev": 1})["rev"]


print("doc:007 is now at revision", save_revision(db.documents.find_one({"_id": "doc:007"}),
                                                  {"body": "Terms, second draft."}, "ana", dt.datetime(2026, 3, 1)))
print("doc:007 is now at revision", save_revision(db.documents.find_one({"_id": "doc:007"}),
                                                  {"body": "Terms, signed."}, "ben", dt.datetime(2026, 3, 9)))

# %% [markdown]
# Two editors open revision 3 at the same time. The first save wins; the second tries to file revision 3 in the
# history a second time, the unique `{docId, rev}` index refuses it, and the current document is left alone instead
# of silently losing the first edit.

# %%
seen_by_ana = db.documents.find_one({"_id": "doc:007"})
seen_by_ben = db.documents.find_one({"_id": "doc:007"})
print("Ana saves: revision", save_revision(seen_by_ana, {"title": "Contract 007 (renewed)"}, "ana",
                                           dt.datetime(2026, 3, 10, 9, 0)))
try:
    save_revision(seen_by_ben, {"title": "Contract 007 (cancelled)"}, "ben", dt.datetime(2026, 3, 10, 9, 5))
except DuplicateKeyError as exc:
    print("Ben's save refused, code", exc.code, exc.details["keyValue"])
print("current title:", db.documents.find_one({"_id": "doc:007"})["title"])

# %% [markdown]
# ### Two flaws of this save, and a design without them
#
# This first design has two bugs that no concurrent edit is needed to trigger:
#
# - the history copy's `_id` is the minute of the edit, so two edits of one contract within the same minute
#   collide on `_id` although nobody conflicts with anybody;
# - the save is two writes. If the process dies between them (history copy written, current document not yet
#   updated), the copy of revision *n* is in the history while the contract is still at *n*: every later save
#   tries to file revision *n* again, the unique index refuses it, and the contract can never be edited again.
#
# Both, measured on fresh contracts (`doc:101` and `doc:102`):

# %%
db.documents.insert_many([{"_id": f"doc:{i}", "rev": 1, "title": f"Contract {i}", "body": "first draft.",
                           "updatedBy": "legal", "updatedAt": dt.datetime(2026, 1, 1)} for i in (101, 102)])
flaws = {}
save_revision(db.documents.find_one({"_id": "doc:101"}), {"body": "typo fixed."}, "ana", dt.datetime(2026, 5, 4, 10, 0, 5))
try:
    save_revision(db.documents.find_one({"_id": "doc:101"}), {"body": "typo fixed again."}, "ana",
                  dt.datetime(2026, 5, 4, 10, 0, 40))
    flaws["second edit in the same minute"] = "saved"
except DuplicateKeyError as exc:
    flaws["second edit in the same minute"] = f"refused, code {exc.code}, key {exc.details['keyValue']}"

# a crash after the first write: the history copy of revision 1 exists, the contract is still at revision 1
crashed = db.documents.find_one({"_id": "doc:102"})
db.documents_history.insert_one({k: v for k, v in crashed.items() if k != "_id"}
                                | {"_id": "doc:102@2026-05-04T11:00", "docId": "doc:102"})
for attempt in (1, 2):
    try:
        save_revision(db.documents.find_one({"_id": "doc:102"}), {"body": "amended."}, "ben",
                      dt.datetime(2026, 5, 4, 12 + attempt, 0))
        flaws[f"edit {attempt} after the crash"] = "saved"
    except DuplicateKeyError as exc:
        flaws[f"edit {attempt} after the crash"] = f"refused, code {exc.code}, key {exc.details['keyValue']}"
for what, result in flaws.items():
    print(f"{what}: {result}")

# %% [markdown]
# **The fix.** Key the history copy by what it is, the pair (document, revision): `_id` = `"<docId>@rev<n>"`, so
# edit time plays no part. File it with an **upsert that only inserts**
# ([`$setOnInsert`](https://www.mongodb.com/docs/manual/reference/operator/update/setOnInsert/)): filing revision *n* a
# second time, after a crash or by a second editor, changes nothing and raises nothing, because revision *n* of a
# contract has one content for ever. The **conditional update** (`rev` still *n*) then decides who wins: it
# matches no document when someone else saved first, and that is the conflict the editor is told about. A crash
# between the two writes now leaves a harmless copy that the next save of revision *n* finds already filed.
#
# **Predict** before running the next cell: `doc:103` is edited, the process "crashes" after the history write,
# and the same edit is retried with the fixed `save_revision`, then edited twice more within one minute. How
# many copies of revision 1 does the history hold afterwards?

# %%
predict_crash = labkit.exercises.get("18-predict-crash-retry")

# %% tags=["solution"]
predict_crash.predict(1)


# %% tags=["reveal"]
class EditConflict(Exception):
    """Someone saved a newer revision since this editor loaded the document."""


def file_revision(seen):
    """Write 1 of 2: copy the revision being replaced into the history, idempotently."""
    copy = {k: v for k, v in seen.items() if k != "_id"} | {"docId": seen["_id"]}
    db.documents_history.update_one({"_id": f"{seen['_id']}@rev{seen['rev']}"}, {"$setOnInsert": copy},
                                    upsert=True)


def save_revision(seen, changes, by, when):
    file_revision(seen)
    result = db.documents.update_one({"_id": seen["_id"], "rev": seen["rev"]},
                                     {"$set": changes | {"updatedBy": by, "updatedAt": when}, "$inc": {"rev": 1}})
    if result.matched_count == 0:
        raise EditConflict(f"{seen['_id']} is no longer at revision {seen['rev']}: reload it and edit again")
    return seen["rev"] + 1


db.documents.insert_one({"_id": "doc:103", "rev": 1, "title": "Contract 103", "body": "first draft.",
                         "updatedBy": "legal", "updatedAt": dt.datetime(2026, 1, 1)})
loaded = db.documents.find_one({"_id": "doc:103"})
file_revision(loaded)  # ... and the process dies here, before the update
retry = save_revision(db.documents.find_one({"_id": "doc:103"}), {"body": "amended."}, "ben", dt.datetime(2026, 5, 4, 13))
same_minute = [save_revision(db.documents.find_one({"_id": "doc:103"}), {"body": f"amended {k}."}, "ben",
                             dt.datetime(2026, 5, 4, 13, 0, 10 * k)) for k in (1, 2)]
copies_of_103 = db.documents_history.count_documents({"docId": "doc:103"})
revs_of_103 = sorted(d["rev"] for d in db.documents_history.find({"docId": "doc:103"}))
crash_copies = db.documents_history.count_documents({"docId": "doc:103", "rev": 1})
pd.Series({"retry after the crash saved revision": retry, "two more edits in one minute saved revisions":
           same_minute, "history revisions of doc:103": revs_of_103, "copies of revision 1": crash_copies})

# %% tags=["reveal"]
predict_crash.check(crash_copies)

# %% [markdown]
# And a concurrent edit is still refused, now by the conditional update instead of a duplicate key: Ana and Ben
# both load `doc:103`, Ana saves first.

# %%
seen_by_ana = db.documents.find_one({"_id": "doc:103"})
seen_by_ben = db.documents.find_one({"_id": "doc:103"})
outcome = {"Ana": f"saved revision {save_revision(seen_by_ana, {'title': 'renewed'}, 'ana', dt.datetime(2026, 5, 5))}"}
try:
    save_revision(seen_by_ben, {"title": "cancelled"}, "ben", dt.datetime(2026, 5, 5))
except EditConflict as exc:
    outcome["Ben"] = f"refused: {exc}"
outcome["current title"] = db.documents.find_one({"_id": "doc:103"})["title"]
for who, what in outcome.items():
    print(f"{who}: {what}")

# %% [markdown]
# Many more edits, deterministic, so the history is much bigger than the current collection:

# %%
edit_rng = random.Random(180)
for i in range(1, 101):
    for n in range(edit_rng.randint(0, 20)):
        save_revision(db.documents.find_one({"_id": f"doc:{i:03d}"}),
                      {"body": f"Terms of contract {i:03d}, edit {n + 1}."}, "legal",
                      dt.datetime(2026, 4, 1) + dt.timedelta(hours=n))
pd.DataFrame({"documents": collection_figures("documents"),
              "documents_history": collection_figures("documents_history")}).T

# %% [markdown]
# Reading the current contract never touches the history; reading revision 1 is one unique-index lookup. (The
# current contract's plan, `EXPRESS_IXSCAN`, is MongoDB 8.0's fast path for an equality on `_id`: one key, one
# document, no plan selection; lesson 01 explains it.)

# %%
reads = {"current doc:007": cost(db.documents.find({"_id": "doc:007"})),
         "doc:007 revision 1": cost(db.documents_history.find({"docId": "doc:007", "rev": 1})),
         "doc:007 revision list, newest first": cost(db.documents_history.find({"docId": "doc:007"}).sort("rev", -1))}
pd.DataFrame(reads).T

# %%
[(d["rev"], d["body"], d["updatedBy"]) for d in db.documents_history.find({"docId": "doc:007"}).sort("rev", 1).limit(5)]

# %% [markdown]
# ## Exercise 1: price history that survives a crash
#
# A product catalogue keeps every replaced price: the current product in `db.products`
# (`{_id: "sku:…", rev, price}`), each replaced revision in `db.price_history` with `productId` and `rev`. Write
# `save_price(db, seen, new_price)`: `seen` is the product as the caller loaded it. File the revision being
# replaced, then change the price and `rev`; return `True` when saved, `False` when someone saved a newer revision
# since `seen` was loaded. It must survive a crash between its two writes (the retry with the same `seen` saves,
# and the history still holds one copy per revision) and several saves within the same second.
# `ex_price.check(save_price)` runs it on its own scratch database, with a simulated crash and two competing
# editors.

# %%
ex_price = labkit.exercises.get("18-price-history-crash-safe")
ex_price


# %% tags=["solution"]
def save_price(db, seen, new_price):
    copy = {k: v for k, v in seen.items() if k != "_id"} | {"productId": seen["_id"]}
    db.price_history.update_one({"_id": f"{seen['_id']}@rev{seen['rev']}"}, {"$setOnInsert": copy}, upsert=True)
    result = db.products.update_one({"_id": seen["_id"], "rev": seen["rev"]},
                                    {"$set": {"price": new_price}, "$inc": {"rev": 1}})
    return result.matched_count == 1


ex_price.check(save_price)

# %% [markdown]
# ## Exercise 2: the contracts' save, from scratch
#
# Write `save_revision(db, doc_id, changes)` for the practice database: copy the **current** revision into
# `db.documents_history` (with `docId` and `rev`, and an `_id` of its own), then apply `changes` to the document in
# `db.documents` and increase its `rev` by one. Also create the unique index on `{docId, rev}`.
# `ex.check(practice, save_revision)` copies your index into a database of its own, saves a few revisions of a
# scratch document watching the writes (two per save, the copy first), then stops the process between the two
# writes and retries, and runs two editors at once.

# %%
practice = labkit.fresh_db("18_practice")
practice.documents.insert_one({"_id": "doc:1", "rev": 1, "title": "Policy", "body": "first draft"})
ex = labkit.exercises.get("18-versioning")
ex


# %% tags=["solution"]
def save_revision(db, doc_id, changes):
    current = db.documents.find_one({"_id": doc_id})
    copy = {k: v for k, v in current.items() if k != "_id"} | {"docId": doc_id}
    db.documents_history.update_one({"_id": f"{doc_id}@rev{current['rev']}"}, {"$setOnInsert": copy}, upsert=True)
    db.documents.update_one({"_id": doc_id, "rev": current["rev"]}, {"$set": changes, "$inc": {"rev": 1}})


practice.documents_history.create_index([("docId", 1), ("rev", 1)], unique=True)
ex.check(practice, save_revision)

# %% [markdown]
# ## Summary
#
# - Archive: move cold documents with `$match` + `$merge` (copy first, verify, then delete), so scans, caches and
#   indexes only carry what is still read. Tightly indexed queries were already fast and stay the same.
# - Reads that span hot and cold data pay for it (two queries or `$unionWith`); choose the cutoff from the workload.
# - Data nobody will read again needs no archive: a TTL index deletes it. On Atlas, Online Archive moves it to
#   object storage and still queries it.
# - Document versioning: current revisions in one collection, replaced revisions in another, keyed and made unique
#   by `{docId, rev}`. Current reads stay small; a past revision is one index lookup; a concurrent edit of the same
#   revision is refused.
# - Make each of the save's two writes safe to repeat: key the history copy by (document, revision), file it
#   with an insert-only upsert, and let the conditional update on `rev` decide conflicts. A crash between the
#   writes then leaves nothing to repair, and no edit time enters any key.
#
# **Next:** 19 · single-collection design for a many-to-many.

# %% [markdown] tags=["sources"]
# ## Sources
#
# 1. [MongoDB manual: Archive Pattern](https://www.mongodb.com/docs/manual/data-modeling/design-patterns/archive/)
# 2. [MongoDB manual: \$merge (aggregation stage)](https://www.mongodb.com/docs/manual/reference/operator/aggregation/merge/)
# 3. [MongoDB manual: \$unionWith (aggregation stage)](https://www.mongodb.com/docs/manual/reference/operator/aggregation/unionWith/)
# 4. [MongoDB manual: TTL Indexes](https://www.mongodb.com/docs/manual/core/index-ttl/)
# 5. [MongoDB Atlas: Online Archive Overview](https://www.mongodb.com/docs/atlas/online-archive/overview/)
# 6. [MongoDB manual: Keep a History of Document Versions (document versioning pattern)](https://www.mongodb.com/docs/manual/data-modeling/design-patterns/data-versioning/document-versioning/)
# 7. [MongoDB manual: Unique Indexes](https://www.mongodb.com/docs/manual/core/index-unique/)
# 8. [MongoDB manual: \$setOnInsert](https://www.mongodb.com/docs/manual/reference/operator/update/setOnInsert/)
# 9. [MongoDB manual: \$collStats (aggregation stage)](https://www.mongodb.com/docs/manual/reference/operator/aggregation/collStats/)

# %% [markdown] tags=["navigation"]
# [← 17 · Trees: parent and child references, ancestors, materialized paths, \$graphLookup](17_trees.ipynb) · [Contents](../CONTENTS.md) · [19 · Single-collection design: a many-to-many in one indexed query →](19_single_collection.ipynb)
