"""The anti-pattern exercise checkers accept good answers and reject typical wrong ones (embedded engine)."""
import datetime as dt

import pandas as pd
import pytest

import labkit
from labkit.engine import EmbeddedClient


def _db(name):
    return labkit.fresh_db(name, client=EmbeddedClient())


# --- 30 ---------------------------------------------------------------------------------------------------

def _workload():
    return pd.DataFrame({"operation": ["page", "list", "order", "mine", "review", "price", "report"],
                         "type": ["read", "read", "write", "read", "write", "write", "read"],
                         "per_second": [2000, 600, 15, 40, 2, 3 / 3600, 1 / 86400]})


def test_30_pick_operations():
    ex = labkit.exercises.get("30-pick-operations")
    w = _workload()
    top = w.sort_values("per_second", ascending=False)
    assert ex.check(w, top.head(4)).correct
    assert ex.check(w, top.head(3)).correct
    assert "left out" in ex.check(w, w.head(3)).message  # in table order: 'order' in, 'mine' out
    assert "too many" in ex.check(w, top.head(6)).message
    assert "99%" in ex.check(w, top.head(1)).message
    assert not ex.check(top.head(4))
    assert not ex.check(w, "page")


# --- 31 ---------------------------------------------------------------------------------------------------

def _shirts():
    db = _db("t31")
    db.products.insert_many([{"_id": f"s{i}", "colors": ["red", "blue"][: 1 + i % 2], "sizes": ["S", "M"][: 1 + (i // 2) % 2]}
                             for i in range(20)])
    return db


def _reshape(db):
    for p in db.products.find():
        db.products.update_one({"_id": p["_id"]}, {"$set": {"variants": [{"color": c, "size": s} for c in p["colors"]
                                                                         for s in p["sizes"]]},
                                                   "$unset": {"colors": "", "sizes": ""}})


def test_31_no_parallel_arrays():
    ex = labkit.exercises.get("31-no-parallel-arrays")
    db = _shirts()
    assert "still hold both" in ex.check(db.products).message
    _reshape(db)
    assert "no index holds both" in ex.check(db.products).message
    db.products.create_index([("variants.size", 1), ("variants.color", 1)])
    assert "put `variants.color` first" in ex.check(db.products).message
    db.products.drop_index("variants.size_1_variants.color_1")
    db.products.create_index([("variants.color", 1), ("variants.size", 1)])
    assert ex.check(db.products).correct
    assert not ex.check(db)
