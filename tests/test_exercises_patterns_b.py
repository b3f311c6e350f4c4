"""Checkers of the pattern lessons 15-19 accept good answers and reject typical wrong ones (embedded engine)."""
import datetime as dt

import pytest

import labkit
from labkit.engine import EmbeddedClient


def _fresh(name):
    return labkit.fresh_db(name, client=EmbeddedClient())


# --- 15 attribute ------------------------------------------------------------------------------------------

def _products(name):
    db = _fresh(name)
    db.products.insert_many([{"_id": f"prod:{i}", "name": f"Gadget {i}", "price": i,
                              f"spec_{'abc'[i % 3]}": i * 10, "spec_power_w": i % 7} for i in range(1, 31)])
    return db


def _good_to_attributes(doc):
    out = {k: v for k, v in doc.items() if not k.startswith("spec_")}
    out["specs"] = [{"k": k[len("spec_"):], "v": v} for k, v in doc.items() if k.startswith("spec_")]
    return out


def _rewrite(db, func):
    for doc in list(db.products.find()):
        db.products.replace_one({"_id": doc["_id"]}, func(doc))


def test_attribute_accepts_the_solution():
    db = _products("t15a")
    _rewrite(db, _good_to_attributes)
    db.products.create_index([("specs.k", 1), ("specs.v", 1)])
    result = labkit.exercises.get("15-attribute").check(db.products, _good_to_attributes)
    assert result.correct, result.message


def test_attribute_rejects_typical_mistakes():
    ex = labkit.exercises.get("15-attribute")
    db = _products("t15b")
    # prefix kept in k
    keep_prefix = lambda d: {k: v for k, v in d.items() if not k.startswith("spec_")} | {  # noqa: E731
        "specs": [{"k": k, "v": v} for k, v in d.items() if k.startswith("spec_")]}
    assert "prefix" in ex.check(db.products, keep_prefix).message
    # a subdocument instead of an array
    as_dict = lambda d: {k: v for k, v in d.items() if not k.startswith("spec_")} | {  # noqa: E731
        "specs": {k[5:]: v for k, v in d.items() if k.startswith("spec_")}}
    assert "ARRAY" in ex.check(db.products, as_dict).message
    # k and v swapped
    swapped = lambda d: {k: v for k, v in d.items() if not k.startswith("spec_")} | {  # noqa: E731
        "specs": [{"k": v, "v": k[5:]} for k, v in d.items() if k.startswith("spec_")]}
    assert "swapped" in ex.check(db.products, swapped).message
    # good function, but the collection was not rewritten
    assert "still have spec_" in ex.check(db.products, _good_to_attributes).message
    _rewrite(db, _good_to_attributes)
    assert "no index" in ex.check(db.products, _good_to_attributes).message
    db.products.create_index([("specs.v", 1), ("specs.k", 1)])
    assert "equality field first" in ex.check(db.products, _good_to_attributes).message
    db.products.drop_indexes()
    db.products.create_index("specs.k")
    db.products.create_index("specs.v")
    assert "ONE compound index" in ex.check(db.products, _good_to_attributes).message
    assert not ex.check(db.products)  # the function is missing


# --- 16 subset ---------------------------------------------------------------------------------------------

def _practice16(name):
    db = _fresh(name)
    db.products.insert_one({"_id": "prod:1", "name": "Headphones", "recentReviews": []})
    return db


def _push(db, review, **modifiers):
    db.products.update_one({"_id": review["productId"]},
                           {"$push": {"recentReviews": {"$each": [review], **modifiers}}})


def test_subset_accepts_sort_and_slice():
    def add_review(db, review):
        db.reviews.insert_one(review)
        _push(db, review, **{"$sort": {"createdAt": -1}, "$slice": 5})

    db = _practice16("t16a")
    result = labkit.exercises.get("16-subset").check(db, add_review)
    assert result.correct, result.message
    assert db.products.count_documents({}) == 1 and db.reviews.count_documents({}) == 0  # learner's data untouched


@pytest.mark.parametrize("modifiers, reviews_too, expected", [
    ({"$position": 0}, True, "$slice: 5"),                                   # unbounded
    ({"$position": 0, "$slice": 5}, True, "out of order"),                   # arrival order, not date order
    ({"$sort": {"createdAt": 1}, "$slice": -5}, True, "oldest first"),       # newest five, wrong direction
    ({"$sort": {"createdAt": -1}, "$slice": 5}, False, "reviews collection"),  # history not stored
])
def test_subset_rejects_typical_mistakes(modifiers, reviews_too, expected):
    def add_review(db, review):
        if reviews_too:
            db.reviews.insert_one(review)
        _push(db, review, **modifiers)

    result = labkit.exercises.get("16-subset").check(_practice16("t16b"), add_review)
    assert not result.correct
    assert expected in result.message


def test_subset_rejects_read_modify_write():
    """Issue 15's example for lesson 16: read the product, rebuild the list in Python, $set it (a lost update)."""
    def add_review(db, review):
        db.reviews.insert_one(review)
        recent = db.products.find_one({"_id": review["productId"]}).get("recentReviews", [])
        recent = sorted(recent + [review], key=lambda r: r["createdAt"], reverse=True)[:5]
        db.products.update_one({"_id": review["productId"]}, {"$set": {"recentReviews": recent}})

    result = labkit.exercises.get("16-subset").check(_practice16("t16d"), add_review)
    assert not result.correct and "lost update" in result.message


def test_subset_names_a_wrong_sort_key():
    """Issue 15: 16's `$position` was blamed for a sort mistake."""
    def add_review(db, review):
        db.reviews.insert_one(review)
        _push(db, review, **{"$sort": {"rating": -1}, "$slice": 5})

    result = labkit.exercises.get("16-subset").check(_practice16("t16e"), add_review)
    assert not result.correct and "sorts by {'rating': -1}" in result.message and "$position" not in result.message


def test_subset_needs_a_function():
    assert "add_review" in labkit.exercises.get("16-subset").check(_practice16("t16c")).message


# --- 17 materialized path ----------------------------------------------------------------------------------

_TREE = {"Catalog": None, "Books": "Catalog", "Music": "Catalog", "Programming": "Books", "Fiction": "Books",
         "Databases": "Programming", "Jazz": "Music", "MongoDB": "Databases", "Redis": "Databases"}


def _tree(name, path_of=None, index=True):
    db = _fresh(name)
    db.categories.insert_many([{"_id": n, "parent": p} for n, p in sorted(_TREE.items())])
    if path_of:
        for n in _TREE:
            chain, up = [], _TREE[n]
            while up:
                chain.insert(0, up)
                up = _TREE[up]
            db.categories.update_one({"_id": n}, {"$set": {"path": path_of(n, chain)}})
    if index:
        db.categories.create_index("path")
    return db.categories


def _good_path(n, chain):
    return "," + ",".join(chain) + "," if chain else None


def test_materialized_path_accepts_the_solution():
    result = labkit.exercises.get("17-materialized-path").check(_tree("t17a", _good_path))
    assert result.correct, result.message


@pytest.mark.parametrize("path_of, index, expected", [
    (None, True, "no `path` field"),
    (lambda n, c: "," + ",".join(c + [n]) + ",", True, "includes the node itself"),
    (lambda n, c: ",".join(c) if c else None, True, "BOTH ends"),
    (lambda n, c: c if c else None, True, "ONE string"),
    (lambda n, c: _good_path(n, c) or ",", True, "root"),
    (_good_path, False, "no index starts with `path`"),
])
def test_materialized_path_rejects_typical_mistakes(path_of, index, expected):
    result = labkit.exercises.get("17-materialized-path").check(_tree("t17b", path_of, index))
    assert not result.correct
    assert expected in result.message


# --- 18 versioning -----------------------------------------------------------------------------------------

def _practice18(name, unique=True):
    db = _fresh(name)
    db.documents.insert_one({"_id": "doc:1", "rev": 1, "title": "Policy", "body": "first draft"})
    db.documents_history.create_index([("docId", 1), ("rev", 1)], unique=unique)
    return db


def _save_good(db, doc_id, changes):
    current = db.documents.find_one({"_id": doc_id})
    copy = {k: v for k, v in current.items() if k != "_id"}
    db.documents_history.update_one({"_id": f"{doc_id}:rev:{current['rev']}"}, {"$setOnInsert": copy | {"docId": doc_id}},
                                    upsert=True)  # insert-only: a retry after a crash changes nothing
    db.documents.update_one({"_id": doc_id, "rev": current["rev"]}, {"$set": changes, "$inc": {"rev": 1}})


def _save_new_revision(db, doc_id, changes):  # copies the revision AFTER the change
    db.documents.update_one({"_id": doc_id}, {"$set": changes, "$inc": {"rev": 1}})
    current = db.documents.find_one({"_id": doc_id})
    db.documents_history.insert_one({k: v for k, v in current.items() if k != "_id"}
                                    | {"_id": f"{doc_id}:rev:{current['rev']}", "docId": doc_id})


def _save_same_id(db, doc_id, changes):  # keeps the current _id in the copy
    current = db.documents.find_one({"_id": doc_id})
    db.documents_history.insert_one(current | {"docId": doc_id})
    db.documents.update_one({"_id": doc_id}, {"$set": changes, "$inc": {"rev": 1}})


def _save_no_inc(db, doc_id, changes):
    current = db.documents.find_one({"_id": doc_id})
    db.documents_history.insert_one({k: v for k, v in current.items() if k != "_id"}
                                    | {"_id": f"{doc_id}:{changes['body']}", "docId": doc_id})
    db.documents.update_one({"_id": doc_id}, {"$set": changes})


def test_versioning_accepts_the_solution():
    db = _practice18("t18a")
    result = labkit.exercises.get("18-versioning").check(db, _save_good)
    assert result.correct, result.message
    assert db.documents.count_documents({}) == 1 and db.documents_history.count_documents({}) == 0  # cleaned up


@pytest.mark.parametrize("func, unique, expected", [
    (_save_good, False, "not unique"),
    (_save_new_revision, True, "NEW revisions"),
    (_save_same_id, True, "_id of its own"),
    (_save_no_inc, True, "`$inc` rev"),
])
def test_versioning_rejects_typical_mistakes(func, unique, expected):
    result = labkit.exercises.get("18-versioning").check(_practice18("t18b", unique), func)
    assert not result.correct
    assert expected in result.message


def test_versioning_needs_the_index():
    db = _fresh("t18c")
    assert "create the unique index" in labkit.exercises.get("18-versioning").check(db, _save_good).message


# --- 19 single collection ----------------------------------------------------------------------------------

def _practice19(name):
    db = _fresh(name)
    db.authors.insert_many([{"_id": f"author:{a}", "name": f"Author {a}"} for a in range(1, 7)])
    db.books.insert_many([{"_id": f"book:{b}", "title": f"Book {b}",
                           "authorIds": [f"author:{1 + b % 6}", f"author:{1 + (b + 2) % 6}"][: 1 + b % 2]}
                          for b in range(1, 13)])
    return db


def _build_library(db, own_id=True, author_links=True, index=True, doc_type=True, fields=True):
    linked = {}
    for b in db.books.find():
        for a in b["authorIds"]:
            linked.setdefault(a, []).append(b["_id"])
    db.library.insert_many(
        [{"_id": b["_id"], "docType": "book" if doc_type else None,
          "relatedIds": ([b["_id"]] if own_id else []) + b["authorIds"]} | ({"title": b["title"]} if fields else {})
         for b in db.books.find()]
        + [{"_id": a["_id"], "docType": "author" if doc_type else None,
            "relatedIds": ([a["_id"]] if own_id else []) + (linked.get(a["_id"], []) if author_links else [])}
           | ({"name": a["name"]} if fields else {}) for a in db.authors.find()])
    if index:
        db.library.create_index("relatedIds")
    return db


def test_single_collection_accepts_the_solution():
    result = labkit.exercises.get("19-single-collection").check(_build_library(_practice19("t19a")))
    assert result.correct, result.message


@pytest.mark.parametrize("options, expected", [
    ({"own_id": False}, "own id"),
    ({"author_links": False}, "authors list the ids of their books"),
    ({"index": False}, "no index starts with `relatedIds`"),
    ({"doc_type": False}, "docType"),
    ({"fields": False}, "the book page shows the title"),  # only ids copied: no page can be shown
])
def test_single_collection_rejects_typical_mistakes(options, expected):
    result = labkit.exercises.get("19-single-collection").check(_build_library(_practice19("t19b"), **options))
    assert not result.correct
    assert expected in result.message


def test_single_collection_needs_every_document():
    db = _practice19("t19c")
    assert "not in practice.library" in labkit.exercises.get("19-single-collection").check(db).message
    assert not labkit.exercises.get("19-single-collection").check(db.library)
