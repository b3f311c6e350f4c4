"""Storage: mongomock's store classes extended with record ids, maintained indexes and a version counter."""
from __future__ import annotations

import collections
from typing import Any

from mongomock.store import CollectionStore, DatabaseStore, ServerStore

from .indexes import Index, IndexSpec
from .keys import encode


class _BoolId(tuple):
    """Store key of a boolean ``_id``: BSON's true and 1 are different values (both may be stored), but
    Python's ``True == 1`` would make them one dictionary key."""


class _DocId(tuple):
    """Store key of an embedded-document ``_id``: its BSON key string, so field order matters as on the server
    (``{a: 1, b: 2}`` and ``{b: 2, a: 1}`` are different ``_id``s) and numbers compare across types."""


def store_key(_id: Any) -> Any:
    """The dictionary key for an ``_id`` (booleans kept apart from 0 and 1; documents by their BSON key)."""
    if type(_id) is bool:
        return _BoolId(("bool", _id))
    if isinstance(_id, dict):
        return _DocId(("doc", encode(_id)))
    return _id


class EngineCollectionStore(CollectionStore):
    """Documents by record id (insertion order = natural order) plus indexes kept in step."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self._reset_engine()

    def _reset_engine(self) -> None:
        self.docs: dict[int, dict] = {}
        self.rid_by_key: dict[Any, int] = {}
        self.next_rid = 1
        self.ix: dict[str, Index] = {"_id_": Index(IndexSpec("_id_", [("_id", 1)], unique=True))}
        self.version = 0
        self.options: dict[str, Any] = {}

    incarnation = 0  # bumped by every drop: a transaction's snapshot of an older incarnation cannot commit

    def drop(self) -> None:
        super().drop()
        self._reset_engine()
        self.incarnation += 1

    def _remove_expired_documents(self) -> None:
        # TTL indexes are accepted and shown, but (as with a server between TTL-monitor passes) expiry
        # is not simulated: removing documents behind the indexes' back would corrupt them.
        return

    @property
    def is_created(self):
        return bool(self._documents) or bool(self.indexes) or self._is_force_created or len(self.ix) > 1

    def put(self, rid: int, sk: Any, doc: dict) -> None:
        """Record a new document under its record id and ``_id`` store key (the indexes are the caller's)."""
        self.docs[rid] = doc
        self.rid_by_key[sk] = rid
        self._documents[sk] = doc

    def user_indexes(self) -> list[Index]:
        return [i for n, i in self.ix.items() if n != "_id_"]


class EngineDatabaseStore(DatabaseStore):
    # Bumped by every dropDatabase: anything tied to "this database" (labkit's fresh_db mark) records the
    # incarnation it saw and is void once the database has been dropped, like a marker collection on a server.
    incarnation = 0

    def __getitem__(self, col_name: str) -> EngineCollectionStore:
        try:
            return self._collections[col_name]
        except KeyError:
            col = self._collections[col_name] = EngineCollectionStore(col_name)
            return col

    def rename(self, name: str, new_name: str) -> None:
        col = self._collections.pop(name, EngineCollectionStore(new_name))
        col.name = new_name
        self._collections[new_name] = col


class EngineServerStore(ServerStore):
    def __getitem__(self, db_name: str) -> EngineDatabaseStore:
        try:
            return self._databases[db_name]
        except KeyError:
            db = self._databases[db_name] = EngineDatabaseStore()
            return db
