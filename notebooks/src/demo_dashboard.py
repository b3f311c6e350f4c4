# ---
# jupyter:
#   jupytext:
#     formats: ipynb,src//py:percent
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Schema Lab · live demo: cardinality, query plans and anti-patterns
#
# Four questions, answered by moving a control. Every number is computed on the spot by the engine the notebook
# runs on (the embedded engine unless `MONGODB_URI` points at a server), and every plan is drawn from the
# `explain()` the engine returned.

# %%
import datetime as dt
from pathlib import Path

from bson import json_util
from bson.json_util import JSONMode, JSONOptions

import labkit
from labkit import demo
from labkit.plots import bars_against_limit
from labkit.widgets import explorer

db = labkit.fresh_db("demo_dashboard")
labkit.seed.social(db, users=demo.USERS, seed=demo.SEED, celebrity_posts=demo.CELEBRITY_POSTS, indexes=False,
                   progress=False)
sam = db.users.find_one({"_id": "user:112"})

# %% [markdown]
# ## 1 · Parent-side arrays grow with the busiest author
#
# Keep every post id on the user, or every post embedded, or reference the user from each post.
# The **takeaway** line under the numbers says what to point at; it is computed from the same numbers.

# %%
WALL = demo.walls(sam)  # the first post counts past 16 MiB: embedded posts, then ids
print(f"the user document passes 16 MiB at {WALL['embedded']:,} embedded posts, or at {WALL['ids']:,} post ids")


def parent_growth(posts):
    return demo.parent_growth(sam, posts, WALL)


explorer(parent_growth, sliders={"posts": demo.POSTS_SLIDER}, title="Posts by the busiest author",
         draw=lambda ax, v, r: bars_against_limit(ax, ["postIds", "embedded", "child ref"], list(r.values())[1:4]))

# %% [markdown]
# ## 2 · The feed query's plan, with and without the right index
#
# `find({authorId}).sort({createdAt: -1, _id: -1}).limit(20)` for the author ranked *r* by number of posts
# (rank 1 is the busiest). The plan is drawn as a tree of stages: what each stage examined and returned; a
# blocking sort is red, a collection scan orange, the index used green.

# %%
copies = {"no index": None, "{authorId: 1}": [("authorId", 1)],
          "{authorId: 1, createdAt: -1, _id: -1}": [("authorId", 1), ("createdAt", -1), ("_id", -1)]}
posts = list(db.posts.find())
for i, keys in enumerate(copies.values()):
    db[f"posts_{i}"].insert_many(posts)
    if keys:
        db[f"posts_{i}"].create_index(keys)
counts = {d["_id"]: d["count"] for d in db.posts.aggregate([{"$sortByCount": "$authorId"}])}
ranked = sorted(counts, key=lambda a: (-counts[a], a))


def plan_takeaway(plan, total):
    docs, keys, returned = plan["docsExamined"], plan["keysExamined"], plan["nReturned"]
    if not keys:
        return (f"no index: all {docs:,} posts of the collection are read to return {returned}"
                + (", then sorted in memory" if plan["blockingSort"] else ""))
    if plan["blockingSort"]:
        return (f"the index finds the author's {total:,} posts but all {docs:,} are fetched and sorted in memory "
                f"to return {returned}: cost grows with the author")
    return (f"the index returns the newest {returned} in order: {keys} keys and {docs} documents examined, "
            f"whether the author has {total:,} posts or a million")


def feed_plan(rank, index):
    author = ranked[rank - 1]
    coll = db[f"posts_{list(copies).index(index)}"]
    explain = coll.find({"authorId": author}).sort([("createdAt", -1), ("_id", -1)]).limit(demo.FEED_LIMIT).explain()
    plan = labkit.plan_summary(explain)
    return {"author": author, "author's posts": counts[author], "plan": plan["stages"],
            "keys examined": plan["keysExamined"], "documents examined": plan["docsExamined"],
            "returned": plan["nReturned"], "blocking sort": plan["blockingSort"],
            "takeaway": plan_takeaway(plan, counts[author]), "drawn": labkit.draw_plan(explain)}


explorer(feed_plan, sliders={"rank": (1, 200, 1), "index": list(copies)}, title="Feed query plan")

# %% [markdown]
# ## 3 · Case-insensitive lookups: a regex, or an index with a collation
#
# Find the user `sam` whatever the case, among 5,000 users. The same login, three ways: a case-insensitive regex
# on a plain index, an index with a case-insensitive collation (secondary strength) queried with the same
# collation, and a lower-case copy of the name with its own index (lesson 37).

# %%
names = [f"user{i:04d}" for i in range(4997)] + ["Sam", "sam.b", "Samuel"]
db.logins_regex.insert_many([{"_id": i, "username": n} for i, n in enumerate(names)])
db.logins_regex.create_index("username")
db.logins_collation.insert_many([{"_id": i, "username": n} for i, n in enumerate(names)])
db.logins_collation.create_index("username", collation={"locale": "en", "strength": 2})
db.logins_lower.insert_many([{"_id": i, "username": n, "usernameLower": n.lower()} for i, n in enumerate(names)])
db.logins_lower.create_index("usernameLower")
LOGIN_QUERIES = {
    "regex /^sam$/i, index {username: 1}": lambda typed: db.logins_regex.find({"username": {"$regex": f"^{typed}$",
                                                                                            "$options": "i"}}),
    "case-insensitive collation, same as the index's": lambda typed: db.logins_collation.find(
        {"username": typed}).collation({"locale": "en", "strength": 2}),
    "lower-case copy, index {usernameLower: 1}": lambda typed: db.logins_lower.find({"usernameLower": typed.lower()}),
}


def login(query, typed):
    explain = LOGIN_QUERIES[query](typed).explain()
    plan = labkit.plan_summary(explain)
    keys, returned = plan["keysExamined"], plan["nReturned"]
    takeaway = (f"every one of the {keys:,} index keys is compared with the regex to find {returned}: the index "
                "cannot seek a case-insensitive pattern" if keys > 10 * max(returned, 1) else
                f"{keys} key{'s' if keys != 1 else ''} examined for {returned} user{'s' if returned != 1 else ''}: "
                "the index seeks straight to the name, whatever its case")
    return {"typed": typed, "plan": plan["stages"], "index": plan["index"], "keys examined": keys,
            "documents examined": plan["docsExamined"], "returned": returned, "takeaway": takeaway,
            "drawn": labkit.draw_plan(explain)}


explorer(login, sliders={"query": list(LOGIN_QUERIES), "typed": ["sam", "SAM", "Sam"]},
         title="Case-insensitive login", cache=True, data=db)

# %% [markdown]
# ## 4 · What the schema review finds in a legacy store
#
# `labkit.review` reads a database (and a log of the queries that run on it) and reports the anti-patterns of
# lessons 30-39, each with its evidence, the fix and the lesson that teaches it. Here: the legacy shop of lesson 39
# (`data/legacy_store.json`), loaded as it ships, with one second of its workload as a query log. Pick a finding.

# %%
ROOT = Path.cwd().parent if Path.cwd().name in ("notebooks", "students") else Path.cwd()
legacy = json_util.loads((ROOT / "data" / "legacy_store.json").read_text(),
                         json_options=JSONOptions(json_mode=JSONMode.RELAXED, tz_aware=False))
shop = labkit.fresh_db("demo_dashboard_shop")
for name, docs in legacy["collections"].items():
    shop[name].insert_many(docs)
for name, specs in legacy["indexes"].items():
    for spec in specs:
        shop[name].create_index(list(spec["key"].items()), name=spec["name"])
T0 = dt.datetime(2026, 3, 2, 9, 0)
log = []
for q in legacy["queryLog"]:
    if q["op"] == "find":
        command, op = {"find": q["collection"], "filter": q["filter"], "projection": q.get("projection")}, "query"
    else:
        command, op = {"aggregate": q["collection"], "pipeline": q["pipeline"], "cursor": {}}, "command"
    n = max(1, round(q["perSecond"]))
    log += [{"op": op, "ns": f"{shop.name}.{q['collection']}", "command": command,
             "ts": T0 + dt.timedelta(seconds=i / n)} for i in range(n)]
review = labkit.review(shop, query_log=sorted(log, key=lambda e: e["ts"]))
findings = {f"{f.kind} · {f.where}": f for f in review.findings}


def show_finding(finding):
    f = findings[finding]
    evidence = ", ".join(f"{k}: {v}" for k, v in list(f.evidence.items())[:4])
    return {"severity": f.severity, "where": f.where, "what": f.summary, "evidence": evidence, "fix": f.fix,
            "lesson": f.lesson, "findings in this store": len(review.findings)}


explorer(show_finding, sliders={"finding": list(findings)}, title="Schema review of the legacy store")
