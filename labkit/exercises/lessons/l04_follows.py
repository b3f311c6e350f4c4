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


def seed_likes(db: Any, users: int = 300, posts: int = 100) -> None:
    """Likes for the likes exercise: user k likes the posts k, k+7, k+14, ... (11 each); post p:007 is liked by
    many more (every third user); every like has its own time, so "newest first" has no ties."""
    import datetime as dt

    base = dt.datetime(2026, 6, 1)
    likes, seen, t = [], set(), 0
    for k in range(1, users + 1):
        targets = [(k + 7 * j) % posts + 1 for j in range(11)] + ([7] if k % 3 == 0 else [])
        for p in targets:
            if (k, p) in seen:
                continue
            seen.add((k, p))
            t += 1
            likes.append({"_id": f"like:{k:03d}:{p:03d}", "userId": f"u:{k:03d}", "postId": f"p:{p:03d}",
                          "createdAt": base + dt.timedelta(minutes=(t * 37) % 100_003)})
    db.likes.insert_many(likes)


LIKES_QUERIES = (
    ("who liked a post (by user id)", {"postId": "p:007"}, [("userId", 1)], "postId", "userId"),
    ("a user's likes, newest first", {"userId": "u:042"}, [("createdAt", -1)], "userId", "createdAt"),
)


@LESSON.exercise(StateCheck, "04-likes-indexes", takes=steps.collection("practice.likes"))
def _check_likes_indexes(lab: Lab, likes: Any) -> str:
    from pymongo.errors import DuplicateKeyError, OperationFailure

    learner_indexes = [spec for spec in likes.list_indexes() if spec["name"] != "_id_"]
    if not learner_indexes:
        raise NotYet("practice.likes has no index but `_id` yet: index it for both pages and for one like per "
                     "user and post.")
    try:
        box = lab.sandbox(fresh=seed_likes, indexes={"likes": likes})
    except (DuplicateKeyError, OperationFailure) as exc:
        if getattr(exc, "code", None) == 11000:
            raise NotYet("one of your unique indexes refuses ordinary likes (built on likes where a user likes "
                         "several posts and a post has many likes, it fails with E11000): only the PAIR "
                         "{userId, postId} is unique, not either field alone.") from None
        raise
    with box:
        for label, query, sort, field, other in LIKES_QUERIES:
            figures = observe.plan_figures(box.db.likes.find(query).sort(sort).limit(20).explain())
            if figures.collscan:
                partial = [spec["name"] for spec in learner_indexes
                           if list(spec["key"])[:1] == [field] and "partialFilterExpression" in spec]
                extra = (f" (`{partial[0]}` starts with it, but it is partial and the page's query does not repeat "
                         "its filter)" if partial else "")
                raise NotYet(f"'{label}' ({field} equality) still reads every like (COLLSCAN): no usable index "
                             f"starts with `{field}`{extra}.")
            if figures.blocking_sort:
                way = "newest first: -1" if other == "createdAt" else "ascending"
                raise NotYet(f"'{label}' has a blocking SORT with {figures.index}: the index that starts with "
                             f"`{field}` must continue with `{other}` ({way}, or the whole index reversed), so "
                             "the page comes out of the index in order.")
            if figures.keys_examined > figures.returned + 1:
                raise NotYet(f"'{label}' reads {figures.keys_examined} index keys for a page of {figures.returned} "
                             f"with {figures.index}: that index gives the order but does not start with `{field}`, "
                             f"so the scan walks everyone's likes. Give this page an index that starts with "
                             f"`{field}`.")
        extra = observe.redundant_prefixes(box.db.likes)
        if extra:
            raise NotYet(f"the index {extra[0][0]!r} is a prefix of {extra[0][1]!r}: every like pays to maintain it "
                         "and no query needs it. Drop it.")
        edge = box.db.likes.find_one({"_id": "like:042:043"})
        try:
            box.db.likes.insert_one({"_id": "like:042:043:again", "userId": edge["userId"], "postId": edge["postId"],
                                     "createdAt": edge["createdAt"]})
        except DuplicateKeyError:
            count = len(list(box.db.likes.list_indexes())) - 1
            return (f"both pages come out of an index in order, reading one page of keys each, and a second like "
                    f"of the same post by the same user is refused, with {count} index(es) besides `_id`.")
    raise NotYet("a second like of the same post by the same user was accepted (tried on a copy of your indexes; "
                 "your data is untouched): make an index on the pair {postId, userId} (or {userId, postId}) unique. "
                 "The `who liked` index can be that unique index.")


LESSON.add(Prediction, "04-predict-count-keys")  # counts are exact (issue 25)


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


