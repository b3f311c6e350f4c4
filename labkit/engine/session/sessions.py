"""Client sessions and multi-document transactions for the embedded engine.

Model (deliberately simple, see docs/embedded-engine.md):

* ``client.start_session()`` returns an ``EmbeddedSession`` with pymongo's API: ``start_transaction()``
  (also as a context manager), ``commit_transaction()``, ``abort_transaction()``, ``with_transaction()``,
  ``in_transaction``, ``end_session()`` and the ``with`` form.
* Every engine call made with ``session=`` runs with that session bound (a context variable). While the
  session has a transaction in progress, ``EmbeddedCollection._store`` resolves each collection the call
  touches to the transaction's *shadow*: a copy of the live store (documents and every index) taken the
  first time the transaction touches that collection (its snapshot). Reads and writes made with the
  session go to the shadows; calls without the session keep using the live stores, so nobody else sees
  the transaction's writes.
* ``commit_transaction()`` merges, collection by collection, the documents the transaction inserted,
  changed or deleted into a copy of the live store (index maintenance and unique checks included) and
  swaps the copies in only when every collection merged cleanly. If a document the transaction changed
  was also changed outside the transaction since the snapshot, or a unique index would be violated,
  nothing is applied and OperationFailure 112 (WriteConflict, label ``TransientTransactionError``) is
  raised; the transaction is then aborted.
* ``abort_transaction()`` (or an exception leaving ``with session.start_transaction():``) just drops the
  shadows. As on the server, a command that fails inside a transaction aborts the transaction; a later
  commit raises NoSuchTransaction (251, ``TransientTransactionError``).
* DDL (create/drop indexes, drop collection) inside a transaction is refused with code 263
  (OperationNotSupportedInTransaction).

A standalone ``mongod`` refuses transactions (they need a replica set); the embedded engine accepts them so
that the lessons' transaction examples run without a server.
"""
from __future__ import annotations

import contextlib
import contextvars
import copy
import itertools
import time
import weakref
import uuid
from typing import Any, Callable

from bson.binary import Binary, UUID_SUBTYPE
from pymongo.errors import InvalidOperation, OperationFailure, PyMongoError

from ..service.boundary import SESSION_OPERATIONS, aborts_transaction, guard
from ..base import hooks
from ..repl.oplog import oplog_of

_ACTIVE: contextvars.ContextVar["Transaction | None"] = contextvars.ContextVar("labkit_txn", default=None)

WITH_TRANSACTION_TIME_LIMIT = 120.0  # seconds, pymongo's _WITH_TRANSACTION_RETRY_TIME_LIMIT
WITH_TRANSACTION_MAX_ATTEMPTS = 10   # the embedded engine also caps attempts (no other client can fix a conflict)

WRITE_CONFLICT = 112
NO_SUCH_TRANSACTION = 251
NOT_SUPPORTED_IN_TRANSACTION = 263


def current() -> "Transaction | None":
    return _ACTIVE.get()


def resolve_store(db_store, name: str, live):
    """The store a collection access should use: the active transaction's shadow, else ``live``."""
    txn = _ACTIVE.get()
    if txn is None:
        return live
    return txn.store_for(db_store, name, live)


# ---------------------------------------------------------------------------------------------- copies
def copy_index(ix):
    new = copy.copy(ix)
    new.entries = ix.entries.copy()
    new.multikey_paths = {f: set(s) for f, s in ix.multikey_paths.items()}
    return new


def copy_store(st):
    """A copy of a collection store that shares the (never mutated in place) document objects."""
    new = copy.copy(st)
    new.docs = dict(st.docs)
    new.rid_by_key = dict(st.rid_by_key)
    new.ix = {n: copy_index(ix) for n, ix in st.ix.items()}
    new.indexes = dict(st.indexes)
    return new


class _Shadow:
    __slots__ = ("live", "snap", "store", "name", "db_store", "incarnation")

    def __init__(self, db_store, name, live) -> None:
        self.db_store = db_store
        self.name = name
        self.live = live
        self.incarnation = getattr(live, "incarnation", 0)  # a drop (or drop + re-create) outside changes it
        self.snap = dict(live._documents)  # _id key -> document object at the snapshot
        self.store = copy_store(live)


class Transaction:
    def __init__(self, session: "EmbeddedSession", number: int) -> None:
        self.session = session
        self.number = number
        self.shadows: dict[tuple[int, str], _Shadow] = {}
        self.aborted_by_server = False
        self.override: dict | None = None  # used while committing: (db_store id, name) -> store

    def store_for(self, db_store, name: str, live):
        key = (id(db_store), name)
        if self.override is not None:
            st = self.override.get(key)
            return live if st is None else st
        sh = self.shadows.get(key)
        if sh is None:
            sh = self.shadows[key] = _Shadow(db_store, name, live)
        return sh.store  # the snapshot stays even if the collection is replaced meanwhile ($out): see commit

    # -- commit -----------------------------------------------------------------------------------
    def _changes(self, sh: _Shadow):
        snap, cur = sh.snap, sh.store._documents
        deleted = [k for k in snap if k not in cur]
        updated = [k for k, d in cur.items() if k in snap and snap[k] is not d]
        inserted = [k for k in cur if k not in snap]
        return deleted, updated, inserted

    def commit(self, client) -> None:
        EmbeddedCollection = hooks.get("collection_class")  # registered by collection.py (hooks.py)
        plans = []
        for key, sh in self.shadows.items():
            deleted, updated, inserted = self._changes(sh)
            if not (deleted or updated or inserted):
                continue
            if sh.db_store[sh.name] is not sh.live or getattr(sh.live, "incarnation", 0) != sh.incarnation:
                raise _write_conflict("collection %s was replaced or dropped outside the transaction" % sh.name)
            for k in deleted + updated:
                if sh.live._documents.get(k) is not sh.snap.get(k):
                    raise _write_conflict("a document this transaction changed (_id: %r) was changed outside "
                                          "the transaction after it started" % (sh.snap[k].get("_id"),))
            for k in inserted:
                if k in sh.live._documents:
                    raise _write_conflict("a document with the _id this transaction inserted (%r) was inserted "
                                          "outside the transaction" % (sh.store._documents[k].get("_id"),))
            plans.append((key, sh, deleted, updated, inserted))
        if not plans:
            return
        merged: dict = {}
        token = _ACTIVE.set(self)
        self.override = merged
        try:
            for key, sh, deleted, updated, inserted in plans:
                work = copy_store(sh.live)
                merged[key] = work
                coll = _collection_for(client, sh)
                try:
                    for k in deleted:
                        EmbeddedCollection._remove_rid(coll, work.rid_by_key[k])
                    for k in updated:
                        rid = work.rid_by_key[k]
                        EmbeddedCollection._replace_doc(coll, rid, work.docs[rid], sh.store._documents[k])
                    new_rids = sorted(sh.store.rid_by_key[k] for k in inserted)
                    for srid in new_rids:
                        doc = sh.store.docs[srid]
                        rid = work.next_rid
                        work.next_rid += 1
                        keys = EmbeddedCollection._compute_keys(coll, doc, rid)
                        EmbeddedCollection._commit_insert(coll, doc, rid, keys)
                except OperationFailure as e:
                    raise _write_conflict("committing would violate an index: %s" % e) from None
        finally:
            self.override = None
            _ACTIVE.reset(token)
        for key, sh, *_ in plans:
            work = merged[key]
            live = sh.live
            version = live.version
            live.__dict__.update(work.__dict__)
            live.version = version + 1


def _collection_for(client, sh: _Shadow):
    for db in list(client._database_accesses.values()):
        if db._store is sh.db_store:
            return db.get_collection(sh.name)
    raise RuntimeError("collection store not found")  # pragma: no cover


def _write_conflict(why: str) -> OperationFailure:
    msg = ("WriteConflict error: this operation conflicted with another operation. Please retry your "
           "operation or multi-document transaction. (embedded engine: %s)" % why)
    return OperationFailure(msg, WRITE_CONFLICT, {"ok": 0.0, "errmsg": msg, "code": WRITE_CONFLICT,
                                                  "codeName": "WriteConflict",
                                                  "errorLabels": ["TransientTransactionError"]})


# ---------------------------------------------------------------------------------------------- sessions
class _TransactionContext:
    def __init__(self, session: "EmbeddedSession") -> None:
        self._session = session

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_val, exc_tb) -> None:
        if self._session.in_transaction:
            if exc_val is None:
                self._session.commit_transaction()
            else:
                self._session.abort_transaction()


class SessionOptions:
    def __init__(self, causal_consistency=None, default_transaction_options=None, snapshot=False) -> None:
        self.causal_consistency = True if causal_consistency is None else causal_consistency
        self.default_transaction_options = default_transaction_options
        self.snapshot = snapshot


_TICKS = itertools.count(1)  # the increment of the cluster times sessions see


@guard(SESSION_OPERATIONS)
class EmbeddedSession:
    """A pymongo ``ClientSession`` look-alike for the embedded engine."""

    def __init__(self, client, causal_consistency=None, default_transaction_options=None, snapshot=False) -> None:
        self._client = client
        self._options = SessionOptions(causal_consistency, default_transaction_options, snapshot)
        self._ended = False
        self._txn: Transaction | None = None
        self._state = "none"  # none | in_progress | committed | aborted
        self._txn_number = 0
        self._id = {"id": Binary(uuid.uuid4().bytes, UUID_SUBTYPE)}

    # -- pymongo API --------------------------------------------------------------------------------
    @property
    def client(self):
        return self._client

    @property
    def options(self) -> SessionOptions:
        return self._options

    @property
    def session_id(self) -> dict:
        self._check_ended()
        return self._id

    @property
    def has_ended(self) -> bool:
        return self._ended

    @property
    def in_transaction(self) -> bool:
        return self._state == "in_progress"

    _cluster_time = None
    _operation_time = None

    @property
    def cluster_time(self):
        """The latest ``$clusterTime`` seen (each operation in the session advances it, as a reply would)."""
        return self._cluster_time

    @property
    def operation_time(self):
        """The ``operationTime`` of the last operation in the session (causal consistency)."""
        return self._operation_time

    def advance_cluster_time(self, cluster_time) -> None:
        """pymongo's ``advance_cluster_time``: keep the later of the two cluster times."""
        from collections.abc import Mapping
        from bson import Timestamp
        if not isinstance(cluster_time, Mapping):
            raise TypeError("cluster_time must be a subclass of collections.Mapping")
        if not isinstance(cluster_time.get("clusterTime"), Timestamp):
            raise ValueError("Invalid cluster_time")
        if self._cluster_time is None or cluster_time["clusterTime"] > self._cluster_time["clusterTime"]:
            self._cluster_time = cluster_time

    def advance_operation_time(self, operation_time) -> None:
        """pymongo's ``advance_operation_time``: keep the later of the two operation times."""
        from bson import Timestamp
        if not isinstance(operation_time, Timestamp):
            raise TypeError("operation_time must be an instance of bson.timestamp.Timestamp")
        if self._operation_time is None or operation_time > self._operation_time:
            self._operation_time = operation_time

    def bind(self, end_session: bool = True):
        """pymongo 4.17's implicit session binding is not modelled: pass ``session=`` to each call."""
        from ..base.errors import unsupported
        raise unsupported("ClientSession.bind() (pass session=... to each call)")

    def _lab_tick(self) -> None:
        """An operation ran in the session: its reply's operationTime / $clusterTime (a fresh cluster time)."""
        from bson import Int64, Timestamp
        ts = Timestamp(int(time.time()), next(_TICKS))
        self.advance_operation_time(ts)
        self.advance_cluster_time({"clusterTime": ts, "signature": {"hash": Binary(b"\0" * 20), "keyId": Int64(0)}})

    def _check_ended(self) -> None:
        if self._ended:
            raise InvalidOperation("Cannot use ended session")

    def start_transaction(self, read_concern=None, write_concern=None, read_preference=None,
                          max_commit_time_ms=None) -> _TransactionContext:
        self._check_ended()
        if self._options.snapshot:
            raise InvalidOperation("Transactions are not supported in snapshot sessions")
        if self.in_transaction:
            raise InvalidOperation("Transaction already in progress")
        self._txn_number += 1
        self._txn = Transaction(self, self._txn_number)
        self._state = "in_progress"
        return _TransactionContext(self)

    def commit_transaction(self) -> None:
        self._check_ended()
        state = self._state
        if state == "none":
            raise InvalidOperation("No transaction started")
        if state == "aborted":
            raise InvalidOperation("Cannot call commitTransaction after calling abortTransaction")
        if state == "committed":
            return  # pymongo re-sends commitTransaction; committing twice is allowed
        txn = self._txn
        assert txn is not None
        if txn.aborted_by_server:
            self._state = "aborted"
            self._txn = None
            msg = ("Transaction with { txnNumber: %d } has been aborted (a command in it failed)." % txn.number)
            raise OperationFailure(msg, NO_SUCH_TRANSACTION,
                                   {"ok": 0.0, "errmsg": msg, "code": NO_SUCH_TRANSACTION,
                                    "codeName": "NoSuchTransaction", "errorLabels": ["TransientTransactionError"]})
        try:
            txn.commit(self._client)
        except OperationFailure:
            self._state = "aborted"
            self._txn = None
            raise
        oplog_of(self._client._store).commit(txn, self._id, getattr(txn, "wire_number", txn.number))  # events
        self._state = "committed"
        self._txn = None

    def abort_transaction(self) -> None:
        self._check_ended()
        state = self._state
        if state == "none":
            raise InvalidOperation("No transaction started")
        if state == "committed":
            raise InvalidOperation("Cannot call abortTransaction after calling commitTransaction")
        if state == "aborted":
            raise InvalidOperation("Cannot call abortTransaction twice")
        self._state = "aborted"
        self._txn = None

    def with_transaction(self, callback: Callable[["EmbeddedSession"], Any], read_concern=None, write_concern=None,
                         read_preference=None, max_commit_time_ms=None) -> Any:
        """pymongo's convenient transaction API: run ``callback(session)`` in a transaction and commit,
        retrying the whole callback on ``TransientTransactionError`` (within 120 s; here also at most
        ``WITH_TRANSACTION_MAX_ATTEMPTS`` attempts, since no concurrent client can resolve a conflict)."""
        start = time.monotonic()
        attempts = 0
        while True:
            attempts += 1
            self.start_transaction(read_concern, write_concern, read_preference, max_commit_time_ms)
            try:
                ret = callback(self)
            except BaseException as exc:
                if self.in_transaction:
                    self.abort_transaction()
                if isinstance(exc, PyMongoError) and exc.has_error_label("TransientTransactionError") and \
                        _retry_ok(start, attempts):
                    continue
                raise
            if not self.in_transaction:
                return ret
            try:
                self.commit_transaction()
            except PyMongoError as exc:
                if exc.has_error_label("TransientTransactionError") and _retry_ok(start, attempts):
                    continue
                raise
            return ret

    def end_session(self) -> None:
        if not self._ended:
            if self.in_transaction:
                self.abort_transaction()
            self._ended = True

    def __enter__(self) -> "EmbeddedSession":
        return self

    def __exit__(self, exc_type, exc_val, exc_tb) -> None:
        self.end_session()

    def __repr__(self) -> str:
        return "EmbeddedSession(in_transaction=%s)" % self.in_transaction


def _retry_ok(start: float, attempts: int) -> bool:
    return time.monotonic() - start < WITH_TRANSACTION_TIME_LIMIT and attempts < WITH_TRANSACTION_MAX_ATTEMPTS


def start_session(client, causal_consistency=None, default_transaction_options=None, snapshot=False):
    session = EmbeddedSession(client, causal_consistency, default_transaction_options, snapshot)
    session._lab_last_use = time.time()  # the store's live sessions: $listLocalSessions (commands/current_op.py)
    client._store.__dict__.setdefault("_lab_sessions", weakref.WeakSet()).add(session)
    return session


# ---------------------------------------------------------------------------------------------- binding
def _client_of(obj):
    from mongomock.collection import Collection
    if isinstance(obj, Collection):
        return obj.database.client
    return obj.client  # a database


def check_session(session, obj) -> None:
    if session is None:
        return
    if not isinstance(session, EmbeddedSession):
        raise TypeError("session must be an instance of ClientSession (from client.start_session()), not %r"
                        % (type(session).__name__,))
    session._check_ended()
    if session._client is not _client_of(obj):
        raise InvalidOperation("Can only use session with the MongoClient that started it")


@contextlib.contextmanager
def bind(session, obj, ddl: str | None = None):
    """Run the body with ``session`` bound: in its transaction (if one is in progress) or outside any.

    ``session=None`` leaves the current binding alone (nested engine calls inherit it)."""
    if session is None:
        yield
        return
    check_session(session, obj)
    txn = session._txn if session.in_transaction else None
    if txn is not None and ddl is not None:
        msg = ("Cannot run '%s' in a multi-document transaction on the embedded engine (the server allows "
               "only some DDL in transactions, on new collections); run it outside the transaction." % ddl)
        raise OperationFailure(msg, NOT_SUPPORTED_IN_TRANSACTION,
                               {"ok": 0.0, "errmsg": msg, "code": NOT_SUPPORTED_IN_TRANSACTION,
                                "codeName": "OperationNotSupportedInTransaction"})
    if txn is not None and txn.aborted_by_server:
        msg = "Transaction with { txnNumber: %d } has been aborted." % txn.number
        raise OperationFailure(msg, NO_SUCH_TRANSACTION,
                               {"ok": 0.0, "errmsg": msg, "code": NO_SUCH_TRANSACTION,
                                "codeName": "NoSuchTransaction", "errorLabels": ["TransientTransactionError"]})
    token = _ACTIVE.set(txn)
    try:
        yield
    except Exception as exc:
        if txn is not None and aborts_transaction(exc):
            txn.aborted_by_server = True  # the server aborts a transaction whose command failed
        raise
    finally:
        _ACTIVE.reset(token)
        tick = getattr(session, "_lab_tick", None)
        if tick is not None:
            tick()  # every reply carries operationTime / $clusterTime


@contextlib.contextmanager
def outside():
    """Run the body outside any transaction (the engine's own bookkeeping writes, e.g. the profiler)."""
    token = _ACTIVE.set(None)
    try:
        yield
    finally:
        _ACTIVE.reset(token)
