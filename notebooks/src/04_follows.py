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
#     title: "One-to-infinity: the follows relationship collection"
#     section: Relationships
#     exercise_minutes: 17
#     demo: >-
#       Insert a duplicate follow and show code 11000 with keyValue; explain both directions; explain the count and show keys examined = followers + 1 (the key read that ends the range), with 0 documents; replay the burst of follows and show the celebrity's counter document taking the writes.
#     mistakes:
#     - "Creating only one of the two compound indexes and trusting that no COLLSCAN means the query is cheap (a full index scan for sort order)."
#     - "Copying the follows' two pair indexes to likes: the newest-first page needs {userId: 1, createdAt: -1}."
#     - "A unique index on one side alone ({postId: 1}), which refuses ordinary likes."
#     - "Forgetting unique: true, so duplicate edges are accepted."
#     - "Expecting count_documents to be constant-time with an index."
#     - "Incrementing the counter before the edge insert (or on a duplicate follow), so the count drifts from the edges."
#     - "Predicting 4,000 keys for 4,000 followers: the scan also reads the key past the end of the range."
#     sources:
#     - title: "MongoDB manual: Model Many-to-Many Relationships with Embedded Documents"
#       url: https://www.mongodb.com/docs/manual/tutorial/model-embedded-many-to-many-relationships-between-documents/
#     - title: "MongoDB manual: Unique Indexes"
#       url: https://www.mongodb.com/docs/manual/core/index-unique/
#     - title: "MongoDB manual: Compound Indexes"
#       url: https://www.mongodb.com/docs/manual/core/indexes/index-types/index-compound/
#     - title: "MongoDB manual: Explain Results"
#       url: https://www.mongodb.com/docs/manual/reference/explain-results/
#     - title: "mongodb/mongo src/mongo/db/exec/count_scan.cpp (COUNT_SCAN counts the key that ends the range)"
#       url: https://github.com/mongodb/mongo/blob/v8.0/src/mongo/db/exec/count_scan.cpp
#     - title: "MongoDB specifications: CRUD, countDocuments (an aggregate with $match and $group)"
#       url: https://github.com/mongodb/specifications/blob/master/source/crud/crud.md
#     - title: "MongoDB manual: WiredTiger Storage Engine (document-level concurrency)"
#       url: https://www.mongodb.com/docs/manual/core/wiredtiger/
#     - title: "MongoDB manual: MongoDB Limits and Thresholds"
#       url: https://www.mongodb.com/docs/manual/reference/limits/
# ---

# %% [markdown]
# # 04 · One-to-infinity: the follows relationship collection
#
# **You will learn**
# - to store a many-to-many, unbounded relationship as one document per directed edge;
# - a unique compound index that rejects duplicates, and the reverse index for the other direction;
# - that counting matches costs work proportional to the matches, even with an index;
# - when a maintained counter pays for itself, and why it turns one celebrity's document into a write hotspot.
#
# **Time:** about 25 minutes.

# %%
import datetime as dt

import pandas as pd
from pymongo.errors import DuplicateKeyError

import labkit
from labkit.sizes import doc_size_with_array

db = labkit.fresh_db("04_follows")
summary = labkit.seed.social(db, users=5000, seed=4, celebrity_followers=4000, indexes=False)
summary

# %% [markdown]
# ## The workload

# %%
workload = labkit.workload_table([
    ("who follows X (page of 20, by follower id)", "read", 300, "follower ids"),
    ("whom does X follow (page of 20)", "read", 200, "followed ids"),
    ("follow / unfollow", "write", 500, "never a duplicate edge"),
    ("show X's follower count", "read", 5000, "one number"),
], rate="per_second")
workload

# %% [markdown]
# Sam is the celebrity: thousands follow him. Storing follower ids on his user document would grow it with every
# new follower, and storing both sides' arrays would keep the relationship twice. So each directed relationship
# is a document of its own, in a `follows` collection (SQL would call it a join table). The manual's
# [many-to-many](https://www.mongodb.com/docs/manual/tutorial/model-embedded-many-to-many-relationships-between-documents/)
# example embeds the other side (a book's authors) in each document instead, which suits lists with a bound,
# not followers:

# %%
db.follows.find_one({"_id": "follow:234:112"})

# %% [markdown]
# ## The two indexes
#
# One unique index for "whom does X follow" that also forbids duplicate edges
# ([unique indexes](https://www.mongodb.com/docs/manual/core/index-unique/)), and its mirror image for
# "who follows X". Each direction's query uses the index that starts with its equality field, and the second
# field gives the page its order ([compound indexes](https://www.mongodb.com/docs/manual/core/indexes/index-types/index-compound/)).
# Two indexes are not two copies of the relationship: both point at the same edge document, and the server
# keeps them up to date with every insert and delete.

# %%
db.follows.create_index({"followerId": 1, "followingId": 1}, unique=True)
db.follows.create_index({"followingId": 1, "followerId": 1})
sorted(db.follows.index_information())

# %% [markdown]
# Following Sam twice is rejected by the server, not by application code:

# %%
try:
    db.follows.insert_one({"_id": "follow:234:112:again", "followerId": "user:234", "followingId": "user:112",
                           "createdAt": dt.datetime(2026, 10, 5, 12, 0)})
except DuplicateKeyError as exc:
    print("code:", exc.code)
    print("keyValue:", exc.details["keyValue"])

# %% [markdown]
# ## Both directions, each from its own index

# %%
followers_of_sam = db.follows.find({"followingId": "user:112"}).sort("followerId", 1).limit(20)
fred_follows = db.follows.find({"followerId": "user:234"}).sort("followingId", 1).limit(20)
pd.concat([labkit.show_plan(followers_of_sam.explain()), labkit.show_plan(fred_follows.explain())],
          keys=["who follows Sam", "whom Fred follows"])

# %% [markdown]
# ## Counting is proportional to the matches
#
# **Predict first.** With the `{followingId: 1, followerId: 1}` index, how many index keys does counting Sam's
# followers examine? He has 4,000 of them. Record your guess with `ex_count.predict(...)` in the next cell, then
# run the measurement.

# %%
ex_count = labkit.exercises.get("04-predict-count-keys")
ex_count

# %% tags=["solution"]
ex_count.predict(4001)

# %% [markdown]
# An index makes counting cheap per match, not free. The count's plan is `COUNT_SCAN`: it counts index keys in
# the range `followingId = X` without fetching a single document (`docsExamined` 0,
# [explain results](https://www.mongodb.com/docs/manual/reference/explain-results/)). It reads one key per
# follower, plus one more: the scan learns that the range has ended only by reading the next key (or finding
# none), and counts that read too
# ([count_scan.cpp](https://github.com/mongodb/mongo/blob/v8.0/src/mongo/db/exec/count_scan.cpp)).
# `count_documents` sends the same count as an aggregation (`$match` then `$group`,
# [driver CRUD specification](https://github.com/mongodb/specifications/blob/master/source/crud/crud.md)),
# which the server also answers with a `COUNT_SCAN`.

# %% tags=["reveal"]
def count_cost(user_id):
    plan = db.command("explain", {"count": "follows", "query": {"followingId": user_id}}, verbosity="executionStats")
    stats = plan["executionStats"]
    return {"followers": db.follows.count_documents({"followingId": user_id}),
            "keys examined": stats["totalKeysExamined"], "docs examined": stats["totalDocsExamined"],
            "plan": labkit.plan_summary(plan)["stages"]}


count_costs = {u: count_cost(u) for u in ["user:112", "user:234"]}
pd.DataFrame(count_costs).T

# %% tags=["reveal"]
ex_count.check(count_costs["user:112"]["keys examined"])

# %% [markdown]
# ## A maintained counter
#
# If the count is shown on every profile view, keep it on the user and change it with each follow. Reading it
# is one document; the price is a second write per follow (and keeping the two consistent, lesson 05).
#
# First a one-off backfill from the existing edges, one `$set` per followed user, sent together in one
# `bulk_write`:

# %%
from pymongo import UpdateOne

db.users.bulk_write([UpdateOne({"_id": doc["_id"]}, {"$set": {"followerCount": doc["n"]}})
                     for doc in db.follows.aggregate([{"$group": {"_id": "$followingId", "n": {"$sum": 1}}}])])
db.users.find_one({"_id": "user:112"}, {"name": 1, "followerCount": 1})

# %% [markdown]
# From now on every follow and unfollow maintains it. The edge insert comes first: the unique index decides
# whether this is a new follow, and only then does the counter move. A repeated follow changes nothing.

# %%
def follow(db, follower_id, following_id, now):
    """Insert the edge; on success increment the followed user's counter. False for a repeated follow."""
    try:
        db.follows.insert_one({"_id": f"follow:{follower_id[5:]}:{following_id[5:]}", "followerId": follower_id,
                               "followingId": following_id, "createdAt": now})
    except DuplicateKeyError:
        return False
    db.users.update_one({"_id": following_id}, {"$inc": {"followerCount": 1}})
    return True


def unfollow(db, follower_id, following_id):
    """Delete the edge; decrement the counter only when an edge was deleted."""
    if db.follows.delete_one({"followerId": follower_id, "followingId": following_id}).deleted_count:
        db.users.update_one({"_id": following_id}, {"$inc": {"followerCount": -1}})
        return True
    return False


print("Fred follows Sam again:", follow(db, "user:234", "user:112", dt.datetime(2026, 10, 6)))
print("Sam's counter:", db.users.find_one({"_id": "user:112"})["followerCount"])

# %% [markdown]
# ### The celebrity's counter is a write hotspot
#
# Who gets followed is not uniform: new followers go where the followers already are. Replay a burst of 1,000
# new sign-ups, each following one account drawn in proportion to today's follower counts, and count how the
# writes spread over documents: each edge is a new document, but every counter increment for Sam lands on
# **one** document.

# %%
import random
from collections import Counter

rng = random.Random(4)
counts_now = {d["_id"]: d["n"] for d in db.follows.aggregate([{"$group": {"_id": "$followingId", "n": {"$sum": 1}}}])}
targets = rng.choices(list(counts_now), weights=list(counts_now.values()), k=1000)
user_ids = [u["_id"] for u in db.users.find({}, {"_id": 1})]
counter_writes, edge_writes, new_edges = Counter(), Counter(), []
t0 = dt.datetime(2026, 10, 7)
for k, target in enumerate(targets):
    follower = f"user:new{k:04d}"
    if follow(db, follower, target, t0 + dt.timedelta(seconds=k)):
        counter_writes[target] += 1
        edge_writes[f"follow:{follower[5:]}:{target[5:]}"] += 1
        new_edges.append((follower, target))

new_follows = sum(counter_writes.values())
hottest, hottest_writes = counter_writes.most_common(1)[0]
share = hottest_writes / new_follows
burst = pd.DataFrame({
    "documents written": [len(edge_writes), len(counter_writes)],
    "most writes on one document": [max(edge_writes.values()), hottest_writes],
}, index=["edge inserts (follows)", "counter increments (users)"])
print(f"{new_follows} new follows; {hottest} received {hottest_writes} of them ({share:.0%})")
burst

# %% [markdown]
# The edges spread over as many documents as there were follows; the counters do not. Why that matters:
# MongoDB's storage engine lets many clients write *different* documents at the same time, but two writes to
# the *same* document conflict; one goes first and the server retries the other, so they take turns
# ([WiredTiger: document-level concurrency](https://www.mongodb.com/docs/manual/core/wiredtiger/)). At the
# workload's rate of follows, the burst's share says how many writes per second take turns on the celebrity's
# one counter document:

# %%
follow_rate = 500  # per second, from the workload table
view_rate = 5_000
print(f"writes per second on {hottest}'s document: {follow_rate * share:,.0f} (estimated: the workload's "
      f"{follow_rate} follows/s x the burst's {share:.1%}), one after another")
print(f"the counter is still exact: followerCount {db.users.find_one({'_id': hottest})['followerCount']:,} "
      f"= edges {db.follows.count_documents({'followingId': hottest}):,}")

# %% [markdown]
# Unlike the edge inserts, those writes cannot spread out: however many follows arrive, Sam's go to one
# document. When that becomes the bottleneck, split the counter: `$inc` one of S counter documents chosen by
# the follower's id, and add the S documents up on a profile view. The burst's follows, replayed on a split
# counter with S = 10 (a collection `follower_counts` of its own, counting only the burst; the replay sends the
# burst's increments in one `bulk_write`, each still a write of its own to its counter document):

# %%
import zlib

S = 10
db.follower_counts.bulk_write([UpdateOne({"_id": f"{target}#{zlib.crc32(follower.encode()) % S}"},
                                         {"$inc": {"n": 1}}, upsert=True) for follower, target in new_edges])


def read_split(d):
    return list(d.follower_counts.find({"_id": {"$gte": f"{hottest}#", "$lt": f"{hottest}$"}}))


split_docs = read_split(db)
split_read = labkit.ledger.measure(db, read_split)
one_read = labkit.ledger.measure(db, lambda d: d.users.find_one({"_id": hottest}, {"followerCount": 1}))
print(f"{hottest}'s burst follows in the split counter: {sum(d['n'] for d in split_docs)} "
      f"over {len(split_docs)} documents")
pd.DataFrame({"most writes on one counter document": [hottest_writes, max(d["n"] for d in split_docs)],
              "documents examined per profile view": [one_read.docs_examined, split_read.docs_examined]},
             index=["one counter on the user", f"split counter, S = {S}"])

# %% [markdown]
# The single counter is read through the `_id` index in one step (`EXPRESS_IXSCAN`, explained in lesson 01):
# one key, one document, instead of one key per follower:

# %%
counter_plan = labkit.show_plan(db.users.find({"_id": "user:112"}, {"followerCount": 1}).explain())
counter_plan

# %% [markdown]
# ### The same comparison as a ledger
#
# `labkit.Ledger` measures both designs' operations from the commands they send (keys and documents examined from
# each command's explain, round trips, documents written) and multiplies by the workload's rates. The follow is
# a new follower of Sam, the celebrity. Note what changed since the count was measured above: the burst gave
# Sam more followers, so counting them now reads more keys:

# %%
print("Sam's followers now:", db.follows.count_documents({"followingId": "user:112"}),
      "| keys a count examines now:", count_cost("user:112")["keys examined"])

# %%
def count_on_read(d):
    return d.follows.count_documents({"followingId": "user:112"})


def count_from_counter(d):
    return d.users.find_one({"_id": "user:112"}, {"followerCount": 1})


def follow_plain(d):
    d.follows.insert_one({"_id": "follow:ledger-a:112", "followerId": "user:ledger-a", "followingId": "user:112",
                          "createdAt": dt.datetime(2026, 10, 9)})


def follow_counted(d):
    follow(d, "user:ledger-b", "user:112", dt.datetime(2026, 10, 9))


ledger = labkit.Ledger({"show X's follower count": view_rate, "follow / unfollow": follow_rate})
ledger.measure("count on read", "show X's follower count", db, count_on_read)
ledger.measure("maintained counter", "show X's follower count", db, count_from_counter)
ledger.measure("count on read", "follow / unfollow", db, follow_plain)
ledger.measure("maintained counter", "follow / unfollow", db, follow_counted)
ledger.per_operation()

# %%
ledger.totals()

# %% [markdown]
# Move the rates: the counter's extra write per follow only wins back its cost while profile views keep coming.
# The break-even, from the measured costs:

# %%
ledger_widget = ledger.widget("keys examined", max_rate=10_000)
ledger_widget

# %%
views, designs = "show X's follower count", ("maintained counter", "count on read")
saved_per_view = ledger.difference("keys examined", views, *designs)
extra_per_follow = -ledger.difference("keys examined", "follow / unfollow", *designs)
print(f"keys saved per profile view: {saved_per_view:,}; extra keys per follow: {extra_per_follow}")
print(f"at {follow_rate} follows per second the counter wins on keys examined once profile views exceed "
      f"{ledger.break_even(views, *designs, metric='keys examined'):.2f} per second")

# %% [markdown]
# ## Explore: a celebrity's followers
#
# For the follower count the slider asks for, an account with exactly that many followers is measured: what
# counting costs with a maintained counter, and how big that user document would be if it kept all follower
# ids in an array (with a million followers it would be past the 16 MiB document limit,
# [limits](https://www.mongodb.com/docs/manual/reference/limits/)). (Accounts at every 1,000 followers, up to 4,000,
# are built once; the slider grows or shrinks the nearest one by the difference, so a move writes only that
# difference, and restores the account it changed before, however far it jumps.)

# %%
from labkit.plots import bars_against_limit
from labkit.resize import AccountLadder
from labkit.widgets import explorer

sam_doc = db.users.find_one({"_id": "user:112"})
follower_pool = sorted(user_ids)


def slider_edge(account, i):
    return {"followerId": follower_pool[i], "followingId": account, "createdAt": dt.datetime(2026, 10, 8)}


ladder = AccountLadder(db.follows, "user:slider-", 4000, 1000, slider_edge, id_prefix="follow:")
db.users.insert_many([{"_id": a, "name": "Slider", "roles": []} for a in ladder.accounts])


def celebrity(followers):
    account = ladder.account_for(followers)
    cost = count_cost(account)
    return {"account": account, "followers": cost["followers"],
            "count: keys examined": cost["keys examined"], "counter: keys examined": 1,
            "user doc with followerIds (bytes)": doc_size_with_array(sam_doc, "followerIds", cost["followers"],
                                                                      lambda i: f"user:{i}"),
            "user doc with followerIds, 1M followers (bytes)": doc_size_with_array(sam_doc, "followerIds", 1_000_000,
                                                                                   lambda i: f"user:{i}")}


fans = explorer(celebrity, sliders={"followers": (1, 4000, 1000, 50)}, title="Followers of a celebrity",
                draw=lambda ax, v, r: bars_against_limit(
                    ax, ["this account", "1M followers"],
                    [r["user doc with followerIds (bytes)"], r["user doc with followerIds, 1M followers (bytes)"]]))
fans

# %% [markdown]
# ## Exercise 1: likes
#
# A changed scenario: likes are another unbounded many-to-many, one `likes` document
# `{userId, postId, createdAt}` per like. Two pages read them: **who liked post P** (a page of 20, by `userId`)
# and **the posts user U liked** (a page of 20, newest first); and a user can like a post only once. Index
# `practice.likes` (it has no index but `_id`) so that both pages come out of an index in order and a second
# like of the same post by the same user is refused. `ex.check(practice.likes)` tries your indexes on likes of
# its own.

# %%
practice = labkit.fresh_db("04_practice")
practice.likes.insert_many([{"_id": f"like:{u:03d}:{p:03d}", "userId": f"u:{u:03d}", "postId": f"p:{p:03d}",
                             "createdAt": dt.datetime(2026, 6, 1) + dt.timedelta(minutes=u * 100 + p)}
                            for u in range(1, 200) for p in range(1, 60) if (u * p) % 7 == 0])
ex = labkit.exercises.get("04-likes-indexes")
ex

# %% tags=["solution"]
practice.likes.create_index({"postId": 1, "userId": 1}, unique=True)
practice.likes.create_index({"userId": 1, "createdAt": -1})
ex.check(practice.likes)

# %% [markdown]
# ## Exercise: members of a group
#
# A changed scenario: users join **groups**. One `memberships` document `{groupId, userId}` per membership (a
# unique index on the pair already exists), and each group keeps `memberCount` for its page header. Write
# `join(db, group_id, user_id)` and `leave(db, group_id, user_id)`: a join adds the membership and moves the
# counter by one; a repeated join (a double click) or leaving a group one is not in changes nothing.
# `ex2.check(practice, join, leave)` runs your functions on a database of its own.

# %%
ex2 = labkit.exercises.get("04-member-counter")
ex2

# %% tags=["solution"]
def join(db, group_id, user_id):
    try:
        db.memberships.insert_one({"groupId": group_id, "userId": user_id})
    except DuplicateKeyError:
        return
    db.groups.update_one({"_id": group_id}, {"$inc": {"memberCount": 1}})


def leave(db, group_id, user_id):
    if db.memberships.delete_one({"groupId": group_id, "userId": user_id}).deleted_count:
        db.groups.update_one({"_id": group_id}, {"$inc": {"memberCount": -1}})


ex2.check(practice, join, leave)

# %% [markdown]
# ## Summary
#
# - Unbounded many-to-many: one document per relationship, never growing arrays on both sides.
# - Two compound indexes serve both directions; the unique one also forbids duplicate edges.
# - Counting walks the matches; keep a counter when the count is read far more often than it changes, and
#   maintain it on every follow, after the edge insert succeeded.
# - A counter concentrates a celebrity's follows on one document (a write hotspot): those writes take turns;
#   split the counter when the turns become the bottleneck.
#
# **Next:** 05 · two-way references and how to keep copies consistent.

# %% [markdown] tags=["sources"]
# ## Sources
#
# 1. [MongoDB manual: Model Many-to-Many Relationships with Embedded Documents](https://www.mongodb.com/docs/manual/tutorial/model-embedded-many-to-many-relationships-between-documents/)
# 2. [MongoDB manual: Unique Indexes](https://www.mongodb.com/docs/manual/core/index-unique/)
# 3. [MongoDB manual: Compound Indexes](https://www.mongodb.com/docs/manual/core/indexes/index-types/index-compound/)
# 4. [MongoDB manual: Explain Results](https://www.mongodb.com/docs/manual/reference/explain-results/)
# 5. [mongodb/mongo src/mongo/db/exec/count_scan.cpp (COUNT_SCAN counts the key that ends the range)](https://github.com/mongodb/mongo/blob/v8.0/src/mongo/db/exec/count_scan.cpp)
# 6. [MongoDB specifications: CRUD, countDocuments (an aggregate with \$match and \$group)](https://github.com/mongodb/specifications/blob/master/source/crud/crud.md)
# 7. [MongoDB manual: WiredTiger Storage Engine (document-level concurrency)](https://www.mongodb.com/docs/manual/core/wiredtiger/)
# 8. [MongoDB manual: MongoDB Limits and Thresholds](https://www.mongodb.com/docs/manual/reference/limits/)

# %% [markdown] tags=["navigation"]
# [← 03 · Resolve references: separate queries or \$lookup](03_lookup.ipynb) · [Contents](../CONTENTS.md) · [05 · Two-way references and keeping copies consistent →](05_two_way.ipynb)
