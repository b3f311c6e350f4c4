# ---
# jupyter:
#   jupytext:
#     formats: ipynb,src//py:percent
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
#   labkit:
#     minutes: 20
#     title: "Which pattern when: use cases, patterns and a quiz"
#     section: Patterns
#     exercise_minutes: 15
#     demo: "Pick 'IoT' and then 'mobile' in the dropdown and discuss why the same computed pattern appears for different reasons."
#     sources:
#     - title: "MongoDB manual: Schema Design Patterns"
#       url: https://www.mongodb.com/docs/manual/data-modeling/design-patterns/
#     - title: "MongoDB manual: Embedded Data Versus References"
#       url: https://www.mongodb.com/docs/manual/data-modeling/concepts/embedding-vs-references/
#     - title: "MongoDB manual: Time Series"
#       url: https://www.mongodb.com/docs/manual/core/timeseries-collections/
#     - title: "MongoDB manual: MongoDB Limits and Thresholds (16 MiB documents)"
#       url: https://www.mongodb.com/docs/manual/reference/limits/
#     mistakes: ["choosing a pattern by the data's nouns instead of the workload's numbers", "applying every pattern of a use case at once instead of the one that removes the measured cost", "confusing schema versioning (shape changes) with document versioning (old revisions)", "giving an unbounded relationship a guessed maximum, so the helper embeds what will keep growing"]
# ---

# %% [markdown]
# # 20 · Which pattern when: use cases, patterns and a quiz
#
# **You will learn**
# - which patterns typically help in seven common kinds of application;
# - to go from a use case to the lessons that measure each pattern;
# - to recognise a pattern from a short description of a workload (checked quiz).
#
# **Time:** about 20 minutes.

# %%
import pandas as pd

import labkit
from labkit.exercises.patterns import WHICH_PATTERN_SCENARIOS

db = labkit.fresh_db("20_which_pattern")  # not used for data: this lesson is a map of the others
pd.set_option("display.max_colwidth", None)  # show the reasons in full
LESSONS = {
    "bucket": "10_bucket", "outlier": "11_outlier", "computed": "12_computed", "approximation": "12_computed",
    "schema versioning": "13_schema_versioning", "polymorphic": "14_polymorphic", "inheritance": "14_polymorphic",
    "attribute": "15_attribute", "extended reference": "16_extended_reference_subset",
    "subset": "16_extended_reference_subset", "tree": "17_trees", "archive": "18_archive_versioning",
    "document versioning": "18_archive_versioning", "single collection": "19_single_collection",
}

# %% [markdown]
# ## The problem: many patterns, one application
#
# Every pattern in this section removes one specific cost that you can measure: too many documents, one
# document far too big, the same aggregation on every read, an awkward migration, a query split over many
# collections ([manual: schema design patterns](https://www.mongodb.com/docs/manual/data-modeling/design-patterns/)).
# An application type tends to meet the same costs, so a first guess of useful patterns can start from it. The
# matrix below is this course's map, not a rule: each row says *why* a pattern tends to help in that kind of
# application; measure before applying it.

# %%
USE_CASES = {
    "catalog": {
        "attribute": "products of different kinds carry many optional specification fields",
        "polymorphic": "books, shoes and laptops share one collection and one search",
        "computed": "rating averages and stock totals are read on every page view",
        "subset": "a product page shows a few reviews out of thousands",
        "extended reference": "an order keeps the product name and price it was sold at",
        "tree": "categories nest inside categories",
        "schema versioning": "the product model changes with every new product line",
    },
    "content management": {
        "polymorphic": "articles, videos and tools are listed in one feed",
        "document versioning": "editors need earlier revisions of a page",
        "tree": "sections and pages form a hierarchy",
        "outlier": "a few pieces attract far more comments than the rest",
        "schema versioning": "content models evolve while old pages stay online",
    },
    "IoT": {
        "bucket": "devices report every few seconds, charts read hours at a time",
        "computed": "each bucket keeps count, min, max for instant summaries",
        "approximation": "per-device counters tolerate a small error",
        "archive": "old readings are rarely read but must be kept",
        "outlier": "one chatty device reports far more often than the fleet",
    },
    "mobile": {
        "subset": "small payloads over slow networks: only what the screen shows",
        "extended reference": "one round trip per screen instead of joins",
        "computed": "badges and totals shown on every app open",
        "approximation": "like and view counters on popular items",
        "schema versioning": "old app versions keep writing the old shape for months",
    },
    "personalization": {
        "computed": "recommendations and scores prepared ahead of the visit",
        "attribute": "preferences are open-ended key-value pairs",
        "subset": "only the most recent activity is kept next to the profile",
        "outlier": "a few power users generate most of the activity",
        "schema versioning": "the profile gains new signals over time",
    },
    "real-time analytics": {
        "bucket": "events are grouped per minute or hour for dashboards",
        "computed": "running totals are updated on write instead of scanned on read",
        "approximation": "high-rate counters where a small error is acceptable",
        "extended reference": "events carry the few fields the dashboard filters on",
    },
    "single view": {
        "polymorphic": "records from many source systems differ in shape",
        "attribute": "each source brings its own optional fields",
        "single collection": "a customer and everything about them fetched with one indexed query",
        "schema versioning": "sources change their formats independently",
        "document versioning": "the history of changes to a customer is audited",
    },
}
patterns = sorted({p for row in USE_CASES.values() for p in row})
matrix = pd.DataFrame([{p: ("✓" if p in row else "") for p in patterns} for row in USE_CASES.values()],
                      index=list(USE_CASES))
matrix.index.name = "use case"
matrix

# %% [markdown]
# Counting the marks shows which patterns come up most often across application types:

# %%
(matrix == "✓").sum().sort_values(ascending=False, kind="stable").rename("use cases").to_frame().T

# %% [markdown]
# ## Explore: from a use case to the lessons
#
# Pick a use case: the readout lists each suggested pattern, the reason, and the lesson that measures it.

# %%
from labkit.widgets import explorer


def suggest(use_case):
    row = USE_CASES[use_case]
    return {pattern: f"{LESSONS[pattern]}: {reason}" for pattern, reason in sorted(row.items())}


explorer(suggest, sliders={"use_case": list(USE_CASES)}, title="Which pattern when")

# %% [markdown]
# The same as a table for all use cases, one row per (use case, pattern):

# %%
pd.DataFrame([{"use case": uc, "pattern": p, "lesson": LESSONS[p], "why": why}
              for uc, row in USE_CASES.items() for p, why in sorted(row.items())]).set_index(["use case", "pattern"])

# %% [markdown]
# ## The source material's quick reference, with this section's measurements
#
# The source lists a scenario, a pattern and its main benefit for each pattern (the benefits paraphrased here,
# except its one figure). The last column is what this course measured, and where.

# %%
seconds_per_day, hours_per_day, per_bucket = 86_400, 24, 60
pd.DataFrame([
    ("time-series data", "bucket", "100x fewer documents",
     f"10_bucket: {seconds_per_day:,} vs {hours_per_day} documents per sensor per day at one reading a second "
     f"({seconds_per_day // hours_per_day:,}x fewer); {seconds_per_day // (seconds_per_day // per_bucket):,}x fewer "
     f"with the source's {per_bucket} readings per bucket"),
    ("viral content with huge arrays", "outlier", "no document bloat", "11_outlier"),
    ("expensive aggregations", "computed", "compute once, read fast", "12_computed"),
    ("multiple content types", "polymorphic", "one collection, shared queries", "14_polymorphic"),
    ("evolving schema", "schema versioning", "old and new shapes coexist", "13_schema_versioning"),
    ("one-to-few", "embedding", "one read, atomic updates", "01_embed_one_to_few"),
    ("one-to-many, unbounded", "referencing", "stays under 16 MiB", "02_one_to_many, 04_follows"),
], columns=["scenario", "pattern", "benefit (source)", "shown in lesson"]).set_index("scenario")

# %% [markdown]
# The source's "100x fewer documents" is a round figure: the saving is the number of readings a bucket holds,
# which its own example puts at 3,600 (an hour of one reading a second) in one place and at 60 ("up to 60
# measurements per document") in another. Lesson 10 works out both cases, and shows how MongoDB's time-series
# collections cap their own buckets.

# %% [markdown]
# ## Quiz
#
# Seven short scenarios. For each, name the one pattern that removes its main cost. Write
# `answers = {scenario id: pattern name}`; `ex.check(answers)` marks each answer and explains the wrong ones.

# %%
quiz = pd.Series(WHICH_PATTERN_SCENARIOS, name="scenario").to_frame()
quiz.index.name = "id"
quiz

# %%
ex = labkit.exercises.get("20-which-pattern")
ex

# %% [markdown]
# Here is how the checker answers a guess: it says which answers are wrong and asks a question about each
# scenario's cost; it reveals the right answers only once all seven are right.

# %%
attempt = {scenario: "embedding" for scenario in WHICH_PATTERN_SCENARIOS}
print(ex.check(attempt))

# %% tags=["solution"]
answers = {
    "sensor-every-second": "bucket",
    "viral-post": "outlier",
    "rating-on-every-view": "computed",
    "renamed-fields": "schema versioning",
    "mixed-feed": "polymorphic",
    "rough-view-counter": "approximation",
    "many-spec-fields": "attribute",
}
ex.check(answers)

# %% [markdown]
# ## Your own schema: the decision helper
#
# Describe an access pattern (operation, reads or writes per second, the fields it needs) and a relationship
# with its cardinality as **[min, likely, max]** (leave max empty for "no bound"). Press the button: the helper
# recommends embedding, a child reference or a relationship collection, suggests patterns, and gives its reasons
# with the numbers it used and the lessons that show each one. It starts with the source's users and posts.
#
# Its rules follow the source's embed-or-reference lists (and the manual's,
# [embedded data versus references](https://www.mongodb.com/docs/manual/data-modeling/concepts/embedding-vs-references/)):
# embed what is read with the parent, bounded, and not queried on its own; reference what is large, unbounded,
# queried on its own or written independently. Its thresholds, and where each comes from:

# %%
from labkit import decision

pd.DataFrame([
    ("bounded array", f"fewer than {decision.EMBED_BOUND} elements",
     "the source: embed when the array is bounded (< 100 items)"),
    ("small enough to embed", f"max x child size under {decision.EMBED_MAX_BYTES // 1024 ** 2} MiB",
     "the helper's margin: 1/16 of the 16 MiB document limit"),
    ("computed pattern", f"at least {decision.COMPUTED_MIN_READS_PER_WRITE} reads per write",
     "the helper's choice; lesson 12 measures the real break-even of a given design"),
    ("outlier pattern", f"max at least {decision.OUTLIER_RATIO}x the likely count", "the helper's choice"),
    ("extended reference", f"a read of at least {decision.HOT_READS_PER_SECOND}/s needing at most "
     f"{decision.EXTENDED_MAX_FIELDS} fields", "the helper's choice"),
], columns=["rule", "threshold", "where it comes from"]).set_index("rule")

# %%
helper = labkit.decision_widget()
helper

# %% [markdown]
# The form also takes a write (its rate feeds the reads-per-write rules), a "max parents per child" above 1 for a
# many-to-many relationship, and a "time series" box for measurements arriving over time (which brings in
# MongoDB's [time-series collections](https://www.mongodb.com/docs/manual/core/timeseries-collections/)). The
# same rules are a plain function,
# `labkit.recommend(access_patterns, relationships)`, for your own scripts. A many-to-many with writes: students
# take up to 12 courses, a course has up to 400 students, and enrolments are frequent writes.

# %%
labkit.recommend(
    [{"operation": "Show a student's timetable", "type": "read", "per_second": 800,
      "entities": ["students", "courses"], "fields": ["name", "courses.title", "courses.room"]},
     {"operation": "Enrol", "type": "write", "per_second": 30, "entities": ["students", "courses"], "fields": []}],
    [{"parent": "students", "child": "courses", "cardinality": [1, 5, 12], "parents_per_child": [0, 120, 400],
      "child_queried_alone": True, "changes_with_parent": False, "child_doc_bytes": 300}])

# %% [markdown]
# **Predict first.** A chat app: a channel's messages are none at first, about 2,000 typically, with no upper
# bound; the channel page shows the newest 50, and messages are also searched on their own. Which model will the
# helper recommend for channels -> messages? Record one of `"embed"`, `"array of references"`, `"child reference"`
# or `"relationship collection"` with `ex_model.predict(...)`.

# %%
ex_model = labkit.exercises.get("20-predict-helper-model")
ex_model

# %% tags=["solution"]
ex_model.predict("child reference")

# %% tags=["reveal"]
chat = labkit.recommend(
    [{"operation": "Open a channel", "type": "read", "per_second": 2000, "entities": ["channels", "messages"],
      "fields": ["name", "messages.text"], "sort": {"createdAt": -1}, "limit": 50}],
    [{"parent": "channels", "child": "messages", "cardinality": [0, 2000, None], "child_queried_alone": True,
      "changes_with_parent": False, "child_doc_bytes": 300}])
chat

# %% tags=["reveal"]
ex_model.check(chat.model_for("channels", "messages").name)

# %% [markdown]
# ## Exercise 2: describe another application by its numbers
#
# The helper is only as good as the numbers it gets. Describe the whole chat app, whose numbers follow:

# %%
chat_app = pd.DataFrame([
    ("open a channel", "read, 2,000/s", "the channel's name, its members and its newest messages"),
    ("post a message", "write, 200/s", ""),
    ("members of a channel", "min 2, typically 8, max 50; 60 bytes each", "shown only with the channel"),
    ("messages of a channel", "min 0, typically 2,000, no max; 300 bytes each", "also searched on their own"),
], columns=["what", "numbers", "notes"]).set_index("what")
chat_app

# %% [markdown]
# Write `access_patterns` and `relationships` in the form used above; `ex2.check(access_patterns,
# relationships)` runs the helper on them and checks what you told it.

# %%
ex2 = labkit.exercises.get("20-chat-workload")
ex2

# %% tags=["solution"]
access_patterns = [
    {"operation": "Open a channel", "type": "read", "per_second": 2000,
     "entities": ["channels", "members", "messages"], "fields": ["name", "members.userId", "messages.text"]},
    {"operation": "Post a message", "type": "write", "per_second": 200, "entities": ["messages"], "fields": []},
]
relationships = [
    {"parent": "channels", "child": "members", "cardinality": [2, 8, 50],
     "child_queried_alone": False, "changes_with_parent": True, "child_doc_bytes": 60},
    {"parent": "channels", "child": "messages", "cardinality": [0, 2000, None],
     "child_queried_alone": True, "changes_with_parent": False, "child_doc_bytes": 300},
]
ex2.check(access_patterns, relationships)

# %% [markdown]
# ## Summary
#
# - Start from the workload, not from the use case's name: the matrix only suggests where to look.
# - Each pattern removes one measurable cost: documents per day (bucket), document size (outlier, subset),
#   work per read (computed, approximation), migration pain (schema versioning), queries per page
#   (polymorphic, extended reference, single collection).
# - Check with the numbers: `$collStats`, `explain()` and round trips, as in each lesson of this section.
# - The helper's one bound from the sources is "an array stays under 100 items"; its other thresholds are its own
#   choices, and the 16 MiB document limit ([manual: limits](https://www.mongodb.com/docs/manual/reference/limits/))
#   is a wall to stay far away from.
#
# **Next:** 30 · the anti-patterns section starts with the workload.

# %% [markdown] tags=["sources"]
# ## Sources
#
# 1. [MongoDB manual: Schema Design Patterns](https://www.mongodb.com/docs/manual/data-modeling/design-patterns/)
# 2. [MongoDB manual: Embedded Data Versus References](https://www.mongodb.com/docs/manual/data-modeling/concepts/embedding-vs-references/)
# 3. [MongoDB manual: Time Series](https://www.mongodb.com/docs/manual/core/timeseries-collections/)
# 4. [MongoDB manual: MongoDB Limits and Thresholds (16 MiB documents)](https://www.mongodb.com/docs/manual/reference/limits/)

# %% [markdown] tags=["navigation"]
# [← 19 · Single-collection design: a many-to-many in one indexed query](19_single_collection.ipynb) · [Contents](../CONTENTS.md) · [30 · Start from the workload →](30_workload.ipynb)
