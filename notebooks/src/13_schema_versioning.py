# ---
# jupyter:
#   jupytext:
#     formats: ipynb,src//py:percent
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
#   labkit:
#     minutes: 35
#     exercise_minutes: 15
#     title: "Schema versioning: v1 name, v2 firstName/lastName, no downtime"
#     section: Patterns
#     demo: "Run the background migration batch by batch and watch the remaining v1 count and the partial index shrink to zero."
#     mistakes: ["querying only the new field names while old documents still use the old ones", "one huge update_many instead of bounded batches", "a validator that accepts only the new version while old documents remain"]
#     sources:
#     - title: "MongoDB manual: Maintain Different Schema Versions (schema versioning pattern)"
#       url: https://www.mongodb.com/docs/manual/data-modeling/design-patterns/data-versioning/schema-versioning/
#     - title: "MongoDB manual: $or (index use)"
#       url: https://www.mongodb.com/docs/manual/reference/operator/query/or/
#     - title: "MongoDB manual: Partial Indexes"
#       url: https://www.mongodb.com/docs/manual/core/index-partial/
#     - title: "MongoDB manual: $regex (index use)"
#       url: https://www.mongodb.com/docs/manual/reference/operator/query/regex/
#     - title: "MongoDB manual: cursor.hint() ($natural forces a collection scan)"
#       url: https://www.mongodb.com/docs/manual/reference/method/cursor.hint/
#     - title: "MongoDB manual: $jsonSchema (oneOf)"
#       url: https://www.mongodb.com/docs/manual/reference/operator/query/jsonSchema/
#     - title: "MongoDB manual: Schema Validation"
#       url: https://www.mongodb.com/docs/manual/core/schema-validation/
# ---

# %% [markdown]
# # 13 · Schema versioning: v1 `name`, v2 `firstName`/`lastName`, no downtime
#
# **You will learn**
# - to tag every document with `schemaVersion` so code can tell old shapes from new;
# - to migrate on read: upgrade a v1 document when it is loaded and write it back;
# - to migrate the rest in the background in bounded batches, with progress after each batch;
# - a validator that accepts both versions while the migration runs (`$jsonSchema` with `oneOf`);
# - a partial index that holds exactly the unmigrated documents, serves both the migration and the queries
#   during it, and empties as they disappear.
#
# **Time:** about 35 minutes.

# %%
import random

import pandas as pd
from pymongo import UpdateOne
from pymongo.errors import OperationFailure, WriteError

import labkit

db = labkit.fresh_db("13_schema_versioning")
FIRST = ["Alice", "Ben", "Chloe", "Dev", "Elena", "Farah", "Gus", "Hana", "Mary", "Omar"]
LAST = ["Smith", "Lee", "Garcia", "Nguyen", "Okafor", "Rossi", "Ann Lee", "van Dijk"]
rng = random.Random(13)


def person(i):
    return rng.choice(FIRST), rng.choice(LAST)


users = [{"_id": "user:1", "schemaVersion": 1, "name": "Alice Smith", "email": "alice1@example.com"}]
for i in range(2, 4001):
    first, last = person(i)
    if i <= 3000:  # written by the old code
        users.append({"_id": f"user:{i}", "schemaVersion": 1, "name": f"{first} {last}",
                      "email": f"{first.lower()}{i}@example.com"})
    else:  # written since the new code shipped
        users.append({"_id": f"user:{i}", "schemaVersion": 2, "firstName": first, "lastName": last,
                      "email": f"{first.lower()}{i}@example.com"})
db.users.insert_many(users)
pd.DataFrame(db.users.aggregate([{"$group": {"_id": "$schemaVersion", "documents": {"$sum": 1}}},
                                 {"$sort": {"_id": 1}}])).rename(columns={"_id": "schemaVersion"})

# %% [markdown]
# Two shapes of the same user live side by side:

# %%
db.users.find_one({"_id": "user:1"}), db.users.find_one({"_id": "user:3001"})

# %% [markdown]
# ## The workload

# %%
labkit.workload_table([
    ("load a profile by _id", "read", "2,000/s", "first and last name, always in the v2 shape"),
    ("find users by last name", "read", "50/s", "every matching user, whatever the version"),
    ("ship the v2 code", "deploy", "once (0 downtime)", "no downtime, no stop-the-world migration"),
    ("migrate the old documents", "background", "one batch of 500 per run, until done", "bounded load, visible progress"),
])

# %% [markdown]
# ## The naive approach: new code, old data
#
# Code written for v2 queries `lastName`. Old documents do not have it, so they silently drop out:

# %%
v2_only = db.users.count_documents({"lastName": "Smith"})
truth = sum(1 for u in users if u.get("lastName") == "Smith" or u.get("name", "").split(" ", 1)[-1] == "Smith")
print(f"users named Smith: {truth}; the v2 query finds {v2_only}")

# %% [markdown]
# ## During the migration: one query for both versions
#
# Until the last v1 document is gone, "find users by last name" must ask both shapes at once: v2 documents by
# `lastName`, v1 documents by the part of `name` after the first word (exactly what `upgrade` below will
# store). The manual warns about this: when the same information sits in different fields in different
# versions, each needs its own index
# ([manual: schema versioning](https://www.mongodb.com/docs/manual/data-modeling/design-patterns/data-versioning/schema-versioning/)).
# One `$or` with a branch per version, each branch pinned to its `schemaVersion`; an `$or` uses indexes only if
# every branch has one ([manual: `$or`](https://www.mongodb.com/docs/manual/reference/operator/query/or/)):
#
# - `{lastName: 1}` for the v2 branch;
# - `{schemaVersion: 1, name: 1}` for the v1 branch, made **partial**: it holds an entry only for the
#   documents that match its `partialFilterExpression`, here `schemaVersion: 1`
#   ([manual: partial indexes](https://www.mongodb.com/docs/manual/core/index-partial/)). The v1 branch names
#   `schemaVersion: 1`, so it may use it; as users are migrated they leave the index, which empties when the
#   migration ends.
#
# The v1 branch's regular expression does not start with a fixed prefix, so it has no narrow range to read: the
# server tests it against every v1 key of the index and fetches only the documents whose key matches
# ([manual: `$regex` index use](https://www.mongodb.com/docs/manual/reference/operator/query/regex/)). The dual
# query pays for the unmigrated documents, and that cost falls to nothing as they are migrated.

# %%
import re


def by_last_name(last):
    return {"$or": [{"schemaVersion": 2, "lastName": last},
                    {"schemaVersion": 1, "name": {"$regex": f"^[^ ]+ {re.escape(last)}$"}}]}


db.users.create_index([("lastName", 1)])
db.users.create_index([("schemaVersion", 1), ("name", 1)], name="v1_by_name",
                      partialFilterExpression={"schemaVersion": 1})


def query_cost(query):
    s = db.users.find(query).explain()["executionStats"]
    return {"keys examined": s["totalKeysExamined"], "docs examined": s["totalDocsExamined"],
            "returned": s["nReturned"]}


dual_before = query_cost(by_last_name("Smith"))
pd.DataFrame({"v2 only {lastName: 'Smith'}": query_cost({"lastName": "Smith"}),
              "dual query, 3,000 v1 left": dual_before}).assign(**{"users named Smith": truth})

# %% [markdown]
# The dual query finds every Smith; the v2-only query misses the v1 ones. The keys the dual query examines
# beyond what it returns are the v1 entries its regular expression has to test.
#
# **Predict.** Once the background migration below has finished, no v1 document is left. How many index keys
# will the dual query for 'Smith' examine then, in both branches together? (Think of what each branch's index
# holds at that point. The measurement is at the end of the migration section.)

# %%
predict_dual = labkit.exercises.get("13-predict-dual-query-after-migration")

# %% tags=["solution"]
predict_dual.predict(truth)  # one key per Smith, none in the empty partial index

# %% [markdown]
# Stopping the application to rewrite 3,000 (or hundreds of millions of) documents at once is the other naive option: one
# enormous write, no progress reporting, and downtime. Versioning avoids both.
#
# ## Better: migrate on read
#
# The application reads through one function. A v1 document is upgraded in memory (first word = `firstName`,
# the rest = `lastName`, exactly as the old `name` was written), returned in the v2 shape, and written back.
# The write-back filter includes `schemaVersion: 1`, so two readers upgrading the same user at once do no harm.
# (The source's version names the field `schema_version` and starts the write-back without waiting for it, so
# a failed write goes unnoticed and the user is upgraded again on the next read.)

# %%
def upgrade(doc):
    first, _, last = doc["name"].partition(" ")
    return {"firstName": first, "lastName": last, "schemaVersion": 2}


def get_user(user_id):
    doc = db.users.find_one({"_id": user_id})
    if doc is not None and doc["schemaVersion"] == 1:
        changes = upgrade(doc)
        db.users.update_one({"_id": user_id, "schemaVersion": 1}, {"$set": changes, "$unset": {"name": ""}})
        del doc["name"]
        doc.update(changes)
    return doc


get_user("user:1")

# %% [markdown]
# A day of traffic touches some profiles; each first read of an old one migrates it (one extra write, once):

# %%
visits = random.Random(7)
reads = [f"user:{visits.randint(1, 4000)}" for _ in range(1500)]
before = db.users.count_documents({"schemaVersion": 1})
for uid in reads:
    get_user(uid)
after = db.users.count_documents({"schemaVersion": 1})
pd.Series({"profile reads": len(reads), "distinct users read": len(set(reads)), "v1 before": before,
           "v1 after": after, "migrated by reads (writes)": before - after})

# %% [markdown]
# Users who never log in are never migrated that way, so the queries by `lastName` would stay wrong for ever.
# A background job finishes the work.
#
# ## Finding the unmigrated documents: an index
#
# The job asks for `{schemaVersion: 1}` again and again. The source indexes `{schema_version: 1}` for it. Here
# the partial `{schemaVersion: 1, name: 1}` index built for the dual query already starts with `schemaVersion`
# and holds exactly the v1 documents, so it serves the job too: a separate `{schemaVersion: 1}` index would be a
# second index to maintain on every write for a query this one already serves (an unnecessary index, the kind
# lesson 35 removes). Without any such index, each ask is a
# collection scan; `hint({"$natural": 1})` forces one to show the difference
# ([manual: `cursor.hint()`](https://www.mongodb.com/docs/manual/reference/method/cursor.hint/)):

# %%
BATCH = 500


def batch_query(coll):
    return coll.find({"schemaVersion": 1}, {"name": 1}).limit(BATCH)


def find_cost(cursor):
    explain = cursor.explain()
    s = explain["executionStats"]
    return {"plan": labkit.plan_summary(explain)["stages"], "keys examined": s["totalKeysExamined"],
            "docs examined": s["totalDocsExamined"], "returned": s["nReturned"]}


pd.DataFrame({"no index (forced collection scan)": find_cost(batch_query(db.users).hint([("$natural", 1)])),
              "partial index v1_by_name": find_cost(batch_query(db.users))})

# %% [markdown]
# The collection scan stops as soon as it has 500 v1 documents, which is early now, while most old documents
# are v1. The migration below measures both ways for every batch: as v1 documents become rare, the scan has to
# read more and more of the collection to fill a batch, while the index reads exactly the batch.
#
# ## Background migration in batches
#
# Each batch takes at most `BATCH` v1 documents through the index, upgrades them with one `bulk_write` (one
# round trip), and reports progress. The batch size bounds the load on the server; a pause between batches
# (left out here) would bound it further. Upgraded documents leave the partial index, so the next batch finds the
# next ones.

# %%
def migrate_batch(coll):
    todo = list(batch_query(coll))
    if not todo:
        return 0
    coll.bulk_write([UpdateOne({"_id": d["_id"], "schemaVersion": 1},
                               {"$set": upgrade(d), "$unset": {"name": ""}}) for d in todo])
    return len(todo)


def index_entries():
    """Entries of the partial index: keys examined by a scan of the whole index."""
    return db.users.find({"schemaVersion": 1}, {"_id": 0, "schemaVersion": 1}).hint("v1_by_name").explain()[
        "executionStats"]["totalKeysExamined"]


total = db.users.count_documents({"schemaVersion": 1})
progress, done, batch_no = [], 0, 0
while True:
    costs = {"batch query, index: keys examined": find_cost(batch_query(db.users))["keys examined"],
             "batch query, collection scan: docs examined":
                 find_cost(batch_query(db.users).hint([("$natural", 1)]))["docs examined"]}
    n = migrate_batch(db.users)
    if n == 0:
        break
    batch_no += 1
    done += n
    progress.append({"batch": batch_no, "migrated": n, "done": done, "remaining": total - done,
                     "% done": round(100 * done / total, 1), "partial index entries after": index_entries()}
                    | costs)
pd.DataFrame(progress).set_index("batch")

# %% tags=["reveal"]
print("v1 left:", db.users.count_documents({"schemaVersion": 1}),
      "| Smiths found now:", db.users.count_documents({"lastName": "Smith"}), "of", truth)
dual_after = query_cost(by_last_name("Smith"))
pd.DataFrame({"dual query, 3,000 v1 left": dual_before, "dual query, migration done": dual_after})

# %% [markdown]
# The v1 branch now has an empty index to scan: the dual query costs what the v2 query costs, so it can stay in
# the code until the v1 branch is deleted, and removing it is a clean-up, not a fix. Check the prediction:

# %% tags=["reveal"]
keys_after = dual_after["keys examined"]
keys_after

# %% tags=["reveal"]
predict_dual.check(keys_after)

# %% [markdown]
# ## A validator for both versions
#
# A flexible schema is not the absence of one (the source material opens with that point): the collection may
# hold two shapes for a while, but each of them is still a rule. While old and new documents coexist, the
# collection's rules must accept exactly two shapes: a v1 user with a `name`, or a v2 user with `firstName` and
# `lastName`. In a
# [`$jsonSchema`](https://www.mongodb.com/docs/manual/reference/operator/query/jsonSchema/) validator, `oneOf`
# says "exactly one of these"; `collMod` installs it on the existing collection
# ([manual: schema validation](https://www.mongodb.com/docs/manual/core/schema-validation/)).

# %%
both_versions = {"$jsonSchema": {
    "bsonType": "object",
    "required": ["schemaVersion", "email"],
    "oneOf": [
        {"properties": {"schemaVersion": {"enum": [1]}, "name": {"bsonType": "string"}},
         "required": ["name"]},
        {"properties": {"schemaVersion": {"enum": [2]}, "firstName": {"bsonType": "string"},
                        "lastName": {"bsonType": "string"}},
         "required": ["firstName", "lastName"]},
    ],
}}
try:
    db.command("collMod", "users", validator=both_versions)
    print("validator installed on users")
except OperationFailure as exc:
    print("collMod validator not available here:", exc)
print("documents failing it:", db.users.count_documents({"$nor": [both_versions]}))

# %% [markdown]
# Candidate documents against those rules. `labkit.validation.document_matches` evaluates a validator locally
# with the server's `$jsonSchema` rules, without writing anything:

# %%
from labkit.validation import document_matches

candidates = {
    "v1 with name": {"schemaVersion": 1, "name": "Ben Lee", "email": "b@example.com"},
    "v2 with both names": {"schemaVersion": 2, "firstName": "Ben", "lastName": "Lee", "email": "b@example.com"},
    "v2 without lastName": {"schemaVersion": 2, "firstName": "Ben", "email": "b@example.com"},
    "v1 shape labelled 2": {"schemaVersion": 2, "name": "Ben Lee", "email": "b@example.com"},
    "unknown version 3": {"schemaVersion": 3, "fullName": "Ben Lee", "email": "b@example.com"},
}
pd.Series({label: document_matches(both_versions, doc) for label, doc in candidates.items()}, name="accepted")

# %% [markdown]
# The server applies the same rules on insert: the bad shapes are rejected with code 121
# (`DocumentValidationFailure`).

# %%
for label, doc in candidates.items():
    try:
        db.users.insert_one(dict(doc, _id=f"user:candidate-{label}"))
        print(f"{label}: accepted")
    except WriteError as exc:
        print(f"{label}: rejected ({exc.code})")
removed = db.users.delete_many({"_id": {"$regex": "^user:candidate-"}}).deleted_count

# %% [markdown]
# Once no v1 document is left, tighten the rules to v2 only (and the code can drop its v1 branch): the version
# field keeps the door open for a v3 later.
#
# ## Explore: batch size
#
# How the background job splits the v1 documents that were left after the day of reads (measured above), by
# arithmetic (**estimated**): batches and round trips needed (a find and a `bulk_write` per batch), the largest
# write burst, and the index keys each batch's query examines against what a collection scan may examine per batch
# (the whole collection, in the worst case: the last batch of the measured run above came close).

# %%
from labkit.widgets import explorer

left_after_reads = total
collection_size = db.users.count_documents({})


def batches(batch_size):
    n = -(-left_after_reads // batch_size)
    return {"v1 documents to migrate": left_after_reads, "batches (estimated: v1 left / batch size)": n,
            "round trips (estimated: a find and a bulk_write per batch)": 2 * n,
            "documents written by one bulk_write, at most": min(batch_size, left_after_reads),
            "last batch": left_after_reads - (n - 1) * batch_size if n else 0,
            "keys examined per batch with the index (estimated: one per document)": min(batch_size, left_after_reads),
            "docs examined per batch by a collection scan (estimated: the whole collection, the worst case)": collection_size}


explorer(batches, sliders={"batch_size": (50, 3000, BATCH, 50)}, title="Migration batches")

# %% [markdown]
# ## Exercise 1: the same idea on other data
#
# A customers collection is half-way through another migration: v1 customers store the address as one string
# `"12 High Street, York"` (the city is what follows the last `", "`); v2 customers store
# `address: {street, city}`. Write `city_filter(city)` that returns ONE filter finding every customer in `city`,
# whatever the version. `ex.check(city_filter)` runs your filter on its own mixed collection for several cities
# (some city names are the end of others, some contain regex characters) and compares with the right customers.

# %%
ex_city = labkit.exercises.get("13-dual-query-city")
ex_city


# %% tags=["solution"]
def city_filter(city):
    return {"$or": [{"schemaVersion": 2, "address.city": city},
                    {"schemaVersion": 1, "address": {"$regex": f", {re.escape(city)}$"}}]}


ex_city.check(city_filter)

# %% [markdown]
# ## Exercise 2: migrate the customers
#
# Now finish the customers' migration in the background. Write `migrate_batch(coll, batch_size)` that upgrades
# **at most** `batch_size` v1 customers to v2 (the address string `"street, city"` becomes
# `address: {street, city}`, the city being what follows the last `", "`, and `schemaVersion: 2`) and returns how
# many it upgraded. `ex.check(db, migrate_batch)` runs it on a collection of its own until it returns 0,
# counting the writes of each call (one update per customer), checks every document, then stops the process in
# the middle of a batch and checks that the next runs finish the job.

# %%
ex = labkit.exercises.get("13-migrate-batches")
ex


# %% tags=["solution"]
def migrate_batch(coll, batch_size):
    todo = list(coll.find({"schemaVersion": 1}, {"address": 1}).limit(batch_size))
    for d in todo:
        street, _, city = d["address"].rpartition(", ")
        coll.update_one({"_id": d["_id"], "schemaVersion": 1},
                        {"$set": {"address": {"street": street, "city": city}, "schemaVersion": 2}})
    return len(todo)


ex.check(db, migrate_batch)

# %% [markdown]
# ## Summary
#
# - A `schemaVersion` field lets old and new shapes coexist and tells code which one it holds.
# - Migrate on read for the documents that are used, in the background in bounded batches for the rest;
#   report progress after each batch.
# - Index the version so each batch finds its work without scanning; a partial index on the old version holds
#   only the unmigrated documents, and an index that already starts with the version field makes a separate
#   `{schemaVersion: 1}` redundant.
# - During the migration, query both versions at once (an `$or` with a branch per `schemaVersion`); the v1
#   branch's cost falls to nothing as the migration ends.
# - During the migration, validate with `oneOf` both versions; tighten the rules once the old version is gone.
#
# **Next:** 14 · the polymorphic pattern.

# %% [markdown] tags=["sources"]
# ## Sources
#
# 1. [MongoDB manual: Maintain Different Schema Versions (schema versioning pattern)](https://www.mongodb.com/docs/manual/data-modeling/design-patterns/data-versioning/schema-versioning/)
# 2. [MongoDB manual: \$or (index use)](https://www.mongodb.com/docs/manual/reference/operator/query/or/)
# 3. [MongoDB manual: Partial Indexes](https://www.mongodb.com/docs/manual/core/index-partial/)
# 4. [MongoDB manual: \$regex (index use)](https://www.mongodb.com/docs/manual/reference/operator/query/regex/)
# 5. [MongoDB manual: cursor.hint() (\$natural forces a collection scan)](https://www.mongodb.com/docs/manual/reference/method/cursor.hint/)
# 6. [MongoDB manual: \$jsonSchema (oneOf)](https://www.mongodb.com/docs/manual/reference/operator/query/jsonSchema/)
# 7. [MongoDB manual: Schema Validation](https://www.mongodb.com/docs/manual/core/schema-validation/)

# %% [markdown] tags=["navigation"]
# [← 12 · Computed: maintain rating statistics on write](12_computed.ipynb) · [Contents](../CONTENTS.md) · [14 · Polymorphic: articles, videos and tools in one feed collection →](14_polymorphic.ipynb)
