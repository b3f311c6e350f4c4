"""Lesson 08 (Capstone: a real-world profile page): its exercises and their checkers.

Notebook: ``notebooks/08_capstone_profile.ipynb``.
"""
from __future__ import annotations

from typing import Any, Callable

from labkit.exercises import steps
from labkit.exercises.kinds import BehaviourCheck, Lab, Prediction, StateCheck
from labkit.exercises.outcomes import NotYet
from labkit.exercises.registry import Lesson

LESSON = Lesson(__file__)


@LESSON.exercise(StateCheck, "08-orphans",
                 takes=steps.call("call it with the database and your list: `ex2.check(db, orphans)`.",
                                  None, None))
def _check_orphans(lab: Lab, db: Any, orphans: Any) -> str:
    if not isinstance(orphans, list):
        raise NotYet(f"`orphans` should be a list of post ids, got {type(orphans).__name__}.")
    users = {u["_id"] for u in db.users.find({}, {"_id": 1})}
    truth = sorted(p["_id"] for p in db.posts.find({}, {"authorId": 1}) if p.get("authorId") not in users)
    if not truth:
        raise NotYet("there are no orphaned posts in this database; run the deletion cell first.")
    got = list(orphans)
    if got and isinstance(got[0], dict):
        raise NotYet("give the ids only (`d[\"_id\"]`), not whole documents.")
    try:
        repeated = len(set(got)) != len(got)
    except TypeError:
        raise NotYet("`orphans` should hold post ids (strings), one per orphaned post.") from None
    if repeated:
        raise NotYet(f"`orphans` lists some ids more than once ({len(got)} entries, {len(set(got))} different): "
                     "one entry per orphaned post (did the join produce one row per comment or per follow?).")
    if sorted(got, key=str) == truth and got != truth:
        raise NotYet("the right ids, but not sorted; use `sorted(...)`.")
    missing, extra = sorted(set(truth) - set(got)), sorted(set(got) - set(truth))
    if missing or extra:
        raise NotYet(f"{len(missing)} orphan(s) missing (e.g. {missing[:2]}) and {len(extra)} post(s) that still "
                     f"have an author (e.g. {extra[:2]}).")
    return f"all {len(truth)} orphaned posts found; a repair job would now delete or reassign them."


PROFILE_OPERATIONS = ("account + roles", "newest 20 posts", "followers page", "following page", "follower count")


LESSON.add(Prediction, "08-predict-growing-read", choices=PROFILE_OPERATIONS,
           task="Predict: which of the profile page's reads examines the most index keys for the busiest account? "
                f"One of {list(PROFILE_OPERATIONS)}.")


def _seed_account_graph(db: Any) -> None:
    """Five users with posts, comments and follows in both directions, all pointing at each other."""
    users = [f"user:{i}" for i in range(1, 6)]
    db.users.insert_many([{"_id": u, "name": u.split(":")[1]} for u in users])
    db.posts.insert_many([{"_id": f"post:{u.split(':')[1]}:{k}", "authorId": u, "title": f"t{k}"}
                          for u in users for k in range(3)])
    comments, n = [], 0
    for post in db.posts.find({}, {"_id": 1}).sort("_id", 1):
        for u in users:
            if u not in post["_id"].replace("post:", "user:"):
                n += 1
                comments.append({"_id": f"comment:{n}", "postId": post["_id"], "authorId": u, "text": "hi"})
    db.comments.insert_many(comments)
    db.follows.insert_many([{"_id": f"follow:{a.split(':')[1]}:{b.split(':')[1]}", "followerId": a,
                             "followingId": b} for a in users for b in users if a != b])


def _dangling(db: Any, gone: str) -> dict[str, int]:
    posts = [p["_id"] for p in db.posts.find({"authorId": gone}, {"_id": 1})]
    return {
        "user document": db.users.count_documents({"_id": gone}),
        "their posts": len(posts),
        "comments on their posts": db.comments.count_documents({"postId": {"$regex": f"^post:{gone[5:]}:"}}),
        "their comments": db.comments.count_documents({"authorId": gone}),
        "follows of them (followingId)": db.follows.count_documents({"followingId": gone}),
        "follows by them (followerId)": db.follows.count_documents({"followerId": gone}),
    }


@LESSON.exercise(BehaviourCheck, "08-delete-account",
                 takes=steps.db_and_function("delete_account"), fresh=_seed_account_graph)
def _check_delete_account(lab: Lab, like: Any, delete_account: Callable) -> str:
    with lab.sandbox() as box:
        db = box.db
        totals = {c: db[c].count_documents({}) for c in ("users", "posts", "comments", "follows")}
        expected_gone = _dangling(db, "user:2")
        lab.call(delete_account, db, "user:2")
        left = _dangling(db, "user:2")
        after = {c: db[c].count_documents({}) for c in ("users", "posts", "comments", "follows")}
    leftovers = {k: v for k, v in left.items() if v}
    if leftovers:
        what = ", ".join(f"{v} {k}" for k, v in leftovers.items())
        hint = ""
        if "comments on their posts" in leftovers and not left["their posts"]:
            hint = (" The comments of the deleted posts point at posts that no longer exist: delete the comments "
                    "whose postId is one of the user's posts, before the posts go.")
        elif "follows of them (followingId)" in leftovers or "follows by them (followerId)" in leftovers:
            hint = (" A follow edge names the user on either side: delete edges where the user is the follower "
                    "and where the user is followed.")
        raise NotYet(f"after deleting user:2, {what} still point at them.{hint}")
    # nobody comments on their own posts in this graph, so the two comment sets are disjoint
    removed = {c: totals[c] - after[c] for c in totals}
    want = {"users": 1, "posts": expected_gone["their posts"],
            "comments": expected_gone["comments on their posts"] + expected_gone["their comments"],
            "follows": expected_gone["follows of them (followingId)"] + expected_gone["follows by them (followerId)"]}
    extra = {c: removed[c] - want[c] for c in want if removed[c] != want[c]}
    if extra:
        what = ", ".join(f"{c}: {removed[c]} removed instead of {want[c]}" for c in extra)
        raise NotYet(f"other users' data was deleted too ({what}): delete only what points at the deleted user.")
    return (f"user:2 and everything that pointed at them are gone ({removed['posts']} posts, {removed['comments']} "
            f"comments, {removed['follows']} follows), and nobody else lost anything.")


