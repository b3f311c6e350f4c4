"""The workload cost ledger (issue 15 item 4): costs measured per operation, totals at the workload's rates."""
from __future__ import annotations

import pytest

import labkit
from labkit.engine import EmbeddedClient


@pytest.fixture
def shop():
    db = labkit.fresh_db("ledger_shop", client=EmbeddedClient())
    db.products.insert_many([{"_id": f"p{i}", "name": f"P{i}", "stats": {"count": 0, "sum": 0}} for i in range(20)])
    db.reviews.insert_many([{"_id": f"r{i}", "productId": f"p{i % 20}", "rating": 1 + i % 5} for i in range(2000)])
    db.reviews.create_index({"productId": 1})
    return db


def _read_computed(db):
    db.products.find_one({"_id": "p3"})


def _read_on_the_fly(db):
    list(db.reviews.aggregate([{"$match": {"productId": "p3"}},
                               {"$group": {"_id": "$productId", "n": {"$sum": 1}, "s": {"$sum": "$rating"}}}]))


def _write_computed(db):
    db.reviews.insert_one({"productId": "p3", "rating": 4})
    db.products.update_one({"_id": "p3"}, {"$inc": {"stats.count": 1, "stats.sum": 4}})


def _write_plain(db):
    db.reviews.insert_one({"productId": "p3", "rating": 4})


def test_costs_are_measured_from_what_the_operation_did(shop):
    ledger = labkit.Ledger({"show product": 1000, "write review": 1})
    point = ledger.measure("computed", "show product", shop, _read_computed)
    # an _id point read: one round trip, one key, one document (manual: "Explain Results", EXPRESS/IDHACK)
    assert (point.round_trips, point.keys_examined, point.docs_examined) == (1, 1, 1)
    scan = ledger.measure("on the fly", "show product", shop, _read_on_the_fly)
    assert scan.round_trips == 1 and scan.docs_examined == 100 and scan.keys_examined == 100
    write = ledger.measure("computed", "write review", shop, _write_computed)
    # the insert examines nothing; the $inc finds its product by _id: one key, one document
    assert (write.round_trips, write.docs_written, write.keys_examined, write.docs_examined) == (2, 2, 1, 1)
    plain = ledger.measure("on the fly", "write review", shop, _write_plain)
    assert (plain.round_trips, plain.docs_written) == (1, 1)


def test_totals_multiply_by_the_rates_and_the_better_design_flips(shop):
    ledger = labkit.Ledger({"show product": 1000, "write review": 1})
    ledger.measure("computed", "show product", shop, _read_computed)
    ledger.measure("on the fly", "show product", shop, _read_on_the_fly)  # before the writes add reviews
    ledger.measure("computed", "write review", shop, _write_computed)
    ledger.measure("on the fly", "write review", shop, _write_plain)
    totals = ledger.totals()
    assert totals.loc["computed", "docs examined /s"] == 1000 * 1 + 1 * 1  # reads + the $inc finding its product
    assert totals.loc["on the fly", "docs examined /s"] == 1000 * 100
    assert totals.loc["computed", "docs written /s"] == 2 and totals.loc["on the fly", "docs written /s"] == 1
    assert ledger.best("docs examined") == "computed"
    # a write-heavy workload: fewer documents written wins when nobody reads
    assert ledger.best("docs written", {"show product": 0, "write review": 500}) == "on the fly"
    handle = ledger.widget("round trips")
    handle.set(**{"show product /s": 0, "write review /s": 100})
    assert handle.result["better design"] == "on the fly"
    handle.set(**{"show product /s": 5000})
    assert handle.result["computed: round trips /s"] == 5000 + 200


def test_bad_arguments_say_what_to_do(shop):
    with pytest.raises(ValueError, match="runs per second"):
        labkit.Ledger({})
    with pytest.raises(ValueError, match="numbers >= 0"):
        labkit.Ledger({"a": -1})
    ledger = labkit.Ledger({"a": 1})
    with pytest.raises(ValueError, match="not in the workload"):
        ledger.measure("x", "b", shop, _read_computed)
    with pytest.raises(ValueError, match="no design"):
        ledger.best()


def test_difference_and_break_even_from_measured_costs():
    # two designs, two operations: the crossing rate solves rest_worse + r * c_worse = rest_better + r * c_better
    ledger = labkit.Ledger({"read": 100, "write": 2})
    ledger.costs[("copy", "read")] = labkit.ledger.OpCost(1, 1, 1, 0, 0)
    ledger.costs[("join", "read")] = labkit.ledger.OpCost(1, 5, 5, 0, 0)
    ledger.costs[("copy", "write")] = labkit.ledger.OpCost(1, 40, 40, 0, 40)
    ledger.costs[("join", "write")] = labkit.ledger.OpCost(1, 1, 1, 0, 1)
    assert ledger.difference("docs examined", "read", "copy", "join") == 4
    assert ledger.difference("docs examined", "write", "copy", "join") == -39
    # writes: 100 reads x 4 saved = 400 per second, 39 extra per write -> 400 / 39 writes per second
    assert ledger.break_even("write", "copy", "join") == pytest.approx(400 / 39)
    # reads: 2 writes x 39 extra = 78 per second, 4 saved per read -> 19.5 reads per second
    assert ledger.break_even("read", "copy", "join") == pytest.approx(19.5)
    at = ledger.totals({"write": 400 / 39})["docs examined /s"]
    assert at["copy"] == pytest.approx(at["join"])
    assert ledger.break_even("read", "copy", "join", metric="round trips") is None  # equal per run: no crossing
    with pytest.raises(ValueError, match="not in the workload"):
        ledger.break_even("delete", "copy", "join")
    with pytest.raises(ValueError, match="no cost measured"):
        ledger.difference("docs examined", "read", "copy", "embed")
    with pytest.raises(ValueError, match="choose one of"):
        ledger.difference("ms", "read", "copy", "join")


def test_widget_keeps_rates_below_one_per_second():
    """A 0.1/s rate must not start at 0 (issue 25: a ledger widget showed 0.1/s as 0 and a total that left
    it out): rates below one per second slide per hour or per day and the totals include them."""
    ledger = labkit.Ledger({"show product": 900, "rename": 0.1, "price change": 3 / 3600, "report": 5 / 86_400})
    for design in ("a", "b"):
        for op in ledger.rates:
            ledger.costs[(design, op)] = labkit.ledger.OpCost(1, 10 if design == "a" else 1, 0, 0, 0)
    handle = ledger.widget("docs examined")
    assert handle.sliders["rename /h"].value == 360
    assert handle.sliders["price change /h"].value == 3
    assert handle.sliders["report /day"].value == 5
    assert handle.sliders["show product /s"].value == 900
    expected = float(ledger.totals().loc["a", "docs examined /s"])
    assert handle.result["a: docs examined /s"] == expected == round(10 * (900 + 0.1 + 3 / 3600 + 5 / 86_400), 1)
    assert handle.result["rename: per second"] == "0.1"
    assert handle.result["price change: per second"] == "0.0008333"
    assert handle.result["report: per second"] == "0.00005787"
    handle.set(**{"rename /h": 0})
    assert handle.result["a: docs examined /s"] == round(10 * (900 + 3 / 3600 + 5 / 86_400), 1)
