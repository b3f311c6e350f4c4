"""Storage: mongomock's store classes extended with record ids, maintained indexes and a version counter."""
from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping
from typing import Any

from bson.binary import Binary, UUID_SUBTYPE
from mongomock.store import CollectionStore, DatabaseStore, ServerStore

from ..base import hooks
from ..index.indexes import Index, IndexSpec
from ..bson.keys import encode
from ..repl.oplog import Oplog, oplog_of


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


class DocumentsById(Mapping):
    """mongomock's ``_documents`` map (``_id`` store key -> document) as a view of the record store's two maps,
    ``rid_by_key`` and ``docs``, instead of a third map holding a pointer per document again (issue 19's memory
    per document). Iteration follows ``rid_by_key``: the order in which the documents were recorded, as
    mongomock's ordered dict had it. Replacing the document of an existing key is allowed (it is
    ``docs[rid] = doc``); a new key must be recorded with ``store.put`` (it needs a record id and index
    entries); ``pop`` removes a key from both maps."""

    __slots__ = ("_st",)

    def __init__(self, st: "EngineCollectionStore") -> None:
        self._st = st

    def __getitem__(self, sk: Any) -> dict:
        st = self._st
        return st.docs[st.rid_by_key[sk]]

    def get(self, sk: Any, default: Any = None) -> Any:
        st = self._st
        rid = st.rid_by_key.get(sk)
        return default if rid is None else st.docs[rid]

    def __contains__(self, sk: Any) -> bool:
        return sk in self._st.rid_by_key

    def __len__(self) -> int:
        return len(self._st.rid_by_key)

    def __bool__(self) -> bool:
        return bool(self._st.rid_by_key)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._st.rid_by_key)

    def values(self) -> Iterator[dict]:  # type: ignore[override]
        docs = self._st.docs
        return (docs[rid] for rid in self._st.rid_by_key.values())

    def items(self) -> Iterator[tuple[Any, dict]]:  # type: ignore[override]
        docs = self._st.docs
        return ((sk, docs[rid]) for sk, rid in self._st.rid_by_key.items())

    def __setitem__(self, sk: Any, doc: dict) -> None:
        st = self._st
        rid = st.rid_by_key.get(sk)
        if rid is None:
            raise _internal("a new document must be recorded with its record id (store.put), not by _id alone")
        st.docs[rid] = doc

    def pop(self, sk: Any, *default: Any) -> Any:
        """Forget the document of ``sk`` (both maps); its index entries are the caller's."""
        st = self._st
        rid = st.rid_by_key.pop(sk, None)
        if rid is None:
            if default:
                return default[0]
            raise KeyError(sk)
        return st.docs.pop(rid, None)

    def __delitem__(self, sk: Any) -> None:
        self.pop(sk)

    def __repr__(self) -> str:
        return "DocumentsById(%d documents)" % len(self)


def _internal(msg: str):
    from pymongo.errors import OperationFailure
    return OperationFailure("internal error in the embedded engine's record store: " + msg, 1)


class EngineCollectionStore(CollectionStore):
    """Documents by record id (insertion order = natural order) plus indexes kept in step.

    Two maps per collection: ``docs`` (record id -> document) and ``rid_by_key`` (``_id`` store key -> record
    id); mongomock's ``_documents`` is a view of the two (``DocumentsById``)."""

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
        self.uuid = Binary(uuid.uuid4().bytes, UUID_SUBTYPE)  # a new collection (or a re-created one) has a new UUID

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
    def _documents(self) -> DocumentsById:
        """``_id`` store key -> document (mongomock's map), a view of ``rid_by_key`` and ``docs``."""
        return DocumentsById(self)

    @_documents.setter
    def _documents(self, value: Any) -> None:
        # mongomock's __init__ and drop() assign an empty map: that empties the collection
        if value:
            raise _internal("documents are recorded with store.put, not by assigning _documents")
        self.docs = {}
        self.rid_by_key = {}

    @property
    def is_created(self):
        return bool(self.docs) or bool(self.indexes) or self._is_force_created or len(self.ix) > 1

    def put(self, rid: int, sk: Any, doc: dict) -> None:
        """Record a new document under its record id and ``_id`` store key (the indexes are the caller's)."""
        self.docs[rid] = doc
        self.rid_by_key[sk] = rid

    def user_indexes(self) -> list[Index]:
        return [i for n, i in self.ix.items() if n != "_id_"]


class EngineDatabaseStore(DatabaseStore):
    oplog: Oplog | None = None  # the engine's oplog (repl/oplog.py), set by EngineServerStore

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
            db.oplog = oplog_of(self)
            return db


def document_by_id(st: EngineCollectionStore, _id: Any) -> dict | None:
    """The stored document with this ``_id``, or None (a change stream's updateLookup)."""
    rid = st.rid_by_key.get(store_key(_id))
    return None if rid is None else st.docs.get(rid)


hooks.register("document_by_id", document_by_id)
