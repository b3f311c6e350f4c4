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
#     title: "Enforce the shape with schema validation"
#     section: Relationships
#     exercise_minutes: 17
#     demo: >-
#       Apply the 8-role validator with collMod, insert nine roles and read errInfo; switch strict/moderate on a legacy document; audit with $nor + $jsonSchema, then migrate under strict with no bypass and show the ninth roles moved to role_reviews, not lost.
#     mistakes:
#     - "Using type: 'integer' or JSON Schema's format: MongoDB's dialect wants bsonType and rejects those keywords."
#     - "Forgetting that updates are validated on the resulting document."
#     - "Believing a migration needs bypass_document_validation (under strict, an update whose result is valid passes)."
#     - "Trimming an over-long array in a migration, silently losing the extra elements."
#     sources:
#     - title: "MongoDB manual: Schema Validation"
#       url: https://www.mongodb.com/docs/manual/core/schema-validation/
#     - title: "MongoDB manual: $jsonSchema"
#       url: https://www.mongodb.com/docs/manual/reference/operator/query/jsonSchema/
#     - title: "MongoDB manual: collMod"
#       url: https://www.mongodb.com/docs/manual/reference/command/collMod/
#     - title: "MongoDB manual: Specify Validation Level for Existing Documents"
#       url: https://www.mongodb.com/docs/manual/core/schema-validation/specify-validation-level/
#     - title: "MongoDB manual: Choose How to Handle Invalid Documents"
#       url: https://www.mongodb.com/docs/manual/core/schema-validation/handle-invalid-documents/
#     - title: "MongoDB manual: Privilege Actions (bypassDocumentValidation)"
#       url: https://www.mongodb.com/docs/manual/reference/privilege-actions/
#     - title: "MongoDB manual: Error Codes"
#       url: https://www.mongodb.com/docs/manual/reference/error-codes/
#     - title: "MongoDB manual: Built-In Roles"
#       url: https://www.mongodb.com/docs/manual/reference/built-in-roles/
#     - title: "MongoDB manual: Query for and Modify Valid or Invalid Documents"
#       url: https://www.mongodb.com/docs/manual/core/schema-validation/use-json-schema-query-conditions/
# ---

# %% [markdown]
# # 07 · Enforce the shape with schema validation
#
# **You will learn**
# - to add `$jsonSchema` rules to an existing collection with `collMod` (the source's eight-role rule);
# - to read a validation failure's `errInfo`;
# - the difference between `strict` and `moderate` levels and between `error` and `warn` actions;
# - to find existing documents that break the rules and migrate them, without bypassing validation and
#   without losing data.
#
# **Time:** about 25 minutes.
#
# **Flexible schema is not no schema.** MongoDB does not make the documents of a collection share the same
# fields or types, so a new field needs no migration. That is not the absence of a schema: the application
# still expects a shape, and once that shape is settled, MongoDB's manual recommends validation rules so that
# no program, script or import can write a string where a date belongs
# ([schema validation](https://www.mongodb.com/docs/manual/core/schema-validation/)).

# %%
import pandas as pd
from pymongo.errors import WriteError

import labkit

db = labkit.fresh_db("07_validation")
labkit.seed.social(db, users=1000, seed=7)

# %% [markdown]
# ## The workload
#
# Many programs write `users`: the sign-up service, an admin tool, a nightly import. Application checks protect
# one of them; collection rules protect every write. The bound "at most eight roles" from lesson 01 becomes a
# rule the server enforces.

# %%
workload = pd.DataFrame(
    [
        ("sign up", "write (insert)", 20, "the sign-up service"),
        ("change a role", "write (update)", 2, "the admin tool"),
        ("nightly import", "write (insert/update)", 2000, "the import job, for ten minutes a night"),
        ("read a profile", "read", 3000, "everyone"),
    ],
    columns=["operation", "type", "per_second", "who writes"],
)
workload

# %% [markdown]
# The server checks the rules on inserts and updates only; reads never run them
# ([schema validation](https://www.mongodb.com/docs/manual/core/schema-validation/)).
#
# Some old documents predate the rules. Let's plant two, as an old import might have written them:

# %%
db.users.insert_many([
    {"_id": "user:legacy-1", "name": "Old Import", "roles": "admin"},
    {"_id": "user:legacy-2", "name": 42, "roles": []},
])

# %% [markdown]
# ## The rules
#
# The source's validator: string `_id` and `name`, and `roles` an array of at most eight `{title, canEdit}`
# objects, added to the existing collection with [`collMod`](https://www.mongodb.com/docs/manual/reference/command/collMod/).
# MongoDB's [`$jsonSchema`](https://www.mongodb.com/docs/manual/reference/operator/query/jsonSchema/) names types
# with `bsonType` (`"string"`, `"int"`, `"date"`, ...); JSON Schema's `integer` type and its `format` keyword
# are not supported.

# %%
users_schema = {
    "bsonType": "object",
    "required": ["_id", "name", "roles"],
    "properties": {
        "_id": {"bsonType": "string"},
        "name": {"bsonType": "string"},
        "roles": {
            "bsonType": "array",
            "maxItems": 8,
            "items": {
                "bsonType": "object",
                "required": ["title", "canEdit"],
                "properties": {"title": {"bsonType": "string"}, "canEdit": {"bsonType": "bool"}},
            },
        },
    },
}
db.command("collMod", "users", validator={"$jsonSchema": users_schema},
           validationLevel="strict", validationAction="error")
db.users.options()["validationLevel"], db.users.options()["validationAction"]

# %% [markdown]
# ## A rejected write, and why
#
# A ninth role is refused. The error's `errInfo` says which rule failed and on which property:

# %%
nine = [{"title": f"role-{i}", "canEdit": False} for i in range(9)]
try:
    db.users.insert_one({"_id": "user:nine", "name": "Nina", "roles": nine})
except WriteError as exc:
    print("code:", exc.code, "|", exc.details["errmsg"])
    details = exc.details["errInfo"]["details"]
details

# %%
try:
    db.users.update_one({"_id": "user:112"}, {"$set": {"roles.0.canEdit": "yes"}})
except WriteError as exc:
    print("updates are checked on the resulting document too:", exc.code)
db.users.find_one({"_id": "user:112"}, {"roles": 1})

# %% [markdown]
# ## Existing documents: strict or moderate
#
# Rules do not repair old data. Under `strict`, *any* update to a legacy document must produce a valid
# document; under `moderate`, updates to documents that were already invalid are not checked
# ([validation levels](https://www.mongodb.com/docs/manual/core/schema-validation/specify-validation-level/)).

# %%
def touch_legacy():
    try:
        db.users.update_one({"_id": "user:legacy-1"}, {"$set": {"lastSeen": "2026-10-08"}})
        return "accepted"
    except WriteError as exc:
        return f"rejected ({exc.code})"


levels = {}
for level in ("strict", "moderate"):
    db.command("collMod", "users", validationLevel=level)
    levels[level] = touch_legacy()
db.command("collMod", "users", validationLevel="strict")
levels

# %% [markdown]
# ## `warn` instead of `error`
#
# With `validationAction: "warn"` the server accepts an invalid write and records the violation in its log
# ([handle invalid documents](https://www.mongodb.com/docs/manual/core/schema-validation/handle-invalid-documents/)).
# It is a way to observe how much traffic would fail before switching rules on.

# %%
db.command("collMod", "users", validationAction="warn")
db.users.insert_one({"_id": "user:warned", "name": "Warned", "roles": nine})
print("stored despite 9 roles:", db.users.count_documents({"_id": "user:warned"}) == 1)
db.command("collMod", "users", validationAction="error")

# %% [markdown]
# `bypass_document_validation=True` skips the rules for one write: another way for invalid documents to get
# in, which the audit below finds too. The user needs the `bypassDocumentValidation`
# [privilege action](https://www.mongodb.com/docs/manual/reference/privilege-actions/), which the built-in
# `dbAdmin` and `restore` roles grant and `readWrite` does not
# ([built-in roles](https://www.mongodb.com/docs/manual/reference/built-in-roles/)). On a server where your user
# lacks it (an Atlas user with only "read and write to any database", say), the write is refused as
# Unauthorized ([error codes](https://www.mongodb.com/docs/manual/reference/error-codes/)) and nothing is
# stored; the rest of the lesson works either way. A migration does **not** need
# the privilege, as the next sections show.

# %%
from pymongo.errors import OperationFailure

try:
    db.users.insert_one({"_id": "user:bypass", "name": "Bypass", "roles": nine}, bypass_document_validation=True)
except OperationFailure as exc:
    print("refused:", exc.code, exc.details.get("codeName"), "(this user may not bypass validation)")
print("stored with bypass:", db.users.count_documents({"_id": "user:bypass"}) == 1)

# %% [markdown]
# ## Find the documents that break the rules
#
# `$jsonSchema` is also a query operator; `$nor` turns it into "documents that fail the schema"
# ([valid or invalid documents](https://www.mongodb.com/docs/manual/core/schema-validation/use-json-schema-query-conditions/)):

# %%
invalid = list(db.users.find({"$nor": [{"$jsonSchema": users_schema}]}, {"name": 1, "roles": 1}).sort("_id", 1))
pd.DataFrame(invalid)

# %% [markdown]
# ## Migrate them, under the strict rules
#
# **Predict first.** The rules are `strict`. Will an update that turns one of these invalid documents into a
# valid one be accepted *without* `bypass_document_validation`? Record True or False with
# `ex_strict.predict(...)`.

# %%
ex_strict = labkit.exercises.get("07-predict-strict-repair")
ex_strict

# %% tags=["solution"]
ex_strict.predict(True)

# %% [markdown]
# `strict` checks every update against the rules, and what it checks is the document the update **produces**
# ([validation levels](https://www.mongodb.com/docs/manual/core/schema-validation/specify-validation-level/)).
# A half repair that leaves the document invalid is refused:

# %%
try:
    db.users.update_one({"_id": "user:legacy-1"}, {"$set": {"name": "Old Import (migrated)"}})  # roles: a string
    half_repair = "accepted"
except WriteError as exc:
    half_repair = f"rejected ({exc.code})"
print("changing only the name of user:legacy-1, its roles still a string:", half_repair)

# %% [markdown]
# So the migration builds each document's whole repaired shape and writes it in one update: a lone role
# string becomes an assignment, a numeric name a string. Some documents hold **nine** roles; trimming to eight
# would silently drop a role someone was given. Instead the roles beyond the eighth are moved, visibly, to a
# `role_reviews` collection for an administrator to decide, and the count of roles before and after proves
# nothing was lost.

# %%
roles_before = sum(len(d["roles"]) if isinstance(d.get("roles"), list) else 1 for d in invalid if d.get("roles"))
accepted, rejected, moved = 0, [], []
for doc in invalid:
    roles = doc.get("roles")
    if isinstance(roles, str):
        roles = [{"title": roles, "canEdit": False}]
    roles = roles or []
    if len(roles) > 8:
        moved.append({"userId": doc["_id"], "roles": roles[8:], "reason": "more than 8 roles"})
    fixed = {"name": str(doc.get("name")), "roles": roles[:8]}
    try:
        db.users.update_one({"_id": doc["_id"]}, {"$set": fixed})  # no bypass: the result must be valid
        accepted += 1
    except WriteError as exc:
        rejected.append((doc["_id"], exc.code))
if moved:
    db.role_reviews.insert_many(moved)
kept = sum(len(db.users.find_one({"_id": d["_id"]})["roles"]) for d in invalid)
in_review = sum(len(r["roles"]) for r in db.role_reviews.find())
print(f"updates accepted without bypass: {accepted} of {len(invalid)}; rejected: {rejected}")
print(f"roles before: {roles_before}; kept on the users: {kept}; moved to role_reviews: {in_review}")
print("documents still failing:", db.users.count_documents({"$nor": [{"$jsonSchema": users_schema}]}))
repaired_without_bypass = accepted == len(invalid) and not rejected
pd.DataFrame(db.role_reviews.find({}, {"_id": 0}))

# %% tags=["reveal"]
ex_strict.check(repaired_without_bypass)

# %% [markdown]
# ## Explore: how strict can the bound be?
#
# Before tightening `maxItems`, count how many existing users would fail it. The slider starts at a bound of
# 4; move it to see where the users start to fit.

# %%
from labkit.widgets import explorer


def would_fail(max_roles):
    schema = {"properties": {"roles": {"bsonType": "array", "maxItems": max_roles}}}
    failing = db.users.count_documents({"$nor": [{"$jsonSchema": schema}]})
    return {"maxItems": max_roles, "users that would fail": failing,
            "share of users": f"{failing / db.users.count_documents({}):.1%}"}


bound = explorer(would_fail, sliders={"max_roles": (0, 8, 4)}, title="Tighten the role bound")
bound

# %% [markdown]
# ## Exercise
#
# Write `validator`: posts must have a string `authorId` that starts with `user:`, a string `title` of 1 to
# 200 characters, and a `createdAt` date. `ex.check(validator)` tries good and bad posts against it on a
# scratch collection.

# %%
ex = labkit.exercises.get("07-post-validator")
ex

# %% tags=["solution"]
validator = {"$jsonSchema": {
    "bsonType": "object",
    "required": ["authorId", "title", "createdAt"],
    "properties": {
        "authorId": {"bsonType": "string", "pattern": "^user:"},
        "title": {"bsonType": "string", "minLength": 1, "maxLength": 200},
        "createdAt": {"bsonType": "date"},
    },
}}
ex.check(validator)

# %% [markdown]
# ## Exercise: migrate the products
#
# A changed scenario: a `products` collection got strict rules (`sku` a string starting with `SKU-`, a
# non-empty string `name`, `tags` an array of at most five strings), and an old import left documents that
# break them. Write `migrate(db)`: repair every invalid product **without** `bypass_document_validation` and
# **without losing a tag**: a comma-separated string becomes a list (spaces stripped), tags beyond the fifth
# move, in order, to `moreTags`, a missing tag list becomes `[]`, an empty name becomes the sku. Leave valid
# products alone. `ex2.check(practice, migrate)` runs it on products of its own.

# %%
from labkit.exercises.relationships import PRODUCTS_SCHEMA, legacy_products

practice = labkit.fresh_db("07_practice")
practice.products.insert_many(legacy_products())
practice.command("collMod", "products", validator={"$jsonSchema": PRODUCTS_SCHEMA}, validationLevel="strict")
pd.DataFrame(practice.products.find({"$nor": [{"$jsonSchema": PRODUCTS_SCHEMA}]}))

# %%
ex2 = labkit.exercises.get("07-migrate-products")
ex2

# %% tags=["solution"]
def migrate(db):
    schema = db.products.options()["validator"]["$jsonSchema"]
    for doc in db.products.find({"$nor": [{"$jsonSchema": schema}]}):
        tags = doc.get("tags") or []
        if isinstance(tags, str):
            tags = [t.strip() for t in tags.split(",") if t.strip()]
        fix = {"tags": tags[:5], "name": doc.get("name") or doc["sku"]}
        if tags[5:]:
            fix["moreTags"] = tags[5:]
        db.products.update_one({"_id": doc["_id"]}, {"$set": fix})


ex2.check(practice, migrate)

# %% [markdown]
# ## Summary
#
# - `collMod` adds rules to an existing collection; `$jsonSchema` speaks BSON types (`bsonType`).
# - A failing write raises code 121 with `errInfo` naming the rule and property; updates are checked on the result.
# - `moderate` tolerates legacy documents, `warn` only logs; audit with `$nor` + `$jsonSchema`, then migrate.
# - A migration needs no bypass: under `strict` an update whose result is valid passes, and one that is not
#   is refused, which catches a broken migration. Never let a bound silently drop data: move the overflow
#   somewhere visible and count it.
#
# **Next:** 08 · capstone: a real-world profile page.

# %% [markdown] tags=["sources"]
# ## Sources
#
# 1. [MongoDB manual: Schema Validation](https://www.mongodb.com/docs/manual/core/schema-validation/)
# 2. [MongoDB manual: \$jsonSchema](https://www.mongodb.com/docs/manual/reference/operator/query/jsonSchema/)
# 3. [MongoDB manual: collMod](https://www.mongodb.com/docs/manual/reference/command/collMod/)
# 4. [MongoDB manual: Specify Validation Level for Existing Documents](https://www.mongodb.com/docs/manual/core/schema-validation/specify-validation-level/)
# 5. [MongoDB manual: Choose How to Handle Invalid Documents](https://www.mongodb.com/docs/manual/core/schema-validation/handle-invalid-documents/)
# 6. [MongoDB manual: Privilege Actions (bypassDocumentValidation)](https://www.mongodb.com/docs/manual/reference/privilege-actions/)
# 7. [MongoDB manual: Error Codes](https://www.mongodb.com/docs/manual/reference/error-codes/)
# 8. [MongoDB manual: Built-In Roles](https://www.mongodb.com/docs/manual/reference/built-in-roles/)
# 9. [MongoDB manual: Query for and Modify Valid or Invalid Documents](https://www.mongodb.com/docs/manual/core/schema-validation/use-json-schema-query-conditions/)

# %% [markdown] tags=["navigation"]
# [← 06 · Denormalization: copies, caches and snapshots](06_denormalization.ipynb) · [Contents](../CONTENTS.md) · [08 · Capstone: a real-world profile page →](08_capstone_profile.ipynb)
