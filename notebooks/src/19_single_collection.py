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
#     exercise_minutes: 15
#     title: "Single-collection design: a many-to-many in one indexed query"
#     section: Patterns
#     demo: "Fetch a book with its authors with find({'relatedIds': 'book:1'}) and show the multikey IXSCAN, then the same page with two collections and $lookup."
#     mistakes: ["leaving a document's own id out of relatedIds, so the book itself is missing from its page", "updating relatedIds on one side only, so the reverse query (an author's books) misses some", "forgetting to filter on docType when only one kind of document is wanted", "using the pattern for an unbounded side (an author with thousands of titles) instead of per-edge documents"]
#     sources:
#     - title: "MongoDB manual: Single Collection Pattern"
#       url: https://www.mongodb.com/docs/manual/data-modeling/design-patterns/single-collection/
#     - title: "MongoDB University: Advanced Schema Design Patterns, lesson 1 (Single Collection Pattern)"
#       url: https://learn.mongodb.com/learn/course/advanced-schema-design-patterns/lesson-1-single-collection-pattern/learn
#     - title: "MongoDB manual: Multikey Indexes"
#       url: https://www.mongodb.com/docs/manual/core/indexes/index-types/index-multikey/
#     - title: "MongoDB manual: $lookup (aggregation stage)"
#       url: https://www.mongodb.com/docs/manual/reference/operator/aggregation/lookup/
#     - title: "MongoDB manual: $addToSet (update operator)"
#       url: https://www.mongodb.com/docs/manual/reference/operator/update/addToSet/
# ---

# %% [markdown]
# # 19 · Single-collection design: a many-to-many in one indexed query
#
# **You will learn**
# - to store two entity types that are read together (books and their authors) in **one** collection, told apart by
#   a `docType` field;
# - to link them with an indexed array of related ids, `relatedIds`, so one query returns a book *and* its authors;
# - to read the multikey IXSCAN behind that query, and to compare it with two collections joined by `$lookup`;
# - what the pattern costs: both sides of every link to maintain, and mixed shapes in one collection.
#
# **Time:** about 25 minutes.

# %%
import random

import pandas as pd

import labkit

db = labkit.fresh_db("19_single_collection")
print("engine:", labkit.describe(db.client))

# %% [markdown]
# A publisher's catalogue: 400 books by 150 authors. Most books have one to three authors; twenty anthologies
# (`book:901` ... `book:920`) have 1 to 20 contributors, for the explorer further down. Seeded, so every run is the
# same.

# %%
rng = random.Random(29)
authors = [{"_id": f"author:{a}", "name": f"Author {a}", "born": 1940 + a % 60} for a in range(1, 151)]
books = [{"_id": f"book:{b}", "title": f"Book {b}", "year": 1990 + b % 35,
          "authorIds": sorted(rng.sample([a["_id"] for a in authors], rng.choice([1, 1, 2, 2, 3])),
                              key=lambda s: int(s.split(":")[1]))} for b in range(1, 381)]
books += [{"_id": f"book:{900 + k}", "title": f"Anthology {k}", "year": 2020,
           "authorIds": [f"author:{a}" for a in range(100 + k, 100 + 2 * k)]} for k in range(1, 21)]
print("books:", len(books), "| authors:", len(authors), "| authorships:", sum(len(b["authorIds"]) for b in books))

# %% [markdown]
# ## The workload

# %%
labkit.workload_table([
    ("book page: the book and its authors' names", "read", "500/s", "book + every author"),
    ("author page: the author and their books", "read", "50/s", "author + every book"),
    ("add a book with its authors", "write", "20 a day", ""),
], rate="rate (assumed)")

# %% [markdown]
# The rates are this lesson's assumption: books are read thousands of times for every book added.

# %% [markdown]
# ## Two collections, joined with `$lookup`
#
# The usual shape: `books` holds `authorIds`, `authors` holds the people. A book page is one aggregation whose
# [`$lookup`](https://www.mongodb.com/docs/manual/reference/operator/aggregation/lookup/) finds the authors by
# `_id`; an author page needs an index on `books.authorIds`.

# %%
db.books.insert_many(books)
db.authors.insert_many(authors)
db.books.create_index("authorIds")


def aggregate_cost(collection, pipeline):
    explain = db.command("explain", {"aggregate": collection, "pipeline": pipeline, "cursor": {}},
                         verbosity="executionStats")
    if "stages" not in explain:  # a server may run the whole pipeline as one plan
        stats = explain["executionStats"]
        return {"round trips": 1, "keys examined": stats["totalKeysExamined"],
                "docs examined": stats["totalDocsExamined"]}
    outer = explain["stages"][0]["$cursor"]["executionStats"]
    joins = [s for s in explain["stages"] if "$lookup" in s]
    return {"round trips": 1, "keys examined": outer["totalKeysExamined"] + sum(s["totalKeysExamined"] for s in joins),
            "docs examined": outer["totalDocsExamined"] + sum(s["totalDocsExamined"] for s in joins)}


def book_page_lookup(book_id):
    return [{"$match": {"_id": book_id}},
            {"$lookup": {"from": "authors", "localField": "authorIds", "foreignField": "_id", "as": "authors"}}]


page = next(db.books.aggregate(book_page_lookup("book:1")))
print(page["title"], "by", ", ".join(a["name"] for a in page["authors"]))
aggregate_cost("books", book_page_lookup("book:1"))

# %% [markdown]
# ## One collection: `docType` and `relatedIds`
#
# Books and authors go into `library`. Every document lists in `relatedIds` its **own** id and the ids of the
# documents it belongs with: a book lists itself and its authors, an author lists itself and their books. One
# multikey index on `relatedIds` then serves both pages. This is the
# [single collection pattern](https://www.mongodb.com/docs/manual/data-modeling/design-patterns/single-collection/)
# of MongoDB's manual; MongoDB University's course names the two fields `docType` and `relatedTo`
# ([University: single collection pattern](https://learn.mongodb.com/learn/course/advanced-schema-design-patterns/lesson-1-single-collection-pattern/learn)).

# %%
books_of = {}
for b in books:
    for a in b["authorIds"]:
        books_of.setdefault(a, []).append(b["_id"])
db.library.insert_many(
    [{"_id": b["_id"], "docType": "book", "title": b["title"], "year": b["year"],
      "relatedIds": [b["_id"]] + b["authorIds"]} for b in books]
    + [{"_id": a["_id"], "docType": "author", "name": a["name"], "born": a["born"],
        "relatedIds": [a["_id"]] + books_of.get(a["_id"], [])} for a in authors])
db.library.create_index("relatedIds")
for doc in db.library.find({"_id": {"$in": ["book:1", "author:3"]}}).sort("_id", 1):
    print(doc)

# %% [markdown]
# The book page is a plain `find`: the book matches through its own id, each author through the book's id in their
# list.

# %%
book_page = list(db.library.find({"relatedIds": "book:1"}).sort([("docType", -1), ("_id", 1)]))
for doc in book_page:
    print(doc["docType"], doc["_id"], doc.get("title") or doc.get("name"))

# %%
explain = db.library.find({"relatedIds": "book:1"}).explain()
ixscan = explain["queryPlanner"]["winningPlan"]["inputStage"]
stats = explain["executionStats"]
{"stage": ixscan["stage"], "indexName": ixscan["indexName"], "isMultiKey": ixscan["isMultiKey"],
 "indexBounds": ixscan["indexBounds"], "keys examined": stats["totalKeysExamined"],
 "docs examined": stats["totalDocsExamined"], "returned": stats["nReturned"]}

# %% [markdown]
# The index has one key per element of every `relatedIds` array (that is what **multikey** means:
# [manual: multikey indexes](https://www.mongodb.com/docs/manual/core/indexes/index-types/index-multikey/)), so
# the single point `["book:1", "book:1"]` finds the book and its authors directly: keys examined = documents
# returned.
#
# The author page is the same query with the author's id; no second index is needed:

# %%
author_page = list(db.library.find({"relatedIds": "author:3"}).sort([("docType", 1), ("_id", 1)]))
print([(d["docType"], d["_id"]) for d in author_page])


# %% [markdown]
# ## Side by side
#
# Book page and author page, measured with `explain()` in both designs.

# %%
def find_cost(cursor):
    stats = cursor.explain()["executionStats"]
    return {"round trips": 1, "keys examined": stats["totalKeysExamined"], "docs examined": stats["totalDocsExamined"]}


print("books by author:3:", db.books.count_documents({"authorIds": "author:3"}))

# %% [markdown]
# **Predict first.** In the single collection, how many documents does the author page
# `find({"relatedIds": "author:3"})` examine? Record your number with `predict_author.predict(...)`, then run the
# measuring cell.

# %%
predict_author = labkit.exercises.get("19-predict-author-page-docs")
predict_author

# %% tags=["solution"]
predict_author.predict(1 + db.books.count_documents({"authorIds": "author:3"}))

# %% tags=["reveal"]
author_page_lookup = [{"$match": {"_id": "author:3"}},
                      {"$lookup": {"from": "books", "localField": "_id", "foreignField": "authorIds", "as": "books"}}]
comparison = pd.DataFrame({
    ("book page", "two collections + $lookup"): aggregate_cost("books", book_page_lookup("book:1")),
    ("book page", "single collection"): find_cost(db.library.find({"relatedIds": "book:1"})),
    ("author page", "two collections + $lookup"): aggregate_cost("authors", author_page_lookup),
    ("author page", "single collection"): find_cost(db.library.find({"relatedIds": "author:3"})),
}).T
comparison

# %% tags=["reveal"]
predict_author.check(int(comparison.loc[("author page", "single collection"), "docs examined"]))

# %% [markdown]
# Both designs read the same documents in one round trip; the single collection does it with a plain indexed
# `find` and no join stage, and one index serves both directions. (The join examines more index keys for the
# book page: its `$lookup` reads the authors through the `_id` index.) The price:
#
# - every link is stored twice (in the book's and in the author's `relatedIds`), so adding a book means updating its
#   authors too, the two-way-reference upkeep of lesson 05 (below: two statements);
# - an author's `relatedIds` grows with their bibliography: fine for a few dozen titles, not for a prolific author
#   with thousands (then store one small document per authorship instead);
# - queries that want one kind of document must say so (`docType`), and validators must allow both shapes.

# %%
add_book = [
    ("insert the book", db.library.insert_one({"_id": "book:999", "docType": "book", "title": "New Book",
                                               "year": 2026, "relatedIds": ["book:999", "author:3", "author:4"]})),
    ("link its authors", db.library.update_many({"_id": {"$in": ["author:3", "author:4"]}},
                                                {"$addToSet": {"relatedIds": "book:999"}})),
]
print("writes to add one book with two authors:", len(add_book), "statements,",
      1 + add_book[1][1].modified_count, "documents")
print("its page:", sorted(d["_id"] for d in db.library.find({"relatedIds": "book:999"})))

# %% [markdown]
# The two statements are not atomic together: if the process stops between them, the book exists but its authors'
# pages do not list it. Lesson 05's remedies apply. Both statements can be repeated safely (the insert fails with a
# duplicate key the second time, and [`$addToSet`](https://www.mongodb.com/docs/manual/reference/operator/update/addToSet/)
# adds an id only if it is missing), so a job that retries the second one repairs the link; or run both in one
# transaction.
#
# MongoDB University also teaches a second variant of the pattern for one-to-many data, such as a book and its
# reviews: one overloaded key, `"book:1"` for the book and `"book:1/review:7"` for each review, indexed, and read
# with an anchored prefix regex (lesson 17 shows how such a regex becomes an index range).
#
# ## Explore: authors per book, and how often books are added
#
# Reading costs the two designs the same documents; writing does not. The explorer adds a book with the chosen
# number of authors to each design (and removes it again), measuring the documents written with the
# `labkit.ledger.measure`, and reads the matching anthology's page under `explain()`. The second slider is how
# many page views each new book gets. Without `$lookup`, the two-collection book page is two finds (the book,
# then its authors): watch which design needs fewer round trips as the views per book change.

# %%
from labkit.widgets import explorer


def add_to_library(k):
    def add(d):
        d.library.insert_one({"_id": "book:explore", "docType": "book", "title": "Explore", "year": 2026,
                              "relatedIds": ["book:explore"] + [f"author:{a}" for a in range(1, k + 1)]})
        d.library.update_many({"_id": {"$in": [f"author:{a}" for a in range(1, k + 1)]}},
                              {"$addToSet": {"relatedIds": "book:explore"}})
    return add


def add_to_books(k):
    def add(d):
        d.books.insert_one({"_id": "book:explore", "title": "Explore", "year": 2026,
                            "authorIds": [f"author:{a}" for a in range(1, k + 1)]})
    return add


def undo_explore_book():
    db.books.delete_one({"_id": "book:explore"})
    db.library.delete_one({"_id": "book:explore"})
    db.library.update_many({"relatedIds": "book:explore"}, {"$pull": {"relatedIds": "book:explore"}})


def per_book(authors_per_book, views_per_new_book):
    book_id = f"book:{900 + authors_per_book}"
    joined = aggregate_cost("books", book_page_lookup(book_id))
    single = find_cost(db.library.find({"relatedIds": book_id}))
    write_single = labkit.ledger.measure(db, add_to_library(authors_per_book))
    undo_explore_book()
    write_two = labkit.ledger.measure(db, add_to_books(authors_per_book))
    undo_explore_book()
    views = views_per_new_book
    return {"book": book_id, "authors": authors_per_book,
            "two collections + $lookup: docs examined per view": joined["docs examined"],
            "single collection: docs examined per view": single["docs examined"],
            "two collections: docs written per new book": write_two.docs_written,
            "single collection: docs written per new book": write_single.docs_written,
            "two collections, two finds: round trips (views + writes)": views * 2 + write_two.round_trips,
            "single collection: round trips (views + writes)": views * 1 + write_single.round_trips,
            "two collections: docs examined + written": views * joined["docs examined"] + write_two.docs_written,
            "single collection: docs examined + written": views * single["docs examined"]
            + write_single.docs_written,
            "fewer round trips": "single collection" if views + write_single.round_trips < 2 * views
            + write_two.round_trips else "two collections" if views + write_single.round_trips > 2 * views
            + write_two.round_trips else "tie"}


def draw_docs(ax, values, r):
    ax.barh(["two collections", "single collection"], [r["two collections: docs examined + written"],
                                                       r["single collection: docs examined + written"]],
            color=["#ff7f0e", "#1f77b4"])
    ax.set_xlabel("documents examined + written, per new book and its page views")


anthology = explorer(per_book, sliders={"authors_per_book": (1, 20, 3), "views_per_new_book": (0, 50, 10)},
                     title="Authors per book", draw=draw_docs)
anthology

# %% [markdown]
# Per new book the single collection writes one document per author more; per page view both read the same
# documents, and the single collection saves a round trip over two finds. So it pays off when books are read
# far more often than they are written (the catalogue's workload), and not for a write-heavy collection.

# %%
pd.DataFrame([per_book(k, v) for k, v in ((1, 0), (20, 0), (20, 50))]).set_index(["authors", "book"]).T

# %% [markdown]
# ## Exercise 1 · Enrolments: courses and students in one collection
#
# Another many-to-many: an online school keeps courses and students in one `catalog` collection, each document
# with `docType` and `relatedIds` (its own id to start with), indexed on `relatedIds`. Write
# `enrol(catalog, course_id, student_id)` that links a student to a course both ways, so that the course page and
# the student page stay one `find` each. It must be safe to run twice for the same pair (a retry) and send at most
# two write statements. `ex_enrol.check(practice, enrol)` runs it on a catalog of its own: 4 courses, 12
# students, 19 enrolments, one of them repeated.

# %%
practice = labkit.fresh_db("19_practice")
ex_enrol = labkit.exercises.get("19-enrol")
ex_enrol


# %% tags=["solution"]
def enrol(catalog, course_id, student_id):
    catalog.update_many({"_id": {"$in": [course_id, student_id]}},
                        {"$addToSet": {"relatedIds": {"$each": [course_id, student_id]}}})


ex_enrol.check(practice, enrol)

# %% [markdown]
# ## Exercise 2 · The library from two collections
#
# `practice.books` and `practice.authors` hold a small catalogue in two collections. Build `practice.library`: one
# document per book (`docType: "book"`) and per author (`docType: "author"`), each with `relatedIds` listing its own
# id and its related ids, and the index that makes `find({"relatedIds": <id>})` an IXSCAN.
# `ex.check(practice)` runs book pages and author pages against your collection.

# %%
practice.authors.insert_many(authors[:30])
practice.books.insert_many([b for b in books[:120] if all(int(a.split(":")[1]) <= 30 for a in b["authorIds"])])
ex = labkit.exercises.get("19-single-collection").remember(practice, "books", "authors")  # the setup, as it is now
ex

# %% tags=["solution"]
linked = {}
for b in practice.books.find():
    for a in b["authorIds"]:
        linked.setdefault(a, []).append(b["_id"])
practice.library.insert_many(
    [{"_id": b["_id"], "docType": "book", "title": b["title"], "relatedIds": [b["_id"]] + b["authorIds"]}
     for b in practice.books.find()]
    + [{"_id": a["_id"], "docType": "author", "name": a["name"], "relatedIds": [a["_id"]] + linked.get(a["_id"], [])}
       for a in practice.authors.find()])
practice.library.create_index("relatedIds")
ex.check(practice)

# %% [markdown]
# ## Summary
#
# - Entities read together can share a collection: `docType` says what each document is, `relatedIds` (its own id
#   plus its related ids) links them, and one multikey index answers "X and everything related to X" in one `find`.
# - The same index serves both directions of the many-to-many; no `$lookup` stage and no second index.
# - The links live on both sides: write both (like two-way references), keep each side bounded, and filter on
#   `docType` when only one kind is wanted.
#
# **Next:** 20 · which pattern when: use cases, patterns and a quiz.

# %% [markdown] tags=["sources"]
# ## Sources
#
# 1. [MongoDB manual: Single Collection Pattern](https://www.mongodb.com/docs/manual/data-modeling/design-patterns/single-collection/)
# 2. [MongoDB University: Advanced Schema Design Patterns, lesson 1 (Single Collection Pattern)](https://learn.mongodb.com/learn/course/advanced-schema-design-patterns/lesson-1-single-collection-pattern/learn)
# 3. [MongoDB manual: Multikey Indexes](https://www.mongodb.com/docs/manual/core/indexes/index-types/index-multikey/)
# 4. [MongoDB manual: \$lookup (aggregation stage)](https://www.mongodb.com/docs/manual/reference/operator/aggregation/lookup/)
# 5. [MongoDB manual: \$addToSet (update operator)](https://www.mongodb.com/docs/manual/reference/operator/update/addToSet/)

# %% [markdown] tags=["navigation"]
# [← 18 · Archive and document versioning: keep the hot collection small](18_archive_versioning.ipynb) · [Contents](../CONTENTS.md) · [20 · Which pattern when: use cases, patterns and a quiz →](20_which_pattern.ipynb)
