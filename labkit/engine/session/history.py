"""Point-in-time reads: the cluster clock and the recent history of every collection's documents.

A replica-set member reads "as of" a timestamp: WiredTiger keeps the versions of the last
``minSnapshotHistoryWindowInSeconds`` (300 by default) so that a transaction reads from the snapshot taken at its
first statement and a snapshot read (``readConcern: {level: "snapshot", atClusterTime: T}``, MongoDB 5.0+) sees
the data as it was at ``T``; a time older than what is kept fails with SnapshotTooOld (239, "Read timestamp ... is
older than the oldest available timestamp."). Manual: "Read Concern "snapshot"", "Transactions"; server:
``src/mongo/db/storage/wiredtiger/wiredtiger_recovery_unit.cpp``, ``src/mongo/db/read_concern_mongod.cpp``.

The embedded engine's version of it:

* The clock is the engine's one cluster clock, the oplog's (repl/oplog.py): strictly increasing
  ``Timestamp(seconds, increment)`` values, the ``operationTime`` / ``$clusterTime`` of replies, change events'
  ``clusterTime``, a snapshot read's ``atClusterTime`` and a transaction's snapshot; ``last()`` is the latest one
  handed out.
* Every change of a stored document is noted (``History.note``, called by the record store's writers before they
  change anything) as ``(after, store, record id, previous document)``: ``after`` is ``clock.last()`` at the write,
  so the write is visible at a time ``T`` exactly when ``after < T`` (any ``T`` handed out later is greater). The
  engine never changes a stored document in place, so the previous document is kept by reference, not copied.
* ``state_at(store, T)`` is a private copy of a collection as it was at ``T``: the current documents and index
  entries with the newer changes undone, newest first. A collection not written since ``T`` needs no copy.
* The history is bounded like the server's: entries older than the window, or beyond ``MAX_ENTRIES``, are
  dropped (by writes every 1,024 changes or ``_EVICT_SLACK`` past the bound, by reads before each read of the
  past); ``floor`` is the newest dropped time, and a read at a time ``<= floor`` of a collection changed since is
  SnapshotTooOld.
* ``mark`` / ``rollback``: the writes of one operation can be undone in place (a write that must wait for a
  transaction first undoes what it did, then runs again once the transaction ends: sessions.py), with the oplog
  entries it made for change streams (no reader saw them: both run under the store's lock).
* A live store holding keys an open transaction wrote (``store.held``) makes ``note`` raise
  ``WaitForTransaction`` before the write changes anything (the operation boundary waits, then retries).
"""
from __future__ import annotations

import collections
import copy
import threading
import time
from typing import Any

from bson import Timestamp
from pymongo.errors import OperationFailure

from ..repl.oplog import Oplog, oplog_of
from ..service.boundary import WaitForTransaction

MIN_SNAPSHOT_HISTORY_WINDOW_S = 300  # minSnapshotHistoryWindowInSeconds (server parameter, default 300)
TRANSACTION_LIFETIME_LIMIT_S = 60    # transactionLifetimeLimitSeconds (server parameter, default 60)
MAX_ENTRIES = 100_000                # the engine keeps at most this many old versions (memory bound)
_EVICT_SLACK = 4_096                 # writes go this far past MAX_ENTRIES before one eviction pass trims back

SNAPSHOT_TOO_OLD = 239
SNAPSHOT_UNAVAILABLE = 246

DROP = -1  # the record id of a "collection dropped" entry (its "document" is the dropped state)


# ---------------------------------------------------------------------------------------------- copies
def copy_index(ix: Any) -> Any:
    """A copy of an index whose entries can change without touching the original's."""
    new = copy.copy(ix)
    new.entries = ix.entries.copy()
    new.multikey_paths = {f: set(s) for f, s in ix.multikey_paths.items()}
    return new


def copy_store(st: Any) -> Any:
    """A private copy of a collection store (documents shared: the engine never changes one in place). The copy
    records nothing and holds nothing: its owner sets ``rec`` (a transaction's tracker) if it writes to it."""
    new = copy.copy(st)
    new.docs = dict(st.docs)
    new.rid_by_key = dict(st.rid_by_key)
    new.ix = {n: copy_index(ix) for n, ix in st.ix.items()}
    new.indexes = dict(st.indexes)
    new.options = dict(st.options)
    new.rec = None
    new.held = None
    new.held_keys = None
    return new


def _undo(st: Any, rid: int, old: Any) -> bool:
    """Undo one noted change on ``st`` (in place): the record ``rid`` holds ``old`` again (``None``: no record),
    with its ``_id`` map entry and index entries. True when a record came back (natural order to restore)."""
    if rid == DROP:
        docs, rid_by_key, ix, indexes, options, next_rid, forced = old
        st.docs = dict(docs)
        st.rid_by_key = dict(rid_by_key)
        st.ix = {n: copy_index(i) for n, i in ix.items()}
        st.indexes = dict(indexes)
        st.options = dict(options)
        st.next_rid = next_rid
        st._is_force_created = forced
        st.version += 1
        return False
    docs = st.docs
    cur = docs.get(rid)
    if cur is not None:
        for ix in st.ix.values():
            ix.remove(ix.keys_for(cur)[0], rid)
        sk = st.key_of(cur)
        if st.rid_by_key.get(sk) == rid:
            del st.rid_by_key[sk]
        del docs[rid]
    back = False
    if old is not None:
        docs[rid] = old
        st.rid_by_key[st.key_of(old)] = rid
        for ix in st.ix.values():
            keys, arrays = ix.keys_for(old)
            ix.note_arrays(arrays)
            ix.add(keys, rid)
        back = True
    st.version += 1
    return back


def _natural_order(st: Any) -> None:
    """Records in record-id order again (a record put back by an undo was appended at the end)."""
    items = sorted(st.docs.items())
    st.docs.clear()
    st.docs.update(items)


def snapshot_too_old(ts: Timestamp, transient: bool = False) -> OperationFailure:
    msg = "Read timestamp Timestamp(%d, %d) is older than the oldest available timestamp." % (ts.time, ts.inc)
    det: dict = {"ok": 0.0, "errmsg": msg, "code": SNAPSHOT_TOO_OLD, "codeName": "SnapshotTooOld"}
    if transient:
        det["errorLabels"] = ["TransientTransactionError"]
    return OperationFailure(msg, SNAPSHOT_TOO_OLD, det)


class History:
    """The noted changes of one engine (one server store), its clock, its server parameters and its open
    transactions (sessions.py keeps them here so that every client over the store sees the same ones)."""

    def __init__(self, clock: Oplog) -> None:
        self.clock = clock      # the cluster clock: the engine's oplog (repl/oplog.py)
        self.entries: collections.deque = collections.deque()
        self.seq = 0            # changes noted so far (``mark``/``rollback`` count with it)
        self.floor: Timestamp | None = None  # the newest time dropped from the history
        self.params = {"transactionLifetimeLimitSeconds": TRANSACTION_LIFETIME_LIMIT_S,
                       "minSnapshotHistoryWindowInSeconds": MIN_SNAPSHOT_HISTORY_WINDOW_S}
        self.transactions: set = set()  # open transactions (sessions.Transaction) with a snapshot
        self.holds = 0          # open transactions holding keys in live stores
        self.waiting = 0        # writes waiting for a transaction to end (what currentOp would show blocked)
        self.cond: threading.Condition | None = None  # waiters for a transaction to end (sessions.py)
        self._cache: dict = {}  # (id(store), T) -> (store version, copy): repeated snapshot reads

    # -- noting changes -------------------------------------------------------------------------------
    def note(self, st: Any, rid: int, old: Any, new: Any) -> None:
        """A live store is about to change record ``rid`` from ``old`` to ``new`` (either may be None)."""
        if st.held:
            self._check_held(st, old, new)
        after = self.clock.last()
        st.last_write = after
        self.entries.append((after, st, rid, old))
        self.seq += 1
        if len(self.entries) > MAX_ENTRIES + _EVICT_SLACK or not self.seq & 1023:
            self._evict()

    def note_drop(self, st: Any) -> None:
        """A live collection is dropped: its whole state is kept (by reference; drop replaces the maps)."""
        state = (st.docs, st.rid_by_key, st.ix, st.indexes, st.options, st.next_rid,
                 st.__dict__.get("_is_force_created", False))
        after = self.clock.last()
        st.last_write = after
        self.entries.append((after, st, DROP, state))
        self.seq += 1

    def _check_held(self, st: Any, old: Any, new: Any) -> None:
        doc = new if new is not None else old
        holder = st.held.get(st.key_of(doc))
        if holder is not None and holder.holding():
            raise WaitForTransaction(holder)
        keys = st.held_keys
        if keys and new is not None:
            for ix in st.ix.values():
                if ix.spec.unique and ix.spec.name != "_id_":
                    for k in ix.keys_for(new)[0]:
                        holder = keys.get((ix.spec.name, k))
                        if holder is not None and holder.holding():
                            raise WaitForTransaction(holder)

    def check_held_batch(self, st: Any, docs: list) -> None:
        """The held-key check of ``note`` for a batch of new documents, before any of them is stored."""
        if st.held:
            for doc in docs:
                self._check_held(st, None, doc)

    def _evict(self) -> None:
        window = self.params["minSnapshotHistoryWindowInSeconds"]
        oldest = time.time() - window
        e = self.entries
        if e and (len(e) > MAX_ENTRIES or e[0][0].time < oldest):
            while e and (len(e) > MAX_ENTRIES or e[0][0].time < oldest):
                self.floor = e.popleft()[0]
            self._cache.clear()

    # -- undoing one operation ------------------------------------------------------------------------
    def mark(self) -> tuple[int, int]:
        """Where the history and the oplog are now (``rollback`` undoes what comes after)."""
        return self.seq, self.clock.next_seq

    def rollback(self, mark: tuple[int, int]) -> None:
        """Undo, newest first, every change noted since ``mark`` (on the live stores, in place), and drop the
        oplog entries recorded since."""
        mark, log_mark = mark
        self.clock.truncate(log_mark)
        n = self.seq - mark
        if n > len(self.entries):
            raise OperationFailure("embedded engine internal error: the history no longer holds the writes of the "
                                   "operation to undo", 1)
        reorder = set()
        for _ in range(n):
            _, st, rid, old = self.entries.pop()
            if _undo(st, rid, old):
                reorder.add(st)
        for st in reorder:
            _natural_order(st)
        self.seq = mark
        self._cache.clear()

    # -- reading the past -------------------------------------------------------------------------------
    def changed_since(self, st: Any, ts: Timestamp) -> bool:
        """Whether ``st`` has been written at or after ``ts`` (its state at ``ts`` differs from now)."""
        lw = st.__dict__.get("last_write")
        return lw is not None and lw >= ts

    def state_at(self, st: Any, ts: Timestamp, transient: bool = False, shared: bool = False) -> Any:
        """A copy of live store ``st`` as it was at ``ts`` (``None`` when it has not changed since: read ``st``
        itself). ``shared``: the copy is only read and may be shared by later reads at the same time."""
        if not self.changed_since(st, ts):
            return None
        self._evict()
        window = self.params["minSnapshotHistoryWindowInSeconds"]
        if (self.floor is not None and self.floor >= ts) or ts.time < time.time() - window:
            raise snapshot_too_old(ts, transient)
        key = (id(st), ts)
        if shared:
            hit = self._cache.get(key)
            if hit is not None and hit[0] == st.version and hit[1] is st:
                return hit[2]
        newer = []
        for e in reversed(self.entries):
            if e[0] < ts:
                break
            if e[1] is st:
                newer.append(e)
        work = copy_store(st)
        reorder = False
        for _, _, rid, old in newer:
            reorder = _undo(work, rid, old) or reorder
        if reorder:
            _natural_order(work)
        work.last_write = None
        if shared:
            self._cache[key] = (st.version, st, work)
        return work


_GUARD = threading.Lock()


def history_of(server_store: Any) -> History:
    """The history of an engine's server store (created on first use)."""
    h = server_store.__dict__.get("_lab_history")
    if h is None:
        with _GUARD:
            h = server_store.__dict__.get("_lab_history")
            if h is None:
                h = server_store._lab_history = History(oplog_of(server_store))
    return h
