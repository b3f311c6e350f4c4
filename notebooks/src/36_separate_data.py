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
#     title: "Anti-pattern: separating data that is accessed together"
#     section: Anti-patterns
#     demo: "Count the four round trips of the request context, migrate with one aggregation, count again."
#     mistakes: ["One collection per table, carried over from a relational schema", "Using a transaction to keep split one-to-one data consistent", "Dropping the old collections before reads have switched", "Embedding whole side documents (their _id and foreign key included) instead of the fields the page needs"]
#     sources:
#     - title: "MongoDB manual: Model One-to-One Relationships with Embedded Documents"
#       url: https://www.mongodb.com/docs/manual/tutorial/model-embedded-one-to-one-relationships-between-documents/
#     - title: "MongoDB manual: Model One-to-Many Relationships with Embedded Documents"
#       url: https://www.mongodb.com/docs/manual/tutorial/model-embedded-one-to-many-relationships-between-documents/
#     - title: "MongoDB manual: $lookup (aggregation stage)"
#       url: https://www.mongodb.com/docs/manual/reference/operator/aggregation/lookup/
#     - title: "MongoDB manual: $merge (aggregation stage)"
#       url: https://www.mongodb.com/docs/manual/reference/operator/aggregation/merge/
#     - title: "MongoDB manual: Transactions"
#       url: https://www.mongodb.com/docs/manual/core/transactions/
#     - title: "MongoDB manual: Atomicity and Transactions"
#       url: https://www.mongodb.com/docs/manual/core/write-operations-atomicity/
# ---

# %% [markdown]
# # 36 · Anti-pattern: separating data that is accessed together
#
# **You will learn**
# - to recognise the relational habit: `users`, `user_profiles`, `user_addresses`, `user_settings`, all loaded
#   on every request;
# - to detect it in application code: the same key fetched from several collections, every time;
# - to embed one-to-one and one-to-few data into the parent, migrating with an aggregation (`$lookup` ...
#   `$merge`), then switch reads, then drop;
# - what it saves: round trips, documents examined, and the transaction a split change needs (observed, not
#   assumed).
#
# **Time:** about 25 minutes.

# %%
import datetime as dt

import pandas as pd

import labkit
from labkit.faults import SimulatedCrash, checkpoint, crash_at

db = labkit.fresh_db("36_separate_data")
print("engine:", labkit.describe(db.client))

# %% [markdown]
# 2,000 users in four collections, generated deterministically: every user has one profile, one settings
# document and one to three addresses.

# %%
CITIES = ["Lisbon", "Osaka", "Denver", "Tallinn", "Accra", "Perth"]
N = 2000
db.users.insert_many([{"_id": f"user:{u:04d}", "email": f"user{u}@example.com",
                       "createdAt": dt.datetime(2025, 1, 1) + dt.timedelta(hours=7 * u)} for u in range(N)])
db.user_profiles.insert_many([{"_id": f"profile:{u:04d}", "userId": f"user:{u:04d}", "displayName": f"User {u}",
                               "bio": "Coffee, maps and long walks."} for u in range(N)])
db.user_addresses.insert_many([{"_id": f"addr:{u:04d}:{k}", "userId": f"user:{u:04d}", "label": ["home", "work", "other"][k],
                                "city": CITIES[(u + k) % 6]} for u in range(N) for k in range(1 + u % 3)])
db.user_settings.insert_many([{"_id": f"settings:{u:04d}", "userId": f"user:{u:04d}", "theme": ["light", "dark"][u % 2],
                               "newsletter": u % 5 == 0} for u in range(N)])
for name in ("user_profiles", "user_addresses", "user_settings"):
    db[name].create_index([("userId", 1)])
{name: db[name].count_documents({}) for name in sorted(db.list_collection_names())}

# %% [markdown]
# ## The workload
#
# What the application does, how often, and what each operation needs:

# %%
labkit.workload_table([
    ('load the request context (every page)', 'read', '1,500/s', 'user, profile, addresses, settings'),
    ('change display name and theme together', 'write', '3/s', 'profile and settings, atomically'),
    ('add an address', 'write', 'rare', 'at most three per user'),
])

# %% [markdown]
# ## Detect: the same key, four collections, every time
#
# The application's request handler looks like this. `labkit.ledger.measure` runs it once and counts the
# commands it sends (each one a round trip) and, through their `explain()`, the documents they examine.

# %%
def show(doc):
    """A document with `_id` first and the other fields in alphabetical order (stable output)."""
    return {"_id": doc["_id"], **{k: doc[k] for k in sorted(doc) if k != "_id"}}


class Trips:
    """Round trips and documents examined of one call of a request handler, measured while it runs."""

    def __init__(self, handler, user_id):
        out = {}
        cost = labkit.ledger.measure(db, lambda d: out.update(result=handler(d, user_id)))
        self.trips, self.docs, self.result = cost.round_trips, cost.docs_examined, out["result"]


def load_context_split(d, user_id):
    user = d.users.find_one({"_id": user_id})
    user["profile"] = d.user_profiles.find_one({"userId": user_id})
    user["addresses"] = list(d.user_addresses.find({"userId": user_id}))
    user["settings"] = d.user_settings.find_one({"userId": user_id})
    return user


# %% [markdown]
# **Predict.** How many round trips does one call of `load_context_split` send to the server? Record your
# number with `predict_trips.predict(...)` (for example `predict_trips.predict(7)`), then run the measuring cell.

# %%
predict_trips = labkit.exercises.get("36-predict-round-trips")
predict_trips

# %% tags=["solution"]
predict_trips.predict(4)

# %% tags=["reveal"]
t_split = Trips(load_context_split, "user:0044")
ctx = t_split.result
print(f"round trips: {t_split.trips}, documents examined: {t_split.docs}, addresses: {len(ctx['addresses'])}")

# %% tags=["reveal"]
predict_trips.check(t_split.trips)

# %% [markdown]
# A function that always fetches the same set of documents by the same key is describing **one** document.
# The pipeline version does the same work on the server, with three `$lookup` stages, on every request
# ([manual: `$lookup`](https://www.mongodb.com/docs/manual/reference/operator/aggregation/lookup/)):

# %%
context_pipeline = [
    {"$match": {"_id": "user:0044"}},
    {"$lookup": {"from": "user_profiles", "localField": "_id", "foreignField": "userId", "as": "profile"}},
    {"$lookup": {"from": "user_addresses", "localField": "_id", "foreignField": "userId", "as": "addresses"}},
    {"$lookup": {"from": "user_settings", "localField": "_id", "foreignField": "userId", "as": "settings"}},
]
joined = next(db.users.aggregate(context_pipeline))
print({k: len(v) if isinstance(v, list) else v for k, v in joined.items()})

# %% [markdown]
# And a change to display name and theme touches two collections. Is it all-or-nothing? Watch what a crash
# between the two writes leaves behind: `labkit.faults.crash_at` makes the process "die" at the point the code
# marks with `checkpoint` (an ordinary exception, so it works the same on a server). User 1999 starts with the
# display name "User 1999" and the dark theme:

# %%
def change_split(d, user_id, name, theme, session=None):
    d.user_profiles.update_one({"userId": user_id}, {"$set": {"displayName": name}}, session=session)
    checkpoint("between the two writes")
    d.user_settings.update_one({"userId": user_id}, {"$set": {"theme": theme}}, session=session)


def name_and_theme(d, user_id):
    return (d.user_profiles.find_one({"userId": user_id})["displayName"],
            d.user_settings.find_one({"userId": user_id})["theme"])


with crash_at("between the two writes"):
    try:
        change_split(db, "user:1999", "Ana B.", "light")
    except SimulatedCrash:
        pass
half_done = name_and_theme(db, "user:1999")
print("after the crash, user:1999 has display name %r and theme %r" % half_done)

# %% [markdown]
# Half a change: the new name with the old theme. To make the pair all-or-nothing, the split design needs a
# multi-document transaction ([manual: transactions](https://www.mongodb.com/docs/manual/core/transactions/)),
# which needs a replica set or a sharded cluster (every Atlas cluster is one of the two; a standalone `mongod`
# refuses transactions). The
# same crash inside one, on user 1998 (display name "User 1998", light theme):

# %%
def change_split_in_transaction(d, user_id, name, theme):
    with d.client.start_session() as session:
        session.with_transaction(lambda s: change_split(d, user_id, name, theme, session=s))


with crash_at("between the two writes"):
    try:
        change_split_in_transaction(db, "user:1998", "Bo C.", "dark")
    except SimulatedCrash:
        pass
print("after the crash in a transaction, user:1998 has display name %r and theme %r"
      % name_and_theme(db, "user:1998"))

# %% [markdown]
# The transaction was aborted, so neither write happened. The price is paid on every change: measured without a
# crash, the transaction sends the two updates and a `commitTransaction`, and the manual notes that in most
# cases a multi-document transaction costs more than single-document writes and is no replacement for an
# effective schema design ([manual: transactions](https://www.mongodb.com/docs/manual/core/transactions/)):

# %%
change_split_cost = labkit.ledger.measure(db, lambda d: change_split_in_transaction(d, "user:1998", "Bo C.", "dark"))
print(f"round trips: {change_split_cost.round_trips}, documents written: {change_split_cost.docs_written}")
print("user:1998 now: display name %r, theme %r" % name_and_theme(db, "user:1998"))

# %% [markdown]
# ## The fix: embed one-to-one and one-to-few
#
# Profile and settings are one-to-one: subdocuments
# ([manual: one-to-one](https://www.mongodb.com/docs/manual/tutorial/model-embedded-one-to-one-relationships-between-documents/)).
# Addresses are one-to-few (at most three): an array
# ([manual: one-to-many](https://www.mongodb.com/docs/manual/tutorial/model-embedded-one-to-many-relationships-between-documents/)).
# Only the fields the page needs are embedded: not the side documents' own `_id` or `userId`.
#
# Migration step 1 builds the new documents with one aggregation that ends in `$merge` back into `users`:
# each user document gains its embedded parts in place (`whenMatched: "merge"` keeps its existing fields,
# [manual: `$merge`](https://www.mongodb.com/docs/manual/reference/operator/aggregation/merge/)).

# %%
embed_stages = [
    {"$lookup": {"from": "user_profiles", "localField": "_id", "foreignField": "userId", "as": "p"}},
    {"$lookup": {"from": "user_addresses", "localField": "_id", "foreignField": "userId", "as": "a"}},
    {"$lookup": {"from": "user_settings", "localField": "_id", "foreignField": "userId", "as": "s"}},
    {"$project": {
        "profile": {"displayName": {"$first": "$p.displayName"}, "bio": {"$first": "$p.bio"}},
        "addresses": {"$map": {"input": "$a", "as": "x", "in": {"label": "$$x.label", "city": "$$x.city"}}},
        "settings": {"theme": {"$first": "$s.theme"}, "newsletter": {"$first": "$s.newsletter"}},
    }},
    {"$merge": {"into": "users", "on": "_id", "whenMatched": "merge", "whenNotMatched": "discard"}},
]
db.users.aggregate(embed_stages)
show(db.users.find_one({"_id": "user:0044"}))

# %% [markdown]
# Step 2: switch reads to the embedded document. Step 3: drop the old collections.

# %%
def load_context_embedded(d, user_id):
    return d.users.find_one({"_id": user_id})


t_embedded = Trips(load_context_embedded, "user:0044")
ctx2 = t_embedded.result
assert ctx2["profile"]["displayName"] == ctx["profile"]["displayName"] and len(ctx2["addresses"]) == len(ctx["addresses"])
for name in ("user_profiles", "user_addresses", "user_settings"):
    db.drop_collection(name)
sorted(db.list_collection_names())

# %% [markdown]
# The change of display name and theme is now one update of one document, atomic without a transaction
# ([manual: atomicity](https://www.mongodb.com/docs/manual/core/write-operations-atomicity/)): there is no point
# between two writes for a crash to fall into.

# %%
change_embedded_cost = labkit.ledger.measure(db, lambda d: d.users.update_one(
    {"_id": "user:0044"}, {"$set": {"profile.displayName": "Sam K.", "settings.theme": "dark"}}))
print(f"round trips: {change_embedded_cost.round_trips}, documents written: {change_embedded_cost.docs_written}")
show(db.users.find_one({"_id": "user:0044"}, {"profile.displayName": 1, "settings.theme": 1}))

# %% [markdown]
# ## Before and after
#
# Every row ran above, except the per-second row, which multiplies the round trips per request by the
# workload's 1,500 requests/s (an estimate, labelled so).

# %%
PER_SECOND = "round trips per second at 1,500 requests/s, estimated (per request x 1,500)"
compare = pd.DataFrame({
    "four collections": {"round trips per request": t_split.trips, "documents examined per request": t_split.docs,
                         PER_SECOND: t_split.trips * 1500,
                         "documents written to change name + theme": change_split_cost.docs_written,
                         "round trips to change name + theme, all-or-nothing": change_split_cost.round_trips,
                         "a crash between the writes left": "name %r, theme %r" % half_done},
    "embedded": {"round trips per request": t_embedded.trips, "documents examined per request": t_embedded.docs,
                 PER_SECOND: t_embedded.trips * 1500,
                 "documents written to change name + theme": change_embedded_cost.docs_written,
                 "round trips to change name + theme, all-or-nothing": change_embedded_cost.round_trips,
                 "a crash between the writes left": "no such point: one write"},
})
compare

# %%
labkit.plots.before_after(compare, PER_SECOND, PER_SECOND)

# %% [markdown]
# ## Explore: what the round trips cost
#
# The time a request spends waiting on the network grows with round trips × latency. Pick the latency between
# application and database and the request rate (the round-trip counts are the ones measured above).

# %%
from labkit.widgets import explorer


def waiting(latency_ms, requests_per_second):
    split = t_split.trips * latency_ms
    embedded = t_embedded.trips * latency_ms
    return {"split: ms waiting per request": split, "embedded: ms waiting per request": embedded,
            "split: round trips per second": t_split.trips * requests_per_second,
            "embedded: round trips per second": t_embedded.trips * requests_per_second}


def draw_waiting(ax, values, r):
    ax.barh(["split", "embedded"], [r["split: ms waiting per request"], r["embedded: ms waiting per request"]],
            color=["#d62728", "#1f77b4"])
    ax.set_xlabel("ms of network wait per request")


wait = explorer(waiting, sliders={"latency_ms": (1, 50, 2, 1), "requests_per_second": (100, 10_000, 1500, 100)},
                title="Latency and load, estimated (round trips counted above x latency, or x rate)", draw=draw_waiting)
wait

# %% [markdown]
# ## Exercise 1 · A bookshop, the same idea on other data
#
# A bookshop keeps `books` (`_id`, `title`, `genre`), `book_stock` (one per book: `bookId`, `inStock`,
# `warehouse`) and `book_authors` (one to three per book: `bookId`, `name`, `role`), and every book page loads
# all three. Write `migrate(db)` that embeds them (`stock: {inStock, warehouse}`, `authors: [{name, role}]`)
# and drops the two side collections, and `load_book(db, book_id)` that loads a book page.
# `ex_books.check(migrate, load_book)` runs both on its own bookshop and counts the round trips of one
# page.

# %%
ex_books = labkit.exercises.get("36-embed-books")
ex_books


# %% tags=["solution"]
def migrate(d):
    d.books.aggregate([
        {"$lookup": {"from": "book_stock", "localField": "_id", "foreignField": "bookId", "as": "s"}},
        {"$lookup": {"from": "book_authors", "localField": "_id", "foreignField": "bookId", "as": "a"}},
        {"$project": {"stock": {"inStock": {"$first": "$s.inStock"}, "warehouse": {"$first": "$s.warehouse"}},
                      "authors": {"$map": {"input": "$a", "as": "x",
                                           "in": {"name": "$$x.name", "role": "$$x.role"}}}}},
        {"$merge": {"into": "books", "on": "_id", "whenMatched": "merge", "whenNotMatched": "discard"}}])
    d.drop_collection("book_stock")
    d.drop_collection("book_authors")


def load_book(d, book_id):
    return d.books.find_one({"_id": book_id})


ex_books.check(migrate, load_book)

# %% [markdown]
# ## Exercise 2 · Migrate the practice copy
#
# `practice` holds the same four collections for a few hundred users (counted below). Embed them into `practice.users` (`profile` and
# `settings` subdocuments, an `addresses` array of `{label, city}`), then drop the three side collections.
# `ex.check(practice)` loads a request context and counts what it takes.

# %%
practice = labkit.fresh_db("36_practice")
practice.users.insert_many([{"_id": f"user:{u:04d}", "email": f"user{u}@example.com"} for u in range(300)])
practice.user_profiles.insert_many([{"_id": f"profile:{u:04d}", "userId": f"user:{u:04d}", "displayName": f"User {u}",
                                     "bio": "hi"} for u in range(300)])
practice.user_addresses.insert_many([{"_id": f"addr:{u:04d}:{k}", "userId": f"user:{u:04d}",
                                      "label": ["home", "work", "other"][k], "city": CITIES[(u + k) % 6]}
                                     for u in range(300) for k in range(1 + u % 3)])
practice.user_settings.insert_many([{"_id": f"settings:{u:04d}", "userId": f"user:{u:04d}", "theme": "light",
                                     "newsletter": False} for u in range(300)])
ex = labkit.exercises.get("36-embed-context").remember(practice, "users", "user_profiles", "user_addresses",
                                                     "user_settings")  # the setup, as it is now
print(practice.users.count_documents({}), "users")
ex

# %% tags=["solution"]
practice.users.aggregate(embed_stages)
for name in ("user_profiles", "user_addresses", "user_settings"):
    practice.drop_collection(name)
ex.check(practice)

# %% [markdown]
# ## Summary
#
# - Detect: code that always fetches the same key from several collections, or a hot pipeline with several
#   `$lookup` stages.
# - Fix: embed one-to-one parts as subdocuments and one-to-few parts as arrays; migrate with an aggregation
#   ending in `$merge`, switch reads, then drop the old collections.
# - One request becomes one round trip, and related changes become one atomic write: the split design needs a
#   transaction (observed above: without one, a crash leaves half a change), which costs more on every change.
#
# **Next:** 37 · case-insensitive queries.

# %% [markdown] tags=["sources"]
# ## Sources
#
# 1. [MongoDB manual: Model One-to-One Relationships with Embedded Documents](https://www.mongodb.com/docs/manual/tutorial/model-embedded-one-to-one-relationships-between-documents/)
# 2. [MongoDB manual: Model One-to-Many Relationships with Embedded Documents](https://www.mongodb.com/docs/manual/tutorial/model-embedded-one-to-many-relationships-between-documents/)
# 3. [MongoDB manual: \$lookup (aggregation stage)](https://www.mongodb.com/docs/manual/reference/operator/aggregation/lookup/)
# 4. [MongoDB manual: \$merge (aggregation stage)](https://www.mongodb.com/docs/manual/reference/operator/aggregation/merge/)
# 5. [MongoDB manual: Transactions](https://www.mongodb.com/docs/manual/core/transactions/)
# 6. [MongoDB manual: Atomicity and Transactions](https://www.mongodb.com/docs/manual/core/write-operations-atomicity/)

# %% [markdown] tags=["navigation"]
# [← 35 · Anti-pattern: unnecessary indexes](35_unnecessary_indexes.ipynb) · [Contents](../CONTENTS.md) · [37 · Anti-pattern: case-insensitive queries without a matching index →](37_case_insensitive.ipynb)
