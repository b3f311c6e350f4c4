"""Lesson 04 (One-to-infinity: the follows relationship collection): its exercises and their checkers.

Notebook: ``notebooks/04_follows.ipynb``.
"""
from __future__ import annotations

from typing import Any, Callable

from labkit.exercises import observe, steps
from labkit.exercises.kinds import BehaviourCheck, Lab, Prediction, StateCheck
from labkit.exercises.outcomes import NotYet
from labkit.exercises.registry import Lesson

LESSON = Lesson(__file__)


def _pristine_follows(db: Any) -> None:
    """300 users; user:0 is followed by every even user, and user k follows the five users after it."""
    edges = []
    for k in range(1, 301):
        targets = ([0] if k % 2 == 0 else []) + [(k + j) % 300 + 1 for j in range(1, 6)]
        edges += [{"_id": f"follow:{k}:{t}", "followerId": f"user:{k:03d}", "followingId": f"user:{t:03d}"}
                  for t in targets if t != k]
    db.follows.insert_many(edges)


@LESSON.exercise(StateCheck, "04-follow-indexes",
                 takes=steps.collection("practice.follows"))
def _check_follow_indexes(lab: Lab, follows: Any) -> str:
    from pymongo.errors import DuplicateKeyError, OperationFailure

    learner_indexes = [spec for spec in follows.list_indexes() if spec["name"] != "_id_"]
    if not learner_indexes:
        raise NotYet("practice.follows has no index but `_id` yet: create one index per direction.")
    try:
        box = lab.sandbox(fresh=_pristine_follows, indexes={"follows": follows})
    except (DuplicateKeyError, OperationFailure) as exc:
        if getattr(exc, "code", None) == 11000:
            raise NotYet("one of your unique indexes refuses ordinary follows (built on follows where one "
                         "user follows several others, it fails with E11000): only the PAIR "
                         "{followerId, followingId} is unique, not either field alone.") from None
        raise
    with box:
        sandbox_follows = box.db.follows
        for label, field, other, value in (("who follows", "followingId", "followerId", "user:000"),
                                           ("whom ... follows", "followerId", "followingId", "user:007")):
            plan = sandbox_follows.find({field: value}).sort(other, 1).limit(20).explain()
            figures = observe.plan_figures(plan)
            if figures.collscan:
                raise NotYet(f"'{label}' ({field} equality) still scans the collection: no index starts with "
                             f"`{field}`.")
            if figures.blocking_sort:
                raise NotYet(f"'{label}' has a blocking SORT: the index starting with `{field}` must continue "
                             f"with `{other}` so the page comes out in order.")
            if figures.keys_examined > figures.returned + 1:
                raise NotYet(f"'{label}' reads {figures.keys_examined} index keys for one page of "
                             f"{figures.returned}: the planner walks an index that does not start with `{field}` "
                             f"only for its sort order. Give this direction its own index that starts with "
                             f"`{field}`.")
        extra = observe.redundant_prefixes(sandbox_follows)
        if extra:
            raise NotYet(f"the index {extra[0][0]!r} is a prefix of {extra[0][1]!r}: every follow pays to maintain "
                         "it and no query needs it. Drop it; two indexes, one per direction, are enough.")
        edge = sandbox_follows.find_one({"_id": "follow:7:9"})
        try:
            sandbox_follows.insert_one({"_id": "follow:7:9:again", "followerId": edge["followerId"],
                                        "followingId": edge["followingId"]})
        except DuplicateKeyError:
            return "both directions are served by an index, in order, and duplicate edges are rejected."
    raise NotYet("a second follows document for the same follower/following pair was accepted (tried on a copy "
                 "of the indexes, your data is untouched): make the {followerId, followingId} index unique.")


LESSON.add(Prediction, "04-predict-count-keys", tolerance=0.05)


def _membership_state(db: Any, group_id: str) -> tuple[int, Any]:
    members = db.memberships.count_documents({"groupId": group_id})
    group = db.groups.find_one({"_id": group_id}) or {}
    return members, group.get("memberCount")


def _member_counter_method(rec: Any, what: str) -> None:
    """Refuse a recount, a read-modify-write of the counter, or a read of memberships before the insert."""
    commands = rec.commands
    counted = [c for c in commands if next(iter(c), None) in ("aggregate", "count")]
    if counted:
        raise NotYet(f"{what} counts the memberships again ({next(iter(counted[0]))} command): that reads one key per "
                     "member on every join and leave, which is what the counter is there to avoid. Move the "
                     "counter by one with `$inc`.")
    for spec in rec.update_specs():
        if steps.computed_in_python(spec, "memberCount"):
            raise NotYet(f"{what} writes memberCount with a value computed in Python from a read of the group "
                         "(read-modify-write): two joins at once both read 4 and both write 5, one is lost. Let "
                         "the server add: `$inc: {memberCount: 1}` (or -1).")
    if what == "join":
        names = [(next(iter(c), None), c.get(next(iter(c)))) for c in commands]
        first_write = next((i for i, (n, _) in enumerate(names) if n in ("insert", "update", "findAndModify")),
                           len(names))
        if any(n == "find" and coll == "memberships" for n, coll in names[:first_write]):
            raise NotYet("join reads memberships before inserting (find-then-insert): two joins at once both find "
                         "nothing and both go on. Insert straight away and let the unique index refuse the second "
                         "(catch DuplicateKeyError).")


def _fresh_groups(db: Any) -> None:
    db.memberships.create_index({"groupId": 1, "userId": 1}, unique=True)
    db.groups.insert_many([{"_id": "group:chess", "name": "Chess", "memberCount": 3},
                           {"_id": "group:go", "name": "Go"}])
    db.memberships.insert_many([{"groupId": "group:chess", "userId": f"user:{i}"} for i in (1, 2, 3)])


@LESSON.exercise(BehaviourCheck, "04-member-counter", fresh=_fresh_groups,
                 takes=steps.call("call it with the database and your two functions: "
                                  "`ex.check(practice, join, leave)`.",
                                  None, callable, callable))
def _check_member_counter(lab: Lab, like: Any, join: Callable, leave: Callable) -> str:
    from pymongo.errors import DuplicateKeyError

    with lab.sandbox() as box:
        db = box.db

        def step(fn: Any, what: str, group: str, user: str) -> None:
            lab.call(fn, db, group, user, raises={DuplicateKeyError: (
                f"{what} let DuplicateKeyError escape: a repeated join (a double click, a retry) is normal traffic. "
                "Catch it and leave the counter alone; the unique index already refused the second membership.")})

        def four_members(wrong_members: str, wrong_count: str) -> None:
            """group:chess has 4 memberships and memberCount 4; the messages are formatted with the ``members``
            and the ``count`` found, and ``repeated``, the memberships beyond the three of the setup."""
            members, count = _membership_state(db, "group:chess")
            for wrong, say in ((members != 4, wrong_members), (count != 4, wrong_count)):
                if wrong:
                    raise NotYet(say.format(members=members, count=count, repeated=members - 3))

        step(join, "join", "group:chess", "user:10")
        _member_counter_method(box.recorder, "join")
        four_members("after one join the group has {members} memberships instead of 4: insert one membership "
                     "document {{groupId, userId}} per join.",
                     "after one join memberCount is {count!r} instead of 4: increment it with "
                     "`$inc: {{memberCount: 1}}` on the group, in the same function.")
        if (db.groups.find_one({"_id": "group:go"}) or {}).get("memberCount") is not None:
            raise NotYet("a join to group:chess changed group:go's memberCount too: filter the counter update on "
                         "the group's `_id`.")
        step(join, "the second, repeated join", "group:chess", "user:10")
        four_members("joining twice stored {repeated} memberships for the same user: keep the unique index "
                     "on {{groupId, userId}} and let it refuse the duplicate.",
                     "joining twice counted twice (memberCount {count!r} for 4 members): increment only after "
                     "the membership insert succeeded; the unique index, not a read before it, decides.")
        box.recorder.clear()
        step(leave, "leave", "group:chess", "user:10")
        _member_counter_method(box.recorder, "leave")
        members, count = _membership_state(db, "group:chess")
        if members != 3 or count != 3:
            raise NotYet(f"after leaving, the group has {members} memberships and memberCount {count!r} (expected "
                         "3 and 3): delete the membership and decrement by one.")
        step(leave, "leaving a group one is not in", "group:chess", "user:77")
        members, count = _membership_state(db, "group:chess")
        if count != 3:
            raise NotYet(f"leaving a group the user never joined changed memberCount to {count!r}: decrement only "
                         "when `delete_one(...).deleted_count == 1`.")
        step(join, "join", "group:go", "user:1")
        members, count = _membership_state(db, "group:go")
        if count != 1:
            raise NotYet(f"the first member of a group without a counter left memberCount at {count!r}: `$inc` "
                         "creates the field, `$set` from a stale read does not keep up.")
        others = db.groups.find_one({"_id": "group:chess"})
        if others.get("name") != "Chess":
            raise NotYet("the group document lost its other fields: update the counter with `$inc`, do not "
                         "replace the group.")
    return ("one membership document per join, refused when repeated, and a counter that moves by exactly one "
            "per real join or leave: a count read is one document, whatever the group's size.")


