"""mongosh's ``cursor.returnKey(true)`` and ``cursor.showRecordId()`` against the served engine (mongosh's
returnKey passes its argument on to the driver: without one, nothing is sent).

Facts from MongoDB: the cursor.returnKey() manual page and jstests/core/query/return_key.js (the index keys of the
hinted index, in its order); the cursor.showRecordId() manual page (``'$recordId': Long("1")`` ... appended to the
pizzas' fields, 1, 2, 3 in insertion order). Skipped with an install hint when mongosh is missing (fails under
CI=true), as tests/test_mongosh.py.
"""
from __future__ import annotations

from bson import Int64

from served_helpers import serve_in_thread
from test_mongosh import mongosh, run_mongosh  # noqa: F401 - mongosh: the fixture (skipped with a hint if missing)


def test_return_key_and_show_record_id_in_mongosh(mongosh, tmp_path):
    with serve_in_thread() as srv:
        results = run_mongosh(mongosh, srv.uri + "/rk_shell", [
            'db.pizzas.insertMany([{ type: "pepperoni", size: "small", price: 4 }, '
            '{ type: "cheese", size: "medium", price: 7 }, { type: "vegan", size: "large", price: 8 }])',
            "db.pizzas.createIndex({ price: -1 })",
            "db.pizzas.find({}, { _id: 0 }).showRecordId()",
            "db.pizzas.find().hint({ price: -1 }).returnKey(true)",
            "db.pizzas.find({ price: { $gt: 5 } }).sort({ price: 1 }).returnKey(true)",
            'db.pizzas.find().returnKey(true).explain().queryPlanner.winningPlan.stage',
            "db.pizzas.find().returnKey(true)",
        ], tmp_path)
    assert all(r["ok"] for r in results), results
    shown = results[2]["value"]
    assert shown == [{"type": "pepperoni", "size": "small", "price": 4, "$recordId": Int64(1)},
                     {"type": "cheese", "size": "medium", "price": 7, "$recordId": Int64(2)},
                     {"type": "vegan", "size": "large", "price": 8, "$recordId": Int64(3)}]
    assert all(type(d["$recordId"]) is Int64 for d in shown)
    assert results[3]["value"] == [{"price": 8}, {"price": 7}, {"price": 4}]
    assert results[4]["value"] == [{"price": 7}, {"price": 8}]
    assert results[5]["value"] == "RETURN_KEY"
    assert results[6]["value"] == [{}, {}, {}]  # a collection scan has no index key
