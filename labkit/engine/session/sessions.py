"""Client sessions, multi-document transactions and snapshot reads for the embedded engine.

A transaction runs as on a replica set (manual "Transactions", "Production Considerations"; driver
specification transactions/transactions.md; server jstests/core/txns/):

* ``client.start_session()`` returns an ``EmbeddedSession`` with pymongo's API: ``start_transaction()``
  (also as a context manager), ``commit_transaction()``, ``abort_transaction()``, ``with_transaction()``,
  ``in_transaction``, ``end_session()`` and the ``with`` form.
* Every engine call made with ``session=`` runs with that session bound (a context variable). The transaction's
  snapshot is taken at its first statement (a cluster time, session/history.py): every collection it reads or
  writes is a private copy of that collection *as it was at the snapshot* (made when the transaction first
  touches it, from the history), so later writes outside are not seen and nobody else sees the transaction's.
* A write in the transaction to a document (or unique index key) that another open transaction has written, or
  that was changed outside after the snapshot, fails at that write with WriteConflict (112, label
  ``TransientTransactionError``, so ``with_transaction`` retries); the transaction is aborted. A document the
  transaction wrote is *held*: a write outside any transaction to it waits until the transaction commits or
  aborts, then runs (``jstests/core/txns/write_conflicts_with_non_txns.js``): its operation is undone and run
  again once the transaction ends, fails with MaxTimeMSExpired (50) when its maxTimeMS passes first, and a
  transaction older than ``transactionLifetimeLimitSeconds`` (60) is aborted by the server, which lets the write
  run. One thread that waits on its own transaction therefore waits until that transaction expires, as it would
  against a server.
* ``commit_transaction()`` applies the documents the transaction inserted, changed or deleted to the live
  collections (index maintenance and unique checks included); if that fails (a unique key taken meanwhile, a
  collection dropped or replaced, a collection the transaction created was created outside too) nothing is
  applied and the commit fails with WriteConflict (112).
* Collections can be created in a transaction, explicitly (``create``) or by a first insert/upsert, and indexes
  on a collection that does not exist yet or that the transaction created and left empty (4.4+; manual "Create
  Collections and Indexes in a Transaction", jstests/core/txns/create_collection*.js, create_indexes*.js);
  other DDL and commands outside the manual's list are refused with OperationNotSupportedInTransaction (263).
* ``abort_transaction()`` (or an exception leaving ``with session.start_transaction():``) drops the copies. A
  command that fails inside a transaction aborts it on the server; a later commit raises NoSuchTransaction (251,
  ``TransientTransactionError``).
* Snapshot reads outside transactions (``readConcern: {level: "snapshot"}``, MongoDB 5.0+): a read bound to a
  ``SnapshotRead`` reads every collection as it was at its cluster time; ``start_session(snapshot=True)`` keeps
  the time of its first read (``atClusterTime``) for the later ones.

A standalone ``mongod`` refuses transactions (they need a replica set); the embedded engine is a one-member
replica set.
"""
from __future__ import annotations

import contextlib
import contextvars
import operator
import time
import weakref
import uuid
from typing import Any, Callable

from bson import Timestamp
from bson.binary import Binary, UUID_SUBTYPE
from pymongo.errors import InvalidOperation, OperationFailure, PyMongoError, WriteConcernError

from ..service import boundary
from ..service.boundary import SESSION_OPERATIONS, aborts_transaction, guard
from ..base import hooks
from .history import History, copy_store, history_of, SNAPSHOT_UNAVAILABLE
from ..repl.oplog import oplog_of

# The transaction (or snapshot read) bound to the running call: a Transaction or a SnapshotRead, else None.
_ACTIVE: contextvars.ContextVar[Any] = contextvars.ContextVar("labkit_txn", default=None)

WITH_TRANSACTION_TIME_LIMIT = 120.0  # seconds, pymongo's _WITH_TRANSACTION_RETRY_TIME_LIMIT
WITH_TRANSACTION_MAX_ATTEMPTS = 10   # the embedded engine also caps attempts (no other client can fix a conflict)

INVALID_OPTIONS = 72
WRITE_CONFLICT = 112
NO_SUCH_TRANSACTION = 251
NOT_SUPPORTED_IN_TRANSACTION = 263

# Commands that read with readConcern "snapshot" outside a transaction (manual "Read Concern "snapshot"").
SNAPSHOT_COMMANDS = frozenset({"find", "aggregate", "distinct"})


def current() -> "Transaction | None":
    """The transaction bound to the running call (None outside one, and during a snapshot read)."""
    b = _ACTIVE.get()
    return b if b is not None and b.is_txn else None


def binding() -> Any:
    """What the running call is bound to: a Transaction, a SnapshotRead or None (collection.py's store lookup)."""
    return _ACTIVE.get()


def resolve_store(db_store, name: str, live):
    """The store a collection access should use: the bound transaction's copy or the snapshot read's copy, else
    ``live``."""
    b = _ACTIVE.get()
    if b is None:
        return live
    return b.store_for(db_store, name, live)


def _failure(msg: str, code: int, code_name: str, transient: bool = False) -> OperationFailure:
    det: dict = {"ok": 0.0, "errmsg": msg, "code": code, "codeName": code_name}
    if transient:
        det["errorLabels"] = ["TransientTransactionError"]
    return OperationFailure(msg, code, det)


def _write_conflict(why: str) -> OperationFailure:
    msg = ("WriteConflict error: this operation conflicted with another operation. Please retry your "
           "operation or multi-document transaction. (embedded engine: %s)" % why)
    return _failure(msg, WRITE_CONFLICT, "WriteConflict", transient=True)


def _no_such_transaction(number: int) -> OperationFailure:
    """NoSuchTransaction (251): the server aborted the transaction (a failed statement, or it outlived
    transactionLifetimeLimitSeconds); the server's message (transaction_participant.cpp)."""
    return _failure("Transaction with { txnNumber: %d } has been aborted." % number, NO_SUCH_TRANSACTION,
                    "NoSuchTransaction", transient=True)


def not_in_transaction(what: str, before_running: bool = False) -> OperationFailure:
    """OperationNotSupportedInTransaction (263) for ``what`` (a command name or a sentence ending with ".").
    ``before_running``: the command is refused before it runs, which leaves the transaction going."""
    msg = what if what.endswith(".") else "Cannot run '%s' in a multi-document transaction." % what
    err = _failure(msg, NOT_SUPPORTED_IN_TRANSACTION, "OperationNotSupportedInTransaction")
    if before_running:
        err._lab_keeps_transaction = True
    return err


# ---------------------------------------------------------------------------------------------- snapshot reads
def read_concern_text(at: Timestamp | None = None) -> str:
    """The read concern as the server prints it in errors (``ReadConcernArgs::toString``)."""
    if at is None:
        return '{ readConcern: { level: "snapshot", provenance: "clientSupplied" } }'
    return ('{ readConcern: { level: "snapshot", atClusterTime: Timestamp(%d, %d), provenance: "clientSupplied" } }'
            % (at.time, at.inc))


def snapshot_not_supported(command: str, at: Timestamp | None = None) -> OperationFailure:
    """InvalidOptions (72): ``command`` does not take readConcern "snapshot" outside a transaction (the server's
    ``Command <name> does not support { readConcern: ... } :: caused by :: read concern not supported``;
    jstests/core/txns/no_snapshot_writes_outside_txn.js)."""
    msg = "Command %s does not support %s :: caused by :: read concern not supported" % (command, read_concern_text(at))
    return _failure(msg, INVALID_OPTIONS, "InvalidOptions")


class SnapshotRead:
    """A read outside any transaction at cluster time ``ts`` (readConcern "snapshot", optionally atClusterTime)."""

    is_txn = False

    def __init__(self, history: History, ts: Timestamp) -> None:
        self.history = history
        self.ts = ts

    def store_for(self, db_store, name: str, live):
        if live.options.get("capped"):  # catalog_raii.cpp: snapshot reads of capped collections are banned
            raise _failure("Reading from capped collections with readConcern snapshot is not supported",
                           SNAPSHOT_UNAVAILABLE, "SnapshotUnavailable")
        work = self.history.state_at(live, self.ts, shared=True)
        return live if work is None else work


def check_at_cluster_time(history: History, at: Any) -> Timestamp:
    """An ``atClusterTime`` a snapshot read may use (read_concern_mongod.cpp: not later than the cluster time)."""
    if not isinstance(at, Timestamp):
        raise _failure("BSON field 'readConcern.atClusterTime' is the wrong type, expected type 'timestamp'", 14,
                       "TypeMismatch")
    if at.time == 0 and at.inc == 0:
        raise _failure("atClusterTime cannot be a null timestamp", INVALID_OPTIONS, "InvalidOptions")
    now = history.clock.last()
    if at > now:
        raise _failure("readConcern atClusterTime value must not be greater than the current clusterTime. Requested "
                       "clusterTime: { ts: Timestamp(%d, %d) }; current clusterTime: { ts: Timestamp(%d, %d) }"
                       % (at.time, at.inc, now.time, now.inc), INVALID_OPTIONS, "InvalidOptions")
    return at


@contextlib.contextmanager
def reading_at(read: SnapshotRead):
    """Run the body as a snapshot read (outside any transaction)."""
    token = _ACTIVE.set(read)
    try:
        yield read
    finally:
        _ACTIVE.reset(token)


# ---------------------------------------------------------------------------------------------- transactions
class _Shadow:
    """A transaction's private copy of one collection, made when the transaction first touches it: the
    collection as it was at the transaction's snapshot."""

    __slots__ = ("live", "db_store", "name", "incarnation", "store", "snap_docs", "snap_rids", "base_created",
                 "touched")

    def __init__(self, txn: "Transaction", db_store, name: str, live) -> None:
        self.db_store = db_store
        self.name = name
        self.live = live
        self.incarnation = getattr(live, "incarnation", 0)  # a drop (or drop + re-create) outside changes it
        base = txn.history.state_at(live, txn.snap_ts, transient=True)
        src = live if base is None else base
        self.snap_docs = dict(src.docs)        # record id -> document at the snapshot
        self.snap_rids = dict(src.rid_by_key)  # _id key -> record id at the snapshot
        self.base_created = bool(src.is_created)
        self.store = copy_store(src) if base is None else base
        self.store.rec = txn.tracker
        self.touched: set = set()  # _id keys this transaction wrote

    def snap_doc(self, sk: Any) -> Any:
        rid = self.snap_rids.get(sk)
        return None if rid is None else self.snap_docs.get(rid)

    def created_here(self) -> bool:
        return not self.base_created and bool(self.store.is_created)


class _Tracker:
    """The ``rec`` of a transaction's copies: writes are checked and held when the statement ends."""

    __slots__ = ("txn",)

    def __init__(self, txn: "Transaction") -> None:
        self.txn = txn

    def note(self, st, rid, old, new) -> None:
        self.txn.pending.append((st, rid, old, new))

    def note_drop(self, st) -> None:  # pragma: no cover - DDL that drops is refused in a transaction
        raise not_in_transaction("drop")


def _live_doc(live, sk):
    rid = live.rid_by_key.get(sk)
    return None if rid is None else live.docs.get(rid)


class Transaction:
    """One multi-document transaction of a session (its number, snapshot, copies and held keys)."""

    is_txn = True

    def __init__(self, session: "EmbeddedSession", number: int, options: dict | None = None) -> None:
        self.session = session
        self.number = number
        self.options = options or {}
        self.history: History = history_of(session._client._store)
        self.shadows: dict[tuple[int, str], _Shadow] = {}
        self.by_store: dict[int, _Shadow] = {}
        self.aborted_by_server = False
        self.ended = False
        self.override: dict | None = None  # used while committing: (db_store id, name) -> store
        self.snap_ts: Timestamp | None = None
        self.deadline = float("inf")
        self.tracker = _Tracker(self)
        self.pending: list = []   # writes to check (statement in progress)
        self.holds: list = []     # (live store, index name or None, key) this transaction holds
        self.depth = 0            # nested binds of the running statement

    # -- lifetime ---------------------------------------------------------------------------------------
    def begin(self) -> None:
        """The first statement: take the snapshot and start the lifetime clock."""
        self.snap_ts = self.history.clock.tick()
        self.deadline = time.monotonic() + self.history.params["transactionLifetimeLimitSeconds"]

    def expired(self) -> bool:
        return time.monotonic() >= self.deadline

    def holding(self) -> bool:
        """Whether the keys this transaction wrote still hold writes outside it back."""
        return not self.ended and not self.aborted_by_server and not self.expired()

    def server_abort(self) -> None:
        """The server aborts the transaction (a failed statement, expiry): its copies and holds are released."""
        if not self.aborted_by_server:
            self.aborted_by_server = True
            self.shadows.clear()
            self.by_store.clear()
            self.pending = []
            self.release()

    def release(self) -> None:
        """Give up every held key and wake the writes waiting for this transaction."""
        if self.holds:
            for live, ixname, key in self.holds:
                held = live.held if ixname is None else live.held_keys
                if held is not None and held.get(key if ixname is None else (ixname, key)) is self:
                    del held[key if ixname is None else (ixname, key)]
            self.holds = []
            self.history.holds -= 1
        cond = self.history.cond
        if cond is not None:
            with cond:  # the store's lock (re-entrant): held already by the operation ending the transaction
                cond.notify_all()

    def end(self) -> None:
        self.ended = True
        self.shadows.clear()
        self.by_store.clear()
        self.pending = []
        self.release()

    # -- copies -----------------------------------------------------------------------------------------
    def store_for(self, db_store, name: str, live):
        key = (id(db_store), name)
        if self.override is not None:
            st = self.override.get(key)
            return live if st is None else st
        sh = self.shadows.get(key)
        if sh is None:
            if self.snap_ts is None:  # pragma: no cover - bind() begins the transaction first
                self.begin()
            sh = self.shadows[key] = _Shadow(self, db_store, name, live)
            self.by_store[id(sh.store)] = sh
        return sh.store  # the snapshot stays even if the collection is replaced meanwhile ($out): see commit

    def shadow_of(self, st) -> "_Shadow | None":
        return self.by_store.get(id(st))

    # -- write conflicts --------------------------------------------------------------------------------
    def check(self) -> None:
        """Check the writes of the statement that just ran: each document (and unique index key) it wrote must
        not be held by another open transaction nor changed outside since the snapshot; then hold them."""
        pending, self.pending = self.pending, []
        for st, rid, old, new in pending:
            sh = self.by_store.get(id(st))
            if sh is None:  # pragma: no cover - a copy this transaction no longer has
                continue
            doc = new if new is not None else old
            sk = st.key_of(doc)
            live = sh.live
            if sk not in sh.touched:
                self._claim(live, None, sk, "a document this transaction writes (_id: %r)" % (doc.get("_id"),))
                if _live_doc(live, sk) is not sh.snap_doc(sk):
                    raise _write_conflict("the document with _id %r was changed outside the transaction after its "
                                          "snapshot" % (doc.get("_id"),))
                sh.touched.add(sk)
            for ix in st.ix.values():
                if ix.spec.unique and ix.spec.name != "_id_":
                    live_ix = live.ix.get(ix.spec.name)
                    for d in (old, new):
                        if d is None:
                            continue
                        for k in ix.keys_for(d)[0]:
                            self._claim(live, ix.spec.name, k, "a key of unique index %s" % ix.spec.name)
                            if d is new and live_ix is not None:
                                other = live_ix.place(k, -1)[1]  # a committed document with this key
                                if other is not None:
                                    od = live.docs.get(other)
                                    if od is not None and live.key_of(od) not in sh.touched:
                                        raise _write_conflict("a document with this key of unique index %s was "
                                                              "written outside the transaction after its snapshot"
                                                              % ix.spec.name)

    def _claim(self, live, ixname, key, what: str) -> None:
        attr = "held" if ixname is None else "held_keys"
        held = getattr(live, attr)
        k = key if ixname is None else (ixname, key)
        if held is not None:
            other = held.get(k)
            if other is self:
                return
            if other is not None:
                if other.holding():
                    raise _write_conflict("%s was written by another transaction in progress" % what)
                if not other.ended and not other.aborted_by_server:
                    other.server_abort()  # the server's reaper
        if held is None:
            held = {}
            setattr(live, attr, held)
        held[k] = self
        if not self.holds:
            self.history.holds += 1
        self.holds.append((live, ixname, key))

    # -- DDL ----------------------------------------------------------------------------------------------
    def check_new_index(self, st, ns: str) -> None:
        """createIndexes of a new index in a transaction: only on a collection created in the transaction (or
        not existing: it is created implicitly) and empty (create_indexes_cmd.cpp)."""
        sh = self.by_store.get(id(st))
        if sh is None:  # pragma: no cover
            return
        if sh.base_created:
            raise not_in_transaction("Cannot create new indexes on existing collection %s in a multi-document "
                                     "transaction." % ns)
        if st.docs:
            raise not_in_transaction("Cannot create new indexes on non-empty collection %s in a multi-document "
                                     "transaction." % ns)

    # -- commit -------------------------------------------------------------------------------------------
    def commit(self, client) -> None:
        EmbeddedCollection = hooks.get("collection_class")  # registered by collection.py (hooks.py)
        self.check()
        plans = []
        for key, sh in self.shadows.items():
            created = sh.created_here()
            if not sh.touched and not created:
                continue
            live = sh.db_store[sh.name]
            if live is not sh.live or getattr(live, "incarnation", 0) != sh.incarnation:
                raise _write_conflict("collection %s was replaced or dropped outside the transaction" % sh.name)
            if created and live.is_created:
                raise _write_conflict("collection %s, created in the transaction, was created outside it after the "
                                      "transaction's snapshot" % sh.name)
            for sk in sh.touched:
                if _live_doc(live, sk) is not sh.snap_doc(sk):  # pragma: no cover - held keys cannot change
                    raise _write_conflict("a document this transaction changed was changed outside it")
            plans.append((key, sh, created))
        if not plans:
            return
        self.release()  # the commit itself writes the held documents
        hist = self.history
        mark = hist.mark()
        self.override = {key: sh.live for key, sh, _ in plans}
        token = _ACTIVE.set(self)
        try:
            for key, sh, created in plans:
                live, work = sh.live, sh.store
                if created:
                    _install(live, work)
                    continue
                coll = _collection_for(client, sh)
                deleted, updated, inserted = [], [], []
                for sk in sh.touched:
                    before, after = sh.snap_doc(sk), _live_doc(work, sk)
                    if before is after:
                        continue
                    (deleted if after is None else inserted if before is None else updated).append(sk)
                for sk in deleted:
                    EmbeddedCollection._remove_rid(coll, live.rid_by_key[sk])
                for sk in updated:
                    rid = live.rid_by_key[sk]
                    EmbeddedCollection._replace_doc(coll, rid, live.docs[rid], _live_doc(work, sk))
                for srid in sorted(work.rid_by_key[sk] for sk in inserted):
                    doc = work.docs[srid]
                    rid = live.next_rid
                    live.next_rid += 1
                    keys = EmbeddedCollection._compute_keys(coll, doc, rid)
                    EmbeddedCollection._commit_insert(coll, doc, rid, keys)
        except OperationFailure as e:
            hist.rollback(mark)
            raise _write_conflict("committing would violate an index: %s" % e) from None
        finally:
            self.override = None
            _ACTIVE.reset(token)


def _install(live, work) -> None:
    """Commit a collection the transaction created: the live namespace takes the copy's documents, indexes and
    options (nobody else created it meanwhile: checked by the caller)."""
    from .history import copy_index
    rec = live.rec
    if rec is not None:
        for rid, doc in work.docs.items():
            rec.note(live, rid, None, doc)
    live.docs = dict(work.docs)
    live.rid_by_key = dict(work.rid_by_key)
    live.ix = {n: copy_index(ix) for n, ix in work.ix.items()}
    live.indexes = dict(work.indexes)
    live.options = dict(work.options)
    live.next_rid = max(live.next_rid, work.next_rid)
    live._is_force_created = True
    live.version += 1


def _collection_for(client, sh: _Shadow):
    for db in list(client._database_accesses.values()):
        if db._store is sh.db_store:
            return db.get_collection(sh.name)
    raise RuntimeError("collection store not found")  # pragma: no cover


def _wait_for_transaction(op: Any, wait: Any, store: Any, mark: tuple, nested: bool = False) -> None:
    """Hook ``txn_wait`` (boundary.py): a write outside transactions met a key an open transaction holds. Undo
    what the operation wrote, wait until that transaction ends (commit, abort, or the server aborting it at
    ``transactionLifetimeLimitSeconds``), then let the boundary run the operation again; MaxTimeMSExpired (50)
    when the operation's maxTimeMS (or pymongo's ``timeout()``) passes first."""
    hist = history_of(store)
    hist.rollback(mark)
    if op.recording and not nested:
        op.runs = []
        op.counters = {}
    holder = wait.holder
    cond = boundary.cond_for_store(store)
    hist.cond = cond
    cmd = getattr(boundary._TLS, "cmd_deadline", None)  # the running command's maxTimeMS (over the wire)
    deadline = cmd[0] if cmd is not None else op.deadline
    try:
        from pymongo import _csot
        left = _csot.remaining()
    except Exception:  # pragma: no cover - pymongo without client-side operation timeouts
        left = None
    if left is not None:
        csot = boundary._clock() + max(left, 0.0)
        deadline = csot if deadline is None else min(deadline, csot)
    hist.waiting += 1
    try:
        while holder.holding():
            now = boundary._clock()
            if deadline is not None and now >= deadline:
                raise boundary.time_expired()
            timeout = max(holder.deadline - time.monotonic(), 0.0)
            if deadline is not None:
                timeout = min(timeout, deadline - now)
            cond.wait(timeout + 0.001)
    finally:
        hist.waiting -= 1
    if not holder.ended and not holder.aborted_by_server:  # it outlived transactionLifetimeLimitSeconds
        holder.server_abort()


hooks.register("txn_wait", _wait_for_transaction)


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


_TXN_READ_LEVELS = ("local", "majority", "snapshot")
# pymongo's refusals to end a transaction: (commit | abort, the session's transaction state) -> the message
# (client_session.py; a commit after a commit is allowed: drivers retry it)
_END_REFUSED = {
    ("commit", "none"): "No transaction started",
    ("commit", "aborted"): "Cannot call commitTransaction after calling abortTransaction",
    ("abort", "none"): "No transaction started",
    ("abort", "committed"): "Cannot call abortTransaction after calling commitTransaction",
    ("abort", "aborted"): "Cannot call abortTransaction twice",
}


def _shows(field: str, doc: str) -> property:
    """A read-only property showing the instance's ``field`` (as pymongo's ``ClientSession`` attributes)."""
    return property(operator.attrgetter(field), doc=doc)


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
        self._snapshot_time: Timestamp | None = None  # a snapshot session's atClusterTime (its first read's)
        self._txn_options: dict = {}

    # -- pymongo API --------------------------------------------------------------------------------
    # pymongo's read-only attributes that only show a field (session_id and in_transaction do more, below)
    client = _shows("_client", "The client this session was started from.")
    options = _shows("_options", "The :class:`SessionOptions` this session was started with.")
    has_ended = _shows("_ended", "True once ``end_session`` ran.")
    cluster_time = _shows("_cluster_time", "The latest ``$clusterTime`` seen (each operation in the session "
                                           "advances it, as a reply would).")
    operation_time = _shows("_operation_time", "The ``operationTime`` of the last operation in the session "
                                               "(causal consistency).")
    _cluster_time = None
    _operation_time = None

    @property
    def session_id(self) -> dict:
        self._check_ended()
        return self._id

    @property
    def in_transaction(self) -> bool:
        return self._state == "in_progress"

    def advance_cluster_time(self, cluster_time) -> None:
        """pymongo's ``advance_cluster_time``: keep the later of the two cluster times."""
        from collections.abc import Mapping
        if not isinstance(cluster_time, Mapping):
            raise TypeError("cluster_time must be a subclass of collections.Mapping")
        if not isinstance(cluster_time.get("clusterTime"), Timestamp):
            raise ValueError("Invalid cluster_time")
        if self._cluster_time is None or cluster_time["clusterTime"] > self._cluster_time["clusterTime"]:
            self._cluster_time = cluster_time

    def advance_operation_time(self, operation_time) -> None:
        """pymongo's ``advance_operation_time``: keep the later of the two operation times."""
        if not isinstance(operation_time, Timestamp):
            raise TypeError("operation_time must be an instance of bson.timestamp.Timestamp")
        if self._operation_time is None or operation_time > self._operation_time:
            self._operation_time = operation_time

    def bind(self, end_session: bool = True):
        """pymongo 4.17's implicit session binding is not modelled: pass ``session=`` to each call."""
        from ..base.errors import unsupported
        raise unsupported("ClientSession.bind() (pass session=... to each call)")

    def _lab_tick(self) -> None:
        """An operation ran in the session: its reply's operationTime / $clusterTime (the engine's cluster
        clock, session/history.py, so that these times order with every write and snapshot)."""
        from bson import Int64
        ts = history_of(self._client._store).clock.tick()
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
        defaults = self._options.default_transaction_options
        opts = {"read_concern": read_concern or getattr(defaults, "read_concern", None),
                "write_concern": write_concern or getattr(defaults, "write_concern", None),
                "read_preference": read_preference or getattr(defaults, "read_preference", None),
                "max_commit_time_ms": max_commit_time_ms or getattr(defaults, "max_commit_time_ms", None)}
        wc = opts["write_concern"]
        if wc is not None and not wc.acknowledged:  # pymongo's TransactionOptions check
            from pymongo.errors import ConfigurationError
            raise ConfigurationError("transactions do not support unacknowledged write concern: %r" % (wc,))
        self._txn_number += 1
        self._txn = Transaction(self, self._txn_number, opts)
        self._txn_options = opts
        self._state = "in_progress"
        return _TransactionContext(self)

    def _check_can_end(self, verb: str) -> str:
        """The session's transaction state, after pymongo's refusals of ``commit``/``abort`` in that state."""
        self._check_ended()
        state = self._state
        refused = _END_REFUSED.get((verb, state))
        if refused is not None:
            raise InvalidOperation(refused)
        return state

    def commit_transaction(self) -> None:
        if self._check_can_end("commit") == "committed":
            return  # pymongo re-sends commitTransaction; committing twice is allowed
        txn = self._txn
        assert txn is not None
        if not txn.aborted_by_server and txn.snap_ts is not None and txn.expired():
            txn.server_abort()
        if txn.aborted_by_server:
            self._state = "aborted"
            self._txn = None
            txn.end()
            raise _no_such_transaction(txn.number)
        try:
            txn.commit(self._client)
        except OperationFailure:
            self._state = "aborted"
            self._txn = None
            txn.end()
            raise
        oplog_of(self._client._store).commit(txn, self._id, getattr(txn, "wire_number", txn.number))  # events
        self._state = "committed"
        self._txn = None
        txn.end()
        wce = write_concern_error((txn.options or {}).get("write_concern"))
        if wce is not None and txn.snap_ts is not None:  # the commit applied; its write concern is not met
            raise WriteConcernError(wce["errmsg"], wce["code"], {"ok": 1.0, "writeConcernError": wce})

    def abort_transaction(self) -> None:
        self._check_can_end("abort")
        self._state = "aborted"
        txn, self._txn = self._txn, None
        if txn is not None:
            txn.end()

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


def write_concern_error(wc: Any) -> dict | None:
    """The ``writeConcernError`` a one-member replica set answers for write concern ``wc`` (a pymongo
    WriteConcern, or its document), or None when it is met: ``w`` above the set's one data-bearing member is
    UnsatisfiableWriteConcern (100, "Not enough data-bearing nodes"), an unknown tag UnknownReplWriteConcern (79).
    Manual "Write Concern"; server: ReplSetConfig::checkIfWriteConcernCanBeSatisfied."""
    doc = getattr(wc, "document", wc)
    if not doc:
        return None
    w = doc.get("w", 1)
    info = {"writeConcern": {"w": w, "wtimeout": int(doc.get("wtimeout", 0) or 0), "provenance": "clientSupplied"}}
    if isinstance(w, int) and not isinstance(w, bool) and w > 1:
        return {"code": 100, "codeName": "UnsatisfiableWriteConcern", "errmsg": "Not enough data-bearing nodes",
                "errInfo": info}
    if isinstance(w, str) and w != "majority":
        return {"code": 79, "codeName": "UnknownReplWriteConcern",
                "errmsg": "No write concern mode named '%s' found in replica set configuration" % w,
                "errInfo": info}
    return None


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


# Commands a transaction may run (the server's txnCmdWhitelist, transaction_participant.cpp; manual "Transactions
# and Operations"); any other is OperationNotSupportedInTransaction (263) and does not abort the transaction.
TXN_COMMANDS = frozenset({"find", "getMore", "killCursors", "aggregate", "distinct", "insert", "update", "delete",
                          "findAndModify", "findandmodify", "create", "createIndexes", "bulkWrite",
                          "commitTransaction", "abortTransaction"})


def snapshot_read(client, command: str, at: Any = None) -> SnapshotRead:
    """A snapshot read for ``command`` at ``at`` (None: now), or the server's refusal for other commands."""
    hist = history_of(client._store)
    if command not in SNAPSHOT_COMMANDS:
        raise snapshot_not_supported(command, at)
    if at is not None:
        return SnapshotRead(hist, check_at_cluster_time(hist, at))
    return SnapshotRead(hist, hist.clock.tick())


@contextlib.contextmanager
def _bound_to(value: Any):
    token = _ACTIVE.set(value)
    try:
        yield
    finally:
        _ACTIVE.reset(token)


@contextlib.contextmanager
def bind(session, obj, ddl: str | None = None, command: str | None = None, snapshot: bool = False):
    """Run the body with ``session`` bound: in its transaction (if one is in progress), as a snapshot read, or
    outside any. ``command`` (or ``ddl``) is the command a driver would send for the call: a transaction refuses
    the ones it may not run (263) and a snapshot read the ones without readConcern "snapshot" (72).
    ``snapshot``: the call is a read whose collection has readConcern "snapshot" (pymongo sends it for reads
    only); a snapshot session (``start_session(snapshot=True)``) sends it with every command.

    ``session=None`` (and no snapshot) leaves the current binding alone (nested engine calls inherit it)."""
    name = command or ddl
    if session is None:
        if snapshot and _ACTIVE.get() is None:
            read = snapshot_read(_client_of(obj), name or "command")
            boundary.note_fact("atClusterTime", read.ts)  # the reply's (command monitoring)
            with _bound_to(read):
                yield
        else:
            yield
        return
    check_session(session, obj)
    txn = session._txn if session.in_transaction else None
    if txn is None:
        snap_session = session._options.snapshot
        if (snap_session or snapshot) and _ACTIVE.get() is None:
            read = snapshot_read(session._client, name or "command", session._snapshot_time if snap_session else None)
            boundary.note_fact("atClusterTime", read.ts)  # the reply's (command monitoring)
            try:
                with _bound_to(read):
                    yield
            finally:
                if snap_session and session._snapshot_time is None:
                    session._snapshot_time = read.ts  # the reply's atClusterTime, kept by the session
                session._lab_tick()
            return
        try:
            with _bound_to(None):
                yield
        finally:
            session._lab_tick()  # every reply carries operationTime / $clusterTime
        return
    if txn.aborted_by_server:
        raise _no_such_transaction(txn.number)
    if txn.snap_ts is not None and txn.expired():
        txn.server_abort()
        raise _no_such_transaction(txn.number)
    if name is not None and name not in TXN_COMMANDS:
        raise not_in_transaction(name, before_running=True)
    if txn.snap_ts is None:
        rc = txn.options.get("read_concern")
        level = getattr(rc, "level", None)
        if level is not None and level not in _TXN_READ_LEVELS:
            raise _failure("The readConcern level must be either 'local' (default), 'majority' or 'snapshot' in "
                           "order to run in a transaction", INVALID_OPTIONS, "InvalidOptions")
        txn.begin()
    token = _ACTIVE.set(txn)
    txn.depth += 1
    try:
        yield
        if txn.depth == 1:
            txn.check()  # the statement's writes: write conflicts, then held
    except Exception as exc:
        if aborts_transaction(exc):
            txn.server_abort()  # the server aborts a transaction whose command failed
        raise
    finally:
        txn.depth -= 1
        _ACTIVE.reset(token)
        session._lab_tick()  # every reply carries operationTime / $clusterTime


@contextlib.contextmanager
def outside():
    """Run the body outside any transaction (the engine's own bookkeeping writes, e.g. the profiler)."""
    token = _ACTIVE.set(None)
    try:
        yield
    finally:
        _ACTIVE.reset(token)
