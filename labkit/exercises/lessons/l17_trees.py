"""Lesson 17 (Trees: parent and child references, ancestors, materialized paths, `$graphLookup`): its exercises and their checkers.

Notebook: ``notebooks/17_trees.ipynb``.
"""
from __future__ import annotations

from typing import Any

from labkit.exercises import observe
from labkit.exercises import steps
from labkit.exercises.kinds import Prediction
from labkit.exercises.outcomes import NotYet
from labkit.exercises.problem import Exercise
from labkit.exercises.registry import register


def _check_materialized_path(coll: Any) -> str:
    import re

    if not hasattr(coll, "find") or not hasattr(coll, "index_information"):
        raise NotYet(f"pass the collection (`practice.categories`), not {type(coll).__name__}.")
    from labkit.exercises.problem import remembered

    docs = {d["_id"]: d for d in coll.find()}
    if not docs:
        raise NotYet("the collection is empty; re-run the setup cell above the exercise.")
    setup = remembered("categories")
    if setup:
        gone = sorted(set(setup) - set(docs), key=str)
        if gone:
            raise NotYet(f"{len(gone)} of the {len(setup)} categories of the setup are gone (e.g. {gone[0]!r}); "
                         "adding a path must not delete nodes. Re-run the setup cell, then add the paths again.")
        extra = sorted(set(docs) - set(setup), key=str)
        if extra:
            raise NotYet(f"{len(extra)} categor(ies) are not in the setup (e.g. {extra[0]!r}); re-run the setup "
                         "cell and only add `path` fields.")
        changed = sorted((n for n in setup if docs[n].get("parent") != setup[n].get("parent")), key=str)
        if changed:
            raise NotYet(f"category {changed[0]!r}: `parent` is not the value the setup had "
                         f"({setup[changed[0]].get('parent')!r}); the paths must follow the setup's tree, so keep "
                         "every parent as it was (re-run the setup cell).")
        docs = {n: {**d, "parent": setup[n].get("parent")} for n, d in docs.items()}
    missing = sorted(n for n, d in docs.items() if "path" not in d)
    if missing:
        raise NotYet(f"{len(missing)} node(s) have no `path` field yet (e.g. {missing[0]!r}); give every node one "
                     "(the root gets null).")
    for name in sorted(docs):
        chain, up = [], docs[name].get("parent")
        while up is not None and up in docs and len(chain) <= len(docs):
            chain.insert(0, up)
            up = docs[up].get("parent")
        want = "," + ",".join(chain) + "," if chain else None
        got = docs[name]["path"]
        if got == want:
            continue
        if not chain:
            raise NotYet(f"the root {name!r} has path {got!r}; a root has no ancestors, so its path is None (null).")
        if isinstance(got, list):
            raise NotYet(f"{name!r} has a list as path; this design stores ONE string (an array would be the "
                         "array-of-ancestors design).")
        if got == "," + ",".join(chain + [name]) + ",":
            raise NotYet(f"{name!r}'s path includes the node itself ({got!r}); the path lists its ancestors only: "
                         f"{want!r}.")
        if got == ",".join(chain) or got == "," + ",".join(chain) or got == ",".join(chain) + ",":
            raise NotYet(f"{name!r} has path {got!r}: put a comma at BOTH ends ({want!r}), so that a prefix such as "
                         "',Books,' cannot match ',Bookshelves,'.")
        raise NotYet(f"{name!r} has path {got!r}, expected {want!r} (its ancestors from the root, in order).")
    keys = steps.index_keys(coll)
    if not any(k and k[0][0] == "path" for k in keys):
        raise NotYet("no index starts with `path`: the descendants query would scan the whole collection.")
    inner = sorted(n for n, d in docs.items() if d.get("parent") is not None
                   and any(c.get("parent") == n for c in docs.values()))
    probe = inner[0]
    prefix = (docs[probe]["path"] or ",") + probe + ","
    explain = coll.find({"path": {"$regex": "^" + re.escape(prefix)}}).explain()
    stats = explain["executionStats"]
    names = [s.get("stage") for s in observe.plan_stages(explain["queryPlanner"]["winningPlan"])]
    if "COLLSCAN" in names:
        raise NotYet("the anchored-regex descendants query still scans the collection; create an index on `path`.")
    if stats["totalKeysExamined"] > stats["nReturned"] + 1:
        raise NotYet(f"the descendants of {probe!r} read {stats['totalKeysExamined']} index keys for "
                     f"{stats['nReturned']} results: the index should start with `path` so the prefix is a range.")
    return (f"every path matches its parent chain, and the descendants of {probe!r} ({stats['nReturned']} nodes) come "
            f"from an index range ({stats['totalKeysExamined']} keys).")


@register
def _ex17() -> Exercise:
    return Exercise(
        id="17-materialized-path",
        lesson="17_trees",
        task="Give every category a materialized path (',A,B,' of its ancestors, null for the root) and index it so "
             "the anchored-regex descendants query is an index range.",
        checker=_check_materialized_path,
        hints=["Load {_id: parent} into a dict, then walk up from each node to the root, collecting ancestors.",
               "`\",\" + \",\".join(chain) + \",\"` (or None when the chain is empty), then `create_index(\"path\")`."],
        solution_text=(
            "parent_of = {d[\"_id\"]: d[\"parent\"] for d in practice.categories.find({}, {\"parent\": 1})}\n"
            "for node in sorted(parent_of):\n"
            "    chain, up = [], parent_of[node]\n"
            "    while up is not None:\n"
            "        chain.insert(0, up)\n"
            "        up = parent_of[up]\n"
            "    practice.categories.update_one({\"_id\": node}, {\"$set\": {\"path\": \",\" + \",\".join(chain) + \",\" if chain else None}})\n"
            "practice.categories.create_index(\"path\")\nex.check(practice.categories)"
        ),
    )


@register
def _ex17_predict() -> Exercise:
    return Prediction(
        id="17-predict-unanchored-keys",
        lesson="17_trees",
        task="How many index keys does the unanchored regex {path: {$regex: ',Programming,'}} examine?",
        checker=None,
        tolerance=0.02,
        explain=lambda n: (f"Measured: {n}. Without a leading '^' the match may start anywhere in the string, so no "
                           "prefix bounds the scan: the server tests the regex against every string key of the path "
                           "index (bounds [\"\", {})), one per node of the tree except the root, whose null path "
                           "lies outside the string range, to return a few dozen."),
        hints=["Which keys of the index could hold ',Programming,' somewhere in the middle?"],
        solution_text="predict_keys.predict(len(nodes))  # every key of the index",
    )


# The org chart of the changed scenario: 1 CEO, 4 VPs, 3 directors each, 4 managers each, 5 staff each.
def _org_chart() -> list[dict]:
    docs = [{"_id": "ceo", "managerId": None}]
    for v in range(1, 5):
        docs.append({"_id": f"vp{v}", "managerId": "ceo"})
        for d in range(1, 4):
            docs.append({"_id": f"dir{v}{d}", "managerId": f"vp{v}"})
            for m in range(1, 5):
                docs.append({"_id": f"mgr{v}{d}{m}", "managerId": f"dir{v}{d}"})
                docs += [{"_id": f"staff{v}{d}{m}{s}", "managerId": f"mgr{v}{d}{m}"} for s in range(1, 6)]
    return docs


class _CountingCollection:
    """A collection stand-in that counts the round trips (find/aggregate/...) made through it."""

    _READS = ("find", "find_one", "aggregate", "count_documents", "distinct", "find_raw_batches")

    def __init__(self, coll: Any) -> None:
        self._coll, self.round_trips = coll, 0

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._coll, name)
        if name not in self._READS:
            return attr

        def read(*a: Any, **kw: Any) -> Any:
            self.round_trips += 1
            return attr(*a, **kw)
        return read

    def __getitem__(self, name: str) -> Any:
        return self._coll[name]


def _check_all_reports(args: Any) -> str:
    if not (isinstance(args, tuple) and len(args) == 2 and all(callable(a) for a in args)):
        raise NotYet("call it with your two functions: `ex_org.check(prepare, all_reports)`.")
    prepare, all_reports = args
    docs = _org_chart()
    below: dict[str, list[str]] = {}
    for d in docs:
        below.setdefault(d["_id"], [])
        if d["managerId"]:
            below.setdefault(d["managerId"], []).append(d["_id"])

    def subtree(node: str) -> list[str]:
        out, todo = [], list(below[node])
        while todo:
            n = todo.pop()
            out.append(n)
            todo += below[n]
        return sorted(out)

    levels_below = {"ceo": 4, "dir11": 2, "mgr232": 1, "staff3241": 0}
    with observe.sandbox("17-org-chart") as box:
        coll = box.db["employees"]
        coll.insert_many(docs)
        prepare(coll)
        indexed = [k for k in observe.index_keys(coll) if k and k[0][0] == "managerId"]
        redundant = observe.redundant_prefixes(coll)
        for node, levels in levels_below.items():
            counting = _CountingCollection(coll)
            box.recorder.clear()
            got = all_reports(counting, node)
            whole = [c for c in box.recorder.commands if next(iter(c), None) == "find" and not c.get("filter")]
            if whole:
                raise NotYet(f"all_reports(coll, {node!r}) reads the whole org chart (a find with no filter) and "
                             "walks it in Python: every call reads all 305 people, however small the team. Ask "
                             "the server for one level at a time (`{\"managerId\": {\"$in\": level}}`) or use "
                             "`$graphLookup`.")
            if got is None or isinstance(got, (str, bytes, dict)) or not hasattr(got, "__iter__"):
                raise NotYet(f"all_reports(coll, {node!r}) returned {got!r}; return the ids of everybody below "
                             "the manager (a list).")
            got = sorted(str(g.get("_id")) if isinstance(g, dict) else str(g) for g in got)
            want = subtree(node)
            if node in got:
                raise NotYet(f"all_reports(coll, {node!r}) includes {node!r} itself; return only the people below.")
            if got == sorted(below[node]) and want != got:
                raise NotYet(f"all_reports(coll, {node!r}) returned the {len(got)} direct reports only; everybody "
                             f"below counts ({len(want)} people), so keep going level after level.")
            if got != want:
                missing, extra = sorted(set(want) - set(got)), sorted(set(got) - set(want))
                raise NotYet(f"all_reports(coll, {node!r}) is wrong: {len(missing)} missing (e.g. {missing[:3]}), "
                             f"{len(extra)} extra (e.g. {extra[:3]}).")
            if counting.round_trips > levels + 2:
                raise NotYet(f"all_reports(coll, {node!r}) made {counting.round_trips} queries for {len(want)} "
                             f"people {levels} level(s) deep: one query per person. Ask for a whole level at once "
                             "(`{\"managerId\": {\"$in\": level}}`), or let `$graphLookup` walk it in one.")
    if not indexed:
        raise NotYet("every level matches `managerId` (a `$graphLookup`'s connectToField, or your `$in`), and no "
                     "index starts with it: each level is a collection scan. Create it in `prepare`.")
    if redundant:
        raise NotYet(f"prepare creates {redundant[0][0]!r}, a prefix of {redundant[0][1]!r}: the longer index already "
                     "serves every lookup on managerId, and each extra index slows every hire and move. One index.")
    return ("everybody below each manager found, with at most one query per level (or one $graphLookup), and "
            "managerId indexed for the lookups.")


@register
def _ex17_org() -> Exercise:
    return Exercise(
        id="17-org-chart-reports",
        lesson="17_trees",
        task="Org chart with parent references {_id, managerId}: write prepare(coll) (its index) and "
             "all_reports(coll, manager_id) returning everybody below, one query per level or one $graphLookup.",
        checker=_check_all_reports,
        hints=["The lookups match `managerId`: index it in `prepare`.",
               "Either loop `level = ids of coll.find({\"managerId\": {\"$in\": level}})` until empty, or one "
               "aggregate with `$graphLookup` (startWith \"$_id\", connectFromField \"_id\", connectToField "
               "\"managerId\")."],
        solution_text=(
            "def prepare(coll):\n"
            "    coll.create_index(\"managerId\")\n\n\n"
            "def all_reports(coll, manager_id):\n"
            "    found, level = [], [manager_id]\n"
            "    while level:\n"
            "        level = [d[\"_id\"] for d in coll.find({\"managerId\": {\"$in\": level}}, {\"_id\": 1})]\n"
            "        found += level\n"
            "    return found\n\n\nex_org.check(prepare, all_reports)"
        ),
    )
