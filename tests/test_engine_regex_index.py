"""Regular expressions on an indexed field, alone and inside a rooted ``$or``: index bounds, the filter on the
IXSCAN, keys and documents examined, in process and over the wire (tests/both_paths.py).

Facts:

* src/mongo/db/query/index_bounds_builder.cpp ``simpleRegex``: ``auto [prefixStr, isExact] =
  analyze_regex::getRegexPrefixMatch(regex, flags); *tightnessOut = isExact ? EXACT : INEXACT_COVERED`` (and
  INEXACT_FETCH on an index with a collation); ``translateRegex`` gives two intervals, the prefix range (or
  ``["", {})``) and the regex itself.
* src/mongo/db/query/util/analyze_regex.cpp ``getRegexPrefixMatch``: only ``^`` or ``\\A`` starts a prefix; an
  unescaped ``|`` or a flag other than ``m`` (with ``\\A``), ``s``, ``x`` (so ``i``) gives none; ``*`` / ``?`` drop
  the last character ("/^bar?/ does not match all strings that start with 'bar'"); an escaped non-alphanumeric
  character is itself; ``/^abc.*/`` is exact; the regex is exact only when it is entirely its prefix.
* INEXACT_COVERED: the predicate is checked on the index key (a ``filter`` on the IXSCAN), so only keys that
  pass are fetched; EXACT: no filter at all.
* jstests/core/query/regex/regex6.js (requires_fcv_80): over 5 names, ``/^\\//`` and ``/^\\./`` examine 1 key,
  ``/^é/`` 0, ``/^./`` 5, ``/^bob/`` 2 ("totalKeysExamined == count+1").
* src/mongo/db/query/plan_enumerator / subplanner (``jstests/core/query/or/or*.js``): a rooted ``$or`` plans each
  branch alone; each branch's IXSCAN keeps its own filter, under one FETCH.
"""
from __future__ import annotations

import re

import pytest
from bson import Regex

from both_paths import client, server  # noqa: F401 - fixtures


@pytest.fixture()
def people(client):  # noqa: F811
    db = client["rx"]
    db.drop_collection("p")
    c = db.p
    docs = []
    for i in range(300):
        if i % 3 == 0:  # the new shape: lastName
            docs.append({"_id": i, "v": 2, "lastName": "Smith" if i % 10 == 0 else "Jones%03d" % i})
        else:           # the old shape: one name string
            docs.append({"_id": i, "v": 1, "name": "Ann " + ("Smith" if i % 10 == 1 else "Brown%03d" % i)})
    c.insert_many(docs)
    c.create_index("name")
    c.create_index("lastName")
    c.create_index([("v", 1), ("name", 1)])
    return c


def _stats(coll, query, hint=None):
    cur = coll.find(query)
    if hint:
        cur = cur.hint(hint)
    e = cur.explain()
    s = e["executionStats"]
    return e["queryPlanner"]["winningPlan"], (s["totalKeysExamined"], s["totalDocsExamined"], s["nReturned"])


def _ixscans(plan):
    out = []
    stack = [plan]
    while stack:
        node = stack.pop()
        if node.get("stage") == "IXSCAN":
            out.append(node)
        stack += [node["inputStage"]] if "inputStage" in node else []
        stack += node.get("inputStages", [])
    return out


def test_non_prefix_regex_is_checked_on_the_keys(people):
    # 200 string keys tested, only the 20 matching documents fetched
    plan, figures = _stats(people, {"name": {"$regex": "Smith"}}, hint="name_1")
    assert figures == (200, 20, 20)
    scan = _ixscans(plan)[0]
    assert scan["filter"] == {"name": {"$regex": "Smith"}}
    assert scan["indexBounds"]["name"] == ['["", {})', "[/Smith/, /Smith/]"]
    assert "filter" not in plan  # nothing left for the FETCH to check


def test_case_insensitive_regex_scans_every_string(people):
    plan, figures = _stats(people, {"name": {"$regex": "^ann smith", "$options": "i"}}, hint="name_1")
    assert figures == (200, 20, 20)
    assert _ixscans(plan)[0]["indexBounds"]["name"] == ['["", {})', "[/^ann smith/i, /^ann smith/i]"]


def test_plain_prefix_is_exact(people):
    plan, figures = _stats(people, {"name": {"$regex": "^Ann S"}}, hint="name_1")
    assert figures == (20, 20, 20)
    scan = _ixscans(plan)[0]
    assert "filter" not in scan and "filter" not in plan
    assert scan["indexBounds"]["name"] == ['["Ann S", "Ann T")', "[/^Ann S/, /^Ann S/]"]
    # a prefix with more pattern after it: the prefix bounds, then the rest checked on the keys
    plan, figures = _stats(people, {"name": {"$regex": "^Ann Smith$"}}, hint="name_1")
    assert figures == (20, 20, 20) and _ixscans(plan)[0]["filter"] == {"name": {"$regex": "^Ann Smith$"}}


def test_escaped_prefixes_count_keys_as_the_server(client):  # noqa: F811
    c = client["rx"]["names"]
    c.drop()
    c.insert_many([{"name": n} for n in ["eve", "emma", "bo", "abe", "[odd]name?"]])
    c.create_index("name")

    def keys(rx):
        return c.find({"name": rx}).explain()["executionStats"]["totalKeysExamined"]
    assert keys(re.compile(r"^\/")) == 1   # the escaped "/" is the prefix: one key past the range
    assert keys(re.compile(r"^\.")) == 1
    assert keys(re.compile("^é")) == 0     # every key sorts before "é": the scan starts at the end
    assert keys(re.compile("^.")) == 5     # no prefix: every string key, each tested
    assert keys(re.compile("^bo")) == 2    # the match and the first key past the range
    assert keys(Regex("^a|^e")) == 5       # an unescaped "|": no prefix


def test_regex_branch_of_an_or_fetches_only_matching_keys(people):
    query = {"$or": [{"name": {"$regex": "Smith"}}, {"lastName": "Smith"}]}
    plan, figures = _stats(people, query)
    assert plan["stage"] == "SUBPLAN"
    assert figures == (210, 30, 30)  # 200 + 10 keys; only the 30 Smiths fetched
    filters = {s["indexName"]: s.get("filter") for s in _ixscans(plan)}
    assert filters == {"name_1": {"name": {"$regex": "Smith"}}, "lastName_1": None}
    assert len(list(people.find(query))) == 30


def test_dual_version_query(people):
    # one branch per schema version, the old one a regex that is not a plain prefix (a compound index serves it)
    query = {"$or": [{"v": 2, "lastName": "Smith"}, {"v": 1, "name": {"$regex": "^[^ ]+ Smith$"}}]}
    plan, (keys, docs, returned) = _stats(people, query)
    assert returned == 30 and docs == 30
    scans = {s["indexName"]: s for s in _ixscans(plan)}
    assert scans["v_1_name_1"]["filter"] == {"name": {"$regex": "^[^ ]+ Smith$"}}
    assert keys >= 210
