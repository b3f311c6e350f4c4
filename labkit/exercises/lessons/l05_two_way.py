"""Lesson 05 (Two-way references and keeping copies consistent): its exercises and their checkers.

Notebook: ``notebooks/05_two_way.ipynb``.
"""
from __future__ import annotations

from typing import Any, Callable

from labkit.exercises import steps
from labkit.exercises.kinds import BehaviourCheck, Lab, Prediction
from labkit.exercises.outcomes import NotYet
from labkit.exercises.registry import Lesson

LESSON = Lesson(__file__)


def _edges_and_copies(db: Any) -> tuple[set, set, set]:
    edges = {(e["followerId"], e["followingId"]) for e in db.follows.find({}, {"followerId": 1, "followingId": 1})}
    following, followers = set(), set()
    for u in db.users.find({}, {"followingIds": 1, "followerIds": 1}):
        following |= {(u["_id"], b) for b in u.get("followingIds") or []}
        followers |= {(a, u["_id"]) for a in u.get("followerIds") or []}
    return edges, following, followers


def _seed_follow_graph(db: Any, users: int = 40, seed: int = 5) -> None:
    """Pristine users and follows edges with both copies (followerIds / followingIds) consistent."""
    import random

    rng = random.Random(seed)
    ids = [f"user:{i:03d}" for i in range(users)]
    edges = sorted({(a, b) for a in ids for b in rng.sample(ids, 4) if a != b})
    db.follows.insert_many([{"_id": f"{a}->{b}", "followerId": a, "followingId": b} for a, b in edges])
    docs = {u: {"_id": u, "name": u[-3:], "followingIds": [], "followerIds": []} for u in ids}
    for a, b in edges:
        docs[a]["followingIds"].append(b)
        docs[b]["followerIds"].append(a)
    db.users.insert_many(list(docs.values()))


@LESSON.exercise(BehaviourCheck, "05-reconcile", takes=steps.db_and_function("reconcile"),
                 fresh=_seed_follow_graph)
def _check_reconcile(lab: Lab, db: Any, reconcile: Callable) -> str:
    with lab.sandbox() as box:
        edges_before = list(box.db.follows.find().sort("_id", 1))
        # Break the copies on purpose: drop one side of two edges, add a bogus id, remove one array entirely.
        users = [u["_id"] for u in box.db.users.find({}, {"_id": 1}).sort("_id", 1).limit(6)]
        e0, e1 = edges_before[0], edges_before[-1]
        box.db.users.update_one({"_id": e0["followerId"]}, {"$pull": {"followingIds": e0["followingId"]}})
        box.db.users.update_one({"_id": e1["followingId"]}, {"$pull": {"followerIds": e1["followerId"]}})
        box.db.users.update_one({"_id": users[3]}, {"$push": {"followerIds": "user:does-not-exist"}})
        box.db.users.update_one({"_id": users[4]}, {"$unset": {"followingIds": ""}})
        broken = len({e0["followerId"], e1["followingId"], users[3], users[4]})
        total = box.db.users.count_documents({})
        box.recorder.clear()
        reconcile(box.db)
        modified = box.recorder.modified()
        statements = box.recorder.write_statements()
        edges_after = list(box.db.follows.find().sort("_id", 1))
        edges, following, followers = _edges_and_copies(box.db)
    if edges_after != edges_before:
        raise NotYet(f"the follows edges changed ({len(edges_before)} before, {len(edges_after)} after): "
                     "reconciliation rebuilds the copies from the edges and never touches the edges.")
    if following != edges:
        raise NotYet(f"{len(edges ^ following)} followingIds entries still disagree with the edges "
                     f"(e.g. {sorted(edges ^ following)[:1]}).")
    if followers != edges:
        extra = followers - edges
        if extra and not (edges - followers):
            raise NotYet(f"every missing id was added, but {len(extra)} id(s) that should not be there remain "
                         f"(e.g. {sorted(extra)[:1]}): reconciling also removes what no edge supports.")
        raise NotYet(f"{len(edges ^ followers)} followerIds entries still disagree with the edges "
                     f"(e.g. {sorted(edges ^ followers)[:1]}); remember ids that should not be there at all.")
    if modified > 2 * broken:
        raise NotYet(f"the copies are right, but your job rewrote {modified} user documents to repair {broken} "
                     f"broken users (of {total}): that is a full rebuild, and on a store of millions of users it "
                     "rewrites every one of them every night. Compare each user's arrays with the edges and write "
                     "only the users that differ.")
    if statements > 2 * broken:
        raise NotYet(f"the copies are right, but your job sent {statements} write statements to repair {broken} "
                     f"broken users (of {total}): writing every user, even with the values it already has, is a "
                     "full rebuild in cost (every statement is a write the server must find, compare and log). "
                     "Compare first and write only the users that differ.")
    return (f"all {len(edges)} edges are reflected exactly in both arrays, the edges are untouched, and only "
            f"{statements} user write(s) were sent to repair {broken} broken users.")


LESSON.add(Prediction, "05-predict-transaction-crash", choices=(0, 1))


_ENROLL_STUDENTS = ("student:ana", "student:ben", "student:cho")
_ENROLL_COURSES = ("course:db101", "course:ml200")


def _enroll_state(db: Any) -> dict:
    students = {d["_id"]: d.get("courseIds") for d in db.students.find()}
    courses = {d["_id"]: d.get("studentIds") for d in db.courses.find()}
    edges = sorted((e.get("studentId"), e.get("courseId")) for e in db.enrollments.find())
    return {"students": students, "courses": courses, "edges": edges}


def _fresh_enrollments(db: Any) -> None:
    db.students.insert_many([{"_id": s, "name": s.split(":")[1].title(), "courseIds": []} for s in _ENROLL_STUDENTS])
    db.courses.insert_many([{"_id": c, "title": c.split(":")[1], "studentIds": []} for c in _ENROLL_COURSES])
    db.enrollments.create_index({"studentId": 1, "courseId": 1}, unique=True)


def _call_enroll(enroll: Any, db: Any, student: str, course: str, when: Any, what: str) -> None:
    import pymongo.errors

    Lab.call(enroll, db, student, course, when, raises={pymongo.errors.DuplicateKeyError: (
        f"{what}, your function raised DuplicateKeyError: the enrollment already exists, so a retry stops at the "
        "first write and never repairs the copies. Make the edge write idempotent (an upsert on the pair, or catch "
        "the duplicate and carry on) and the copies `$addToSet`.")})


@LESSON.exercise(BehaviourCheck, "05-idempotent-enroll",
                 takes=steps.db_and_function("enroll"), fresh=_fresh_enrollments)
def _check_idempotent_enroll(lab: Lab, db: Any, enroll: Callable) -> str:
    import datetime as dt

    when = dt.datetime(2026, 9, 1, 8, 0)
    want = {"students": {"student:ana": ["course:db101"], "student:ben": [], "student:cho": []},
            "courses": {"course:db101": ["student:ana"], "course:ml200": []},
            "edges": [("student:ana", "course:db101")]}
    # 1. one call: the edge and both copies
    with lab.sandbox() as box:
        _call_enroll(enroll, box.db, "student:ana", "course:db101", when, "on a first call")
        first = box.recorder.writes()
        first_specs = box.recorder.update_specs()
        once = _enroll_state(box.db)
    if not first:
        raise NotYet("your function sent no write; it should record the enrollment and both copies.")
    if once["edges"] != want["edges"]:
        raise NotYet(f"after one call `enrollments` holds {once['edges']}; it should hold exactly the one "
                     "(student:ana, course:db101) edge, with `studentId` and `courseId` fields.")
    if once != want:
        raise NotYet(f"after one call the copies are students {once['students']} and courses {once['courses']}: "
                     "add the course to the student's `courseIds` and the student to the course's `studentIds`.")
    for spec in first_specs:
        if steps.computed_in_python(spec, "courseIds", "studentIds"):
            raise NotYet("your function writes a whole copy array with a value computed in Python (read, add, "
                         "`$set` back): two students enrolling in one course at once both read the old list and "
                         "the later write drops the other student. `$addToSet` lets the server add each id.")
    target = first[0].get(next(iter(first[0])))
    if target != "enrollments":
        raise NotYet(f"your function writes `{target}` before the enrollment: if it dies right after, a copy claims "
                     "an enrollment that does not exist. Write the authoritative edge first, then the copies.")
    # 2. a retry of a call that went through, and retries after crashes between the writes
    crashes = {
        "retried after it had succeeded": lambda d: None,
        "retried after a crash right after the enrollment was written": lambda d: (
            d.students.update_one({"_id": "student:ana"}, {"$set": {"courseIds": []}}),
            d.courses.update_one({"_id": "course:db101"}, {"$set": {"studentIds": []}})),
        "retried after a crash between the two copies": lambda d: (
            d.courses.update_one({"_id": "course:db101"}, {"$set": {"studentIds": []}}),
            d.students.update_one({"_id": "student:ana"}, {"$set": {"courseIds": ["course:db101"]}})),
    }
    for what, crash in crashes.items():
        with lab.sandbox() as box:
            _call_enroll(enroll, box.db, "student:ana", "course:db101", when, "on a first call")
            crash(box.db)
            _call_enroll(enroll, box.db, "student:ana", "course:db101", when, f"{what}")
            state = _enroll_state(box.db)
        if len(state["edges"]) > 1:
            raise NotYet(f"{what}, there are {len(state['edges'])} enrollment documents for one enrollment: give "
                         "the edge a deterministic key (upsert on studentId + courseId) so a retry finds it.")
        dupes = [k for part in ("students", "courses") for k, ids in state[part].items()
                 if isinstance(ids, list) and len(ids) != len(set(map(str, ids)))]
        if dupes:
            raise NotYet(f"{what}, {', '.join(dupes)} list the same id twice: `$push` adds it again on every retry; "
                         "`$addToSet` adds it only when missing.")
        if state != want:
            raise NotYet(f"{what}, the copies are students {state['students']} and courses {state['courses']}: a "
                         "retry must finish the writes a crash left undone.")
    # 3. calls at once: a retry fired while the first call still runs, and two students joining one course
    at_once = ("when a retry runs while the first call is still going (right after its first read; a find "
               "before the insert sees nothing in both calls, so both insert)")
    with lab.sandbox() as box:
        lab.interleaved(lambda: _call_enroll(enroll, box.db, "student:ana", "course:db101", when, at_once),
                        lambda: _call_enroll(enroll, box.db, "student:ana", "course:db101", when, at_once),
                        box.recorder)
        twice = _enroll_state(box.db)
    if len(twice["edges"]) > 1:
        raise NotYet(f"a retry that runs while the first call is still going (right after its first read) leaves "
                     f"{len(twice['edges'])} enrollment documents: a find before the insert sees nothing in both "
                     "calls. Let one write decide: an upsert on {studentId, courseId}.")
    with lab.sandbox() as box:
        lab.interleaved(lambda: _call_enroll(enroll, box.db, "student:ana", "course:db101", when, "at once"),
                        lambda: _call_enroll(enroll, box.db, "student:ben", "course:db101", when, "at once"),
                        box.recorder)
        both = _enroll_state(box.db)
    if sorted(both["courses"].get("course:db101") or []) != ["student:ana", "student:ben"]:
        raise NotYet(f"ana and ben enrolling in course:db101 at once leave its studentIds "
                     f"{both['courses'].get('course:db101')}: an array read, changed in Python and written back "
                     "with `$set` loses the other call's student. `$addToSet` lets the server add each one.")
    return ("one call records the enrollment and both copies, edge first; a retry after a success or after a crash "
            "at either point leaves exactly one enrollment and both copies right, so retries can be automatic.")


