# ---
# jupyter:
#   jupytext:
#     formats: ipynb,src//py:percent
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
#   labkit:
#     minutes: 30
#     exercise_minutes: 10
#     title: "Anti-pattern: overuse of $lookup"
#     section: Anti-patterns
#     demo: "Rank the query log by frequency × duration, then replace the hot join with an extended reference."
#     mistakes: ["Ranking slow queries by duration instead of frequency × duration", "Copying the whole referenced document instead of the few fields the read needs", "Dropping the reference after copying fields", "Counting on the profiler where the deployment refuses it (Atlas Free and Flex)"]
#     sources:
#     - title: "MongoDB manual: Reduce $lookup Operations"
#       url: https://www.mongodb.com/docs/manual/data-modeling/design-antipatterns/reduce-lookup-operations/
#     - title: "MongoDB manual: Schema Design Anti-Patterns (Performance Advisor)"
#       url: https://www.mongodb.com/docs/manual/data-modeling/design-antipatterns/
#     - title: "MongoDB manual: Database Profiler"
#       url: https://www.mongodb.com/docs/manual/tutorial/manage-the-database-profiler/
#     - title: "MongoDB manual: Database Profiler Output"
#       url: https://www.mongodb.com/docs/manual/reference/database-profiler/
#     - title: "MongoDB Atlas: Unsupported Commands (Free and Flex clusters)"
#       url: https://www.mongodb.com/docs/atlas/unsupported-commands/
#     - title: "MongoDB Atlas: Query Shape Insights"
#       url: https://www.mongodb.com/docs/atlas/query-shape-insights/
#     - title: "MongoDB manual: $lookup (aggregation stage)"
#       url: https://www.mongodb.com/docs/manual/reference/operator/aggregation/lookup/
#     - title: "mongodb/mongo jstests/noPassthrough/lookup_pushdown.js (join strategies)"
#       url: https://github.com/mongodb/mongo/blob/v8.0/jstests/noPassthrough/lookup_pushdown.js
#     - title: "MongoDB manual: Explain Results"
#       url: https://www.mongodb.com/docs/manual/reference/explain-results/
#     - title: "MongoDB manual: $merge (aggregation stage)"
#       url: https://www.mongodb.com/docs/manual/reference/operator/aggregation/merge/
# ---

# %% [markdown]
# # 38 · Anti-pattern: overuse of `$lookup`
#
# **You will learn**
# - that `$lookup` is fine for occasional joins and an anti-pattern when the most frequent read depends on it;
# - to find joins in a query log (the profiler, or the driver's command monitoring where the profiler is
#   refused) and rank them by **frequency**, then frequency × cost, not by duration;
# - what a join costs per input document, and why an unindexed `foreignField` is the worst case;
# - the extended reference: copy the few fields the hot read needs, and keep the reference for the rest.
#
# **Time:** about 30 minutes.

# %%
import datetime as dt

import pandas as pd

import labkit

db = labkit.fresh_db("38_lookup_overuse")
print("engine:", labkit.describe(db.client))

# %% [markdown]
# A support tool: 1,000 customers and 8,000 orders, generated deterministically. Orders reference their
# customer by `customerId`.

# %%
TIERS = ["bronze", "silver", "gold"]
db.customers.insert_many([{"_id": f"cust:{c:04d}", "name": f"Customer {c:04d}", "tier": TIERS[c % 3],
                           "email": f"c{c}@example.com", "address": {"city": "Lyon", "street": f"{c} Rue Neuve"},
                           "notes": "Prefers email. " * 10} for c in range(1000)])
db.orders.insert_many([{"_id": f"order:{o:05d}", "customerId": f"cust:{(o * 7) % 1000:04d}",
                        "total": round((o * 37) % 400 + 0.5, 2), "status": ["open", "paid", "shipped"][o % 3],
                        "createdAt": dt.datetime(2026, 1, 1) + dt.timedelta(minutes=11 * o)} for o in range(8000)])
db.orders.create_index([("status", 1), ("createdAt", -1)])
print(db.customers.count_documents({}), "customers,", db.orders.count_documents({}), "orders")

# %% [markdown]
# ## The workload
#
# What the application does, how often, and what each operation needs:

# %%
labkit.workload_table([
    ('support queue: 20 newest open orders with customer name and tier', 'read', '500/s', 'order fields, customer name and tier'),
    ('customer detail page', 'read', '20/s', 'one customer by _id'),
    ('nightly revenue report by tier', 'read', '1/day', 'may take seconds'),
    ('customer renames themselves', 'write', '5/day (0.00006/s)', 'name must eventually show everywhere'),
])

# %% [markdown]
# ## Detect: a query log, sorted by frequency
#
# The table above is what the team believes. The database can tell what actually runs: the **database
# profiler** records each operation in `<db>.system.profile`, with its command, duration (`millis`) and the
# keys and documents it examined ([manual: profiler](https://www.mongodb.com/docs/manual/tutorial/manage-the-database-profiler/),
# [manual: profiler output](https://www.mongodb.com/docs/manual/reference/database-profiler/)); the slow-query
# log holds the same fields for slow operations. Look for pipelines containing `$lookup` and sort them by
# **frequency**, not by duration
# ([manual: reduce `$lookup` operations](https://www.mongodb.com/docs/manual/data-modeling/design-antipatterns/reduce-lookup-operations/)).
#
# Atlas Free and Flex clusters refuse the `profile` command
# ([Atlas: unsupported commands](https://www.mongodb.com/docs/atlas/unsupported-commands/)).
# `labkit.querylog.capture(db, run)` therefore runs `run(db)` under the profiler where it is allowed (level 2
# for the run, then the previous level again) and, where it is refused, records the same operations from the
# driver's own command monitoring, a log any application can produce. Its `summary()` groups the log by
# **query shape**: the command, the collection, the filter's fields and the pipeline's stages, without values.

# %%
queue_pipeline = [
    {"$match": {"status": "open"}},
    {"$sort": {"createdAt": -1}},
    {"$limit": 20},
    {"$lookup": {"from": "customers", "localField": "customerId", "foreignField": "_id", "as": "customer",
                 "pipeline": [{"$project": {"name": 1, "tier": 1}}]}},
]
report_pipeline = [
    {"$lookup": {"from": "customers", "localField": "customerId", "foreignField": "_id", "as": "customer"}},
    {"$group": {"_id": {"$first": "$customer.tier"}, "revenue": {"$sum": "$total"}}},
]
WINDOW_SECONDS = 0.2


def traffic(d):
    """0.2 seconds of the support tool at the table's rates (100 queue views, 4 customer pages), in the moment
    the nightly report starts."""
    for i in range(100):
        list(d.orders.aggregate(queue_pipeline))
        if i % 25 == 0:
            d.customers.find_one({"_id": f"cust:{(i * 37) % 1000:04d}"})
    list(d.orders.aggregate(report_pipeline))


log = labkit.querylog.capture(db, traffic)
print(f"{len(log)} operations recorded in a window of {WINDOW_SECONDS} s, from the {log.source}")
print(f"windows in a day: {86_400 / WINDOW_SECONDS:,.0f}")

# %% [markdown]
# The log per query shape, the most frequent first (names added for reading; the log itself knows only shapes):

# %%
OPERATIONS = {
    labkit.querylog.shape({"command": {"aggregate": "orders", "pipeline": queue_pipeline}}): "support queue",
    labkit.querylog.shape({"command": {"find": "customers", "filter": {"_id": 1}}}): "customer detail",
    labkit.querylog.shape({"command": {"aggregate": "orders", "pipeline": report_pipeline}}): "nightly tier report",
}
shapes = log.summary(db=db)
shapes.insert(0, "operation", shapes["shape"].map(OPERATIONS))
shapes[["operation", "shape", "runs", "keys examined per run", "docs examined per run"]]

# %% [markdown]
# The same window recorded from command monitoring (what the fallback sees: the same operations and counts; the
# examined columns come from `explain`, since the driver never sees them):

# %%
monitored = labkit.querylog.capture(db, traffic, source="monitoring").summary(db=db)
monitored.insert(0, "operation", monitored["shape"].map(OPERATIONS))
monitored[["operation", "runs", "keys examined per run", "docs examined per run"]]

# %% [markdown]
# Durations vary with the machine, so they are printed rather than tabled: the profiler's `millis` (whole
# milliseconds, so a join faster than 1 ms often shows 0) and the duration the driver measured (microseconds,
# the network included). Sorted by time per run, the nightly report comes first. A slow-query log shows even
# less: it keeps only the operations slower than a threshold (100 ms by default,
# [manual: profiler](https://www.mongodb.com/docs/manual/tutorial/manage-the-database-profiler/)), so on a
# fast server it may list the report alone. Time per run is the wrong order to act on:

# %%
client_ms = monitored.set_index("operation")["ms per run"]
for _, r in shapes.sort_values("ms per run", ascending=False).iterrows():
    runs = f"{r['runs']} run" + ("s" if r["runs"] != 1 else "")
    print(f"{r['operation']}: {r['ms per run']:.1f} ms per run in the profiler, {client_ms[r['operation']]:.2f} ms "
          f"at the client; {runs} in the window")

# %% [markdown]
# Frequency is what the log adds. The queue and the customer page run all day at the window's rate (one window
# is 0.2 seconds, so a day holds 432,000 of them, as printed above); the report runs once a night. Per day, each operation's runs
# times its cost per run:

# %%
PER_DAY = "examined per day, estimated (per run x runs per day)"
per_day = shapes.set_index("operation")
per_day["runs per day"] = [1 if op == "nightly tier report" else int(runs * 86_400 / WINDOW_SECONDS)
                           for op, runs in per_day["runs"].items()]
per_day["examined per run"] = (per_day["keys examined per run"] + per_day["docs examined per run"]).astype(int)
per_day[PER_DAY] = per_day["examined per run"] * per_day["runs per day"]

# %% [markdown]
# **Predict.** Which operation examines the most keys and documents **per day**: "support queue", "nightly tier
# report" or "customer detail"? Record the name with `predict_top.predict("...")`.

# %%
predict_top = labkit.exercises.get("38-predict-top-daily")
predict_top

# %% tags=["solution"]
predict_top.predict("support queue")

# %% tags=["reveal"]
per_day.sort_values(PER_DAY, ascending=False)[["examined per run", "runs per day", PER_DAY]]

# %% tags=["reveal"]
predict_top.check(per_day[PER_DAY].idxmax())

# %% tags=["reveal"]
print(f"the support queue examines {per_day.loc['support queue', PER_DAY]:,} keys and documents a day, "
      f"the nightly report {per_day.loc['nightly tier report', PER_DAY]:,} (estimated: per run x runs per day)")
for op, r in per_day.iterrows():
    print(f"{op}: {client_ms[op] * r['runs per day'] / 1000:.1f} s per day on this machine, "
          "estimated (client-side ms per run x runs per day)")

# %% [markdown]
# In time as in documents, the frequent small join outweighs the rare big one. On Atlas (M10 and above, 8.0),
# Query Shape Insights shows this view for you: query shapes with their counts and total execution time, from
# a sample of the reads (on 8.0, up to 100 read queries a second per host)
# ([Atlas: Query Shape Insights](https://www.mongodb.com/docs/atlas/query-shape-insights/)), and the Performance
# Advisor flags schema anti-patterns such as frequent `$lookup` operations
# ([manual: anti-patterns](https://www.mongodb.com/docs/manual/data-modeling/design-antipatterns/)).

# %% [markdown]
# ## What the hot join does
#
# The support queue, as profiled above:

# %%
queue = list(db.orders.aggregate(queue_pipeline))
[(o["_id"], o["customer"][0]["name"], o["customer"][0]["tier"]) for o in queue[:3]]

# %% [markdown]
# For every order that reaches `$lookup`, the server runs an equality query on the `from` collection. We can
# measure that inner query with `explain()`
# ([manual: explain results](https://www.mongodb.com/docs/manual/reference/explain-results/)): here on `_id`,
# indexed, then on `email`, which has no index (the case the manual warns about,
# [manual: `$lookup`](https://www.mongodb.com/docs/manual/reference/operator/aggregation/lookup/)).

# %%
def show(doc):
    """A document with `_id` first and the other fields in alphabetical order (stable output)."""
    return {"_id": doc["_id"], **{k: doc[k] for k in sorted(doc) if k != "_id"}}


def stats(cursor):
    s = cursor.explain()["executionStats"]
    return {"keys examined": s["totalKeysExamined"], "docs examined": s["totalDocsExamined"], "returned": s["nReturned"]}


order_part = stats(db.orders.find({"status": "open"}).sort("createdAt", -1).limit(20))
per_lookup = stats(db.customers.find({"_id": queue[0]["customerId"]}))
per_lookup_unindexed = stats(db.customers.find({"email": "c7@example.com"}))
pd.DataFrame({"orders part": order_part, "one lookup on _id (indexed)": per_lookup,
              "one lookup on email (no index)": per_lookup_unindexed}).T

# %%
naive_docs = order_part["docs examined"] + len(queue) * per_lookup["docs examined"]
print(f"documents examined per support-queue read: {naive_docs} "
      f"({order_part['docs examined']} orders + {len(queue)} customers)")
print(f"with an unindexed foreignField, one scan per order would be "
      f"{order_part['docs examined'] + len(queue) * per_lookup_unindexed['docs examined']:,}")

# %% [markdown]
# That last figure is what the **classic** engine does with an unindexed `foreignField`: one collection scan
# per order. It is what our queue pipeline gets, because a `$lookup` with a `pipeline` inside stays in the
# classic engine. MongoDB 8.0 can run the plain equality form (`localField`/`foreignField`, no `pipeline`) in
# its newer **slot-based execution engine** (SBE; its explain has `explainVersion: "2"`), which picks a **join
# strategy**, shown as `strategy` on an `EQ_LOOKUP` node
# ([lookup_pushdown.js](https://github.com/mongodb/mongo/blob/v8.0/jstests/noPassthrough/lookup_pushdown.js)):
#
# - `IndexedLoopJoin` when an index starts with `foreignField` (a regular or hashed index that is neither sparse
#   nor partial and has the query's collation): one index lookup per order;
# - otherwise `HashJoin` when the foreign collection is small enough (by default at most 10,000 documents and
#   100 MB; both are server parameters) and
#   disk use is allowed (the default): the customers are read **once** into a hash table;
# - otherwise `NestedLoopJoin`: one scan of the customers per order, like the classic engine.
#
# Measured on a copy of the customers whose join field has no index:

# %%
list(db.customers.aggregate([{"$project": {"_id": 0, "customerId": "$_id", "name": 1, "tier": 1}},
                             {"$out": "customers_unindexed"}]))


def join_cost(lookup, **options):
    pipeline = queue_pipeline[:3] + [{"$lookup": lookup}]
    plan = db.command("explain", dict({"aggregate": "orders", "pipeline": pipeline, "cursor": {}}, **options),
                      verbosity="executionStats")
    if plan["explainVersion"] == "2":  # pushed down to SBE: the EQ_LOOKUP node and the pipeline's totals
        node = plan["queryPlanner"]["winningPlan"]["queryPlan"]
        stats = plan["executionStats"]
        return {"engine": "SBE", "strategy": node["strategy"], "docs examined": stats["totalDocsExamined"]}
    classic = next(st for st in plan["stages"] if "$lookup" in st)
    orders = plan["stages"][0]["$cursor"]["executionStats"]["totalDocsExamined"]
    return {"engine": "classic", "strategy": "-", "docs examined": orders + classic["totalDocsExamined"]}


plain = {"from": "customers_unindexed", "localField": "customerId", "foreignField": "customerId", "as": "customer"}
with_pipeline = dict(plain, pipeline=[{"$project": {"name": 1, "tier": 1}}])
pd.DataFrame({"equality form": join_cost(plain),
              "equality form, allowDiskUse false": join_cost(plain, allowDiskUse=False),
              "with a pipeline (our queue)": join_cost(with_pipeline)}).T

# %% [markdown]
# The hash join reads each customer once, the two loop joins once per order. A hash join only hides the
# missing index while the foreign collection stays under those limits; past them (with the defaults, past
# 10,000 customers) the same query falls back to the nested loop. The index (or no join at all) is the fix.
#
# One more condition for a join on a sharded cluster: a sharded collection can be the `from` collection of a
# `$lookup` only since MongoDB 5.1 (the `$lookup` page, "Sharded Collections").

# %% [markdown]
# ## The fix: an extended reference
#
# The queue needs two customer fields. Copy exactly those into each order, next to the `customerId`
# reference, which stays for everything else (the detail page, the report).
#
# Migration with one aggregation that ends in `$merge` back into `orders`, adding the copy to each order in
# place ([manual: `$merge`](https://www.mongodb.com/docs/manual/reference/operator/aggregation/merge/)):

# %%
copy_stages = [
    {"$lookup": {"from": "customers", "localField": "customerId", "foreignField": "_id", "as": "c",
                 "pipeline": [{"$project": {"name": 1, "tier": 1}}]}},
    {"$project": {"customer": {"name": {"$first": "$c.name"}, "tier": {"$first": "$c.tier"}}}},
    {"$merge": {"into": "orders", "on": "_id", "whenMatched": "merge", "whenNotMatched": "discard"}},
]
db.orders.aggregate(copy_stages)
db.orders.create_index([("customerId", 1)])
show(db.orders.find_one({"_id": "order:00042"}))

# %% [markdown]
# The hot read is now a plain query, no join:

# %%
after_queue = db.orders.find({"status": "open"}, {"customer": 1, "total": 1, "createdAt": 1}).sort("createdAt", -1).limit(20)
after = stats(after_queue)
after

# %% [markdown]
# The price: a rename must reach the copies. It is rare, and `customerId` (now indexed) finds them:

# %%
db.customers.update_one({"_id": "cust:0007"}, {"$set": {"name": "Customer Seven"}})
renamed = db.orders.update_many({"customerId": "cust:0007"}, {"$set": {"customer.name": "Customer Seven"}})
print("orders updated by the rename:", renamed.modified_count)
print("plan of that update's filter:", stats(db.orders.find({"customerId": "cust:0007"})))

# %% [markdown]
# ## Before and after
#
# The rows per queue view and per rename come from the runs above; the per-day row multiplies the documents
# examined per view by 500 views a second for a day (an estimate, labelled so).

# %%
DAY_ROW = "documents examined per day at 500/s, estimated (per view x 500 x 86,400)"
compare = pd.DataFrame({
    "$lookup on every read": {"collections read per queue view": 2, "documents examined per queue view": naive_docs,
                              DAY_ROW: naive_docs * 500 * 86_400,
                              "writes per customer rename": 1},
    "extended reference": {"collections read per queue view": 1, "documents examined per queue view": after["docs examined"],
                           DAY_ROW: after["docs examined"] * 500 * 86_400,
                           "writes per customer rename": 1 + renamed.modified_count},
})
compare

# %%
labkit.plots.before_after(compare, "documents examined per queue view",
                           "documents examined per support-queue view")

# %% [markdown]
# Fewer documents read on the hottest path (the table above), paid for with extra writes on each rename.
#
# ## The ledger: when does the copy stop paying?
#
# `labkit.Ledger` measures one run of each operation of each design (commands, documents and keys examined,
# documents written, from command events and `explain`) and multiplies by the workload's rates. Both designs
# are measured on the data as it is now: the `$lookup` design runs the queue pipeline and renames only the
# customer; the extended reference reads the copies and renames the customer and its orders' copies (two
# customers that no other cell uses, so the outputs above stay as they are).

# %%
def queue_lookup(d):
    return list(d.orders.aggregate(queue_pipeline))


def queue_copy(d):
    return list(d.orders.find({"status": "open"}, {"customer": 1, "total": 1, "createdAt": 1})
                .sort("createdAt", -1).limit(20))


def rename_lookup(d):
    d.customers.update_one({"_id": "cust:0011"}, {"$set": {"name": "Customer Eleven"}})


def rename_copy(d):
    d.customers.update_one({"_id": "cust:0012"}, {"$set": {"name": "Customer Twelve"}})
    d.orders.update_many({"customerId": "cust:0012"}, {"$set": {"customer.name": "Customer Twelve"}})


ledger = labkit.Ledger({"support queue": 500, "customer rename": 5 / 86_400})
ledger.measure("$lookup on every read", "support queue", db, queue_lookup)
ledger.measure("extended reference", "support queue", db, queue_copy)
ledger.measure("$lookup on every read", "customer rename", db, rename_lookup)
ledger.measure("extended reference", "customer rename", db, rename_copy)
ledger.per_operation()

# %%
ledger.totals()

# %% [markdown]
# The break-even: the copy saves documents examined on every queue view and costs extra ones on every rename
# (the orders whose copies it updates), so it pays until renames per second reach
# (queue views per second) × (saved per view) / (extra per rename):

# %%
designs = ("extended reference", "$lookup on every read")
saved_per_view = ledger.difference("docs examined", "support queue", *designs)
extra_per_rename = -ledger.difference("docs examined", "customer rename", *designs)
break_even = ledger.break_even("customer rename", *designs)
print(f"saved per queue view: {saved_per_view} documents examined; extra per rename: {extra_per_rename}; "
      f"break-even at {break_even:,.0f} renames per second (the workload's rate: {ledger.rates['customer rename']:.5f})")
pd.DataFrame({f"{r:,.0f} renames/s": ledger.totals({"customer rename": r})["docs examined /s"]
              for r in (0, break_even * 0.9, break_even * 1.1)})

# %% [markdown]
# Move the rename rate in the widget past the break-even and the better design flips (the readout counts
# documents examined).

# %%
ledger_widget = ledger.widget("docs examined", max_rate=5000)
ledger_widget

# %% [markdown]
# ## Explore: frequency × cost
#
# Set the duration and rate of a join and of a report; the readout estimates each one's server time per day
# (duration × runs per day). The
# defaults are the source material's example: a 15 ms join 500 times a second against a 3-second report once a
# night.

# %%
from labkit.widgets import explorer


def daily(join_ms, joins_per_second, report_seconds, reports_per_day):
    join_s = join_ms * joins_per_second * 86_400 / 1000
    report_s = report_seconds * reports_per_day
    return {"hot join: server seconds per day": round(join_s), "report: server seconds per day": report_s,
            "which to fix first": "the hot join" if join_s > report_s else "the report"}


def draw_daily(ax, values, r):
    ax.barh(["hot join", "report"], [r["hot join: server seconds per day"], r["report: server seconds per day"]],
            color=["#d62728", "#7f7f7f"])
    ax.set_xlabel("server seconds per day")


freq = explorer(daily, sliders={"join_ms": (1, 100, 15, 1), "joins_per_second": (0, 2000, 500, 10),
                                "report_seconds": (1, 3600, 3, 1), "reports_per_day": (1, 24, 1, 1)},
                title="Frequency × cost, estimated (duration x runs per day)", draw=draw_daily)
freq

# %% [markdown]
# ## Exercise 1 · A help desk, the same idea on other data
#
# A help desk copies each agent's `name` and `team` into their tickets (`agent: {name, team}`, next to the
# reference `agentId`, which is indexed). Agents rename themselves. Write `rename_agent(db, agent_id, new_name)`
# that keeps the agent and every copy right. `ex_rename.check(rename_agent)` runs it on its own help desk (two of
# its agents share a name) and watches the commands it sends.

# %%
ex_rename = labkit.exercises.get("38-rename-agent")
ex_rename


# %% tags=["solution"]
def rename_agent(d, agent_id, new_name):
    d.agents.update_one({"_id": agent_id}, {"$set": {"name": new_name}})
    d.tickets.update_many({"agentId": agent_id}, {"$set": {"agent.name": new_name}})


ex_rename.check(rename_agent)

# %% [markdown]
# ## Exercise 2 · The extended reference on a practice copy
#
# `practice.orders` references `practice.customers`. Give every order an extended reference
# `customer: {"name": ..., "tier": ...}` copied from its customer, keep `customerId`, and copy nothing else.
# `ex.check(practice)` compares every copy with its customer and checks the queue query needs no join.

# %%
practice = labkit.fresh_db("38_practice")
practice.customers.insert_many([{"_id": f"cust:{c:03d}", "name": f"Customer {c}", "tier": TIERS[c % 3],
                                 "email": f"c{c}@example.com", "notes": "n"} for c in range(100)])
practice.orders.insert_many([{"_id": f"order:{o:04d}", "customerId": f"cust:{(o * 7) % 100:03d}", "status": "open",
                              "createdAt": dt.datetime(2026, 2, 1) + dt.timedelta(hours=o)} for o in range(600)])
ex = labkit.exercises.get("38-extended-reference").remember(practice, "customers", "orders")  # the setup
ex

# %% tags=["solution"]
practice.orders.aggregate(copy_stages)
ex.check(practice)

# %% [markdown]
# ## Summary
#
# - `$lookup` runs a query per document that enters it; an unindexed `foreignField` turns each into a scan
#   (in 8.0 a hash join over a small foreign collection reads it once instead; the strategy is in `explain`).
# - Find joins in a query log (the profiler; where it is refused, command monitoring) and rank them by
#   frequency, then frequency × cost: a cheap join run 500 times a second outweighs an expensive report run once
#   a night. On Atlas, Query Shape Insights and the Performance Advisor show the same.
# - A sharded `from` collection needs MongoDB 5.1 or later.
# - Fix the hot path with an extended reference: copy the few fields it needs, keep the reference, and update
#   the copies on the rare change.
#
# **Next:** 39 · a schema review of a legacy dataset.

# %% [markdown] tags=["sources"]
# ## Sources
#
# 1. [MongoDB manual: Reduce \$lookup Operations](https://www.mongodb.com/docs/manual/data-modeling/design-antipatterns/reduce-lookup-operations/)
# 2. [MongoDB manual: Schema Design Anti-Patterns (Performance Advisor)](https://www.mongodb.com/docs/manual/data-modeling/design-antipatterns/)
# 3. [MongoDB manual: Database Profiler](https://www.mongodb.com/docs/manual/tutorial/manage-the-database-profiler/)
# 4. [MongoDB manual: Database Profiler Output](https://www.mongodb.com/docs/manual/reference/database-profiler/)
# 5. [MongoDB Atlas: Unsupported Commands (Free and Flex clusters)](https://www.mongodb.com/docs/atlas/unsupported-commands/)
# 6. [MongoDB Atlas: Query Shape Insights](https://www.mongodb.com/docs/atlas/query-shape-insights/)
# 7. [MongoDB manual: \$lookup (aggregation stage)](https://www.mongodb.com/docs/manual/reference/operator/aggregation/lookup/)
# 8. [mongodb/mongo jstests/noPassthrough/lookup_pushdown.js (join strategies)](https://github.com/mongodb/mongo/blob/v8.0/jstests/noPassthrough/lookup_pushdown.js)
# 9. [MongoDB manual: Explain Results](https://www.mongodb.com/docs/manual/reference/explain-results/)
# 10. [MongoDB manual: \$merge (aggregation stage)](https://www.mongodb.com/docs/manual/reference/operator/aggregation/merge/)

# %% [markdown] tags=["navigation"]
# [← 37 · Anti-pattern: case-insensitive queries without a matching index](37_case_insensitive.ipynb) · [Contents](../CONTENTS.md) · [39 · Schema review: run the checklist on a legacy store →](39_schema_review.ipynb)
