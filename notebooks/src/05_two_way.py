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
#     title: "Two-way references and keeping copies consistent"
#     section: Relationships
#     exercise_minutes: 15
#     demo: >-
#       Crash a follow after the edge write and show the drift; repeat inside with_transaction; then run the reconciliation job and watch drift go to zero.
#     mistakes:
#     - "Reconciling by adding missing ids only, without removing ids that should not be there."
#     - "Retrying a follow whose edge insert_one fails with DuplicateKeyError, so the copies are never repaired."
#     - "Using $push in a retried write: each retry adds the id again; $addToSet adds it once."
#     sources:
#     - title: "MongoDB manual: Atomicity and Transactions"
#       url: https://www.mongodb.com/docs/manual/core/write-operations-atomicity/
#     - title: "MongoDB manual: Transactions"
#       url: https://www.mongodb.com/docs/manual/core/transactions/
#     - title: "MongoDB manual: Production Considerations (transactions)"
#       url: https://www.mongodb.com/docs/manual/core/transactions-production-consideration/
#     - title: "mongodb/mongo jstests/core/txns/write_conflicts_with_non_txns.js"
#       url: https://github.com/mongodb/mongo/blob/v8.0/jstests/core/txns/write_conflicts_with_non_txns.js
#     - title: "MongoDB manual: Data Consistency"
#       url: https://www.mongodb.com/docs/manual/data-modeling/data-consistency/
#     - title: "MongoDB manual: MongoDB Limits and Thresholds"
#       url: https://www.mongodb.com/docs/manual/reference/limits/
#     - title: "MongoDB manual: $addToSet"
#       url: https://www.mongodb.com/docs/manual/reference/operator/update/addToSet/
#     - title: "MongoDB manual: Partial Indexes"
#       url: https://www.mongodb.com/docs/manual/core/index-partial/
#     - title: "MongoDB manual: Change Streams"
#       url: https://www.mongodb.com/docs/manual/changeStreams/
#     - title: "MongoDB manual: Change Events"
#       url: https://www.mongodb.com/docs/manual/reference/change-events/
#     - title: "MongoDB manual: Replica Set Oplog"
#       url: https://www.mongodb.com/docs/manual/core/replica-set-oplog/
# ---

# %% [markdown]
# # 05 · Two-way references and keeping copies consistent
#
# **You will learn**
# - what it costs to store one relationship in three places (the `follows` edge plus an id array on each user);
# - how a failure halfway through a follow leaves those places disagreeing;
# - to make the writes all-or-nothing with a multi-document transaction (and what a real deployment needs);
# - what transactions do not solve: an array that keeps growing, a parent everyone writes to;
# - the alternative: a durable asynchronous update (the to-do is written with the edge, or read from a change
#   stream that resumes after a crash), idempotent retries, and a reconciliation job that rebuilds the copies.
#
# **Time:** about 40 minutes.

# %%
import datetime as dt

import pandas as pd

import labkit
from labkit.faults import SimulatedCrash, checkpoint, crash_at

db = labkit.fresh_db("05_two_way")
client = db.client
labkit.seed.social(db, users=300, seed=5, celebrity_followers=200)

# %% [markdown]
# ## The workload

# %%
workload = pd.DataFrame(
    [
        ("follow / unfollow", "write", 300, "the edge and both users' arrays change together"),
        ("show whom X follows, who follows X", "read", 2000, "ids straight from the user document"),
    ],
    columns=["operation", "type", "per_second", "needs"],
)
workload

# %% [markdown]
# (Illustrative rates: reads outnumber follows, which is why the copies exist at all.)
#
# Two-way referencing keeps `followingIds` on the follower and `followerIds` on the followed user, next to
# the authoritative `follows` edges. Build those arrays from the edges once:

# %%
def rebuild_arrays(db):
    """Reconciliation: recompute both arrays of every user from the authoritative follows edges."""
    following = {d["_id"]: sorted(d["ids"]) for d in db.follows.aggregate(
        [{"$group": {"_id": "$followerId", "ids": {"$push": "$followingId"}}}])}
    followers = {d["_id"]: sorted(d["ids"]) for d in db.follows.aggregate(
        [{"$group": {"_id": "$followingId", "ids": {"$push": "$followerId"}}}])}
    changed = 0
    for user in db.users.find({}, {"followingIds": 1, "followerIds": 1}):
        want = {"followingIds": following.get(user["_id"], []), "followerIds": followers.get(user["_id"], [])}
        if {k: sorted(user.get(k, [])) for k in want} != want:
            db.users.update_one({"_id": user["_id"]}, {"$set": want})
            changed += 1
    return changed


print("users updated:", rebuild_arrays(db))


# %%
def drift(db):
    """How far the copies are from the edges: users whose arrays disagree, and edges missing or extra."""
    edges = {(e["followerId"], e["followingId"]) for e in db.follows.find({}, {"followerId": 1, "followingId": 1})}
    from_following, from_followers = set(), set()
    for u in db.users.find({}, {"followingIds": 1, "followerIds": 1}):
        from_following |= {(u["_id"], b) for b in u.get("followingIds", [])}
        from_followers |= {(a, u["_id"]) for a in u.get("followerIds", [])}
    bad = {a for a, _ in edges ^ from_following} | {b for _, b in edges ^ from_followers}
    return {"edges": len(edges), "missing or extra in followingIds": len(edges ^ from_following),
            "missing or extra in followerIds": len(edges ^ from_followers), "users out of step": len(bad)}


drift(db)

# %% [markdown]
# ## The naive follow: three writes in a row
#
# Each write is atomic on its own document; writes to several documents are not atomic together
# ([atomicity](https://www.mongodb.com/docs/manual/core/write-operations-atomicity/)). The checkpoints mark the points between writes where a process
# can die (a deploy, an out-of-memory kill, a lost connection).

# %%
def follow(db, a, b, when, session=None):
    db.follows.insert_one({"_id": f"follow:{a[5:]}:{b[5:]}", "followerId": a, "followingId": b, "createdAt": when},
                          session=session)
    checkpoint("after the edge")
    db.users.update_one({"_id": a}, {"$addToSet": {"followingIds": b}}, session=session)
    checkpoint("after the follower's array")
    db.users.update_one({"_id": b}, {"$addToSet": {"followerIds": a}}, session=session)


when = dt.datetime(2026, 10, 7, 12, 0)
already = {e["followingId"] for e in db.follows.find({"followerId": "user:234"})}
candidates = [u["_id"] for u in db.users.find({}, {"_id": 1}).sort("_id", 1)
              if u["_id"] not in already and u["_id"] != "user:234"]
follow(db, "user:234", candidates[0], when)
drift(db)

# %% [markdown]
# Now the process dies after the edge is written:

# %%
try:
    with crash_at("after the edge"):
        follow(db, "user:234", candidates[1], when)
except SimulatedCrash as exc:
    print(exc)
drift(db)

# %% [markdown]
# The edge exists, but neither user's array knows. Readers that use the arrays now disagree with readers that
# use the edges.

# %% [markdown]
# ## Fix 1: a multi-document transaction
#
# In a transaction the three writes commit together or not at all. `with_transaction` aborts when the
# callback raises, so the crash leaves nothing behind. On a real deployment transactions need a replica set
# or a sharded cluster (a standalone server refuses them), and in most cases they cost more than
# single-document writes ([transactions](https://www.mongodb.com/docs/manual/core/transactions/)). Every write
# in the callback passes the session (`follow` takes `session=s` for that): an operation sent without it is not
# part of the transaction, and an abort does not undo it.
#
# **Predict first.** The next cell crashes the follow *after* the edge and the follower's array were written,
# inside `with_transaction`. How many follow edges for that pair will there be afterwards? Record it with
# `ex_txn.predict(...)`.

# %%
ex_txn = labkit.exercises.get("05-predict-transaction-crash")
ex_txn

# %% tags=["solution"]
ex_txn.predict(0)

# %% tags=["reveal"]
rebuild_arrays(db)
before = drift(db)
try:
    with client.start_session() as session, crash_at("after the follower's array"):
        session.with_transaction(lambda s: follow(db, "user:234", candidates[2], when, session=s))
except SimulatedCrash as exc:
    print(exc)
edges_after_crash = db.follows.count_documents({"followerId": "user:234", "followingId": candidates[2]})
print("edge written:", edges_after_crash)
pd.DataFrame({"before": before, "after the crash": drift(db)})

# %% tags=["reveal"]
ex_txn.check(edges_after_crash)

# %%
with client.start_session() as session:
    session.with_transaction(lambda s: follow(db, "user:234", candidates[2], when, session=s))
drift(db)

# %% [markdown]
# ### What a transaction does not solve
#
# The transaction keeps the three copies in step. It does not change what they cost: Sam's `followerIds`
# still gains an id with every follower, and every follow of Sam still writes Sam's document. Measured on one
# more follow of Sam, inside a transaction:

# %%
def sam_bytes():
    return next(db.users.aggregate([{"$match": {"_id": "user:112"}},
                                    {"$project": {"bytes": {"$bsonSize": "$$ROOT"}, "n": {"$size": "$followerIds"}}}]))


def follow_sam_in_transaction(d):
    with d.client.start_session() as s:
        s.with_transaction(lambda s: follow(d, "user:299", "user:112", when, session=s))


before_sam = sam_bytes()
one_follow = labkit.ledger.measure(db, follow_sam_in_transaction)
after_sam = sam_bytes()
grew = after_sam["bytes"] - before_sam["bytes"]
print(f"Sam's followers: {after_sam['n']}; his document: {after_sam['bytes']:,} bytes, {grew} bytes more than "
      f"before this follow")
print(f"documents written by the follow: {one_follow.docs_written} (the edge, the follower, and Sam)")
print(f"followers until Sam's document reaches 16 MiB: {(16 * 2**20 - after_sam['bytes']) // grew:,} "
      f"(estimated: (16 MiB - {after_sam['bytes']:,} bytes) / {grew} bytes per follower)")

# %% [markdown]
# So the array still grows towards the 16 MiB limit ([limits](https://www.mongodb.com/docs/manual/reference/limits/)),
# and Sam's document takes a write for every new follower. A transaction does not help there, and adds a cost
# of its own under load: two transactions that write the same document conflict, and the second fails with a `WriteConflict`
# error and must run again from the start, while a plain write to a document that an open transaction has
# changed waits until that transaction ends
# ([production considerations](https://www.mongodb.com/docs/manual/core/transactions-production-consideration/),
# [server test](https://github.com/mongodb/mongo/blob/v8.0/jstests/core/txns/write_conflicts_with_non_txns.js)).
# A popular account's document becomes the place where follows wait for each other.

# %% [markdown]
# ## Fix 2: durable asynchronous updates, retries and reconciliation
#
# Without transactions: write the authoritative edge first, update the copies afterwards (asynchronously) and
# retry them until they succeed; a periodic reconciliation job checks the copies against the edges and repairs
# whatever was missed. MongoDB's manual lists updates that follow a change after a short delay (there, Atlas
# Database Triggers) among the ways to keep duplicated data consistent, for applications that can read
# slightly stale copies ([data consistency](https://www.mongodb.com/docs/manual/data-modeling/data-consistency/)). Three parts make
# it work; we build them one by one. First, the safety net: break many follows on purpose, then run the job:

# %%
targets = candidates[3:63]
crashed = 0
for i, b in enumerate(targets):
    try:
        with crash_at("after the edge" if i % 3 == 0 else "after the follower's array", on=1 if i % 2 == 0 else 2):
            follow(db, "user:234", b, when)
    except SimulatedCrash:
        crashed += 1
print(f"follows attempted: {len(targets)}, crashed halfway: {crashed}")
drift(db)

# %%
print("users repaired:", rebuild_arrays(db))
drift(db)

# %% [markdown]
# ### Retries need idempotent writes
#
# An asynchronous retry runs the whole follow again. The naive `follow` cannot be retried: its edge already
# exists, so the retry fails on its first write (the edge's `_id`) and never reaches the copies. Crash one follow
# after the edge, then retry it:

# %%
retry_target = candidates[63]
try:
    with crash_at("after the edge"):
        follow(db, "user:234", retry_target, when)
except SimulatedCrash as exc:
    print(exc)
try:
    follow(db, "user:234", retry_target, when)
except Exception as exc:  # the server refuses the second edge
    print("retry failed:", type(exc).__name__, "| code:", getattr(exc, "code", None))
drift(db)

# %% [markdown]
# An idempotent follow upserts the edge on its key and adds to the arrays with
# [`$addToSet`](https://www.mongodb.com/docs/manual/reference/operator/update/addToSet/) (which adds a value
# only if the array does not hold it yet): repeating it after a crash at any point, or after a success,
# finishes what is missing and changes nothing else.

# %%
def follow_idempotent(db, a, b, when):
    db.follows.update_one({"_id": f"follow:{a[5:]}:{b[5:]}"},
                          {"$setOnInsert": {"followerId": a, "followingId": b, "createdAt": when}}, upsert=True)
    db.users.update_one({"_id": a}, {"$addToSet": {"followingIds": b}})
    db.users.update_one({"_id": b}, {"$addToSet": {"followerIds": a}})


for attempt in (1, 2):
    follow_idempotent(db, "user:234", retry_target, when)
    print(f"after retry {attempt}:", drift(db))

# %% [markdown]
# ### Durable: the edge carries its own to-do
#
# "Retry until it succeeds" needs someone to remember what is still to do. If that memory is a queue in the
# application process, the crash that interrupted the follow also loses the queue. Make it durable: the edge
# is inserted *with* a `pending` field naming the copies still to update. One insert writes both, atomically,
# so an edge can never exist without its to-do. The follow itself is then a single write:

# %%
def follow_durable(db, a, b, when):
    db.follows.insert_one({"_id": f"follow:{a[5:]}:{b[5:]}", "followerId": a, "followingId": b, "createdAt": when,
                           "pending": ["followingIds", "followerIds"]})

# %% [markdown]
# A worker, run as often as the copies must be fresh, finds the edges that still have `pending`, applies each
# copy with an idempotent `$addToSet`, and only then removes the field. A partial index holds only the edges
# with `pending`, so finding the work reads only the work
# ([partial indexes](https://www.mongodb.com/docs/manual/core/index-partial/)). If the worker dies halfway, the
# field is still there and the next run repeats the copies, which changes nothing that was already done.

# %%
db.follows.create_index({"pending": 1}, partialFilterExpression={"pending": {"$exists": True}})


def apply_pending(db):
    """Apply the copies of every edge that still has a to-do; return how many edges it finished."""
    done = 0
    for edge in db.follows.find({"pending": {"$exists": True}}).sort("_id", 1):
        a, b = edge["followerId"], edge["followingId"]
        if "followingIds" in edge["pending"]:
            db.users.update_one({"_id": a}, {"$addToSet": {"followingIds": b}})
        checkpoint("worker: after the follower's array")
        if "followerIds" in edge["pending"]:
            db.users.update_one({"_id": b}, {"$addToSet": {"followerIds": a}})
        db.follows.update_one({"_id": edge["_id"]}, {"$unset": {"pending": ""}})
        done += 1
    return done

# %% [markdown]
# Twenty durable follows, then a worker run that dies on its fifth edge, halfway between the two copies:

# %%
durable_targets = candidates[64:84]
for b in durable_targets:
    follow_durable(db, "user:234", b, when)
try:
    with crash_at("worker: after the follower's array", on=5):
        apply_pending(db)
except SimulatedCrash as exc:
    print(exc)
print("edges still pending:", db.follows.count_documents({"pending": {"$exists": True}}))
drift(db)

# %% [markdown]
# The next run finishes the work, the fifth edge included:

# %%
print("edges finished by the next run:", apply_pending(db))
print("edges still pending:", db.follows.count_documents({"pending": {"$exists": True}}))
drift(db)

# %% [markdown]
# An unfollow works the same way in reverse: mark the edge with its to-do (the ids to `$pull` from both
# arrays) instead of deleting it, let the worker apply the pulls, and delete the edge last. The
# reconciliation job stays as the safety net for anything a bug, or a hand edit, leaves behind.

# %% [markdown]
# ### Or: read the changes themselves (a change stream)
#
# The to-do field is one durable memory. The server keeps another one already: on a replica set every write is
# recorded in the **oplog**, the capped log of operations that the other members copy to stay in step
# ([oplog](https://www.mongodb.com/docs/manual/core/replica-set-oplog/)). A **change stream** lets an
# application read that record for one collection as events, in the order the writes happened: an `insert`
# event carries the new document in `fullDocument`, a `delete` event the deleted document's `_id` in
# `documentKey` ([change events](https://www.mongodb.com/docs/manual/reference/change-events/)). Each event's
# `_id` is its **resume token**: a worker that saves the token of the last change it applied can open a new
# stream with `resume_after=<token>` after a crash and continue with the next change
# ([change streams](https://www.mongodb.com/docs/manual/changeStreams/)).
#
# The follow is then a single insert of the edge (and an unfollow a single delete), with no to-do field. The
# worker saves its token in a `workers` document *after* each change's copies: a crash between the two makes it
# apply that change again, which `$addToSet` and `$pull` make harmless.
#
# Not every deployment opens a change stream (a standalone server refuses, see below). There `watch()` raises
# `OperationFailure`; `start_worker` prints why and returns `None`, and `run_worker` runs the reconciliation
# job instead, so the cells below still run and the copies still end up matching the edges. Any other error
# is raised as it is.

# %%
from pymongo.errors import OperationFailure

FOLLOW_CHANGES = [{"$match": {"operationType": {"$in": ["insert", "delete"]}}}]


def start_worker(db):
    """Open the follows change stream after the saved token (at the present on the first start); None where
    the deployment refuses change streams."""
    state = db.workers.find_one({"_id": "follow-copies"})
    try:
        stream = db.follows.watch(FOLLOW_CHANGES, resume_after=state["token"] if state else None)
    except OperationFailure as exc:
        if (why := labkit.changestreams.refusal(exc)) is None:
            raise  # any other error is a real failure
        print(f"{why}; the reconciliation job repairs the copies instead")
        return None
    if state is None:
        db.workers.insert_one({"_id": "follow-copies", "token": stream.resume_token})
    return stream


def run_worker(db, stream):
    """Apply every change the stream has now to both arrays, saving the token after each; return how many."""
    if stream is None:  # no change stream on this deployment: the reconciliation job instead
        rebuild_arrays(db)
        return 0
    applied = 0
    with stream:
        while (change := stream.try_next()) is not None:
            if change["operationType"] == "insert":
                a, b = change["fullDocument"]["followerId"], change["fullDocument"]["followingId"]
                db.users.update_one({"_id": a}, {"$addToSet": {"followingIds": b}})
                db.users.update_one({"_id": b}, {"$addToSet": {"followerIds": a}})
            else:  # a delete event carries only the edge's _id, "follow:<a>:<b>"
                _, a, b = change["documentKey"]["_id"].split(":")
                a, b = f"user:{a}", f"user:{b}"
                db.users.update_one({"_id": a}, {"$pull": {"followingIds": b}})
                db.users.update_one({"_id": b}, {"$pull": {"followerIds": a}})
            applied += 1
            checkpoint("stream worker: after the copies")
            db.workers.update_one({"_id": "follow-copies"}, {"$set": {"token": stream.resume_token}})
    return applied

# %% [markdown]
# The worker starts, then 10 follows and 1 unfollow arrive before it reads them. The copies lag behind the
# edges until it runs:

# %%
stream = start_worker(db)
stream_targets = candidates[84:94]
for b in stream_targets:
    db.follows.insert_one({"_id": f"follow:234:{b[5:]}", "followerId": "user:234", "followingId": b,
                           "createdAt": when})
db.follows.delete_one({"_id": f"follow:234:{stream_targets[1][5:]}"})
print(f"written before the worker reads: {len(stream_targets)} follows, 1 unfollow")
drift(db)

# %% [markdown]
# Now the worker dies on the fourth change, after its copies and before it saves that change's token. The
# restarted worker resumes after the last token it saved:

# %%
try:
    with crash_at("stream worker: after the copies", on=4):
        run_worker(db, stream)
except SimulatedCrash as exc:
    print(exc)
print("changes applied by the restarted worker:", run_worker(db, start_worker(db)))
drift(db)

# %% [markdown]
# The restarted worker applied the 4th change again and every change after it, 8 in all, and the copies match
# the edges again. What this needs on a real deployment:
#
# - a replica set or a sharded cluster: a standalone server has no oplog and refuses change streams, as it
#   refuses transactions ([change streams](https://www.mongodb.com/docs/manual/changeStreams/));
# - a token still in the oplog: the oplog is capped, so it holds a window of recent writes, and a stream
#   resumes only if the oplog still has the operation its token names
#   ([change streams](https://www.mongodb.com/docs/manual/changeStreams/),
#   [oplog](https://www.mongodb.com/docs/manual/core/replica-set-oplog/)). Writes made while the worker is down
#   are delivered when it resumes, as long as it is back within that window; a worker down for longer must
#   start a new stream and run the reconciliation job, which is why the job stays;
# - one owner: one worker (or one group of workers) applies these changes; apart from the reconciliation job,
#   nothing else writes the arrays.

# %% [markdown]
# ## Explore: failure rate and drift
#
# Replay a batch of follows where one in *N* crashes halfway, in three designs: sequential writes, the same
# writes in a transaction, and sequential writes followed by reconciliation.

# %%
from labkit.widgets import explorer

sandbox = labkit.fresh_db("05_sandbox")
labkit.seed.social(sandbox, users=60, seed=6, celebrity_followers=30, celebrity_posts=5, posts_per_user=1,
                   follows_per_user=4)
rebuild_arrays(sandbox)
baseline = {c: list(sandbox[c].find()) for c in ("users", "follows")}
sandbox_ids = sorted(u["_id"] for u in baseline["users"])
sandbox_edges = {(e["followerId"], e["followingId"]) for e in baseline["follows"]}
new_pairs = [(a, b) for a in sandbox_ids[:20] for b in sandbox_ids[-20:] if a != b and (a, b) not in sandbox_edges]


def reset_sandbox():
    for name, docs in baseline.items():
        sandbox[name].delete_many({})
        sandbox[name].insert_many([dict(d) for d in docs])


def replay(one_in, follows):
    rows = {}
    for design in ("sequential", "transaction"):
        reset_sandbox()
        for i, (a, b) in enumerate(new_pairs[:follows]):
            crash = i % one_in == 0
            try:
                with crash_at("after the edge", on=1 if crash else 10**9):
                    if design == "transaction":
                        with client.start_session() as s:
                            s.with_transaction(lambda s: follow(sandbox, a, b, when, session=s))
                    else:
                        follow(sandbox, a, b, when)
            except SimulatedCrash:
                pass
        rows[f"{design}: users out of step"] = drift(sandbox)["users out of step"]
        if design == "sequential":
            rebuild_arrays(sandbox)  # the reconciliation job, run after the same failures
            rows["sequential + reconcile: users out of step"] = drift(sandbox)["users out of step"]
    return rows


failures = explorer(replay, sliders={"one_in": (1, 20, 5), "follows": (10, 60, 30, 10)},
                    title="Crash one follow in N")
failures

# %% [markdown]
# ## Exercise
#
# `rebuild_arrays` above rewrites every user on every run. On a store of millions of users that is millions of
# writes a night to repair a handful. Write `reconcile(db)`, a job that repairs the copies **and writes only
# the users whose copies are wrong**: afterwards every user's `followerIds` and `followingIds` must match the
# `follows` edges exactly (missing ids added, ids no edge supports removed), the edges untouched.
# `ex.check(db, reconcile)` runs it on a follow graph of its own with four broken users and counts the user
# documents your job rewrote.

# %%
ex = labkit.exercises.get("05-reconcile")
ex

# %% tags=["solution"]
def reconcile(db):
    following, followers = {}, {}
    for e in db.follows.find({}, {"followerId": 1, "followingId": 1}):
        following.setdefault(e["followerId"], set()).add(e["followingId"])
        followers.setdefault(e["followingId"], set()).add(e["followerId"])
    for u in db.users.find({}, {"followingIds": 1, "followerIds": 1}):
        want = {"followingIds": sorted(following.get(u["_id"], ())), "followerIds": sorted(followers.get(u["_id"], ()))}
        fix = {f: ids for f, ids in want.items() if f not in u or set(u[f]) != set(ids)}
        if fix:
            db.users.update_one({"_id": u["_id"]}, {"$set": fix})


ex.check(db, reconcile)

# %% [markdown]
# ## Exercise 2: retry-safe enrollments
#
# Another two-way relationship: students and courses. `enrollments` holds the authoritative edges
# (`{studentId, courseId, enrolledAt}`, unique on the pair); each student keeps `courseIds` and each course
# `studentIds`. Write `enroll(db, student_id, course_id, when)`: it writes the enrollment **first**, then both
# copies, and it must be safe to **retry**: the checker calls it, then calls it again after a success, after a
# crash right after the enrollment, and after a crash between the two copies, and looks for one enrollment and
# both copies right, with no error.

# %%
ex2 = labkit.exercises.get("05-idempotent-enroll")
ex2

# %% tags=["solution"]
def enroll(db, student_id, course_id, when):
    db.enrollments.update_one({"studentId": student_id, "courseId": course_id},
                              {"$setOnInsert": {"enrolledAt": when}}, upsert=True)
    db.students.update_one({"_id": student_id}, {"$addToSet": {"courseIds": course_id}})
    db.courses.update_one({"_id": course_id}, {"$addToSet": {"studentIds": student_id}})


ex2.check(db, enroll)

# %% [markdown]
# ## Summary
#
# - One relationship stored in three places needs three writes; any of them can be the last one that happened.
# - Transactions make the writes all-or-nothing (replica sets and sharded clusters only), at a price; they
#   neither bound a growing array nor spread the writes on a popular document.
# - Without them: write the authoritative edge *with* its to-do, or let a worker follow the edges' change
#   stream and save its resume token after each change; either way the copies are applied with idempotent
#   writes, and a reconciliation job runs regularly as the safety net (and after a worker was down longer than
#   the oplog window).
# - Usually simplest: keep only the `follows` collection and its two indexes (lesson 04).
#
# **Next:** 06 · denormalization: copies, caches and snapshots.

# %% [markdown] tags=["sources"]
# ## Sources
#
# 1. [MongoDB manual: Atomicity and Transactions](https://www.mongodb.com/docs/manual/core/write-operations-atomicity/)
# 2. [MongoDB manual: Transactions](https://www.mongodb.com/docs/manual/core/transactions/)
# 3. [MongoDB manual: Production Considerations (transactions)](https://www.mongodb.com/docs/manual/core/transactions-production-consideration/)
# 4. [mongodb/mongo jstests/core/txns/write_conflicts_with_non_txns.js](https://github.com/mongodb/mongo/blob/v8.0/jstests/core/txns/write_conflicts_with_non_txns.js)
# 5. [MongoDB manual: Data Consistency](https://www.mongodb.com/docs/manual/data-modeling/data-consistency/)
# 6. [MongoDB manual: MongoDB Limits and Thresholds](https://www.mongodb.com/docs/manual/reference/limits/)
# 7. [MongoDB manual: \$addToSet](https://www.mongodb.com/docs/manual/reference/operator/update/addToSet/)
# 8. [MongoDB manual: Partial Indexes](https://www.mongodb.com/docs/manual/core/index-partial/)
# 9. [MongoDB manual: Change Streams](https://www.mongodb.com/docs/manual/changeStreams/)
# 10. [MongoDB manual: Change Events](https://www.mongodb.com/docs/manual/reference/change-events/)
# 11. [MongoDB manual: Replica Set Oplog](https://www.mongodb.com/docs/manual/core/replica-set-oplog/)

# %% [markdown] tags=["navigation"]
# [← 04 · One-to-infinity: the follows relationship collection](04_follows.ipynb) · [Contents](../CONTENTS.md) · [06 · Denormalization: copies, caches and snapshots →](06_denormalization.ipynb)
