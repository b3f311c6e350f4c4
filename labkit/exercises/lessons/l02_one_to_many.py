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


def _no_partial_that_cannot_serve(coll: Any, field: str, what: str) -> None:
    """After a COLLSCAN: name a partial index that starts with ``field`` but that the query cannot use (its
    filter is not implied by the query's, manual "Partial Indexes"), instead of saying no index starts with it."""
    partial = [spec["name"] for spec in coll.list_indexes()
               if list(spec["key"])[:1] == [field] and "partialFilterExpression" in spec]
    if partial:
        raise NotYet(f"`{partial[0]}` starts with `{field}`, but it is partial: it holds only the {what} its filter "
                     "names, and the query's filter does not imply that one, so the server cannot answer from it "
                     f"and reads every one of the {what} (COLLSCAN). Index them all, or use a filter the query "
                     "implies.")


def seed_orders(db: Any, customers: dict[str, int] | None = None, *, seed: int = 9) -> None:
    """Orders for the "my orders" exercise: ``customers`` maps a customer id to an order count (default: cust:7
    has 300, cust:8 120, cust:9 40). Inserted shuffled, every customer's orders spread over the same months (so
    an index that does not start with ``customerId`` must skip other customers' keys), and every seventh order
    shares its ``placedAt`` with the one before (ties that only an ``_id`` tie-breaker orders)."""
    import datetime as dt
    import random

    from bson.decimal128 import Decimal128

    customers = customers or {"cust:7": 300, "cust:8": 120, "cust:9": 40}
    rng = random.Random(seed)
    base = dt.datetime(2026, 3, 1)
    orders = []
    for k, (cid, n) in enumerate(customers.items()):
        for i in range(n):
            j = i - (i % 7 == 3)
            orders.append({"_id": f"order:{cid.split(':')[-1]}:{i:04d}", "customerId": cid,
                           "placedAt": base + dt.timedelta(hours=k + (j * 2000) // max(n, 1)),
                           "status": rng.choice(["open", "shipped", "delivered"]),
                           "total": Decimal128(f"{rng.randint(300, 20000) / 100:.2f}")})
    rng.shuffle(orders)
    db.orders.insert_many(orders)


ORDERS_QUERY = {"customerId": "cust:7"}
ORDERS_SORT = [("placedAt", -1), ("_id", -1)]


@LESSON.exercise(StateCheck, "02-orders-index", takes=steps.collection("practice.orders"))
def _check_orders_index(lab: Lab, orders: Any) -> str:
    # The learner's indexes, judged on orders of the checker's own (cust:7 has 300, inserted out of order,
    # with ties on placedAt), never on the learner's data.
    with lab.sandbox(fresh=seed_orders, indexes={"orders": orders}) as box:
        cursor = box.db.orders.find(ORDERS_QUERY, {"placedAt": 1, "status": 1, "total": 1})
        figures = observe.plan_figures(cursor.sort(ORDERS_SORT).limit(20).explain())
        got = [d["_id"] for d in box.db.orders.find(ORDERS_QUERY, {"_id": 1}).sort(ORDERS_SORT).limit(20)]
        want = [d["_id"] for d in sorted(box.db.orders.find(ORDERS_QUERY, {"placedAt": 1}),
                                         key=lambda d: (d["placedAt"], d["_id"]), reverse=True)[:20]]
        redundant = observe.redundant_prefixes(box.db.orders)
    if figures.collscan:
        _no_partial_that_cannot_serve(orders, "customerId", "orders")
        raise NotYet("the query still reads every order (COLLSCAN): no index starts with `customerId`.")
    ix = figures.index
    if figures.blocking_sort:
        if ix and list(ix)[:2] == ["customerId", "placedAt"] and "_id" not in ix:
            raise NotYet(f"{ix} orders a customer's orders by `placedAt` only: orders placed at the same time "
                         "still have to be sorted by `_id`, so the server sorts in memory (blocking SORT). Add "
                         "`_id` after `placedAt`, in the same direction.")
        if ix and list(ix)[:1] == ["customerId"] and "placedAt" in ix:
            directions = [ix[f] for f in ("placedAt", "_id") if f in ix]
            raise NotYet(f"the plan uses {ix} but still has a blocking SORT: an index serves the sort "
                         "`placedAt: -1, _id: -1` only when it lists those fields right after `customerId` in "
                         "that order, with every direction as in the sort or every one reversed"
                         f"{' (yours mixes ' + str(directions) + ')' if len(set(directions)) > 1 else ''}.")
        raise NotYet(f"the plan uses {ix} but still has a blocking SORT stage: after the equality field "
                     "`customerId` the index must list the sort fields, `placedAt` then `_id`.")
    if figures.keys_examined > 20:
        raise NotYet(f"no blocking sort, but {figures.keys_examined} keys examined for 20 orders with {ix}: the "
                     "index gives the sort order, but the scan walks other customers' orders too. Put the equality "
                     "field `customerId` first.")
    if got != want:
        raise NotYet("the 20 orders come back in an order that differs from newest first with `_id` breaking ties: "
                     "include `_id` in the index after `placedAt`, in the same direction.")
    _nothing_hidden_or_redundant(
        figures.returned, redundant,
        hidden=f"the query returned {figures.returned} orders on a collection where cust:7 has 300; a partial or "
               "sparse index must not hide orders from the page.",
        prefix="the query is served, but `{short}` is a prefix of `{long}`: the compound index already answers "
               "queries on its first fields, so the extra index only slows every new order. Drop it: "
               '`practice.orders.drop_index("{short}")`.')
    return (f"{ix}: {figures.keys_examined} keys and {figures.docs_examined} orders examined for "
            f"{figures.returned} returned, newest first, no blocking SORT: Equality first, then the sort.")


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
        _no_partial_that_cannot_serve(comments, "postId", "comments")
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


