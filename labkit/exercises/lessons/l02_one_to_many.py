"""Lesson 02 (One-to-many: reference the parent from the child): its exercises and their checkers.

Notebook: ``notebooks/02_one_to_many.ipynb``.
"""
from __future__ import annotations

from typing import Any

from labkit.exercises import observe, steps
from labkit.exercises.kinds import Lab, Prediction, StateCheck
from labkit.exercises.outcomes import NotYet
from labkit.exercises.registry import Lesson

LESSON = Lesson(__file__)


def _nothing_hidden_or_redundant(returned: int, redundant: list, *, hidden: str, prefix: str) -> None:
    """The last mistakes of both index exercises: a partial or sparse index that hides some of the 20 results
    (``hidden``), and an index that the compound one makes redundant (``prefix``, with ``{short}`` and
    ``{long}``, the two index names)."""
    if returned != 20:
        raise NotYet(hidden)
    for short, long_ in redundant:
        raise NotYet(prefix.format(short=short, long=long_))


def _fresh_posts(db: Any) -> None:
    """Sam (user:112) has 300 posts, inserted out of order."""
    observe.seed_posts(db, {"user:112": 300, "user:234": 120, "user:345": 40})


@LESSON.exercise(StateCheck, "02-feed-index", takes=steps.collection("posts"))
def _check_feed_index(lab: Lab, posts: Any) -> str:
    # The learner's indexes, judged on pristine posts, never on the learner's own data, which an earlier cell
    # may have changed.
    with lab.sandbox(fresh=_fresh_posts, indexes={"posts": posts}) as box:
        cursor = box.db.posts.find({"authorId": "user:112"}, {"title": 1, "location": 1, "createdAt": 1})
        figures = observe.plan_figures(cursor.sort([("createdAt", -1), ("_id", -1)]).limit(20).explain())
        redundant = observe.redundant_prefixes(box.db.posts)
    if figures.collscan:
        raise NotYet("the feed still reads the whole collection (COLLSCAN): no index starts with `authorId`.")
    ix = figures.index
    if figures.blocking_sort:
        if ix and list(ix.items())[:2] == [("authorId", 1), ("createdAt", 1)]:
            raise NotYet(f"the plan still has a blocking SORT: {ix} cannot serve a sort on createdAt -1 then _id -1: an index serves a sort only when "
                         "every direction matches the sort, or every one is reversed. Use "
                         "{authorId: 1, createdAt: -1, _id: -1}.")
        raise NotYet(f"the plan uses {ix} but still has a blocking SORT stage: after `authorId` the index must "
                     "list the sort fields in the sort's order and directions (createdAt -1, then _id -1), "
                     "or exactly the reverse of all of them.")
    if figures.keys_examined > 20:
        raise NotYet(f"no blocking sort, but {figures.keys_examined} keys examined for 20 posts with {ix}: "
                     "put the equality field `authorId` first so the scan starts at Sam's newest post.")
    _nothing_hidden_or_redundant(
        figures.returned, redundant,
        hidden=f"the feed returned {figures.returned} posts on a collection where Sam has 300; a partial or sparse "
               "index must not hide posts from the feed.",
        prefix="the feed is served, but `{short}` is a prefix of `{long}`: the compound index already answers "
               "queries on `authorId` alone, so the extra index only slows every write. Drop it: "
               '`posts.drop_index("{short}")`.')
    return (f"IXSCAN with {figures.keys_examined} keys and {figures.docs_examined} documents for "
            f"{figures.returned} posts, no blocking SORT, and no index that another one makes redundant.")


LESSON.add(Prediction, "02-predict-feed-keys")


COMMENT_QUERY = {"postId": "post:9", "likes": {"$gte": 10}}


def _fresh_comments(db: Any) -> None:
    observe.seed_comments(db, {"post:9": 1500, "post:10": 600, "post:11": 300})


@LESSON.exercise(StateCheck, "02-comment-index",
                 takes=steps.collection("practice.comments"))
def _check_comment_index(lab: Lab, comments: Any) -> str:
    with lab.sandbox(fresh=_fresh_comments, indexes={"comments": comments}) as box:
        cursor = box.db.comments.find(COMMENT_QUERY, {"text": 1, "likes": 1, "createdAt": 1})
        fig = observe.plan_figures(cursor.sort("createdAt", 1).limit(20).explain())
        redundant = observe.redundant_prefixes(box.db.comments)
    ix = fig.index
    if fig.collscan:
        raise NotYet("the query still reads every comment (COLLSCAN): no index starts with `postId`.")
    if fig.blocking_sort:
        if ix and "likes" in ix and "createdAt" in ix and list(ix).index("likes") < list(ix).index("createdAt"):
            raise NotYet(f"{ix} puts the range (`likes`) before the sort field (`createdAt`): the keys come out "
                         "ordered by likes first, so the server sorts every matching comment in memory (blocking "
                         "SORT). Equality, Sort, Range: {postId: 1, createdAt: 1, likes: 1}.")
        raise NotYet(f"the plan uses {ix} but still has a blocking SORT: after `postId` the index must continue "
                     "with `createdAt`, the sort field.")
    if ix and next(iter(ix)) != "postId":
        raise NotYet(f"no blocking sort, but {ix} does not start with the equality field `postId`: the scan "
                     f"walks other posts' comments ({fig.keys_examined} keys for {fig.returned} comments).")
    if fig.docs_examined > fig.returned:
        raise NotYet(f"{fig.docs_examined} comments fetched for {fig.returned} returned: {ix} cannot check "
                     "`likes >= 10` on its keys, so every comment below 10 likes is fetched and thrown away. Add "
                     "`likes` after the sort field: {postId: 1, createdAt: 1, likes: 1}.")
    _nothing_hidden_or_redundant(
        fig.returned, redundant,
        hidden=f"the query returned {fig.returned} comments instead of 20; a partial or sparse index must not hide "
               "comments.",
        prefix="the query is served, but `{short}` is a prefix of `{long}`: the compound index already serves "
               "queries on its first fields, and the extra one slows every new comment. Drop it: "
               '`practice.comments.drop_index("{short}")`.')
    return (f"{ix}: no blocking SORT, {fig.keys_examined} keys and {fig.docs_examined} comments examined for "
            f"{fig.returned} returned; the likes range is checked on the index keys (Equality, Sort, Range).")


