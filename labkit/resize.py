"""Grow or shrink one generated account in place, so a slider measures the account it asks for.

A widget that "picks the generated account closest to the slider" has dead zones where nothing changes;
instead the lesson keeps one account whose children (posts, follow edges, ...) are numbered in their ``_id``
(``prefix`` + six digits) and adds or deletes only the difference between what it has and what the slider
asks for. Both steps are range operations on the ``_id`` index."""
from __future__ import annotations

from typing import Any, Callable

_END = "\uffff"


def resize_children(collection: Any, prefix: str, n: int, make: Callable[[int], dict]) -> int:
    """Make ``collection`` hold exactly ``n`` documents whose ``_id`` is ``prefix`` + a six-digit number.

    ``make(i)`` builds the ``i``-th document (without ``_id``; it is set here). Numbers run 0..n-1: growing
    inserts the missing tail, shrinking deletes it. Returns how many documents changed (inserted + deleted)."""
    if not isinstance(n, int) or isinstance(n, bool) or not 0 <= n < 1_000_000:
        raise ValueError(f"n must be a whole number from 0 to 999,999, got {n!r}")
    span = {"_id": {"$gte": prefix, "$lt": prefix + _END}}
    have = collection.count_documents(span)
    if have < n:
        collection.insert_many([dict(make(i), _id=f"{prefix}{i:06d}") for i in range(have, n)])
        return n - have
    if have > n:
        return collection.delete_many({"_id": {"$gte": f"{prefix}{n:06d}", "$lt": prefix + _END}}).deleted_count
    return 0
