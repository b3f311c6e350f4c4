"""Lesson 03 (Resolve references: separate queries or `$lookup`): its exercises and their checkers.

Notebook: ``notebooks/03_lookup.ipynb``.
"""
from __future__ import annotations

from typing import Any, Callable

from labkit.exercises import observe, steps
from labkit.exercises.kinds import BehaviourCheck, Lab, Prediction
from labkit.exercises.outcomes import NotYet
from labkit.exercises.registry import Lesson

LESSON = Lesson(__file__)


def _trims_after_lookup(pipeline: list, field: str) -> str | None:
    """The operator a stage after $lookup uses to cut the joined array ``field`` down, if any."""
    seen = False
    for stage in pipeline:
        if "$lookup" in stage:
            seen = True
            continue
        if not seen:
            continue
        text = repr(stage)
        if f"${field}" in text:
            for op in ("$slice", "$firstN", "$lastN", "$sortArray", "$filter", "$topN", "$maxN"):
                if op in text:
                    return op
    return None


def _lookup_order_mistake(sub: list) -> str | None:
    names = [next(iter(s), "") for s in sub if isinstance(s, dict)]
    if "$limit" in names and "$sort" in names and names.index("$limit") < names.index("$sort"):
        return ("inside the $lookup pipeline `$limit` comes before `$sort`: it keeps 5 reviews in storage order "
                "and only then sorts those 5. Sort first, then limit.")
    if "$limit" in names and "$sort" not in names:
        return ("the $lookup pipeline limits without sorting, so it keeps whichever 5 reviews come first, not the "
                "newest.")
    sort = next((s["$sort"] for s in sub if isinstance(s, dict) and "$sort" in s), None)
    if isinstance(sort, dict) and "createdAt" in sort and "_id" not in sort:
        return ("the sort has no tie-breaker: reviews written at the same minute come back in an order the server "
                "does not promise (it can change with the plan). Add `_id: -1` after `createdAt: -1`.")
    return None


def seed_reviews(db: Any, products: dict[str, int] | None = None, *, seed: int = 3) -> None:
    """Products and their reviews for the product-page join: ``products`` maps a product id to a review count
    (default prod:7 has 400, prod:8 has 3). Reviews are inserted shuffled, every seventh shares its
    ``createdAt`` with the one before (ties an ``_id`` tie-breaker orders), and carry fields the page does not
    show (``userId``, ``helpful``)."""
    import datetime as dt
    import random

    products = products or {"prod:7": 400, "prod:8": 3}
    rng = random.Random(seed)
    base = dt.datetime(2026, 5, 1)
    db.products.insert_many([{"_id": pid, "name": f"Product {pid.split(':')[-1]}", "price": 20 + k}
                             for k, pid in enumerate(products)])
    reviews = []
    for pid, n in products.items():
        for i in range(n):
            j = i - (i % 7 == 3)
            reviews.append({"_id": f"review:{pid.split(':')[-1]}:{i:04d}", "productId": pid,
                            "stars": 1 + rng.randrange(5), "text": f"review {i}",
                            "userId": f"user:{rng.randrange(900)}",
                            "helpful": rng.randrange(40), "createdAt": base + dt.timedelta(minutes=30 * j)})
    rng.shuffle(reviews)
    db.reviews.insert_many(reviews)
    db.reviews.create_index({"productId": 1, "createdAt": -1, "_id": -1})


@LESSON.exercise(BehaviourCheck, "03-product-reviews", fresh=seed_reviews,
                 takes=steps.call("call it with the database and your pipeline: `ex.check(shop, pipeline)`.",
                                  None, None))
def _check_product_reviews(lab: Lab, db: Any, pipeline: Any) -> str:
    if not steps.is_pipeline(pipeline):
        raise NotYet("`pipeline` must be a list of stage documents, e.g. [{\"$match\": ...}, {\"$lookup\": ...}].")
    lookups = [s["$lookup"] for s in pipeline if "$lookup" in s]
    if not lookups or not isinstance(lookups[0], dict):
        raise NotYet("the pipeline has no `$lookup` stage; join the reviews on the server.")
    field = lookups[0].get("as")
    trim = _trims_after_lookup(pipeline, str(field))
    if trim:
        raise NotYet(f"the join reads every review of the product and a later stage cuts `{field}` down with "
                     f"`{trim}`: the documents are still read and carried. Sort, limit and project *inside* the "
                     "$lookup pipeline instead.")
    sub = lookups[0].get("pipeline")
    if isinstance(sub, list):
        order = _lookup_order_mistake(sub)
        if order:
            raise NotYet(order)
    from labkit import ledger

    with lab.sandbox() as box:  # pristine data: prod:7 has 400 reviews
        docs = steps.aggregate(box.db.products, pipeline)
        cost = ledger.measure(box.db, lambda d: list(d.products.aggregate(pipeline)))
        expected = [d["_id"] for d in box.db.reviews.find({"productId": "prod:7"}, {"_id": 1})
                    .sort([("createdAt", -1), ("_id", -1)]).limit(5)]
        oldest = [d["_id"] for d in box.db.reviews.find({"productId": "prod:7"}, {"_id": 1})
                  .sort([("createdAt", 1), ("_id", 1)]).limit(5)]
        others = box.db.reviews.count_documents({"productId": "prod:7"}) - 5
    if len(docs) > 1 and all(isinstance(d, dict) and d.get("_id") == "prod:7" for d in docs):
        raise NotYet(f"the result is {len(docs)} copies of the product: a stage after the join (`$unwind`?) splits "
                     "it into one document per review. The page wants ONE product document holding the reviews.")
    if len(docs) != 1 or docs[0].get("_id") != "prod:7":
        raise NotYet(f"expected exactly the product prod:7; got {len(docs)} document(s). Start with `$match`.")
    joined = docs[0].get("reviews")
    if not isinstance(joined, list):
        raise NotYet(f"the product has no `reviews` array (your join writes `{field}`); name it with `as: "
                     "\"reviews\"`.")
    got = [d.get("_id") for d in joined if isinstance(d, dict)]
    if len(got) > 5:
        raise NotYet(f"`reviews` holds {len(got)} reviews; limit the join to 5 with `$limit` inside its pipeline.")
    if got == list(reversed(expected)):
        raise NotYet("these are the right reviews in the wrong order: newest first is `createdAt: -1`.")
    if got == oldest:
        raise NotYet("these are the product's 5 OLDEST reviews: newest first is `createdAt: -1` (and `_id: -1`).")
    if got[:1] == expected[:1] and got != expected and len(got) == 5:
        raise NotYet("the newest review is right but later ones are not: reviews written at the same minute need "
                     "the tie-breaker `_id: -1` in the sort.")
    if got != expected:
        raise NotYet("`reviews` does not hold the product's 5 newest reviews, newest first (tie-break on "
                     "`_id: -1`); sort inside the $lookup pipeline before `$limit`.")
    extra = sorted({k for d in joined for k in d} - {"_id", "stars", "text"})
    if extra:
        raise NotYet(f"the reviews still carry {extra}; add a `$project` inside the $lookup pipeline that keeps "
                     "`stars` and `text` (and `_id`).")
    if cost.docs_examined > 6:
        raise NotYet(f"the result is right, but the server examined {cost.docs_examined} documents for one product "
                     "and 5 reviews: the join is not stopped by its `$limit`. Sort and limit inside the join, on "
                     "the fields the reviews index starts with.")
    return (f"5 reviews, newest first, three fields each, for {cost.docs_examined} documents examined: the join "
            f"sorted, limited and projected inside the $lookup, so the product's other {others} reviews were never "
            "read.")


LESSON.add(Prediction, "03-predict-bounded-docs")  # counts are exact (issue 25)


def _fresh_comments(db: Any) -> None:
    observe.seed_comments(db, {"post:9": 1500, "post:10": 300})
    db.users.insert_many([{"_id": f"user:{i}", "name": f"Commenter {i}", "bio": "b" * 200} for i in range(1, 500)])
    db.comments.create_index({"postId": 1, "likes": -1, "_id": 1})


@LESSON.exercise(BehaviourCheck, "03-top-comments", fresh=_fresh_comments,
                 takes=steps.call("pass your function itself: `ex2.check(top_comments)` (it takes a post id and "
                                  "returns a pipeline).", callable))
def _check_top_comments(lab: Lab, fn: Callable) -> str:
    from labkit import ledger

    with lab.sandbox() as box:
        for post_id in ("post:9", "post:10"):
            pipeline = lab.call(fn, post_id)
            if not steps.is_pipeline(pipeline):
                raise NotYet("`top_comments(post_id)` must return a pipeline: a list of stage documents.")
            if not any("$lookup" in s for s in pipeline):
                raise NotYet("the pipeline has no `$lookup`: join each comment's commenter from `users` on the "
                             "server.")
            stages = [next(iter(s), "") for s in pipeline]
            if "$limit" in stages and ("$sort" not in stages or stages.index("$limit") < stages.index("$sort")):
                raise NotYet("`$limit` comes before any `$sort`: it keeps 5 comments in whatever order the server "
                             "reads them (here the index happens to give the right ones; another plan would not). "
                             "Sort by likes first, then limit.")
            sort = next((s["$sort"] for s in pipeline if isinstance(s, dict) and isinstance(s.get("$sort"), dict)),
                        None)
            if sort is not None and list(sort) == ["likes"]:
                raise NotYet("the sort has no tie-breaker: many comments share a like count, and among them the "
                             "server returns an order it does not promise (it can change with the plan), so the "
                             "page can show different comments from one run to the next. Add `_id: 1` after "
                             "`likes: -1`.")
            docs = steps.aggregate(box.db.comments, pipeline)
            expected = list(box.db.comments.find({"postId": post_id}).sort([("likes", -1), ("_id", 1)]).limit(5))
            names = {u["_id"]: u["name"] for u in box.db.users.find({}, {"name": 1})}
            got = [d.get("_id") for d in docs]
            want = [c["_id"] for c in expected]
            if len(docs) > 5:
                raise NotYet(f"the pipeline returns {len(docs)} comments for {post_id}; the page shows 5: `$limit`.")
            if set(got) != set(want):
                likes = [d.get("likes") for d in docs]
                raise NotYet(f"for {post_id} these are not the 5 most-liked comments (likes {likes}): `$match` the "
                             "post, `$sort` by `likes: -1` (with `_id: 1` to break ties), then `$limit: 5`.")
            if got != want:
                raise NotYet("the right comments in the wrong order: most liked first, ties broken by `_id: 1`.")
            for doc, comment in zip(docs, expected):
                author = doc.get("author")
                if isinstance(author, list):
                    raise NotYet("`author` is still the array `$lookup` produced; take its one element's name "
                                 "(`{\"$set\": {\"author\": {\"$first\": \"$author.name\"}}}`).")
                if isinstance(author, dict):
                    raise NotYet("`author` is the commenter's whole document; the page needs only the name: "
                                 "`{\"$first\": \"$author.name\"}`.")
                if author != names.get(comment["userId"]):
                    raise NotYet(f"comment {comment['_id']} shows author {author!r}, but its commenter "
                                 f"({comment['userId']}) is {names.get(comment['userId'])!r}: join "
                                 "`localField: \"userId\"` to `foreignField: \"_id\"` and keep the name as `author`.")
                extra = sorted(set(doc) - {"_id", "text", "likes", "author"})
                if extra:
                    raise NotYet(f"the comments still carry {extra}; `$project` only text, likes and author.")
                if doc.get("text") != comment["text"] or doc.get("likes") != comment["likes"]:
                    raise NotYet("keep each comment's `text` and `likes` in the result.")
        cost = ledger.measure(box.db, lambda d: list(d.comments.aggregate(fn("post:9"))))
    if cost.docs_examined > 20:
        raise NotYet(f"the result is right, but the server examined {cost.docs_examined} documents for 5 comments "
                     "on a post with 1,500: the `$lookup` runs before the `$limit` (or the sort cannot use the "
                     "index), so every comment is joined. Sort and limit first; join only the 5 that are shown.")
    return (f"5 comments, most liked first, each with its commenter's name, for {cost.docs_examined} documents "
            "examined: the join ran only for the comments on the page.")


