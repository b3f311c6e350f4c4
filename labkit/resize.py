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


class AccountLadder:
    """Accounts pre-built at every ``rung`` children (0, rung, 2*rung, ... up to ``maximum``), so that any
    count ``n`` the slider asks for is the nearest rung account grown or shrunk by at most ``rung / 2``
    children (and the previous one restored): each slider update writes at most about one rung's worth of
    documents, however far the slider jumps.

    ``make(account, i)`` builds the ``i``-th child of ``account`` (without ``_id``); children are numbered in
    their ``_id`` as ``id_prefix + account + "/" + six digits``. ``account_for(n)`` returns an account that has exactly
    ``n`` children (the previously extended account is shrunk back to its rung first)."""

    def __init__(self, collection: Any, account_prefix: str, maximum: int, rung: int,
                 make: Callable[[str, int], dict], id_prefix: str = "") -> None:
        if not (isinstance(rung, int) and rung > 0 and isinstance(maximum, int) and maximum >= 0):
            raise ValueError(f"need a positive rung and a maximum >= 0, got rung={rung!r}, maximum={maximum!r}")
        self.collection, self.prefix, self.maximum, self.rung, self.make = (collection, account_prefix, maximum,
                                                                              rung, make)
        self.id_prefix = id_prefix
        self.accounts = [f"{account_prefix}{level}" for level in range(0, maximum + 1, rung)]
        for account in self.accounts:
            self._resize(account, self._level(account))
        self._extended: str | None = None

    def _level(self, account: str) -> int:
        return int(account[len(self.prefix):])

    def _resize(self, account: str, n: int) -> int:
        return resize_children(self.collection, f"{self.id_prefix}{account}/", n, lambda i: self.make(account, i))

    def account_for(self, n: int) -> str:
        """An account with exactly ``n`` children (0 <= n <= maximum)."""
        if not isinstance(n, int) or isinstance(n, bool) or not 0 <= n <= self.maximum:
            raise ValueError(f"n must be a whole number from 0 to {self.maximum}, got {n!r}")
        nearest = min(range(len(self.accounts)), key=lambda k: (abs(k * self.rung - n), k))
        account = self.accounts[nearest]
        if self._extended is not None and self._extended != account:
            self._resize(self._extended, self._level(self._extended))
        self._resize(account, n)
        self._extended = account
        return account
