"""Tests for labkit.limits: the server's document size and nesting limits."""
from __future__ import annotations

import sys

import bson
import pytest
from bson import SON
from pymongo.errors import DocumentTooLarge, OperationFailure, WriteError

from labkit import limits


def _nested(levels: int) -> dict:
    """A document with ``levels`` levels: {"a": {"a": ... {"x": 1}}}."""
    doc: dict = {"x": 1}
    for _ in range(levels - 1):
        doc = {"a": doc}
    return doc


def test_constants_match_documented_limits():
    """Manual, "MongoDB Limits and Thresholds": BSON Document Size is 16 mebibytes, and
    "MongoDB supports no more than 100 levels of nesting"; hello's maxBsonObjectSize is
    16777216."""
    assert limits.MAX_BSON_SIZE == 16777216
    assert limits.MAX_NESTING_DEPTH == 100
    assert limits.SERVER_MAX_USER_STORAGE_DEPTH == 180


def test_bson_size_is_encoded_length():
    """Manual, "$bsonSize" example: the size of a document is the length of its BSON
    encoding (an empty document is 5 bytes)."""
    assert limits.bson_size({}) == 5
    doc = SON([("_id", 1), ("name", "Alice")])
    assert limits.bson_size(doc) == len(bson.encode(doc))


def test_insert_at_the_limit_is_accepted_and_over_it_rejected():
    """Manual, "BSON Document Size": documents up to 16 MiB may be stored; a bigger
    insert fails with pymongo's DocumentTooLarge wording."""
    overhead = limits.bson_size({"s": ""})
    exact = {"s": "x" * (limits.MAX_BSON_SIZE - overhead)}
    assert limits.check_insert_size(exact) == limits.MAX_BSON_SIZE
    too_big = {"s": "x" * (limits.MAX_BSON_SIZE - overhead + 1)}
    with pytest.raises(DocumentTooLarge) as info:
        limits.check_insert_size(too_big)
    assert str(info.value) == (
        "BSON document too large (16777217 bytes) - the connected server supports"
        " BSON document sizes up to 16777216 bytes."
    )
    with pytest.raises(WriteError) as info:  # what the server itself answers
        limits.check_insert_size(too_big, as_server=True)
    assert info.value.code == 2
    assert info.value.details["errmsg"] == (
        "object to insert too large. size in bytes: 16777217, max size: 16777216")


def test_update_growing_past_limit_is_write_error_17419():
    """Manual, "BSON Document Size" (an update may not grow a document past 16 MiB):
    the server answers code 17419 "Resulting document after update is larger than
    16777216"."""
    doc = {"s": "x" * limits.MAX_BSON_SIZE}
    with pytest.raises(WriteError) as info:
        limits.check_update_size(doc)
    assert info.value.code == 17419
    assert str(info.value).startswith("Resulting document after update is larger than 16777216")
    assert info.value.details["errmsg"] == "Resulting document after update is larger than 16777216"
    assert limits.check_update_size({"small": 1}) < 100


def test_depth_counts_objects_and_arrays():
    """Manual, "Nested Depth for BSON Documents": each object or array adds a level; the
    server's validateDepth (ops/insert.cpp) does not count empty ones."""
    assert limits.nesting_depth({}) == 1
    assert limits.nesting_depth({"a": {"b": 1}}) == 2
    assert limits.nesting_depth({"a": [[1]]}) == 3
    assert limits.nesting_depth({"a": 1, "b": [1, {"c": [0]}], "d": {}}) == 4
    assert limits.nesting_depth({"a": {}, "b": []}) == 1


def test_depth_180_accepted_181_rejected_with_overflow():
    """The manual documents 100 levels ("Nested Depth for BSON Documents"); an 8.0 server enforces
    BSONDepth::getMaxDepthForUserStorage() = 180 on stored documents (src/mongo/bson/bson_depth.h;
    src/mongo/db/ops/insert_test.cpp accepts exactly that many levels and refuses one more). The insert error is
    code 15 (Overflow) "cannot insert document because it exceeds 180 levels of nesting"; an update's result
    that is too deep fails in storageValid (src/mongo/db/update/storage_validation.cpp) with "Document exceeds
    maximum nesting depth of 180"."""
    limits.check_depth({"a": _nested(100)})          # 101 levels: past the documented 100, stored by a server
    limits.check_depth({"a": _nested(179)})          # 180 levels
    with pytest.raises(WriteError) as info:
        limits.check_depth({"a": {"b": _nested(179)}})   # 181
    assert info.value.code == 15
    assert info.value.details["errmsg"] == (
        "cannot insert document because it exceeds 180 levels of nesting")
    assert isinstance(info.value, OperationFailure)
    with pytest.raises(WriteError) as info:
        limits.check_depth({"a": {"b": _nested(179)}}, update=True)
    assert info.value.details["errmsg"] == "Document exceeds maximum nesting depth of 180"
    # the documented limit stays available to lessons and the schema review
    with pytest.raises(WriteError) as info:
        limits.check_depth({"a": {"b": _nested(99)}}, max_depth=limits.MAX_NESTING_DEPTH)
    assert "exceeds 100 levels" in info.value.details["errmsg"]


def test_depth_check_is_iterative_at_10000_levels():
    """Manual, "Nested Depth for BSON Documents": a pathological 10,000-level document is
    rejected cleanly (no RecursionError). Run with a recursion limit only 150 frames above the caller's depth,
    so any recursion per level fails the test (no timing involved)."""
    deep = _nested(10_000)
    depth, frame = 0, sys._getframe()
    while frame is not None:
        depth, frame = depth + 1, frame.f_back
    old_limit = sys.getrecursionlimit()
    sys.setrecursionlimit(depth + 150)
    try:
        assert limits.nesting_depth(deep) == 10_000
        with pytest.raises(WriteError):
            limits.check_depth(deep)
        with pytest.raises(WriteError) as info:
            limits.bson_size(deep)  # bson.encode itself recurses and would fail
    finally:
        sys.setrecursionlimit(old_limit)
    assert info.value.code == 15


def test_server_depth_can_be_modelled():
    """Server source, BSONDepth::getMaxDepthForUserStorage(): 180 levels are storable by a
    real mongod with default maxBSONDepth (200 - 20)."""
    limits.check_depth(_nested(180), max_depth=limits.SERVER_MAX_USER_STORAGE_DEPTH)
    with pytest.raises(WriteError):
        limits.check_depth(_nested(181), max_depth=limits.SERVER_MAX_USER_STORAGE_DEPTH)
