# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
#   labkit:
#     minutes: 25
#     title: "Enforce the shape with schema validation"
#     section: Relationships
#     exercise_minutes: 5
#     demo: >-
#       Apply the 8-role validator with collMod, insert nine roles and read errInfo; switch strict/moderate on a legacy document; audit with $nor + $jsonSchema.
#     mistakes:
#     - "Using type: 'integer' or JSON Schema's format: MongoDB's dialect wants bsonType and rejects those keywords."
#     - "Expecting collMod to fix existing documents."
#     - "Forgetting that updates are validated on the resulting document."
# ---

# %% [markdown]
# # 07 · Enforce the shape with schema validation
#
# **You will learn**
# - to add `$jsonSchema` rules to an existing collection with `collMod` (the source's eight-role rule);
# - to read a validation failure's `errInfo`;
# - the difference between `strict` and `moderate` levels and between `error` and `warn` actions;
# - to find existing documents that break the rules and migrate them.
#
# **Time:** about 25 minutes.

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
# objects.

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
# document; under `moderate`, updates to documents that were already invalid are let through.

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
# With `validationAction: "warn"` the server accepts an invalid write and writes a warning to its log. It is a
# way to observe how much traffic would fail before switching rules on.

# %%
db.command("collMod", "users", validationAction="warn")
db.users.insert_one({"_id": "user:warned", "name": "Warned", "roles": nine})
print("stored despite 9 roles:", db.users.count_documents({"_id": "user:warned"}) == 1)
db.command("collMod", "users", validationAction="error")

# %% [markdown]
# A trusted migration can also skip the rules for one write with `bypass_document_validation=True`:

# %%
db.users.insert_one({"_id": "user:bypass", "name": "Bypass", "roles": nine}, bypass_document_validation=True)
print("stored with bypass:", db.users.count_documents({"_id": "user:bypass"}) == 1)

# %% [markdown]
# ## Find the documents that break the rules
#
# `$jsonSchema` is also a query operator; `$nor` turns it into "documents that fail the schema":

# %%
invalid = list(db.users.find({"$nor": [{"$jsonSchema": users_schema}]}, {"name": 1, "roles": 1}).sort("_id", 1))
pd.DataFrame(invalid)

# %% [markdown]
# Migrate them: wrap a lone role string into an assignment, turn a numeric name into a string, and trim
# role lists to eight (here with `bypass_document_validation` so each step may pass through invalid states).

# %%
for doc in invalid:
    roles = doc.get("roles")
    if isinstance(roles, str):
        roles = [{"title": roles, "canEdit": False}]
    fixed = {"name": str(doc.get("name")), "roles": (roles or [])[:8]}
    db.users.update_one({"_id": doc["_id"]}, {"$set": fixed}, bypass_document_validation=True)
print("documents still failing:", db.users.count_documents({"$nor": [{"$jsonSchema": users_schema}]}))

# %% [markdown]
# ## Explore: how strict can the bound be?
#
# Before tightening `maxItems`, count how many existing users would fail it.

# %%
from labkit.widgets import explorer


def would_fail(max_roles):
    schema = {"properties": {"roles": {"bsonType": "array", "maxItems": max_roles}}}
    failing = db.users.count_documents({"$nor": [{"$jsonSchema": schema}]})
    return {"maxItems": max_roles, "users that would fail": failing,
            "share of users": f"{failing / db.users.count_documents({}):.1%}"}


bound = explorer(would_fail, sliders={"max_roles": (0, 8, 8)}, title="Tighten the role bound")
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
# ## Summary
#
# - `collMod` adds rules to an existing collection; `$jsonSchema` speaks BSON types (`bsonType`).
# - A failing write raises code 121 with `errInfo` naming the rule and property; updates are checked on the result.
# - `moderate` tolerates legacy documents, `warn` only logs; audit with `$nor` + `$jsonSchema`, then migrate.
#
# **Next:** 08 · capstone: a real-world profile page.

# %% [markdown] tags=["navigation"]
# [← 06 · Denormalization: copies, caches and snapshots](06_denormalization.ipynb) · [Contents](../CONTENTS.md) · [08 · Capstone: a real-world profile page →](08_capstone_profile.ipynb)
