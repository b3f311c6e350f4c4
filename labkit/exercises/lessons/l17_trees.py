"""Lesson 17, Trees: parent and child references, ancestors, materialized paths, `$graphLookup`:
its exercises and their checkers.

Notebook: ``notebooks/17_trees.ipynb``.
"""
from __future__ import annotations

from typing import Any, Callable

from labkit.exercises import observe, steps
from labkit.exercises.kinds import BehaviourCheck, Lab, Prediction, StateCheck
from labkit.exercises.outcomes import NotYet
from labkit.exercises.registry import Lesson

LESSON = Lesson(__file__)


def _finds(coll: Any) -> bool:
    """Has find and index_information (a database too: it answers every attribute with a collection, and the
    outcome "error" explains a database passed for a collection)."""
    return hasattr(coll, "find") and hasattr(coll, "index_information")


@LESSON.exercise(StateCheck, "17-materialized-path",
                 takes=steps.collection("practice.categories", _finds))
def _check_materialized_path(lab: Lab, coll: Any) -> str:
    import re

    docs = {d["_id"]: d for d in coll.find()}
    if not docs:
        raise NotYet("the collection is empty; re-run the setup cell above the exercise.")
    setup = lab.setup("categories")
    if setup:
        steps.same_ids(setup, docs,
                       gone="{n} of the {total} categories of the setup are gone (e.g. {first!r}); adding a path "
                            "must not delete nodes. Re-run the setup cell, then add the paths again.",
                       extra="{n} categor(ies) are not in the setup (e.g. {first!r}); re-run the setup cell and only "
                             "add `path` fields.")
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


LESSON.add(Prediction, "17-predict-unanchored-keys")


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


@LESSON.exercise(BehaviourCheck, "17-org-chart-reports", sandbox_name="17-org-chart",
                 takes=steps.call("call it with your two functions: `ex_org.check(prepare, all_reports)`.",
                                  callable, callable))
def _check_all_reports(lab: Lab, prepare: Callable, all_reports: Callable) -> str:
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
    with lab.sandbox() as box:
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


