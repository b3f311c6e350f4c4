"""labkit.review split into measure (read the database once) and judge (apply thresholds): judging a
measurement gives exactly the review's findings for every threshold setting, and re-judging re-runs only the
checks whose thresholds changed (lesson 39's explorer moves thresholds over one reading).

Facts used: the same as tests/test_review.py (MongoDB manual anti-pattern pages, Database Profiler Output);
the thresholds are labkit's own judgement calls (labkit.review.THRESHOLDS).
"""
from __future__ import annotations

import pytest
from test_review import _log, _shop

import labkit
from labkit.review import ReviewInputError, judge, measure, review

SETTINGS = [None, {"array_docs_min": 26}, {"lookup_share": 0.5}, {"array_docs_min": 26, "lookup_share": 0.5},
            {"bloat_ratio": 1000}, {"array_docs_min": 5, "bloat_ratio": 2, "lookup_share": 0.01}, None]


@pytest.fixture(scope="module")
def shop():
    db = labkit.fresh_db("t_review_judge_shop")
    _shop(db)
    return db


def _same(a, b):
    return [f.to_dict() for f in a.findings] == [f.to_dict() for f in b.findings] and a.skipped == b.skipped \
        and a.notes == b.notes and a.sampled == b.sampled and a.query_data == b.query_data


def test_judging_one_measurement_equals_reviewing_for_every_threshold_setting(shop):
    log = _log(shop.name)
    m = measure(shop, sample=1000, query_log=log)  # every document: no $sample randomness between readings
    for th in SETTINGS:
        assert _same(judge(m, th), review(shop, sample=1000, query_log=log, thresholds=th)), th
    # the settings give different findings, so a judge that ignored its thresholds would fail above
    kinds = {frozenset(judge(m, th).kinds()) for th in SETTINGS}
    assert len(kinds) >= 3


def test_rejudging_reruns_only_the_checks_whose_thresholds_changed(shop, monkeypatch):
    import sys

    rv = sys.modules["labkit.review"]  # the module (labkit.review is the function)

    m = measure(shop, sample=1000, query_log=_log(shop.name))
    calls = []
    for name in ("_check_arrays", "_check_bloat", "_check_together", "_check_lookups"):
        real = getattr(rv, name)
        monkeypatch.setattr(rv, name, lambda *a, _real=real, _name=name, **k: calls.append(_name) or _real(*a, **k))
    judge(m, {"array_docs_min": 20})
    assert sorted(calls) == ["_check_arrays", "_check_bloat", "_check_lookups", "_check_together"]
    calls.clear()
    judge(m, {"array_docs_min": 26})  # only the array check reads array_docs_min
    assert calls == ["_check_arrays"]
    calls.clear()
    judge(m, {"array_docs_min": 20, "together_seconds": 2.0})  # both seen before: nothing re-runs
    assert calls == []
    judge(m, {"lookup_share": 0.5})
    assert sorted(calls) == ["_check_lookups"]  # regex also reads lookup_share but is not counted here


def test_bad_thresholds_are_refused_by_judge_and_review_before_reading(shop):
    m = measure(shop, sample=50)
    with pytest.raises(ReviewInputError, match="unknown threshold"):
        judge(m, {"nope": 1})
    with pytest.raises(ReviewInputError, match="must be a number"):
        judge(m, {"lookup_share": "x"})
    with pytest.raises(ReviewInputError, match="sample"):
        measure(shop, sample=0)
