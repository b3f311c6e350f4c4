"""Lesson 39 (Schema review: run the checklist on a legacy store): its exercises and their checkers.

Notebook: ``notebooks/39_schema_review.ipynb``.
"""
from __future__ import annotations

from typing import Any, Callable

from labkit.exercises import steps
from labkit.exercises.kinds import BehaviourCheck, Lab, Prediction, StateCheck
from labkit.exercises.outcomes import NotYet
from labkit.exercises.registry import Lesson

LESSON = Lesson(__file__)


def _review_kinds() -> tuple[str, ...]:
    from labkit.review import KINDS

    return tuple(KINDS)


def _has_ci_index(db: Any) -> bool:
    for spec in db.customers.list_indexes():
        key = list(spec.get("key", {}))
        coll = spec.get("collation") or {}
        if key[:1] == ["email"] and coll.get("strength") in (1, 2):
            return True
    return False


def _validator_of(db: Any, name: str) -> dict | None:
    """The validator of collection ``name`` (None when it has none)."""
    for info in db.list_collections(filter={"name": name}):
        return (info.get("options") or {}).get("validator")
    return None


@LESSON.exercise(StateCheck, "39-schema-review",
                 takes=steps.call("call it with three arguments: `ex.check(db, log_after, findings)`.",
                                  None, None, None))
def _check_schema_review(lab: Lab, db: Any, log: Any, findings: Any) -> str:
    from labkit.review import ReviewInputError, review

    if not steps.is_database(db):
        raise NotYet(f"the first argument should be the lesson's database `db`, not {type(db).__name__}.")
    if not isinstance(log, list) or not all(isinstance(q, dict) for q in log):
        raise NotYet("the second argument should be the profiler log `log_after` (a list of dicts).")
    if not any(isinstance(q.get("ns"), str) for q in log):
        raise NotYet("the log holds no profiler documents (with `ns`, `op`, `command`): build it with "
                     "`profile_log(db, workload_after)`.")
    if isinstance(findings, (list, tuple)) and not (findings and isinstance(findings[0], str)):
        findings = set(map(tuple, findings))
    if not isinstance(findings, (set, frozenset)):
        raise NotYet(f"`findings` should be a set of (kind, where) pairs, got {type(findings).__name__}.")
    kinds = _review_kinds()
    claims = set()
    for item in findings:
        if not (isinstance(item, tuple) and len(item) == 2):
            raise NotYet(f"{item!r} is not a (kind, where) pair.")
        if item[0] not in kinds:
            raise NotYet(f"{item[0]!r} is not a kind of the review: {list(kinds)}.")
        claims.add((item[0], str(item[1]).strip()))
    names = set(db.list_collection_names())
    if db.customers.count_documents({}) != 60 or db.customers.count_documents({"email": {"$type": "string"}}) != 60:
        raise NotYet("db.customers should still hold its 60 customers, each with an email.")
    keeps = [n for n in sorted(names - {"customers"}) if db[n].count_documents({"customerId": "cust:013"}) >= 1800]
    if not keeps and db.customers.count_documents({"_id": "cust:013", "activity.1799": {"$exists": True}}) == 0:
        raise NotYet("customer cust:013's 1,800 activity events are gone: move them (one document per event, "
                     "with customerId) before removing the array.")
    logins = [q for q in log if str(q.get("ns", "")).endswith(".customers") and "email" in str(
        (q.get("command") or {}).get("filter", {}))]
    if not logins:
        raise NotYet("the login query (customers by email) is missing from the log: change it in "
                     "`workload_after`, do not remove it.")
    try:
        result = review(db, query_log=log)
    except ReviewInputError as exc:
        raise NotYet(f"the review cannot read that log: {exc}") from None
    truth = result.kinds()
    wrong = sorted(claims - truth)
    if wrong:
        raise NotYet(f"{wrong[0]!r} is not what the review reports now. Re-run `labkit.review(db, "
                     "query_log=log_after)` after your last change and submit its `.kinds()`.")
    missing = sorted(truth - claims)
    if missing:
        raise NotYet(f"all {len(claims)} claims hold, but {len(missing)} finding(s) are still hidden, of kind(s) "
                     f"{sorted({k for k, _ in missing})}. Re-run the review and submit everything it reports.")
    left = sorted(f"{k} {w}" for k, w in truth if w.split(".")[0] == "customers")
    if left:
        raise NotYet(f"the review still reports {left} on customers: fix those (the exercise's list) and re-run.")
    unvalidated = sorted(w for k, w in truth if k == "no-validation" and (w == "customers" or w in keeps))
    if unvalidated:
        raise NotYet(f"{unvalidated} still ha{'s' if len(unvalidated) == 1 else 've'} no validator: the task asks "
                     "for one on customers and on the new collection too, written when the shape is settled "
                     "(`collMod` with a `$jsonSchema` that requires its fields, e.g. customerId and at).")
    for name in keeps:
        schema = ((_validator_of(db, name) or {}).get("$jsonSchema") or {})
        if not schema.get("required"):
            raise NotYet(f"{name}'s validator requires no field, so it accepts any document: require the fields "
                         "every event has (`required: [\"customerId\", \"at\"]`).")
    if not _has_ci_index(db):
        raise NotYet("the login needs an index on email with a case-insensitive collation (strength 2).")
    return (f"the review reports {len(truth)} finding(s) and nothing on customers: activity moved out "
            f"({', '.join(keeps)}), the login uses a case-insensitive index, and every event is kept.")


LESSON.add(Prediction, "39-predict-findings-gone")


def blog_store(db: Any) -> int:
    """A pristine legacy blog store: authors embed every post; returns the number of posts."""
    import datetime as dt

    t0 = dt.datetime(2025, 6, 1)
    authors, total = [], 0
    for a in range(30):
        n = 400 if a == 7 else (a * 5) % 23
        total += n
        authors.append({"_id": f"author:{a:02d}", "handle": f"writer{a}", "joined": t0 + dt.timedelta(days=a),
                        "posts": [{"slug": f"a{a}-p{i}", "title": f"Post {i} by writer{a}",
                                   "at": t0 + dt.timedelta(hours=9 * i + a)} for i in range(n)]})
    db.authors.insert_many(authors)
    db.authors.create_index([("handle", 1)])
    db.authors.create_index([("handle", 1), ("joined", -1)])
    return total


@LESSON.exercise(BehaviourCheck, "39-fix-blog", takes=steps.function("fix"))
def _check_fix_blog(lab: Lab, fix: Callable) -> str:
    from labkit.review import review

    with lab.sandbox() as box:
        db = box.db
        total = blog_store(db)
        orig = {p["slug"]: (a["_id"], p.get("title"), p.get("at")) for a in db.authors.find() for p in a["posts"]}
        fix(db)
        if db.authors.count_documents({}) != 30:
            raise NotYet(f"db.authors holds {db.authors.count_documents({})} of 30 authors after fix: keep them.")
        slugs: dict[str, str] = {}
        changed: list[str] = []
        for name in sorted(set(db.list_collection_names()) - {"authors"}):
            for d in db[name].find({"slug": {"$exists": True}}, {"slug": 1, "authorId": 1, "title": 1, "at": 1}):
                slugs[str(d.get("slug"))] = str(d.get("authorId"))
                was = orig.get(str(d.get("slug")))
                if was is not None and (d.get("title"), d.get("at")) != was[1:]:
                    changed.append(str(d.get("slug")))
        for d in db.authors.find({"posts.0": {"$exists": True}}, {"posts.slug": 1}):
            for p in d.get("posts") or []:
                slugs.setdefault(str(p.get("slug")), d["_id"])
        if len(slugs) < total:
            raise NotYet(f"{total - len(slugs)} of {total} posts are gone: move the posts (one document per post, "
                         "with `authorId`) before removing the array.")
        if changed:
            raise NotYet(f"{len(changed)} moved post(s), e.g. {changed[0]!r}, lost or changed their `title` or `at`: "
                         "move each post whole (every field it had), adding only `authorId`.")
        wrong = [s for s, a in slugs.items() if not (a.startswith("author:") and a[7:].isdigit() and s.startswith(f"a{int(a[7:])}-"))]
        if wrong:
            raise NotYet(f"{len(wrong)} moved post(s), e.g. {wrong[0]!r}, have no (or the wrong) `authorId`: a post "
                         "document needs the reference to its author.")
        keys = {tuple(spec["key"]) for spec in db.authors.list_indexes()}
        if ("handle", "joined") not in keys:
            raise NotYet("you dropped `handle_1_joined_-1`: it serves everything `handle_1` served and more. Drop the "
                         "prefix, keep the longer index.")
        result = review(db)
    left = sorted(f"{k} {w}" for k, w in result.kinds())
    if left:
        raise NotYet(f"the review still reports {left}: fix those too (a validator on every collection you keep "
                     "or create) and re-run.")
    return (f"{total} posts moved to their own documents, the prefix index dropped, validators in place: the "
            "review of the blog store reports nothing.")


