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
    for design, op, figures in [("copy", "read", (1, 1, 1, 0, 0)), ("join", "read", (1, 5, 5, 0, 0)),
                                ("copy", "write", (1, 40, 40, 0, 40)), ("join", "write", (1, 1, 1, 0, 1))]:
        ledger.estimate(design, op, "a worked example", **dict(zip(
            ("round_trips", "docs_examined", "keys_examined", "bytes_returned", "docs_written"), figures)))
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


# --- measured or estimated: the label comes with the cost (issue 25, part 3) -----------------------------------

def test_a_measured_cost_is_labelled_measured_and_an_estimate_says_how(shop):
    ledger = labkit.Ledger({"show product": 1000, "write review": 1})
    assert ledger.measure("computed", "show product", shop, _read_computed).how == "measured"
    cost = ledger.estimate("computed", "write review", "one insert + one $inc by _id", round_trips=2, docs_written=2)
    assert cost.how == "estimated: one insert + one $inc by _id" and not cost.measured
    table = ledger.per_operation()
    assert list(table["cost"]) == ["measured", "estimated: one insert + one $inc by _id"]
    assert ledger.totals().columns.name == "estimated: rate x cost per run"          # one cost is an estimate
    ledger.measure("computed", "write review", shop, _write_computed)
    assert ledger.totals().columns.name == "estimated: rate x measured cost per run"
    assert "estimated: rate x measured cost per run" in ledger.totals().to_string()
    assert ledger.widget("round trips").title == ("Workload ledger: round trips per second (estimated: rate x "
                                                  "measured cost per run)")


def test_an_estimate_without_how_or_a_cost_without_label_is_refused():
    for how in ("", "   ", None):
        with pytest.raises(ValueError, match="say how the figures were obtained"):
            labkit.ledger.estimate(how, docs_examined=3)
    with pytest.raises(ValueError, match="numbers >= 0"):
        labkit.ledger.estimate("guess", docs_examined=-1)
    with pytest.raises(TypeError):
        labkit.ledger.OpCost(1, 1, 1, 0, 0)                     # no label: neither measured nor estimated
    for how in ("measured by hand", "estimated", "estimated: "):
        with pytest.raises(ValueError, match="measure\\(\\) ran it"):
            labkit.ledger.OpCost(1, 1, 1, 0, 0, how)
    assert labkit.ledger.estimate("estimated: docs x size", docs_examined=1).how == "estimated: docs x size"


def test_compare_labels_each_column(shop):
    measured = labkit.ledger.measure(shop, _read_computed)
    guessed = labkit.ledger.estimate("docs examined x avgObjSize", bytes_returned=4100)
    table = labkit.ledger.compare({"before": measured, "after": guessed}, ("docs examined", "bytes returned"))
    assert list(table.index) == ["docs examined", "bytes returned", "cost"]
    assert table.loc["cost"].tolist() == ["measured", "estimated: docs examined x avgObjSize"]
    assert table.loc["docs examined", "before"] == 1 and table.loc["bytes returned", "after"] == 4100
    with pytest.raises(ValueError, match="not costs"):
        labkit.ledger.compare({"x": 3})
    with pytest.raises(ValueError, match="not metrics"):
        labkit.ledger.compare({"x": measured}, ("ms",))


@pytest.mark.parametrize("rate, name, value", [(0.1, "rename /min", 6), (0.01, "rename /h", 36),
                                               (5 / 86_400, "rename /day", 5), (2, "rename /s", 2)])
def test_the_widget_starts_at_the_ledgers_rates_exactly(rate, name, value):
    # issue 25: a 0.1/s rename shown as 0 made the widget print 18,000.00 under a table of 18,040
    ledger = labkit.Ledger({"header": 3000, "rename": rate})
    ledger.estimate("copy", "header", "example", docs_examined=6)
    ledger.estimate("copy", "rename", "example", docs_examined=400)
    ledger.estimate("join", "header", "example", docs_examined=7)
    ledger.estimate("join", "rename", "example", docs_examined=1)
    handle = ledger.widget("docs examined", max_rate=4000)
    assert handle.values == {"header /s": 3000, name: value}
    totals = ledger.totals()["docs examined /s"]
    assert handle.result["copy: docs examined /s"] == totals["copy"] == round(3000 * 6 + rate * 400, 1)
    assert handle.result["join: docs examined /s"] == totals["join"]
    assert labkit.ledger.rate_unit(1 / 7) == ("/day", 86_400)   # no unit makes it whole: per day, rounded


def test_widget_keeps_every_rate_below_one_per_second_and_totals_include_them():
    """Several rates below one per second at once (issue 25: a widget showed 0.1/s as 0 and a total that left
    it out): each starts at its exact value in its own unit, the first readout equals totals(), and moving one
    to 0 takes exactly its share out."""
    ledger = labkit.Ledger({"show product": 900, "rename": 0.1, "price change": 3 / 3600, "report": 5 / 86_400})
    for design, docs in (("a", 10), ("b", 1)):
        for op in ledger.rates:
            ledger.estimate(design, op, "example", docs_examined=docs)
    handle = ledger.widget("docs examined")
    assert handle.values == {"show product /s": 900, "rename /min": 6, "price change /h": 3, "report /day": 5}
    expected = float(ledger.totals().loc["a", "docs examined /s"])
    assert handle.result["a: docs examined /s"] == expected == round(10 * (900 + 0.1 + 3 / 3600 + 5 / 86_400), 1)
    handle.set(**{"rename /min": 0})
    assert handle.result["a: docs examined /s"] == round(10 * (900 + 3 / 3600 + 5 / 86_400), 1)
    assert "e-" not in repr(handle.result)          # no scientific notation anywhere in the readout


def test_widget_refuses_a_rate_it_would_show_as_zero():
    """A rate no unit shows as a whole number and that rounds to 0 a day would slide as 0: refused, naming it."""
    ledger = labkit.Ledger({"show product": 900, "archive": 1 / (7 * 86_400)})
    for op in ledger.rates:
        ledger.estimate("a", op, "example", docs_examined=1)
    with pytest.raises(ValueError, match="'archive'.*would slide as 0 /day"):
        ledger.widget()
    assert labkit.ledger.rate_unit(0) == ("/s", 1)


# --- the lessons' shared helpers: the workload table, a query's cost, the before-and-after chart ------------

def test_workload_table_has_the_method_columns_indexed_by_operation():
    t = labkit.workload_table([("show page", "read", "2,000/s", "title"), ("add", "write", 2, "")],
                              rate="rate (assumed)")
    assert list(t.columns) == ["type", "rate (assumed)", "needs"] and t.index.name == "operation"
    assert t.loc["show page", "rate (assumed)"] == "2,000/s" and t.loc["add", "type"] == "write"
    assert list(labkit.workload_table([("a", "read", 1, "x")]).columns) == ["type", "rate", "needs"]


def test_workload_table_names_a_row_of_the_wrong_length():
    with pytest.raises(ValueError, match=r"\(operation, type, rate, needs\); \('a', 'read', 1\) has 3 values"):
        labkit.workload_table([("a", "read", 1)])


def test_query_cost_reads_the_plan_and_its_counters(shop):
    from labkit.explain import query_cost

    cost = query_cost(shop.reviews.find({"productId": "p3"}))
    assert cost == {"stages": "FETCH <- IXSCAN", "keys examined": 100, "docs examined": 100, "returned": 100}
    assert query_cost(shop.products.find({"name": "P3"}))["stages"] == "COLLSCAN"


def test_before_after_draws_one_row_of_a_comparison(monkeypatch):
    import matplotlib
    import matplotlib.pyplot as plt
    import pandas as pd

    matplotlib.use("Agg")
    drawn = []
    monkeypatch.setattr(plt, "show", lambda: drawn.append(plt.gcf()))
    compare = pd.DataFrame({"naive": {"reads": 3, "writes": 1}, "better": {"reads": 1, "writes": 2}})
    labkit.plots.before_after(compare, "reads", "reads per page")
    ax = drawn[0].axes[0]
    assert [b.get_width() for b in ax.patches] == [3, 1] and ax.get_xlabel() == "reads per page"
    plt.close(drawn[0])
