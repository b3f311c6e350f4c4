"""Lesson 37 (Anti-pattern: case-insensitive queries without a matching index): its exercises and their checkers.

Notebook: ``notebooks/37_case_insensitive.ipynb``.
"""
from __future__ import annotations

from typing import Any, Callable

from labkit.exercises import observe, steps
from labkit.exercises.kinds import BehaviourCheck, Lab, Prediction, StateCheck
from labkit.exercises.outcomes import NotYet
from labkit.exercises.registry import Lesson

LESSON = Lesson(__file__)


def _has_regex(value: Any) -> bool:
    import re

    if isinstance(value, re.Pattern) or type(value).__name__ == "Regex":
        return True
    if isinstance(value, dict):
        return any(k == "$regex" or _has_regex(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return any(_has_regex(v) for v in value)
    return False


@LESSON.exercise(StateCheck, "37-login-filter",
                 takes=steps.call("call it with two arguments: `ex.check(practice.members, login_filter)`.",
                                  None, None))
def _check_login_filter(lab: Lab, members: Any, login_filter: Any) -> str:
    if not steps.is_collection(members):
        raise NotYet(f"the first argument should be the collection `practice.members`, not {type(members).__name__}.")
    if not steps.is_function(login_filter):
        raise NotYet("the second argument should be your function `login_filter` (no parentheses).")
    sample = list(members.find().sort("_id", 1).limit(60))[::20]
    if not sample:
        raise NotYet("practice.members is empty; re-run the practice setup cell.")
    total = members.count_documents({})
    for doc in sample:
        email = doc.get("email")
        if not isinstance(email, str):
            raise NotYet(f"member {doc.get('_id')!r} has no `email` string (it has {email!r}): the normalized field "
                         "is built from it. Re-run the practice setup cell.")
        for variant in (email, email.upper(), email.lower(), email.swapcase()):
            filt = login_filter(variant)
            if not isinstance(filt, dict):
                raise NotYet(f"login_filter({variant!r}) returned {type(filt).__name__}; return a filter document.")
            if _has_regex(filt):
                raise NotYet("the filter uses a regular expression: with the `i` option no index range is possible, "
                             "so every key is examined. Query a normalized field with plain equality instead.")
            fields = [k for k in filt if not k.startswith("$")]
            if fields:
                with_field = members.count_documents({fields[0]: {"$exists": True}})
                if with_field < total:
                    raise NotYet(f"only {with_field} of {total} members have `{fields[0]}`; set it on every member "
                                 "(update_many with a pipeline and `$toLower`).")
            found = [d["_id"] for d in members.find(filt)]
            if found != [doc["_id"]]:
                raise NotYet(f"login_filter({variant!r}) found {found[:3]}{'...' if len(found) > 3 else ''}, "
                             f"expected only {doc['_id']!r}. Normalize the input the same way as the stored field.")
            explain = members.find(filt).explain()
            names = [s.get("stage") for s in observe.plan_stages(explain["queryPlanner"]["winningPlan"])]
            keys = explain["executionStats"]["totalKeysExamined"]
            if not any("IXSCAN" in str(n) for n in names) or keys > 2:
                raise NotYet(f"the right member comes back, but the plan is {names} with {keys} keys examined: "
                             "index the normalized field.")
    return "every spelling finds exactly one member through one index key."


LESSON.add(Prediction, "37-predict-regex-keys")  # an exact count: exact (issue 25, kind 4)


_TEAMS_37 = ("Night Owls", "Red Rockets", "Blue Herons", "Quiet Foxes", "Iron Bees", "Sea Lions")


def _team_name_37(i: int) -> str:
    base = _TEAMS_37[i % len(_TEAMS_37)]
    return f"{[base, base.upper(), base.lower()][i % 3]} {i}"


@LESSON.exercise(BehaviourCheck, "37-team-names",
                 takes=steps.call("call it with your three functions: `ex.check(prepare, add_team, find_team)`.",
                                  steps.is_function, steps.is_function, steps.is_function))
def _check_team_names(lab: Lab, prepare: Callable, add_team: Callable, find_team: Callable) -> str:
    from pymongo.errors import DuplicateKeyError

    with lab.sandbox() as box:
        teams = box.db.teams
        teams.insert_many([{"_id": f"team:{i:04d}", "name": _team_name_37(i)} for i in range(1200)])
        prepare(teams)
        if teams.count_documents({}) != 1200:
            raise NotYet(f"after prepare the collection holds {teams.count_documents({})} of 1200 teams: prepare "
                         "adds what the lookup needs, it removes nothing.")
        add_team(teams, "Paper Planes")
        try:
            add_team(teams, "PAPER planes")
        except DuplicateKeyError:
            pass
        else:
            same = teams.count_documents({"name": {"$in": ["Paper Planes", "PAPER planes"]}})
            raise NotYet(f"add_team accepted \"PAPER planes\" next to \"Paper Planes\" ({same} teams now): sign-up "
                         "must refuse a name that differs only in case. A unique index that ignores case (a "
                         "collation at strength 2, or a unique index on a lower-cased copy) makes the insert "
                         "fail with a duplicate key error.")
        try:
            add_team(teams, "Papér Planes")
        except DuplicateKeyError:
            raise NotYet("add_team refused \"Papér Planes\" because \"Paper Planes\" exists: ignoring case is "
                         "strength 2; strength 1 also ignores accents, which the task does not ask for.") from None
        for i in (7, 500, 1013):
            name = _team_name_37(i)
            for spelled in (name, name.upper(), name.lower(), name.swapcase()):
                box.recorder.clear()
                cursor = find_team(teams, spelled)
                if not all(callable(getattr(type(cursor), m, None)) for m in ("explain", "clone", "__iter__")):
                    raise NotYet(f"find_team should return the cursor of a find (no list(), no find_one), got "
                                 f"{type(cursor).__name__}; the checker explains it.")
                found = [d["_id"] for d in cursor.clone()]
                finds = [c for c in box.recorder.commands if "find" in c]
                if any(_has_regex(c.get("filter")) for c in finds):
                    raise NotYet("find_team uses a regular expression: with the `i` option no index range exists, "
                                 "so every key is read. Use equality, with the index's collation or on a "
                                 "lower-cased field.")
                if found != [f"team:{i:04d}"]:
                    raise NotYet(f"find_team(teams, {spelled!r}) found {found[:3]}, expected only team:{i:04d}. "
                                 "A collation index is used (and the comparison ignores case) only when the query "
                                 "names the same collation.")
                fig = observe.plan_figures(cursor.clone().explain())
                if fig.collscan or fig.keys_examined > 2:
                    raise NotYet(f"the right team comes back for {spelled!r}, but through {list(fig.stages)} with "
                                 f"{fig.keys_examined} keys examined: a collation index serves a query only when "
                                 "the query names the same collation (or query the indexed lower-case field).")
    return ("case variants are refused at sign-up by a unique index, accents still count, and every spelling "
            "finds its team through one index key.")


