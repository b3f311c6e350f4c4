"""Each exercise checker accepts good answers and rejects typical wrong ones."""
import datetime as dt

import pandas as pd
import pytest

import labkit
from labkit.engine import EmbeddedClient


def test_registry_and_unknown_id():
    assert {"00-rank-workload", "01-embed-atomic"} <= set(labkit.exercises.ids())
    with pytest.raises(KeyError, match="known ids"):
        labkit.exercises.get("nope")


def _workload():
    return pd.DataFrame({"operation": list("abcdefg"), "per_second": [5, 700, 1, 30, 0.1, 2, 9]})


def test_rank_workload():
    ex = labkit.exercises.get("00-rank-workload")
    good = _workload().sort_values("per_second", ascending=False)
    assert ex.check(good).correct and "'b'" in ex.check(good).message
    assert not ex.check(_workload())  # unsorted
    assert "least frequent first" in ex.check(_workload().sort_values("per_second")).message
    assert not ex.check(good.head(3))
    assert not ex.check(good.drop(columns="per_second"))
    assert not ex.check("b")
    assert ex.hint() != ex.hint() or len(ex.hints) == 1
    assert "sort_values" in ex.solution()


@pytest.fixture
def db():
    db = labkit.fresh_db("t01", client=EmbeddedClient())
    db.users.insert_many(labkit.seed.load_canonical()["users"])
    return db


def test_embed_atomic_good(db):
    ex = labkit.exercises.get("01-embed-atomic")
    db.users.update_one({"_id": "user:234"}, {"$push": {"roles": {"title": "moderator", "canEdit": True}},
                                              "$set": {"updatedAt": dt.datetime(2026, 10, 6, 8)}})
    assert ex.check(db).correct


@pytest.mark.parametrize("update, why", [
    ({"$push": {"roles": {"title": "moderator", "canEdit": True}}}, "updatedAt"),
    ({"$push": {"roles": {"title": "moderator", "canEdit": "yes"}}, "$set": {"updatedAt": dt.datetime(2026, 10, 6, 8)}}, "canEdit"),
    ({"$set": {"roles": {"title": "moderator", "canEdit": True}, "updatedAt": dt.datetime(2026, 10, 6, 8)}}, "array"),
    ({"$set": {"updatedAt": dt.datetime(2026, 10, 6, 8)}}, "moderator"),
])
def test_embed_atomic_wrong(db, update, why):
    ex = labkit.exercises.get("01-embed-atomic")
    db.users.update_one({"_id": "user:234"}, update)
    result = ex.check(db)
    assert not result.correct and why in result.message


def test_embed_atomic_duplicate(db):
    ex = labkit.exercises.get("01-embed-atomic")
    for _ in range(2):
        db.users.update_one({"_id": "user:234"}, {"$push": {"roles": {"title": "moderator", "canEdit": True}},
                                                  "$set": {"updatedAt": dt.datetime(2026, 10, 6, 8)}})
    assert "2 times" in ex.check(db).message
