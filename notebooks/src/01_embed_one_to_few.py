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
#     title: "Embed one-to-few: roles inside the user"
#     section: Relationships
#     exercise_minutes: 15
#     demo: >-
#       Run the naive two-collection plans, then the single embedded read; create the roles.title index live and point at isMultiKey; move the roles slider past 8.
#     mistakes:
#     - "Using roles.0.canEdit when the role's position is not known; the positional $ with a filter on roles.title finds the right element."
#     - "Two update_one calls (one for the role, one for updatedAt) instead of one write with $push and $set."
#     - "Embedding a shared, centrally managed role definition in every user."
#     - "Reading the order, computing the new total in Python and writing it back with $set: two calls at once lose one line's amount."
#     - "Filtering only on roles.title without the user's _id: the update changes the first user holding that role, not the one asked for."
#     - "Adding a float amount to the Decimal128 total, or storing the line's price as a float: the total stops being exact."
#     sources:
#     - title: "MongoDB manual: Embedded Data Versus References"
#       url: https://www.mongodb.com/docs/manual/data-modeling/concepts/embedding-vs-references/
#     - title: "MongoDB manual: Model One-to-One Relationships with Embedded Documents"
#       url: https://www.mongodb.com/docs/manual/tutorial/model-embedded-one-to-one-relationships-between-documents/
#     - title: "MongoDB manual: Explain Results"
#       url: https://www.mongodb.com/docs/manual/reference/explain-results/
#     - title: "mongodb/mongo jstests/core/index/express.js (the 8.0 express path)"
#       url: https://github.com/mongodb/mongo/blob/v8.0/jstests/core/index/express.js
#     - title: "MongoDB manual: Query an Array of Embedded Documents"
#       url: https://www.mongodb.com/docs/manual/tutorial/query-array-of-documents/
#     - title: "MongoDB manual: Multikey Indexes"
#       url: https://www.mongodb.com/docs/manual/core/indexes/index-types/index-multikey/
#     - title: "MongoDB manual: Atomicity and Transactions"
#       url: https://www.mongodb.com/docs/manual/core/write-operations-atomicity/
#     - title: "MongoDB manual: $ (positional update operator)"
#       url: https://www.mongodb.com/docs/manual/reference/operator/update/positional/
#     - title: "MongoDB manual: Model Monetary Data"
#       url: https://www.mongodb.com/docs/manual/tutorial/model-monetary-data/
#     - title: "MongoDB manual: $inc"
#       url: https://www.mongodb.com/docs/manual/reference/operator/update/inc/
# ---

# %% [markdown]
# # 01 · Embed one-to-few: roles inside the user
#
# **You will learn**
# - to embed a small, bounded list (a user's role assignments) in the document that owns it;
# - that embedded fields stay queryable with dot notation, and can be indexed;
# - to change an embedded value and a timestamp in **one atomic write**;
# - when a shared role definition should be *referenced* instead of copied.
#
# **Time:** about 25 minutes.

# %% [markdown]
# ## Setup

# %%
import datetime as dt

import bson
import pandas as pd

import labkit

db = labkit.fresh_db("01_embed_one_to_few")
print("engine:", labkit.describe(db.client))

# %% [markdown]
# ## The workload
#
# Our application lets a user hold **at most eight** role assignments, and shows them with the account on every
# request. The rates are illustrative; their order of magnitude is what matters.

# %%
workload = labkit.workload_table([
    ("Load the signed-in account with its roles", "read", 500, "name, email, every role assignment"),
    ("Change one permission of a user's role", "write", 0.01, "permission and updatedAt change together"),
    ("List the users holding a role", "read", 0.05, "admins page for support staff"),
], rate="per_second")
workload

# %% [markdown]
# ## The naive design: one collection per table
#
# Coming from SQL, it is tempting to keep assignments in their own collection with a `userId` column.
# Every account load then needs **two queries**, and changing a permission plus `updatedAt` means **two writes
# to two documents**, which are not atomic together.

# %%
canonical = labkit.seed.load_canonical()
sam, fred = canonical["users"]

db.accounts.insert_many([{k: v for k, v in u.items() if k != "roles"} for u in (sam, fred)])
db.role_assignments.insert_many(
    [{"_id": f"{u['_id']}:{i}", "userId": u["_id"], **role} for u in (sam, fred) for i, role in enumerate(u["roles"])]
)
db.role_assignments.create_index({"userId": 1})
print(db.accounts.count_documents({}), "accounts,", db.role_assignments.count_documents({}), "assignments")

# %% [markdown]
# Loading Sam's account is one query for the account and one for the assignments. Each is a round trip; the
# plan summaries show what each one read.

# %%
account = db.accounts.find_one({"_id": "user:112"})
assignments = list(db.role_assignments.find({"userId": "user:112"}, {"_id": 0, "title": 1, "canEdit": 1}))
naive_plans = pd.concat([
    labkit.show_plan(db.accounts.find({"_id": "user:112"}).explain()),
    labkit.show_plan(db.role_assignments.find({"userId": "user:112"}).explain()),
])
naive_plans

# %% [markdown]
# How to read these plan summaries (the columns come from `explain("executionStats")`,
# [explain results](https://www.mongodb.com/docs/manual/reference/explain-results/)):
#
# - `keysExamined`, `docsExamined`, `nReturned`: index entries read, documents read, documents returned;
# - `FETCH > IXSCAN`: the server walks the `userId_1` index (IXSCAN) and fetches each matching document (FETCH);
# - `EXPRESS_IXSCAN`: MongoDB 8.0's **express path**. For an equality on `_id`, and for an equality on one
#   indexed field when at most one document is wanted (a `limit(1)`, or a single-field unique index), the server
#   skips query planning and reads the index key and the document directly (before 8.0 an `_id` lookup
#   showed `IDHACK`, and the others were planned like any query, with an `IXSCAN`). Its explain names only the
#   index, with no bounds
#   ([explain results](https://www.mongodb.com/docs/manual/reference/explain-results/), which lists the
#   EXPRESS stages as new in 8.0; the server's test of which queries take it:
#   [express.js](https://github.com/mongodb/mongo/blob/v8.0/jstests/core/index/express.js)). Later lessons
#   refer back to this paragraph.

# %% [markdown]
# ## The better design: embed the assignments
#
# The assignments belong to the user, are bounded (eight at most) and are read with the account: the case the
# manual gives for embedding ([embedded data versus references](https://www.mongodb.com/docs/manual/data-modeling/concepts/embedding-vs-references/)).
# Embedded, the same page needs a single document read.

# %%
db.users.insert_many([sam, fred])
doc = db.users.find_one({"_id": "user:112"})
print(f"one query, {len(doc['roles'])} roles, {len(bson.encode(doc))} bytes")
labkit.show_plan(db.users.find({"_id": "user:112"}).explain())

# %% [markdown]
# ### One-to-one: a subdocument
#
# Roles are one-to-few, so they are an array. A **one-to-one** relationship, such as a user and their
# notification settings, embeds as a single subdocument: in SQL it would be a `user_settings` table with a
# `user_id` column and a join on every page that shows both
# ([manual: one-to-one with embedded documents](https://www.mongodb.com/docs/manual/tutorial/model-embedded-one-to-one-relationships-between-documents/)).

# %%
db.users.update_one({"_id": "user:112"},
                    {"$set": {"notifications": {"email": True, "push": False, "digest": "weekly"}}})
db.users.update_one({"_id": "user:112"}, {"$set": {"notifications.push": True}})  # one field, by dot notation
print(db.users.find_one({"_id": "user:112"}, {"name": 1, "notifications": 1}))
labkit.show_plan(db.users.find({"_id": "user:112"}, {"name": 1, "notifications": 1}).explain())

# %% [markdown]
# The account and its settings still come back in one read of one document, and one field changes without
# rewriting the others from the client. Split a one-to-one only when the other side is large and rarely read
# with the parent (lesson 33 measures such bloated documents).

# %% [markdown]
# ### Embedded does not mean hidden
#
# Dot notation reaches into the array
# ([query an array of embedded documents](https://www.mongodb.com/docs/manual/tutorial/query-array-of-documents/)).
# Which users hold an `admin` assignment?

# %%
list(db.users.find({"roles.title": "admin"}, {"name": 1, "roles": 1}))

# %% [markdown]
# Without an index the server answers that query with a **collection scan** (`COLLSCAN`): it reads every
# user. An index on `roles.title` is a **multikey** index: the server adds one index key for each element of
# the array ([multikey indexes](https://www.mongodb.com/docs/manual/core/indexes/index-types/index-multikey/)).
# Let's load a few thousand generated users to make the difference visible.

# %%
many = labkit.fresh_db("01_embed_users")
summary = labkit.seed.social(many, users=3000, seed=1, indexes=False)
summary

# %%
before = labkit.show_plan(many.users.find({"roles.title": "admin"}).explain())
many.users.create_index({"roles.title": 1})
after = labkit.show_plan(many.users.find({"roles.title": "admin"}).explain())
pd.concat([before, after], keys=["no index", "roles.title index"])

# %%
info = many.users.find({"roles.title": "admin"}).explain()["queryPlanner"]["winningPlan"]
while "inputStage" in info and info.get("stage") != "IXSCAN":
    info = info["inputStage"]
print("isMultiKey:", info.get("isMultiKey"), "| multiKeyPaths:", info.get("multiKeyPaths"))

# %% [markdown]
# ## One atomic write for a permission and its timestamp
#
# Sam's `admin` assignment loses edit rights. Both the permission and `updatedAt` live in the same document,
# so one `update_one` changes both, and no reader can ever see one change without the other: a write to one
# document is atomic, embedded fields included
# ([atomicity](https://www.mongodb.com/docs/manual/core/write-operations-atomicity/)). The positional operator
# `$` stands for the first element of the array that matched the query filter
# ([positional `$`](https://www.mongodb.com/docs/manual/reference/operator/update/positional/)); the filter
# names the user (`_id`) *and* the role, so it is Sam's `admin` entry, wherever it sits. (The source material
# writes `roles.0.canEdit`, which is right only while `admin` is the first entry of the array.)

# %%
result = db.users.update_one(
    {"_id": "user:112", "roles.title": "admin"},
    {"$set": {"roles.$.canEdit": False, "updatedAt": dt.datetime(2026, 10, 5, 9, 30)}},
)
print("documents matched:", result.matched_count, "| modified:", result.modified_count)
db.users.find_one({"_id": "user:112"}, {"roles": 1, "updatedAt": 1})

# %% [markdown]
# In the naive design the same change is two writes, to `role_assignments` and to `accounts`; a crash between
# them leaves the permission changed but the timestamp stale (lesson 05 shows such failures and their repairs).

# %% [markdown]
# ## Explore: roles per user and document size
#
# Eight assignments are tiny. The slider also goes far past the application's bound, to show what happens if
# the "few" stops being few: the document, and so every rewrite of it, keeps growing.

# %%
from labkit.plots import bars_against_limit
from labkit.widgets import explorer


no_roles = len(bson.encode(dict(sam, roles=[])))


def user_with_roles(roles):
    user = dict(sam, roles=[{"title": f"role-{i}", "canEdit": i % 2 == 0} for i in range(roles)])
    size = len(bson.encode(user))
    return {"roles": roles, "user document bytes": size,
            "bytes per role": round((size - no_roles) / max(roles, 1), 1), "within the 8-role bound": roles <= 8}


roles_explorer = explorer(user_with_roles, sliders={"roles": (0, 2000, 8, 8)}, title="Roles per user",
                          draw=lambda ax, v, r: bars_against_limit(ax, ["user"], [r["user document bytes"]], unit="KiB"))
roles_explorer

# %% [markdown]
# ## When to reference instead
#
# Embedding copies a role's *permissions* into every user who holds it. That is right for user-owned
# assignments. If "admin" were a shared, centrally managed definition, changing it would mean rewriting every
# copy. Suppose the company decides that admins may no longer edit. Count how many documents that change
# touches in the generated users.
#
# **Predict first.** How many user documents will the embedded change rewrite? (The indexed plan above shows
# how many users the `admin` query returns.)

# %%
ex_policy = labkit.exercises.get("01-predict-policy-rewrites")
ex_policy

# %% tags=["solution"]
ex_policy.predict(663)

# %% tags=["reveal"]
copies = many.users.count_documents({"roles.title": "admin"})
res = many.users.update_many({"roles.title": "admin"}, {"$set": {"roles.$.canEdit": False}})
print(f"embedded copies rewritten: {res.modified_count} of {copies} users holding 'admin'")

# %% tags=["reveal"]
ex_policy.check(res.modified_count)

# %% [markdown]
# The referenced alternative keeps one `roles` document per definition; users hold only the role's name.
# The same policy change is then one write:

# %%
many.roles.insert_many([{"_id": "admin", "canEdit": True}, {"_id": "editor", "canEdit": True},
                        {"_id": "viewer", "canEdit": False}])
ref_cost = labkit.ledger.measure(many, lambda d: d.roles.update_one({"_id": "admin"}, {"$set": {"canEdit": False}}))
print(f"documents rewritten by the referenced change: {ref_cost.docs_written} "
      f"(in {ref_cost.round_trips} round trip); users holding 'admin': {copies}")

# %% [markdown]
# ## Exercise 1: one write, on any user
#
# Write `give_role(db, user_id, title, can_edit, when)`: it adds an embedded role to the user and sets the
# user's `updatedAt` to `when`, in **one** write. `ex.check(db, give_role)` runs your function on users of
# its own (not Fred) and watches the commands it sends, so a second write or a rewrite of the whole document
# shows up.

# %%
ex = labkit.exercises.get("01-embed-atomic")
ex

# %% tags=["solution"]
def give_role(db, user_id, title, can_edit, when):
    db.users.update_one({"_id": user_id},
                        {"$push": {"roles": {"title": title, "canEdit": can_edit}}, "$set": {"updatedAt": when}})


ex.check(db, give_role)

# %% [markdown]
# ## Exercise 2: change a role whose position you do not know
#
# Write `set_can_edit(db, user_id, title, can_edit)`: it sets `canEdit` on the user's role with that title.
# Users hold their roles in different orders, so the function cannot know where the role sits.

# %%
ex2 = labkit.exercises.get("01-positional-role")
ex2

# %% tags=["solution"]
def set_can_edit(db, user_id, title, can_edit):
    db.users.update_one({"_id": user_id, "roles.title": title}, {"$set": {"roles.$.canEdit": can_edit}})


ex2.check(db, set_can_edit)

# %% [markdown]
# ## Money: `Decimal128`, not floating point
#
# The next exercise keeps an order's total. A Python `float` is a binary floating-point number (a BSON
# `double`), which cannot hold most decimal fractions exactly, so sums of prices drift; MongoDB's manual
# recommends the `Decimal128` type (exact decimal arithmetic, also for `$inc` on the server) or whole cents in
# an integer ([model monetary data](https://www.mongodb.com/docs/manual/tutorial/model-monetary-data/)). Ten
# payments of 0.10, added by the server with [`$inc`](https://www.mongodb.com/docs/manual/reference/operator/update/inc/):

# %%
from bson.decimal128 import Decimal128

db.wallets.insert_one({"_id": "wallet", "as_double": 0.0, "as_decimal": Decimal128("0.00")})
for _ in range(10):
    db.wallets.update_one({"_id": "wallet"}, {"$inc": {"as_double": 0.10, "as_decimal": Decimal128("0.10")}})
wallet = db.wallets.find_one({"_id": "wallet"})
print("double: ", repr(wallet["as_double"]), "| equal to 1.0:", db.wallets.count_documents({"as_double": 1.0}))
print("Decimal128:", wallet["as_decimal"], "| equal to 1.00:",
      db.wallets.count_documents({"as_decimal": Decimal128("1.00")}))

# %% [markdown]
# ## Exercise 3: another one-to-few, another write
#
# A shop's order holds its lines (a few dozen at most, always shown with the order) and keeps `itemCount` and
# `total` up to date. Prices and totals are `Decimal128`, as above. Write `add_line(db, order_id, sku, qty,
# price)`: it appends the line `{sku, qty, price}` to the order's `lines` and raises `itemCount` by `qty` and
# `total` by `qty * price`, exactly, in **one** write (a `Decimal128` does no arithmetic in Python: its
# `.to_decimal()` does). The checker runs it on orders of its own, then runs two calls on the same order at
# once (the second right after the first one has read the order, if it reads), and looks at both lines and the
# total.

# %%
ex3 = labkit.exercises.get("01-order-lines")
ex3

# %% tags=["solution"]
def add_line(db, order_id, sku, qty, price):
    db.orders.update_one({"_id": order_id},
                         {"$push": {"lines": {"sku": sku, "qty": qty, "price": price}},
                          "$inc": {"itemCount": qty, "total": Decimal128(price.to_decimal() * qty)}})


ex3.check(db, add_line)

# %% [markdown]
# ## Summary
#
# - Embed data that is bounded, owned by the parent and read with it: one read, one atomic write.
# - A one-to-one relationship is a subdocument; a one-to-few, an array of subdocuments.
# - Dot notation queries and multikey indexes work on embedded arrays.
# - Money is `Decimal128` (or whole cents), never a binary float.
# - Reference a definition that is shared and changed centrally, instead of copying it into every owner.
# - "Few" must be a real bound: enforce it (lesson 07 adds a validator with `maxItems: 8`).
#
# **Next:** 02 · One-to-many, where the children have no useful bound.

# %% [markdown] tags=["sources"]
# ## Sources
#
# 1. [MongoDB manual: Embedded Data Versus References](https://www.mongodb.com/docs/manual/data-modeling/concepts/embedding-vs-references/)
# 2. [MongoDB manual: Model One-to-One Relationships with Embedded Documents](https://www.mongodb.com/docs/manual/tutorial/model-embedded-one-to-one-relationships-between-documents/)
# 3. [MongoDB manual: Explain Results](https://www.mongodb.com/docs/manual/reference/explain-results/)
# 4. [mongodb/mongo jstests/core/index/express.js (the 8.0 express path)](https://github.com/mongodb/mongo/blob/v8.0/jstests/core/index/express.js)
# 5. [MongoDB manual: Query an Array of Embedded Documents](https://www.mongodb.com/docs/manual/tutorial/query-array-of-documents/)
# 6. [MongoDB manual: Multikey Indexes](https://www.mongodb.com/docs/manual/core/indexes/index-types/index-multikey/)
# 7. [MongoDB manual: Atomicity and Transactions](https://www.mongodb.com/docs/manual/core/write-operations-atomicity/)
# 8. [MongoDB manual: \$ (positional update operator)](https://www.mongodb.com/docs/manual/reference/operator/update/positional/)
# 9. [MongoDB manual: Model Monetary Data](https://www.mongodb.com/docs/manual/tutorial/model-monetary-data/)
# 10. [MongoDB manual: \$inc](https://www.mongodb.com/docs/manual/reference/operator/update/inc/)

# %% [markdown] tags=["navigation"]
# [← 00 · Start here](00_start_here.ipynb) · [Contents](../CONTENTS.md) · [02 · One-to-many: reference the parent from the child →](02_one_to_many.ipynb)
