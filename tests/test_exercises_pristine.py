"""Exercises that transform the learner's practice data in place compare the result with a copy of the setup
kept by ``Exercise.remember`` (issue 15: "checkers never compare with data the learner may have damaged")."""
from __future__ import annotations

import labkit
from test_exercises_antipatterns import COLD, _bloated
from test_exercises_patterns_b import _build_library, _practice19


def _split(db):
    db.products.aggregate([{"$project": {f: 1 for f in COLD}}, {"$out": "product_details"}])
    db.products.update_many({}, {"$unset": {f: "" for f in COLD}})


def test_33_solution_passes_against_the_remembered_setup():
    db = _bloated()
    ex = labkit.exercises.get("33-split-hot-cold").remember(db, "products")
    _split(db)
    assert ex.check(db).correct


def test_33_deleting_products_is_caught_only_with_the_setup_copy():
    db = _bloated()
    ex = labkit.exercises.get("33-split-hot-cold").remember(db, "products")
    db.products.delete_many({"_id": {"$in": ["p1", "p2", "p3"]}})  # a learner's accident before splitting
    _split(db)
    msg = ex.check(db).message
    assert "3 of the 10 products of the setup are gone" in msg
    # the same damage without a remembered setup cannot be seen (the old behaviour, kept for old notebooks)
    assert labkit.exercises.get("33-split-hot-cold").check(db).correct


def test_33_changed_values_are_caught():
    db = _bloated()
    ex = labkit.exercises.get("33-split-hot-cold").remember(db, "products")
    db.products.update_one({"_id": "p4"}, {"$set": {"description": "short"}})  # cold data changed
    _split(db)
    assert "product_details 'p4': `description` is not the value the setup had" in ex.check(db).message
    db2 = _bloated()
    ex2 = labkit.exercises.get("33-split-hot-cold").remember(db2, "products")
    _split(db2)
    db2.products.update_one({"_id": "p5"}, {"$set": {"price": 0}})  # hot data changed
    assert "products 'p5': `price`" in ex2.check(db2).message


def test_19_library_built_from_damaged_books_is_caught():
    db = _practice19("t19_pristine")
    ex = labkit.exercises.get("19-single-collection").remember(db, "books", "authors")
    db.books.delete_many({"_id": {"$in": ["book:3", "book:4"]}})  # damaged, then built from what is left
    msg = ex.check(_build_library(db)).message
    assert "2 book(s)/author(s) are not in practice.library" in msg
    db2 = _practice19("t19_pristine_ok")
    ex2 = labkit.exercises.get("19-single-collection").remember(db2, "books", "authors")
    assert ex2.check(_build_library(db2)).correct


def test_remember_does_not_leak_into_other_checks():
    db = _bloated()
    labkit.exercises.get("33-split-hot-cold").remember(db, "products")
    assert labkit.exercises.remembered("products") is None  # only inside that exercise's check
