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
from ..session.history import history_of
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
        if st.rec is not None:
            st.rec.note(st, rid, st.docs.get(rid), doc)
        st.docs[rid] = doc

    def pop(self, sk: Any, *default: Any) -> Any:
        """Forget the document of ``sk`` (both maps); its index entries are the caller's."""
        st = self._st
        rid = st.rid_by_key.get(sk)
        if rid is None:
            if default:
                return default[0]
            raise KeyError(sk)
        if st.rec is not None:
            st.rec.note(st, rid, st.docs.get(rid), None)
        del st.rid_by_key[sk]
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
    id); mongomock's ``_documents`` is a view of the two (``DocumentsById``).

    ``rec`` is told of every change before it is made (``rec.note(store, rid, old, new)``): for a live
    collection the engine's history (session/history.py: point-in-time reads, waiting for transactions), for a
    transaction's private copy the transaction (sessions.py). ``held``/``held_keys``: the ``_id`` keys and
    unique index keys open transactions have written (a write outside them waits); ``last_write``: the cluster
    time the collection was last written after."""

    rec: Any = None
    held: dict | None = None
    held_keys: dict | None = None
    last_write: Any = None

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

    def writing_transaction(self) -> Any:
        """An open transaction that has written to this collection (it holds one of its documents or unique
        keys), else None."""
        for held in (self.held, self.held_keys):
            if held:
                for txn in held.values():
                    if txn.holding():
                        return txn
        return None

    def wait_for_writers(self) -> None:
        """DDL that needs the collection to itself (drop, renameCollection, dropDatabase: an exclusive collection
        lock on a server) waits for an open transaction that has written to it: the transaction holds its
        collection lock until it commits or aborts (manual "Production Considerations", "Pending DDL Operations
        and Transactions"). Raised as ``WaitForTransaction`` for the operation boundary, which waits (or fails
        with MaxTimeMSExpired) and runs the operation again; outside an operation nothing waits."""
        txn = self.writing_transaction()
        if txn is None:
            return
        from ..service.boundary import WaitForTransaction, current_op
        op = current_op()
        if op is not None and getattr(op, "hist", None) is not None:
            raise WaitForTransaction(txn)

    def drop(self) -> None:
        self.wait_for_writers()
        if self.rec is not None:
            self.rec.note_drop(self)
        super().drop()
        self._reset_engine()
        self.held = self.held_keys = None  # a transaction that wrote to the dropped collection cannot commit
        self.incarnation += 1

    def key_of(self, doc: dict) -> Any:
        """The ``_id`` store key of a document."""
        return store_key(doc["_id"])

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
        rec = self.rec
        if rec is not None:
            rec.note(self, rid, None, doc)
        self.docs[rid] = doc
        self.rid_by_key[sk] = rid

    def user_indexes(self) -> list[Index]:
        return [i for n, i in self.ix.items() if n != "_id_"]


class EngineDatabaseStore(DatabaseStore):
    history: Any = None  # the engine's history (session/history.py), given by EngineServerStore
    oplog: Oplog | None = None  # the engine's oplog (repl/oplog.py), set by EngineServerStore

    # Bumped by every dropDatabase: anything tied to "this database" (labkit's fresh_db mark) records the
    # incarnation it saw and is void once the database has been dropped, like a marker collection on a server.
    incarnation = 0

    def __getitem__(self, col_name: str) -> EngineCollectionStore:
        try:
            return self._collections[col_name]
        except KeyError:
            col = self._collections[col_name] = EngineCollectionStore(col_name)
            col.rec = self.history
            return col

    def rename(self, name: str, new_name: str) -> None:
        col = self._collections.pop(name, None)
        if col is None:
            col = EngineCollectionStore(new_name)
            col.rec = self.history
        col.name = new_name
        self._collections[new_name] = col


class EngineServerStore(ServerStore):
    def __getitem__(self, db_name: str) -> EngineDatabaseStore:
        try:
            return self._databases[db_name]
        except KeyError:
            db = self._databases[db_name] = EngineDatabaseStore()
            db.history = history_of(self)
            db.oplog = oplog_of(self)
            return db


def document_by_id(st: EngineCollectionStore, _id: Any) -> dict | None:
    """The stored document with this ``_id``, or None (a change stream's updateLookup)."""
    rid = st.rid_by_key.get(store_key(_id))
    return None if rid is None else st.docs.get(rid)


hooks.register("document_by_id", document_by_id)
