"""Exercises of lessons 13, 14, 15, 17 and 18 (lessons_b): each solution passes, each listed mistake and
near-miss fails with a message naming it."""
from __future__ import annotations

import re

import pytest

import labkit.exercises as exercises
from exercise_helpers import assert_prediction, solved


def _check(ex_id, *args):
    return exercises.get(ex_id).check(*args)


# --- 13: dual query during a migration ----------------------------------------------------------------------
# Manual, "$regex" (anchors ^ $, "." matches any character) and "$or" (each clause may use its own index).

def city_solution(city):
    return {"$or": [{"schemaVersion": 2, "address.city": city},
                    {"schemaVersion": 1, "address": {"$regex": f", {re.escape(city)}$"}}]}


def test_13_dual_query_solution_passes():
    result = _check("13-dual-query-city", city_solution)
    assert result.correct, result.message


def test_13_new_fields_only_misses_v1():
    # listed mistake: querying only the new field names while old documents still use the old ones
    result = _check("13-dual-query-city", lambda city: {"address.city": city})
    assert not result.correct and "misses the v1 customers" in result.message


def test_13_old_shape_only_misses_v2():
    result = _check("13-dual-query-city", lambda city: {"address": {"$regex": f", {re.escape(city)}$"}})
    assert not result.correct and "misses the v2 customers" in result.message


def test_13_unanchored_pattern_matches_new_york_for_york():
    result = _check("13-dual-query-city", lambda city: {"$or": [{"address.city": city},
                                                               {"address": {"$regex": f"{re.escape(city)}$"}}]})
    assert not result.correct and "not anchored at the start of the city" in result.message


def test_13_unescaped_dot():
    result = _check("13-dual-query-city", lambda city: {"$or": [{"address.city": city},
                                                               {"address": {"$regex": f", {city}$"}}]})
    assert not result.correct and "re.escape" in result.message


def test_13_pattern_not_anchored_at_the_end_matches_street_names():
    result = _check("13-dual-query-city", lambda city: {"$or": [{"address.city": city},
                                                               {"address": {"$regex": re.escape(city)}}]})
    assert not result.correct and ("anchor" in result.message)


def test_13_not_a_filter_and_crashing_functions_get_messages():
    assert "return one filter dict" in _check("13-dual-query-city", lambda city: [city]).message
    assert "pass your function" in _check("13-dual-query-city", 42).message
    bad = _check("13-dual-query-city", lambda city: {"$or": "x"})
    assert not bad.correct and bad.message
    assert _check("13-dual-query-city", lambda city: 1 / 0).outcome == "error"


def test_13_prediction_checks_against_the_measurement():
    ex = exercises.get("13-predict-dual-query-after-migration")
    assert ex.check(528).outcome == "not-attempted"
    ex.predict(528)
    assert ex.check(528).correct
    ex.predict(529)  # one key off: an exact count is exact
    assert not ex.check(528).correct
    ex.predict(3123)  # the cost before the migration
    result = ex.check(528)
    assert not result.correct and "partial index v1_by_name" in result.message


# --- 18: price history that survives a crash ----------------------------------------------------------------
# Manual, "update" with upsert and $setOnInsert (no change when the filter matches); "Document Versioning" pattern.
import datetime as _dt  # noqa: E402


save_price_solution = solved("18-price-history-crash-safe")["save_price"]


def _conditional_update(db, seen, new_price):
    return db.products.update_one({"_id": seen["_id"], "rev": seen["rev"]},
                                  {"$set": {"price": new_price}, "$inc": {"rev": 1}}).matched_count == 1


def test_18_solution_passes():
    result = _check("18-price-history-crash-safe", save_price_solution)
    assert result.correct, result.message


def _save_with_history_id(history_id):
    """A save that files the old price under ``history_id(seen)`` before the conditional update."""
    def save(db, seen, new_price):
        copy = {k: v for k, v in seen.items() if k != "_id"} | {"productId": seen["_id"]}
        db.price_history.insert_one(copy | {"_id": history_id(seen)})
        return _conditional_update(db, seen, new_price)
    return save


@pytest.mark.parametrize("history_id, why", [
    (lambda seen: f"{seen['_id']}@{_dt.datetime.now():%Y-%m-%dT%H:%M}", "made of the time"),  # collides in a minute
    (lambda seen: f"{seen['_id']}@rev{seen['rev']}", "locked for ever"),  # a plain insert, after a crash
], ids=["time-based id", "plain insert"])
def test_18_history_ids_that_fail(history_id, why):
    result = _check("18-price-history-crash-safe", _save_with_history_id(history_id))
    assert not result.correct and why in result.message


def test_18_server_ids_file_a_revision_twice_after_a_crash():
    def save(db, seen, new_price):
        db.price_history.insert_one({k: v for k, v in seen.items() if k != "_id"} | {"productId": seen["_id"]})
        return _conditional_update(db, seen, new_price)
    result = _check("18-price-history-crash-safe", save)
    assert not result.correct and "revision 1 twice" in result.message


def test_18_product_written_before_the_history_loses_a_revision_on_crash():
    def save(db, seen, new_price):
        ok = _conditional_update(db, seen, new_price)
        copy = {k: v for k, v in seen.items() if k != "_id"} | {"productId": seen["_id"]}
        db.price_history.update_one({"_id": f"{seen['_id']}@rev{seen['rev']}"}, {"$setOnInsert": copy}, upsert=True)
        return ok
    result = _check("18-price-history-crash-safe", save)
    assert not result.correct and "write the history copy first" in result.message


def test_18_unconditional_update_loses_the_first_edit():
    def save(db, seen, new_price):
        copy = {k: v for k, v in seen.items() if k != "_id"} | {"productId": seen["_id"]}
        db.price_history.update_one({"_id": f"{seen['_id']}@rev{seen['rev']}"}, {"$setOnInsert": copy}, upsert=True)
        db.products.update_one({"_id": seen["_id"]}, {"$set": {"price": new_price}, "$inc": {"rev": 1}})
        return True
    result = _check("18-price-history-crash-safe", save)
    assert not result.correct and "lost update" in result.message


def test_18_copying_the_new_revision_and_no_return_value():
    def new_rev(db, seen, new_price):
        ok = _conditional_update(db, seen, new_price)
        doc = db.products.find_one({"_id": seen["_id"]})
        copy = {k: v for k, v in doc.items() if k != "_id"} | {"productId": seen["_id"]}
        db.price_history.update_one({"_id": f"{seen['_id']}@rev{doc['rev']}"}, {"$setOnInsert": copy}, upsert=True)
        return ok
    result = _check("18-price-history-crash-safe", new_rev)
    assert not result.correct and "NEW revisions" in result.message

    def no_return(db, seen, new_price):
        save_price_solution(db, seen, new_price)
    result = _check("18-price-history-crash-safe", no_return)
    assert not result.correct and "return True" in result.message


def test_18_prediction():
    assert_prediction("18-predict-crash-retry", 2, 1, "insert-only upsert")


# --- 14: sparse or partial -----------------------------------------------------------------------------------
# Manual, "Partial Indexes" (query must imply the filter) and "Sparse Indexes" (not used when results would be
# incomplete).

def test_14_prediction_choices_and_explanation():
    ex = exercises.get("14-predict-sparse-or-partial")
    assert "Choose one of" in ex.predict("stars_all")
    ex.predict("stars_tools_only")
    result = ex.check("stars_sparse")
    assert not result.correct and "may not answer it" in result.message
    ex.predict("stars_sparse")
    assert ex.check("stars_sparse").correct


def test_a_prediction_displays_its_task_not_its_solution():
    ex = exercises.get("14-predict-sparse-or-partial")
    assert repr(ex).startswith(("Exercise 14-predict-sparse-or-partial", "Prediction 14-predict-sparse-or-partial"))
    assert "stars_sparse" not in repr(ex)


# --- 15: attribute index versus sparse indexes ---------------------------------------------------------------
# Manual, "Sparse Indexes" (only documents with the field), "Multikey Indexes" (one key per array element),
# "MongoDB Limits and Thresholds" (64 indexes per collection).

def test_15_prediction():
    ex = exercises.get("15-predict-entries-vs-sparse")
    assert "Choose one of" in ex.predict(12)
    ex.predict("fewer")
    result = ex.check("the same")
    assert not result.correct and "not entries" in result.message
    ex.predict("The same")
    assert ex.check("the same").correct


# --- 17: reports in an org chart (parent references) ----------------------------------------------------------
# Manual, "Model Tree Structures with Parent References" and "$graphLookup" (index connectToField).

_prepare, _reports_per_level = (solved("17-org-chart-reports")[f] for f in ("prepare", "all_reports"))


def _reports_graph(coll, manager_id):
    out = list(coll.aggregate([{"$match": {"_id": manager_id}},
                               {"$graphLookup": {"from": "employees", "startWith": "$_id",
                                                 "connectFromField": "_id", "connectToField": "managerId",
                                                 "as": "below"}}]))
    return [d["_id"] for d in out[0]["below"]] if out else []


def test_17_per_level_and_graphlookup_solutions_pass():
    for fn in (_reports_per_level, _reports_graph):
        result = _check("17-org-chart-reports", _prepare, fn)
        assert result.correct, result.message


def test_17_one_query_per_node():
    # listed mistake: walking a parent-reference tree one query per node instead of one $in query per level
    def per_node(coll, manager_id):
        out, todo = [], [manager_id]
        while todo:
            kids = [d["_id"] for d in coll.find({"managerId": todo.pop()})]
            out += kids
            todo += kids
        return out
    result = _check("17-org-chart-reports", _prepare, per_node)
    assert not result.correct and "one query per person" in result.message


def test_17_missing_index_on_the_lookup_field():
    # listed mistake: forgetting the index on connectToField that $graphLookup relies on at every level
    result = _check("17-org-chart-reports", lambda coll: None, _reports_graph)
    assert not result.correct and "no index starts with it" in result.message


def test_17_direct_reports_only_and_self_included():
    direct = _check("17-org-chart-reports", _prepare,
                    lambda coll, m: [d["_id"] for d in coll.find({"managerId": m})])
    assert not direct.correct and "direct reports only" in direct.message
    with_self = _check("17-org-chart-reports", _prepare, lambda coll, m: [m] + _reports_per_level(coll, m))
    assert not with_self.correct and "itself" in with_self.message
    assert "two functions" in _check("17-org-chart-reports", _reports_per_level).message
    assert "return the ids" in _check("17-org-chart-reports", _prepare, lambda coll, m: None).message


def test_17_prediction():
    ex = exercises.get("17-predict-unanchored-keys")
    ex.predict(24)  # the number of results, as if the regex were a range
    result = ex.check(517)
    assert not result.correct and "every string key of the path" in result.message
    ex.predict(517)
    assert ex.check(517).correct
    ex.predict(518)  # every node, the root's null path included: one off, and exact counts are exact
    assert not ex.check(517).correct
