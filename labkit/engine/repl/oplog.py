"""The engine's oplog: the cluster clock and a log of write events that change streams read.

On a replica-set member every write is recorded in the oplog (``src/mongo/db/repl/oplog.cpp``), written by the
``OpObserver`` that the catalog notifies on each insert, update, delete and DDL operation
(``src/mongo/db/op_observer/op_observer_impl.cpp``); a change stream is an aggregation that reads the oplog
(``src/mongo/db/pipeline/document_source_change_stream*.cpp``). This module is that record, reduced to what
change streams need:

* ``Oplog.tick()`` is the cluster clock: strictly increasing ``Timestamp(seconds, increment)`` values. Every
  recorded write takes one; the wire server's ``$clusterTime`` / ``operationTime`` come from the same clock, so
  ``startAtOperationTime`` from a reply is comparable with the events' ``clusterTime``.
* An ``Entry`` keeps references to the stored documents (the engine never changes a stored document in place),
  so recording a write copies nothing: the change event is built when a stream reads the entry.
* Recording costs nothing until the engine's first change stream opens: the catalog asks ``recording()`` and
  skips the entry. From then on every write is recorded, open stream or not, as a server's oplog records every
  write: a worker that saved a resume token, stopped and resumes later receives the writes made meanwhile (manual
  "Change Streams: Resume a Change Stream"). A resume point older than the history (before the first stream,
  or trimmed by the cap below) is refused with ChangeStreamHistoryLost (286), as a server refuses one that has
  fallen off its oplog.
* The log is capped (``MAX_ENTRIES``), as the server's oplog is capped by size; the oldest entries go first.
* Writes made inside a transaction are kept by the transaction (``buffer``) and recorded at commit, in order,
  with one cluster time, their ``lsid``/``txnNumber`` and their index in the transaction (``txnOpIndex``), as
  the server's ``applyOps`` entry of a committed transaction.
* ``wait(after, timeout)`` blocks until an entry newer than ``after`` is recorded (a ``getMore`` with
  ``awaitData``); ``notify`` wakes the waiters.
* Tailable cursors on capped collections wait on the same condition: an insert into a capped collection that a
  tailable cursor is open on counts a ``pulse`` (recorded or not, so with no change stream open too), and
  ``wait_pulse(mark, timeout)`` blocks until the count passes ``mark`` (the server's ``CappedInsertNotifier``,
  ``src/mongo/db/catalog/collection.h``, which every insert into the capped collection notifies).
"""
from __future__ import annotations

import datetime
import hashlib
import threading
import time
from typing import Any

from bson import Int64, Timestamp
from bson.binary import Binary

MAX_ENTRIES = 200_000  # the oldest entries are dropped past this (the server's oplog is capped by size)
_COMPACT_AT = MAX_ENTRIES // 8  # dropped entries are removed from the list in runs of this many


class _LazyTs(Timestamp):
    """A cluster time made without bson's argument checks (the clock's values are always valid)."""

    __slots__ = ()

    def __init__(self, pair: tuple[int, int]) -> None:  # noqa: D107 - Timestamp's slots, set directly
        self._Timestamp__time, self._Timestamp__inc = pair


class Entry:
    """One recorded write. ``op``: ``i`` insert, ``u`` update, ``d`` delete, ``c`` command (DDL). For ``u``:
    ``kind`` is ``"update"`` (operator update; ``paths`` the updated paths), ``"pipeline"`` or ``"replace"``.
    ``pre``/``post`` are the document before and after (references); ``images``: whether the collection had
    ``changeStreamPreAndPostImages`` enabled at the write; ``o``: the command document of a DDL entry."""

    __slots__ = ("ts", "wall", "op", "db", "coll", "uuid", "pre", "post", "kind", "paths", "images", "o",
                 "lsid", "txn_number", "txn_index", "seq")

    def __init__(self, op: str, db: str, coll: str, uuid: Any, pre: Any = None, post: Any = None,
                 kind: str | None = None, paths: Any = None, images: bool = False, o: Any = None) -> None:
        self.op = op
        self.db = db
        self.coll = coll
        self.uuid = uuid
        self.pre = pre
        self.post = post
        self.kind = kind
        self.paths = paths
        self.images = images
        self.o = o
        self.lsid = None
        self.txn_number = None
        self.txn_index = None
        self.ts: Timestamp | None = None
        self.wall: float = 0.0
        self.seq = 0

    def wall_time(self) -> datetime.datetime:
        """The write's wall-clock time as the server stores dates (naive UTC, milliseconds)."""
        return datetime.datetime(1970, 1, 1) + datetime.timedelta(milliseconds=int(self.wall * 1000))


class Oplog:
    """The oplog of one engine (one ``EngineServerStore``): clock, entries, open-stream count, waiters."""

    def __init__(self) -> None:
        self.entries: list[Entry] = []  # entries[head:] are retained; the ones before are dropped, removed in bulk
        self.head = 0
        self.first_seq = 0          # sequence number of entries[head]
        self.next_seq = 0
        self.streams = 0            # open change streams
        self.watched = False        # a change stream has opened: every write is recorded from then on
        self.missed = False         # a write went unrecorded before the first stream opened
        self.history_start = self._now_ts()  # a resume point before this is not in the history
        self._last = (self.history_start.time, self.history_start.inc)
        self._clock = threading.Lock()
        # re-entrant: a stream left open is closed by the garbage collector, which may run inside a write
        self.cond = threading.Condition(threading.RLock())
        self.waiters = 0            # threads in wait(): only then does a write notify
        self.pulses = 0             # inserts into capped collections with a tailable cursor (wait_pulse)

    # -- clock --------------------------------------------------------------------------------------
    @staticmethod
    def _now_ts() -> Timestamp:
        return Timestamp(int(time.time()), 1)

    def tick(self) -> Timestamp:
        """The next cluster time: ``(now, 1)`` in a new second, else the last one's increment + 1."""
        return Timestamp(*self._tick())

    def _tick(self) -> tuple[int, int]:
        with self._clock:
            now = int(time.time())
            sec, inc = self._last
            self._last = last = (now, 1) if now > sec else (sec, inc + 1)
            return last

    def last(self) -> Timestamp:
        """The latest cluster time handed out (a stream opened now starts just after it)."""
        return _LazyTs(self._last)

    # -- recording ----------------------------------------------------------------------------------
    def recording(self) -> bool:
        """Whether writes are recorded now (a change stream has opened since the engine started); marks the
        history incomplete if not."""
        if self.watched:
            return True
        self.missed = True
        return False

    def open_stream(self) -> None:
        """A change stream opens: recording starts if it has not (the history starts here if a write went
        unrecorded before)."""
        with self.cond:
            if not self.watched and self.missed:
                self.entries = []
                self.head = 0
                self.first_seq = self.next_seq
                self.history_start = self.tick()
                self.missed = False
            self.watched = True
            self.streams += 1

    def close_stream(self) -> None:
        """A change stream closes (or its cursor is killed or expires)."""
        with self.cond:
            self.streams = max(0, self.streams - 1)

    def append(self, entries: list[Entry], lsid: Any = None, txn_number: Any = None) -> None:
        """Record ``entries`` (one write, or a committed transaction's writes) at one new cluster time."""
        if not entries:
            return
        ts = _LazyTs(self._tick())
        wall = time.time()  # the event's wallTime (made a date when an event is built: ``Entry.wall_time``)
        with self.cond:
            for i, e in enumerate(entries):
                e.ts = ts
                e.wall = wall
                if lsid is not None:
                    e.lsid, e.txn_number, e.txn_index = lsid, txn_number, i
                e.seq = self.next_seq
                self.next_seq += 1
                self.entries.append(e)
            self._trim()
            if self.waiters:
                self.cond.notify_all()

    def append_each(self, entries: list[Entry]) -> None:
        """Record ``entries`` as separate writes (a batch of inserts), each at its own cluster time."""
        wall = time.time()
        with self.cond:
            seq = self.next_seq
            for e in entries:
                e.ts = _LazyTs(self._tick())
                e.wall = wall
                e.seq = seq
                seq += 1
            self.next_seq = seq
            self.entries.extend(entries)
            self._trim()
            if self.waiters:
                self.cond.notify_all()

    def truncate(self, seq: int) -> None:
        """Drop the entries with sequence number >= ``seq``: a write undone before anyone read them (one that
        waits for a transaction and runs again, session/history.py)."""
        with self.cond:
            if seq < self.next_seq:
                del self.entries[self.head + max(0, seq - self.first_seq):]
                self.next_seq = max(seq, self.first_seq)

    def _trim(self) -> None:
        over = len(self.entries) - self.head - MAX_ENTRIES
        if over > 0:
            self.head += over
            self.first_seq += over
            self.history_start = self.entries[self.head].ts
            if self.head >= _COMPACT_AT:  # one move of the list now and then, not one per write
                del self.entries[:self.head]
                self.head = 0

    def record(self, entry: Entry, txn: Any = None) -> None:
        """Record one write, or keep it in ``txn`` (a transaction in progress) until it commits."""
        if txn is not None:
            buf = getattr(txn, "oplog_buffer", None)
            if buf is None:
                buf = txn.oplog_buffer = []
            buf.append(entry)
            return
        self.append([entry])

    def commit(self, txn: Any, lsid: Any, txn_number: Any) -> None:
        """A transaction committed: record the writes it kept, in order (``txnOpIndex``), at one time."""
        buf = getattr(txn, "oplog_buffer", None)
        if buf:
            txn.oplog_buffer = []
            # the server's lsid has the user's digest: SHA-256 of the empty user name without authentication
            full = {"id": lsid["id"], "uid": Binary(hashlib.sha256(b"").digest())}
            self.append(buf, full, Int64(txn_number))

    # -- reading ------------------------------------------------------------------------------------
    def since(self, seq: int) -> list[Entry]:
        """The entries with sequence number >= ``seq`` (all retained ones if ``seq`` fell off)."""
        with self.cond:
            start = self.head + max(0, seq - self.first_seq)
            return self.entries[start:]

    def seq_at(self, ts: Timestamp) -> int:
        """The sequence number of the first entry with cluster time >= ``ts`` (``next_seq`` if none)."""
        with self.cond:
            entries = self.entries
            lo, hi = self.head, len(entries)
            while lo < hi:
                mid = (lo + hi) // 2
                if entries[mid].ts < ts:
                    lo = mid + 1
                else:
                    hi = mid
            return self.first_seq + lo - self.head

    def wait(self, seq: int, timeout: float) -> bool:
        """Block up to ``timeout`` seconds until an entry with sequence number >= ``seq`` exists."""
        return self._wait_until(lambda: self.next_seq > seq, timeout)

    def wait_pulse(self, mark: int, timeout: float) -> bool:
        """Block up to ``timeout`` seconds until a capped insert was counted after ``mark`` (``pulses`` read
        under the engine's lock when the tailable cursor found nothing new)."""
        return self._wait_until(lambda: self.pulses != mark, timeout)

    def pulse(self) -> None:
        """An insert into a capped collection a tailable cursor reads (called under the engine's lock): counted
        always, so a cursor that found nothing just before sees it; the waiters are woken if there are any."""
        self.pulses += 1
        if self.waiters:
            with self.cond:
                self.cond.notify_all()

    def _wait_until(self, ready: Any, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        with self.cond:
            self.waiters += 1
            try:
                while not ready():
                    left = deadline - time.monotonic()
                    if left <= 0:
                        return False
                    self.cond.wait(left)
                return True
            finally:
                self.waiters -= 1

    def notify(self) -> None:
        """Wake every waiter (a cursor was closed, the server stops)."""
        with self.cond:
            self.cond.notify_all()


def wait_for(waiter: Any, seconds: float, attempt: Any, stopped: Any = None) -> None:
    """An awaitData getMore's wait: block on ``waiter(timeout)`` (``Oplog.wait`` / ``Oplog.wait_pulse`` bound to
    a mark) for at most ``seconds`` in all; each time it reports something new, ``attempt()`` runs the getMore
    again and returns the next waiter, or None once it has what it waited for (a write that the cursor's filter
    does not match keeps it waiting, jstests/core/awaitdata_getmore_cmd.js). ``stopped``: an Event that ends the
    wait early (the wire server stopping)."""
    deadline = time.monotonic() + seconds
    while waiter is not None and (stopped is None or not stopped.is_set()):
        left = deadline - time.monotonic()
        if left <= 0:
            return
        if waiter(min(left, 0.5)):  # in slices, so a stop is seen
            waiter = attempt()


def record_command(db_store: Any, db: str, coll: str | None, o: dict) -> None:
    """Record a DDL command (drop, renameCollection, dropDatabase, create, createIndexes, dropIndexes, collMod)
    on ``db`` while a change stream is open; ``o`` is the oplog entry's command document."""
    log = getattr(db_store, "oplog", None)
    if log is None or not log.recording():
        return
    st = db_store._collections.get(coll) if coll is not None else None
    log.append([Entry("c", db, coll, getattr(st, "uuid", None), o=o)])


def oplog_of(server_store: Any) -> Oplog:
    """The oplog of an engine's server store (created on first use)."""
    log = getattr(server_store, "_lab_oplog", None)
    if log is None:
        log = server_store._lab_oplog = Oplog()
    return log
