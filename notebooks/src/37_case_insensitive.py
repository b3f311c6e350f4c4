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
#     title: "Anti-pattern: case-insensitive queries without a matching index"
#     section: Anti-patterns
#     demo: "Explain /^sam$/i (every key examined) next to a lower-case field lookup (one key)."
#     mistakes: ["Writing /^x$/i and assuming the index on the field helps", "Creating a collation index but querying without the same collation", "Expecting a collation index to speed up $regex"]
#     sources:
#     - title: "MongoDB manual: $regex (index use)"
#       url: https://www.mongodb.com/docs/manual/reference/operator/query/regex/
#     - title: "MongoDB manual: Case-Insensitive Indexes"
#       url: https://www.mongodb.com/docs/manual/core/index-case-insensitive/
#     - title: "MongoDB manual: Collation"
#       url: https://www.mongodb.com/docs/manual/reference/collation/
#     - title: "MongoDB manual: Explain Results"
#       url: https://www.mongodb.com/docs/manual/reference/explain-results/
#     - title: "MongoDB manual: Updates with Aggregation Pipeline"
#       url: https://www.mongodb.com/docs/manual/tutorial/update-documents-with-aggregation-pipeline/
#     - title: "MongoDB Atlas Search: Process Data with Analyzers"
#       url: https://www.mongodb.com/docs/atlas/atlas-search/analyzers/
# ---

# %% [markdown]
# # 37 · Anti-pattern: case-insensitive queries without a matching index
#
# **You will learn**
# - why `/^sam$/i` examines far more index keys than it returns, while `/^Sam/` scans only a range;
# - the collation fix: an index with `{locale: "en", strength: 2}` and queries that name the same collation;
# - the normalized-field fix: store `nameLower` and query it with a plain index;
# - to read the signature in `explain("executionStats")`: keys or documents examined far above `nReturned`.
#
# **Time:** about 25 minutes.

# %%
import matplotlib.pyplot as plt
import pandas as pd

import labkit
from labkit.collation import strings_equal

db = labkit.fresh_db("37_case_insensitive")
print("engine:", labkit.describe(db.client))

# %% [markdown]
# 5,000 accounts with user names typed in whatever case people used, generated deterministically. Three of
# them are some spelling of "sam".

# %%
FIRST = ["ana", "ben", "chloe", "dev", "elena", "farah", "gus", "hana", "ivan", "jada", "kenji", "lena"]


def spelled(name, i):
    return [name, name.capitalize(), name.upper()][i % 3]


accounts = [{"_id": f"acct:{i:05d}", "username": spelled(FIRST[i % 12], i // 12) + str(i)} for i in range(4997)]
accounts += [{"_id": "acct:sam-1", "username": "sam"}, {"_id": "acct:sam-2", "username": "Sam"},
             {"_id": "acct:sam-3", "username": "SAM"}]
db.accounts.insert_many(accounts)
db.accounts.create_index([("username", 1)])
print(db.accounts.count_documents({}), "accounts")

# %% [markdown]
# ## The workload
#
# What the application does, how often, and what each operation needs:

# %%
labkit.workload_table([
    ('log in / look up by user name, ignoring case', 'read', '300/s', 'one account'),
    ('sign up', 'write', '1/s', 'user name unique regardless of case'),
])
# %% [markdown]
# ## Detect: keys examined vs returned
#
# `plan(cursor)` runs a query's `explain()` and prints its stages, read from the bottom up: `IXSCAN` reads
# entries (keys) of an index, `FETCH` reads the documents those keys point to, `COLLSCAN` reads every document of
# the collection; and the counts `explain("executionStats")` reports for them
# ([manual: explain results](https://www.mongodb.com/docs/manual/reference/explain-results/)).

# %%
from labkit.explain import query_cost


# %% [markdown]
# **Predict.** The index on `username` holds one key per account. How many index keys will `/^sam$/i` examine
# to return its 3 accounts? Record an exact number with `predict_keys.predict(...)`.

# %%
predict_keys = labkit.exercises.get("37-predict-regex-keys")
predict_keys

# %% tags=["solution"]
predict_keys.predict(5000)

# %% tags=["reveal"]
regex_i = query_cost(db.accounts.find({"username": {"$regex": "^sam$", "$options": "i"}}))
prefix = query_cost(db.accounts.find({"username": {"$regex": "^Sam"}}))
pd.DataFrame({"/^sam$/i": regex_i, "/^Sam/ (case-sensitive prefix)": prefix}).T

# %% tags=["reveal"]
predict_keys.check(regex_i["keys examined"])

# %% [markdown]
# The case-sensitive prefix turns into a range of the index (`["Sam", "Sao")`), so the server reads only the
# keys that start with "Sam" (and the first key after them, where it stops). With the `i` option no range can be
# computed: every string key in the index is read and tested against the pattern, and only the matches are
# fetched ([manual: `$regex` index use](https://www.mongodb.com/docs/manual/reference/operator/query/regex/)).
# That is the signature in `explain("executionStats")`: keys examined ≈ the whole collection, returned = 3
# ([manual: explain results](https://www.mongodb.com/docs/manual/reference/explain-results/)).

# %% [markdown]
# ## Fix 1: a case-insensitive collation index
#
# A collation at strength 2 compares base letters and accents but ignores case (strength 1 also ignores
# accents, [manual: collation](https://www.mongodb.com/docs/manual/reference/collation/)). labkit's collation
# module shows what that means for single strings:

# %%
pairs = [("sam", "SAM"), ("sam", "Sâm"), ("sam", "sams")]
pd.DataFrame([{"a": a, "b": b, **{f"equal at strength {s}": strings_equal(a, b, {"locale": "en", "strength": s})
                                   for s in (1, 2, 3)}} for a, b in pairs])

# %% [markdown]
# The index must be created with the collation, and each query must name **the same** collation, or the
# index is not used for the string comparison. A collation index never helps `$regex`.
#
# The example of MongoDB's case-insensitive index documentation
# ([manual: case-insensitive indexes](https://www.mongodb.com/docs/manual/core/index-case-insensitive/)): three
# spellings of "apple", an index at strength 2, and three queries.

# %%
db.fruit.insert_many([{"_id": 1, "type": "apple"}, {"_id": 2, "type": "Apple"}, {"_id": 3, "type": "APPLE"}])
db.fruit.create_index([("type", 1)], collation={"locale": "en", "strength": 2})
fruit = {
    "no collation": db.fruit.find({"type": "apple"}),
    "strength 2 (same as the index)": db.fruit.find({"type": "apple"}, collation={"locale": "en", "strength": 2}),
    "strength 1 (different)": db.fruit.find({"type": "apple"}, collation={"locale": "en", "strength": 1}),
}
pd.DataFrame({label: query_cost(cursor) for label, cursor in fruit.items()}).T

# %% [markdown]
# The first query has no collation, so it cannot use the index (COLLSCAN) and finds only the exact "apple".
# The second names the index's collation: IXSCAN, all 3. The third finds all 3 too, but without the index,
# because its collation differs from the index's. The same fix for our accounts:

# %%
db.accounts.create_index([("username", 1)], collation={"locale": "en", "strength": 2}, name="username_ci")
with_collation = query_cost(db.accounts.find({"username": "sam"}, collation={"locale": "en", "strength": 2}))
with_collation

# %% [markdown]
# The two plans drawn as Compass draws them: one box per stage, with the keys and documents each examined.
# First the regex, which reads every key of the plain index; then the equality with the index's collation,
# which enters the collation index at "sam" and reads only the keys equal to it.

# %%
labkit.show_plan(db.accounts.find({"username": {"$regex": "^sam$", "$options": "i"}}).explain(), draw=True)

# %%
labkit.show_plan(db.accounts.find({"username": "sam"}, collation={"locale": "en", "strength": 2}).explain(), draw=True)

# %% [markdown]
# And a collation index does not help a regular expression, even with the same collation:

# %%
query_cost(db.accounts.find({"username": {"$regex": "^sam$", "$options": "i"}}, collation={"locale": "en", "strength": 2}))

# %% [markdown]
# `$regex` is not collation-aware, so it cannot use a case-insensitive index
# ([manual: case-insensitive indexes](https://www.mongodb.com/docs/manual/core/index-case-insensitive/)). For
# the same reason the query's collation does not stop a `$regex` from using the plain index on `username` (for
# an equality or a range on strings it would: there the index's collation must match): the plan is an IXSCAN
# of that index that reads every key to test the pattern and fetches only the matches, the
# same signature as `/^sam$/i` without a collation. Which index it scanned:

# %%
e = db.accounts.find({"username": {"$regex": "^sam$", "$options": "i"}},
                     collation={"locale": "en", "strength": 2}).explain()
labkit.plan_summary(e)["index"]

# %% [markdown]
# ## Fix 2: a normalized field
#
# When one field needs it, a lower-case copy is simpler: set it on every write, index it, query it with the
# lower-cased input. Migration for the existing accounts, in one update with a pipeline
# ([manual: updates with a pipeline](https://www.mongodb.com/docs/manual/tutorial/update-documents-with-aggregation-pipeline/)):

# %%
db.accounts.update_many({}, [{"$set": {"usernameLower": {"$toLower": "$username"}}}])
db.accounts.create_index([("usernameLower", 1)], unique=False)
normalized = query_cost(db.accounts.find({"usernameLower": "Sam".lower()}))
sorted(d["username"] for d in db.accounts.find({"usernameLower": "sam"}))

# %% [markdown]
# A unique index on `usernameLower` would also make sign-up reject "SAM" when "sam" exists (here three such
# accounts already exist, so it is left non-unique).
#
# **Beyond whole-value matches.** Both fixes serve equality (and ranges) on the whole value. A search box that
# must ignore case *and* match part of a value ("sam" inside "samantha_k", fuzzy spellings) is a text-search
# problem: on Atlas, an Atlas Search index analyzes the field into lower-cased terms and a `$search` stage
# queries them ([Atlas Search: analyzers](https://www.mongodb.com/docs/atlas/atlas-search/analyzers/)), instead
# of a regular expression reading every key.
#
# ## Measured: before and after

# %%
compare = pd.DataFrame({"/^sam$/i on username": regex_i, "collation index, strength 2": with_collation,
                        "usernameLower equality": normalized}).T
compare

# %%
fig, ax = plt.subplots(figsize=(6, 2.2))
ax.barh(compare.index, compare["keys examined"], color=["#d62728", "#1f77b4", "#2ca02c"])
ax.set_xscale("log")
ax.set_xlabel("index keys examined for 3 results (log scale)")
plt.tight_layout()
plt.show()

# %% [markdown]
# ## Explore: pick a name and a query shape
#
# Each choice runs the query and its `explain()`.

# %%
from labkit.widgets import explorer

SHAPES = ["regex with i", "case-sensitive prefix regex", "normalized field"]


def lookup(name, shape):
    if shape == "regex with i":
        cursor = db.accounts.find({"username": {"$regex": f"^{name}$", "$options": "i"}})
    elif shape == "case-sensitive prefix regex":
        cursor = db.accounts.find({"username": {"$regex": f"^{name}"}})
    else:
        cursor = db.accounts.find({"usernameLower": name.lower()})
    p = query_cost(cursor)
    return {"query": shape, "keys examined": p["keys examined"], "docs examined": p["docs examined"],
            "returned": p["returned"]}


look = explorer(lookup, sliders={"name": ["sam", "Sam", "ana0", "hana7"], "shape": SHAPES}, title="Case-insensitive lookup",
                draw=lambda ax, v, r: ax.barh(["keys examined", "returned"], [r["keys examined"], r["returned"]]))
look

# %% [markdown]
# ## Exercise
#
# `practice.members` has an `email` field in mixed case and a login that must ignore case. Make the login
# index-friendly: add a normalized field to every member, index it, and write `login_filter(email)` returning
# the filter that finds the member. `ex.check(practice.members, login_filter)` tries several spellings and
# reads the plans.

# %%
practice = labkit.fresh_db("37_practice")
practice.members.insert_many([{"_id": f"m{i:04d}", "email": spelled(FIRST[i % 12], i) + f"{i}@Example.com"}
                              for i in range(1500)])
ex = labkit.exercises.get("37-login-filter")
ex

# %% tags=["solution"]
practice.members.update_many({}, [{"$set": {"emailLower": {"$toLower": "$email"}}}])
practice.members.create_index([("emailLower", 1)], unique=True)


def login_filter(email):
    return {"emailLower": email.lower()}


ex.check(practice.members, login_filter)

# %% [markdown]
# ## Exercise: the same idea on other data
#
# A league's `teams` collection must refuse a team name that differs from an existing one only in case
# ("PAPER planes" when "Paper Planes" exists), while accents still count ("Papér Planes" is another team), and
# look teams up by name whatever the spelling, through one index key. Write `prepare(teams)` (run once on the
# existing teams), `add_team(teams, name)` (a refused name raises `DuplicateKeyError`) and
# `find_team(teams, name)` returning the cursor of the lookup. `ex_teams.check(prepare, add_team, find_team)`
# runs them on its own collection and reads each lookup's plan.

# %%
ex_teams = labkit.exercises.get("37-team-names")
ex_teams

# %% tags=["solution"]
CI = {"locale": "en", "strength": 2}


def prepare(teams):
    teams.create_index("name", unique=True, collation=CI)


def add_team(teams, name):
    teams.insert_one({"name": name})


def find_team(teams, name):
    return teams.find({"name": name}, collation=CI)


ex_teams.check(prepare, add_team, find_team)

# %% [markdown]
# ## Summary
#
# - `/^x$/i` cannot be turned into an index range: keys examined ≈ the whole index for a handful of results.
# - Fix with an index at `{locale: "en", strength: 2}` and the same collation on every query, or with a
#   normalized lower-case field and a plain (possibly unique) index.
# - Collation indexes do not help `$regex`. For case-insensitive partial-match search, Atlas Search is the tool.
#
# **Next:** 38 · overuse of `$lookup`.

# %% [markdown] tags=["sources"]
# ## Sources
#
# 1. [MongoDB manual: \$regex (index use)](https://www.mongodb.com/docs/manual/reference/operator/query/regex/)
# 2. [MongoDB manual: Case-Insensitive Indexes](https://www.mongodb.com/docs/manual/core/index-case-insensitive/)
# 3. [MongoDB manual: Collation](https://www.mongodb.com/docs/manual/reference/collation/)
# 4. [MongoDB manual: Explain Results](https://www.mongodb.com/docs/manual/reference/explain-results/)
# 5. [MongoDB manual: Updates with Aggregation Pipeline](https://www.mongodb.com/docs/manual/tutorial/update-documents-with-aggregation-pipeline/)
# 6. [MongoDB Atlas Search: Process Data with Analyzers](https://www.mongodb.com/docs/atlas/atlas-search/analyzers/)

# %% [markdown] tags=["navigation"]
# [← 36 · Anti-pattern: separating data that is accessed together](36_separate_data.ipynb) · [Contents](../CONTENTS.md) · [38 · Anti-pattern: overuse of \$lookup →](38_lookup_overuse.ipynb)
