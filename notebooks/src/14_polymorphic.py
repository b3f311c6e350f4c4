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
#     exercise_minutes: 10
#     title: "Polymorphic: articles, videos and tools in one feed collection"
#     section: Patterns
#     demo: "Move the video share slider down to 5% and compare the entries of a full durationSeconds index with the partial one."
#     mistakes: ["one collection per type, then merging three queries in the application for one feed page", "a partial index whose filter the query does not repeat, so it cannot be used", "a validator with anyOf branches that overlap, so a document of one type passes with another type's fields"]
#     sources:
#     - title: "MongoDB manual: Polymorphic Data (polymorphic and inheritance patterns)"
#       url: https://www.mongodb.com/docs/manual/data-modeling/design-patterns/polymorphic-data/
#     - title: "MongoDB manual: Use the Inheritance Pattern"
#       url: https://www.mongodb.com/docs/manual/data-modeling/design-patterns/polymorphic-data/inheritance-schema-pattern/
#     - title: "MongoDB manual: Use Indexes to Sort Query Results"
#       url: https://www.mongodb.com/docs/manual/tutorial/sort-results-with-indexes/
#     - title: "MongoDB manual: $regex (index use)"
#       url: https://www.mongodb.com/docs/manual/reference/operator/query/regex/
#     - title: "MongoDB manual: Case-Insensitive Indexes"
#       url: https://www.mongodb.com/docs/manual/core/index-case-insensitive/
#     - title: "MongoDB Atlas: Atlas Search"
#       url: https://www.mongodb.com/docs/atlas/atlas-search/
#     - title: "MongoDB manual: Sparse Indexes"
#       url: https://www.mongodb.com/docs/manual/core/index-sparse/
#     - title: "MongoDB manual: Partial Indexes"
#       url: https://www.mongodb.com/docs/manual/core/index-partial/
#     - title: "mongodb/mongo jstests/core/index/index_signature.js (indexes on the same keys that differ in sparse, unique, partialFilterExpression or collation)"
#       url: https://github.com/mongodb/mongo/blob/v8.0/jstests/core/index/index_signature.js
#     - title: "MongoDB manual: $jsonSchema (oneOf)"
#       url: https://www.mongodb.com/docs/manual/reference/operator/query/jsonSchema/
# ---

# %% [markdown]
# # 14 · Polymorphic: articles, videos and tools in one feed collection
#
# **You will learn**
# - to store documents of different but related shapes in one collection with a `type` field;
# - to handle each type in code (one handler per type) while querying them together;
# - the feed indexes `{type: 1, createdAt: -1}` and `{authorId: 1, type: 1}`, read with `explain()`;
# - partial indexes (`partialFilterExpression`) for fields only one type has, and when a query may use them;
# - to validate a polymorphic collection (`oneOf`, one branch per type) and the inheritance pattern.
#
# **Time:** about 40 minutes.

# %%
import datetime as dt
import random

import pandas as pd
from pymongo.errors import OperationFailure, WriteError

import labkit

db = labkit.fresh_db("14_polymorphic")
rng = random.Random(14)
BASE = dt.datetime(2026, 4, 1)
TOPICS = ["Redis", "MongoDB", "Kafka", "Postgres", "Docker", "Python"]


def make_item(i, kind):
    topic = TOPICS[i % len(TOPICS)]
    common = {"_id": f"content:{i}", "type": kind, "createdAt": BASE + dt.timedelta(minutes=17 * i)}
    if kind == "article":
        return common | {"title": f"{i % 12 + 2} {topic} patterns", "authorId": f"user:{rng.randint(1, 300)}",
                         "slug": f"{i % 12 + 2}-{topic.lower()}-patterns-{i}", "readingTime": rng.randint(3, 20)}
    if kind == "video":
        return common | {"title": f"{topic} tutorial {i}", "authorId": f"user:{rng.randint(1, 300)}",
                         "durationSeconds": rng.randint(120, 3600),
                         "thumbnailUrl": f"https://cdn.example.com/thumb/{i}.jpg"}
    return common | {"name": f"{topic} Commander {i}", "category": "database",
                     "githubUrl": f"https://github.com/example/tool-{i}", "stars": rng.randint(10, 20_000)}


kinds = rng.choices(["article", "video", "tool"], weights=[60, 30, 10], k=6000)
items = [make_item(i, k) for i, k in enumerate(kinds, start=1)]
# the source material's three examples, newest of all
newest = BASE + dt.timedelta(days=200)
items += [
    {"_id": "content:redis-article", "type": "article", "title": "10 Redis Patterns", "authorId": "user:112",
     "slug": "10-redis-patterns", "readingTime": 8, "createdAt": newest},
    {"_id": "content:redis-video", "type": "video", "title": "Redis Tutorial", "authorId": "user:112",
     "durationSeconds": 1320, "thumbnailUrl": "https://cdn.example.com/thumb.jpg",
     "createdAt": newest + dt.timedelta(minutes=1)},
    {"_id": "content:redis-tool", "type": "tool", "name": "Redis Commander", "category": "database",
     "githubUrl": "https://github.com/joeferner/redis-commander", "stars": 8900,
     "createdAt": newest + dt.timedelta(minutes=2)},
]
db.content.insert_many(items)
pd.DataFrame(db.content.aggregate([{"$group": {"_id": "$type", "documents": {"$sum": 1}}},
                                   {"$sort": {"_id": 1}}])).set_index("_id")

# %% [markdown]
# ## The workload

# %%
labkit.workload_table([
    ("home feed: newest 20 items of every type", "read", "1,500/s", "each item rendered its own way"),
    ("a type tab: newest 20 videos (or articles, tools)", "read", "300/s", "one type, newest first"),
    ("an author's items of one type", "read", "20/s", "authorId and type"),
    ("search titles and names", "read", "50/s", "any case, anywhere in the text"),
    ("publish an item", "write", "0.1/s", "must have the fields of its type"),
], rate="rate (assumed)")

# %% [markdown]
# The three types share `type` and `createdAt`, articles and videos share `title` and `authorId`, and each has
# fields of its own (`slug`, `durationSeconds`, `stars`...).

# %%
samples = [db.content.find_one({"_id": f"content:redis-{k}"}) for k in ("article", "video", "tool")]
pd.DataFrame(samples, dtype=object).set_index("_id").T.fillna("")

# %% [markdown]
# ## The naive design: one collection per type
#
# With `articles`, `videos` and `tools` apart, the home feed needs the newest 20 of **each** (any of them could
# be in the top 20), three round trips, and a merge in the application:

# %%
for kind in ("article", "video", "tool"):
    db[kind + "s"].insert_many([d for d in items if d["type"] == kind])
    db[kind + "s"].create_index([("createdAt", -1)])


def plan(cursor):
    s = labkit.plan_summary(cursor.explain())
    return {"plan": s["stages"], "keys examined": s["keysExamined"], "docs examined": s["docsExamined"],
            "returned": s["nReturned"]}


def separate_feed(d):
    """The newest 20 of each type, merged in the application."""
    newest = [doc for kind in ("article", "video", "tool") for doc in d[kind + "s"].find().sort("createdAt", -1).limit(20)]
    return sorted(newest, key=lambda doc: doc["createdAt"], reverse=True)[:20]


per_type = {kind: plan(db[kind + "s"].find().sort("createdAt", -1).limit(20)) for kind in ("article", "video", "tool")}
separate_run = labkit.ledger.measure(db, separate_feed)  # round trips and documents examined, from the run
separate = {"round trips": separate_run.round_trips, "docs examined": separate_run.docs_examined,
            "docs shown": len(separate_feed(db))}
pd.DataFrame(per_type)

# %% [markdown]
# ## The better design: one collection, a `type` field
#
# In one collection the feed is a single query
# ([manual: polymorphic data](https://www.mongodb.com/docs/manual/data-modeling/design-patterns/polymorphic-data/)).
# The source indexes its content collection with `{type: 1, createdAt: -1}` and `{authorId: 1, type: 1}`, and
# pages its feed with `find({}).sort({createdAt: -1}).skip(...).limit(20)`. That feed filters on no `type`, so
# neither index can give it its order: an index provides a sort on a later field only when the query fixes
# every field before it ([manual: sort with indexes](https://www.mongodb.com/docs/manual/tutorial/sort-results-with-indexes/)).
# With only the source's two indexes:

# %%
db.content.create_index([("type", 1), ("createdAt", -1)])
db.content.create_index([("authorId", 1), ("type", 1)])
source_feed = plan(db.content.find().sort("createdAt", -1).limit(20))
pd.Series(source_feed, name="feed with the source's indexes")

# %% [markdown]
# A collection scan and a sort of every item, for 20 of them, 1,500 times a second. The index the feed needs is
# on `createdAt` alone (its `skip` then walks the index, as lesson 11 measured):

# %%
db.content.create_index([("createdAt", -1)])
one_run = labkit.ledger.measure(db, lambda d: list(d.content.find().sort("createdAt", -1).limit(20)))
pd.DataFrame({"one collection per type": separate,
              "one polymorphic collection": {"round trips": one_run.round_trips, "docs examined": one_run.docs_examined,
                                             "docs shown": len(list(db.content.find().sort("createdAt", -1).limit(20)))}})

# %% [markdown]
# ## Per-type handling in code
#
# Each type gets a handler that knows its fields; the feed code stays a single loop.

# %%
def minutes(seconds):
    return f"{seconds // 60}:{seconds % 60:02d}"


handlers = {
    "article": lambda d: {"headline": d["title"], "detail": f"{d['readingTime']} min read",
                          "url": f"/articles/{d['slug']}"},
    "video": lambda d: {"headline": d["title"], "detail": minutes(d["durationSeconds"]),
                        "url": f"/videos/{d['_id']}"},
    "tool": lambda d: {"headline": d["name"], "detail": f"{d['stars']:,} stars", "url": f"/tools/{d['_id']}"},
}


def render(doc):
    return {"type": doc["type"]} | handlers[doc["type"]](doc)


pd.DataFrame([render(d) for d in db.content.find().sort("createdAt", -1).limit(6)])

# %% [markdown]
# ## The type tab and the author page: the source's two compound indexes
#
# The source's indexes serve the other two reads: `{type: 1, createdAt: -1}` the type tab (one type, newest
# first) and `{authorId: 1, type: 1}` one author's items of one type. What each read would cost without them is
# measured by forcing the plan with `hint`: the `createdAt` index for the tab, a collection scan (`$natural`) for
# the author page.

# %%
videos_tab = {"type": "video"}
author_videos = {"authorId": "user:112", "type": "video"}
without = {"videos tab": plan(db.content.find(videos_tab).sort("createdAt", -1).limit(20).hint("createdAt_-1")),
           "user:112's videos": plan(db.content.find(author_videos).hint([("$natural", 1)]))}
chosen_plans = {"videos tab": plan(db.content.find(videos_tab).sort("createdAt", -1).limit(20)),
                "user:112's videos": plan(db.content.find(author_videos))}
pd.concat([pd.DataFrame(without), pd.DataFrame(chosen_plans)],
          keys=["without the compound indexes", "with them (the planner's choice)"])

# %% [markdown]
# Without its index, the tab walks the `createdAt` index and fetches items until 20 videos turn up (more than twice
# as many as it returns; far more for a rare type); with it, it reads exactly 20 keys. The author page goes from a
# collection scan to reading only that author's videos. Tools have no `authorId`: in `{authorId: 1, type: 1}` each
# tool still gets an entry, with a null `authorId`.
#
# ## Search: the source's case-insensitive handlers
#
# The source's handler for articles and videos searches with `{title: {$regex: query, $options: "i"}}` (tools
# search `name` the same way). A regular expression uses an index as a narrow range only when it is
# case-sensitive and anchored at the start; with the `i` option, or a match anywhere in the text, the server must
# test every key ([manual: `$regex` index use](https://www.mongodb.com/docs/manual/reference/operator/query/regex/)).
# Even with an index on `title`:

# %%
db.content.create_index("title")
search = {"title": {"$regex": "redis", "$options": "i"}}
searched = plan(db.content.find(search))
db.content.drop_index("title_1")  # it did not help
pd.Series(searched | {"items with a title": db.content.count_documents({"title": {"$exists": True}})},
          name="title search 'redis', case-insensitive")

# %% [markdown]
# Every title key is examined (5,392) to return 890. Lesson 37 measures the fixes: a case-insensitive collation
# index serves exact (not partial) matches ([manual: case-insensitive indexes](https://www.mongodb.com/docs/manual/core/index-case-insensitive/)),
# a lower-cased copy of the field serves an anchored prefix, and search "anywhere in the text, any case" is what
# [Atlas Search](https://www.mongodb.com/docs/atlas/atlas-search/) indexes are built for.
#
# ## Sparse or partial indexes for one type's fields
#
# "Top tools by stars" needs an index on `stars`, a field only tools have. A normal index on `stars` also holds
# an entry (a null key) for every article and video. Two kinds of index leave those out, and the fair comparison
# is between them, not with the normal one:
#
# - a **sparse** index holds only the documents that *have* the field
#   ([manual: sparse indexes](https://www.mongodb.com/docs/manual/core/index-sparse/));
# - a **partial** index holds only the documents matching its `partialFilterExpression`, here `type: "tool"`
#   ([manual: partial indexes](https://www.mongodb.com/docs/manual/core/index-partial/)).
#
# Indexes on the same keys may exist side by side when they differ in one of the options that make up an index's
# *signature*: `sparse`, `unique`, `partialFilterExpression` or `collation` (and a wildcard index's
# `wildcardProjection`). An index that differs only in its name, or in an option outside the signature such as
# `expireAfterSeconds`, is the same index and is refused
# ([mongo jstest: index_signature.js](https://github.com/mongodb/mongo/blob/v8.0/jstests/core/index/index_signature.js)).
# Each index's entries are counted by scanning the whole of it (`hint`), its bytes come from `$collStats`:

# %%
def index_figures(name, query):
    """Entries: keys examined by a scan of the whole index; bytes: the index's size from $collStats."""
    entries = db.content.find(query, {"_id": 1}).hint(name).explain()["executionStats"]["totalKeysExamined"]
    sizes = next(db.content.aggregate([{"$collStats": {"storageStats": {}}}]))["storageStats"]["indexSizes"]
    return {"entries": entries, "bytes": sizes[name]}


db.content.create_index([("stars", -1)], name="stars_all")
db.content.create_index([("stars", -1)], name="stars_sparse", sparse=True)
db.content.create_index([("stars", -1)], name="stars_tools_only", partialFilterExpression={"type": "tool"})
print("indexes on {stars: -1}:",
      sorted(n for n, ix in db.content.index_information().items() if ix["key"] == [("stars", -1)]))
try:
    db.content.create_index([("stars", -1)], name="stars_again")
except OperationFailure as exc:
    print(f"same keys, same options, another name: refused, code {exc.code} ({exc})")
stars_indexes = {"normal": index_figures("stars_all", {}), "sparse": index_figures("stars_sparse", {}),
                 "partial, type: tool": index_figures("stars_tools_only", {"type": "tool"})}
db.content.drop_index("stars_all")  # the comparison below is between the other two, and every index costs writes
pd.DataFrame(stars_indexes)

# %% [markdown]
# Here only tools have `stars`, so the sparse and the partial index hold the same entries and the same bytes:
# against the fair alternative, the partial index saves nothing in size. What differs is **which queries may use
# each one**. A sparse index may only answer a query that needs no document without the field: one with a
# condition on `stars` itself. A partial index may only answer a query whose filter **implies** its filter:
# every document the query can return must be in the index. So:
#
# - top tools, `{type: "tool"}` sorted by `stars`: no condition on `stars`, so the sparse index is not allowed
#   (a tool without stars would be missing); the filter repeats `type: "tool"`, so the partial index is;
# - `{stars: {$gt: 5000}}` sorted by `stars`: a condition on `stars`, so the sparse index is allowed; the filter
#   does not imply `type: "tool"` (an article could match it), so the partial index is not.
#
# **Predict** which index the planner chooses for `{stars: {$gt: 5000}}` sorted by `stars` (no hint):

# %%
predict_index = labkit.exercises.get("14-predict-sparse-or-partial")
predict_index

# %% tags=["solution"]
predict_index.predict("stars_sparse")


# %% tags=["reveal"]
def chosen(cursor):
    s = labkit.plan_summary(cursor.explain())
    return {"index chosen": s["index"] or "none", "plan": s["stages"], "keys examined": s["keysExamined"],
            "docs examined": s["docsExamined"], "returned": s["nReturned"]}


choices = {"top 10 tools": chosen(db.content.find({"type": "tool"}).sort("stars", -1).limit(10)),
           "stars > 5000": chosen(db.content.find({"stars": {"$gt": 5000}}).sort("stars", -1).limit(10))}
pd.DataFrame(choices)

# %% tags=["reveal"]
predict_index.check(choices["stars > 5000"]["index chosen"])

# %% [markdown]
# The choice between them follows from the data, not from size. A partial index states the rule ("tools"), so
# it stays right if an article ever gets a `stars` field (the sparse index would then index that article too);
# queries must repeat `type: "tool"`. A sparse index follows the field, so it serves any query that filters on
# `stars`, but never a sort or query that may return documents without the field. The manual prefers partial
# indexes: a partial filter `{stars: {$exists: true}}` does what `sparse` does, and any other filter too.
#
# ## Explore: the share of each type
#
# For a collection of 100,000 items, the entries and bytes of a normal index versus a partial index on a field
# only videos have (`durationSeconds`; a sparse index holds the same entries while only videos carry it),
# **estimated** from the bytes per entry measured on the two indexes built here (a normal and a partial index on
# the same keys: their signatures differ).

# %%
from labkit.widgets import explorer

db.content.create_index([("durationSeconds", 1)], name="duration_all")
db.content.create_index([("durationSeconds", 1)], name="duration_videos",
                        partialFilterExpression={"type": "video"})
sizes = next(db.content.aggregate([{"$collStats": {"storageStats": {}}}]))["storageStats"]["indexSizes"]
n_all, n_videos = db.content.count_documents({}), db.content.count_documents({"type": "video"})
per_video_entry = sizes["duration_videos"] / n_videos
per_null_entry = (sizes["duration_all"] - sizes["duration_videos"]) / (n_all - n_videos)


def shares(video_percent):
    total = 100_000
    videos = total * video_percent // 100
    return {"items": total, "videos": videos,
            "full index entries": total, "partial index entries": videos,
            "full index bytes (estimated: bytes per entry of the indexes built here x entries)": round(videos * per_video_entry + (total - videos) * per_null_entry),
            "partial index bytes (estimated: bytes per entry of the indexes built here x entries)": round(videos * per_video_entry)}


def draw(ax, values, r):
    ax.barh(["full", "partial"], [r["full index bytes (estimated: bytes per entry of the indexes built here x entries)"], r["partial index bytes (estimated: bytes per entry of the indexes built here x entries)"]])
    ax.set_xlabel("bytes of the durationSeconds index")


explorer(shares, sliders={"video_percent": (0, 100, 30)}, title="Type mix", draw=draw)

# %% [markdown]
# The rarer the type, the bigger the saving: a field that 5% of documents carry needs 5% of the entries.
#
# ## Validating a polymorphic collection
#
# Each type has its own required fields. `oneOf` with one branch per type accepts a document only if it fits
# exactly one branch; pinning `type` with `enum` in each branch keeps the branches from overlapping.
#
# This is also the **inheritance pattern**: a base shape every item shares (`type`, `createdAt`), extended by
# each type ([manual: inheritance pattern](https://www.mongodb.com/docs/manual/data-modeling/design-patterns/polymorphic-data/inheritance-schema-pattern/)).
# In code the base is one dictionary merged into each type's rules, and `oneOf` in
# [`$jsonSchema`](https://www.mongodb.com/docs/manual/reference/operator/query/jsonSchema/) requires exactly one
# branch to match:

# %%
base = {"type": {"enum": ["article", "video", "tool"]}, "createdAt": {"bsonType": "date"}}
per_type_rules = {
    "article": ({"title": {"bsonType": "string"}, "authorId": {"bsonType": "string"},
                 "slug": {"bsonType": "string"}, "readingTime": {"bsonType": "int", "minimum": 1}},
                ["title", "authorId", "slug"]),
    "video": ({"title": {"bsonType": "string"}, "authorId": {"bsonType": "string"},
               "durationSeconds": {"bsonType": "int", "minimum": 1}, "thumbnailUrl": {"bsonType": "string"}},
              ["title", "authorId", "durationSeconds"]),
    "tool": ({"name": {"bsonType": "string"}, "githubUrl": {"bsonType": "string"},
              "stars": {"bsonType": "int", "minimum": 0}},
             ["name", "githubUrl"]),
}
content_schema = {"$jsonSchema": {
    "bsonType": "object",
    "required": ["type", "createdAt"],
    "properties": base,
    "oneOf": [{"properties": base | {"type": {"enum": [kind]}} | props, "required": ["type", *required]}
              for kind, (props, required) in per_type_rules.items()],
}}
checked = db.create_collection("content_checked", validator=content_schema)
print("feed documents breaking these rules:", db.content.count_documents({"$nor": [content_schema]}),
      "of", db.content.count_documents({}))

# %%
when = dt.datetime(2026, 11, 1)
attempts = {
    "article": {"type": "article", "title": "t", "authorId": "user:1", "slug": "t", "createdAt": when},
    "video": {"type": "video", "title": "t", "authorId": "user:1", "durationSeconds": 90, "createdAt": when},
    "tool": {"type": "tool", "name": "n", "githubUrl": "https://github.com/x/y", "stars": 3, "createdAt": when},
    "article without slug": {"type": "article", "title": "t", "authorId": "user:1", "createdAt": when},
    "video with duration as text": {"type": "video", "title": "t", "authorId": "user:1",
                                    "durationSeconds": "1:30", "createdAt": when},
    "tool labelled video": {"type": "video", "name": "n", "githubUrl": "https://github.com/x/y", "createdAt": when},
    "podcast": {"type": "podcast", "title": "t", "createdAt": when},
}
outcome = {}
for i, (label, doc) in enumerate(attempts.items()):
    try:
        checked.insert_one(dict(doc, _id=f"try:{i}"))
        outcome[label] = "accepted"
    except WriteError as exc:
        outcome[label] = f"rejected ({exc.code})"
pd.Series(outcome, name="insert")

# %% [markdown]
# ## Exercise
#
# Write a validator for a polymorphic `events` collection with two types:
# - `"click"` events need `element` (string) and `x`, `y` (ints);
# - `"purchase"` events need `orderId` (string) and `amount` (a number: `bsonType: ["int", "double", "decimal"]`);
# - every event needs `type` (one of those two) and `at` (a date); any other type is rejected.
#
# `ex.check(validator)` creates a scratch collection with it and inserts good and bad events.

# %%
ex = labkit.exercises.get("14-polymorphic-validator")
ex

# %% tags=["solution"]
number = {"bsonType": ["int", "double", "decimal"]}
validator = {"$jsonSchema": {
    "bsonType": "object",
    "required": ["type", "at"],
    "properties": {"type": {"enum": ["click", "purchase"]}, "at": {"bsonType": "date"}},
    "oneOf": [
        {"properties": {"type": {"enum": ["click"]}, "element": {"bsonType": "string"},
                        "x": {"bsonType": "int"}, "y": {"bsonType": "int"}},
         "required": ["element", "x", "y"]},
        {"properties": {"type": {"enum": ["purchase"]}, "orderId": {"bsonType": "string"}, "amount": number},
         "required": ["orderId", "amount"]},
    ],
}}
ex.check(validator)

# %% [markdown]
# ## Summary
#
# - Related shapes that are queried together belong in one collection with a `type` field: one query, one
#   index, one round trip for a mixed feed, and a handler per type in code.
# - Index shared fields for the common queries (`{type: 1, createdAt: -1}`, `{authorId: 1, type: 1}`), and check
#   each query against them: the mixed feed sorted by `createdAt` needs `{createdAt: -1}`, which the source's two
#   indexes cannot replace. A case-insensitive regex search reads every key of its index.
# - For fields only one type has, a sparse index (documents with the field) and a partial index (documents of
#   the type) keep the same entries; the partial one serves queries that repeat its filter, the sparse one
#   queries with a condition on the field.
# - Validate with `oneOf`, one branch per type, each pinning `type`; a base shape merged into every branch is
#   the inheritance pattern.
#
# **Next:** 15 · the attribute pattern.

# %% [markdown] tags=["sources"]
# ## Sources
#
# 1. [MongoDB manual: Polymorphic Data (polymorphic and inheritance patterns)](https://www.mongodb.com/docs/manual/data-modeling/design-patterns/polymorphic-data/)
# 2. [MongoDB manual: Use the Inheritance Pattern](https://www.mongodb.com/docs/manual/data-modeling/design-patterns/polymorphic-data/inheritance-schema-pattern/)
# 3. [MongoDB manual: Use Indexes to Sort Query Results](https://www.mongodb.com/docs/manual/tutorial/sort-results-with-indexes/)
# 4. [MongoDB manual: \$regex (index use)](https://www.mongodb.com/docs/manual/reference/operator/query/regex/)
# 5. [MongoDB manual: Case-Insensitive Indexes](https://www.mongodb.com/docs/manual/core/index-case-insensitive/)
# 6. [MongoDB Atlas: Atlas Search](https://www.mongodb.com/docs/atlas/atlas-search/)
# 7. [MongoDB manual: Sparse Indexes](https://www.mongodb.com/docs/manual/core/index-sparse/)
# 8. [MongoDB manual: Partial Indexes](https://www.mongodb.com/docs/manual/core/index-partial/)
# 9. [mongodb/mongo jstests/core/index/index_signature.js (indexes on the same keys that differ in sparse, unique, partialFilterExpression or collation)](https://github.com/mongodb/mongo/blob/v8.0/jstests/core/index/index_signature.js)
# 10. [MongoDB manual: \$jsonSchema (oneOf)](https://www.mongodb.com/docs/manual/reference/operator/query/jsonSchema/)

# %% [markdown] tags=["navigation"]
# [← 13 · Schema versioning: v1 name, v2 firstName/lastName, no downtime](13_schema_versioning.ipynb) · [Contents](../CONTENTS.md) · [15 · Attribute pattern: many similar fields, one index →](15_attribute.ipynb)
