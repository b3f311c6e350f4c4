"""Lesson 11 (Outlier: embed for the common case, overflow for the viral post): its exercises and their checkers.

Notebook: ``notebooks/11_outlier.ipynb``.
"""
from __future__ import annotations

from typing import Any

from labkit.exercises import observe
from labkit.exercises import steps
from labkit.exercises.kinds import Prediction
from labkit.exercises.outcomes import NotYet
from labkit.exercises.problem import Exercise
from labkit.exercises.registry import register


def _check_outlier_write(args: Any) -> str:
    import datetime as dt

    db, add_comment = steps.db_and_function(args, "add_comment")
    if not hasattr(db, "list_collection_names"):
        raise NotYet(f"pass the lesson's database (`db`) first, not {type(db).__name__}.")
    box = observe.sandbox("11-outlier-write", db)  # pristine posts of the checker's own, never the learner's
    posts, comments = box.db["posts"], box.db["comments"]
    base = dt.datetime(2026, 10, 3, 9, 0)
    posts.insert_many([{"_id": "post:busy", "title": "Busy", "commentCount": 0, "comments": [], "hasOverflow": False},
                       {"_id": "post:quiet", "title": "Quiet", "commentCount": 0, "comments": [],
                        "hasOverflow": False}])
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
        observe.interleaved(
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


@register
def _ex11_predict() -> Exercise:
    return Prediction(
        id="11-predict-deep-page-keys",
        lesson="11_outlier",
        task="Page 50 of the viral post's comments (20 per page, page 1 embedded): how many index keys does its "
             "query examine?",
        checker=None,
        tolerance=0.02,
        explain=lambda n: (f"Measured: {n}. Page 50 is the 49th page of the overflow collection: `skip(48 * 20)` "
                           "walks the {postId, createdAt} index past the 960 keys of pages 2-49, then reads the 20 "
                           "it returns. The documents fetched stay 20 (SKIP sits below FETCH), but the keys grow "
                           "with the page number; a range on createdAt from the last comment shown avoids that."),
        hints=["Which keys does `skip((page - 2) * 20).limit(20)` have to pass before it returns anything?"],
        solution_text="predict_deep.predict(48 * 20 + 20)",
    )


@register
def _ex11() -> Exercise:
    return Exercise(
        id="11-outlier-write",
        lesson="11_outlier",
        task="Write add_comment(posts, comments, post_id, comment): keep the 20 newest embedded, move the rest to "
             "`comments`, maintain commentCount and hasOverflow.",
        checker=_check_outlier_write,
        hints=["`find_one_and_update` with `$push: {comments: {$each: [c], $position: 0, $slice: 20}}` and "
               "`return_document=ReturnDocument.BEFORE` shows the array before the push.",
               "If that array already had 20 comments, its last one fell off: insert it with `postId` and set "
               "`hasOverflow: True`."],
        solution_text=(
            "from pymongo import ReturnDocument\n\n"
            "def add_comment(posts, comments, post_id, comment):\n"
            "    before = posts.find_one_and_update(\n"
            "        {\"_id\": post_id},\n"
            "        {\"$push\": {\"comments\": {\"$each\": [comment], \"$position\": 0, \"$slice\": 20}},\n"
            "         \"$inc\": {\"commentCount\": 1}},\n"
            "        return_document=ReturnDocument.BEFORE)\n"
            "    if len(before.get(\"comments\", [])) == 20:\n"
            "        comments.insert_one(dict(before[\"comments\"][-1], postId=post_id))\n"
            "        posts.update_one({\"_id\": post_id}, {\"$set\": {\"hasOverflow\": True}})\n"
            "\nex.check(db, add_comment)"
        ),
    )
