"""Lesson 02 (One-to-many: reference the parent from the child): its exercises and their checkers.

Notebook: ``notebooks/02_one_to_many.ipynb``.
"""
from __future__ import annotations

from typing import Any

from labkit.exercises import observe
from labkit.exercises.kinds import Prediction
from labkit.exercises.outcomes import NotYet
from labkit.exercises.problem import Exercise
from labkit.exercises.registry import register


def _check_feed_index(posts: Any) -> str:
    if not _is_collection(posts):
        raise NotYet(f"pass the collection (`posts`), not {type(posts).__name__}.")
    # The learner's indexes, judged on pristine posts (Sam has 300, inserted out of order), never on the
    # learner's own data, which an earlier cell may have changed.
    with observe.sandbox("02-feed-index", posts) as box:
        observe.seed_posts(box.db, {"user:112": 300, "user:234": 120, "user:345": 40})
        observe.copy_indexes(posts, box.db.posts)
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
    if figures.returned != 20:
        raise NotYet(f"the feed returned {figures.returned} posts on a collection where Sam has 300; "
                     "a partial or sparse index must not hide posts from the feed.")
    for short, long_ in redundant:
        raise NotYet(f"the feed is served, but `{short}` is a prefix of `{long_}`: the compound index already "
                         f"answers queries on `authorId` alone, so the extra index only slows every write. "
                         f"Drop it: `posts.drop_index(\"{short}\")`.")
    return (f"IXSCAN with {figures.keys_examined} keys and {figures.docs_examined} documents for "
            f"{figures.returned} posts, no blocking SORT, and no index that another one makes redundant.")


@register
def _ex02() -> Exercise:
    return Exercise(
        id="02-feed-index",
        lesson="02_one_to_many",
        task="Create the index that serves Sam's newest-20 feed without a blocking SORT, reading at most 20 keys.",
        checker=_check_feed_index,
        hints=["Equality field first, then the sort fields in the same order and directions as the sort.",
               "The sort is `createdAt: -1, _id: -1` and the filter is on `authorId`."],
        solution_text='posts.create_index({"authorId": 1, "createdAt": -1, "_id": -1})\nex.check(posts)',
    )


def _is_collection(obj: Any) -> bool:
    """A pymongo (or embedded) collection; a database answers every attribute with a sub-collection."""
    import mongomock
    import pymongo.collection

    return isinstance(obj, (pymongo.collection.Collection, mongomock.Collection))


def _explain_feed_keys(measured: Any) -> str:
    return (f"The index hands Sam's posts back already newest first, so the scan stops at the limit: {measured} "
            "keys for 20 posts, however long his history is. Without the index the server reads every post and "
            "sorts Sam's in memory.")


@register
def _ex02_predict() -> Exercise:
    return Prediction(
        id="02-predict-feed-keys",
        lesson="02_one_to_many",
        task="Predict: with {authorId: 1, createdAt: -1, _id: -1}, how many index keys does Sam's newest-20 feed "
             "examine? (Sam has thousands of posts.)",
        checker=None,
        hints=["An index that matches the filter and the sort returns documents in order; the limit stops it."],
        solution_text="ex_keys.predict(20)",
        explain=_explain_feed_keys,
    )


COMMENT_QUERY = {"postId": "post:9", "likes": {"$gte": 10}}


def _check_comment_index(comments: Any) -> str:
    if not _is_collection(comments):
        raise NotYet(f"pass the collection (`practice.comments`), not {type(comments).__name__}.")
    with observe.sandbox("02-comment-index", comments) as box:
        observe.seed_comments(box.db, {"post:9": 1500, "post:10": 600, "post:11": 300})
        observe.copy_indexes(comments, box.db.comments)
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
    if fig.returned != 20:
        raise NotYet(f"the query returned {fig.returned} comments instead of 20; a partial or sparse index must not "
                     "hide comments.")
    for short, long_ in redundant:
        raise NotYet(f"the query is served, but `{short}` is a prefix of `{long_}`: the compound index already "
                     f"serves queries on its first fields, and the extra one slows every new comment. Drop it: "
                     f"`practice.comments.drop_index(\"{short}\")`.")
    return (f"{ix}: no blocking SORT, {fig.keys_examined} keys and {fig.docs_examined} comments examined for "
            f"{fig.returned} returned; the likes range is checked on the index keys (Equality, Sort, Range).")


@register
def _ex02b() -> Exercise:
    return Exercise(
        id="02-comment-index",
        lesson="02_one_to_many",
        task="Comments reference their post (`postId`). Index them for 'the first 20 comments of a post with at "
             "least 10 likes, oldest first': no blocking SORT and no comment fetched only to be thrown away.",
        checker=_check_comment_index,
        hints=["`postId` is the equality, `createdAt` the sort, `likes >= 10` the range.",
               "Equality, Sort, Range: {postId: 1, createdAt: 1, likes: 1}."],
        solution_text='practice.comments.create_index({"postId": 1, "createdAt": 1, "likes": 1})\n'
                      'ex2.check(practice.comments)',
    )
