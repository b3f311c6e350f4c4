"""The live-demo dashboard's computations (``notebooks/demo_dashboard.ipynb``, ``python3 dev.py demo``).

They live here, not in the notebook, so that INSTRUCTOR.md's presenter script (``tools/gen_docs.py``) quotes the
figures the dashboard computes (where the 16 MiB wall falls, what a document weighs at the starting slider
position) instead of rounded numbers typed by hand.
"""
from __future__ import annotations

from typing import Any

import bson

from labkit.sizes import MAX_BSON_SIZE, doc_size_with_array, max_elements

#: the dashboard's dataset: labkit.seed.social(db, users=USERS, seed=SEED, celebrity_posts=CELEBRITY_POSTS, ...)
USERS = 2000
SEED = 2
CELEBRITY_POSTS = 5000
#: the slider of panel 1: posts by the busiest author (min, max, start, step)
POSTS_SLIDER = (0, 200_000, 20_000, 1_000)
#: the feed query of panel 2 returns this many posts
FEED_LIMIT = 20


def sam() -> dict:
    """The canonical Sam (``user:112``), the author whose document grows in panel 1."""
    from labkit.seed import load_canonical

    return next(u for u in load_canonical()["users"] if u["_id"] == "user:112")


def embedded_post(user: dict, i: int) -> dict:
    """Post ``i`` as embedded in its author's document (panel 1)."""
    return {"_id": f"post:{i}", "title": "need a break?", "location": "Sacramento", "createdAt": user["createdAt"]}


def post_id(i: int) -> str:
    """Post ``i``'s id, as kept in the author's ``postIds`` array (panel 1)."""
    return f"post:{i}"


def walls(user: dict) -> dict[str, int]:
    """The first post count at which the author's document passes 16 MiB, embedding posts or keeping their ids
    (computed from BSON sizes with :func:`labkit.sizes.max_elements`)."""
    return {"embedded": max_elements(user, "posts", lambda i: embedded_post(user, i)) + 1,
            "ids": max_elements(user, "postIds", post_id) + 1}


def parent_growth(user: dict, posts: int, wall: dict[str, int] | None = None) -> dict[str, Any]:
    """Panel 1's readout for ``posts`` posts: the user document's size with ``postIds``, with embedded posts,
    and with child references (the user alone), and the takeaway line computed from them."""
    wall = wall or walls(user)
    ids = doc_size_with_array(user, "postIds", posts, post_id)
    embedded = doc_size_with_array(user, "posts", posts, lambda i: embedded_post(user, i))
    child = len(bson.encode(user))
    return {"posts by the author": posts, "user with postIds (bytes)": ids,
            "user with embedded posts (bytes)": embedded, "user, child references (bytes)": child,
            "takeaway": growth_takeaway(posts, embedded, ids, child, wall)}


def growth_takeaway(posts: int, embedded: int, ids: int, child: int, wall: dict[str, int]) -> str:
    """What to say about panel 1's numbers."""
    if embedded > MAX_BSON_SIZE:
        return (f"at {posts:,} embedded posts the user document is {embedded / 2**20:.1f} MiB, past the 16 MiB "
                f"limit (crossed at {wall['embedded']:,} posts): every write to this user fails")
    if ids > MAX_BSON_SIZE:
        return f"even ids alone cross 16 MiB at {wall['ids']:,} posts; only child references stay at {child:,} bytes"
    return (f"at {posts:,} posts embedding uses {embedded / MAX_BSON_SIZE:.1%} of 16 MiB (crossed at "
            f"{wall['embedded']:,} posts); child references stay at {child:,} bytes whatever the count")


def presenter_figures() -> dict[str, Any]:
    """The figures INSTRUCTOR.md's presenter script quotes, computed as the dashboard computes them."""
    user = sam()
    wall = walls(user)
    start = POSTS_SLIDER[2]
    at_start = parent_growth(user, start, wall)
    step = POSTS_SLIDER[3]
    past = -(-wall["embedded"] // step) * step  # the first slider position past the wall
    return {"start": start, "wall_embedded": wall["embedded"], "wall_ids": wall["ids"], "past_wall": past,
            "slider_max": POSTS_SLIDER[1],
            "embedded_share": at_start["user with embedded posts (bytes)"] / MAX_BSON_SIZE,
            "ids_share": at_start["user with postIds (bytes)"] / MAX_BSON_SIZE,
            "child_bytes": at_start["user, child references (bytes)"],
            "celebrity_posts": CELEBRITY_POSTS, "feed_limit": FEED_LIMIT}
