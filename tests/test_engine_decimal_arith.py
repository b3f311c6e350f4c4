"""Arithmetic mixing Decimal128 and doubles, as the server rounds it, in process and over the wire.

Facts (MongoDB's source, read for this test; the test is written from them):

* src/mongo/util/safe_num.cpp ``SafeNum::getDecimal``: for ``$inc`` / ``$mul`` a double operand becomes
  ``Decimal128(doubleVal, Decimal128::kRoundTo15Digits)`` before the Decimal128 add / multiply;
  src/mongo/platform/decimal128.cpp: that conversion quantizes the double to exactly 15 significant digits
  (0.1 * 3 = 0.30000000000000004 becomes 0.300000000000000), and the add / multiply rounds to 34 digits.
* src/mongo/db/pipeline/expression.cpp ``ExpressionAdd`` and accumulator_sum.cpp / accumulator_avg.cpp: ``$add``,
  ``$sum`` and ``$avg`` keep the ints and doubles apart in a ``DoubleDoubleSummation`` and return
  ``decimalTotal.add(nonDecimalTotal.getDecimal())``; src/mongo/util/summation.h ``getDecimal()`` converts with
  ``Decimal128::kRoundTo34Digits``, so these do *not* share the 15-digit rule: the double keeps 34 digits.
* ``$subtract`` / ``$multiply`` coerce a double with ``Value::coerceToDecimal`` (15 digits).
"""
from __future__ import annotations

import pytest
from bson import Decimal128

from both_paths import client, server  # noqa: F401 - fixtures

POINT3 = 0.1 * 3  # 0.30000000000000004 as a double


@pytest.fixture()
def coll(client):  # noqa: F811
    db = client["decarith"]
    db.drop_collection("o")
    return db.o


def test_inc_of_a_double_into_a_decimal_rounds_the_double_to_15_digits(coll):
    coll.insert_one({"_id": 1, "total": Decimal128("17.00")})
    coll.update_one({"_id": 1}, {"$inc": {"total": POINT3}})
    assert str(coll.find_one()["total"]) == "17.300000000000000"


def test_inc_of_a_decimal_into_a_double_field(coll):
    coll.insert_one({"_id": 1, "total": POINT3})
    coll.update_one({"_id": 1}, {"$inc": {"total": Decimal128("1")}})
    assert str(coll.find_one()["total"]) == "1.300000000000000"


def test_mul_of_a_decimal_by_a_double(coll):
    coll.insert_one({"_id": 1, "total": Decimal128("17.00")})
    coll.update_one({"_id": 1}, {"$mul": {"total": POINT3}})
    assert str(coll.find_one()["total"]) == "5.10000000000000000"


def test_inc_keeps_34_digits(coll):
    coll.insert_one({"_id": 1, "total": Decimal128("1234567890.123456789012345678901234")})
    coll.update_one({"_id": 1}, {"$inc": {"total": Decimal128("0.000000000000000000000000000000001")}})
    # the exact sum has 35 significant digits: rounded to 34 (ties to even)
    assert str(coll.find_one()["total"]) == "1234567890.123456789012345678901234"


def test_add_and_sum_keep_the_double_to_34_digits(coll):
    coll.insert_many([{"_id": 1, "total": Decimal128("17.00"), "d": POINT3}, {"_id": 2, "total": POINT3, "d": 1}])
    row = coll.aggregate([{"$match": {"_id": 1}}, {"$project": {
        "add": {"$add": ["$total", "$d"]}, "sum": {"$sum": ["$total", "$d"]},
        "sub": {"$subtract": ["$total", "$d"]}}}]).next()
    assert str(row["add"]) == "17.30000000000000004440892098500626"
    assert str(row["sum"]) == "17.30000000000000004440892098500626"
    assert str(row["sub"]) == "16.700000000000000"  # coerceToDecimal: 15 digits
    g = coll.aggregate([{"$group": {"_id": None, "s": {"$sum": "$total"}, "a": {"$avg": "$total"}}}]).next()
    assert str(g["s"]) == "17.30000000000000004440892098500626"
    assert str(g["a"]) == "8.65000000000000002220446049250313"
    # the general accumulator path ($median forces it) agrees with the fast one
    g2 = coll.aggregate([{"$group": {"_id": None, "s": {"$sum": "$total"}, "a": {"$avg": "$total"},
                                     "m": {"$median": {"input": "$d", "method": "approximate"}}}}]).next()
    assert (g2["s"], g2["a"]) == (g["s"], g["a"])
