"""Lesson 11 (Outlier: embed for the common case, overflow for the viral post): its exercises and their checkers.

Notebook: ``notebooks/11_outlier.ipynb``.
"""
from __future__ import annotations

from typing import Any, Callable

from labkit.exercises import steps
from labkit.exercises.kinds import BehaviourCheck, Lab, Prediction
from labkit.exercises.outcomes import NotYet
from labkit.exercises.registry import Lesson

LESSON = Lesson(__file__)


def _fresh_posts(db: Any) -> None:
    db["posts"].insert_many([{"_id": "post:busy", "title": "Busy", "commentCount": 0, "comments": [],
                              "hasOverflow": False},
                             {"_id": "post:quiet", "title": "Quiet", "commentCount": 0, "comments": [],
                              "hasOverflow": False}])


@LESSON.exercise(BehaviourCheck, "11-outlier-write",
                 takes=steps.db_and_function("add_comment"), fresh=_fresh_posts)
def _check_outlier_write(lab: Lab, db: Any, add_comment: Callable) -> str:
    import datetime as dt

    if not hasattr(db, "list_collection_names"):
        raise NotYet(f"pass the lesson's database (`db`) first, not {type(db).__name__}.")
    box = lab.sandbox()  # pristine posts of the checker's own, never the learner's
    posts, comments = box.db["posts"], box.db["comments"]
    base = dt.datetime(2026, 10, 3, 9, 0)
    made = {"post:busy": 25, "post:quiet": 3}
    try:
        for post_id, n in made.items():
            for i in range(n):
                add_comment(posts, comments, post_id,
                            {"userId": f"user:{i}", "text": f"comment {i}", "createdAt": base + dt.timedelta(minutes=i)})
        busy, quiet = posts.find_one({"_id": "post:busy"}), posts.find_one({"_id": "post:quiet"})
        overflow = list(comments.find({}, {"_id": 0}).sort("createdAt", 1))
        # two comments arrive at once on a full post: the second runs right after the first one's first read
        posts.insert_one({"_id": "post:race", "title": "Race", "commentCount": 20, "hasOverflow": False,
                          "comments": [{"userId": f"user:{i}", "text": f"old {i}",
                                        "createdAt": base + dt.timedelta(minutes=i)} for i in reversed(range(20))]})
        late = base + dt.timedelta(hours=1)
        lab.interleaved(
            lambda: add_comment(posts, comments, "post:race", {"userId": "user:a", "text": "race a",
                                                               "createdAt": late}),
            lambda: add_comment(posts, comments, "post:race", {"userId": "user:b", "text": "race b",
                                                               "createdAt": late + dt.timedelta(seconds=1)}),
            box.recorder)
        race = posts.find_one({"_id": "post:race"}) or {}
        raced = {c.get("text") for c in race.get("comments", []) if isinstance(c, dict)}
        raced |= {c.get("text") for c in comments.find({"postId": "post:race"})}
    finally:
        box.close()
    if busy is None or quiet is None:
        raise NotYet("a test post disappeared; update the existing post (filter on `_id`), do not replace or "
                     "delete it.")
    texts = [c.get("text") for c in busy.get("comments", []) if isinstance(c, dict)]
    if len(texts) > 20:
        raise NotYet(f"the busy post embeds {len(texts)} comments after 25 calls; keep at most 20 with "
                     "`$slice` inside the `$push`.")
    newest = {f"comment {i}" for i in range(5, 25)}
    if set(texts) != newest:
        kept = sorted(set(texts) - newest)
        raise NotYet(f"the busy post should embed the 20 newest comments (5..24); it keeps {kept[:3]}... instead. "
                     "Push to the front (`$position: 0`) and `$slice: 20`, so the oldest falls off the end.")
    if busy.get("commentCount") != 25 or quiet.get("commentCount") != 3:
        raise NotYet(f"commentCount is {busy.get('commentCount')} and {quiet.get('commentCount')}; expected 25 and 3: "
                     "`$inc` it on every comment, embedded or not.")
    moved = [c.get("text") for c in overflow if c.get("postId") == "post:busy"]
    if sorted(moved) != [f"comment {i}" for i in range(5)]:
        if not moved and len(overflow) == 5 and all("postId" not in c for c in overflow):
            raise NotYet("the 5 oldest comments were moved to `comments` without a `postId`: nobody can find them "
                         "by post. Insert each one with the post's id (`dict(comment, postId=post_id)`).")
        if not moved:
            raise NotYet("the 5 oldest comments of the busy post were dropped, not moved: insert the comment that "
                         "falls off the array into `comments` (read the document BEFORE the update to see it).")
        raise NotYet(f"the overflow collection holds {sorted(moved)} for the busy post; expected comments 0..4, "
                     "each once, with `postId`.")
    if any(c.get("postId") == "post:quiet" for c in overflow) or len(overflow) != 5:
        raise NotYet("the quiet post (3 comments) must not use the overflow collection at all.")
    if busy.get("hasOverflow") is not True:
        raise NotYet("the busy post does not say `hasOverflow: True`, so readers never look in `comments`.")
    if quiet.get("hasOverflow"):
        raise NotYet("the quiet post says `hasOverflow: True` with only 3 comments; set it only when a comment "
                     "moves to the overflow collection.")
    lost = sorted({"race a", "race b", "old 0", "old 1"} - raced)
    if lost or race.get("commentCount") != 22:
        raise NotYet(f"two comments arrived at once on a full post: afterwards {lost or 'no comment'} is missing "
                     f"and commentCount is {race.get('commentCount')!r} (expected 22). Reading the post, building "
                     "the new array in Python and writing it back loses the other call's comment; let one "
                     "`find_one_and_update` with `$push`/`$slice` and `$inc` change the post atomically.")
    return ("20 newest embedded, 5 oldest moved to the overflow collection, counts and flags right, and two "
            "comments at once on a full post both kept.")


LESSON.add(Prediction, "11-predict-deep-page-keys", tolerance=0.02)
