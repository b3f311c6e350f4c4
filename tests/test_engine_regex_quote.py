"""PCRE literal quoting ``\\Q...\\E`` in ``$regex`` and ``$regexMatch``, in process and over the wire.

Facts (read for this test; the test is written from them):

* The server runs ``$regex`` with PCRE2 since 6.1 (manual "$regex", PCRE versions); in PCRE every character
  between ``\\Q`` and ``\\E`` is a literal (to the end of the pattern without ``\\E``); a ``\\E`` without ``\\Q``
  is ignored.
* src/mongo/db/query/util/analyze_regex.cpp ``getRegexPrefixMatch``: for ``^\\Q...\\E`` the quoted text is part of
  the plain prefix, so the index bounds are that prefix (and exact when nothing follows).
"""
from __future__ import annotations

import pytest

from both_paths import client, server  # noqa: F401 - fixtures


@pytest.fixture()
def coll(client):  # noqa: F811
    db = client["rxquote"]
    db.drop_collection("c")
    c = db.c
    c.insert_many([{"_id": 1, "s": "a.b*c"}, {"_id": 2, "s": "axbbc"}, {"_id": 3, "s": "a.b*cd"},
                   {"_id": 4, "s": "(x)+y"}, {"_id": 5, "s": "xy"}, {"_id": 6, "s": "a.b*"}])
    return c


def _ids(cur):
    return sorted(d["_id"] for d in cur)


def test_quoted_metacharacters_match_literally(coll):
    assert _ids(coll.find({"s": {"$regex": r"^\Qa.b*c\E$"}})) == [1]
    assert _ids(coll.find({"s": {"$regex": r"^\Qa.b*\E"}})) == [1, 3, 6]
    assert _ids(coll.find({"s": {"$regex": r"\Q(x)+\Ey"}})) == [4]
    assert _ids(coll.find({"s": {"$regex": r"^\Qa.b*c"}})) == [1, 3]  # no \E: quoted to the end
    assert _ids(coll.find({"s": {"$regex": r"^xy\E$"}})) == [5]  # a lone \E is ignored
    assert _ids(coll.find({"s": {"$regex": r"^\QA.B\E", "$options": "i"}})) == [1, 3, 6]


def test_regex_match_expression_quotes_too(coll):
    got = coll.aggregate([{"$project": {"m": {"$regexMatch": {"input": "$s", "regex": r"^\Qa.b*\E"}}}},
                          {"$match": {"m": True}}])
    assert _ids(got) == [1, 3, 6]


def test_index_bounds_from_the_quoted_prefix(coll):
    coll.create_index("s")
    assert _ids(coll.find({"s": {"$regex": r"^\Qa.b*\E"}})) == [1, 3, 6]
    e = coll.find({"s": {"$regex": r"^\Qa.b*\E"}}).explain()
    scan = e["queryPlanner"]["winningPlan"]
    while scan["stage"] != "IXSCAN":
        scan = scan["inputStage"]
    assert scan["indexBounds"]["s"][0] == '["a.b*", "a.b+")'
    st = e["executionStats"]
    assert (st["nReturned"], st["totalKeysExamined"]) == (3, 4)  # 3 keys in range + the end probe
